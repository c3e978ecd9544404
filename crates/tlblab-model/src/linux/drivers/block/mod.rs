//! Block device drivers (Linux's `drivers/block/`).

pub mod zram;
