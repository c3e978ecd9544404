//! A result set as an mmtests `work/log` tree (gormanm/mmtests HEAD 638401e0, 2026-06-25), so
//! mmtests' unmodified `compare-kernels.sh` / `compare-mmtests.pl` print the table and simulated
//! kernels can sit beside real mmtests runs of the same benchmark:
//!
//! ```text
//! OUT/<run>/iter-0/tests-activity                 run-mmtests' activity log (what the scripts
//!                                                  read to find runs and benchmark names)
//! OUT/<run>/iter-0/tests-timestamp, tests-sysstate run-mmtests' test begin/end and `time ::`
//!                                                  lines, which compare-kernels.sh's duration,
//!                                                  mmtests-vmstat and mmtests-schedstat monitor
//!                                                  sections read after the table
//! OUT/<run>/iter-0/ebizzy/logs/ebizzy-<T>-<I>.log  ebizzy: "<total> records/s <per thread>..."
//! OUT/<run>/iter-0/wis-<x>/logs/benchlog-<case>_<model>-<T>   will-it-scale: one
//!                                                  "min:N max:N total:N" line per sample
//! ```
//!
//! One run directory per column (kernel) of the set, named by [`run_name`]. Each seed is one
//! sample: an ebizzy
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

/// A column label as an mmtests run name: `tlblab-` then the label with every run of characters
/// other than ASCII letters, digits, `.` and `_` made one `_` (none at either end). The scripts
/// split `-n a,b` lists at `,`, `=`/space break paths and arguments, and compare-mmtests.pl's
/// column header prints a name as two rows split at its first `-` (with no `-`, the first row
/// loses the last character): so the label keeps no `-` (nor `+`, which the scripts use in
/// regular expressions unescaped), and the one `-` after `tlblab` puts `tlblab` above each
/// simulated column, telling it apart from real runs in the same table.
/// `5.18.1+patch` -> `tlblab-5.18.1_patch`, `touch_mm->tlb_gen` -> `tlblab-touch_mm_tlb_gen`.
pub fn run_name(label: &str) -> String {
    let mut safe = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            safe.push(c);
        } else if !safe.is_empty() && !safe.ends_with('_') {
            safe.push('_');
        }
    }
    let safe = safe.trim_end_matches('_');
    format!("tlblab-{}", if safe.is_empty() { "run" } else { safe })
}

/// What `/usr/bin/time` would have said of one run directory's benchmark, as run-mmtests.sh
/// logs it (`time :: <bench> <U> user <S> system <E> elapsed`), from the simulation itself: the
/// measured intervals of every run of the column, elapsed their simulated length, user the CPUs'
/// `user` and `page_walk` time (a hardware walk is charged to the user task), system every
/// other non-idle bucket (kernel entry, faults, flushes, IPIs, locks, scheduler, tick).
fn time_line(bench: &str, runs: &[&RunResult]) -> String {
    let (mut user, mut system, mut elapsed) = (0u128, 0u128, 0u128);
    for r in runs {
        elapsed += r.config.measure_ps as u128;
        for cpu in &r.attribution {
            for (bucket, &ps) in cpu {
                match bucket.as_str() {
                    "user" | "page_walk" => user += ps as u128,
                    "idle" => {}
                    _ => system += ps as u128,
                }
            }
        }
    }
    let s = |ps: u128| ps as f64 / 1e12;
    format!("time :: {bench} {:.2} user {:.2} system {:.2} elapsed\n", s(user), s(system), s(elapsed))
}

/// The command that prints a tree's table, for `tlblab export`'s hint. will-it-scale: the
/// unmodified compare-kernels.sh. ebizzy: compare-mmtests.pl with `--sub-heading total_rsec`,
/// because at mmtests 638401e0 compare-kernels.sh's ebizzy case asks for `total_rec`, which the
/// ebizzy parser no longer writes (its section is empty for any ebizzy data).
pub fn hint(bench: &Bench, out: &Path, runs: &[String]) -> String {
    let cd = format!("cd {}", shell_word(&out.display().to_string()));
    match bench {
        Bench::Ebizzy => format!(
            "{cd} && \"$MMTESTS/bin/compare-mmtests.pl\" -d . -b ebizzy -n {} --sub-heading total_rsec",
            runs.join(",")
        ),
        Bench::Wis { .. } => format!(
            "{cd} && ASSUME_PACKAGE_INSTALLED=yes \"$MMTESTS/compare-kernels.sh\" --baseline {}{}",
            runs[0],
            if runs.len() > 1 { format!(" --compare \"{}\"", runs[1..].join(" ")) } else { String::new() }
        ),
    }
}

/// A path as one shell word (quoted when it holds anything but `[A-Za-z0-9._/+-]`).
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "._/+-".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
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
        let runs: Vec<&RunResult> =
            set.cells.iter().filter(|c| &c.kernel == *k).flat_map(|c| c.runs.iter()).collect();
        // run-mmtests.sh's teststate_log lines go to both files, then `/usr/bin/time`'s line.
        let state = format!("test begin :: {b} 0\ntest end :: {b} 0 0\n{}", time_line(b, &runs));
        out.push((iter.join("tests-timestamp"), state.clone()));
        out.push((iter.join("tests-sysstate"), state));
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
