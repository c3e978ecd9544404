//! arch/arm64/include/asm.

pub mod tlbflush;
