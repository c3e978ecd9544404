//! Hostile and broken input end to end: truncated, oversized, wrong-typed files and absurd
//! values. Each must fail with exit code 2 and one line on stderr naming the file (or flag),
//! the key and what is allowed, and leave no output behind (docs/limits.md).

use crate::common::*;

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
    // Each tlb_flush1 task caches a 128 MiB file: what does not fit the nodes the kernel boots is
    // refused, not a panic in setup; 224 tasks on the default 2 x 4 GiB, 4 on 2 x 256 MiB.
    let tlb_flush1 = |m: &str, extra: &[&str]| {
        let mut args = vec!["run", "--machine", m, "--workload", "tlb_flush1_threads", "--duration", "20us"];
        args.extend_from_slice(extra);
        tlblab(&args)
    };
    let big = tlb_flush1("sapphire-rapids-2s", &["--threads", "224"]);
    refused(&big, &["tlb_flush1_threads", "224 tasks", "allowed -t 1..=59"]);
    let small = tlb_flush1(m, &["--threads", "4", "--set", "node_mib=256"]);
    refused(&small, &["tlb_flush1_threads", "4 tasks", "allowed -t 1..=3"]);
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
        (
            "counter",
            text.replacen("counter = \"ipis_sent\"", "counter = \"ipis_snt\"", 1),
            "key `table.block[0].per_op[0].counter`: `ipis_snt` is not a counter; allowed: ",
        ),
        ("claim", text.replacen("column = \"+patch\"", "column = \"+patsch\"", 1), "key `claim[0].column`"),
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

/// Seed 004's inputs: an unknown message size, a zero or negative hackbench group
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

// ---- Hostile inputs, second round. One test per cause; each input is refused with
// one line and exit 2 (no panic, abort, hang, NaN or null), and nothing is written.

/// Cause 1: a duration with whitespace was sliced past its end (a panic): every place a
/// duration is given.
#[test]
fn durations_with_spaces_are_parsed_or_refused_never_a_panic() {
    let m = "haswell-ep-2s";
    for d in ["5 ", " 5", "  ", ""] {
        refused(&run_with(m, &["--threads", "2", "--duration", d]), &["--duration", "unit"]);
        refused(&run_with(m, &["--threads", "2", "--warmup", d]), &["--warmup", "unit"]);
        refused(&tlblab(&["layout", "--duration", d]), &["--duration", "unit"]);
        refused(&tlblab(&["validate", "--duration", d]), &["--duration", "unit"]);
    }
    // Spaces around a number and its unit are fine.
    let o = run_with(m, &["--threads", "2", "--duration", " 20 us ", "--warmup", "5us "]);
    assert!(stdout(&o).contains("20.000 us measured after 5.000 us warm-up"));
    let text = repo("experiments/seed-002-tlb-gen.toml");
    for (key, from, to) in [
        ("quick_duration", "quick_duration = \"1ms\"", "quick_duration = \"50 \""),
        ("duration", "duration = \"5ms\"", "duration = \"  \""),
        ("warmup", "warmup = \"500us\"", "warmup = \" 5\""),
    ] {
        let body = text.replacen(from, to, 1);
        assert_ne!(body, text, "{key}");
        experiment_refused(&format!("exp31-space-{key}.toml"), &body, &[&format!("key `{key}`"), "unit"]);
    }
}

/// Cause 2: a duration that rounds to 0 ps passed the 1 ns minimum (NaN ops/s, exit 0; null
/// means; a panic in sweep --out).
#[test]
fn durations_rounding_below_a_nanosecond_are_refused() {
    let m = "haswell-ep-2s";
    for d in ["0.0001ns", "0.4ns", "1e-13s"] {
        refused(&run_with(m, &["--threads", "2", "--duration", d]), &["--duration", "allowed 1ns ..= 1000s"]);
    }
    let out = dir().join("sweep31-zero");
    let o = tlblab(&[
        "sweep",
        "--machine",
        m,
        "--workload",
        "tlb_flush2_threads",
        "--threads",
        "1",
        "--vary",
        "ceiling=0,33",
        "--duration",
        "0.0001ns",
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&o, &["--duration", "allowed 1ns ..= 1000s"]);
    assert!(!out.exists());
    let text = repo("experiments/seed-002-tlb-gen.toml");
    let body = text.replacen("quick_duration = \"1ms\"", "quick_duration = \"0.0001ns\"", 1);
    assert_ne!(body, text);
    experiment_refused("exp31-zero.toml", &body, &["key `quick_duration`", "allowed 1ns ..= 1000s"]);
}

/// `tlblab run` of `workload` on haswell-ep-2s for 20 us.
fn run_workload(workload: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--machine", "haswell-ep-2s", "--workload", workload, "--duration", "20us"];
    args.extend_from_slice(extra);
    tlblab(&args)
}

/// Cause 3: ebizzy's numbers were parsed as u64 and cut to 32 bits (`-S 4294967296` ran as 0,
/// `-n 4294967297` as 1) and `-S` had no bound.
#[test]
fn ebizzy_numbers_are_range_checked_not_truncated() {
    refused(
        &run_workload("ebizzy -S 4294967296", &[]),
        &["--workload", "`-S 4294967296`", "allowed 1..=1000"],
    );
    refused(&run_workload("ebizzy -S 20000000", &[]), &["`-S 20000000`", "allowed 1..=1000"]);
    refused(&run_workload("ebizzy -S 0", &[]), &["`-S 0`", "allowed 1..=1000"]);
    refused(&run_workload("ebizzy -n 4294967297", &[]), &["`-n 4294967297`", "allowed 1..=1048576"]);
    refused(&run_workload("ebizzy -t 4294967298", &[]), &["`-t 4294967298`", "allowed 1..=65536"]);
    refused(
        &run_workload("ebizzy -s 99999999999999999999", &[]),
        &["`-s 99999999999999999999`", "allowed 8..="],
    );
}

/// Cause 4: sizes without an upper bound aborted (allocating terabytes) or panicked (out of the
/// model's memory in setup, a u32 overflow in the TLB array) instead of being refused.
#[test]
fn sizes_beyond_their_bounds_are_refused_before_anything_is_allocated() {
    refused(&run_workload("ebizzy -n 4294967295", &[]), &["`-n 4294967295`", "allowed 1..=1048576"]);
    refused(
        &run_workload("ebizzy", &["--param", "chunk_size=1099511627776"]),
        &["--workload", "chunk_size", "8..=1073741824"],
    );
    // Within each range, but not within the modelled memory: refused before setup.
    refused(&run_workload("ebizzy", &["--param", "chunks=1000000"]), &["holds", "modelled memory"]);
    refused(
        &run_workload("ebizzy -n 40", &["--set", "node_mib=16"]),
        &["holds", "modelled memory", "32 MiB"],
    );
    for tlb in ["1048576x4096", "65536x4096", "4294967296x1"] {
        let o = tlblab(&["trace", "--tlb", tlb, "--format", "hex", "/dev/null"]);
        refused(&o, &["--tlb", tlb]);
    }
    refused(&tlblab(&["trace", "--tlb", "65536x4096", "/dev/null"]), &["allowed at most 1048576 entries"]);
    // Text traces without a newline: refused at the line cap, not read into memory.
    for f in ["hex", "lackey"] {
        let o = tlblab(&["trace", "--tlb", "16x4", "--format", f, "/dev/zero"]);
        refused(&o, &["/dev/zero:1:", "longer than 4096 bytes"]);
    }
    // Files of unbounded size: read up to a cap.
    for dev in ["/dev/zero", "/dev/urandom"] {
        refused(&run_with(dev, &["--threads", "2"]), &[dev, "larger than 16 MiB"]);
        let o = tlblab(&[
            "run",
            "--machine",
            "haswell-ep-2s",
            "--workload",
            "tlb_flush2_threads",
            "--kernel",
            dev,
        ]);
        refused(&o, &["--kernel", dev, "larger than 16 MiB"]);
    }
    // A profile structure of 2^31 entries.
    let text = repo(PROFILE);
    let first = text.find("entries = ").expect("a structure");
    let end = first + text[first..].find('\n').unwrap();
    let body = format!("{}entries = 2147483648{}", &text[..first], &text[end..]);
    let p = write("entries31.toml", &body);
    refused(&run_on(&p, &["--threads", "2"]), &["entries31.toml", "entries", "allowed 1 ..= 65536"]);
    // Iterations, host threads, native threads.
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "sweep",
            "--machine",
            "haswell-ep-2s",
            "--workload",
            "tlb_flush2_threads",
            "--threads",
            "1",
            "--vary",
            "ceiling=0",
            "--duration",
            "20us",
        ];
        a.extend_from_slice(extra);
        tlblab(&a)
    };
    refused(&sweep(&["--iterations", "4294967295"]), &["--iterations", "4294967295", "1..=1000"]);
    refused(&sweep(&["--jobs", "100000"]), &["--jobs", "100000", "1..=256"]);
    refused(&tlblab(&["reproduce", "seed-002", "--quick", "--jobs", "100000"]), &["--jobs", "1..=256"]);
    refused(&tlblab(&["native", "tlb_flush2", "--threads", "100000"]), &["--threads", "100000", "1..=4096"]);
    let text = repo("experiments/seed-002-tlb-gen.toml");
    let body = text.replacen("iterations = 3", "iterations = 4294967295", 1);
    experiment_refused("exp31-iter.toml", &body, &["key `iterations`", "allowed 1 ..= 1000"]);
}

/// An experiment file `file` with `name = NAME`, run into a fresh --out: refused, and nothing
/// anywhere but the (empty) --out.
fn name_refused(file: &str, name: &str, needles: &[&str]) {
    let text = repo("experiments/seed-002-tlb-gen.toml");
    let body = text.replacen("name = \"seed-002-tlb-gen\"", &format!("name = {name:?}"), 1);
    assert_ne!(body, text);
    let root = dir().join(format!("root-{file}"));
    std::fs::create_dir_all(root.join("out")).unwrap();
    let p = root.join(file);
    std::fs::write(&p, body).unwrap();
    let o =
        tlblab(&["reproduce", p.to_str().unwrap(), "--quick", "--out", root.join("out").to_str().unwrap()]);
    refused(&o, needles);
    let mut left: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut want = vec!["out".to_string(), file.to_string()];
    want.sort();
    assert_eq!(left, want, "{file}: written beside --out");
    assert_eq!(std::fs::read_dir(root.join("out")).unwrap().count(), 0, "{file}: written into --out");
}

/// Cause 5: an experiment's name became a path as it was (`../x` wrote beside --out, an
/// absolute name ignored it; a symbolic link inside --out led anywhere).
#[test]
fn experiment_names_never_write_outside_out() {
    name_refused("n31-rel.toml", "../x", &["n31-rel.toml", "key `name`", "path separator"]);
    name_refused("n31-dots.toml", "..", &["key `name`", "not allowed"]);
    let abs = dir().join("abs31-target");
    name_refused("n31-abs.toml", abs.to_str().unwrap(), &["key `name`", "path separator"]);
    assert!(!abs.exists());
    // A link named as the experiment, planted inside --out, pointing outside it.
    let root = dir().join("root-link31");
    let target = dir().join("link31-target");
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&target, root.join("out/seed-002-tlb-gen")).ok();
    let o =
        tlblab(&["reproduce", "seed-002-tlb-gen", "--quick", "--out", root.join("out").to_str().unwrap()]);
    refused(&o, &["seed-002-tlb-gen", "symbolic link"]);
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "written through the link");
}

/// Cause 6: two labels with one file-safe name (`+patch` -> `_patch-120cc650`) shared a cells/
/// directory.
#[test]
fn columns_sharing_a_cells_directory_are_refused() {
    let text = repo("experiments/seed-002-tlb-gen.toml");
    let first = text.find("[[kernel]]").unwrap();
    let body = format!(
        "{}[[kernel]]\nlabel = \"+patch\"\npreset = \"5.18.1\"\n\n[[kernel]]\nlabel = \"_patch-120cc650\"\npreset = \"5.18.1\"\n",
        &text[..first]
    );
    experiment_refused(
        "exp31-clash.toml",
        &body,
        &["key `kernel[1].label`", "+patch", "cells/_patch-120cc650/"],
    );
}

/// Cause 7: `export --format mmtests` of a set without rows indexed runs[0]; `native
/// --seconds 1e300` overflowed a Duration.
#[test]
fn empty_sets_and_huge_native_seconds_are_refused() {
    let set = dir().join("empty31");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::write(
        set.join("summary.json"),
        r#"{"experiment":"e","machine":"m","workload":"ebizzy","metric":{"name":"records","unit":"records/s","higher_is_better":true},"kernels":[],"rows":[]}"#,
    )
    .unwrap();
    let out = dir().join("empty31-out");
    let o = tlblab(&["export", "--format", "mmtests", set.to_str().unwrap(), out.to_str().unwrap()]);
    refused(&o, &["summary.json", "at least one kernel and one row"]);
    assert!(!out.exists());
    for s in ["1e300", "inf", "NaN", "3601"] {
        refused(&tlblab(&["native", "tlb_flush2", "--seconds", s]), &["--seconds", "allowed 0 ..= 3600"]);
    }
}

/// Cause 8 (soft): an empty experiment name, no subcommand, `ways = 0` reported as `entries`,
/// a missing preset reported as `--kernel`, and `--out FILE` found only after the first cell.
#[test]
fn soft_errors_name_what_is_wrong() {
    refused(&tlblab(&["reproduce", "", "--quick"]), &["experiment name", "empty", "seed-002-tlb-gen"]);
    refused(&tlblab(&["reproduce", "  "]), &["empty"]);
    refused(&tlblab(&[]), &["requires a subcommand", "run", "reproduce"]);
    let text = repo(PROFILE);
    let at = text.find("ways = ").expect("a structure");
    let end = at + text[at..].find('\n').unwrap();
    let p = write("ways31.toml", &format!("{}ways = 0{}", &text[..at], &text[end..]));
    refused(&run_on(&p, &["--threads", "2"]), &["ways31.toml", ".ways`", "allowed 1 ..= 4096"]);
    let e = refused(&run_on(&p, &["--threads", "2"]), &[]);
    assert!(!e.contains(".entries"), "{e}");
    let exp = repo("experiments/seed-002-tlb-gen.toml");
    let at = exp.find("preset = \"").unwrap();
    let end = at + exp[at..].find('\n').unwrap();
    let body = format!("{}preset = \"9.99-nope\"{}", &exp[..at], &exp[end..]);
    experiment_refused("exp31-preset.toml", &body, &["key `kernel[0].preset`", "9.99-nope"]);
    let e = refused(&tlblab(&["reproduce", &write("exp31-preset2.toml", &body), "--quick"]), &[]);
    assert!(!e.contains("--kernel"), "{e}");
    // --out naming a file: refused before any cell runs (so at once, with no output).
    let file = write("out31-file", "x");
    let t0 = std::time::Instant::now();
    refused(&tlblab(&["reproduce", "seed-002-tlb-gen", "--out", &file]), &["--out", "is a file"]);
    refused(
        &tlblab(&["reproduce", "seed-002-tlb-gen", "--out", &format!("{file}/sub")]),
        &["--out", "is a file"],
    );
    assert!(t0.elapsed().as_secs() < 20, "refused only after running");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

/// Cause 9: `check` says how far it is and how long it expects to take, on standard error.
#[test]
fn check_reports_its_progress() {
    let o = tlblab(&["check", "--kernel", "3.4"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(e.contains("check: ") && e.contains("explorations") && e.contains("distinct"), "{e}");
}

/// A run the fixed caps allow can still need more memory than the host has: a profile of 512
/// one-CPU sockets with 4 GiB nodes (2 TiB simulated, about 42 GiB of frame maps per run), 32
/// runs at once, is over a TiB. Refused before any cell runs, naming the input and both figures,
/// and --out is not created (docs/limits.md).
#[test]
fn runs_beyond_the_hosts_memory_are_refused_before_they_start() {
    let text = repo("profiles/skylake-sp-2s.toml");
    let body = text
        .replacen(
            "sockets = 2\ncores_per_socket = 28\nthreads_per_core = 2",
            "sockets = 512\ncores_per_socket = 1\nthreads_per_core = 1",
            1,
        )
        .lines()
        .filter(|l| !l.starts_with("smt_throughput = "))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(body.contains("sockets = 512") && !body.contains("smt_throughput"), "the profile changed shape");
    let p = write("wide512.toml", &body);
    let out = dir().join("out-wide512");
    let o = tlblab(&[
        "sweep",
        "--machine",
        &p,
        "--workload",
        "tlb_flush2_threads",
        "--threads",
        "1",
        "--vary",
        "node_mib=4096",
        "--iterations",
        "32",
        "--jobs",
        "32",
        "--duration",
        "1ns",
        "--warmup",
        "1ns",
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = refused(
        &o,
        &[
            "node_mib=4096 on 512 sockets",
            "32 runs at once (--jobs, by default one per host core) need about",
            "is available (",
        ],
    );
    // The need is 32 runs' worth: over a TiB, in GiB.
    let need: f64 =
        e.split("need about ").nth(1).and_then(|s| s.split(" GiB").next()).unwrap().parse().unwrap();
    assert!(need > 1024.0, "{e}");
    assert!(!out.exists(), "{} was created", out.display());
}
