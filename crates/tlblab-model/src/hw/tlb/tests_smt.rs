//! SMT: a core of two logical processors (the module docs say what siblings share and what they
//! do not).

use super::tests::{at, spec, to, K};
use super::*;

/// A core of two logical processors with one L1 (per thread) and one L2 (2 sets x 2 ways,
/// shared iff `l2_shared`).
fn smt_core(l2_shared: bool) -> TlbHierarchy {
    let specs = [
        spec("L1", 1, Serves::Unified, &[PageSize::Size4K], 1, 1),
        spec("L2", 2, Serves::Unified, &[PageSize::Size4K], 2, 2),
    ];
    TlbHierarchy::new_core(&specs, &[false, l2_shared], 2, Replacement::Lru, Inclusion::NonInclusive).unwrap()
}

/// `access` on logical processor `lp` in address space `asid`.
fn access_on(t: &mut TlbHierarchy, lp: usize, va: u64, asid: u16) -> Lookup {
    t.lookup_or_fill(lp, at(va, AccessKind::Load, asid, false), to(PageSize::Size4K, va >> 12, false))
}

fn l2_pages(t: &TlbHierarchy, lp: usize) -> Vec<u64> {
    let mut v: Vec<u64> = t.arrays(lp)[1].entries().map(|e| e.vpn).collect();
    v.sort();
    v
}

#[test]
fn siblings_sharing_a_set_evict_each_other() {
    // Pages 0 and 2 share L2 set 0. Alone, a thread keeps both there (2 ways).
    let mut shared = smt_core(true);
    for va in [0, 2 * K] {
        access_on(&mut shared, 0, va, 1);
    }
    assert_eq!(l2_pages(&shared, 0), [0, 2]);
    // The sibling fills two pages of the same set: the set's one LRU order evicts both of
    // thread 0's entries, so thread 0 walks again for page 0 (L1 holds only page 2).
    for va in [4 * K, 6 * K] {
        assert_eq!(access_on(&mut shared, 1, va, 1), Lookup::Miss);
    }
    assert_eq!(l2_pages(&shared, 0), Vec::<u64>::new(), "thread 1's fills took the set");
    assert_eq!(l2_pages(&shared, 1), [4, 6]);
    assert_eq!(access_on(&mut shared, 0, 0, 1), Lookup::Miss);
    assert_eq!(shared.walks(0)[AccessKind::Load as usize][0], 3);
    // Per-thread L2s: the same accesses leave thread 0's set alone.
    let mut private = smt_core(false);
    for (lp, va) in [(0, 0), (0, 2 * K), (1, 4 * K), (1, 6 * K)] {
        access_on(&mut private, lp, va, 1);
    }
    assert_eq!(l2_pages(&private, 0), [0, 2]);
    assert_eq!(
        access_on(&mut private, 0, 0, 1),
        Lookup::Hit { level: 2, payload: TlbPayload::new(0, true), size: PageSize::Size4K }
    );
}

#[test]
fn a_sibling_never_hits_the_other_threads_entries() {
    // Same page, same PCID, same global page: each logical processor walks for its own.
    let mut t = smt_core(true);
    assert_eq!(access_on(&mut t, 0, 8 * K, 3), Lookup::Miss);
    assert_eq!(access_on(&mut t, 1, 8 * K, 3), Lookup::Miss);
    assert!(matches!(access_on(&mut t, 1, 8 * K, 3), Lookup::Hit { level: 1, .. }));
    let g = at(16 * K, AccessKind::Load, 0, true);
    t.fill(0, g, to(PageSize::Size4K, 16, true));
    assert!(t.peek(0, 16 * K, 5).is_some(), "a global entry serves every address space of its thread");
    assert!(t.peek(1, 16 * K, 5).is_none(), "but not the sibling");
    assert_eq!(t.lookup(1, g), Lookup::Miss);
    // Each sees only its own entries.
    assert!(t.entries(0).all(|(_, e)| e.vpn != 8 || e.asid == 3));
    assert_eq!(t.entries(1).filter(|(_, e)| e.global).count(), 0);
}

#[test]
fn a_flush_on_one_sibling_spares_the_others_entries() {
    for l2_shared in [true, false] {
        // Room for both threads' entries: what leaves is what the flushes drop.
        let specs = [
            spec("L1", 1, Serves::Unified, &[PageSize::Size4K], 1, 1),
            spec("L2", 2, Serves::Unified, &[PageSize::Size4K], 4, 4),
        ];
        let mut t =
            TlbHierarchy::new_core(&specs, &[false, l2_shared], 2, Replacement::Lru, Inclusion::NonInclusive)
                .unwrap();
        for lp in 0..2 {
            for va in [0, K, 2 * K] {
                access_on(&mut t, lp, va, 1);
            }
            t.fill(lp, at(9 * K, AccessKind::Load, 1, true), to(PageSize::Size4K, 9, true));
        }
        let theirs: Vec<_> = t.entries(1).collect();
        assert!(theirs.len() >= 3);
        // INVLPG, a CR3 write (one PCID), INVPCID all-context, and a global flush, on thread 0.
        assert!(t.invlpg(0, K, 1) > 0);
        assert!(t.peek(0, K, 1).is_none() && t.peek(1, K, 1).is_some());
        assert!(t.flush_asid(0, 1) > 0);
        assert!(!t.may_hold(0, 1) && t.may_hold(1, 1));
        t.flush_all_asids(0);
        assert!(t.flush_global(0) > 0, "thread 0's global entry");
        assert_eq!(t.entries(0).count(), 0);
        assert_eq!(t.entries(1).collect::<Vec<_>>(), theirs, "l2_shared {l2_shared}");
        for va in [0, 2 * K, 9 * K] {
            assert!(t.peek(1, va, 1).is_some(), "l2_shared {l2_shared}: va {va:#x}");
        }
        assert_eq!(t.flushes(1), &FlushCounters::default());
    }
}

#[test]
fn per_thread_levels_and_lone_threads_are_unaffected_by_a_sibling() {
    // Thread 0's view of a core whose structures are all per-thread is a lone hierarchy's, step
    // for step, whatever the sibling does; and a one-thread core is `new`.
    let specs = [
        spec("L1", 1, Serves::Unified, &[PageSize::Size4K], 2, 2),
        spec("L2", 2, Serves::Unified, &[PageSize::Size4K], 4, 2),
    ];
    let mut lone = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    let mut core =
        TlbHierarchy::new_core(&specs, &[false, false], 2, Replacement::Lru, Inclusion::NonInclusive)
            .unwrap();
    let mut x = 7u64;
    for _ in 0..2000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let va = (x >> 33) % 24 * K;
        let asid = (x >> 20) as u16 % 3;
        match (x >> 60) % 8 {
            0 => {
                lone.invlpg(0, va, asid);
                core.invlpg(0, va, asid);
            }
            1 => {
                lone.flush_asid(0, asid);
                core.flush_asid(0, asid);
            }
            2 | 3 => {
                core.flush_asid(1, asid);
                access_on(&mut core, 1, va, asid);
            }
            _ => assert_eq!(access_on(&mut lone, 0, va, asid), access_on(&mut core, 0, va, asid)),
        }
    }
    let list = |t: &TlbHierarchy| t.entries(0).collect::<Vec<_>>();
    assert_eq!(list(&lone), list(&core));
    assert_eq!(lone.walks(0), core.walks(0));
    assert_eq!(lone.flushes(0), core.flushes(0));
}

#[test]
fn a_core_needs_fewer_entries_than_ids() {
    let big = [spec("L1", 1, Serves::Unified, &[PageSize::Size4K], 512, 8)];
    assert!(TlbHierarchy::new_core(&big, &[true], 2, Replacement::Lru, Inclusion::NonInclusive).is_err());
    assert!(TlbHierarchy::new_core(&big, &[true], 1, Replacement::Lru, Inclusion::NonInclusive).is_ok());
}
