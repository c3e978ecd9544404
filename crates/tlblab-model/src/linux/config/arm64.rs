//! The arm64 knobs (arch/arm64/include/asm/tlbflush.h): range TLBIs, `MAX_TLBI_OPS`, reclaim's
//! batched unmap flush (v6.5) and `arch_flush_tlb_batched_pending` (v6.16's fix).

use super::*;
use crate::linux::arch::arm64::BatchedPending;

/// The arm64 knobs, created with v6.6's values by the first one set.
fn arm(k: &mut KernelConfig) -> &mut Arm64Knobs {
    k.arm64.get_or_insert(Arm64Knobs {
        tlbi_range: true,
        max_tlbi_ops: 512,
        batched_unmap: false,
        batched_pending: BatchedPending::Dsb,
    })
}

pub(super) const KNOBS: &[Knob] = &[
    Knob {
        name: "tlbi_range",
        section: "arm64",
        needed: Needed::Newer,
        allowed: "on | off",
        doc: "arm64: __flush_tlb_range uses TLBI RVA*IS range operations where the CPU has \
              FEAT_TLBIRANGE (v5.10+, d1d3aa98b1d4); off: one TLBI per page up to MAX_TLBI_OPS",
        apply: |k, v| on_off(v).map(|b| arm(k).tlbi_range = b),
    },
    Knob {
        name: "max_tlbi_ops",
        section: "arm64",
        needed: Needed::Newer,
        allowed: "pages, 1..=65536 (512 = PTRS_PER_PTE with 4K pages)",
        doc: "arm64 MAX_TLBI_OPS: without range TLBIs, a range of this many pages or more is \
              flushed by ASID (TLBI ASIDE1IS) instead of page by page",
        apply: |k, v| match v.parse::<u32>() {
            Ok(n) if (1..=65_536).contains(&n) => {
                arm(k).max_tlbi_ops = n;
                Ok(())
            }
            _ => Err(None),
        },
    },
    Knob {
        name: "batched_unmap",
        section: "arm64",
        needed: Needed::Newer,
        allowed: "on | off",
        doc: "arm64 reclaim: TTU_BATCH_FLUSH defers (arch_tlbbatch_should_defer), each unmapped page's \
              TLBI is issued without a DSB and one DSB ISH ends the batch (v6.5, 43b3dfdd0455); off: \
              ptep_clear_flush, a TLBI and a DSB per page (v6.4)",
        apply: |k, v| on_off(v).map(|b| arm(k).batched_unmap = b),
    },
    Knob {
        name: "batched_pending",
        section: "arm64",
        needed: Needed::Newer,
        allowed: "dsb | flush-mm",
        doc: "arm64 arch_flush_tlb_batched_pending (mprotect/munmap meeting reclaim's pending batch): \
              a DSB ISH on the calling CPU (v6.5-v6.15), or flush_tlb_mm (v6.16, 4b634918384c)",
        apply: |k, v| {
            arm(k).batched_pending = match v {
                "dsb" => BatchedPending::Dsb,
                "flush-mm" => BatchedPending::FlushMm,
                _ => return Err(None),
            };
            Ok(())
        },
    },
];
