//! One set-associative TLB array: probe, insert, invalidate, with the set scan unrolled for the
//! common associativities.

use super::replacement::{lru_oldest, lru_victim, lru_victim_w, plru_touch, plru_victim, Replacement};
use super::spec::{Geometry, PageSize};
use super::tag::*;
use super::TlbPayload;

/// A translation cached in the TLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub vpn: u64,
    pub size: PageSize,
    /// 0 for global entries, which match every address space.
    pub asid: u16,
    pub global: bool,
    pub payload: TlbPayload,
}

/// One way of a set.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Way {
    /// The tag (0 while invalid).
    pub(super) key: u64,
    /// Frame and permission (read on hits and by the safety oracle).
    pub(super) payload: TlbPayload,
    /// LRU only: the array's clock when the way was last used; 0 while the way is invalid.
    pub(super) stamp: u64,
}

impl Way {
    /// Invalidates the way. The zero stamp makes it the first LRU victim.
    #[inline(always)]
    pub(super) fn clear(&mut self) {
        *self = Way::default();
    }
}

/// Associativities with a fixed-width (unrolled, branch-free) set scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Assoc {
    W1,
    W2,
    W4,
    /// Skylake's and Cascade Lake's STLB (1536 entries, 6-way).
    W6,
    W8,
    W12,
    W16,
    Other,
}

/// One set-associative array (one TLB structure).
///
/// True LRU stamps each way with a per-array clock when it is used: a hit is one store, and the
/// victim is the way with the smallest stamp, which is an invalid way (stamp 0) if there is one,
/// else the least recently used. Stamps are 64-bit, so the clock never wraps. Tree-PLRU keeps
/// one bit tree per set and entries in place, and takes invalid ways in way order.
#[derive(Debug, Clone)]
// One host cache line of what a probe, a fill and a replayed hit read first, in declaration
// order (`repr(C)`): the storm visits 56 cores' arrays in turn, and each visit misses on the
// lines it touches (docs/design.md#speed).
#[repr(C, align(64))]
pub struct TlbArray {
    /// `sets * ways` ways, set-major: a set is one contiguous run (one bounds check per probe).
    pub(super) slots: Vec<Way>,
    /// LRU: the last stamp handed out.
    pub(super) clock: u64,
    /// Scratch of a fused lookup-and-fill: the slot the last [`Self::probe`] miss chose to fill.
    pub(super) victim: usize,
    /// The slot of the last probe hit or write (see [`TlbHierarchy::l1_way`]).
    pub(super) last: u32,
    pub(super) set_mask: u32,
    pub(super) ways: usize,
    pub(super) assoc: Assoc,
    pub(super) replacement: Replacement,
    pub(super) page_sizes: u8,
    pub(super) geometry: Geometry,
    /// PLRU only: one tree per set.
    pub(super) plru: Vec<u64>,
}

impl TlbArray {
    pub fn new(geometry: Geometry, replacement: Replacement, page_sizes: &[PageSize]) -> TlbArray {
        assert!(
            replacement != Replacement::Plru || (geometry.ways.is_power_of_two() && geometry.ways <= 64),
            "tree-PLRU needs a power-of-two number of ways <= 64"
        );
        TlbArray {
            geometry,
            set_mask: geometry.sets - 1,
            ways: geometry.ways as usize,
            assoc: match geometry.ways {
                1 => Assoc::W1,
                2 => Assoc::W2,
                4 => Assoc::W4,
                6 => Assoc::W6,
                8 => Assoc::W8,
                12 => Assoc::W12,
                16 => Assoc::W16,
                _ => Assoc::Other,
            },
            replacement,
            slots: vec![Way::default(); geometry.entries() as usize],
            clock: 0,
            victim: 0,
            last: 0,
            plru: if replacement == Replacement::Plru { vec![0; geometry.sets as usize] } else { Vec::new() },
            page_sizes: page_sizes.iter().fold(0, |m, p| m | 1 << *p as u8),
        }
    }

    /// The host bytes [`TlbArray::new`] allocates for `geometry` (docs/limits.md: checked
    /// against the host's memory before a run or a trace builds its TLBs).
    pub fn host_bytes(geometry: Geometry, replacement: Replacement) -> u64 {
        let plru = if replacement == Replacement::Plru {
            geometry.sets as u64 * std::mem::size_of::<u64>() as u64
        } else {
            0
        };
        geometry.entries() as u64 * std::mem::size_of::<Way>() as u64 + plru
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.page_sizes & (1 << size as u8) != 0
    }

    /// The first slot of `vpn`'s set.
    #[inline(always)]
    pub(super) fn set_base(&self, vpn: u64) -> usize {
        self.set_index(vpn) * self.ways
    }

    /// The set of `vpn`: 32 bits, so `set * W + W` cannot overflow and slicing a set costs one
    /// compare.
    #[inline(always)]
    pub(super) fn set_index(&self, vpn: u64) -> usize {
        (vpn as u32 & self.set_mask) as usize
    }

    /// Probes for the translation keyed `want` (a non-global key) and its global form (of the
    /// logical processor whose global id bits are `gid`); on a hit updates replacement state. With `FUSED` (LRU only), a miss also keeps the slot a fill of
    /// this set would take in `self.victim`, for [`Self::put_victim`].
    ///
    /// `one_key`: no global entry exists. Then a way matches iff its key is `want`, and at most
    /// one way of the set does (a fill replaces an existing copy). Otherwise a set may hold the
    /// address space's own entry and a global one, and the more recently used wins, as with LRU
    /// order. A stale entry never matches: no lookup key holds a stale id.
    ///
    /// `FUSED` is for the chain path only, which runs while no entry can be stale (see
    /// [`Plan::chain`]): its victim is the plain LRU one.
    #[inline(always)]
    pub(super) fn probe<const FUSED: bool>(
        &mut self,
        vpn: u64,
        want: u64,
        one_key: bool,
        gid: u64,
    ) -> Option<(u64, TlbPayload)> {
        let set = self.set_index(vpn);
        match self.assoc {
            Assoc::W4 => self.probe_w::<4, FUSED>(set, want, one_key, gid),
            Assoc::W8 => self.probe_w::<8, FUSED>(set, want, one_key, gid),
            Assoc::W1 => self.probe_w::<1, FUSED>(set, want, one_key, gid),
            Assoc::W2 => self.probe_w::<2, FUSED>(set, want, one_key, gid),
            Assoc::W16 => self.probe_w::<16, FUSED>(set, want, one_key, gid),
            Assoc::W6 => self.probe_w::<6, FUSED>(set, want, one_key, gid),
            Assoc::W12 => self.probe_w::<12, FUSED>(set, want, one_key, gid),
            Assoc::Other => self.probe_any::<FUSED>(set * self.ways, want, one_key, gid),
        }
    }

    /// [`Self::probe`] of a `W`-way set: a branch-free scan into a hit mask, then one store (LRU).
    #[inline(always)]
    pub(super) fn probe_w<const W: usize, const FUSED: bool>(
        &mut self,
        set: usize,
        want: u64,
        one_key: bool,
        gid: u64,
    ) -> Option<(u64, TlbPayload)> {
        let lru = FUSED || self.replacement == Replacement::Lru;
        let counter = !FUSED && self.replacement == Replacement::Counter;
        let base = set * W;
        let ways: &mut [Way; W] = (&mut self.slots[base..base + W]).try_into().unwrap();
        let mut hits = 0u32;
        for (w, way) in ways.iter().enumerate() {
            hits |= ((way.key == want) as u32) << w;
        }
        if !one_key {
            let g = global_key(want) | gid;
            for (w, way) in ways.iter().enumerate() {
                hits |= ((way.key == g) as u32) << w;
            }
        }
        if hits == 0 {
            if FUSED {
                self.victim = base + lru_oldest(ways);
            }
            return None;
        }
        // `% W` (a mask where W is a power of two) lets the compiler drop the bounds checks below.
        let mut w = hits.trailing_zeros() as usize % W;
        if !one_key && (lru || counter) && hits & (hits - 1) != 0 {
            w = (w..W).filter(|&i| hits >> i & 1 != 0).max_by_key(|&i| ways[i].stamp).unwrap_or(w) % W;
        }
        if lru {
            self.clock += 1;
            ways[w].stamp = self.clock;
        } else if counter {
            // A hit leaves the counter where it is.
        } else {
            plru_touch(&mut self.plru[set], w, W);
        }
        self.last = (base + w) as u32;
        Some((ways[w].key, ways[w].payload))
    }

    /// [`Self::probe`] for any associativity.
    pub(super) fn probe_any<const FUSED: bool>(
        &mut self,
        base: usize,
        want: u64,
        one_key: bool,
        gid: u64,
    ) -> Option<(u64, TlbPayload)> {
        let set = &self.slots[base..base + self.ways];
        let g = global_key(want) | gid;
        let matches = |w: &Way| w.key == want || (!one_key && w.key == g);
        let Some(first) = set.iter().position(matches) else {
            if FUSED {
                self.victim = base + lru_oldest(set);
            }
            return None;
        };
        let way = if one_key || self.replacement == Replacement::Plru {
            first
        } else {
            (first..set.len()).filter(|&w| matches(&set[w])).max_by_key(|&w| set[w].stamp).unwrap_or(first)
        };
        let hit = set[way];
        self.touch(base, way);
        Some((hit.key, hit.payload))
    }

    /// The stored payload of the translation of `want` or its global form (`gid` as in
    /// [`Self::probe`]), as [`Self::probe`] would find it, without touching replacement state.
    pub(super) fn peek(&self, vpn: u64, want: u64, gid: u64) -> Option<TlbPayload> {
        let base = self.set_base(vpn);
        let g = global_key(want) | gid;
        let mut set = self.slots[base..base + self.ways].iter().filter(|w| w.key == want || w.key == g);
        match self.replacement {
            Replacement::Lru | Replacement::Counter => set.max_by_key(|w| w.stamp),
            Replacement::Plru => set.next(),
        }
        .map(|w| w.payload)
    }

    /// Marks `way` of the set at `base` most recently used.
    #[inline(always)]
    pub(super) fn touch(&mut self, base: usize, way: usize) {
        match self.replacement {
            Replacement::Lru => {
                self.clock += 1;
                self.slots[base + way].stamp = self.clock;
            }
            Replacement::Plru => plru_touch(&mut self.plru[base / self.ways], way, self.ways),
            Replacement::Counter => {}
        }
        self.last = (base + way) as u32;
    }

    /// [`Self::touch`] of slot `slot` (set-major): LRU needs no set, so no division.
    #[inline(always)]
    pub(super) fn touch_slot(&mut self, slot: usize) {
        match self.replacement {
            Replacement::Lru => {
                self.clock += 1;
                self.slots[slot].stamp = self.clock;
            }
            Replacement::Plru => plru_touch(&mut self.plru[slot / self.ways], slot % self.ways, self.ways),
            Replacement::Counter => {}
        }
        self.last = slot as u32;
    }

    /// Writes a translation into `base + way` and marks it most recently used; returns the tag and
    /// payload of the live entry it replaced, if any.
    #[inline(always)]
    pub(super) fn put(
        &mut self,
        base: usize,
        way: usize,
        tag: u64,
        payload: TlbPayload,
        ids: &mut AsidIds,
    ) -> Option<(u64, TlbPayload)> {
        let evicted = self.put_lru(base + way, tag, payload, ids);
        self.last = (base + way) as u32;
        if self.replacement == Replacement::Plru {
            plru_touch(&mut self.plru[base / self.ways], way, self.ways);
        }
        evicted
    }

    /// Fills the slot the last fused probe miss chose (see [`Self::probe`]) with `tag`. Chain
    /// path only: no per-id counts to keep.
    #[inline(always)]
    pub(super) fn put_victim(&mut self, tag: u64, payload: TlbPayload) {
        self.clock += 1;
        self.slots[self.victim] = Way { key: tag, payload, stamp: self.clock };
    }

    /// Writes a translation into `slot` with a fresh LRU stamp (PLRU ignores it); returns the tag
    /// and payload of the live entry it replaced, if any.
    #[inline(always)]
    pub(super) fn put_lru(
        &mut self,
        slot: usize,
        tag: u64,
        payload: TlbPayload,
        ids: &mut AsidIds,
    ) -> Option<(u64, TlbPayload)> {
        self.clock += 1;
        let old = std::mem::replace(&mut self.slots[slot], Way { key: tag, payload, stamp: self.clock });
        ids.replaced(old.key, tag);
        ids.live(old.key).then_some((old.key, old.payload))
    }

    /// Inserts a translation (replacing an existing copy of it, else a way holding no live entry,
    /// else the replacement victim). Returns the tag and payload of a live entry it evicted.
    pub(super) fn insert(
        &mut self,
        vpn: u64,
        tag: u64,
        payload: TlbPayload,
        ids: &mut AsidIds,
    ) -> Option<(u64, TlbPayload)> {
        let base = self.set_base(vpn);
        let alias = ids.alias(tag);
        let copy = |w: &Way| w.key == tag || w.key == alias;
        let set = &mut self.slots[base..base + self.ways];
        let Some(way) = set.iter().position(|w| copy(w) || !ids.live(w.key)) else {
            return self.insert_new(vpn, tag, payload, ids);
        };
        // A way holding no live entry may sit before an older copy of the same translation: drop
        // that copy.
        if !ids.live(set[way].key) {
            if let Some(dup) = set[way + 1..].iter_mut().find(|w| copy(w)) {
                ids.replaced(dup.key, 0);
                dup.clear();
            }
        }
        self.put(base, way, tag, payload, ids);
        None
    }

    /// Inserts a translation known to be absent from its set (the caller has just probed for
    /// every tag [`Self::insert`] would replace): takes a way holding no live entry, else the
    /// replacement victim. Returns the tag and payload of a live entry it evicted.
    pub(super) fn insert_new(
        &mut self,
        vpn: u64,
        tag: u64,
        payload: TlbPayload,
        ids: &mut AsidIds,
    ) -> Option<(u64, TlbPayload)> {
        let base = self.set_base(vpn);
        let set = &self.slots[base..base + self.ways];
        let way = match self.replacement {
            Replacement::Lru | Replacement::Counter => match self.assoc {
                Assoc::W4 => lru_victim_w::<4>(set.try_into().unwrap(), ids),
                Assoc::W6 => lru_victim_w::<6>(set.try_into().unwrap(), ids),
                Assoc::W8 => lru_victim_w::<8>(set.try_into().unwrap(), ids),
                Assoc::W12 => lru_victim_w::<12>(set.try_into().unwrap(), ids),
                _ => lru_victim(set, ids),
            },
            Replacement::Plru => match set.iter().position(|w| !ids.live(w.key)) {
                Some(w) => w,
                None => plru_victim(self.plru[base / self.ways], self.ways),
            },
        };
        self.put(base, way, tag, payload, ids)
    }

    /// Removes the entry for `vpn`/`size` keyed `id` (an address space's key bits) and the
    /// global one of the logical processor with global id bits `gid`; returns how many.
    pub(super) fn invalidate_vpn(
        &mut self,
        vpn: u64,
        size: PageSize,
        id: u64,
        gid: u64,
        ids: &mut AsidIds,
    ) -> u64 {
        let want = make_tag(vpn, size, id);
        let g = global_key(want) | gid;
        let base = self.set_base(vpn);
        let mut n = 0;
        for w in &mut self.slots[base..base + self.ways] {
            if w.key == want || w.key == g {
                ids.replaced(w.key, 0);
                w.clear();
                n += 1;
            }
        }
        n
    }

    /// Removes every copy of exactly `tag` (inclusive back-invalidation, exclusive moves).
    pub(super) fn invalidate_tag(&mut self, tag: u64, ids: &mut AsidIds) {
        let base = self.set_base(tag_vpn(tag));
        for w in &mut self.slots[base..base + self.ways] {
            if w.key == tag {
                ids.replaced(w.key, 0);
                w.clear();
            }
        }
    }

    /// Removes everything; returns how many live entries there were.
    pub(super) fn clear_all(&mut self, ids: &mut AsidIds) -> u64 {
        let mut n = 0;
        for w in &mut self.slots {
            n += ids.live(w.key) as u64;
            ids.replaced(w.key, 0);
            w.clear();
        }
        n
    }

    /// Removes every live entry of logical processor `lp` (an array shared by SMT siblings keeps
    /// theirs); returns how many.
    pub(super) fn clear_lp(&mut self, lp: usize, ids: &mut AsidIds) -> u64 {
        let mut n = 0;
        for w in &mut self.slots {
            if ids.live(w.key) && ids.lp_of(w.key) == lp {
                n += 1;
                ids.replaced(w.key, 0);
                w.clear();
            }
        }
        n
    }

    /// Zeroes the stale entries (valid, not live).
    pub(super) fn clear_stale(&mut self, ids: &mut AsidIds) {
        for w in &mut self.slots {
            if w.key & VALID != 0 && !ids.live(w.key) {
                ids.replaced(w.key, 0);
                w.clear();
            }
        }
    }

    /// Adds the valid non-global entries to the per-id counts.
    pub(super) fn count_ids(&self, count: &mut [u32; NR_IDS]) {
        for w in &self.slots {
            if w.key & (VALID | GLOBAL) == VALID {
                count[(w.key & ASID_MASK) as usize] += 1;
            }
        }
    }

    /// Every live entry of logical processor `lp`, with its architectural address-space id.
    pub(super) fn entries<'a>(&'a self, ids: &'a AsidIds, lp: usize) -> impl Iterator<Item = Entry> + 'a {
        self.slots.iter().filter(move |w| ids.live(w.key) && ids.lp_of(w.key) == lp).map(|w| {
            let t = w.key;
            let global = t & GLOBAL != 0;
            Entry {
                vpn: tag_vpn(t),
                size: tag_size(t),
                asid: if global { 0 } else { ids.asid_of(t) },
                global,
                payload: w.payload,
            }
        })
    }
}

/// One structure of a hierarchy, as its contents look to one logical processor
/// ([`super::TlbHierarchy::arrays`]).
#[derive(Debug, Clone, Copy)]
pub struct ArrayView<'a> {
    pub(super) array: &'a TlbArray,
    pub(super) ids: &'a AsidIds,
    pub(super) lp: usize,
}

impl<'a> ArrayView<'a> {
    pub fn geometry(&self) -> Geometry {
        self.array.geometry()
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.array.holds(size)
    }

    /// Every valid entry of the logical processor (flushed ones are gone), for inspection.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + 'a {
        self.array.entries(self.ids, self.lp)
    }
}
