//! `tlblab run`: one simulated run; prints the metric, counters per operation and where the
//! time went.

use std::path::PathBuf;

use anyhow::{Context, Result};
use tlblab_model::run::RunResult;
use tlblab_model::time::Ps;
use tlblab_report::table::Table;

use crate::spec::{Spec, DEFAULT_SEED};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub spec: Spec,
    /// Number of tasks (will-it-scale's -t; ebizzy's -t, default 2 x CPUs).
    #[arg(long)]
    pub threads: Option<u32>,
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Print the RunResult as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print every counter, the zero ones too (default: those that counted, as `perf stat`).
    #[arg(long)]
    pub all_counters: bool,
    /// Write the run's timeline to FILE.json in the Chrome trace-event format (open it in
    /// ui.perfetto.dev or chrome://tracing): a track per CPU with its user work, faults, system
    /// calls, flush handlers, IPI sends and waits, lock waits, idle and lazy TLB mode; an arrow
    /// from each IPI's send to its handler; TLB entries and call-queue length as counters, and
    /// with reclaim modelled the file LRU lists' sizes. The printed results are the same as
    /// without it. At most 500,000 events (it says so if it stops).
    #[arg(long, value_name = "FILE.json")]
    pub timeline: Option<PathBuf>,
    /// The part of the measured interval the timeline covers: START..END (e.g. 100us..200us)
    /// or a duration D for 0..D; times from the end of the warm-up (default: all of it).
    #[arg(long, value_name = "START..END|DURATION", requires = "timeline", value_parser = crate::timeline::parse_window)]
    pub timeline_window: Option<(Ps, Ps)>,
}

pub fn run(a: RunArgs) -> Result<()> {
    let timeline = match &a.timeline {
        Some(p) => Some(crate::timeline::spec_for(p, a.timeline_window)?),
        None => None,
    };
    let (r, rec) = a.spec.simulate_recorded(a.threads, a.seed, timeline)?;
    if let (Some(path), Some(rec)) = (&a.timeline, &rec) {
        let c = &r.config;
        let about = serde_json::json!({
            "machine": c.machine, "kernel": c.kernel, "workload": c.workload, "tasks": c.tasks,
            "seed": c.seed, "warmup_ps": c.warmup_ps, "measure_ps": c.measure_ps,
            "version": r.tlblab_version,
        });
        crate::timeline::write_file(rec, about, path)?;
        if let Some(note) = crate::timeline::truncation_note(rec, path) {
            eprintln!("{note}");
        }
    }
    if let Some(w) = precision_warning(r.operations(), "this run") {
        eprintln!("{w}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).context("serialising the result")?);
    } else {
        print!("{}", render_with(&r, a.all_counters));
    }
    Ok(())
}

/// The relative step (percent) a run's metric may move by before a warning: a count of
/// operations coarser than this cannot resolve a few-percent difference.
pub const MAX_STEP_PCT: f64 = 1.0;

/// One line for standard error when `ops` operations (the fewest of a run, or of any cell) are
/// too few to resolve a ~1% difference: one operation more or less moves the metric by
/// 100/ops percent (10 records: 10% steps).
pub fn precision_warning(ops: u64, what: &str) -> Option<String> {
    let step = tlblab_report::stats::resolution_pct(ops);
    (step > MAX_STEP_PCT).then(|| {
        format!(
            "warning: {what} counted {ops} operation(s), so its metric moves in steps of {step:.1}% (one \
             operation); differences of a few percent are not resolved: give a longer --duration (at least \
             {}x this one, for {} operations and {MAX_STEP_PCT}% steps)",
            (100.0 / ops.max(1) as f64).ceil() as u64,
            (100.0 / MAX_STEP_PCT) as u64
        )
    })
}

/// The run as text, printing only the counters that counted.
pub fn render(r: &RunResult) -> String {
    render_with(r, false)
}

/// The run as text; `all_counters` prints the zero counters too.
pub fn render_with(r: &RunResult, all_counters: bool) -> String {
    let c = &r.config;
    let mut out = format!(
        "{} on {} ({} tasks), kernel {}, seed {}, {} measured after {} warm-up\n",
        c.workload,
        c.machine,
        c.tasks,
        c.kernel,
        c.seed,
        Ps(c.measure_ps),
        Ps(c.warmup_ps)
    );
    // Rates print whole; times of a few seconds keep their decimals.
    let v = r.metric.value;
    let value = if v.abs() < 100.0 { format!("{v:.3}") } else { format!("{v:.0}") };
    out += &format!("{}: {value} {}  ({} operations)\n", r.metric.name, r.metric.unit, r.operations());
    out += &format!("safety oracle: {} violations\n", r.oracle.violations);
    for e in &r.oracle.examples {
        out += &format!("  {e}\n");
    }
    let mut t = Table::new(["counter", "total", "per op"]);
    let totals: std::collections::BTreeMap<String, f64> =
        r.counters.iter().map(|(k, v)| (k.clone(), *v as f64)).collect();
    let sel = tlblab_report::counters::applicable([&totals], all_counters);
    for k in &sel.shown {
        t.row([k.clone(), r.counters[k].to_string(), format!("{:.3}", r.per_op(k))]);
    }
    out += &format!("\n{}", t.render());
    let note = sel.footnote();
    if !note.is_empty() {
        out += &format!("{note}\n");
    }
    let mut t = Table::new(["time (task CPUs)", "share"]);
    let total: u64 = r.attribution.iter().flat_map(|m| m.values()).sum();
    if let Some(first) = r.attribution.first() {
        for k in first.keys() {
            let v: u64 = r.attribution.iter().map(|m| m[k]).sum();
            // As the counters: a bucket no CPU spent time in is left out unless asked for.
            if v > 0 || all_counters {
                t.row([k.clone(), format!("{:.1}%", 100.0 * v as f64 / total.max(1) as f64)]);
            }
        }
    }
    out += &format!("\n{}", t.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_operations_warn_with_the_step_they_resolve() {
        let w = precision_warning(10, "this run").unwrap();
        assert!(
            w.starts_with("warning: this run counted 10 operation(s)") && w.contains("steps of 10.0%"),
            "{w}"
        );
        assert!(w.contains("10x this one") && !w.contains('\n'));
        assert!(precision_warning(100, "x").is_none() && precision_warning(5000, "x").is_none());
        assert!(precision_warning(99, "x").unwrap().contains("steps of 1.0%"));
        assert!(precision_warning(0, "x").unwrap().contains("steps of 100.0%"));
    }
}
