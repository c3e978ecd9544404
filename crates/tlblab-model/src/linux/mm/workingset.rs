//! Workingset detection (mm/workingset.c; the rule for file pages is the same from v3.15 to
//! v6.18 where no swap is configured): reclaim leaves a shadow entry in the page cache slot of
//! each page it evicts, stamped with its LRU's nonresident age; a page read in again where a
//! shadow is (a refault) was evicted `refault_distance` ages ago, and if that is no more than
//! the active file list's size, the page would have stayed resident with that much more
//! inactive list, so it starts on the active list
//! (docs/references/linux-mm.md#workingset).
//!
//! The age (v4.2 `zone->inactive_age`, 6.x `lruvec->nonresident_age`) counts evictions and
//! activations of refaulting pages (v4.2 `workingset_activation` from `add_to_page_cache_lru`,
//! 6.x `workingset_age_nonresident`); mmap's faults never call `mark_page_accessed`, so no other
//! activation ages it here. `workingset = activate-and-deactivate` (v4.20+) also has reclaim age
//! the active list while refaults are being activated (linux/mm/vmscan.rs). Shadows are kept on the
//! model's 32 bits (Linux's `EVICTION_MASK` keeps more; the distance wraps the same way) and
//! never reclaimed (Linux's shadow shrinker drops radix-tree nodes holding only shadows past a
//! share of memory: a refault it forgot reads as a first read, which matters only for the
//! oldest shadows, whose distance is far above any active list here).

use crate::linux::mm::vmscan::Workingset;
use crate::linux::Kernel;
use crate::time::Ps;

impl Kernel {
    /// `workingset_eviction` of the folio `pfn` of `nr` pages: age its LRU by its pages (6.x
    /// `workingset_age_nonresident(lruvec, folio_nr_pages(folio))`) and return the shadow to
    /// leave (none before v3.15).
    pub(in crate::linux) fn workingset_eviction(&mut self, pfn: u64, nr: u64) -> Option<u32> {
        if self.config.reclaim.workingset == Workingset::None {
            return None;
        }
        let zone = self.mm.vmscan.zone_of(pfn);
        let l = &mut self.mm.vmscan.lruvecs[zone];
        l.nonresident_age += nr;
        Some(l.nonresident_age as u32)
    }

    /// `workingset_refault` of the new page-cache folio `pfn` of `nr` pages read in where
    /// `shadow` was: counted in pages; activated (set active before its LRU add, and the age
    /// moved on by its pages) if it was evicted no more than the active file list's size of ages
    /// ago.
    pub(in crate::linux) fn workingset_refault(&mut self, pfn: u64, nr: u64, shadow: u32, now: Ps) {
        self.counters.vmscan.workingset_refault_file += nr;
        let zone = self.mm.vmscan.zone_of(pfn);
        // workingset_test_recent: the active list's size as the statistics say (6.x: flushed
        // at most every 2 s, linux/mm/memcontrol.rs).
        self.mem_cgroup_flush_stats_ratelimited(now);
        let active = self.lruvec_page_state(zone).active_file;
        let l = &mut self.mm.vmscan.lruvecs[zone];
        let distance = (l.nonresident_age as u32).wrapping_sub(shadow);
        if distance as u64 > active {
            return;
        }
        l.nonresident_age += nr;
        l.workingset_activations += nr;
        self.mm.vmscan.set_active(pfn);
        self.counters.vmscan.workingset_activate_file += nr;
    }
}
