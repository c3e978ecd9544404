//! Results on disk, and running many cells of runs.
//!
//! An experiment's output directory holds
//!
//! ```text
//! DIR/<experiment>/summary.json                  one row per (kernel, threads) cell
//! DIR/<experiment>/cells/<kernel-slug>/t<N>.json every iteration's RunResult of one cell
//! DIR/<experiment>/index.html, plots/            the report
//! ```
//!
//! `tlblab sweep --out DIR` writes the same layout into `DIR` itself, one column ("kernel") per
//! combination of varied values (`ceiling=33,alloc=mmap`).
//!
//! Every file is written atomically (temporary file, then rename), and each cell file as soon as
//! its iterations finish, so an interrupted run leaves whole files only. A cell file carries the
//! exact configuration it ran (`spec`: machine profile, kernel knobs, workload, tasks, seeds,
//! intervals, tlblab version); a later run with the same `--out` reuses a cell only when that
//! configuration is identical, and runs the rest.

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use tlblab_model::linux::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run as run_sim, RunResult, RunSpec, Workload};
use tlblab_model::time::Ps;
use tlblab_report::summary::{fnv1a64, slug, Cell, ResultSet, Summary, SUMMARY_SCHEMA_VERSION};

use crate::store::{remove_stale_temps, write_atomic};

/// Version of the cell file layout (the RunResults inside carry their own). 2: knobs recorded
/// by subsystem under `spec.kernel.knobs` and `config.knobs`, `coalesce_ipis` as on/lone/off;
/// version 1 files are refused (`scripts/compare_results.py` still reads them).
pub const CELL_SCHEMA_VERSION: u32 = 2;

/// One (kernel, thread count) cell to run: one simulation per seed.
#[derive(Debug, Clone)]
pub struct CellSpec {
    /// The column label (what the tables and file names show).
    pub label: String,
    pub kernel: KernelConfig,
    pub workload: Workload,
    pub tasks: u32,
    /// The table row the cell is (its file `t<row>.json`): the task count, or the message size
    /// of an experiment with `sizes`.
    pub row: u32,
    pub seeds: Vec<u64>,
    pub warmup: Ps,
    pub measure: Ps,
}

impl CellSpec {
    /// Everything that decides the cell's results, as JSON: two cells with equal identities give
    /// identical RunResults.
    fn identity(&self, profile: &MachineProfile) -> serde_json::Value {
        serde_json::json!({
            "tlblab_version": env!("CARGO_PKG_VERSION"),
            "machine": profile,
            "kernel": {
                "name": self.kernel.name,
                "knobs": self.kernel.knobs(),
                "shift_from_table": self.kernel.shift_from_table,
            },
            "workload": self.workload.name(),
            "tasks": self.tasks,
            "seeds": self.seeds,
            "warmup_ps": self.warmup.0,
            "measure_ps": self.measure.0,
        })
    }
}

/// A cell file: `cells/<kernel-slug>/t<N>.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct CellFile {
    pub schema_version: u32,
    pub kernel: String,
    pub threads: u32,
    /// FNV-1a of `spec`'s JSON text, for a quick look; `spec` itself is what is compared.
    pub fingerprint: String,
    pub spec: serde_json::Value,
    pub runs: Vec<RunResult>,
}

/// The most host threads (`--jobs`): more only costs thread creation.
pub const MAX_JOBS: u64 = 256;
/// The most iterations (seeds) of one cell (`--iterations`, an experiment's `iterations`).
pub const MAX_ITERATIONS: u64 = 1000;

/// Two column labels whose file-safe names ([`slug`]) are one `cells/` directory, if any: such
/// columns would share (and overwrite) each other's cell files.
pub fn label_clash(labels: &[String]) -> Option<(usize, usize, String)> {
    for (i, a) in labels.iter().enumerate() {
        let s = slug(a);
        if let Some(j) = labels[..i].iter().position(|b| b != a && slug(b) == s) {
            return Some((j, i, s));
        }
    }
    None
}

/// Path of a cell's file under an experiment directory.
pub fn cell_path(dir: &Path, kernel: &str, threads: u32) -> PathBuf {
    dir.join("cells").join(slug(kernel)).join(format!("t{threads}.json"))
}

/// The runs of a finished cell whose configuration is exactly `spec`, if any.
fn reusable(path: &Path, spec: &serde_json::Value) -> Option<Vec<RunResult>> {
    let text = crate::input::read_text(path, "cell file", crate::input::RESULT_LIMIT).ok()?;
    let f: CellFile = serde_json::from_str(&text).ok()?;
    (f.schema_version == CELL_SCHEMA_VERSION && &f.spec == spec).then_some(f.runs)
}

/// A caller's own progress display (the Python API's tqdm bar): called with the number of runs
/// just finished (or reused) and the total of the job, from any worker thread.
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

/// How to run: host threads (`None`: rayon's default, one per core), the label of the
/// progress bar and, for a caller that shows its own, a progress hook.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub jobs: Option<usize>,
    /// Where cell files go (an experiment directory); nothing is written without it.
    pub store: Option<PathBuf>,
    pub progress_label: String,
    /// Run only this shard's cells (`--shard I/N`); the others are neither run nor read.
    pub shard: Option<Shard>,
    /// The index of `cells[0]` in the whole job's cell order (reproduce of several experiments
    /// numbers its cells across them, so every shard gets a fair share).
    pub first_cell: usize,
    /// Called as runs finish, beside the bar on standard error.
    pub progress: Option<Progress>,
}

/// `--shard I/N`: of the job's cells in their fixed order, shard I (1-based) runs those whose
/// index is I-1 modulo N. N processes with I = 1..N together run every cell once, into one
/// shared results directory; a final run without `--shard` then reuses them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub fn parse(s: &str) -> std::result::Result<Shard, String> {
        let bad = || format!("--shard `{s}`: expected I/N with 1 <= I <= N (e.g. 2/8)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) =
            (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the cell at this index of the job's order is this shard's.
    pub fn owns(&self, cell: usize) -> bool {
        cell % self.count == self.index - 1
    }
}

/// A job's outcome: every cell (`All`), or one shard's part of it, whose cells are in the store
/// but summarised by nobody yet (`Shard`).
#[derive(Debug)]
pub enum Finished<T> {
    All(T),
    Shard(Ran),
}

/// What a run of cells did: the runs per cell (empty for cells of other shards) and how many
/// cells were reused from the store, run, and left to other shards.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    pub runs: Vec<Vec<RunResult>>,
    pub reused: usize,
    pub ran: usize,
    pub skipped: usize,
}

/// Runs every cell, in parallel across cells and iterations, reusing finished cells found in
/// `opts.store`. The result, in `cells` order, does not depend on the number of threads.
/// With `opts.shard`, cells of other shards are skipped (their runs are empty).
pub fn run_cells(profile: &MachineProfile, cells: &[CellSpec], opts: &RunOptions) -> Result<Ran> {
    if let Some(n) = opts.jobs.filter(|&n| !(1..=MAX_JOBS as usize).contains(&n)) {
        bail!("--jobs {n}: allowed 1 ..= {MAX_JOBS} (or leave it out for one per core)");
    }
    if let Some(c) = cells.iter().find(|c| !(1..=MAX_ITERATIONS as usize).contains(&c.seeds.len())) {
        bail!("{}: {} iterations; allowed 1 ..= {MAX_ITERATIONS}", c.label, c.seeds.len());
    }
    let labels: Vec<String> = cells.iter().map(|c| c.label.clone()).collect();
    if let Some((a, b, s)) = label_clash(&labels) {
        bail!("columns `{}` and `{}` would share cells/{s}/; rename one", labels[a], labels[b]);
    }
    let mine = |i: usize| opts.shard.map_or(true, |s| s.owns(opts.first_cell + i));
    let total: u64 =
        cells.iter().enumerate().filter(|(i, _)| mine(*i)).map(|(_, c)| c.seeds.len() as u64).sum();
    let threads = opts.jobs.unwrap_or_else(rayon::current_num_threads) as u64;
    check_host(
        profile,
        cells.iter().enumerate().filter(|(i, _)| mine(*i)).map(|(_, c)| c),
        threads.min(total),
    )?;
    if let Some(dir) = &opts.store {
        remove_stale_temps(dir);
    }
    // A caller with its own display (opts.progress) gets no second bar on standard error.
    let bar = if opts.progress.is_some() {
        ProgressBar::hidden()
    } else {
        progress_bar(total, &opts.progress_label)
    };
    let tick = |n: u64| {
        bar.inc(n);
        if let Some(p) = &opts.progress {
            (p.0)(n, total);
        }
    };
    let reused = std::sync::atomic::AtomicUsize::new(0);
    let work = || -> Result<Vec<Vec<RunResult>>> {
        cells
            .par_iter()
            .enumerate()
            .map(|(i, c)| {
                if !mine(i) {
                    return Ok(Vec::new());
                }
                let spec = c.identity(profile);
                let path = opts.store.as_ref().map(|d| cell_path(d, &c.label, c.row));
                if let Some(runs) = path.as_deref().and_then(|p| reusable(p, &spec)) {
                    tick(c.seeds.len() as u64);
                    reused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    return Ok(runs);
                }
                let runs = c
                    .seeds
                    .par_iter()
                    .map(|&seed| {
                        let s = RunSpec {
                            kernel: c.kernel.clone(),
                            workload: c.workload.clone(),
                            tasks: c.tasks,
                            seed,
                            warmup: c.warmup,
                            measure: c.measure,
                        };
                        let r = run_sim(profile, &s)
                            .map_err(|m| anyhow!("{} at {} tasks: {m}", c.label, c.tasks));
                        tick(1);
                        r
                    })
                    .collect::<Result<Vec<_>>>()?;
                if let Some(path) = &path {
                    let text = serde_json::to_string(&spec)?;
                    let file = CellFile {
                        schema_version: CELL_SCHEMA_VERSION,
                        kernel: c.label.clone(),
                        threads: c.row,
                        fingerprint: format!("{:016x}", fnv1a64(text.as_bytes())),
                        spec,
                        runs,
                    };
                    write_atomic(path, serde_json::to_string(&file)?.as_bytes())?;
                    return Ok(file.runs);
                }
                Ok(runs)
            })
            .collect()
    };
    let out = match opts.jobs {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .context("cannot start the worker threads")?
            .install(work)?,
        None => work()?,
    };
    bar.finish_and_clear();
    let skipped = (0..cells.len()).filter(|&i| !mine(i)).count();
    let reused = reused.into_inner();
    Ok(Ran { runs: out, reused, ran: cells.len() - skipped - reused, skipped })
}

/// Refuses `cells` if `at_once` runs of the largest (cells and their seeds run concurrently)
/// would not fit the host's memory; each cell's own refusal by the model comes first.
fn check_host<'a>(
    profile: &MachineProfile,
    cells: impl Iterator<Item = &'a CellSpec>,
    at_once: u64,
) -> Result<()> {
    let mut largest: Option<(&CellSpec, RunSpec, u64)> = None;
    for c in cells {
        let s = RunSpec {
            kernel: c.kernel.clone(),
            workload: c.workload.clone(),
            tasks: c.tasks,
            seed: 1,
            warmup: c.warmup,
            measure: c.measure,
        };
        tlblab_model::run::check(profile, &s)
            .map_err(|m| anyhow!("{} at {} tasks: {m}", c.label, c.tasks))?;
        let bytes = s.host_bytes(profile).total();
        if largest.as_ref().map_or(true, |l| bytes > l.2) {
            largest = Some((c, s, bytes));
        }
    }
    match largest {
        Some((c, s, _)) => crate::host::check_run(profile, &s, at_once)
            .map_err(|e| anyhow!("{} at {} tasks: {e:#}", c.label, c.tasks)),
        None => Ok(()),
    }
}

/// A progress bar on standard error, hidden when that is not a terminal (pipes and CI logs).
fn progress_bar(total: u64, label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() || std::env::var_os("TLBLAB_NO_PROGRESS").is_some() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    bar
}

/// Loads a saved result set: an experiment directory with `summary.json` and `cells/`, or a
/// `--out` directory holding exactly one such experiment directory.
pub fn load_set(dir: &Path) -> Result<(PathBuf, ResultSet)> {
    let dir = if dir.join("summary.json").is_file() {
        dir.to_path_buf()
    } else {
        let entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot read result set {}", dir.display()))?;
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("summary.json").is_file())
            .collect();
        subs.sort();
        match subs.len() {
            1 => subs.remove(0),
            0 => bail!(
                "{}: not a result set (no summary.json in it or in a subdirectory); make one with \
                 `tlblab reproduce NAME --out DIR` or `tlblab sweep ... --out DIR`",
                dir.display()
            ),
            _ => bail!(
                "{}: holds several result sets, name one: {}",
                dir.display(),
                subs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
        }
    };
    let path = dir.join("summary.json");
    let text = crate::input::read_text(&path, "summary", crate::input::RESULT_LIMIT)?;
    let s: Summary = serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if s.schema_version > SUMMARY_SCHEMA_VERSION {
        bail!(
            "{}: key `schema_version` is {}; this tlblab reads up to {SUMMARY_SCHEMA_VERSION} (a newer tlblab wrote it)",
            path.display(),
            s.schema_version
        );
    }
    if s.rows.is_empty() || s.kernels.is_empty() {
        bail!(
            "{}: keys `kernels` and `rows`: a result set has at least one kernel and one row",
            path.display()
        );
    }
    if let Some(r) = s.rows.iter().find(|r| !s.kernels.contains(&r.kernel)) {
        bail!("{}: key `rows`: kernel `{}` is not one of key `kernels`", path.display(), r.kernel);
    }
    if let Some((a, b, slug)) = label_clash(&s.kernels) {
        bail!(
            "{}: key `kernels`: `{}` and `{}` share cells/{slug}/; their cells cannot be told apart",
            path.display(),
            s.kernels[a],
            s.kernels[b]
        );
    }
    let mut cells = Vec::new();
    for row in &s.rows {
        let p = cell_path(&dir, &row.kernel, row.threads);
        let text =
            crate::input::read_text(&p, "cell file", crate::input::RESULT_LIMIT).with_context(|| {
                format!(
                    "{}: cell file {} for kernel `{}` at {} threads is missing",
                    dir.display(),
                    p.display(),
                    row.kernel,
                    row.threads
                )
            })?;
        // The version first: an older layout would fail to parse with a less useful message.
        #[derive(Deserialize)]
        struct Version {
            schema_version: u32,
        }
        let v: Version = serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", p.display()))?;
        if v.schema_version != CELL_SCHEMA_VERSION {
            bail!(
                "{}: key `schema_version` is {}; this tlblab reads {CELL_SCHEMA_VERSION} (run the experiment again)",
                p.display(),
                v.schema_version
            );
        }
        let f: CellFile = serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", p.display()))?;
        cells.push(Cell { kernel: row.kernel.clone(), threads: row.threads, runs: f.runs });
    }
    let set = ResultSet {
        experiment: s.experiment,
        machine: s.machine,
        workload: s.workload,
        metric: s.metric,
        kernels: s.kernels,
        cells,
    };
    Ok((dir, set))
}

/// Writes `summary` as `dir/summary.json`, checking that every cell file in `dir` still holds
/// the runs the summary was made from, before and after: another run with other settings
/// writing into the same directory at the same time is reported, not left as a summary that
/// disagrees with its cells.
pub fn write_summary(dir: &Path, set: &ResultSet, summary: &Summary) -> Result<()> {
    let check = || -> Result<()> {
        for c in &set.cells {
            let p = cell_path(dir, &c.kernel, c.threads);
            let same = crate::input::read_text(&p, "cell file", crate::input::RESULT_LIMIT)
                .ok()
                .and_then(|t| serde_json::from_str::<CellFile>(&t).ok())
                .is_some_and(|f| f.runs == c.runs);
            if !same {
                bail!(
                    "{}: changed while this run wrote {}: another run with other settings writes the same \
                     directory; run one at a time (or give each its own --out)",
                    p.display(),
                    dir.display()
                );
            }
        }
        Ok(())
    };
    check()?;
    write_atomic(&dir.join("summary.json"), serde_json::to_string_pretty(summary)?.as_bytes())?;
    check()
}

/// Writes a report's files (index.html, plots) into `dir`, each atomically.
pub fn write_report(dir: &Path, report: &tlblab_report::report::Report) -> Result<()> {
    for (rel, bytes) in report.files().map_err(|e| anyhow!(e))? {
        write_atomic(&dir.join(rel), &bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(seeds: Vec<u64>) -> CellSpec {
        CellSpec {
            label: "+patch".into(),
            kernel: KernelConfig::preset("5.18.1+patch").unwrap(),
            workload: Workload::parse("tlb_flush1_threads").unwrap(),
            tasks: 2,
            row: 2,
            seeds,
            warmup: Ps::US * 20,
            measure: Ps::US * 50,
        }
    }

    #[test]
    fn cells_are_stored_reused_only_when_identical_and_thread_count_independent() {
        let dir = std::env::temp_dir().join(format!("tlblab-results-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        let profile = crate::machines::load("haswell-ep-2s").unwrap();
        let opts = RunOptions { jobs: Some(2), store: Some(dir.clone()), ..Default::default() };
        let run = |c: &[CellSpec], o: &RunOptions| run_cells(&profile, c, o).map(|r| (r.runs, r.reused));
        let (a, reused) = run(&[spec(vec![1, 2])], &opts).unwrap();
        assert_eq!((a[0].len(), reused), (2, 0));
        let path = cell_path(&dir, "+patch", 2);
        let first = std::fs::read(&path).unwrap();
        // Same spec: reused, file untouched.
        let (b, reused) = run(&[spec(vec![1, 2])], &opts).unwrap();
        assert_eq!((&a, reused), (&b, 1));
        // Different seeds: rerun, and the result matches a fresh one-thread run.
        let one = RunOptions { jobs: Some(1), ..Default::default() };
        let (c, reused) = run(&[spec(vec![1, 3])], &opts).unwrap();
        assert_eq!(reused, 0);
        assert_eq!(c, run(&[spec(vec![1, 3])], &one).unwrap().0);
        assert_ne!(std::fs::read(&path).unwrap(), first);
        // A damaged file is not reused (it is rewritten).
        std::fs::write(&path, b"{\"schema_version\":1,").unwrap();
        assert_eq!(run(&[spec(vec![1, 3])], &opts).unwrap().1, 0);
        // No temporary files are left behind.
        let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["t2.json"]);
        assert!(run(&[spec(vec![1])], &RunOptions { jobs: Some(0), ..opts.clone() })
            .unwrap_err()
            .to_string()
            .contains("--jobs 0: allowed 1 ..= 256"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn shards_split_the_cell_order_and_together_run_every_cell_once() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0"] {
            assert!(Shard::parse(bad).unwrap_err().contains("expected I/N"), "{bad}");
        }
        let profile = crate::machines::load("haswell-ep-2s").unwrap();
        let cells: Vec<CellSpec> = (1..=5).map(|t| CellSpec { tasks: t, row: t, ..spec(vec![1]) }).collect();
        let whole = run_cells(&profile, &cells, &RunOptions::default()).unwrap();
        let mut seen = vec![Vec::new(); cells.len()];
        for index in 1..=2 {
            // Numbered from cell 1 of a longer job: shard 1 owns odd job indices here.
            let opts =
                RunOptions { shard: Some(Shard { index, count: 2 }), first_cell: 1, ..Default::default() };
            let r = run_cells(&profile, &cells, &opts).unwrap();
            assert_eq!((r.ran, r.skipped), if index == 1 { (2, 3) } else { (3, 2) });
            for (i, runs) in r.runs.into_iter().enumerate() {
                if !runs.is_empty() {
                    assert!(seen[i].is_empty(), "cell {i} ran twice");
                    assert_eq!(opts.shard.unwrap().owns(i + 1), true);
                    seen[i] = runs;
                }
            }
        }
        assert_eq!(seen, whole.runs);
    }

    #[test]
    fn a_summary_is_not_written_over_cells_another_run_changed() {
        let dir = std::env::temp_dir().join(format!("tlblab-race31-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        let profile = crate::machines::load("haswell-ep-2s").unwrap();
        let opts = RunOptions { store: Some(dir.clone()), ..Default::default() };
        let mine = run_cells(&profile, &[spec(vec![1])], &opts).unwrap();
        let set = |runs: Vec<RunResult>| ResultSet {
            experiment: "e".into(),
            machine: "m".into(),
            workload: "w".into(),
            metric: tlblab_report::summary::MetricInfo {
                name: "ops".into(),
                unit: "ops/s".into(),
                higher_is_better: true,
            },
            kernels: vec!["+patch".into()],
            cells: vec![Cell { kernel: "+patch".into(), threads: 2, runs }],
        };
        let ours = set(mine.runs[0].clone());
        write_summary(&dir, &ours, &ours.summary()).unwrap();
        assert!(dir.join("summary.json").is_file());
        std::fs::remove_file(dir.join("summary.json")).unwrap();
        // Another run, other seeds, same directory: its cell file replaces ours.
        run_cells(&profile, &[spec(vec![2])], &opts).unwrap();
        let e = write_summary(&dir, &ours, &ours.summary()).unwrap_err().to_string();
        assert!(e.contains("t2.json") && e.contains("another run with other settings"), "{e}");
        assert!(!dir.join("summary.json").exists());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn load_set_refuses_future_empty_and_clashing_summaries() {
        let dir = std::env::temp_dir().join(format!("tlblab-load31-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let row = |k: &str| {
            format!(
                r#"{{"kernel":"{k}","threads":3,"n":1,"mean":1,"stddev":0,"min":1,"max":1,"counters_per_op":{{}},"oracle_violations":0}}"#
            )
        };
        let head = r#""experiment":"e","machine":"m","workload":"w","metric":{"name":"ops","unit":"ops/s","higher_is_better":true}"#;
        for (body, needle) in [
            (
                format!(r#"{{"schema_version":2,{head},"kernels":["k"],"rows":[{}]}}"#, row("k")),
                "key `schema_version` is 2",
            ),
            (format!(r#"{{{head},"kernels":[],"rows":[]}}"#), "at least one kernel and one row"),
            (format!(r#"{{{head},"kernels":["k"],"rows":[]}}"#), "at least one kernel and one row"),
            (format!(r#"{{{head},"kernels":["k"],"rows":[{}]}}"#, row("j")), "kernel `j` is not one of"),
            (
                format!(r#"{{{head},"kernels":["+patch","_patch-120cc650"],"rows":[{}]}}"#, row("+patch")),
                "share cells/_patch-120cc650/",
            ),
        ] {
            std::fs::write(dir.join("summary.json"), body).unwrap();
            let e = format!("{:#}", load_set(&dir).unwrap_err());
            assert!(e.contains("summary.json") && e.contains(needle), "{e}");
        }
        assert_eq!(slug("+patch"), "_patch-120cc650");
        assert_eq!(label_clash(&["a".into(), "+patch".into(), "_patch-120cc650".into()]).unwrap().0, 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn load_set_explains_what_is_missing() {
        let dir = std::env::temp_dir().join(format!("tlblab-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = load_set(&dir).unwrap_err().to_string();
        assert!(e.contains("not a result set") && e.contains("tlblab reproduce"), "{e}");
        std::fs::write(
            dir.join("summary.json"),
            r#"{"experiment":"e","machine":"m","workload":"w","metric":{"name":"ops","unit":"ops/s","higher_is_better":true},"kernels":["k"],"rows":[{"kernel":"k","threads":3,"n":1,"mean":1,"stddev":0,"min":1,"max":1,"counters_per_op":{},"oracle_violations":0}]}"#,
        )
        .unwrap();
        let e = format!("{:#}", load_set(&dir).unwrap_err());
        assert!(
            e.contains("cell file") && e.contains("t3.json") && e.contains("kernel `k` at 3 threads"),
            "{e}"
        );
        // A cell of result schema 1 (flat knobs) is refused by its version, in one line.
        let cell = cell_path(&dir, "k", 3);
        std::fs::create_dir_all(cell.parent().unwrap()).unwrap();
        std::fs::write(&cell, r#"{"schema_version":1,"kernel":"k","threads":3,"runs":[{"config":{}}]}"#)
            .unwrap();
        let e = format!("{:#}", load_set(&dir).unwrap_err());
        assert!(
            e.contains("t3.json: key `schema_version` is 1; this tlblab reads 2") && !e.contains('\n'),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
