//! The page cache (mm/filemap.c, v5.18), as far as the workloads use it: sparse files whose
//! pages are read in (zero-filled) on first touch, and the files will-it-scale creates.

use super::ctx::Ctx;
use super::frames::Owner;
use super::Kernel;
use crate::attribution::Bucket;
use crate::time::Ps;

/// A page-cache slot with no page.
pub const NO_PAGE: u64 = u64::MAX;

impl Kernel {
    /// A page-cache page of `file`, read in (zero-filled: the files are sparse) if absent.
    /// `at`: when the caller gets here.
    pub(super) fn page_cache_page(&mut self, ctx: &mut Ctx, at: Ps, file: u32, index: u64) -> (u64, Ps) {
        let slot = self.files[file as usize][index as usize];
        if slot != NO_PAGE {
            return (slot, Ps::ZERO);
        }
        // The caller's time so far is in the CPU's buckets, not in `ctx.now`: the fault passes
        // it as `at`.
        let (pfn, a) = self.alloc_frame(ctx, at, Owner::PageCache { file, index }, Bucket::Fault);
        self.files[file as usize][index as usize] = pfn;
        self.counters.memory.pages_zeroed += 1;
        // filemap_add_folio charges and LRU-adds the new page as an anonymous one would be.
        ctx.charge(Bucket::Fault, self.costs.mm.page_alloc);
        ctx.charge(Bucket::Zeroing, self.costs.mm.clear_page);
        (pfn, a + self.costs.mm.page_alloc + self.costs.mm.clear_page)
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
        let slots = (0..pages)
            .map(|index| {
                if cached {
                    self.alloc_frame_untimed(ctx.cpu, ctx.now, Owner::PageCache { file, index })
                } else {
                    NO_PAGE
                }
            })
            .collect();
        self.files.push(slots);
        self.tasks[t].regs[reg] = file as u64;
        d
    }
}
