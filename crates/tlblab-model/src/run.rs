//! One simulation run, described and summarised (docs/design.md#results): what ran (machine, kernel and
//! its effective knobs, workload, tasks, seed, tlblab version), the benchmark's metric, event
//! counters, per-CPU time attribution and the oracle's verdict.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::attribution::Bucket;
use crate::engine::sim::Simulation;
use crate::engine::timeline::{Recording, TimelineSpec};
use crate::linux::config::{KernelConfig, Knobs};
use crate::linux::mm::page_alloc;
use crate::profile::{MachineProfile, Section, WalkKind};
use crate::time::Ps;

use crate::workload::Setup;
pub use crate::workload::Workload;

/// 2: knobs by subsystem (`config.knobs.flush.*`, ...), `coalesce_ipis` as on/lone/off.
pub const RESULT_SCHEMA_VERSION: u32 = 2;

/// The most tasks a run may have: 128 per CPU of the largest machine (`NR_CPUS`); each task
/// holds its own state, so a hostile count would otherwise exhaust memory before running.
pub const MAX_TASKS: u32 = 128 * crate::hw::cpumask::NR_CPUS as u32;

/// The longest warm-up or measured interval (simulated time is u64 picoseconds, about 213
/// days; 1000 s is far beyond any useful run and keeps every sum of times far from overflowing).
pub const MAX_INTERVAL: Ps = Ps(1000 * Ps::S.0);
/// The shortest warm-up or measured interval.
pub const MIN_INTERVAL: Ps = Ps::NS;

/// Everything one run needs besides the machine.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub kernel: KernelConfig,
    pub workload: Workload,
    pub tasks: u32,
    pub seed: u64,
    pub warmup: Ps,
    pub measure: Ps,
}

#[cfg(test)]
impl RunSpec {
    /// A test's run of a kernel preset and a workload string with seed 1 (`RunSpec { seed, ..}`
    /// for another).
    pub(crate) fn of(kernel: &str, workload: &str, tasks: u32, warmup: Ps, measure: Ps) -> RunSpec {
        RunSpec {
            kernel: KernelConfig::preset(kernel).unwrap(),
            workload: Workload::parse(workload).unwrap(),
            tasks,
            seed: 1,
            warmup,
            measure,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub machine: String,
    pub kernel: String,
    pub knobs: Knobs,
    pub workload: String,
    pub tasks: u32,
    pub seed: u64,
    pub warmup_ps: u64,
    pub measure_ps: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleReport {
    pub violations: u64,
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub tlblab_version: String,
    pub config: RunConfig,
    pub metric: Metric,
    /// Loop iterations per task in the measured interval.
    pub iterations: Vec<u64>,
    pub counters: BTreeMap<String, u64>,
    /// Per CPU that ran a task: picoseconds by bucket.
    pub attribution: Vec<BTreeMap<String, u64>>,
    pub oracle: OracleReport,
}

impl RunResult {
    /// Total iterations in the measured interval.
    pub fn operations(&self) -> u64 {
        self.iterations.iter().sum()
    }

    /// A counter divided by the operations.
    pub fn per_op(&self, counter: &str) -> f64 {
        let ops = self.operations().max(1) as f64;
        self.counters.get(counter).copied().unwrap_or(0) as f64 / ops
    }
}

/// Builds and runs one simulation: the workload sets up its address spaces and tasks (see
/// [`crate::workload::Benchmark::setup`]), the machine runs the warm-up and the measured interval.
pub fn run(profile: &MachineProfile, spec: &RunSpec) -> Result<RunResult, String> {
    run_recorded(profile, spec, None).map(|(r, _)| r)
}

/// As [`run`], recording the run's timeline (engine/timeline.rs) when `timeline` is given; the
/// result is the same as without it.
pub fn run_recorded(
    profile: &MachineProfile,
    spec: &RunSpec,
    timeline: Option<TimelineSpec>,
) -> Result<(RunResult, Option<Recording>), String> {
    let kernel = check(profile, spec)?;
    let cpus = profile.topology.cpus();
    let mut sim = Simulation::new(profile, kernel);
    sim.seed(spec.seed);
    spec.workload.setup(&mut sim, &Setup { profile, tasks: spec.tasks, seed: spec.seed });
    if let Some(t) = timeline {
        sim.record_timeline(t);
    }
    let stats = sim.run(spec.warmup, spec.measure);
    let recording = sim.take_timeline();
    let ops: u64 = stats.iterations.iter().sum();
    let value = spec.workload.score_for(ops, stats.measured, spec.tasks);
    let metric = spec.workload.metric();
    let counters: BTreeMap<String, u64> =
        stats.counters.fields().iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let attribution = stats.attribution[..spec.workload.tasks_created(spec.tasks).min(cpus) as usize]
        .iter()
        .map(|t| Bucket::ALL.iter().map(|b| (b.name().to_string(), t[*b as usize].0)).collect())
        .collect();
    let (violations, examples) = sim.oracle_report();
    let result = RunResult {
        schema_version: RESULT_SCHEMA_VERSION,
        tlblab_version: env!("CARGO_PKG_VERSION").to_string(),
        config: RunConfig {
            machine: profile.name.clone(),
            kernel: spec.kernel.name.clone(),
            knobs: sim.effective_knobs(),
            workload: spec.workload.name(),
            tasks: spec.tasks,
            seed: spec.seed,
            warmup_ps: spec.warmup.0,
            measure_ps: spec.measure.0,
        },
        metric: Metric {
            name: metric.name.into(),
            unit: metric.unit.into(),
            higher_is_better: metric.higher_is_better,
            value,
        },
        iterations: stats.iterations,
        counters,
        attribution,
        oracle: OracleReport { violations, examples },
    };
    Ok((result, recording))
}

/// Refuses what [`run`] refuses, allocating nothing: otherwise the kernel configuration sized for
/// the workload's memory (a caller may check the host's memory between the two).
pub fn check(profile: &MachineProfile, spec: &RunSpec) -> Result<KernelConfig, String> {
    let cpus = profile.topology.cpus();
    if !(1..=MAX_TASKS).contains(&spec.tasks) {
        return Err(format!("{} tasks: allowed 1 ..= {MAX_TASKS}", spec.tasks));
    }
    // The parsers refuse these (`tlblab::spec::parse_duration`); a zero measured interval would
    // score NaN. (No warm-up at all is the library's to ask for.)
    let max = MAX_INTERVAL.0 / Ps::S.0;
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&spec.measure) {
        return Err(format!("measured interval of {}: allowed 1ns ..= {max}s", spec.measure));
    }
    if spec.warmup > MAX_INTERVAL {
        return Err(format!("warm-up of {}: allowed 0 ..= {max}s", spec.warmup));
    }
    if spec.tasks > cpus && profile.kernel.context_switch_ns.is_none() {
        return Err(format!(
            "{} tasks on machine `{}` with {cpus} CPUs need key `kernel.context_switch_ns` in its \
             profile (tasks sharing a CPU are time-sliced); without it allowed 1 ..= {cpus}",
            spec.tasks, profile.name
        ));
    }
    let walk = |k: WalkKind| if k == WalkKind::Hardware { "hardware" } else { "software" };
    if !spec.workload.runs_on(profile.walk.kind) {
        return Err(format!(
            "workload `{}` runs on machines with walk.kind = \"{}\"; machine `{}` has \"{}\"",
            spec.workload.name(),
            walk(spec.workload.walk()),
            profile.name,
            walk(profile.walk.kind)
        ));
    }
    if (profile.walk.kind == WalkKind::Software) != spec.kernel.ppc8xx.is_some() {
        return Err(format!(
            "kernel `{}` {} [ppc8xx] section; machine `{}` walks in {}: {}",
            spec.kernel.name,
            if spec.kernel.ppc8xx.is_some() { "has a" } else { "has no" },
            profile.name,
            walk(profile.walk.kind),
            "MPC8xx kernels (presets 2.4-8xx, 2.6-8xx) run on walk.kind = \"software\" machines only, the others on \"hardware\" ones"
        ));
    }
    if (profile.cpu.vendor == "arm") != spec.kernel.arm64.is_some() {
        return Err(format!(
            "kernel `{}` {} [arm64] section; machine `{}` is {}: arm64 kernels (presets *-arm64) run on \
             cpu.vendor = \"arm\" machines only, the others on x86 or MPC8xx ones",
            spec.kernel.name,
            if spec.kernel.arm64.is_some() { "has an" } else { "has no" },
            profile.name,
            if profile.cpu.vendor == "arm" { "an Arm machine" } else { "not an Arm machine" },
        ));
    }
    // An x86 run allocates its pages through the page allocator: the profile must cost it.
    if profile.walk.kind == WalkKind::Hardware {
        profile.require(Section::PageAlloc).map_err(|e| e.to_string())?;
    }
    spec.workload.check_run(profile, spec.tasks)?;
    if let Some(n) = spec.workload.fixed_tasks() {
        if spec.tasks != n {
            return Err(format!(
                "workload `{}` runs {n} tasks (a sender and a receiver); allowed -t {n}",
                spec.workload.name()
            ));
        }
        if cpus < n {
            return Err(format!(
                "workload `{}` needs {n} CPUs; machine `{}` has {cpus}",
                spec.workload.name(),
                profile.name
            ));
        }
    }
    for &section in spec.workload.sections() {
        profile.require(section).map_err(|e| format!("workload `{}`: {e}", spec.workload.name()))?;
    }
    let mut kernel = spec.kernel.clone();
    if let Some(pages) = spec.workload.memory_pages() {
        let nodes = profile.topology.sockets;
        let in_workload = |e: String| format!("workload `{}`: {e}", spec.workload.name());
        let node_pages = page_alloc::node_pages(nodes, pages).map_err(in_workload)?;
        profile.require(Section::Reclaim).map_err(|e| e.to_string())?;
        let ram = spec.workload.unscaled_memory_pages().map(|r| r / nodes as u64);
        page_alloc::size_nodes(&mut kernel, nodes, node_pages, ram).map_err(in_workload)?;
    }
    if let Some(need) = spec.workload.footprint_pages(spec.tasks) {
        // What boot gives the nodes, less 1/16 for page tables, the zero page and watermarks.
        let nodes = profile.topology.sockets as u64;
        let pages = kernel.node_pages.unwrap_or(crate::linux::include::linux::gfp::PAGES_PER_NODE) * nodes;
        let room = pages - pages / 16;
        if need > room {
            // The most tasks that fit, by bisection (a footprint grows with the task count).
            let fits = |t: u32| spec.workload.footprint_pages(t).is_some_and(|p| p <= room);
            let (mut lo, mut hi) = (0, spec.tasks);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let fix = match lo {
                0 => "give a smaller workload or more memory (`node_mib`)".to_string(),
                n => format!("allowed -t 1..={n}"),
            };
            return Err(format!(
                "workload `{}` with {} tasks holds {} MiB, more than machine `{}`'s modelled memory \
                 holds ({} MiB less 1/16; without swap, nothing it holds is reclaimed): {fix}",
                spec.workload.name(),
                spec.tasks,
                need >> 8,
                profile.name,
                pages >> 8
            ));
        }
    }
    Ok(kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> MachineProfile {
        crate::profile::shipped(name)
    }

    /// The flush mechanism alone, as the seed-000 experiment runs it (mmap_lock off: see its note).
    fn ebizzy(kernel: &str, workload: &str, tasks: u32, seed: u64) -> RunResult {
        let mut k = KernelConfig::preset(kernel).unwrap();
        k.set("mmap_lock", "off").unwrap();
        let spec = RunSpec {
            kernel: k,
            workload: Workload::parse(workload).unwrap(),
            tasks,
            seed,
            warmup: Ps::US * 500,
            // Long enough for ~40 records per task: counters per record are then within
            // the tolerances below despite the window's edges.
            measure: Ps::MS * 5,
        };
        run(&profile("ivybridge-4c8t"), &spec).unwrap()
    }

    #[test]
    fn seed_000_mechanism_invlpgs_everywhere_against_one_full_flush_and_refills() {
        // 129-page munmaps, 2 threads: 3.13 (shift 1) INVLPGs them on both CPUs; altershift
        // (shift 2) flushes everything once per CPU, and the source chunk is then refilled.
        let vanilla = ebizzy("3.13", "ebizzy alloc=glibc-mmap", 2, 1);
        let alter = ebizzy("3.13-altershift", "ebizzy alloc=glibc-mmap", 2, 1);
        assert_eq!(vanilla.metric.unit, "records/s");
        // 258 INVLPGs per record: per munmap (one per record), and one munmap per record up to
        // the records the window's edges cut (the ratio per record alone moves by one edge
        // record's phase: 12642 / 48 with the allocator's timing).
        let per_munmap = vanilla.counters["invlpg"] as f64 / vanilla.counters["flush_requests"] as f64;
        assert!((per_munmap - 258.0).abs() < 3.0, "{:?}", vanilla.counters);
        assert!(
            vanilla.counters["flush_requests"].abs_diff(vanilla.operations()) <= 2,
            "{:?}",
            vanilla.counters
        );
        assert_eq!(vanilla.per_op("full_flushes"), 0.0);
        assert!(vanilla.per_op("tlb_misses_after_flush") < 1.0);
        assert_eq!(alter.per_op("invlpg"), 0.0);
        assert!((alter.per_op("full_flushes") - 2.0).abs() < 0.1, "{:?}", alter.counters);
        assert!(alter.per_op("tlb_misses_after_flush") > 100.0, "{:?}", alter.counters);
        assert!((alter.per_op("ipis_sent") - 1.0).abs() < 0.1);
        assert!(alter.metric.value > vanilla.metric.value);
        assert_eq!(vanilla.oracle.violations + alter.oracle.violations, 0);
        // glibc 2.18's 96-page trims sit under both ceilings: shift 1 and 2 decide alike.
        let v = ebizzy("3.13", "ebizzy", 2, 1);
        let a = ebizzy("3.13-altershift", "ebizzy", 2, 1);
        assert_eq!((v.per_op("full_flushes"), a.per_op("full_flushes")), (0.0, 0.0));
        // Per munmap (each one flush request), counted apart from the records straddling the
        // window's edges: 96 pages on each of the two CPUs.
        let per_flush = |r: &RunResult, c: &str| r.counters[c] as f64 / r.counters["flush_requests"] as f64;
        assert_eq!(per_flush(&v, "invlpg"), 192.0, "{:?}", v.counters);
    }

    #[test]
    fn ebizzy_runs_repeat_and_seeds_differ() {
        assert_eq!(ebizzy("3.17", "ebizzy", 3, 7), ebizzy("3.17", "ebizzy", 3, 7));
        // Threads start at a seeded phase, so the counted records vary with the seed.
        let a: Vec<u64> = (1..21).map(|s| ebizzy("3.17", "ebizzy", 1, s).operations()).collect();
        assert!(a.iter().any(|&x| x != a[0]), "{a:?}");
    }

    /// A cell of two or more tasks has a spread over its seeds (noise from named seeded
    /// streams: tick phase, per-step jitter), so its Stddev is never zero. The experiments' own
    /// check, 10 seeds of every cell of seed 000 and both seed 002 tables, is in the notes.
    #[test]
    fn will_it_scale_cells_of_two_or_more_tasks_vary_with_the_seed() {
        let p = crate::profile::shipped("haswell-ep-2s");
        for tasks in [2, 10] {
            let ops: Vec<u64> = (1..=10)
                .map(|seed| {
                    let mut spec = RunSpec::of("5.18.1", "tlb_flush1_threads", tasks, Ps::US * 200, Ps::MS);
                    spec.seed = seed;
                    run(&p, &spec).unwrap().operations()
                })
                .collect();
            assert!(ops.iter().any(|&x| x != ops[0]), "{tasks} tasks: {ops:?}");
        }
    }

    /// A benchmark timing a fixed amount of work, as hackbench does: seconds, lower is better.
    #[derive(Debug)]
    struct Timed;

    impl crate::workload::Benchmark for Timed {
        fn parse(_: &str) -> Option<Result<Timed, String>> {
            None
        }
        fn names() -> Vec<String> {
            Vec::new()
        }
        fn name(&self) -> String {
            "timed".into()
        }
        fn metric(&self) -> crate::workload::MetricKind {
            crate::workload::MetricKind { name: "time", unit: "seconds", higher_is_better: false }
        }
        fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
            use crate::workload::will_it_scale::{Mode, Testcase, WillItScale};
            WillItScale { test: Testcase::TlbFlush2, mode: Mode::Threads }.setup(sim, run)
        }
        fn score(&self, iterations: u64, measured: Ps) -> f64 {
            measured.as_secs_f64() / iterations.max(1) as f64
        }
    }

    #[test]
    fn the_metric_its_direction_and_its_value_come_from_the_benchmark() {
        let spec = |workload| RunSpec {
            kernel: KernelConfig::preset("3.17").unwrap(),
            workload,
            tasks: 2,
            seed: 1,
            warmup: Ps::US * 100,
            measure: Ps::US * 500,
        };
        let timed = run(&profile("haswell-ep-2s"), &spec(Workload::from(Timed))).unwrap();
        let m = &timed.metric;
        assert_eq!((m.name.as_str(), m.unit.as_str(), m.higher_is_better), ("time", "seconds", false));
        assert!(timed.operations() > 0);
        let ops =
            run(&profile("haswell-ep-2s"), &spec(Workload::parse("tlb_flush2_threads").unwrap())).unwrap();
        assert_eq!((ops.metric.unit.as_str(), ops.metric.higher_is_better), ("ops/s", true));
        assert_eq!(ops.iterations, timed.iterations, "the same loop");
        // Seconds per operation against operations per second.
        assert!((m.value * ops.metric.value - 1.0).abs() < 1e-12, "{} {}", m.value, ops.metric.value);
    }

    #[test]
    fn every_page_a_run_takes_and_frees_goes_through_the_page_allocator() {
        let spec = |kernel: &str| RunSpec::of(kernel, "tlb_flush2_threads", 2, Ps::US * 100, Ps::US * 500);
        for kernel in ["4.9", "5.18.1"] {
            let r = run(&profile("haswell-ep-2s"), &spec(kernel)).unwrap();
            let c = &r.counters;
            // One new page per anonymous write fault, one free per page the gather releases.
            let allocs = c["pcp_hits_order0"] + c["pcp_misses_order0"] + c["buddy_allocs"];
            assert_eq!(allocs, c["pages_zeroed"] + c["pages_copied"], "{kernel}: {c:?}");
            assert_eq!(c["pcp_frees"] + c["buddy_frees"], c["pages_freed"], "{kernel}: {c:?}");
            assert!(allocs > 100 && r.oracle.violations == 0, "{kernel}: {c:?}");
        }
        // A machine without allocator costs is refused, naming the section.
        let mut p = profile("haswell-ep-2s");
        p.page_alloc = None;
        let e = run(&p, &spec("5.18.1")).unwrap_err();
        assert!(e.contains("page_alloc") && e.contains("haswell-ep-2s"), "{e}");
    }

    #[test]
    fn pages_fresh_from_the_buddy_lists_clear_at_the_dram_rate() {
        let spec = |w| RunSpec::of("5.18.1", w, 1, Ps::US * 100, Ps::US * 500);
        let mut p = profile("haswell-ep-2s");
        assert!(p.memory.clear_dram_mbps.is_none());
        let warm_only = run(&p, &spec("page_fault1_threads")).unwrap();
        assert_eq!(warm_only.counters.get("pages_zeroed_cold").copied().unwrap_or(0), 0);
        p.memory.clear_dram_mbps = Some(crate::profile::Sourced {
            value: 4000.0,
            source: "test".into(),
            confidence: crate::profile::Confidence::Estimate,
        });
        // page_fault1 writes 128 MiB once per pass: every page comes from the buddy lists.
        let cold = run(&p, &spec("page_fault1_threads")).unwrap();
        let c = &cold.counters;
        assert!(c["pages_zeroed"] > 100 && c["pages_zeroed_cold"] == c["pages_zeroed"], "{c:?}");
        assert!(
            cold.metric.value < 0.9 * warm_only.metric.value,
            "{} {}",
            cold.metric.value,
            warm_only.metric.value
        );
        // tlb_flush2 faults back the pages its madvise just freed onto the per-CPU list.
        let t2 = run(&p, &spec("tlb_flush2_threads")).unwrap();
        let c = &t2.counters;
        assert!(c["pages_zeroed"] > 100 && c["pages_zeroed_cold"] * 10 < c["pages_zeroed"], "{c:?}");
    }

    #[test]
    fn the_hosts_second_level_fault_lands_on_pages_from_the_buddy_lists_only() {
        let spec = |w| RunSpec::of("5.18.1", w, 1, Ps::US * 100, Ps::US * 500);
        let sourced = |value| crate::profile::Sourced {
            value,
            source: "test".into(),
            confidence: crate::profile::Confidence::Estimate,
        };
        let mut p = profile("haswell-ep-2s");
        p.noise = None;
        // With a DRAM rate the cold pages are counted (pages_zeroed_cold).
        p.memory.clear_dram_mbps = Some(sourced(4000.0));
        assert!(p.memory.second_level_fault_ns.is_none());
        let base = |w| run(&p, &spec(w)).unwrap();
        let (pf, t2) = (base("page_fault1_threads"), base("tlb_flush2_threads"));
        // A key of 0 (a probe that found no second-level faults) changes nothing.
        let mut zero = p.clone();
        zero.memory.second_level_fault_ns = Some(sourced(0.0));
        let z = run(&zero, &spec("page_fault1_threads")).unwrap();
        assert_eq!(
            (&z.metric, &z.iterations, &z.counters, &z.attribution),
            (&pf.metric, &pf.iterations, &pf.counters, &pf.attribution)
        );
        let mut guest = p.clone();
        guest.memory.second_level_fault_ns = Some(sourced(2000.0));
        let fault_ps = |r: &RunResult| {
            r.attribution.iter().map(|m| m["fault"]).sum::<u64>() as f64 / r.operations() as f64
        };
        // page_fault1: every page comes from the buddy lists, and each pays 2 us more as fault time.
        let g = run(&guest, &spec("page_fault1_threads")).unwrap();
        let cold = g.per_op("pages_zeroed_cold");
        assert!(cold > 0.99 && (g.per_op("pages_zeroed") - cold).abs() < 0.01, "{:?}", g.counters);
        let extra = (fault_ps(&g) - fault_ps(&pf)) / cold;
        assert!((extra / 2e6 - 1.0).abs() < 0.02, "{extra} ps a cold page");
        assert!(g.metric.value < 0.8 * pf.metric.value, "{} {}", g.metric.value, pf.metric.value);
        // tlb_flush2 faults back the pages its madvise freed onto the per-CPU list: those pay
        // nothing, so only its few buddy pages add (2 us each).
        let g2 = run(&guest, &spec("tlb_flush2_threads")).unwrap();
        let cold2 = g2.per_op("pages_zeroed_cold");
        assert!(cold2 * 10.0 < g2.per_op("pages_zeroed"), "{:?}", g2.counters);
        let extra2 = fault_ps(&g2) - fault_ps(&t2);
        assert!(extra2 <= cold2 * 2e6 * 1.05 + 1.0, "{extra2} ps an op, {cold2} cold pages an op");
        assert!(g2.metric.value > 0.9 * t2.metric.value, "{} {}", g2.metric.value, t2.metric.value);
    }

    #[test]
    fn slub_counters_are_reported_where_the_machine_boots_slub() {
        let spec = RunSpec::of("4.9", "tlb_flush2_threads", 2, Ps::US * 100, Ps::US * 300);
        let with = run(&profile("haswell-ep-2698v3-2s"), &spec).unwrap();
        let without = run(&profile("haswell-ep-2s"), &spec).unwrap();
        for name in ["slab_alloc_fastpath", "slabs_allocated", "slab_pages_freed", "kmalloc_large_allocs"] {
            // Page faults allocate no kernel objects here: present and zero.
            assert_eq!(with.counters.get(name), Some(&0), "{name}");
            assert!(!without.counters.contains_key(name), "{name}");
        }
    }

    #[test]
    fn workload_names_round_trip() {
        for n in Workload::names().into_iter().filter(|n| !n.starts_with("ebizzy")) {
            assert_eq!(Workload::parse(&n).unwrap().name(), n);
        }
        for n in [
            "ebizzy",
            "ebizzy -m",
            "ebizzy -n 4 alloc=glibc-mmap rand=seeded",
            "vm-scalability lru-file-mmap-read mem_mib=256 ram_mib=8192",
            "vm-scalability lru-file-mmap-read mem_mib=256 memcg_mib=64",
            "vm-scalability lru-file-mmap-read mem_mib=256 memcg_mib=64 memcg_depth=4 memcg_memsw=1",
        ] {
            assert_eq!(Workload::parse(n).unwrap().name(), n);
        }
        let e = Workload::parse("vm-scalability lru-file-mmap-read mem_mib=64 memcg_mib=48").unwrap_err();
        assert!(e.contains("memcg_mib is above half of mem_mib") && e.contains("4..=mem_mib/2"), "{e}");
        let e = Workload::parse("vm-scalability lru-file-mmap-read memcg_mib=6").unwrap_err();
        assert!(
            e.contains("`memcg_mib=6`: allowed memcg_mib =") && e.contains("4..=mem_mib/2, a multiple of 4"),
            "{e}"
        );
        for (bad, key) in [("memcg_depth=9", "memcg_depth"), ("memcg_memsw=2", "memcg_memsw")] {
            let e = Workload::parse(&format!("vm-scalability lru-file-mmap-read {bad}")).unwrap_err();
            assert!(e.contains(&format!("`{bad}`: allowed {key} =")), "{e}");
        }
        assert!(Workload::parse("ebizzyx").is_err());
        assert!(Workload::parse("tlb_flush9_threads").unwrap_err().contains("tlb_flush1_threads"));
        let e = Workload::parse("tlb_flush1_threads alloc=mmap").unwrap_err();
        assert!(e.contains("`tlb_flush1_threads` takes no parameters"), "{e}");
        let e = Workload::parse("vm-scalability lru-file-mmap-read mem_mib=256 ram_mib=128").unwrap_err();
        assert!(e.contains("ram_mib is below mem_mib"), "{e}");
        // A named 8 GiB machine has DMA32 and Normal: a kernel without zone rules refuses it.
        let profile = crate::profile::shipped("ivybridge-4c8t");
        let w = "vm-scalability lru-file-mmap-read mem_mib=256 ram_mib=8192";
        let e = run(&profile, &RunSpec::of("4.9", w, 8, Ps::MS, Ps::MS)).unwrap_err();
        assert!(e.contains("key `page_alloc.zones` is not set; allowed: v4.2"), "{e}");
        let e = Workload::parse("ebizzy rand=lcg2").unwrap_err();
        assert!(e.contains("`rand`") && e.contains("lcg") && e.contains("seeded"), "{e}");
    }
}
