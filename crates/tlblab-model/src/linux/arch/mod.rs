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
