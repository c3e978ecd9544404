//! Hardware models: one module per hardware thing, named as the hardware names it.

pub mod arm64;
pub mod coherence;
pub mod cpumask;
pub mod ipi;
pub mod lock;
pub mod ppc8xx;
pub mod smt;
pub mod tlb;
pub mod topology;
pub mod uncore;
pub mod walk;
