//! Device drivers (Linux's `drivers/`): the block devices swap writes to, and `/dev/zero`.

pub mod block;
pub mod char;
