//! The MPC8xx's own hardware: its software-reloaded TLBs and its small caches. Kept in `hw`
//! beside the x86 parts (the kernel model in [`crate::linux::arch::ppc`] drives them as it drives
//! [`crate::hw::tlb`]), under the chip's name so the 8xx is one folder here too.

pub mod cache;
pub mod tlb;
