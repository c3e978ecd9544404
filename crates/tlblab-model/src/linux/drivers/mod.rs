//! Device drivers (Linux's `drivers/`): the block devices swap writes to.

pub mod block;
