//! The comparison as data: each column's difference from the baseline with its bootstrap
//! interval ([`Delta`], the HTML page's difference table) and the tidy rows `compare --json` and
//! `--csv` write ([`TidyRow`]).

use std::fmt::Write;

use super::{Column, Comparison, Stat};
use crate::stats;

/// The mean's difference from the baseline at one operation for one column.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub op: String,
    /// Index into `Comparison::columns` (never 0, the baseline).
    pub column: usize,
    /// Which mean: `Hmean` or `Amean`.
    pub stat: &'static str,
    /// Percent better than the baseline.
    pub pct: f64,
    /// 95% bootstrap interval of `pct`.
    pub ci: Option<(f64, f64)>,
    /// mmtests' mark (non-overlapping intervals), or Welch's test in that mode.
    pub significant: bool,
}

/// One tidy row of `compare --json`/`--csv`: a statistic or a counter of one column at one
/// thread count. Column names are a contract for pandas users: add, never rename.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TidyRow {
    /// `set/kernel` with several sets, else the kernel.
    pub column: String,
    /// The result set's name (empty with one set).
    pub set: String,
    pub kernel: String,
    pub threads: String,
    /// `statistic` (a compare-kernels row) or `counter_per_op`.
    pub kind: &'static str,
    /// The statistic's mmtests name (`Hmean`, `BHmean.95`, ...) or the counter's.
    pub name: String,
    pub value: f64,
    /// Percent better than the first column (statistics of the other columns only).
    pub pct_better: Option<f64>,
    pub significant: bool,
    /// The 95% bootstrap interval of `pct_better`, on the mean's row.
    pub pct_ci_low: Option<f64>,
    pub pct_ci_high: Option<f64>,
}

impl Comparison {
    /// Per operation and column after the first: the mean's percent difference from the
    /// baseline (positive = better) with a 95% bootstrap interval
    /// ([`stats::bootstrap_pct_ci`]; `None` with fewer than two samples a side) and mmtests'
    /// mark.
    pub fn deltas(&self) -> Vec<Delta> {
        let stat = self.mean_stat();
        let hib = self.higher_is_better;
        let f: fn(&[f64]) -> f64 = if stat == Stat::Hmean { stats::hmean } else { stats::mean };
        let mut out = Vec::new();
        for op in &self.ops {
            let Some(base) = self.columns.first().and_then(|c| c.samples.get(op)).filter(|x| !x.is_empty())
            else {
                continue;
            };
            for (i, c) in self.columns.iter().enumerate().skip(1) {
                let Some(x) = c.samples.get(op).filter(|x| !x.is_empty()) else { continue };
                out.push(Delta {
                    op: op.clone(),
                    column: i,
                    stat: stat.name(),
                    pct: stats::percent_better(f(x), f(base), hib),
                    ci: stats::bootstrap_pct_ci(x, base, f, hib),
                    significant: stat.significant(self.mode, x, base),
                });
            }
        }
        out
    }

    /// The comparison as tidy rows (one per statistic or counter per operation per column),
    /// what `compare --json` and `--csv` write.
    pub fn tidy(&self) -> Vec<TidyRow> {
        let mut out = Vec::new();
        let col_name = |c: &Column| {
            if c.heading[0].is_empty() {
                c.heading[1].clone()
            } else {
                format!("{}/{}", c.heading[0], c.heading[1])
            }
        };
        let deltas = self.deltas();
        let mean = self.mean_stat().name();
        for l in self.lines() {
            for (i, e) in l.entries.iter().enumerate() {
                let Some(e) = e else { continue };
                let d = deltas.iter().find(|d| l.stat == mean && d.op == l.op && d.column == i);
                out.push(TidyRow {
                    column: col_name(&self.columns[i]),
                    set: self.columns[i].heading[0].clone(),
                    kernel: self.columns[i].heading[1].clone(),
                    threads: l.op.clone(),
                    kind: "statistic",
                    name: l.stat.to_string(),
                    value: e.value,
                    pct_better: (i > 0 && !e.pct.is_nan()).then_some(e.pct),
                    significant: i > 0 && e.significant,
                    pct_ci_low: d.and_then(|d| d.ci.map(|c| c.0)),
                    pct_ci_high: d.and_then(|d| d.ci.map(|c| c.1)),
                });
            }
        }
        for n in &self.counter_selection().shown {
            for op in &self.ops {
                let Some(row) = self.counter_row(n, op) else { continue };
                for (i, v) in row.into_iter().enumerate() {
                    let Some(v) = v else { continue };
                    out.push(TidyRow {
                        column: col_name(&self.columns[i]),
                        set: self.columns[i].heading[0].clone(),
                        kernel: self.columns[i].heading[1].clone(),
                        threads: op.clone(),
                        kind: "counter_per_op",
                        name: n.clone(),
                        value: v,
                        pct_better: None,
                        significant: false,
                        pct_ci_low: None,
                        pct_ci_high: None,
                    });
                }
            }
        }
        out
    }

    /// [`Comparison::tidy`] as CSV with a header line (RFC 4180 quoting where needed).
    pub fn to_csv(&self) -> String {
        let q = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let num = |v: f64| if v.is_finite() { format!("{v}") } else { String::new() };
        let opt = |v: Option<f64>| v.map_or(String::new(), num);
        let mut out = String::from(
            "column,set,kernel,threads,kind,name,value,pct_better,significant,pct_ci_low,pct_ci_high\n",
        );
        for r in self.tidy() {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{}",
                q(&r.column),
                q(&r.set),
                q(&r.kernel),
                r.threads,
                r.kind,
                q(&r.name),
                num(r.value),
                opt(r.pct_better),
                r.significant,
                opt(r.pct_ci_low),
                opt(r.pct_ci_high)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::Comparison;
    use crate::summary::tests::set;

    #[test]
    fn tidy_rows_csv_and_deltas() {
        let s = set(
            "e",
            &[("a", &[(1, &[100.0, 101.0, 99.0, 100.5])]), ("b", &[(1, &[110.0, 111.0, 109.0, 110.5])])],
        );
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        let d = c.deltas();
        assert_eq!(d.len(), 1);
        let (lo, hi) = d[0].ci.unwrap();
        assert!(d[0].significant && lo < d[0].pct && d[0].pct < hi && lo > 8.0, "{d:?}");
        let rows = c.tidy();
        // 6 statistics × 2 columns + 1 counter × 2 columns.
        assert_eq!(rows.len(), 14);
        let h = rows.iter().find(|r| r.name == "Hmean" && r.kernel == "b").unwrap();
        assert_eq!((h.pct_ci_low, h.pct_ci_high), (Some(lo), Some(hi)));
        assert_eq!(rows.iter().find(|r| r.name == "Hmean" && r.kernel == "a").unwrap().pct_better, None);
        let csv = c.to_csv();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next().unwrap(),
            "column,set,kernel,threads,kind,name,value,pct_better,significant,pct_ci_low,pct_ci_high"
        );
        assert_eq!(csv.lines().count(), 15);
        assert!(csv.lines().all(|l| l.split(',').count() == 11), "{csv}");
        assert!(csv.contains("b,,b,1,counter_per_op,ipis_sent,0.5,,false,,"), "{csv}");
        // Deterministic.
        assert_eq!(c.to_csv(), csv);
    }
}
