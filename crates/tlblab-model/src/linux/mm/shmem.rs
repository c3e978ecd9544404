//! shmem (mm/shmem.c, v6.6; docs/references/linux-6x.md#madv-pageout): the memory of a
//! `MAP_SHARED | MAP_ANONYMOUS` mapping is a shmem file's page cache (`shmem_zero_setup`); a page
//! reclaim writes out leaves the page cache for a swap slot, and a fault reads it back.
//!
//! - Swap-out (`shrink_folio_list` -> `pageout` -> `shmem_writepage`, for a dirty folio: shmem
//!   folios are dirty once written, and a swapped-in one is marked dirty by
//!   `shmem_swapin_folio`): a swap slot (`folio_alloc_swap`), the folio into the swap cache,
//!   its page-cache slot replaced by the swap entry, then `swap_writepage` to zram
//!   (linux/drivers/block/zram.rs), synchronous; reclaim then removes it from the swap cache
//!   (`__remove_mapping`) and frees it after the batch's TLB flush.
//! - Swap-in (`shmem_fault` -> `shmem_get_folio_gfp` finding a swap entry ->
//!   `shmem_swapin_folio`): a new folio (`__read_swap_cache_async`: allocated, charged, into the
//!   swap cache and onto the LRU), `swap_readpage` from zram, then `shmem_add_to_page_cache`,
//!   `delete_from_swap_cache`, `folio_mark_dirty` and `swap_free`, which frees zram's slot.
//!   Swap readahead (`swap_cluster_readahead`, `vm.page-cluster`) is not modelled: each page is
//!   read by its own fault (zram is `SWP_SYNCHRONOUS_IO`; Android sets `page-cluster` 0).
//! - A page never written (a hole) is a new zeroed page, as a page-cache fill.
//!
//! A `write(2)` of a whole page to a tmpfs file (`shmem_file_write_iter` ->
//! `generic_perform_write`, v6.18; docs/references/linux-mm.md#tmpfs-write): `shmem_write_begin`
//! (`SGP_WRITE`) finds the page cached, or allocates one (`shmem_alloc_and_add_folio`: the page
//! allocator and the page cache at the anonymous page's cost, off the model's reclaim lists:
//! linux/mm/filemap.rs `Fill::Write`) and leaves it unzeroed, since `shmem_write_end` zeroes only what a short write leaves; then the 4 KiB copy
//! from the user buffer (`copy_folio_from_iter_atomic`, linux/lib/iov_iter.rs's rate; into a
//! new page fresh from the buddy lists, at the cold clear's DRAM rate, as linux/mm/memory.rs
//! fills such a page), the dirtying and `i_size`. The call's fixed part is `fs.tmpfs_write_cycles`. tmpfs does no
//! writeback (`balance_dirty_pages_ratelimited` returns at once: no writeback capability).
//! The new page's path besides the simulated allocator (the memory cgroup charge from the
//! per-CPU stock, the `i_pages` insertion, the LRU add, the inode's and the mount's block
//! accounting) is `fs.shmem_alloc_and_add_folio_cycles` where the probe measured it (a tmpfs
//! `fallocate` of a hole against a written page, docs/references/machine-costs.md#shmem-new-folio),
//! else the anonymous page's `kernel.page_alloc_cycles`.
//!
//! And tmpfs's file creation (`shmem_create` -> `shmem_mknod`, v6.18;
//! docs/references/linux-mm.md#tmpfs-create), under the parent's `i_rwsem` that
//! linux/fs/namei.rs takes: `shmem_get_inode` takes a `shmem_inode_info` from
//! `shmem_inode_cache`; the directory is its dentries (`simple_lookup` left the new one
//! negative, `d_instantiate` fills it, `dget` pins it), so no directory block, journal or
//! inode table is touched. The directory's offset map (`simple_offset_add`, a maple tree in
//! v6.18) is part of `[fs]`'s locked-section cost, its occasional node included.

use super::filemap::{FilePages, Fill};
use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::drivers::block::zram::{SameWord, Zram};
use crate::linux::frames::Owner;
use crate::linux::include::linux::mm_types::{Backing, MmId, Pte, PAGE_SHIFT, PAGE_SIZE};
use crate::linux::lib::iov_iter::CopyRate;
use crate::linux::Kernel;
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

/// `shmem_inode_cache`: `sizeof(struct shmem_inode_info)`, 744 bytes on a v6.18 x86-64 build
/// (`/sys/kernel/slab/shmem_inode_cache/object_size` of the validate host, Linux 6.18.44); no
/// `SLAB_HWCACHE_ALIGN` (`shmem_init_inodecache`: `SLAB_PANIC | SLAB_ACCOUNT`).
pub const SHMEM_INODE_CACHE: (&str, u64) = ("shmem_inode_cache", 744);

crate::linux::vmstat::counters! {
    /// Swap to zram, counted as /proc/vmstat and zram's `mm_stat` name it.
    Counters {
        /// Pages written to swap.
        pswpout,
        /// Pages read from swap.
        pswpin,
        /// Pages zram stored as one word (`page_same_filled`: `same_pages` in `mm_stat`).
        zram_same_pages,
    }
}

/// The `[swap]` costs.
#[derive(Debug, Clone)]
pub struct Costs {
    pub swap_out: Ps,
    pub swap_in: Ps,
    pub same_filled_scan: Ps,
}

impl crate::linux::boot::FromSection for Costs {
    fn from_section(p: &MachineProfile) -> Result<Costs, ProfileError> {
        let s = p.swap()?;
        let mhz = p.clock_mhz();
        Ok(Costs {
            swap_out: Ps::from_cycles(s.swap_out_cycles.value, mhz),
            swap_in: Ps::from_cycles(s.swap_in_cycles.value, mhz),
            same_filled_scan: Ps::from_cycles(s.same_filled_scan_cycles.value, mhz),
        })
    }
}

crate::linux::vmstat::counters! {
    /// Whole-page writes to tmpfs files, on a machine with such a file (dd's).
    WriteCounters {
        /// `write(2)`s of a page to a tmpfs file.
        tmpfs_writes,
        /// Those that allocated the page (`shmem_alloc_and_add_folio`).
        tmpfs_write_allocs,
        /// Of those, the pages taken from the buddy lists (cold): the copy fills them from DRAM.
        tmpfs_write_cold_pages,
    }
}

/// A tmpfs page write's costs (`fs.tmpfs_write_cycles`, the copy rate and, where the profile
/// measured it, `fs.shmem_alloc_and_add_folio_cycles`).
#[derive(Debug, Clone)]
pub struct WriteCosts {
    /// The call's fixed part, besides entry/exit, allocation and copy.
    pub write: Ps,
    pub copy: CopyRate,
    /// A new page's path besides the simulated allocator (`shmem_alloc_and_add_folio`); none:
    /// `kernel.page_alloc_cycles`, as an anonymous page.
    pub new_folio: Option<Ps>,
}

impl crate::linux::boot::FromSection for WriteCosts {
    fn from_section(p: &MachineProfile) -> Result<WriteCosts, ProfileError> {
        let c = p.tmpfs_write_cycles()?;
        let mhz = p.clock_mhz();
        let new_folio = p.fs.as_ref().and_then(|f| f.shmem_alloc_and_add_folio_cycles.as_ref());
        Ok(WriteCosts {
            write: Ps::from_cycles(c.value, mhz),
            copy: CopyRate::from_profile(p),
            new_folio: new_folio.map(|n| Ps::from_cycles(n.value, mhz)),
        })
    }
}

/// One shmem inode: the file whose page cache holds its pages, each page's content (the word
/// it is filled with) and the swap slot of each page swapped out.
#[derive(Debug, Clone)]
struct Inode {
    file: u32,
    words: Vec<SameWord>,
    swapped: Vec<Option<u32>>,
}

/// The shmem inodes and the swap device (one zram, as the benchmark's machines swap to).
#[derive(Debug, Default)]
pub struct Shmem {
    inodes: Vec<Inode>,
    pub zram: Zram,
    pub counters: Counters,
    /// Whether a workload made a tmpfs file to write ([`Kernel::tmpfs_file_untimed`]).
    tmpfs_files: bool,
    pub writes: WriteCounters,
}

impl Shmem {
    fn inode(&self, file: u32) -> Option<usize> {
        self.inodes.iter().position(|i| i.file == file)
    }

    /// Whether `file` is a shmem file.
    pub fn is_shmem(&self, file: u32) -> bool {
        self.inode(file).is_some()
    }

    /// Whether page `index` of `file` is out in swap.
    pub fn swapped(&self, file: u32, index: u64) -> bool {
        self.inode(file).is_some_and(|i| self.inodes[i].swapped[index as usize].is_some())
    }
}

impl Kernel {
    /// `mmap(MAP_SHARED | MAP_ANONYMOUS)` of `len` bytes in `mm`, then a `memset` of every byte
    /// to `byte`, at no simulated time (a benchmark's untimed setup): a shmem file whose pages
    /// are all cached, on the inactive LRU, mapped writable, dirty and young. Returns the start.
    pub fn map_shmem_filled(&mut self, mm: MmId, len: u64, byte: u8) -> u64 {
        let pages = len.div_ceil(PAGE_SIZE);
        let file = self.mm.files.len() as u32;
        let mut slots = FilePages::new(pages, false);
        let start = self.mm.mms[mm as usize].mmap(pages * PAGE_SIZE, Backing::FileShared(file), true);
        for index in 0..pages {
            let pfn = self.alloc_frame_untimed(0, Ps::ZERO, Owner::PageCache { file, index });
            self.mm.vmscan.lru_add_untimed(pfn);
            self.mm.vmscan.mark_young(pfn);
            slots.set(index, pfn);
            let pte = Pte { pfn, present: true, writable: true, dirty: true };
            self.mm.mms[mm as usize].set_pte(start + (index << PAGE_SHIFT), pte);
        }
        self.mm.files.push(slots);
        let word = u64::from_ne_bytes([byte; 8]);
        let inode = Inode { file, words: vec![word; pages as usize], swapped: vec![None; pages as usize] };
        self.mm.shmem.inodes.push(inode);
        start
    }

    /// `shmem_get_folio_gfp` for a fault at `index` of shmem `file`, at `at`: the cached page;
    /// or a swapped-out one read back (`shmem_swapin_folio`); or, for a hole, a new zeroed page.
    /// Returns the page and the time taken.
    pub(in crate::linux) fn shmem_get_folio(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        file: u32,
        index: u64,
    ) -> (u64, Ps) {
        if let Some(pfn) = self.mm.files[file as usize].get(index) {
            return (pfn, Ps::ZERO);
        }
        let i = self.mm.shmem.inode(file).expect("a shmem file");
        let Some(slot) = self.mm.shmem.inodes[i].swapped[index as usize] else {
            return self.page_cache_page(ctx, at, file, index);
        };
        let c = self.costs.swap.clone().expect("swap needs the profile's [swap] section");
        ctx.charge(Bucket::Fault, c.swap_in);
        let mut d = c.swap_in;
        let (pfn, a) = self.alloc_frame(ctx, at + d, Owner::PageCache { file, index }, Bucket::Fault);
        d += a;
        // swap_readpage -> zram_read_page: a ZRAM_SAME slot, so zram_fill_page writes the word
        // over the page (memset_l: the 4 KiB store stream clear_page_mbps costs).
        let word = self.mm.shmem.zram.read_same(slot);
        assert_eq!(
            word, self.mm.shmem.inodes[i].words[index as usize],
            "zram returned another page's content"
        );
        let fill = self.costs.memory.clear_page;
        ctx.charge(Bucket::Zeroing, fill);
        d += fill + self.bulk(ctx, at + d, PAGE_SIZE, fill);
        // __read_swap_cache_async's folio_add_lru.
        d += self.lru_cache_add(ctx, at + d, pfn);
        // shmem_add_to_page_cache, delete_from_swap_cache, swap_free -> zram_slot_free_notify.
        self.mm.files[file as usize].set(index, pfn);
        let s = &mut self.mm.shmem;
        s.inodes[i].swapped[index as usize] = None;
        s.zram.free_slot(slot);
        s.counters.pswpin += 1;
        (pfn, d)
    }

    /// `pageout` -> `shmem_writepage` of the dirty shmem page `pfn` at reclaim: a swap slot,
    /// the page-cache slot replaced by its swap entry, and `swap_writepage` to zram, whose
    /// `page_same_filled` finds the page's words equal and stores the word. Returns its cost,
    /// charged as reclaim time.
    pub(in crate::linux) fn shmem_writepage(&mut self, ctx: &mut Ctx, pfn: u64) -> Ps {
        let Owner::PageCache { file, index } = self.mm.frames.owner(pfn) else {
            panic!("shmem_writepage of pfn {pfn}, which is no page-cache page");
        };
        let c = self.costs.swap.clone().expect("swap needs the profile's [swap] section");
        let d = c.swap_out + c.same_filled_scan;
        ctx.charge(Bucket::Reclaim, d);
        let s = &mut self.mm.shmem;
        let i = s.inode(file).expect("a shmem page");
        let slot = s.zram.alloc_slot();
        s.zram.write_same(slot, s.inodes[i].words[index as usize]);
        s.inodes[i].swapped[index as usize] = Some(slot);
        s.counters.pswpout += 1;
        s.counters.zram_same_pages += 1;
        self.mm.files[file as usize].remove(index);
        d
    }

    /// The swap counters, on a machine that has a shmem file (madv-pageout's).
    pub fn swap_counters(&self) -> Option<Counters> {
        (!self.mm.shmem.inodes.is_empty()).then_some(self.mm.shmem.counters)
    }
}

impl Kernel {
    /// `shmem_mknod()` of a new regular file on this CPU at `at`, under the parent's lock: its
    /// inode (see the module comment); the dentry is namei.rs's `d_alloc`. Returns the time.
    pub(in crate::linux) fn shmem_mknod(&mut self, ctx: &mut Ctx, at: Ps) -> Ps {
        let cache = self.fs.mount.as_ref().and_then(|m| m.caches.shmem_inode).expect("tmpfs mounted");
        let (_inode, d) = self.kmem_cache_alloc(ctx, at, cache, Bucket::Syscall);
        d
    }
}

impl Kernel {
    /// A tmpfs file of `pages` pages made at no simulated time (a benchmark's untimed setup);
    /// `cached`: every page already written (off the reclaim lists, as [`Fill::Write`] leaves
    /// them), else none. Returns its id.
    pub fn tmpfs_file_untimed(&mut self, pages: u64, cached: bool) -> u32 {
        let file = self.mm.files.len() as u32;
        let mut slots = FilePages::new(pages, false);
        for index in (0..pages).filter(|_| cached) {
            slots.set(index, self.alloc_frame_untimed(0, Ps::ZERO, Owner::PageCache { file, index }));
        }
        self.mm.files.push(slots);
        self.mm.shmem.tmpfs_files = true;
        file
    }

    /// `write(fd, buf, 4096)` at page `index` of tmpfs `file` (see the module comment), the
    /// user buffer in this CPU's cache: entry, the fixed part, the page found or allocated
    /// unzeroed, the 4 KiB copy, exit. Returns the time.
    pub(in crate::linux) fn shmem_write_page(&mut self, ctx: &mut Ctx, file: u32, index: u64) -> Ps {
        let c = self.costs.shmem_write.as_ref().expect("run::check requires fs.tmpfs_write_cycles");
        let (write, warm_copy) = (c.write, c.copy.copy(PAGE_SIZE));
        let half = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, half + write);
        let mut now = ctx.now + half + write;
        self.mm.shmem.writes.tmpfs_writes += 1;
        let mut cold = None;
        if self.mm.files[file as usize].get(index).is_none() {
            self.mm.shmem.writes.tmpfs_write_allocs += 1;
            let (pfn, d) = self.page_cache_add(ctx, now, file, index, Fill::Write, Bucket::Syscall);
            now += d;
            // A new page the allocator took from the buddy lists has its lines in DRAM: the
            // copy's stores fill it as a cold clear would (linux/mm/memory.rs clear_new_page).
            let warm = self.mm.page_alloc.as_ref().is_some_and(|a| a.warm(pfn));
            cold = self.costs.memory.clear_page_cold.filter(|_| !warm);
            // The copy is the page's first touch: in a guest, the host's second-level fault
            // on a page it took back comes first (linux/mm/memory.rs second_level_fault).
            now += self.second_level_fault(ctx, warm, Bucket::Syscall);
        }
        // copy_folio_from_iter_atomic: reads the user buffer, writes the page (hw/uncore.rs).
        let (copy, wait) = match cold {
            Some(c) => {
                self.mm.shmem.writes.tmpfs_write_cold_pages += 1;
                (c, self.bulk_dram(ctx, now, PAGE_SIZE, c))
            }
            None => (warm_copy, self.bulk(ctx, now, 2 * PAGE_SIZE, warm_copy)),
        };
        ctx.charge(Bucket::Syscall, copy + half);
        now += copy + wait;
        now + half - ctx.now
    }

    /// The tmpfs write counters, on a machine with a workload's tmpfs file.
    pub fn shmem_write_counters(&self) -> Option<WriteCounters> {
        self.mm.shmem.tmpfs_files.then_some(self.mm.shmem.writes)
    }
}
