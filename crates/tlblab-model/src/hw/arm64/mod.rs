//! Arm A-profile (AArch64) parts the kernel model drives: broadcast TLB maintenance
//! ([`tlbi`]: `TLBI ... IS` and the `DSB ISH` that completes it).
//!
//! The per-core TLBs themselves are the generic ones of `hw/tlb` (their geometry comes from the
//! part's TRM through the profile); ASIDs tag their entries like x86 PCIDs.

pub mod tlbi;
