use super::*;

pub(super) const K: u64 = 4096;
pub(super) const M2: u64 = 2 << 20;

pub(super) fn spec(
    name: &str,
    level: u8,
    serves: Serves,
    sizes: &[PageSize],
    sets: u32,
    ways: u32,
) -> StructureSpec {
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

/// The access of `va` for `kind` in address space `asid`, counted as kernel iff `kernel`.
pub(super) fn at(va: u64, kind: AccessKind, asid: u16, kernel: bool) -> Access {
    Access { va, kind, asid, kernel }
}

/// A translation of page size `size` to frame `pfn` (writable).
pub(super) fn to(size: PageSize, pfn: u64, global: bool) -> Translation {
    Translation { size, payload: TlbPayload::new(pfn, true), global }
}

/// [`TlbHierarchy::peek`] with the frame of the payload.
pub(super) fn peek(t: &TlbHierarchy, va: u64, asid: u16) -> Option<(PageSize, u64)> {
    t.peek(0, va, asid).map(|(size, payload)| (size, payload.pfn()))
}

/// Translate with an identity page table, as `tlblab trace` does.
fn access(t: &mut TlbHierarchy, va: u64) -> Lookup {
    let r = t.lookup(0, at(va, AccessKind::Load, 0, false));
    if r == Lookup::Miss {
        t.fill(0, at(va, AccessKind::Load, 0, false), to(PageSize::Size4K, va >> 12, false));
    }
    r
}

fn present(t: &TlbHierarchy, array: usize) -> Vec<u64> {
    let mut v: Vec<u64> = t.arrays(0)[array].entries().map(|e| e.vpn).collect();
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
    assert!(matches!(access(&mut t, K), Lookup::Hit { level: 1, payload, .. } if payload.pfn() == 1));
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
    let v = t.views(0);
    assert_eq!((v[0].counters.total_hits(), v[0].counters.total_misses()), (0, 3));
    assert_eq!((v[1].counters.total_hits(), v[1].counters.total_misses()), (1, 2));
    assert_eq!(t.total_walks(0), 2);
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
fn exclusive_levels_keep_a_page_size_level_one_cannot_hold() {
    // Level 1 holds 4K pages only: a 2M walk fills level 2, and a hit there leaves it in place
    // (a walk used to fill nothing and a hit used to drop the entry: found by proptests.rs).
    let specs = [
        spec("L1", 1, Serves::Unified, &[PageSize::Size4K], 1, 1),
        spec("L2", 2, Serves::Unified, &[PageSize::Size4K, PageSize::Size2M], 1, 2),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::Exclusive).unwrap();
    let a = at(M2, AccessKind::Load, 1, false);
    assert_eq!(t.lookup_or_fill(0, a, to(PageSize::Size2M, 9, false)), Lookup::Miss);
    for _ in 0..2 {
        assert!(matches!(t.lookup(0, a), Lookup::Hit { level: 2, payload, .. } if payload.pfn() == 9));
    }
    // A level-1 victim of size 4K still moves to level 2 beside it.
    access_in(&mut t, K, 1);
    access_in(&mut t, 2 * K, 1);
    assert_eq!(present(&t, 0), vec![2]);
    assert_eq!(present(&t, 1), vec![1, 1]);
}

fn access_in(t: &mut TlbHierarchy, va: u64, asid: u16) -> Lookup {
    t.lookup_or_fill(0, at(va, AccessKind::Load, asid, false), to(PageSize::Size4K, va >> 12, false))
}

#[test]
fn entries_are_tagged_by_asid_and_global_entries_match_every_asid() {
    let mut t = unified(&[(4, 4)], Replacement::Lru, Inclusion::NonInclusive);
    t.fill(0, at(K, AccessKind::Load, 1, false), to(PageSize::Size4K, 7, false));
    t.fill(0, at(2 * K, AccessKind::Load, 1, false), to(PageSize::Size4K, 8, true));
    assert!(
        matches!(t.lookup(0, at(K, AccessKind::Load, 1, false)), Lookup::Hit { payload, .. } if payload.pfn() == 7)
    );
    assert_eq!(t.lookup(0, at(K, AccessKind::Load, 2, false)), Lookup::Miss);
    assert!(
        matches!(t.lookup(0, at(2 * K, AccessKind::Load, 2, true)), Lookup::Hit { payload, .. } if payload.pfn() == 8)
    );
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
    t.fill(0, at(va, AccessKind::Load, 1, false), to(PageSize::Size2M, 100, false));
    t.fill(0, at(va, AccessKind::Load, 2, false), to(PageSize::Size4K, 200, false));
    t.fill(0, at(va, AccessKind::Load, 3, false), to(PageSize::Size4K, 300, true));
    t.fill(0, at(va + K, AccessKind::Load, 1, false), to(PageSize::Size4K, 400, false));
    // INVLPG in asid 1: drops asid 1's 2M entry (both levels) and the global 4K one, keeps asid 2's
    // and the neighbouring page.
    let n = t.invlpg(0, va + 17, 1);
    assert_eq!(n, 4);
    assert_eq!(t.lookup(0, at(va, AccessKind::Load, 1, false)), Lookup::Miss);
    assert!(
        matches!(t.lookup(0, at(va, AccessKind::Load, 2, false)), Lookup::Hit { payload, .. } if payload.pfn() == 200)
    );
    assert!(
        matches!(t.lookup(0, at(va + K, AccessKind::Load, 1, false)), Lookup::Hit { payload, .. } if payload.pfn() == 400)
    );
    assert_eq!(t.flushes(0).invlpg, 1);
    assert_eq!(t.flushes(0).entries_invalidated, 4);
}

#[test]
fn full_flushes_respect_asid_and_global_bits() {
    let mk = || {
        let mut t = unified(&[(4, 4), (16, 4)], Replacement::Lru, Inclusion::NonInclusive);
        t.fill(0, at(K, AccessKind::Load, 1, false), to(PageSize::Size4K, 1, false));
        t.fill(0, at(2 * K, AccessKind::Load, 2, false), to(PageSize::Size4K, 2, false));
        t.fill(0, at(3 * K, AccessKind::Load, 1, false), to(PageSize::Size4K, 3, true));
        t
    };
    let asids = |t: &TlbHierarchy| {
        let mut v: Vec<(u64, u16, bool)> = t.entries(0).map(|(_, e)| (e.vpn, e.asid, e.global)).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut t = mk();
    assert_eq!(t.flush_asid(0, 1), 2);
    assert_eq!(asids(&t), vec![(2, 2, false), (3, 0, true)]);
    let mut t = mk();
    assert_eq!(t.flush_all_asids(0), 4);
    assert_eq!(asids(&t), vec![(3, 0, true)]);
    let mut t = mk();
    assert_eq!(t.flush_global(0), 6);
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
        if t.lookup(0, at(va, kind, 0, kernel)) == Lookup::Miss {
            t.fill(0, at(va, kind, 0, false), to(PageSize::Size4K, 9, false));
        }
    }
    let names: Vec<&str> = t.views(0).iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["ITLB", "DTLB", "STLB"]);
    let (i, d, s) = (&t.views(0)[0].counters, &t.views(0)[1].counters, &t.views(0)[2].counters);
    assert_eq!(i.misses[AccessKind::Fetch as usize], [1, 0]);
    assert_eq!(d.misses[AccessKind::Load as usize], [1, 0]);
    assert_eq!(d.misses[AccessKind::Store as usize], [0, 1]);
    assert_eq!(d.hits[AccessKind::Load as usize], [0, 1]);
    assert_eq!(s.hits[AccessKind::Load as usize], [1, 0]);
    assert_eq!(t.walks(0)[AccessKind::Fetch as usize], [1, 0]);
    assert_eq!(t.walks(0)[AccessKind::Store as usize], [0, 1]);
}

#[test]
fn split_load_and_store_arrays_serve_their_own_accesses() {
    let specs = [
        spec("ITLB", 1, Serves::Instruction, &[PageSize::Size4K], 1, 4),
        spec("Load DTLB", 1, Serves::Load, &[PageSize::Size4K], 1, 4),
        spec("Store DTLB", 1, Serves::Store, &[PageSize::Size4K], 1, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    t.fill(0, at(K, AccessKind::Store, 0, false), to(PageSize::Size4K, 1, false));
    assert_eq!(t.lookup(0, at(K, AccessKind::Load, 0, false)), Lookup::Miss);
    assert!(matches!(t.lookup(0, at(K, AccessKind::Store, 0, false)), Lookup::Hit { level: 1, .. }));
    assert_eq!(t.views(0).len(), 2, "load and store arrays share the L1 DTLB view");
    assert_eq!(t.views(0)[1].name, "L1 DTLB");
}

#[test]
fn a_page_size_missing_from_level_one_is_served_by_the_stlb() {
    let specs = [
        spec("DTLB", 1, Serves::Unified, &[PageSize::Size4K], 4, 4),
        spec("STLB", 2, Serves::Unified, &[PageSize::Size4K, PageSize::Size1G], 4, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    let va = 3 << 30;
    t.fill(0, at(va, AccessKind::Load, 0, false), to(PageSize::Size1G, 5, false));
    assert!(matches!(
        t.lookup(0, at(va + 12345, AccessKind::Load, 0, false)),
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
        let v = t.views(0);
        assert_eq!(v[0].counters.total_hits(), h1, "{l1:?}+{l2:?} L1 hits");
        assert_eq!(v[1].counters.total_hits(), h2, "{l1:?}+{l2:?} L2 hits");
        assert_eq!(t.total_walks(0), walks, "{l1:?}+{l2:?} walks");
    }
}

/// One entry of [`ReferenceTlb`]: a global entry has asid 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct RefEntry {
    vpn: u64,
    asid: u16,
    global: bool,
    pfn: u64,
}

/// A deliberately naive non-inclusive LRU hierarchy of unified 4K levels with address spaces and
/// global entries: per set a list, least recently used first; invalidation removes from the list.
///
/// A translation is keyed by (vpn, asid), a global one with asid 0: a fill replaces an entry of
/// the same key, global or not (as the hardware model's tags do).
struct ReferenceTlb {
    /// Per level: sets, each least recently used first.
    levels: Vec<Vec<Vec<RefEntry>>>,
    ways: Vec<usize>,
}

impl ReferenceTlb {
    fn new(levels: &[(u32, u32)]) -> Self {
        ReferenceTlb {
            levels: levels.iter().map(|&(s, _)| vec![Vec::new(); s as usize]).collect(),
            ways: levels.iter().map(|&(_, w)| w as usize).collect(),
        }
    }

    fn set(&mut self, level: usize, vpn: u64) -> &mut Vec<RefEntry> {
        let sets = &mut self.levels[level];
        let n = sets.len() as u64;
        &mut sets[(vpn % n) as usize]
    }

    /// The most recently used entry of `level` translating `vpn` in `asid`, made most recent.
    fn probe(&mut self, level: usize, vpn: u64, asid: u16) -> Option<RefEntry> {
        let set = self.set(level, vpn);
        let i = set.iter().rposition(|e| e.vpn == vpn && (e.global || e.asid == asid))?;
        let e = set.remove(i);
        set.push(e);
        Some(e)
    }

    fn insert(&mut self, level: usize, e: RefEntry) {
        let ways = self.ways[level];
        let set = self.set(level, e.vpn);
        if let Some(i) = set.iter().position(|x| x.vpn == e.vpn && x.asid == e.asid) {
            set.remove(i);
        } else if set.len() == ways {
            set.remove(0);
        }
        set.push(e);
    }

    /// Returns the level that hit (1-based) and the pfn, copying a hit into the levels above.
    fn lookup(&mut self, vpn: u64, asid: u16) -> Option<(u8, u64)> {
        for level in 0..self.levels.len() {
            if let Some(e) = self.probe(level, vpn, asid) {
                for inner in (0..level).rev() {
                    self.insert(inner, e);
                }
                return Some((level as u8 + 1, e.pfn));
            }
        }
        None
    }

    fn fill(&mut self, vpn: u64, asid: u16, pfn: u64, global: bool) {
        let e = RefEntry { vpn, asid: if global { 0 } else { asid }, global, pfn };
        for level in (0..self.levels.len()).rev() {
            self.insert(level, e);
        }
    }

    /// What a lookup would return, without touching recency.
    fn peek(&self, vpn: u64, asid: u16) -> Option<u64> {
        self.levels.iter().find_map(|sets| {
            let set = &sets[(vpn % sets.len() as u64) as usize];
            set.iter().rev().find(|e| e.vpn == vpn && (e.global || e.asid == asid)).map(|e| e.pfn)
        })
    }

    fn remove(&mut self, mut drop: impl FnMut(&RefEntry) -> bool) -> u64 {
        let mut n = 0;
        for set in self.levels.iter_mut().flatten() {
            let before = set.len();
            set.retain(|e| !drop(e));
            n += (before - set.len()) as u64;
        }
        n
    }

    fn entries(&self) -> Vec<(usize, RefEntry)> {
        let mut v: Vec<_> = self
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, sets)| sets.iter().flatten().map(move |e| (l, *e)))
            .collect();
        v.sort();
        v
    }
}

fn hier_entries(t: &TlbHierarchy) -> Vec<(usize, RefEntry)> {
    let mut v: Vec<_> = t
        .entries(0)
        .map(|(i, e)| (i, RefEntry { vpn: e.vpn, asid: e.asid, global: e.global, pfn: e.payload.pfn() }))
        .collect();
    v.sort();
    v
}

/// Drives the hierarchy and [`ReferenceTlb`] with one long random mix of lookups, fills (several
/// address spaces, some global), INVLPG and the three full flushes, comparing every result, the
/// flush counts and now and then the whole contents. ASID flushes are frequent enough that the
/// internal ids run out and get purged several times.
#[test]
fn asids_globals_and_flushes_match_a_naive_reference() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for levels in [&[(1, 4)][..], &[(4, 4), (16, 8)], &[(2, 2), (8, 3)]] {
        let mut t = unified(levels, Replacement::Lru, Inclusion::NonInclusive);
        let mut r = ReferenceTlb::new(levels);
        let mut invalidated = 0;
        for i in 0..300_000u32 {
            // A few busy address spaces (0 included, whose entries share keys with global ones)
            // and a tail over the whole 12-bit space.
            let asid = if rand(10) == 0 { rand(MAX_ASID as u64 + 1) as u16 } else { rand(5) as u16 };
            let vpn = rand(48);
            let va = vpn * K + rand(K);
            let global = rand(12) == 0;
            let pfn = rand(1 << 20);
            let ctx = || format!("{levels:?} op {i}");
            match rand(100) {
                0..=39 => {
                    let got = match t.lookup_or_fill(
                        0,
                        at(va, AccessKind::Load, asid, false),
                        to(PageSize::Size4K, pfn, global),
                    ) {
                        Lookup::Hit { level, payload, size } => {
                            assert_eq!(size, PageSize::Size4K);
                            Some((level, payload.pfn()))
                        }
                        Lookup::Miss => None,
                    };
                    let want = r.lookup(vpn, asid);
                    if want.is_none() {
                        r.fill(vpn, asid, pfn, global);
                    }
                    assert_eq!(got, want, "lookup_or_fill {}", ctx());
                }
                40..=59 => {
                    let got = match t.lookup(0, at(va, AccessKind::Load, asid, false)) {
                        Lookup::Hit { level, payload, .. } => Some((level, payload.pfn())),
                        Lookup::Miss => None,
                    };
                    assert_eq!(got, r.lookup(vpn, asid), "lookup {}", ctx());
                }
                60..=67 => {
                    t.fill(0, at(va, AccessKind::Load, asid, false), to(PageSize::Size4K, pfn, global));
                    r.fill(vpn, asid, pfn, global);
                }
                68..=75 => {
                    let n = r.remove(|e| e.vpn == vpn && (e.global || e.asid == asid));
                    assert_eq!(t.invlpg(0, va, asid), n, "invlpg {}", ctx());
                    invalidated += n;
                }
                76..=93 => {
                    let n = r.remove(|e| !e.global && e.asid == asid);
                    assert_eq!(t.flush_asid(0, asid), n, "flush_asid {}", ctx());
                    invalidated += n;
                }
                94 => {
                    let n = r.remove(|e| !e.global);
                    assert_eq!(t.flush_all_asids(0), n, "flush_all_asids {}", ctx());
                    invalidated += n;
                }
                95 if rand(500) == 0 => {
                    let n = r.remove(|_| true);
                    assert_eq!(t.flush_global(0), n, "flush_global {}", ctx());
                    invalidated += n;
                }
                _ => {
                    let got = peek(&t, va, asid);
                    assert_eq!(got, r.peek(vpn, asid).map(|pfn| (PageSize::Size4K, pfn)), "peek {}", ctx());
                }
            }
            if i % 251 == 0 {
                assert_eq!(hier_entries(&t), r.entries(), "entries {}", ctx());
            }
        }
        assert_eq!(hier_entries(&t), r.entries());
        assert_eq!(t.flushes(0).entries_invalidated, invalidated);
        assert!(t.ids.purges >= 3, "{levels:?}: only {} id purges", t.ids.purges);
    }
}

#[test]
fn peek_reports_what_a_lookup_would_find_without_touching_anything() {
    let specs = [
        spec("D4K", 1, Serves::Unified, &[PageSize::Size4K], 4, 4),
        spec("STLB", 2, Serves::Unified, &[PageSize::Size4K, PageSize::Size2M], 8, 4),
    ];
    let mut t = TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap();
    assert_eq!(peek(&t, K, 1), None);
    t.fill(0, at(K, AccessKind::Load, 1, false), to(PageSize::Size4K, 11, false));
    t.fill(0, at(5 * M2, AccessKind::Load, 1, false), to(PageSize::Size2M, 22, false));
    t.fill(0, at(9 * K, AccessKind::Load, 3, false), to(PageSize::Size4K, 33, true));
    let before =
        (t.views(0).iter().map(|v| v.counters.clone()).collect::<Vec<_>>(), t.walks(0), t.flushes(0).clone());
    assert_eq!(peek(&t, K + 5, 1), Some((PageSize::Size4K, 11)));
    assert_eq!(peek(&t, K, 2), None, "another address space");
    assert_eq!(peek(&t, 5 * M2 + 7 * K, 1), Some((PageSize::Size2M, 22)), "only level 2 holds 2M pages");
    assert_eq!(peek(&t, 9 * K, 7), Some((PageSize::Size4K, 33)), "global entries match every address space");
    assert_eq!(peek(&t, 9 * K, 0), Some((PageSize::Size4K, 33)));
    let after =
        (t.views(0).iter().map(|v| v.counters.clone()).collect::<Vec<_>>(), t.walks(0), t.flushes(0).clone());
    assert_eq!(before, after, "peek counts nothing");
    // Flushed (stale) entries are invisible; global ones survive an ASID flush.
    assert_eq!(t.flush_asid(0, 1), 3);
    assert_eq!(peek(&t, K, 1), None);
    assert_eq!(peek(&t, 5 * M2, 1), None);
    assert_eq!(peek(&t, 9 * K, 1), Some((PageSize::Size4K, 33)));
    assert_eq!(t.flush_all_asids(0), 0);
    assert_eq!(peek(&t, 9 * K, 1), Some((PageSize::Size4K, 33)));
    assert_eq!(t.flush_global(0), 2);
    assert_eq!(peek(&t, 9 * K, 1), None);
}

#[test]
fn peek_does_not_update_lru_order() {
    let mut t = unified(&[(1, 2)], Replacement::Lru, Inclusion::NonInclusive);
    t.fill(0, at(K, AccessKind::Load, 1, false), to(PageSize::Size4K, 1, false));
    t.fill(0, at(2 * K, AccessKind::Load, 1, false), to(PageSize::Size4K, 2, false));
    // Page 1 is the LRU way; peeking at it must not make it recent.
    for _ in 0..3 {
        assert_eq!(peek(&t, K, 1), Some((PageSize::Size4K, 1)));
    }
    t.fill(0, at(3 * K, AccessKind::Load, 1, false), to(PageSize::Size4K, 3, false));
    assert_eq!(peek(&t, K, 1), None, "the peeked LRU entry is evicted first");
    assert_eq!(present(&t, 0), vec![2, 3]);
    // A lookup, unlike a peek, does make it recent.
    assert!(matches!(t.lookup(0, at(2 * K, AccessKind::Load, 1, false)), Lookup::Hit { .. }));
    t.fill(0, at(4 * K, AccessKind::Load, 1, false), to(PageSize::Size4K, 4, false));
    assert_eq!(present(&t, 0), vec![2, 4]);
}

#[test]
fn flushed_entries_are_the_first_victims_and_are_not_listed() {
    let mut t = unified(&[(1, 4)], Replacement::Lru, Inclusion::NonInclusive);
    // Ways in fill order: asid 1 page 1, asid 2 page 2, asid 1 page 3, asid 2 page 4.
    for (asid, p) in [(1, 1), (2, 2), (1, 3), (2, 4)] {
        t.fill(0, at(p * K, AccessKind::Load, asid, false), to(PageSize::Size4K, p, false));
    }
    assert!(matches!(t.lookup(0, at(K, AccessKind::Load, 1, false)), Lookup::Hit { .. }));
    assert_eq!(t.flush_asid(0, 1), 2);
    assert_eq!(t.flush_asid(0, 1), 0, "nothing left to flush");
    assert_eq!(present(&t, 0), vec![2, 4]);
    assert_eq!(t.lookup(0, at(K, AccessKind::Load, 1, false)), Lookup::Miss);
    // The two stale ways take the next two fills although page 2 is the least recently used.
    t.fill(0, at(5 * K, AccessKind::Load, 2, false), to(PageSize::Size4K, 5, false));
    t.fill(0, at(6 * K, AccessKind::Load, 1, false), to(PageSize::Size4K, 6, false));
    assert_eq!(present(&t, 0), vec![2, 4, 5, 6]);
    t.fill(0, at(7 * K, AccessKind::Load, 2, false), to(PageSize::Size4K, 7, false));
    assert_eq!(present(&t, 0), vec![4, 5, 6, 7]);
    let asids: Vec<(u64, u16)> = {
        let mut v: Vec<_> = t.entries(0).map(|(_, e)| (e.vpn, e.asid)).collect();
        v.sort();
        v
    };
    assert_eq!(asids, vec![(4, 2), (5, 2), (6, 1), (7, 2)]);
}

#[test]
fn every_address_space_can_hold_entries_at_once() {
    // More entries than ids: every 12-bit address space holds a page, then each in turn is
    // flushed and refilled, which needs purges to find ids.
    let mut t = unified(&[(1024, 8)], Replacement::Lru, Inclusion::NonInclusive);
    let va = |asid: u16| asid as u64 * K;
    for asid in 0..=MAX_ASID {
        t.fill(0, at(va(asid), AccessKind::Load, asid, false), to(PageSize::Size4K, asid as u64, false));
    }
    for asid in (0..=MAX_ASID).step_by(97) {
        assert_eq!(t.flush_asid(0, asid), 1);
        assert_eq!(t.lookup(0, at(va(asid), AccessKind::Load, asid, false)), Lookup::Miss);
        t.fill(0, at(va(asid), AccessKind::Load, asid, false), to(PageSize::Size4K, asid as u64 + 1, false));
    }
    assert!(t.ids.purges > 0);
    for asid in 0..=MAX_ASID {
        let pfn = asid as u64 + (asid % 97 == 0) as u64;
        assert_eq!(peek(&t, va(asid), asid), Some((PageSize::Size4K, pfn)), "asid {asid}");
        assert_eq!(peek(&t, va(asid), asid ^ 1), None, "asid {asid}");
    }
    assert_eq!(t.flush_all_asids(0), MAX_ASID as u64 + 1);
    assert_eq!(t.entries(0).count(), 0);
}
