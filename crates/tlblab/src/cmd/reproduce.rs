//! `tlblab reproduce [NAME] [--out DIR] [--quick] [--jobs N]`: the main job. Runs a seed
//! experiment, or with no name every experiment of `experiments/`, and prints each table in its
//! seed's layout. With `--out`, every cell's runs go to `DIR/<experiment>/cells/` as they finish
//! (a rerun reuses the finished ones), then `summary.json`, `claims.json` and the HTML report
//! beside them. After the tables, the verdict on every seed claim (`[[claim]]`), one line each.

use anyhow::Result;
use std::path::{Path, PathBuf};
use tlblab_report::claims::{self, Verdict};
use tlblab_report::report;
use tlblab_report::summary::ResultSet;

use crate::experiment;
use crate::results::{self, Finished, RunOptions};
use crate::store;

#[derive(Debug, clap::Args)]
pub struct ReproduceArgs {
    /// An experiment (name or prefix, e.g. seed-002) or a TOML file; all of them if omitted.
    pub name: Option<String>,
    /// Write DIR/EXPERIMENT/: summary.json, cells/ (every run), index.html and plots/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fewer iterations and a shorter measured interval.
    #[arg(long)]
    pub quick: bool,
    /// Host threads to run simulations on (default: one per core). The output is the same for
    /// any number.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=results::MAX_JOBS))]
    pub jobs: Option<usize>,
    /// Run only shard I of N (cells numbered across the experiments, I-1 modulo N) into --out;
    /// N such jobs may share one --out directory. A final run without --shard reuses every
    /// cell and writes the summaries and reports.
    #[arg(long, value_name = "I/N", value_parser = results::Shard::parse, requires = "out")]
    pub shard: Option<results::Shard>,
}

pub fn run(args: ReproduceArgs) -> Result<()> {
    if let Some(out) = &args.out {
        store::check_out_dir(out, "--out")?;
    }
    let experiments = match &args.name {
        Some(n) => experiment::load(n)?,
        None => {
            let mut all = Vec::new();
            for n in experiment::builtin_names() {
                all.extend(experiment::load(n)?);
            }
            all
        }
    };
    // Every directory first: a bad name is refused before any cell runs.
    let dirs = experiments
        .iter()
        .map(|e| args.out.as_ref().map(|o| store::child(o, &e.name)).transpose())
        .collect::<Result<Vec<_>>>()?;
    println!(
        "Reproducing {} experiment(s): {}{}\n",
        experiments.len(),
        experiments.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", "),
        if args.quick { " (quick)" } else { "" }
    );
    let mut first_cell = 0;
    let mut verdicts = Vec::new();
    for (e, dir) in experiments.iter().zip(dirs) {
        let opts = RunOptions {
            jobs: args.jobs,
            store: dir.clone(),
            progress_label: e.name.clone(),
            shard: args.shard,
            first_cell,
            progress: None,
        };
        first_cell += experiment::cell_count(e);
        let set = match experiment::run(e, args.quick, &opts)? {
            Finished::All(set) => set,
            Finished::Shard(r) => {
                let s = args.shard.expect("a shard");
                println!(
                    "{}: shard {}/{}: {} cell(s) run, {} reused, {} left to other shards; run without \
                     --shard to write the summary and report\n",
                    dir.as_ref().expect("--shard requires --out").display(),
                    s.index,
                    s.count,
                    r.ran,
                    r.reused,
                    r.skipped
                );
                continue;
            }
        };
        let summary = experiment::summary(e, &set);
        let quick = experiment::quick_note(e, &set);
        println!("{}", experiment::render(e, &summary, quick.is_some()));
        if let Some(note) = quick {
            println!("{note}\n");
        }
        verdicts.extend(experiment::verdicts(e, &summary));
        if let Some(dir) = &dir {
            save(e, &set, dir)?;
            println!(
                "wrote {} and {}\n",
                dir.join("summary.json").display(),
                dir.join("index.html").display()
            );
        }
    }
    if !verdicts.is_empty() {
        print!("{}", claims::summary_text(&verdicts));
    }
    Ok(())
}

/// Writes an experiment's summary.json and report into `dir` (its cells are there already).
pub fn save(e: &experiment::Experiment, set: &ResultSet, dir: &Path) -> Result<()> {
    let mut summary = experiment::summary(e, set);
    if let Some(r) = &e.reference {
        summary.reference = r.points(&summary);
    }
    let quick = experiment::quick_note(e, set);
    let mut table = experiment::render(e, &summary, quick.is_some());
    if let Some(note) = &quick {
        table = format!("{note}\n\n{table}");
    }
    results::write_summary(dir, set, &summary)?;
    write_claims(dir, &experiment::verdicts(e, &summary))?;
    let mut page = report::experiment(set, &e.title, &table, &summary.reference);
    if let Some(note) = quick {
        // A quick page says so in its title and first.
        page.page.title += " (quick run)";
        page.page.sections.insert(
            0,
            tlblab_report::html::Section {
                heading: "Quick run".into(),
                blocks: vec![tlblab_report::html::Block::Paragraph(note)],
            },
        );
    }
    results::write_report(dir, &page)
}

/// `claims.json`: the experiment's verdicts in the file's order, each object's keys sorted.
fn write_claims(dir: &Path, verdicts: &[Verdict]) -> Result<()> {
    let value = serde_json::to_value(verdicts)?;
    crate::store::write_atomic(&dir.join("claims.json"), serde_json::to_string_pretty(&value)?.as_bytes())
}
