//! tlblab-native: measurements of the real host and native re-implementations of the workloads
//! the simulator runs, so simulation and hardware can be compared on the same machine.
//!
//! - [`cpuid`]: TLB geometry and features from CPUID (Intel leaf 0x2 / 0x18, AMD 0x8000_0005/6).
//! - [`interrupts`]: `/proc/interrupts` (the `TLB` row counts flush IPIs received).
//! - [`probe`]: pointer chases (TLB reach, cache latencies), the shootdown sweep, fault costs.
//! - [`host_profile`]: a machine profile built from the probe's measurements alone.
//! - [`workload`]: will-it-scale `tlb_flush1/2/3`, `page_fault1` (threads mode) and ebizzy `-m`.
//!
//! Linux only. Every `unsafe` block and every libc call of the workspace lives in this crate.

pub mod cpuid;
pub mod host;
pub mod host_profile;
pub mod interrupts;
pub mod memcg;
pub mod probe;
pub mod stats;
pub mod sys;
pub mod workload;
