//! Where a CPU's time goes: the buckets every kernel path charges its time to and every report
//! stacks (docs/design.md#results). Below both the engine and the kernel, so neither imports the other
//! for it.

use crate::time::Ps;

/// Where a CPU's time went (docs/design.md#results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bucket {
    User,
    Walk,
    Syscall,
    Fault,
    Zeroing,
    FlushWork,
    IpiSend,
    IpiWait,
    Handler,
    /// Context switches and the scheduler.
    Sched,
    /// Waiting for a lock (sleeping tasks leave their CPU idle instead).
    LockWait,
    /// The scheduler tick's interrupt (kernel/time/tick-sched.c), entry to exit.
    Tick,
    /// Page reclaim's own work (linux/mm/vmscan.rs, linux/mm/rmap.rs): LRU processing, rmap walks,
    /// `__remove_mapping`, `struct page` misses (its lock waits, flushes and IPIs, and the frees
    /// have their own buckets).
    Reclaim,
    /// Waiting for the socket's DRAM bandwidth beyond a bulk transfer's own copy time
    /// (hw/uncore.rs: the LLC misses of copies queued on the memory controllers).
    MemWait,
    Idle,
}

pub const NR_BUCKETS: usize = 15;

/// One CPU's time by bucket, and a bit for each bucket its current step has charged, so that
/// stretching a step (engine/sim.rs: cost noise, an SMT sibling's share) visits only those.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTime {
    pub by_bucket: [Ps; NR_BUCKETS],
    pub step_mask: u32,
}

impl Bucket {
    pub const ALL: [Bucket; NR_BUCKETS] = [
        Bucket::User,
        Bucket::Walk,
        Bucket::Syscall,
        Bucket::Fault,
        Bucket::Zeroing,
        Bucket::FlushWork,
        Bucket::IpiSend,
        Bucket::IpiWait,
        Bucket::Handler,
        Bucket::Sched,
        Bucket::LockWait,
        Bucket::Tick,
        Bucket::Reclaim,
        Bucket::MemWait,
        Bucket::Idle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Bucket::User => "user",
            Bucket::Walk => "page_walk",
            Bucket::Syscall => "syscall",
            Bucket::Fault => "fault",
            Bucket::Zeroing => "zero_copy",
            Bucket::FlushWork => "flush",
            Bucket::IpiSend => "ipi_send",
            Bucket::IpiWait => "ipi_wait",
            Bucket::Handler => "ipi_handler",
            Bucket::Sched => "sched",
            Bucket::LockWait => "lock_wait",
            Bucket::Tick => "tick",
            Bucket::Reclaim => "reclaim",
            Bucket::MemWait => "mem_bw_wait",
            Bucket::Idle => "idle",
        }
    }
}
