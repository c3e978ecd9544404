//! `shrink_page_list`'s decisions (mm/vmscan.c, v4.2 with v4.3's batched unmap flush), pure so
//! that the engine (linux/mm/vmscan.rs) and the model checker (`crate::check::reclaim`) run the
//! same rules.

/// What `page_check_references` decided for a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageRef {
    /// `PAGEREF_ACTIVATE`: back to the active list.
    Activate,
    /// `PAGEREF_KEEP`: back to the inactive list.
    Keep,
    /// `PAGEREF_RECLAIM` / `PAGEREF_RECLAIM_CLEAN`: unmap and free it.
    Reclaim,
}

/// `page_check_references` (v4.2) for a file page that is not executable: `referenced_ptes`
/// young PTEs found (and cleared) by `page_referenced`, `referenced_page` the page's
/// `PG_referenced` (tested and cleared). Returns the decision and `PG_referenced` afterwards:
/// a young PTE sets it and keeps the page the first time, activates it the second time (or
/// when several PTEs were young); no young PTE reclaims it.
pub fn page_check_references(referenced_ptes: u32, referenced_page: bool) -> (PageRef, bool) {
    if referenced_ptes == 0 {
        return (PageRef::Reclaim, false);
    }
    if referenced_page || referenced_ptes > 1 {
        (PageRef::Activate, true)
    } else {
        (PageRef::Keep, true)
    }
}

/// `__remove_mapping` (v4.2) frees the page only if `page_freeze_refs(page, 2)` succeeds: the
/// isolation and the page cache hold the only references. A fault that found the page in the
/// page cache while reclaim worked on it holds one more (it maps the page once it gets the page
/// lock), so the page is kept (`keep_locked`: back on the inactive list). The model's faults do
/// not wait for the page lock: the page a fault mapped again (`mapped`) is the one whose freeze
/// fails.
pub fn remove_mapping_frees(mapped: bool) -> bool {
    !mapped
}

/// The end of a `shrink_page_list` batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchEnd {
    /// `try_to_unmap_flush` (v4.3).
    Flush,
    /// `free_hot_cold_page_list` of the reclaimed pages, the survivors put back.
    Free,
}

/// The order of a batch's end: v4.3 flushes before the pages are freed; the UNSAFE
/// `free_before_flush` knob frees first.
pub fn batch_end_order(free_before_flush: bool) -> [BatchEnd; 2] {
    if free_before_flush {
        [BatchEnd::Free, BatchEnd::Flush]
    } else {
        [BatchEnd::Flush, BatchEnd::Free]
    }
}

/// `shrink_lruvec` (v4.2): a round scans `min(target left, SWAP_CLUSTER_MAX)` pages of a list,
/// which `shrink_inactive_list` isolates as one batch.
pub fn scan_chunk(left: u64, swap_cluster_max: u32) -> u64 {
    left.min(swap_cluster_max as u64)
}

/// `get_scan_count`'s `size >> priority` (v4.2, SCAN_FILE) for a list of `size` pages of a zone
/// of `pages` simulated pages standing for the named machine's zone of `sized_as` (`scale =
/// (sized_as, pages)`): the zone's free pages are the named zone's (its watermarks and
/// `lowmem_reserve` are not scaled), so the list stands for the named zone's list, which holds
/// the `sized_as - pages` pages that are not simulated as well, and the target is that list's.
/// Direct reclaim at `DEF_PRIORITY` (which scans its whole target, `scan_adjusted`) then takes
/// as many pages per call, in the same proportion to `SWAP_CLUSTER_MAX`, as on the named
/// machine. (Before the zone split the list was stretched by `sized_as / pages`, which scaled
/// the free pages too: 32 times the DMA32 zone's 6200 reserved pages, a quarter of its target.)
pub fn scan_target(size: usize, scale: (u64, u64), priority: u32) -> u64 {
    (size as u64 + scale.0.saturating_sub(scale.1)) >> priority
}
