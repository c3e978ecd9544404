//! `tlblab sweep`: the cross product of thread counts and knob values, run in parallel (rayon;
//! the output does not depend on `--jobs`), printed as a table with the best value per thread
//! count and overall. A ceiling sweep finds a machine's balance point:
//!
//! ```text
//! tlblab sweep --machine ivybridge-4c8t --workload ebizzy --threads 1,2,4,8 \
//!     --kernel 3.17 --vary ceiling=0,8,33,64,96,128,256 --out ceiling
//! ```
//!
//! Every (combination, thread count) cell goes through the results store (`results`) under the
//! combination's label (`ceiling=33`, `kernel=3.13,alloc=mmap`), so `--out DIR` holds every run,
//! a rerun redoes only what changed, and `DIR` is a result set `tlblab compare` reads. The
//! report (`report::sweep`) adds the sweep curves.

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tlblab_model::linux::config::KernelConfig;
use tlblab_model::run::Workload;
use tlblab_model::time::Ps;
use tlblab_report::report;
use tlblab_report::summary::{self, MetricInfo, ResultSet};
use tlblab_report::sweep::{best, Axis, Grid};
use tlblab_report::table::Table;

use crate::machines;
use crate::results::{self, CellSpec, Finished, RunOptions};
use crate::spec::{kernel_config, workload, Spec};
use crate::store::write_atomic;

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub sim: Spec,
    /// Thread counts, comma separated: 1,2,4,8.
    #[arg(long, value_delimiter = ',', required = true)]
    pub threads: Vec<u32>,
    /// KNOB=V1,V2,...: a kernel knob (`tlblab list`), `kernel` (presets) or a workload
    /// parameter. Repeat for a cross product.
    #[arg(long = "vary", value_name = "KNOB=V1,V2,...", required = true)]
    pub vary: Vec<String>,
    /// Runs (seeds 1..=N) per cell, 1..=1000.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=results::MAX_ITERATIONS as i64))]
    pub iterations: u32,
    /// Host threads, 1..=256 (default: all cores). The output is the same for any value.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=results::MAX_JOBS))]
    pub jobs: Option<usize>,
    /// Print the cells as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write DIR/: cells/ (every run of every cell, reused by a rerun), summary.json, sweep.json
    /// (the cells as --json prints them), index.html and plots/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only shard I of N of the cells (in the grid's order, I-1 modulo N) into --out; N such
    /// jobs may share one --out directory. A final run without --shard reuses every cell and
    /// writes the summary and report.
    #[arg(long, value_name = "I/N", value_parser = results::Shard::parse, requires = "out")]
    pub shard: Option<results::Shard>,
    /// The Python API's progress hook (not a flag).
    #[arg(skip)]
    pub progress: Option<results::Progress>,
}

/// The measured time when `--duration` is not given: long enough that the README's ebizzy sweep
/// on ivybridge-4c8t counts ~106 records at one thread (2 ms counted 10-11, so its values moved
/// in ~10% steps), resolving ~1% differences; more threads count more.
pub const DEFAULT_DURATION: Ps = Ps(20 * Ps::MS.0);

/// One (values, threads) cell over its iterations: what `--json` prints.
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

/// A finished sweep: its grid, every run (as a result set whose columns are the grid's labels)
/// and the cells' summaries in grid order, thread counts inner.
#[derive(Debug)]
pub struct Sweep {
    pub grid: Grid,
    pub set: ResultSet,
    pub cells: Vec<Cell>,
    /// Cells found finished in the store and not run again.
    pub reused: usize,
}

/// The kernel and workload of one combination: `kernel` picks the preset, kernel knobs go to
/// `KernelConfig::set`, anything else is a workload parameter.
fn configure(sim: &Spec, combo: &[(String, String)]) -> Result<(KernelConfig, Workload)> {
    let preset = combo.iter().find(|(k, _)| k == "kernel").map_or(sim.kernel.as_str(), |(_, v)| v.as_str());
    let knob_names: Vec<&str> = tlblab_model::linux::config::knobs().map(|k| k.name).collect();
    let mut sets = sim.set.clone();
    let mut params = sim.params.clone();
    for (k, v) in combo.iter().filter(|(k, _)| k != "kernel") {
        if knob_names.contains(&k.as_str()) {
            sets.push(format!("{k}={v}"));
        } else {
            params.push(format!("{k}={v}"));
        }
    }
    let kernel = kernel_config(preset, &sets)?;
    let w = workload(&sim.workload, &params).map_err(|e| {
        anyhow!(
            "{e} (--vary takes `kernel`, a kernel knob: {}, or a workload parameter)",
            knob_names.join(", ")
        )
    })?;
    Ok((kernel, w))
}

/// Runs every (combination, thread count) cell through the results store: with `store`, each
/// cell's runs are saved there as they finish and cells an identical earlier run saved are
/// reused. With `a.shard`, only that shard's cells run and the result is `Finished::Shard`.
pub fn sweep(a: &SweepArgs, store: Option<&Path>) -> Result<Finished<Sweep>> {
    let sim = &a.sim;
    let profile = machines::load(&sim.machine)?;
    let axes: Vec<Axis> =
        a.vary.iter().map(|s| Axis::parse(s).map_err(|e| anyhow!(e))).collect::<Result<_>>()?;
    let grid = Grid::new(axes).map_err(|e| anyhow!(e))?;
    if !(1..=results::MAX_ITERATIONS).contains(&(a.iterations as u64)) {
        bail!("--iterations {}: allowed 1 ..= {}", a.iterations, results::MAX_ITERATIONS);
    }
    let cpus = profile.topology.cpus();
    if let Some(t) = a.threads.iter().find(|&&t| t == 0 || t > cpus) {
        bail!("--threads {t}: machine `{}` has {cpus} CPUs; allowed 1 ..= {cpus}", profile.name);
    }
    for (i, t) in a.threads.iter().enumerate() {
        if a.threads[..i].contains(t) {
            bail!("--threads: {t} is listed twice");
        }
    }
    let base = workload(&sim.workload, &sim.params)?;
    let mut specs = Vec::new();
    for (ci, combo) in grid.combos.iter().enumerate() {
        let pairs: Vec<(String, String)> =
            grid.axes.iter().map(|ax| ax.key.clone()).zip(combo.iter().cloned()).collect();
        let (kernel, workload) = configure(sim, &pairs)?;
        for &t in &a.threads {
            specs.push(CellSpec {
                label: grid.label(ci),
                kernel: kernel.clone(),
                workload: workload.clone(),
                tasks: t,
                row: t,
                // Iterations differ only by seed.
                seeds: (1..=a.iterations as u64).collect(),
                warmup: sim.warmup,
                measure: sim.duration.unwrap_or(DEFAULT_DURATION),
            });
        }
    }
    let opts = RunOptions {
        jobs: a.jobs,
        store: store.map(Path::to_path_buf),
        progress_label: "sweep".into(),
        shard: a.shard,
        first_cell: 0,
        progress: a.progress.clone(),
    };
    let ran = results::run_cells(&profile, &specs, &opts)?;
    if a.shard.is_some() {
        return Ok(Finished::Shard(ran));
    }
    let (runs, reused) = (ran.runs, ran.reused);
    let m = &runs[0][0].metric;
    let set = ResultSet {
        experiment: format!("sweep {}", grid.key()),
        machine: profile.name.clone(),
        workload: base.name(),
        metric: MetricInfo {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
        },
        kernels: grid.labels(),
        cells: specs
            .iter()
            .zip(runs)
            .map(|(c, runs)| summary::Cell { kernel: c.label.clone(), threads: c.tasks, runs })
            .collect(),
    };
    let cells = set
        .summary()
        .rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| Cell {
            values: grid
                .axes
                .iter()
                .map(|ax| ax.key.clone())
                .zip(grid.combos[i / a.threads.len()].iter().cloned())
                .collect(),
            threads: r.threads,
            n: r.n,
            mean: r.mean,
            stddev: r.stddev,
            counters_per_op: r.counters_per_op,
            oracle_violations: r.oracle_violations,
        })
        .collect();
    Ok(Finished::All(Sweep { grid, set, cells, reused }))
}

/// The table the terminal shows (and the report repeats): one row per combination, one column
/// per thread count, then the best combination per thread count and overall.
pub fn render(a: &SweepArgs, sw: &Sweep) -> String {
    let Sweep { grid, set, cells, .. } = sw;
    let mut header: Vec<String> = grid.axes.iter().map(|ax| ax.key.clone()).collect();
    header.extend(a.threads.iter().map(|t| format!("{t} thr")));
    let mut t = Table::new(header);
    for (combo, row_cells) in grid.combos.iter().zip(cells.chunks(a.threads.len())) {
        let mut row = combo.clone();
        for x in row_cells {
            row.push(if x.n > 1 {
                format!("{:.0} ±{:.0}", x.mean, x.stddev)
            } else {
                format!("{:.0}", x.mean)
            });
        }
        t.row(row);
    }
    let sim = &a.sim;
    let mut out = format!(
        "{} on {}, kernel {}{}; {}, mean of {} run(s) per cell\n{}",
        sim.workload,
        sim.machine,
        if grid.axes.iter().any(|ax| ax.key == "kernel") { "varied" } else { sim.kernel.as_str() },
        if sim.set.is_empty() { String::new() } else { format!(" [{}]", sim.set.join(",")) },
        set.metric.unit,
        a.iterations,
        t.render()
    );
    let key = grid.key();
    let (per_thread, overall) = best(set, grid);
    for b in per_thread {
        let ties = if b.tied.len() > 1 {
            format!(
                ", tied within 95% intervals: {}",
                b.tied[1..].iter().map(|&i| grid.value(i)).collect::<Vec<_>>().join(" ")
            )
        } else {
            String::new()
        };
        out +=
            &format!("best {key}: {} threads: {} ({:.0}{ties})\n", b.threads, grid.value(b.tied[0]), b.mean);
    }
    if let Some((i, g)) = overall {
        out += &format!(
            "best {key} overall: {} (geometric mean {:.1}% of each thread count's best)\n",
            grid.value(i),
            100.0 * g
        );
    }
    if cells.iter().any(|c| c.mean == 0.0) {
        out += "some cells counted no operation in the measured time: give a longer --duration\n";
    }
    let v: u64 = cells.iter().map(|c| c.oracle_violations).sum();
    out += &format!("safety oracle: {v} violations\n");
    out
}

pub fn run(a: SweepArgs) -> Result<()> {
    if let Some(dir) = &a.out {
        crate::store::check_out_dir(dir, "--out")?;
    }
    let sw = match sweep(&a, a.out.as_deref())? {
        Finished::All(sw) => sw,
        Finished::Shard(r) => {
            let s = a.shard.expect("a shard");
            eprintln!(
                "{}: shard {}/{}: {} cell(s) run, {} reused, {} left to other shards; run without --shard \
                 to write the summary and report",
                a.out.as_ref().expect("--shard requires --out").display(),
                s.index,
                s.count,
                r.ran,
                r.reused,
                r.skipped
            );
            return Ok(());
        }
    };
    let fewest = sw.set.cells.iter().flat_map(|c| &c.runs).map(|r| r.operations()).min();
    if let Some(w) =
        fewest.and_then(|ops| crate::cmd::run::precision_warning(ops, "the sweep's sparsest run"))
    {
        eprintln!("{w}");
    }
    let json = serde_json::to_string_pretty(&sw.cells).context("serialising the cells")?;
    let table = render(&a, &sw);
    if a.json {
        println!("{json}");
    } else {
        print!("{table}");
    }
    if let Some(dir) = &a.out {
        let total = sw.set.cells.len();
        eprintln!(
            "{}: {} of {total} cells reused from an earlier identical run, {} run",
            dir.display(),
            sw.reused,
            total - sw.reused
        );
        save(&a, &sw, dir)?;
        eprintln!("wrote {} and {}", dir.join("summary.json").display(), dir.join("index.html").display());
    }
    Ok(())
}

/// Writes a finished sweep's summary.json, sweep.json and report into `dir` (its cells are
/// there already).
pub fn save(a: &SweepArgs, sw: &Sweep, dir: &Path) -> Result<()> {
    let json = serde_json::to_string_pretty(&sw.cells).context("serialising the cells")?;
    results::write_summary(dir, &sw.set, &sw.set.summary())?;
    write_atomic(&dir.join("sweep.json"), json.as_bytes())?;
    let title = format!("tlblab sweep: {} on {}, varying {}", sw.set.workload, sw.set.machine, sw.grid.key());
    results::write_report(dir, &report::sweep(&sw.set, &sw.grid, &title, &render(a, sw)))
}
