//! `tlblab advise`: which kernel knob setting helps a workload on a machine, by how much, with
//! what confidence, and why.
//!
//! 1. The preset as given runs at each thread count (the default).
//! 2. Its counters say which mechanisms the workload exercises; each knob of [`CANDIDATES`]
//!    whose mechanism ran is swept over its values, one knob at a time (`sweep`, so the best
//!    value per thread count and overall is what `tlblab sweep` names for the same grid).
//! 3. The best value of each knob is tested against the default at each thread count (Welch's
//!    t-test on the iterations, and a seeded bootstrap interval of the difference); the advice
//!    is the setting with the largest geometric-mean gain that is significantly better at some
//!    thread count and significantly worse at none, or the statement that nothing is.
//! 4. The attribution of the default and the advised setting, and the counters that moved most,
//!    say where the gain comes from.

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tlblab_model::linux::arch::x86::mm::tlb::RangePolicy;
use tlblab_model::linux::config::KernelConfig;
use tlblab_report::stats;
use tlblab_report::summary::ResultSet;
use tlblab_report::sweep::best;
use tlblab_report::table::Table;

use crate::cmd::sweep::{self, SweepArgs};
use crate::machines;
use crate::results::{self, Finished};
use crate::spec::{kernel_config, Spec};

#[derive(Debug, clap::Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub sim: Spec,
    /// Thread counts, comma separated (default: 1, half the CPUs and all of them).
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<u32>,
    /// Runs (seeds 1..=N) per cell, 2..=1000: the significance test needs a spread.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=results::MAX_ITERATIONS as i64))]
    pub iterations: u32,
    /// Host threads, 1..=256 (default: all cores). The output is the same for any value.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=results::MAX_JOBS))]
    pub jobs: Option<usize>,
    /// Print the advice as JSON instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Keep every sweep's runs under DIR/<knob>/ (and DIR/default/), each a result set `tlblab
    /// compare` reads and a rerun reuses.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// A knob worth sweeping when the default run shows its mechanism at work.
pub struct Candidate {
    pub knob: &'static str,
    pub values: &'static [&'static str],
    /// Why it applies (a sentence with the counters that show it), or `None`.
    pub applies: fn(&KernelConfig, &BTreeMap<String, f64>) -> Option<String>,
}

fn get(c: &BTreeMap<String, f64>, name: &str) -> f64 {
    c.get(name).copied().unwrap_or(0.0)
}

fn range_flushes(c: &BTreeMap<String, f64>) -> Option<String> {
    let (invlpg, full) = (get(c, "invlpg"), get(c, "full_flushes"));
    (invlpg + full > 0.0)
        .then(|| format!("user range flushes: {invlpg:.2} INVLPG and {full:.2} full flushes per op"))
}

fn zone_lock(c: &BTreeMap<String, f64>) -> Option<String> {
    let z = get(c, "zone_lock_acquisitions");
    (z > 0.0).then(|| format!("page allocator: {z:.3} zone->lock acquisitions per op"))
}

/// The knobs `advise` knows to sweep, each with the values a developer would try.
pub const CANDIDATES: &[Candidate] = &[
    Candidate {
        knob: "ceiling",
        values: &["0", "1", "2", "4", "8", "16", "33", "64", "128", "256"],
        applies: |k, c| matches!(k.flush.policy, RangePolicy::Ceiling(_)).then(|| range_flushes(c)).flatten(),
    },
    Candidate {
        knob: "flushall_shift",
        values: &["-1", "0", "1", "2", "3", "4", "5", "6"],
        applies: |k, c| {
            matches!(k.flush.policy, RangePolicy::FlushallShift { .. }).then(|| range_flushes(c)).flatten()
        },
    },
    Candidate {
        knob: "coalesce_ipis",
        values: &["on", "lone", "off"],
        applies: |_, c| {
            let ipis = get(c, "ipis_sent");
            (ipis > 0.0).then(|| format!("flush IPIs: {ipis:.2} sent per op"))
        },
    },
    Candidate {
        knob: "swap_cluster_max",
        values: &["8", "16", "32", "64", "128", "256"],
        applies: |_, c| {
            let scanned = get(c, "pgscan_kswapd") + get(c, "pgscan_direct");
            (scanned > 0.0).then(|| format!("reclaim: {scanned:.3} pages scanned per op"))
        },
    },
    Candidate {
        knob: "pcp_high",
        values: &["64", "256", "1024", "4096", "16384"],
        applies: |_, c| zone_lock(c),
    },
    Candidate {
        knob: "batch_cap_kib",
        values: &["128", "256", "512", "1024", "2048", "4096"],
        applies: |_, c| zone_lock(c),
    },
];

/// One knob's sweep against the default at one thread count.
#[derive(Debug, Clone, Serialize)]
pub struct AtThreads {
    pub threads: u32,
    pub default_mean: f64,
    pub best_value: String,
    pub best_mean: f64,
    /// Percent better than the default (positive = better).
    pub gain_pct: f64,
    /// Welch's two-sided p-value of the best value against the default.
    pub p: f64,
    /// 95% bootstrap interval of `gain_pct`.
    pub ci: Option<(f64, f64)>,
    /// p < 0.05 and the interval excludes zero.
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct KnobAdvice {
    pub knob: String,
    pub why: String,
    /// What `tlblab sweep` names as the best value overall for this grid.
    pub best_overall: String,
    /// `best_overall`'s geometric-mean ratio to the default over the thread counts, in percent.
    pub overall_gain_pct: f64,
    pub at: Vec<AtThreads>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    pub machine: String,
    pub workload: String,
    pub kernel: String,
    pub metric: String,
    pub higher_is_better: bool,
    pub threads: Vec<u32>,
    pub iterations: u32,
    /// Knobs that did not apply, with the reason.
    pub skipped: Vec<(String, String)>,
    pub knobs: Vec<KnobAdvice>,
    /// `knob=value` advised, or `None` when no setting beats the default significantly.
    pub advice: Option<String>,
    /// Where the advised setting's time went against the default (bucket, default %, advised %),
    /// at the thread count of its largest gain, largest change first.
    pub attribution: Vec<(String, f64, f64)>,
    /// The counters per op that moved most there (name, default, advised).
    pub counters: Vec<(String, f64, f64)>,
}

fn sweep_args(a: &AdviseArgs, vary: String) -> SweepArgs {
    SweepArgs {
        sim: a.sim.clone(),
        threads: a.threads.clone(),
        vary: vec![vary],
        iterations: a.iterations,
        jobs: a.jobs,
        json: false,
        out: None,
        shard: None,
        progress: None,
    }
}

/// Called before each sweep that has a store, with the sweep and its directory: whatever it
/// stores there, the sweep reuses (the Python API runs the cells on a Dask cluster this way).
pub type Prefill<'a> = &'a dyn Fn(&SweepArgs, &Path) -> Result<()>;

fn run_sweep(a: &AdviseArgs, vary: String, dir: Option<&Path>, prefill: Prefill) -> Result<sweep::Sweep> {
    let args = sweep_args(a, vary);
    if let Some(d) = dir {
        prefill(&args, d)?;
    }
    match sweep::sweep(&args, dir)? {
        Finished::All(sw) => Ok(sw),
        Finished::Shard(_) => unreachable!("no shard given"),
    }
}

/// Runs the default and every applicable knob's sweep, and chooses.
pub fn advise(a: AdviseArgs) -> Result<Advice> {
    advise_with(a, &|_, _| Ok(()))
}

/// [`advise`], with `prefill` run before each sweep (with `a.out` only).
pub fn advise_with(mut a: AdviseArgs, prefill: Prefill) -> Result<Advice> {
    let profile = machines::load(&a.sim.machine)?;
    let cpus = profile.topology.cpus();
    if a.threads.is_empty() {
        a.threads = vec![1, cpus / 2, cpus];
        a.threads.retain(|&t| t >= 1);
        a.threads.dedup();
    }
    let kernel = kernel_config(&a.sim.kernel, &a.sim.set)?;
    if let Some(dir) = &a.out {
        crate::store::check_out_dir(dir, "--out")?;
    }
    let sub = |name: &str| a.out.as_ref().map(|d| d.join(name));
    let default = run_sweep(&a, format!("kernel={}", a.sim.kernel), sub("default").as_deref(), prefill)?;
    let base = &default.set;
    let hib = base.metric.higher_is_better;
    let label0 = base.kernels[0].clone();
    // Counters at the largest thread count (every mechanism the workload uses runs there).
    let top = *a.threads.iter().max().expect("a thread count");
    let counters = base.cell(&label0, top).map(|c| c.counters_per_op()).unwrap_or_default();
    let mut skipped = Vec::new();
    let mut knobs = Vec::new();
    let mut sweeps = Vec::new();
    for c in CANDIDATES {
        let Some(why) = (c.applies)(&kernel, &counters) else {
            skipped.push((c.knob.to_string(), "its mechanism did not run in the default run".to_string()));
            continue;
        };
        let sw =
            run_sweep(&a, format!("{}={}", c.knob, c.values.join(",")), sub(c.knob).as_deref(), prefill)?;
        let (per_thread, overall) = best(&sw.set, &sw.grid);
        let labels = sw.grid.labels();
        let mut at = Vec::new();
        for b in &per_thread {
            let Some(d) = base.cell(&label0, b.threads) else { continue };
            let (x, y) =
                (sw.set.cell(&labels[b.tied[0]], b.threads).expect("a best cell").samples(), d.samples());
            let dm = stats::mean(&y);
            let gain = stats::percent_better(b.mean, dm, hib);
            let p = stats::welch(&x, &y).map_or(1.0, |w| w.p);
            let ci = stats::bootstrap_pct_ci(&x, &y, stats::mean, hib);
            let significant = p < stats_alpha() && ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0);
            at.push(AtThreads {
                threads: b.threads,
                default_mean: dm,
                best_value: sw.grid.value(b.tied[0]),
                best_mean: b.mean,
                gain_pct: gain,
                p,
                ci,
                significant,
            });
        }
        let (best_overall, overall_gain_pct) = match overall {
            Some((i, _)) => (sw.grid.value(i), geo_gain(&sw.set, &labels[i], base, &label0, &a.threads, hib)),
            None => (String::new(), 0.0),
        };
        knobs.push(KnobAdvice { knob: c.knob.into(), why, best_overall, overall_gain_pct, at });
        sweeps.push(sw);
    }
    // The advice: the knob's overall best value, if it is significantly better than the default
    // at some thread count and significantly worse at none.
    let mut chosen: Option<(usize, f64)> = None;
    for (i, k) in knobs.iter().enumerate() {
        let sw = &sweeps[i];
        let label = format!("{}={}", k.knob, k.best_overall);
        let Some(li) = sw.grid.labels().iter().position(|l| *l == label) else { continue };
        let tests: Vec<(f64, bool)> = a
            .threads
            .iter()
            .filter_map(|&t| {
                let (x, y) =
                    (sw.set.cell(&sw.grid.labels()[li], t)?.samples(), base.cell(&label0, t)?.samples());
                let p = stats::welch(&x, &y).map_or(1.0, |w| w.p);
                let g = stats::percent_better(stats::mean(&x), stats::mean(&y), hib);
                Some((g, p < stats_alpha()))
            })
            .collect();
        let better = tests.iter().any(|&(g, s)| s && g > 0.0);
        let worse = tests.iter().any(|&(g, s)| s && g < 0.0);
        if better && !worse && chosen.is_none_or(|(_, g)| k.overall_gain_pct > g) {
            chosen = Some((i, k.overall_gain_pct));
        }
    }
    let (mut attribution, mut moved) = (Vec::new(), Vec::new());
    let advice = chosen.map(|(i, _)| {
        let k = &knobs[i];
        let label = format!("{}={}", k.knob, k.best_overall);
        // Where the advised setting gains most.
        let t = a
            .threads
            .iter()
            .copied()
            .filter_map(|t| {
                let x = sweeps[i].set.cell(&label, t)?.samples();
                let y = base.cell(&label0, t)?.samples();
                Some((t, stats::percent_better(stats::mean(&x), stats::mean(&y), hib)))
            })
            .max_by(|p, q| p.1.total_cmp(&q.1))
            .map_or(top, |p| p.0);
        if let (Some(adv), Some(def)) = (sweeps[i].set.cell(&label, t), base.cell(&label0, t)) {
            // Shares of the busy CPUs' time, in percent.
            let share = |m: BTreeMap<String, f64>| {
                let total: f64 = m.values().sum();
                m.into_iter().map(|(k, v)| (k, if total > 0.0 { 100.0 * v / total } else { 0.0 })).collect()
            };
            let (aa, dd): (BTreeMap<String, f64>, BTreeMap<String, f64>) =
                (share(adv.attribution()), share(def.attribution()));
            let mut names: Vec<&String> = aa.keys().chain(dd.keys()).collect();
            names.sort();
            names.dedup();
            attribution = names
                .into_iter()
                .map(|n| (n.clone(), get(&dd, n), get(&aa, n)))
                .filter(|r| r.1 != 0.0 || r.2 != 0.0)
                .collect();
            attribution.sort_by(|p, q| (q.2 - q.1).abs().total_cmp(&(p.2 - p.1).abs()).then(p.0.cmp(&q.0)));
            let (ca, cd) = (adv.counters_per_op(), def.counters_per_op());
            moved = cd
                .iter()
                .map(|(n, &v)| (n.clone(), v, get(&ca, n)))
                .filter(|r| r.1 != r.2 && (r.1 > 0.0 || r.2 > 0.0))
                .collect();
            let rel = |r: &(String, f64, f64)| (r.2 - r.1).abs() / r.1.abs().max(r.2.abs());
            moved.sort_by(|p, q| rel(q).total_cmp(&rel(p)).then(p.0.cmp(&q.0)));
            moved.truncate(8);
        }
        label
    });
    Ok(Advice {
        machine: profile.name.clone(),
        workload: base.workload.clone(),
        kernel: a.sim.kernel.clone(),
        metric: format!("{} ({})", base.metric.name, base.metric.unit),
        higher_is_better: hib,
        threads: a.threads.clone(),
        iterations: a.iterations,
        skipped,
        knobs,
        advice,
        attribution,
        counters: moved,
    })
}

fn stats_alpha() -> f64 {
    tlblab_report::compare::ALPHA
}

/// The geometric mean over thread counts of `label`'s mean over the default's, as a percent
/// gain (positive = better).
fn geo_gain(set: &ResultSet, label: &str, base: &ResultSet, label0: &str, threads: &[u32], hib: bool) -> f64 {
    let logs: Vec<f64> = threads
        .iter()
        .filter_map(|&t| {
            let m = stats::mean(&set.cell(label, t)?.samples());
            let d = stats::mean(&base.cell(label0, t)?.samples());
            (m > 0.0 && d > 0.0).then(|| if hib { m / d } else { d / m }.ln())
        })
        .collect();
    if logs.is_empty() {
        return 0.0;
    }
    100.0 * ((logs.iter().sum::<f64>() / logs.len() as f64).exp() - 1.0)
}

/// The advice as text.
pub fn render(v: &Advice) -> String {
    let mut out = format!(
        "advise: {} on {}, kernel {}; {}, {} is better; {} run(s) per cell at {} thread(s)\n",
        v.workload,
        v.machine,
        v.kernel,
        v.metric,
        if v.higher_is_better { "higher" } else { "lower" },
        v.iterations,
        v.threads.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    );
    for (k, why) in &v.skipped {
        out += &format!("skipped {k}: {why}\n");
    }
    for k in &v.knobs {
        out += &format!(
            "\n{} ({}): best overall {} ({:+.1}% geometric mean against the default)\n",
            k.knob, k.why, k.best_overall, k.overall_gain_pct
        );
        let mut t = Table::new(
            ["threads", "default", "best value", "best", "gain", "95% interval", "p", "significant"]
                .map(String::from)
                .to_vec(),
        );
        for r in &k.at {
            t.row(vec![
                r.threads.to_string(),
                format!("{:.0}", r.default_mean),
                r.best_value.clone(),
                format!("{:.0}", r.best_mean),
                format!("{:+.2}%", r.gain_pct),
                r.ci.map_or("-".into(), |(lo, hi)| format!("[{lo:+.2}%, {hi:+.2}%]")),
                format!("{:.3}", r.p),
                if r.significant { "yes".into() } else { "no".into() },
            ]);
        }
        out += &t.render();
    }
    out += "\n";
    match &v.advice {
        Some(s) => {
            let k = v.knobs.iter().find(|k| s.starts_with(&format!("{}=", k.knob))).expect("its knob");
            out += &format!(
                "advice: --set {s} ({:+.1}% geometric mean over the thread counts; significantly better at {}, \
                 worse at none)\n",
                k.overall_gain_pct,
                k.at.iter()
                    .filter(|r| r.significant && r.gain_pct > 0.0 && r.best_value == k.best_overall)
                    .map(|r| r.threads.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
            if !v.attribution.is_empty() {
                out += "where the time went (% of CPU time, default -> advised):";
                for (b, d, a) in v.attribution.iter().take(4) {
                    out += &format!(" {b} {d:.1} -> {a:.1};");
                }
                out += "\n";
            }
            if !v.counters.is_empty() {
                out += "what moved (per op, default -> advised):";
                for (n, d, a) in &v.counters {
                    out += &format!(" {n} {} -> {};", fmt(*d), fmt(*a));
                }
                out += "\n";
            }
        }
        None => out += "advice: keep the default: no setting beats it significantly (Welch's t-test at 95% and a bootstrap interval excluding zero) at any thread count without losing at another\n",
    }
    out
}

fn fmt(v: f64) -> String {
    tlblab_report::compare::fmt_counter(v)
}

pub fn run(a: AdviseArgs) -> Result<()> {
    for (i, t) in a.threads.iter().enumerate() {
        if a.threads[..i].contains(t) {
            bail!("--threads: {t} is listed twice");
        }
    }
    let json = a.json;
    let v = advise(a)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&v).context("serialising the advice")?);
    } else {
        print!("{}", render(&v));
    }
    Ok(())
}
