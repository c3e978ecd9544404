use super::*;

fn check(name: &str, pcid: bool, sc: &ReclaimScenario, edit: impl Fn(&mut KernelConfig)) -> Report {
    let mut k = KernelConfig::preset(name).unwrap();
    edit(&mut k);
    ReclaimChecker::new(&ReclaimVariant::of(&k, pcid), sc).run()
}

fn clean(r: &Report, sc: &ReclaimScenario) {
    assert!(r.complete && r.counterexample.is_none(), "{} [{}]: {:#?}", r.variant, sc.name, r.counterexample);
    assert!(r.states > 1000, "{} [{}]: only {} states", r.variant, sc.name, r.states);
}

#[test]
fn shipped_presets_reclaim_clean() {
    // Each distinct protocol once: presets that differ only elsewhere explore the same states.
    let mut seen = Vec::new();
    for (name, _) in crate::linux::preset::presets() {
        for pcid in [false, true] {
            let v = ReclaimVariant::of(&KernelConfig::preset(name).unwrap(), pcid);
            let key = (v.knobs, v.reclaim, v.free_before_flush, v.pcid);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            for sc in &RECLAIM_SCENARIOS {
                let r = ReclaimChecker::new(&v, sc).run();
                eprintln!(
                    "{:>9} states {:>10} transitions {} [{}]",
                    r.states, r.transitions, r.variant, sc.name
                );
                clean(&r, sc);
            }
        }
    }
}

#[test]
fn every_reclaim_knob_explores_clean() {
    for base in ["4.1", "5.18.1"] {
        let vs = reclaim_knob_variants(&KernelConfig::preset(base).unwrap());
        assert!(vs.iter().any(|v| v.reclaim.swap_cluster_max == 1));
        for v in &vs {
            for sc in &RECLAIM_SCENARIOS {
                clean(&ReclaimChecker::new(v, sc).run(), sc);
            }
        }
    }
}

#[test]
fn free_before_flush_is_caught_with_a_trace() {
    for sc in &RECLAIM_SCENARIOS {
        for name in ["4.2-batchdirty", "5.18.1"] {
            let r = check(name, true, sc, |k| k.mm.free_before_flush = true);
            let cx = r
                .counterexample
                .unwrap_or_else(|| panic!("{}: freeing before the flush must be caught", r.variant));
            assert!(cx.property.starts_with("use-after-free"), "{}", cx.property);
            assert!(cx.trace.iter().any(|l| l.contains("flush deferred")), "{:#?}", cx.trace);
            assert!(cx.trace.iter().any(|l| l.contains("free_hot_cold_page_list")), "{:#?}", cx.trace);
        }
    }
}

/// Freeing first is harmless when every page was flushed on its own (`ptep_clear_flush`): the
/// batch then has nothing pending.
#[test]
fn free_before_flush_needs_the_batch() {
    let sc = &RECLAIM_SCENARIOS[0];
    let r = check("4.1", false, sc, |k| k.mm.free_before_flush = true);
    clean(&r, sc);
}

/// From v4.20 `try_to_unmap_flush` sends no IPI to a lazy CPU (`Ubc::flush_plan`): the lazy
/// CPU keeps the pages' entries past the free, which are more states to explore, and the
/// `tlb_gen` bump makes its switch back flush them (also in the no-generations stand-in).
#[test]
fn the_batch_skips_lazy_cpus_from_v4_20_and_their_switch_back_flushes() {
    use crate::linux::arch::x86::mm::tlb::LazyIpis;
    let sc = &RECLAIM_SCENARIOS[0];
    for pcid in [false, true] {
        let send = check("5.18.1", pcid, sc, |k| k.flush.lazy_ipis = LazyIpis::Send);
        let skip = check("5.18.1", pcid, sc, |_| {});
        clean(&send, sc);
        clean(&skip, sc);
        assert!(skip.states > send.states, "{} vs {} states", skip.states, send.states);
        clean(&check("5.18.1", pcid, sc, |k| k.flush.generations = false), sc);
    }
}
