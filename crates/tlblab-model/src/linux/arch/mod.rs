//! Architecture code (Linux's `arch/`): x86 as of v5.18 (`arch/x86`) and the MPC8xx as
//! 2.4.0 and 2.6.12-rc2 kept it (`arch/ppc`, which became `arch/powerpc` in 2.6.15).

pub mod ppc;
pub mod x86;

/// What only one architecture's kernel keeps, as Linux keeps it under `arch/`.
pub struct Arch {
    /// x86's flush-protocol state and kernel text. Resolved on every machine: the scheduler's
    /// `switch_mm` runs on every context switch, and results record the resolved range policy.
    pub(in crate::linux) x86: x86::X86,
    /// The MPC8xx machine and its kernel's layouts, on a software-loaded-TLB profile.
    pub(in crate::linux) ppc8xx: Option<Box<ppc::mm::mmu_8xx::Machine8xx>>,
}
