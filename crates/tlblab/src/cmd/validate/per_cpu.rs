//! The real side normalised by the CPU the workload itself got. On a shared host other
//! processes take CPU time from the real run that the simulated run, which has its machine to
//! itself, never loses. Each real run records the CPU time (user + system) of the workload's own
//! threads or processes and its wall time, so its average busy CPUs are `cpu / wall`; the
//! simulated run's are its CPUs' non-idle time over the window. A CPU-bound workload's real
//! figure is then rescaled to the simulated run's busy CPUs: a rate times `sim / real` busy CPUs,
//! a time (lower is better) times `real / sim`. That is its throughput per CPU-second got, in the
//! metric's own unit, so the two sides compare like with like.
//!
//! Only CPU-bound workloads are judged on the normalised figure: a task that sleeps (on a full
//! TCP window, on a disk read) leaves its CPU idle by its own doing, and that idle time is not
//! CPU lost to other tenants; rescaling it away would credit the real side with work it could not
//! have done. [`cpu_bound`] says which workloads are which and why.

use serde::Serialize;
use tlblab_model::run::RunResult;
use tlblab_native::workload::NativeResult;

/// Whether the workload's tasks want a CPU all the time, so that CPU time others took from them
/// is time they lost.
///
/// - will-it-scale `tlb_flush1/2/3`, `page_fault1` and ebizzy: each thread loops on system calls
///   and faults and never blocks on anything but `mmap_lock` (which both sides model).
/// - hackbench (pipes, sockets): 40 tasks a group on the host's CPUs, always more runnable tasks
///   than CPUs once started.
/// - sockperf throughput (UDP, TCP) and netperf UDP_STREAM: the client sends as fast as it can
///   (`--mps max`; a UDP send never blocks on loopback, a full receive queue drops); the server
///   receives what arrives.
/// - fs_mark on tmpfs: file creation without I/O.
///
/// Not CPU-bound: netperf TCP_STREAM (the sender sleeps for window room, `sk_stream_wait_memory`,
/// with mmtests' small `-s/-S`) and lru-file-mmap-read (its readers wait for the disk's reads
/// and for reclaim).
pub fn cpu_bound(workload: &str) -> bool {
    !matches!(workload, "netperf-tcp" | "lru-file-mmap-read")
}

/// One real run as the normalisation saw it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct RealRun {
    /// The raw figure, in the metric's unit.
    pub value: f64,
    /// Wall time of the run.
    pub seconds: f64,
    /// CPU time the workload itself got.
    pub cpu_seconds: f64,
    /// `cpu_seconds / seconds`: the CPUs it kept busy on average.
    pub busy_cpus: f64,
    /// Operations per CPU-second got (`None` where the runner counts no operations).
    pub ops_per_cpu_second: Option<f64>,
    /// The figure at the simulated run's busy CPUs (see the module).
    pub at_sim_cpus: f64,
}

/// CPUs a real run kept busy on average; `None` without a CPU time or a wall time.
pub fn real_busy_cpus(r: &NativeResult) -> Option<f64> {
    let cpu = r.cpu_seconds?;
    (r.seconds > 0.0 && cpu > 0.0).then(|| cpu / r.seconds)
}

/// CPUs a simulated run kept busy on average over its window, counted as the real side counts a
/// thread's CPU time: the non-idle time of every CPU it attributes, less its switches into the
/// idle task (`idle_switch_ps`: Linux stops a sleeper's clock at its dequeue, so the rest of that
/// `__schedule` is the idle task's), over one CPU's attributed time.
pub fn sim_busy_cpus(r: &RunResult) -> Option<f64> {
    busy_of(&r.attribution, r.counters.get("idle_switch_ps").copied().unwrap_or(0))
}

/// [`sim_busy_cpus`] of an attribution (per CPU: picoseconds by bucket) and the time of the
/// switches into idle.
fn busy_of(attribution: &[std::collections::BTreeMap<String, u64>], idle_switches: u64) -> Option<f64> {
    let per_cpu: Vec<(u64, u64)> = attribution
        .iter()
        .map(|b| (b.values().sum::<u64>(), b.get("idle").copied().unwrap_or(0)))
        .filter(|(total, _)| *total > 0)
        .collect();
    if per_cpu.is_empty() {
        return None;
    }
    let window = per_cpu.iter().map(|(t, _)| *t as f64).sum::<f64>() / per_cpu.len() as f64;
    let busy: u64 = per_cpu.iter().map(|(t, idle)| t.saturating_sub(*idle)).sum();
    Some(busy.saturating_sub(idle_switches) as f64 / window)
}

/// `value` measured with `real_busy` CPUs, at `sim_busy` CPUs: a rate scales with the CPUs, a
/// time (lower is better) inversely.
pub fn at_cpus(value: f64, higher_is_better: bool, real_busy: f64, sim_busy: f64) -> f64 {
    if higher_is_better {
        value * sim_busy / real_busy
    } else {
        value * real_busy / sim_busy
    }
}

/// Every real run normalised to `sim_busy` CPUs; `None` when a run lacks its CPU time.
pub fn real_runs(real: &[NativeResult], higher_is_better: bool, sim_busy: f64) -> Option<Vec<RealRun>> {
    real.iter()
        .map(|r| {
            let busy = real_busy_cpus(r)?;
            let cpu = r.cpu_seconds?;
            Some(RealRun {
                value: r.value,
                seconds: r.seconds,
                cpu_seconds: cpu,
                busy_cpus: busy,
                ops_per_cpu_second: (r.operations > 0).then(|| r.operations as f64 / cpu),
                at_sim_cpus: at_cpus(r.value, higher_is_better, busy, sim_busy),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_rate_scales_with_the_cpus_and_a_time_inversely() {
        // Half a CPU got, one simulated: the rate doubles, the time halves.
        assert_eq!(at_cpus(100.0, true, 0.5, 1.0), 200.0);
        assert_eq!(at_cpus(2.0, false, 0.5, 1.0), 1.0);
        // The same CPUs: unchanged.
        assert_eq!(at_cpus(7.0, true, 1.5, 1.5), 7.0);
    }

    #[test]
    fn the_simulated_busy_cpus_are_the_non_idle_time_over_one_window() {
        let cpu = |busy: u64, idle: u64| {
            BTreeMap::from([("syscall".to_string(), busy), ("idle".to_string(), idle)])
        };
        assert_eq!(busy_of(&[cpu(100, 0), cpu(25, 75)], 0), Some(1.25));
        assert_eq!(busy_of(&[], 0), None);
        // A switch into idle is the idle task's time, as the real side's thread clocks count it.
        assert_eq!(busy_of(&[cpu(100, 0), cpu(25, 75)], 5), Some(1.2));
    }

    #[test]
    fn a_real_run_is_its_cpu_time_over_its_wall_time() {
        let mut n = NativeResult {
            workload: "tlb_flush1".into(),
            threads: 1,
            cpus: vec![0],
            metric: "m".into(),
            unit: "ops/s".into(),
            value: 100.0,
            operations: 600,
            per_thread: vec![600],
            seconds: 2.0,
            ipis: Default::default(),
            ipis_per_op: None,
            ipis_per_op_net: None,
            cal_per_op: None,
            cal_per_op_net: None,
            background_tlb_per_s: None,
            background_cal_per_s: None,
            interference: None,
            cpu_seconds: Some(0.6),
            switches: None,
        };
        assert_eq!(real_busy_cpus(&n), Some(0.3));
        let runs = real_runs(&[n.clone()], true, 1.2).unwrap();
        // 0.3 CPUs got, 1.2 simulated: 4x; 600 operations over 0.6 CPU-seconds.
        assert_eq!(runs[0].at_sim_cpus, 400.0);
        assert_eq!(runs[0].ops_per_cpu_second, Some(1000.0));
        n.cpu_seconds = None;
        assert_eq!(real_busy_cpus(&n), None);
        assert!(real_runs(&[n], true, 1.2).is_none());
    }

    #[test]
    fn blocking_workloads_are_not_normalised() {
        assert!(cpu_bound("tlb_flush1") && cpu_bound("hackbench-pipes") && cpu_bound("netperf-udp"));
        assert!(!cpu_bound("netperf-tcp") && !cpu_bound("lru-file-mmap-read"));
    }
}
