//! `tlblab validate`: every seed workload with a real counterpart on a Linux host, at 1 and 2
//! tasks (or the seed's message sizes), run for real several times beside the same workload
//! simulated on the host profile over as many seeds: each side as min / median / max, the
//! relative error of the medians, a verdict, and the IPIs per operation on both sides.
//!
//! Real side: tlblab-native's own loops (will-it-scale tlb_flush1/2/3 and page_fault1, ebizzy
//! -m, netperf UDP_STREAM and TCP_STREAM on loopback with mmtests' `-s/-S size+256`) and the
//! distributions' benchmarks (rt-tests hackbench, sockperf, fs_mark, coreutils dd), which the
//! test script installs; one not installed is skipped with its reason. Nothing here is fitted: the
//! profile holds the probe's primitive costs (its `[ipc]` and `[net]` from micro-measurements of
//! single calls with nobody waiting, its `[fs]` from file-creation calls on tmpfs and a
//! re-creation of fs_mark's user code, never the benchmarks), and sections the probe does not
//! measure are a stand-in machine's, labelled as borrowed. When the probe runs now, the host is
//! also simulated at the slow and the fast quartile of the probe's measurements
//! (tlblab_native::host_profile::spread), so the simulated range is the probe's spread too; and
//! where the probe's report is at hand, on the host as its cheap primitives (a system call, the
//! socket and file calls, the flush call, the memory rates) measured again just before and just
//! after each cell's real runs (validate/phase.rs).
//! Each real run records the CPU time the workload itself got; a CPU-bound workload is judged
//! on its real figure at the simulated run's busy CPUs (validate/per_cpu.rs), since CPU time
//! other tenants take is lost to the real side alone.

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use tlblab_model::linux::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run as run_sim, RunResult, RunSpec};
use tlblab_model::time::Ps;
use tlblab_model::workload::Workload;
use tlblab_native::host_profile::spread::{self, End};
use tlblab_native::probe::ProbeReport;
use tlblab_native::stats::Summary;
use tlblab_native::workload::external::{Effort, External};
use tlblab_native::workload::netperf::{self, NetperfSpec};
use tlblab_native::workload::vm_scalability::{self as lru, LruSpec};
use tlblab_native::workload::{self, NativeSpec, NativeWorkload};

use crate::cmd::native::secs;
use crate::machines;
use crate::spec::{kernel_config, parse_duration};

mod case;
mod per_cpu;
mod phase;
mod render;

use case::case;

pub use render::render;

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// A host profile written by `tlblab probe --write-profile` (default: probe now). The spread
    /// files the probe wrote beside it (FILE-slow/-fast.toml, or FILE-runN.toml of --repeat)
    /// widen the simulated range as a probe made now does.
    #[arg(long)]
    pub machine: Option<String>,
    /// Kernel preset the simulation runs (default: the preset nearest this host's `uname -r`).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Measured seconds per native run.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Warm-up seconds per native run.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Simulated measured time per run.
    #[arg(long, default_value = "5ms", value_parser = parse_duration)]
    pub duration: Ps,
    /// Runs per cell on each side (real runs; simulated seeds 1..=N, and when the probe runs now,
    /// seed 1 again on the host at the slow and the fast end of the probe's spread). Default 3,
    /// quick 2.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub runs: Option<u32>,
    /// Quick probe (when no --machine), short runs, two of each.
    #[arg(long)]
    pub quick: bool,
    /// Directory for tlb_flush1/3's file and fs_mark's tree. Default: /dev/shm when it exists,
    /// because the model has no disk: its file pages behave like tmpfs (no page_mkwrite, no
    /// writeback), and a disk filesystem's costs would show up as a model error.
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Only these workloads (repeatable); default: all.
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

/// One side of a cell over its runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Spread {
    fn of(v: &[f64]) -> Spread {
        Spread::with_ends(v, &[])
    }

    /// The median of `v`, the range of `v` and `ends` together.
    fn with_ends(v: &[f64], ends: &[f64]) -> Spread {
        let s = Summary::of(v);
        let (min, max) = ends.iter().fold((s.min, s.max), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        Spread { median: s.median, min, max, runs: v.len() + ends.len() }
    }
}

/// A per-operation rate on both sides (`None` where a side has none).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Pair {
    pub real: Option<f64>,
    pub sim: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub workload: String,
    /// The cell's point: tasks (threads, groups) or, for sockperf, the message size.
    pub tasks: u64,
    /// What `tasks` counts.
    pub point: String,
    pub metric: String,
    pub unit: String,
    pub real: Spread,
    /// The real runs at the simulated run's busy CPUs: throughput per CPU-second the workload
    /// itself got, in the metric's unit (validate/per_cpu.rs); `None` where a run lacks its CPU
    /// time.
    pub real_per_cpu: Option<Spread>,
    /// Each real run's raw figure, wall and CPU time, busy CPUs and normalised figure.
    pub real_runs: Vec<per_cpu::RealRun>,
    /// The simulated runs' busy CPUs (median over the central profile's seeds).
    pub sim_busy_cpus: Option<f64>,
    /// Whether the workload's tasks want a CPU all the time (per_cpu::cpu_bound): then the
    /// verdict is on `real_per_cpu`.
    pub cpu_bound: bool,
    pub sim: Spread,
    /// (sim - real) / real of the medians.
    pub error: f64,
    /// (sim - real_per_cpu) / real_per_cpu of the medians.
    pub error_per_cpu: Option<f64>,
    /// `consistent` (within 25% or the two ranges overlap), `model high` or `model low` (the
    /// simulated metric above or below the real one, whichever way the metric is better); on
    /// `real_per_cpu` for a CPU-bound workload, else on `real`.
    pub verdict: String,
    /// The verdict on the raw `real` figure.
    pub verdict_raw: String,
    /// Flush (TLB) interrupts per operation; the real side net of the idle background where
    /// measured.
    pub ipis_per_op: Pair,
    /// Function-call (CAL) interrupts per operation.
    pub cal_per_op: Pair,
    /// Context switches per operation of the workload's own tasks, as `getrusage` counts them
    /// (`ru_nvcsw`: sleeps) and the model's `voluntary_switches`.
    pub voluntary_switches_per_op: Pair,
    /// The same for preemptions while runnable (`ru_nivcsw`; `involuntary_switches`).
    pub involuntary_switches_per_op: Pair,
    /// Sleeps on `mmap_lock` per operation in the simulation (docs/cal-interrupts.md).
    pub sim_mmap_lock_sleeps_per_op: f64,
    /// Sleeps in `vma_start_write` per operation in the simulation (v6.4+: an mmap or munmap
    /// waiting for faults in the VMA it merges or splits, docs/references/linux-mm.md#vma-merging).
    pub sim_vma_start_write_sleeps_per_op: f64,
    /// The largest share of the machine other processes used during a real run.
    pub others_share: Option<f64>,
    /// The host's primitives just before and after the real runs, where they moved
    /// (validate/phase.rs); `None` without the probe's report.
    pub phase: Option<phase::Around>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Host {
    pub machine: String,
    pub description: String,
    pub kernel: String,
    /// Why this kernel preset.
    pub kernel_reason: String,
    pub uname: String,
    pub cpus: usize,
    /// Each external benchmark and where it was found (`None`: not installed).
    pub tools: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub host: Host,
    pub cases: Vec<Case>,
    pub notes: Vec<String>,
}

/// Where the file-backed testcases put their files when `--dir` is not given.
const TMPFS_DIR: &str = "/dev/shm";

/// A cell is consistent when the medians are within this share of the real one.
pub const CONSISTENT: f64 = 0.25;

/// The stand-in whose `[slab]` the host profile borrows (the probe does not measure SLUB; it
/// measures `[ipc]`, `[net]`, `[fs]` and `[uncore]`, which are borrowed only from a `--machine`
/// that lacks them, `[fs]` where no tmpfs was writable): seed 004's 1-socket machine.
const STAND_IN: &str = "ivybridge-i3-3240";

/// netperf's message sizes validate runs: two of the seed's nine (64 .. 16384 B), one whose
/// skb head is a small kmalloc and one whose head is an order-2 page
/// (docs/references/seeds-001-003-004.md#seed-004), to keep `validate` under 10 minutes.
pub const NETPERF_SIZES: [u64; 2] = [64, 8192];

/// lru-file-mmap-read's memory: the memory cgroup's limit on the real side, `mem_mib` in the
/// simulation (the files are ten times it, so a run reads 640 MiB an epoch).
pub const LRU_MEM_MIB: u64 = 64;

/// The stand-in whose `[reclaim]` the host profile borrows for lru-file-mmap-read: seed 001's
/// machine (the probe measures no reclaim path).
const RECLAIM_STAND_IN: &str = "ivybridge-4c8t";

/// dd's simulated warm-up and window (its seed experiment's are an MPC855T's): 1 ms, then 20 ms
/// (5 ms quick), some 16,000 blocks of the 65,536 a real run writes.
const DD_WINDOW: (Ps, Ps, Ps) = (Ps::MS, Ps(20 * Ps::MS.0), Ps(5 * Ps::MS.0));

/// lru-file-mmap-read's simulated warm-up and window: 1 s, then 2 s (200 ms quick). Seed 001's
/// 40 + 80 ms end before the cgroup's LRU settles where the disk reads ahead megabytes at a
/// time (a 64-MiB cgroup holds eight 8-MiB windows), and from v6.12 reclaim reads the cgroup's
/// statistics as a flush every 2 s left them: like the real runs (a second's warm-up, then
/// seconds), the twin starts from a fresh cgroup and measures a whole flush period.
const LRU_WINDOW: (Ps, Ps, Ps) = (Ps::S, Ps(2 * Ps::S.0), Ps(200 * Ps::MS.0));

/// One workload of the validation: a native loop or a distribution's benchmark.
#[derive(Debug, Clone, Copy)]
enum Subject {
    Native(NativeWorkload),
    External(External),
    /// tlblab-native's netperf stream loop at [`NETPERF_SIZES`].
    Netperf(netperf::Test),
    /// vm-scalability lru-file-mmap-read in a memory cgroup of [`LRU_MEM_MIB`].
    Lru,
}

impl Subject {
    fn all() -> Vec<Subject> {
        NativeWorkload::ALL
            .iter()
            .map(|(_, w)| Subject::Native(*w))
            .chain(External::ALL.into_iter().map(Subject::External))
            .chain(netperf::Test::ALL.into_iter().map(Subject::Netperf))
            .chain([Subject::Lru])
            .collect()
    }

    fn parse(name: &str) -> Result<Subject> {
        if let Some(e) = External::parse(name) {
            return Ok(Subject::External(e));
        }
        if let Some(t) = netperf::Test::parse(name) {
            return Ok(Subject::Netperf(t));
        }
        if name == lru::NAME {
            return Ok(Subject::Lru);
        }
        NativeWorkload::parse(name).map(Subject::Native).map_err(|e| {
            anyhow!(
                "--workload: {e}; or one of {}",
                External::ALL
                    .map(|e| e.name())
                    .into_iter()
                    .chain(netperf::Test::ALL.map(|t| t.name()))
                    .chain([lru::NAME])
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    fn name(self) -> &'static str {
        match self {
            Subject::Native(w) => w.name(),
            Subject::External(e) => e.name(),
            Subject::Netperf(t) => t.name(),
            Subject::Lru => lru::NAME,
        }
    }
}

/// The built-in preset nearest a host kernel release (`6.18.44-...`): the highest plain version
/// at or below it, or its `+patch` variant when that patch was merged at or below the host's
/// version (the preset's `merged_in`).
pub fn nearest_kernel(release: &str) -> (String, String) {
    let version = |s: &str| -> Vec<u32> {
        s.split(|c: char| !c.is_ascii_digit() && c != '.')
            .next()
            .unwrap_or("")
            .split('.')
            .filter_map(|x| x.parse().ok())
            .collect()
    };
    let host = version(release);
    let presets: Vec<(&str, String)> = tlblab_model::linux::preset::presets().collect();
    let plain: Vec<(&str, Vec<u32>)> = presets
        .iter()
        .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(|(n, _)| (*n, version(n)))
        .collect();
    let base = plain
        .iter()
        .filter(|(_, v)| *v <= host)
        .max_by(|a, b| a.1.cmp(&b.1))
        .or_else(|| plain.iter().min_by(|a, b| a.1.cmp(&b.1)))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| crate::spec::DEFAULT_KERNEL.into());
    let patched = format!("{base}+patch");
    let merged = KernelConfig::preset(&patched)
        .ok()
        .and_then(|k| k.merged_in)
        .map(|m| version(&m))
        .filter(|v| !v.is_empty() && *v <= host);
    match merged {
        Some(v) => (
            patched.clone(),
            format!(
                "the newest preset at or below Linux {release} is {base}; its patch was merged for v{} <= the host's, so \
                 {patched}",
                v.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
            ),
        ),
        None => (base.clone(), format!("the newest preset at or below Linux {release}")),
    }
}

/// Gives `p` the stand-in's sections it lacks, every number relabelled as borrowed. Returns the
/// sections borrowed.
fn borrow_sections(p: &mut MachineProfile, from: &MachineProfile) -> Result<Vec<&'static str>> {
    let mut borrowed = Vec::new();
    if p.slab.is_none() && from.slab.is_some() {
        p.slab.clone_from(&from.slab);
        borrowed.push("slab");
    }
    if p.ipc.is_none() && from.ipc.is_some() {
        p.ipc.clone_from(&from.ipc);
        borrowed.push("ipc");
    }
    if p.net.is_none() && from.net.is_some() {
        p.net.clone_from(&from.net);
        borrowed.push("net");
    }
    if p.fs.is_none() && from.fs.is_some() {
        p.fs.clone_from(&from.fs);
        borrowed.push("fs");
    }
    if p.reclaim.is_none() && from.reclaim.is_some() {
        p.reclaim.clone_from(&from.reclaim);
        borrowed.push("reclaim");
    }
    // Every number of a borrowed section says so.
    *p = p
        .map_sourced(&mut |k, t| {
            if borrowed.contains(&k.section()) {
                let src = t.get("source").and_then(|s| s.as_str()).unwrap_or_default().to_string();
                let label =
                    format!("borrowed from profile `{}`, not measured on this host: {src}", from.name);
                t.insert("source".into(), toml::Value::String(label));
                t.insert("confidence".into(), toml::Value::String("estimate".into()));
            }
        })
        .map_err(|e| anyhow!("the host profile with borrowed sections: {e}"))?;
    Ok(borrowed)
}

pub fn run(a: ValidateArgs) -> Result<()> {
    let dir = a.dir.clone().unwrap_or_else(|| {
        let shm = std::path::PathBuf::from(TMPFS_DIR);
        if shm.is_dir() {
            shm
        } else {
            tlblab_native::workload::DEFAULT_DIR.into()
        }
    });
    // lru-file-mmap-read's files must be reclaimable without swap: not on tmpfs.
    let lru_dir = if lru::check_dir(&dir).is_ok() { dir.clone() } else { std::env::temp_dir() };
    let mut notes = Vec::new();
    // Their disk's readahead, which the twin reads ahead with (the kernel's default where it is
    // unknown).
    let lru_read_ahead = lru::read_ahead_kb(&lru_dir);
    // Whether the host reads those files into large folios, which the model's page cache does
    // not (docs/validate.md#large-folios).
    if let Some((large, seen)) = lru::large_folio_pages(&lru_dir) {
        notes.push(format!(
            "{}: {large} of {seen} pages of a 64 MiB sparse file read through a mapping in {} were in large folios \
             (/proc/kpageflags); the model's page cache holds single pages, so its reclaim isolates, checks \
             references and activates page by page: docs/validate.md#large-folios",
            lru::NAME,
            lru_dir.display()
        ));
    }
    // The host at the slow and fast ends of the probe's measured spread, when it probes now
    // (host_profile::spread): simulated beside the central profile's seeds.
    let mut ends: Vec<MachineProfile> = Vec::new();
    // The probe's report, to build the host as its primitives measure around each cell.
    let mut report = None;
    let mut profile = match &a.machine {
        Some(m) => {
            // A profile `probe --write-profile` wrote has its spread and its report beside it.
            let path = std::path::Path::new(m);
            let (found, note) = crate::cmd::probe::spread_beside(path)?;
            ends = found;
            notes.extend(note);
            let beside = crate::cmd::probe::report_beside(path);
            if path.is_file() && beside.is_file() {
                let text = std::fs::read_to_string(&beside)
                    .with_context(|| format!("reading {}", beside.display()))?;
                report =
                    Some(ProbeReport::from_json(&text).map_err(|e| anyhow!("{}: {e}", beside.display()))?);
            } else {
                notes.push(format!(
                    "no probe report beside the profile ({}): the host's primitives are not measured again \
                     around each cell",
                    beside.display()
                ));
            }
            machines::load(m)?
        }
        None => {
            let r = crate::cmd::probe::measure(a.quick, 1)?;
            let b = tlblab_native::host_profile::build(&r, "host").map_err(|e| anyhow!("{e}"))?;
            for w in &b.warnings {
                eprintln!("validate: warning: {w}");
            }
            eprintln!("validate: host profile measured now ({})", b.profile.description);
            for end in [End::Slow, End::Fast] {
                let built = spread::at_end(&r, end).and_then(|r| {
                    tlblab_native::host_profile::build(&r, &format!("host-{end:?}").to_lowercase())
                });
                match built {
                    Ok(e) => ends.push(e.profile),
                    Err(e) => notes.push(format!("no {end:?} end of the probe's spread: {e}")),
                }
            }
            report = Some(r);
            b.profile
        }
    };
    for stand_in in [STAND_IN, RECLAIM_STAND_IN] {
        let from = machines::load(stand_in)?;
        for e in &mut ends {
            borrow_sections(e, &from)?;
        }
        let borrowed = borrow_sections(&mut profile, &from)?;
        if !borrowed.is_empty() {
            notes.push(format!(
                "the profile has no [{}] of its own (the probe does not measure those paths yet): borrowed from \
                 `{stand_in}`, labelled in the profile",
                borrowed.join("], [")
            ));
        }
    }
    let uname = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let (kernel_name, kernel_reason) = match &a.kernel {
        Some(k) => (k.clone(), "given with --kernel".to_string()),
        None => nearest_kernel(&uname),
    };
    let kernel = kernel_config(&kernel_name, &[])?;
    let subjects: Vec<Subject> = if a.workloads.is_empty() {
        Subject::all()
    } else {
        a.workloads.iter().map(|w| Subject::parse(w)).collect::<Result<_>>()?
    };
    let cpus = tlblab_native::sys::allowed_cpus().len();
    let runs = a.runs.unwrap_or(if a.quick { 2 } else { 3 }) as usize;
    let (seconds, warmup) =
        if a.quick { (a.seconds.min(0.5), a.warmup.min(0.3)) } else { (a.seconds, a.warmup) };
    let effort = Effort { quick: a.quick };
    let central = profile.clone();
    if let Some(c) = report.as_ref().and_then(|r| r.raw.core_sharing.as_ref()).filter(|c| c.shared()) {
        notes.push(format!(
            "the probe found this host's CPUs sharing a core's issue slots, though sysfs shows separate cores: \
             a store-bound loop took x{:.2} as long with the other CPU busy (a multiply chain x{:.2}); the \
             host profile keeps sysfs's topology, so a cell that keeps both CPUs busy pays it on the real side \
             only (docs/validate.md#shared-core)",
            c.store_slowdown(),
            c.chain_slowdown()
        ));
    }
    let mut sampler = match &report {
        Some(r) => Some(phase::Sampler::new(r, &central, &mut notes)?),
        None => None,
    };
    let mut cases = Vec::new();
    for s in &subjects {
        let points: Vec<u64> = match s {
            Subject::Native(_) => vec![1, 2],
            Subject::External(e) => e.points(cpus),
            Subject::Netperf(_) if cpus < 2 => {
                notes.push(format!(
                    "{}: skipped: a sender and a receiver need 2 CPUs, this host lets us use {cpus}",
                    s.name()
                ));
                vec![]
            }
            Subject::Netperf(_) => NETPERF_SIZES.to_vec(),
            Subject::Lru => vec![1, 2],
        };
        for point in points {
            if matches!(s, Subject::Native(_) | Subject::Lru) && point as usize > cpus {
                notes.push(format!(
                    "{}: {point} threads skipped: this host lets us use {cpus} CPU(s)",
                    s.name()
                ));
                continue;
            }
            let (workload, tasks, warm, window) = match s {
                Subject::Native(w) => (w.sim(), point as u32, Ps::US * 500, a.duration),
                Subject::External(e) => {
                    let (text, tasks) = e.sim_text(point, effort, &dir);
                    let (warm, window) = match e.experiment() {
                        Some(x) => seed_window(x, point, a.quick)?,
                        None => (DD_WINDOW.0, if a.quick { DD_WINDOW.2 } else { DD_WINDOW.1 }),
                    };
                    (Workload::parse(&text).map_err(|e| anyhow!("{text}: {e}"))?, tasks, warm, window)
                }
                Subject::Netperf(t) => {
                    let text = t.sim_text(point);
                    let (warm, window) = seed_window(t.experiment(), point, a.quick)?;
                    (Workload::parse(&text).map_err(|e| anyhow!("{text}: {e}"))?, 2, warm, window)
                }
                Subject::Lru => {
                    if lru_read_ahead.is_none() && point == 1 {
                        notes.push(format!(
                            "{}: the read_ahead_kb of {}'s disk is unknown; the twin reads ahead the kernel's default 128 KiB",
                            lru::NAME,
                            lru_dir.display()
                        ));
                    }
                    let text =
                        lru::sim_text(LRU_MEM_MIB, tlblab_native::memcg::host_counters(), lru_read_ahead);
                    let (warm, window) = (LRU_WINDOW.0, if a.quick { LRU_WINDOW.2 } else { LRU_WINDOW.1 });
                    (Workload::parse(&text).map_err(|e| anyhow!("{text}: {e}"))?, point as u32, warm, window)
                }
            };
            let spec = |seed| RunSpec {
                kernel: kernel.clone(),
                workload: workload.clone(),
                tasks,
                seed,
                warmup: warm,
                measure: window,
            };
            // A twin the model cannot run on this profile (a key it lacks) is a skip with the
            // reason, before any real run.
            if let Err(e) = tlblab_model::run::check(&profile, &spec(1)) {
                notes.push(format!(
                    "{} at {point} skipped: the model cannot run `{}` here: {e}",
                    s.name(),
                    workload.name()
                ));
                continue;
            }
            eprintln!("validate: {} at {point} ...", s.name());
            let mut around = Vec::new();
            if let Some(s) = &mut sampler {
                around.push(s.sample("before")?);
            }
            let mut real = Vec::new();
            for _ in 0..runs {
                let r = match s {
                    Subject::Native(w) => workload::run(&NativeSpec {
                        workload: *w,
                        threads: point as usize,
                        warmup: secs("warmup", warmup)?,
                        measure: secs("seconds", seconds)?,
                        dir: dir.clone(),
                    }),
                    Subject::External(e) => e.run(point, effort, &dir),
                    Subject::Netperf(t) => netperf::run(&NetperfSpec {
                        test: *t,
                        size: point,
                        warmup: secs("warmup", warmup)?,
                        measure: secs("seconds", seconds)?,
                    }),
                    Subject::Lru => lru::run(&LruSpec {
                        mem_mib: LRU_MEM_MIB,
                        readers: point as usize,
                        warmup: secs("warmup", warmup)?,
                        measure: secs("seconds", seconds)?,
                        dir: lru_dir.clone(),
                    }),
                };
                match r {
                    Ok(r) => real.push(r),
                    Err(e) => {
                        notes.push(format!("{} at {point} skipped: {e}", s.name()));
                        break;
                    }
                }
            }
            if real.len() < runs {
                continue;
            }
            if let Some(s) = &mut sampler {
                around.push(s.sample("after")?);
            }
            // The runs go one after another: one run's estimate against the host's memory.
            crate::host::check_run(&profile, &spec(1), 1)
                .map_err(|e| anyhow!("simulating {}: {e:#}", workload.name()))?;
            let sim = |p: &MachineProfile, seed| {
                run_sim(p, &spec(seed)).map_err(|e| anyhow!("simulating {}: {e}", workload.name()))
            };
            let sims: Vec<RunResult> =
                (1..=runs as u64).map(|seed| sim(&profile, seed)).collect::<Result<_>>()?;
            // The probe's spread, and the host as measured just before and after the runs: seed
            // 1 on each.
            let end_sims: Vec<RunResult> =
                ends.iter().chain(around.iter().map(|(p, _)| p)).map(|p| sim(p, 1)).collect::<Result<_>>()?;
            let mut c = case(s.name(), point, &s_point(*s), &real, &sims, &end_sims);
            c.phase = sampler
                .is_some()
                .then(|| phase::Around { samples: around.into_iter().map(|(_, s)| s).collect() });
            cases.push(c);
        }
    }
    notes.push(
        "CAL - TLB on the real side is other function calls; with two threads sleeping on mmap_lock or a VMA's \
         lock (ebizzy -m) most are wake-ups of the sleeper's idle CPU (ttwu_queue_wakelist, Linux 6.0+); the \
         model's CAL is its flush IPIs plus those wake-ups (wakelist_ipis), without the VMA-lock sleeps it does \
         not have: docs/cal-interrupts.md"
            .into(),
    );
    notes.push(format!(
        "tlb_flush1/3 and fs_mark ran in {} (the model has no disk: its file pages behave like tmpfs; on a disk \
         filesystem tlb_flush3's write faults also pay page_mkwrite and dirty accounting)",
        dir.display()
    ));
    let tools = External::ALL
        .iter()
        .map(|e| e.tool().0)
        .fold(Vec::<&str>::new(), |mut v, t| {
            if !v.contains(&t) {
                v.push(t);
            }
            v
        })
        .into_iter()
        .map(|t| {
            (
                t.to_string(),
                tlblab_native::workload::external::find_program(t).map(|p| p.display().to_string()),
            )
        })
        .collect();
    let v = Validation {
        host: Host {
            machine: profile.name.clone(),
            description: profile.description.clone(),
            kernel: kernel_name,
            kernel_reason,
            uname,
            cpus,
            tools,
        },
        cases,
        notes,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v).context("serialising the validation")?);
    } else {
        print!("{}", render(&v));
    }
    Ok(())
}

/// The simulated warm-up and window of a seed experiment's row (`[windows]` in the full run),
/// as `reproduce` runs it.
fn seed_window(name: &str, row: u64, quick: bool) -> Result<(Ps, Ps)> {
    let e = crate::experiment::load(name)?.remove(0);
    let (w, d) = match (quick, e.windows.get(&row.to_string())) {
        (false, Some(w)) => (w.warmup.clone(), w.duration.clone()),
        (false, None) => (e.warmup.clone(), e.duration.clone()),
        (true, _) => (e.warmup.clone(), e.quick_duration.clone()),
    };
    let p = |s: &str| parse_duration(s).map_err(|x| anyhow!("experiment {name}: {x}"));
    Ok((p(&w)?, p(&d)?))
}

fn s_point(s: Subject) -> String {
    match s {
        Subject::Native(_) => "threads".into(),
        Subject::External(e) => e.point_name().into(),
        Subject::Netperf(_) => "msg bytes".into(),
        Subject::Lru => "readers".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_kernel_preset_follows_the_host_release() {
        // Linux 6.18: its own preset; 6.16 the newest link of the chain below it.
        assert_eq!(nearest_kernel("6.18.44-fc-v782").0, "6.18");
        assert_eq!(nearest_kernel("6.16.1").0, "6.15");
        assert_eq!(nearest_kernel("5.13.19").0, "5.13");
        // Between 5.18 and 6.3: 5.18.1 with seed 002's patch, merged for v6.0.
        let (k, why) = nearest_kernel("6.2.16");
        assert_eq!(k, "5.18.1+patch", "{why}");
        assert!(why.contains("v6.0"), "{why}");
        assert_eq!(nearest_kernel("5.18.9").0, "5.18.1");
        assert_eq!(nearest_kernel("4.12.0-rc1").0, "4.9");
        assert_eq!(nearest_kernel("3.13.0").0, "3.13");
        // Older than every preset: the oldest.
        assert_eq!(nearest_kernel("2.6.32").0, "3.4");
    }

    #[test]
    fn borrowed_sections_are_labelled() {
        let mut host = machines::load("milan-1s").unwrap();
        let stand_in = machines::load(STAND_IN).unwrap();
        let got = borrow_sections(&mut host, &stand_in).unwrap();
        assert_eq!(got, ["slab", "ipc", "net", "fs"]);
        let ipc = host.ipc.as_ref().unwrap();
        assert!(ipc.pipe_write_cycles.source.starts_with("borrowed from profile `ivybridge-i3-3240`"));
        assert_eq!(ipc.pipe_write_cycles.value, stand_in.ipc.as_ref().unwrap().pipe_write_cycles.value);
        host.validate().unwrap();
    }
}
