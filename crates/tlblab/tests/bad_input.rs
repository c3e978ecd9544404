//! Hostile and broken input end to end: truncated, oversized, wrong-typed files and absurd
//! values. Each must fail with exit code 2 and one line on stderr naming the file (or flag),
//! the key and what is allowed, and leave no output behind (issue 18).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Output;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("tlblab-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn repo(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)).unwrap()
}

/// `reproduce --quick` of the experiment `body` saved as `file` is refused (the file named first,
/// then every `needle`) and writes no output directory.
fn experiment_refused(file: &str, body: &str, needles: &[&str]) {
    let p = write(file, body);
    let out = dir().join(format!("out-{file}"));
    let o = tlblab(&["reproduce", &p, "--quick", "--out", out.to_str().unwrap()]);
    let mut n = vec![file];
    n.extend_from_slice(needles);
    refused(&o, &n);
    assert!(!out.exists(), "{file}: {} was created", out.display());
}

/// Exit code 2, nothing on stdout, exactly one line on stderr containing every `needle`.
fn refused(o: &Output, needles: &[&str]) -> String {
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "want exit 2; stderr: {e}");
    assert!(o.stdout.is_empty(), "partial output: {}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(e.trim_end().lines().count(), 1, "not one line: {e}");
    for n in needles {
        assert!(e.contains(n), "`{n}` missing from: {e}");
    }
    e
}

fn run_on(machine: &str, extra: &[&str]) -> Output {
    let mut args = vec!["--duration", "20us", "--warmup", "5us"];
    args.extend_from_slice(extra);
    run_with(machine, &args)
}

/// `tlblab run` of tlb_flush2_threads on `machine` with only the `extra` options.
fn run_with(machine: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--machine", machine, "--workload", "tlb_flush2_threads"];
    args.extend_from_slice(extra);
    tlblab(&args)
}

const PROFILE: &str = "profiles/haswell-ep-2s.toml";

#[test]
fn hostile_profiles_are_refused_with_file_key_and_range() {
    let text = repo(PROFILE);
    // A profile claiming 1e9 CPUs (each factor within its own range).
    let huge = text
        .replacen("sockets = 2", "sockets = 1000", 1)
        .replacen("cores_per_socket = 18", "cores_per_socket = 1000", 1)
        .replacen("threads_per_core = 2", "threads_per_core = 1000", 1);
    let p = write("huge.toml", &huge);
    refused(
        &run_on(&p, &["--threads", "2"]),
        &["huge.toml", "topology", "1000000000 CPUs", "allowed 1 ..= 512"],
    );
    // One factor out of range.
    let p = write("sockets.toml", &text.replacen("sockets = 2", "sockets = 1000000000", 1));
    refused(&run_on(&p, &["--threads", "2"]), &["sockets.toml", "topology.sockets", "allowed 1 ..= 1024"]);
    // NaN and negative costs.
    let nan = text.replacen("invlpg_cycles = { value = 150,", "invlpg_cycles = { value = nan,", 1);
    assert_ne!(nan, text);
    let p = write("nan.toml", &nan);
    refused(
        &run_on(&p, &["--threads", "2"]),
        &["nan.toml", "kernel.invlpg_cycles.value", "allowed 0 ..= 100000"],
    );
    let p = write(
        "neg.toml",
        &text.replacen("invlpg_cycles = { value = 150,", "invlpg_cycles = { value = -1,", 1),
    );
    refused(&run_on(&p, &["--threads", "2"]), &["neg.toml", "kernel.invlpg_cycles.value", "allowed"]);
    // Wrong type, negative count: file, line and key.
    let p = write("type.toml", &text.replacen("sockets = 2", "sockets = \"two\"", 1));
    refused(&run_on(&p, &["--threads", "2"]), &["type.toml:", "key `topology.sockets`", "u32"]);
    let p = write("negsock.toml", &text.replacen("sockets = 2", "sockets = -2", 1));
    refused(&run_on(&p, &["--threads", "2"]), &["negsock.toml:", "key `topology.sockets`"]);
    // Truncated half way, and empty.
    let p = write("trunc.toml", &text[..text.len() / 2]);
    refused(&run_on(&p, &["--threads", "2"]), &["trunc.toml:"]);
    let p = write("empty.toml", "");
    refused(&run_on(&p, &["--threads", "2"]), &["empty.toml", "missing field"]);
    // Oversized: a megabyte of comments before a broken key still names the line.
    let big =
        format!("{}{}", "# padding\n".repeat(100_000), text.replacen("sockets = 2", "sockets = [2]", 1));
    let p = write("big.toml", &big);
    refused(&run_on(&p, &["--threads", "2"]), &["big.toml:1000", "key `topology.sockets`"]);
}

#[test]
fn absurd_run_arguments_are_refused() {
    let m = "haswell-ep-2s";
    refused(&run_on(m, &["--threads", "1000000000"]), &["--threads 1000000000", "allowed 1 ..= 65536"]);
    refused(&run_on(m, &["--threads", "0"]), &["--threads 0", "allowed 1 ..= 65536"]);
    refused(&run_on(m, &["--threads", "-3"]), &["'-3'"]);
    // clap takes `-5ms` for a flag: its error names the argument.
    refused(&run_with(m, &["--duration", "-5ms"]), &["'-5'"]);
    for d in ["0ms", "1e30s", "nan s", "100000000s"] {
        refused(&run_with(m, &["--threads", "2", "--duration", d]), &["--duration"]);
    }
    refused(
        &run_with(m, &["--threads", "2", "--duration", "2000s"]),
        &["--duration", "allowed 1ns ..= 1000s"],
    );
    refused(&run_with(m, &["--set", "ceiling=NaN"]), &["--set ceiling=NaN", "allowed"]);
    // 224 tasks' 128 MiB files do not fit the model's 2 x 4 GiB: refused, not a panic in setup.
    let big = tlblab(&[
        "run",
        "--machine",
        "sapphire-rapids-2s",
        "--workload",
        "tlb_flush1_threads",
        "--threads",
        "224",
        "--duration",
        "20us",
    ]);
    refused(&big, &["tlb_flush1_threads", "224 tasks", "allowed -t 1..=60"]);
}

#[test]
fn hostile_kernel_presets_are_refused() {
    let run = |p: &str| {
        tlblab(&["run", "--machine", "haswell-ep-2s", "--workload", "tlb_flush2_threads", "--kernel", p])
    };
    let p = write("k-type.toml", "inherits = \"5.18.1\"\n[flush]\nceiling = [33]\n");
    refused(&run(&p), &["k-type.toml", "flush.ceiling", "allowed"]);
    let p = write("k-neg.toml", "inherits = \"5.18.1\"\n[flush]\nceiling = -1\n");
    refused(&run(&p), &["k-neg.toml", "flush.ceiling", "allowed"]);
    let p = write("k-trunc.toml", "inherits = \"5.18.1\"\n[flush\n");
    refused(&run(&p), &["k-trunc.toml:2:"]);
    let p = write("k-loop.toml", "inherits = \"k-loop\"\n");
    refused(&run(&p), &["k-loop.toml", "inherits"]);
}

#[test]
fn hostile_experiments_are_refused_and_write_nothing() {
    let text = repo("experiments/seed-002-tlb-gen.toml");
    let cases = [
        ("threads", text.replacen("threads = [1, 5,", "threads = [1000000000, 5,", 1), "allowed"),
        ("zero", text.replacen("duration = \"5ms\"", "duration = \"0ms\"", 1), "key `duration`"),
        ("type", text.replacen("iterations = 3", "iterations = \"three\"", 1), "key `iterations`"),
        ("trunc", text[..text.len() / 3].to_string(), "exp-trunc.toml"),
    ];
    for (name, body, needle) in cases {
        assert_ne!(body, text, "{name}");
        experiment_refused(&format!("exp-{name}.toml"), &body, &[needle]);
    }
}

#[test]
fn check_explores_a_preset_clean_and_catches_free_before_flush() {
    let o = tlblab(&["check", "--kernel", "3.4"]);
    let s = stdout(&o);
    assert!(s.contains("0 unsafe") && s.contains("ok "), "{s}");
    let o = tlblab(&["check", "--kernel", "3.4", "--set", "free_before_flush=on"]);
    assert_eq!(o.status.code(), Some(1));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("UNSAFE") && s.contains("use-after-free") && s.contains("frees the gathered pages"),
        "{s}"
    );
}

/// Seed 004's inputs (issue 14): an unknown message size, a zero or negative hackbench group
/// count, a kernel preset with a key its section does not have. One line, exit 2, naming the
/// flag or file and the allowed values.
#[test]
fn seed_004_sizes_groups_and_page_alloc_keys_are_refused() {
    let run = |machine: &str, workload: &str, extra: &[&str]| {
        let mut args = vec!["run", "--machine", machine, "--workload", workload, "--duration", "20us"];
        args.extend_from_slice(extra);
        tlblab(&args)
    };
    let two = "haswell-ep-2698v3-2s";
    refused(
        &run(two, "netperf -t UDP_STREAM -m 70000", &[]),
        &["--workload", "`-m 70000`", "allowed 1..=65507"],
    );
    refused(&run(two, "netperf -t TCP_STREAM -m 0", &[]), &["`-m 0`", "allowed 1..=65507"]);
    refused(
        &run(two, "sockperf throughput --mps max --msg-size 65507", &[]),
        &["--workload", "`--msg-size 65507`", "allowed 1..=65506"],
    );
    refused(&run(two, "sockperf throughput --msg-size -14", &[]), &["`--msg-size -14`", "allowed 1..=65506"]);
    // An experiment's `sizes`: the file, the key, the size and what is allowed.
    let text = repo("experiments/seed-004-netperf-udp-2s.toml");
    for (name, from, to, needles) in [
        ("big", "sizes = [64,", "sizes = [70000,", vec!["key `sizes`", "70000", "allowed 1..=65507"]),
        ("zero", "sizes = [64,", "sizes = [0,", vec!["key `sizes`", "allowed 1..=65507"]),
        ("neg", "sizes = [64,", "sizes = [-64,", vec!["key `sizes`"]),
    ] {
        let body = text.replacen(from, to, 1);
        assert_ne!(body, text, "{name}");
        experiment_refused(&format!("exp-size-{name}.toml"), &body, &needles);
    }
    // hackbench's group count: in its own text, as --threads, in an experiment.
    let one = "ivybridge-i3-3240";
    for g in ["0", "-3"] {
        refused(
            &run(one, &format!("hackbench {g} process 20000"), &[]),
            &["--workload", &format!("group count `{g}`"), "allowed 1 ..= "],
        );
    }
    refused(&run(one, "hackbench process 20000", &["--threads", "0"]), &["--threads 0", "allowed 1 ..= "]);
    refused(&run(one, "hackbench process 20000", &["--threads", "-3"]), &["'-3'"]);
    let text = repo("experiments/seed-004-hackbench-sockets.toml");
    for (name, to) in [("zero", "threads = [0, 3,"), ("neg", "threads = [-1, 3,")] {
        let body = text.replacen("threads = [1, 3,", to, 1);
        assert_ne!(body, text, "{name}");
        experiment_refused(&format!("exp-groups-{name}.toml"), &body, &["key `threads`"]);
    }
    // A row's own window (`[windows]`): a row the experiment does not have, a bad duration.
    let text = repo("experiments/seed-004-hackbench-pipes.toml");
    for (name, from, to, needles) in [
        ("row", "\n16 = {", "\n17 = {", vec!["key `windows.17`", "allowed: 1, 3, 5, 7, 12, 16"]),
        ("dur", "16 = { warmup = \"", "16 = { warmup = \"-", vec!["key `windows.16.warmup`"]),
    ] {
        let body = text.replacen(from, to, 1);
        assert_ne!(body, text, "{name}");
        experiment_refused(&format!("exp-window-{name}.toml"), &body, &needles);
    }
    // A preset with a key [page_alloc] does not have, and an era it does not know.
    let kernel = |p: &str| run(one, "hackbench process 20000", &["--threads", "1", "--kernel", p]);
    let p = write("k-pa-key.toml", "inherits = \"4.9\"\n[page_alloc]\nhigh = 341\n");
    refused(&kernel(&p), &["k-pa-key.toml", "page_alloc.high", "era"]);
    let p = write("k-pa-era.toml", "inherits = \"4.9\"\n[page_alloc]\nera = \"4.10\"\n");
    refused(&kernel(&p), &["k-pa-era.toml", "page_alloc.era", "4.9-hopcpu"]);
}

#[test]
fn check_catches_free_before_flush_in_batched_reclaim() {
    let o = tlblab(&["check", "--kernel", "4.2-batchdirty", "--set", "free_before_flush=on"]);
    assert_eq!(o.status.code(), Some(1));
    let s = String::from_utf8_lossy(&o.stdout);
    let unsafe_reclaim =
        s.lines().any(|l| l.starts_with("UNSAFE") && l.contains("reclaim unmap_flush=batched"));
    assert!(unsafe_reclaim && s.contains("free_hot_cold_page_list") && s.contains("flush deferred"), "{s}");
}
