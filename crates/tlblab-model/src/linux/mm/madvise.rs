//! madvise(MADV_PAGEOUT) (mm/madvise.c, v6.6; docs/references/linux-6x.md#madv-pageout), under
//! `mmap_lock` for read (linux/mm/mmap.rs):
//!
//! - `madvise_pageout`: `lru_add_drain`, `tlb_gather_mmu`, then the page walk's
//!   `madvise_cold_or_pageout_pte_range` per PMD (the modelled regions lie in one): under the
//!   PTE lock, `flush_tlb_batched_pending` (linux/mm/rmap.rs), then per present PTE whose folio
//!   is on the LRU and mapped once: a young PTE is made old (`ptep_get_and_clear_full`,
//!   `set_pte_at`) and its address gathered for a flush (`tlb_remove_tlb_entry`), the folio's
//!   `PG_referenced` and young flags are cleared, and `folio_isolate_lru` takes it off its LRU.
//!   After the PTE lock, `reclaim_pages` on the isolated folios (linux/mm/vmscan/reclaim_pages.rs).
//! - `tlb_end_vma` then flushes the gathered range (`tlb_flush_mmu_tlbonly`: on arm64
//!   `__flush_tlb_range`, a TLBI per page below `MAX_TLBI_OPS`, and a DSB), although reclaim
//!   has unmapped those PTEs by then. v6.9 (Barry Song, "mm: madvise: pageout: ignore
//!   references rather than clearing young") stopped clearing young PTEs for pageout and so
//!   this flush; v6.5 and v6.6 have it.
//! - The walk's per-PTE work costs the profile's `kernel.zap_pte_cycles` (the same PTE walk
//!   step as `zap_pte_range`'s).

use crate::attribution::Bucket;
use crate::linux::arch::x86::mm::tlb;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::PAGE_SIZE;
use crate::linux::mm::mmap;
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

impl Kernel {
    /// The body of `madvise(start, len, MADV_PAGEOUT)` for task `t`, `mmap_lock` held for read:
    /// the walk and the isolation; queues `reclaim_pages`, the gathered range's flush, the
    /// unlock and the return.
    pub(in crate::linux) fn madvise_pageout(&mut self, ctx: &mut Ctx, t: usize, start: u64, len: u64) -> Ps {
        let mm = self.tasks[t].user_mm();
        // The entry and madvise's own fixed path (kernel.madvise_call_cycles, zero where absent).
        let entry = self.costs.entry.syscall_half + self.costs.memory.madvise_call;
        ctx.charge(Bucket::Syscall, entry);
        let mut d = entry + self.kernel_path(ctx, Path::SyscallEntry) + self.kernel_path(ctx, Path::Madvise);
        d += self.lru_add_drain(ctx, ctx.now + d);
        d += self.flush_tlb_batched_pending(ctx, mm);
        let zap = self.costs.memory.zap_pte;
        let (mut gather_start, mut gather_end) = (u64::MAX, 0);
        let mut isolated = Vec::new();
        let mut a = start;
        while a < start + len {
            let pte = self.mm.mms[mm as usize].pte(a).filter(|p| p.present);
            if let Some(p) = pte {
                ctx.charge(Bucket::Syscall, zap);
                d += zap;
                // Only a folio on the LRU (every modelled one is mapped once).
                if self.mm.vmscan.on_lru(p.pfn) {
                    if self.mm.vmscan.test_clear_young(p.pfn) {
                        gather_start = gather_start.min(a);
                        gather_end = gather_end.max(a + PAGE_SIZE);
                    }
                    if let Some(w) = self.folio_isolate_lru(ctx, ctx.now + d, p.pfn) {
                        d += w;
                        isolated.push(p.pfn);
                    }
                }
            }
            a += PAGE_SIZE;
        }
        let gathered = (gather_end > gather_start).then_some(Continuation::Flush(tlb::Step {
            start: gather_start,
            end: gather_end,
            freed_tables: false,
        }));
        let unlock = self.config.mm.mmap_lock.then_some(mmap::Step::Unlock { write: false });
        ctx.then_all(
            gathered
                .into_iter()
                .chain(unlock.map(Continuation::Sys))
                .chain([Continuation::Sys(mmap::Step::Exit)]),
        );
        // Queued before the flush: reclaim_pages runs inside the walk.
        self.reclaim_pages(ctx, t, isolated);
        d
    }
}
