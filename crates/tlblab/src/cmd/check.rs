//! `tlblab check`: exhaustive model checking of the shootdown protocol (tlblab_model::check) for
//! kernel presets, or for every combination of the flush-protocol knobs.

use std::time::Instant;

use anyhow::Result;
use tlblab_model::check::{kernel_handler, knob_variants, Checker, Variant, NR_CPUS, SCENARIOS};
use tlblab_model::kernel::preset::presets;

use super::run::kernel_config;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Kernel presets or preset files to check (default: every built-in preset). Each is checked
    /// on a machine without and with PCIDs.
    #[arg(long = "kernel")]
    pub kernels: Vec<String>,
    /// Knob overrides (KNOB=VALUE) applied to every kernel checked.
    #[arg(long)]
    pub set: Vec<String>,
    /// Also check every combination of generations, early_return, read_tlb_gen, lazy_ipis,
    /// concurrent_local and PCIDs, on top of each kernel.
    #[arg(long)]
    pub all_knobs: bool,
}

pub fn run(args: CheckArgs) -> Result<()> {
    let names: Vec<String> = if args.kernels.is_empty() {
        presets().map(|(n, _)| n.to_string()).collect()
    } else {
        args.kernels.clone()
    };
    let mut variants = Vec::new();
    for name in &names {
        let k = kernel_config(name, &args.set)?;
        if args.all_knobs {
            variants.extend(knob_variants(&k));
        } else {
            variants.push(Variant::of(&k, false));
            if k.flush.generations {
                variants.push(Variant::of(&k, true));
            }
        }
    }
    println!("Exhaustive check of the shootdown protocol on {NR_CPUS} CPUs, scenarios:");
    for sc in &SCENARIOS {
        let zaps: Vec<String> = sc
            .zaps
            .iter()
            .map(|z| format!("cpu{} pages {}..{}", z.cpu, z.first, z.first + z.pages))
            .collect();
        println!("  {}: zaps {}; {} context switch(es) anywhere", sc.name, zaps.join(", "), sc.switches);
    }
    println!("Property: a CPU running the mm cannot translate a page whose frame was freed, or whose unmap's flush has returned.\n");
    let t0 = Instant::now();
    let mut failed = 0;
    let (mut states, mut transitions) = (0u64, 0u64);
    for v in &variants {
        for sc in &SCENARIOS {
            let r = Checker::new(v, sc, kernel_handler).run();
            states += r.states;
            transitions += r.transitions;
            let line = format!(
                "{:>9} states {:>10} transitions  {} [{}]",
                r.states, r.transitions, r.variant, sc.name
            );
            match &r.counterexample {
                None if r.complete => println!("ok      {line}"),
                None => {
                    failed += 1;
                    println!("INCOMPLETE (state bound reached) {line}");
                }
                Some(cx) => {
                    failed += 1;
                    println!("UNSAFE  {line}");
                    println!("  {}; counterexample:", cx.property);
                    for (i, step) in cx.trace.iter().enumerate() {
                        println!("  {:>3}. {step}", i + 1);
                    }
                }
            }
        }
    }
    println!(
        "\n{} variant(s) x {} scenarios, {states} states, {transitions} transitions in {:.1} s; {failed} unsafe",
        variants.len(),
        SCENARIOS.len(),
        t0.elapsed().as_secs_f64()
    );
    if failed > 0 {
        // Not a usage error (exit 2): the protocol itself failed.
        eprintln!("tlblab: {failed} check(s) unsafe or incomplete (above)");
        std::process::exit(1);
    }
    Ok(())
}
