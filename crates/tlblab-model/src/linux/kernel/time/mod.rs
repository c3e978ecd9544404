//! `kernel/time`: the scheduler tick on a busy CPU.

pub mod tick_sched;
