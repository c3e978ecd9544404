//! What to run, as a user names it: a machine, a workload with its parameters, a kernel preset
//! with knob overrides, and the simulated intervals. The one seam between a request (the CLI's
//! flags, an experiment's keys, the Python API) and the model's [`RunSpec`]: the defaults are
//! written here once, and every name a user gives is parsed and checked here.

use anyhow::{anyhow, Result};
use tlblab_model::engine::timeline::{Recording, TimelineSpec};
use tlblab_model::linux::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run_recorded, RunResult, RunSpec, Workload, MAX_TASKS};
use tlblab_model::time::Ps;

use crate::machines;

/// The kernel preset when none is named: seed 002's baseline, the newest modelled kernel.
pub const DEFAULT_KERNEL: &str = "5.18.1";
/// The simulated warm-up before the measurement (discarded, as the real harness does).
pub const DEFAULT_WARMUP: &str = "500us";
/// The run's seed when none is given.
pub const DEFAULT_SEED: u64 = 1;
/// The measured time of one run when neither the request nor the workload (ebizzy's -S) gives
/// one.
pub const DEFAULT_MEASURE: Ps = Ps(5 * Ps::MS.0);
/// Operations the default window should count: one more or less then moves the metric by under
/// 1% (10 records would move it in 10% steps). A default-window run that counts fewer is run
/// again with the window stretched to count about this many.
pub const DEFAULT_MIN_OPS: u64 = 110;
/// At most this many default windows (500 ms of simulated time) when stretching.
pub const MAX_STRETCH: u64 = 100;

/// What to simulate: the request `run` and `sweep` share (flattened into both), and the Python
/// API builds with [`Spec::new`].
#[derive(Debug, Clone, clap::Args)]
pub struct Spec {
    /// A built-in machine (see `tlblab list`) or a profile file.
    #[arg(long)]
    pub machine: String,
    /// e.g. tlb_flush1_threads, or `ebizzy` with ebizzy's options: "ebizzy -m" (see `tlblab list`).
    #[arg(long)]
    pub workload: String,
    /// A workload parameter KEY=VALUE (repeatable), e.g. alloc=glibc-mmap for ebizzy.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Kernel preset (see `tlblab list`) or a preset file (kernels/*.toml format); the knobs apply to it.
    #[arg(long, default_value = DEFAULT_KERNEL)]
    pub kernel: String,
    /// Override one knob: KNOB=VALUE (repeatable).
    #[arg(long = "set", value_name = "KNOB=VALUE")]
    pub set: Vec<String>,
    /// Measured simulated time, e.g. 5ms, 200us, 1s (default: `run` 5ms, stretched until ~110
    /// operations count (1% steps), or ebizzy's -S; `sweep` 20ms).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Ps>,
    /// Simulated warm-up before the measurement (discarded, as the real harness does).
    #[arg(long, default_value = DEFAULT_WARMUP, value_parser = parse_duration)]
    pub warmup: Ps,
}

impl Spec {
    /// A request for `workload` on `machine` with every default.
    pub fn new(machine: &str, workload: &str) -> Spec {
        Spec {
            machine: machine.into(),
            workload: workload.into(),
            params: Vec::new(),
            kernel: DEFAULT_KERNEL.into(),
            set: Vec::new(),
            duration: None,
            warmup: parse_duration(DEFAULT_WARMUP).expect("the default warm-up parses"),
        }
    }

    /// The machine and the model's run of `tasks` (or the workload's default) with `seed`.
    pub fn resolve(&self, tasks: Option<u32>, seed: u64) -> Result<(MachineProfile, RunSpec)> {
        let profile = machines::load(&self.machine)?;
        let workload = workload(&self.workload, &self.params)?;
        let spec = RunSpec {
            kernel: kernel_config(&self.kernel, &self.set)?,
            tasks: self::tasks(tasks, &workload, profile.topology.cpus())?,
            seed,
            warmup: self.warmup,
            measure: self.duration.or(workload.default_measure()).unwrap_or(DEFAULT_MEASURE),
            workload,
        };
        Ok((profile, spec))
    }

    /// One run: what `tlblab run` prints and the Python API's `tlblab.run` returns. The model's
    /// own refusals come first, then the host's memory (docs/limits.md).
    pub fn simulate(&self, tasks: Option<u32>, seed: u64) -> Result<RunResult> {
        self.simulate_recorded(tasks, seed, None).map(|(r, _)| r)
    }

    /// As [`Self::simulate`], recording the timeline of the run it reports when `timeline` is
    /// given (`tlblab run --timeline`); the result is the same as without it.
    pub fn simulate_recorded(
        &self,
        tasks: Option<u32>,
        seed: u64,
        timeline: Option<TimelineSpec>,
    ) -> Result<(RunResult, Option<Recording>)> {
        let (profile, spec) = self.resolve(tasks, seed)?;
        tlblab_model::run::check(&profile, &spec).map_err(|e| anyhow!(e))?;
        crate::host::check_run(&profile, &spec, 1)?;
        let (r, rec) = run_recorded(&profile, &spec, timeline).map_err(|e| anyhow!(e))?;
        // The default window is a floor: where nobody chose one and it counted too few
        // operations to resolve ~1% (a 1-thread ebizzy counts ~27 records in 5 ms), measure
        // again over a window long enough for DEFAULT_MIN_OPS.
        let ops = r.operations();
        if self.duration.is_some()
            || spec.workload.default_measure().is_some()
            || ops == 0
            || ops >= DEFAULT_MIN_OPS
        {
            return Ok((r, rec));
        }
        let stretch = DEFAULT_MIN_OPS.div_ceil(ops).min(MAX_STRETCH);
        let longer = RunSpec { measure: Ps(spec.measure.0 * stretch), ..spec };
        tlblab_model::run::check(&profile, &longer).map_err(|e| anyhow!(e))?;
        run_recorded(&profile, &longer, timeline).map_err(|e| anyhow!(e))
    }
}

/// The longest warm-up or measured interval.
pub use tlblab_model::run::MAX_INTERVAL as MAX_DURATION;

/// `5ms`, `200us`, `1s`, `750ns` (a number, then a unit; spaces around either are ignored):
/// every duration a user gives (flags, experiment keys, the Python API) is parsed here.
/// Allowed 1ns ..= 1000s, checked after rounding to whole picoseconds, so nothing that rounds to
/// a zero-length interval (`0.0001ns`) passes.
pub fn parse_duration(s: &str) -> Result<Ps, String> {
    let shown = || s.escape_debug().to_string();
    let t = s.trim();
    let num = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let scale = match &t[num.len()..] {
        "s" => Ps::S,
        "ms" => Ps::MS,
        "us" => Ps::US,
        "ns" => Ps::NS,
        _ => return Err(format!("`{}`: expected a number with a unit: s, ms, us or ns (e.g. 5ms)", shown())),
    };
    let num = num.trim();
    let n: f64 =
        num.parse().map_err(|_| format!("`{}`: `{}` is not a number", shown(), num.escape_debug()))?;
    let ps = n * scale.0 as f64;
    let range = tlblab_model::run::MIN_INTERVAL.0 as f64..=MAX_DURATION.0 as f64;
    // NaN is in no range; the bounds are whole picoseconds, so rounding keeps `ps` inside them.
    if !range.contains(&ps) {
        return Err(format!("`{}`: allowed 1ns ..= {}s", shown(), MAX_DURATION.0 / Ps::S.0));
    }
    Ok(Ps::round_from(ps))
}

/// A workload from its name plus `KEY=VALUE` parameters; an error names `--workload`.
pub fn workload(name: &str, params: &[String]) -> Result<Workload> {
    let text = std::iter::once(name.to_string()).chain(params.iter().cloned()).collect::<Vec<_>>().join(" ");
    Workload::parse(&text).map_err(|e| anyhow!("--workload: {e}"))
}

/// The task count: given, or the workload's own default (e.g. ebizzy's 2 x CPUs).
pub fn tasks(given: Option<u32>, w: &Workload, cpus: u32) -> Result<u32> {
    if let Some(t) = given.filter(|t| !(1..=MAX_TASKS).contains(t)) {
        return Err(anyhow!("--threads {t}: allowed 1 ..= {MAX_TASKS}"));
    }
    given.or_else(|| w.default_tasks(cpus)).ok_or_else(|| anyhow!("--threads is required for {}", w.name()))
}

/// A built-in preset by name, or a preset file (`.toml`, or a path), with `KNOB=VALUE` overrides
/// applied; an error names `--kernel` / `--set`.
pub fn kernel_config(preset: &str, sets: &[String]) -> Result<KernelConfig> {
    kernel_config_from(("--kernel", "--set"), preset, sets)
}

/// As [`kernel_config`], with errors naming `keys` (the preset's and the overrides': flags, or
/// an experiment's keys).
pub fn kernel_config_from(keys: (&str, &str), preset: &str, sets: &[String]) -> Result<KernelConfig> {
    let (pkey, skey) = keys;
    let path = std::path::Path::new(preset);
    let mut k = if preset.ends_with(".toml") || preset.contains('/') || path.is_file() {
        let text = crate::input::read_text(path, "kernel preset", crate::input::TEXT_LIMIT)
            .map_err(|e| anyhow!("{pkey}: {e:#}"))?;
        let name = path.file_stem().map_or(preset.into(), |s| s.to_string_lossy().into_owned());
        KernelConfig::from_file_text(&name, &path.display().to_string(), &text).map_err(|e| anyhow!(e))?
    } else {
        KernelConfig::preset(preset).map_err(|e| anyhow!("{pkey}: {e} (or give a path to a .toml preset)"))?
    };
    for kv in sets {
        let (key, value) = kv
            .split_once('=')
            .ok_or_else(|| anyhow!("{skey} `{kv}`: expected KNOB=VALUE (see `tlblab list`)"))?;
        k.set(key.trim(), value.trim()).map_err(|e| anyhow!("{skey} {kv}: {e}"))?;
    }
    if !sets.is_empty() {
        k.name = format!("{}[{}]", k.name, sets.join(","));
    }
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_parse_and_name_a_preset() {
        let s = Spec::new("haswell-ep-2s", "tlb_flush1_threads");
        assert_eq!(s.warmup, Ps::US * 500);
        assert!(KernelConfig::preset(&s.kernel).is_ok());
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("5ms").unwrap(), Ps::MS * 5);
        assert_eq!(parse_duration("1.5us").unwrap(), Ps(1_500_000));
        assert!(parse_duration("5").unwrap_err().contains("unit"));
        assert!(parse_duration("-1ms").is_err());
        // Spaces around the number and the unit (`"5 "` once panicked).
        assert_eq!(parse_duration(" 5 ms ").unwrap(), Ps::MS * 5);
        assert_eq!(parse_duration("1e3us").unwrap(), Ps::MS);
        for bad in ["5 ", " 5", "  ", "", "ms", "5 m s", "\n5x"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("expected a number") || e.contains("not a number"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn durations_that_round_below_one_ns_are_refused() {
        for bad in ["0.0001ns", "0.4ns", "0.999ns", "1e-12s", "nan s", "inf ms", "1000.001s"] {
            assert!(parse_duration(bad).unwrap_err().contains("allowed 1ns ..= 1000s"), "{bad}");
        }
        assert_eq!(parse_duration("1ns").unwrap(), Ps::NS);
        assert_eq!(parse_duration("1000s").unwrap(), MAX_DURATION);
    }
}
