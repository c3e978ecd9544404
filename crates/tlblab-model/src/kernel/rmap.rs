//! Reverse mappings (mm/rmap.c, v4.2, with v4.3's batched unmap flush): from a page-cache page
//! to every VMA mapping it (`rmap_walk_file` over the mapping's `i_mmap`), the accessed-bit
//! check reclaim ages pages with (`page_referenced`), and `try_to_unmap` with its two flush
//! modes (the `unmap_flush` knob):
//! - per page (up to v4.2): `ptep_clear_flush` = clear the PTE, then `flush_tlb_page`: an
//!   INVLPG here if this CPU runs the mm, and a synchronous IPI round to the mm's other CPUs;
//! - batched (v4.3, `TTU_BATCH_FLUSH`, Mel Gorman's 72b252aed506 / d950c9477d51): when the mm's
//!   cpumask holds another CPU (`should_defer_flush`), `ptep_get_and_clear` without a flush and
//!   the mm's cpumask ORed into the reclaimer's `tlb_ubc`; `try_to_unmap_flush` then flushes
//!   the whole TLB of every CPU in it once (this CPU first, then one IPI round), before the
//!   batch is freed.
//!
//! The accessed bit is x86's: `ptep_clear_flush_young` clears it without a flush (no IPI from
//! aging, wave2-facts.md §1.2).

use super::ctx::Ctx;
use super::frames::Owner;
use super::mm::{Backing, MmId, Pte, PAGE_SHIFT};
use super::tlbflush::{FlushInfo, TLB_FLUSH_ALL};
use super::Kernel;
use crate::attribution::Bucket;
use crate::time::Ps;

impl Kernel {
    /// The VMAs of the page-cache page `pfn`'s file that cover its index (`vma_interval_tree`
    /// over `mapping->i_mmap`): `(mm, address)` for each, whether or not its PTE is present.
    fn rmap_file(&self, pfn: u64) -> Vec<(MmId, u64)> {
        let Owner::PageCache { file, index } = self.frames.owner(pfn) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for m in &self.mms {
            for v in m.vmas() {
                let same = matches!(v.backing, Backing::FileShared(f) | Backing::FilePrivate(f) if f == file);
                if same && index < v.pages() {
                    out.push((m.id, v.start + (index << PAGE_SHIFT)));
                }
            }
        }
        out
    }

    /// The mappings whose PTE maps `pfn` right now (`page_mapped`).
    pub(super) fn rmap_mappings(&self, pfn: u64) -> Vec<(MmId, u64)> {
        let mut maps = self.rmap_file(pfn);
        maps.retain(|&(mm, va)| self.mms[mm as usize].pte(va).is_some_and(|p| p.present && p.pfn == pfn));
        maps
    }

    /// `page_referenced` (v4.2): 0 at once for an unmapped page; else visits every VMA of the
    /// file covering the page and tests and clears the accessed bit (no flush on x86). Returns
    /// (young PTEs found, VMAs visited).
    pub(super) fn page_referenced(&mut self, pfn: u64) -> (u32, u32) {
        let maps = self.rmap_mappings(pfn);
        if maps.is_empty() {
            return (0, 0);
        }
        let vmas = self.rmap_file(pfn).len() as u32;
        let young = self.vmscan.test_clear_young(pfn);
        if young {
            self.counters.vmscan.pgref_young += 1;
        } else {
            self.counters.vmscan.pgref_old += 1;
        }
        (young as u32, vmas)
    }

    /// `try_to_unmap_one` of `mm` at `va` for task `t` (the reclaimer): clear the PTE; with
    /// `batched`, defer the flush if the mm may be cached on another CPU. Returns the time and
    /// whether the flush was deferred (if not, the caller flushes the page before going on).
    pub(super) fn try_to_unmap_one(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        mm: MmId,
        va: u64,
        batched: bool,
    ) -> (Ps, bool) {
        let cpu = ctx.cpu;
        let w = self.vmscan.costs.as_ref().expect("reclaim costs").rmap_vma;
        ctx.charge(Bucket::Reclaim, w);
        let m = &mut self.mms[mm as usize];
        let pte = m.pte(va).unwrap_or_default();
        m.set_pte(va, Pte::default());
        self.counters.vmscan.reclaim_unmapped_ptes += 1;
        // should_defer_flush (v4.3): TTU_BATCH_FLUSH and another CPU in mm_cpumask.
        let mut others = m.cpumask;
        others.clear(cpu);
        if batched && !others.is_empty() {
            // set_tlb_ubc_flush_pending: the mm's CPUs join the batch; a dirty PTE makes it
            // writable (v7 3/4 batches dirty PTEs too and flushes them before writeback).
            let ubc = &mut self.vmscan.ubc[t];
            ubc.cpumask = ubc.cpumask.union(&m.cpumask);
            ubc.flush_required = true;
            ubc.writable |= pte.dirty;
            return (w, true);
        }
        (w, false)
    }

    /// `try_to_unmap_flush` (v4.3, the pre-image of Nadav Amit's 2016 rework): nothing unless
    /// a flush is pending; a full local flush if this CPU is in the batch's mask, then one
    /// synchronous IPI round to its other CPUs, each of which flushes its whole TLB.
    pub(super) fn try_to_unmap_flush(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let ubc = std::mem::take(&mut self.vmscan.ubc[t]);
        if !ubc.flush_required {
            return Ps::ZERO;
        }
        let cpu = ctx.cpu;
        self.counters.vmscan.reclaim_batch_flushes += 1;
        self.counters.tlbflush.flush_requests += 1;
        let mut d = self.costs.flush.flush_call;
        if ubc.cpumask.contains(cpu) {
            d += self.flush_tlb_batch_pages(cpu);
        }
        let mut others = ubc.cpumask;
        others.clear(cpu);
        if others.is_empty() {
            ctx.charge(Bucket::FlushWork, d);
            return d;
        }
        self.counters.tlbflush.shootdowns += 1;
        // The request carries no mm: every target flushes whatever it runs.
        let info = FlushInfo {
            mm: 0,
            start: 0,
            end: TLB_FLUSH_ALL,
            stride_shift: PAGE_SHIFT,
            freed_tables: false,
            new_tlb_gen: 0,
            initiator: cpu,
        };
        ctx.charge(Bucket::FlushWork, d);
        d + self.call_function_many(ctx, info, true, &others, ctx.now + d, false)
    }

    /// `percpu_flush_tlb_batch_pages` (v4.3) on `cpu`: `flush_tlb_local`, a CR3 reload that
    /// drops every non-global entry of what the CPU runs. Returns its cost.
    pub(super) fn flush_tlb_batch_pages(&mut self, cpu: u32) -> Ps {
        let c = &mut self.cpus[cpu as usize];
        let pcid = c.st.pcid();
        c.flush_asid(pcid);
        if c.pti {
            c.user_flush_pending = true;
        }
        self.counters.tlbflush.full_flushes += 1;
        self.costs.flush.full_flush
    }
}
