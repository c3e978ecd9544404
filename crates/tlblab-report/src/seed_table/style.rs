//! The metric block of each [`Style`], and the line that closes the table.

use tlblab_model::linux::arch::ppc::tlbmiss::HANDLER_CLOCKS;

use super::spec::{Stat, StatRow, Style};
use super::{cell, column_heads, kernel_line, per_op, title_line, width, Heading};
use crate::stats::{percent_better, pndiff};
use crate::summary::{Row, Summary};

/// The counters the derived parts read by name (checked against the model's by a test).
pub const READS: &[&str] =
    &["user_clocks", "sys_clocks", "kthread_clocks", "icache_stall_clocks", "data_clocks", "tick_clocks"];

/// Every counter a style or derived block reads: `READS` and the MPC8xx handlers' clocks.
pub fn derived_counters() -> Vec<&'static str> {
    READS.iter().chain(HANDLER_CLOCKS.iter()).copied().collect()
}

/// The title and the metric's rows, as the table's style prints them.
pub fn opening(e: &Heading, s: &Summary) -> String {
    match e.table.style {
        Style::Bare => bare(e, s),
        Style::Mmtests | Style::Compare => compare(e, s),
        Style::Vmscale => vmscale(e, s),
        Style::TimeDd => time_dd(e, s),
    }
}

/// The line under the blocks: the oracle's total, or what the values are.
pub fn closing(e: &Heading, s: &Summary) -> String {
    let t = e.rows.first().copied().unwrap_or(1);
    match e.table.style {
        Style::Bare | Style::Mmtests | Style::Compare => {
            let violations: u64 = s.rows.iter().map(|r| r.oracle_violations).sum();
            format!("\nsafety oracle: {violations} violations over every run\n")
        }
        Style::Vmscale => format!(
            "\nelapsed in {}, mean of {} run(s); counters per page in summary.json. Oracle violations: {}\n",
            s.metric.unit,
            s.rows[0].n,
            s.kernels
                .iter()
                .map(|k| cell(s, k, t).oracle_violations.to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        Style::TimeDd => format!(
            "\nreal in {}, mean of {} run(s); counters per block in summary.json.\n",
            s.metric.unit, s.rows[0].n
        ),
    }
}

fn value(r: &Row, of: Stat) -> f64 {
    match of {
        Stat::Mean => r.mean,
        Stat::Hmean => r.hmean.unwrap_or(r.mean),
        Stat::Stddev => r.stddev,
        Stat::Coeffvar => r.coeffvar(),
    }
}

/// What the values are and how many runs each is over.
fn runs_line(s: &Summary) -> String {
    format!(
        "\n{} in {}; {} run(s) per cell, each differing only by its seed.\n",
        s.metric.name, s.metric.unit, s.rows[0].n
    )
}

/// will-it-scale's bare means per row, each other column with its change over the first; a
/// spread statistic as its own block (`-` for one run).
fn bare(e: &Heading, s: &Summary) -> String {
    let rows = &e.table.rows;
    let mut out = title_line(e, s) + &"=".repeat(e.title.len().min(100)) + "\n";
    let w = width(s, 12);
    out += &column_heads(e, ("", rows), 7, w, |k| k.label.clone());
    for st in &e.table.stats {
        if st.of.is_spread() {
            out += if st.of == Stat::Coeffvar { "\nCoeffVar (%)\n" } else { "\nStddev\n" };
            out += &kernel_line(s, rows, 7, w, &|k| k.to_string());
        }
        for &t in e.rows {
            let mut line = format!("{t:<7}");
            let base = value(cell(s, &s.kernels[0], t), st.of);
            for (i, k) in s.kernels.iter().enumerate() {
                let c = cell(s, k, t);
                let v = value(c, st.of);
                let txt = match (st.of.is_spread(), i) {
                    (true, _) if c.n < 2 => "-".to_string(),
                    (true, _) => format!("{v:.2}"),
                    (false, 0) => format!("{v:.0}"),
                    (false, _) => format!("{v:.0} ({:+.1}%)", 100.0 * (v / base - 1.0)),
                };
                line += &format!(" {txt:>w$}");
            }
            out += &line;
            out += "\n";
        }
        if !st.of.is_spread() {
            out += &format!(
                "\n{} in {}, mean of {} run(s), each differing only by its seed.\n",
                s.metric.name, s.metric.unit, s.rows[0].n
            );
        }
    }
    out
}

/// mmtests compare-kernels: per statistic and row a line, each value with its difference to
/// the first column where positive is better (pdiff, pndiff for a spread or a time).
fn compare(e: &Heading, s: &Summary) -> String {
    let mmtests = e.table.style == Style::Mmtests;
    let w = 20;
    let mut out = title_line(e, s) + &s.workload + "\n";
    out += &if mmtests {
        // mmtests wraps "3.13.0-rc3-vanilla" as "3.13.0-rc3" over "vanilla".
        column_heads(e, ("", &e.table.rows), 12, w, |k| {
            k.label.strip_prefix(&format!("{}-", k.group)).unwrap_or(&k.label).to_string()
        })
    } else {
        column_heads(e, ("", ""), 18, w, |k| k.label.clone())
    };
    let hb = s.metric.higher_is_better;
    for st in &e.table.stats {
        let StatRow { of, label, received } = st;
        let better = hb && !of.is_spread();
        for &t in e.rows {
            let mut line =
                if mmtests { format!("{label:<9}{t:<3}") } else { format!("{:<18}", format!("{label}{t}")) };
            let v = |k: &str| {
                let r = cell(s, k, t);
                match received {
                    Some(c) => value(r, *of) * per_op(r, c) / t as f64,
                    None => value(r, *of),
                }
            };
            let base = v(&s.kernels[0]);
            for k in &s.kernels {
                let txt = if of.is_spread() && cell(s, k, t).n < 2 {
                    "-".to_string()
                } else {
                    format!("{:.*} ({:6.2}%)", e.table.decimals, v(k), percent_better(v(k), base, better))
                };
                line += &format!(" {txt:>w$}");
            }
            out += &format!("{line}\n");
        }
    }
    out + &runs_line(s)
}

/// Each process's elapsed in a vmscale case: its file at its own rate, `elapsed x mean(ops) /
/// ops_i` (the model's processes share one measured interval).
pub fn per_process_times(r: &Row) -> Vec<f64> {
    let mean = r.task_ops.iter().sum::<f64>() / r.task_ops.len().max(1) as f64;
    r.task_ops.iter().map(|&n| r.mean * mean / n.max(1e-9)).collect()
}

/// vmscale's time_range: the slowest process's elapsed minus the fastest's.
pub fn time_range(r: &Row) -> f64 {
    let v = per_process_times(r);
    v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
}

/// vmscale's time_stddv: the population stddev of the processes' elapsed.
pub fn time_stddev(r: &Row) -> f64 {
    let v = per_process_times(r);
    let m = v.iter().sum::<f64>() / v.len().max(1) as f64;
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

/// mmtests' vmscale report: `Ops lru-file-mmap-read-elapsed`, `-time_range` and `-time_stddv`
/// with pndiff against the first column, then User/System/Elapsed. User and System are the
/// CPUs' user (user + page walks) and kernel buckets over the measured interval, scaled to the
/// case's elapsed (no setup: Elapsed is the case's).
fn vmscale(e: &Heading, s: &Summary) -> String {
    let t = e.rows.first().copied().unwrap_or(1);
    let cell = |k: &str| cell(s, k, t);
    let w = width(s, 18);
    let mut out = title_line(e, s) + &s.workload + "\n";
    out += &column_heads(e, ("vmscale", ""), 34, w, |k| k.label.clone());
    let base = &s.kernels[0];
    let ops_row = |label: &str, f: &dyn Fn(&Row) -> f64| {
        let mut line = format!("{:<34}", format!("Ops lru-file-mmap-read-{label}"));
        let b = f(cell(base));
        for k in &s.kernels {
            let v = f(cell(k));
            line += &format!(" {:>w$}", format!("{v:.2} ({:>6.2}%)", pndiff(v, b)));
        }
        line + "\n"
    };
    out += &ops_row("elapsed", &|r| r.mean);
    out += &ops_row("time_range", &time_range);
    out += &ops_row("time_stddv", &time_stddev);
    let secs = |k: &str, user: bool| {
        let r = cell(k);
        let total_ops: f64 = r.task_ops.iter().sum();
        let measured = total_ops / r.ops_per_second.max(1e-9);
        let scale = r.mean / measured.max(1e-12);
        let ps: f64 = r
            .attribution_ps
            .iter()
            .filter(|(b, _)| {
                let is_user = b.as_str() == "user" || b.as_str() == "page_walk";
                b.as_str() != "idle" && is_user == user
            })
            .map(|(_, v)| v)
            .sum();
        ps * 1e-12 * scale
    };
    let plain = |label: &str, f: &dyn Fn(&str) -> String| kernel_line(s, label, 34, w, f);
    out += "\n";
    out += &plain("User", &|k| format!("{:.2}", secs(k, true)));
    out += &plain("System", &|k| format!("{:.2}", secs(k, false)));
    out += &plain("Elapsed", &|k| format!("{:.2}", cell(k).mean));
    out
}

/// The sum of an MPC8xx run's clock counters per block: dd's user and sys and the writeback
/// threads' (bdflush, pdflush), which `time dd` does not report.
pub fn dd_clocks(r: &Row) -> f64 {
    per_op(r, "user_clocks") + per_op(r, "sys_clocks") + per_op(r, "kthread_clocks")
}

/// `time dd`'s real/user/sys per kernel, and the writeback threads' part of real: real split
/// as the run's clock counters split it.
fn time_dd(e: &Heading, s: &Summary) -> String {
    let t = e.rows.first().copied().unwrap_or(1);
    let cell = |k: &str| cell(s, k, t);
    let w = width(s, 14);
    let mut out = title_line(e, s) + &"=".repeat(e.title.len().min(100)) + "\n" + &s.workload + "\n";
    out += kernel_line(s, "", 26, w, &|k| k.to_string()).trim_end();
    out += "\n";
    let row = |label: &str, f: &dyn Fn(&str) -> String| kernel_line(s, label, 26, w, f);
    let split = |k: &str, part: &str| cell(k).mean * per_op(cell(k), part) / dd_clocks(cell(k)).max(1.0);
    let base = cell(&s.kernels[0]).mean;
    out += &row("real (s)", &|k| {
        let m = cell(k).mean;
        if k == s.kernels[0] {
            format!("{m:.3}")
        } else {
            format!("{m:.3} ({:+.0}%)", 100.0 * (m / base - 1.0))
        }
    });
    out += &row("user (s)", &|k| format!("{:.3}", split(k, "user_clocks")));
    out += &row("sys (s)", &|k| format!("{:.3}", split(k, "sys_clocks")));
    out += &row("writeback thread (s)", &|k| format!("{:.3}", split(k, "kthread_clocks")));
    out
}

/// Every clock of an MPC8xx block is one of these (linux/arch/ppc/mm/mmu_8xx.rs): issuing the
/// paths' instructions, their I-cache stalls, their data accesses, or a miss handler.
pub(super) fn clock_parts(s: &Summary, t: u32, pad: usize, w: usize) -> String {
    let g = |k: &str, n: &str| per_op(cell(s, k, t), n);
    let clocks = |k: &str| dd_clocks(cell(s, k, t));
    let row = |label: &str, f: &dyn Fn(&str) -> String| kernel_line(s, label, pad, w, f);
    let handlers = |k: &str| HANDLER_CLOCKS.iter().map(|n| g(k, n)).sum::<f64>();
    let issue = |k: &str| clocks(k) - handlers(k) - g(k, "icache_stall_clocks") - g(k, "data_clocks");
    let share = |k: &str, v: f64| format!("{v:.0} ({:.1}%)", 100.0 * v / clocks(k).max(1.0));
    let mut out = row("total", &|k| format!("{:.0}", clocks(k)));
    out += &row("instruction issue", &|k| share(k, issue(k)));
    out += &row("I-cache stalls", &|k| share(k, g(k, "icache_stall_clocks")));
    out += &row("data accesses", &|k| share(k, g(k, "data_clocks")));
    out += &row("TLB miss handlers", &|k| share(k, handlers(k)));
    out += &row("  timer ticks (all parts)", &|k| share(k, g(k, "tick_clocks")));
    out += &row("  writeback thread (all)", &|k| share(k, g(k, "kthread_clocks")));
    out
}
