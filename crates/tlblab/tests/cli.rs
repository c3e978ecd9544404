//! End-to-end tests of the `tlblab` command.

use crate::common::*;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn tlblab_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

fn tmp(name: &str, data: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tlblab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

#[test]
fn trace_counts_hits_and_misses_per_level_as_json() {
    // Pages 0,1,0,2,0,3 through a 1x2 L1 and a 1x4 L2.
    let hex = "0x0\n0x1000\n0x0\n0x2000\n0x0\n0x3000\n0x1000\n";
    let o = tlblab_stdin(
        &["trace", "--tlb", "1x2", "--tlb", "1x4", "--format", "hex", "--json", "-"],
        hex.as_bytes(),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["accesses"], 7);
    // L1: hits on the 2nd and 3rd visit of page 0; page 1's revisit was evicted from L1.
    assert_eq!(v["levels"][0]["name"], "L1");
    assert_eq!((v["levels"][0]["hits"].as_u64(), v["levels"][0]["misses"].as_u64()), (Some(2), Some(5)));
    assert_eq!(v["levels"][1]["name"], "L2");
    assert_eq!((v["levels"][1]["hits"].as_u64(), v["levels"][1]["misses"].as_u64()), (Some(1), Some(4)));
    assert_eq!(v["walks"], 4);
}

#[test]
fn trace_reads_raw64_files_and_prints_a_table() {
    let data: Vec<u8> = [0u64, 4096, 0, 8192].iter().flat_map(|a| a.to_le_bytes()).collect();
    let p = tmp("t.raw", &data);
    let out = stdout(&tlblab(&["trace", "--tlb", "16x4", p.to_str().unwrap()]));
    assert!(out.contains("4 accesses"), "{out}");
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["L1", "4", "1", "3", "0.7500"]),
        "{out}"
    );
}

#[test]
fn trace_runs_a_lackey_trace_through_a_machine_profile() {
    let lackey =
        "==1== Lackey\nI  00400000,4\n L 7ff000000,8\n S 7ff000000,8\n M 7ff000ffc,8\nI  00400004,4\n";
    let o = tlblab_stdin(
        &["trace", "--machine", "ivybridge-4c8t", "--format", "lackey", "--json", "-"],
        lackey.as_bytes(),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The M access straddles two pages: 6 lookups for 5 accesses.
    assert_eq!(v["accesses"], 6);
    let names: Vec<&str> =
        v["levels"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["L1 ITLB", "L1 DTLB", "STLB"]);
    let itlb = &v["levels"][0];
    assert_eq!((itlb["hits"].as_u64(), itlb["misses"].as_u64()), (Some(1), Some(1)));
    assert_eq!(v["walks"], 3);
}

#[test]
fn every_builtin_machine_traces() {
    let list = stdout(&tlblab(&["list"]));
    for name in ["ivybridge-4c8t", "haswell-ep-2s", "skylake-sp-2s", "sapphire-rapids-2s", "mpc855t"] {
        assert!(list.contains(name), "{list}");
        let o = tlblab_stdin(&["trace", "--machine", name, "--format", "hex", "-"], b"0x1000\n0x1000\n");
        assert!(stdout(&o).contains("2 accesses"));
    }
}

#[test]
fn malformed_input_names_the_line() {
    let o = tlblab_stdin(&["trace", "--tlb", "16x4", "--format", "hex", "-"], b"0x10\nnope\n");
    let e = stderr(&o);
    assert!(e.contains("-:2:") && e.contains("`nope`"), "{e}");
    let o = tlblab_stdin(&["trace", "--tlb", "16x4", "--format", "lackey", "-"], b"I  0400,4\nQ 1,1\n");
    assert!(stderr(&o).contains("-:2:"));
}

#[test]
fn non_canonical_addresses_are_refused() {
    let o = tlblab_stdin(&["trace", "--tlb", "16x4", "--format", "hex", "-"], b"0x0\n0x200000000000000\n");
    let e = stderr(&o);
    assert!(e.contains("access 2") && e.contains("non-canonical"), "{e}");
    // Kernel (upper-half) addresses are canonical.
    let o = tlblab_stdin(&["trace", "--tlb", "16x4", "--format", "hex", "-"], b"0xffff888000001000\n");
    assert!(stdout(&o).contains("1 accesses"));
}

#[test]
fn bad_arguments_say_what_is_allowed() {
    let e = stderr(&tlblab(&["trace", "--tlb", "3x4", "-"]));
    assert!(e.contains("power of two"), "{e}");
    let e = stderr(&tlblab(&["trace", "--machine", "vax-780", "-"]));
    assert!(e.contains("unknown machine") && e.contains("ivybridge-4c8t"), "{e}");
    let e = stderr(&tlblab(&["trace", "--tlb", "16x6", "--policy", "plru", "-"]));
    assert!(e.contains("power-of-two"), "{e}");
    let e = stderr(&tlblab(&["trace", "-"]));
    assert!(e.contains("--machine") && e.contains("--tlb"), "{e}");
}

#[test]
fn a_bad_profile_file_names_the_file_and_key() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/ivybridge-4c8t.toml"))
            .unwrap();
    let bad = text.replacen("replacement = \"lru\"", "replacement = \"random\"", 1);
    assert_ne!(bad, text);
    let p = tmp("bad.toml", bad.as_bytes());
    let e = stderr(&tlblab(&["trace", "--machine", p.to_str().unwrap(), "-"]));
    assert!(e.contains("bad.toml") && e.contains("replacement") && e.contains("lru"), "{e}");
    let p = tmp("bad2.toml", text.replacen("ways = 4", "ways = 3", 1).as_bytes());
    let e = stderr(&tlblab(&["trace", "--machine", p.to_str().unwrap(), "-"]));
    assert!(e.contains("bad2.toml") && e.contains("tlb.structure["), "{e}");
}

#[test]
fn reach_is_deterministic() {
    let a = stdout(&tlblab(&["reach", "--quick"]));
    assert!(a.contains("pointer chase") && a.contains("ivybridge-4c8t"), "{a}");
    assert_eq!(a, stdout(&tlblab(&["reach", "--quick"])));
}

#[test]
fn run_prints_the_metric_counters_and_attribution() {
    let args = [
        "run",
        "--machine",
        "haswell-ep-2s",
        "--workload",
        "tlb_flush2_threads",
        "--threads",
        "3",
        "--duration",
        "300us",
        "--warmup",
        "100us",
    ];
    let out = stdout(&tlblab(&args));
    assert!(out.contains("ops:") && out.contains("ipis_sent") && out.contains("ipi_handler"), "{out}");
    assert!(out.contains("safety oracle: 0 violations"), "{out}");
    let mut j = args.to_vec();
    j.push("--json");
    let v: serde_json::Value = serde_json::from_str(&stdout(&tlblab(&j))).unwrap();
    assert_eq!(v["config"]["workload"], "tlb_flush2_threads");
    assert_eq!(v["metric"]["unit"], "ops/s");
    assert!(v["counters"]["ipis_sent"].as_u64().unwrap() > 0);
    assert_eq!(v["attribution"].as_array().unwrap().len(), 3);
    // More tasks than CPUs are time-sliced, which needs a context-switch cost; the MPC855T
    // profile (one CPU) has none, and the error says which key is missing.
    let e = stderr(&tlblab(&[
        "run",
        "--machine",
        "mpc855t",
        "--workload",
        "tlb_flush1_threads",
        "--threads",
        "2",
    ]));
    assert!(e.contains("kernel.context_switch_ns") && e.contains("allowed 1 ..= 1"), "{e}");
    let out = stdout(&tlblab(&[
        "run",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "tlb_flush1_threads",
        "--threads",
        "9",
        "--duration",
        "300us",
        // No switch falls in this short window; the counter exists (zero rows need this flag).
        "--all-counters",
    ]));
    assert!(out.contains("context_switches"), "{out}");
    let e = stderr(&tlblab(&[
        "run",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "tlb_flush1_threads",
        "--threads",
        "2",
        "--set",
        "read_tlb_gen=maybe",
    ]));
    assert!(e.contains("always | when-needed | never"), "{e}");
}

#[test]
fn run_prints_only_the_counters_that_counted_and_warns_when_too_coarse() {
    // 20 tasks of tlb_flush1 on Haswell-EP: ~116 counters, most of them zero.
    let args = ["run", "--machine", "haswell-ep-2s", "--workload", "tlb_flush1_threads", "--threads", "20"];
    let counters = |out: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.starts_with("counter "))
            .skip(1)
            .take_while(|l| !l.trim().is_empty() && !l.starts_with("(not shown"))
            .map(String::from)
            .collect()
    };
    let o = tlblab(&args);
    let out = stdout(&o);
    let shown = counters(&out);
    assert!(shown.len() <= 25 && shown.len() >= 10, "{} counter lines: {out}", shown.len());
    assert!(shown.iter().all(|l| l.split_whitespace().nth(1) != Some("0")), "{out}");
    assert!(out.contains("--all-counters shows them") && out.contains("ipi_handler"), "{out}");
    // Thousands of operations: no precision warning.
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err(&o).contains("warning"), "{}", err(&o));
    let all = stdout(&tlblab(&[&args[..], &["--all-counters"]].concat()));
    assert!(counters(&all).len() > 60 && all.contains("ext4_inodes") && !all.contains("(not shown"));
    // The README's old sweep window, 2 ms of ebizzy at one thread, counts ~11 records: a
    // warning with the step it resolves.
    let e = err(&tlblab(&[
        "run",
        "--machine",
        "ivybridge-4c8t",
        "--workload",
        "ebizzy",
        "--threads",
        "1",
        "--duration",
        "2ms",
    ]));
    assert!(e.contains("warning: this run counted 11 operation(s)") && e.contains("steps of 9.1%"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    // Without --duration the default window stretches until ~110 records count: no warning.
    let o = tlblab(&["run", "--machine", "ivybridge-4c8t", "--workload", "ebizzy", "--threads", "1"]);
    let ops: u64 = stdout(&o)
        .lines()
        .find_map(|l| l.split_once("  (")?.1.strip_suffix(" operations)")?.parse().ok())
        .unwrap();
    assert!(ops >= 100 && !err(&o).contains("warning"), "{ops}: {}", err(&o));
}

#[test]
fn unsafe_knob_is_caught_by_the_oracle() {
    let out = stdout(&tlblab(&[
        "run",
        "--machine",
        "haswell-ep-2s",
        "--workload",
        "tlb_flush2_threads",
        "--threads",
        "2",
        "--duration",
        "300us",
        "--warmup",
        "100us",
        "--set",
        "free_before_flush=on",
    ]));
    assert!(!out.contains("safety oracle: 0 violations"), "{out}");
}

#[test]
fn reproduce_seed_002_writes_a_stable_summary() {
    let dir = std::env::temp_dir().join(format!("tlblab-repro-{}", std::process::id()));
    let a = stdout(&tlblab(&["reproduce", "seed-002-tlb-gen", "--quick", "--out", dir.to_str().unwrap()]));
    assert!(a.contains("touch mm->tlb_gen") && a.contains("safety oracle: 0 violations"), "{a}");
    // A quick run says how far it was measured to be from the full run, and leaves out the
    // note, which describes the full run.
    assert!(
        a.contains("Measured against the full run (") && a.contains("claims give the full run's verdict"),
        "{a}"
    );
    assert!(!a.contains("\nNote: "), "{a}");
    let page = std::fs::read_to_string(dir.join("seed-002-tlb-gen/index.html")).unwrap();
    assert!(page.contains("(quick run)") && page.contains("Measured against the full run ("));
    // The spread over the seeds prints as CoeffVar; one run has none: `-`, not NaN.
    let coeffvar = a.lines().skip_while(|l| !l.starts_with("CoeffVar (%)")).nth(2).unwrap_or("");
    assert!(coeffvar.starts_with("1 ") && coeffvar.trim_end().ends_with(" -") && !a.contains("NaN"), "{a}");
    let text = std::fs::read_to_string(dir.join("seed-002-tlb-gen/summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["experiment"], "seed-002-tlb-gen");
    assert_eq!(v["machine"], "haswell-ep-2s");
    assert_eq!(v["metric"]["higher_is_better"], true);
    assert_eq!(v["kernels"].as_array().unwrap().len(), 4);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4 * 10);
    for key in ["kernel", "threads", "n", "mean", "stddev", "min", "max", "counters_per_op"] {
        assert!(rows[0].get(key).is_some(), "{key}");
    }
    assert!(rows[0]["counters_per_op"].get("ipis_sent").is_some());
    // Same inputs, same bytes, whatever the number of worker threads.
    let b = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(["reproduce", "seed-002-tlb-gen", "--quick", "--out", dir.join("b").to_str().unwrap()])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert!(b.status.success());
    assert_eq!(text, std::fs::read_to_string(dir.join("b/seed-002-tlb-gen/summary.json")).unwrap());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn kernel_tlb_refills_show_in_the_counters_and_the_knob_turns_them_off() {
    let run = |kernel_tlb: &str| -> serde_json::Value {
        let args = [
            "run",
            "--machine",
            "haswell-ep-2s",
            "--workload",
            "tlb_flush1_threads",
            "--threads",
            "4",
            "--duration",
            "300us",
            "--warmup",
            "100us",
            "--set",
            kernel_tlb,
            "--json",
        ];
        serde_json::from_str(&stdout(&tlblab(&args))).unwrap()
    };
    // 5.18.1 on Haswell runs with PTI and PCID: the kernel's entries go with every full flush.
    let on = run("kernel_tlb=on");
    let off = run("kernel_tlb=off");
    assert!(on["counters"]["kernel_tlb_misses"].as_u64().unwrap() > 100, "{}", on["counters"]);
    assert_eq!(off["counters"]["kernel_tlb_misses"].as_u64().unwrap(), 0);
    assert_eq!(on["config"]["knobs"]["text"]["kernel_tlb"], true);
    let list = stdout(&tlblab(&["list"]));
    assert!(list.contains("kernel_tlb") && list.contains("kernel text layout"), "{list}");
}

#[test]
fn a_preset_file_runs_like_the_built_in_it_spells_out_and_a_bad_one_exits_2() {
    let run = |kernel: &str| -> serde_json::Value {
        let args = [
            "run",
            "--machine",
            "haswell-ep-2s",
            "--workload",
            "tlb_flush2_threads",
            "--threads",
            "3",
            "--duration",
            "200us",
            "--warmup",
            "50us",
            "--kernel",
            kernel,
            "--json",
        ];
        serde_json::from_str(&stdout(&tlblab(&args))).unwrap()
    };
    // The same knobs as the built-in 5.18.1+patch, written out in a file of the user's.
    let mine = "description = \"mine\"\ninherits = \"5.18.1\"\n[flush]\nearly_return = true\n\
                read_tlb_gen = \"when-needed\"\n";
    let p = tmp("mine.toml", mine.as_bytes());
    let (file, builtin) = (run(p.to_str().unwrap()), run("5.18.1+patch"));
    assert_eq!(file["config"]["kernel"], "mine");
    assert_eq!(file["config"]["knobs"], builtin["config"]["knobs"]);
    assert_eq!(file["counters"], builtin["counters"]);
    assert_eq!(file["metric"], builtin["metric"]);
    // A bad value: one line naming the file, the key and the allowed values; exit code 2.
    let p = tmp("bad-kernel.toml", b"inherits = \"5.18.1\"\n[flush]\nread_tlb_gen = \"sometimes\"\n");
    let o = tlblab(&[
        "run",
        "--machine",
        "haswell-ep-2s",
        "--workload",
        "tlb_flush2_threads",
        "--kernel",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("bad-kernel.toml")
            && e.contains("flush.read_tlb_gen")
            && e.contains("always | when-needed | never"),
        "{e}"
    );
    let list = stdout(&tlblab(&["list"]));
    assert!(list.contains("5.18.1+patch") && list.contains("avoid reading mm_tlb_gen"), "{list}");
}

/// A reader that went away (`tlblab list | head -1`): the command ends by SIGPIPE, quietly, as
/// `cat` does, not with a panic on the broken pipe. The read end is closed before the command
/// writes, so its first write meets the broken pipe.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (r, w) = std::io::pipe().unwrap();
    drop(r);
    let out = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .arg("list")
        .stdout(w)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "nothing on stderr: {err}");
    // SIGPIPE is 13 on Linux.
    assert_eq!(out.status.signal(), Some(13), "{:?}", out.status);
}
