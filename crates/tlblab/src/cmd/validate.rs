//! `tlblab validate`: every native workload at 1 and 2 threads on this host, beside the same
//! simulated workload on the host profile (from `--machine FILE`, or measured by the probe
//! now), with the relative error of the metric and of the IPIs per operation.

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use tlblab_model::run::{run as run_sim, RunSpec};
use tlblab_model::time::Ps;
use tlblab_native::workload::{self, NativeResult, NativeSpec, NativeWorkload};
use tlblab_report::table::Table;

use crate::cmd::native::secs;
use crate::cmd::run::{kernel_config, parse_duration};
use crate::machines;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// A host profile written by `tlblab probe --write-profile` (default: probe now).
    #[arg(long)]
    pub machine: Option<String>,
    /// Kernel preset the simulation runs (the host kernel's closest; see `tlblab list`).
    #[arg(long, default_value = "5.18.1+patch")]
    pub kernel: String,
    /// Measured seconds per native run.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Warm-up seconds per native run.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Simulated measured time per run.
    #[arg(long, default_value = "5ms", value_parser = parse_duration)]
    pub duration: Ps,
    /// Quick probe (when no --machine) and short native runs.
    #[arg(long)]
    pub quick: bool,
    /// Directory for tlb_flush1/3's file. Default: /dev/shm when it exists, because the model has
    /// no filesystem: its file pages behave like tmpfs (no page_mkwrite, no writeback), and a
    /// disk filesystem's write-fault costs would show up as a model error.
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Only these workloads (repeatable); default: all.
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SimSide {
    pub value: f64,
    pub unit: String,
    pub ipis_per_op: f64,
    /// Call-function interrupts taken per operation (`ipis_received`: the model's CAL row).
    pub cal_per_op: f64,
    /// Sleeps on `mmap_lock` per operation: on Linux 6.x each wake-up of a sleeper whose CPU
    /// went idle is a CAL interrupt the model does not send yet (docs/cal-interrupts.md).
    pub mmap_lock_sleeps_per_op: f64,
    pub cow_flushes_per_op: f64,
    pub faults_per_op: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub workload: String,
    pub threads: usize,
    pub real: NativeResult,
    /// `None` when this build has no simulated twin of the workload.
    pub sim: Option<SimSide>,
    /// (sim - real) / real.
    pub metric_error: Option<f64>,
    pub ipi_error: Option<f64>,
    /// (sim - real) / real of the CAL interrupts per operation (real net of the background).
    pub cal_error: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub machine: String,
    pub kernel: String,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
}

/// Where the file-backed testcases put their file when `--dir` is not given.
const TMPFS_DIR: &str = "/dev/shm";

pub fn run(a: ValidateArgs) -> Result<()> {
    let dir = a.dir.clone().unwrap_or_else(|| {
        let shm = std::path::PathBuf::from(TMPFS_DIR);
        if shm.is_dir() {
            shm
        } else {
            tlblab_native::workload::DEFAULT_DIR.into()
        }
    });
    let profile = match &a.machine {
        Some(m) => machines::load(m)?,
        None => {
            let r = crate::cmd::probe::measure(a.quick, 1)?;
            let b = tlblab_native::host_profile::build(&r, "host").map_err(|e| anyhow!("{e}"))?;
            for w in &b.warnings {
                eprintln!("validate: warning: {w}");
            }
            eprintln!("validate: host profile measured now ({})", b.profile.description);
            b.profile
        }
    };
    let kernel = kernel_config(&a.kernel, &[])?;
    let workloads: Vec<NativeWorkload> = if a.workloads.is_empty() {
        NativeWorkload::ALL.iter().map(|(_, w)| *w).collect()
    } else {
        a.workloads.iter().map(|w| NativeWorkload::parse(w).map_err(|e| anyhow!(e))).collect::<Result<_>>()?
    };
    let cpus = tlblab_native::sys::allowed_cpus().len();
    let (seconds, warmup) =
        if a.quick { (a.seconds.min(0.5), a.warmup.min(0.3)) } else { (a.seconds, a.warmup) };
    let mut notes = Vec::new();
    let mut rows = Vec::new();
    for w in workloads {
        for threads in [1usize, 2] {
            if threads > cpus {
                notes.push(format!(
                    "{}: {threads} threads skipped: this host lets us use {cpus} CPU(s)",
                    w.name()
                ));
                continue;
            }
            eprintln!("validate: {} with {threads} thread(s) ...", w.name());
            let real = workload::run(&NativeSpec {
                workload: w,
                threads,
                warmup: secs("warmup", warmup)?,
                measure: secs("seconds", seconds)?,
                dir: dir.clone(),
            })
            .map_err(|e| anyhow!(e))?;
            let sw = w.sim();
            let r = run_sim(
                &profile,
                &RunSpec {
                    kernel: kernel.clone(),
                    workload: sw.clone(),
                    tasks: threads as u32,
                    seed: 1,
                    warmup: Ps::US * 500,
                    measure: a.duration,
                },
            )
            .map_err(|e| anyhow!("simulating {}: {e}", sw.name()))?;
            let sim = Some(SimSide {
                value: r.metric.value,
                unit: r.metric.unit.clone(),
                ipis_per_op: r.per_op("ipis_sent"),
                cal_per_op: r.per_op("ipis_received"),
                mmap_lock_sleeps_per_op: r.per_op("mmap_lock_sleeps"),
                cow_flushes_per_op: r.per_op("cow_flushes"),
                faults_per_op: r.per_op("page_faults"),
            });
            let rel = |sim: f64, real: f64| (real > 0.0).then(|| (sim - real) / real);
            let metric_error = sim.as_ref().and_then(|s| rel(s.value, real.value));
            let real_ipis = real.ipis_per_op_net.or(real.ipis_per_op);
            let ipi_error =
                sim.as_ref().zip(real_ipis).and_then(|(s, r)| rel(s.ipis_per_op, r).filter(|_| r > 0.05));
            let real_cal = real.cal_per_op_net.or(real.cal_per_op);
            let cal_error =
                sim.as_ref().zip(real_cal).and_then(|(s, r)| rel(s.cal_per_op, r).filter(|_| r > 0.05));
            rows.push(Row {
                workload: w.name().into(),
                threads,
                real,
                sim,
                metric_error,
                ipi_error,
                cal_error,
            });
        }
    }
    notes.push(
        "CAL - TLB on the real side is other function calls; with two threads sleeping on mmap_lock or a VMA's \
         lock (ebizzy -m) most are wake-ups of the sleeper's idle CPU (ttwu_queue_wakelist, Linux 5.8+), which the \
         model does not send yet: docs/cal-interrupts.md"
            .into(),
    );
    notes.push(format!(
        "tlb_flush1/3 ran on a file in {} (the model has no filesystem: its file pages behave like tmpfs; on a \
         disk filesystem tlb_flush3's write faults also pay page_mkwrite and dirty accounting)",
        dir.display()
    ));
    let v = Validation { machine: profile.name.clone(), kernel: a.kernel.clone(), rows, notes };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v).context("serialising the validation")?);
    } else {
        print!("{}", render(&v));
    }
    Ok(())
}

pub fn render(v: &Validation) -> String {
    let mut out = format!(
        "validate: native workloads on this host vs the simulation on machine `{}`, kernel {}\n\
         (TLB/op: TLB interrupts per operation; CAL/op: function-call interrupts per operation, which on x86 \
         include the flush IPIs; real figures net of the idle background; errors = (sim - real) / real)\n\n",
        v.machine, v.kernel
    );
    let pct = |e: Option<f64>| e.map_or("-".into(), |e| format!("{:+.1}%", 100.0 * e));
    let f3 = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
    let mut t = Table::new([
        "workload",
        "threads",
        "real",
        "sim",
        "unit",
        "error",
        "real TLB/op",
        "sim TLB/op",
        "TLB error",
        "real CAL/op",
        "sim CAL/op",
        "CAL error",
        "sim sleeps/op",
        "others' CPU",
    ]);
    for r in &v.rows {
        t.row([
            r.workload.clone(),
            r.threads.to_string(),
            format!("{:.0}", r.real.value),
            r.sim.as_ref().map_or("-".into(), |s| format!("{:.0}", s.value)),
            r.real.unit.clone(),
            pct(r.metric_error),
            f3(r.real.ipis_per_op_net.or(r.real.ipis_per_op)),
            f3(r.sim.as_ref().map(|s| s.ipis_per_op)),
            pct(r.ipi_error),
            f3(r.real.cal_per_op_net.or(r.real.cal_per_op)),
            f3(r.sim.as_ref().map(|s| s.cal_per_op)),
            pct(r.cal_error),
            f3(r.sim.as_ref().map(|s| s.mmap_lock_sleeps_per_op)),
            r.real.interference.map_or("-".into(), |i| format!("{:.0}%", 100.0 * i.others_share)),
        ]);
    }
    out += &t.render();
    for n in &v.notes {
        out += &format!("note: {n}\n");
    }
    out
}
