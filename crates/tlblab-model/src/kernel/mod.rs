//! Kernel mechanisms, named after the Linux code they follow. Each rule's comment names the
//! kernel version it follows.

pub mod frames;
pub mod mm;
pub mod mmzone;
pub mod net;
pub mod page_alloc;
pub mod preset;
pub mod rwsem;
pub mod slab;
pub mod text;
pub mod tlbflush;
