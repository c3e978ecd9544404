//! End-to-end: `tlblab run --timeline` writes a trace a viewer loads (checked by
//! `tlblab::timeline::check`), prints the same results as without it, the same bytes twice, and
//! refuses bad flags with one line, exit 2, nothing written.

use crate::common::*;

use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tlblab-timeline-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SKYLAKE_56: [&str; 11] = [
    "run",
    "--machine",
    "skylake-sp-2s",
    "--workload",
    "tlb_flush1_threads",
    "--threads",
    "56",
    "--kernel",
    "5.18.1",
    "--duration",
    "1ms",
];

#[test]
fn a_56_task_skylake_timeline_of_1ms_loads_back_and_changes_no_result() {
    let d = dir("skylake");
    let file = d.join("t.json");
    let with = |f: &PathBuf| {
        let mut args = SKYLAKE_56.to_vec();
        args.extend(["--timeline", f.to_str().unwrap()]);
        stdout(&tlblab(&args))
    };
    let out = with(&file);
    assert_eq!(out, stdout(&tlblab(&SKYLAKE_56)), "--timeline changed the printed results");
    let text = std::fs::read_to_string(&file).unwrap();
    // skylake-sp-2s has 112 CPUs: a track for each (the 56 without a task idle).
    let sum = tlblab::timeline::check(&text, Some(112)).unwrap();
    assert!(sum.slices > 10_000 && sum.flows > 1_000 && sum.counters > 1_000, "{sum:?}");
    for name in [
        "flush_tlb_func",
        "call-function IPI",
        "IPI send (smp_call_function_many)",
        "wait for acks (csd_lock_wait)",
        "madvise(MADV_DONTNEED)",
        "lock wait: mmap_lock",
        "page fault",
        "idle",
    ] {
        assert!(text.contains(&format!("\"name\":\"{name}\"")), "no `{name}` slice");
    }
    assert!(
        text.contains("\"name\":\"cpu 3 TLB entries\"") && text.contains("\"name\":\"cpu 3 call queue\"")
    );
    // Deterministic: the same run writes the same bytes.
    let again = d.join("u.json");
    with(&again);
    assert!(std::fs::read(&again).unwrap() == text.as_bytes(), "a second run wrote other bytes");
}

#[test]
fn a_window_bounds_the_timeline() {
    let d = dir("window");
    let file = d.join("w.json");
    let f = file.to_str().unwrap();
    let mut args = SKYLAKE_56.to_vec();
    args[6] = "8";
    args.extend(["--timeline", f, "--timeline-window", "100us..150us"]);
    stdout(&tlblab(&args));
    let text = std::fs::read_to_string(&file).unwrap();
    tlblab::timeline::check(&text, Some(112)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for e in v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] != "M") {
        let ts = e["ts"].as_f64().unwrap();
        let end = ts + e["dur"].as_f64().unwrap_or(0.0);
        assert!((100.0..=150.0).contains(&ts) && end <= 150.0 + 1e-9, "{e}");
    }
}

#[test]
fn bad_timeline_flags_give_one_line_exit_2_and_write_nothing() {
    let d = dir("bad");
    let file = d.join("never.json");
    let f = file.to_str().unwrap();
    let base =
        ["run", "--machine", "ivybridge-4c8t", "--workload", "tlb_flush1_threads", "--duration", "50us"];
    let dir_arg = d.to_str().unwrap();
    let missing = d.join("no-such-dir").join("t.json");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--timeline", f, "--timeline-window", "garbage"], "--timeline-window"),
        (vec!["--timeline", f, "--timeline-window", "2us..1us"], "not after its start"),
        (vec!["--timeline", dir_arg], "is a directory"),
        (vec!["--timeline", missing.to_str().unwrap()], "is not a directory"),
        (vec!["--timeline-window", "10us"], "--timeline"),
    ];
    for (extra, says) in cases {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let o = tlblab(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!file.exists() && !missing.exists(), "{args:?} wrote a file");
    }
}
