//! The arm64 knobs (arch/arm64/include/asm/tlbflush.h): range TLBIs and `MAX_TLBI_OPS`.

use super::*;

/// The arm64 knobs, created with v6.6's values by the first one set.
fn arm(k: &mut KernelConfig) -> &mut Arm64Knobs {
    k.arm64.get_or_insert(Arm64Knobs { tlbi_range: true, max_tlbi_ops: 512 })
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
];
