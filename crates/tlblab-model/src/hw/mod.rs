//! Hardware models: one module per hardware thing, named as the hardware names it.

pub mod tlb;
