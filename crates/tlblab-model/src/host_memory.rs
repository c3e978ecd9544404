//! Not a Linux file: the host memory a run's model may take, estimated before anything is
//! allocated, so that a caller can refuse a run its host cannot hold (docs/limits.md). Each
//! figure is the `size_of` of what the model allocates times the count the run's input sets.
//! The per-frame maps are sparse (`crate::sparse`): they are counted as if the run wrote every
//! frame, the most it can, so the estimate is an upper bound on what grows with the input.

use std::mem::size_of;

use crate::engine::sim::TASK_HOST_BYTES;
use crate::hw::tlb::{Replacement, StructureSpec, TlbArray};
use crate::linux::arch::x86::text::KTouches;
use crate::linux::cpu::Cpu;
use crate::linux::frames::Frames;
use crate::linux::include::linux::gfp::PAGES_PER_NODE;
use crate::linux::include::linux::mm_types::{Mm, Vma};
use crate::linux::include::linux::mmzone::{List, MigrateType, PageMeta, PerCpuPages, PAGEBLOCK_ORDER};
use crate::linux::kernel::sched::core::Task;
use crate::linux::kernel::smp::Csd;
use crate::linux::mm::filemap::FilePages;
use crate::linux::mm::page_alloc::Layout;
use crate::linux::mm::vmscan::{Ubc, Vmscan};
use crate::linux::oracle::Oracle;
use crate::profile::MachineProfile;
use crate::run::RunSpec;

/// What sizes a part of the estimate, for a refusal to name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizer {
    /// The simulated memory: `nodes` nodes of `node_pages` page frames.
    Memory,
    /// The pages the workload maps and the file pages it creates.
    Mapped,
    /// The machine's TLB entries on every CPU.
    Tlbs,
    /// The tasks.
    Tasks,
    /// The CPUs' own state.
    Cpus,
}

/// A run's host-memory estimate in bytes, by part, with the counts that sized each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostBytes {
    /// Per simulated frame: its owner, `struct page`, LRU flags and the oracle's filler mask.
    pub memory: u64,
    /// Per mapped page its PTE, per file page its page-cache slot.
    pub mapped: u64,
    /// Every CPU's TLB arrays (a structure its SMT siblings share counted on each).
    pub tlbs: u64,
    /// Per task: the scheduler's and the engine's state and an address space.
    pub tasks: u64,
    /// Per CPU: its state, a call queue of one entry per CPU, its page lists in every zone.
    pub cpus: u64,
    pub nodes: u32,
    pub node_pages: u64,
    pub mapped_pages: u64,
    pub file_pages: u64,
    /// TLB entries of one CPU, summed over its structures.
    pub tlb_entries: u64,
    pub nr_cpus: u32,
    pub nr_tasks: u32,
}

impl HostBytes {
    pub fn total(&self) -> u64 {
        [self.mapped, self.tlbs, self.tasks, self.cpus].iter().fold(self.memory, |a, &b| a.saturating_add(b))
    }

    /// The largest part: what a refusal names.
    pub fn largest(&self) -> Sizer {
        let parts = [
            (self.memory, Sizer::Memory),
            (self.mapped, Sizer::Mapped),
            (self.tlbs, Sizer::Tlbs),
            (self.tasks, Sizer::Tasks),
            (self.cpus, Sizer::Cpus),
        ];
        parts.iter().max_by_key(|(b, _)| *b).map(|(_, s)| *s).expect("five parts")
    }
}

/// Host bytes per simulated page frame the run may write.
fn bytes_per_frame(cpus: u32) -> u64 {
    Frames::HOST_BYTES_PER_FRAME
        + size_of::<PageMeta>() as u64
        + Vmscan::HOST_BYTES_PER_PAGE
        + Oracle::host_bytes_per_frame(cpus)
}

/// The host bytes of a TLB hierarchy of `specs` (one CPU's, or the one `trace` builds).
pub fn tlb_host_bytes(specs: &[StructureSpec], replacement: Replacement) -> u64 {
    specs.iter().map(|s| TlbArray::host_bytes(s.geometry, replacement)).sum()
}

impl RunSpec {
    /// The host memory this run's model may take on `profile` (validated), computed from the
    /// spec alone. Sizes `run::run` would refuse are estimated all the same (it refuses them).
    pub fn host_bytes(&self, profile: &MachineProfile) -> HostBytes {
        let nodes = profile.topology.sockets;
        let cpus = profile.topology.cpus();
        // The nodes as `run::run` sizes them (a run it refuses: as the kernel asks).
        let kernel = crate::run::check(profile, self).unwrap_or_else(|_| self.kernel.clone());
        let node_pages = kernel.node_pages.unwrap_or(PAGES_PER_NODE);
        let zones = Layout::boot(nodes, &kernel).nodes.iter().flatten().filter(|z| z.pages > 0).count();
        let pcp = size_of::<PerCpuPages>() + kernel.page_alloc.pcp_lists.nr_lists() * size_of::<List>();
        let frames = node_pages.saturating_mul(nodes as u64);
        let memory = frames.saturating_mul(bytes_per_frame(cpus))
            + (frames >> PAGEBLOCK_ORDER) * size_of::<MigrateType>() as u64;
        let m = self.workload.mapped_pages(self.tasks);
        let mapped = m
            .mapped
            .saturating_mul(Vma::HOST_BYTES_PER_PAGE)
            .saturating_add(m.file.saturating_mul(FilePages::HOST_BYTES_PER_PAGE));
        let specs = profile.tlb_specs();
        let tlb_entries = specs.iter().map(|s| s.geometry.entries() as u64).sum();
        let per_cpu_tlb = tlb_host_bytes(&specs, profile.tlb.replacement);
        let nr_tasks = self.workload.tasks_created(self.tasks);
        let per_task = size_of::<Task>() + size_of::<Mm>() + size_of::<Ubc>() + size_of::<bool>();
        let per_cpu = size_of::<Cpu>() + size_of::<KTouches>() + cpus as usize * size_of::<Csd>();
        let per_cpu = per_cpu as u64 + (zones * pcp) as u64;
        HostBytes {
            memory,
            mapped,
            tlbs: cpus as u64 * per_cpu_tlb,
            tasks: nr_tasks as u64 * (per_task as u64 + TASK_HOST_BYTES),
            cpus: cpus as u64 * per_cpu,
            nodes,
            node_pages,
            mapped_pages: m.mapped,
            file_pages: m.file,
            tlb_entries,
            nr_cpus: cpus,
            nr_tasks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::config::KernelConfig;
    use crate::time::Ps;

    fn spec(workload: &str, tasks: u32, node_mib: Option<&str>) -> RunSpec {
        let mut k = KernelConfig::preset("5.18.1").unwrap();
        if let Some(m) = node_mib {
            k.set("node_mib", m).unwrap();
        }
        RunSpec {
            kernel: k,
            workload: crate::workload::Workload::parse(workload).unwrap(),
            tasks,
            seed: 1,
            warmup: Ps::US,
            measure: Ps::MS,
        }
    }

    #[test]
    fn the_estimate_is_at_least_the_frame_map_and_grows_with_memory_tasks_and_tlbs() {
        let p = crate::profile::shipped("skylake-sp-2s");
        let small = spec("tlb_flush2_processes", 4, Some("64")).host_bytes(&p);
        // The frame ownership map alone: one owner per frame of every node.
        assert_eq!(small.node_pages, 64 << 8);
        assert!(small.total() >= Frames::HOST_BYTES_PER_FRAME * (64 << 8) * 2, "{small:?}");
        assert!(small.memory >= (size_of::<u64>() + size_of::<PageMeta>()) as u64 * (64 << 9));
        let big = spec("tlb_flush2_processes", 4, Some("4096")).host_bytes(&p);
        assert_eq!(big.memory, small.memory * 64, "{big:?}");
        assert_eq!(big.largest(), Sizer::Memory);
        let many = spec("tlb_flush2_processes", 4096, Some("64")).host_bytes(&p);
        assert!(many.tasks > small.tasks * 1000 && many.total() > small.total(), "{many:?}");
        // Mapped pages: 256 per tlb_flush2 task plus text and stack.
        assert_eq!(many.mapped_pages, 4096 * 259);
        // A machine with bigger TLBs: the STLB of 2^16 entries on each CPU.
        let mut wide = p.clone();
        let stlb = wide.tlb.structures.iter_mut().max_by_key(|s| s.entries).unwrap();
        stlb.entries = 1 << 16;
        stlb.ways = 16;
        let w = spec("tlb_flush2_processes", 4, Some("64")).host_bytes(&wide);
        assert!(w.tlbs >= 112 * (1 << 16) * 16 && w.tlbs > small.tlbs * 10, "{w:?}");
        assert_eq!(w.largest(), Sizer::Tlbs);
        // ebizzy's chunks are mapped pages: one PTE each.
        let e = spec("ebizzy -n 1024 -s 4194304", 4, None).host_bytes(&p);
        assert!(e.mapped_pages >= 1024 * 1024 && e.mapped >= e.mapped_pages * 8, "{e:?}");
    }

    #[test]
    fn a_trace_tlb_is_its_entries() {
        use crate::hw::tlb::{Geometry, PageSize, Serves};
        let spec = |sets, ways| StructureSpec {
            name: "L1".into(),
            level: 1,
            serves: Serves::Unified,
            page_sizes: vec![PageSize::Size4K],
            geometry: Geometry::new(sets, ways).unwrap(),
        };
        let big = tlb_host_bytes(&[spec(1 << 14, 64)], Replacement::Lru);
        // At least a tag and a frame per entry.
        assert!(big >= (1 << 20) * 8 * 2, "{big}");
        assert!(big > tlb_host_bytes(&[spec(64, 4)], Replacement::Lru) * 1000);
        let two = tlb_host_bytes(&[spec(1 << 14, 64), spec(1 << 14, 64)], Replacement::Plru);
        assert!(two > 2 * big, "PLRU adds a tree per set");
    }
}
