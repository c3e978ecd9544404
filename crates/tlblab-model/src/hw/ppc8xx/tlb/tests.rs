use super::*;

const K: u32 = 4096;
const KERNELBASE: u32 = 0xc000_0000;

fn page(n: u32) -> TlbEntry8xx {
    TlbEntry8xx::page_4k(n * K, n * K, 0, false, true)
}

fn big(ea: u32, size: PageSize8xx) -> TlbEntry8xx {
    TlbEntry8xx {
        epn: ea,
        rpn: ea.wrapping_sub(KERNELBASE),
        size,
        asid: 0,
        shared: true,
        changed: true,
        cache_inhibit: false,
    }
}

/// Run a reference stream through the TLB as the miss handler would (reload on every miss).
fn run(t: &mut Tlb8xx, pages: impl IntoIterator<Item = u32>) -> u64 {
    let before = t.stats().misses;
    for p in pages {
        if t.lookup(p * K, 0, false) == Lookup8xx::Miss {
            t.reload(page(p)).unwrap();
        }
    }
    t.stats().misses - before
}

#[test]
fn reloads_go_where_the_decrementing_counter_points() {
    let mut t = Tlb8xx::new(Side::Instruction);
    // After tlbia the counter is 0: first reload in slot 0, then 31, 30, ...
    t.tlbia();
    assert_eq!(t.reload(page(1)).unwrap(), 0);
    assert_eq!(t.index(), 31);
    assert_eq!(t.reload(page(2)).unwrap(), 31);
    assert_eq!(t.reload(page(3)).unwrap(), 30);
    assert_eq!(t.probe(2 * K, 0), Some(31));
}

#[test]
fn counter_replacement_is_round_robin_not_lru() {
    // 32 pages fill the TLB; touching page 1 again does not protect it: the 33rd page replaces
    // the oldest load (page 1, slot 0) regardless of use. LRU would have evicted page 2.
    let mut t = Tlb8xx::new(Side::Data);
    run(&mut t, 1..=32);
    assert_eq!(run(&mut t, [1]), 0);
    run(&mut t, [33]);
    assert_eq!(t.probe(K, 0), None, "FIFO evicts the first loaded page even though it was just used");
    assert!(t.probe(2 * K, 0).is_some());
    assert_eq!(t.stats().evictions, 1);
}

#[test]
fn a_cyclic_footprint_one_larger_than_the_tlb_misses_every_time() {
    let mut t = Tlb8xx::new(Side::Instruction);
    run(&mut t, 0..33);
    let misses = run(&mut t, (0..10).flat_map(|_| 0..33));
    assert_eq!(misses, 330);
    // ...and a footprint that fits misses never after the first pass.
    let mut t = Tlb8xx::new(Side::Instruction);
    run(&mut t, 0..32);
    assert_eq!(run(&mut t, (0..10).flat_map(|_| 0..32)), 0);
}

#[test]
fn rsv4_restricts_the_counter_to_28_entries_and_tlbia_spares_the_reserved() {
    let mut t = Tlb8xx::new(Side::Instruction);
    t.load_reserved(28, big(KERNELBASE, PageSize8xx::Size8M)).unwrap();
    t.tlbia();
    assert!(t.reserve4());
    assert_eq!(t.index(), 0);
    assert_eq!(t.probe(KERNELBASE + 0x12_3456, 5), Some(28), "pinned entry survives tlbia");
    // 28 user pages fill slots 0, 27, 26, .., 1; the counter wraps from 0 to 27, never into 28..31.
    run(&mut t, 1..=28);
    for s in 0..28 {
        assert!(t.slot(s).is_some());
    }
    assert_eq!(t.reload(page(100)).unwrap(), 0);
    assert_eq!(t.reload(page(101)).unwrap(), 27);
    assert_eq!(t.slot(28).unwrap().size, PageSize8xx::Size8M);
    assert!(t.slot(29).is_none());
    // A 29-page cyclic user footprint now thrashes (28 usable slots).
    let mut t2 = t.clone();
    run(&mut t2, 200..229);
    assert_eq!(run(&mut t2, 200..229), 29);
    // Without RSV4 tlbia takes everything.
    t.set_ctr(false, 0).unwrap();
    t.tlbia();
    assert_eq!(t.valid_count(), 0);
}

#[test]
fn tlbie_hits_reserved_entries_anywhere_in_a_large_page_and_ignores_the_asid() {
    let mut t = Tlb8xx::new(Side::Instruction);
    t.load_reserved(28, big(KERNELBASE, PageSize8xx::Size8M)).unwrap();
    t.tlbia();
    // A tlbie of an unrelated address leaves it.
    assert_eq!(t.tlbie(KERNELBASE + (8 << 20)), 0);
    // A tlbie of any address in the first 8 MB takes it (the 2.6 bug of seed 003).
    assert_eq!(t.tlbie(KERNELBASE + 0x7f_f000), 1);
    assert_eq!(t.stats().tlbie_invalidated_reserved, 1);
    assert_eq!(t.lookup(KERNELBASE, 0, false), Lookup8xx::Miss);
    // Same EA in two address spaces: one tlbie takes both.
    let mut t = Tlb8xx::new(Side::Data);
    t.reload(TlbEntry8xx::page_4k(0x1000_0000, 0x1000, 1, false, true)).unwrap();
    t.reload(TlbEntry8xx::page_4k(0x1000_0000, 0x2000, 2, false, true)).unwrap();
    assert_eq!(t.tlbie(0x1000_0abc), 2);
}

#[test]
fn asids_separate_private_entries_and_shared_ones_match_everywhere() {
    let mut t = Tlb8xx::new(Side::Data);
    t.reload(TlbEntry8xx::page_4k(0x1000_0000, 0x5000, 3, false, true)).unwrap();
    t.reload(TlbEntry8xx::page_4k(KERNELBASE, 0, 0, true, true)).unwrap();
    assert!(matches!(t.lookup(0x1000_0004, 3, false), Lookup8xx::Hit { pa: 0x5004, .. }));
    assert_eq!(t.lookup(0x1000_0004, 4, false), Lookup8xx::Miss);
    assert!(matches!(t.lookup(KERNELBASE + 8, 9, false), Lookup8xx::Hit { pa: 8, .. }));
}

#[test]
fn page_sizes_translate_their_offsets() {
    let mut t = Tlb8xx::new(Side::Data);
    t.reload(big(KERNELBASE + (8 << 20), PageSize8xx::Size8M)).unwrap();
    t.reload(big(KERNELBASE + (32 << 20), PageSize8xx::Size512K)).unwrap();
    let e16 =
        TlbEntry8xx { size: PageSize8xx::Size16K, ..TlbEntry8xx::page_4k(0x4000, 0x8000, 0, false, true) };
    t.reload(e16).unwrap();
    assert!(
        matches!(t.lookup(KERNELBASE + (8 << 20) + 0x7a_bcde, 0, false), Lookup8xx::Hit { pa, .. } if pa == (8 << 20) + 0x7a_bcde)
    );
    assert!(matches!(t.lookup(KERNELBASE + (32 << 20) + 0x7_ffff, 0, false), Lookup8xx::Hit { .. }));
    assert_eq!(t.lookup(KERNELBASE + (32 << 20) + 0x8_0000, 0, false), Lookup8xx::Miss);
    assert!(matches!(t.lookup(0x7ffc, 0, false), Lookup8xx::Hit { pa: 0xbffc, .. }));
    assert_eq!(t.lookup(0x8000, 0, false), Lookup8xx::Miss);
    for p in PageSize8xx::ALL {
        assert_eq!(PageSize8xx::parse(p.name()), Some(p));
    }
}

#[test]
fn store_to_an_entry_without_the_changed_bit_is_a_tlb_error() {
    let mut t = Tlb8xx::new(Side::Data);
    let slot = t.reload(TlbEntry8xx::page_4k(0x1000_0000, 0x5000, 0, false, false)).unwrap();
    assert!(matches!(t.lookup(0x1000_0000, 0, false), Lookup8xx::Hit { .. }));
    assert_eq!(t.lookup(0x1000_0000, 0, true), Lookup8xx::ChangedFault { slot: slot as u8 });
    t.rewrite(slot, TlbEntry8xx::page_4k(0x1000_0000, 0x5000, 0, false, true)).unwrap();
    assert!(matches!(t.lookup(0x1000_0000, 0, true), Lookup8xx::Hit { .. }));
    assert_eq!(t.stats().changed_faults, 1);
}

#[test]
fn bad_register_values_are_refused() {
    let mut t = Tlb8xx::new(Side::Data);
    assert_eq!(t.set_ctr(false, 32), Err(Tlb8xxError::IndexOutOfRange(32)));
    assert!(t.load_reserved(27, page(1)).is_err());
    assert!(matches!(t.reload(TlbEntry8xx { asid: 16, ..page(1) }), Err(Tlb8xxError::AsidOutOfRange(16))));
    assert!(matches!(
        t.reload(big(KERNELBASE + K, PageSize8xx::Size8M)),
        Err(Tlb8xxError::Misaligned { .. })
    ));
}

#[test]
fn mmu_tlbia_and_tlbie_act_on_both_tlbs() {
    let mut m = Mmu8xx::new();
    m.itlb.reload(page(1)).unwrap();
    m.dtlb.reload(page(1)).unwrap();
    assert_eq!(m.tlbie(K + 4), 2);
    m.itlb.reload(page(2)).unwrap();
    m.dtlb.reload(page(3)).unwrap();
    m.tlbia();
    assert_eq!(m.itlb.valid_count() + m.dtlb.valid_count(), 0);
}
