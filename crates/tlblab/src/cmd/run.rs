//! `tlblab run`: one simulated run; prints the metric, counters per operation and where the
//! time went.

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
}

pub fn run(a: RunArgs) -> Result<()> {
    let r = a.spec.simulate(a.threads, a.seed)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).context("serialising the result")?);
    } else {
        print!("{}", render(&r));
    }
    Ok(())
}

pub fn render(r: &RunResult) -> String {
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
    for (k, v) in &r.counters {
        t.row([k.clone(), v.to_string(), format!("{:.3}", r.per_op(k))]);
    }
    out += &format!("\n{}", t.render());
    let mut t = Table::new(["time (task CPUs)", "share"]);
    let total: u64 = r.attribution.iter().flat_map(|m| m.values()).sum();
    if let Some(first) = r.attribution.first() {
        for k in first.keys() {
            let v: u64 = r.attribution.iter().map(|m| m[k]).sum();
            t.row([k.clone(), format!("{:.1}%", 100.0 * v as f64 / total.max(1) as f64)]);
        }
    }
    out += &format!("\n{}", t.render());
    out
}
