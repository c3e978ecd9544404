use super::*;

fn knobs(early_return: bool, read: ReadTlbGen) -> FlushKnobs {
    FlushKnobs {
        policy: RangePolicy::Ceiling(33),
        generations: true,
        early_return,
        read_tlb_gen: read,
        concurrent_local: true,
        coalesce_ipis: CoalesceIpis::On,
        lazy_ipis: LazyIpis::Skip,
        pti: true,
        invlpgb: false,
        cpumask: CpumaskUpdate::Eager,
        cpumask_line: false,
        lazy_test: LazyTest::BeforeQueue,
        remote_drain: RemoteDrain::PerEntry,
        range_cpus: false,
    }
}

fn state(local_gen: u64) -> TlbState {
    let mut st = TlbState { loaded_mm: Some(1), ..Default::default() };
    st.ctxs[0] = TlbContext { ctx_id: 9, tlb_gen: local_gen };
    st
}

fn partial(gen: u64) -> FlushInfo {
    FlushInfo {
        mm: 1,
        start: 0x1000,
        end: 0x2000,
        stride_shift: 12,
        freed_tables: false,
        new_tlb_gen: gen,
        initiator: 0,
    }
}

#[test]
fn the_next_generation_alone_is_a_partial_flush() {
    let mut st = state(4);
    let mut reads = 0;
    let a = flush_tlb_func(&mut st, &partial(5), &knobs(true, ReadTlbGen::WhenNeeded), None, || {
        reads += 1;
        5
    });
    assert_eq!(a, FlushAction::Partial { start: 0x1000, nr: 1, stride_shift: 12 });
    assert_eq!((reads, st.local_tlb_gen()), (1, 5));
}

#[test]
fn falling_behind_upgrades_to_one_full_flush_then_early_returns() {
    // docs/references/linux-mm.md#flush_tlb_func: three queued partial requests (5, 6, 7) on a CPU at 4 with mm at 7.
    for read in [ReadTlbGen::Always, ReadTlbGen::WhenNeeded] {
        let k = knobs(true, read);
        let mut st = state(4);
        let acts: Vec<_> =
            [5, 6, 7].iter().map(|&g| flush_tlb_func(&mut st, &partial(g), &k, None, || 7)).collect();
        assert_eq!(acts, [FlushAction::Full, FlushAction::EarlyReturn, FlushAction::EarlyReturn], "{read:?}");
    }
}

#[test]
fn never_reading_gives_up_coalescing() {
    let k = knobs(true, ReadTlbGen::Never);
    let mut st = state(4);
    let acts: Vec<_> = [5, 6, 7]
        .iter()
        .map(|&g| flush_tlb_func(&mut st, &partial(g), &k, None, || panic!("must not read")))
        .collect();
    assert!(acts.iter().all(|a| matches!(a, FlushAction::Partial { .. })), "{acts:?}");
    assert_eq!(st.local_tlb_gen(), 7);
    // Out of order: 7 before 6 -> full flush to 7, then 6 returns early.
    let mut st = state(5);
    assert_eq!(flush_tlb_func(&mut st, &partial(7), &k, None, || 0), FlushAction::Full);
    assert_eq!(flush_tlb_func(&mut st, &partial(6), &k, None, || 0), FlushAction::EarlyReturn);
}

#[test]
fn without_early_return_a_covered_request_still_reads_the_line() {
    let k = knobs(false, ReadTlbGen::Always);
    let mut st = state(7);
    let mut reads = 0;
    let a = flush_tlb_func(&mut st, &partial(6), &k, None, || {
        reads += 1;
        7
    });
    assert_eq!((a, reads), (FlushAction::UpToDate, 1));
    // The patch: the same request returns early without touching the line.
    let mut reads = 0;
    let a = flush_tlb_func(&mut st, &partial(6), &knobs(true, ReadTlbGen::WhenNeeded), None, || {
        reads += 1;
        7
    });
    assert_eq!((a, reads), (FlushAction::EarlyReturn, 0));
}

#[test]
fn zero_generation_batch_flushes_never_return_early() {
    // "x86/mm/tlb: Ignore f->new_tlb_gen when zero" (July 2022).
    let mut st = state(7);
    let f = FlushInfo { new_tlb_gen: 0, end: TLB_FLUSH_ALL, ..partial(0) };
    assert_eq!(
        flush_tlb_func(&mut st, &f, &knobs(true, ReadTlbGen::WhenNeeded), None, || 8),
        FlushAction::Full
    );
}

#[test]
fn wrong_mm_and_lazy_cpus() {
    let k = knobs(true, ReadTlbGen::WhenNeeded);
    let mut st = state(1);
    st.loaded_mm = Some(2);
    assert_eq!(flush_tlb_func(&mut st, &partial(2), &k, None, || 2), FlushAction::WrongMm);
    let mut st = state(1);
    st.is_lazy = true;
    assert_eq!(flush_tlb_func(&mut st, &partial(2), &k, None, || 2), FlushAction::LeaveLazy);
}

#[test]
fn lazy_cpus_are_targets_before_v4_20_and_for_freed_tables_after() {
    assert!(LazyIpis::Send.targets_lazy(false) && LazyIpis::Send.targets_lazy(true));
    assert!(!LazyIpis::Skip.targets_lazy(false) && LazyIpis::Skip.targets_lazy(true));
    // The v3.x handler (no generations) leaves the mm too, without flushing the range.
    let k = FlushKnobs { generations: false, lazy_ipis: LazyIpis::Send, ..knobs(false, ReadTlbGen::Never) };
    let mut st = state(1);
    st.is_lazy = true;
    assert_eq!(flush_tlb_func(&mut st, &partial(2), &k, None, || unreachable!()), FlushAction::LeaveLazy);
}

#[test]
fn asid_slots_are_reused_round_robin() {
    let mut st = TlbState::default();
    for i in 0..6u64 {
        let (a, flush) = st.choose_new_asid(100 + i, 1, true);
        assert_eq!((a, flush), (i as u16, true));
        st.ctxs[a as usize] = TlbContext { ctx_id: 100 + i, tlb_gen: 1 };
    }
    assert_eq!(st.choose_new_asid(103, 1, true), (3, false));
    assert_eq!(st.choose_new_asid(103, 2, true), (3, true), "behind: flush");
    assert_eq!(st.choose_new_asid(200, 1, true), (0, true), "slot 0 is reused after slot 5");
    assert_eq!(st.choose_new_asid(201, 1, false), (0, true));
}

fn inputs(total_vm: u64) -> RangeInputs {
    RangeInputs {
        lld_4k: 512,
        lli_4k: 512,
        total_vm,
        vm_exec: false,
        vm_hugetlb: false,
        range_has_huge_pmd: false,
        cpus_to_flush: None,
    }
}

#[test]
fn range_policies_by_era() {
    let pages = |n: u64| (0x10000, 0x10000 + n * 4096);
    let full = |d: RangeDecision| d.end == TLB_FLUSH_ALL;
    let inp = inputs(1 << 20);
    let (s, e) = pages(1);
    assert!(full(decide_range(RangePolicy::AlwaysFull, s, e, 12, &inp)));
    // Ivy Bridge pre-fix: shift 1 -> 256 pages; post-fix shift 2 -> 128 pages, strict `>`.
    let pre = RangePolicy::FlushallShift { shift: 1, post_fix: false, huge_walk: true };
    let post = RangePolicy::FlushallShift { shift: 2, post_fix: true, huge_walk: false };
    for (n, pre_full, post_full) in
        [(128, false, false), (129, false, true), (256, false, true), (257, true, true)]
    {
        let (s, e) = pages(n);
        assert_eq!(full(decide_range(pre, s, e, 12, &inp)), pre_full, "pre {n}");
        assert_eq!(full(decide_range(post, s, e, 12, &inp)), post_full, "post {n}");
    }
    // The pre-fix huge-page walk forces a full flush, if the range holds a 2 MiB boundary for
    // has_large_page() to look at (it steps from ALIGN(start, HPAGE_SIZE)).
    let (s, e) = (0x1f_f000, 0x1f_f000 + 8 * 4096);
    assert!(full(decide_range(pre, s, e, 12, &RangeInputs { range_has_huge_pmd: true, ..inp })));
    let (s0, e0) = pages(8);
    assert!(!full(decide_range(pre, s0, e0, 12, &RangeInputs { range_has_huge_pmd: true, ..inp })));
    // Without huge pages it walks every 2 MiB step of a short range, and none of a long one.
    assert_eq!(decide_range(pre, s, e, 12, &inp).pmds_walked, 1);
    assert_eq!(decide_range(pre, s0, e0, 12, &inp).pmds_walked, 0);
    assert_eq!(decide_range(pre, 0, 300 * 4096, 12, &inp).pmds_walked, 0);
    assert_eq!(decide_range(post, s, e, 12, &inp).pmds_walked, 0);
    // Mel's v2 "altershift" (post-fix formula, walk kept) still walks; "nowalk" does not.
    let altershift = RangePolicy::FlushallShift { shift: 2, post_fix: true, huge_walk: true };
    let huge = RangeInputs { range_has_huge_pmd: true, ..inp };
    assert!(full(decide_range(altershift, s, e, 12, &huge)));
    assert!(!full(decide_range(post, s, e, 12, &huge)));
    // A small mm caps the ceiling at total_vm.
    assert!(full(decide_range(post, s, e, 12, &inputs(4))));
    // v3.17+: 33 pages kept, 34 flushed whole; a 2 MB stride counts PMDs.
    let (s, e) = pages(33);
    assert!(!full(decide_range(RangePolicy::Ceiling(33), s, e, 12, &inp)));
    let (s, e) = pages(34);
    assert!(full(decide_range(RangePolicy::Ceiling(33), s, e, 12, &inp)));
    assert!(!full(decide_range(RangePolicy::Ceiling(33), 0, 16 << 21, 21, &inp)));
}

#[test]
fn cpu_count_rule_scales_the_pages_by_the_cpus_of_the_mask() {
    // Mel Gorman's dropped v1 rule: pages x CPUs of mm_cpumask against the same balance point.
    let full = |d: RangeDecision| d.end == TLB_FLUSH_ALL;
    let pre = RangePolicy::FlushallShift { shift: 1, post_fix: false, huge_walk: false };
    let post = RangePolicy::FlushallShift { shift: 6, post_fix: true, huge_walk: false };
    let on = |cpus| RangeInputs { cpus_to_flush: Some(cpus), ..inputs(1 << 20) };
    let n = |pages: u64| (0x10000, 0x10000 + pages * 4096);
    // Ivy Bridge pre-fix (256 pages): ebizzy's 129 pages on one CPU stay INVLPGs, on two they
    // make 258 > 256 and flush whole.
    let (s, e) = n(129);
    assert!(!full(decide_range(pre, s, e, 12, &on(1))));
    assert!(full(decide_range(pre, s, e, 12, &on(2))));
    assert!(!full(decide_range(pre, s, e, 12, &inputs(1 << 20))), "off: the CPUs do not count");
    // Post-fix shift 6 (8 pages): one page on 8 CPUs is still kept, on 9 flushed whole.
    let (s, e) = n(1);
    assert!(!full(decide_range(post, s, e, 12, &on(8))));
    assert!(full(decide_range(post, s, e, 12, &on(9))));
    // No CPU counted (an mm loaded nowhere) weighs as one.
    assert!(!full(decide_range(post, s, e, 12, &on(0))));
    // The v3.17 ceiling ignores it.
    assert!(!full(decide_range(RangePolicy::Ceiling(33), s, e, 12, &on(64))));
}

#[test]
fn flushall_shift_table() {
    assert_eq!(flushall_shift("intel", 6, 0x3a, false), 1);
    assert_eq!(flushall_shift("intel", 6, 0x3a, true), 2);
    assert_eq!(flushall_shift("intel", 6, 0x2a, false), 5);
    assert_eq!(flushall_shift("intel", 6, 0x3f, false), 6, "Haswell was missing from the table");
    assert_eq!(flushall_shift("intel", 6, 0x17, true), -1);
    assert_eq!(flushall_shift("amd", 0x19, 1, false), 5);
    assert_eq!(flushall_shift("amd", 0x10, 1, false), 4);
    assert_eq!(flushall_shift("powerpc", 0, 0, true), -1);
}

#[test]
fn without_generations_the_handler_does_what_it_is_asked() {
    let k = FlushKnobs { generations: false, ..knobs(false, ReadTlbGen::Never) };
    let mut st = state(4);
    // Out of order and behind: the v3.x handler still does exactly each request.
    for g in [7, 5, 6] {
        let a = flush_tlb_func(&mut st, &partial(g), &k, None, || panic!("no generations in v3.x"));
        assert_eq!(a, FlushAction::Partial { start: 0x1000, nr: 1, stride_shift: 12 });
    }
    let full = FlushInfo { end: TLB_FLUSH_ALL, ..partial(8) };
    assert_eq!(flush_tlb_func(&mut st, &full, &k, None, || 0), FlushAction::Full);
}

#[test]
fn a_global_asid_is_switched_to_without_a_flush_and_stragglers_reload_on_an_ipi() {
    let k = FlushKnobs { invlpgb: true, ..knobs(true, ReadTlbGen::WhenNeeded) };
    let g = TLB_NR_DYN_ASIDS as u16;
    // A CPU running mm 1 on per-CPU ASID 0 (it loaded the mm before the mm got its global ASID).
    let mut st = state(1);
    assert_eq!(st.loaded_asid, 0);
    // Its flush IPI makes it reload with the global ASID, and flush nothing.
    let a = flush_tlb_func(&mut st, &partial(2), &k, Some(g), || panic!("no generation read"));
    assert_eq!(a, FlushAction::GlobalAsid { reloaded: true });
    assert_eq!((st.loaded_asid, st.pcid()), (g, g + 1));
    assert_eq!(
        flush_tlb_func(&mut st, &partial(3), &k, Some(g), || 0),
        FlushAction::GlobalAsid { reloaded: false }
    );
    // Switching away and back: the global ASID again, never flushed, however far the mm's
    // generation moved.
    let sw = switch_mm_irqs_off(&mut st, 2, (7, 1, None), &k, true);
    assert!(sw.joined && sw.left == Some(1));
    let sw = switch_mm_irqs_off(&mut st, 1, (9, 50, Some(g)), &k, true);
    assert_eq!((sw.flush, sw.joined, st.loaded_asid), (false, true, g));
    assert!(is_global_asid(st.loaded_asid) && !is_global_asid(TLB_NR_DYN_ASIDS as u16 - 1));
}

fn mask_of(cpus: &[u32]) -> CpuMask {
    let mut m = CpuMask::new();
    cpus.iter().for_each(|&c| m.set(c));
    m
}

#[test]
fn the_lazy_mask_keeps_the_previous_mms_bit_at_a_switch() {
    for (cpumask, left) in [(CpumaskUpdate::Eager, Some(1)), (CpumaskUpdate::Lazy, None)] {
        let k = FlushKnobs { cpumask, ..knobs(true, ReadTlbGen::WhenNeeded) };
        let mut st = state(4);
        let sw = switch_mm_irqs_off(&mut st, 2, (10, 1, None), &k, true);
        assert_eq!((sw.left, sw.joined, st.loaded_mm), (left, true, Some(2)), "{cpumask:?}");
    }
}

#[test]
fn a_cpu_clears_its_own_stale_bit_in_the_wrong_mm_branch_and_keeps_it_when_leaving_lazily() {
    for c in [CpumaskUpdate::Eager, CpumaskUpdate::Lazy, CpumaskUpdate::LazyTrim] {
        assert!(FlushAction::WrongMm.clears_bit(c));
        assert_eq!(FlushAction::LeaveLazy.clears_bit(c), c == CpumaskUpdate::Eager);
        assert!(!FlushAction::Full.clears_bit(c));
    }
    // A CPU that switched away (lazy mask: still in the mask) gets the request and drops out.
    let k = FlushKnobs { cpumask: CpumaskUpdate::Lazy, ..knobs(true, ReadTlbGen::WhenNeeded) };
    let mut st = TlbState { loaded_mm: Some(2), ..Default::default() };
    assert_eq!(
        flush_tlb_func(&mut st, &partial(5), &k, None, || panic!("not this mm's line")),
        FlushAction::WrongMm
    );
}

#[test]
fn the_trim_rule_skips_cpus_running_another_mm_unless_it_trims_or_tables_were_freed() {
    // CPUs 0-3 in the mask: 0 initiates, 1 runs the mm, 2 runs another mm, 3 is lazy.
    let (cpumask, lazy, running) = (mask_of(&[0, 1, 2, 3]), mask_of(&[3]), mask_of(&[0, 1, 3]));
    let trim = FlushKnobs { cpumask: CpumaskUpdate::LazyTrim, ..knobs(true, ReadTlbGen::WhenNeeded) };
    let lazy_only = FlushKnobs { cpumask: CpumaskUpdate::Lazy, ..trim };
    let t = |k: &FlushKnobs, running: Option<&CpuMask>, freed| {
        flush_targets(&cpumask, &lazy, running, k, freed, 0).iter().collect::<Vec<_>>()
    };
    assert_eq!(t(&trim, Some(&running), false), [1], "should_flush_tlb: loaded_mm only");
    assert_eq!(t(&trim, None, false), [1, 2], "a trimming request reaches the stale CPU");
    assert_eq!(t(&trim, Some(&running), true), [1, 2, 3], "freed tables: every CPU of the mask");
    assert_eq!(t(&lazy_only, Some(&running), false), [1, 2], "209954cbc7d0 alone: sender unchanged");
}

#[test]
fn should_trim_cpumask_says_yes_at_most_once_per_hz_jiffies() {
    let hz = 1000;
    let mut next = hz; // init_new_context: jiffies + HZ at creation (jiffies 0)
    assert!(!should_trim_cpumask(&mut next, 0, hz));
    assert!(!should_trim_cpumask(&mut next, hz, hz), "time_after is strict");
    assert!(should_trim_cpumask(&mut next, hz + 1, hz));
    assert_eq!(next, 2 * hz + 1);
    assert!(!should_trim_cpumask(&mut next, hz + 2, hz));
    assert!(should_trim_cpumask(&mut next, 5 * hz, hz), "after an idle spell, once");
    assert!(!should_trim_cpumask(&mut next, 5 * hz, hz));
}

/// Seed 002's proposed drain (`remote_drain = max-gen`): the three queued requests of
/// `falling_behind_upgrades_to_one_full_flush_then_early_returns`, walked first, make one full
/// flush to the largest generation without the read.
#[test]
fn the_max_gen_drain_flushes_once_to_the_largest_generation() {
    let mut st = state(4);
    let d = flush_tlb_func_max_gen(&mut st, &[partial(5), partial(7), partial(6)]);
    assert_eq!(d, Drained { action: FlushAction::Full, covered: 0, merged: 2 });
    assert_eq!(st.local_tlb_gen(), 7);
    // One outstanding request, the next generation, a range: its range alone.
    let mut st = state(4);
    let d = flush_tlb_func_max_gen(&mut st, &[partial(3), partial(5), partial(4)]);
    assert_eq!(d.action, FlushAction::Partial { start: 0x1000, nr: 1, stride_shift: 12 });
    assert_eq!((d.covered, d.merged, st.local_tlb_gen()), (2, 0, 5));
    // One outstanding request two generations ahead (the one between never reached this CPU, or
    // is still on its way): a full flush, as flush_tlb_func's rule gives.
    let mut st = state(4);
    assert_eq!(flush_tlb_func_max_gen(&mut st, &[partial(6)]).action, FlushAction::Full);
    // Every request covered: nothing to flush, the generation unchanged.
    let mut st = state(7);
    let d = flush_tlb_func_max_gen(&mut st, &[partial(5), partial(7)]);
    assert_eq!(d, Drained { action: FlushAction::EarlyReturn, covered: 2, merged: 0 });
    assert_eq!(st.local_tlb_gen(), 7);
}

#[test]
fn only_requests_for_the_running_mm_join_the_drain() {
    let k = FlushKnobs { remote_drain: RemoteDrain::MaxGen, ..knobs(true, ReadTlbGen::WhenNeeded) };
    let st = state(4);
    assert!(drain_joins(&st, &partial(5), &k, false, None));
    // A reclaim batch, a global-ASID mm, another mm, a lazy CPU, no generations: alone.
    assert!(!drain_joins(&st, &partial(5), &k, true, None));
    assert!(!drain_joins(&st, &partial(5), &k, false, Some(TLB_NR_DYN_ASIDS as u16)));
    assert!(!drain_joins(&st, &FlushInfo { mm: 2, ..partial(5) }, &k, false, None));
    assert!(!drain_joins(&TlbState { is_lazy: true, ..state(4) }, &partial(5), &k, false, None));
    assert!(!drain_joins(&st, &partial(5), &FlushKnobs { generations: false, ..k }, false, None));
}
