//! The hierarchy against a brute-force reference of what it may hold, under random shapes
//! (unified, split I/D, split load/store, per-size arrays, up to three levels; LRU or tree-PLRU;
//! non-inclusive, inclusive, exclusive) and random lookups, fills and flushes.
//!
//! The reference is a list of the translations filled and not invalidated since: replacement may
//! drop any of them at any time, so it does not predict hits; it bounds them. After every step:
//! - every hit (`lookup`, `lookup_sized`, `lookup_or_fill`, the `l1_way` replay the engine uses)
//!   is a translation the list allows for that address space, page and size: a flushed
//!   translation is never returned;
//! - every entry the hierarchy lists is in the list, and a flush's count is what left the listing;
//! - `peek` (the safety oracle's question) sees every translation a lookup would hit, and only
//!   allowed ones;
//! - a translation just filled is found by the next lookup of the same kind (if some array on that
//!   kind's path holds its page size): the list model is not satisfied by a TLB that holds nothing.
//!
//! Shapes are also cores of two logical processors (SMT siblings), each structure shared or
//! not, and every step is one logical processor's. Each has its own list: a sibling's lookup is
//! never satisfied by the other's fills (entries are tagged by logical processor), an
//! invalidation empties only the executing one's list, and leaves every other one's listing as
//! it was.

use proptest::prelude::*;

use super::*;

const K4: u64 = 4 << 10;
const M2: u64 = 2 << 20;
const G1: u64 = 1 << 30;

/// What a sequence does, one step at a time.
#[derive(Debug, Clone)]
enum Op {
    Lookup {
        kind: AccessKind,
        asid: u16,
        va: u64,
    },
    LookupSized {
        kind: AccessKind,
        asid: u16,
        va: u64,
        size: PageSize,
    },
    LookupOrFill {
        kind: AccessKind,
        asid: u16,
        va: u64,
        t: Translation,
    },
    /// `lookup_or_fill_sized`, then remember where level 1 holds it (`l1_way`) in `slot`.
    Remember {
        kind: AccessKind,
        asid: u16,
        va: u64,
        t: Translation,
        slot: usize,
    },
    /// The engine's fast path: if the remembered way `still_hits`, `rehit` it.
    Replay {
        slot: usize,
        kind: AccessKind,
    },
    Fill {
        kind: AccessKind,
        asid: u16,
        va: u64,
        t: Translation,
    },
    Invlpg {
        asid: u16,
        va: u64,
    },
    FlushAsid {
        asid: u16,
    },
    FlushAllAsids,
    FlushGlobal,
}

/// One allowed translation: `vpn` at page size `size` (`vpn = va >> size.shift()`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Allowed {
    asid: u16,
    global: bool,
    size: PageSize,
    vpn: u64,
    payload: TlbPayload,
}

/// The brute-force reference: every translation that may still be cached.
#[derive(Default)]
struct Reference {
    list: Vec<Allowed>,
}

impl Reference {
    fn allows(&self, asid: u16, va: u64, size: PageSize, payload: TlbPayload) -> bool {
        self.list.iter().any(|e| {
            e.size == size
                && e.vpn == va >> size.shift()
                && (e.global || e.asid == asid)
                && e.payload == payload
        })
    }

    fn lists(&self, e: &Entry) -> bool {
        self.list.iter().any(|a| {
            a.size == e.size
                && a.vpn == e.vpn
                && a.global == e.global
                && (e.global || a.asid == e.asid)
                && a.payload == e.payload
        })
    }

    fn fill(&mut self, asid: u16, va: u64, t: Translation) {
        let a = Allowed {
            asid: if t.global { 0 } else { asid },
            global: t.global,
            size: t.size,
            vpn: va >> t.size.shift(),
            payload: t.payload,
        };
        if !self.list.contains(&a) {
            self.list.push(a);
        }
    }

    fn remove(&mut self, drop: impl Fn(&Allowed) -> bool) {
        self.list.retain(|e| !drop(e));
    }
}

/// A shape of hierarchy; `new_core` never rejects one.
#[derive(Debug, Clone)]
struct Shape {
    specs: Vec<StructureSpec>,
    replacement: Replacement,
    inclusion: Inclusion,
    /// Logical processors of the core (1 or 2), and per structure whether they share it.
    lps: usize,
    shared: Vec<bool>,
}

const SIZES: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

fn sizes_of(mask: u8) -> Vec<PageSize> {
    SIZES.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, &s)| s).collect()
}

fn shape() -> impl Strategy<Value = Shape> {
    // Geometry per structure: (log2 sets, ways index); small so sets fill and evict.
    let geo = || (0u32..3, 0usize..5);
    (
        0u8..4,
        1u8..8,
        proptest::option::of((1u8..8, any::<bool>())),
        any::<bool>(),
        any::<bool>(),
        0u8..3,
        proptest::collection::vec(geo(), 8),
        (1usize..3, any::<u8>()),
    )
        .prop_map(|(l1, l1_sizes, l2, l3, plru, incl, geos, (lps, share))| {
            let replacement = if plru { Replacement::Plru } else { Replacement::Lru };
            let mut g = geos.into_iter().map(move |(s, w)| {
                // 6: an unrolled scan of a width that is not a power of two (Skylake's STLB).
                let ways = [1, 2, 4, 3, 6][w];
                // Tree-PLRU needs a power-of-two number of ways.
                let ways = if plru && (ways == 3 || ways == 6) { 2 } else { ways };
                Geometry::new(1 << s, ways).unwrap()
            });
            let mut specs = Vec::new();
            let mut add = |name: &str, level: u8, serves: Serves, sizes: Vec<PageSize>, g: Geometry| {
                specs.push(StructureSpec { name: name.into(), level, serves, page_sizes: sizes, geometry: g })
            };
            match l1 {
                0 => add("L1", 1, Serves::Unified, sizes_of(l1_sizes), g.next().unwrap()),
                1 => {
                    add("ITLB", 1, Serves::Instruction, vec![PageSize::Size4K], g.next().unwrap());
                    add("DTLB", 1, Serves::Data, sizes_of(l1_sizes), g.next().unwrap());
                }
                2 => {
                    add(
                        "ITLB",
                        1,
                        Serves::Instruction,
                        vec![PageSize::Size4K, PageSize::Size2M],
                        g.next().unwrap(),
                    );
                    add("LD4K", 1, Serves::Load, vec![PageSize::Size4K], g.next().unwrap());
                    add("ST4K", 1, Serves::Store, vec![PageSize::Size4K], g.next().unwrap());
                    add("DBIG", 1, Serves::Data, vec![PageSize::Size2M, PageSize::Size1G], g.next().unwrap());
                }
                _ => {
                    for s in sizes_of(l1_sizes) {
                        add(&format!("L1-{}", s.name()), 1, Serves::Unified, vec![s], g.next().unwrap());
                    }
                }
            }
            if let Some((l2_sizes, separate_1g)) = l2 {
                let sizes = sizes_of(l2_sizes);
                if separate_1g && !sizes.contains(&PageSize::Size1G) {
                    add("STLB-1G", 2, Serves::Unified, vec![PageSize::Size1G], g.next().unwrap());
                }
                add("STLB", 2, Serves::Unified, sizes, g.next().unwrap());
                if l3 {
                    add("L3", 3, Serves::Unified, vec![PageSize::Size4K], g.next().unwrap());
                }
            }
            let inclusion =
                [Inclusion::NonInclusive, Inclusion::Inclusive, Inclusion::Exclusive][incl as usize];
            let shared = (0..specs.len()).map(|i| share >> i & 1 != 0).collect();
            Shape { specs, replacement, inclusion, lps, shared }
        })
}

fn kind() -> impl Strategy<Value = AccessKind> {
    prop_oneof![Just(AccessKind::Fetch), Just(AccessKind::Load), Just(AccessKind::Store)]
}

/// A few busy address spaces (0 included: its entries share keys with global ones) and now and
/// then the largest one.
fn asid() -> impl Strategy<Value = u16> {
    prop_oneof![8 => 0u16..4, 1 => Just(MAX_ASID)]
}

/// Addresses where 4K pages sit inside 2M pages inside 1G pages, so translations of every size
/// overlap.
fn va() -> impl Strategy<Value = u64> {
    (0u64..2, 0u64..2, 0u64..6, 0u64..K4).prop_map(|(g, m, k, off)| g * G1 + m * M2 + k * K4 + off)
}

fn size() -> impl Strategy<Value = PageSize> {
    prop_oneof![4 => Just(PageSize::Size4K), 2 => Just(PageSize::Size2M), 1 => Just(PageSize::Size1G)]
}

fn translation() -> impl Strategy<Value = Translation> {
    (size(), 0u64..4, any::<bool>(), prop_oneof![5 => Just(false), 1 => Just(true)]).prop_map(
        |(size, pfn, writable, global)| Translation { size, payload: TlbPayload::new(pfn, writable), global },
    )
}

const SLOTS: usize = 3;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (kind(), asid(), va()).prop_map(|(kind, asid, va)| Op::Lookup { kind, asid, va }),
        2 => (kind(), asid(), va(), size()).prop_map(|(kind, asid, va, size)| Op::LookupSized { kind, asid, va, size }),
        8 => (kind(), asid(), va(), translation()).prop_map(|(kind, asid, va, t)| Op::LookupOrFill { kind, asid, va, t }),
        3 => (kind(), asid(), va(), translation(), 0..SLOTS)
            .prop_map(|(kind, asid, va, t, slot)| Op::Remember { kind, asid, va, t, slot }),
        4 => (0..SLOTS, kind()).prop_map(|(slot, kind)| Op::Replay { slot, kind }),
        4 => (kind(), asid(), va(), translation()).prop_map(|(kind, asid, va, t)| Op::Fill { kind, asid, va, t }),
        3 => (asid(), va()).prop_map(|(asid, va)| Op::Invlpg { asid, va }),
        3 => asid().prop_map(|asid| Op::FlushAsid { asid }),
        1 => Just(Op::FlushAllAsids),
        1 => Just(Op::FlushGlobal),
    ]
}

fn at(kind: AccessKind, asid: u16, va: u64) -> Access {
    Access { va, kind, asid, kernel: asid == 0 }
}

/// Whether some array on `kind`'s path holds pages of `size` (so a fill of it is kept somewhere).
fn reachable(t: &TlbHierarchy, kind: AccessKind, size: PageSize) -> bool {
    t.specs().iter().any(|s| s.serves.covers(kind) && s.page_sizes.contains(&size))
}

/// A hit must be allowed, and `peek` (taken before the lookup) must have seen a translation.
fn check_hit(
    r: &Reference,
    before: Option<(PageSize, TlbPayload)>,
    asid: u16,
    va: u64,
    got: Lookup,
    what: &str,
) -> Result<(), TestCaseError> {
    if let Lookup::Hit { payload, size, .. } = got {
        prop_assert!(
            r.allows(asid, va, size, payload),
            "{what}: hit {got:?} for asid {asid} va {va:#x} is not allowed"
        );
        prop_assert!(before.is_some(), "{what}: a lookup hit ({got:?}) that peek did not see");
    }
    Ok(())
}

fn live(t: &TlbHierarchy, lp: usize) -> Vec<Entry> {
    t.entries(lp).map(|(_, e)| e).collect()
}

/// A level-1 way `l1_way` gave a logical processor for an address space's page of a size.
type Remembered = (usize, L1Way, u16, u64, PageSize);

/// Runs `ops` (each on logical processor `lp % shape.lps`), checking every step; returns every
/// lookup's result (for the determinism check).
fn run(shape: &Shape, ops: &[(usize, Op)]) -> Result<Vec<Lookup>, TestCaseError> {
    let mut t =
        TlbHierarchy::new_core(&shape.specs, &shape.shared, shape.lps, shape.replacement, shape.inclusion)
            .map_err(|e| TestCaseError::fail(format!("shape rejected: {e}")))?;
    let mut refs: Vec<Reference> = (0..shape.lps).map(|_| Reference::default()).collect();
    let mut slots: [Option<Remembered>; SLOTS] = [None; SLOTS];
    let mut seen = Vec::new();
    for (i, (lp, op)) in ops.iter().enumerate() {
        let lp = lp % shape.lps;
        let what = format!("op {i} on lp {lp} {op:?}");
        let listed_before = live(&t, lp).len() as u64;
        let others_before: Vec<Vec<Entry>> = (0..shape.lps).map(|o| live(&t, o)).collect();
        let r = &mut refs[lp];
        let mut flushed = None;
        match *op {
            Op::Lookup { kind, asid, va } => {
                let before = t.peek(lp, va, asid);
                if let Some((size, payload)) = before {
                    prop_assert!(r.allows(asid, va, size, payload), "{what}: peek {before:?} not allowed");
                }
                let got = t.lookup(lp, at(kind, asid, va));
                check_hit(r, before, asid, va, got, &what)?;
                seen.push(got);
            }
            Op::LookupSized { kind, asid, va, size } => {
                let before = t.peek_sized(lp, va, asid, size).map(|p| (size, p));
                let got = t.lookup_sized(lp, at(kind, asid, va), size);
                if let Lookup::Hit { size: s, .. } = got {
                    prop_assert_eq!(s, size, "{}: a sized lookup hit another size", what);
                }
                check_hit(r, before, asid, va, got, &what)?;
                seen.push(got);
            }
            Op::LookupOrFill { kind, asid, va, t: tr } | Op::Remember { kind, asid, va, t: tr, .. } => {
                let sized = matches!(op, Op::Remember { .. });
                let before = if sized {
                    t.peek_sized(lp, va, asid, tr.size).map(|p| (tr.size, p))
                } else {
                    t.peek(lp, va, asid)
                };
                let a = at(kind, asid, va);
                let got = if sized { t.lookup_or_fill_sized(lp, a, tr) } else { t.lookup_or_fill(lp, a, tr) };
                check_hit(r, before, asid, va, got, &what)?;
                if got == Lookup::Miss {
                    r.fill(asid, va, tr);
                }
                seen.push(got);
                if reachable(&t, kind, tr.size) {
                    let again = t.lookup(lp, a);
                    prop_assert!(again != Lookup::Miss, "{what}: missed right after lookup_or_fill");
                    check_hit(r, Some((tr.size, tr.payload)), asid, va, again, &what)?;
                }
                if let Op::Remember { slot, .. } = *op {
                    slots[slot] = t.l1_way(lp, a, tr.size).map(|w| (lp, w, asid, va, tr.size));
                }
            }
            Op::Replay { slot, kind } => {
                // On the logical processor that remembered the way (the engine replays a CPU's
                // own kernel paths).
                if let Some((lp, way, asid, va, size)) = slots[slot] {
                    let r = &refs[lp];
                    let hits = t.still_hits(lp, &way, asid);
                    if hits {
                        // The way is what the engine uses instead of a lookup: its current
                        // contents must be an allowed translation of that page.
                        let payload = t.arrays[way.array as usize].slots[way.slot as usize].payload;
                        prop_assert!(
                            r.allows(asid, va, size, payload),
                            "{what}: a remembered level-1 way still hits with a flushed translation"
                        );
                    }
                    // The fused check-and-replay agrees with still_hits (and rehits only then).
                    let id = t.asid_key(lp, asid);
                    prop_assert_eq!(t.replay_hit(lp, &way, id, kind, asid == 0), hits, "{}", what);
                }
            }
            Op::Fill { kind, asid, va, t: tr } => {
                let a = at(kind, asid, va);
                t.fill(lp, a, tr);
                r.fill(asid, va, tr);
                if reachable(&t, kind, tr.size) {
                    let before = t.peek(lp, va, asid);
                    let got = t.lookup(lp, a);
                    prop_assert!(got != Lookup::Miss, "{what}: missed right after a fill");
                    check_hit(r, before, asid, va, got, &what)?;
                }
            }
            Op::Invlpg { asid, va } => {
                flushed = Some(t.invlpg(lp, va, asid));
                r.remove(|e| e.vpn == va >> e.size.shift() && (e.global || e.asid == asid));
                prop_assert!(t.peek(lp, va, asid).is_none(), "{what}: peek still translates after INVLPG");
            }
            Op::FlushAsid { asid } => {
                let n = t.flush_asid(lp, asid);
                flushed = Some(n);
                r.remove(|e| !e.global && e.asid == asid);
                prop_assert!(
                    n == 0 || !t.may_hold(lp, asid),
                    "{what}: may_hold after a full flush that dropped entries"
                );
            }
            Op::FlushAllAsids => {
                flushed = Some(t.flush_all_asids(lp));
                r.remove(|e| !e.global);
            }
            Op::FlushGlobal => {
                flushed = Some(t.flush_global(lp));
                r.remove(|_| true);
            }
        }
        let r = &refs[lp];
        let listed = live(&t, lp);
        for e in &listed {
            prop_assert!(r.lists(e), "{what}: lists {e:?}, which the reference does not allow");
            if !e.global {
                prop_assert!(t.may_hold(lp, e.asid), "{what}: lists {e:?} but may_hold({}) is false", e.asid);
            }
        }
        if let Some(n) = flushed {
            prop_assert_eq!(n, listed_before - listed.len() as u64, "{}: flush count", what);
            for (o, before) in others_before.iter().enumerate().filter(|&(o, _)| o != lp) {
                prop_assert_eq!(before, &live(&t, o), "{}: a flush changed sibling {}'s entries", what, o);
            }
        }
    }
    Ok(seen)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn hits_are_always_translations_the_reference_allows(
        shape in shape(),
        ops in proptest::collection::vec((0usize..2, op()), 1..400),
    ) {
        let a = run(&shape, &ops)?;
        prop_assert_eq!(a, run(&shape, &ops)?, "the same sequence gave other results");
    }
}
