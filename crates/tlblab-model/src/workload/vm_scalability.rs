//! vm-scalability's `case-lru-file-mmap-read` as mmtests' vmscale ran it in 2015
//! (docs/references/seeds-001-003-004.md#vm-scalability, #vmscale-report): for each of `nr_cpu` CPUs a sparse
//! file of `10 * mem / nr_cpu` bytes (`truncate -s`), and a `usemem -f file --readonly` process that maps it
//! (`mmap(PROT_READ, MAP_SHARED)`, no populate) and reads every word once, sequentially.
//! The files together are ten times memory, so memory fills with the mapped file pages of
//! processes running on other CPUs and kswapd and direct reclaim unmap them (linux/mm/vmscan.rs).
//!
//! The model:
//! - Memory is the machine's simulated memory (the kernel's `node_mib` knob scales it down from
//!   linux/include/linux/gfp.rs `PAGES_PER_NODE`); the files keep the ratio: `10 * mem / nr_cpu` each.
//! - Each page is read as one load through the TLB (which faults it in: read-around and
//!   fault-around, linux/mm/filemap.rs and memory.rs) followed by the page's other 511 words as
//!   user time at the profile's read rate of a cache-resident page (`memory.read_page_mbps`;
//!   absent, the L1 hit latency per load, `memory.l1d_hit_cycles`): the words
//!   of a page share its translation, so only the first can miss in the TLB or fault (a flush
//!   landing inside a page's 511 loads is not seen: the next page's load takes its miss).
//! - With `memcg_mib=`, the readers run in a memory cgroup of that limit on a larger machine (as
//!   `tlblab validate`'s real readers do): the files are ten times the limit, and the readers
//!   reclaim when a charge would pass it (linux/mm/memcontrol.rs); kswapd stays asleep.
//! - kswapd (one per node) is a kernel thread bound to the node's last CPU, which it shares
//!   with that CPU's usemem (CFS wake-up preemption lets it in when woken); it has no mm and
//!   runs on that usemem's in lazy TLB mode (linux/kernel/sched/core.rs).
//! - The run is a steady state: a warm-up fills memory and lets reclaim settle, the measured
//!   interval gives each process's page rate. A process whose file wraps starts over (its first
//!   pages were reclaimed long before: the file is 1.25 x memory); the measured interval does
//!   not include the first pass through memory, when nothing is reclaimed.
//!
//! Metric: vmscale's `lru-file-mmap-read-elapsed` (seconds, lower is better), here the time the
//! files take at the measured aggregate rate. Per-process elapsed times (for `time_range` and
//! `time_stddv`) are each process's file at its own measured rate (see [`per_process_elapsed`]).

use super::{Benchmark, MappedPages, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::hw::tlb::AccessKind;
use crate::linux::mm::memcontrol::Hierarchy;
use crate::linux::mm::vmscan::KswapdLoop;
use crate::linux::syscalls::{Addr, MapKind, Op, Program};
use crate::time::Ps;

const PAGE: u64 = 4096;
/// Words of 8 bytes per page (usemem's `step` is `sizeof(long)`).
const WORDS: u64 = PAGE / 8;
const MAP: usize = 0;
const FILE: usize = 1;
/// The files are this many times memory (`10 * mem`).
const FILES_X_MEM: u64 = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmScalability {
    case: &'static str,
    /// The machine's memory in MiB (`mem_mib=`, default 1024), split evenly over its nodes:
    /// the model's memory is scaled down from the real machine's (the seed does not state its
    /// RAM), every ratio kept (files 10 x memory, watermarks from the zone size).
    pub mem_mib: u64,
    /// The unscaled machine's memory in MiB (`ram_mib=`, default `mem_mib`): the kernel sizes
    /// its watermarks and per-CPU lists, and reclaim its scan targets, for this much memory
    /// (linux/config.rs `ram_pages`), so that what does not scale with memory
    /// (`SWAP_CLUSTER_MAX`, pagevecs, readahead, a CPU's allocation rate) keeps its proportion
    /// to what does.
    pub ram_mib: Option<u64>,
    /// A memory cgroup's limit on the readers in MiB (`memcg_mib=`, default none): the files
    /// are 10 x the limit instead of memory, and the readers reclaim their cgroup's pages
    /// themselves when a charge would pass it (linux/mm/memcontrol.rs), as a run inside a
    /// small cgroup on a large machine does; kswapd stays asleep.
    pub memcg_mib: Option<u64>,
    /// The cgroup's page counters a charge walks (`memcg_depth=`: the cgroup up to the root,
    /// default 2, a child of the root) and v1's swap accounting (`memcg_memsw=1`: a `memsw`
    /// counter at each level too; default 0, cgroup v2) (linux/mm/memcontrol.rs).
    pub memcg_hierarchy: Hierarchy,
    /// The `read_ahead_kb` of the disk the files are on (`read_ahead_kb=`, default 128, the
    /// kernel's `VM_READAHEAD_PAGES`; a driver or `blockdev --setra` may set another): the most
    /// a fault's readahead reads (linux/mm/readahead.rs).
    pub read_ahead_kb: u64,
}

const CASE: &str = "lru-file-mmap-read";
const DEFAULT_MEM_MIB: u64 = 1024;
const PARAMS: &[(&str, &str)] = &[
    ("mem_mib", "MiB of simulated memory, 16..=4096, a multiple of 4 per node (default 1024)"),
    (
        "ram_mib",
        "MiB of the machine the simulated memory scales down, mem_mib..=1048576 (default mem_mib): \
         watermarks, per-CPU lists and reclaim's scan targets are sized for it",
    ),
    (
        "memcg_mib",
        "MiB of a memory cgroup's limit on the readers, 4..=mem_mib/2, a multiple of 4 (default none): \
         files 10 x the limit, reclaimed by the readers when a charge passes it",
    ),
    (
        "memcg_depth",
        "the cgroup's page counters from it up to the root, 1..=8 (default 2: a child of the root)",
    ),
    ("memcg_memsw", "0 or 1: cgroup v1's swap accounting, a memsw counter at each level too (default 0)"),
    (
        "read_ahead_kb",
        "the files' disk's read_ahead_kb, 0..=65536, a multiple of 4 (default 128): the most a fault reads ahead",
    ),
];
/// The kernel's default `read_ahead_kb` (`VM_READAHEAD_PAGES`, 128 KiB).
const DEFAULT_READ_AHEAD_KB: u64 = 4 * crate::linux::mm::readahead::RA_PAGES;

/// A child of the root cgroup under cgroup v2.
const DEFAULT_HIERARCHY: Hierarchy = Hierarchy { depth: 2, memsw: false };

impl Benchmark for VmScalability {
    fn parse(text: &str) -> Option<Result<Self, String>> {
        let mut words = text.split_whitespace();
        if words.next()? != "vm-scalability" {
            return None;
        }
        if words.next() != Some(CASE) {
            return Some(Err(format!("vm-scalability: only case {CASE} is modelled; `{text}`")));
        }
        let mut w = VmScalability {
            case: CASE,
            mem_mib: DEFAULT_MEM_MIB,
            ram_mib: None,
            memcg_mib: None,
            memcg_hierarchy: DEFAULT_HIERARCHY,
            read_ahead_kb: DEFAULT_READ_AHEAD_KB,
        };
        for kv in words {
            // The parameter `PARAMS[i]` has a value it does not allow.
            let bad = |i: usize| {
                Some(Err(format!("vm-scalability: `{kv}`: allowed {} = {}", PARAMS[i].0, PARAMS[i].1)))
            };
            match kv.split_once('=') {
                Some(("mem_mib", v)) => match v.parse::<u64>() {
                    Ok(m) if (16..=4096).contains(&m) && m % 4 == 0 => w.mem_mib = m,
                    _ => return bad(0),
                },
                Some(("ram_mib", v)) => match v.parse::<u64>() {
                    Ok(m) if m <= 1 << 20 => w.ram_mib = Some(m),
                    _ => return bad(1),
                },
                Some(("memcg_mib", v)) => match v.parse::<u64>() {
                    Ok(m) if m >= 4 && m % 4 == 0 => w.memcg_mib = Some(m),
                    _ => return bad(2),
                },
                Some(("memcg_depth", v)) => match v.parse::<usize>() {
                    Ok(d) if (1..=8).contains(&d) => w.memcg_hierarchy.depth = d,
                    _ => return bad(3),
                },
                Some(("memcg_memsw", v)) => match v {
                    "0" | "1" => w.memcg_hierarchy.memsw = v == "1",
                    _ => return bad(4),
                },
                Some(("read_ahead_kb", v)) => match v.parse::<u64>() {
                    Ok(k) if k <= 65536 && k % 4 == 0 => w.read_ahead_kb = k,
                    _ => return bad(5),
                },
                _ => {
                    let all: Vec<String> = PARAMS.iter().map(|(k, doc)| format!("{k} ({doc})")).collect();
                    return Some(Err(format!(
                        "vm-scalability: unknown parameter `{kv}`; parameters: {}",
                        all.join(", ")
                    )));
                }
            }
        }
        if w.ram_mib.is_some_and(|r| r < w.mem_mib) {
            return Some(Err(format!(
                "vm-scalability: ram_mib is below mem_mib in `{text}`; {}",
                PARAMS[1].1
            )));
        }
        // The machine keeps at least as much free as the cgroup may charge: only the limit
        // reclaims.
        if w.memcg_mib.is_some_and(|m| m * 2 > w.mem_mib) {
            return Some(Err(format!(
                "vm-scalability: memcg_mib is above half of mem_mib in `{text}`; {}",
                PARAMS[2].1
            )));
        }
        Some(Ok(w))
    }

    fn params() -> &'static [(&'static str, &'static str)] {
        PARAMS
    }

    /// The machine's memory, in pages.
    fn memory_pages(&self) -> Option<u64> {
        Some(self.mem_mib << 8)
    }

    fn unscaled_memory_pages(&self) -> Option<u64> {
        self.ram_mib.map(|r| r << 8)
    }

    /// Each process maps all of its own file.
    fn mapped_pages(&self, tasks: u32) -> MappedPages {
        let pages = tasks as u64 * file_pages(self.files_sized_by() << 8, tasks);
        MappedPages { mapped: pages, file: pages }
    }

    fn names() -> Vec<String> {
        vec![format!("vm-scalability {CASE}")]
    }

    fn options() -> &'static str {
        "CASE: lru-file-mmap-read (one usemem per CPU over its own sparse file, files 10 x memory)"
    }

    fn name(&self) -> String {
        let mut n = format!("vm-scalability {}", self.case);
        if self.mem_mib != DEFAULT_MEM_MIB {
            n += &format!(" mem_mib={}", self.mem_mib);
        }
        if let Some(r) = self.ram_mib {
            n += &format!(" ram_mib={r}");
        }
        if let Some(m) = self.memcg_mib {
            n += &format!(" memcg_mib={m}");
        }
        if self.memcg_hierarchy.depth != DEFAULT_HIERARCHY.depth {
            n += &format!(" memcg_depth={}", self.memcg_hierarchy.depth);
        }
        if self.memcg_hierarchy.memsw {
            n += " memcg_memsw=1";
        }
        if self.read_ahead_kb != DEFAULT_READ_AHEAD_KB {
            n += &format!(" read_ahead_kb={}", self.read_ahead_kb);
        }
        n
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "elapsed", unit: "seconds", higher_is_better: false }
    }

    /// `nr_cpu` = the CPUs of /proc/cpuinfo.
    fn default_tasks(&self, cpus: u32) -> Option<u32> {
        Some(cpus)
    }

    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        let cpus = run.profile.topology.cpus();
        let pa = sim.kernel.page_alloc().expect("run::run checked the allocator");
        let nodes = pa.nr_nodes();
        let mem: u64 = pa.zones.iter().map(|z| z.managed).sum();
        sim.kernel.set_disk_read_ahead(self.read_ahead_kb / 4);
        let pages = match self.memcg_mib {
            Some(m) => {
                sim.kernel.set_memcg_limit(m << 8, self.memcg_hierarchy);
                file_pages(m << 8, run.tasks)
            }
            None => file_pages(mem, run.tasks),
        };
        let mhz = run.profile.clock_mhz();
        // The page's other words: at the measured read rate of a cache-resident page where the
        // profile has it (usemem's loads are independent: the sum is one add a word), else as
        // a chain of L1 hits.
        let rest = match &run.profile.memory.read_page_mbps {
            Some(r) => Ps::from_ns((WORDS - 1) as f64 * 8.0 * 1000.0 / r.value),
            None => Ps::from_cycles(run.profile.memory.l1d_hit_cycles.value, mhz) * (WORDS - 1),
        };
        for i in 0..run.tasks {
            let mm = sim.add_mm();
            sim.add_task(Box::new(Usemem { pages, page: 0, started: false, rest }), mm, i % cpus);
        }
        // kswapd after the processes (their task numbers are the benchmark's): it waits on its
        // CPU's runqueue, preempts there at once (a kernel thread just woken), finds the node
        // balanced and sleeps until an allocation wakes it.
        for node in 0..nodes {
            let cpu = ((node as u32 + 1) * cpus / nodes as u32) - 1;
            let t = sim.add_kthread(Box::new(KswapdLoop), cpu);
            sim.kernel.register_kswapd(node, t);
        }
    }

    /// The case's elapsed time: the files' pages (10 x memory) at the measured aggregate page
    /// rate (one iteration is one page).
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        measured.as_secs_f64() * (FILES_X_MEM * (self.files_sized_by() << 8)) as f64
            / iterations.max(1) as f64
    }
}

impl VmScalability {
    /// The MiB the files are ten times: the cgroup's limit, or else memory.
    fn files_sized_by(&self) -> u64 {
        self.memcg_mib.unwrap_or(self.mem_mib)
    }
}

/// Pages of each process's file: `10 * mem / nr_cpu`.
pub fn file_pages(mem_pages: u64, tasks: u32) -> u64 {
    FILES_X_MEM * mem_pages / tasks as u64
}

/// Each process's elapsed time: its file at its own measured page rate (`iterations` per
/// process in `measured`; one iteration is one page).
pub fn per_process_elapsed(iterations: &[u64], file_pages: u64, measured: Ps) -> Vec<f64> {
    iterations.iter().map(|&n| measured.as_secs_f64() * file_pages as f64 / n.max(1) as f64).collect()
}

/// One `usemem -f FILE --readonly SIZE` process.
struct Usemem {
    pages: u64,
    page: u64,
    started: bool,
    /// The page's other words.
    rest: Ps,
}

impl Program for Usemem {
    fn next(&mut self, out: &mut Vec<Op>) {
        if !self.started {
            self.started = true;
            out.push(Op::CreateFile { pages: self.pages, reg: FILE, cached: false, tmpfs: false });
            out.push(Op::Mmap {
                len: self.pages * PAGE,
                kind: MapKind::FileShared { file_reg: FILE },
                reg: MAP,
            });
        }
        out.push(Op::Access { addr: Addr { reg: MAP, offset: self.page * PAGE }, kind: AccessKind::Load });
        out.push(Op::Compute(self.rest));
        out.push(Op::Iteration);
        self.page += 1;
        if self.page == self.pages {
            self.page = 0;
        }
    }
}
