//! The page cache (mm/filemap.c, v5.18), as far as the workloads use it: sparse files whose
//! pages are read in (zero-filled) on first touch, and the files will-it-scale creates.
//!
//! With reclaim modelled (a profile with `[reclaim]`), a read fault on an uncached page reads
//! around it (`do_sync_mmap_readahead`, v4.2): `ra_pages` (`VM_MAX_READAHEAD` = 128 KiB = 32
//! pages) centred on the fault, the pages already cached skipped; each new page costs its
//! allocation (simulated), its zeroing (a hole: no I/O) and the profile's
//! `reclaim.pagecache_fill_page_cycles`, and joins the inactive file LRU through the CPU's
//! pagevec (kernel/vmscan.rs). Not modelled: the asynchronous readahead marker
//! (`PG_readahead`) and `mmap_miss`, which would only change the window's placement for a
//! sequential reader.

use super::ctx::Ctx;
use super::frames::Owner;
use super::Kernel;
use crate::attribution::Bucket;
use crate::time::Ps;

/// A file's page cache (`mapping->i_pages`): the frame cached at each page index, or none.
/// Frames are stored in 4 bytes (the model's frame numbers are below 2^32: `PAGES_PER_NODE`
/// per node), half what a `u64` per index took: seed 002's 56 tlb_flush1 tasks cache 1.8 M
/// pages (issue 18: 7 MiB less per run).
#[derive(Debug, Clone)]
pub struct FilePages {
    slots: Vec<u32>,
}

impl FilePages {
    /// A slot with no page.
    const NONE: u32 = u32::MAX;

    pub fn new(pages: u64) -> FilePages {
        FilePages { slots: vec![FilePages::NONE; pages as usize] }
    }

    /// Pages in the file (cached or not).
    pub fn len(&self) -> u64 {
        self.slots.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The frame cached at `index`, if any.
    #[inline]
    pub fn get(&self, index: u64) -> Option<u64> {
        let s = self.slots[index as usize];
        (s != FilePages::NONE).then_some(s as u64)
    }

    /// `pfn` is now cached at `index`.
    pub fn set(&mut self, index: u64, pfn: u64) {
        let s = u32::try_from(pfn).ok().filter(|&s| s != FilePages::NONE);
        self.slots[index as usize] = s.unwrap_or_else(|| panic!("pfn {pfn} too large for the page cache"));
    }

    /// The page at `index` leaves the page cache (`__delete_from_page_cache`).
    pub fn remove(&mut self, index: u64) {
        self.slots[index as usize] = FilePages::NONE;
    }
}

/// `VM_MAX_READAHEAD` (128 KiB) in pages: the default `ra_pages` (v4.2).
pub const RA_PAGES: u64 = 32;

crate::kernel::vmstat::counters! {
    /// Page-cache fills, counted.
    Counters {
        /// Pages read into the page cache (holes of sparse files: zero-filled).
        pagecache_fills,
        /// Read-around calls (`do_sync_mmap_readahead` -> `ra_submit`).
        readahead_calls,
    }
}

impl Kernel {
    /// A page-cache page of `file`, read in (zero-filled: the files are sparse) if absent.
    /// `at`: when the caller gets here.
    pub(super) fn page_cache_page(&mut self, ctx: &mut Ctx, at: Ps, file: u32, index: u64) -> (u64, Ps) {
        if let Some(pfn) = self.files[file as usize].get(index) {
            return (pfn, Ps::ZERO);
        }
        // The caller's time so far is in the CPU's buckets, not in `ctx.now`: the fault passes
        // it as `at`.
        let (pfn, a) = self.alloc_frame(ctx, at, Owner::PageCache { file, index }, Bucket::Fault);
        self.files[file as usize].set(index, pfn);
        self.counters.memory.pages_zeroed += 1;
        self.counters.filemap.pagecache_fills += 1;
        ctx.charge(Bucket::Zeroing, self.costs.mm.clear_page);
        let Some(fill) = self.vmscan.costs.as_ref().map(|c| c.pagecache_fill_page) else {
            // filemap_add_folio charges and LRU-adds the new page as an anonymous one would be.
            ctx.charge(Bucket::Fault, self.costs.mm.page_alloc);
            return (pfn, a + self.costs.mm.page_alloc + self.costs.mm.clear_page);
        };
        // With reclaim: the fill's own path, and the LRU add through the pagevec.
        ctx.charge(Bucket::Fault, fill);
        let d = a + fill + self.costs.mm.clear_page;
        let lru = self.lru_cache_add(ctx, at + d, pfn);
        (pfn, d + lru)
    }

    /// `do_sync_mmap_readahead`'s read-around for a fault at `index` of `file` (`pages` long),
    /// at `at`: reads in the uncached pages of the `RA_PAGES` window centred on it, the faulting
    /// page among them. Returns the time taken.
    pub(super) fn read_around(&mut self, ctx: &mut Ctx, at: Ps, file: u32, index: u64) -> Ps {
        let pages = self.files[file as usize].len();
        let start = index.saturating_sub(RA_PAGES / 2);
        let end = (start + RA_PAGES).min(pages);
        self.counters.filemap.readahead_calls += 1;
        let mut d = Ps::ZERO;
        for i in start..end {
            let (_, c) = self.page_cache_page(ctx, at + d, file, i);
            d += c;
        }
        d
    }

    /// `open` + `ftruncate` + `unlink` of a `pages`-page file for task `t` (its id goes in
    /// register `reg`); `cached`: every page already in the page cache, as after a read.
    pub(super) fn create_file(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        pages: u64,
        reg: usize,
        cached: bool,
    ) -> Ps {
        let file = self.files.len() as u32;
        let d = self.costs.entry.syscall_half * 6;
        ctx.charge(Bucket::Syscall, d);
        // A `cached` file starts as the steady state its benchmark measures in, every page read
        // in: the pages come from the allocator outside simulated time.
        let mut slots = FilePages::new(pages);
        if cached {
            for index in 0..pages {
                let pfn = self.alloc_frame_untimed(ctx.cpu, ctx.now, Owner::PageCache { file, index });
                self.vmscan.lru_add_untimed(pfn);
                slots.set(index, pfn);
            }
        }
        self.files.push(slots);
        self.tasks[t].regs[reg] = file as u64;
        d
    }
}

#[cfg(test)]
mod tests {
    use super::FilePages;

    #[test]
    fn a_page_cache_slot_holds_a_frame_until_it_is_removed() {
        let mut f = FilePages::new(4);
        assert_eq!((f.len(), f.get(2)), (4, None));
        f.set(2, (1 << 32) - 2);
        assert_eq!(f.get(2), Some((1 << 32) - 2));
        f.remove(2);
        assert_eq!(f.get(2), None);
        // u32::MAX marks an empty slot, so it is no frame number either.
        assert!(std::panic::catch_unwind(|| FilePages::new(1).set(0, u32::MAX as u64)).is_err());
    }
}
