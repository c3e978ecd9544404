//! Experiments: one TOML per seed reproduction (`experiments/*.toml`, embedded at build time).
//! An experiment names the machine, the workload, the thread counts, the iterations and the
//! kernels (columns, as presets plus knob overrides); running it gives one summary row per
//! (kernel, thread count).

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use std::path::Path;
use tlblab_model::run::Workload;
use tlblab_report::summary::{Cell, MetricInfo, ResultSet};

use crate::cmd::run::{kernel_config, parse_duration};
use crate::machines;
use crate::results::{self, CellSpec, RunOptions};

include!(concat!(env!("OUT_DIR"), "/builtin_experiments.rs"));

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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub seed_thread: String,
    pub title: String,
    pub machine: String,
    pub workload: String,
    pub threads: Vec<u32>,
    pub iterations: u32,
    pub quick_iterations: u32,
    pub warmup: String,
    pub duration: String,
    pub quick_duration: String,
    /// Table layout: `seed-002` or `seed-000` (see `LAYOUTS`).
    pub layout: String,
    /// Printed under the tables: where the model departs from the seed, and why.
    #[serde(default)]
    pub note: String,
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelColumn>,
}

/// Table layouts `render` knows: seed 002's bare means, seed 000's mmtests Mean/Stddev rows.
pub const LAYOUTS: &[&str] = &["seed-002", "seed-000"];

pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN_EXPERIMENTS.iter().map(|(n, _)| *n).collect()
}

/// A built-in experiment by name (or unique prefix, e.g. `seed-002`), or a TOML file.
pub fn load(arg: &str) -> Result<Vec<Experiment>> {
    let parse = |text: &str, origin: &str| -> Result<Experiment> {
        let e: Experiment = toml::from_str(text).map_err(|e| anyhow!("{origin}: {e}"))?;
        e.validate().map_err(|m| anyhow!("{origin}: {m}"))?;
        Ok(e)
    };
    if arg.ends_with(".toml") || arg.contains('/') {
        let text = std::fs::read_to_string(arg).with_context(|| format!("cannot read experiment {arg}"))?;
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

impl Experiment {
    fn validate(&self) -> std::result::Result<(), String> {
        Workload::parse(&self.workload).map_err(|e| format!("key `workload`: {e}"))?;
        if self.threads.is_empty() || self.threads.contains(&0) {
            return Err("key `threads`: give one or more thread counts >= 1".into());
        }
        if self.iterations == 0 || self.quick_iterations == 0 {
            return Err("keys `iterations`, `quick_iterations`: must be >= 1".into());
        }
        for (k, v) in
            [("warmup", &self.warmup), ("duration", &self.duration), ("quick_duration", &self.quick_duration)]
        {
            parse_duration(v).map_err(|e| format!("key `{k}`: {e}"))?;
        }
        if !LAYOUTS.contains(&self.layout.as_str()) {
            return Err(format!(
                "key `layout`: `{}` is not allowed; allowed: {}",
                self.layout,
                LAYOUTS.join(", ")
            ));
        }
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
        for (i, k) in self.kernels.iter().enumerate() {
            kernel_config(&k.preset, &k.set).map_err(|e| format!("key `kernel[{i}]`: {e}"))?;
        }
        Ok(())
    }
}

// summary.json's types live in the report crate (compare and the HTML report read them too).
pub use tlblab_report::summary::Summary;

/// Runs every cell (in parallel; the output does not depend on how many threads ran it). With
/// `opts.store` set, each finished cell is saved there at once and finished cells of an
/// earlier, identical run are reused (see `results`).
pub fn run(e: &Experiment, quick: bool, opts: &RunOptions) -> Result<ResultSet> {
    let profile = machines::load(&e.machine)?;
    let workload = Workload::parse(&e.workload).map_err(|m| anyhow!(m))?;
    let iterations = if quick { e.quick_iterations } else { e.iterations };
    let warmup = parse_duration(&e.warmup).map_err(|m| anyhow!(m))?;
    let measure =
        parse_duration(if quick { &e.quick_duration } else { &e.duration }).map_err(|m| anyhow!(m))?;
    // Labels name the cell files: two columns must not share one.
    for (i, k) in e.kernels.iter().enumerate() {
        if e.kernels[..i].iter().any(|o| o.label == k.label) {
            bail!("{}: key `kernel[{i}].label`: `{}` is used by an earlier column", e.name, k.label);
        }
    }
    for (i, t) in e.threads.iter().enumerate() {
        if e.threads[..i].contains(t) {
            bail!("{}: key `threads`: {t} is listed twice", e.name);
        }
    }
    let mut cells = Vec::new();
    for k in &e.kernels {
        let kernel = kernel_config(&k.preset, &k.set)?;
        for &t in &e.threads {
            cells.push(CellSpec {
                label: k.label.clone(),
                kernel: kernel.clone(),
                workload: workload.clone(),
                tasks: t,
                // Iterations differ only by seed.
                seeds: (1..=iterations as u64).collect(),
                warmup,
                measure,
            });
        }
    }
    let (runs, _) =
        results::run_cells(&profile, &cells, opts).map_err(|err| anyhow!("{}: {err:#}", e.name))?;
    let m = &runs[0][0].metric;
    Ok(ResultSet {
        experiment: e.name.clone(),
        machine: profile.name.clone(),
        workload: workload.name(),
        metric: MetricInfo {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
        },
        kernels: e.kernels.iter().map(|k| k.label.clone()).collect(),
        cells: cells
            .iter()
            .zip(runs)
            .map(|(c, runs)| Cell { kernel: c.label.clone(), threads: c.tasks, runs })
            .collect(),
    })
}

/// Writes `path` atomically: a temporary file in the same directory, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp =
        dir.join(format!(".{}.tmp-{}", path.file_name().unwrap().to_string_lossy(), std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

/// The table in the seed's layout, then the event counts per operation beside it.
pub fn render(e: &Experiment, s: &Summary) -> String {
    let mut out = match e.layout.as_str() {
        "seed-000" => render_seed_000(e, s),
        _ => render_seed_002(e, s),
    };
    if !e.note.is_empty() {
        out += &format!("\nNote: {}\n", e.note.trim());
    }
    out
}

/// mmtests' compare-kernels layout as seed 000 prints it: a Mean and a Stddev row per thread
/// count, kernels as columns (group over label), each value with its difference to the first
/// column where positive is better (pdiff for means of a higher-is-better metric, pndiff for
/// stddevs; facts sheet §5.3). Then the per-iteration counts behind it.
fn render_seed_000(e: &Experiment, s: &Summary) -> String {
    let cell = |k: &str, t: u32| s.rows.iter().find(|r| r.kernel == k && r.threads == t).unwrap();
    let w = 20;
    let mut out = format!("{} ({}, seed thread {})\n", e.title, s.experiment, e.seed_thread);
    out += &format!("{}\n", s.workload);
    let mut groups = format!("{:<10}", "");
    let mut labels = format!("{:<10}", "thread");
    for k in &e.kernels {
        // mmtests wraps "3.13.0-rc3-vanilla" as "3.13.0-rc3" over "vanilla".
        let rest = k.label.strip_prefix(&format!("{}-", k.group)).unwrap_or(&k.label);
        groups += &format!(" {:>w$}", k.group);
        labels += &format!(" {rest:>w$}");
    }
    out += &format!("{}\n{}\n", groups.trim_end(), labels.trim_end());
    let pct = |new: f64, base: f64, higher_better: bool| -> f64 {
        if new == base {
            0.0
        } else if higher_better {
            if base == 0.0 {
                100.0
            } else {
                new * 100.0 / base - 100.0
            }
        } else if base == 0.0 {
            -99.0
        } else {
            100.0 - new * 100.0 / base
        }
    };
    let hb = s.metric.higher_is_better;
    for (stat, higher_better) in [("Mean", hb), ("Stddev", false)] {
        for &t in &e.threads {
            let mut line = format!("{stat:<7}{t:<3}");
            let v = |k: &str| if stat == "Mean" { cell(k, t).mean } else { cell(k, t).stddev };
            let base = v(&s.kernels[0]);
            for k in &s.kernels {
                let x = v(k);
                line += &format!(" {:>w$}", format!("{x:.2} ({:6.2}%)", pct(x, base, higher_better)));
            }
            out += &format!("{line}\n");
        }
    }
    out += &format!(
        "\n{} in {}; {} run(s) per cell, each differing only by its seed.\n",
        s.metric.name, s.metric.unit, s.rows[0].n
    );
    out += "\nPer record: pages flushed one at a time (INVLPGs, all CPUs) / full flushes (all CPUs) / IPIs \
            sent / TLB misses after flushes\n";
    let mut head = format!("{:<10}", "thread");
    for k in &s.kernels {
        head += &format!(" {k:>26}");
    }
    out += &format!("{}\n", head.trim_end());
    for &t in &e.threads {
        let mut line = format!("{t:<10}");
        for k in &s.kernels {
            let c = &cell(k, t).counters_per_op;
            let g = |n: &str| c.get(n).copied().unwrap_or(0.0);
            let txt = format!(
                "{:.1}/{:.2}/{:.2}/{:.1}",
                g("invlpg"),
                g("full_flushes"),
                g("ipis_sent"),
                g("tlb_misses_after_flush")
            );
            line += &format!(" {txt:>26}");
        }
        out += &format!("{line}\n");
    }
    let violations: u64 = s.rows.iter().map(|r| r.oracle_violations).sum();
    out += &format!("\nsafety oracle: {violations} violations over every run\n");
    out
}

/// Seed 002's layout: metric mean per thread count, one column per kernel, then the event
/// counts per operation beside it.
fn render_seed_002(e: &Experiment, s: &Summary) -> String {
    let mut out = format!(
        "{} ({}, seed thread {})\n{}\n",
        e.title,
        s.experiment,
        e.seed_thread,
        "=".repeat(e.title.len().min(100))
    );
    let cell = |k: &str, t: u32| s.rows.iter().find(|r| r.kernel == k && r.threads == t).unwrap();
    let w = s.kernels.iter().map(|k| k.len()).max().unwrap_or(8).max(12);
    // Group heading line, then kernel labels, then rows (the seed prints bare means).
    let mut groups = String::from("       ");
    for k in &e.kernels {
        groups.push_str(&format!(" {:>w$}", k.group));
    }
    out += groups.trim_end();
    out += "\n";
    let mut head = String::from("tasks  ");
    for k in &s.kernels {
        head.push_str(&format!(" {k:>w$}"));
    }
    out += &head;
    out += "\n";
    for &t in &e.threads {
        let mut line = format!("{t:<7}");
        let base = cell(&s.kernels[0], t).mean;
        for (i, k) in s.kernels.iter().enumerate() {
            let c = cell(k, t);
            let txt = if i == 0 {
                format!("{:.0}", c.mean)
            } else {
                format!("{:.0} ({:+.1}%)", c.mean, 100.0 * (c.mean / base - 1.0))
            };
            line.push_str(&format!(" {txt:>w$}"));
        }
        out += &line;
        out += "\n";
    }
    out += &format!(
        "\n{} in {}, mean of {} run(s); Stddev per cell in summary.json.\n",
        s.metric.name, s.metric.unit, s.rows[0].n
    );
    out += "\nPer operation: IPIs sent / full flushes / INVLPGs / skipped handler flushes / mm->tlb_gen line transfers\n";
    let mut head = String::from("tasks  ");
    for k in &s.kernels {
        head.push_str(&format!(" {k:>w2$}", w2 = 30));
    }
    out += &head;
    out += "\n";
    for &t in &e.threads {
        let mut line = format!("{t:<7}");
        for k in &s.kernels {
            let c = &cell(k, t).counters_per_op;
            let g = |n: &str| c.get(n).copied().unwrap_or(0.0);
            let txt = format!(
                "{:.1}/{:.1}/{:.2}/{:.1}/{:.1}",
                g("ipis_sent"),
                g("full_flushes"),
                g("invlpg"),
                g("flushes_skipped"),
                g("tlb_gen_transfers")
            );
            line.push_str(&format!(" {txt:>30}"));
        }
        out += &line;
        out += "\n";
    }
    let violations: u64 = s.rows.iter().map(|r| r.oracle_violations).sum();
    out += &format!("\nsafety oracle: {violations} violations over every run\n");
    out
}
