//! Kernel mechanisms, named after the Linux code they follow. Each rule's comment names the
//! kernel version it follows.

pub mod frames;
pub mod head_8xx;
pub mod mm;
pub mod preset;
pub mod rwsem;
pub mod system_map;
pub mod text;
pub mod tlbflush;
