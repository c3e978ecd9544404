//! A result set as an mmtests `work/log` tree (gormanm/mmtests HEAD 638401e0, 2026-06-25), so
//! mmtests' unmodified `compare-kernels.sh` / `compare-mmtests.pl` print the table and simulated
//! kernels can sit beside real mmtests runs of the same benchmark:
//!
//! ```text
//! OUT/<run>/iter-0/tests-activity                 run-mmtests' activity log (what the scripts
//!                                                  read to find runs and benchmark names)
//! OUT/<run>/iter-0/ebizzy/logs/ebizzy-<T>-<I>.log  ebizzy: "<total> records/s <per thread>..."
//! OUT/<run>/iter-0/wis-<x>/logs/benchlog-<case>_<model>-<T>   will-it-scale: one
//!                                                  "min:N max:N total:N" line per sample
//! ```
//!
//! One run directory per column (kernel) of the set, named after its label with the characters
//! that break mmtests' comma-separated run lists replaced. Each seed is one sample: an ebizzy
//! iteration, or one of will-it-scale's per-second lines (wis-bench has already stripped the
//! warm-up lines there).

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use tlblab_model::run::RunResult;
use tlblab_report::summary::ResultSet;

/// The mmtests commit whose layout and parsers this follows.
pub const MMTESTS_COMMIT: &str = "638401e0";

/// The benchmark a set's workload is in mmtests, and how its logs are written.
#[derive(Debug, Clone, PartialEq)]
pub enum Bench {
    Ebizzy,
    /// `wis-<name>` with will-it-scale's testcase and model (`tlb_flush1`, `threads`).
    Wis {
        name: String,
        testcase: String,
        model: String,
    },
}

impl Bench {
    pub fn of(workload: &str) -> Result<Bench> {
        let w = workload.trim();
        if w == "ebizzy" || w.starts_with("ebizzy ") {
            return Ok(Bench::Ebizzy);
        }
        for model in ["threads", "processes"] {
            if let Some(testcase) = w.strip_suffix(&format!("_{model}")) {
                // mmtests' own config names where it has one (configs/config-workload-will-it-
                // scale-*: wis-pf, wis-mmap); the tlb_flush tests have no config there.
                let name = match testcase {
                    t if t.starts_with("tlb_flush") => "wis-tlbflush".to_string(),
                    t if t.starts_with("page_fault") => "wis-pf".to_string(),
                    t => format!("wis-{}", t.trim_end_matches(|c: char| c.is_ascii_digit()).replace('_', "")),
                };
                return Ok(Bench::Wis { name, testcase: testcase.into(), model: model.into() });
            }
        }
        bail!("workload `{workload}` has no mmtests benchmark here; mmtests export knows ebizzy and will-it-scale (<testcase>_threads|_processes)")
    }

    pub fn name(&self) -> &str {
        match self {
            Bench::Ebizzy => "ebizzy",
            Bench::Wis { name, .. } => name,
        }
    }
}

/// A column label as an mmtests run name: `,` `=` `/` and spaces break the scripts' `-n a,b`
/// lists and paths.
pub fn run_name(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || "._+-".contains(c) { c } else { '_' }).collect()
}

/// Per-task rates of one run in operations per second of measured time.
fn task_rates(r: &RunResult) -> Vec<f64> {
    let secs = r.config.measure_ps as f64 / 1e12;
    r.iterations.iter().map(|&n| n as f64 / secs).collect()
}

/// Every file of the tree: path relative to OUT, and its text. Fails (before anything is
/// written) when two labels map to one run name.
pub fn files(set: &ResultSet) -> Result<Vec<(PathBuf, String)>> {
    let bench = Bench::of(&set.workload)?;
    let mut out = Vec::new();
    let mut names: Vec<(String, &String)> = Vec::new();
    for k in &set.kernels {
        let run = run_name(k);
        // A run name is a directory under OUT (`..` keeps every character run_name allows).
        crate::store::check_name(&run).map_err(|e| anyhow::anyhow!("column `{k}`: mmtests run {e}"))?;
        if let Some((_, other)) = names.iter().find(|(n, _)| *n == run) {
            bail!("columns `{other}` and `{k}` both become mmtests run `{run}`; rename one");
        }
        names.push((run, k));
    }
    for (run, k) in &names {
        let iter = PathBuf::from(run).join("iter-0");
        let b = bench.name();
        // run-mmtests.sh's activity_log lines ("<epoch> run-mmtests: ..."); epoch 0 keeps the
        // export byte-for-byte reproducible.
        out.push((
            iter.join("tests-activity"),
            format!(
                "0 run-mmtests: Start\n0 run-mmtests: Iteration 1 start\n0 run-mmtests: test start :: {b} 0\n\
                 0 run-mmtests: test end :: {b} 0 0\n0 run-mmtests: Iteration 1 end\n0 run-mmtests: End\n"
            ),
        ));
        let logs = iter.join(b).join("logs");
        let cells = set.cells.iter().filter(|c| &c.kernel == *k);
        match &bench {
            Bench::Ebizzy => {
                for c in cells {
                    for (i, r) in c.runs.iter().enumerate() {
                        let rates: Vec<String> = task_rates(r).iter().map(|v| format!("{v:.0}")).collect();
                        out.push((
                            logs.join(format!("ebizzy-{}-{}.log", c.threads, i + 1)),
                            format!("{:.0} records/s {}\n", r.metric.value, rates.join(" ")),
                        ));
                    }
                }
            }
            Bench::Wis { testcase, model, .. } => {
                for c in cells {
                    let mut text = String::new();
                    for r in &c.runs {
                        let rates = task_rates(r);
                        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
                        let max = rates.iter().copied().fold(0.0, f64::max);
                        text += &format!("min:{min:.0} max:{max:.0} total:{:.0}\n", r.metric.value);
                    }
                    out.push((logs.join(format!("benchlog-{testcase}_{model}-{}", c.threads)), text));
                }
                out.push((logs.join("workloads"), format!("{testcase}\n")));
                out.push((logs.join("models"), format!("{model}\n")));
            }
        }
    }
    Ok(out)
}

/// Writes the tree into `out` (each file atomically); returns the run names.
pub fn write(set: &ResultSet, out: &Path) -> Result<Vec<String>> {
    let files = files(set)?;
    for k in &set.kernels {
        crate::store::child(out, &run_name(k))?;
    }
    for (rel, text) in &files {
        crate::store::write_atomic(&out.join(rel), text.as_bytes())?;
    }
    Ok(set.kernels.iter().map(|k| run_name(k)).collect())
}

#[cfg(test)]
mod tests;
