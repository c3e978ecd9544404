//! End-to-end: seed 003 on the MPC855T (`reproduce seed-003`, `run` of dd, `layout`).

mod common;
use common::*;

#[test]
fn reproduce_seed_003_prints_time_and_the_four_miss_counters_per_kernel() {
    let o = tlblab(&["reproduce", "seed-003", "--quick"]);
    let out = stdout(&o);
    for want in [
        "real (s)",
        "user (s)",
        "sys (s)",
        "I-TLB misses, user",
        "I-TLB misses, kernel",
        "D-TLB misses, user",
        "D-TLB misses, kernel",
        "2.6 pinned",
        "2.6 pin lost",
        "ITLB miss, kernel EA",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn dd_runs_only_on_the_software_loaded_tlb_and_layout_reorders_hot_text() {
    let out = stdout(&tlblab(&[
        "run",
        "--machine",
        "mpc855t",
        "--kernel",
        "2.4-8xx",
        "--workload",
        "dd",
        "--duration",
        "50ms",
    ]));
    assert!(out.contains("itlb_miss_kernel") && out.contains("seconds"), "{out}");
    let e =
        stderr(&tlblab(&["run", "--machine", "ivybridge-4c8t", "--kernel", "2.6-8xx", "--workload", "dd"]));
    assert!(e.contains("walk.kind = \"software\""), "{e}");
    let out = stdout(&tlblab(&["layout", "--duration", "100ms"]));
    let pages: Vec<u64> = out
        .lines()
        .find(|l| l.starts_with("kernel text pages"))
        .unwrap()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(pages.len() == 2 && pages[1] < pages[0], "{out}");
    let e = stderr(&tlblab(&["layout", "--kernel", "3.17"]));
    assert!(e.contains("--kernel 3.17") && e.contains("2.6-8xx"), "{e}");
}
