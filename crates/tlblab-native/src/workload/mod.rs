//! Native workloads: our own re-implementations of the benchmark loops the simulator models,
//! run for real so the two can be compared. Threads of one process (one mm), task i pinned to
//! CPU i mod the CPUs allowed, as will-it-scale binds its tasks; more threads than CPUs is
//! allowed (then tasks share CPUs and sleep on `mmap_lock`, which changes who gets IPIs).
//!
//! Measurement follows will-it-scale's harness: a warm-up, then the per-task counters are read
//! at the start and end of the measured interval; the `TLB` and `CAL` rows of
//! `/proc/interrupts` are read at the same instants.

pub mod ebizzy;
pub mod external;
pub mod netperf;
pub mod vm_scalability;
pub mod will_it_scale;

use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tlblab_model::workload::ebizzy::{Alloc, EbizzyParams, NAME as EBIZZY};
use tlblab_model::workload::will_it_scale::{Mode, Testcase, WillItScale};
use tlblab_model::workload::{MetricKind, Workload};

use crate::host::{Interference, InterferenceReport};
use crate::interrupts::{IpiCounter, IpiCounts};
use crate::sys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeWorkload {
    TlbFlush1,
    TlbFlush2,
    TlbFlush3,
    PageFault1,
    /// ebizzy 0.3 with `-m` (mmap/munmap every buffer).
    Ebizzy,
}

impl NativeWorkload {
    /// Named as the model names the benchmark (one list: `tlblab_model::workload`).
    pub const ALL: [(&'static str, NativeWorkload); 5] = [
        (Testcase::TlbFlush1.name(), NativeWorkload::TlbFlush1),
        (Testcase::TlbFlush2.name(), NativeWorkload::TlbFlush2),
        (Testcase::TlbFlush3.name(), NativeWorkload::TlbFlush3),
        (Testcase::PageFault1.name(), NativeWorkload::PageFault1),
        (EBIZZY, NativeWorkload::Ebizzy),
    ];

    /// `tlb_flush1` or `tlb_flush1_threads` (threads mode is the only mode); `ebizzy` or
    /// `ebizzy_m`.
    pub fn parse(name: &str) -> Result<NativeWorkload, String> {
        let base = name.strip_suffix("_threads").or_else(|| name.strip_suffix("_m")).unwrap_or(name);
        NativeWorkload::ALL.iter().find(|(n, _)| *n == base).map(|(_, w)| *w).ok_or_else(|| {
            format!(
                "unknown native workload `{name}`; allowed: {} (will-it-scale ones run in threads mode; \
                 a `_threads` suffix is accepted)",
                NativeWorkload::ALL.map(|(n, _)| n).join(", ")
            )
        })
    }

    pub fn name(self) -> &'static str {
        NativeWorkload::ALL.iter().find(|(_, w)| *w == self).unwrap().0
    }

    /// The simulated workload with the same loop.
    pub fn sim(self) -> Workload {
        let wis = |test| Workload::from(WillItScale { test, mode: Mode::Threads });
        match self {
            NativeWorkload::TlbFlush1 => wis(Testcase::TlbFlush1),
            NativeWorkload::TlbFlush2 => wis(Testcase::TlbFlush2),
            NativeWorkload::TlbFlush3 => wis(Testcase::TlbFlush3),
            NativeWorkload::PageFault1 => wis(Testcase::PageFault1),
            // The native loop mmaps and munmaps every buffer: ebizzy's -m.
            NativeWorkload::Ebizzy => {
                Workload::from(EbizzyParams { alloc: Alloc::Mmap, ..EbizzyParams::default() })
            }
        }
    }

    /// The metric, as the real benchmark prints it (the simulated twin's).
    pub fn metric(self) -> MetricKind {
        self.sim().metric()
    }
}

#[derive(Debug, Clone)]
pub struct NativeSpec {
    pub workload: NativeWorkload,
    pub threads: usize,
    pub warmup: Duration,
    pub measure: Duration,
    /// Where tlb_flush1/3 create their file (will-it-scale: `mkstemp` in /tmp). The filesystem
    /// matters: a disk filesystem's `page_mkwrite` and dirty tracking cost tlb_flush3 far more
    /// than tmpfs.
    pub dir: std::path::PathBuf,
}

/// will-it-scale's default directory for its files.
pub const DEFAULT_DIR: &str = "/tmp";

#[derive(Debug, Clone, Serialize)]
pub struct NativeResult {
    pub workload: String,
    pub threads: usize,
    pub cpus: Vec<usize>,
    pub metric: String,
    pub unit: String,
    pub value: f64,
    pub operations: u64,
    pub per_thread: Vec<u64>,
    /// The measured interval: the window of a native loop; a distribution benchmark's whole run
    /// (sockperf: its `-t` interval, around which its client idles).
    pub seconds: f64,
    pub ipis: IpiCounts,
    /// `TLB` interrupts per operation (all CPUs, raw).
    pub ipis_per_op: Option<f64>,
    /// The same after subtracting the rate measured while idle just before the run.
    pub ipis_per_op_net: Option<f64>,
    /// `CAL` (function-call) interrupts per operation, raw. On x86 since v4.x every call-function
    /// IPI counts here, flush IPIs included (`sysvec_call_function{,_single}` increment
    /// `irq_call_count`; `flush_tlb_func` adds `irq_tlb_count` on top), so CAL >= TLB and
    /// CAL - TLB is the other function calls: on Linux 6.x chiefly remote wake-ups of idle
    /// CPUs (`ttwu_queue_wakelist`), see `docs/cal-interrupts.md`.
    pub cal_per_op: Option<f64>,
    /// The same net of the idle background rate.
    pub cal_per_op_net: Option<f64>,
    pub background_tlb_per_s: Option<f64>,
    pub background_cal_per_s: Option<f64>,
    pub interference: Option<InterferenceReport>,
    /// CPU time (user + system) the workload itself got in the measured interval: its threads'
    /// (this process's, the harness's sleeping thread included) or its child processes'
    /// (`getrusage(RUSAGE_CHILDREN)`). `None` where it could not be read.
    #[serde(default)]
    pub cpu_seconds: Option<f64>,
    /// The workload's context switches in the measured interval, as `getrusage` counts them for
    /// its threads (the harness's included) or its child processes. `None` where not read.
    #[serde(default)]
    pub switches: Option<Switches>,
}

/// Context switches out of a CPU: `voluntary` when the task blocked (a sleep), `involuntary` when
/// it was preempted while runnable (`ru_nvcsw`, `ru_nivcsw`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Switches {
    pub voluntary: u64,
    pub involuntary: u64,
}

impl Switches {
    pub fn of(u: sys::Usage) -> Switches {
        Switches { voluntary: u.voluntary, involuntary: u.involuntary }
    }
}

/// A per-task operation counter on its own 256-byte slot (will-it-scale's spacing, so
/// counters never share a cache line).
#[repr(align(256))]
#[derive(Default)]
pub struct Counter(pub AtomicU64);

/// What a task's loop gets: its index, the stop flag and its counter.
pub struct TaskCtx<'a> {
    pub index: usize,
    pub stop: &'a AtomicBool,
    pub counter: &'a Counter,
}

impl TaskCtx<'_> {
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// `(*iterations)++`.
    #[inline(always)]
    pub fn done(&self, n: u64) {
        self.counter.0.store(n, Ordering::Relaxed);
    }
}

/// `TLB` and `CAL` interrupts per second while this process idles for `ms` (other tenants'
/// shootdowns and function calls).
pub(crate) fn background_rates(ms: u64) -> (Option<f64>, Option<f64>) {
    let c = IpiCounter::start();
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(ms));
    let (n, s) = (c.stop(), t.elapsed().as_secs_f64());
    (n.tlb.map(|n| n as f64 / s), n.cal.map(|n| n as f64 / s))
}

/// Pins the calling thread to `cpu`, then waits at `start` whatever the pinning gave (so the
/// others are never left waiting), then reports the pinning's failure if any.
pub(crate) fn pin_and_wait(cpu: usize, start: &Barrier) -> Result<(), String> {
    let pinned = sys::pin_to_cpu(cpu).map_err(|e| e.to_string());
    start.wait();
    pinned
}

/// What the measured interval saw: every task's counter at its start and end, the interrupts,
/// the others' share of the machine and its length.
pub(crate) struct Window {
    pub before: Vec<u64>,
    pub after: Vec<u64>,
    pub ipis: IpiCounts,
    pub interference: Option<InterferenceReport>,
    pub seconds: f64,
    /// This process's CPU time in the interval (every task is a thread of it).
    pub cpu_seconds: f64,
    /// This process's context switches in the interval.
    pub switches: Switches,
}

impl Window {
    /// Each task's operations in the interval.
    pub fn per_task(&self) -> Vec<u64> {
        self.after.iter().zip(&self.before).map(|(b, a)| b - a).collect()
    }
}

/// will-it-scale's harness around tasks already spawned and waiting at `start`: releases them,
/// then [`measure_after`] with this process's usage. Ends early if a task has finished
/// (failed), which would otherwise leave the others measuring alone. The caller stops and joins
/// them.
pub(crate) fn measure_window<T>(
    start: &Barrier,
    warmup: Duration,
    measure: Duration,
    handles: &[std::thread::JoinHandle<T>],
    read: impl Fn() -> Vec<u64>,
) -> Window {
    start.wait();
    let own = || sys::Usage { cpu_ns: sys::process_cpu_ns(), ..sys::usage(false) };
    measure_after(warmup, measure, read, own, || handles.iter().any(|h| h.is_finished()))
}

/// The measured interval of tasks already running: warms up for `warmup`, then reads their
/// counters (`read`), their CPU time and switches (`usage`), `/proc/interrupts` and the others'
/// share at the start and end of `measure`, or until `ended`. CPU time `usage` counts beyond
/// this process's own (child processes') is taken off the others' share too.
pub(crate) fn measure_after(
    warmup: Duration,
    measure: Duration,
    read: impl Fn() -> Vec<u64>,
    usage: impl Fn() -> sys::Usage,
    ended: impl Fn() -> bool,
) -> Window {
    let cpus = sys::allowed_cpus().len();
    std::thread::sleep(warmup);
    let (before, ipis, interference, t0, own0, use0) =
        (read(), IpiCounter::start(), Interference::start(), Instant::now(), sys::process_cpu_ns(), usage());
    while t0.elapsed() < measure && !ended() {
        std::thread::sleep(Duration::from_millis(10).min(measure.saturating_sub(t0.elapsed())));
    }
    let (after, ipis, interference, seconds) =
        (read(), ipis.stop(), interference.stop(cpus), t0.elapsed().as_secs_f64());
    let used = usage().since(use0);
    let beyond = used.cpu_ns.saturating_sub(sys::process_cpu_ns().saturating_sub(own0)) as f64 / 1e9;
    let interference = interference.map(|mut r| {
        let cap = r.seconds * cpus.max(1) as f64;
        if cap > 0.0 && beyond > 0.0 {
            r.others_share = (r.others_share - beyond / cap).clamp(0.0, 1.0);
        }
        r
    });
    Window {
        before,
        after,
        ipis,
        interference,
        seconds,
        cpu_seconds: used.cpu_ns as f64 / 1e9,
        switches: Switches::of(used),
    }
}

/// What a runner says about its workload; the rest of [`NativeResult`] comes from the window.
pub(crate) struct Outcome {
    pub workload: String,
    pub cpus: Vec<usize>,
    pub metric: String,
    pub unit: String,
    pub value: f64,
    /// What the per-operation rates divide by.
    pub operations: u64,
    pub per_thread: Vec<u64>,
}

/// A runner's result: its outcome with the window's interrupts per operation, raw and net of the
/// idle `background` rates (TLB, CAL per second) measured before the run.
pub(crate) fn result(o: Outcome, w: &Window, background: (Option<f64>, Option<f64>)) -> NativeResult {
    let (ops, seconds) = (o.operations, w.seconds);
    let per_op = |n: Option<u64>| n.filter(|_| ops > 0).map(|n| n as f64 / ops as f64);
    let net = |n: Option<u64>, bg: Option<f64>| {
        n.zip(bg).filter(|_| ops > 0).map(|(n, bg)| ((n as f64 - bg * seconds) / ops as f64).max(0.0))
    };
    NativeResult {
        workload: o.workload,
        threads: o.cpus.len(),
        cpus: o.cpus,
        metric: o.metric,
        unit: o.unit,
        value: o.value,
        operations: ops,
        per_thread: o.per_thread,
        seconds,
        ipis: w.ipis,
        ipis_per_op: per_op(w.ipis.tlb),
        ipis_per_op_net: net(w.ipis.tlb, background.0),
        cal_per_op: per_op(w.ipis.cal),
        cal_per_op_net: net(w.ipis.cal, background.1),
        background_tlb_per_s: background.0,
        background_cal_per_s: background.1,
        interference: w.interference,
        cpu_seconds: Some(w.cpu_seconds),
        switches: Some(w.switches),
    }
}

/// Runs `spec`: one thread per task, each running `body` after a common start.
pub fn run(spec: &NativeSpec) -> Result<NativeResult, String> {
    if spec.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let cpus = sys::allowed_cpus();
    let background = background_rates(200);
    let shared = match spec.workload {
        NativeWorkload::Ebizzy => {
            Some(Arc::new(ebizzy::Chunks::new().map_err(|e| format!("ebizzy setup: {e}"))?))
        }
        _ => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Arc<Vec<Counter>> = Arc::new((0..spec.threads).map(|_| Counter::default()).collect());
    let start = Arc::new(Barrier::new(spec.threads + 1));
    let handles: Vec<_> = (0..spec.threads)
        .map(|i| {
            let (stop, counters, start, shared) =
                (stop.clone(), counters.clone(), start.clone(), shared.clone());
            let (w, cpu, dir) = (spec.workload, cpus[i % cpus.len()], spec.dir.clone());
            std::thread::spawn(move || -> Result<(), String> {
                pin_and_wait(cpu, &start)?;
                let ctx = TaskCtx { index: i, stop: &stop, counter: &counters[i] };
                match w {
                    NativeWorkload::Ebizzy => ebizzy::task(&ctx, shared.as_deref().unwrap()),
                    _ => will_it_scale::task(w, &ctx, &dir),
                }
                .map_err(|e| format!("{} task {i}: {e}", w.name()))
            })
        })
        .collect();
    let window = measure_window(&start, spec.warmup, spec.measure, &handles, || read_counters(&counters));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| "a workload thread panicked".to_string())??;
    }
    let per_thread = window.per_task();
    let operations: u64 = per_thread.iter().sum();
    let metric = spec.workload.metric();
    let outcome = Outcome {
        workload: spec.workload.name().to_string(),
        cpus: (0..spec.threads).map(|i| cpus[i % cpus.len()]).collect(),
        metric: metric.name.into(),
        unit: metric.unit.into(),
        value: operations as f64 / window.seconds,
        operations,
        per_thread,
    };
    Ok(result(outcome, &window, background))
}

/// Every counter's value now.
pub(crate) fn read_counters(c: &[Counter]) -> Vec<u64> {
    c.iter().map(|c| c.0.load(Ordering::Relaxed)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_with_and_without_suffix() {
        assert_eq!(NativeWorkload::parse("tlb_flush1_threads"), Ok(NativeWorkload::TlbFlush1));
        assert_eq!(NativeWorkload::parse("page_fault1"), Ok(NativeWorkload::PageFault1));
        assert_eq!(NativeWorkload::parse("ebizzy_m"), Ok(NativeWorkload::Ebizzy));
        let e = NativeWorkload::parse("tlb_flush9").unwrap_err();
        assert!(e.contains("tlb_flush9") && e.contains("tlb_flush2"), "{e}");
        for (n, w) in NativeWorkload::ALL {
            assert_eq!(w.name(), n);
        }
    }
}
