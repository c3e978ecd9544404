//! `tlblab compare DIR [DIR...] [--out DIR] [--force]`: mmtests compare-kernels-style tables of
//! saved result sets (the experiment directories `reproduce --out` writes): every kernel of
//! every set is a column, the first is the baseline; then the event counters per operation side
//! by side (only the counters that counted, as `perf stat`; `--all-counters` for every one).
//! With `--out`, also an HTML report with plots. `--json` and `--csv` print the same numbers as
//! tidy rows instead (one per statistic or counter per thread count per column: what pandas'
//! `read_json`/`read_csv` take as is).

use anyhow::{bail, Result};
use std::path::PathBuf;
use tlblab_report::compare::{Comparison, Mode};
use tlblab_report::report;
use tlblab_report::summary::ResultSet;

use crate::results;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Result sets: experiment directories written by `tlblab reproduce --out` (or an --out
    /// directory holding exactly one experiment).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Write index.html and plots/ into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Compare sets even when their machine, workload or metric differ.
    #[arg(long)]
    pub force: bool,
    /// mmtests: rows and significance marks of current mmtests (Hmean, HStddev, HCoeffVar,
    /// BHmean.95 for higher-is-better; non-overlapping confidence intervals). subselection:
    /// mmtests' Subselection summary (adds SubHmean and its interval SubHmeanCI, and marks on
    /// them). welch: mmtests before Nov 2024 (Amean, Hmean, Stddev, CoeffVar, BAmean-95; Welch's
    /// t-test).
    #[arg(long, default_value = "mmtests", value_parser = Mode::parse)]
    pub stats: Mode,
    /// Print every counter, the rows zero in every column too.
    #[arg(long)]
    pub all_counters: bool,
    /// Print tidy rows as a JSON array instead of the tables (columns: column, set, kernel,
    /// threads, kind, name, value, pct_better, significant, pct_ci_low, pct_ci_high).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the same tidy rows as CSV with a header line.
    #[arg(long)]
    pub csv: bool,
}

pub fn run(args: CompareArgs) -> Result<()> {
    let mut loaded: Vec<(PathBuf, ResultSet)> = Vec::new();
    for d in &args.dirs {
        loaded.push(results::load_set(d)?);
    }
    // Name each set by its directory; use more of the path while two names collide.
    let mut names: Vec<String> = Vec::new();
    for (i, (dir, _)) in loaded.iter().enumerate() {
        let comps: Vec<String> =
            dir.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let mut take = 1;
        let name = loop {
            let n = comps[comps.len().saturating_sub(take)..].join("/");
            let clash = loaded.iter().enumerate().any(|(j, (other, _))| {
                j != i && {
                    let oc: Vec<String> =
                        other.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                    oc[oc.len().saturating_sub(take)..].join("/") == n
                }
            });
            if !clash || take >= comps.len() {
                break n;
            }
            take += 1;
        };
        names.push(name);
    }
    let (_, base) = &loaded[0];
    for (name, (_, s)) in names.iter().zip(&loaded).skip(1) {
        for (what, a, b) in [
            ("machine", &base.machine, &s.machine),
            ("workload", &base.workload, &s.workload),
            ("metric", &base.metric.name, &s.metric.name),
        ] {
            if a != b && !args.force {
                bail!(
                    "result sets are not comparable: {} ran {what} `{a}`, {name} ran {what} `{b}` \
                     (pass --force to compare them anyway)",
                    names[0]
                );
            }
        }
        if s.metric.higher_is_better != base.metric.higher_is_better {
            bail!("result sets disagree on whether higher {} is better; cannot compare", base.metric.name);
        }
    }
    let sets: Vec<(String, &ResultSet)> = names.iter().cloned().zip(loaded.iter().map(|(_, s)| s)).collect();
    let cmp = Comparison::from_sets(&sets).with_mode(args.stats).with_all_counters(args.all_counters);
    if args.json || args.csv {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&cmp.tidy())?);
        } else {
            print!("{}", cmp.to_csv());
        }
        if let Some(out) = &args.out {
            results::write_report(out, &report::comparison(&sets, args.stats, args.all_counters))?;
            eprintln!("wrote {}", out.join("index.html").display());
        }
        return Ok(());
    }
    let m = &base.metric;
    println!(
        "{} in {} ({} is better); machine {}, workload {}",
        m.name,
        m.unit,
        if m.higher_is_better { "higher" } else { "lower" },
        base.machine,
        base.workload
    );
    for (n, (dir, s)) in names.iter().zip(&loaded) {
        println!("  {n}: {} ({})", s.experiment, dir.display());
    }
    println!("\n{}\n", cmp.mode.describe());
    println!("{}", cmp.render());
    println!("Events per operation\n\n{}", cmp.render_counters());
    if let Some(out) = &args.out {
        results::write_report(out, &report::comparison(&sets, args.stats, args.all_counters))?;
        println!("wrote {}", out.join("index.html").display());
    }
    Ok(())
}
