//! The per-CPU TLB hierarchy: first-level instruction and data TLBs, second-level STLB / L2 TLBs,
//! each a set-associative array of translations tagged by address-space id, page size and global
//! bit.
//!
//! A lookup probes level 1, then level 2, ..., then reports a miss (the caller walks the page
//! table and calls [`TlbHierarchy::fill`]). Hardware probes the arrays of every page size at a
//! level in parallel; the model does the same, skipping page sizes that were never filled.
//!
//! Hot path rules (see DESIGN.md "Speed"): flat arrays per structure, one `u64` tag compare per
//! way, no allocation and no hashing on lookup.
//!
//! How the hot path keeps to them: each access kind has a precomputed probe plan (the arrays of
//! the live page sizes, level by level), so a lookup is one loop over flat steps; a set is one
//! contiguous slice scanned branch-free for the common associativities; LRU is a per-way stamp,
//! so a hit is one store and a victim is the smallest stamp; and `lookup_or_fill` (the trace
//! driver's walk-on-miss) picks each missed level's victim during the probe, so the fill is a
//! store.
//!
//! Flushing an address space (a flushing CR3 write, and INVPCID's all-context flush) is O(1)
//! amortized, as the engine's shootdowns need: tags hold an internal id per address space, and a
//! flush retires the id, leaving its entries stale (invalid in every respect) until a purge
//! recycles ids (`AsidIds`). [`TlbHierarchy::peek`] answers "would this CPU translate va?"
//! (the safety oracle's question) with one probe per array.

use serde::{Deserialize, Serialize};

/// Page sizes a TLB entry can map: x86 (4K, 2M, 1G) and PowerPC 8xx (4K, 512K, 8M).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4k")]
    Size4K = 0,
    #[serde(rename = "512k")]
    Size512K = 1,
    #[serde(rename = "2m")]
    Size2M = 2,
    #[serde(rename = "8m")]
    Size8M = 3,
    #[serde(rename = "1g")]
    Size1G = 4,
}

pub const NR_PAGE_SIZES: usize = 5;

impl PageSize {
    pub const ALL: [PageSize; NR_PAGE_SIZES] =
        [PageSize::Size4K, PageSize::Size512K, PageSize::Size2M, PageSize::Size8M, PageSize::Size1G];

    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size512K => 19,
            PageSize::Size2M => 21,
            PageSize::Size8M => 23,
            PageSize::Size1G => 30,
        }
    }

    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    pub fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4k",
            PageSize::Size512K => "512k",
            PageSize::Size2M => "2m",
            PageSize::Size8M => "8m",
            PageSize::Size1G => "1g",
        }
    }

    pub fn parse(s: &str) -> Option<PageSize> {
        PageSize::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(s))
    }
}

/// What a memory access is, as the TLB sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Fetch = 0,
    Load = 1,
    Store = 2,
}

pub const NR_ACCESS_KINDS: usize = 3;

impl AccessKind {
    pub const ALL: [AccessKind; NR_ACCESS_KINDS] = [AccessKind::Fetch, AccessKind::Load, AccessKind::Store];
}

/// Which accesses a TLB structure serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Serves {
    Instruction,
    /// Loads and stores.
    Data,
    /// Loads only (a split load/store DTLB, e.g. Golden Cove).
    Load,
    /// Stores only.
    Store,
    /// Everything (an STLB shared by instructions and data).
    Unified,
}

impl Serves {
    pub fn covers(self, kind: AccessKind) -> bool {
        matches!(
            (self, kind),
            (Serves::Unified, _)
                | (Serves::Instruction, AccessKind::Fetch)
                | (Serves::Data, AccessKind::Load | AccessKind::Store)
                | (Serves::Load, AccessKind::Load)
                | (Serves::Store, AccessKind::Store)
        )
    }

    /// The side a structure belongs to when counting per level.
    fn side(self) -> Side {
        match self {
            Serves::Instruction => Side::Instruction,
            Serves::Data | Serves::Load | Serves::Store => Side::Data,
            Serves::Unified => Side::Unified,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Instruction,
    Data,
    Unified,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    /// True least-recently-used.
    Lru,
    /// Tree pseudo-LRU (ways must be a power of two).
    Plru,
}

/// How the levels relate when an entry moves between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inclusion {
    /// A walk fills every level; evictions at one level do not touch the others.
    NonInclusive,
    /// As non-inclusive, and evicting an entry from an outer level removes it from inner levels.
    Inclusive,
    /// A walk fills level 1 only; level-1 victims move to level 2; a level-2 hit moves the entry
    /// back to level 1.
    Exclusive,
}

/// Sets x ways of one array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    sets: u32,
    ways: u32,
}

impl Geometry {
    pub fn new(sets: u32, ways: u32) -> Result<Geometry, String> {
        if sets == 0 || !sets.is_power_of_two() {
            return Err(format!(
                "{sets} sets: the number of sets must be a power of two (1 = fully associative)"
            ));
        }
        if ways == 0 || ways > 4096 {
            return Err(format!("{ways} ways: allowed 1 ..= 4096"));
        }
        Ok(Geometry { sets, ways })
    }

    pub fn sets(self) -> u32 {
        self.sets
    }
    pub fn ways(self) -> u32 {
        self.ways
    }
    pub fn entries(self) -> u32 {
        self.sets * self.ways
    }
}

// Tag layout: valid | global | no-id (lookup keys only) | spare | page size (3 bits) | vpn (45 bits:
// a 57-bit linear address) | id (12).
//
// The id field holds an internal address-space id, not the architectural ASID/PCID: see
// [`AsidIds`]. A global entry has id 0 and the global bit, so it never equals a non-global key
// and a lookup is at most two plain compares per way: against the address space's key and against
// the global key.
const VALID: u64 = 1 << 63;
const GLOBAL: u64 = 1 << 62;
/// In a lookup key: the address space has no id, so no stored key can match (never stored).
const NO_ID: u64 = 1 << 61;
const SIZE_SHIFT: u32 = 57;
const VPN_SHIFT: u32 = 12;
const ASID_MASK: u64 = (1 << VPN_SHIFT) - 1;
/// The bits of a key naming the address space.
const ID_BITS: u64 = ASID_MASK | NO_ID;
const LA_MASK: u64 = (1 << 57) - 1;

/// The largest address-space id a tag can hold.
pub const MAX_ASID: u16 = ASID_MASK as u16;
/// Architectural address-space ids, and internal ids: one per value of the 12-bit field.
const NR_IDS: usize = MAX_ASID as usize + 1;

#[inline(always)]
fn vpn_of(va: u64, size: PageSize) -> u64 {
    (va & LA_MASK) >> size.shift()
}

/// The key of a non-global translation; `id` is an address space's [`AsidIds::key`] bits.
#[inline(always)]
fn make_tag(vpn: u64, size: PageSize, id: u64) -> u64 {
    VALID | ((size as u64) << SIZE_SHIFT) | (vpn << VPN_SHIFT) | id
}

/// The tag of a global entry that would translate a lookup for `want`.
#[inline(always)]
fn global_key(want: u64) -> u64 {
    (want & !ID_BITS) | GLOBAL
}

/// The vpn field of a tag.
#[inline(always)]
fn tag_vpn(tag: u64) -> u64 {
    (tag & ((1 << SIZE_SHIFT) - 1)) >> VPN_SHIFT
}

/// The page size field of a tag.
#[inline(always)]
fn tag_size(tag: u64) -> PageSize {
    PageSize::ALL[((tag >> SIZE_SHIFT) & 7) as usize]
}

/// A translation cached in the TLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub vpn: u64,
    pub size: PageSize,
    /// 0 for global entries, which match every address space.
    pub asid: u16,
    pub global: bool,
    pub pfn: u64,
}

/// One way of a set.
#[derive(Debug, Clone, Copy, Default)]
struct Way {
    /// The tag (0 while invalid).
    key: u64,
    /// Physical frame (read on hits and by the safety oracle).
    pfn: u64,
    /// LRU only: the array's clock when the way was last used; 0 while the way is invalid.
    stamp: u64,
}

impl Way {
    /// Invalidates the way. The zero stamp makes it the first LRU victim.
    #[inline(always)]
    fn clear(&mut self) {
        *self = Way::default();
    }
}

/// Marks an internal id no address space holds: free, or stale (its entries were flushed).
const UNOWNED: u16 = u16::MAX;

/// The map from architectural address-space ids (ASID/PCID) to the internal ids the tags hold,
/// which makes flushing an address space O(1): the address space gets a fresh id (on its next
/// fill), and the entries keyed by the old one become stale.
///
/// A stale entry is invalid in every respect: no lookup key names its id, [`Self::live`] is
/// false for it, so victim selection prefers it exactly as it prefers an invalidated way, and it
/// is not counted or listed. Stale entries are zeroed and their ids recycled by a purge when the
/// ids run out ([`TlbHierarchy::purge`]), so a flush costs O(1) amortized.
///
/// Old behaviour kept: the tags used to hold the architectural ASID and global entries ASID 0,
/// so a global entry and a non-global one of ASID 0 for the same page had one key, and a fill of
/// either replaced the other. [`Self::alias`] keeps that.
#[derive(Debug, Clone)]
struct AsidIds {
    /// Per architectural ASID: its id (as key bits), or [`NO_ID`]. An ASID gets an id when it
    /// fills.
    key: Box<[u64; NR_IDS]>,
    /// Per id: the ASID holding it, or [`UNOWNED`].
    owner: Box<[u16; NR_IDS]>,
    /// Per id: the valid non-global entries keyed by it, live or stale; kept only while
    /// `tracking`.
    count: Box<[u32; NR_IDS]>,
    /// Ids that no ASID holds and no entry uses, to hand out (a stack).
    free: Vec<u16>,
    /// A bitset of the ASIDs holding an id.
    named: Box<[u64; NR_IDS / 64]>,
    /// Set by the first flush of an address space. Until then no entry is stale and `count` is
    /// not kept, so fills (the trace driver's hot path) pay for neither.
    tracking: bool,
    /// Purges so far (for tests).
    purges: u64,
}

impl AsidIds {
    fn new() -> AsidIds {
        AsidIds {
            key: Box::new([NO_ID; NR_IDS]),
            owner: Box::new([UNOWNED; NR_IDS]),
            count: Box::new([0; NR_IDS]),
            free: (0..NR_IDS as u16).rev().collect(),
            named: Box::new([0; NR_IDS / 64]),
            tracking: false,
            purges: 0,
        }
    }

    /// The key bits of `asid`: its id, or [`NO_ID`] (no entry of it exists).
    #[inline(always)]
    fn key(&self, asid: u16) -> u64 {
        debug_assert!(asid <= MAX_ASID, "address-space id {asid} > {MAX_ASID}");
        self.key[asid as usize & (NR_IDS - 1)]
    }

    /// A stored tag is a live entry: valid, and global or keyed by an id an ASID holds.
    #[inline(always)]
    fn live(&self, tag: u64) -> bool {
        tag & VALID != 0
            && (tag & GLOBAL != 0 || !self.tracking || self.owner[(tag & ASID_MASK) as usize] != UNOWNED)
    }

    /// The ASID of a live non-global entry.
    fn asid_of(&self, tag: u64) -> u16 {
        self.owner[(tag & ASID_MASK) as usize]
    }

    /// Accounts for a way holding `old` now holding `new` (0 = cleared).
    #[inline(always)]
    fn replaced(&mut self, old: u64, new: u64) {
        if self.tracking {
            if old & (VALID | GLOBAL) == VALID {
                self.count[(old & ASID_MASK) as usize] -= 1;
            }
            if new & (VALID | GLOBAL) == VALID {
                self.count[(new & ASID_MASK) as usize] += 1;
            }
        }
    }

    /// The other tag that used to share `tag`'s key (see the type's docs): ASID 0's tag of a
    /// global entry's page and the reverse; `tag` itself if there is none.
    fn alias(&self, tag: u64) -> u64 {
        let zero = self.key[0];
        if zero == NO_ID {
            tag
        } else if tag & GLOBAL != 0 {
            (tag & !(GLOBAL | ID_BITS)) | zero
        } else if tag & ASID_MASK == zero {
            global_key(tag)
        } else {
            tag
        }
    }

    /// Gives `asid` (which has none) a free id; there must be one.
    #[cold]
    #[inline(never)]
    fn name(&mut self, asid: u16) -> u64 {
        let asid = asid & MAX_ASID;
        let id = self.free.pop().expect("no free address-space id");
        self.bind(asid, id);
        id as u64
    }

    /// Gives `asid` (which has none) the id `id`.
    fn bind(&mut self, asid: u16, id: u16) {
        self.owner[id as usize] = asid;
        self.key[asid as usize] = id as u64;
        self.named[asid as usize / 64] |= 1 << (asid % 64);
    }

    /// Takes `asid`'s id away: its entries, if any, become stale.
    fn unbind(&mut self, asid: u16) {
        let id = self.key[asid as usize] as usize;
        self.owner[id] = UNOWNED;
        self.key[asid as usize] = NO_ID;
        self.named[asid as usize / 64] &= !(1 << (asid % 64));
    }

    /// Rebuilds the free list from the unowned ids, once no entry uses them.
    fn recycle_unowned(&mut self) {
        self.free.clear();
        for id in (0..NR_IDS).rev() {
            if self.owner[id] == UNOWNED {
                self.count[id] = 0;
                self.free.push(id as u16);
            }
        }
    }
}

/// Associativities with a fixed-width (unrolled, branch-free) set scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Assoc {
    W1,
    W2,
    W4,
    W8,
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
pub struct TlbArray {
    geometry: Geometry,
    set_mask: u32,
    ways: usize,
    assoc: Assoc,
    replacement: Replacement,
    /// `sets * ways` ways, set-major: a set is one contiguous run (one bounds check per probe).
    slots: Vec<Way>,
    /// LRU: the last stamp handed out.
    clock: u64,
    /// Scratch of a fused lookup-and-fill: the slot the last [`Self::probe`] miss chose to fill.
    victim: usize,
    /// The slot of the last probe hit or write (see [`TlbHierarchy::l1_way`]).
    last: u32,
    /// PLRU only: one tree per set.
    plru: Vec<u64>,
    page_sizes: u8,
}

impl TlbArray {
    pub fn new(geometry: Geometry, replacement: Replacement, page_sizes: &[PageSize]) -> TlbArray {
        assert!(
            replacement == Replacement::Lru || (geometry.ways.is_power_of_two() && geometry.ways <= 64),
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
                8 => Assoc::W8,
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

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.page_sizes & (1 << size as u8) != 0
    }

    /// The first slot of `vpn`'s set.
    #[inline(always)]
    fn set_base(&self, vpn: u64) -> usize {
        self.set_index(vpn) * self.ways
    }

    /// The set of `vpn`: 32 bits, so `set * W + W` cannot overflow and slicing a set costs one
    /// compare.
    #[inline(always)]
    fn set_index(&self, vpn: u64) -> usize {
        (vpn as u32 & self.set_mask) as usize
    }

    /// Probes for the translation keyed `want` (a non-global key) and its global form; on a hit
    /// updates replacement state. With `FUSED` (LRU only), a miss also keeps the slot a fill of
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
    fn probe<const FUSED: bool>(&mut self, vpn: u64, want: u64, one_key: bool) -> Option<(u64, u64)> {
        let set = self.set_index(vpn);
        match self.assoc {
            Assoc::W4 => self.probe_w::<4, FUSED>(set, want, one_key),
            Assoc::W8 => self.probe_w::<8, FUSED>(set, want, one_key),
            Assoc::W1 => self.probe_w::<1, FUSED>(set, want, one_key),
            Assoc::W2 => self.probe_w::<2, FUSED>(set, want, one_key),
            Assoc::W16 => self.probe_w::<16, FUSED>(set, want, one_key),
            Assoc::Other => self.probe_any::<FUSED>(set * self.ways, want, one_key),
        }
    }

    /// [`Self::probe`] of a `W`-way set: a branch-free scan into a hit mask, then one store (LRU).
    #[inline(always)]
    fn probe_w<const W: usize, const FUSED: bool>(
        &mut self,
        set: usize,
        want: u64,
        one_key: bool,
    ) -> Option<(u64, u64)> {
        let lru = FUSED || self.replacement == Replacement::Lru;
        let base = set * W;
        let ways: &mut [Way; W] = (&mut self.slots[base..base + W]).try_into().unwrap();
        let mut hits = 0u32;
        for (w, way) in ways.iter().enumerate() {
            hits |= ((way.key == want) as u32) << w;
        }
        if !one_key {
            let g = global_key(want);
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
        // `% W` (a mask: W is a power of two) lets the compiler drop the bounds checks below.
        let mut w = hits.trailing_zeros() as usize % W;
        if !one_key && lru && hits & (hits - 1) != 0 {
            w = (w..W).filter(|&i| hits >> i & 1 != 0).max_by_key(|&i| ways[i].stamp).unwrap_or(w) % W;
        }
        if lru {
            self.clock += 1;
            ways[w].stamp = self.clock;
        } else {
            plru_touch(&mut self.plru[set], w, W);
        }
        self.last = (base + w) as u32;
        Some((ways[w].key, ways[w].pfn))
    }

    /// [`Self::probe`] for any associativity.
    fn probe_any<const FUSED: bool>(&mut self, base: usize, want: u64, one_key: bool) -> Option<(u64, u64)> {
        let set = &self.slots[base..base + self.ways];
        let g = global_key(want);
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
        Some((hit.key, hit.pfn))
    }

    /// The stored pfn of the translation of `want` or its global form, as [`Self::probe`] would
    /// find it, without touching replacement state.
    fn peek(&self, vpn: u64, want: u64) -> Option<u64> {
        let base = self.set_base(vpn);
        let g = global_key(want);
        let mut set = self.slots[base..base + self.ways].iter().filter(|w| w.key == want || w.key == g);
        match self.replacement {
            Replacement::Lru => set.max_by_key(|w| w.stamp),
            Replacement::Plru => set.next(),
        }
        .map(|w| w.pfn)
    }

    /// Marks `way` of the set at `base` most recently used.
    #[inline(always)]
    fn touch(&mut self, base: usize, way: usize) {
        match self.replacement {
            Replacement::Lru => {
                self.clock += 1;
                self.slots[base + way].stamp = self.clock;
            }
            Replacement::Plru => plru_touch(&mut self.plru[base / self.ways], way, self.ways),
        }
        self.last = (base + way) as u32;
    }

    /// Writes a translation into `base + way` and marks it most recently used; returns the tag and
    /// pfn of the live entry it replaced, if any.
    #[inline(always)]
    fn put(&mut self, base: usize, way: usize, tag: u64, pfn: u64, ids: &mut AsidIds) -> Option<(u64, u64)> {
        let evicted = self.put_lru(base + way, tag, pfn, ids);
        self.last = (base + way) as u32;
        if self.replacement == Replacement::Plru {
            plru_touch(&mut self.plru[base / self.ways], way, self.ways);
        }
        evicted
    }

    /// Fills the slot the last fused probe miss chose (see [`Self::probe`]) with `tag`. Chain
    /// path only: no per-id counts to keep.
    #[inline(always)]
    fn put_victim(&mut self, tag: u64, pfn: u64) {
        self.clock += 1;
        self.slots[self.victim] = Way { key: tag, pfn, stamp: self.clock };
    }

    /// Writes a translation into `slot` with a fresh LRU stamp (PLRU ignores it); returns the tag
    /// and pfn of the live entry it replaced, if any.
    #[inline(always)]
    fn put_lru(&mut self, slot: usize, tag: u64, pfn: u64, ids: &mut AsidIds) -> Option<(u64, u64)> {
        self.clock += 1;
        let old = std::mem::replace(&mut self.slots[slot], Way { key: tag, pfn, stamp: self.clock });
        ids.replaced(old.key, tag);
        ids.live(old.key).then_some((old.key, old.pfn))
    }

    /// Inserts a translation (replacing an existing copy of it, else a way holding no live entry,
    /// else the replacement victim). Returns the tag and pfn of a live entry it evicted.
    fn insert(&mut self, vpn: u64, tag: u64, pfn: u64, ids: &mut AsidIds) -> Option<(u64, u64)> {
        let base = self.set_base(vpn);
        let alias = ids.alias(tag);
        let copy = |w: &Way| w.key == tag || w.key == alias;
        let set = &mut self.slots[base..base + self.ways];
        let Some(way) = set.iter().position(|w| copy(w) || !ids.live(w.key)) else {
            return self.insert_new(vpn, tag, pfn, ids);
        };
        // A way holding no live entry may sit before an older copy of the same translation: drop
        // that copy.
        if !ids.live(set[way].key) {
            if let Some(dup) = set[way + 1..].iter_mut().find(|w| copy(w)) {
                ids.replaced(dup.key, 0);
                dup.clear();
            }
        }
        self.put(base, way, tag, pfn, ids);
        None
    }

    /// Inserts a translation known to be absent from its set (the caller has just probed for
    /// every tag [`Self::insert`] would replace): takes a way holding no live entry, else the
    /// replacement victim. Returns the tag and pfn of a live entry it evicted.
    fn insert_new(&mut self, vpn: u64, tag: u64, pfn: u64, ids: &mut AsidIds) -> Option<(u64, u64)> {
        let base = self.set_base(vpn);
        let set = &self.slots[base..base + self.ways];
        let way = match self.replacement {
            Replacement::Lru => lru_victim(set, ids),
            Replacement::Plru => match set.iter().position(|w| !ids.live(w.key)) {
                Some(w) => w,
                None => plru_victim(self.plru[base / self.ways], self.ways),
            },
        };
        self.put(base, way, tag, pfn, ids)
    }

    /// Removes the entry for `vpn`/`size` keyed `id` (an address space's key bits) and, if
    /// `include_global`, the global one; returns how many.
    fn invalidate_vpn(
        &mut self,
        vpn: u64,
        size: PageSize,
        id: u64,
        include_global: bool,
        ids: &mut AsidIds,
    ) -> u64 {
        let want = make_tag(vpn, size, id);
        let g = global_key(want);
        let base = self.set_base(vpn);
        let mut n = 0;
        for w in &mut self.slots[base..base + self.ways] {
            if w.key == want || (include_global && w.key == g) {
                ids.replaced(w.key, 0);
                w.clear();
                n += 1;
            }
        }
        n
    }

    /// Removes every copy of exactly `tag` (inclusive back-invalidation, exclusive moves).
    fn invalidate_tag(&mut self, tag: u64, ids: &mut AsidIds) {
        let base = self.set_base(tag_vpn(tag));
        for w in &mut self.slots[base..base + self.ways] {
            if w.key == tag {
                ids.replaced(w.key, 0);
                w.clear();
            }
        }
    }

    /// Removes everything; returns how many live entries there were.
    fn clear_all(&mut self, ids: &mut AsidIds) -> u64 {
        let mut n = 0;
        for w in &mut self.slots {
            n += ids.live(w.key) as u64;
            ids.replaced(w.key, 0);
            w.clear();
        }
        n
    }

    /// Zeroes the stale entries (valid, not live).
    fn clear_stale(&mut self, ids: &mut AsidIds) {
        for w in &mut self.slots {
            if w.key & VALID != 0 && !ids.live(w.key) {
                ids.replaced(w.key, 0);
                w.clear();
            }
        }
    }

    /// Adds the valid non-global entries to the per-id counts.
    fn count_ids(&self, count: &mut [u32; NR_IDS]) {
        for w in &self.slots {
            if w.key & (VALID | GLOBAL) == VALID {
                count[(w.key & ASID_MASK) as usize] += 1;
            }
        }
    }

    /// Every live entry, with its architectural address-space id.
    fn entries<'a>(&'a self, ids: &'a AsidIds) -> impl Iterator<Item = Entry> + 'a {
        self.slots.iter().filter(|w| ids.live(w.key)).map(|w| {
            let t = w.key;
            let global = t & GLOBAL != 0;
            Entry {
                vpn: tag_vpn(t),
                size: tag_size(t),
                asid: if global { 0 } else { ids.asid_of(t) },
                global,
                pfn: w.pfn,
            }
        })
    }
}

/// One structure of a hierarchy, as its contents look from outside ([`TlbHierarchy::arrays`]).
#[derive(Debug, Clone, Copy)]
pub struct ArrayView<'a> {
    array: &'a TlbArray,
    ids: &'a AsidIds,
}

impl<'a> ArrayView<'a> {
    pub fn geometry(&self) -> Geometry {
        self.array.geometry()
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.array.holds(size)
    }

    /// Every valid entry (flushed ones are gone), for inspection.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + 'a {
        self.array.entries(self.ids)
    }
}

/// The way an LRU fill of `set` takes: the first holding no live entry, else the least recently
/// used.
#[inline(always)]
fn lru_victim(set: &[Way], ids: &AsidIds) -> usize {
    if ids.tracking {
        lru_victim_tracking(set, ids)
    } else {
        lru_oldest(set)
    }
}

/// The way with the smallest stamp: an invalid way (stamp 0), else the least recently used. The
/// LRU victim while no entry is stale.
#[inline(always)]
fn lru_oldest(set: &[Way]) -> usize {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, way) in set.iter().enumerate() {
        if way.stamp < oldest {
            (victim, oldest) = (w, way.stamp);
        }
    }
    victim
}

/// [`lru_victim`] once entries may be stale: a stale way counts as stamp 0, like an invalid one.
#[inline(never)]
fn lru_victim_tracking(set: &[Way], ids: &AsidIds) -> usize {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, way) in set.iter().enumerate() {
        let stamp = if ids.live(way.key) { way.stamp } else { 0 };
        if stamp < oldest {
            (victim, oldest) = (w, stamp);
        }
    }
    victim
}

/// Tree-PLRU: node bits, root at index 1; a set bit means "the next victim is in the right half".
#[inline(always)]
fn plru_touch(bits: &mut u64, way: usize, ways: usize) {
    let (mut node, mut lo, mut hi) = (1usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if way < mid {
            *bits |= 1 << node; // used the left half: point at the right
            node *= 2;
            hi = mid;
        } else {
            *bits &= !(1 << node);
            node = node * 2 + 1;
            lo = mid;
        }
    }
}

fn plru_victim(bits: u64, ways: usize) -> usize {
    let (mut node, mut lo, mut hi) = (1usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if bits >> node & 1 == 1 {
            node = node * 2 + 1;
            lo = mid;
        } else {
            node *= 2;
            hi = mid;
        }
    }
    lo
}

/// The description of one structure that [`TlbHierarchy::new`] builds from.
#[derive(Debug, Clone, PartialEq)]
pub struct StructureSpec {
    pub name: String,
    pub level: u8,
    pub serves: Serves,
    pub page_sizes: Vec<PageSize>,
    pub geometry: Geometry,
}

/// Hits and misses of one level as seen by one side (e.g. "L1 DTLB", "STLB").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCounters {
    /// `[access kind][user=0 / kernel=1]`.
    pub hits: [[u64; 2]; NR_ACCESS_KINDS],
    pub misses: [[u64; 2]; NR_ACCESS_KINDS],
}

impl LevelCounters {
    pub fn total_hits(&self) -> u64 {
        self.hits.iter().flatten().sum()
    }
    pub fn total_misses(&self) -> u64 {
        self.misses.iter().flatten().sum()
    }
}

/// A named view of one level for one side, over the arrays of every page size.
#[derive(Debug, Clone)]
pub struct LevelView {
    pub name: String,
    pub level: u8,
    pub counters: LevelCounters,
}

/// Array index per access kind and page size of one view, `NONE` if its level cannot hold it.
type ViewArrays = [[u8; NR_PAGE_SIZES]; NR_ACCESS_KINDS];

const NONE: u8 = u8::MAX;
/// Deepest hierarchy supported (`tlblab trace --tlb` may stack this many levels).
pub const MAX_LEVELS: usize = 8;

/// Maintenance counters of one hierarchy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushCounters {
    pub invlpg: u64,
    pub flush_asid: u64,
    pub flush_all_asids: u64,
    pub flush_global: u64,
    /// Valid entries removed by any invalidation.
    pub entries_invalidated: u64,
}

/// Where a lookup was satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Hit at `level` (1-based) with the cached frame and page size.
    Hit { level: u8, pfn: u64, size: PageSize },
    /// Missed every level: the caller walks the page table and calls `fill`.
    Miss,
}

/// One step of a lookup's probe plan: probe one array for one page size, and/or close a level.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// `VALID | size << SIZE_SHIFT`: the tag of the translation without vpn and asid.
    tag_base: u64,
    /// The array to probe; `NONE` for a level holding none of the live page sizes.
    array: u8,
    size: PageSize,
    /// `shift + 64 - 57`: `va << 7 >> vpn_shift` drops the bits above the linear address and
    /// the page offset in two shifts.
    vpn_shift: u8,
    /// Position of the level in the path (0 = innermost) and its view.
    depth: u8,
    view: u8,
    /// The level's 1-based number, reported on a hit.
    level: u8,
    /// The last step of its level: all of the level's probes missed, count a miss on `view`.
    ends_level: bool,
}

const MAX_STEPS: usize = MAX_LEVELS * NR_PAGE_SIZES;

const NO_STEP: Step = Step {
    tag_base: 0,
    array: NONE,
    size: PageSize::Size4K,
    vpn_shift: 0,
    depth: 0,
    view: 0,
    level: 0,
    ends_level: false,
};

/// A lookup's plan for one access kind, rebuilt when a page size goes live: the arrays of the
/// live page sizes, level by level and in page-size order within a level.
#[derive(Debug, Clone)]
struct Plan {
    len: u8,
    steps: [Step; MAX_STEPS],
    /// The fused fast path ([`TlbHierarchy::lookup_or_fill`]) applies: one page size is live, there
    /// are levels and each has one array for it (so `steps[..len]` is one step per level),
    /// replacement is LRU and levels are non-inclusive (so a fill touches no array but the one it
    /// writes), no global entry exists (so a probe is one compare per way) and no address space
    /// was flushed yet (so no entry is stale and no per-id count is kept: see
    /// [`AsidIds::tracking`]).
    chain: bool,
}

/// One array a fill writes: `depth` in the access kind's path.
#[derive(Debug, Clone, Copy)]
struct FillStep {
    array: u8,
    depth: u8,
}

/// Where fills of one access kind and page size go, innermost first.
#[derive(Debug, Clone, Copy)]
struct FillPlan {
    len: u8,
    /// How many of `steps` a page-walk fill writes (all, or level 1 only when exclusive).
    walk_len: u8,
    steps: [FillStep; MAX_LEVELS],
}

/// A level-1 way holding a translation, as [`TlbHierarchy::l1_way`] found it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct L1Way {
    key: u64,
    slot: u32,
    array: u8,
    view: u8,
}

impl L1Way {
    /// No way (never still hits: no stored key is 0 and valid).
    pub const NONE: L1Way = L1Way { key: 0, slot: 0, array: 0, view: 0 };
}

/// One hardware thread's TLBs.
#[derive(Debug, Clone)]
pub struct TlbHierarchy {
    arrays: Vec<TlbArray>,
    specs: Vec<StructureSpec>,
    views: Vec<LevelView>,
    /// Per view: the arrays it is made of.
    view_arrays: Vec<ViewArrays>,
    /// `paths[kind][..depths[kind]]` = view indices, innermost first.
    paths: [[u8; MAX_LEVELS]; NR_ACCESS_KINDS],
    depths: [u8; NR_ACCESS_KINDS],
    /// The lookup plan per access kind.
    plans: [Plan; NR_ACCESS_KINDS],
    /// `fills[kind][size]`.
    fills: [[FillPlan; NR_PAGE_SIZES]; NR_ACCESS_KINDS],
    replacement: Replacement,
    inclusion: Inclusion,
    /// Page sizes ever filled: lookups skip the rest.
    sizes_live: u8,
    /// A global entry was ever filled (else a probe needs one compare per way, see
    /// [`TlbArray::probe`]).
    globals: bool,
    /// Architectural address-space ids to the ids the tags hold.
    ids: AsidIds,
    /// The arrays by level (then in spec order): the order [`Self::peek`] probes them in.
    by_level: Vec<u8>,
    /// Accesses that missed every level (page walks), `[kind][user/kernel]`.
    pub walks: [[u64; 2]; NR_ACCESS_KINDS],
    pub flushes: FlushCounters,
}

impl TlbHierarchy {
    /// Builds the hierarchy. Structures at the same level, side and page size are an error.
    pub fn new(
        specs: &[StructureSpec],
        replacement: Replacement,
        inclusion: Inclusion,
    ) -> Result<TlbHierarchy, String> {
        if specs.is_empty() {
            return Err("a TLB hierarchy needs at least one structure".into());
        }
        if specs.len() >= NONE as usize {
            return Err("too many TLB structures".into());
        }
        let arrays: Vec<TlbArray> =
            specs.iter().map(|s| TlbArray::new(s.geometry, replacement, &s.page_sizes)).collect();
        // Group structures into views by (level, side).
        let mut views: Vec<LevelView> = Vec::new();
        let mut view_arrays: Vec<ViewArrays> = Vec::new();
        let mut view_side: Vec<Side> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let side = s.serves.side();
            let v = match views.iter().zip(&view_side).position(|(v, vs)| v.level == s.level && *vs == side) {
                Some(v) => v,
                None => {
                    views.push(LevelView {
                        name: view_name(s.level, side),
                        level: s.level,
                        counters: LevelCounters::default(),
                    });
                    view_arrays.push([[NONE; NR_PAGE_SIZES]; NR_ACCESS_KINDS]);
                    view_side.push(side);
                    members.push(Vec::new());
                    views.len() - 1
                }
            };
            members[v].push(i);
            for kind in AccessKind::ALL.into_iter().filter(|&k| s.serves.covers(k)) {
                for &p in &s.page_sizes {
                    let slot = &mut view_arrays[v][kind as usize][p as usize];
                    if *slot != NONE {
                        return Err(format!(
                            "structures `{}` and `{}` both hold level-{} {} pages for {:?} accesses",
                            specs[*slot as usize].name,
                            s.name,
                            s.level,
                            p.name(),
                            kind
                        ));
                    }
                    *slot = i as u8;
                }
            }
        }
        // A view made of one structure reports under that structure's name.
        for (v, m) in views.iter_mut().zip(&members) {
            if let [only] = m[..] {
                v.name = specs[only].name.clone();
            }
        }
        let max_level = specs.iter().map(|s| s.level).max().unwrap_or(1);
        if max_level as usize > MAX_LEVELS {
            return Err(format!("at most {MAX_LEVELS} TLB levels"));
        }
        let mut paths = [[NONE; MAX_LEVELS]; NR_ACCESS_KINDS];
        let mut depths = [0u8; NR_ACCESS_KINDS];
        for kind in AccessKind::ALL {
            for level in 1..=max_level {
                if let Some(v) = views
                    .iter()
                    .zip(&view_arrays)
                    .position(|(v, a)| v.level == level && a[kind as usize].iter().any(|&a| a != NONE))
                {
                    let k = kind as usize;
                    paths[k][depths[k] as usize] = v as u8;
                    depths[k] += 1;
                }
            }
        }
        let empty_plan = Plan { len: 0, steps: [NO_STEP; MAX_STEPS], chain: false };
        let empty_fill =
            FillPlan { len: 0, walk_len: 0, steps: [FillStep { array: NONE, depth: 0 }; MAX_LEVELS] };
        let mut t = TlbHierarchy {
            arrays,
            specs: specs.to_vec(),
            views,
            view_arrays,
            paths,
            depths,
            plans: [empty_plan.clone(), empty_plan.clone(), empty_plan],
            fills: [[empty_fill; NR_PAGE_SIZES]; NR_ACCESS_KINDS],
            replacement,
            inclusion,
            sizes_live: 0,
            globals: false,
            ids: AsidIds::new(),
            by_level: {
                let mut v: Vec<u8> = (0..specs.len() as u8).collect();
                v.sort_by_key(|&i| specs[i as usize].level);
                v
            },
            walks: Default::default(),
            flushes: FlushCounters::default(),
        };
        t.build_plans();
        Ok(t)
    }

    /// Recomputes the lookup and fill plans from the paths and the live page sizes.
    fn build_plans(&mut self) {
        for k in 0..NR_ACCESS_KINDS {
            let plan = &mut self.plans[k];
            plan.len = 0;
            plan.chain = self.sizes_live.count_ones() == 1
                && !self.globals
                && !self.ids.tracking
                && self.replacement == Replacement::Lru
                && self.inclusion == Inclusion::NonInclusive
                && self.depths[k] > 0;
            for depth in 0..self.depths[k] as usize {
                let view = self.paths[k][depth];
                let level = self.views[view as usize].level;
                let first = plan.len as usize;
                for size in PageSize::ALL {
                    let array = self.view_arrays[view as usize][k][size as usize];
                    if array != NONE && self.sizes_live & (1 << size as u8) != 0 {
                        plan.steps[plan.len as usize] = Step {
                            tag_base: VALID | (size as u64) << SIZE_SHIFT,
                            array,
                            size,
                            vpn_shift: (size.shift() + 64 - 57) as u8,
                            depth: depth as u8,
                            view,
                            level,
                            ends_level: false,
                        };
                        plan.len += 1;
                    }
                }
                if plan.len as usize == first {
                    // Nothing to probe, but the level still counts a miss.
                    plan.steps[first] = Step { depth: depth as u8, view, level, ..NO_STEP };
                    plan.len += 1;
                    plan.chain = false;
                }
                plan.steps[plan.len as usize - 1].ends_level = true;
            }
            for size in PageSize::ALL {
                let fill = &mut self.fills[k][size as usize];
                fill.len = 0;
                for depth in 0..self.depths[k] as usize {
                    let array = self.view_arrays[self.paths[k][depth] as usize][k][size as usize];
                    if array != NONE {
                        fill.steps[fill.len as usize] = FillStep { array, depth: depth as u8 };
                        fill.len += 1;
                    }
                }
                fill.walk_len = match self.inclusion {
                    Inclusion::Exclusive => {
                        fill.steps[..fill.len as usize].iter().take_while(|f| f.depth < 1).count() as u8
                    }
                    _ => fill.len,
                };
            }
        }
    }

    pub fn views(&self) -> &[LevelView] {
        &self.views
    }

    pub fn specs(&self) -> &[StructureSpec] {
        &self.specs
    }

    /// The structures, in spec order, as their contents look from outside.
    pub fn arrays(&self) -> Vec<ArrayView<'_>> {
        self.arrays.iter().map(|array| ArrayView { array, ids: &self.ids }).collect()
    }

    pub fn inclusion(&self) -> Inclusion {
        self.inclusion
    }

    /// Translates `va` for `kind` in address space `asid`. `kernel` selects the user/kernel
    /// counters. On a hit below level 1 the entry is filled into the inner levels as the
    /// inclusion policy says.
    #[inline]
    pub fn lookup(&mut self, va: u64, kind: AccessKind, asid: u16, kernel: bool) -> Lookup {
        self.lookup_of(va, kind, asid, kernel, None)
    }

    /// [`Self::lookup`] probing only the arrays of page size `only`, if given (see
    /// [`Self::lookup_sized`]).
    #[inline(always)]
    fn lookup_of(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        only: Option<PageSize>,
    ) -> Lookup {
        let k = kind as usize;
        let priv_ = kernel as usize;
        let one_key = !self.globals;
        let id = self.ids.key(asid);
        let plan = &self.plans[k];
        // Nothing of `asid` is cached and no global entry exists: every probe would miss (and a
        // missing probe changes nothing).
        let hopeless = id == NO_ID && one_key;
        for s in &plan.steps[..plan.len as usize] {
            if s.array != NONE && !hopeless && only.is_none_or(|z| s.size == z) {
                let vpn = (va << (64 - 57)) >> s.vpn_shift;
                let want = s.tag_base | vpn << VPN_SHIFT | id;
                let arr = &mut self.arrays[s.array as usize];
                if let Some((tag, pfn)) = arr.probe::<false>(vpn, want, one_key) {
                    self.views[s.view as usize].counters.hits[k][priv_] += 1;
                    let s = *s;
                    if s.depth > 0 {
                        self.promote(kind, &s, vpn, want, tag, pfn);
                    }
                    return Lookup::Hit { level: s.level, pfn, size: s.size };
                }
            }
            if s.ends_level {
                self.views[s.view as usize].counters.misses[k][priv_] += 1;
            }
        }
        self.walks[k][priv_] += 1;
        Lookup::Miss
    }

    /// [`Self::lookup`], and on a miss [`Self::fill`] with `size`, `pfn` and `global`: what a
    /// caller with a page table that maps every page does.
    ///
    /// Fused, the fill skips what the lookup just proved: the translation is in no array, so no
    /// stale copy needs replacing; and on the common shape (see [`Plan::chain`]) each level picks
    /// its victim way while the probe has the set at hand, so a fill is a plain store.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn lookup_or_fill(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        size: PageSize,
        pfn: u64,
        global: bool,
    ) -> Lookup {
        let plan = &self.plans[kind as usize];
        // The chain's probes match one key per way (no global entry exists), so they also cover
        // what a non-global fill replaces.
        if plan.chain && plan.steps[0].size == size && !global {
            self.chain_lookup_or_fill(va, kind, asid, kernel, pfn)
        } else {
            self.lookup_then_fill(va, kind, asid, kernel, size, pfn, global)
        }
    }

    /// [`Self::lookup_or_fill`] of a translation that only ever has page size `size` (the
    /// kernel's own mappings: image text in 2M pages, the direct map in 1G or 2M, stacks in 4K):
    /// probes only the arrays holding `size`. A probe of another size could not hit, and a
    /// missing probe changes nothing, so replacement state, counters and the result are those
    /// of the full lookup, at a fraction of the probes.
    #[allow(clippy::too_many_arguments)]
    pub fn lookup_or_fill_sized(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        size: PageSize,
        pfn: u64,
        global: bool,
    ) -> Lookup {
        let r = self.lookup_sized(va, kind, asid, kernel, size);
        if r == Lookup::Miss {
            self.fill_inner(va, kind, asid, size, pfn, global, true);
        }
        r
    }

    /// [`Self::lookup`] of a translation that can only have page size `size` (see
    /// [`Self::lookup_or_fill_sized`]): the same result, counters and replacement state.
    #[inline(never)]
    pub fn lookup_sized(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        size: PageSize,
    ) -> Lookup {
        self.lookup_of(va, kind, asid, kernel, Some(size))
    }

    /// Where the translation of `va` (page size `size`) sits at level 1, read just after a
    /// [`Self::lookup_or_fill_sized`] of it, which leaves it there (hit, promoted or filled) as
    /// the last slot its level-1 array touched. `None` if it is not there (no level-1 array of
    /// that size, or a later touch of the array came in between). Changes nothing.
    pub fn l1_way(&self, va: u64, kind: AccessKind, asid: u16, size: PageSize) -> Option<L1Way> {
        let plan = &self.plans[kind as usize];
        let s = plan.steps[..plan.len as usize]
            .iter()
            .take_while(|s| s.depth == 0)
            .find(|s| s.array != NONE && s.size == size)?;
        let vpn = (va << (64 - 57)) >> s.vpn_shift;
        let want = s.tag_base | vpn << VPN_SHIFT | self.ids.key(asid);
        let arr = &self.arrays[s.array as usize];
        let key = arr.slots[arr.last as usize].key;
        (key == want || key == global_key(want)).then_some(L1Way {
            key,
            slot: arr.last,
            array: s.array,
            view: s.view,
        })
    }

    /// Whether a lookup in `asid` would still hit `way` first. A non-global entry's key holds
    /// the id its address space had when it was filled: the key still matches iff the address
    /// space still has that id (a flush takes it away; an id is handed out again only once no
    /// entry holds it), so the way holds a live entry a lookup matches. The one-match condition
    /// of [`Self::l1_way`] holds as long as no second copy of the page is filled, which the
    /// callers' fixed-size, fixed-globalness translations never do.
    #[inline]
    pub fn still_hits(&self, way: &L1Way, asid: u16) -> bool {
        self.arrays[way.array as usize].slots[way.slot as usize].key == way.key
            && (way.key & GLOBAL != 0 || way.key & ID_BITS == self.ids.key(asid))
    }

    /// What a level-1 hit on `way` (which [`Self::still_hits`]) does: the replacement update
    /// and the hit count.
    pub fn rehit(&mut self, way: &L1Way, kind: AccessKind, kernel: bool) {
        let arr = &mut self.arrays[way.array as usize];
        let (base, w) = (way.slot as usize / arr.ways * arr.ways, way.slot as usize % arr.ways);
        arr.touch(base, w);
        self.views[way.view as usize].counters.hits[kind as usize][kernel as usize] += 1;
    }

    /// [`Self::lookup_or_fill`] off the fast path.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn lookup_then_fill(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        size: PageSize,
        pfn: u64,
        global: bool,
    ) -> Lookup {
        let r = self.lookup(va, kind, asid, kernel);
        if r == Lookup::Miss {
            self.fill_inner(va, kind, asid, size, pfn, global, true);
        }
        r
    }

    /// [`Self::lookup_or_fill`] on a chain plan, of a non-global translation: one probe per level,
    /// LRU, non-inclusive, no global entry, no stale entry.
    #[inline(always)]
    fn chain_lookup_or_fill(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        pfn: u64,
    ) -> Lookup {
        let k = kind as usize;
        let priv_ = kernel as usize;
        // `[kind][user/kernel]` counters, flattened once.
        let kp = k * 2 + priv_;
        let plan = &self.plans[k];
        let steps = &plan.steps[..plan.len as usize];
        // One page size: the same vpn and tag at every level.
        let first = &plan.steps[0];
        let vpn = (va << (64 - 57)) >> first.vpn_shift;
        let mut want = first.tag_base | vpn << VPN_SHIFT | self.ids.key(asid);
        for (depth, s) in steps.iter().enumerate() {
            // A miss leaves the array's victim way for the fill: nothing else touches the set
            // before it.
            if let Some((tag, hit_pfn)) = self.arrays[s.array as usize].probe::<true>(vpn, want, true) {
                self.views[s.view as usize].counters.hits.as_flattened_mut()[kp] += 1;
                // Non-inclusive: copy into the levels that missed, outermost first.
                if depth > 0 {
                    for inner in steps[..depth].iter().rev() {
                        self.arrays[inner.array as usize].put_victim(tag, hit_pfn);
                    }
                }
                return Lookup::Hit { level: s.level, pfn: hit_pfn, size: s.size };
            }
            self.views[s.view as usize].counters.misses.as_flattened_mut()[kp] += 1;
        }
        self.walks.as_flattened_mut()[kp] += 1;
        if want & NO_ID != 0 {
            // The address space's first fill. No entry is stale, so naming does not purge (which
            // would clear ways under the victims just chosen).
            want = (want & !ID_BITS) | self.ids.name(asid);
        }
        for s in steps.iter().rev() {
            self.arrays[s.array as usize].put_victim(want, pfn);
        }
        Lookup::Miss
    }

    /// Moves or copies an entry found by step `s` (below level 1) into the inner levels.
    fn promote(&mut self, kind: AccessKind, s: &Step, vpn: u64, want: u64, tag: u64, pfn: u64) {
        let upto = if self.inclusion == Inclusion::Exclusive {
            self.arrays[s.array as usize].invalidate_tag(tag, &mut self.ids);
            1
        } else {
            s.depth
        };
        // The inner levels were just probed for `want` (and its global form); if `tag` is that
        // translation, no stale copy can be there.
        let probed = tag == want;
        let fill = self.fills[kind as usize][s.size as usize];
        let n = fill.steps[..fill.len as usize].iter().take_while(|f| f.depth < upto).count();
        self.fill_levels(kind, &fill.steps[..n], vpn, tag, pfn, probed);
    }

    /// Installs a translation after a page walk: every level that can hold it (non-inclusive,
    /// inclusive) or level 1 only (exclusive).
    pub fn fill(&mut self, va: u64, kind: AccessKind, asid: u16, size: PageSize, pfn: u64, global: bool) {
        self.fill_inner(va, kind, asid, size, pfn, global, false);
    }

    /// [`Self::fill`]; `probed`: every level has just missed a lookup of `va` in `asid`.
    #[allow(clippy::too_many_arguments)]
    fn fill_inner(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        size: PageSize,
        pfn: u64,
        global: bool,
        probed: bool,
    ) {
        let vpn = vpn_of(va, size);
        let tag = if global {
            global_key(make_tag(vpn, size, 0))
        } else {
            make_tag(vpn, size, self.id_for_fill(asid))
        };
        if (global && !self.globals) || self.sizes_live & (1 << size as u8) == 0 {
            self.globals |= global;
            self.sizes_live |= 1 << size as u8;
            self.build_plans();
        }
        // The miss covered the address space's own translation and its global form, so a fill of
        // the former has no copy to replace; a global one may still have an alias (see
        // [`AsidIds::alias`]), left to [`TlbArray::insert`].
        let probed = probed && !global;
        let fill = self.fills[kind as usize][size as usize];
        self.fill_levels(kind, &fill.steps[..fill.walk_len as usize], vpn, tag, pfn, probed);
    }

    /// Writes `tag` into the arrays of `steps`, outermost first so inclusive back-invalidation
    /// never removes what it just installed. `probed`: no array holds a copy of `tag` to replace.
    fn fill_levels(
        &mut self,
        kind: AccessKind,
        steps: &[FillStep],
        vpn: u64,
        tag: u64,
        pfn: u64,
        probed: bool,
    ) {
        for f in steps.iter().rev() {
            let arr = &mut self.arrays[f.array as usize];
            let evicted = if probed {
                arr.insert_new(vpn, tag, pfn, &mut self.ids)
            } else {
                arr.insert(vpn, tag, pfn, &mut self.ids)
            };
            if let Some((victim, victim_pfn)) = evicted {
                self.on_evict(kind, f.depth as usize, victim, victim_pfn);
            }
        }
    }

    fn on_evict(&mut self, kind: AccessKind, depth: usize, victim: u64, victim_pfn: u64) {
        let size = tag_size(victim);
        let vpn = tag_vpn(victim);
        match self.inclusion {
            Inclusion::NonInclusive => {}
            Inclusion::Inclusive => {
                // Back-invalidate every inner array (of any side) holding the same translation.
                let level = self.views[self.paths[kind as usize][depth] as usize].level;
                for (i, s) in self.specs.iter().enumerate() {
                    if s.level < level && self.arrays[i].holds(size) {
                        self.arrays[i].invalidate_tag(victim, &mut self.ids);
                    }
                }
            }
            Inclusion::Exclusive => {
                // A level-n victim moves to level n+1 (no further cascade beyond it).
                let fill = &self.fills[kind as usize][size as usize];
                if let Some(f) =
                    fill.steps[..fill.len as usize].iter().find(|f| f.depth as usize == depth + 1)
                {
                    self.arrays[f.array as usize].insert(vpn, victim, victim_pfn, &mut self.ids);
                }
            }
        }
    }

    /// Whether some level would translate `va` in address space `asid` (with an entry of that
    /// address space or a global one), and with what: the page size and the stored pfn. Changes
    /// nothing (no replacement state, no counters). Probes the live page sizes of every array,
    /// level by level; within a set it picks what a lookup would.
    pub fn peek(&self, va: u64, asid: u16) -> Option<(PageSize, u64)> {
        let id = self.ids.key(asid);
        if id == NO_ID && !self.globals {
            return None; // nothing of this ASID is cached (e.g. since its last full flush)
        }
        for &a in &self.by_level {
            let arr = &self.arrays[a as usize];
            for size in PageSize::ALL {
                if arr.holds(size) && self.sizes_live & (1 << size as u8) != 0 {
                    let vpn = vpn_of(va, size);
                    if let Some(pfn) = arr.peek(vpn, make_tag(vpn, size, id)) {
                        return Some((size, pfn));
                    }
                }
            }
        }
        None
    }

    /// [`Self::peek`] of a translation that can only have page size `size`: its stored pfn.
    pub fn peek_sized(&self, va: u64, asid: u16, size: PageSize) -> Option<u64> {
        let id = self.ids.key(asid);
        if id == NO_ID && !self.globals {
            return None;
        }
        let vpn = vpn_of(va, size);
        self.by_level
            .iter()
            .map(|&a| &self.arrays[a as usize])
            .filter(|arr| arr.holds(size))
            .find_map(|arr| arr.peek(vpn, make_tag(vpn, size, id)))
    }

    /// Whether any non-global entry of `asid` may be cached (false from a full flush of it
    /// until its next fill).
    pub fn may_hold(&self, asid: u16) -> bool {
        self.ids.key(asid & MAX_ASID) != NO_ID
    }

    /// INVLPG: drops the translation of `va` in address space `asid` (and any global one) from
    /// every level and every page size that could cover it.
    pub fn invlpg(&mut self, va: u64, asid: u16) -> u64 {
        self.flushes.invlpg += 1;
        let id = self.ids.key(asid);
        let mut n = 0;
        for arr in &mut self.arrays {
            for size in PageSize::ALL {
                if arr.holds(size) && self.sizes_live & (1 << size as u8) != 0 {
                    n += arr.invalidate_vpn(vpn_of(va, size), size, id, true, &mut self.ids);
                }
            }
        }
        self.flushes.entries_invalidated += n;
        n
    }

    /// A flushing CR3 write: every non-global entry of `asid`. O(1) amortized: the entries go
    /// stale with their id.
    pub fn flush_asid(&mut self, asid: u16) -> u64 {
        self.flushes.flush_asid += 1;
        let asid = asid & MAX_ASID;
        let mut n = 0;
        if self.ids.key(asid) != NO_ID {
            self.track();
            n = self.ids.count[self.ids.key(asid) as usize] as u64;
            if n > 0 {
                // Its entries go stale; it gets a fresh id at its next fill.
                self.ids.unbind(asid);
            }
        }
        self.flushes.entries_invalidated += n;
        n
    }

    /// Every non-global entry of every address space (INVPCID all-context, non-global). O(1)
    /// amortized: every address space gives up its id (named since the last such flush).
    pub fn flush_all_asids(&mut self) -> u64 {
        self.flushes.flush_all_asids += 1;
        self.track();
        let mut n = 0;
        for word in 0..self.ids.named.len() {
            while self.ids.named[word] != 0 {
                let asid = (word * 64 + self.ids.named[word].trailing_zeros() as usize) as u16;
                let id = self.ids.key[asid as usize] as usize;
                let held = self.ids.count[id] as u64;
                self.ids.unbind(asid);
                if held == 0 {
                    self.ids.free.push(id as u16);
                }
                n += held;
            }
        }
        self.flushes.entries_invalidated += n;
        n
    }

    /// Everything, global entries included (CR4.PGE toggle / INVPCID all-context incl. globals).
    pub fn flush_global(&mut self) -> u64 {
        self.flushes.flush_global += 1;
        let n: u64 = self.arrays.iter_mut().map(|a| a.clear_all(&mut self.ids)).sum();
        if self.ids.tracking {
            // No entry is left: every stale id is free again.
            self.ids.recycle_unowned();
        }
        self.flushes.entries_invalidated += n;
        n
    }

    /// The id (key bits) of `asid`, which is about to fill: named now if it has none.
    #[inline(always)]
    fn id_for_fill(&mut self, asid: u16) -> u64 {
        let id = self.ids.key(asid);
        if id != NO_ID {
            id
        } else {
            self.name(asid)
        }
    }

    /// Gives `asid` a free id, purging if none is left (then one is: `asid` holds none, so at
    /// most `NR_IDS - 1` ids are held).
    #[cold]
    #[inline(never)]
    fn name(&mut self, asid: u16) -> u64 {
        if self.ids.free.is_empty() {
            self.purge();
        }
        self.ids.name(asid)
    }

    /// Starts keeping per-id entry counts (see [`AsidIds::tracking`]).
    fn track(&mut self) {
        if !self.ids.tracking {
            self.ids.count.fill(0);
            for a in &self.arrays {
                a.count_ids(&mut self.ids.count);
            }
            self.ids.tracking = true;
            self.build_plans();
        }
    }

    /// Recycles ids: zeroes every stale entry, takes the ids of address spaces holding no entry
    /// back, and frees every id no address space holds. One scan of every array, needed once per
    /// `NR_IDS - (address spaces with entries)` namings.
    fn purge(&mut self) {
        self.ids.purges += 1;
        self.track();
        for a in &mut self.arrays {
            a.clear_stale(&mut self.ids);
        }
        for word in 0..self.ids.named.len() {
            let mut bits = self.ids.named[word];
            while bits != 0 {
                let asid = (word * 64 + bits.trailing_zeros() as usize) as u16;
                bits &= bits - 1;
                if self.ids.count[self.ids.key[asid as usize] as usize] == 0 {
                    self.ids.unbind(asid);
                }
            }
        }
        self.ids.recycle_unowned();
    }

    /// Every live entry with the index of the structure holding it.
    pub fn entries(&self) -> impl Iterator<Item = (usize, Entry)> + '_ {
        self.arrays.iter().enumerate().flat_map(|(i, a)| a.entries(&self.ids).map(move |e| (i, e)))
    }

    /// A copy with the same TLB contents and all counters zeroed (measure after a warm-up).
    pub fn clone_reset_counters(&self) -> TlbHierarchy {
        let mut t = self.clone();
        t.views.iter_mut().for_each(|v| v.counters = LevelCounters::default());
        t.walks = Default::default();
        t.flushes = FlushCounters::default();
        t
    }

    /// Total page walks.
    pub fn total_walks(&self) -> u64 {
        self.walks.iter().flatten().sum()
    }
}

fn view_name(level: u8, side: Side) -> String {
    match (level, side) {
        (n, Side::Instruction) => format!("L{n} ITLB"),
        (n, Side::Data) => format!("L{n} DTLB"),
        (2, Side::Unified) => "STLB".into(),
        (n, Side::Unified) => format!("L{n}"),
    }
}

#[cfg(test)]
mod tests;
