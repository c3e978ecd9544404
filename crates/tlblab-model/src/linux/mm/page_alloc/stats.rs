//! The allocator's counters: what a RunResult reports (lock_stat's and /proc/vmstat's, per
//! order).

use crate::time::Ps;

use crate::linux::include::linux::mmzone::{HPAGE_PMD_ORDER, MAX_ORDER};

/// Counters, as a RunResult reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageAllocStats {
    pub zone_lock_acquisitions: u64,
    pub zone_lock_contended: u64,
    /// Time from asking for `zone->lock` to holding it (includes the lock-word RMW).
    pub zone_lock_wait: Ps,
    pub zone_lock_hold: Ps,
    /// Allocations served from a per-CPU list that had a block, per order.
    pub pcp_hits: [u64; MAX_ORDER as usize],
    /// Allocations that found their per-CPU list empty (and refilled it), per order.
    pub pcp_misses: [u64; MAX_ORDER as usize],
    /// Allocations of orders the per-CPU lists do not hold (straight from the buddy lists).
    pub buddy_allocs: [u64; MAX_ORDER as usize],
    pub frees_to_pcp: [u64; MAX_ORDER as usize],
    pub frees_to_buddy: [u64; MAX_ORDER as usize],
    pub refills: u64,
    pub refill_blocks: u64,
    pub drains: u64,
    pub drain_blocks: u64,
    pub buddy_splits: u64,
    pub buddy_merges: u64,
    pub fallbacks: u64,
    pub pageblocks_stolen: u64,
    pub struct_page_touches: u64,
    /// Allocations that found no zone above its low watermark (the kernel wakes kswapd).
    pub kswapd_wakeups: u64,
    pub alloc_failures: u64,
}

crate::linux::vmstat::counters! {
    /// The allocator's event counters (lock_stat's and /proc/vmstat's, per order).
    Counters {
    zone_lock_acquisitions,
    /// Acquisitions that found `zone->lock` held (lock_stat's contentions).
    zone_lock_contended,
    /// Time from asking for `zone->lock` to holding it, in picoseconds.
    zone_lock_wait_ps,
    zone_lock_hold_ps,
    /// Allocations served from a per-CPU list, by order (9: the THP order, v5.14).
    pcp_hits_order0,
    pcp_hits_order1,
    pcp_hits_order2,
    pcp_hits_order3,
    pcp_hits_order9,
    /// Allocations that found their per-CPU list empty and refilled it (`rmqueue_bulk`).
    pcp_misses_order0,
    pcp_misses_order1,
    pcp_misses_order2,
    pcp_misses_order3,
    pcp_misses_order9,
    /// Frees onto a per-CPU list (any order).
    pcp_frees,
    /// Allocations and frees of orders the per-CPU lists do not hold: one `zone->lock` each.
    buddy_allocs,
    buddy_frees,
    pcp_refills,
    pcp_refill_blocks,
    /// `free_pcppages_bulk` runs (`count >= high`, or a whole-list drain).
    pcp_drains,
    pcp_drain_blocks,
    buddy_splits,
    buddy_merges,
    pageblocks_stolen,
    struct_page_touches,
    /// Slab pages SLUB took from the page allocator (`new_slab`).
    slab_pages,
    alloc_failures,
    }
}

impl PageAllocStats {
    /// The report's view (`slab_pages` is SLUB's count; the caller adds it).
    pub fn counters(&self) -> Counters {
        let o = |a: &[u64; MAX_ORDER as usize], i: usize| a[i];
        Counters {
            zone_lock_acquisitions: self.zone_lock_acquisitions,
            zone_lock_contended: self.zone_lock_contended,
            zone_lock_wait_ps: self.zone_lock_wait.0,
            zone_lock_hold_ps: self.zone_lock_hold.0,
            pcp_hits_order0: o(&self.pcp_hits, 0),
            pcp_hits_order1: o(&self.pcp_hits, 1),
            pcp_hits_order2: o(&self.pcp_hits, 2),
            pcp_hits_order3: o(&self.pcp_hits, 3),
            pcp_hits_order9: o(&self.pcp_hits, HPAGE_PMD_ORDER as usize),
            pcp_misses_order0: o(&self.pcp_misses, 0),
            pcp_misses_order1: o(&self.pcp_misses, 1),
            pcp_misses_order2: o(&self.pcp_misses, 2),
            pcp_misses_order3: o(&self.pcp_misses, 3),
            pcp_misses_order9: o(&self.pcp_misses, HPAGE_PMD_ORDER as usize),
            pcp_frees: self.frees_to_pcp.iter().sum(),
            buddy_allocs: self.buddy_allocs.iter().sum(),
            buddy_frees: self.frees_to_buddy.iter().sum(),
            pcp_refills: self.refills,
            pcp_refill_blocks: self.refill_blocks,
            pcp_drains: self.drains,
            pcp_drain_blocks: self.drain_blocks,
            buddy_splits: self.buddy_splits,
            buddy_merges: self.buddy_merges,
            pageblocks_stolen: self.pageblocks_stolen,
            struct_page_touches: self.struct_page_touches,
            slab_pages: 0,
            alloc_failures: self.alloc_failures,
        }
    }
}
