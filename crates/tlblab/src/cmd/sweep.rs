//! `tlblab sweep`: the cross product of thread counts and knob values, run in parallel (rayon;
//! the output does not depend on `--jobs`), printed as a table with the best value of a single
//! varied knob per thread count and overall. A ceiling sweep finds a machine's balance point:
//!
//!     tlblab sweep --machine ivybridge-4c8t --workload ebizzy --threads 1,2,4,8 \
//!         --kernel 3.17 --vary ceiling=0,8,33,64,96,128,256

use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tlblab_model::engine::time::Ps;
use tlblab_model::kernel::preset::KernelConfig;
use tlblab_model::run::{run as run_sim, RunSpec, Workload};
use tlblab_report::stats;
use tlblab_report::table::Table;

use crate::cmd::run::{kernel_config, parse_duration, workload};
use crate::experiment::write_atomic;
use crate::machines;

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// A built-in machine (see `tlblab list`) or a profile file.
    #[arg(long)]
    pub machine: String,
    /// e.g. tlb_flush1_threads or "ebizzy -m" (see `tlblab list`).
    #[arg(long)]
    pub workload: String,
    /// A workload parameter KEY=VALUE (repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Thread counts, comma separated: 1,2,4,8.
    #[arg(long, value_delimiter = ',', required = true)]
    pub threads: Vec<u32>,
    /// KNOB=V1,V2,...: a kernel knob (`tlblab list`), `kernel` (presets) or a workload
    /// parameter. Repeat for a cross product.
    #[arg(long = "vary", value_name = "KNOB=V1,V2,...", required = true)]
    pub vary: Vec<String>,
    /// The kernel preset the knobs apply to.
    #[arg(long, default_value = "5.18.1")]
    pub kernel: String,
    /// A fixed knob override KNOB=VALUE (repeatable), applied before the varied ones.
    #[arg(long = "set", value_name = "KNOB=VALUE")]
    pub set: Vec<String>,
    /// Runs (seeds 1..=N) per cell.
    #[arg(long, default_value_t = 1)]
    pub iterations: u32,
    #[arg(long, default_value = "2ms", value_parser = parse_duration)]
    pub duration: Ps,
    #[arg(long, default_value = "500us", value_parser = parse_duration)]
    pub warmup: Ps,
    /// Host threads (default: all cores). The output is the same for any value.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print the cells as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the cells as JSON to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One varied dimension.
#[derive(Debug, Clone)]
struct Axis {
    key: String,
    values: Vec<String>,
}

fn parse_axis(s: &str) -> Result<Axis> {
    let (k, v) = s.split_once('=').ok_or_else(|| anyhow!("--vary `{s}`: expected KNOB=V1,V2,..."))?;
    let values: Vec<String> = v.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    if values.is_empty() {
        bail!("--vary `{s}`: give at least one value");
    }
    Ok(Axis { key: k.trim().to_string(), values })
}

/// One (values, threads) cell over its iterations.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cell {
    pub values: BTreeMap<String, String>,
    pub threads: u32,
    pub n: u32,
    pub mean: f64,
    pub stddev: f64,
    pub counters_per_op: BTreeMap<String, f64>,
    pub oracle_violations: u64,
}

/// The kernel and workload of one combination: `kernel` picks the preset, kernel knobs go to
/// `KernelConfig::set`, anything else is a workload parameter.
fn configure(a: &SweepArgs, combo: &[(String, String)]) -> Result<(KernelConfig, Workload)> {
    let preset = combo.iter().find(|(k, _)| k == "kernel").map_or(a.kernel.as_str(), |(_, v)| v.as_str());
    let knob_names: Vec<&str> = tlblab_model::kernel::preset::KNOBS.iter().map(|k| k.0).collect();
    let mut sets = a.set.clone();
    let mut params = a.params.clone();
    for (k, v) in combo.iter().filter(|(k, _)| k != "kernel") {
        if knob_names.contains(&k.as_str()) {
            sets.push(format!("{k}={v}"));
        } else {
            params.push(format!("{k}={v}"));
        }
    }
    let kernel = kernel_config(preset, &sets)?;
    let w = workload(&a.workload, &params).map_err(|e| {
        anyhow!(
            "{e} (--vary takes `kernel`, a kernel knob: {}, or a workload parameter)",
            knob_names.join(", ")
        )
    })?;
    Ok((kernel, w))
}

pub fn sweep(a: &SweepArgs) -> Result<Vec<Cell>> {
    let profile = machines::load(&a.machine)?;
    let axes: Vec<Axis> = a.vary.iter().map(|s| parse_axis(s)).collect::<Result<_>>()?;
    if a.iterations == 0 {
        bail!("--iterations: must be >= 1");
    }
    let cpus = profile.topology.cpus();
    if let Some(t) = a.threads.iter().find(|&&t| t == 0 || t > cpus) {
        bail!("--threads {t}: machine `{}` has {cpus} CPUs; allowed 1 ..= {cpus}", profile.name);
    }
    // The cross product, first axis slowest.
    let mut combos: Vec<Vec<(String, String)>> = vec![vec![]];
    for ax in &axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                ax.values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((ax.key.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    let configs: Vec<(KernelConfig, Workload)> =
        combos.iter().map(|c| configure(a, c)).collect::<Result<_>>()?;
    let mut jobs = Vec::new();
    for (ci, _) in combos.iter().enumerate() {
        for &t in &a.threads {
            for it in 0..a.iterations {
                jobs.push((ci, t, it));
            }
        }
    }
    let run_all = || -> Result<Vec<_>> {
        jobs.par_iter()
            .map(|&(ci, t, it)| {
                let (kernel, workload) = configs[ci].clone();
                let spec = RunSpec {
                    kernel,
                    workload,
                    tasks: t,
                    seed: it as u64 + 1,
                    warmup: a.warmup,
                    measure: a.duration,
                };
                run_sim(&profile, &spec).map_err(|e| anyhow!(e))
            })
            .collect()
    };
    let results = match a.jobs {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .context("building the thread pool")?
            .install(run_all)?,
        None => run_all()?,
    };
    let mut cells = Vec::new();
    for (ci, combo) in combos.iter().enumerate() {
        for &t in &a.threads {
            let rs: Vec<_> = jobs
                .iter()
                .zip(&results)
                .filter(|((c, ct, _), _)| *c == ci && *ct == t)
                .map(|(_, r)| r)
                .collect();
            let x: Vec<f64> = rs.iter().map(|r| r.metric.value).collect();
            let counters_per_op = rs[0]
                .counters
                .keys()
                .map(|k| (k.clone(), stats::mean(&rs.iter().map(|r| r.per_op(k)).collect::<Vec<_>>())))
                .collect();
            cells.push(Cell {
                values: combo.iter().cloned().collect(),
                threads: t,
                n: x.len() as u32,
                mean: stats::mean(&x),
                stddev: if x.len() > 1 { stats::stddev(&x) } else { 0.0 },
                counters_per_op,
                oracle_violations: rs.iter().map(|r| r.oracle.violations).sum(),
            });
        }
    }
    Ok(cells)
}

/// (thread count, best values (ties in the order given), best mean).
pub type Best = (u32, Vec<String>, f64);

/// The best value of a single varied knob per thread count (with the values tied with it, in
/// the order given), and overall: the value with the highest geometric mean, over thread
/// counts, of its score relative to that count's best (the first one given on a tie).
pub fn best(cells: &[Cell], key: &str, threads: &[u32]) -> (Vec<Best>, Option<(String, f64)>) {
    let mut per_thread = Vec::new();
    for &t in threads {
        let row: Vec<&Cell> = cells.iter().filter(|c| c.threads == t).collect();
        let top = row.iter().map(|c| c.mean).fold(f64::NEG_INFINITY, f64::max);
        if row.is_empty() {
            continue;
        }
        let tied = row.iter().filter(|c| c.mean == top).map(|c| c.values[key].clone()).collect();
        per_thread.push((t, tied, top));
    }
    let mut values: Vec<&String> = Vec::new();
    for c in cells {
        if !values.contains(&&c.values[key]) {
            values.push(&c.values[key]);
        }
    }
    let mut overall: Option<(String, f64)> = None;
    for v in values {
        // Thread counts that counted nothing say nothing about the values.
        let logs: Vec<f64> = per_thread
            .iter()
            .filter(|(_, _, top)| *top > 0.0)
            .map(|(t, _, top)| {
                let c = cells.iter().find(|c| c.threads == *t && &c.values[key] == v).unwrap();
                (c.mean / top).ln()
            })
            .collect();
        if logs.is_empty() {
            continue;
        }
        let g = stats::mean(&logs).exp();
        if overall.as_ref().is_none_or(|(_, best)| g > *best) {
            overall = Some((v.clone(), g));
        }
    }
    (per_thread, overall)
}

pub fn render(a: &SweepArgs, cells: &[Cell], metric: &str) -> String {
    let keys: Vec<String> = cells.first().map(|c| c.values.keys().cloned().collect()).unwrap_or_default();
    // Columns: the varied values, then one per thread count.
    let mut header: Vec<String> =
        a.vary.iter().map(|v| v.split('=').next().unwrap_or("").to_string()).collect();
    header.extend(a.threads.iter().map(|t| format!("{t} thr")));
    let mut t = Table::new(header);
    let mut seen: Vec<&BTreeMap<String, String>> = Vec::new();
    for c in cells {
        if seen.contains(&&c.values) {
            continue;
        }
        seen.push(&c.values);
        let mut row: Vec<String> =
            a.vary.iter().map(|v| c.values[v.split('=').next().unwrap_or("").trim()].clone()).collect();
        for &th in &a.threads {
            let x = cells.iter().find(|o| o.values == c.values && o.threads == th).unwrap();
            row.push(if x.n > 1 {
                format!("{:.0} ±{:.0}", x.mean, x.stddev)
            } else {
                format!("{:.0}", x.mean)
            });
        }
        t.row(row);
    }
    let mut out = format!(
        "{} on {}, kernel {}{}; {metric}, mean of {} run(s) per cell\n{}",
        a.workload,
        a.machine,
        if keys.iter().any(|k| k == "kernel") { "varied" } else { a.kernel.as_str() },
        if a.set.is_empty() { String::new() } else { format!(" [{}]", a.set.join(",")) },
        a.iterations,
        t.render()
    );
    if keys.len() == 1 {
        let (per_thread, overall) = best(cells, &keys[0], &a.threads);
        for (th, v, m) in per_thread {
            let ties = if v.len() > 1 { format!(", tied: {}", v[1..].join(" ")) } else { String::new() };
            out += &format!("best {}: {th} threads: {} ({m:.0}{ties})\n", keys[0], v[0]);
        }
        if let Some((v, g)) = overall {
            out += &format!(
                "best {} overall: {v} (geometric mean {:.1}% of each thread count's best)\n",
                keys[0],
                100.0 * g
            );
        }
    }
    if cells.iter().any(|c| c.mean == 0.0) {
        out += "some cells counted no operation in the measured time: give a longer --duration\n";
    }
    let v: u64 = cells.iter().map(|c| c.oracle_violations).sum();
    out += &format!("safety oracle: {v} violations\n");
    out
}

pub fn run(a: SweepArgs) -> Result<()> {
    let cells = sweep(&a)?;
    let json = serde_json::to_string_pretty(&cells).context("serialising the cells")?;
    if let Some(path) = &a.out {
        write_atomic(path, json.as_bytes())?;
    }
    if a.json {
        println!("{json}");
    } else {
        let w = workload(&a.workload, &a.params)?;
        print!("{}", render(&a, &cells, w.metric().1));
    }
    Ok(())
}
