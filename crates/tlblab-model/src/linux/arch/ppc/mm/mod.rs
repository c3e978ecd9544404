//! `arch/ppc/mm`: the MPC8xx MMU as Linux drives it.

pub mod mmu_8xx;
