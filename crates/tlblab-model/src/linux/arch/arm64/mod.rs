//! arm64 (`arch/arm64`): TLB maintenance by broadcast `TLBI ... IS` and `DSB ISH` instead of
//! IPIs, and one ASID per mm (docs/references/linux-mm.md#arm64-tlb-flush).
//!
//! - [`include::asm::tlbflush`]: `flush_tlb_mm`, `__flush_tlb_range` with its switch to a
//!   whole-ASID flush past `MAX_TLBI_OPS` and its range TLBIs, `flush_tlb_page` (what
//!   `ptep_clear_flush` calls), and the `mmu_gather`'s `tlb_flush` on top of them.
//! - [`mm::context`]: the ASID allocator (`check_and_switch_context`, rollover).
//!
//! Lazy TLB: `enter_lazy_tlb` does nothing that matters here (a kernel thread keeps the old mm's
//! ASID loaded) and no flush looks at `mm_cpumask`: a broadcast reaches a lazy CPU like any
//! other, without interrupting it.

pub mod include;
pub mod mm;

use crate::hw::arm64::tlbi::{DvmNode, TlbiCosts};
use mm::context::AsidAllocator;

/// The arm64 kernel's knobs (the `[arm64]` section of a kernel preset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Arm64Knobs {
    /// `__flush_tlb_range_op` uses `TLBI RVA*` where the CPU has FEAT_TLBIRANGE (v5.10+,
    /// d1d3aa98b1d4 "arm64: tlb: Use the TLBI RANGE feature in arm64").
    pub tlbi_range: bool,
    /// `MAX_TLBI_OPS`: without range TLBIs, a range of this many pages or more is flushed by
    /// ASID instead (`PTRS_PER_PTE`, 512 with 4K pages, since v5.0; 1024 in v4.19).
    pub max_tlbi_ops: u32,
    /// Reclaim's batched unmap flush (v6.5, 43b3dfdd0455 "arm64: support batched/deferred tlb
    /// shootdown during page reclamation/migration"): `arch_tlbbatch_should_defer` says yes,
    /// `arch_tlbbatch_add_pending` issues the page's TLBI without a DSB, `arch_tlbbatch_flush`
    /// is one `DSB ISH`. Off: `ptep_clear_flush`, a TLBI and a DSB per page (v6.4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batched_unmap: bool,
    /// What `arch_flush_tlb_batched_pending` does when mprotect/munmap meet a pending batch.
    #[serde(default, skip_serializing_if = "BatchedPending::is_dsb")]
    pub batched_pending: BatchedPending,
}

/// `arch_flush_tlb_batched_pending(mm)` on arm64: the CPU that finds the mm's batch pending
/// (mprotect, munmap, mremap under the page-table lock) must know the batch's TLBIs completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatchedPending {
    /// v6.5-v6.15 (43b3dfdd0455): a `DSB ISH` on the calling CPU. The Arm ARM completes a
    /// TLBI only by a DSB of the core that issued it, so a DSB on another CPU than the
    /// reclaimer's does not wait for the batch's TLBIs.
    #[default]
    Dsb,
    /// v6.16 (4b634918384c "arm64/mm: Close theoretical race where stale TLB entry remains
    /// valid", Ryan Roberts, backported to stable): `flush_tlb_mm(mm)`, the caller's own
    /// `TLBI ASIDE1IS` and DSB.
    FlushMm,
}

impl BatchedPending {
    pub fn is_dsb(&self) -> bool {
        *self == BatchedPending::Dsb
    }
}

crate::linux::vmstat::counters! {
    /// What arch/arm64's TLB maintenance did, counted.
    Counters {
        /// Flush calls (`tlb_flush`, `flush_tlb_page`, `flush_tlb_mm`).
        arm64_flushes,
        /// TLBIs by VA (`VALE1IS`/`VAE1IS`), range TLBIs (`RVALE1IS`/`RVAE1IS`), by ASID
        /// (`ASIDE1IS`).
        tlbi_va,
        tlbi_range,
        tlbi_asid,
        /// `DSB ISH`s that completed broadcast TLBIs.
        dsb_ish,
        /// Nanoseconds the initiators spent issuing TLBIs and waiting in the DSB, and of that
        /// wait the time their messages queued behind other CPUs' at the DVM node.
        tlbi_issue_ns,
        dsb_wait_ns,
        dvm_queued_ns,
        /// ASID generation bumps, and the full local flushes they caused at context switches.
        asid_rollovers,
        rollover_flushes,
        /// Slow-path context switches (`cpu_asid_lock`).
        asid_slow_switches,
        /// TLBIs reclaim issued without a DSB (`arch_tlbbatch_add_pending`, v6.5), and the
        /// DSBs that completed them (`arch_tlbbatch_flush`).
        batched_tlbis,
        batch_dsbs,
    }
}

/// arm64's kernel state beside the generic kernel's.
pub struct Arm64 {
    pub(in crate::linux) knobs: Arm64Knobs,
    /// Range TLBIs are used: the kernel's knob and the CPU's feature.
    pub(in crate::linux) range_ops: bool,
    pub(in crate::linux) asids: AsidAllocator,
    /// `mm->context.id` per mm (0: never ran).
    pub(in crate::linux) ctx_ids: Vec<u64>,
    /// The interconnect's DVM node (hardware, kept here as the kernel's view of the machine).
    pub(in crate::linux) dvm: DvmNode,
    pub(in crate::linux) costs: TlbiCosts,
    pub(in crate::linux) counters: Counters,
}

impl Arm64 {
    /// Boot on a `cpu.vendor = "arm"` profile with the kernel's `[arm64]` knobs. The TLB model's
    /// tags hold 12-bit address-space ids, so a 16-bit-ASID part is run with 4096 ASIDs
    /// (a rollover every 4095 new mms instead of 65535; no workload here makes that many).
    pub fn boot(p: &crate::profile::MachineProfile, knobs: Arm64Knobs, cpus: u32) -> Arm64 {
        let t = p.tlbi.as_ref().expect("validated: an arm profile has [tlbi]");
        let bits = t.asid_bits.min(crate::hw::tlb::MAX_ASID.count_ones());
        Arm64 {
            knobs,
            range_ops: knobs.tlbi_range && t.range_ops,
            asids: AsidAllocator::new(bits, cpus),
            ctx_ids: Vec::new(),
            dvm: DvmNode::default(),
            costs: t.costs(p.clock_mhz()),
            counters: Counters::default(),
        }
    }
}
