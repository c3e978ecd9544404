//! `arch/x86/mm`: TLB flushing (`tlb.c`).

pub mod tlb;
