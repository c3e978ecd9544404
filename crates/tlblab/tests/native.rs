//! End-to-end tests of `tlblab probe`, `tlblab native` and `tlblab validate` on the real host.
//! They run briefly (quick probe, sub-second workloads) and must work on 2 CPUs and in a VM.

use crate::common::*;

fn tmp_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tlblab-native-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `tlblab validate --machine milan-1s --quick` on `workloads` with `extra` arguments, its JSON.
/// A built-in profile keeps these tests independent of the probe's timing; the full command
/// (probe, then validate on its profile) is what the README shows.
fn validate_json(workloads: &[&str], extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["validate", "--machine", "milan-1s", "--quick", "--json"];
    for w in workloads {
        args.extend(["--workload", w]);
    }
    args.extend(extra);
    serde_json::from_str(&stdout(&tlblab(&args))).unwrap()
}

/// `tlblab validate --quick` of one short tlb_flush2 run on the profile file `machine`, its JSON.
fn validate_tlb_flush2_on(machine: &std::path::Path) -> serde_json::Value {
    let m = machine.to_str().unwrap();
    let args = ["--runs", "1", "--seconds", "0.2", "--warmup", "0.05"];
    let mut all = vec!["validate", "--machine", m, "--quick", "--json", "--workload", "tlb_flush2"];
    all.extend(args);
    serde_json::from_str(&stdout(&tlblab(&all))).unwrap()
}

#[test]
fn quick_probe_writes_a_profile_that_loads_and_runs() {
    let dir = tmp_dir();
    let profile = dir.join("host.toml");
    let o = tlblab(&["probe", "--quick", "--json", "--write-profile", profile.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["clock_mhz"]["median"].as_f64().unwrap() > 100.0);
    assert_eq!(v["shootdown"]["points"].as_array().unwrap().len(), 22);
    assert!(v["cache"].as_array().unwrap().len() == 4);
    // The profile validates (tlblab refuses invalid ones) and every number cites the probe or
    // says what it assumed.
    let text = std::fs::read_to_string(&profile).unwrap();
    assert!(text.contains("tlblab probe"), "{text}");
    let o = tlblab(&[
        "run",
        "--machine",
        profile.to_str().unwrap(),
        "--workload",
        "tlb_flush2_threads",
        "--threads",
        "1",
        "--duration",
        "200us",
        "--warmup",
        "50us",
    ]);
    assert!(stdout(&o).contains("ops:"));
    // Beside it the probe's spread (the slow and fast quartile ends, unless one could not be
    // built, which it says), and no temporary file left behind by the atomic writes.
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let mut left: Vec<_> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    for end in ["host-fast.toml", "host-slow.toml"] {
        assert!(left.iter().any(|f| f == end) || err.contains("end of the spread"), "{left:?}");
    }
    assert!(
        left.iter()
            .all(|f| ["host.toml", "host-fast.toml", "host-slow.toml", "host-probe.json"]
                .contains(&f.as_str())),
        "{left:?}"
    );
    // The report beside it: validate builds the host again from it as the primitives measure
    // just before and after each cell's runs, and simulates seed 1 on both (validate/phase.rs).
    assert!(left.iter().any(|f| f == "host-probe.json"), "{left:?}");
    let v = validate_tlb_flush2_on(&profile);
    let ends = left.iter().filter(|f| f.ends_with("-fast.toml") || f.ends_with("-slow.toml")).count() as u64;
    for c in v["cases"].as_array().unwrap() {
        let samples = c["phase"]["samples"].as_array().unwrap();
        let when: Vec<&str> = samples.iter().map(|s| s["when"].as_str().unwrap()).collect();
        assert_eq!(when, ["before", "after"], "{c}");
        assert_eq!(c["sim"]["runs"].as_u64().unwrap(), 1 + ends + 2, "{c}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn validate_simulates_on_the_spread_written_beside_the_profile() {
    let dir = std::env::temp_dir().join(format!("tlblab-native-spread-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/milan-1s.toml");
    let text = std::fs::read_to_string(root).unwrap();
    std::fs::write(dir.join("host.toml"), &text).unwrap();
    // Two runs of `probe --repeat` (here the same profile, with a slower clock for the second).
    std::fs::write(dir.join("host-run1.toml"), &text).unwrap();
    let slow = text.replacen("clock_mhz = { value = 2450,", "clock_mhz = { value = 1225,", 1);
    assert_ne!(slow, text, "the stand-in's clock changed: update this test");
    std::fs::write(dir.join("host-run2.toml"), &slow).unwrap();
    let v: serde_json::Value = validate_tlb_flush2_on(&dir.join("host.toml"));
    let notes = v["notes"].to_string();
    assert!(notes.contains("host-run1.toml") && notes.contains("host-run2.toml"), "{notes}");
    let sim = &v["cases"][0]["sim"];
    // Seed 1 on the central profile and on each run's; no probe report beside these, so the
    // primitives are not measured again around the cell (it says so).
    assert_eq!(sim["runs"].as_u64().unwrap(), 3, "{sim}");
    assert!(v["cases"][0]["phase"].is_null() && notes.contains("no probe report beside"), "{notes}");
    // One probe's quartile ends, when present, are taken instead of older runs.
    std::fs::write(dir.join("host-slow.toml"), &text).unwrap();
    std::fs::write(dir.join("host-fast.toml"), &text).unwrap();
    let v: serde_json::Value = validate_tlb_flush2_on(&dir.join("host.toml"));
    let notes = v["notes"].to_string();
    assert!(notes.contains("host-slow.toml") && !notes.contains("host-run1.toml"), "{notes}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cpuid_dump_is_the_sample_format() {
    let text = stdout(&tlblab(&["probe", "--dump-cpuid"]));
    if cfg!(target_arch = "x86_64") {
        assert!(text.lines().any(|l| l.starts_with("0x00000000 0x0: ")), "{text}");
    }
}

#[test]
fn native_tlb_flush2_counts_operations_and_ipis() {
    let o =
        tlblab(&["native", "tlb_flush2", "--threads", "2", "--seconds", "0.3", "--warmup", "0.1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["workload"], "tlb_flush2");
    assert_eq!(v["threads"], 2);
    assert!(v["operations"].as_u64().unwrap() > 0);
    assert_eq!(v["unit"], "ops/s");
    // /proc/interrupts has a TLB row on x86 Linux.
    if std::fs::read_to_string("/proc/interrupts").is_ok_and(|t| t.contains("TLB:")) {
        assert!(v["ipis_per_op"].as_f64().is_some());
    }
}

#[test]
fn native_ebizzy_and_page_fault1_run() {
    for w in ["ebizzy", "page_fault1", "tlb_flush1", "tlb_flush3"] {
        let o = tlblab(&["native", w, "--threads", "1", "--seconds", "0.2", "--warmup", "0.05"]);
        let out = stdout(&o);
        assert!(out.contains(if w == "ebizzy" { "records/s" } else { "ops/s" }), "{out}");
    }
}

#[test]
fn bad_native_input_names_the_choices() {
    let o = tlblab(&["native", "tlb_flush9"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("tlb_flush9") && e.contains("tlb_flush1") && e.contains("ebizzy"), "{e}");
    let o = tlblab(&["native", "tlb_flush1", "--threads", "0"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--threads"));
}

#[test]
fn validate_puts_real_and_simulated_side_by_side() {
    let v = validate_json(&["tlb_flush2", "hackbench-pipes"], &["--seconds", "0.3"]);
    assert!(v["host"]["kernel"].as_str().is_some_and(|k| !k.is_empty()), "{v}");
    assert!(v["host"]["kernel_reason"].as_str().is_some(), "{v}");
    let cases = v["cases"].as_array().unwrap();
    let flush: Vec<&serde_json::Value> = cases.iter().filter(|c| c["workload"] == "tlb_flush2").collect();
    assert!(!flush.is_empty(), "{v}");
    for c in cases {
        for side in ["real", "sim"] {
            let s = &c[side];
            let (lo, med, hi) =
                (s["min"].as_f64().unwrap(), s["median"].as_f64().unwrap(), s["max"].as_f64().unwrap());
            assert!(lo <= med && med <= hi && med > 0.0, "{c}");
        }
        // Two real runs; two seeds (a built-in profile has no probe report to sample around).
        assert_eq!(c["real"]["runs"], 2, "{c}");
        assert_eq!(c["sim"]["runs"].as_u64().unwrap(), 2, "{c}");
        let e = c["error"].as_f64().unwrap();
        let want = (c["sim"]["median"].as_f64().unwrap() - c["real"]["median"].as_f64().unwrap())
            / c["real"]["median"].as_f64().unwrap();
        assert!((e - want).abs() < 1e-9, "{c}");
        assert!(["consistent", "model high", "model low"].contains(&c["verdict"].as_str().unwrap()), "{c}");
        // The real side per CPU the workload got: every run's CPU time recorded, the normalised
        // figure beside the raw one, and (both workloads are CPU-bound) the verdict on it.
        let runs = c["real_runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{c}");
        for r in runs {
            assert!(r["cpu_seconds"].as_f64().is_some_and(|x| x > 0.0), "{c}");
            let (busy, sim) = (r["busy_cpus"].as_f64().unwrap(), c["sim_busy_cpus"].as_f64().unwrap());
            let want = if c["workload"] == "hackbench-pipes" {
                r["value"].as_f64().unwrap() * busy / sim
            } else {
                r["value"].as_f64().unwrap() * sim / busy
            };
            assert!((r["at_sim_cpus"].as_f64().unwrap() - want).abs() <= 1e-9 * want.abs(), "{c}");
        }
        assert_eq!(c["real_per_cpu"]["runs"], 2, "{c}");
        assert_eq!(c["cpu_bound"], true, "{c}");
        let e = c["error_per_cpu"].as_f64().unwrap();
        let want = (c["sim"]["median"].as_f64().unwrap() - c["real_per_cpu"]["median"].as_f64().unwrap())
            / c["real_per_cpu"]["median"].as_f64().unwrap();
        assert!((e - want).abs() < 1e-9, "{c}");
        if e.abs() <= 0.25 {
            assert_eq!(c["verdict"], "consistent", "{c}");
        }
        assert!(c["ipis_per_op"]["sim"].as_f64().is_some_and(|x| x >= 0.0), "{c}");
        // Switches a operation on both sides: hackbench's receivers sleep on empty pipes; a
        // tlb_flush2 thread has its CPU to itself in the model and sleeps only on mmap_lock and
        // (per-VMA locks) in vma_start_write.
        let (vr, vs) = (&c["voluntary_switches_per_op"]["real"], &c["voluntary_switches_per_op"]["sim"]);
        let vs = vs.as_f64().unwrap();
        assert!(vr.as_f64().is_some_and(|x| x >= 0.0), "{c}");
        assert!(c["involuntary_switches_per_op"]["sim"].as_f64().is_some_and(|x| x >= 0.0), "{c}");
        if c["workload"] == "hackbench-pipes" {
            assert!(vr.as_f64().unwrap() > 0.0 && vs > 0.0, "{c}");
        } else {
            let sleeps = c["sim_mmap_lock_sleeps_per_op"].as_f64().unwrap()
                + c["sim_vma_start_write_sleeps_per_op"].as_f64().unwrap();
            assert!((vs - sleeps).abs() < 1e-12, "{c}");
        }
        if std::fs::read_to_string("/proc/interrupts").is_ok_and(|t| t.contains("CAL:")) {
            assert!(c["cal_per_op"]["real"].as_f64().is_some(), "{c}");
        }
    }
    // hackbench ran where rt-tests is installed, else it says why it was skipped.
    let hb = cases.iter().any(|c| c["workload"] == "hackbench-pipes");
    let tool = v["host"]["tools"].as_array().unwrap().iter().find(|t| t[0] == "hackbench").unwrap().clone();
    let notes = v["notes"].to_string();
    assert!(hb == !tool[1].is_null() || notes.contains("hackbench-pipes at"), "{v}");
    if !tool[1].is_null() {
        assert!(notes.contains("borrowed from `ivybridge-i3-3240`"), "{notes}");
    }
}

/// netperf's stream loop is tlblab-native's own (netperf is not packaged): it runs wherever two
/// CPUs are allowed, at the two message sizes, beside the seed experiments' netperf text.
#[test]
fn validate_runs_netperf_natively() {
    let v = validate_json(&["netperf-udp"], &["--runs", "1", "--seconds", "0.2", "--warmup", "0.1"]);
    let notes = v["notes"].to_string();
    let cases = v["cases"].as_array().unwrap();
    if v["host"]["cpus"].as_u64().unwrap() < 2 {
        assert!(cases.is_empty() && notes.contains("netperf-udp: skipped"), "{v}");
        return;
    }
    let sizes: Vec<u64> = cases.iter().map(|c| c["tasks"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [64, 8192], "{v}");
    for c in cases {
        assert_eq!(c["workload"], "netperf-udp", "{c}");
        assert_eq!(c["point"], "msg bytes", "{c}");
        assert_eq!(c["unit"], "10^6bits/s", "{c}");
        assert!(c["real"]["median"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["sim"]["median"].as_f64().unwrap() > 0.0, "{c}");
    }
}

/// coreutils' dd writes its tmpfs files beside the model's x86 twin, one process per task, and
/// leaves no file behind.
#[test]
fn validate_runs_dd_beside_its_x86_twin() {
    // No built-in profile has the tmpfs write path's cost (the probe measures it): on one
    // without it the cell is skipped with the key's name; with it (a test value) it runs.
    let v = validate_json(&["dd"], &["--runs", "1"]);
    assert!(v["cases"].as_array().unwrap().is_empty(), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("dd at 1 skipped") && notes.contains("fs.tmpfs_write_cycles"), "{notes}");
    let dir = tmp_dir();
    let profile = dir.join("i3-tmpfs.toml");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/ivybridge-i3-3240.toml"))
        .unwrap()
        .replacen(
            "[fs]\n",
            "[fs]\ntmpfs_write_cycles = { value = 550, source = \"a test value, not a measurement\", confidence = \"estimate\" }\n",
            1,
        );
    std::fs::write(&profile, text).unwrap();
    let o = tlblab(&[
        "validate",
        "--machine",
        profile.to_str().unwrap(),
        "--quick",
        "--json",
        "--workload",
        "dd",
        "--runs",
        "1",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cases = v["cases"].as_array().unwrap();
    let want: Vec<u64> = (1..=v["host"]["cpus"].as_u64().unwrap().min(2)).collect();
    let got: Vec<u64> = cases.iter().map(|c| c["tasks"].as_u64().unwrap()).collect();
    assert_eq!(got, want, "{v}");
    for c in cases {
        assert_eq!((c["workload"].as_str(), c["point"].as_str()), (Some("dd"), Some("processes")), "{c}");
        assert_eq!(c["unit"], "seconds", "{c}");
        assert!(
            c["real"]["median"].as_f64().unwrap() > 0.0 && c["sim"]["median"].as_f64().unwrap() > 0.0,
            "{c}"
        );
    }
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().into_string().unwrap()).collect())
        .unwrap_or_default();
    let pid_files = left.iter().filter(|f: &&String| f.starts_with("tlblab-dd-")).count();
    assert_eq!(pid_files, 0, "{left:?}");
}

/// lru-file-mmap-read needs a writable memory cgroup: where there is one it gives a cell per
/// reader count with the model's metric, else it says why it was skipped.
#[test]
fn validate_runs_lru_file_mmap_read_in_a_memory_cgroup_or_says_why_not() {
    let v = validate_json(&["lru-file-mmap-read"], &["--runs", "1", "--seconds", "0.2", "--warmup", "0.2"]);
    let notes = v["notes"].to_string();
    let cases = v["cases"].as_array().unwrap();
    if cases.is_empty() {
        assert!(notes.contains("lru-file-mmap-read at 1 skipped"), "{v}");
    } else {
        for c in cases {
            assert_eq!(c["point"], "readers", "{c}");
            assert_eq!(c["unit"], "seconds", "{c}");
            assert!(c["real"]["median"].as_f64().unwrap() > 0.0, "{c}");
            // The readers are processes: their CPU time comes from /proc, not this process's.
            let per_cpu = c["real_per_cpu"]["median"].as_f64();
            assert!(per_cpu.is_some_and(|x| x.is_finite() && x > 0.0), "{c}");
        }
        assert!(notes.contains("borrowed from `ivybridge-4c8t`"), "{notes}");
    }
}

#[test]
fn repeated_quick_probes_report_every_key_across_runs() {
    // A directory of its own: the other probe test counts the files in tmp_dir().
    let dir = std::env::temp_dir().join(format!("tlblab-native-repeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("central.toml");
    let o = tlblab(&[
        "probe",
        "--quick",
        "--repeat",
        "2",
        "--json",
        "--write-profile",
        profile.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    let keys = v["keys"].as_array().unwrap();
    let clock = keys.iter().find(|k| k["key"] == "cpu.clock_mhz").expect("cpu.clock_mhz");
    assert_eq!(clock["values"].as_array().unwrap().len(), 2);
    assert!(clock["spread"].as_f64().unwrap() >= 0.0);
    assert!(keys.iter().any(|k| k["key"] == "kernel.invlpg_cycles"));
    // Each run's raw blocks are in the output, and the central run's profile was written.
    assert!(!v["runs"][0]["shootdown"]["blocks"].as_array().unwrap().is_empty());
    let n = v["most_central_run"].as_u64().unwrap();
    assert!(n == 1 || n == 2);
    assert!(std::fs::read_to_string(&profile).unwrap().contains("blocks min"));
    // Each run whose measurements gave a profile has its own file (on a busy host a quick run
    // can fail to give one, and then says so in a warning).
    let warnings = v["warnings"].as_array().unwrap();
    for i in 1..=2 {
        let failed =
            warnings.iter().any(|w| w.as_str().unwrap().starts_with(&format!("run {i}: no profile")));
        assert_eq!(dir.join(format!("central-run{i}.toml")).exists(), !failed, "run {i}: {warnings:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_repeat_of_zero_is_refused() {
    let o = tlblab(&["probe", "--repeat", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--repeat"));
}

/// fs_mark writes its own log (`fs_log.txt`) into its working directory: `validate` runs it in
/// its own scratch tree, so nothing appears where tlblab was started.
#[test]
fn validate_leaves_nothing_where_it_was_started() {
    let cwd = std::env::temp_dir().join(format!("tlblab-validate-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&cwd).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(["validate", "--machine", "milan-1s", "--quick", "--workload", "fsmark", "--json"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ran = v["cases"].as_array().unwrap().iter().any(|c| c["workload"] == "fsmark");
    let tool = v["host"]["tools"].as_array().unwrap().iter().find(|t| t[0] == "fs_mark").cloned();
    assert_eq!(ran, tool.is_some_and(|t| !t[1].is_null()), "fs_mark ran where it is installed: {v}");
    let left: Vec<_> = std::fs::read_dir(&cwd).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "files left where tlblab was started: {left:?}");
    std::fs::remove_dir_all(&cwd).unwrap();
}
