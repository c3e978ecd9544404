//! One simulation run, described and summarised (DESIGN.md §10): what ran (machine, kernel and
//! its effective knobs, workload, tasks, seed, tlblab version), the benchmark's metric, event
//! counters, per-CPU time attribution and the oracle's verdict.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::attribution::Bucket;
use crate::engine::sim::Simulation;
use crate::kernel::config::{KernelConfig, Knobs};
use crate::profile::MachineProfile;
use crate::rng::Rng;
use crate::time::Ps;
use std::sync::{Arc, Mutex};

use crate::workload::ebizzy::{EbizzyCosts, EbizzyParams, EbizzyTask, Glibc};
use crate::workload::will_it_scale::{Mode, Testcase, WisTask};

pub const RESULT_SCHEMA_VERSION: u32 = 1;

/// A workload by its benchmark name: a will-it-scale testcase (`tlb_flush1_threads`), or
/// `ebizzy` followed by ebizzy's own options and `KEY=VALUE` parameters (`ebizzy -m`,
/// `ebizzy alloc=glibc-mmap`; see [`ebizzy::PARAMS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    WillItScale { test: Testcase, mode: Mode },
    Ebizzy(EbizzyParams),
}

impl Workload {
    pub fn parse(name: &str) -> Result<Workload, String> {
        let name = name.trim();
        if let Some(rest) = name.strip_prefix("ebizzy") {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                return EbizzyParams::parse(rest).map(Workload::Ebizzy);
            }
        }
        for (n, test) in Testcase::ALL {
            for (suffix, mode) in [("_threads", Mode::Threads), ("_processes", Mode::Processes)] {
                if name == format!("{n}{suffix}") {
                    return Ok(Workload::WillItScale { test, mode });
                }
            }
        }
        Err(format!("unknown workload `{name}`; workloads: {}", Workload::names().join(", ")))
    }

    pub fn names() -> Vec<String> {
        let mut v: Vec<String> = Testcase::ALL
            .iter()
            .flat_map(|(n, _)| [format!("{n}_threads"), format!("{n}_processes")])
            .collect();
        v.push("ebizzy [-m -M -n N -s BYTES -T -R -l -z] [alloc=.. rand=..]".into());
        v
    }

    pub fn name(&self) -> String {
        match self {
            Workload::WillItScale { test, mode } => {
                let m = match mode {
                    Mode::Threads => "threads",
                    Mode::Processes => "processes",
                };
                format!("{}_{m}", test.name())
            }
            Workload::Ebizzy(p) => p.describe(),
        }
    }

    /// The benchmark's metric: (name, unit).
    pub fn metric(&self) -> (&'static str, &'static str) {
        match self {
            Workload::WillItScale { .. } => ("ops", "ops/s"),
            Workload::Ebizzy(_) => ("records", "records/s"),
        }
    }

    /// The task count the benchmark picks when none is given: ebizzy `-t`, else its default of
    /// twice the online CPUs; will-it-scale has none (`-t` is required).
    pub fn default_tasks(&self, cpus: u32) -> Option<u32> {
        match self {
            Workload::WillItScale { .. } => None,
            Workload::Ebizzy(p) => Some(p.threads.unwrap_or(2 * cpus)),
        }
    }

    /// The measured time the benchmark's own options set (ebizzy `-S`), if any.
    pub fn default_measure(&self) -> Option<Ps> {
        match self {
            Workload::Ebizzy(EbizzyParams { seconds: Some(s), .. }) => Some(Ps::S * *s as u64),
            _ => None,
        }
    }
}

/// The window ebizzy threads start in (see `run`).
const EBIZZY_START_SPREAD: Ps = Ps(250 * Ps::US.0);

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

/// Builds and runs one simulation. will-it-scale binds task i to CPU i: with the model's CPU
/// numbering that is one task per core first, then per hardware thread, as the harness does;
/// beyond the CPU count tasks share CPUs and are time-sliced. ebizzy does not pin its threads;
/// the model places them the same way.
pub fn run(profile: &MachineProfile, spec: &RunSpec) -> Result<RunResult, String> {
    let cpus = profile.topology.cpus();
    if spec.tasks == 0 {
        return Err("0 tasks: give at least one".into());
    }
    if spec.tasks > cpus && profile.kernel.context_switch_ns.is_none() {
        return Err(format!(
            "{} tasks on machine `{}` with {cpus} CPUs need key `kernel.context_switch_ns` in its \
             profile (tasks sharing a CPU are time-sliced); without it allowed 1 ..= {cpus}",
            spec.tasks, profile.name
        ));
    }
    let mut sim = Simulation::new(profile, spec.kernel.clone());
    // Tasks start within a microsecond of each other, as threads released by the harness do;
    // this is the only thing the seed changes.
    let mut jitter = Rng::stream(spec.seed, "task start");
    let shared = sim.add_mm();
    match spec.workload {
        Workload::WillItScale { test, mode } => {
            for i in 0..spec.tasks {
                let mm = match mode {
                    Mode::Threads => shared,
                    Mode::Processes if i == 0 => shared,
                    Mode::Processes => sim.add_mm(),
                };
                let start = Ps(jitter.below(Ps::US.0));
                // More tasks than CPUs: the harness's affinity wraps around the CPU list.
                sim.add_task_at(Box::new(WisTask::new(test)), mm, i % cpus, start);
            }
        }
        Workload::Ebizzy(p) => {
            // The main thread's untimed setup: allocate and fill the chunks (adjacent mappings
            // of one kind, which the kernel merges into one VMA), then release the threads.
            let (stride, header) = p.chunk_layout();
            let region = sim.map_populated(shared, (stride * p.chunks as u64).div_ceil(4096) * 4096);
            let costs = EbizzyCosts::new(profile.memory.memcpy_mbps.value, profile.clock_mhz());
            let libc = Arc::new(Mutex::new(Glibc::default()));
            for i in 0..spec.tasks {
                let task = EbizzyTask::new(p, costs, region + header, libc.clone(), spec.seed, i);
                // Each thread starts at a random phase within one record's time (~200 us on
                // the seed's machine), so a short measured interval cuts the loops at random
                // points, as the real 10 s runs (timed with 1 s resolution) do; otherwise every
                // seed would count the same whole records.
                let start = Ps(jitter.below(EBIZZY_START_SPREAD.0));
                sim.add_task_at(Box::new(task), shared, i % cpus, start);
            }
        }
    }
    let stats = sim.run(spec.warmup, spec.measure);
    let ops: u64 = stats.iterations.iter().sum();
    let value = ops as f64 / stats.measured.as_secs_f64();
    let counters = stats.counters.fields().iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let attribution = stats.attribution[..spec.tasks.min(cpus) as usize]
        .iter()
        .map(|t| Bucket::ALL.iter().map(|b| (b.name().to_string(), t[*b as usize].0)).collect())
        .collect();
    let (violations, examples) = sim.oracle_report();
    Ok(RunResult {
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
            name: spec.workload.metric().0.into(),
            unit: spec.workload.metric().1.into(),
            higher_is_better: true,
            value,
        },
        iterations: stats.iterations,
        counters,
        attribution,
        oracle: OracleReport { violations, examples },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> MachineProfile {
        let path = format!("{}/../../profiles/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let p: MachineProfile = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        p.validate().unwrap();
        p
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
        assert!((vanilla.per_op("invlpg") - 258.0).abs() < 3.0, "{:?}", vanilla.counters);
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

    #[test]
    fn workload_names_round_trip() {
        for n in Workload::names().into_iter().filter(|n| !n.starts_with("ebizzy")) {
            assert_eq!(Workload::parse(&n).unwrap().name(), n);
        }
        for n in ["ebizzy", "ebizzy -m", "ebizzy -n 4 alloc=glibc-mmap rand=seeded"] {
            assert_eq!(Workload::parse(n).unwrap().name(), n);
        }
        assert!(Workload::parse("ebizzyx").is_err());
        assert!(Workload::parse("tlb_flush9_threads").unwrap_err().contains("tlb_flush1_threads"));
    }
}
