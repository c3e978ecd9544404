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
    pub(super) fn page_cache_page(&mut self, ctx: &mut Ctx, file: u32, index: u64) -> (u64, Ps) {
        let slot = self.files[file as usize][index as usize];
        if slot != NO_PAGE {
            return (slot, Ps::ZERO);
        }
        let pfn = self.frames.alloc(Owner::PageCache { file, index });
        self.files[file as usize][index as usize] = pfn;
        self.counters.memory.pages_zeroed += 1;
        // filemap_add_folio charges and LRU-adds the new page as an anonymous one would be.
        ctx.charge(Bucket::Fault, self.costs.mm.page_alloc);
        ctx.charge(Bucket::Zeroing, self.costs.mm.clear_page);
        (pfn, self.costs.mm.page_alloc + self.costs.mm.clear_page)
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
        let slots = (0..pages)
            .map(|index| if cached { self.frames.alloc(Owner::PageCache { file, index }) } else { NO_PAGE })
            .collect();
        self.files.push(slots);
        self.tasks[t].regs[reg] = file as u64;
        let d = self.costs.entry.syscall_half * 6;
        ctx.charge(Bucket::Syscall, d);
        d
    }
}
