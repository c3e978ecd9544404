//! The page cache (mm/filemap.c, v5.18), as far as the workloads use it: sparse files whose
//! pages are read in (zero-filled) on first touch, and the files will-it-scale creates.
//!
//! With reclaim modelled (a profile with `[reclaim]`), a read fault that fault-around did not
//! map runs v4.2's `filemap_fault` with readahead (linux/mm/readahead.rs has the window rules): a
//! page not cached is read around (`do_sync_mmap_readahead`), a cached page marked
//! `PG_readahead` pushes the window forward (`do_async_mmap_readahead`); each new page costs its
//! allocation (simulated), its zeroing (a hole: no I/O) and the profile's
//! `reclaim.pagecache_fill_page_cycles`, and joins the inactive file LRU through the CPU's
//! pagevec (linux/mm/vmscan.rs). With `file_folios = large` (v6.16+ ext4) a window pushed forward
//! is read in large folios (`page_cache_ra_order`): one allocation, charge, fill path, `i_pages`
//! section and LRU entry a folio, a clear a page (docs/references/linux-6x.md#large-folios).

use super::readahead::RaState;
use super::vmscan::FileFolios;
use crate::attribution::Bucket;
use crate::hw::lock::SpinLock;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::{mm::memory, Continuation, Kernel};
use crate::time::Ps;

/// What [`Kernel::filemap_fault`] did with the faulting page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::linux) enum FaultPage {
    /// Cached now: map it.
    Cached(u64),
    /// The queued readahead reads it and maps it.
    Reading,
    /// The task reclaims first; the access faults again.
    Retry,
}

/// How a new page-cache page gets its content ([`Kernel::page_cache_add`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::linux) enum Fill {
    /// Read in from a sparse file's hole: cleared, at `[reclaim]`'s fill path where the profile
    /// has one (then onto the model's reclaim lists), else the anonymous page's cost.
    HoleRead,
    /// Written whole by the caller (a tmpfs write, docs/references/linux-mm.md#tmpfs-write): not
    /// cleared, at the anonymous page's cost whatever the profile, and kept off the model's
    /// reclaim lists, which would drop it as a clean file page: without swap tmpfs pages are
    /// unevictable.
    Write,
}

/// A file's page cache (`mapping->i_pages`): the frame cached at each page index, or none.
/// Frames are stored in 4 bytes (the model's frame numbers are below 2^32: `PAGES_PER_NODE`
/// per node), half what a `u64` per index took: seed 002's 56 tlb_flush1 tasks cache 1.8 M
/// pages (7 MiB less per run). Each modelled file is opened once, so its `struct
/// file`'s readahead state (`f_ra`) is kept here too.
#[derive(Debug, Clone)]
pub struct FilePages {
    slots: Vec<u32>,
    /// The order of the folio each index is in, where the file has large folios (allocated at
    /// its first; a folio of order `o` starts at an index aligned to `1 << o`).
    orders: Vec<u8>,
    /// `mapping_large_folio_support`: the file is read into large folios.
    pub large: bool,
    /// The shadow entry reclaim left at each index it evicted (linux/mm/workingset.rs), or
    /// none; allocated at the file's first eviction.
    shadows: Vec<u32>,
    pub ra: RaState,
    /// A shared writable mapping of the file wants write notification (`vma_wants_writenotify`):
    /// a disk filesystem's `page_mkwrite` and dirty accounting. tmpfs and shmem have neither,
    /// so their mappings keep write permission in every PTE they install
    /// (docs/references/linux-mm.md#write-notify).
    pub writenotify: bool,
    /// `mapping->i_pages`' `xa_lock` (docs/references/linux-mm.md#i_pages-lock).
    pub i_pages: SpinLock,
}

impl FilePages {
    /// A slot with no page.
    const NONE: u32 = u32::MAX;
    /// Host bytes per page of a file: its slot (written at creation) and, once reclaim evicts
    /// one of its pages, its shadow, and its folio's order where it has large folios.
    pub const HOST_BYTES_PER_PAGE: u64 = 2 * std::mem::size_of::<u32>() as u64 + 1;

    pub fn new(pages: u64, writenotify: bool) -> FilePages {
        FilePages {
            slots: vec![FilePages::NONE; pages as usize],
            orders: Vec::new(),
            large: false,
            shadows: Vec::new(),
            ra: RaState::default(),
            writenotify,
            i_pages: SpinLock::new(),
        }
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

    /// The folio of `order` whose first frame is `pfn` is now cached from `index` (aligned to
    /// its size), a frame an index.
    pub fn set_folio(&mut self, index: u64, pfn: u64, order: u8) {
        let nr = 1u64 << order;
        debug_assert_eq!(index % nr, 0, "a folio starts at an index aligned to its size");
        if order > 0 && self.orders.is_empty() {
            self.orders = vec![0; self.slots.len()];
        }
        for i in 0..nr {
            self.set(index + i, pfn + i);
            if let Some(o) = self.orders.get_mut((index + i) as usize) {
                *o = order;
            }
        }
    }

    /// The folio `index` is cached in, if any: its first index, first frame and order.
    pub fn folio(&self, index: u64) -> Option<(u64, u64, u8)> {
        let order = self.orders.get(index as usize).copied().unwrap_or(0);
        let first = index & !((1u64 << order) - 1);
        Some((first, self.get(first)?, order))
    }

    /// The page at `index` leaves the page cache (`__delete_from_page_cache`).
    pub fn remove(&mut self, index: u64) {
        self.slots[index as usize] = FilePages::NONE;
    }

    /// Reclaim evicts the folio of `nr` pages from `index`, leaving `shadow` in its slots where
    /// workingset detection gives one (`__remove_mapping` with `workingset_eviction`'s entry:
    /// one multi-index entry in the xarray).
    pub fn evict(&mut self, index: u64, nr: u64, shadow: Option<u32>) {
        for i in index..index + nr {
            self.remove(i);
            if let Some(o) = self.orders.get_mut(i as usize) {
                *o = 0;
            }
        }
        let Some(shadow) = shadow else { return };
        if self.shadows.is_empty() {
            self.shadows = vec![FilePages::NONE; self.slots.len()];
        }
        self.shadows[index as usize..(index + nr) as usize].fill(shadow);
    }

    /// The shadow entry over `nr` pages from `index`, if reclaim left one, taken: a folio is
    /// being read in there again (a refault; `__filemap_add_folio` keeps the first shadow its
    /// range replaces).
    pub fn take_shadow(&mut self, index: u64, nr: u64) -> Option<u32> {
        if self.shadows.is_empty() {
            return None;
        }
        let range = &mut self.shadows[index as usize..(index + nr) as usize];
        let shadow = range.iter().copied().find(|&s| s != FilePages::NONE);
        range.fill(FilePages::NONE);
        shadow
    }

    /// Whether no page of `[index, index + nr)` is cached (a folio there would not collide:
    /// `filemap_add_folio` fails with `-EEXIST` otherwise).
    pub fn range_free(&self, index: u64, nr: u64) -> bool {
        (index..index + nr).all(|i| self.get(i).is_none())
    }

    /// `page_cache_next_hole` (v4.2): the first index from `index` with no page, scanning at
    /// most `max` (then `index + max`).
    pub fn next_hole(&self, index: u64, max: u64) -> u64 {
        (index..index + max).find(|&i| i >= self.len() || self.get(i).is_none()).unwrap_or(index + max)
    }
}

crate::linux::vmstat::counters! {
    /// Page-cache fills, counted.
    Counters {
        /// Pages read into the page cache (holes of sparse files: zero-filled).
        pagecache_fills,
        /// Readahead reads (`ra_submit`: read-around or a window pushed forward at a marker).
        readahead_calls,
        /// Large folios read in (`file_folios = large`), and the folios a readahead read as
        /// single pages instead (a cached page in the way, no free block, or the charge refused).
        pagecache_large_folios,
        readahead_folio_fallbacks,
        /// Sections under a mapping's `i_pages` lock (`__filemap_add_folio`, `__remove_mapping`),
        /// those that found it held, and the time from asking to holding it (ps).
        i_pages_lock_acquisitions,
        i_pages_lock_contended,
        i_pages_lock_wait_ps,
    }
}

impl Kernel {
    /// A page-cache page of `file`, read in (zero-filled: the files are sparse) if absent.
    /// `at`: when the caller gets here.
    pub(in crate::linux) fn page_cache_page(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        file: u32,
        index: u64,
    ) -> (u64, Ps) {
        if let Some(pfn) = self.mm.files[file as usize].get(index) {
            return (pfn, Ps::ZERO);
        }
        self.counters.filemap.pagecache_fills += 1;
        // The fill writes the whole page.
        self.page_cache_add(ctx, at, file, index, Fill::HoleRead, Bucket::Fault)
    }

    /// A new page at `index` of `file`, which has none: allocated, charged and added to the page
    /// cache, its content as `fill` says. Charged to `bucket` (a hole's clear to zeroing). `at`:
    /// when the caller gets here. Returns the page and the time.
    pub(in crate::linux) fn page_cache_add(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        file: u32,
        index: u64,
        fill: Fill,
        bucket: Bucket,
    ) -> (u64, Ps) {
        self.page_cache_add_folio(ctx, at, (file, index, 0), fill, bucket)
            .expect("a single page is always allocated (or the run is out of memory)")
    }

    /// [`Kernel::page_cache_add`] of a folio of `order` from `index` (aligned to its size), the
    /// pages of `file` there all absent: `None` where no free block of the order was found (a
    /// readahead's `__GFP_NORETRY` allocation, which then reads single pages). One allocation,
    /// charge, fill path (`pagecache_fill_page`: the read of a hole is one
    /// `ext4_mpage_readpages` pass a folio), `i_pages` section and LRU add for the folio; the
    /// clear for each of its pages.
    pub(in crate::linux) fn page_cache_add_folio(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        (file, index, order): (u32, u64, u8),
        fill: Fill,
        bucket: Bucket,
    ) -> Option<(u64, Ps)> {
        // The caller's time so far is in the CPU's buckets, not in `ctx.now`: the fault passes
        // it as `at`.
        let (pfn, a) = if order == 0 {
            self.alloc_frame(ctx, at, Owner::PageCache { file, index }, bucket)
        } else {
            self.alloc_folio(ctx, at, order, (file, index), bucket)?
        };
        let nr = 1u64 << order;
        self.mm.vmscan.set_folio_order(pfn, order);
        self.mm.files[file as usize].set_folio(index, pfn, order);
        if let Some(shadow) = self.mm.files[file as usize].take_shadow(index, nr) {
            self.workingset_refault(pfn, nr, shadow, at + a);
        }
        let charge = self.memcg_charge(ctx, at + a, nr);
        ctx.charge(bucket, charge);
        let a = a + charge;
        let read = match fill {
            Fill::HoleRead => self.mm.vmscan.costs.as_ref().map(|c| c.pagecache_fill_page),
            Fill::Write => None,
        };
        let mut clear = Ps::ZERO;
        if fill == Fill::HoleRead {
            for p in pfn..pfn + nr {
                clear += self.clear_new_page(ctx, at + a + clear, p);
            }
        }
        let Some(read) = read else {
            // filemap_add_folio charges and LRU-adds the new page as an anonymous one would be;
            // a tmpfs write's, at shmem_alloc_and_add_folio's measured cost where the profile has
            // it (linux/mm/shmem.rs).
            let measured = self.costs.shmem_write.as_ref().and_then(|c| c.new_folio);
            let rest = measured.filter(|_| fill == Fill::Write).unwrap_or(self.costs.memory.page_alloc);
            ctx.charge(bucket, rest);
            return Some((pfn, a + rest + clear));
        };
        // With reclaim: the fill's own path, its `__filemap_add_folio` section under the
        // mapping's `i_pages` lock where the profile has it, and the LRU add through the
        // pagevec.
        let locked = self.reclaim_costs().pagecache_add_locked;
        let d = a + self.i_pages_path(ctx, at + a, file, read, locked, bucket) + clear;
        let lru = self.lru_cache_add(ctx, at + d, pfn);
        Some((pfn, d + lru))
    }

    /// `filemap_fault` (v4.2) for a read fault at `index` of `file` (at `addr`) that
    /// fault-around did not map, at `at`: the fault's readahead (`do_async_mmap_readahead` for
    /// a cached page, which reads only at a `PG_readahead` marker, then clears it;
    /// `do_sync_mmap_readahead` for a page not cached), then the page itself. The readahead's
    /// pages are read by steps queued after the fault, one page a step, so that each page's
    /// allocation and `lru_lock` section come in time order with the other CPUs'; a page the
    /// readahead reads is mapped after them ([`memory::Step::MapPage`]), one it did not is read
    /// at once (`page_cache_read`). If the pages to read in would take the node below `min`,
    /// the task reclaims directly first (`__alloc_pages_direct_reclaim`): the access then
    /// faults again, with the readahead state and the marker as they were. Returns what
    /// became of the page and the time taken in this step.
    pub(in crate::linux) fn filemap_fault(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        file: u32,
        index: u64,
        addr: u64,
    ) -> (FaultPage, Ps) {
        let f = &self.mm.files[file as usize];
        let cached = f.folio(index);
        let marked = cached.is_some_and(|(_, p, _)| self.mm.vmscan.readahead_marked(p));
        let mut ra = f.ra;
        let window = match cached {
            Some((_, _, order)) if f.large => {
                ra.async_mmap_folios(index, marked, 1 << order, |i, max| f.next_hole(i, max))
            }
            Some(_) => ra.async_mmap(index, marked, |i, max| f.next_hole(i, max)),
            None => ra.sync_mmap(index),
        };
        let end = window.map_or(0, |w| (w.start + w.size).min(f.len()));
        let first = window.and_then(|w| (w.start..end).find(|&i| f.get(i).is_none()));
        let reads_page = cached.is_none() && first.is_some_and(|i| (i..end).contains(&index));
        if cached.is_none() && !reads_page && self.should_direct_reclaim(ctx.cpu, 1) {
            // page_cache_read's allocation would fail the min watermark.
            let t = self.cpus[ctx.cpu as usize].task.expect("a fault runs in a task");
            self.direct_reclaim(ctx, t, 1);
            return (FaultPage::Retry, Ps::ZERO);
        }
        self.mm.files[file as usize].ra = ra;
        if marked {
            self.mm.vmscan.clear_readahead(cached.expect("a marked page is cached").1);
        }
        // ra_submit -> __do_page_cache_readahead reads the window, then the fault maps its page.
        // A window read in large folios starts at its start (page_cache_ra_order), and falls
        // back to single pages at the first folio that would overlap a cached page.
        let readahead = window.zip(first).map(|(w, i)| {
            self.counters.filemap.readahead_calls += 1;
            let index = if w.order > 0 { w.start } else { i };
            memory::Step::ReadAhead { file, index, end, marker: w.marker(), reclaimed: false, order: w.order }
        });
        let map = reads_page.then_some(memory::Step::MapPage { addr, file, index });
        ctx.then_all(readahead.into_iter().chain(map).map(Continuation::Mm));
        match cached {
            Some((first, pfn, _)) => (FaultPage::Cached(pfn + index - first), Ps::ZERO),
            None if reads_page => (FaultPage::Reading, Ps::ZERO),
            None => {
                let (pfn, d) = self.page_cache_page(ctx, at, file, index);
                (FaultPage::Cached(pfn), d)
            }
        }
    }

    /// One page of a readahead (`__do_page_cache_readahead`, v4.2), or one folio of a window
    /// read in large folios (`page_cache_ra_order`, v6.18): reads in page `index` of `file`, or
    /// the folio from `index` of the window's order (smaller where `index` is not aligned to it
    /// or the window ends first), marking it `PG_readahead` if it holds the window's `marker`,
    /// and queues the next page of the window not cached before `end` (the next folio's index).
    /// A folio that would overlap a cached page, or whose block or charge cannot be had, falls
    /// back to single pages from `index` (`-EEXIST` / `-ENOMEM`, then `do_page_cache_ra`).
    /// Runs with interrupts on (a fault's body). The allocation (`__GFP_NORETRY`) that would
    /// fail the min watermark or the cgroup's limit reclaims directly first and is tried again
    /// after (`reclaimed`); failing again, a folio falls back to single pages and a single page
    /// ends the readahead (`if (!page) break`). Returns the time taken.
    pub(in crate::linux) fn readahead_page(&mut self, ctx: &mut Ctx, step: memory::Step) -> Ps {
        ctx.irqs_on();
        let memory::Step::ReadAhead { file, mut index, end, marker, reclaimed, order: mut window } = step
        else {
            unreachable!("a readahead step")
        };
        // This folio's order: the window's, lowered to what its index is aligned to and to what
        // fits before the window's end (page_cache_ra_order); the next folio starts from the
        // window's again.
        let mut order = 0;
        if window > 0 {
            order = window.min(index.trailing_zeros().min(63) as u8);
            while order > 0 && index + (1 << order) > end {
                order -= 1;
            }
            if !self.mm.files[file as usize].range_free(index, 1 << order) {
                // -EEXIST: the rest of the window in single pages, the cached ones skipped.
                window = 0;
                order = 0;
            }
        }
        if window == 0 {
            let f = &self.mm.files[file as usize];
            let Some(i) = (index..end).find(|&i| f.get(i).is_none()) else { return Ps::ZERO };
            index = i;
        }
        let nr = 1u64 << order;
        let single = |index| memory::Step::ReadAhead { file, index, end, marker, reclaimed: false, order: 0 };
        if self.should_direct_reclaim(ctx.cpu, nr) {
            if !reclaimed {
                let again =
                    memory::Step::ReadAhead { file, index, end, marker, reclaimed: true, order: window };
                ctx.then(Continuation::Mm(again));
                let t = self.cpus[ctx.cpu as usize].task.expect("a fault runs in a task");
                self.direct_reclaim(ctx, t, nr);
            } else if order > 0 {
                // The charge failed after its one reclaim (__GFP_NORETRY): single pages.
                ctx.then(Continuation::Mm(single(index)));
                self.counters.filemap.readahead_folio_fallbacks += 1;
            }
            return Ps::ZERO;
        }
        let added = if order == 0 {
            Some(self.page_cache_page(ctx, ctx.now, file, index))
        } else {
            self.page_cache_add_folio(ctx, ctx.now, (file, index, order), Fill::HoleRead, Bucket::Fault)
        };
        let Some((pfn, d)) = added else {
            // No free block of the order: single pages from here.
            self.counters.filemap.readahead_folio_fallbacks += 1;
            ctx.then(Continuation::Mm(single(index)));
            return Ps::ZERO;
        };
        if order > 0 {
            self.counters.filemap.pagecache_fills += nr;
            self.counters.filemap.pagecache_large_folios += 1;
        }
        if marker & !(nr - 1) == index {
            self.mm.vmscan.set_readahead(pfn);
        }
        let f = &self.mm.files[file as usize];
        let next = if window > 0 {
            Some(index + nr).filter(|&i| i < end)
        } else {
            (index + 1..end).find(|&i| f.get(i).is_none())
        };
        if let Some(next) = next {
            let next =
                memory::Step::ReadAhead { file, index: next, end, marker, reclaimed: false, order: window };
            ctx.then(Continuation::Mm(next));
        }
        d
    }

    /// A path of `path` asked for at `at` whose last `locked` (at most all of it) runs under
    /// `file`'s `i_pages` lock: the part outside it, then the section, both charged to `bucket`.
    /// `xa_lock_irq` turns interrupts off, so the spin is charged as a lock wait and nothing else
    /// runs on the CPU meanwhile. The lock's word is a line the CPUs' sections hand over
    /// (hw/lock.rs): reclaim on one CPU removing pages of a file another CPU is adding to
    /// (docs/references/linux-mm.md#i_pages-lock). `locked` none: the profile does not split the
    /// path, and no lock is taken. Returns the time from `at` to the unlock.
    pub(in crate::linux) fn i_pages_path(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        file: u32,
        path: Ps,
        locked: Option<Ps>,
        bucket: Bucket,
    ) -> Ps {
        let hold = locked.map_or(Ps::ZERO, |l| l.min(path));
        let rest = path - hold;
        ctx.charge(bucket, rest);
        if locked.is_none() {
            return rest;
        }
        let at = at + rest;
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let l = &mut self.mm.files[file as usize].i_pages;
        let before = l.stats.contended;
        let grant = l.acquire(ctx.cpu, at, hold, &topo, &lines);
        let contended = l.stats.contended > before;
        let c = &mut self.counters.filemap;
        c.i_pages_lock_acquisitions += 1;
        c.i_pages_lock_contended += contended as u64;
        c.i_pages_lock_wait_ps += (grant - at).0;
        ctx.lock_wait("i_pages", grant - at);
        ctx.charge(bucket, hold);
        rest + grant - at + hold
    }

    /// The disk the workload's files are on reads ahead `pages` at most (`read_ahead_kb` / 4;
    /// by default the kernel's 128 KiB): files created from now on are opened with it.
    pub fn set_disk_read_ahead(&mut self, pages: u64) {
        self.mm.disk_ra_pages = pages;
    }

    /// `open` + `ftruncate` + `unlink` of a `pages`-page file for task `t` (its id goes in
    /// register `reg`); `cached`: every page already in the page cache, as after a read;
    /// `tmpfs`: on tmpfs, else on a disk filesystem.
    pub(in crate::linux) fn create_file(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        pages: u64,
        reg: usize,
        (cached, tmpfs): (bool, bool),
    ) -> Ps {
        let file = self.mm.files.len() as u32;
        let d = self.costs.entry.syscall_half * 6;
        ctx.charge(Bucket::Syscall, d);
        // A `cached` file starts as the steady state its benchmark measures in, every page read
        // in: the pages come from the allocator outside simulated time.
        let mut slots = FilePages::new(pages, !tmpfs);
        if !tmpfs {
            slots.ra = RaState::new(self.mm.disk_ra_pages);
            slots.large = self.config.reclaim.file_folios == FileFolios::Large;
        }
        if cached {
            for index in 0..pages {
                let pfn = self.alloc_frame_untimed(ctx.cpu, ctx.now, Owner::PageCache { file, index });
                self.mm.vmscan.lru_add_untimed(pfn);
                slots.set(index, pfn);
            }
        }
        self.mm.files.push(slots);
        self.tasks[t].regs[reg] = file as u64;
        d
    }
}

#[cfg(test)]
mod tests {
    use super::FilePages;

    #[test]
    fn a_page_cache_slot_holds_a_frame_until_it_is_removed() {
        let mut f = FilePages::new(4, false);
        assert_eq!((f.len(), f.get(2)), (4, None));
        f.set(2, (1 << 32) - 2);
        assert_eq!(f.get(2), Some((1 << 32) - 2));
        f.remove(2);
        assert_eq!(f.get(2), None);
        // u32::MAX marks an empty slot, so it is no frame number either.
        assert!(std::panic::catch_unwind(|| FilePages::new(1, false).set(0, u32::MAX as u64)).is_err());
    }
}
