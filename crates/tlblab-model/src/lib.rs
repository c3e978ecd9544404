//! tlblab-model: the simulated machine (TLBs, page walks, IPIs, coherent lines, locks), the Linux
//! memory-management mechanisms that run on it, and the workloads that drive them.
//!
//! Pure and deterministic: no files, no threads, no clock. The CLI reads profiles and traces and
//! hands this crate parsed values; the same inputs and seed always give the same result.
//!
//! # The principal types, and the seam
//!
//! A [`run::RunSpec`] (a [`profile::MachineProfile`], a [`linux::config::KernelConfig`], a
//! workload, tasks, seeds) becomes a [`engine::sim::Simulation`]: the engine, which keeps time and
//! control only (the agenda, each CPU's interrupt arrivals and step time, its queue of kernel
//! continuations, attribution), and a [`linux::Kernel`], which owns the mechanisms and their
//! state, one file per Linux file under [`linux`], laid out as Linux's tree. Each task runs a workload's
//! [`linux::syscalls::Program`], a stream of [`linux::syscalls::Op`]s (user accesses, compute,
//! system calls). The engine hands the kernel each step through one narrow type,
//! [`linux::ctx::Ctx`] (charge time to an [`attribution::Bucket`], queue a continuation, send an
//! IPI, kick a CPU, ask whether another CPU's event comes first); kernel code never sees the
//! agenda. The kernel reaches the hardware in [`hw`]: per-core [`hw::tlb::TlbHierarchy`], coherent
//! lines, locks, IPI costs. Every run ends as a [`run::RunResult`]: the metric, the
//! [`linux::Counters`] (each kernel file's own counters, gathered), time per bucket, the
//! [`linux::oracle`]'s safety findings, and the exact configuration it ran.
//!
//! [`check`] explores every interleaving of the shootdown protocol on a small system, running
//! the same decision functions of [`linux::arch::x86::mm::tlb`] and [`linux::mm::mmu_gather`] the
//! kernel runs.
//!
//! Arrows point one way: `engine -> linux -> hw`, all of them onto [`time`] and [`attribution`];
//! `run` and `workload` sit above.

pub mod attribution;
pub mod builtin;
pub mod check;
pub mod engine;
pub mod host_memory;
pub mod hw;
pub mod linux;
pub mod profile;
pub mod rng;
pub mod run;
pub mod sparse;
pub mod time;
pub mod toml_error;
pub mod trace;
pub mod workload;
