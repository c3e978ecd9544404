//! The machine's noise: the scheduler tick on busy CPUs at HZ, the per-step jitter that breaks a
//! shootdown storm's lockstep, and IPIs that interrupt user compute (the profiles' `[noise]`).

use super::tests::{at, profile, run, store, wis, Script};
use super::*;
use crate::linux::include::linux::mm_types::PAGE_SIZE;
use crate::linux::syscalls::MapKind;
use crate::workload::will_it_scale::Testcase;

/// A shipped profile with its `[noise]`.
fn noisy(name: &str) -> MachineProfile {
    let p = crate::profile::shipped(name);
    assert!(p.noise.is_some(), "{name} ships a [noise] section");
    p
}

#[test]
fn busy_cpus_take_the_tick_at_hz_and_idle_ones_do_not() {
    let p = noisy("haswell-ep-2s");
    let hz = p.noise.as_ref().unwrap().hz.value;
    // Two busy CPUs of 72 for 20 ms: 2 x 20 ms x HZ ticks (one more or less per CPU at the edges).
    let mut sim = wis(&p, "5.18.1", Testcase::TlbFlush2, 2, true);
    sim.seed(3);
    let s = sim.run(Ps::MS, Ps::MS * 20);
    let expected = 2.0 * 0.020 * hz;
    assert!((s.counters.tick_sched.ticks as f64 - expected).abs() <= 2.0, "{:?}", s.counters.tick_sched);
    // What the ticks cost shows in their own bucket, on the busy CPUs only.
    assert!(s.attribution[0][Bucket::Tick as usize] > Ps::ZERO);
    assert_eq!(s.attribution[5][Bucket::Tick as usize], Ps::ZERO);
    // The jitter moves time between steps, never out of the window: every CPU's buckets add
    // up to the measured time, as without noise.
    for (cpu, a) in s.attribution.iter().enumerate() {
        let total = a.iter().fold(Ps::ZERO, |t, &b| t + b);
        assert!(total.0.abs_diff(s.measured.0) <= Ps::US.0 * 5, "cpu {cpu}: {total:?} vs {:?}", s.measured);
    }
}

#[test]
fn noise_breaks_the_lockstep_of_a_shootdown_storm() {
    // Without noise a run is the same whatever the seed (before contended lines queued, 15
    // threads of tlb_flush1 on Haswell even completed the same count each). With the tick and per-step
    // jitter, seeds give different runs.
    let ops = |p: &MachineProfile, seed| {
        let mut sim = wis(p, "5.18.1", Testcase::TlbFlush1, 15, true);
        sim.seed(seed);
        sim.run(Ps::US * 200, Ps::MS * 2).iterations
    };
    let quiet = profile("haswell-ep-2s");
    assert_eq!(ops(&quiet, 1), ops(&quiet, 2), "no noise: the seed changes nothing");
    let p = noisy("haswell-ep-2s");
    let (a, b) = (ops(&p, 1), ops(&p, 2));
    assert!(a.iter().any(|&n| n != a[0]), "{a:?}");
    assert_ne!(a, b);
    assert_eq!(a, ops(&p, 1), "same seed, same run");
}

/// CPU 0 computes in user mode in 100 us steps while CPU 1, a thread of the same mm, faults a
/// page in and zaps it: the flush IPI to CPU 0 is taken when it arrives, not at the end of the
/// computation, so CPU 1 waits for its acknowledgement for microseconds, not up to 100 us.
#[test]
fn an_ipi_interrupts_user_compute_and_the_initiator_waits_microseconds() {
    struct Compute;
    impl Program for Compute {
        fn next(&mut self, out: &mut Vec<Op>) {
            out.push(Op::Compute(Ps::US * 100));
        }
    }
    let p = profile("haswell-ep-2s");
    let mut k = KernelConfig::preset("5.18.1").unwrap();
    k.set("mmap_lock", "off").unwrap();
    let mut sim = Simulation::new(&p, k);
    let mm = sim.add_mm();
    sim.add_task(Box::new(Compute), mm, 0);
    let ops = vec![
        Op::Mmap { len: PAGE_SIZE, kind: MapKind::Anon, reg: 0 },
        store(0),
        Op::MadviseDontneed { addr: at(0), len: PAGE_SIZE },
    ];
    sim.add_task_at(Box::new(Script(ops)), mm, 1, Ps::US * 30);
    let s = sim.run(Ps::ZERO, Ps::US * 400);
    assert_eq!(s.counters.smp.ipis_sent, 1, "{:?}", s.counters);
    let wait = s.attribution[1][Bucket::IpiWait as usize];
    assert!(wait > Ps::ZERO && wait < Ps::US * 5, "CPU 1 waited {wait:?} for CPU 0's ack");
    // CPU 0 took the handler in the middle of a computation, which then finished after it.
    let handler = s.attribution[0][Bucket::Handler as usize];
    assert!(handler > Ps::ZERO && handler < Ps::US * 5, "{handler:?}");
    assert_eq!(s.attribution[0][Bucket::User as usize], Ps::US * 400);
}

/// In a storm of 16 threads the initiators' enqueue loops are interrupted by other CPUs' flush
/// IPIs (smp_call_function_many_cond runs with interrupts on), and every flush still completes
/// safely.
#[test]
fn send_loops_take_interrupts_in_a_storm_and_stay_safe() {
    let p = profile("haswell-ep-2s");
    let mut sim = wis(&p, "5.18.1", Testcase::TlbFlush1, 16, true);
    let s = run(&mut sim);
    assert!(s.counters.smp.send_loops_interrupted > 0, "{:?}", s.counters.smp);
    assert_eq!(sim.oracle_report().0, 0);
}
