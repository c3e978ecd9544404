//! `tlblab reproduce [NAME] [--out DIR] [--quick]`: the main job. Runs a seed experiment, or
//! with no name every experiment of `experiments/`, and prints each table in its seed's layout.

use anyhow::Result;
use std::path::PathBuf;

use crate::experiment;

#[derive(Debug, clap::Args)]
pub struct ReproduceArgs {
    /// An experiment (name or prefix, e.g. seed-002) or a TOML file; all of them if omitted.
    pub name: Option<String>,
    /// Write DIR/<experiment>/summary.json (and every run's result) there.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fewer iterations and a shorter measured interval.
    #[arg(long)]
    pub quick: bool,
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
        let (summary, results) = experiment::run(e, args.quick)?;
        print!("{}\n", experiment::render(e, &summary));
        if let Some(out) = &args.out {
            let dir = out.join(&e.name);
            experiment::write_atomic(
                &dir.join("summary.json"),
                serde_json::to_string_pretty(&summary)?.as_bytes(),
            )?;
            let runs: Vec<_> = results.iter().collect();
            experiment::write_atomic(&dir.join("runs.json"), serde_json::to_string(&runs)?.as_bytes())?;
            println!("wrote {}\n", dir.join("summary.json").display());
        }
    }
    Ok(())
}
