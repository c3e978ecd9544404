//! Sized lookups: a lookup of one page size, and replaying a level-one hit, against the full
//! lookup.

use super::tests::{at, peek, spec, to, K, M2};
use super::*;

/// A Haswell-like hierarchy with split page-size arrays: 4K and 2M ITLBs, 4K/2M/1G DTLBs, and a
/// 4K+2M STLB, so a kernel touch of one size has arrays of other sizes to skip.
fn split_sizes(replacement: Replacement) -> TlbHierarchy {
    use PageSize::*;
    let specs = [
        spec("I4K", 1, Serves::Instruction, &[Size4K], 2, 2),
        spec("I2M", 1, Serves::Instruction, &[Size2M], 1, 2),
        spec("D4K", 1, Serves::Data, &[Size4K], 2, 2),
        spec("D2M", 1, Serves::Data, &[Size2M], 1, 2),
        spec("D1G", 1, Serves::Data, &[Size1G], 1, 2),
        spec("STLB", 2, Serves::Unified, &[Size4K, Size2M], 4, 2),
    ];
    TlbHierarchy::new(&specs, replacement, Inclusion::NonInclusive).unwrap()
}

/// A pseudo-random mix of user 4K accesses, kernel touches of fixed sizes, flushes and ASID
/// changes, as the engine makes them.
fn mixed_ops(n: usize) -> Vec<(u8, u64, u16)> {
    let mut x = 99u64;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 60) as u8, (x >> 20) % 12, (x >> 40) as u16 % 3 + 1)
        })
        .collect()
}

fn kernel_touch(op: u64) -> (u64, AccessKind, PageSize) {
    let base = 0xffff_ffff_8100_0000u64;
    match op % 4 {
        0 => (base + (op % 5) * M2, AccessKind::Fetch, PageSize::Size2M),
        1 => (0xffff_8880_0000_0000, AccessKind::Load, PageSize::Size1G),
        2 => (0xffff_c900_0000_0000 + (op % 3) * 5 * K, AccessKind::Store, PageSize::Size4K),
        _ => (base + 9 * M2, AccessKind::Load, PageSize::Size2M),
    }
}

#[test]
fn a_sized_lookup_does_what_the_full_lookup_does() {
    for replacement in [Replacement::Lru, Replacement::Plru] {
        for global in [false, true] {
            let (mut full, mut sized) = (split_sizes(replacement), split_sizes(replacement));
            for (kind, arg, asid) in mixed_ops(4000) {
                match kind {
                    0..=7 => {
                        let (va, k, size) = kernel_touch(arg);
                        let a = full.lookup_or_fill(0, at(va, k, asid, true), to(size, va >> 12, global));
                        let b =
                            sized.lookup_or_fill_sized(0, at(va, k, asid, true), to(size, va >> 12, global));
                        assert_eq!(a, b);
                    }
                    8..=13 => {
                        let va = arg * 7 * K;
                        assert_eq!(
                            peek(&full, va, asid).map(|p| p.1),
                            sized.peek_sized(0, va, asid, PageSize::Size4K).map(TlbPayload::pfn)
                        );
                        let a = full.lookup(0, at(va, AccessKind::Load, asid, false));
                        let b =
                            sized.lookup_sized(0, at(va, AccessKind::Load, asid, false), PageSize::Size4K);
                        assert_eq!(a, b);
                        if a == Lookup::Miss {
                            for t in [&mut full, &mut sized] {
                                t.fill(
                                    0,
                                    at(va, AccessKind::Load, asid, false),
                                    to(PageSize::Size4K, arg, false),
                                );
                            }
                        }
                    }
                    _ => {
                        assert_eq!(full.flush_asid(0, asid), sized.flush_asid(0, asid));
                    }
                }
            }
            let list = |t: &TlbHierarchy| t.entries(0).collect::<Vec<_>>();
            assert_eq!(list(&full), list(&sized));
            assert_eq!(full.walks(0), sized.walks(0));
            for (a, b) in full.views(0).iter().zip(sized.views(0)) {
                assert_eq!(a.counters, b.counters);
            }
        }
    }
}

#[test]
fn replaying_a_level_one_hit_is_the_hit() {
    // Two copies take the same operations, flushes included. At a kernel touch whose way (found
    // at an earlier touch of the page) still hits, one looks up and the other replays the way:
    // contents, later evictions and counters must agree. Where the way no longer hits, the
    // lookup must not be a level-1 hit in that way.
    for replacement in [Replacement::Lru, Replacement::Plru] {
        let (mut look, mut replay) = (split_sizes(replacement), split_sizes(replacement));
        let mut known: Vec<Option<L1Way>> = vec![None; 64];
        let (mut replays, mut stale) = (0, 0);
        for (kind, arg, asid) in mixed_ops(6000) {
            let asid = asid.min(2);
            if kind < 10 {
                let (va, k, size) = kernel_touch(arg);
                let slot = (arg % 64) as usize;
                let a = look.lookup_or_fill_sized(0, at(va, k, asid, true), to(size, va >> 12, false));
                match known[slot] {
                    Some(way) if replay.still_hits(0, &way, asid) => {
                        assert!(matches!(a, Lookup::Hit { level: 1, .. }), "a replayable way must hit");
                        replay.rehit(0, &way, k, true);
                        replays += 1;
                    }
                    other => {
                        stale += other.is_some() as u32;
                        replay.lookup_or_fill_sized(0, at(va, k, asid, true), to(size, va >> 12, false));
                    }
                }
                known[slot] = replay.l1_way(0, at(va, k, asid, true), size);
            } else if kind < 14 {
                let va = arg * 11 * K;
                for t in [&mut look, &mut replay] {
                    if t.lookup(0, at(va, AccessKind::Load, asid, false)) == Lookup::Miss {
                        t.fill(0, at(va, AccessKind::Load, asid, false), to(PageSize::Size4K, arg, false));
                    }
                }
            } else {
                assert_eq!(look.flush_asid(0, asid), replay.flush_asid(0, asid));
            }
        }
        assert!(replays > 100 && stale > 100, "replayed {replays}, found stale {stale}");
        let list = |t: &TlbHierarchy| t.entries(0).collect::<Vec<_>>();
        assert_eq!(list(&look), list(&replay));
        for (a, b) in look.views(0).iter().zip(replay.views(0)) {
            assert_eq!(a.counters, b.counters);
        }
    }
}

#[test]
fn filling_an_uncached_address_space_without_probes_is_the_lookup() {
    // Two copies take the same operations. A run of a path (distinct pages) looks every touch
    // up in one; in the other, a run that starts while nothing of the address space is cached
    // (just flushed, or never filled) skips the probes: contents and counters must agree.
    let path = [
        (0xffff_ffff_8100_0000u64, AccessKind::Fetch, PageSize::Size2M),
        (0xffff_8880_0000_0000, AccessKind::Load, PageSize::Size1G),
        (0xffff_c900_0000_0000, AccessKind::Store, PageSize::Size4K),
        (0xffff_ffff_8100_0000 + 9 * M2, AccessKind::Load, PageSize::Size2M),
    ];
    for replacement in [Replacement::Lru, Replacement::Plru] {
        let (mut look, mut skip) = (split_sizes(replacement), split_sizes(replacement));
        let mut skipped = 0;
        for (kind, arg, asid) in mixed_ops(6000) {
            if kind < 6 {
                let fresh = skip.uncached(0, asid);
                skipped += fresh as u32;
                for &(va, k, size) in &path[..(arg % 4 + 1) as usize] {
                    let t = to(size, va >> 12, false);
                    let a = look.lookup_or_fill_sized(0, at(va, k, asid, true), t);
                    if fresh {
                        assert_eq!(a, Lookup::Miss, "an uncached address space misses");
                        skip.miss_then_fill_sized(0, at(va, k, asid, true), t);
                    } else {
                        assert_eq!(a, skip.lookup_or_fill_sized(0, at(va, k, asid, true), t));
                    }
                }
            } else if kind < 12 {
                let va = arg * 13 * K;
                for t in [&mut look, &mut skip] {
                    if t.lookup(0, at(va, AccessKind::Load, asid, false)) == Lookup::Miss {
                        t.fill(0, at(va, AccessKind::Load, asid, false), to(PageSize::Size4K, arg, false));
                    }
                }
            } else {
                assert_eq!(look.flush_asid(0, asid), skip.flush_asid(0, asid));
            }
        }
        assert!(skipped > 100, "skipped the probes of {skipped} runs");
        let list = |t: &TlbHierarchy| t.entries(0).collect::<Vec<_>>();
        assert_eq!(list(&look), list(&skip));
        assert_eq!(look.walks(0), skip.walks(0));
        for (a, b) in look.views(0).iter().zip(skip.views(0)) {
            assert_eq!(a.counters, b.counters);
        }
    }
}

#[test]
fn a_remembered_way_knows_its_page() {
    // The way a kernel touch leaves at level 1 names its page (and only it) for its page size;
    // no way is remembered as the page at a kernel address.
    let mut t = split_sizes(Replacement::Lru);
    for (va, k, size) in (0..12).map(kernel_touch) {
        t.lookup_or_fill_sized(0, at(va, k, 1, true), to(size, va >> 12, false));
        let way = t.l1_way(0, at(va, k, 1, true), size).expect("at level 1 after its lookup");
        assert!(way.is_page(L1Way::page_key(va, size)), "{va:#x}");
        for other in [va + size.bytes(), va - size.bytes()] {
            assert!(!way.is_page(L1Way::page_key(other, size)));
        }
        let other_size = if size == PageSize::Size4K { PageSize::Size2M } else { PageSize::Size4K };
        assert!(!way.is_page(L1Way::page_key(va, other_size)));
        assert!(!L1Way::NONE.is_page(L1Way::page_key(va, size)));
    }
}
