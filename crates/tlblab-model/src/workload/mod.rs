//! Workloads: each follows a real benchmark's loop and reports its metric.

pub mod ebizzy;
pub mod pointer_chase;
pub mod will_it_scale;
