//! Invalidation (INVLPG, flushing CR3 writes, INVPCID, CR4.PGE toggles), the oracle's
//! side-effect-free `peek`, and handing out and recycling internal address-space ids.
//!
//! Each invalidation acts for the logical processor executing it and drops only its entries:
//! "only the TLB entries that are tagged for that logical processor are guaranteed to be
//! flushed", for every TLB invalidation, CR3 and CR4 writes and INVLPG included (Intel SDM vol.
//! 3A §8.7.13.2). A sibling's entries in a shared array survive.

use super::spec::PageSize;
use super::tag::*;
use super::{TlbHierarchy, TlbPayload};

impl TlbHierarchy {
    /// Whether some level would translate `va` in address space `asid` (with an entry of that
    /// address space or a global one), and with what: the page size and the stored payload. Changes
    /// nothing (no replacement state, no counters). Probes the live page sizes of every array,
    /// level by level; within a set it picks what a lookup would.
    pub fn peek(&self, lp: usize, va: u64, asid: u16) -> Option<(PageSize, TlbPayload)> {
        let id = self.ids.key(lp, asid);
        let side = &self.lps[lp];
        if id == NO_ID && !side.globals {
            return None; // nothing of this ASID is cached (e.g. since its last full flush)
        }
        for &a in &side.by_level {
            let arr = &self.arrays[a as usize];
            for size in PageSize::ALL {
                if arr.holds(size) && side.sizes_live & (1 << size as u8) != 0 {
                    let vpn = vpn_of(va, size);
                    if let Some(payload) = arr.peek(vpn, make_tag(vpn, size, id), side.gid) {
                        return Some((size, payload));
                    }
                }
            }
        }
        None
    }

    /// [`Self::peek`] of a translation that can only have page size `size`: its stored payload.
    pub fn peek_sized(&self, lp: usize, va: u64, asid: u16, size: PageSize) -> Option<TlbPayload> {
        let id = self.ids.key(lp, asid);
        let side = &self.lps[lp];
        if id == NO_ID && !side.globals {
            return None;
        }
        let vpn = vpn_of(va, size);
        side.by_level
            .iter()
            .map(|&a| &self.arrays[a as usize])
            .filter(|arr| arr.holds(size))
            .find_map(|arr| arr.peek(vpn, make_tag(vpn, size, id), side.gid))
    }

    /// Whether any non-global entry of `asid` may be cached. False from a full flush that
    /// dropped entries of it until its next fill; a flush that found none cached leaves it as it
    /// was (true is always a safe answer: the caller then does the work it could have skipped).
    pub fn may_hold(&self, lp: usize, asid: u16) -> bool {
        self.ids.key(lp, asid & MAX_ASID) != NO_ID
    }

    /// INVLPG on `lp`: drops its translation of `va` in address space `asid` (and any global one
    /// of it) from every level and every page size that could cover it.
    pub fn invlpg(&mut self, lp: usize, va: u64, asid: u16) -> u64 {
        let id = self.ids.key(lp, asid);
        let side = &mut self.lps[lp];
        side.flushes.invlpg += 1;
        let mut n = 0;
        for &a in &side.arrays {
            let arr = &mut self.arrays[a as usize];
            for size in PageSize::ALL {
                if arr.holds(size) && side.sizes_live & (1 << size as u8) != 0 {
                    n += arr.invalidate_vpn(vpn_of(va, size), size, id, side.gid, &mut self.ids);
                }
            }
        }
        side.flushes.entries_invalidated += n;
        n
    }

    /// A flushing CR3 write on `lp`: every non-global entry of its `asid`. O(1) amortized: the
    /// entries go stale with their id.
    pub fn flush_asid(&mut self, lp: usize, asid: u16) -> u64 {
        self.lps[lp].flushes.flush_asid += 1;
        let asid = asid & MAX_ASID;
        let mut n = 0;
        if self.ids.key(lp, asid) != NO_ID {
            self.track();
            n = self.ids.count[self.ids.key(lp, asid) as usize] as u64;
            if n > 0 {
                // Its entries go stale; it gets a fresh id at its next fill.
                self.ids.unbind(lp, asid);
            }
        }
        self.lps[lp].flushes.entries_invalidated += n;
        n
    }

    /// Every non-global entry of every address space of `lp` (INVPCID all-context,
    /// non-global). O(1) amortized: each of its address spaces gives up its id (named since the
    /// last such flush).
    pub fn flush_all_asids(&mut self, lp: usize) -> u64 {
        self.lps[lp].flushes.flush_all_asids += 1;
        self.track();
        let n = self.unbind_all(lp);
        self.lps[lp].flushes.entries_invalidated += n;
        n
    }

    /// Takes every id of `lp`'s address spaces away; returns how many entries went stale.
    fn unbind_all(&mut self, lp: usize) -> u64 {
        let mut n = 0;
        for word in self.ids.named_words(lp) {
            while self.ids.named[word] != 0 {
                let (_, asid) = AsidIds::named_at(word, self.ids.named[word].trailing_zeros());
                let id = self.ids.key(lp, asid) as usize;
                let held = self.ids.count[id] as u64;
                self.ids.unbind(lp, asid);
                if held == 0 {
                    self.ids.free.push(id as u16);
                }
                n += held;
            }
        }
        n
    }

    /// Everything of `lp`, global entries included (CR4.PGE toggle / INVPCID all-context incl.
    /// globals).
    pub fn flush_global(&mut self, lp: usize) -> u64 {
        self.lps[lp].flushes.flush_global += 1;
        let n = if self.lps.len() == 1 {
            let n: u64 = self.arrays.iter_mut().map(|a| a.clear_all(&mut self.ids)).sum();
            if self.ids.tracking {
                // No entry is left: every stale id is free again.
                self.ids.recycle_unowned();
            }
            n
        } else {
            // Siblings' entries stay: clear `lp`'s, then its address spaces (holding none now)
            // give their ids back.
            self.track();
            let mut n = 0;
            for &a in &self.lps[lp].arrays {
                n += self.arrays[a as usize].clear_lp(lp, &mut self.ids);
            }
            self.unbind_all(lp);
            n
        };
        self.lps[lp].flushes.entries_invalidated += n;
        n
    }

    /// The id (key bits) of `asid` on `lp`, which is about to fill: named now if it has none.
    #[inline(always)]
    pub(super) fn id_for_fill(&mut self, lp: usize, asid: u16) -> u64 {
        let id = self.ids.key(lp, asid);
        if id != NO_ID {
            id
        } else {
            self.name(lp, asid)
        }
    }

    /// Gives `asid` of `lp` a free id, purging if none is left (then one is: on a lone logical
    /// processor `asid` holds none, so at most `NR_IDS - 1` ids are held; a core of siblings
    /// has fewer entries than ids, see [`Self::new_core`]).
    #[cold]
    #[inline(never)]
    pub(super) fn name(&mut self, lp: usize, asid: u16) -> u64 {
        if self.ids.free.is_empty() {
            self.purge();
        }
        self.ids.name(lp, asid)
    }

    /// Starts keeping per-id entry counts (see [`AsidIds::tracking`]).
    pub(super) fn track(&mut self) {
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
    pub(super) fn purge(&mut self) {
        self.ids.purges += 1;
        self.track();
        for a in &mut self.arrays {
            a.clear_stale(&mut self.ids);
        }
        for word in 0..self.ids.named.len() {
            let mut bits = self.ids.named[word];
            while bits != 0 {
                let (lp, asid) = AsidIds::named_at(word, bits.trailing_zeros());
                bits &= bits - 1;
                if self.ids.count[self.ids.key(lp, asid) as usize] == 0 {
                    self.ids.unbind(lp, asid);
                }
            }
        }
        self.ids.recycle_unowned();
    }
}
