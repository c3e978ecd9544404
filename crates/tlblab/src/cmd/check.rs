//! `tlblab check`: exhaustive model checking of the shootdown protocol (tlblab_model::check), of
//! the page allocator with the flush-then-free order (tlblab_model::check::page_alloc) and of
//! reclaim's unmap flush (tlblab_model::check::reclaim) and, for kernels with it, of v6.15's
//! broadcast flushing (tlblab_model::check::broadcast) and, for arm64 kernels, of the TLBI/DSB
//! protocol in reclaim (tlblab_model::check::tlbi), for kernel presets, or for every combination
//! of the flush-protocol and reclaim knobs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use anyhow::Result;
use tlblab_model::check::broadcast::{
    BroadcastChecker, BroadcastScenario, BroadcastVariant, BC_PAGES, BROADCAST_SCENARIOS,
};
use tlblab_model::check::page_alloc::{
    AllocChecker, AllocScenario, AllocVariant, ALLOC_SCENARIOS, ZONE_PAGES,
};
use tlblab_model::check::reclaim::{
    reclaim_knob_variants, ReclaimChecker, ReclaimScenario, ReclaimVariant, RECLAIM_SCENARIOS,
};
use tlblab_model::check::tlbi::{TlbiChecker, TlbiScenario, TlbiVariant, TLBI_PAGES, TLBI_SCENARIOS};
use tlblab_model::check::{
    kernel_handler, knob_variants, Checker, Report, Scenario, Variant, NR_CPUS, SCENARIOS,
};
use tlblab_model::linux::preset::presets;

use crate::spec::kernel_config;

/// Every variant is listed with its state count; a counterexample is printed as the steps that
/// reach it. Part 1 explores the shootdown protocol (3 CPUs, up to 3 concurrent zaps, context
/// switches, lazy mode) on `linux/arch/x86/mm/tlb.rs`'s own decision functions; part 2 the page
/// allocator of each kernel's era (`linux/mm/page_alloc.rs`: per-CPU list add/take, refill, drain,
/// buddy split/merge) on a 1024-page zone, 2-3 CPUs allocating and freeing orders 0-3, and a
/// page unmapped and freed while other CPUs may cache it (the `free_before_flush` knob must fail
/// there); part 3 reclaim (`linux/mm/rmap.rs`, `linux/mm/vmscan.rs`): a reclaimer unmapping and
/// freeing file pages of an mm, per page or batched, while 2 CPUs use them; part 4, for kernels
/// with `invlpgb` on, broadcast flushing (`linux/arch/x86/mm/tlb/broadcast.rs`): zaps of a
/// global-ASID mm by INVLPGB and TLBSYNC, each CPU's invalidation completing at its own moment,
/// and the transition of CPUs still on a per-CPU ASID; part 5, for arm64 kernels, the TLBI/DSB
/// protocol in reclaim (`linux/arch/arm64/include/asm/tlbflush.rs`): kswapd unmapping pages per
/// page or batched while other CPUs cache them and one munmaps them, each CPU's copy of a TLBI
/// completing at its own moment, a DSB waiting only for its own CPU's TLBIs. Exit 1 if any
/// variant is unsafe or incomplete.
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
    /// concurrent_local, PCIDs and remote_drain (max-gen with generations), and of unmap_flush
    /// and swap_cluster_max (1, 2, 32) for reclaim, on top of each kernel.
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
    let mut alloc_variants = Vec::new();
    let mut reclaim_variants = Vec::new();
    let mut broadcast_variants = Vec::new();
    let mut tlbi_variants = Vec::new();
    for name in &names {
        let k = kernel_config(name, &args.set)?;
        alloc_variants.push(AllocVariant::of(&k));
        tlbi_variants.extend(TlbiVariant::of(&k));
        if k.flush.invlpgb {
            broadcast_variants.push(BroadcastVariant::of(&k));
        }
        if args.all_knobs {
            variants.extend(knob_variants(&k));
            reclaim_variants.extend(reclaim_knob_variants(&k));
        } else {
            variants.push(Variant::of(&k, false));
            reclaim_variants.push(ReclaimVariant::of(&k, false));
            if k.flush.generations {
                variants.push(Variant::of(&k, true));
                reclaim_variants.push(ReclaimVariant::of(&k, true));
            }
        }
    }
    // Every exploration, then each distinct one run once (in parallel): the variants of
    // several presets often have equal knobs, and only the name tells them apart.
    let mut jobs: Vec<Job> = Vec::new();
    for v in &variants {
        jobs.extend(SCENARIOS.iter().map(|sc| Job::Shootdown(v, sc)));
    }
    for v in &alloc_variants {
        jobs.extend(ALLOC_SCENARIOS.iter().map(|sc| Job::Alloc(v, sc)));
    }
    for v in &reclaim_variants {
        jobs.extend(RECLAIM_SCENARIOS.iter().map(|sc| Job::Reclaim(v, sc)));
    }
    for v in &broadcast_variants {
        jobs.extend(BROADCAST_SCENARIOS.iter().map(|sc| Job::Broadcast(v, sc)));
    }
    for v in &tlbi_variants {
        jobs.extend(TLBI_SCENARIOS.iter().map(|sc| Job::Tlbi(v, sc)));
    }
    let t0 = Instant::now();
    let reports = explore_all(&jobs, t0);
    let mut next = reports.into_iter();
    println!("Exhaustive check of the shootdown protocol on {NR_CPUS} CPUs, scenarios:");
    for sc in &SCENARIOS {
        let zaps = zap_list(sc.zaps.iter().map(|z| (z.cpu, z.first, z.pages)));
        println!("  {}: zaps {zaps}; {} context switch(es) anywhere", sc.name, sc.switches);
    }
    println!("Property: a CPU running the mm cannot translate a page whose frame was freed, or whose unmap's flush has returned.\n");
    let mut failed = 0;
    let (mut states, mut transitions) = (0u64, 0u64);
    let mut print = |r: &Report, scenario: &str| {
        states += r.states;
        transitions += r.transitions;
        let line =
            format!("{:>9} states {:>10} transitions  {} [{scenario}]", r.states, r.transitions, r.variant);
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
    };
    for _ in &variants {
        for sc in &SCENARIOS {
            print(&next.next().expect("a report per job"), sc.name);
        }
    }
    println!("\nExhaustive check of the page allocator on a {ZONE_PAGES}-page zone (per-CPU lists with batch 2, high 3), scenarios:");
    for sc in &ALLOC_SCENARIOS {
        let what = if sc.unmap {
            "cpu0 maps a page, the others may cache it, cpu0 unmaps and frees it in the gather's order; "
        } else {
            ""
        };
        println!(
            "  {}: {}{} CPUs, {} alloc/free/drain calls each of orders {:?}, up to {} blocks held",
            sc.name, what, sc.cpus, sc.calls, sc.orders, sc.max_held
        );
    }
    println!("Properties: no block handed out twice; buddy lists, per-CPU lists and held blocks cover the zone once; free buddies merged, never a busy one; counts match the lists; no page freed while a TLB may translate to it.\n");
    for _ in &alloc_variants {
        for sc in &ALLOC_SCENARIOS {
            print(&next.next().expect("a report per job"), sc.name);
        }
    }
    println!("\nExhaustive check of reclaim's unmap flush on {NR_CPUS} CPUs (cpu0 reclaims file pages of mm 0 in batches of swap_cluster_max; the others run mm 0, fill their TLBs, refault, switch), scenarios:");
    for sc in &RECLAIM_SCENARIOS {
        println!(
            "  {}: {} reclaims {} pages; {} context switch(es) anywhere",
            sc.name,
            if sc.direct { "a thread of mm 0 (direct reclaim)" } else { "kswapd (lazy on mm 0)" },
            sc.pages,
            sc.switches
        );
    }
    println!("Properties: no frame is freed while a PTE maps it; a CPU running the mm cannot translate a page to a frame reclaim freed.\n");
    for _ in &reclaim_variants {
        for sc in &RECLAIM_SCENARIOS {
            print(&next.next().expect("a report per job"), sc.name);
        }
    }
    if !broadcast_variants.is_empty() {
        println!("\nExhaustive check of broadcast flushing (INVLPGB, TLBSYNC, global ASIDs) on {NR_CPUS} CPUs, mm 0 ({BC_PAGES} pages) with a global ASID; each CPU's copy of an INVLPGB completes at its own moment, scenarios:");
        for sc in &BROADCAST_SCENARIOS {
            let zaps = zap_list(sc.zaps.iter().map(|z| (z.cpu, z.first, z.pages)));
            let start = if sc.transition {
                "; cpu1 still runs mm 0 on a per-CPU ASID, cpu2 is lazy on it"
            } else {
                ""
            };
            println!("  {}: zaps {zaps}{start}; {} context switch(es) anywhere", sc.name, sc.switches);
        }
        println!("Property: a CPU running the mm cannot translate a page whose frame was freed, or whose unmap has returned.\n");
        for _ in &broadcast_variants {
            for sc in &BROADCAST_SCENARIOS {
                print(&next.next().expect("a report per job"), sc.name);
            }
        }
    }
    if !tlbi_variants.is_empty() {
        println!("\nExhaustive check of arm64's TLBI/DSB protocol in reclaim on {NR_CPUS} CPUs: kswapd on cpu0 unmaps and frees {TLBI_PAGES} pages of mm 0 (a DSB per page, or one per batch with batched_unmap) while cpu1 and cpu2 run mm 0; each CPU's copy of a TLBI completes at its own moment and a DSB waits only for its own CPU's TLBIs, scenarios:");
        for sc in &TLBI_SCENARIOS {
            println!("  {}", sc.name);
        }
        println!("Property: a CPU running the mm cannot translate a page whose frame was freed, or that a returned munmap covered.\n");
        for _ in &tlbi_variants {
            for sc in &TLBI_SCENARIOS {
                print(&next.next().expect("a report per job"), sc.name);
            }
        }
    }
    println!(
        "\n{} variant(s) x {} scenarios + {} allocator variant(s) x {} scenarios + {} reclaim variant(s) x {} scenarios + {} broadcast variant(s) x {} scenarios + {} arm64 TLBI variant(s) x {} scenarios, {states} states, {transitions} transitions in {:.1} s; {failed} unsafe",
        variants.len(),
        SCENARIOS.len(),
        alloc_variants.len(),
        ALLOC_SCENARIOS.len(),
        reclaim_variants.len(),
        RECLAIM_SCENARIOS.len(),
        broadcast_variants.len(),
        BROADCAST_SCENARIOS.len(),
        tlbi_variants.len(),
        TLBI_SCENARIOS.len(),
        t0.elapsed().as_secs_f64()
    );
    if failed > 0 {
        // Not a usage error (exit 2): the protocol itself failed.
        eprintln!("tlblab: {failed} check(s) unsafe or incomplete (above)");
        std::process::exit(1);
    }
    Ok(())
}

/// One exploration: a variant in a scenario.
#[derive(Clone, Copy)]
enum Job<'a> {
    Shootdown(&'a Variant, &'a Scenario),
    Alloc(&'a AllocVariant, &'a AllocScenario),
    Reclaim(&'a ReclaimVariant, &'a ReclaimScenario),
    Broadcast(&'a BroadcastVariant, &'a BroadcastScenario),
    Tlbi(&'a TlbiVariant, &'a TlbiScenario),
}

impl Job<'_> {
    /// What decides the exploration: everything but the variant's name (the report's label).
    fn key(&self) -> String {
        match *self {
            Job::Shootdown(v, sc) => {
                format!("{:?} {}", Variant { name: String::new(), ..v.clone() }, sc.name)
            }
            Job::Alloc(v, sc) => {
                format!("{:?} {}", AllocVariant { name: String::new(), ..v.clone() }, sc.name)
            }
            Job::Reclaim(v, sc) => {
                format!("{:?} {}", ReclaimVariant { name: String::new(), ..v.clone() }, sc.name)
            }
            Job::Broadcast(v, sc) => {
                format!("{:?} {}", BroadcastVariant { name: String::new(), ..v.clone() }, sc.name)
            }
            Job::Tlbi(v, sc) => {
                format!("{:?} {}", TlbiVariant { name: String::new(), ..v.clone() }, sc.name)
            }
        }
    }

    fn name(&self) -> &str {
        match self {
            Job::Shootdown(v, _) => &v.name,
            Job::Alloc(v, _) => &v.name,
            Job::Reclaim(v, _) => &v.name,
            Job::Broadcast(v, _) => &v.name,
            Job::Tlbi(v, _) => &v.name,
        }
    }

    fn run(&self) -> Report {
        match *self {
            Job::Shootdown(v, sc) => Checker::new(v, sc, kernel_handler).run(),
            Job::Alloc(v, sc) => AllocChecker::new(v, sc).run(),
            Job::Reclaim(v, sc) => ReclaimChecker::new(v, sc).run(),
            Job::Broadcast(v, sc) => BroadcastChecker::new(v, sc).run(),
            Job::Tlbi(v, sc) => TlbiChecker::new(v, sc).run(),
        }
    }
}

/// Every job's report, in job order: each distinct exploration runs once, on every core, with
/// progress and an estimate of the time left on standard error (every 10 s, and at the end of
/// a run that took that long).
fn explore_all(jobs: &[Job], t0: Instant) -> Vec<Report> {
    let mut first: HashMap<String, usize> = HashMap::new();
    let mut distinct = Vec::new();
    let index: Vec<usize> = jobs
        .iter()
        .map(|j| {
            *first.entry(j.key()).or_insert_with(|| {
                distinct.push(*j);
                distinct.len() - 1
            })
        })
        .collect();
    eprintln!(
        "check: {} explorations ({} distinct) on {} threads",
        jobs.len(),
        distinct.len(),
        rayon::current_num_threads()
    );
    let done = AtomicUsize::new(0);
    let last = std::sync::Mutex::new(t0);
    let reports: Vec<Report> = distinct
        .par_iter()
        .map(|j| {
            let r = j.run();
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            let mut at = last.lock().unwrap();
            if at.elapsed() >= Duration::from_secs(10) {
                *at = Instant::now();
                let spent = t0.elapsed().as_secs_f64();
                let left = spent / n as f64 * (distinct.len() - n) as f64;
                eprintln!(
                    "check: {n}/{} explored, {spent:.0} s elapsed, about {left:.0} s left",
                    distinct.len()
                );
            }
            r
        })
        .collect();
    jobs.iter()
        .zip(index)
        .map(|(j, i)| Report { variant: j.name().to_string(), ..reports[i].clone() })
        .collect()
}

/// A scenario's zaps as the header lists them: `cpu0 pages 0..2, cpu1 pages 1..2`.
fn zap_list(zaps: impl Iterator<Item = (u32, u64, u64)>) -> String {
    zaps.map(|(cpu, first, pages)| format!("cpu{cpu} pages {first}..{}", first + pages))
        .collect::<Vec<_>>()
        .join(", ")
}
