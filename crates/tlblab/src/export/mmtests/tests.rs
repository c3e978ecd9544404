use super::*;
use crate::export::test_set::set;

fn file<'a>(files: &'a [(PathBuf, String)], rel: &str) -> &'a str {
    &files.iter().find(|(p, _)| p == Path::new(rel)).unwrap_or_else(|| panic!("no {rel}")).1
}

#[test]
fn will_it_scale_benchlogs_one_total_line_per_seed() {
    let s = set("tlb_flush1_threads", &["ceiling=0", "ceiling=33"]);
    let f = files(&s).unwrap();
    let log = file(&f, "tlblab-ceiling_33/iter-0/wis-tlbflush/logs/benchlog-tlb_flush1_threads-2");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2);
    let cell = s.cell("ceiling=33", 2).unwrap();
    for (l, r) in lines.iter().zip(&cell.runs) {
        // wis/parse-results takes the third field after "total:".
        let total = l.split_whitespace().nth(2).unwrap();
        assert_eq!(total, format!("total:{:.0}", r.metric.value));
        assert!(l.starts_with("min:"), "{l}");
    }
    assert_eq!(file(&f, "tlblab-ceiling_0/iter-0/wis-tlbflush/logs/workloads"), "tlb_flush1\n");
    assert_eq!(file(&f, "tlblab-ceiling_0/iter-0/wis-tlbflush/logs/models"), "threads\n");
    // compare-kernels finds runs by "run-mmtests: Start" and benchmarks by field 6 of the
    // "test start ::" line.
    let act = file(&f, "tlblab-ceiling_0/iter-0/tests-activity");
    assert!(act.contains("run-mmtests: Start"));
    let start = act.lines().find(|l| l.contains("test start ::")).unwrap();
    assert_eq!(start.split_whitespace().nth(5), Some("wis-tlbflush"));
}

#[test]
fn ebizzy_logs_total_then_per_thread_rates() {
    let s = set("ebizzy", &["a"]);
    let f = files(&s).unwrap();
    let r = &s.cell("a", 2).unwrap().runs[1];
    let line = file(&f, "tlblab-a/iter-0/ebizzy/logs/ebizzy-2-2.log");
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[0], format!("{:.0}", r.metric.value));
    assert_eq!(fields[1], "records/s");
    assert_eq!(fields.len(), 2 + 2, "{line}");
}

#[test]
fn refuses_what_mmtests_cannot_hold() {
    let s = set("tlb_flush1_threads", &["a,b", "a=b"]);
    let e = files(&s).unwrap_err().to_string();
    assert!(e.contains("both become mmtests run `tlblab-a_b`"), "{e}");
    let e = Bench::of("pointer_chase").unwrap_err().to_string();
    assert!(e.contains("ebizzy and will-it-scale"), "{e}");
    assert_eq!(Bench::of("page_fault1_processes").unwrap().name(), "wis-pf");
    assert_eq!(Bench::of("mmap1_threads").unwrap().name(), "wis-mmap");
}

#[test]
fn run_names_have_one_dash_and_nothing_the_scripts_split() {
    assert_eq!(run_name("5.18.1"), "tlblab-5.18.1");
    assert_eq!(run_name("+patch"), "tlblab-patch");
    assert_eq!(run_name("5.18.1+patch"), "tlblab-5.18.1_patch");
    assert_eq!(run_name("touch_mm->tlb_gen"), "tlblab-touch_mm_tlb_gen");
    assert_eq!(run_name("3.13.0-rc3-vanilla"), "tlblab-3.13.0_rc3_vanilla");
    assert_eq!(run_name("ceiling=33, alloc=mmap"), "tlblab-ceiling_33_alloc_mmap");
    assert_eq!(run_name("--"), "tlblab-run");
    for l in ["a-b+c", "x (y)", "+-+", "v6.14 lazy"] {
        let n = run_name(l);
        // compare-mmtests.pl's header: the part before the first `-`, then the rest.
        assert_eq!(n.matches('-').count(), 1, "{n}");
        assert!(!n.contains(['+', ',', '=', ' ', '/']), "{n}");
    }
}

#[test]
fn duration_and_sysstate_lines_from_the_simulation() {
    let s = set("tlb_flush1_threads", &["ceiling=0"]);
    let f = files(&s).unwrap();
    let ts = file(&f, "tlblab-ceiling_0/iter-0/tests-timestamp");
    assert_eq!(ts, file(&f, "tlblab-ceiling_0/iter-0/tests-sysstate"));
    let lines: Vec<&str> = ts.lines().collect();
    assert_eq!(lines[0], "test begin :: wis-tlbflush 0");
    assert_eq!(lines[1], "test end :: wis-tlbflush 0 0");
    // MonitorDuration splits what follows "time :: <bench> " into user, system, elapsed.
    let t: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        (t[0], t[1], t[2], t[4], t[6], t[8]),
        ("time", "::", "wis-tlbflush", "user", "system", "elapsed")
    );
    let runs: Vec<&RunResult> = s.cells.iter().flat_map(|c| c.runs.iter()).collect();
    let elapsed: f64 = runs.iter().map(|r| r.config.measure_ps as f64 / 1e12).sum();
    assert_eq!(t[7], format!("{elapsed:.2}"));
    let busy: u64 = runs
        .iter()
        .flat_map(|r| &r.attribution)
        .flat_map(|c| c.iter())
        .filter(|(b, _)| *b != "idle")
        .map(|(_, v)| v)
        .sum();
    let (user, system): (f64, f64) = (t[3].parse().unwrap(), t[5].parse().unwrap());
    assert!(((user + system) - busy as f64 / 1e12).abs() < 0.011, "{} vs {busy}", lines[2]);
}

#[test]
fn hint_is_the_command_per_benchmark() {
    let runs = vec!["tlblab-a".to_string(), "tlblab-b".to_string(), "tlblab-c".to_string()];
    let wis = Bench::of("tlb_flush1_threads").unwrap();
    assert_eq!(
        hint(&wis, Path::new("/tmp/w log"), &runs),
        "cd '/tmp/w log' && ASSUME_PACKAGE_INSTALLED=yes \"$MMTESTS/compare-kernels.sh\" --baseline tlblab-a \
         --compare \"tlblab-b tlblab-c\""
    );
    assert_eq!(
        hint(&Bench::Ebizzy, Path::new("out"), &runs),
        "cd out && \"$MMTESTS/bin/compare-mmtests.pl\" -d . -b ebizzy -n tlblab-a,tlblab-b,tlblab-c \
         --sub-heading total_rsec"
    );
    assert!(!hint(&wis, Path::new("o"), &runs[..1]).contains("--compare"));
}
