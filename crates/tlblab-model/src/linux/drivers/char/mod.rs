//! Character devices (Linux's `drivers/char/`): `/dev/zero`.

pub mod mem;
