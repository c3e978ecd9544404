use super::*;
use crate::export::test_set::set;

#[test]
fn one_row_per_run_with_knob_columns_counters_and_attribution() {
    let s = set("tlb_flush1_threads", &["ceiling=0", "ceiling=33"]);
    let t = table(&s);
    assert_eq!(t.rows.len(), 2 * 2 * 2);
    assert_eq!(
        &t.columns[..7],
        ["experiment", "machine", "workload", "column", "ceiling", "threads", "seed"]
    );
    let col = |n: &str| t.columns.iter().position(|c| c == n).unwrap_or_else(|| panic!("no column {n}"));
    // The knob is a number; rows follow the set's cell order, seeds inner.
    let (ceil, thr, seed) = (col("ceiling"), col("threads"), col("seed"));
    let keys: Vec<(i64, u64, u64)> = t
        .rows
        .iter()
        .map(|r| (r[ceil].as_i64().unwrap(), r[thr].as_u64().unwrap(), r[seed].as_u64().unwrap()))
        .collect();
    assert_eq!(keys[..4], [(0, 1, 1), (0, 1, 2), (0, 2, 1), (0, 2, 2)]);
    assert_eq!(keys[4].0, 33);
    // The values are the runs' own.
    let r0 = &s.cells[0].runs[0];
    assert_eq!(t.rows[0][col("value")].as_f64().unwrap(), r0.metric.value);
    assert_eq!(t.rows[0][col("counters.ipis_sent")].as_u64().unwrap(), r0.counters["ipis_sent"]);
    let bucket = r0.attribution[0].keys().next().unwrap();
    let total: u64 = r0.attribution.iter().map(|m| m[bucket]).sum();
    assert_eq!(t.rows[0][col(&format!("attribution_ps.{bucket}"))].as_u64().unwrap(), total);
    assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
}

#[test]
fn labels_that_are_not_sweep_labels_get_no_knob_columns() {
    let s = set("tlb_flush1_threads", &["vanilla", "ceiling=1"]);
    let t = table(&s);
    assert_eq!(t.columns[4], "threads");
}

#[test]
fn csv_quotes_what_needs_it() {
    let t = Table {
        columns: vec!["column".into(), "v".into()],
        rows: vec![
            vec!["ceiling=33,alloc=mmap".into(), Value::from(1.5)],
            vec!["say \"x\"".into(), Value::Null],
        ],
    };
    assert_eq!(csv(&t), "column,v\n\"ceiling=33,alloc=mmap\",1.5\n\"say \"\"x\"\"\",\n");
}
