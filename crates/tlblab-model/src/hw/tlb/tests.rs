use super::*;

const K: u64 = 4096;
const M2: u64 = 2 << 20;

fn spec(name: &str, level: u8, serves: Serves, sizes: &[PageSize], sets: u32, ways: u32) -> StructureSpec {
    StructureSpec {
        name: name.into(),
        level,
        serves,
        page_sizes: sizes.to_vec(),
        geometry: Geometry::new(sets, ways).unwrap(),
    }
}

fn unified(levels: &[(u32, u32)], replacement: Replacement, inclusion: Inclusion) -> TlbHierarchy {
    let specs: Vec<_> = levels
        .iter()
        .enumerate()
        .map(|(i, &(s, w))| {
            spec(&format!("L{}", i + 1), i as u8 + 1, Serves::Unified, &[PageSize::Size4K], s, w)
        })
        .collect();
    TlbHierarchy::new(&specs, replacement, inclusion).unwrap()
}

/// Translate with an identity page table, as `tlblab trace` does.
fn access(t: &mut TlbHierarchy, va: u64) -> Lookup {
    let r = t.lookup(va, AccessKind::Load, 0, false);
    if r == Lookup::Miss {
        t.fill(va, AccessKind::Load, 0, PageSize::Size4K, va >> 12, false);
    }
    r
}

fn present(t: &TlbHierarchy, array: usize) -> Vec<u64> {
    let mut v: Vec<u64> = t.arrays()[array].entries().map(|e| e.vpn).collect();
    v.sort();
    v
}

#[test]
fn lru_evicts_the_least_recently_used_way() {
    let mut t = unified(&[(1, 2)], Replacement::Lru, Inclusion::NonInclusive);
    for p in [1, 2, 1, 3] {
        access(&mut t, p * K);
    }
    assert_eq!(present(&t, 0), vec![1, 3]);
    assert!(matches!(access(&mut t, K), Lookup::Hit { level: 1, pfn: 1, .. }));
    assert_eq!(access(&mut t, 2 * K), Lookup::Miss);
}

#[test]
fn tree_plru_differs_from_lru_where_it_should() {
    // Fill A B C D into a 4-way set, touch A, bring in E. True LRU evicts B; tree-PLRU's tree
    // points at the other half of the set and evicts C.
    for (policy, evicted) in [(Replacement::Lru, 2), (Replacement::Plru, 3)] {
        let mut t = unified(&[(1, 4)], policy, Inclusion::NonInclusive);
        for p in [1, 2, 3, 4, 1, 5] {
            access(&mut t, p * K);
        }
        let mut want: Vec<u64> = vec![1, 2, 3, 4, 5].into_iter().filter(|&p| p != evicted).collect();
        want.sort();
        assert_eq!(present(&t, 0), want, "{policy:?}");
    }
}

#[test]
fn set_index_uses_the_low_vpn_bits() {
    let mut t = unified(&[(4, 1)], Replacement::Lru, Inclusion::NonInclusive);
    // Pages 0 and 4 share set 0 in a 4-set direct-mapped array; page 1 does not.
    access(&mut t, 0);
    access(&mut t, K);
    access(&mut t, 4 * K);
    assert_eq!(present(&t, 0), vec![1, 4]);
}

#[test]
fn non_inclusive_hit_in_the_stlb_refills_level_one() {
    let mut t = unified(&[(1, 1), (1, 2)], Replacement::Lru, Inclusion::NonInclusive);
    access(&mut t, K); // walk: L1 = {1}, L2 = {1}
    access(&mut t, 2 * K); // walk: L1 = {2}, L2 = {1, 2}
    assert!(matches!(access(&mut t, K), Lookup::Hit { level: 2, .. }));
    assert_eq!(present(&t, 0), vec![1]);
    assert_eq!(present(&t, 1), vec![1, 2]);
    let v = t.views();
    assert_eq!((v[0].counters.total_hits(), v[0].counters.total_misses()), (0, 3));
    assert_eq!((v[1].counters.total_hits(), v[1].counters.total_misses()), (1, 2));
    assert_eq!(t.total_walks(), 2);
}

#[test]
fn inclusive_eviction_back_invalidates_level_one() {
    for (inclusion, l1_after) in [(Inclusion::Inclusive, vec![2]), (Inclusion::NonInclusive, vec![1, 2])] {
        let mut t = unified(&[(1, 2), (1, 1)], Replacement::Lru, inclusion);
        access(&mut t, K);
        access(&mut t, 2 * K); // the 1-entry STLB evicts page 1
        assert_eq!(present(&t, 0), l1_after, "{inclusion:?}");
    }
}

#[test]
fn exclusive_levels_swap_entries() {
    let mut t = unified(&[(1, 1), (1, 2)], Replacement::Lru, Inclusion::Exclusive);
    access(&mut t, K); // walk fills L1 only
    assert_eq!((present(&t, 0), present(&t, 1)), (vec![1], vec![]));
    access(&mut t, 2 * K); // L1 victim 1 moves down
    assert_eq!((present(&t, 0), present(&t, 1)), (vec![2], vec![1]));
    assert!(matches!(access(&mut t, K), Lookup::Hit { level: 2, .. }));
    assert_eq!((present(&t, 0), present(&t, 1)), (vec![1], vec![2]));
}

#[test]
fn entries_are_tagged_by_asid_and_global_entries_match_every_asid() {
    let mut t = unified(&[(4, 4)], Replacement::Lru, Inclusion::NonInclusive);
    t.fill(K, AccessKind::Load, 1, PageSize::Size4K, 7, false);
    t.fill(2 * K, AccessKind::Load, 1, PageSize::Size4K, 8, true);
    assert!(matches!(t.lookup(K, AccessKind::Load, 1, false), Lookup::Hit { pfn: 7, .. }));
    assert_eq!(t.lookup(K, AccessKind::Load, 2, false), Lookup::Miss);
    assert!(matches!(t.lookup(2 * K, AccessKind::Load, 2, true), Lookup::Hit { pfn: 8, .. }));
}

#[test]
fn invlpg_drops_the_address_in_every_page_size_and_global_entries() {
    let specs = [
        spec("D4K", 1, Serves::Unified, &[PageSize::Size4K], 4, 4),
        spec("D2M", 1, Serves::Unified, &[PageSize::Size2M], 1, 4),
        spec("STLB", 2, Serves::Unified, &[PageSize::Size4K, PageSize::Size2M], 8, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    let va = 5 * M2 + 3 * K;
    t.fill(va, AccessKind::Load, 1, PageSize::Size2M, 100, false);
    t.fill(va, AccessKind::Load, 2, PageSize::Size4K, 200, false);
    t.fill(va, AccessKind::Load, 3, PageSize::Size4K, 300, true);
    t.fill(va + K, AccessKind::Load, 1, PageSize::Size4K, 400, false);
    // INVLPG in asid 1: drops asid 1's 2M entry (both levels) and the global 4K one, keeps asid 2's
    // and the neighbouring page.
    let n = t.invlpg(va + 17, 1);
    assert_eq!(n, 4);
    assert_eq!(t.lookup(va, AccessKind::Load, 1, false), Lookup::Miss);
    assert!(matches!(t.lookup(va, AccessKind::Load, 2, false), Lookup::Hit { pfn: 200, .. }));
    assert!(matches!(t.lookup(va + K, AccessKind::Load, 1, false), Lookup::Hit { pfn: 400, .. }));
    assert_eq!(t.flushes.invlpg, 1);
    assert_eq!(t.flushes.entries_invalidated, 4);
}

#[test]
fn full_flushes_respect_asid_and_global_bits() {
    let mk = || {
        let mut t = unified(&[(4, 4), (16, 4)], Replacement::Lru, Inclusion::NonInclusive);
        t.fill(K, AccessKind::Load, 1, PageSize::Size4K, 1, false);
        t.fill(2 * K, AccessKind::Load, 2, PageSize::Size4K, 2, false);
        t.fill(3 * K, AccessKind::Load, 1, PageSize::Size4K, 3, true);
        t
    };
    let asids = |t: &TlbHierarchy| {
        let mut v: Vec<(u64, u16, bool)> = t.entries().map(|(_, e)| (e.vpn, e.asid, e.global)).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut t = mk();
    assert_eq!(t.flush_asid(1), 2);
    assert_eq!(asids(&t), vec![(2, 2, false), (3, 0, true)]);
    let mut t = mk();
    assert_eq!(t.flush_all_asids(), 4);
    assert_eq!(asids(&t), vec![(3, 0, true)]);
    let mut t = mk();
    assert_eq!(t.flush_global(), 6);
    assert_eq!(asids(&t), vec![]);
}

#[test]
fn counters_split_by_access_kind_and_privilege() {
    let specs = [
        spec("ITLB", 1, Serves::Instruction, &[PageSize::Size4K], 1, 4),
        spec("DTLB", 1, Serves::Data, &[PageSize::Size4K], 1, 4),
        spec("STLB", 2, Serves::Unified, &[PageSize::Size4K], 4, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    let kva = 0xffff_8880_0000_0000u64;
    for (va, kind, kernel) in [
        (K, AccessKind::Fetch, false),
        (K, AccessKind::Load, false), // ITLB filled, DTLB not: L1 miss, STLB hit
        (kva, AccessKind::Store, true),
        (kva, AccessKind::Load, true),
    ] {
        if t.lookup(va, kind, 0, kernel) == Lookup::Miss {
            t.fill(va, kind, 0, PageSize::Size4K, 9, false);
        }
    }
    let names: Vec<&str> = t.views().iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["ITLB", "DTLB", "STLB"]);
    let (i, d, s) = (&t.views()[0].counters, &t.views()[1].counters, &t.views()[2].counters);
    assert_eq!(i.misses[AccessKind::Fetch as usize], [1, 0]);
    assert_eq!(d.misses[AccessKind::Load as usize], [1, 0]);
    assert_eq!(d.misses[AccessKind::Store as usize], [0, 1]);
    assert_eq!(d.hits[AccessKind::Load as usize], [0, 1]);
    assert_eq!(s.hits[AccessKind::Load as usize], [1, 0]);
    assert_eq!(t.walks[AccessKind::Fetch as usize], [1, 0]);
    assert_eq!(t.walks[AccessKind::Store as usize], [0, 1]);
}

#[test]
fn split_load_and_store_arrays_serve_their_own_accesses() {
    let specs = [
        spec("ITLB", 1, Serves::Instruction, &[PageSize::Size4K], 1, 4),
        spec("Load DTLB", 1, Serves::Load, &[PageSize::Size4K], 1, 4),
        spec("Store DTLB", 1, Serves::Store, &[PageSize::Size4K], 1, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    t.fill(K, AccessKind::Store, 0, PageSize::Size4K, 1, false);
    assert_eq!(t.lookup(K, AccessKind::Load, 0, false), Lookup::Miss);
    assert!(matches!(t.lookup(K, AccessKind::Store, 0, false), Lookup::Hit { level: 1, .. }));
    assert_eq!(t.views().len(), 2, "load and store arrays share the L1 DTLB view");
    assert_eq!(t.views()[1].name, "L1 DTLB");
}

#[test]
fn a_page_size_missing_from_level_one_is_served_by_the_stlb() {
    let specs = [
        spec("DTLB", 1, Serves::Unified, &[PageSize::Size4K], 4, 4),
        spec("STLB", 2, Serves::Unified, &[PageSize::Size4K, PageSize::Size1G], 4, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    let va = 3 << 30;
    t.fill(va, AccessKind::Load, 0, PageSize::Size1G, 5, false);
    assert!(matches!(
        t.lookup(va + 12345, AccessKind::Load, 0, false),
        Lookup::Hit { level: 2, size: PageSize::Size1G, .. }
    ));
}

#[test]
fn overlapping_structures_are_rejected() {
    let specs = [
        spec("A", 1, Serves::Data, &[PageSize::Size4K], 1, 4),
        spec("B", 1, Serves::Load, &[PageSize::Size4K], 1, 4),
    ];
    let e = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap_err();
    assert!(e.contains("`A` and `B`"), "{e}");
}

#[test]
fn geometry_rejects_non_power_of_two_sets() {
    assert!(Geometry::new(3, 4).unwrap_err().contains("power of two"));
    assert!(Geometry::new(4, 0).is_err());
    assert_eq!(Geometry::new(16, 4).unwrap().entries(), 64);
}

/// A deliberately naive LRU TLB: a recency-ordered list per set.
struct ReferenceLru {
    sets: Vec<Vec<u64>>,
    ways: usize,
}

impl ReferenceLru {
    fn new(sets: usize, ways: usize) -> Self {
        ReferenceLru { sets: vec![Vec::new(); sets], ways }
    }
    /// Returns hit; always leaves `vpn` most recent.
    fn access(&mut self, vpn: u64) -> bool {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(vpn % n) as usize];
        let hit = match set.iter().position(|&v| v == vpn) {
            Some(i) => {
                set.remove(i);
                true
            }
            None => {
                if set.len() == self.ways {
                    set.remove(0);
                }
                false
            }
        };
        set.push(vpn);
        hit
    }
}

#[test]
fn two_level_non_inclusive_lru_matches_a_naive_reference() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for &(l1, l2) in &[((1, 4), (16, 4)), ((16, 4), (128, 8)), ((4, 2), (8, 4)), ((1, 64), (256, 8))] {
        let mut t = unified(&[l1, l2], Replacement::Lru, Inclusion::NonInclusive);
        let mut r1 = ReferenceLru::new(l1.0 as usize, l1.1 as usize);
        let mut r2 = ReferenceLru::new(l2.0 as usize, l2.1 as usize);
        let (mut h1, mut h2, mut walks) = (0u64, 0u64, 0u64);
        for i in 0..200_000u64 {
            // A hot set plus a cold tail, so both levels see hits and misses.
            let page = if rand() % 4 == 0 { rand() % 4096 } else { rand() % 96 + (i / 50_000) * 7 };
            if r1.access(page) {
                h1 += 1;
            } else if r2.access(page) {
                h2 += 1;
            } else {
                walks += 1;
            }
            access(&mut t, page * K);
        }
        let v = t.views();
        assert_eq!(v[0].counters.total_hits(), h1, "{l1:?}+{l2:?} L1 hits");
        assert_eq!(v[1].counters.total_hits(), h2, "{l1:?}+{l2:?} L2 hits");
        assert_eq!(t.total_walks(), walks, "{l1:?}+{l2:?} walks");
    }
}
