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
    pub const ALL: [PageSize; NR_PAGE_SIZES] = [
        PageSize::Size4K,
        PageSize::Size512K,
        PageSize::Size2M,
        PageSize::Size8M,
        PageSize::Size1G,
    ];

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
        PageSize::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
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
    pub const ALL: [AccessKind; NR_ACCESS_KINDS] =
        [AccessKind::Fetch, AccessKind::Load, AccessKind::Store];
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

// Tag layout: valid | global | page size (3 bits) | vpn (45 bits: a 57-bit linear address) | asid (12).
// A global entry is stored with asid 0, so a lookup is two plain compares per way: against the
// asid-tagged key and against the global key.
const VALID: u64 = 1 << 63;
const GLOBAL: u64 = 1 << 62;
const SIZE_SHIFT: u32 = 57;
const VPN_SHIFT: u32 = 12;
const ASID_MASK: u64 = (1 << VPN_SHIFT) - 1;
const LA_MASK: u64 = (1 << 57) - 1;

/// The largest address-space id a tag can hold.
pub const MAX_ASID: u16 = ASID_MASK as u16;

#[inline(always)]
fn vpn_of(va: u64, size: PageSize) -> u64 {
    (va & LA_MASK) >> size.shift()
}

#[inline(always)]
fn make_tag(vpn: u64, size: PageSize, asid: u16) -> u64 {
    VALID | ((size as u64) << SIZE_SHIFT) | (vpn << VPN_SHIFT) | asid as u64
}

/// The tag of a global entry that would translate a lookup for `want`.
#[inline(always)]
fn global_key(want: u64) -> u64 {
    (want & !ASID_MASK) | GLOBAL
}

/// Does a stored tag translate a lookup for `want` (same vpn and size; same asid or global)?
#[inline(always)]
fn tag_matches(tag: u64, want: u64, want_global: u64) -> bool {
    (tag == want) | (tag == want_global)
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

/// One set-associative array (one TLB structure).
///
/// True LRU keeps each set ordered by recency (most recent in way 0): a hit rotates the entry to
/// the front, a fill drops the last way. Tree-PLRU keeps entries in place and one bit tree per set.
#[derive(Debug, Clone)]
pub struct TlbArray {
    geometry: Geometry,
    set_mask: u64,
    ways: usize,
    replacement: Replacement,
    /// `sets * ways` tags, set-major.
    tags: Vec<u64>,
    /// Physical frame of each entry (read on hits and by the safety oracle).
    pfns: Vec<u64>,
    /// PLRU only: one tree per set.
    plru: Vec<u64>,
    page_sizes: u8,
}

impl TlbArray {
    pub fn new(geometry: Geometry, replacement: Replacement, page_sizes: &[PageSize]) -> TlbArray {
        assert!(
            replacement == Replacement::Lru
                || (geometry.ways.is_power_of_two() && geometry.ways <= 64),
            "tree-PLRU needs a power-of-two number of ways <= 64"
        );
        let n = geometry.entries() as usize;
        TlbArray {
            geometry,
            set_mask: geometry.sets as u64 - 1,
            ways: geometry.ways as usize,
            replacement,
            tags: vec![0; n],
            pfns: vec![0; n],
            plru: if replacement == Replacement::Plru {
                vec![0; geometry.sets as usize]
            } else {
                Vec::new()
            },
            page_sizes: page_sizes.iter().fold(0, |m, p| m | 1 << *p as u8),
        }
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn holds(&self, size: PageSize) -> bool {
        self.page_sizes & (1 << size as u8) != 0
    }

    #[inline(always)]
    fn set_base(&self, vpn: u64) -> usize {
        ((vpn & self.set_mask) as usize) * self.ways
    }

    /// Probes for a translation; on a hit updates replacement state and returns the entry's slot.
    #[inline(always)]
    fn probe(&mut self, vpn: u64, want: u64) -> Option<usize> {
        let base = self.set_base(vpn);
        let set = &self.tags[base..base + self.ways];
        let g = global_key(want);
        // Fixed-width scans for the common associativities compile to straight-line compares.
        let way = match self.ways {
            1 => scan::<1>(set, want, g),
            2 => scan::<2>(set, want, g),
            4 => scan::<4>(set, want, g),
            8 => scan::<8>(set, want, g),
            16 => scan::<16>(set, want, g),
            _ => set.iter().position(|&tag| tag_matches(tag, want, g)),
        }?;
        Some(self.touch(base, way))
    }

    /// Marks `way` most recently used; returns the entry's slot afterwards.
    #[inline(always)]
    fn touch(&mut self, base: usize, way: usize) -> usize {
        match self.replacement {
            Replacement::Lru => {
                if way > 0 {
                    // Shift the more recent entries down one way (a short loop beats memmove).
                    let tags = &mut self.tags[base..=base + way];
                    let pfns = &mut self.pfns[base..=base + way];
                    let (t, p) = (tags[way], pfns[way]);
                    for i in (0..way).rev() {
                        tags[i + 1] = tags[i];
                        pfns[i + 1] = pfns[i];
                    }
                    tags[0] = t;
                    pfns[0] = p;
                }
                base
            }
            Replacement::Plru => {
                plru_touch(&mut self.plru[base / self.ways], way, self.ways);
                base + way
            }
        }
    }

    /// Inserts a translation (replacing an existing copy of it, else an invalid way, else the
    /// replacement victim). Returns the tag and pfn of a valid entry it evicted.
    #[inline]
    fn insert(&mut self, vpn: u64, tag: u64, pfn: u64) -> Option<(u64, u64)> {
        let base = self.set_base(vpn);
        let key = tag & !GLOBAL;
        let set = &self.tags[base..base + self.ways];
        let (way, evicts) = match set
            .iter()
            .position(|&t| t & !GLOBAL == key || t & VALID == 0)
        {
            Some(w) => (w, false),
            None => match self.replacement {
                Replacement::Lru => (self.ways - 1, true),
                Replacement::Plru => (plru_victim(self.plru[base / self.ways], self.ways), true),
            },
        };
        // An invalid way may sit before a stale copy of the same translation: drop that copy.
        if !evicts && set[way] & VALID == 0 {
            if let Some(dup) = set[way + 1..].iter().position(|&t| t & !GLOBAL == key) {
                self.tags[base + way + 1 + dup] = 0;
            }
        }
        let old = (self.tags[base + way], self.pfns[base + way]);
        self.tags[base + way] = tag;
        self.pfns[base + way] = pfn;
        self.touch(base, way);
        evicts.then_some(old)
    }

    /// Removes entries for `vpn`/`size` matching `asid` (and, if `include_global`, global ones).
    fn invalidate_vpn(&mut self, vpn: u64, size: PageSize, asid: u16, include_global: bool) -> u64 {
        let want = make_tag(vpn, size, asid);
        let g = global_key(want);
        let base = self.set_base(vpn);
        let mut n = 0;
        for t in &mut self.tags[base..base + self.ways] {
            if *t == want || (include_global && *t == g) {
                *t = 0;
                n += 1;
            }
        }
        n
    }

    /// Removes every entry `keep` rejects; returns how many were valid.
    fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) -> u64 {
        let mut n = 0;
        for t in &mut self.tags {
            if *t & VALID != 0 && !keep(*t) {
                *t = 0;
                n += 1;
            }
        }
        n
    }

    /// Every valid entry, for inspection and the safety oracle.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        self.tags
            .iter()
            .zip(&self.pfns)
            .filter(|(t, _)| **t & VALID != 0)
            .map(|(&t, &pfn)| Entry {
                vpn: (t & !(VALID | GLOBAL) & ((1 << SIZE_SHIFT) - 1)) >> VPN_SHIFT,
                size: PageSize::ALL[((t >> SIZE_SHIFT) & 7) as usize],
                asid: (t & ASID_MASK) as u16,
                global: t & GLOBAL != 0,
                pfn,
            })
    }
}

/// The first way of a `W`-way set whose tag matches, computed branch-free.
#[inline(always)]
fn scan<const W: usize>(set: &[u64], want: u64, want_global: u64) -> Option<usize> {
    let set: &[u64; W] = set.try_into().ok()?;
    let mut hits = 0u32;
    for (w, &tag) in set.iter().enumerate() {
        hits |= (tag_matches(tag, want, want_global) as u32) << w;
    }
    (hits != 0).then(|| hits.trailing_zeros() as usize)
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
    /// Array index per access kind and page size, `NONE` if this level cannot hold it.
    arrays: [[u8; NR_PAGE_SIZES]; NR_ACCESS_KINDS],
    pub counters: LevelCounters,
}

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

/// One hardware thread's TLBs.
#[derive(Debug, Clone)]
pub struct TlbHierarchy {
    arrays: Vec<TlbArray>,
    specs: Vec<StructureSpec>,
    views: Vec<LevelView>,
    /// `paths[kind][..depths[kind]]` = view indices, innermost first.
    paths: [[u8; MAX_LEVELS]; NR_ACCESS_KINDS],
    depths: [u8; NR_ACCESS_KINDS],
    inclusion: Inclusion,
    /// Page sizes ever filled: lookups skip the rest.
    sizes_live: u8,
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
        let arrays: Vec<TlbArray> = specs
            .iter()
            .map(|s| TlbArray::new(s.geometry, replacement, &s.page_sizes))
            .collect();
        // Group structures into views by (level, side).
        let mut views: Vec<LevelView> = Vec::new();
        let mut view_side: Vec<Side> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let side = s.serves.side();
            let v = match views
                .iter()
                .zip(&view_side)
                .position(|(v, vs)| v.level == s.level && *vs == side)
            {
                Some(v) => v,
                None => {
                    views.push(LevelView {
                        name: view_name(s.level, side),
                        level: s.level,
                        arrays: [[NONE; NR_PAGE_SIZES]; NR_ACCESS_KINDS],
                        counters: LevelCounters::default(),
                    });
                    view_side.push(side);
                    members.push(Vec::new());
                    views.len() - 1
                }
            };
            members[v].push(i);
            for kind in AccessKind::ALL.into_iter().filter(|&k| s.serves.covers(k)) {
                for &p in &s.page_sizes {
                    let slot = &mut views[v].arrays[kind as usize][p as usize];
                    if *slot != NONE {
                        return Err(format!(
                            "structures `{}` and `{}` both hold level-{} {} pages for {:?} accesses",
                            specs[*slot as usize].name, s.name, s.level, p.name(), kind
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
                if let Some(v) = views.iter().position(|v| {
                    v.level == level && v.arrays[kind as usize].iter().any(|&a| a != NONE)
                }) {
                    let k = kind as usize;
                    paths[k][depths[k] as usize] = v as u8;
                    depths[k] += 1;
                }
            }
        }
        Ok(TlbHierarchy {
            arrays,
            specs: specs.to_vec(),
            views,
            paths,
            depths,
            inclusion,
            sizes_live: 0,
            walks: Default::default(),
            flushes: FlushCounters::default(),
        })
    }

    pub fn views(&self) -> &[LevelView] {
        &self.views
    }

    pub fn specs(&self) -> &[StructureSpec] {
        &self.specs
    }

    pub fn arrays(&self) -> &[TlbArray] {
        &self.arrays
    }

    pub fn inclusion(&self) -> Inclusion {
        self.inclusion
    }

    /// The array of `view` that serves `kind` for `size`, if any.
    #[inline(always)]
    fn array_for(&self, view: usize, kind: AccessKind, size: PageSize) -> Option<usize> {
        let a = self.views[view].arrays[kind as usize][size as usize];
        (a != NONE).then_some(a as usize)
    }

    /// Translates `va` for `kind` in address space `asid`. `kernel` selects the user/kernel
    /// counters. On a hit below level 1 the entry is filled into the inner levels as the
    /// inclusion policy says.
    #[inline]
    pub fn lookup(&mut self, va: u64, kind: AccessKind, asid: u16, kernel: bool) -> Lookup {
        let k = kind as usize;
        let priv_ = kernel as usize;
        for depth in 0..self.depths[k] as usize {
            let view = self.paths[k][depth] as usize;
            let mut live = self.sizes_live;
            while live != 0 {
                let size = PageSize::ALL[live.trailing_zeros() as usize];
                live &= live - 1;
                let Some(a) = self.array_for(view, kind, size) else {
                    continue;
                };
                let vpn = vpn_of(va, size);
                if let Some(slot) = self.arrays[a].probe(vpn, make_tag(vpn, size, asid)) {
                    self.views[view].counters.hits[k][priv_] += 1;
                    let tag = self.arrays[a].tags[slot];
                    let pfn = self.arrays[a].pfns[slot];
                    if depth > 0 {
                        self.promote(kind, depth, a, slot, vpn, size, tag, pfn);
                    }
                    return Lookup::Hit {
                        level: self.views[view].level,
                        pfn,
                        size,
                    };
                }
            }
            self.views[view].counters.misses[k][priv_] += 1;
        }
        self.walks[k][priv_] += 1;
        Lookup::Miss
    }

    /// Moves or copies an entry found at `depth` into the inner levels.
    #[allow(clippy::too_many_arguments)]
    fn promote(
        &mut self,
        kind: AccessKind,
        depth: usize,
        a: usize,
        slot: usize,
        vpn: u64,
        size: PageSize,
        tag: u64,
        pfn: u64,
    ) {
        let upto = if self.inclusion == Inclusion::Exclusive {
            self.arrays[a].tags[slot] = 0;
            1
        } else {
            depth
        };
        self.fill_levels(kind, vpn, size, tag, pfn, upto);
    }

    /// Installs a translation after a page walk: every level that can hold it (non-inclusive,
    /// inclusive) or level 1 only (exclusive).
    pub fn fill(
        &mut self,
        va: u64,
        kind: AccessKind,
        asid: u16,
        size: PageSize,
        pfn: u64,
        global: bool,
    ) {
        let vpn = vpn_of(va, size);
        let tag = if global {
            global_key(make_tag(vpn, size, 0))
        } else {
            make_tag(vpn, size, asid)
        };
        self.sizes_live |= 1 << size as u8;
        let depth = match self.inclusion {
            Inclusion::Exclusive => 1.min(self.depths[kind as usize] as usize),
            _ => self.depths[kind as usize] as usize,
        };
        self.fill_levels(kind, vpn, size, tag, pfn, depth);
    }

    /// Fills levels `0..upto` of `kind`'s path, outermost first so inclusive back-invalidation
    /// never removes what it just installed.
    fn fill_levels(
        &mut self,
        kind: AccessKind,
        vpn: u64,
        size: PageSize,
        tag: u64,
        pfn: u64,
        upto: usize,
    ) {
        let k = kind as usize;
        for depth in (0..upto).rev() {
            let view = self.paths[k][depth] as usize;
            let Some(a) = self.array_for(view, kind, size) else {
                continue;
            };
            if let Some((victim, victim_pfn)) = self.arrays[a].insert(vpn, tag, pfn) {
                self.on_evict(kind, depth, victim, victim_pfn);
            }
        }
    }

    fn on_evict(&mut self, kind: AccessKind, depth: usize, victim: u64, victim_pfn: u64) {
        let size = PageSize::ALL[((victim >> SIZE_SHIFT) & 7) as usize];
        let vpn = (victim & ((1 << SIZE_SHIFT) - 1)) >> VPN_SHIFT;
        match self.inclusion {
            Inclusion::NonInclusive => {}
            Inclusion::Inclusive => {
                // Back-invalidate every inner array (of any side) holding the same translation.
                let level = self.views[self.paths[kind as usize][depth] as usize].level;
                for (i, s) in self.specs.iter().enumerate() {
                    if s.level < level && self.arrays[i].holds(size) {
                        let arr = &mut self.arrays[i];
                        let base = arr.set_base(vpn);
                        for t in &mut arr.tags[base..base + arr.ways] {
                            if *t == victim {
                                *t = 0;
                            }
                        }
                    }
                }
            }
            Inclusion::Exclusive => {
                // A level-n victim moves to level n+1 (no further cascade beyond it).
                let k = kind as usize;
                if depth + 1 < self.depths[k] as usize {
                    let view = self.paths[k][depth + 1] as usize;
                    if let Some(a) = self.array_for(view, kind, size) {
                        self.arrays[a].insert(vpn, victim, victim_pfn);
                    }
                }
            }
        }
    }

    /// INVLPG: drops the translation of `va` in address space `asid` (and any global one) from
    /// every level and every page size that could cover it.
    pub fn invlpg(&mut self, va: u64, asid: u16) -> u64 {
        self.flushes.invlpg += 1;
        let mut n = 0;
        for arr in &mut self.arrays {
            for size in PageSize::ALL {
                if arr.holds(size) && self.sizes_live & (1 << size as u8) != 0 {
                    n += arr.invalidate_vpn(vpn_of(va, size), size, asid, true);
                }
            }
        }
        self.flushes.entries_invalidated += n;
        n
    }

    /// A flushing CR3 write: every non-global entry of `asid`.
    pub fn flush_asid(&mut self, asid: u16) -> u64 {
        self.flushes.flush_asid += 1;
        let n: u64 = self
            .arrays
            .iter_mut()
            .map(|a| a.retain(|t| t & GLOBAL != 0 || (t & ASID_MASK) as u16 != asid))
            .sum();
        self.flushes.entries_invalidated += n;
        n
    }

    /// Every non-global entry of every address space (INVPCID all-context, non-global).
    pub fn flush_all_asids(&mut self) -> u64 {
        self.flushes.flush_all_asids += 1;
        let n: u64 = self
            .arrays
            .iter_mut()
            .map(|a| a.retain(|t| t & GLOBAL != 0))
            .sum();
        self.flushes.entries_invalidated += n;
        n
    }

    /// Everything, global entries included (CR4.PGE toggle / INVPCID all-context incl. globals).
    pub fn flush_global(&mut self) -> u64 {
        self.flushes.flush_global += 1;
        let n: u64 = self.arrays.iter_mut().map(|a| a.retain(|_| false)).sum();
        self.flushes.entries_invalidated += n;
        n
    }

    /// Every valid entry with the index of the structure holding it.
    pub fn entries(&self) -> impl Iterator<Item = (usize, Entry)> + '_ {
        self.arrays
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.entries().map(move |e| (i, e)))
    }

    /// A copy with the same TLB contents and all counters zeroed (measure after a warm-up).
    pub fn clone_reset_counters(&self) -> TlbHierarchy {
        let mut t = self.clone();
        t.views
            .iter_mut()
            .for_each(|v| v.counters = LevelCounters::default());
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
