//! `tlblab native W`: one of the native workloads, for real, on this host: the benchmark's
//! metric and the flush IPIs per operation from `/proc/interrupts`.

use anyhow::{anyhow, Context, Result};
use std::time::Duration;
use tlblab_native::workload::{self, NativeResult, NativeSpec, NativeWorkload};

#[derive(Debug, clap::Args)]
pub struct NativeArgs {
    /// tlb_flush1, tlb_flush2, tlb_flush3, page_fault1 (will-it-scale, threads mode) or ebizzy
    /// (ebizzy 0.3 with -m).
    pub workload: String,
    /// Tasks (threads of one process), pinned round-robin to the allowed CPUs; 1..=4096.
    #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS))]
    pub threads: usize,
    /// Measured seconds (after the warm-up), up to 3600.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Warm-up seconds before the measurement.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Directory for tlb_flush1/3's file (will-it-scale: /tmp). Its filesystem matters: tmpfs
    /// (e.g. /dev/shm) has no page_mkwrite or writeback, a disk filesystem has both.
    #[arg(long, default_value = workload::DEFAULT_DIR)]
    pub dir: std::path::PathBuf,
    #[arg(long)]
    pub json: bool,
}

/// The most threads of a native run (each is a real thread of this process).
pub const MAX_THREADS: u64 = 4096;
/// The longest native warm-up or measurement, in seconds.
pub const MAX_SECONDS: f64 = 3600.0;

/// `--NAME S` as a Duration: 0 ..= 3600 s (a larger value does not fit a Duration, or hangs).
pub fn secs(name: &str, s: f64) -> Result<Duration> {
    if !(0.0..=MAX_SECONDS).contains(&s) {
        return Err(anyhow!("--{name} {s}: allowed 0 ..= {MAX_SECONDS} seconds"));
    }
    Ok(Duration::from_secs_f64(s))
}

pub fn run(a: NativeArgs) -> Result<()> {
    let spec = NativeSpec {
        workload: NativeWorkload::parse(&a.workload).map_err(|e| anyhow!(e))?,
        threads: a.threads,
        warmup: secs("warmup", a.warmup)?,
        measure: secs("seconds", a.seconds)?,
        dir: a.dir,
    };
    if spec.measure.is_zero() {
        return Err(anyhow!("--seconds must be positive"));
    }
    let r = workload::run(&spec).map_err(|e| anyhow!(e))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).context("serialising the result")?);
    } else {
        print!("{}", render(&r));
    }
    Ok(())
}

pub fn render(r: &NativeResult) -> String {
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let mut out = format!(
        "{} (native, {} threads on CPUs {:?}), {:.2} s measured\n{}: {:.0} {}  ({} operations; per thread {:?})\n",
        r.workload, r.threads, r.cpus, r.seconds, r.metric, r.value, r.unit, r.operations, r.per_thread
    );
    out += &format!(
        "TLB interrupts per op: {} (net of the idle background {} /s: {}); CAL per op: {} (net of {} /s: {}; \
         CAL includes the flush IPIs)\n",
        opt(r.ipis_per_op),
        r.background_tlb_per_s.map_or("-".into(), |v| format!("{v:.0}")),
        opt(r.ipis_per_op_net),
        opt(r.cal_per_op),
        r.background_cal_per_s.map_or("-".into(), |v| format!("{v:.0}")),
        opt(r.cal_per_op_net)
    );
    if let Some(i) = r.interference {
        out += &format!(
            "interference: other processes used {:.1}% of the machine, steal {:.1}%\n",
            100.0 * i.others_share,
            100.0 * i.steal_share
        );
    }
    if r.ipis.tlb.is_none() {
        out += "note: /proc/interrupts has no TLB row here: IPIs cannot be counted\n";
    }
    out
}
