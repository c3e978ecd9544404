//! `tlblab export --format mmtests|csv DIR [OUT]`: a saved result set in another tool's format.
//! `mmtests` writes mmtests' `work/log` tree into OUT (see `export::mmtests`; the printed hint
//! is the command that prints its table, `export::mmtests::hint`); `csv` writes the tidy
//! `runs.csv`, one row per run (see `export::tidy`), into OUT (default: the set's own directory).

use anyhow::{bail, Result};
use std::path::PathBuf;

use crate::export;
use crate::results;
use crate::store::write_atomic;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// mmtests' work/log tree, for its compare-kernels.sh.
    Mmtests,
    /// runs.csv: one row per run, a column per varied knob, the metric, counters, attribution.
    Csv,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(long, value_enum)]
    pub format: Format,
    /// A result set: an experiment directory (`reproduce --out`) or a `sweep --out` directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Where to write: the mmtests work/log directory (required), or the directory of runs.csv
    /// (default: DIR).
    #[arg(value_name = "OUT")]
    pub out: Option<PathBuf>,
}

pub fn run(a: ExportArgs) -> Result<()> {
    let (dir, set) = results::load_set(&a.dir)?;
    match a.format {
        Format::Csv => {
            let path = a.out.unwrap_or(dir).join("runs.csv");
            write_atomic(&path, export::tidy::csv(&export::tidy::table(&set)).as_bytes())?;
            println!("wrote {}", path.display());
        }
        Format::Mmtests => {
            let Some(out) = a.out else {
                bail!("--format mmtests: give OUT, the mmtests work/log directory to write the runs into");
            };
            crate::store::check_out_dir(&out, "OUT")?;
            let bench = export::mmtests::Bench::of(&set.workload)?;
            let runs = export::mmtests::write(&set, &out)?;
            println!(
                "wrote mmtests runs {} (benchmark {}, layout of mmtests {}) into {}; with MMTESTS an \
                 mmtests tree, its table:\n  {}",
                runs.join(" "),
                bench.name(),
                export::mmtests::MMTESTS_COMMIT,
                out.display(),
                export::mmtests::hint(&bench, &out, &runs)
            );
        }
    }
    Ok(())
}
