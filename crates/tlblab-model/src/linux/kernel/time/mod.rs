//! `kernel/time`: the scheduler tick on a busy CPU, and `jiffies`.

pub mod jiffies;
pub mod tick_sched;
