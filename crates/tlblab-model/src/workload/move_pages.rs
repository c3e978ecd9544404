//! A page-migration loop (no published benchmark; the workload of
//! docs/experiments/linux-6.5-arm64-batched-migrate.md): one process maps `size_kib` KiB
//! `MAP_SHARED | MAP_ANONYMOUS` (shmem) and fills it, then loops: reads one byte of every page and
//! `move_pages(2)`s the whole region to the other node; again, back. Only on machines of two nodes or more.
//!
//! The model: the mapping and the fill are untimed setup (linux/mm/shmem.rs
//! `map_shmem_filled`, every page on node 0); each loop is two rounds of one load per page
//! through the TLB and a `move_pages` call
//! (linux/mm/migrate.rs: `migrate_pages_batch`'s unmap phase, one `try_to_unmap_flush`, the
//! move phase).
//!
//! Metric: the elapsed time of `loops` loops at the measured loop rate.

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
/// The byte the setup fills the region with.
const FILL: u8 = 0x88;
const NAME: &str = "move-pages";
const PARAMS: &[(&str, &str)] = &[
    ("size_kib", "KiB mapped and moved to the other node and back each loop, 4..=2048 (one migrate_pages batch: NR_MAX_BATCHED_MIGRATION pages), a multiple of 4 (default 1024)"),
    ("loops", "loops the elapsed time is for, 1..=1000000 (default 10000)"),
    ("cpu", "the CPU the process is pinned to (default 0)"),
];

/// The region's size, the loops the elapsed time is for, the pinned CPU (workload/region_loop.rs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MovePages(pub RegionLoop);

impl std::ops::Deref for MovePages {
    type Target = RegionLoop;
    fn deref(&self) -> &RegionLoop {
        &self.0
    }
}

impl Benchmark for MovePages {
    fn parse(text: &str) -> Option<Result<Self, String>> {
        Some(RegionLoop::parse(NAME, PARAMS, 2048, text)?.map(MovePages))
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
        &[Section::Reclaim]
    }

    fn footprint_pages(&self, _tasks: u32) -> Option<u64> {
        Some(self.size_kib / 4)
    }

    fn check_run(&self, profile: &MachineProfile, _tasks: u32) -> Result<(), String> {
        if profile.topology.sockets < 2 {
            return Err(format!(
                "{NAME}: {} has one node; moving pages needs a machine of 2+ nodes",
                profile.name
            ));
        }
        self.0.check_cpu(NAME, profile)
    }

    fn setup(&self, sim: &mut Simulation, _run: &Setup<'_>) {
        let mm = sim.add_mm();
        let len = self.size_kib * 1024;
        let start = sim.map_shmem_filled(mm, len, FILL);
        sim.untimed(|k, _| k.migrate_init());
        sim.add_task(Box::new(Loop { start, pages: len / PAGE }), mm, self.cpu);
    }

    /// `loops` loops at the measured rate.
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        self.0.elapsed(iterations, measured)
    }
}

/// The loop: read one byte of every page, `move_pages` of the whole region to node 1; again,
/// back to node 0.
struct Loop {
    start: u64,
    pages: u64,
}

impl Program for Loop {
    fn next(&mut self, out: &mut Vec<Op>) {
        let addr = Addr { reg: ABS, offset: self.start };
        for node in [1, 0] {
            for i in 0..self.pages {
                let addr = Addr { reg: ABS, offset: self.start + i * PAGE };
                out.push(Op::Access { addr, kind: AccessKind::Load });
            }
            out.push(Op::MovePages { addr, len: self.pages * PAGE, node });
        }
        out.push(Op::Iteration);
    }
}

#[cfg(test)]
mod tests;
