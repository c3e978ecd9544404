//! The `tlblab` command. Thin glue: parse arguments, hand off to a subcommand, report errors.

mod cmd;
mod experiment;
mod machines;
mod trace;

use clap::{Parser, Subcommand};

/// tlblab: a deterministic laboratory for the Linux memory-management fast paths (TLB flushing,
/// shootdowns, per-CPU page allocation) on simulated many-core machines.
#[derive(Debug, Parser)]
#[command(name = "tlblab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drive an address trace through one CPU's TLB hierarchy and count hits and misses.
    Trace(cmd::trace::TraceArgs),
    /// One simulated run of a workload on a machine and kernel.
    Run(cmd::run::RunArgs),
    /// List the built-in machines and what else this build knows.
    List,
    /// Run the seed reproductions (all of experiments/, or one by name).
    Reproduce(cmd::reproduce::ReproduceArgs),
    /// Run the cross product of thread counts and knob values; name the best value.
    Sweep(cmd::sweep::SweepArgs),
    /// The TLB-reach pointer chase through every built-in machine's TLB hierarchy.
    Reach(cmd::reach::ReachArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Trace(a) => cmd::trace::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::List => cmd::list::run(),
        Command::Reproduce(a) => cmd::reproduce::run(a),
        Command::Reach(a) => cmd::reach::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
    };
    if let Err(e) = result {
        eprintln!("tlblab: error: {e:#}");
        std::process::exit(1);
    }
}
