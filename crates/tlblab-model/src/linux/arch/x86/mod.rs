//! x86 (`arch/x86`, v5.18): the TLB-flush protocol and the kernel's own translations.

pub mod mm;
pub mod text;

use crate::hw::cpumask::CpuMask;
use mm::tlb::RangePolicy;
use text::KernelText;

/// x86's kernel state beside the generic kernel's: what boot resolved for the flush protocol,
/// the lazy-mode mirror, and the kernel's own translations.
pub struct X86 {
    /// The range policy with any table-derived shift resolved for this machine.
    pub(in crate::linux) policy: RangePolicy,
    /// User address spaces are PCID-tagged (v4.14+ on a CPU with PCID).
    pub(in crate::linux) pcid: bool,
    /// The data and instruction TLBs' 4K entry counts (the range policies' inputs).
    pub(in crate::linux) range_sizes: (u64, u64),
    /// The CPUs whose `tlb_state.is_lazy` is set (a mirror, so choosing a shootdown's targets is
    /// mask arithmetic instead of a visit to every CPU of `mm_cpumask`).
    pub(in crate::linux) lazy: CpuMask,
    /// The kernel's own translations per path, when `kernel_tlb` is on and the CPU is x86.
    pub(in crate::linux) text: Option<KernelText>,
}
