//! `tlblab reach`: the simulated TLB-reach pointer chase on every built-in machine (the twin of
//! the probe's pointer-chase measurement).

use anyhow::Result;
use tlblab_model::hw::tlb::PageSize;
use tlblab_model::workload::pointer_chase;
use tlblab_report::table::Table;

use crate::machines;

const PAGES: [u64; 12] = [16, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 4096];

#[derive(Debug, clap::Args)]
pub struct ReachArgs {
    /// Fewer laps per point.
    #[arg(long)]
    pub quick: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn run(args: ReachArgs) -> Result<()> {
    let laps = if args.quick { 2 } else { 8 };
    let names = machines::builtin_names();
    println!(
        "The TLB-reach pointer chase (one line per 4K page, random cyclic order, {laps} laps after a warm-up lap,\nseed {}) through one hardware thread's data-side TLB hierarchy of every built-in machine.\n",
        args.seed
    );
    let mut walks =
        Table::new(std::iter::once("pages".to_string()).chain(names.iter().map(|s| s.to_string())));
    let mut cycles = walks.clone();
    for &pages in &PAGES {
        let mut w = vec![pages.to_string()];
        let mut c = vec![pages.to_string()];
        for name in &names {
            let p = machines::load(name)?;
            let pt = pointer_chase::chase(&p, pages, PageSize::Size4K, laps, args.seed);
            w.push(format!("{:.3}", pt.walks_per_access));
            c.push(format!("{:.1}", pt.translation_cycles));
        }
        walks.row(w);
        cycles.row(c);
    }
    println!("Page walks per access:\n{}", walks.render());
    println!("Translation cycles per access (second-level lookups at their latency, walks at the profile's walk cost):\n{}", cycles.render());
    Ok(())
}
