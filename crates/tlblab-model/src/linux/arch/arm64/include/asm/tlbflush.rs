//! arm64 TLB maintenance (arch/arm64/include/asm/tlbflush.h and tlb.h; the rules of v6.6 as read
//! in the Android common 6.6 tree, which carries v6.9's `__flush_tlb_range_nosync` split;
//! docs/references/linux-mm.md#arm64-tlb-flush): every flush is `DSB ISHST`, broadcast TLBIs,
//! `DSB ISH`. No IPI, no `mm_cpumask`: the hardware reaches every core of the inner-shareable
//! domain, and the DSB waits for all of them (hw/arm64/tlbi.rs).
//!
//! - `flush_tlb_mm`: one `TLBI ASIDE1IS` for the mm's ASID.
//! - `__flush_tlb_range(vma, start, end, stride, last_level)`: whole ASID when the CPU has no
//!   range TLBIs and the range is `MAX_TLBI_OPS` strides or more, or when it is
//!   `MAX_TLBI_RANGE_PAGES` or more; else `__flush_tlb_range_op`: one `VALE1IS` (last level) or
//!   `VAE1IS` per page, or range TLBIs from scale 3 down with a last odd page by VA.
//! - `tlb_flush(tlb)` (the `mmu_gather`): `__flush_tlb_range` of the gathered range, stride a
//!   page, last level only unless page tables were freed.
//! - `flush_tlb_page` (`ptep_clear_flush`): one `VALE1IS` and the DSB.
//! - Reclaim's batched unmap flush (v6.5, 43b3dfdd0455; the `batched_unmap` knob):
//!   `arch_tlbbatch_should_defer` always, `arch_tlbbatch_add_pending` a `VALE1IS` without the
//!   DSB, `arch_tlbbatch_flush` one `DSB ISH` (docs/references/linux-6x.md#arm64-batched-unmap).
//!
//! The invalidations take effect in every core's TLB when issued (as the model does for INVLPGB);
//! the initiator pays the issues and the DSB's wait, and frees nothing before it returns.

use crate::attribution::Bucket;
use crate::hw::arm64::tlbi::{range_op_count, Sequence, MAX_TLBI_RANGE_PAGES};
use crate::linux::arch::arm64::BatchedPending;
use crate::linux::arch::x86::mm::tlb::TLB_FLUSH_ALL;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};
use crate::linux::Kernel;
use crate::time::Ps;

/// The TLBIs one `__flush_tlb_range` issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tlbis {
    /// `flush_tlb_mm`: one `ASIDE1IS`.
    Asid,
    /// `va` TLBIs by VA and `range` range TLBIs.
    Pages { va: u64, range: u64 },
}

impl Tlbis {
    pub fn count(self) -> u64 {
        match self {
            Tlbis::Asid => 1,
            Tlbis::Pages { va, range } => va + range,
        }
    }
}

/// `__flush_tlb_range`'s choice for `pages` 4K pages (stride one page; `None`: `TLB_FLUSH_ALL`).
pub fn flush_range_tlbis(pages: Option<u64>, range_ops: bool, max_tlbi_ops: u64) -> Tlbis {
    match pages {
        None => Tlbis::Asid,
        Some(p) if (!range_ops && p >= max_tlbi_ops) || p >= MAX_TLBI_RANGE_PAGES => Tlbis::Asid,
        Some(p) => {
            let (va, range) = range_op_count(p, range_ops);
            Tlbis::Pages { va, range }
        }
    }
}

impl Kernel {
    /// The arm64 kernel, where the machine is an arm64 one.
    pub(in crate::linux) fn is_arm64(&self) -> bool {
        self.arch.arm64.is_some()
    }

    /// `tlb_flush` / `__flush_tlb_range` / `flush_tlb_mm` of `mm` on the calling CPU: the TLBIs,
    /// the DSB, their effect on every core's TLB. `end == TLB_FLUSH_ALL`: the whole mm. Returns
    /// the cost, charged as flush work.
    pub(in crate::linux) fn arm64_flush_tlb_range(
        &mut self,
        ctx: &mut Ctx,
        mm: MmId,
        start: u64,
        end: u64,
        _freed_tables: bool,
    ) -> Ps {
        let a = self.arch.arm64.as_mut().expect("arm64 kernel");
        let pages = (end != TLB_FLUSH_ALL).then(|| (end - start).div_ceil(1 << PAGE_SHIFT));
        let tlbis = flush_range_tlbis(pages, a.range_ops, a.knobs.max_tlbi_ops as u64);
        // The TLBIs name the mm's current ASID; one it never had cannot be cached anywhere.
        let ctx_id = a.ctx_ids.get(mm as usize).copied().unwrap_or(0);
        let asid = (ctx_id & ((1 << a.asids.bits) - 1)) as u16;
        let d0 = self.costs.tlbflush.flush_call;
        if ctx_id != 0 {
            let pages = match tlbis {
                Tlbis::Pages { .. } => pages,
                Tlbis::Asid => None,
            };
            self.arm64_invalidate(mm, asid, start, pages);
        }
        let seq = self.arm64_tlbi_dsb(ctx.now + d0, tlbis);
        let d = d0 + seq.total();
        ctx.charge(Bucket::FlushWork, d);
        d
    }

    /// The effect of TLBIs naming `asid` on every core that ever ran `mm`: `pages` pages from
    /// `start` by VA, or (`None`) the whole ASID. The invalidation takes effect when issued.
    fn arm64_invalidate(&mut self, mm: MmId, asid: u16, start: u64, pages: Option<u64>) {
        let Kernel { cpus, tlbs, mm: crate::linux::mm::Memory { mms, .. }, .. } = &mut *self;
        for cpu in mms[mm as usize].ever_loaded.iter() {
            let c = &mut cpus[cpu as usize];
            let tlb = &mut tlbs[c.core];
            match pages {
                Some(n) => {
                    for i in 0..n {
                        let va = start + (i << PAGE_SHIFT);
                        if tlb.invlpg(c.lp, va, asid) > 0 {
                            c.note_flushed(va >> PAGE_SHIFT);
                        }
                    }
                }
                None => c.flush_asid(tlb, asid),
            }
        }
    }

    /// `arch_tlbbatch_should_defer` (v6.5): reclaim defers every unmap's flush (no
    /// `mm_cpumask` to look at; only parts with ARM64_WORKAROUND_REPEAT_TLBI say no, and the
    /// modelled ones have no such erratum). False where the knob is off (v6.4: no batching).
    pub(in crate::linux) fn arm64_tlbbatch_should_defer(&self) -> bool {
        self.arch.arm64.as_ref().is_some_and(|a| a.knobs.batched_unmap)
    }

    /// `arch_tlbbatch_add_pending` (v6.5) from `try_to_unmap_one`: `__flush_tlb_page_nosync`,
    /// `DSB ISHST` and the page's `TLBI VALE1IS`, no `DSB ISH`: the invalidation reaches every
    /// core while the reclaimer goes on; `arch_tlbbatch_flush` waits for it. Returns the
    /// issuer's cost, charged as flush work.
    pub(in crate::linux) fn arm64_tlbbatch_add_pending(&mut self, ctx: &mut Ctx, mm: MmId, va: u64) -> Ps {
        let targets = self.topo.cpus();
        let a = self.arch.arm64.as_mut().expect("arm64 kernel");
        let ctx_id = a.ctx_ids.get(mm as usize).copied().unwrap_or(0);
        let asid = (ctx_id & ((1 << a.asids.bits) - 1)) as u16;
        let d = a.dvm.tlbi(ctx.now, 1, targets, &a.costs);
        a.counters.tlbi_va += 1;
        a.counters.batched_tlbis += 1;
        a.counters.tlbi_issue_ns += d.0 / 1000;
        if ctx_id != 0 {
            self.arm64_invalidate(mm, asid, va, Some(1));
        }
        ctx.charge(Bucket::FlushWork, d);
        d
    }

    /// `arch_tlbbatch_flush` (v6.5) from `try_to_unmap_flush`: one `DSB ISH`, which waits
    /// until every TLBI this CPU posted completed on every core. Returns its cost.
    pub(in crate::linux) fn arm64_tlbbatch_flush(&mut self, ctx: &mut Ctx) -> Ps {
        let targets = self.topo.cpus();
        let a = self.arch.arm64.as_mut().expect("arm64 kernel");
        let seq = a.dvm.tlbi_then_dsb(ctx.now, 0, targets, &a.costs);
        let c = &mut a.counters;
        c.dsb_ish += 1;
        c.batch_dsbs += 1;
        c.dsb_wait_ns += seq.dsb_wait.0 / 1000;
        c.dvm_queued_ns += seq.behind_others.0 / 1000;
        let d = seq.total();
        ctx.charge(Bucket::FlushWork, d);
        d
    }

    /// `arch_flush_tlb_batched_pending(mm)` (the `batched_pending` knob): v6.5's `DSB ISH` on
    /// this CPU, or v6.16's `flush_tlb_mm` (4b634918384c). Returns its cost, charged as flush
    /// work.
    pub(in crate::linux) fn arm64_flush_tlb_batched_pending(&mut self, ctx: &mut Ctx, mm: MmId) -> Ps {
        let a = self.arch.arm64.as_ref().expect("arm64 kernel");
        if a.knobs.batched_pending == BatchedPending::FlushMm {
            return self.arm64_flush_tlb_range(ctx, mm, 0, TLB_FLUSH_ALL, false);
        }
        let targets = self.topo.cpus();
        let a = self.arch.arm64.as_mut().expect("arm64 kernel");
        let seq = a.dvm.tlbi_then_dsb(ctx.now, 0, targets, &a.costs);
        let c = &mut a.counters;
        c.dsb_ish += 1;
        c.dsb_wait_ns += seq.dsb_wait.0 / 1000;
        c.dvm_queued_ns += seq.behind_others.0 / 1000;
        let d = seq.total();
        ctx.charge(Bucket::FlushWork, d);
        d
    }

    /// The TLBIs of `tlbis` issued from `at`, then `DSB ISH`; counted.
    fn arm64_tlbi_dsb(&mut self, at: Ps, tlbis: Tlbis) -> Sequence {
        let targets = self.topo.cpus();
        let a = self.arch.arm64.as_mut().expect("arm64 kernel");
        let seq = a.dvm.tlbi_then_dsb(at, tlbis.count(), targets, &a.costs);
        let c = &mut a.counters;
        c.arm64_flushes += 1;
        match tlbis {
            Tlbis::Asid => c.tlbi_asid += 1,
            Tlbis::Pages { va, range } => {
                c.tlbi_va += va;
                c.tlbi_range += range;
            }
        }
        c.dsb_ish += 1;
        c.tlbi_issue_ns += seq.issue.0 / 1000;
        c.dsb_wait_ns += seq.dsb_wait.0 / 1000;
        c.dvm_queued_ns += seq.behind_others.0 / 1000;
        seq
    }

    /// `check_and_switch_context` on `cpu` for `mm` (arch/arm64/mm/context.c): the mm's ASID,
    /// a new one on a generation change, and the full local flush a rollover left owed
    /// (`local_flush_tlb_all`). Returns whether it flushed (the caller charges the flush).
    pub(in crate::linux) fn arm64_switch_mm(&mut self, cpu: u32, mm: MmId) -> bool {
        let a = self.arch.arm64.as_mut().expect("arm64 kernel");
        if a.ctx_ids.len() <= mm as usize {
            a.ctx_ids.resize(mm as usize + 1, 0);
        }
        let rollovers = a.asids.rollovers;
        let s = a.asids.check_and_switch_context(cpu, &mut a.ctx_ids[mm as usize]);
        a.counters.asid_rollovers += a.asids.rollovers - rollovers;
        a.counters.asid_slow_switches += s.slow as u64;
        a.counters.rollover_flushes += s.flush_all as u64;
        self.arch.x86.lazy.clear(cpu);
        let c = &mut self.cpus[cpu as usize];
        // The TLB model's lookups tag with `st.pcid()` (= loaded_asid + 1): the ASID itself.
        c.x86.st.loaded_mm = Some(mm);
        c.x86.st.loaded_asid = s.asid - 1;
        c.x86.st.is_lazy = false;
        self.mm.mms[mm as usize].ever_loaded.set(cpu);
        if s.flush_all {
            let tlb = &mut self.tlbs[c.core];
            let asid = c.x86.st.pcid();
            if tlb.may_hold(c.lp, asid) {
                c.note_flushed_asid(tlb, asid);
            }
            tlb.flush_all_asids(c.lp);
        }
        s.flush_all
    }

    /// The arm64 counters, on an arm64 kernel.
    pub fn arm64_counters(&self) -> Option<crate::linux::arch::arm64::Counters> {
        self.arch.arm64.as_ref().map(|a| a.counters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{run, RunResult, RunSpec};

    /// Reclaim of seed-001's workload (8 readers, 256 MiB for 8 GiB) on the Kunpeng 920, v4.2 zones.
    fn reclaim_on_kunpeng(preset: &str) -> RunResult {
        let workload = "vm-scalability lru-file-mmap-read mem_mib=256 ram_mib=8192";
        let mut spec = RunSpec::of(preset, workload, 8, Ps::MS * 40, Ps::MS * 20);
        spec.kernel.set("zones", "v4.2").unwrap();
        run(&crate::profile::shipped("kunpeng920-2s128"), &spec).unwrap()
    }

    #[test]
    fn batched_reclaim_posts_each_pages_tlbi_and_ends_each_batch_with_one_dsb() {
        let per_page = reclaim_on_kunpeng("6.6-arm64");
        let batched = reclaim_on_kunpeng("6.6-arm64+batch");
        for r in [&per_page, &batched] {
            assert!(r.counters["reclaim_unmapped_ptes"] > 1000, "too little reclaim");
            assert_eq!(r.counters["ipis_sent"], 0);
        }
        // Per page: a TLBI and a DSB per unmapped PTE, nothing posted.
        assert_eq!(per_page.counters["batched_tlbis"], 0);
        assert_eq!(per_page.counters["reclaim_batch_flushes"], 0);
        let (pp_dsbs, pp_ptes) = (per_page.counters["dsb_ish"], per_page.counters["reclaim_unmapped_ptes"]);
        assert!(pp_dsbs + 10 >= pp_ptes, "per page: {pp_dsbs} DSBs for {pp_ptes} PTEs");
        // Batched: every unmapped PTE's TLBI posted, one DSB per try_to_unmap_flush.
        let c = &batched.counters;
        assert_eq!(c["batched_tlbis"], c["reclaim_unmapped_ptes"]);
        assert_eq!(c["reclaim_page_flushes"], 0);
        assert_eq!(c["batch_dsbs"], c["reclaim_batch_flushes"]);
        assert!(
            c["batch_dsbs"] * 8 < c["batched_tlbis"],
            "{} DSBs for {} TLBIs",
            c["batch_dsbs"],
            c["batched_tlbis"]
        );
        // The DSB time per unmapped page falls several fold.
        let per =
            |r: &RunResult| r.counters["dsb_wait_ns"] as f64 / r.counters["reclaim_unmapped_ptes"] as f64;
        assert!(
            per(&batched) * 3.0 < per(&per_page),
            "{:.0} vs {:.0} ns per page",
            per(&batched),
            per(&per_page)
        );
    }

    #[test]
    fn a_megabyte_is_256_tlbis_on_n1_and_one_range_op_on_v1() {
        assert_eq!(flush_range_tlbis(Some(256), false, 512), Tlbis::Pages { va: 256, range: 0 });
        assert_eq!(flush_range_tlbis(Some(256), true, 512), Tlbis::Pages { va: 0, range: 1 });
    }

    #[test]
    fn past_max_tlbi_ops_the_whole_asid_goes_unless_range_ops_cover_it() {
        assert_eq!(flush_range_tlbis(Some(511), false, 512), Tlbis::Pages { va: 511, range: 0 });
        assert_eq!(flush_range_tlbis(Some(512), false, 512), Tlbis::Asid);
        assert_eq!(flush_range_tlbis(Some(512), true, 512), Tlbis::Pages { va: 0, range: 1 });
        assert_eq!(flush_range_tlbis(Some(MAX_TLBI_RANGE_PAGES), true, 512), Tlbis::Asid);
        assert_eq!(flush_range_tlbis(None, true, 512), Tlbis::Asid);
    }
}
