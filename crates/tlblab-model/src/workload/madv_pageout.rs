//! The benchmark of the arm64 batched unmap flush's commit message (v6.5, 43b3dfdd0455;
//! docs/references/linux-6x.md#arm64-batched-unmap): one process maps 1 MiB
//! `MAP_SHARED | MAP_ANONYMOUS` (shmem), `memset`s it to 0x88, then 10000 times reads one byte of
//! every page (each a fault that swaps the page back in from zram) and calls
//! `madvise(MADV_PAGEOUT)` on the whole region (each page reclaimed to zram again), pinned to
//! one CPU.
//!
//! The model: the mapping and the `memset` are untimed setup (linux/mm/shmem.rs
//! `map_shmem_filled`); each loop is one load per page through the TLB (a fault: shmem's
//! swap-in, linux/mm/shmem.rs) and the `madvise` (linux/mm/madvise.rs, reclaim through
//! linux/mm/vmscan/reclaim_pages.rs and linux/mm/rmap.rs). Every page is 0x88 throughout, so
//! zram stores each as one word (`page_same_filled`, linux/drivers/block/zram.rs): no compression.
//!
//! Metric: the benchmark's elapsed time, `loops` loops at the measured loop rate (one iteration
//! is one loop: the reads and the `madvise`).

use super::region_loop::RegionLoop;
use super::{Benchmark, MetricKind, Section, Setup};
use crate::engine::sim::Simulation;
use crate::hw::tlb::AccessKind;
use crate::linux::syscalls::{Addr, Op, Program};
use crate::profile::MachineProfile;
use crate::time::Ps;

const PAGE: u64 = 4096;
/// A register never written: `Addr { reg: ABS, offset: va }` is the absolute address `va`.
const ABS: usize = 0;
/// The byte the benchmark's `memset` writes.
const FILL: u8 = 0x88;
const NAME: &str = "madv-pageout";
const PARAMS: &[(&str, &str)] = &[
    ("size_kib", "KiB mapped, paged in and out each loop, 4..=65536, a multiple of 4 (default 1024)"),
    ("loops", "loops the elapsed time is for, 1..=1000000 (default 10000)"),
    ("cpu", "the CPU the process is pinned to (default 0)"),
];

/// The region's size, the loops the elapsed time is for, the pinned CPU (workload/region_loop.rs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MadvPageout(pub RegionLoop);

impl std::ops::Deref for MadvPageout {
    type Target = RegionLoop;
    fn deref(&self) -> &RegionLoop {
        &self.0
    }
}

impl Benchmark for MadvPageout {
    fn parse(text: &str) -> Option<Result<Self, String>> {
        Some(RegionLoop::parse(NAME, PARAMS, 65536, text)?.map(MadvPageout))
    }

    fn names() -> Vec<String> {
        vec![NAME.to_string()]
    }

    fn params() -> &'static [(&'static str, &'static str)] {
        PARAMS
    }

    fn name(&self) -> String {
        self.0.name(NAME)
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "elapsed", unit: "seconds", higher_is_better: false }
    }

    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        Some(1)
    }

    fn fixed_tasks(&self) -> Option<u32> {
        Some(1)
    }

    fn sections(&self) -> &'static [Section] {
        &[Section::Reclaim, Section::Swap]
    }

    fn footprint_pages(&self, _tasks: u32) -> Option<u64> {
        Some(self.size_kib / 4)
    }

    fn check_run(&self, profile: &MachineProfile, _tasks: u32) -> Result<(), String> {
        self.0.check_cpu(NAME, profile)
    }

    fn setup(&self, sim: &mut Simulation, _run: &Setup<'_>) {
        let mm = sim.add_mm();
        let len = self.size_kib * 1024;
        let start = sim.map_shmem_filled(mm, len, FILL);
        sim.add_task(Box::new(Loop { start, pages: len / PAGE }), mm, self.cpu);
    }

    /// `loops` loops at the measured rate.
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        self.0.elapsed(iterations, measured)
    }
}

/// The benchmark's loop: read one byte of every page, then `madvise(MADV_PAGEOUT)`.
struct Loop {
    start: u64,
    pages: u64,
}

impl Program for Loop {
    fn next(&mut self, out: &mut Vec<Op>) {
        for i in 0..self.pages {
            let addr = Addr { reg: ABS, offset: self.start + i * PAGE };
            out.push(Op::Access { addr, kind: AccessKind::Load });
        }
        out.push(Op::MadvisePageout { addr: Addr { reg: ABS, offset: self.start }, len: self.pages * PAGE });
        out.push(Op::Iteration);
    }
}

#[cfg(test)]
mod tests;
