//! Memory management (Linux's `mm/`): faults, the system calls on an address space, the
//! gather, the page cache and readahead, reverse mappings, reclaim, the page allocator and SLUB.

pub mod filemap;
pub mod memory;
pub mod mmap;
pub mod mmu_gather;
pub mod page_alloc;
pub mod readahead;
pub mod rmap;
pub mod slub;
pub mod vmscan;
