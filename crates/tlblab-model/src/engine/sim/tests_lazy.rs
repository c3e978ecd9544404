//! Lazy TLB CPUs and flush IPIs by era (`lazy_ipis`).

use super::tests::profile;
use super::*;
use crate::workload::will_it_scale::{Testcase, WisTask};

/// tlb_flush2 on CPU 0 while CPU 1, which ran the same mm, idles in lazy TLB mode (its task
/// went to sleep for good). tlb_flush2 flushes one page per iteration with madvise (no page
/// tables freed) and munmaps its 256-page region (page tables freed) every 256 iterations.
fn lazy_cpu_beside_a_flusher(preset: &str, lazy_ipis: Option<&str>, run_for: Ps) -> (Simulation, RunStats) {
    let p = profile("haswell-ep-2s");
    let mut k = KernelConfig::preset(preset).unwrap();
    if let Some(v) = lazy_ipis {
        k.set("lazy_ipis", v).unwrap();
    }
    let mut sim = Simulation::new(&p, k);
    let mm = sim.add_mm();
    sim.add_task(Box::new(WisTask::new(Testcase::TlbFlush2)), mm, 0);
    sim.add_task(Box::new(WisTask::new(Testcase::TlbFlush2)), mm, 1);
    sim.with_ctx(1, Ps::ZERO, |k, ctx| k.deschedule(ctx, false, Ps::ZERO));
    assert!(sim.kernel.cpus[1].x86.st.is_lazy && sim.kernel.mms()[mm as usize].cpumask.contains(1));
    let s = sim.run(Ps::ZERO, run_for);
    (sim, s)
}

#[test]
fn lazy_cpus_get_flush_ipis_and_leave_the_mm_before_v4_20() {
    for preset in ["3.4", "3.13", "3.17"] {
        let (sim, s) = lazy_cpu_beside_a_flusher(preset, None, Ps::MS * 2);
        let c = s.counters;
        assert!(s.iterations[0] > 300, "past the first munmap: {preset}: {s:?}");
        // The first flush reaches the lazy CPU, which leaves the mm (one full flush); it is out
        // of mm_cpumask after that, so none of the later flushes interrupts it.
        assert_eq!(
            (c.tlbflush.lazy_leaves, c.smp.remote_flushes_received, c.smp.ipis_received),
            (1, 1, 1),
            "{preset}: {c:?}"
        );
        assert_eq!(c.tlbflush.shootdowns, 1, "{preset}: {c:?}");
        assert!(
            !sim.kernel.mms()[0].cpumask.contains(1) && sim.kernel.cpus[1].x86.st.loaded_mm.is_none(),
            "{preset}"
        );
        assert_eq!(c.oracle.oracle_violations, 0, "{preset}");
    }
    // The same kernel with the v4.20 rule: madvise flushes never interrupt the lazy CPU.
    let (sim, s) = lazy_cpu_beside_a_flusher("3.13", Some("skip"), Ps::US * 200);
    assert!((20..256).contains(&s.iterations[0]), "before the first munmap: {:?}", s.iterations);
    assert_eq!(
        (s.counters.tlbflush.lazy_leaves, s.counters.smp.ipis_sent, s.counters.tlbflush.shootdowns),
        (0, 0, 0)
    );
    assert!(sim.kernel.mms()[0].cpumask.contains(1) && sim.kernel.cpus[1].x86.st.is_lazy);
    assert_eq!(s.counters.oracle.oracle_violations, 0);
}

#[test]
fn lazy_cpus_are_skipped_since_v4_20_unless_tables_are_freed() {
    let (sim, s) = lazy_cpu_beside_a_flusher("5.18.1", None, Ps::US * 200);
    assert!((20..256).contains(&s.iterations[0]), "before the first munmap: {:?}", s.iterations);
    assert_eq!(
        (s.counters.tlbflush.lazy_leaves, s.counters.smp.ipis_sent, s.counters.tlbflush.shootdowns),
        (0, 0, 0)
    );
    assert!(sim.kernel.cpus[1].x86.st.is_lazy && sim.kernel.cpus[1].x86.st.loaded_mm == Some(0));
    assert_eq!(s.counters.oracle.oracle_violations, 0);
    // The munmap after 256 pages frees page tables: that flush reaches the lazy CPU, which
    // leaves the mm, and no later flush interrupts it.
    let (sim, s) = lazy_cpu_beside_a_flusher("5.18.1", None, Ps::MS * 2);
    assert!(s.iterations[0] > 300, "{s:?}");
    assert_eq!((s.counters.tlbflush.lazy_leaves, s.counters.smp.remote_flushes_received), (1, 1));
    assert!(sim.kernel.cpus[1].x86.st.loaded_mm.is_none());
    // v4.14-v4.19 sent every flush to lazy CPUs; their handler left for init_mm.
    let (sim, s) = lazy_cpu_beside_a_flusher("5.18.1", Some("send"), Ps::US * 200);
    assert_eq!((s.counters.tlbflush.lazy_leaves, s.counters.smp.remote_flushes_received), (1, 1));
    assert!(sim.kernel.cpus[1].x86.st.loaded_mm.is_none());
    assert_eq!(s.counters.oracle.oracle_violations, 0);
}

/// A kernel thread (`mm` none) switched in on a CPU that ran a user task keeps that task's mm
/// loaded, lazily (v4.2 `context_switch` -> `enter_lazy_tlb`): the CPU stays in its
/// `mm_cpumask`; the task switched back in finds its mm still loaded and reloads nothing.
#[test]
fn a_kernel_thread_runs_lazily_on_the_mm_it_finds() {
    struct Spin;
    impl Program for Spin {
        fn next(&mut self, out: &mut Vec<Op>) {
            out.push(Op::Compute(Ps::US));
        }
    }
    let p = profile("ivybridge-4c8t");
    let mut sim = Simulation::new(&p, KernelConfig::preset("4.2-batchdirty").unwrap());
    let mm = sim.add_mm();
    sim.add_task(Box::new(Spin), mm, 1);
    let kt = sim.add_kthread(Box::new(Spin), 1);
    sim.with_ctx(1, Ps::ZERO, |k, ctx| k.deschedule(ctx, true, Ps::ZERO));
    let k = &sim.kernel;
    assert_eq!(k.cpus[1].task, Some(kt));
    assert!(k.cpus[1].x86.st.is_lazy && k.cpus[1].x86.st.loaded_mm == Some(mm));
    assert!(k.mms()[mm as usize].cpumask.contains(1));
    sim.with_ctx(1, Ps::US, |k, ctx| k.deschedule(ctx, true, Ps::US));
    let k = &sim.kernel;
    assert_eq!(k.cpus[1].task, Some(0));
    assert!(!k.cpus[1].x86.st.is_lazy && k.cpus[1].x86.st.loaded_mm == Some(mm));
    assert_eq!(k.counters().tlbflush.switch_flushes, 0, "the same mm: no CR3 reload");
}

/// v6.14's lazy mm_cpumask (209954cbc7d0) and trim (6db2526c1d69) on the same pair: the munmap's
/// flush (page tables freed) makes the lazy CPU leave the mm for `init_mm` in every kernel; the
/// eager mask drops its bit there, the lazy mask keeps it until the next flush IPI finds the CPU
/// on another mm, and the trim rule skips it instead (no trim within the first second).
#[test]
fn the_lazy_mask_keeps_a_departed_cpu_until_a_flush_reaches_it_or_the_trim_skips_it() {
    let mut got = Vec::new();
    for preset in ["6.13", "6.14-lazy", "6.14"] {
        let (sim, s) = lazy_cpu_beside_a_flusher(preset, None, Ps::MS * 2);
        let c = s.counters;
        let m = c.cpumask.expect("the v6.14-era presets count mm_cpumask upkeep");
        assert!(s.iterations[0] > 300, "past the first munmap: {preset}: {s:?}");
        assert_eq!(c.tlbflush.lazy_leaves, 1, "{preset}: {c:?}");
        assert!(sim.kernel.cpus[1].x86.st.loaded_mm.is_none(), "{preset}");
        assert_eq!(c.oracle.oracle_violations, 0, "{preset}");
        let bit = sim.kernel.mms()[0].cpumask.contains(1);
        got.push((preset, c.smp.remote_flushes_received, m.wrong_cpu_flushes, bit, m.stale_skipped > 0));
    }
    assert_eq!(
        got,
        [("6.13", 1, 0, false, false), ("6.14-lazy", 2, 1, false, false), ("6.14", 1, 0, true, true),]
    );
}

/// When the sender tests a target's laziness (`lazy_test`): 6035152d8eeb (`5.13`) tests every
/// target before queueing; v4.20-v5.12 and the revert d39268ad24c0 (`5.12`, `5.18`) test each
/// as the enqueue loop reaches it, letting the other CPUs' earlier events run first, so a CPU
/// that went idle (lazy) while the loop ran is skipped. tlb_flush2 with 8 threads: the threads
/// sleep on mmap_lock around each munmap round, and some go lazy inside a loop's window.
#[test]
fn the_lazy_test_in_the_enqueue_loop_skips_cpus_that_went_lazy_while_it_ran() {
    use crate::run::{run, RunSpec, Workload};
    let p = profile("haswell-ep-2s");
    let counts = |preset: &str| {
        let spec = RunSpec {
            kernel: KernelConfig::preset(preset).unwrap(),
            workload: Workload::parse("tlb_flush2_threads").unwrap(),
            tasks: 8,
            seed: 1,
            warmup: Ps::MS,
            measure: Ps::MS * 6,
        };
        let r = run(&p, &spec).unwrap();
        let c = &r.counters;
        assert_eq!(c["oracle_violations"], 0, "{preset}");
        assert!(c["lazy_leaves"] > 0, "threads went lazy at all: {preset}: {c:?}");
        (c["lazy_skipped_in_loop"], c["send_loop_yields"])
    };
    assert_eq!(counts("5.13"), (0, 0), "tested before queueing: the loop neither yields nor skips");
    for preset in ["5.12", "5.18"] {
        let (skipped, yields) = counts(preset);
        assert!(skipped > 0 && yields > 0, "{preset}: skipped {skipped}, yields {yields}");
    }
}
