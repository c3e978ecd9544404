//! Experiments: one TOML per seed reproduction or later kernel change (`experiments/*.toml`,
//! embedded at build time).
//! An experiment names the machine, the workload, the thread counts, the iterations and the
//! kernels (columns, as presets plus knob overrides); running it gives one summary row per
//! (kernel, thread count).

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use tlblab_model::run::{Workload, MAX_TASKS};
use tlblab_report::claims::{Claim, Verdict};
use tlblab_report::seed_table::{self, TableSpec};
use tlblab_report::summary::{Cell, MetricInfo, ResultSet};

use crate::machines;
use crate::results::{self, CellSpec, Finished, RunOptions};
use crate::spec::{kernel_config, kernel_config_from, parse_duration};

use tlblab_model::builtin::EXPERIMENTS as BUILTIN_EXPERIMENTS;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelColumn {
    pub label: String,
    /// A heading over several columns (e.g. "early return").
    #[serde(default)]
    pub group: String,
    pub preset: String,
    #[serde(default)]
    pub set: Vec<String>,
    /// The column's own machine, where it is not the experiment's (an x86 column beside arm64
    /// ones): the same workload and rows on another profile.
    #[serde(default)]
    pub machine: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowWindow {
    pub warmup: String,
    pub duration: String,
    /// The row's warm-up in the quick run too, where the quick run must reach the same steady
    /// state (a mechanism that engages only after a sampled wait); else the quick run keeps the
    /// experiment's `warmup`.
    #[serde(default)]
    pub quick_warmup: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    /// The seed thread it reproduces (`002`); or
    #[serde(default)]
    pub seed_thread: Option<String>,
    /// the kernel change it measures, with its release and commit (`v6.15, 4afeb0ed1753`):
    /// exactly one of the two.
    #[serde(default)]
    pub change: Option<String>,
    pub title: String,
    pub machine: String,
    pub workload: String,
    pub threads: Vec<u32>,
    /// Message sizes, the table's rows instead of thread counts (netperf `-m`, sockperf
    /// `--msg-size`): `workload` then holds `{size}` (and may hold `{size+256}`, the socket
    /// buffer mmtests passes as `-s`/`-S`), and `threads` one task count.
    #[serde(default)]
    pub sizes: Vec<u32>,
    pub iterations: u32,
    pub quick_iterations: u32,
    pub warmup: String,
    pub duration: String,
    pub quick_duration: String,
    /// A row's own warm-up and window in the full run (`[windows]`, keyed by the row): for rows
    /// whose start-up transient outlasts the experiment's `warmup` (hackbench's grows with the
    /// tasks per CPU, as the CFS period does). The quick run keeps `warmup` (unless the row
    /// gives a `quick_warmup`) and `quick_duration`.
    #[serde(default)]
    pub windows: std::collections::BTreeMap<String, RowWindow>,
    /// What the table prints: the metric's statistics and the counters per operation.
    pub table: TableSpec,
    /// Printed under the table: a short note; the long one is in `docs/experiments/<name>.md`.
    #[serde(default)]
    pub note: String,
    /// The seed thread's claims and how to check them on the summary.
    #[serde(default, rename = "claim")]
    pub claims: Vec<Claim>,
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelColumn>,
    /// The seed's published figures, shown beside the model's (never an input).
    #[serde(default)]
    pub reference: Option<seed_table::Reference>,
    /// How far the quick run was measured to be from the full run (written by
    /// `scripts/quick_accuracy.py`; printed on quick pages, never an input to a result).
    #[serde(default)]
    pub quick_accuracy: Option<QuickAccuracy>,
}

/// A quick run measured against the full run of the same experiment, cell by cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickAccuracy {
    /// When and at which commit it was measured (`2026-11-27 at 7cbb032`).
    pub measured: String,
    /// Cells compared (column x row).
    pub cells: u32,
    /// Median and largest |quick mean / full mean - 1| over the cells, in percent.
    pub median_pct: f64,
    pub max_pct: f64,
    /// Where the largest difference is (`column at row`).
    pub max_cell: String,
    /// Claims whose verdict the quick run shares with the full run, and all claims.
    pub verdicts_same: u32,
    pub verdicts: u32,
}

pub fn builtin_names() -> Vec<&'static str> {
    tlblab_model::builtin::names(BUILTIN_EXPERIMENTS)
}

/// A built-in experiment by name (or unique prefix, e.g. `seed-002`), or a TOML file.
pub fn load(arg: &str) -> Result<Vec<Experiment>> {
    if arg.trim().is_empty() {
        // Every name starts with "": an empty name would be a prefix of them all.
        bail!("experiment name `{arg}` is empty; experiments: {}", builtin_names().join(", "));
    }
    if arg.ends_with(".toml") || arg.contains('/') {
        let text =
            crate::input::read_text(std::path::Path::new(arg), "experiment", crate::input::TEXT_LIMIT)?;
        return Ok(vec![parse(&text, arg)?]);
    }
    let matches: Vec<_> =
        BUILTIN_EXPERIMENTS.iter().filter(|(n, _)| *n == arg || n.starts_with(arg)).collect();
    let exact: Vec<_> = matches.iter().filter(|(n, _)| *n == arg).collect();
    let chosen: Vec<&(&str, &str)> =
        if exact.is_empty() { matches } else { exact.into_iter().copied().collect() };
    if chosen.is_empty() {
        bail!("unknown experiment `{arg}`; experiments: {}", builtin_names().join(", "));
    }
    chosen.iter().map(|(n, t)| parse(t, &format!("experiments/{n}.toml"))).collect()
}

/// Parses and validates experiment text; `origin` names the file in every error.
pub fn parse(text: &str, origin: &str) -> Result<Experiment> {
    let e: Experiment =
        toml::from_str(text).map_err(|e| anyhow!(tlblab_model::toml_error::describe(origin, text, &e)))?;
    e.validate().map_err(|m| anyhow!(tlblab_model::toml_error::one_line(format!("{origin}: {m}"))))?;
    Ok(e)
}

impl Experiment {
    /// What the table's title line names as the experiment's origin.
    pub fn origin(&self) -> String {
        match (&self.seed_thread, &self.change) {
            (Some(t), _) => format!("seed thread {t}"),
            (None, Some(c)) => c.clone(),
            (None, None) => String::new(),
        }
    }

    fn validate(&self) -> std::result::Result<(), String> {
        // The name is the experiment's directory under --out.
        crate::store::check_name(&self.name).map_err(|e| format!("key `name`: {e}"))?;
        if self.seed_thread.is_some() == self.change.is_some() {
            return Err("keys `seed_thread` and `change`: give exactly one (the seed thread it \
                        reproduces, or the kernel change it measures)"
                .into());
        }
        if !self.sizes.is_empty() {
            if !self.workload.contains("{size}") {
                return Err(
                    "key `workload`: with `sizes` it must hold `{size}` (and may hold `{size+256}`)".into()
                );
            }
            if self.threads.len() != 1 {
                return Err("key `threads`: with `sizes` give one task count (the rows are the sizes)".into());
            }
            // Each size through the workload's own option check: it names the allowed range.
            for &size in &self.sizes {
                Workload::parse(&self.workload_at(size)).map_err(|e| format!("key `sizes`: {size}: {e}"))?;
            }
            if self.sizes.contains(&0) {
                return Err("key `sizes`: message sizes are >= 1".into());
            }
        }
        for w in self.workloads() {
            Workload::parse(&w).map_err(|e| format!("key `workload`: {e}"))?;
        }
        if self.threads.is_empty() || self.threads.iter().any(|t| !(1..=MAX_TASKS).contains(t)) {
            return Err(format!(
                "key `threads`: give one or more thread counts; allowed 1 ..= {MAX_TASKS} each"
            ));
        }
        let max = crate::results::MAX_ITERATIONS;
        for (k, n) in [("iterations", self.iterations), ("quick_iterations", self.quick_iterations)] {
            if !(1..=max).contains(&(n as u64)) {
                return Err(format!("key `{k}`: {n} is not allowed; allowed 1 ..= {max}"));
            }
        }
        for (k, v) in
            [("warmup", &self.warmup), ("duration", &self.duration), ("quick_duration", &self.quick_duration)]
        {
            parse_duration(v).map_err(|e| format!("key `{k}`: {e}"))?;
        }
        for (row, w) in &self.windows {
            if !row.parse::<u32>().is_ok_and(|r| self.rows().contains(&r)) {
                let rows: Vec<String> = self.rows().iter().map(|r| r.to_string()).collect();
                return Err(format!("key `windows.{row}`: not a row; allowed: {}", rows.join(", ")));
            }
            for (k, v) in [
                ("warmup", Some(&w.warmup)),
                ("duration", Some(&w.duration)),
                ("quick_warmup", w.quick_warmup.as_ref()),
            ] {
                if let Some(v) = v {
                    parse_duration(v).map_err(|e| format!("key `windows.{row}.{k}`: {e}"))?;
                }
            }
        }
        let counters = tlblab_model::linux::Counters::names();
        self.table.validate(&counters)?;
        for (i, k) in self.kernels.iter().enumerate() {
            if self.kernels[..i].iter().any(|o| o.label == k.label) {
                return Err(format!(
                    "key `kernel[{i}].label`: `{}` is used twice; labels name columns",
                    k.label
                ));
            }
        }
        if self.kernels.is_empty() {
            return Err("key `kernel`: at least one [[kernel]] column is required".into());
        }
        let labels: Vec<String> = self.kernels.iter().map(|k| k.label.clone()).collect();
        if let Some((a, b, slug)) = crate::results::label_clash(&labels) {
            return Err(format!(
                "key `kernel[{b}].label`: `{}` and `{}` (kernel[{a}]) would share cells/{slug}/; rename one",
                labels[b], labels[a]
            ));
        }
        if let Some(r) = &self.reference {
            r.validate(&labels)?;
        }
        for (i, c) in self.claims.iter().enumerate() {
            c.validate(i, &labels, self.rows(), &counters)?;
            if self.claims[..i].iter().any(|o| o.id == c.id) {
                return Err(format!("key `claim[{i}].id`: `{}` is used twice; ids name claims", c.id));
            }
        }
        for (i, k) in self.kernels.iter().enumerate() {
            let keys = (format!("key `kernel[{i}].preset`"), format!("key `kernel[{i}].set`"));
            kernel_config_from((&keys.0, &keys.1), &k.preset, &k.set).map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }
}

// summary.json's types live in the report crate (compare and the HTML report read them too).
pub use tlblab_report::summary::Summary;

/// The number of cells `run` runs: kernels × thread counts (what `RunOptions::first_cell` of
/// the next experiment in a job adds up).
impl Experiment {
    /// The table's rows: the message sizes, or else the thread counts.
    pub fn rows(&self) -> &[u32] {
        if self.sizes.is_empty() {
            &self.threads
        } else {
            &self.sizes
        }
    }

    /// The workload text of a row (the template with the size filled in, where sized).
    pub fn workload_at(&self, row: u32) -> String {
        if self.sizes.is_empty() {
            return self.workload.clone();
        }
        self.workload
            .replace("{size+256}", &(row as u64 + 256).to_string())
            .replace("{size}", &row.to_string())
    }

    fn workloads(&self) -> Vec<String> {
        if self.sizes.is_empty() {
            vec![self.workload.clone()]
        } else {
            self.sizes.iter().map(|&s| self.workload_at(s)).collect()
        }
    }
}

pub fn cell_count(e: &Experiment) -> usize {
    e.kernels.len() * e.rows().len()
}

/// One paragraph saying `set` is a quick run of `e` (fewer iterations or a shorter window than
/// the full run), with what it ran, what the full run runs and the step its sparsest run can
/// resolve; `None` for a full run. A quick page and table say so: their numbers are not the
/// full run's.
pub fn quick_note(e: &Experiment, set: &ResultSet) -> Option<String> {
    let runs: Vec<&tlblab_model::run::RunResult> = set.cells.iter().flat_map(|c| &c.runs).collect();
    let n = set.cells.iter().map(|c| c.runs.len()).max()? as u32;
    let (full, quick) = (parse_duration(&e.duration).ok()?, parse_duration(&e.quick_duration).ok()?);
    let short_window = quick != full && runs.iter().all(|r| r.config.measure_ps == quick.0);
    if n >= e.iterations && !short_window {
        return None;
    }
    let measured = runs.iter().map(|r| r.config.measure_ps).max()?;
    let fewest = runs.iter().map(|r| r.operations()).min()?;
    let distance = match &e.quick_accuracy {
        Some(q) => format!(
            " Measured against the full run ({}, scripts/quick_accuracy.py): over {} cells the quick means \
             differ from the full run's by a median of {:.1}% and at most {:.1}% ({}); {} of {} claims give \
             the full run's verdict{}.",
            q.measured,
            q.cells,
            q.median_pct,
            q.max_pct,
            q.max_cell,
            q.verdicts_same,
            q.verdicts,
            if q.verdicts as usize == e.claims.len() { "" } else { " (the claims have changed since)" }
        ),
        None => " How far it is from the full run has not been measured (scripts/quick_accuracy.py).".into(),
    };
    Some(format!(
        "Quick run (--quick): {n} iteration(s) per cell, {} measured; the full run has {} iteration(s) of {}. \
         Its sparsest run counted {fewest} operation(s), so its values move in steps of about {:.1}%, and \
         its numbers, marks and verdicts are not the full run's: run without --quick for those.{distance} \
         The experiment's note describes the full run: it is printed with the full run, not here.",
        tlblab_model::time::Ps(measured),
        e.iterations,
        e.duration,
        tlblab_report::stats::resolution_pct(fewest)
    ))
}

/// Runs every cell (in parallel; the output does not depend on how many threads ran it). With
/// `opts.store` set, each finished cell is saved there at once and finished cells of an
/// earlier, identical run are reused (see `results`). With `opts.shard`, only that shard's cells
/// run and the result is `Finished::Shard`.
pub fn run(e: &Experiment, quick: bool, opts: &RunOptions) -> Result<Finished<ResultSet>> {
    let profile = machines::load(&e.machine)?;
    let iterations = if quick { e.quick_iterations } else { e.iterations };
    // A row's window: its own in the full run where `[windows]` gives one.
    let window = |row: u32| -> Result<(tlblab_model::time::Ps, tlblab_model::time::Ps)> {
        let (w, d) = match e.windows.get(&row.to_string()) {
            Some(rw) if !quick => (&rw.warmup, &rw.duration),
            Some(RowWindow { quick_warmup: Some(qw), .. }) => (qw, &e.quick_duration),
            _ => (&e.warmup, if quick { &e.quick_duration } else { &e.duration }),
        };
        Ok((parse_duration(w).map_err(|m| anyhow!(m))?, parse_duration(d).map_err(|m| anyhow!(m))?))
    };
    // Labels name the cell files: two columns must not share one.
    for (i, k) in e.kernels.iter().enumerate() {
        if e.kernels[..i].iter().any(|o| o.label == k.label) {
            bail!("{}: key `kernel[{i}].label`: `{}` is used by an earlier column", e.name, k.label);
        }
    }
    let key = if e.sizes.is_empty() { "threads" } else { "sizes" };
    for (i, t) in e.rows().iter().enumerate() {
        if e.rows()[..i].contains(t) {
            bail!("{}: key `{key}`: {t} is listed twice", e.name);
        }
    }
    let mut cells = Vec::new();
    // Each cell's machine: its column's, or the experiment's.
    let mut machines_of = Vec::new();
    for k in &e.kernels {
        let column = match &k.machine {
            Some(m) => machines::load(m)?,
            None => profile.clone(),
        };
        let kernel = kernel_config(&k.preset, &k.set)?;
        for &row in e.rows() {
            let workload = Workload::parse(&e.workload_at(row)).map_err(|m| anyhow!(m))?;
            let t = if e.sizes.is_empty() { row } else { e.threads[0] };
            let (warmup, measure) = window(row)?;
            cells.push(CellSpec {
                label: k.label.clone(),
                kernel: kernel.clone(),
                workload,
                tasks: t,
                row,
                // Iterations differ only by seed.
                seeds: (1..=iterations as u64).collect(),
                warmup,
                measure,
            });
            machines_of.push(column.clone());
        }
    }
    // Consecutive cells of one machine run together; their runs keep the cells' order.
    let mut ran = results::Ran { runs: Vec::new(), reused: 0, ran: 0, skipped: 0 };
    let mut a = 0;
    while a < cells.len() {
        let b = (a..cells.len()).find(|&i| machines_of[i] != machines_of[a]).unwrap_or(cells.len());
        let group = RunOptions { first_cell: opts.first_cell + a, ..opts.clone() };
        let r = results::run_cells(&machines_of[a], &cells[a..b], &group)
            .map_err(|err| anyhow!("{}: {err:#}", e.name))?;
        ran.runs.extend(r.runs);
        (ran.reused, ran.ran, ran.skipped) =
            (ran.reused + r.reused, ran.ran + r.ran, ran.skipped + r.skipped);
        a = b;
    }
    if opts.shard.is_some() {
        return Ok(Finished::Shard(ran));
    }
    let runs = ran.runs;
    let m = &runs[0][0].metric;
    Ok(Finished::All(ResultSet {
        experiment: e.name.clone(),
        machine: profile.name.clone(),
        workload: if e.sizes.is_empty() { cells[0].workload.name() } else { e.workload.clone() },
        metric: MetricInfo {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
        },
        kernels: e.kernels.iter().map(|k| k.label.clone()).collect(),
        cells: cells
            .iter()
            .zip(runs)
            .map(|(c, runs)| Cell { kernel: c.label.clone(), threads: c.row, runs })
            .collect(),
    }))
}

/// The summary the experiment's table prints: the compare style's carries each row's Hmean.
pub fn summary(e: &Experiment, set: &ResultSet) -> Summary {
    if e.table.style == seed_table::spec::Style::Compare {
        set.summary_with_hmean()
    } else {
        set.summary()
    }
}

/// The verdict on each of the experiment's claims, in the order the file gives them.
pub fn verdicts(e: &Experiment, s: &Summary) -> Vec<Verdict> {
    e.claims.iter().map(|c| c.evaluate(s)).collect()
}

/// The experiment's table (`tlblab_report::seed_table`).
/// The experiment's table with its short note; `quick` leaves the note out (it describes the
/// full run; [`quick_note`] says so instead).
pub fn render(e: &Experiment, s: &Summary, quick: bool) -> String {
    let columns: Vec<seed_table::Column> = e
        .kernels
        .iter()
        .map(|k| seed_table::Column { label: k.label.clone(), group: k.group.clone() })
        .collect();
    let head = seed_table::Heading {
        table: &e.table,
        title: &e.title,
        origin: &e.origin(),
        columns: &columns,
        rows: e.rows(),
        note: if quick { "" } else { &e.note },
        reference: e.reference.as_ref(),
    };
    seed_table::render(&head, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_experiment_loads_with_its_table_and_claims() {
        for n in builtin_names() {
            let e = load(n).unwrap().remove(0);
            assert!(!e.table.counters().is_empty() || e.table.blocks.is_empty(), "{n}");
            assert!(!e.claims.is_empty(), "{n}: no [[claim]]");
            if let Some(q) = &e.quick_accuracy {
                assert!(
                    q.cells > 0 && q.median_pct <= q.max_pct && q.verdicts_same <= q.verdicts,
                    "{n}: {q:?}"
                );
            }
        }
    }

    #[test]
    fn the_derived_parts_read_counters_the_model_has() {
        let known = tlblab_model::linux::Counters::names();
        for c in seed_table::style::derived_counters() {
            assert!(known.contains(&c), "{c} is not a model counter");
        }
    }

    #[test]
    fn a_renamed_counter_is_refused_at_load_not_printed_as_zero() {
        let text = BUILTIN_EXPERIMENTS.iter().find(|(n, _)| *n == "seed-000-ebizzy").unwrap().1;
        let bad = text.replacen(
            "counter = \"tlb_misses_after_flush\"",
            "counter = \"tlb_misses_after_flushes\"",
            1,
        );
        assert_ne!(bad, text);
        let e = parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.starts_with("x.toml: key `table.block[0].per_op[3].counter`"), "{e}");
        assert!(e.contains("allowed: ") && e.contains("tlb_misses_after_flush,") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn an_experiment_names_a_seed_thread_or_a_change_not_both() {
        let text = BUILTIN_EXPERIMENTS.iter().find(|(n, _)| *n == "seed-000-ebizzy").unwrap().1;
        assert_eq!(parse(text, "x.toml").unwrap().origin(), "seed thread 000");
        let change = text.replacen("seed_thread = \"000\"", "change = \"v6.15, 4afeb0ed1753\"", 1);
        assert_eq!(parse(&change, "x.toml").unwrap().origin(), "v6.15, 4afeb0ed1753");
        for bad in [
            text.replacen("seed_thread = \"000\"\n", "", 1),
            text.replacen("seed_thread", "change = \"v6\"\nseed_thread", 1),
        ] {
            let e = parse(&bad, "x.toml").unwrap_err().to_string();
            assert!(e.starts_with("x.toml: keys `seed_thread` and `change`: give exactly one"), "{e}");
        }
    }
}
