use super::*;
use crate::linux::config::KernelConfig;
use crate::profile::MachineProfile;
use crate::run::{run, RunResult, RunSpec, Workload};

fn mpc855t() -> MachineProfile {
    let p: MachineProfile = toml::from_str(crate::builtin::profile("mpc855t")).unwrap();
    p.validate().unwrap();
    p
}

fn dd(preset: &str, set: &[(&str, &str)]) -> RunResult {
    let mut k = KernelConfig::preset(preset).unwrap();
    for (key, v) in set {
        k.set(key, v).unwrap();
    }
    let spec = RunSpec {
        kernel: k,
        workload: Workload::parse("dd").unwrap(),
        tasks: 1,
        seed: 1,
        // Past the first writeback rounds of 2.4 (16 pages a bdflush round); 2.6 writes back every 976.
        warmup: Ps::MS * 150,
        measure: Ps::MS * 150,
    };
    run(&mpc855t(), &spec).unwrap()
}

fn itlb(r: &RunResult) -> f64 {
    r.per_op("itlb_miss_user") + r.per_op("itlb_miss_kernel")
}

/// Seed 003's mechanism, from the layouts and the 8xx TLB alone: 2.6 unpinned thrashes the ITLB
/// (an order of magnitude above 2.4), kernel pages evict user ones, sys time grows, and the pinned
/// 8 MB entry brings 2.6 back near 2.4; the lost pin is the unpinned case.
#[test]
fn seed_003_two_six_thrashes_the_itlb_and_the_pin_restores_it() {
    let v24 = dd("2.4-8xx", &[]);
    let v26 = dd("2.6-8xx", &[]);
    let pin = dd("2.6-8xx", &[("pin_tlb", "on")]);
    let lost = dd("2.6-8xx", &[("pin_tlb", "on"), ("lose_pinned", "on")]);
    for (n, r) in [("2.4", &v24), ("2.6", &v26), ("2.6 pin", &pin), ("2.6 pin lost", &lost)] {
        eprintln!(
            "{n}: real {:.3} s; per block itlb user {:.2} kernel {:.2} dtlb user {:.2} kernel {:.2} err {:.2}; user {:.0} sys {:.0} clocks",
            r.metric.value,
            r.per_op("itlb_miss_user"),
            r.per_op("itlb_miss_kernel"),
            r.per_op("dtlb_miss_user"),
            r.per_op("dtlb_miss_kernel"),
            r.per_op("dtlb_error"),
            r.per_op("user_clocks"),
            r.per_op("sys_clocks"),
        );
        assert!(r.operations() > 20, "{n}: {} blocks", r.operations());
        assert_eq!(r.metric.unit, "seconds");
    }
    assert!(itlb(&v26) >= 10.0 * itlb(&v24).max(0.5), "{} vs {}", itlb(&v26), itlb(&v24));
    assert!(v26.per_op("itlb_miss_user") > v24.per_op("itlb_miss_user") + 1.0);
    assert!(v26.per_op("sys_clocks") > 1.05 * v24.per_op("sys_clocks"));
    // dd's own time (the writeback threads' rounds fall unevenly into a 150 ms window: 2.6's
    // pdflush writes every 976 pages).
    let own = |r: &RunResult| r.per_op("user_clocks") + r.per_op("sys_clocks");
    assert!(own(&v26) > own(&v24));
    assert!(itlb(&pin) <= itlb(&v24) + 1.0, "{} vs {}", itlb(&pin), itlb(&v24));
    assert!(own(&pin) < own(&v26));
    assert!(itlb(&lost) >= itlb(&v26) - 1.0, "{} vs {}", itlb(&lost), itlb(&v26));
    // Deterministic.
    assert_eq!(dd("2.6-8xx", &[]), v26);
}

#[test]
fn dd_options_and_machines_are_checked() {
    assert_eq!(Workload::parse("dd").unwrap().name(), "dd");
    assert_eq!(Workload::parse("dd if=/dev/zero of=f bs=4k count=10").unwrap().name(), "dd of=f count=10");
    let e = Workload::parse("dd bs=8k").unwrap_err();
    assert!(e.contains("`bs=8k`") && e.contains("bs=4k (only)"), "{e}");
    // dd's paths are the 8xx kernel's; an x86 machine or an x86 kernel is refused.
    let x86: MachineProfile = toml::from_str(crate::builtin::profile("haswell-ep-2s")).unwrap();
    let spec = |k: &str| RunSpec::of(k, "dd", 1, Ps::ZERO, Ps::MS);
    let e = run(&x86, &spec("2.6-8xx")).unwrap_err();
    assert!(e.contains("walk.kind = \"software\"") && e.contains("haswell-ep-2s"), "{e}");
    let e = run(&mpc855t(), &spec("3.17")).unwrap_err();
    assert!(e.contains("[ppc8xx]") && e.contains("2.6-8xx"), "{e}");
    let e = KernelConfig::preset("2.6-8xx").unwrap().set("writeback", "kupdate").unwrap_err();
    assert!(e.contains("bdflush | pdflush | in-context"), "{e}");
}

/// An x86 machine whose `[fs]` has (or lacks) `fs.tmpfs_write_cycles`; without `[noise]`, so
/// that each cost is charged at its value (the noise's step factors have a mean above 1).
fn x86(tmpfs_write: Option<f64>) -> MachineProfile {
    use crate::profile::{Confidence, Sourced};
    let mut p = crate::profile::shipped("ivybridge-i3-3240");
    p.noise = None;
    let fs = p.fs.as_mut().expect("the profile has [fs]");
    fs.tmpfs_write_cycles =
        tmpfs_write.map(|value| Sourced { value, source: "test".into(), confidence: Confidence::Estimate });
    p
}

fn dd_x86(p: &MachineProfile, workload: &str, tasks: u32) -> RunResult {
    // 5 ms: thousands of blocks, so that the per-CPU lists' batch refills (one per batch of
    // blocks) fall into the window nearly in proportion.
    run(p, &RunSpec::of("6.18", workload, tasks, Ps::US * 200, Ps::MS * 5)).unwrap_or_else(|e| panic!("{e}"))
}

const APPEND: &str = "dd if=/dev/zero of=/dev/shm/f bs=4k count=65536";

/// Seconds a block, from the metric (real seconds for `count` blocks).
fn per_block(r: &RunResult) -> f64 {
    r.metric.value / 65536.0
}

#[test]
fn an_x86_block_allocates_one_unzeroed_page_and_charges_the_clear_the_copy_and_the_write() {
    let p = x86(Some(500.0));
    let r = dd_x86(&p, APPEND, 1);
    assert!(r.operations() > 500, "{} blocks", r.operations());
    assert_eq!(r.metric.unit, "seconds");
    // One write a block, each at the file's end: a new page, never cleared.
    assert!((r.per_op("tmpfs_writes") - 1.0).abs() < 0.01, "{:?}", r.counters);
    assert!((r.per_op("tmpfs_write_allocs") - 1.0).abs() < 0.01, "{:?}", r.counters);
    assert_eq!(r.counters["pages_zeroed"], 0, "{:?}", r.counters);
    // The fixed part: 1000 cycles more a write is 1000 cycles more a block.
    let mhz = p.clock_mhz() as f64;
    let slower = dd_x86(&x86(Some(1500.0)), APPEND, 1);
    let d = per_block(&slower) - per_block(&r);
    assert!((d * 1e6 * mhz / 1000.0 - 1.0).abs() < 0.05, "{} cycles", d * 1e6 * mhz);
    // The clear and the copy: 4 KiB each at the clearing rate; halving it adds both once more.
    let mut half = x86(Some(500.0));
    half.memory.clear_page_mbps.value /= 2.0;
    let d = per_block(&dd_x86(&half, APPEND, 1)) - per_block(&r);
    let both = 2.0 * 4096.0 / (p.memory.clear_page_mbps.value * 1e6);
    assert!((d / both - 1.0).abs() < 0.05, "{d} s against {both} s");
    // With a DRAM clearing rate, a new page from the buddy lists is filled from DRAM by the copy.
    let mut dram = x86(Some(500.0));
    let mbps = 5000.0;
    dram.memory.clear_dram_mbps =
        Some(crate::profile::Sourced { value: mbps, source: "test".into(), confidence: r_conf() });
    let c = dd_x86(&dram, APPEND, 1);
    let cold = c.per_op("tmpfs_write_cold_pages");
    assert!(cold > 0.5, "{:?}", c.counters);
    let d = per_block(&c) - per_block(&r);
    let more = cold * 4096.0 * (1.0 / (mbps * 1e6) - 1.0 / (p.memory.clear_page_mbps.value * 1e6));
    assert!(d > 0.9 * more, "{d} s against {more} s");
    // In a guest whose host took the free pages back, each of those pages takes the host's
    // second-level fault on the copy, its first touch; a key of 0 changes nothing.
    let mut guest = dram.clone();
    guest.memory.second_level_fault_ns =
        Some(crate::profile::Sourced { value: 0.0, source: "test".into(), confidence: r_conf() });
    assert_eq!(dd_x86(&guest, APPEND, 1).metric, c.metric);
    guest.memory.second_level_fault_ns.as_mut().unwrap().value = 1500.0;
    let g = dd_x86(&guest, APPEND, 1);
    let d = per_block(&g) - per_block(&c);
    let host = g.per_op("tmpfs_write_cold_pages") * 1500e-9;
    assert!((d / host - 1.0).abs() < 0.05, "{d} s against {host} s");
    // An overwrite finds its page: no allocation, a shorter block.
    let over = dd_x86(&p, &format!("{APPEND} conv=notrunc"), 1);
    assert_eq!(over.counters["tmpfs_write_allocs"], 0, "{:?}", over.counters);
    assert!(over.per_op("tmpfs_writes") > 0.99);
    assert!(over.metric.value < r.metric.value, "{} vs {}", over.metric.value, r.metric.value);
    // and no second-level fault: the page is the file's already.
    let mut over_guest = p.clone();
    over_guest.memory.second_level_fault_ns = guest.memory.second_level_fault_ns.clone();
    assert_eq!(dd_x86(&over_guest, &format!("{APPEND} conv=notrunc"), 1).metric, over.metric);
    // Deterministic.
    assert_eq!(dd_x86(&p, APPEND, 1), r);
}

#[test]
fn the_measured_new_tmpfs_page_replaces_the_anonymous_estimate_on_appends_only() {
    let p = x86(Some(500.0));
    let with = |cycles: f64| {
        let mut q = p.clone();
        q.fs.as_mut().unwrap().shmem_alloc_and_add_folio_cycles =
            Some(crate::profile::Sourced { value: cycles, source: "test".into(), confidence: r_conf() });
        q
    };
    let base = p.kernel.page_alloc_cycles.value;
    let r = dd_x86(&p, APPEND, 1);
    // The key at kernel.page_alloc_cycles' value is the same charge.
    assert_eq!(dd_x86(&with(base), APPEND, 1).metric, r.metric);
    // 1000 cycles above it: 1000 cycles more a new page, one a block.
    let m = dd_x86(&with(base + 1000.0), APPEND, 1);
    let mhz = p.clock_mhz() as f64;
    let d = (per_block(&m) - per_block(&r)) * 1e6 * mhz / 1000.0 / m.per_op("tmpfs_write_allocs");
    assert!((d - 1.0).abs() < 0.05, "{d} x 1000 cycles a new page");
    // An overwrite allocates nothing: the key does not touch it.
    let over = format!("{APPEND} conv=notrunc");
    assert_eq!(dd_x86(&with(base + 1000.0), &over, 1).metric, dd_x86(&p, &over, 1).metric);
}

#[test]
fn x86_dd_processes_each_append_to_their_own_file() {
    let p = x86(Some(500.0));
    let r = dd_x86(&p, APPEND, 2);
    assert_eq!(r.iterations.len(), 2);
    assert!(r.iterations.iter().all(|&n| n > 300), "{:?}", r.iterations);
    // A shared file would have the second writer find the first one's pages.
    assert!((r.per_op("tmpfs_write_allocs") - 1.0).abs() < 0.01, "{:?}", r.counters);
    // The metric is one process's real time: two processes on two cores take about one's.
    let one = dd_x86(&p, APPEND, 1);
    assert!(
        (r.metric.value / one.metric.value - 1.0).abs() < 0.2,
        "{} vs {}",
        r.metric.value,
        one.metric.value
    );
    // A file of 8 pages is written over from its start once full: no allocation after.
    let short = dd_x86(&p, "dd count=8", 1);
    assert_eq!(short.counters["tmpfs_write_allocs"], 0, "{:?}", short.counters);
}

#[test]
fn x86_dd_without_the_write_cost_says_which_key_and_the_mpc8xx_runs_one_appending_process() {
    let e = run(&x86(None), &RunSpec::of("6.18", APPEND, 1, Ps::ZERO, Ps::MS)).unwrap_err();
    assert!(e.contains("fs.tmpfs_write_cycles") && e.contains("ivybridge-i3-3240"), "{e}");
    let spec = |w: &str, t| RunSpec::of("2.6-8xx", w, t, Ps::ZERO, Ps::MS);
    let e = run(&mpc855t(), &spec("dd", 2)).unwrap_err();
    assert!(e.contains("allowed 1 ..= 1"), "{e}");
    let e = run(&mpc855t(), &spec("dd conv=notrunc", 1)).unwrap_err();
    assert!(e.contains("conv=notrunc"), "{e}");
    assert_eq!(Workload::parse("dd conv=notrunc count=5").unwrap().name(), "dd count=5 conv=notrunc");
}

fn r_conf() -> crate::profile::Confidence {
    crate::profile::Confidence::Estimate
}
