//! The kernel text's own translations (arch/x86 text mapping).

use super::*;

pub(super) const KNOBS: &[Knob] = &[Knob {
    name: "kernel_tlb",
    section: "text",
    needed: Needed::Always,
    allowed: "on | off",
    doc: "kernel code and data use the TLB, per linux/arch/x86/text.rs; off = free",
    apply: |k, v| on_off(v).map(|b| k.text.kernel_tlb = b),
}];
