//! x86 (`arch/x86`, v5.18): the TLB-flush protocol and the kernel's own translations.

pub mod mm;
pub mod text;

use crate::hw::coherence::CacheLine;
use crate::hw::cpumask::CpuMask;
use mm::tlb::{RangePolicy, TlbState};
use text::{KTouches, KernelText};

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
    /// `mm_cpumask` upkeep, counted (reported where a preset models it).
    pub(in crate::linux) mask: mm::tlb::MaskCounters,
    /// The kernel's own translations per path, when `kernel_tlb` is on and the CPU is x86.
    pub(in crate::linux) text: Option<KernelText>,
    /// Broadcast flushing with global ASIDs (v6.15), where the kernel enables it (`invlpgb`)
    /// and the CPU has INVLPGB.
    pub(in crate::linux) broadcast: Option<mm::tlb::broadcast::Broadcast>,
}

/// What x86's kernel keeps per CPU (`DEFINE_PER_CPU` in arch/x86): `cpu_tlbstate`, the user PCID's
/// pending flush under PTI, where the kernel paths' translations sit, and the line of this CPU's
/// `flush_tlb_info`.
pub struct PerCpu {
    pub st: TlbState,
    /// Page-table isolation is on: user entries have a PCID of their own.
    pub pti: bool,
    /// `user_pcid_flush_mask` (v5.18): the user PCID must be flushed on the way back to user
    /// space (`SWITCH_TO_USER_CR3` then writes CR3 without the no-flush bit).
    pub user_flush_pending: bool,
    /// Per distinct kernel touch, where its translation sat at level 1 after its last lookup.
    pub ktouch: Box<KTouches>,
    /// The line of this CPU's `flush_tlb_info` (v5.18 arch/x86/mm/tlb.c: a per-CPU variable,
    /// `get_flush_tlb_info`; older kernels kept it on the initiator's stack, the same single
    /// line): written when it sets up a flush, read by every handler of that flush.
    pub flush_info_line: CacheLine,
}
