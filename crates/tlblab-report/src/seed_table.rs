//! The seed reproductions' own table layouts (`layout` in `experiments/*.toml`): seed 002's bare
//! means per thread count and seed 000's mmtests Mean/Stddev rows, each followed by the event
//! counts per operation the seed's argument rests on. Text only; the CLI prints it and the HTML
//! report repeats it.

use std::collections::BTreeMap;

use tlblab_model::linux::arch::ppc::tlbmiss::HANDLER_CLOCKS;

use crate::stats::percent_better;
use crate::summary::{Row, Summary};

/// Table layouts `render` knows: seed 002's bare means, seed 000's mmtests Mean/Stddev rows.
pub const LAYOUTS: &[&str] = &["seed-002", "seed-000", "seed-003", "seed-004", "seed-001"];

/// One column of the table: its label and the heading over a group of columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub label: String,
    /// A heading over several columns (e.g. "early return"); may be empty.
    pub group: String,
}

/// What the table shows beside the summary: the experiment's title, seed thread, columns in
/// order, thread counts in order and the note printed under it.
#[derive(Debug, Clone)]
pub struct Heading<'a> {
    /// One of `LAYOUTS`; anything else prints seed 002's.
    pub layout: &'a str,
    pub title: &'a str,
    pub seed_thread: &'a str,
    pub columns: &'a [Column],
    pub threads: &'a [u32],
    pub note: &'a str,
    /// The seed's published figures, shown beside the model's.
    pub reference: Option<&'a Reference>,
}

/// The seed's published figures (`[reference]` in an experiment file): for display and
/// comparison only, never an input to a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Where the figures are printed (message, table).
    pub source: String,
    /// Per column label, the metric at each thread count the seed gives (`"5.18.1" = { 1 = 159504 }`).
    pub values: BTreeMap<String, BTreeMap<String, f64>>,
}

/// One published figure beside the model's (a row of `summary.json`'s `reference`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RefPoint {
    pub kernel: String,
    /// The thread count the seed gives the figure at.
    pub threads: u32,
    /// The model's nearest thread count (the same, where the experiment runs it).
    pub model_threads: u32,
    pub seed: f64,
    pub model: f64,
    /// `model / seed - 1`, in percent.
    pub difference_pct: f64,
    /// Against the first column at the same thread count, where the seed gives both: its gain,
    /// and the model's (percent; positive is better for a lower-is-better metric too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_gain_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_gain_pct: Option<f64>,
}

impl Reference {
    /// Checks the figures name columns of the experiment and thread counts as numbers.
    pub fn validate(&self, columns: &[String]) -> Result<(), String> {
        if self.source.trim().is_empty() {
            return Err("reference.source: must say where the figures are printed".into());
        }
        for (k, by_threads) in &self.values {
            if !columns.contains(k) {
                return Err(format!(
                    "reference.values: `{k}` is not a kernel column; columns are {columns:?}"
                ));
            }
            for (t, v) in by_threads {
                if t.parse::<u32>().map_or(true, |t| t == 0) || !v.is_finite() {
                    return Err(format!(
                        "reference.values.\"{k}\".{t}: needs a positive thread count and a finite value"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every figure beside the model's value at the nearest thread count it ran.
    pub fn points(&self, s: &Summary) -> Vec<RefPoint> {
        let hb = s.metric.higher_is_better;
        let gain =
            |new: f64, base: f64| if hb { 100.0 * (new / base - 1.0) } else { 100.0 * (1.0 - new / base) };
        let base_label = &s.kernels[0];
        let seed_at = |k: &str, t: u32| self.values.get(k).and_then(|m| m.get(&t.to_string())).copied();
        let mut out = Vec::new();
        for k in &s.kernels {
            let Some(by_threads) = self.values.get(k) else { continue };
            let mut pts: Vec<(u32, f64)> =
                by_threads.iter().map(|(t, &v)| (t.parse().unwrap_or(0), v)).collect();
            pts.sort_by_key(|p| p.0);
            for (t, seed) in pts {
                let near = |k: &str| {
                    s.rows.iter().filter(|r| r.kernel == k).min_by_key(|r| (r.threads.abs_diff(t), r.threads))
                };
                let Some(row) = near(k) else { continue };
                let model = row.hmean.unwrap_or(row.mean);
                let (seed_gain_pct, model_gain_pct) =
                    match (k != base_label, seed_at(base_label, t), near(base_label)) {
                        (true, Some(b), Some(m)) => {
                            (Some(gain(seed, b)), Some(gain(model, m.hmean.unwrap_or(m.mean))))
                        }
                        _ => (None, None),
                    };
                out.push(RefPoint {
                    kernel: k.clone(),
                    threads: t,
                    model_threads: row.threads,
                    seed,
                    model,
                    difference_pct: 100.0 * (model / seed - 1.0),
                    seed_gain_pct,
                    model_gain_pct,
                });
            }
        }
        out
    }
}

/// The seed's figures beside the model's, one row per thread count the seed gives: the first
/// column's figure and the model's ratio to it, then each other column's gain over the first,
/// the seed's beside the model's.
/// What a reference table's rows count: seed 004's are message sizes, or hackbench's groups.
fn reference_rows(e: &Heading, s: &Summary) -> &'static str {
    match e.layout {
        "seed-004" if s.workload.starts_with("hackbench") => "groups",
        "seed-004" if is_fsmark(s) => "threads",
        "seed-004" => "size",
        _ => "tasks",
    }
}

fn render_reference(r: &Reference, s: &Summary, rows: &str) -> String {
    let pts = r.points(s);
    if pts.is_empty() {
        return String::new();
    }
    let w = 22;
    let mut out = format!(
        "\nThe seed's figures beside the model's (reference only, never an input; {}).\n\
         First column: seed {} and model/seed; the others: gain over the first column, seed | model.\n",
        r.source.trim(),
        s.metric.unit
    );
    let mut head = format!("{rows:<10}");
    for k in &s.kernels {
        head += &format!(" {k:>w$}");
    }
    out += &format!("{}\n", head.trim_end());
    let mut threads: Vec<(u32, u32)> = pts.iter().map(|p| (p.threads, p.model_threads)).collect();
    threads.sort_unstable();
    threads.dedup();
    for (t, mt) in threads {
        let label = if t == mt { format!("{t}") } else { format!("{t} (model {mt})") };
        let mut line = format!("{label:<10}");
        for (i, k) in s.kernels.iter().enumerate() {
            let p = pts.iter().find(|p| &p.kernel == k && p.threads == t);
            let txt = match p {
                None => "-".to_string(),
                Some(p) if i == 0 => format!("{:.0} x{:.2}", p.seed, p.model / p.seed),
                Some(p) => match (p.seed_gain_pct, p.model_gain_pct) {
                    (Some(sg), Some(mg)) => format!("{sg:+.1}% | {mg:+.1}%"),
                    _ => format!("{:.0} x{:.2}", p.seed, p.model / p.seed),
                },
            };
            line += &format!(" {txt:>w$}");
        }
        out += &format!("{}\n", line.trim_end());
    }
    out
}

/// The table in the seed's layout, then the event counts per operation beside it.
pub fn render(e: &Heading, s: &Summary) -> String {
    let mut out = match e.layout {
        "seed-000" => render_seed_000(e, s),
        "seed-003" => render_seed_003(e, s),
        "seed-001" => render_seed_001(e, s),
        "seed-004" => render_seed_004(e, s),
        _ => render_seed_002(e, s),
    };
    if let Some(r) = e.reference {
        out += &render_reference(r, s, reference_rows(e, s));
    }
    if !e.note.is_empty() {
        out += &format!("\nNote: {}\n", e.note.trim());
    }
    out
}

/// The summary row of kernel `k` at `t` threads (seed 004's sizes and groups are its threads).
fn cell<'s>(s: &'s Summary, k: &str, t: u32) -> &'s Row {
    s.rows.iter().find(|r| r.kernel == k && r.threads == t).expect("a row per kernel and thread count")
}

/// The two heading lines over the kernel columns: each column's group, then its label as
/// `label` shows it; the first `pad` characters hold `corner.0` and `corner.1`.
fn column_heads(
    e: &Heading,
    corner: (&str, &str),
    pad: usize,
    w: usize,
    label: impl Fn(&Column) -> String,
) -> String {
    let mut groups = format!("{:<pad$}", corner.0);
    let mut labels = format!("{:<pad$}", corner.1);
    for k in e.columns {
        groups += &format!(" {:>w$}", k.group);
        labels += &format!(" {:>w$}", label(k));
    }
    format!("{}\n{}\n", groups.trim_end(), labels.trim_end())
}

/// One line: `label` in `pad` characters, then `f` of each kernel right-aligned in `w`.
fn kernel_line(s: &Summary, label: &str, pad: usize, w: usize, f: &dyn Fn(&str) -> String) -> String {
    let mut line = format!("{label:<pad$}");
    for k in &s.kernels {
        line += &format!(" {:>w$}", f(k));
    }
    line + "\n"
}

/// The oracle's total over every run, the last line of most layouts.
fn oracle_line(s: &Summary) -> String {
    let violations: u64 = s.rows.iter().map(|r| r.oracle_violations).sum();
    format!("\nsafety oracle: {violations} violations over every run\n")
}

/// What the values are and how many seeds each is over (the mmtests layouts).
fn runs_line(s: &Summary) -> String {
    format!(
        "\n{} in {}; {} run(s) per cell, each differing only by its seed.\n",
        s.metric.name, s.metric.unit, s.rows[0].n
    )
}

/// mmtests' compare-kernels layout as seed 000 prints it: a Mean and a Stddev row per thread
/// count, kernels as columns (group over label), each value with its difference to the first
/// column where positive is better (pdiff for means of a higher-is-better metric, pndiff for
/// stddevs; facts sheet §5.3). Then the per-iteration counts behind it.
fn render_seed_000(e: &Heading, s: &Summary) -> String {
    let cell = |k: &str, t: u32| cell(s, k, t);
    let w = 20;
    let mut out = format!("{} ({}, seed thread {})\n", e.title, s.experiment, e.seed_thread);
    out += &format!("{}\n", s.workload);
    // mmtests wraps "3.13.0-rc3-vanilla" as "3.13.0-rc3" over "vanilla".
    out += &column_heads(e, ("", "thread"), 12, w, |k| {
        k.label.strip_prefix(&format!("{}-", k.group)).unwrap_or(&k.label).to_string()
    });
    let hb = s.metric.higher_is_better;
    let stats: [(&str, bool, fn(&Row) -> f64); 3] =
        [("Mean", hb, |r| r.mean), ("Stddev", false, |r| r.stddev), ("CoeffVar", false, Row::coeffvar)];
    for (stat, higher_better, of) in stats {
        for &t in e.threads {
            let mut line = format!("{stat:<9}{t:<3}");
            let v = |k: &str| of(cell(k, t));
            let base = v(&s.kernels[0]);
            for k in &s.kernels {
                let x = v(k);
                // One iteration has no spread to show.
                let txt = if stat != "Mean" && cell(k, t).n < 2 {
                    "-".to_string()
                } else {
                    format!("{x:.2} ({:6.2}%)", percent_better(x, base, higher_better))
                };
                line += &format!(" {txt:>w$}");
            }
            out += &format!("{line}\n");
        }
    }
    out += &runs_line(s);
    out += "\nPer record: pages flushed one at a time (INVLPGs, all CPUs) / full flushes (all CPUs) / IPIs \
            sent / TLB misses after flushes\n";
    let mut head = format!("{:<10}", "thread");
    for k in &s.kernels {
        head += &format!(" {k:>26}");
    }
    out += &format!("{}\n", head.trim_end());
    for &t in e.threads {
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
    out += &oracle_line(s);
    out
}

/// Seed 004's layout (Mel Gorman's compare-kernels tables, Dec 2016), kernels as columns with the
/// difference to the first in parentheses (positive is better: pdiff, pndiff for stddevs). A rate
/// (netperf, sockperf) gets `Hmean` rows per message size, netperf's as `send-SIZE` and, for
/// UDP_STREAM, `recv-SIZE` rows: the receiver's throughput of the same runs (the send Hmean times
/// the bytes received per byte sent, the line netperf prints). A time (hackbench) gets `Amean`
/// rows per group count, four decimals as the seed prints them. `Stddev` rows follow. Then, per
/// operation, what the seed's argument rests on: `zone->lock` acquisitions, lock wait (zone and
/// slab list locks), per-CPU list hits:misses by order, slab pages allocated, and drops.
/// fs_mark's rows are thread counts and its operation a file created.
fn is_fsmark(s: &Summary) -> bool {
    s.workload.starts_with("fsmark") || s.workload.starts_with("fs_mark")
}

fn render_seed_004(e: &Heading, s: &Summary) -> String {
    let cell = |k: &str, t: u32| cell(s, k, t);
    let w = 20;
    let netperf = s.workload.starts_with("netperf");
    let udp = netperf && s.workload.contains("UDP_STREAM");
    let mut out = format!("{} ({}, seed thread {})\n{}\n", e.title, s.experiment, e.seed_thread, s.workload);
    out += &column_heads(e, ("", ""), 18, w, |k| k.label.clone());
    let hb = s.metric.higher_is_better;
    let hmean = |k: &str, t: u32| {
        let c = cell(k, t);
        c.hmean.unwrap_or(c.mean)
    };
    let recv = |k: &str, t: u32| {
        hmean(k, t) * cell(k, t).counters_per_op.get("net_received_bytes").copied().unwrap_or(0.0) / t as f64
    };
    let mean_row = if hb { "Hmean" } else { "Amean" };
    let row_prefix = if netperf {
        "send-"
    } else if is_fsmark(s) {
        "files/sec-"
    } else {
        ""
    };
    let mut stats: Vec<(&str, &str, bool)> = vec![(mean_row, row_prefix, hb)];
    if udp {
        stats.push(("Hmean", "recv-", hb));
    }
    stats.push(("Stddev", row_prefix, false));
    for (stat, prefix, better) in stats {
        for &t in e.threads {
            let mut line = format!("{:<18}", format!("{stat} {prefix}{t}"));
            let v = |k: &str| match (stat, prefix) {
                ("Hmean", "recv-") => recv(k, t),
                ("Hmean", _) => hmean(k, t),
                ("Amean", _) => cell(k, t).mean,
                _ => cell(k, t).stddev,
            };
            let base = v(&s.kernels[0]);
            for k in &s.kernels {
                let txt = if stat == "Stddev" && cell(k, t).n < 2 {
                    "-".to_string()
                } else {
                    format!(
                        "{:.*} ({:6.2}%)",
                        if hb { 2 } else { 4 },
                        v(k),
                        percent_better(v(k), base, better)
                    )
                };
                line += &format!(" {txt:>w$}");
            }
            out += &format!("{line}\n");
        }
    }
    out += &runs_line(s);
    let op = if is_fsmark(s) { "a file created" } else { "a message sent" };
    out += &format!(
        "\nPer operation ({op}): zone->lock acquisitions / lock wait ns (zone + slab lists) / \
            pcp hits:misses order 0, 1, 2, 3 / slab pages allocated / drops\n"
    );
    for &t in e.threads {
        for (i, k) in s.kernels.iter().enumerate() {
            let c = &cell(k, t).counters_per_op;
            let g = |n: &str| c.get(n).copied().unwrap_or(0.0);
            let hm = |o: u32| {
                format!("{:.4}:{:.4}", g(&format!("pcp_hits_order{o}")), g(&format!("pcp_misses_order{o}")))
            };
            let size = if i == 0 { t.to_string() } else { String::new() };
            out += &format!(
                "{size:<7}{k:<14} {:.4} / {:.2} / {} {} {} {} / {:.4} / {:.4}\n",
                g("zone_lock_acquisitions"),
                (g("zone_lock_wait_ps") + g("slab_list_lock_wait_ps")) / 1000.0,
                hm(0),
                hm(1),
                hm(2),
                hm(3),
                g("slab_pages_allocated"),
                g("net_drops"),
            );
        }
    }
    out += &oracle_line(s);
    out
}

/// Seed 001's layout (mmtests' vmscale report): `Ops lru-file-mmap-read-elapsed`, `-time_range`
/// and `-time_stddv` rows with pndiff against the first column, then the User/System/Elapsed
/// block; then what the seed argues about: IPIs and flushes per second, reclaim per page and
/// where the time goes.
///
/// From the model: elapsed is the workload's metric (the files at the measured aggregate page
/// rate); each process's elapsed is its file at its own rate, `elapsed * mean(ops) / ops_i`,
/// whose max - min and population stddev are time_range and time_stddv; User and System are
/// the CPUs' user (user + page walks) and kernel buckets over the measured interval, scaled to
/// the case's elapsed (no setup: Elapsed is the case's).
fn render_seed_001(e: &Heading, s: &Summary) -> String {
    let t = e.threads.first().copied().unwrap_or(1);
    let cell = |k: &str| cell(s, k, t);
    let w = s.kernels.iter().map(|k| k.len()).max().unwrap_or(8).max(18);
    let mut out = format!("{} ({}, seed thread {})\n{}\n", e.title, s.experiment, e.seed_thread, s.workload);
    out += &column_heads(e, ("vmscale", ""), 34, w, |k| k.label.clone());
    let per_process = |k: &str| -> Vec<f64> {
        let r = cell(k);
        let mean = r.task_ops.iter().sum::<f64>() / r.task_ops.len().max(1) as f64;
        r.task_ops.iter().map(|&n| r.mean * mean / n.max(1e-9)).collect()
    };
    let range = |k: &str| {
        let v = per_process(k);
        v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
    };
    let sd = |k: &str| {
        let v = per_process(k);
        let m = v.iter().sum::<f64>() / v.len().max(1) as f64;
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len().max(1) as f64).sqrt()
    };
    let base = &s.kernels[0];
    let ops_row = |label: &str, f: &dyn Fn(&str) -> f64| {
        let mut line = format!("{:<34}", format!("Ops lru-file-mmap-read-{label}"));
        let b = f(base);
        for k in &s.kernels {
            let v = f(k);
            line += &format!(" {:>w$}", format!("{v:.2} ({:>6.2}%)", crate::stats::pndiff(v, b)));
        }
        line + "\n"
    };
    out += &ops_row("elapsed", &|k| cell(k).mean);
    out += &ops_row("time_range", &range);
    out += &ops_row("time_stddv", &sd);
    // User / System over the measured interval, scaled to the case's elapsed.
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
    let g = |k: &str, n: &str| cell(k).counters_per_op.get(n).copied().unwrap_or(0.0);
    out += "\nper second of the run (model time):\n";
    for (label, n) in [
        ("IPIs sent", "ipis_sent"),
        ("remote flushes received", "remote_flushes_received"),
        ("shootdown rounds", "shootdowns"),
        ("reclaim batch flushes", "reclaim_batch_flushes"),
        ("reclaim per-page flushes", "reclaim_page_flushes"),
        ("full TLB flushes", "full_flushes"),
        ("INVLPGs", "invlpg"),
    ] {
        out += &plain(label, &|k| format!("{:.0}", g(k, n) * cell(k).ops_per_second));
    }
    out += "\nper 1000 pages read:\n";
    for (label, n) in [
        ("pages scanned (kswapd)", "pgscan_kswapd"),
        ("pages scanned (direct)", "pgscan_direct"),
        ("pages reclaimed (kswapd)", "pgsteal_kswapd"),
        ("pages reclaimed (direct)", "pgsteal_direct"),
        ("kept once (PAGEREF_KEEP)", "pgkeep"),
        ("activated", "pgactivate"),
        ("isolation batches", "isolate_batches"),
        ("direct reclaim entries", "allocstall"),
        ("IPIs sent", "ipis_sent"),
        ("lru_lock contended", "lru_lock_contended"),
        ("zone->lock contended", "zone_lock_contended"),
        ("TLB misses", "tlb_misses"),
        ("page faults", "page_faults"),
    ] {
        out += &plain(label, &|k| format!("{:.2}", 1000.0 * g(k, n)));
    }
    out += &plain("pages per isolation batch", &|k| {
        format!("{:.1}", g(k, "isolated_pages") / g(k, "isolate_batches").max(1e-12))
    });
    out += &plain("reclaim efficiency (stolen/scanned)", &|k| {
        let sc = g(k, "pgscan_kswapd") + g(k, "pgscan_direct");
        format!("{:.1}%", 100.0 * (g(k, "pgsteal_kswapd") + g(k, "pgsteal_direct")) / sc.max(1e-12))
    });
    out += "\nwhere the CPUs' time goes (share of all CPU time in the measured interval):\n";
    let buckets: Vec<String> = cell(base).attribution_ps.keys().cloned().collect();
    for b in &buckets {
        out += &plain(b, &|k| {
            let a = &cell(k).attribution_ps;
            let total: f64 = a.values().sum();
            format!("{:.1}%", 100.0 * a.get(b).copied().unwrap_or(0.0) / total.max(1e-12))
        });
    }
    out += &format!(
        "\nelapsed in {}, mean of {} run(s); counters per page in summary.json. Oracle violations: {}\n",
        s.metric.unit,
        s.rows[0].n,
        s.kernels.iter().map(|k| cell(k).oracle_violations.to_string()).collect::<Vec<_>>().join(" / ")
    );
    out
}

/// Seed 003's layout: `time dd`'s real/user/sys per kernel, then `/proc/tlbmiss`'s four counters
/// per block (I-TLB and D-TLB, user and kernel EA), then where the handler time went per miss
/// kind. User, sys and the writeback threads split the real time as the run's `user_clocks`,
/// `sys_clocks` and `kthread_clocks` counters do.
fn render_seed_003(e: &Heading, s: &Summary) -> String {
    let t = e.threads.first().copied().unwrap_or(1);
    let cell = |k: &str| cell(s, k, t);
    let w = s.kernels.iter().map(|k| k.len()).max().unwrap_or(8).max(14);
    let mut out = format!(
        "{} ({}, seed thread {})\n{}\n{}\n",
        e.title,
        s.experiment,
        e.seed_thread,
        "=".repeat(e.title.len().min(100)),
        s.workload
    );
    out += kernel_line(s, "", 26, w, &|k| k.to_string()).trim_end();
    out += "\n";
    let g = |k: &str, n: &str| cell(k).counters_per_op.get(n).copied().unwrap_or(0.0);
    let row = |label: &str, f: &dyn Fn(&str) -> String| kernel_line(s, label, 26, w, f);
    // Real time splits into dd's user and sys time and the writeback threads' time (bdflush,
    // pdflush), which `time dd` does not report.
    let clocks = |k: &str| g(k, "user_clocks") + g(k, "sys_clocks") + g(k, "kthread_clocks");
    let split = |k: &str, part: &str| cell(k).mean * g(k, part) / clocks(k).max(1.0);
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
    out += "\nper block (/proc/tlbmiss; user/kernel by EA):\n";
    for (label, n) in [
        ("I-TLB misses, user", "itlb_miss_user"),
        ("I-TLB misses, kernel", "itlb_miss_kernel"),
        ("D-TLB misses, user", "dtlb_miss_user"),
        ("D-TLB misses, kernel", "dtlb_miss_kernel"),
        ("D-TLB errors (C bit)", "dtlb_error"),
        ("context-switch tlbia", "context_tlbia"),
        ("pages written back", "pages_written_back"),
        ("I-cache misses (paths)", "icache_misses"),
        ("instructions (paths)", "instructions"),
    ] {
        out += &row(label, &|k| format!("{:.2}", g(k, n)));
        // /proc/tlbmiss's "userspace" figures may count every miss (the seed's user counts
        // exceed what dd's few user pages can miss): the totals, to set beside them.
        if n == "itlb_miss_kernel" || n == "dtlb_miss_kernel" {
            let user = n.replace("kernel", "user");
            let side = &label[..5];
            out += &row(&format!("{side} misses, all"), &|k| format!("{:.2}", g(k, n) + g(k, &user)));
        }
    }
    out += "\nhandler time per block, clocks (share of the block's clocks):\n";
    for (label, n) in [
        ("ITLB miss, user EA", "itlb_user_clocks"),
        ("ITLB miss, kernel EA", "itlb_kernel_clocks"),
        ("DTLB miss, user EA", "dtlb_user_clocks"),
        ("DTLB miss, kernel EA", "dtlb_kernel_clocks"),
        ("DTLB error", "dtlb_error_clocks"),
        ("  of which cache stalls", "handler_cache_stall_clocks"),
    ] {
        out += &row(label, &|k| {
            let total = clocks(k).max(1.0);
            format!("{:.0} ({:.1}%)", g(k, n), 100.0 * g(k, n) / total)
        });
    }
    // Every clock of a block is one of these (linux/arch/ppc/mm/mmu_8xx.rs): issuing the paths'
    // instructions, their I-cache stalls, their data accesses, or a miss handler.
    out += "\nwhere a block's clocks go (all modes; share of the block):\n";
    let handlers = |k: &str| HANDLER_CLOCKS.iter().map(|n| g(k, n)).sum::<f64>();
    let issue = |k: &str| clocks(k) - handlers(k) - g(k, "icache_stall_clocks") - g(k, "data_clocks");
    let share = |k: &str, v: f64| format!("{v:.0} ({:.1}%)", 100.0 * v / clocks(k).max(1.0));
    out += &row("total", &|k| format!("{:.0}", clocks(k)));
    out += &row("instruction issue", &|k| share(k, issue(k)));
    out += &row("I-cache stalls", &|k| share(k, g(k, "icache_stall_clocks")));
    out += &row("data accesses", &|k| share(k, g(k, "data_clocks")));
    out += &row("TLB miss handlers", &|k| share(k, handlers(k)));
    out += &row("  timer ticks (all parts)", &|k| share(k, g(k, "tick_clocks")));
    out += &row("  writeback thread (all)", &|k| share(k, g(k, "kthread_clocks")));
    out += &format!(
        "\nreal in {}, mean of {} run(s); counters per block in summary.json.\n",
        s.metric.unit, s.rows[0].n
    );
    out
}

/// Seed 002's layout: metric mean per thread count, one column per kernel, then the event
/// counts per operation beside it.
fn render_seed_002(e: &Heading, s: &Summary) -> String {
    let mut out = format!(
        "{} ({}, seed thread {})\n{}\n",
        e.title,
        s.experiment,
        e.seed_thread,
        "=".repeat(e.title.len().min(100))
    );
    let cell = |k: &str, t: u32| cell(s, k, t);
    let w = s.kernels.iter().map(|k| k.len()).max().unwrap_or(8).max(12);
    // Group heading line, then kernel labels, then rows (the seed prints bare means).
    let mut groups = String::from("       ");
    for k in e.columns {
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
    for &t in e.threads {
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
        "\n{} in {}, mean of {} run(s), each differing only by its seed.\n",
        s.metric.name, s.metric.unit, s.rows[0].n
    );
    // The spread over the seeds (mmtests' CoeffVar: Stddev x 100 / Mean); `-` for one run.
    out += "\nCoeffVar (%)\n";
    out += &head;
    out += "\n";
    for &t in e.threads {
        let mut line = format!("{t:<7}");
        for k in &s.kernels {
            let c = cell(k, t);
            let txt = if c.n < 2 { "-".to_string() } else { format!("{:.2}", c.coeffvar()) };
            line.push_str(&format!(" {txt:>w$}"));
        }
        out += &line;
        out += "\n";
    }
    out += "\nPer operation: IPIs sent / full flushes / INVLPGs / skipped handler flushes / mm->tlb_gen line transfers\n";
    let mut head = String::from("tasks  ");
    for k in &s.kernels {
        head.push_str(&format!(" {k:>w2$}", w2 = 30));
    }
    out += &head;
    out += "\n";
    for &t in e.threads {
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
    out += &oracle_line(s);
    out
}
