//! End-to-end tests of ebizzy, seed 000 and `tlblab sweep`.

use std::process::{Command, Output};

fn tlblab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tlblab")).args(args).output().expect("run tlblab")
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "tlblab failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    assert!(!o.status.success(), "expected failure, got: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn run_ebizzy_reports_records_per_second() {
    let o = tlblab(&[
        "run",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "ebizzy",
        "--param",
        "alloc=glibc-mmap",
        "--threads",
        "2",
        "--kernel",
        "3.13",
        // The pure flush mechanism: no sleeping on mmap_lock (see experiments/seed-000).
        "--set",
        "mmap_lock=off",
        "--duration",
        "1ms",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["metric"]["unit"], "records/s");
    assert_eq!(v["config"]["workload"], "ebizzy alloc=glibc-mmap");
    assert!(v["metric"]["value"].as_f64().unwrap() > 1000.0);
    // 3.13 on Ivy Bridge INVLPGs every 129-page munmap on both CPUs.
    let ops = v["iterations"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum::<u64>();
    assert!(v["counters"]["invlpg"].as_u64().unwrap() >= 250 * ops, "{}", v["counters"]);
    // ebizzy's own options parse too.
    let o = tlblab(&["run", "--machine", "ivybridge-4c8t", "--workload", "ebizzy -m -n 2", "--threads", "1"]);
    assert!(stdout(&o).contains("ebizzy -m -n 2 on ivybridge-4c8t"));
}

#[test]
fn ebizzy_errors_name_the_allowed_values() {
    // Default thread count: 2 x CPUs, time-sliced; the one-CPU MPC855T profile has no
    // context-switch cost, and the error names the key.
    let e = stderr(&tlblab(&["run", "--machine", "mpc855t", "--workload", "ebizzy"]));
    assert!(e.contains("2 tasks") && e.contains("kernel.context_switch_ns"), "{e}");
    let o = tlblab(&["run", "--machine", "ivybridge-4c8t", "--workload", "ebizzy", "--duration", "2ms"]);
    assert!(stdout(&o).contains("(16 tasks)"));
    let e = stderr(&tlblab(&[
        "run",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "ebizzy",
        "--param",
        "alloc=tcmalloc",
        "--threads",
        "1",
    ]));
    assert!(e.contains("glibc-2.18 | glibc-mmap | glibc-2.36 | mmap"), "{e}");
    let e = stderr(&tlblab(&[
        "run",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "ebizzy -m -M",
        "--threads",
        "1",
    ]));
    assert!(e.contains("never mmap"), "{e}");
    let e = stderr(&tlblab(&["run", "--machine", "ivybridge-4c8t", "--workload", "tlb_flush1_threads"]));
    assert!(e.contains("--threads is required"), "{e}");
}

#[test]
fn list_shows_ebizzy_and_its_parameters() {
    let out = stdout(&tlblab(&["list"]));
    assert!(out.contains("ebizzy [-m -M") && out.contains("alloc") && out.contains("glibc-mmap"), "{out}");
}

#[test]
fn reproduce_seed_000_prints_mean_and_stddev_rows_and_the_counts() {
    let out = stdout(&tlblab(&["reproduce", "seed-000", "--quick"]));
    for needle in [
        "3.13.0-rc3",
        "altershift-v2r1",
        "nowalk-v2r7",
        "3.4.69",
        "Mean   1",
        "Mean   8",
        "Stddev 8",
        "Per record",
        "safety oracle: 0 violations",
        "Note:",
    ] {
        assert!(out.contains(needle), "missing `{needle}`:\n{out}");
    }
    // The counts: 3.13 vanilla INVLPGs 129 pages at 1 thread, altershift flushes fully once.
    let row = out.lines().skip_while(|l| !l.starts_with("Per record")).nth(2).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[0], "1");
    assert!(cols[1].starts_with("129.") && cols[1].contains("/0.00/"), "{row}");
    assert!(cols[3].starts_with("0.0/1.00/"), "{row}");
}

#[test]
fn sweep_is_the_same_for_any_jobs_and_names_the_best_ceiling() {
    let args = |jobs: &'static str| {
        vec![
            "sweep",
            "--machine",
            "ivybridge-4c8t",
            "--workload",
            "ebizzy",
            "--param",
            "alloc=glibc-mmap",
            "--threads",
            "1,2",
            "--kernel",
            "3.17",
            "--vary",
            "ceiling=0,200",
            "--duration",
            "1ms",
            "--iterations",
            "2",
            "--jobs",
            jobs,
        ]
    };
    let a = stdout(&tlblab(&args("1")));
    assert_eq!(a, stdout(&tlblab(&args("2"))));
    assert!(a.contains("best ceiling: 1 threads:") && a.contains("best ceiling overall:"), "{a}");
    // At 2 threads the full flush (ceiling 0 < 129 pages) beats 129 INVLPGs on both CPUs.
    assert!(a.contains("best ceiling: 2 threads: 0 "), "{a}");
    // Presets vary too, and --json gives the cells.
    let o = tlblab(&[
        "sweep",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "ebizzy",
        "--threads",
        "2",
        "--vary",
        "kernel=3.4,3.13",
        "--vary",
        "alloc=glibc-2.18,mmap",
        "--duration",
        "1ms",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 4);
    assert_eq!(v[3]["values"]["kernel"], "3.13");
    assert_eq!(v[3]["values"]["alloc"], "mmap");
    let e = stderr(&tlblab(&[
        "sweep",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "ebizzy",
        "--threads",
        "9",
        "--vary",
        "ceiling=1",
    ]));
    assert!(e.contains("allowed 1 ..= 8"), "{e}");
}
