//! arch/arm64/mm.

pub mod context;
