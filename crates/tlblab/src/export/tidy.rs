//! A result set as one tidy table: one row per run (cell × seed), one column per varied knob,
//! the metric, every counter and every time-attribution bucket. `tlblab export --format csv`
//! writes it as `runs.csv`; the Python API builds its `pandas.DataFrame` from the same rows, so
//! both always agree.

use serde_json::Value;
use std::collections::BTreeSet;
use tlblab_report::summary::ResultSet;

/// Column names and rows (each as long as `columns`; `Null` where a run lacks a counter).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// The knob values of a sweep column label (`ceiling=33,alloc=mmap`), if it is one.
fn knobs(label: &str) -> Option<Vec<(String, String)>> {
    label
        .split(',')
        .map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty() && v.iter().all(|(k, _)| !k.is_empty()))
}

/// A knob value as JSON: a number where it reads as one (so `ceiling` sorts numerically), else
/// text. Kernel presets stay text ("3.4" is not 3.40).
fn knob_value(key: &str, v: &str) -> Value {
    if key != "kernel" {
        if let Ok(i) = v.parse::<i64>() {
            return Value::from(i);
        }
        if let Some(f) = v.parse::<f64>().ok().filter(|f| f.is_finite()) {
            return Value::from(f);
        }
    }
    Value::from(v)
}

/// The set's runs, cells in the set's order, seeds in run order. `column` is the cell's column
/// label (a kernel of an experiment, a sweep's `ceiling=33,kernel=3.13`). When every label is a
/// sweep label with the same knobs, each knob gets a column after it (`ceiling`, `kernel`).
pub fn table(set: &ResultSet) -> Table {
    let parsed: Vec<Option<Vec<(String, String)>>> = set.kernels.iter().map(|k| knobs(k)).collect();
    let keys: Vec<String> = match parsed.first() {
        Some(Some(first)) => {
            let keys: Vec<String> = first.iter().map(|(k, _)| k.clone()).collect();
            let same =
                parsed.iter().all(|p| p.as_ref().is_some_and(|p| p.iter().map(|(k, _)| k).eq(keys.iter())));
            if same {
                keys
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    };
    let mut counters = BTreeSet::new();
    let mut buckets = BTreeSet::new();
    for r in set.cells.iter().flat_map(|c| &c.runs) {
        counters.extend(r.counters.keys().cloned());
        buckets.extend(r.attribution.iter().flat_map(|m| m.keys().cloned()));
    }
    let mut columns: Vec<String> =
        ["experiment", "machine", "workload", "column"].iter().map(|s| s.to_string()).collect();
    columns.extend(keys.iter().cloned());
    columns.extend(
        ["threads", "seed", "metric", "value", "unit", "higher_is_better", "operations", "oracle_violations"]
            .iter()
            .map(|s| s.to_string()),
    );
    columns.extend(counters.iter().map(|c| format!("counters.{c}")));
    columns.extend(buckets.iter().map(|b| format!("attribution_ps.{b}")));
    let mut rows = Vec::new();
    for c in &set.cells {
        let kv = knobs(&c.kernel).unwrap_or_default();
        for r in &c.runs {
            let mut row: Vec<Value> = vec![
                set.experiment.clone().into(),
                set.machine.clone().into(),
                set.workload.clone().into(),
                c.kernel.clone().into(),
            ];
            for k in &keys {
                let v = kv.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str()).unwrap_or("");
                row.push(knob_value(k, v));
            }
            row.extend([
                Value::from(c.threads),
                Value::from(r.config.seed),
                Value::from(r.metric.name.clone()),
                Value::from(r.metric.value),
                Value::from(r.metric.unit.clone()),
                Value::from(r.metric.higher_is_better),
                Value::from(r.operations()),
                Value::from(r.oracle.violations),
            ]);
            for n in &counters {
                row.push(r.counters.get(n).map_or(Value::Null, |v| Value::from(*v)));
            }
            for b in &buckets {
                // Summed over the CPUs that ran a task.
                let ps: Option<u64> = r
                    .attribution
                    .iter()
                    .filter_map(|m| m.get(b))
                    .fold(None, |acc, v| Some(acc.unwrap_or(0) + v));
                row.push(ps.map_or(Value::Null, Value::from));
            }
            rows.push(row);
        }
    }
    Table { columns, rows }
}

/// One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; numbers as
/// serde_json prints them (shortest round-trip form), empty for a missing value.
fn field(v: &Value) -> String {
    let s = match v {
        Value::Null => return String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// The table as CSV text with a header line.
pub fn csv(t: &Table) -> String {
    let mut out = String::new();
    for line in std::iter::once(t.columns.iter().map(|c| field(&Value::from(c.clone()))).collect::<Vec<_>>())
        .chain(t.rows.iter().map(|r| r.iter().map(field).collect()))
    {
        out += &line.join(",");
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
