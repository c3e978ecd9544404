//! `mmu_gather` (mm/mmu_gather.c and the zap in mm/memory.c, v5.18): a zap clears PTEs and
//! gathers the anonymous pages; the TLB flush comes before the pages are freed; and
//! `tlb_finish_mmu` flushes the whole mm when another thread's gather is in flight.

use crate::attribution::Bucket;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::include::linux::mm_types::{MmId, Pte, PAGE_SHIFT};
use crate::linux::{mm::mmap, Continuation, Kernel};
use crate::time::Ps;

use crate::linux::arch::x86::mm::tlb::TLB_FLUSH_ALL;

crate::linux::vmstat::counters! {
    /// Unmap batches, counted.
    Counters {
        pages_freed,
        /// Flushes forced inside the zap because it cleared dirty shared-file PTEs (v5.18
        /// `zap_pte_range`: flush before the page-table lock drops and the page is dirtied).
        dirty_pte_flushes,
        /// Whole-mm flushes `tlb_finish_mmu` added because another thread's gather was in flight
        /// (`mm_tlb_flush_nested`).
        nested_flushes,
    }
}

/// The rest of a zap, queued after the PTEs are cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `tlb_flush_mmu_free` / `release_pages`: free the gathered pages.
    FreeGathered,
    /// The flush `zap_pte_range` forces before dropping the page-table lock when it cleared
    /// dirty shared-file PTEs (v5.18), which also resets the gather's range.
    ForcedFlush { start: u64, end: u64 },
    /// `tlb_finish_mmu` (v5.18 mm/mmu_gather.c): if another thread of the mm is between its
    /// own gather and finish (`mm_tlb_flush_nested`), flush the whole mm, page tables included,
    /// whatever was flushed already; else flush the gathered range unless a forced flush did.
    FinishMmu { start: u64, end: u64, cleared: bool, freed_tables: bool, flushed: bool },
    /// `dec_tlb_flush_pending` at the end of `tlb_finish_mmu`.
    EndGather,
}

/// The steps of a zap after its PTEs are cleared, in order (v5.18 `zap_pte_range` /
/// `tlb_finish_mmu`): a flush forced by dirty shared-file PTEs (`dirty`), then the free, then
/// `tlb_finish_mmu`'s flush (skipped if forced already, unless nested); with the unsafe
/// `free_before_flush` knob the pages are freed before any flush. Pure, so that the model
/// checker (`crate::check`) runs the same order.
pub fn zap_order(
    free_before_flush: bool,
    start: u64,
    end: u64,
    cleared: bool,
    freed_tables: bool,
    dirty: bool,
) -> [Option<Step>; 4] {
    let forced = dirty && cleared;
    let finish = Step::FinishMmu { start, end, cleared, freed_tables, flushed: forced };
    let (free, end_gather) = (Some(Step::FreeGathered), Some(Step::EndGather));
    match (free_before_flush, forced) {
        (true, true) => [free, Some(Step::ForcedFlush { start, end }), Some(finish), end_gather],
        (true, false) => [free, Some(finish), end_gather, None],
        // The forced flush frees the batch at once (v5.18 zap_pte_range's tlb_flush_mmu).
        (false, true) => [Some(Step::ForcedFlush { start, end }), free, Some(finish), end_gather],
        (false, false) => [Some(finish), free, end_gather, None],
    }
}

/// The flush `tlb_finish_mmu` does: `(start, end, freed_tables)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinishFlush {
    pub start: u64,
    pub end: u64,
    pub freed_tables: bool,
}

/// `tlb_finish_mmu`'s decision for a [`Step::FinishMmu`] (v5.18 mm/mmu_gather.c): if another
/// thread of the mm is between its own gather and finish (`nested`, `mm_tlb_flush_nested`),
/// flush the whole mm, page tables included, whatever was flushed already; else flush the
/// gathered range unless a forced flush did or nothing was cleared.
pub fn finish_mmu_flush(s: Step, nested: bool) -> Option<FinishFlush> {
    let Step::FinishMmu { start, end, cleared, freed_tables, flushed } = s else {
        return None;
    };
    if nested {
        Some(FinishFlush { start: 0, end: TLB_FLUSH_ALL, freed_tables: true })
    } else if cleared && !flushed {
        Some(FinishFlush { start, end, freed_tables })
    } else {
        None
    }
}

impl Kernel {
    /// `mmu_gather`: anonymous pages are freed after the flush; page-cache pages stay cached.
    pub(in crate::linux) fn gather(&mut self, t: usize, mm: MmId, zapped: &[(u64, Pte)]) {
        for &(addr, pte) in zapped {
            // The frame keeps its owner until it is freed: until then a stale TLB entry may
            // still legally reach it.
            if self.mm.frames.owner(pte.pfn) == (Owner::Anon { mm, vpn: addr >> PAGE_SHIFT }) {
                self.tasks[t].gathered.push(pte.pfn);
            }
        }
    }

    /// The rest of a zap, queued: the steps of [`zap_order`], then return to user space.
    pub(in crate::linux) fn queue_zap_flush(
        &mut self,
        ctx: &mut Ctx,
        start: u64,
        end: u64,
        cleared: bool,
        freed_tables: bool,
        dirty: bool,
    ) {
        let order = zap_order(self.config.mm.free_before_flush, start, end, cleared, freed_tables, dirty);
        // The flush and the free happen under mmap_lock; the unlock comes before the return.
        // munmap, the only caller that frees page tables, holds it for write, or for read once
        // it downgraded (v4.20+).
        let write = freed_tables && !self.config.mm.munmap_downgrade;
        let unlock = self.config.mm.mmap_lock.then_some(mmap::Step::Unlock { write });
        ctx.then_all(
            order
                .iter()
                .flatten()
                .map(|s| Continuation::Gather(*s))
                .chain(unlock.map(Continuation::Sys))
                .chain([Continuation::Sys(mmap::Step::Exit)]),
        );
    }

    /// A queued step of task `t`'s zap.
    pub(in crate::linux) fn gather_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        let mm = self.tasks[t].user_mm();
        match s {
            Step::ForcedFlush { start, end } => {
                self.counters.mmu_gather.dirty_pte_flushes += 1;
                self.flush_tlb_mm_range(ctx, mm, start, end, false)
            }
            Step::FinishMmu { .. } => {
                let nested = self.mm.mms[mm as usize].tlb_flush_pending > 1;
                match finish_mmu_flush(s, nested) {
                    Some(f) => {
                        self.counters.mmu_gather.nested_flushes += nested as u64;
                        self.flush_tlb_mm_range(ctx, mm, f.start, f.end, f.freed_tables)
                    }
                    None => Ps::ZERO,
                }
            }
            Step::EndGather => {
                self.mm.mms[mm as usize].tlb_flush_pending -= 1;
                Ps::ZERO
            }
            Step::FreeGathered => {
                ctx.irqs_on();
                let pages = std::mem::take(&mut self.tasks[t].gathered);
                // release_pages after the flush (tlb_finish_mmu -> tlb_flush_mmu_free): per page
                // the LRU removal and uncharge (page_free), then __free_pages to the allocator.
                let mut d = Ps::ZERO;
                for &pfn in &pages {
                    ctx.charge(Bucket::Syscall, self.costs.memory.page_free);
                    d += self.costs.memory.page_free;
                    d += self.free_frame(ctx, ctx.now + d, pfn, Bucket::Syscall);
                }
                self.counters.mmu_gather.pages_freed += pages.len() as u64;
                if !pages.is_empty() {
                    d += self.kernel_path(ctx, Path::FreePages);
                }
                self.tasks[t].gathered = pages;
                self.tasks[t].gathered.clear();
                d
            }
        }
    }
}
