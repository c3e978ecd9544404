//! tlblab-native: measurements of the real host (CPUID TLB descriptors, pointer-chase TLB-miss
//! latency, shootdown cost, `/proc/interrupts`) and native re-implementations of the workloads.
//!
//! Built out by the real-host issue (6); the crate exists now so the workspace has its final shape
//! and the model crate never grows `unsafe` or libc.
