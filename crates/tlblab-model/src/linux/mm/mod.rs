//! Memory management (Linux's `mm/`): faults, the system calls on an address space, the
//! gather, the page cache and readahead, reverse mappings, reclaim, the page allocator and SLUB.

pub mod filemap;
pub mod madvise;
pub mod memcontrol;
pub mod memory;
pub mod migrate;
pub mod mmap;
pub mod mmu_gather;
pub mod page_alloc;
pub mod pgtable_generic;
pub mod readahead;
pub mod rmap;
pub mod shmem;
pub mod slub;
pub mod swap;
pub mod vma;
pub mod vmscan;
pub mod workingset;

/// Memory management's global state, as Linux keeps it in `mem_map`, the nodes' `pglist_data`
/// and the slab caches: the address spaces, the page cache, who owns each frame, the page
/// allocator, the LRU lists and reclaim, SLUB.
pub struct Memory {
    pub(in crate::linux) mms: Vec<crate::linux::include::linux::mm_types::Mm>,
    /// The next address space's context id (`mm->context.ctx_id`).
    pub(in crate::linux) next_ctx_id: u64,
    /// Scratch for `mmap_lock` wake-ups (linux/mm/mmap.rs).
    pub(in crate::linux) woken: Vec<usize>,
    /// Per-VMA lock events (v6.4; linux/mm/memory.rs), reported where the kernel has them.
    pub(in crate::linux) vma_lock: memory::VmaLockCounters,
    pub(in crate::linux) files: Vec<filemap::FilePages>,
    /// The `ra_pages` of the disk the workload's files are on (its `read_ahead_kb` / 4), which
    /// each file opened there copies into its readahead state (linux/mm/readahead.rs).
    pub(in crate::linux) disk_ra_pages: u64,
    pub(in crate::linux) frames: crate::linux::frames::Frames,
    /// The zoned buddy allocator and its per-CPU lists, in the preset's era.
    /// `None` on the MPC8xx machine (its dd paths allocate no pages).
    pub(in crate::linux) page_alloc: Option<page_alloc::PageAlloc>,
    /// The LRU lists, kswapd and the reclaimers' state (linux/mm/vmscan.rs).
    pub(in crate::linux) vmscan: vmscan::Vmscan,
    /// SLUB over the page allocator, on a machine whose profile has `[slab]`.
    pub(in crate::linux) slab: Option<slub::Slab>,
    /// Scratch for the page-allocator calls SLUB reports (linux/mm/slub.rs).
    pub(in crate::linux) slab_events: Vec<slub::PageEvent>,
    /// shmem files and the zram device their pages swap to (linux/mm/shmem.rs).
    pub(in crate::linux) shmem: shmem::Shmem,
    /// The memory cgroup the workload runs in, where it sets a limit (linux/mm/memcontrol.rs).
    pub(in crate::linux) memcg: Option<memcontrol::MemCgroup>,
    /// The lruvecs' statistics as reclaim reads them, and their flushes (linux/mm/memcontrol.rs).
    pub(in crate::linux) memcg_stats: memcontrol::Rstat,
    /// Page migration (linux/mm/migrate.rs), where a workload moves pages.
    pub(in crate::linux) migrate: Option<migrate::Migrate>,
}
