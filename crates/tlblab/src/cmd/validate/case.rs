//! One cell of the validation from its runs: each side's spread, the relative error of the
//! medians, the verdict (on the real figure per CPU got for a CPU-bound workload,
//! validate/per_cpu.rs), and the per-operation counts both sides report (IPIs, calls, switches).

use tlblab_model::run::RunResult;
use tlblab_native::stats::Summary;
use tlblab_native::workload::{NativeResult, Switches};

use super::{per_cpu, Case, Pair, Spread, CONSISTENT};

/// One cell from its real runs and its simulated seeds on the central profile (`sims`) and on
/// the profiles of the probe's spread (`ends`): the simulated median is the central seeds', its
/// range all of them.
pub(super) fn case(
    name: &str,
    point: u64,
    what: &str,
    real: &[NativeResult],
    sims: &[RunResult],
    ends: &[RunResult],
) -> Case {
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| Summary::of(&v).median);
    let r = Spread::of(&real.iter().map(|r| r.value).collect::<Vec<_>>());
    let s = Spread::with_ends(
        &sims.iter().map(|r| r.metric.value).collect::<Vec<_>>(),
        &ends.iter().map(|r| r.metric.value).collect::<Vec<_>>(),
    );
    let (error, verdict_raw) = judge(&r, &s);
    let higher = sims.first().map_or(true, |x| x.metric.higher_is_better);
    let sim_busy = med(sims.iter().filter_map(per_cpu::sim_busy_cpus).collect());
    let real_runs = sim_busy.and_then(|b| per_cpu::real_runs(real, higher, b)).unwrap_or_default();
    let real_per_cpu = (!real_runs.is_empty())
        .then(|| Spread::of(&real_runs.iter().map(|x| x.at_sim_cpus).collect::<Vec<_>>()));
    let judged = real_per_cpu.map(|n| judge(&n, &s));
    let cpu_bound = per_cpu::cpu_bound(name);
    let verdict = match judged {
        Some((_, v)) if cpu_bound => v,
        _ => verdict_raw,
    };
    let per_op = |f: &dyn Fn(&RunResult) -> f64| med(sims.iter().map(f).collect());
    Case {
        workload: name.into(),
        tasks: point,
        point: what.into(),
        metric: real[0].metric.clone(),
        unit: real[0].unit.clone(),
        real: r,
        real_per_cpu,
        real_runs,
        sim_busy_cpus: sim_busy,
        cpu_bound,
        sim: s,
        error,
        error_per_cpu: judged.map(|(e, _)| e),
        verdict: verdict.into(),
        verdict_raw: verdict_raw.into(),
        ipis_per_op: Pair {
            real: med(real.iter().filter_map(|r| r.ipis_per_op_net.or(r.ipis_per_op)).collect()),
            sim: per_op(&|x| x.per_op("ipis_sent")),
        },
        cal_per_op: Pair {
            real: med(real.iter().filter_map(|r| r.cal_per_op_net.or(r.cal_per_op)).collect()),
            sim: per_op(&|x| x.per_op("ipis_received") + x.per_op("wakelist_ipis")),
        },
        voluntary_switches_per_op: Pair {
            real: med(real.iter().filter_map(|r| switches_per_op(r, |s| s.voluntary)).collect()),
            sim: per_op(&|x| x.per_op("voluntary_switches")),
        },
        involuntary_switches_per_op: Pair {
            real: med(real.iter().filter_map(|r| switches_per_op(r, |s| s.involuntary)).collect()),
            sim: per_op(&|x| x.per_op("involuntary_switches")),
        },
        sim_mmap_lock_sleeps_per_op: per_op(&|x| x.per_op("mmap_lock_sleeps")).unwrap_or(0.0),
        sim_vma_start_write_sleeps_per_op: per_op(&|x| x.per_op("vma_start_write_sleeps")).unwrap_or(0.0),
        others_share: real.iter().filter_map(|r| r.interference.map(|i| i.others_share)).reduce(f64::max),
        phase: None,
    }
}

/// A real run's switches of one kind per operation.
fn switches_per_op(r: &NativeResult, kind: fn(&Switches) -> u64) -> Option<f64> {
    r.switches.as_ref().filter(|_| r.operations > 0).map(|s| kind(s) as f64 / r.operations as f64)
}

/// The relative error of the medians, (sim - real) / real, and the verdict: consistent within
/// [`CONSISTENT`] or when the ranges overlap, else model high or low.
fn judge(r: &Spread, s: &Spread) -> (f64, &'static str) {
    let error = if r.median != 0.0 { (s.median - r.median) / r.median } else { f64::NAN };
    let overlap = s.min <= r.max && r.min <= s.max;
    let verdict = if error.abs() <= CONSISTENT || overlap {
        "consistent"
    } else if s.median > r.median {
        "model high"
    } else {
        "model low"
    };
    (error, verdict)
}
