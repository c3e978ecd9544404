//! tlblab-model: the simulated machine (TLBs, page walks, IPIs, coherent lines, locks), the Linux
//! memory-management mechanisms that run on it, and the workloads that drive them.
//!
//! Pure and deterministic: no files, no threads, no clock. The CLI reads profiles and traces and
//! hands this crate parsed values; the same inputs and seed always give the same result.

pub mod attribution;
pub mod engine;
pub mod hw;
pub mod kernel;
pub mod oracle;
pub mod profile;
pub mod rng;
pub mod run;
pub mod time;
pub mod trace;
pub mod workload;
