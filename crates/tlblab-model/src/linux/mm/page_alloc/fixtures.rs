//! Cost fixtures shared by the allocator, SLUB and net tests: round numbers, not a machine's.

use super::PageAllocCosts;
use crate::hw::coherence::LineCosts;
use crate::linux::mm::slub::SlabCosts;
use crate::time::Ps;

pub const LINES: LineCosts = LineCosts {
    hit: Ps(1_000),
    smt_sibling: Ps(10_000),
    same_socket: Ps(50_000),
    cross_socket: Ps(130_000),
    uncached: Ps(20_000),
    home: Ps::ZERO,
};
pub const PAGE_ALLOC: PageAllocCosts = PageAllocCosts {
    pcp_alloc: Ps(30_000),
    pcp_free: Ps(30_000),
    lock_section: Ps(20_000),
    buddy_block: Ps(5_000),
    struct_page: Ps(20_000),
};
pub const SLAB: SlabCosts = SlabCosts {
    alloc_fast: Ps(5_000),
    free_fast: Ps(5_000),
    alloc_slow: Ps(40_000),
    free_slow: Ps(30_000),
    new_slab_object: Ps(2_000),
    list_lock_section: Ps(20_000),
    struct_page: Ps(20_000),
};
