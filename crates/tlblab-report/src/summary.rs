//! A saved result set: every run of an experiment grouped into (kernel, thread count) cells,
//! and its `summary.json` (one row per cell). The JSON layout of [`Summary`] is a contract
//! other tools read: fields may be added, never removed or renamed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tlblab_model::run::RunResult;

use crate::stats;

/// One row of `summary.json`: a (kernel, thread count) cell over its iterations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub kernel: String,
    pub threads: u32,
    pub n: u32,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    pub counters_per_op: BTreeMap<String, f64>,
    pub oracle_violations: u64,
    /// Operations per second of measured time, summed over the tasks (mean over the
    /// iterations): a counter per op times this is the counter's rate.
    #[serde(default)]
    pub ops_per_second: f64,
    /// Per task of the workload (kernel threads it adds excluded), its operations in the
    /// measured interval, mean over the iterations (vm-scalability's per-process times).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_ops: Vec<f64>,
    /// Time by attribution bucket summed over the CPUs, mean over the iterations, in ps.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attribution_ps: BTreeMap<String, f64>,
    /// The harmonic mean of the samples (mmtests' `Hmean`), where the table's layout prints it
    /// (seed 004's); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmean: Option<f64>,
}

impl Row {
    /// mmtests' CoeffVar of the cell (`stats::coeffvar_of`); 0 for one run, which has no spread.
    pub fn coeffvar(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            crate::stats::coeffvar_of(self.stddev, self.mean)
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricInfo {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// Version of `summary.json`'s layout: a reader refuses a newer one. A file written before the
/// field existed is version 1.
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

fn first_version() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    #[serde(default = "first_version")]
    pub schema_version: u32,
    pub experiment: String,
    pub machine: String,
    pub workload: String,
    pub metric: MetricInfo,
    pub kernels: Vec<String>,
    pub rows: Vec<Row>,
    /// The seed's published figures beside the model's (`[reference]` of the experiment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<crate::seed_table::RefPoint>,
}

/// Every iteration of one (kernel, thread count) cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub kernel: String,
    pub threads: u32,
    pub runs: Vec<RunResult>,
}

impl Cell {
    /// The metric of every iteration, in iteration order.
    pub fn samples(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.metric.value).collect()
    }

    /// Mean over the iterations of each counter divided by the operations of its run.
    pub fn counters_per_op(&self) -> BTreeMap<String, f64> {
        let mut names: Vec<&String> = self.runs.iter().flat_map(|r| r.counters.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let v: Vec<f64> = self.runs.iter().map(|r| r.per_op(n)).collect();
                (n.clone(), stats::mean(&v))
            })
            .collect()
    }

    /// Per task of the workload, its measured operations, mean over the iterations.
    pub fn task_ops(&self) -> Vec<f64> {
        let Some(first) = self.runs.first() else { return Vec::new() };
        let tasks = (first.config.tasks as usize).min(first.iterations.len());
        let n = self.runs.len() as f64;
        (0..tasks)
            .map(|i| {
                self.runs.iter().map(|r| r.iterations.get(i).copied().unwrap_or(0) as f64).sum::<f64>() / n
            })
            .collect()
    }

    /// Time by attribution bucket summed over the CPUs, averaged over the iterations, in ps.
    pub fn attribution(&self) -> BTreeMap<String, f64> {
        let mut sum: BTreeMap<String, f64> = BTreeMap::new();
        for r in &self.runs {
            for cpu in &r.attribution {
                for (bucket, ps) in cpu {
                    *sum.entry(bucket.clone()).or_default() += *ps as f64;
                }
            }
        }
        let n = self.runs.len().max(1) as f64;
        sum.values_mut().for_each(|v| *v /= n);
        sum
    }
}

/// A whole experiment's results: what `summary.json` summarises, with every iteration kept.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    pub experiment: String,
    pub machine: String,
    pub workload: String,
    pub metric: MetricInfo,
    /// Column order.
    pub kernels: Vec<String>,
    /// Row order: kernels outer, thread counts inner, as `summary.json` lists them.
    pub cells: Vec<Cell>,
}

impl ResultSet {
    /// [`ResultSet::summary`] with each row's harmonic mean (mmtests' `Hmean`) filled in.
    pub fn summary_with_hmean(&self) -> Summary {
        let mut s = self.summary();
        for (row, c) in s.rows.iter_mut().zip(&self.cells) {
            row.hmean = Some(stats::hmean(&c.samples()));
        }
        s
    }

    /// Thread counts in first-seen order.
    pub fn threads(&self) -> Vec<u32> {
        let mut t: Vec<u32> = Vec::new();
        for c in &self.cells {
            if !t.contains(&c.threads) {
                t.push(c.threads);
            }
        }
        t
    }

    pub fn cell(&self, kernel: &str, threads: u32) -> Option<&Cell> {
        self.cells.iter().find(|c| c.kernel == kernel && c.threads == threads)
    }

    /// The `summary.json` rows. A single iteration reports a stddev of 0 (not NaN, which JSON
    /// cannot hold).
    pub fn summary(&self) -> Summary {
        let rows = self
            .cells
            .iter()
            .map(|c| {
                let x = c.samples();
                Row {
                    kernel: c.kernel.clone(),
                    threads: c.threads,
                    n: x.len() as u32,
                    mean: stats::mean(&x),
                    stddev: if x.len() > 1 { stats::stddev(&x) } else { 0.0 },
                    min: stats::min(&x),
                    max: stats::max(&x),
                    counters_per_op: c.counters_per_op(),
                    oracle_violations: c.runs.iter().map(|r| r.oracle.violations).sum(),
                    ops_per_second: stats::mean(
                        &c.runs
                            .iter()
                            .map(|r| r.operations() as f64 / (r.config.measure_ps as f64 * 1e-12))
                            .collect::<Vec<_>>(),
                    ),
                    task_ops: c.task_ops(),
                    attribution_ps: c.attribution(),
                    hmean: None,
                }
            })
            .collect();
        Summary {
            schema_version: SUMMARY_SCHEMA_VERSION,
            experiment: self.experiment.clone(),
            machine: self.machine.clone(),
            workload: self.workload.clone(),
            metric: self.metric.clone(),
            kernels: self.kernels.clone(),
            rows,
            reference: Vec::new(),
        }
    }
}

/// FNV-1a, 64 bit: a stable hash (unlike std's, which is seeded per process) for fingerprints
/// and file names.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// A file-name-safe form of a label: ASCII letters, digits, `.`, `-` and `_` kept, anything else
/// becomes `_`; when that changed the label, 8 hex digits of its hash keep distinct labels
/// distinct (`+patch` and `_patch` must not share a file).
pub fn slug(label: &str) -> String {
    let s: String =
        label.chars().map(|c| if c.is_ascii_alphanumeric() || ".-_".contains(c) { c } else { '_' }).collect();
    let s = s.trim_start_matches('.').to_string();
    if s == label && !s.is_empty() {
        s
    } else {
        format!("{s}-{:08x}", fnv1a64(label.as_bytes()) as u32)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tlblab_model::run::{Metric, OracleReport, RunConfig};

    /// A synthetic run: `value` as the metric, `ops` operations, a few counters and two CPUs of
    /// attribution.
    pub(crate) fn run(value: f64, ops: u64, ipis: u64) -> RunResult {
        RunResult {
            schema_version: tlblab_model::run::RESULT_SCHEMA_VERSION,
            tlblab_version: "test".into(),
            config: RunConfig {
                machine: "m".into(),
                kernel: "k".into(),
                knobs: tlblab_model::linux::config::KernelConfig::preset("5.18.1").unwrap().knobs(),
                workload: "w".into(),
                tasks: 2,
                seed: 1,
                warmup_ps: 1,
                measure_ps: 1,
            },
            metric: Metric { name: "ops".into(), unit: "ops/s".into(), higher_is_better: true, value },
            iterations: vec![ops / 2, ops - ops / 2],
            counters: [("ipis_sent".to_string(), ipis)].into_iter().collect(),
            attribution: vec![
                [("user".to_string(), 30), ("ipi_wait".to_string(), 10)].into_iter().collect(),
                [("user".to_string(), 20), ("ipi_wait".to_string(), 40)].into_iter().collect(),
            ],
            oracle: OracleReport { violations: 0, examples: vec![] },
        }
    }

    pub(crate) fn set(name: &str, kernels: &[(&str, &[(u32, &[f64])])]) -> ResultSet {
        let mut cells = Vec::new();
        for (k, rows) in kernels {
            for (t, xs) in *rows {
                cells.push(Cell {
                    kernel: k.to_string(),
                    threads: *t,
                    runs: xs.iter().map(|&x| run(x, 100, 50)).collect(),
                });
            }
        }
        ResultSet {
            experiment: name.into(),
            machine: "m".into(),
            workload: "w".into(),
            metric: MetricInfo { name: "ops".into(), unit: "ops/s".into(), higher_is_better: true },
            kernels: kernels.iter().map(|(k, _)| k.to_string()).collect(),
            cells,
        }
    }

    #[test]
    fn summary_rows_and_json_layout() {
        let s = set("e", &[("a", &[(1, &[10.0, 20.0]), (2, &[5.0])])]).summary();
        assert_eq!(s.rows.len(), 2);
        assert_eq!((s.rows[0].mean, s.rows[0].min, s.rows[0].max, s.rows[0].n), (15.0, 10.0, 20.0, 2));
        assert_eq!(s.rows[1].stddev, 0.0);
        assert_eq!(s.rows[0].counters_per_op["ipis_sent"], 0.5);
        let v: serde_json::Value = serde_json::to_value(&s).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["experiment", "kernels", "machine", "metric", "rows", "schema_version", "workload"]
        );
        assert_eq!(v["schema_version"], SUMMARY_SCHEMA_VERSION);
        // A file from before the version existed reads as version 1.
        let mut old = v.clone();
        old.as_object_mut().unwrap().remove("schema_version");
        assert_eq!(serde_json::from_value::<Summary>(old).unwrap().schema_version, 1);
        let row: Vec<&String> = v["rows"][0].as_object().unwrap().keys().collect();
        assert_eq!(
            row,
            [
                "attribution_ps",
                "counters_per_op",
                "kernel",
                "max",
                "mean",
                "min",
                "n",
                "ops_per_second",
                "oracle_violations",
                "stddev",
                "task_ops",
                "threads"
            ]
        );
    }

    #[test]
    fn slugs_are_file_names_and_distinct() {
        assert_eq!(slug("5.18.1"), "5.18.1");
        let (a, b) = (slug("+patch"), slug("_patch"));
        assert!(a.starts_with("_patch-") && a.len() == 15 && b == "_patch");
        assert!(slug("no mm->tlb_gen [*]").starts_with("no_mm-_tlb_gen____-"));
        assert!(!slug("..").starts_with('.') && !slug("").is_empty() && !slug("a/b").contains('/'));
        // FNV-1a test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn attribution_sums_cpus_and_averages_iterations() {
        let c = Cell { kernel: "a".into(), threads: 2, runs: vec![run(1.0, 10, 0), run(2.0, 10, 0)] };
        let a = c.attribution();
        assert_eq!((a["user"], a["ipi_wait"]), (50.0, 50.0));
    }
}
