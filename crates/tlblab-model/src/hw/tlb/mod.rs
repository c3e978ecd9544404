//! The per-CPU TLB hierarchy: first-level instruction and data TLBs, second-level STLB / L2 TLBs,
//! each a set-associative array of translations tagged by address-space id, page size and global
//! bit.
//!
//! A lookup probes level 1, then level 2, ..., then reports a miss (the caller walks the page
//! table and calls [`TlbHierarchy::fill`]). Hardware probes the arrays of every page size at a
//! level in parallel; the model does the same, skipping page sizes that were never filled.
//!
//! Hot path rules (docs/design.md#speed): flat arrays per structure, one `u64` tag compare per
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
//!
//! SMT: a hierarchy is one core's, used by its logical processors (`lp`, 0-based within the
//! core; a CPU without SMT is a core of one). A structure the profile calls `per-core` is one
//! array of its size that the siblings share; a `per-thread` one is an array per logical
//! processor. What the siblings share, following Intel's description of Hyper-Threading TLBs
//! (SDM vol. 3A §8.7.13.2; the optimization manual's "competitively shared" DTLBs and STLB,
//! Nehalem to Skylake, as Hadi Brais's summary of it and TLBleed (Gras et al., USENIX Security
//! 2018, §6) read it): the array's sets and its one replacement state per set, so two busy
//! siblings evict each other's entries; not the entries themselves, each tagged with the
//! logical processor that made it (global ones too), so one never hits the other's; and
//! INVLPG, CR3 writes and INVPCID drop only the executing logical processor's entries.
//! Everything a caller asks is asked for one logical processor, whose counters, plans and view
//! of the contents (`peek`, `entries`) are its own.
//!
//! Files: `spec.rs` (page sizes, access kinds, geometry, structure specs, counters), `tag.rs` (the
//! tag layout and the ASID/PCID -> internal id map), `array.rs` (one set-associative array),
//! `replacement.rs` (LRU, tree-PLRU), `plan.rs` (probe and fill plans), `flush.rs` (INVLPG, CR3
//! and INVPCID flushes, `peek`, id recycling), `sized.rs` (lookups of one known page size and
//! level-1 replays: the kernel's own translations); this file: the hierarchy, its lookups and
//! fills.

mod array;
mod flush;
mod plan;
mod replacement;
mod sized;
mod spec;
mod tag;

pub use array::{ArrayView, Entry, TlbArray};
pub use replacement::Replacement;
pub use spec::{
    AccessKind, FlushCounters, Geometry, Inclusion, LevelCounters, LevelView, PageSize, Serves,
    StructureSpec, NR_ACCESS_KINDS, NR_PAGE_SIZES,
};
pub use tag::{MAX_ASID, MAX_LPS};

use plan::{FillPlan, FillStep, Plan, ProbeStep, MAX_STEPS, NO_SIZED, NO_STEP};
use spec::Side;
use tag::*;

/// Array index per access kind and page size of one view, `NONE` if its level cannot hold it.
type ViewArrays = [[u8; NR_PAGE_SIZES]; NR_ACCESS_KINDS];

const NONE: u8 = u8::MAX;
/// Deepest hierarchy supported (`tlblab trace --tlb` may stack this many levels).
pub const MAX_LEVELS: usize = 8;

/// What a TLB entry holds besides its tag: the frame, and what a store through the entry does.
/// The PTE's R/W and dirty bits as the walk found them: R/W and dirty, the store goes through;
/// read-only, it faults; R/W but clean, the CPU must set the PTE's dirty bit first, by walking
/// the page table again (x86: Intel SDM vol. 3A, 4.8 and 4.10.2.3; docs/references/linux-mm.md#write-notify).
/// Packed in one `u64` (`pfn << 2 | clean << 1 | writable`), so a way stays two words and a stamp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct TlbPayload(u64);

impl TlbPayload {
    /// An entry of a read-only PTE, or (`writable`) of a writable and dirty one.
    #[inline(always)]
    pub const fn new(pfn: u64, writable: bool) -> TlbPayload {
        TlbPayload(pfn << 2 | writable as u64)
    }

    /// An entry of a writable PTE whose dirty bit is clear.
    #[inline(always)]
    pub const fn clean(pfn: u64) -> TlbPayload {
        TlbPayload(pfn << 2 | 2)
    }

    #[inline(always)]
    pub const fn pfn(self) -> u64 {
        self.0 >> 2
    }

    /// A store goes through without a walk.
    #[inline(always)]
    pub const fn writable(self) -> bool {
        self.0 & 1 == 1
    }

    /// The PTE is writable but clean: a store walks to set its dirty bit.
    #[inline(always)]
    pub const fn is_clean(self) -> bool {
        self.0 & 2 == 2
    }
}

/// One access as the TLB sees it: the linear address, what kind of access, the address space
/// (ASID/PCID) it is made in, and whether it counts as a kernel or a user access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub va: u64,
    pub kind: AccessKind,
    pub asid: u16,
    pub kernel: bool,
}

/// What a page walk found for an access, which a fill installs: the page size, the payload and
/// whether the entry is global (matches every address space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    pub size: PageSize,
    pub payload: TlbPayload,
    pub global: bool,
}

/// Where a lookup was satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Hit at `level` (1-based) with the cached payload and page size.
    Hit { level: u8, payload: TlbPayload, size: PageSize },
    /// Missed every level: the caller walks the page table and calls `fill`.
    Miss,
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

    /// The page bits of a way holding the translation of the page of size `size` at `va` (its
    /// size and vpn), for [`L1Way::is_page`]; 0 only for the 4K page at 0.
    #[inline(always)]
    pub fn page_key(va: u64, size: PageSize) -> u64 {
        make_tag(vpn_of(va, size), size, 0) & PAGE_BITS
    }

    /// Whether the way was found for the page whose [`L1Way::page_key`] is `page` (never for
    /// [`L1Way::NONE`] with a page other than the 4K one at 0): the page is in the key. A caller
    /// that remembers one way per translation asks this instead of keeping the address beside it.
    #[inline(always)]
    pub fn is_page(&self, page: u64) -> bool {
        self.key & PAGE_BITS == page
    }
}

/// One core's TLBs (see the module docs for SMT): the arrays, and each logical processor's side.
#[derive(Debug, Clone)]
// In declaration order (`repr(C)`), line-aligned: the arrays and the ids' tables (what every
// lookup, fill and replayed hit reads first) share the first host cache line, the sides the next.
#[repr(C, align(64))]
pub struct TlbHierarchy {
    /// Logical processor 0's arrays in spec order (the shared ones included), then the other
    /// logical processors' own copies of the per-thread structures.
    arrays: Vec<TlbArray>,
    /// (Logical processor, architectural address-space id) to the ids the tags hold.
    ids: AsidIds,
    lps: Vec<Lp>,
    specs: Vec<StructureSpec>,
    replacement: Replacement,
    inclusion: Inclusion,
}

/// What one logical processor of a core has of its own: which arrays it uses, its plans and
/// its counters.
#[derive(Debug, Clone)]
struct Lp {
    /// Per structure (spec order): the array it uses.
    arrays: Vec<u8>,
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
    /// Page sizes it ever filled: its lookups skip the rest (a sibling's entries never hit).
    sizes_live: u8,
    /// It ever filled a global entry (else a probe needs one compare per way, see
    /// [`TlbArray::probe`]).
    globals: bool,
    /// The id bits of its global entries ([`tag::lp_gid`]).
    gid: u64,
    /// Its arrays by level (then in spec order): the order [`TlbHierarchy::peek`] probes them in.
    by_level: Vec<u8>,
    /// Accesses that missed every level (page walks), `[kind][user/kernel]`.
    walks: [[u64; 2]; NR_ACCESS_KINDS],
    flushes: FlushCounters,
}

impl TlbHierarchy {
    /// Builds the hierarchy of one hardware thread (a core of one logical processor).
    /// Structures at the same level, side and page size are an error.
    pub fn new(
        specs: &[StructureSpec],
        replacement: Replacement,
        inclusion: Inclusion,
    ) -> Result<TlbHierarchy, String> {
        TlbHierarchy::new_core(specs, &vec![false; specs.len()], 1, replacement, inclusion)
    }

    /// Builds the hierarchy of a core of `lps` logical processors: structure `i` is one array
    /// they share if `shared[i]` (a profile's `sharing = "per-core"`), else one array each.
    pub fn new_core(
        specs: &[StructureSpec],
        shared: &[bool],
        lps: usize,
        replacement: Replacement,
        inclusion: Inclusion,
    ) -> Result<TlbHierarchy, String> {
        if specs.is_empty() {
            return Err("a TLB hierarchy needs at least one structure".into());
        }
        if !(1..=MAX_LPS).contains(&lps) {
            return Err(format!("{lps} logical processors per core: allowed 1 ..= {MAX_LPS}"));
        }
        assert_eq!(shared.len(), specs.len(), "one sharing flag per structure");
        let private = shared.iter().filter(|s| !**s).count();
        if specs.len() + (lps - 1) * private >= NONE as usize {
            return Err("too many TLB structures".into());
        }
        let mut arrays: Vec<TlbArray> =
            specs.iter().map(|s| TlbArray::new(s.geometry, replacement, &s.page_sizes)).collect();
        let mut maps: Vec<Vec<u8>> = vec![(0..specs.len() as u8).collect()];
        for _ in 1..lps {
            let map = specs
                .iter()
                .zip(shared)
                .enumerate()
                .map(|(i, (s, &shared))| {
                    if shared {
                        i as u8
                    } else {
                        arrays.push(TlbArray::new(s.geometry, replacement, &s.page_sizes));
                        (arrays.len() - 1) as u8
                    }
                })
                .collect();
            maps.push(map);
        }
        // Every id a purge keeps is held by a (logical processor, address space) with an entry:
        // with fewer entries than ids, one is always free. One logical processor cannot run out
        // (it has as many address spaces as there are ids).
        let entries: u64 = arrays.iter().map(|a| a.geometry.entries() as u64).sum();
        if lps > 1 && entries >= tag::NR_IDS as u64 {
            return Err(format!(
                "a core of {lps} logical processors holds at most {} TLB entries in all ({entries} here)",
                tag::NR_IDS - 1
            ));
        }
        let sides: Vec<Lp> = maps
            .into_iter()
            .enumerate()
            .map(|(lp, map)| Lp::new(specs, map, lp))
            .collect::<Result<_, _>>()?;
        let mut t = TlbHierarchy {
            arrays,
            specs: specs.to_vec(),
            ids: AsidIds::new(sides.len()),
            lps: sides,
            replacement,
            inclusion,
        };
        t.build_plans();
        Ok(t)
    }

    /// Logical processors of the core.
    pub fn lps(&self) -> usize {
        self.lps.len()
    }

    /// Logical processor `lp`'s levels and their counters.
    pub fn views(&self, lp: usize) -> &[LevelView] {
        &self.lps[lp].views
    }

    /// Logical processor `lp`'s accesses that missed every level (page walks),
    /// `[kind][user/kernel]`.
    pub fn walks(&self, lp: usize) -> [[u64; 2]; NR_ACCESS_KINDS] {
        self.lps[lp].walks
    }

    /// Logical processor `lp`'s invalidations.
    pub fn flushes(&self, lp: usize) -> &FlushCounters {
        &self.lps[lp].flushes
    }

    pub fn specs(&self) -> &[StructureSpec] {
        &self.specs
    }

    /// The structures, in spec order, as their contents look to logical processor `lp`.
    pub fn arrays(&self, lp: usize) -> Vec<ArrayView<'_>> {
        self.lps[lp]
            .arrays
            .iter()
            .map(|&a| ArrayView { array: &self.arrays[a as usize], ids: &self.ids, lp })
            .collect()
    }

    pub fn inclusion(&self) -> Inclusion {
        self.inclusion
    }

    /// Translates `a.va` for `a.kind` in address space `a.asid` on logical processor `lp`,
    /// counted as a user or kernel access (`a.kernel`). On a hit below level 1 the entry is
    /// filled into the inner levels as the inclusion policy says.
    #[inline]
    pub fn lookup(&mut self, lp: usize, a: Access) -> Lookup {
        self.lookup_of(lp, a)
    }

    /// [`Self::lookup`], inlined.
    #[inline(always)]
    fn lookup_of(&mut self, lp: usize, a: Access) -> Lookup {
        let len = self.lps[lp].plans[a.kind as usize].len as usize;
        self.probe_steps(lp, a.va, a.kind, a.asid, a.kernel, 0..len, None, false)
    }

    /// The lookup proper: the plan's steps `steps` (indices into its `steps`, in plan order)
    /// for `kind`, each probing its array (only those of page size `only`, when given: a probe
    /// of another size cannot hit) and counting a miss where a level ends; a hit is promoted.
    /// `known_miss`: the caller knows no entry can match, so no array is probed (a missing probe
    /// changes nothing) and only the counters move. Shared by the full lookup and the sized ones
    /// (hw/tlb/sized.rs).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn probe_steps(
        &mut self,
        lp: usize,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        steps: impl Iterator<Item = usize>,
        only: Option<PageSize>,
        known_miss: bool,
    ) -> Lookup {
        let k = kind as usize;
        let priv_ = kernel as usize;
        let id = self.ids.key(lp, asid);
        let side = &mut self.lps[lp];
        let (one_key, gid) = (!side.globals, side.gid);
        let plan = &side.plans[k];
        // Nothing of `asid` is cached and no global entry exists: every probe would miss (and a
        // missing probe changes nothing).
        let hopeless = known_miss || (id == NO_ID && one_key);
        for i in steps {
            let s = &plan.steps[i];
            if s.array != NONE && !hopeless && only.is_none_or(|z| s.size == z) {
                let vpn = (va << (64 - 57)) >> s.vpn_shift;
                let want = s.tag_base | vpn << VPN_SHIFT | id;
                let arr = &mut self.arrays[s.array as usize];
                if let Some((tag, payload)) = arr.probe::<false>(vpn, want, one_key, gid) {
                    side.views[s.view as usize].counters.hits[k][priv_] += 1;
                    let s = *s;
                    if s.depth > 0 {
                        self.promote(lp, kind, &s, vpn, want, tag, payload);
                    }
                    return Lookup::Hit { level: s.level, payload, size: s.size };
                }
            }
            if s.ends_level {
                side.views[s.view as usize].counters.misses[k][priv_] += 1;
            }
        }
        side.walks[k][priv_] += 1;
        Lookup::Miss
    }

    /// [`Self::lookup`], and on a miss [`Self::fill`] with `t`: what a caller with a page table
    /// that maps every page does.
    ///
    /// Fused, the fill skips what the lookup just proved: the translation is in no array, so no
    /// stale copy needs replacing; and on the common shape (see `Plan::chain`) each level picks
    /// its victim way while the probe has the set at hand, so a fill is a plain store.
    #[inline(always)]
    pub fn lookup_or_fill(&mut self, lp: usize, a: Access, t: Translation) -> Lookup {
        let plan = &self.lps[lp].plans[a.kind as usize];
        // The chain's probes match one key per way (no global entry exists), so they also cover
        // what a non-global fill replaces.
        if plan.chain && plan.steps[0].size == t.size && !t.global {
            self.chain_lookup_or_fill(lp, a, t.payload)
        } else {
            self.lookup_then_fill(lp, a, t)
        }
    }

    /// [`Self::lookup_or_fill`] off the fast path.
    #[inline(never)]
    fn lookup_then_fill(&mut self, lp: usize, a: Access, t: Translation) -> Lookup {
        let r = self.lookup(lp, a);
        if r == Lookup::Miss {
            self.fill_inner(lp, a, t, true);
        }
        r
    }

    /// [`Self::lookup_or_fill`] on a chain plan, of a non-global translation: one probe per level,
    /// LRU, non-inclusive, no global entry, no stale entry.
    #[inline(always)]
    fn chain_lookup_or_fill(&mut self, lp: usize, a: Access, payload: TlbPayload) -> Lookup {
        let Access { va, kind, asid, kernel } = a;
        let k = kind as usize;
        let priv_ = kernel as usize;
        // `[kind][user/kernel]` counters, flattened once.
        let kp = k * 2 + priv_;
        let id = self.ids.key(lp, asid);
        let side = &mut self.lps[lp];
        let plan = &side.plans[k];
        let steps = &plan.steps[..plan.len as usize];
        // One page size: the same vpn and tag at every level.
        let first = &plan.steps[0];
        let vpn = (va << (64 - 57)) >> first.vpn_shift;
        let mut want = first.tag_base | vpn << VPN_SHIFT | id;
        for (depth, s) in steps.iter().enumerate() {
            // A miss leaves the array's victim way for the fill: nothing else touches the set
            // before it.
            if let Some((tag, hit)) = self.arrays[s.array as usize].probe::<true>(vpn, want, true, 0) {
                side.views[s.view as usize].counters.hits.as_flattened_mut()[kp] += 1;
                // Non-inclusive: copy into the levels that missed, outermost first.
                if depth > 0 {
                    for inner in steps[..depth].iter().rev() {
                        self.arrays[inner.array as usize].put_victim(tag, hit);
                    }
                }
                return Lookup::Hit { level: s.level, payload: hit, size: s.size };
            }
            side.views[s.view as usize].counters.misses.as_flattened_mut()[kp] += 1;
        }
        side.walks.as_flattened_mut()[kp] += 1;
        if want & NO_ID != 0 {
            // The address space's first fill. No entry is stale, so naming does not purge (which
            // would clear ways under the victims just chosen).
            want = (want & !ID_BITS) | self.ids.name(lp, asid);
        }
        for s in steps.iter().rev() {
            self.arrays[s.array as usize].put_victim(want, payload);
        }
        Lookup::Miss
    }

    /// Moves or copies an entry found by step `s` (below level 1) into `lp`'s inner levels.
    #[allow(clippy::too_many_arguments)]
    fn promote(
        &mut self,
        lp: usize,
        kind: AccessKind,
        s: &ProbeStep,
        vpn: u64,
        want: u64,
        tag: u64,
        payload: TlbPayload,
    ) {
        let fill = self.lps[lp].fills[kind as usize][s.size as usize];
        let upto = if self.inclusion == Inclusion::Exclusive {
            // The entry moves to the innermost level holding its page size (level 1 unless that
            // has no array for it; then a hit there is already innermost and stays).
            let inner = fill.steps[0].depth;
            if s.depth == inner {
                return;
            }
            self.arrays[s.array as usize].invalidate_tag(tag, &mut self.ids);
            inner + 1
        } else {
            s.depth
        };
        // The inner levels were just probed for `want` (and its global form); if `tag` is that
        // translation, no stale copy can be there.
        let probed = tag == want;
        let n = fill.steps[..fill.len as usize].iter().take_while(|f| f.depth < upto).count();
        self.fill_levels(lp, kind, &fill.steps[..n], vpn, tag, payload, probed);
    }

    /// Installs translation `t` of `a` on `lp` after a page walk: every level that can hold it
    /// (non-inclusive, inclusive) or level 1 only (exclusive). `a.kernel` is not used.
    pub fn fill(&mut self, lp: usize, a: Access, t: Translation) {
        self.fill_inner(lp, a, t, false);
    }

    /// [`Self::fill`]; `probed`: every level has just missed a lookup of `a`.
    #[inline(always)]
    fn fill_inner(&mut self, lp: usize, a: Access, t: Translation, probed: bool) {
        self.fill_at(lp, a.va, a.kind, a.asid, t.size, t.payload, t.global, probed);
    }

    /// [`Self::fill_inner`] out of line, with scalar arguments (see [`Self::lookup_sized_at`]).
    #[allow(clippy::too_many_arguments)]
    fn fill_at(
        &mut self,
        lp: usize,
        va: u64,
        kind: AccessKind,
        asid: u16,
        size: PageSize,
        payload: TlbPayload,
        global: bool,
        probed: bool,
    ) {
        let vpn = vpn_of(va, size);
        let tag = if global {
            global_key(make_tag(vpn, size, 0)) | self.lps[lp].gid
        } else {
            make_tag(vpn, size, self.id_for_fill(lp, asid))
        };
        let side = &mut self.lps[lp];
        if (global && !side.globals) || side.sizes_live & (1 << size as u8) == 0 {
            side.globals |= global;
            side.sizes_live |= 1 << size as u8;
            self.build_plans();
        }
        // The miss covered the address space's own translation and its global form, so a fill of
        // the former has no copy to replace; a global one may still have an alias (see
        // [`AsidIds::alias`]), left to [`TlbArray::insert`].
        let probed = probed && !global;
        let fill = self.lps[lp].fills[kind as usize][size as usize];
        self.fill_levels(lp, kind, &fill.steps[..fill.walk_len as usize], vpn, tag, payload, probed);
    }

    /// Writes `tag` into the arrays of `steps`, outermost first so inclusive back-invalidation
    /// never removes what it just installed. `probed`: no array holds a copy of `tag` to replace.
    #[allow(clippy::too_many_arguments)]
    fn fill_levels(
        &mut self,
        lp: usize,
        kind: AccessKind,
        steps: &[FillStep],
        vpn: u64,
        tag: u64,
        payload: TlbPayload,
        probed: bool,
    ) {
        for f in steps.iter().rev() {
            let arr = &mut self.arrays[f.array as usize];
            let evicted = if probed {
                arr.insert_new(vpn, tag, payload, &mut self.ids)
            } else {
                arr.insert(vpn, tag, payload, &mut self.ids)
            };
            // Non-inclusive levels ignore each other's evictions (the common case, kept off the
            // eviction path).
            if let Some((victim, victim_payload)) =
                evicted.filter(|_| self.inclusion != Inclusion::NonInclusive)
            {
                self.on_evict(lp, kind, f.depth as usize, victim, victim_payload);
            }
        }
    }

    /// What evicting `victim` from `lp`'s level at `depth` does to the other levels. The victim
    /// may be a sibling's entry (a shared array): its copies are then in the sibling's arrays,
    /// and the sibling's levels are the ones to update.
    fn on_evict(
        &mut self,
        lp: usize,
        kind: AccessKind,
        depth: usize,
        victim: u64,
        victim_payload: TlbPayload,
    ) {
        let size = tag_size(victim);
        let vpn = tag_vpn(victim);
        let level = self.lps[lp].views[self.lps[lp].paths[kind as usize][depth] as usize].level;
        let owner = &self.lps[self.ids.lp_of(victim)];
        match self.inclusion {
            Inclusion::NonInclusive => {}
            Inclusion::Inclusive => {
                // Back-invalidate every inner array (of any side) holding the same translation.
                for (s, &a) in self.specs.iter().zip(&owner.arrays) {
                    if s.level < level && self.arrays[a as usize].holds(size) {
                        self.arrays[a as usize].invalidate_tag(victim, &mut self.ids);
                    }
                }
            }
            Inclusion::Exclusive => {
                // A level-n victim moves to the next level out that holds its page size (no
                // further cascade beyond it).
                let fill = &owner.fills[kind as usize][size as usize];
                if let Some(f) = fill.steps[..fill.len as usize].iter().find(|f| f.depth as usize > depth) {
                    self.arrays[f.array as usize].insert(vpn, victim, victim_payload, &mut self.ids);
                }
            }
        }
    }

    /// Every live entry of logical processor `lp` with the index of the structure holding it.
    pub fn entries(&self, lp: usize) -> impl Iterator<Item = (usize, Entry)> + '_ {
        self.lps[lp]
            .arrays
            .iter()
            .enumerate()
            .flat_map(move |(i, &a)| self.arrays[a as usize].entries(&self.ids, lp).map(move |e| (i, e)))
    }

    /// A copy with the same TLB contents and all counters zeroed (measure after a warm-up).
    pub fn clone_reset_counters(&self) -> TlbHierarchy {
        let mut t = self.clone();
        for side in &mut t.lps {
            side.views.iter_mut().for_each(|v| v.counters = LevelCounters::default());
            side.walks = Default::default();
            side.flushes = FlushCounters::default();
        }
        t
    }

    /// Total page walks of logical processor `lp`.
    pub fn total_walks(&self, lp: usize) -> u64 {
        self.lps[lp].walks.iter().flatten().sum()
    }
}

impl Lp {
    /// Logical processor `lp`'s side, using array `map[i]` for structure `i`.
    fn new(specs: &[StructureSpec], map: Vec<u8>, lp: usize) -> Result<Lp, String> {
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
                        let other = map.iter().position(|&a| a == *slot).expect("mapped array");
                        return Err(format!(
                            "structures `{}` and `{}` both hold level-{} {} pages for {:?} accesses",
                            specs[other].name,
                            s.name,
                            s.level,
                            p.name(),
                            kind
                        ));
                    }
                    *slot = map[i];
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
        let empty_plan =
            Plan { len: 0, steps: [NO_STEP; MAX_STEPS], chain: false, sized: [NO_SIZED; NR_PAGE_SIZES] };
        let empty_fill =
            FillPlan { len: 0, walk_len: 0, steps: [FillStep { array: NONE, depth: 0 }; MAX_LEVELS] };
        let mut order: Vec<usize> = (0..specs.len()).collect();
        order.sort_by_key(|&i| specs[i].level);
        Ok(Lp {
            by_level: order.iter().map(|&i| map[i]).collect(),
            arrays: map,
            views,
            view_arrays,
            paths,
            depths,
            plans: [empty_plan.clone(), empty_plan.clone(), empty_plan],
            fills: [[empty_fill; NR_PAGE_SIZES]; NR_ACCESS_KINDS],
            sizes_live: 0,
            globals: false,
            gid: lp_gid(lp),
            walks: Default::default(),
            flushes: FlushCounters::default(),
        })
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
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_sized;
#[cfg(test)]
mod tests_smt;
