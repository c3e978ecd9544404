use super::*;
use crate::linux::arch::x86::mm::tlb::{ReadTlbGen, RemoteDrain};
use crate::linux::include::linux::mm_types::MmId;

fn check(name: &str, pcid: bool, sc: &Scenario, edit: impl Fn(&mut KernelConfig)) -> Report {
    let mut k = KernelConfig::preset(name).unwrap();
    edit(&mut k);
    let v = Variant::of(&k, pcid);
    Checker::new(&v, sc, kernel_handler).run()
}

#[test]
fn shipped_presets_explore_clean() {
    // Presets that differ only outside the flush protocol (the page allocator, reclaim, text)
    // explore the same states: each distinct protocol once (the name is only a label).
    let mut seen = Vec::new();
    for (name, _) in crate::linux::preset::presets() {
        for pcid in [false, true] {
            let v = Variant::of(&KernelConfig::preset(name).unwrap(), pcid);
            if seen.contains(&(v.knobs, v.free_before_flush, v.pcid)) {
                continue;
            }
            seen.push((v.knobs, v.free_before_flush, v.pcid));
            for sc in &SCENARIOS {
                let r = Checker::new(&v, sc, kernel_handler).run();
                assert!(r.complete && r.counterexample.is_none(), "{}: {:?}", r.variant, r.counterexample);
                assert!(r.states > 1000, "{}: only {} states", r.variant, r.states);
            }
        }
    }
}

#[test]
fn free_before_flush_is_caught_in_every_scenario() {
    for sc in &SCENARIOS {
        let r = check("5.18.1", true, sc, |k| k.mm.free_before_flush = true);
        let cx = r.counterexample.expect("freeing before the flush must be caught");
        assert!(cx.property.starts_with("use-after-free"), "{}", cx.property);
        assert!(cx.trace.iter().any(|l| l.contains("frees the gathered pages")), "{:#?}", cx.trace);
    }
}

/// An early return that trusts the CPU to be one generation from the request (an off-by-one of
/// v6.0's `new_tlb_gen <= local`): a CPU that missed a partial flush skips it.
fn off_by_one_early_return(
    st: &mut TlbState,
    f: &FlushInfo,
    k: &FlushKnobs,
    read: &mut dyn FnMut() -> u64,
) -> FlushAction {
    if st.loaded_mm == Some(f.mm) && !st.is_lazy && f.new_tlb_gen <= st.local_tlb_gen() + 1 {
        return FlushAction::EarlyReturn;
    }
    flush_tlb_func(st, f, k, None, read)
}

#[test]
fn broken_early_return_is_caught() {
    let k = KernelConfig::preset("5.18.1+patch").unwrap();
    let v = Variant::of(&k, true);
    let r = Checker::new(&v, &SCENARIOS[0], off_by_one_early_return).run();
    let cx = r.counterexample.expect("the broken early return must be caught");
    assert!(cx.trace.iter().any(|l| l.contains("EarlyReturn")), "{:#?}", cx.trace);
    // The kernel's own rule is clean on the same variant.
    assert!(Checker::new(&v, &SCENARIOS[0], kernel_handler).run().counterexample.is_none());
}

#[test]
fn a_handler_that_never_flushes_is_caught() {
    fn lazy_handler(
        _: &mut TlbState,
        _: &FlushInfo,
        _: &FlushKnobs,
        _: &mut dyn FnMut() -> u64,
    ) -> FlushAction {
        FlushAction::UpToDate
    }
    let k = KernelConfig::preset("3.13").unwrap();
    let v = Variant::of(&k, false);
    let r = Checker::new(&v, &SCENARIOS[1], lazy_handler).run();
    let cx = r.counterexample.expect("no flush at all must be caught");
    assert!(cx.property.starts_with("stale translation"), "{}", cx.property);
}

#[test]
fn every_knob_combination_explores_clean() {
    let base = KernelConfig::preset("5.18.1").unwrap();
    let vs = knob_variants(&base);
    // 24 without generations, 48 with them, each per-entry and max-gen.
    assert_eq!(vs.len(), 120);
    // The scenario with context switches: lazy mode and the switch-time catch-up matter.
    for v in &vs {
        let r = Checker::new(v, &SCENARIOS[1], kernel_handler).run();
        assert!(r.complete && r.counterexample.is_none(), "{}: {:#?}", r.variant, r.counterexample);
    }
    assert!(vs.iter().any(|v| v.knobs.read_tlb_gen == ReadTlbGen::Never));
    assert!(vs.iter().any(|v| v.knobs.remote_drain == RemoteDrain::MaxGen));
}

/// Seed 002's proposed drain on v5.18.1+patch (`remote_drain = max-gen`): clean in both
/// scenarios, with and without PCIDs.
fn max_gen(pcid: bool) -> Variant {
    let mut k = KernelConfig::preset("5.18.1+patch").unwrap();
    k.set("remote_drain", "max-gen").unwrap();
    Variant::of(&k, pcid)
}

#[test]
fn the_max_gen_drain_explores_clean() {
    for pcid in [false, true] {
        for sc in &SCENARIOS {
            let v = max_gen(pcid);
            let r = Checker::new(&v, sc, kernel_handler).run();
            assert!(
                r.complete && r.counterexample.is_none(),
                "{} [{}]: {:#?}",
                r.variant,
                sc.name,
                r.counterexample
            );
            assert!(r.states > 1000, "{}: only {} states", r.variant, r.states);
        }
    }
}

#[test]
fn a_max_gen_drain_that_acks_before_its_flush_is_caught() {
    let v = max_gen(true);
    let r = Checker::new(&v, &SCENARIOS[0], kernel_handler).with_acks_before_flush().run();
    let cx = r.counterexample.expect("acknowledging before the flush must be caught");
    assert!(cx.property.starts_with("stale translation"), "{}", cx.property);
    assert!(cx.trace.iter().any(|l| l.contains("defers the flush")), "{:#?}", cx.trace);
}

/// A drain that drops the proposal's "multiple outstanding" test: the first outstanding request
/// alone decides, so a partial flush of its range stands for a later one too. (Two partial
/// requests are never outstanding together here: a zap that finishes while another is in flight
/// flushes in full, mmu_gather's nested-flush rule; so the later one is full.)
fn first_outstanding_decides(st: &mut TlbState, reqs: &[FlushInfo]) -> Drained {
    let local = st.local_tlb_gen();
    let first = reqs.iter().find(|f| f.new_tlb_gen > local).copied();
    let mut d = flush_tlb_func_max_gen(st, reqs);
    if let Some(f) = first.filter(|f| d.merged > 0 && !f.is_full() && f.new_tlb_gen == local + 1) {
        d.action = FlushAction::Partial { start: f.start, nr: f.nr_entries(), stride_shift: f.stride_shift };
    }
    d
}

#[test]
fn a_max_gen_drain_that_ignores_further_outstanding_requests_is_caught() {
    let v = max_gen(true);
    let r = Checker::new(&v, &SCENARIOS[0], kernel_handler).with_drainer(first_outstanding_decides).run();
    let cx = r.counterexample.expect("a partial flush standing for a later full one must be caught");
    assert!(cx.property.starts_with("stale translation"), "{}", cx.property);
    assert!(
        cx.trace.iter().any(|l| l.contains("max-gen drain of gens") && l.contains("Partial")),
        "{:#?}",
        cx.trace
    );
}

/// A switch into an mm that trusts "still in `mm_cpumask`" to mean "got every flush" and skips
/// the generation check. Harmless while the switch clears the old mm's bit (v4.14-v6.13: a CPU
/// in the mask never left); with v6.14's lazy mask and trim a CPU running another mm keeps its
/// bit while flushes skip it.
fn trusting_switch(
    st: &mut TlbState,
    next: MmId,
    (ctx_id, mm_tlb_gen, global): (u64, u64, Option<u16>),
    k: &FlushKnobs,
    pcid: bool,
    in_mask: bool,
) -> Switch {
    let mut gen = mm_tlb_gen;
    if in_mask && st.loaded_mm != Some(next) {
        gen = st.ctxs.iter().find(|c| c.ctx_id == ctx_id).map_or(mm_tlb_gen, |c| c.tlb_gen);
    }
    switch_mm_irqs_off(st, next, (ctx_id, gen, global), k, pcid)
}

#[test]
fn switching_back_on_trust_in_the_lazy_mask_is_caught_with_the_trim() {
    let v = Variant::of(&KernelConfig::preset("6.14").unwrap(), true);
    let r = Checker::new(&v, &SCENARIOS[1], kernel_handler).with_switcher(trusting_switch).run();
    let cx = r.counterexample.expect("trusting a stale mm_cpumask bit must be caught");
    assert!(cx.property.starts_with("stale translation"), "{}", cx.property);
    assert!(cx.trace.iter().any(|l| l.contains("switch_mm to mm 1")), "{:#?}", cx.trace);
    assert!(cx.trace.iter().any(|l| l.contains("switch_mm to mm 0: asid 0, no flush")), "{:#?}", cx.trace);
    // The kernel's switch is clean there; the same shortcut is harmless with the eager mask.
    assert!(Checker::new(&v, &SCENARIOS[1], kernel_handler).run().counterexample.is_none());
    let eager = Variant::of(&KernelConfig::preset("6.13").unwrap(), true);
    let r = Checker::new(&eager, &SCENARIOS[1], kernel_handler).with_switcher(trusting_switch).run();
    assert!(r.complete && r.counterexample.is_none(), "{:#?}", r.counterexample);
}

#[test]
fn the_trim_is_explored_both_ways_under_lazy_trim() {
    let v = Variant::of(&KernelConfig::preset("6.14").unwrap(), true);
    let lazy = Variant::of(&KernelConfig::preset("6.14-lazy").unwrap(), true);
    let (t, l) = (
        Checker::new(&v, &SCENARIOS[1], kernel_handler).run(),
        Checker::new(&lazy, &SCENARIOS[1], kernel_handler).run(),
    );
    assert!(t.complete && t.counterexample.is_none() && l.complete && l.counterexample.is_none());
    assert!(
        t.transitions > l.transitions,
        "the trim adds a choice at each send: {} vs {}",
        t.transitions,
        l.transitions
    );
}

/// A trim that drops a departed CPU without a flush and claims it caught up: the wrong-mm
/// branch of this `flush_tlb_func` clears the CPU's bit (as v6.14's does) and also records the
/// request's generation in the mm's ASID slot, as if it had flushed. The kernel's branch records
/// nothing, so the CPU's switch back compares generations and flushes; this one comes back to
/// the page the trim's request zapped still cached.
fn trim_without_flush(
    st: &mut TlbState,
    f: &FlushInfo,
    k: &FlushKnobs,
    read: &mut dyn FnMut() -> u64,
) -> FlushAction {
    let action = kernel_handler(st, f, k, read);
    if action == FlushAction::WrongMm {
        if let Some(c) = st.ctxs.iter_mut().find(|c| c.ctx_id == CTX_ID[f.mm as usize]) {
            c.tlb_gen = c.tlb_gen.max(f.new_tlb_gen);
        }
    }
    action
}

#[test]
fn a_trim_without_a_flush_is_caught() {
    let v = Variant::of(&KernelConfig::preset("6.14").unwrap(), true);
    let r = Checker::new(&v, &SCENARIOS[1], trim_without_flush).run();
    let cx = r.counterexample.expect("a trimmed CPU that returns to a stale slot must be caught");
    assert!(cx.property.starts_with("stale translation"), "{}", cx.property);
    assert!(cx.trace.iter().any(|l| l.contains("WrongMm")), "{:#?}", cx.trace);
    assert!(cx.trace.iter().any(|l| l.contains("trims mm_cpumask")), "{:#?}", cx.trace);
    // The kernel's handler, on the same scenario, is clean.
    let ok = Checker::new(&v, &SCENARIOS[1], kernel_handler).run();
    assert!(ok.complete && ok.counterexample.is_none(), "{:#?}", ok.counterexample);
}
