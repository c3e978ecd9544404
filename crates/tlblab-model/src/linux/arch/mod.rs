//! Architecture code (Linux's `arch/`): x86 as of v5.18 (`arch/x86`), arm64 as of v6.6
//! (`arch/arm64`), and the MPC8xx as 2.4.0 and 2.6.12-rc2 kept it (`arch/ppc`, which became
//! `arch/powerpc` in 2.6.15).

pub mod arm64;
pub mod ppc;
pub mod x86;

/// What only one architecture's kernel keeps, as Linux keeps it under `arch/`.
pub struct Arch {
    /// x86's flush-protocol state and kernel text. Resolved on every machine: the scheduler's
    /// `switch_mm` runs on every context switch, and results record the resolved range policy.
    pub(in crate::linux) x86: x86::X86,
    /// The MPC8xx machine and its kernel's layouts, on a software-loaded-TLB profile.
    pub(in crate::linux) ppc8xx: Option<Box<ppc::mm::mmu_8xx::Machine8xx>>,
    /// arm64's ASIDs and broadcast TLB maintenance, on a `cpu.vendor = "arm"` profile. Its
    /// CPUs keep their loaded mm and ASID in x86's `tlb_state` fields (`loaded_mm`, and
    /// `loaded_asid` so that the TLB's tag `pcid()` is the ASID), which the generic paths read.
    pub(in crate::linux) arm64: Option<Box<arm64::Arm64>>,
}

use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::MmId;
use crate::linux::Kernel;
use crate::time::Ps;

/// The arch hooks the generic mm and scheduler call, dispatched to the machine's architecture
/// as Linux links exactly one `arch/` in: `switch_mm_irqs_off` (kernel/sched/core.c's
/// context_switch) and the flush the mmu_gather and reclaim ask for (`flush_tlb_mm_range` on
/// x86, `tlb_flush` / `__flush_tlb_range` on arm64).
impl Kernel {
    /// `switch_mm_irqs_off` to `mm` on `cpu` at `at`: whether it flushed, and the cost of its
    /// `mm_cpumask` writes (x86 only; arm64's `check_and_switch_context` keeps no mask).
    pub fn switch_mm(&mut self, cpu: u32, mm: MmId, at: Ps) -> (bool, Ps) {
        if self.is_arm64() {
            return (self.arm64_switch_mm(cpu, mm), Ps::ZERO);
        }
        self.x86_switch_mm(cpu, mm, at)
    }

    /// A queued flush of task `t`'s mm (a COW's `ptep_clear_flush`, `tlb_end_vma`'s range):
    /// [`Kernel::flush_tlb_mm_range`], whichever the architecture.
    pub(in crate::linux) fn flush_step(&mut self, ctx: &mut Ctx, t: usize, s: x86::mm::tlb::Step) -> Ps {
        let mm = self.tasks[t].user_mm();
        self.flush_tlb_mm_range(ctx, mm, s.start, s.end, s.freed_tables)
    }

    /// The TLB flush of `[start, end)` of `mm` (`end == TLB_FLUSH_ALL`: all of it) from the
    /// calling CPU: x86's IPIs (arch/x86/mm/tlb.rs) or arm64's broadcast TLBIs and DSB
    /// (arch/arm64/include/asm/tlbflush.rs). Returns the cost.
    pub(in crate::linux) fn flush_tlb_mm_range(
        &mut self,
        ctx: &mut Ctx,
        mm: MmId,
        start: u64,
        end: u64,
        freed_tables: bool,
    ) -> Ps {
        if self.is_arm64() {
            return self.arm64_flush_tlb_range(ctx, mm, start, end, freed_tables);
        }
        self.x86_flush_tlb_mm_range(ctx, mm, start, end, freed_tables)
    }
}
