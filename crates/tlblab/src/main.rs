//! The `tlblab` command. Thin glue: parse arguments, hand off to a subcommand, report errors.

use tlblab::cmd;

use clap::{Parser, Subcommand};

/// tlblab: a deterministic laboratory for the Linux memory-management fast paths (TLB flushing,
/// shootdowns, per-CPU page allocation) on simulated many-core machines.
#[derive(Debug, Parser)]
// Without a subcommand clap reports the missing subcommand (and lists them), not the help text.
#[command(name = "tlblab", version, about, arg_required_else_help = false)]
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
    /// Sweep the knobs that matter for a workload; advise the best setting, if any beats the default.
    Advise(cmd::advise::AdviseArgs),
    /// The TLB-reach pointer chase through every built-in machine's TLB hierarchy.
    Reach(cmd::reach::ReachArgs),
    /// Measure this host: TLB geometry, TLB-miss and shootdown costs; write a host profile.
    Probe(cmd::probe::ProbeArgs),
    /// Run a native workload (will-it-scale tlb_flush*/page_fault1, ebizzy -m) on this host.
    Native(cmd::native::NativeArgs),
    /// Native workloads beside their simulation on the host profile, with the error.
    Validate(cmd::validate::ValidateArgs),
    /// Explore every interleaving of the shootdown protocol for kernel presets (model checking).
    Check(cmd::check::CheckArgs),
    /// Compare saved result sets (reproduce --out directories) as mmtests compare-kernels does.
    Compare(cmd::compare::CompareArgs),
    /// Write a saved result set as an mmtests work/log tree or a tidy runs.csv.
    Export(cmd::export::ExportArgs),
    /// MPC8xx: move a workload's hot kernel functions together; simulate before and after.
    Layout(cmd::layout::LayoutArgs),
}

fn main() {
    tlblab_native::sys::default_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version print as clap renders them.
        Err(e) if !e.use_stderr() => e.exit(),
        // A usage error: what was wrong and what is allowed (the lines before the usage
        // excerpt, joined: a missing argument is named on the second), on one line.
        Err(e) => {
            let text = e.to_string();
            let what: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty())
                .collect();
            eprintln!("tlblab: {}", what.join(" "));
            std::process::exit(2);
        }
    };
    let result = match cli.command {
        Command::Trace(a) => cmd::trace::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::List => cmd::list::run(),
        Command::Reproduce(a) => cmd::reproduce::run(a),
        Command::Reach(a) => cmd::reach::run(a),
        Command::Probe(a) => cmd::probe::run(a),
        Command::Native(a) => cmd::native::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Advise(a) => cmd::advise::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Layout(a) => cmd::layout::run(a),
    };
    if let Err(e) = result {
        // One line naming the flag, file or key and what is allowed; exit code 2, as clap's own
        // usage errors (every error tlblab reports is about what it was given).
        eprintln!("tlblab: error: {e:#}");
        std::process::exit(2);
    }
}
