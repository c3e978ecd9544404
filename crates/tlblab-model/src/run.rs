//! One simulation run, described and summarised (DESIGN.md §10): what ran (machine, kernel and
//! its effective knobs, workload, tasks, seed, tlblab version), the benchmark's metric, event
//! counters, per-CPU time attribution and the oracle's verdict.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::engine::sim::{Bucket, Simulation};
use crate::engine::time::Ps;
use crate::kernel::preset::KernelConfig;
use crate::kernel::tlbflush::FlushKnobs;
use crate::profile::MachineProfile;
use crate::rng::Rng;
use crate::workload::will_it_scale::{Mode, Testcase, WisTask};

pub const RESULT_SCHEMA_VERSION: u32 = 1;

/// A workload by its benchmark name, e.g. `tlb_flush1_threads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    pub test: Testcase,
    pub mode: Mode,
}

impl Workload {
    pub fn parse(name: &str) -> Result<Workload, String> {
        for (n, test) in Testcase::ALL {
            for (suffix, mode) in [("_threads", Mode::Threads), ("_processes", Mode::Processes)] {
                if name == format!("{n}{suffix}") {
                    return Ok(Workload { test, mode });
                }
            }
        }
        Err(format!("unknown workload `{name}`; workloads: {}", Workload::names().join(", ")))
    }

    pub fn names() -> Vec<String> {
        Testcase::ALL.iter().flat_map(|(n, _)| [format!("{n}_threads"), format!("{n}_processes")]).collect()
    }

    pub fn name(&self) -> String {
        let m = match self.mode {
            Mode::Threads => "threads",
            Mode::Processes => "processes",
        };
        format!("{}_{m}", self.test.name())
    }
}

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
    pub knobs: FlushKnobs,
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
/// beyond the CPU count tasks share CPUs and are time-sliced.
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
    for i in 0..spec.tasks {
        let mm = match spec.workload.mode {
            Mode::Threads => shared,
            Mode::Processes if i == 0 => shared,
            Mode::Processes => sim.add_mm(),
        };
        let start = Ps(jitter.below(Ps::US.0));
        // More tasks than CPUs: the harness's affinity wraps around the CPU list.
        sim.add_task_at(Box::new(WisTask::new(spec.workload.test)), mm, i % cpus, start);
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
        metric: Metric { name: "ops".into(), unit: "ops/s".into(), higher_is_better: true, value },
        iterations: stats.iterations,
        counters,
        attribution,
        oracle: OracleReport { violations, examples },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_round_trip() {
        for n in Workload::names() {
            assert_eq!(Workload::parse(&n).unwrap().name(), n);
        }
        assert!(Workload::parse("tlb_flush9_threads").unwrap_err().contains("tlb_flush1_threads"));
    }
}
