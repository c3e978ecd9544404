//! Hardware models: one module per hardware thing, named as the hardware names it.

pub mod cache;
pub mod coherence;
pub mod cpumask;
pub mod ipi;
pub mod lock;
pub mod smt;
pub mod tlb;
pub mod tlb8xx;
pub mod topology;
pub mod walk;
