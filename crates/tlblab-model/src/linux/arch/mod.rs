//! Architecture code (Linux's `arch/`): x86 as of v5.18 (`arch/x86`) and the MPC8xx as
//! 2.4.0 and 2.6.12-rc2 kept it (`arch/ppc`, which became `arch/powerpc` in 2.6.15).

pub mod ppc;
pub mod x86;
