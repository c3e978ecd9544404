//! Workloads: each follows a real benchmark's loop and reports its metric.
//!
//! A simulated benchmark is a [`Benchmark`]: it parses its own workload text (the benchmark's
//! options and the model's `KEY=VALUE` parameters), names its metric and which way is better,
//! picks its task count, and sets itself up on a [`Simulation`] through the simulation's public
//! API (`add_mm`, `map_populated`, `add_task_at`). [`SUITES`] lists every one; [`Workload`] is a
//! parsed one, which `run::run` runs without knowing which benchmark it is.
//! `pointer_chase` is not one: it drives a bare TLB hierarchy for `tlblab reach`.

pub mod dd;
pub mod ebizzy;
pub mod fsmark;
pub mod hackbench;
pub mod madv_pageout;
pub mod move_pages;
pub mod netperf;
pub mod pointer_chase;
pub mod region_loop;
pub mod sockperf;
pub mod vm_scalability;
pub mod will_it_scale;

use std::sync::Arc;

use crate::engine::sim::Simulation;
use crate::profile::{MachineProfile, Section, WalkKind};
use crate::time::Ps;

/// What a benchmark reports: the metric's name and unit as the benchmark prints them, and which
/// way is better (throughputs: higher; elapsed times, e.g. hackbench's seconds: lower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricKind {
    pub name: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
}

/// What a benchmark's setup gets besides the simulation.
#[derive(Debug, Clone, Copy)]
pub struct Setup<'a> {
    pub profile: &'a MachineProfile,
    pub tasks: u32,
    pub seed: u64,
}

/// One simulated benchmark, parsed from its workload text.
pub trait Benchmark: std::fmt::Debug + Send + Sync {
    /// Parses `text` if it names this benchmark (`None` if it does not). A bad option or
    /// parameter is an error that names it and its allowed values.
    fn parse(text: &str) -> Option<Result<Self, String>>
    where
        Self: Sized;

    /// The benchmark's names, as `tlblab list` shows them.
    fn names() -> Vec<String>
    where
        Self: Sized;

    /// The model's `KEY=VALUE` parameters: (key, allowed values).
    fn params() -> &'static [(&'static str, &'static str)]
    where
        Self: Sized,
    {
        &[]
    }

    /// The benchmark's own options, for `tlblab list` (empty if it has none).
    fn options() -> &'static str
    where
        Self: Sized,
    {
        ""
    }

    /// The canonical workload text: parsing it gives this benchmark back.
    fn name(&self) -> String;

    fn metric(&self) -> MetricKind;

    /// The task count the benchmark picks when none is given (`None`: one must be given).
    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        None
    }

    /// The tasks a run of `tasks` creates (hackbench: 40 per group; others: `tasks` itself).
    fn tasks_created(&self, tasks: u32) -> u32 {
        tasks
    }

    /// The one task count the benchmark runs with, if it fixes one (netperf: a sender and a
    /// receiver); `run::run` refuses any other.
    fn fixed_tasks(&self) -> Option<u32> {
        None
    }

    /// The machine-profile sections the benchmark's kernel paths need beyond `[page_alloc]`
    /// (`slab`, `net`); `run::run` refuses a machine without them, naming the section.
    fn sections(&self) -> &'static [Section] {
        &[]
    }

    /// The measured time the benchmark's own options set, if any.
    fn default_measure(&self) -> Option<Ps> {
        None
    }

    /// How the machine must serve TLB misses for the kernel paths this benchmark runs (see
    /// `hw::walk`): the x86 paths (linux/mm/memory.rs, linux/arch/x86/text.rs) model a hardware walk.
    fn walk(&self) -> WalkKind {
        WalkKind::Hardware
    }

    /// Whether the benchmark runs on machines that walk in `kind` (default: its [`walk`](Self::walk);
    /// dd has a path for each).
    fn runs_on(&self, kind: WalkKind) -> bool {
        self.walk() == kind
    }

    /// The memory the benchmark wants the machine to have, in pages (split evenly over the
    /// nodes; `None`: linux/include/linux/gfp.rs `PAGES_PER_NODE` per node, or the kernel's `node_mib`).
    fn memory_pages(&self) -> Option<u64> {
        None
    }

    /// The unscaled machine's memory, in pages, when [`Benchmark::memory_pages`] is a scaled-down
    /// copy of it: the kernel's size rules (watermarks, per-CPU batch, reclaim's scan targets)
    /// are then those of this size (linux/config.rs `ram_pages`). `None`: not scaled.
    fn unscaled_memory_pages(&self) -> Option<u64> {
        None
    }

    /// Creates the benchmark's address spaces, untimed setup and tasks on `sim`.
    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>);

    /// The most page frames the benchmark holds at once with `tasks` tasks (its populated setup
    /// and each task's buffers), if it can hold many: `run::run` refuses a run whose footprint
    /// does not fit the model's memory, before setting anything up (reclaim frees only the clean
    /// file pages of a workload that reclaims, linux/mm/vmscan.rs).
    fn footprint_pages(&self, _tasks: u32) -> Option<u64> {
        None
    }

    /// The most pages the benchmark maps at once with `tasks` tasks (each holds a PTE in the
    /// model's page tables), and of them the file pages it creates (each a page-cache slot):
    /// what `host_memory` counts beyond the frames. Default: its footprint, anonymous.
    fn mapped_pages(&self, tasks: u32) -> MappedPages {
        MappedPages { mapped: self.footprint_pages(tasks).unwrap_or(0), file: 0 }
    }

    /// Refuses a run the benchmark cannot set up: a machine whose profile lacks what its kernel
    /// paths cost (the section named in the error), or a task count beyond what it allows.
    /// Default: every machine and every task count `run::run` allows will do.
    fn check_run(&self, _profile: &MachineProfile, _tasks: u32) -> Result<(), String> {
        Ok(())
    }

    /// The metric from the loop iterations counted in the measured interval and the run's task
    /// count (`run::run` calls this; default: [`Benchmark::score`]). hackbench needs the count:
    /// its Time is for all of its groups' messages.
    fn score_for(&self, iterations: u64, measured: Ps, _tasks: u32) -> f64 {
        self.score(iterations, measured)
    }

    /// The metric from the loop iterations counted in the measured interval (default: iterations
    /// per second; a benchmark timing a fixed amount of work overrides it).
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        iterations as f64 / measured.as_secs_f64()
    }
}

/// Pages a benchmark maps, and file pages it creates (see [`Benchmark::mapped_pages`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MappedPages {
    pub mapped: u64,
    pub file: u64,
}

/// A benchmark's option words as `(flag, value)` pairs, in order: a word in `lone` (a switch,
/// sockperf's `--tcp`) or one that does not start with `-` (netperf's `side=recv`) stands alone;
/// any other flag takes the next word as its value (`None` at the end of the text).
pub(crate) fn flag_pairs<'a>(words: &[&'a str], lone: &[&str]) -> Vec<(&'a str, Option<&'a str>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if lone.contains(&w) || !w.starts_with('-') {
            out.push((w, None));
            i += 1;
        } else {
            out.push((w, words.get(i + 1).copied()));
            i += 2;
        }
    }
    out
}

/// `tool`'s `flag` with a whole number in `1..=max`, or an error naming the flag, the value
/// given and the allowed range.
pub(crate) fn flag_count(tool: &str, flag: &str, value: Option<&str>, max: u64) -> Result<u64, String> {
    flag_in(tool, flag, value, 1..=max)
}

/// `tool`'s `flag` with a whole number in `range`, parsed as u64 (never truncated to a narrower
/// type before the check), or an error naming the flag, the value given and the allowed range.
pub(crate) fn flag_in(
    tool: &str,
    flag: &str,
    value: Option<&str>,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, String> {
    let allowed = format!("allowed {}..={}", range.start(), range.end());
    let Some(v) = value else {
        return Err(format!("{tool}: `{flag}` needs a value; {allowed}"));
    };
    match v.parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!("{tool}: `{flag} {}` is not allowed; {allowed}", v.escape_debug())),
    }
}

/// A benchmark type as a registry entry: its names, parameters and parser.
pub struct Suite {
    /// Heading for its options and parameters in `tlblab list`.
    pub name: &'static str,
    pub names: fn() -> Vec<String>,
    pub params: fn() -> &'static [(&'static str, &'static str)],
    pub options: fn() -> &'static str,
    pub parse: fn(&str) -> Option<Result<Workload, String>>,
}

impl Suite {
    pub const fn of<B: Benchmark + 'static>(name: &'static str) -> Suite {
        Suite { name, names: B::names, params: B::params, options: B::options, parse: parse_as::<B> }
    }
}

fn parse_as<B: Benchmark + 'static>(text: &str) -> Option<Result<Workload, String>> {
    B::parse(text).map(|r| r.map(Workload::from))
}

/// Every simulated benchmark.
pub const SUITES: &[Suite] = &[
    Suite::of::<will_it_scale::WillItScale>("will-it-scale"),
    Suite::of::<ebizzy::EbizzyParams>("ebizzy"),
    Suite::of::<dd::Dd>("dd"),
    Suite::of::<hackbench::Hackbench>("hackbench"),
    Suite::of::<netperf::Netperf>("netperf"),
    Suite::of::<sockperf::Sockperf>("sockperf"),
    Suite::of::<fsmark::Fsmark>("fsmark"),
    Suite::of::<vm_scalability::VmScalability>("vm-scalability"),
    Suite::of::<madv_pageout::MadvPageout>("madv-pageout"),
    Suite::of::<move_pages::MovePages>("move-pages"),
];

/// A parsed benchmark: a will-it-scale testcase (`tlb_flush1_threads`), or `ebizzy` followed by
/// ebizzy's own options and `KEY=VALUE` parameters (`ebizzy -m`, `ebizzy alloc=glibc-mmap`).
#[derive(Debug, Clone)]
pub struct Workload(Arc<dyn Benchmark>);

impl Workload {
    pub fn parse(text: &str) -> Result<Workload, String> {
        let text = text.trim();
        SUITES.iter().find_map(|s| (s.parse)(text)).unwrap_or_else(|| {
            Err(format!("unknown workload `{text}`; workloads: {}", Workload::names().join(", ")))
        })
    }

    /// Every benchmark name, as `tlblab list` shows them.
    pub fn names() -> Vec<String> {
        SUITES.iter().flat_map(|s| (s.names)()).collect()
    }
}

impl<B: Benchmark + 'static> From<B> for Workload {
    fn from(b: B) -> Workload {
        Workload(Arc::new(b))
    }
}

impl std::ops::Deref for Workload {
    type Target = dyn Benchmark;

    fn deref(&self) -> &(dyn Benchmark + 'static) {
        &*self.0
    }
}
