//! Lookups of a translation whose page size is known (the kernel's own mappings, and user
//! accesses once the walk has told the size), and replays of a level-1 hit: the hot path of the
//! kernel's own translations (linux/arch/x86/text.rs), which replays most of its touches.

use super::tag::*;
use super::{Access, AccessKind, L1Way, Lookup, PageSize, TlbHierarchy, Translation, NONE};

impl TlbHierarchy {
    /// [`Self::lookup_or_fill`] of a translation that only ever has page size `t.size` (the
    /// kernel's own mappings: image text in 2M pages, the direct map in 1G or 2M, stacks in 4K):
    /// probes only the arrays holding that size. A probe of another size could not hit, and a
    /// missing probe changes nothing, so replacement state, counters and the result are those
    /// of the full lookup, at a fraction of the probes.
    pub fn lookup_or_fill_sized(&mut self, lp: usize, a: Access, t: Translation) -> Lookup {
        let r = self.lookup_sized(lp, a, t.size);
        if r == Lookup::Miss {
            self.fill_inner(lp, a, t, true);
        }
        r
    }

    /// [`Self::lookup`] of a translation that can only have page size `size` (see
    /// [`Self::lookup_or_fill_sized`]): the same result, counters and replacement state.
    #[inline]
    pub fn lookup_sized(&mut self, lp: usize, a: Access, size: PageSize) -> Lookup {
        self.lookup_sized_at(lp, a.va, a.kind, a.asid, a.kernel, size)
    }

    /// Nothing of `asid` is cached on `lp` (no entry keyed by it is live) and `lp` has no global
    /// entry: until `lp` fills, every lookup in `asid` misses. A caller that then fills only
    /// pages it has not looked up since may skip the probes ([`Self::miss_then_fill_sized`]).
    #[inline]
    pub fn uncached(&self, lp: usize, asid: u16) -> bool {
        self.ids.key(lp, asid) == NO_ID && !self.lps[lp].globals
    }

    /// [`Self::lookup_or_fill_sized`] of a translation known to miss every level: its page was
    /// not filled since [`Self::uncached`] held for the address space (so no entry, of the new
    /// id or global, can match it). The lookup's effects are then its counters alone (a probe
    /// that misses changes nothing): a miss at every level of the access's path, and a walk.
    pub fn miss_then_fill_sized(&mut self, lp: usize, a: Access, t: Translation) {
        // Known to miss: no probe, the counters alone.
        self.probe_sized(lp, a.va, a.kind, a.asid, a.kernel, t.size, true);
        self.fill_inner(lp, a, t, true);
    }

    /// [`Self::lookup_sized`] out of line. Its arguments are scalars, not an [`Access`]: the
    /// engine calls it for every user access, and scalars travel in registers where a struct of
    /// mixed fields is passed through memory.
    #[inline(never)]
    fn lookup_sized_at(
        &mut self,
        lp: usize,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        size: PageSize,
    ) -> Lookup {
        self.probe_sized(lp, va, kind, asid, kernel, size, false)
    }

    /// The steps that probe an array of `size` or close a level, probed (every other step of the
    /// plan does nothing for such a lookup: `plan::SizedSteps`); copied out, so the probes can
    /// borrow the hierarchy.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn probe_sized(
        &mut self,
        lp: usize,
        va: u64,
        kind: AccessKind,
        asid: u16,
        kernel: bool,
        size: PageSize,
        known_miss: bool,
    ) -> Lookup {
        let sized = self.lps[lp].plans[kind as usize].sized[size as usize];
        let steps = sized.steps[..sized.len as usize].iter().map(|&i| i as usize);
        self.probe_steps(lp, va, kind, asid, kernel, steps, Some(size), known_miss)
    }

    /// Where the translation of `a.va` (page size `size`) sits at level 1, read just after a
    /// [`Self::lookup_or_fill_sized`] of it, which leaves it there (hit, promoted or filled) as
    /// the last slot its level-1 array touched. `None` if it is not there (no level-1 array of
    /// that size, or a later touch of the array came in between). Changes nothing.
    pub fn l1_way(&self, lp: usize, a: Access, size: PageSize) -> Option<L1Way> {
        let side = &self.lps[lp];
        let plan = &side.plans[a.kind as usize];
        let l1 = plan.sized[size as usize].l1;
        if l1 == NONE {
            return None;
        }
        let s = &plan.steps[l1 as usize];
        let vpn = (a.va << (64 - 57)) >> s.vpn_shift;
        let want = s.tag_base | vpn << VPN_SHIFT | self.ids.key(lp, a.asid);
        let arr = &self.arrays[s.array as usize];
        let key = arr.slots[arr.last as usize].key;
        (key == want || key == global_key(want) | side.gid).then_some(L1Way {
            key,
            slot: arr.last,
            array: s.array,
            view: s.view,
        })
    }

    /// Whether a lookup in `asid` on `lp` would still hit `way` (which [`Self::l1_way`] gave
    /// `lp`) first. A non-global entry's key holds the id its address space had when it was
    /// filled: the key still matches iff the address space still has that id (a flush takes it
    /// away; an id is handed out again only once no entry holds it), so the way holds a live
    /// entry a lookup matches. A sibling sharing the array can evict the way but never write
    /// the same key (its ids and global id bits are its own). The one-match condition
    /// of [`Self::l1_way`] holds as long as no second copy of the page is filled, which the
    /// callers' fixed-size, fixed-globalness translations never do.
    #[inline]
    pub fn still_hits(&self, lp: usize, way: &L1Way, asid: u16) -> bool {
        self.arrays[way.array as usize].slots[way.slot as usize].key == way.key
            && (way.key & GLOBAL != 0 || way.key & ID_BITS == self.ids.key(lp, asid))
    }

    /// What a level-1 hit on `way` (which [`Self::still_hits`]) does: the replacement update
    /// and the hit count.
    pub fn rehit(&mut self, lp: usize, way: &L1Way, kind: AccessKind, kernel: bool) {
        self.arrays[way.array as usize].touch_slot(way.slot as usize);
        self.lps[lp].views[way.view as usize].counters.hits[kind as usize][kernel as usize] += 1;
    }

    /// The key bits of `asid` on `lp`, for [`Self::replay_hit`]: they change only when `asid`
    /// is flushed or, after a flush, fills again.
    #[inline]
    pub fn asid_key(&self, lp: usize, asid: u16) -> u64 {
        self.ids.key(lp, asid)
    }

    /// [`Self::still_hits`] for the address space whose [`Self::asid_key`] is `id`, and if it
    /// does, [`Self::rehit`]: returns whether it replayed the hit. One visit to the way instead
    /// of two (the kernel paths replay most of their touches).
    #[inline]
    pub fn replay_hit(&mut self, lp: usize, way: &L1Way, id: u64, kind: AccessKind, kernel: bool) -> bool {
        let arr = &mut self.arrays[way.array as usize];
        if arr.slots[way.slot as usize].key != way.key || (way.key & GLOBAL == 0 && way.key & ID_BITS != id) {
            return false;
        }
        arr.touch_slot(way.slot as usize);
        self.lps[lp].views[way.view as usize].counters.hits[kind as usize][kernel as usize] += 1;
        true
    }
}
