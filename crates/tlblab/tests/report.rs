//! End-to-end tests of results on disk, resuming, `--jobs`, `compare` and the HTML report.

use crate::common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ok(o: Output) -> String {
    stdout(&o)
}

fn fails(o: Output) -> String {
    stderr(&o)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tlblab-report-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&d).ok();
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small experiment with three iterations per cell, so there is spread to test.
fn experiment(dir: &Path) -> PathBuf {
    let p = dir.join("report-test.toml");
    std::fs::write(
        &p,
        r#"name = "report-test"
seed_thread = "test"
title = "report test: tlb_flush1_threads, Haswell-EP"
machine = "haswell-ep-2s"
workload = "tlb_flush1_threads"
threads = [1, 4]
iterations = 3
quick_iterations = 3
warmup = "50us"
duration = "300us"
quick_duration = "300us"

[table]
rows = "tasks"
style = "bare"
stats = [{ of = "mean" }, { of = "coeffvar" }]

[[kernel]]
label = "5.18.1"
preset = "5.18.1"

[[kernel]]
label = "+patch"
preset = "5.18.1+patch"

[reference]
source = "made-up figures for the test"
[reference.values]
"5.18.1" = { 1 = 100000, 4 = 200000 }
"+patch" = { 4 = 210000 }
"#,
    )
    .unwrap();
    p
}

fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn jobs_do_not_change_a_byte_and_a_rerun_reuses_only_identical_cells() {
    let d = scratch("jobs");
    let exp = experiment(&d);
    let (a, b) = (d.join("a"), d.join("b"));
    ok(tlblab(&["reproduce", exp.to_str().unwrap(), "--jobs", "1", "--out", a.to_str().unwrap()]));
    let out = ok(tlblab(&["reproduce", exp.to_str().unwrap(), "-j", "2", "--out", b.to_str().unwrap()]));
    assert!(out.contains("index.html"), "{out}");
    // summary.json, every cell file, the page and its plots: identical bytes.
    let (ta, tb) = (tree(&a.join("report-test")), tree(&b.join("report-test")));
    let names: Vec<&str> = ta.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "summary.json",
        "index.html",
        "cells/5.18.1/t1.json",
        "cells/5.18.1/t4.json",
        "plots/metric.svg",
        "plots/metric.png",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert_eq!(names.iter().filter(|n| n.starts_with("cells/")).count(), 4);
    assert_eq!(ta, tb);
    // The page puts the seed's figures beside the model's: a table and hollow points in the plot.
    let html = std::fs::read_to_string(a.join("report-test/index.html")).unwrap();
    assert!(html.contains("<h2>Model beside the seed</h2>") && html.contains("<td>210000.00</td>"), "{html}");
    let svg = std::fs::read_to_string(a.join("report-test/plots/metric.svg")).unwrap();
    assert_eq!(svg.matches("<circle class=\"reference\"").count(), 3, "{svg}");

    // Each cell file holds every iteration and the configuration it ran.
    let cell = a.join("report-test/cells/5.18.1/t4.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&cell).unwrap()).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    assert_eq!(v["spec"]["seeds"], serde_json::json!([1, 2, 3]));
    assert_eq!(v["runs"][0]["schema_version"], 2);

    // A rerun reuses a finished cell whose configuration is identical: a value planted in the
    // file shows up in summary.json...
    edit_json(&cell, |v| v["runs"][0]["metric"]["value"] = serde_json::json!(1.0));
    ok(tlblab(&["reproduce", exp.to_str().unwrap(), "--out", a.to_str().unwrap()]));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("report-test/summary.json")).unwrap()).unwrap();
    let row =
        s["rows"].as_array().unwrap().iter().find(|r| r["kernel"] == "5.18.1" && r["threads"] == 4).unwrap();
    assert_eq!(row["min"], 1.0);
    // ...but not when the recorded configuration differs: the cell is run again.
    edit_json(&cell, |v| v["spec"]["seeds"] = serde_json::json!([1, 2, 4]));
    ok(tlblab(&["reproduce", exp.to_str().unwrap(), "--out", a.to_str().unwrap()]));
    assert_eq!(tree(&a.join("report-test")), tb);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn an_interrupted_run_leaves_whole_files_and_resumes_to_the_same_result() {
    let d = scratch("interrupt");
    let (a, b) = (d.join("a"), d.join("b"));
    let args = |out: &Path| {
        vec![
            "reproduce".to_string(),
            "seed-002-tlb-gen".into(),
            "--quick".into(),
            "--jobs".into(),
            "1".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(args(&a))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stop it part way (wherever it is: every check below holds at any moment).
    std::thread::sleep(std::time::Duration::from_millis(400));
    child.kill().unwrap();
    child.wait().unwrap();
    let exp = a.join("seed-002-tlb-gen");
    let partial = if exp.exists() { tree(&exp) } else { Vec::new() };
    for (name, bytes) in &partial {
        if name.ends_with(".json") && !name.rsplit('/').next().unwrap().starts_with('.') {
            serde_json::from_slice::<serde_json::Value>(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    // Resume, and compare with an uninterrupted run.
    ok(Command::new(env!("CARGO_BIN_EXE_tlblab")).args(args(&a)).output().unwrap());
    ok(Command::new(env!("CARGO_BIN_EXE_tlblab")).args(args(&b)).output().unwrap());
    let (ta, tb) = (tree(&exp), tree(&b.join("seed-002-tlb-gen")));
    assert!(ta.iter().all(|(n, _)| !n.contains(".tmp-")), "temporary files left behind");
    assert_eq!(ta, tb);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn compare_prints_mmtests_tables_and_writes_a_report() {
    let d = scratch("compare");
    let exp = experiment(&d);
    let (a, b, out) = (d.join("a"), d.join("b"), d.join("cmp"));
    ok(tlblab(&["reproduce", exp.to_str().unwrap(), "--out", a.to_str().unwrap()]));
    ok(tlblab(&["reproduce", exp.to_str().unwrap(), "--out", b.to_str().unwrap()]));
    let (sa, sb) = (a.join("report-test"), b.join("report-test"));
    let text = ok(tlblab(&[
        "compare",
        sa.to_str().unwrap(),
        sb.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--stats",
        "welch",
    ]));
    // Same directory name: the sets are told apart by their parents.
    assert!(text.contains("a/report-test") && text.contains("b/report-test"), "{text}");
    for stat in ["Min", "Amean", "Hmean", "Stddev", "CoeffVar", "Max", "BAmean-95"] {
        assert!(text.lines().any(|l| l.starts_with(&format!("{stat:<10}1 "))), "{stat}: {text}");
    }
    // Four columns, two kernels of each set: b's 5.18.1 ran exactly what the baseline (a's
    // 5.18.1) ran, so it shows 0.00% and no significance mark; b's +patch repeats a's.
    for l in text.lines().filter(|l| l.starts_with("Amean") || l.starts_with("Hmean")) {
        let values: Vec<f64> = l.split_whitespace().skip(2).filter_map(|t| t.parse().ok()).collect();
        let pcts: Vec<&str> = l.split_whitespace().filter(|t| t.contains('%')).collect();
        assert_eq!((values.len(), pcts.len()), (4, 4), "{l}");
        assert_eq!((values[0], values[1]), (values[2], values[3]), "{l}");
        assert_eq!(pcts[2], "0.00%)", "{l}");
    }
    assert!(text.contains("Events per operation") && text.lines().any(|l| l.starts_with("ipis_sent")));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("plots/metric.svg") && html.contains("Amean"));
    assert!(out.join("plots/metric.png").is_file());
    // By default the rows and marks of current mmtests, and the output says which commit.
    let cur = ok(tlblab(&["compare", sa.to_str().unwrap(), sb.to_str().unwrap()]));
    assert!(cur.contains("follow mmtests 638401e0"), "{cur}");
    let stats: Vec<&str> = cur
        .lines()
        .filter(|l| l.ends_with("%)") || l.ends_with("%*"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    for stat in ["Min", "Hmean", "HStddev", "HCoeffVar", "Max", "BHmean.95"] {
        assert!(stats.contains(&stat), "{stat}: {cur}");
    }
    assert!(!stats.contains(&"Amean"), "{cur}");
    // No counter row is zero in every column (as perf stat, only what counted);
    // --all-counters brings the rest back.
    let (sa_s, sb_s) = (sa.to_str().unwrap(), sb.to_str().unwrap());
    let counter_rows = |t: &str| -> Vec<String> {
        t.lines()
            .skip_while(|l| !l.starts_with("Events per operation"))
            .skip(1)
            .filter(|l| l.split_whitespace().nth(1).is_some_and(|op| op.parse::<u32>().is_ok()))
            .map(String::from)
            .collect()
    };
    let shown = counter_rows(&cur);
    assert!(!shown.is_empty(), "{cur}");
    for l in &shown {
        let values: Vec<f64> = l.split_whitespace().skip(2).filter_map(|t| t.parse().ok()).collect();
        assert!(values.iter().any(|v| *v != 0.0), "an all-zero row: {l}");
    }
    assert!(cur.contains("--all-counters shows them"), "{cur}");
    let all = ok(tlblab(&["compare", sa_s, sb_s, "--all-counters"]));
    assert!(counter_rows(&all).len() > shown.len());
    // The page follows --all-counters too; --stats subselection adds SubHmean and its interval.
    let out_all = d.join("cmp-all");
    let sub = ok(tlblab(&[
        "compare",
        sa_s,
        sb_s,
        "--all-counters",
        "--stats",
        "subselection",
        "--out",
        out_all.to_str().unwrap(),
    ]));
    assert!(sub.lines().any(|l| l.starts_with("SubHmeanCI")), "{sub}");
    let hidden = counter_rows(&all).into_iter().find(|r| !shown.contains(r)).unwrap();
    let name = hidden.split_whitespace().next().unwrap();
    let page = std::fs::read_to_string(out_all.join("index.html")).unwrap();
    assert!(page.contains(&format!("\n{name} ")) && page.contains("SubHmeanCI"), "{name}");
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(!page.contains(&format!("\n{name} ")), "{name}");
    // --csv and --json: the same tidy rows, one per statistic or counter per thread count per
    // column.
    let csv = ok(tlblab(&["compare", sa_s, sb_s, "--csv"]));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "column,set,kernel,threads,kind,name,value,pct_better,significant,pct_ci_low,pct_ci_high"
    );
    assert!(lines.clone().all(|l| l.split(',').count() == 11), "{csv}");
    assert!(
        lines.clone().any(|l| l.starts_with("b/report-test/") && l.contains(",statistic,Hmean,")),
        "{csv}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(tlblab(&["compare", sa_s, sb_s, "--json"]))).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), csv.lines().count() - 1);
    assert!(rows.iter().any(|r| r["kind"] == "counter_per_op" && r["name"] == "ipis_sent"));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Difference from the first column") && html.contains("95% interval"), "{html}");
    assert!(out.join("plots/attribution.svg").is_file());
    let e = fails(tlblab(&["compare", sa.to_str().unwrap(), "--stats", "t-test"]));
    assert!(e.contains("allowed: mmtests, subselection, welch"), "{e}");
    // An --out directory holding one experiment is accepted for that experiment.
    ok(tlblab(&["compare", a.to_str().unwrap(), sb.to_str().unwrap()]));

    // A set from another machine is refused unless forced.
    let sky = d.join("sky");
    ok(tlblab(&["reproduce", "seed-002-skylake", "--quick", "--out", sky.to_str().unwrap()]));
    let sky = sky.join("seed-002-skylake");
    let e = fails(tlblab(&["compare", sa.to_str().unwrap(), sky.to_str().unwrap()]));
    assert!(
        e.contains("not comparable")
            && e.contains("haswell-ep-2s")
            && e.contains("skylake-sp-2s")
            && e.contains("--force"),
        "{e}"
    );
    let forced = ok(tlblab(&["compare", sa.to_str().unwrap(), sky.to_str().unwrap(), "--force"]));
    // Thread counts of either set appear; cells one set lacks print as "-".
    assert!(
        forced.lines().any(|l| l.starts_with("Hmean     56")
            && l.trim_end().starts_with("Hmean     56")
            && l.contains(" - ")),
        "{forced}"
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn bad_inputs_are_named() {
    let e = fails(tlblab(&["compare", "/nonexistent/tlblab-set"]));
    assert!(e.contains("/nonexistent/tlblab-set"), "{e}");
    let e = fails(tlblab(&["reproduce", "seed-002-tlb-gen", "--quick", "--jobs", "0"]));
    assert!(e.contains("--jobs") && e.contains("'0'") && e.contains("1..=256"), "{e}");
}
