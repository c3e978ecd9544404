//! `--shard I/N`: job arrays writing into one shared results directory at once.

use crate::common::{self, stderr, tlblab, tree};
use std::process::{Command, Stdio};

fn sweep_args(values: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "sweep",
        "--machine",
        "haswell-ep-2s",
        "--workload",
        "tlb_flush1_threads",
        "--kernel",
        "5.18.1",
        "--threads",
        "1,2",
        "--iterations",
        "1",
        "--duration",
        "10us",
        "--warmup",
        "5us",
        "--jobs",
        "1",
        "--out",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(format!("--vary=ceiling={values}"));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[test]
fn concurrent_shards_and_writers_share_one_directory_and_merge_to_the_unsharded_bytes() {
    let base = std::env::temp_dir().join(format!("tlblab-shard-{}", std::process::id()));
    std::fs::remove_dir_all(&base).ok();
    let shared = base.join("shared");
    let alone = base.join("alone");
    let (shared_s, alone_s) = (shared.to_str().unwrap(), alone.to_str().unwrap());
    let values = (0..60).map(|v| v.to_string()).collect::<Vec<_>>().join(",");
    // Two shards at once, while a third writer keeps starting small sweeps into the same
    // directory: each start cleans up stale temporary files, which must never be another live
    // writer's (before the fix, a shard could die on `cannot rename .t2.json.tmp-PID`; the window
    // is microseconds, so the deterministic check of that rule is `store`'s unit test
    // `only_temporary_files_of_dead_writers_are_removed`; this one runs the whole path at once).
    let spawn = |shard: &str| {
        Command::new(env!("CARGO_BIN_EXE_tlblab"))
            .args(sweep_args(&values, shared_s, &["--shard", shard]))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut a = spawn("1/2");
    let mut b = spawn("2/2");
    let mut small_runs = 0;
    while a.try_wait().unwrap().is_none() || b.try_wait().unwrap().is_none() || small_runs < 3 {
        let o = tlblab(
            &sweep_args(&format!("{}", small_runs % 7), shared_s, &[])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(o.status.success(), "small writer: {}", String::from_utf8_lossy(&o.stderr));
        small_runs += 1;
    }
    for (name, child) in [("1/2", a), ("2/2", b)] {
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "shard {name}: {err}");
        assert!(err.contains(&format!("shard {name}: ")) && err.contains("60 left to other shards"), "{err}");
    }
    // The shards wrote cells only (the small writer's own summary aside); the merge runs nothing.
    let merge = tlblab(&sweep_args(&values, shared_s, &[]).iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&merge.stderr);
    assert!(merge.status.success() && err.contains("120 of 120 cells reused"), "{err}");
    // Byte for byte what one unsharded process writes.
    let one = tlblab(&sweep_args(&values, alone_s, &[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(one.status.success());
    let strip = |t: Vec<(String, Vec<u8>)>| {
        t.into_iter().filter(|(p, _)| !p.starts_with("plots/") && p != "index.html").collect::<Vec<_>>()
    };
    let (s, o) = (strip(tree(&shared)), strip(tree(&alone)));
    assert_eq!(s.len(), o.len());
    for ((ps, bs), (po, bo)) in s.iter().zip(&o) {
        assert_eq!(ps, po);
        assert!(bs == bo, "{ps} differs");
    }
    assert!(s.iter().all(|(p, _)| !p.contains(".tmp-")));
    std::fs::remove_dir_all(&base).ok();
}

#[test]
fn shard_needs_out_and_a_valid_index() {
    let e = stderr(&tlblab(&[
        "sweep",
        "--machine",
        "haswell-ep-2s",
        "--workload",
        "tlb_flush1_threads",
        "--threads",
        "1",
        "--vary",
        "ceiling=1",
        "--shard",
        "1/2",
    ]));
    assert!(e.contains("--out"), "{e}");
    let e =
        stderr(&tlblab(&["reproduce", "seed-000-ebizzy", "--quick", "--out", "/tmp/x", "--shard", "3/2"]));
    assert!(e.contains("--shard `3/2`: expected I/N with 1 <= I <= N"), "{e}");
}

#[test]
fn reproduce_shards_then_merges_to_the_unsharded_summary() {
    let dir = std::env::temp_dir().join(format!("tlblab-shard-repro-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let (d, one) = (dir.join("shared"), dir.join("one"));
    let (ds, ones) = (d.to_str().unwrap(), one.to_str().unwrap());
    for s in ["1/3", "2/3", "3/3"] {
        let out =
            common::stdout(&tlblab(&["reproduce", "seed-000-ebizzy", "--quick", "--out", ds, "--shard", s]));
        assert!(out.contains(&format!("shard {s}:")), "{out}");
    }
    let summary = d.join("seed-000-ebizzy/summary.json");
    assert!(!summary.exists(), "a shard must not write the summary");
    assert!(d.join("seed-000-ebizzy/cells").is_dir());
    common::stdout(&tlblab(&["reproduce", "seed-000-ebizzy", "--quick", "--out", ds]));
    common::stdout(&tlblab(&["reproduce", "seed-000-ebizzy", "--quick", "--out", ones]));
    assert_eq!(
        std::fs::read(&summary).unwrap(),
        std::fs::read(one.join("seed-000-ebizzy/summary.json")).unwrap()
    );
    std::fs::remove_dir_all(&dir).ok();
}
