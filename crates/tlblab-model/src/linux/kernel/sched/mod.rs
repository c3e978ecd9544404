//! `kernel/sched`: CFS and the context switch (`core.c`, `fair.c`), and wait queues (`wait.c`).

pub mod core;
pub mod wait;
