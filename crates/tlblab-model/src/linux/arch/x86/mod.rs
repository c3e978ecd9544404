//! x86 (`arch/x86`, v5.18): the TLB-flush protocol and the kernel's own translations.

pub mod mm;
pub mod text;
