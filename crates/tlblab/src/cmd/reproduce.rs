//! `tlblab reproduce [NAME] [--out DIR] [--quick] [--jobs N]`: the main job. Runs a seed
//! experiment, or with no name every experiment of `experiments/`, and prints each table in its
//! seed's layout. With `--out`, every cell's runs go to `DIR/<experiment>/cells/` as they finish
//! (a rerun reuses the finished ones), then `summary.json` and the HTML report beside them.

use anyhow::Result;
use std::path::PathBuf;
use tlblab_report::report;

use crate::experiment;
use crate::results::{self, RunOptions};
use crate::store;

#[derive(Debug, clap::Args)]
pub struct ReproduceArgs {
    /// An experiment (name or prefix, e.g. seed-002) or a TOML file; all of them if omitted.
    pub name: Option<String>,
    /// Write DIR/<experiment>/: summary.json, cells/ (every run), index.html and plots/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fewer iterations and a shorter measured interval.
    #[arg(long)]
    pub quick: bool,
    /// Host threads to run simulations on (default: one per core). The output is the same for
    /// any number.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
}

pub fn run(args: ReproduceArgs) -> Result<()> {
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
    println!(
        "Reproducing {} experiment(s): {}{}\n",
        experiments.len(),
        experiments.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", "),
        if args.quick { " (quick)" } else { "" }
    );
    for e in &experiments {
        let dir = args.out.as_ref().map(|o| o.join(&e.name));
        let opts = RunOptions { jobs: args.jobs, store: dir.clone(), progress_label: e.name.clone() };
        let set = experiment::run(e, args.quick, &opts)?;
        let summary = set.summary();
        let table = experiment::render(e, &summary);
        println!("{table}");
        if let Some(dir) = &dir {
            store::write_atomic(
                &dir.join("summary.json"),
                serde_json::to_string_pretty(&summary)?.as_bytes(),
            )?;
            results::write_report(dir, &report::experiment(&set, &e.title, &table))?;
            println!(
                "wrote {} and {}\n",
                dir.join("summary.json").display(),
                dir.join("index.html").display()
            );
        }
    }
    Ok(())
}
