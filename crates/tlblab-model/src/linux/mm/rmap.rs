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
//! aging, docs/references/seeds-001-003-004.md#per-page-flush).

use super::vmscan::Ubc;
use crate::attribution::Bucket;
use crate::hw::cpumask::CpuMask;
use crate::linux::arch::x86::mm::tlb::{flush_targets, FlushInfo, FlushKnobs, TLB_FLUSH_ALL};
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::include::linux::mm_types::{Backing, Mm, MmId, Pte, PAGE_SHIFT};
use crate::linux::Kernel;
use crate::time::Ps;

impl Mm {
    /// `anon_vma_prepare` for the VMA holding `addr`: nothing if it has its `anon_vma`, else a
    /// compatible neighbour's (`find_mergeable_anon_vma`, linux/mm/vma.rs) or a new one.
    pub(in crate::linux) fn anon_vma_prepare(&mut self, addr: u64) {
        let i = self.vmas.partition_point(|v| v.end <= addr);
        if self.vmas[i].anon_vma.is_some() {
            return;
        }
        let id = self.find_mergeable_anon_vma(i).unwrap_or_else(|| {
            self.next_anon_vma += 1;
            self.next_anon_vma - 1
        });
        self.vmas[i].anon_vma = Some(id);
    }
}

/// `should_defer_flush` (v4.3): with `TTU_BATCH_FLUSH` (`batched`), the flush of a PTE
/// `try_to_unmap_one` clears on `cpu` is deferred to the batch when `mm_cpumask` holds another
/// CPU; otherwise `ptep_clear_flush` flushes it at once. Pure: the model checker
/// (`crate::check::reclaim`) runs the same rule.
pub fn should_defer_flush(batched: bool, mm_cpumask: &CpuMask, cpu: u32) -> bool {
    let mut others = *mm_cpumask;
    others.clear(cpu);
    batched && !others.is_empty()
}

/// What `try_to_unmap_flush` does for a pending batch: a full local flush if this CPU is in
/// the batch's mask, then one IPI round to its other CPUs (lazy ones per `lazy_ipis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFlush {
    pub local: bool,
    pub others: CpuMask,
}

impl Ubc {
    /// `set_tlb_ubc_flush_pending` (v4.3): the mm's CPUs join the batch; a dirty PTE makes it
    /// writable (v7 3/4 batches dirty PTEs too and flushes them before writeback). With
    /// generations (v4.14+, b0579ade7cd8), x86's `arch_tlbbatch_add_mm` also bumps the mm's
    /// `tlb_gen` (`inc_mm_tlb_gen`): a CPU the batch's IPIs miss (it switched to another mm and
    /// keeps this one's entries under their PCID, or is lazy) flushes when it switches back.
    /// Returns whether the caller bumps `tlb_gen`.
    pub fn add_mm(&mut self, mm_cpumask: &CpuMask, dirty: bool, knobs: &FlushKnobs) -> bool {
        self.cpumask = self.cpumask.union(mm_cpumask);
        self.flush_required = true;
        self.writable |= dirty;
        // Also without generations where lazy CPUs are skipped (not a kernel: the stand-in
        // `switch_mm_irqs_off` checks, as for the shootdown's skipped lazy CPUs).
        knobs.lazy_ipis.switch_checks_tlb_gen(knobs.generations)
    }

    /// `try_to_unmap_flush`'s decision on `cpu` (v4.3): nothing unless a flush is pending. The
    /// IPI goes where the shootdown's goes ([`flush_targets`] for a request that freed no page
    /// tables): up to v4.19 every other CPU of the batch, lazy ones too; from v4.20 (read in
    /// v4.19's and v4.20's arch/x86/mm/tlb.c) `arch_tlbbatch_flush` -> `flush_tlb_others`
    /// -> `native_flush_tlb_others` IPIs only the CPUs `tlb_is_not_lazy` (the batch's
    /// `flush_tlb_info` has `freed_tables` 0), as `flush_tlb_multi`'s `cond_func` still does
    /// in v5.13+; a skipped lazy CPU flushes at its next `switch_mm_irqs_off`, since
    /// `arch_tlbbatch_add_mm` bumped the mm's `tlb_gen`.
    pub fn flush_plan(&self, cpu: u32, lazy: &CpuMask, knobs: &FlushKnobs) -> Option<BatchFlush> {
        if !self.flush_required {
            return None;
        }
        // The batch's flush_tlb_info has no mm: v6.14's should_flush_tlb sends it to every
        // non-lazy CPU of the batch's mask (no loaded-mm filter).
        let others = flush_targets(&self.cpumask, lazy, None, knobs, false, cpu);
        Some(BatchFlush { local: self.cpumask.contains(cpu), others })
    }
}

impl Kernel {
    /// The VMAs of the file of the page-cache folio at `pfn` that cover any of its pages
    /// (`vma_interval_tree` over `mapping->i_mmap`): for each, its mm, the address of the first
    /// of the folio's pages it covers, that page's offset in the folio and how many it covers,
    /// whether or not their PTEs are present.
    fn rmap_file(&self, pfn: u64) -> Vec<(MmId, u64, u64, u64)> {
        let Owner::PageCache { file, index } = self.mm.frames.owner(pfn) else {
            return Vec::new();
        };
        let end = index + self.mm.vmscan.nr_pages(pfn);
        let mut out = Vec::new();
        for m in &self.mm.mms {
            for v in m.vmas() {
                let same = matches!(v.backing, Backing::FileShared(f) | Backing::FilePrivate(f) if f == file);
                let (lo, hi) = (index.max(v.pgoff), end.min(v.pgoff + v.pages()));
                if same && lo < hi {
                    out.push((m.id, v.start + ((lo - v.pgoff) << PAGE_SHIFT), lo - index, hi - lo));
                }
            }
        }
        out
    }

    /// The mappings whose PTEs map a page of the folio at `pfn` right now (`folio_mapped`),
    /// page by page.
    pub(in crate::linux) fn folio_mappings(&self, pfn: u64) -> Vec<(MmId, u64)> {
        let mut maps = Vec::new();
        for (mm, va, off, n) in self.rmap_file(pfn) {
            let m = &self.mm.mms[mm as usize];
            for k in 0..n {
                let a = va + (k << PAGE_SHIFT);
                if m.pte(a).is_some_and(|p| p.present && p.pfn == pfn + off + k) {
                    maps.push((mm, a));
                }
            }
        }
        maps
    }

    /// The page of the folio headed by `pfn` that `mm` maps at `va` (a file folio's pages lie
    /// in order in each VMA that maps them).
    pub(in crate::linux) fn folio_page_at(&self, pfn: u64, mm: MmId, va: u64) -> u64 {
        if self.mm.vmscan.nr_pages(pfn) == 1 {
            return pfn;
        }
        let Owner::PageCache { index, .. } = self.mm.frames.owner(pfn) else { return pfn };
        let v = self.mm.mms[mm as usize].vma(va).expect("a mapping of the folio is in a VMA");
        pfn + (v.pgoff + ((va - v.start) >> PAGE_SHIFT) - index)
    }

    /// `folio_referenced` (v4.2 `page_referenced`; the same rule for a large folio in v6.18): 0
    /// at once for an unmapped folio; else visits every VMA of the file covering the folio and
    /// tests and clears the accessed bit of each PTE mapping one of its pages (no flush on x86),
    /// counting a VMA once however many of them were young (`folio_referenced_one`'s
    /// `pra->referenced++`). Returns (VMAs with a young PTE, VMAs visited).
    pub(in crate::linux) fn page_referenced(&mut self, pfn: u64) -> (u32, u32) {
        let maps = self.folio_mappings(pfn);
        if maps.is_empty() {
            return (0, 0);
        }
        let vmas = self.rmap_file(pfn).len() as u32;
        let nr = self.mm.vmscan.nr_pages(pfn);
        // The model keeps one accessed bit a frame: each page of a file folio is mapped by
        // one mm here (its file's reader).
        let mut young = false;
        for p in pfn..pfn + nr {
            young |= self.mm.vmscan.test_clear_young(p);
        }
        if young {
            self.counters.vmscan.pgref_young += 1;
        } else {
            self.counters.vmscan.pgref_old += 1;
        }
        (young as u32, vmas)
    }

    /// `try_to_unmap_one` of `mm` at `va` for task `t` (the reclaimer): clear the PTE, at
    /// `walk` (the VMA's visit, or one more PTE of a large folio in it); with `batched`, defer
    /// the flush if the mm may be cached on another CPU. Returns the time and whether the flush
    /// was deferred (if not, the caller flushes the page before going on).
    pub(in crate::linux) fn try_to_unmap_one(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        mm: MmId,
        va: u64,
        batched: bool,
        walk: Ps,
    ) -> (Ps, bool) {
        let cpu = ctx.cpu;
        let w = walk;
        ctx.charge(Bucket::Reclaim, w);
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let arm64_defers = self.is_arm64().then(|| batched && self.arm64_tlbbatch_should_defer());
        let m = &mut self.mm.mms[mm as usize];
        let pte = m.pte(va).unwrap_or_default();
        m.set_pte(va, Pte::default());
        self.counters.vmscan.reclaim_unmapped_ptes += 1;
        // arm64 (v6.5, linux/arch/arm64/include/asm/tlbflush.rs): should_defer_flush asks
        // arch_tlbbatch_should_defer (no mm_cpumask); set_tlb_ubc_flush_pending posts the
        // page's TLBI (arch_tlbbatch_add_pending).
        if let Some(defers) = arm64_defers {
            if !defers {
                return (w, false);
            }
            let ubc = &mut self.mm.vmscan.ubc[t];
            ubc.flush_required = true;
            ubc.writable |= pte.dirty;
            // mm->tlb_flush_batched: flush_tlb_batched_pending will find the batch pending.
            self.mm.mms[mm as usize].tlb_flush_batched = true;
            return (w + self.arm64_tlbbatch_add_pending(ctx, mm, va), true);
        }
        // should_defer_flush (v4.3): TTU_BATCH_FLUSH and another CPU in mm_cpumask.
        if should_defer_flush(batched, &m.cpumask, cpu) {
            let mut d = w;
            if self.mm.vmscan.ubc[t].add_mm(&m.cpumask, pte.dirty, &self.config.flush) {
                // inc_mm_tlb_gen: an atomic RMW on the contended line.
                let g = m.tlb_gen_line.write(cpu, ctx.now + w, &topo, &lines);
                m.tlb_gen += 1;
                self.stall(cpu, g);
                ctx.charge(Bucket::Reclaim, g);
                d += g;
            }
            return (d, true);
        }
        (w, false)
    }

    /// `flush_tlb_batched_pending(mm)` (v4.13, 3ea277194daa; called under the page-table lock
    /// by the walks that change PTEs reclaim may have unmapped: mprotect, munmap, mremap,
    /// madvise's): if reclaim batched a flush of `mm` since the last call,
    /// `arch_flush_tlb_batched_pending`. Only arm64's batch marks the mm here (x86's batch is
    /// not modelled as leaving the mm pending). Returns the cost.
    pub(in crate::linux) fn flush_tlb_batched_pending(&mut self, ctx: &mut Ctx, mm: MmId) -> Ps {
        if !std::mem::take(&mut self.mm.mms[mm as usize].tlb_flush_batched) {
            return Ps::ZERO;
        }
        self.arm64_flush_tlb_batched_pending(ctx, mm)
    }

    /// `try_to_unmap_flush` (v4.3, the pre-image of Nadav Amit's 2016 rework): nothing unless
    /// a flush is pending; a full local flush if this CPU is in the batch's mask, then one
    /// synchronous IPI round to its other CPUs (not the lazy ones from v4.20,
    /// [`Ubc::flush_plan`]), each of which flushes its whole TLB.
    pub(in crate::linux) fn try_to_unmap_flush(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let cpu = ctx.cpu;
        let ubc = std::mem::take(&mut self.mm.vmscan.ubc[t]);
        // arm64 (v6.5): arch_tlbbatch_flush, one DSB ISH for the TLBIs already posted.
        if self.is_arm64() {
            if !ubc.flush_required {
                return Ps::ZERO;
            }
            self.counters.vmscan.reclaim_batch_flushes += 1;
            return self.arm64_tlbbatch_flush(ctx);
        }
        // `lazy_test = in-queue`: the enqueue loop tests each target (see flush_tlb_mm_range).
        let skip_lazy = self.config.flush.lazy_in_queue(false);
        let none = CpuMask::new();
        let lazy = if skip_lazy { &none } else { &self.arch.x86.lazy };
        let Some(BatchFlush { local, others }) = ubc.flush_plan(cpu, lazy, &self.config.flush) else {
            return Ps::ZERO;
        };
        self.counters.vmscan.reclaim_batch_flushes += 1;
        self.counters.tlbflush.flush_requests += 1;
        let mut d = self.costs.tlbflush.flush_call;
        // v6.15 (72a920eacd8a, 0b7eb55cb706): with INVLPGB, one broadcast of every non-global
        // entry instead of the IPIs (the batch always unmapped pages here: `add_mm` set it).
        if self.arch.x86.broadcast.is_some() {
            d += self.invlpgb_flush_all_nonglobals();
            ctx.charge(Bucket::FlushWork, d);
            return d;
        }
        if local {
            d += self.flush_tlb_batch_pages(cpu);
        }
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
        d + self.call_function_many(ctx, info, true, &others, ctx.now + d, false, skip_lazy)
    }

    /// `percpu_flush_tlb_batch_pages` (v4.3) on `cpu`: `flush_tlb_local`, a CR3 reload that
    /// drops every non-global entry of what the CPU runs. Returns its cost.
    pub(in crate::linux) fn flush_tlb_batch_pages(&mut self, cpu: u32) -> Ps {
        let c = &mut self.cpus[cpu as usize];
        let pcid = c.x86.st.pcid();
        c.flush_asid(&mut self.tlbs[c.core], pcid);
        if c.x86.pti {
            c.x86.user_flush_pending = true;
        }
        self.counters.tlbflush.full_flushes += 1;
        self.costs.tlbflush.full_flush
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::arch::x86::mm::tlb::LazyIpis;

    #[test]
    fn the_batched_flush_skips_lazy_cpus_from_v4_20_only() {
        let mask = |cpus: &[u32]| {
            let mut m = CpuMask::new();
            cpus.iter().for_each(|&c| m.set(c));
            m
        };
        let mut knobs = crate::linux::config::KernelConfig::preset("4.9").expect("preset").flush;
        let mut ubc = Ubc::default();
        assert_eq!(ubc.flush_plan(0, &CpuMask::new(), &knobs), None, "nothing pending");
        ubc.add_mm(&mask(&[0, 1, 2, 3]), false, &knobs);
        // CPU 2 is lazy: v4.19 and before IPI it (it leaves the mm in the handler).
        let lazy = mask(&[2]);
        let send = ubc.flush_plan(0, &lazy, &knobs).unwrap();
        assert_eq!(send, BatchFlush { local: true, others: mask(&[1, 2, 3]) });
        knobs.lazy_ipis = LazyIpis::Skip;
        let skip = ubc.flush_plan(0, &lazy, &knobs).unwrap();
        assert_eq!(skip, BatchFlush { local: true, others: mask(&[1, 3]) });
        // Skipping needs the tlb_gen bump that makes the lazy CPU flush when it switches back.
        knobs.generations = false;
        assert!(Ubc::default().add_mm(&mask(&[1]), false, &knobs));
    }
}
