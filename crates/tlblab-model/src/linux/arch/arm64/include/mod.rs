//! arch/arm64/include.

pub mod asm;
