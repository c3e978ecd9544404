//! SMT siblings share their core (hw/smt.rs, `Simulation::share_core`).

use super::tests::{profile, run, wis};
use super::*;
use crate::workload::will_it_scale::Testcase;

/// Per-task iterations of `tasks` tlb_flush2 processes (no shootdowns) on Ivy Bridge (4 cores x
/// 2 threads: CPU i and i + 4 share a core), with `smt_throughput` set to `t`.
fn processes(tasks: u32, t: f64) -> RunStats {
    let mut p = profile("ivybridge-4c8t");
    p.topology.smt_throughput.as_mut().unwrap().value = t;
    run(&mut wis(&p, "5.18.1", Testcase::TlbFlush2, tasks, false))
}

#[test]
fn siblings_share_their_core_and_other_cores_run_at_full_speed() {
    // Five processes: 0 and 4 share core 0, 1-3 have a core each.
    let s = processes(5, 1.3);
    let it = &s.iterations;
    let alone = (it[1] + it[2] + it[3]) as f64 / 3.0;
    for i in [0, 4] {
        let r = it[i] as f64 / alone;
        // Each sibling at 1.3 / 2 of a lone thread's speed (give or take the window's edges).
        assert!((0.62..=0.68).contains(&r), "task {i}: {r:.3} of a lone core ({it:?})");
    }
    // The lone cores are unaffected: the counts of no sharing at all (give or take one: the
    // processes still meet on shared lines, the zone's among them, at other moments)...
    let free = processes(5, 2.0);
    for i in 0..5 {
        assert!(free.iterations[i].abs_diff(free.iterations[1]) <= 1, "{:?}", free.iterations);
    }
    for i in 1..4 {
        assert!(free.iterations[i].abs_diff(it[i]) <= 1, "{:?} vs {it:?}", free.iterations);
    }
    // ...and four processes on four cores never share.
    assert_eq!(processes(4, 1.3).iterations, processes(4, 2.0).iterations);
    // The stretched steps are charged where they ran: every CPU's buckets still add up.
    for (cpu, t) in s.attribution.iter().enumerate().take(5) {
        let total: u64 = t.iter().map(|p| p.0).sum();
        let m = s.measured.0 as f64;
        assert!((total as f64 - m).abs() / m < 0.01, "cpu {cpu}: {total} vs {m}");
    }
}

/// Seed 000's claim that SMT sets (hw/smt.rs): past 4 threads on the 4-core Ivy Bridge,
/// ebizzy's records/s grow by a few percent per thread (siblings share a core), not by a core's
/// worth (~20% per thread before SMT sharing). Records/s of `threads` on 3.13, 5 ms after 0.5 ms.
fn ebizzy(threads: u32, smt_throughput: f64) -> f64 {
    let mut p = crate::profile::shipped("ivybridge-4c8t");
    p.topology.smt_throughput.as_mut().unwrap().value = smt_throughput;
    let spec = crate::run::RunSpec::of("3.13", "ebizzy alloc=glibc-mmap", threads, Ps::US * 500, Ps::MS * 5);
    crate::run::run(&p, &spec).unwrap().metric.value
}

#[test]
fn seed_000_records_grow_little_past_the_cores_because_siblings_share_them() {
    let (four, eight) = (ebizzy(4, 1.3), ebizzy(8, 1.3));
    assert!(eight / four < 1.2, "4 -> 8 threads: {four} -> {eight}");
    // Without sharing (each sibling a whole core) the same run grows by a third or more.
    let (four_free, eight_free) = (ebizzy(4, 2.0), ebizzy(8, 2.0));
    assert_eq!(four, four_free, "4 threads on 4 cores never share");
    assert!(eight_free / four_free > 1.3, "{four_free} -> {eight_free}");
}

/// STLB misses (user accesses that missed every level: the `tlb_misses` counter) per record of
/// ebizzy with 1 MiB chunks (a 256-page source chunk and a 256-page copy buffer per thread, as
/// much as the 512-entry Ivy Bridge STLB holds) on one Ivy Bridge core of two threads, with
/// `threads` busy; the STLB is per-core (the profile's) or, with `private`, per-thread.
fn stlb_misses_per_record(threads: u32, private: bool) -> f64 {
    let mut p = crate::profile::shipped("ivybridge-4c8t");
    p.topology.cores_per_socket = 1;
    let stlb = p.tlb.structures.iter_mut().find(|s| s.name == "STLB").unwrap();
    assert_eq!(stlb.sharing, crate::profile::Sharing::PerCore, "the shipped profile shares the STLB");
    if private {
        stlb.sharing = crate::profile::Sharing::PerThread;
    }
    p.validate().unwrap();
    let spec = crate::run::RunSpec::of(
        "3.13",
        "ebizzy -s 1048576 alloc=glibc-2.18",
        threads,
        Ps::US * 500,
        Ps::MS * 5,
    );
    let r = crate::run::run(&p, &spec).unwrap();
    assert_eq!(r.oracle.violations, 0);
    r.per_op("tlb_misses")
}

#[test]
fn a_per_core_stlb_misses_more_with_both_siblings_busy() {
    let alone = stlb_misses_per_record(1, false);
    assert_eq!(
        alone,
        stlb_misses_per_record(1, true),
        "an idle sibling leaves the shared STLB to the busy one"
    );
    let (shared, private) = (stlb_misses_per_record(2, false), stlb_misses_per_record(2, true));
    // Private STLBs: two threads miss as one does (the same work, each in its own array).
    assert!((private / alone - 1.0).abs() < 0.1, "private: {alone:.1} -> {private:.1} per record");
    // Shared: each thread's working set fills the array alone; together they evict each other.
    assert!(shared > 1.25 * private, "shared {shared:.1} vs private {private:.1} per record");
}

/// `share_core` on a step of CPU 0 that charged 100 ns of handler time, `stall` of it waiting
/// on cache lines, while CPU 4 (its sibling on the Ivy Bridge) issues all the time: the step's
/// length, and the share of its time CPU 0 then leaves idle to its sibling.
fn shared_step(stall: Ps) -> (Ps, i64) {
    let mut sim = Simulation::new(&profile("ivybridge-4c8t"), KernelConfig::preset("5.18.1").unwrap());
    sim.ev.run[4].busy_until = Ps::MS;
    let before = sim.times[0].by_bucket;
    let d = Ps::NS * 100;
    sim.times[0].by_bucket[Bucket::Handler as usize] += d;
    sim.times[0].step_mask = 1 << Bucket::Handler as u32;
    let d = sim.share_core(0, Ps::ZERO, &before, d, stall);
    assert_eq!(sim.times[0].by_bucket[Bucket::Handler as usize] - before[Bucket::Handler as usize], d);
    (d, sim.ev.run[0].idle_ppm)
}

#[test]
fn a_sibling_stretches_execution_not_the_wait_for_a_line() {
    // All execution: 2 / 1.3 as long.
    assert_eq!(shared_step(Ps::ZERO), (Ps(153_846), 0));
    // All stall (a cross-socket transfer): as long as alone, and the core left to the sibling.
    assert_eq!(shared_step(Ps::NS * 100), (Ps::NS * 100, 1_000_000));
    // Half and half: the 50 ns of execution stretch to 76.9 ns, the 50 ns stall stays.
    let (d, idle) = shared_step(Ps::NS * 50);
    assert_eq!(d, Ps(126_923));
    assert_eq!(idle, 393_940, "50 ns of 126.9 ns stalled");
    // An idle sibling stretches nothing.
    let mut sim = Simulation::new(&profile("ivybridge-4c8t"), KernelConfig::preset("5.18.1").unwrap());
    let before = sim.times[0].by_bucket;
    sim.times[0].by_bucket[Bucket::Handler as usize] += Ps::NS * 100;
    sim.times[0].step_mask = 1 << Bucket::Handler as u32;
    assert_eq!(sim.share_core(0, Ps::ZERO, &before, Ps::NS * 100, Ps::ZERO), Ps::NS * 100);
}
