//! Linux's `kernel/`: cross-CPU calls, the scheduler and wait queues, locking, the tick.

pub mod locking;
pub mod sched;
pub mod smp;
pub mod time;
pub mod trace;
