use super::*;
use crate::export::test_set::set;

fn file<'a>(files: &'a [(PathBuf, String)], rel: &str) -> &'a str {
    &files.iter().find(|(p, _)| p == Path::new(rel)).unwrap_or_else(|| panic!("no {rel}")).1
}

#[test]
fn will_it_scale_benchlogs_one_total_line_per_seed() {
    let s = set("tlb_flush1_threads", &["ceiling=0", "ceiling=33"]);
    let f = files(&s).unwrap();
    let log = file(&f, "ceiling_33/iter-0/wis-tlbflush/logs/benchlog-tlb_flush1_threads-2");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2);
    let cell = s.cell("ceiling=33", 2).unwrap();
    for (l, r) in lines.iter().zip(&cell.runs) {
        // wis/parse-results takes the third field after "total:".
        let total = l.split_whitespace().nth(2).unwrap();
        assert_eq!(total, format!("total:{:.0}", r.metric.value));
        assert!(l.starts_with("min:"), "{l}");
    }
    assert_eq!(file(&f, "ceiling_0/iter-0/wis-tlbflush/logs/workloads"), "tlb_flush1\n");
    assert_eq!(file(&f, "ceiling_0/iter-0/wis-tlbflush/logs/models"), "threads\n");
    // compare-kernels finds runs by "run-mmtests: Start" and benchmarks by field 6 of the
    // "test start ::" line.
    let act = file(&f, "ceiling_0/iter-0/tests-activity");
    assert!(act.contains("run-mmtests: Start"));
    let start = act.lines().find(|l| l.contains("test start ::")).unwrap();
    assert_eq!(start.split_whitespace().nth(5), Some("wis-tlbflush"));
}

#[test]
fn ebizzy_logs_total_then_per_thread_rates() {
    let s = set("ebizzy", &["a"]);
    let f = files(&s).unwrap();
    let r = &s.cell("a", 2).unwrap().runs[1];
    let line = file(&f, "a/iter-0/ebizzy/logs/ebizzy-2-2.log");
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[0], format!("{:.0}", r.metric.value));
    assert_eq!(fields[1], "records/s");
    assert_eq!(fields.len(), 2 + 2, "{line}");
}

#[test]
fn refuses_what_mmtests_cannot_hold() {
    let s = set("tlb_flush1_threads", &["a,b", "a=b"]);
    let e = files(&s).unwrap_err().to_string();
    assert!(e.contains("both become mmtests run `a_b`"), "{e}");
    let e = Bench::of("pointer_chase").unwrap_err().to_string();
    assert!(e.contains("ebizzy and will-it-scale"), "{e}");
    assert_eq!(Bench::of("page_fault1_processes").unwrap().name(), "wis-pf");
    assert_eq!(Bench::of("mmap1_threads").unwrap().name(), "wis-mmap");
}
