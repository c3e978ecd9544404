//! mmtests `compare-kernels`-style comparison of several columns (kernels, possibly from several
//! result sets) over a list of operations (thread counts, or any other labels):
//!
//! ```text
//!                               5.18.1                 5.18.1
//!                              vanilla                  patch
//! Hmean     1        1234.00 (   0.00%)     1300.00 *   5.35%*
//! ```
//!
//! Rows are grouped by statistic, then operation, as mmtests prints them; the first column is
//! the baseline; the percentage is positive when the column is better (stats::percent_better);
//! a mean whose difference from the baseline is significant by Welch's t-test is printed as
//! `*  x.xx%*` instead of `(  x.xx%)`.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::stats;
use crate::summary::ResultSet;

/// The significance level of the `*` marks.
pub const ALPHA: f64 = 0.05;

/// One column: a two-line heading and the samples per operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub heading: [String; 2],
    pub samples: BTreeMap<String, Vec<f64>>,
    pub counters_per_op: BTreeMap<String, BTreeMap<String, f64>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub ops: Vec<String>,
    /// What the operations are (e.g. "threads"); shown in the HTML table header.
    pub op_name: String,
    pub columns: Vec<Column>,
    pub higher_is_better: bool,
}

/// One printed value: the statistic, its percentage against the baseline, its significance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    pub value: f64,
    pub pct: f64,
    pub significant: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub stat: &'static str,
    pub op: String,
    /// One per column; `None` where the column has no samples for the operation.
    pub entries: Vec<Option<Entry>>,
}

/// The statistics rows, in mmtests' multiops order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stat {
    Min,
    Amean,
    Hmean,
    Stddev,
    CoeffVar,
    Max,
    BAmean95,
}

impl Stat {
    const ALL: [Stat; 7] =
        [Stat::Min, Stat::Amean, Stat::Hmean, Stat::Stddev, Stat::CoeffVar, Stat::Max, Stat::BAmean95];

    fn name(self) -> &'static str {
        match self {
            Stat::Min => "Min",
            Stat::Amean => "Amean",
            Stat::Hmean => "Hmean",
            Stat::Stddev => "Stddev",
            Stat::CoeffVar => "CoeffVar",
            Stat::Max => "Max",
            Stat::BAmean95 => "BAmean-95",
        }
    }

    fn value(self, x: &[f64], hib: bool) -> f64 {
        match self {
            Stat::Min => stats::min(x),
            Stat::Amean => stats::mean(x),
            Stat::Hmean => stats::hmean(x),
            Stat::Stddev => stats::stddev(x),
            Stat::CoeffVar => stats::coeffvar(x),
            Stat::Max => stats::max(x),
            Stat::BAmean95 => stats::bamean(x, 95, hib),
        }
    }

    /// Spread rows are better when lower, whatever the metric's direction.
    fn higher_is_better(self, hib: bool) -> bool {
        match self {
            Stat::Stddev | Stat::CoeffVar => false,
            _ => hib,
        }
    }

    /// Welch's test on the samples for the arithmetic mean, and on their reciprocals for the
    /// harmonic mean (the harmonic mean is the reciprocal of the mean reciprocal).
    fn significant(self, new: &[f64], base: &[f64]) -> bool {
        let recip = |x: &[f64]| x.iter().map(|v| 1.0 / v).collect::<Vec<f64>>();
        match self {
            Stat::Amean => stats::welch_significant(new, base, ALPHA),
            Stat::Hmean if new.iter().chain(base).all(|v| *v > 0.0) => {
                stats::welch_significant(&recip(new), &recip(base), ALPHA)
            }
            _ => false,
        }
    }
}

impl Comparison {
    /// Columns are the kernels of each set in order; with more than one set, the set's name
    /// heads its columns (labels may repeat across sets).
    pub fn from_sets(sets: &[(String, &ResultSet)]) -> Comparison {
        let mut ops: Vec<u32> = Vec::new();
        for (_, s) in sets {
            for t in s.threads() {
                if !ops.contains(&t) {
                    ops.push(t);
                }
            }
        }
        let mut columns = Vec::new();
        for (name, s) in sets {
            for k in &s.kernels {
                let mut samples = BTreeMap::new();
                let mut counters = BTreeMap::new();
                for c in s.cells.iter().filter(|c| &c.kernel == k) {
                    samples.insert(c.threads.to_string(), c.samples());
                    counters.insert(c.threads.to_string(), c.counters_per_op());
                }
                // One set needs no name over its columns.
                let top = if sets.len() > 1 { name.clone() } else { String::new() };
                columns.push(Column { heading: [top, k.clone()], samples, counters_per_op: counters });
            }
        }
        Comparison {
            ops: ops.iter().map(u32::to_string).collect(),
            op_name: "threads".into(),
            columns,
            higher_is_better: sets.first().is_some_and(|(_, s)| s.metric.higher_is_better),
        }
    }

    /// Every statistics row with its entries.
    pub fn lines(&self) -> Vec<Line> {
        let hib = self.higher_is_better;
        let mut out = Vec::new();
        for stat in Stat::ALL {
            for op in &self.ops {
                let base = self.columns.first().and_then(|c| c.samples.get(op)).filter(|x| !x.is_empty());
                let entries = self
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let x = c.samples.get(op).filter(|x| !x.is_empty())?;
                        let value = stat.value(x, hib);
                        let (pct, significant) = match base {
                            Some(b) if i > 0 => (
                                stats::percent_better(value, stat.value(b, hib), stat.higher_is_better(hib)),
                                stat.significant(x, b),
                            ),
                            _ => (0.0, false),
                        };
                        Some(Entry { value, pct, significant })
                    })
                    .collect();
                out.push(Line { stat: stat.name(), op: op.clone(), entries });
            }
        }
        out
    }

    /// The mmtests-style text table.
    pub fn render(&self) -> String {
        let w = self.column_width();
        let op_w = self.ops.iter().map(String::len).max().unwrap_or(1).max(5);
        let mut out = String::new();
        for line in 0..2 {
            let mut s = " ".repeat(10 + op_w);
            for c in &self.columns {
                let _ = write!(s, " {:>w$}", c.heading[line]);
            }
            if s.trim().is_empty() {
                continue;
            }
            out += s.trim_end();
            out.push('\n');
        }
        for l in self.lines() {
            let mut s = format!("{:<10}{:<op_w$}", l.stat, l.op);
            for e in &l.entries {
                let _ = write!(s, " {:>w$}", fmt_entry(e));
            }
            out += s.trim_end();
            out.push('\n');
        }
        out
    }

    fn column_width(&self) -> usize {
        let longest = self.columns.iter().flat_map(|c| c.heading.iter().map(String::len)).max().unwrap_or(0);
        let cells = self.lines().iter().flat_map(|l| l.entries.iter().map(|e| fmt_entry(e).len())).max();
        longest.max(cells.unwrap_or(0)).max(23)
    }

    /// Counter names present in any column.
    pub fn counter_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .columns
            .iter()
            .flat_map(|c| c.counters_per_op.values().flat_map(|m| m.keys().cloned()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Event counters per operation, side by side: one row per (counter, operation).
    pub fn render_counters(&self) -> String {
        let op_w = self.ops.iter().map(String::len).max().unwrap_or(1).max(5);
        let names = self.counter_names();
        let name_w = names.iter().map(String::len).max().unwrap_or(8).max(8) + 2;
        let w =
            self.columns.iter().flat_map(|c| c.heading.iter().map(String::len)).max().unwrap_or(0).max(12);
        let mut out = String::new();
        for line in 0..2 {
            let mut s = " ".repeat(name_w + op_w);
            for c in &self.columns {
                let _ = write!(s, " {:>w$}", c.heading[line]);
            }
            if !s.trim().is_empty() {
                out += s.trim_end();
                out.push('\n');
            }
        }
        for n in &names {
            for op in &self.ops {
                let mut s = format!("{n:<name_w$}{op:<op_w$}");
                for c in &self.columns {
                    let v = c.counters_per_op.get(op).and_then(|m| m.get(n));
                    let _ = write!(s, " {:>w$}", v.map_or("-".to_string(), |v| fmt_counter(*v)));
                }
                out += s.trim_end();
                out.push('\n');
            }
        }
        out
    }
}

/// A value as mmtests prints it: `%.2f`, NaN as `NaN`.
pub fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v:.2}")
    }
}

/// `value (  pct%)`, or `value *  pct%*` when significant; `-` for a missing cell.
pub fn fmt_entry(e: &Option<Entry>) -> String {
    match e {
        None => "-".into(),
        Some(e) if e.significant => format!("{:>12} *{:>7.2}%*", fmt_value(e.value), e.pct),
        Some(e) => format!("{:>12} ({:>7.2}%)", fmt_value(e.value), e.pct),
    }
}

/// Counters per operation span from hundredths to thousands: four significant digits at least.
pub fn fmt_counter(v: f64) -> String {
    if v == 0.0 || v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::set;

    #[test]
    fn mmtests_layout_signs_and_marks() {
        // Higher is better. Baseline 100/101/99 at one thread; "b" is clearly better (110s, tight)
        // and "c" only noisily different.
        let s = set(
            "e",
            &[
                ("a", &[(1, &[100.0, 101.0, 99.0])]),
                ("b", &[(1, &[110.0, 111.0, 109.0])]),
                ("c", &[(1, &[90.0, 120.0, 95.0])]),
            ],
        );
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        let text = c.render();
        let line = |stat: &str| text.lines().find(|l| l.starts_with(stat)).unwrap().to_string();
        // Amean: b +10% significant; c (305/3 = 101.67, +1.67%) not.
        // (Columns are 24 wide here: c's CoeffVar percent, -1460.xx, needs one more character.)
        assert_eq!(
            line("Amean"),
            format!(
                "{:<15} {:>24} {:>24} {:>24}",
                "Amean     1", "100.00 (   0.00%)", "110.00 *  10.00%*", "101.67 (   1.67%)"
            )
        );
        // Stddev: lower is better even though the metric is higher-is-better:
        // a's stddev 1, c's sqrt(763.33/… ) is larger -> negative percent.
        let sd = line("Stddev");
        assert!(
            sd.starts_with(&format!(
                "{:<15} {:>24} {:>24}",
                "Stddev    1", "1.00 (   0.00%)", "1.00 (   0.00%)"
            )),
            "{sd}"
        );
        let c_sd = stats::stddev(&[90.0, 120.0, 95.0]);
        assert!(sd.contains(&format!("({:>7.2}%)", 100.0 - c_sd * 100.0)), "{sd}");
        // Min of c is 90 against 99: worse, negative.
        assert!(line("Min").ends_with(&format!("{} ({:>7.2}%)", "90.00", 90.0 * 100.0 / 99.0 - 100.0)));
        // BAmean-95 of three samples is the mean of the best two.
        assert!(line("BAmean-95").contains("100.50 (   0.00%)"), "{}", line("BAmean-95"));
        // The groups come in mmtests' order.
        let order: Vec<&str> = text.lines().skip(1).map(|l| l.split_whitespace().next().unwrap()).collect();
        assert_eq!(order, ["Min", "Amean", "Hmean", "Stddev", "CoeffVar", "Max", "BAmean-95"]);
    }

    #[test]
    fn lower_is_better_flips_the_mean_sign() {
        let mut s = set("e", &[("a", &[(4, &[11.17, 11.17])]), ("b", &[(4, &[10.52, 10.52])])]);
        s.metric.higher_is_better = false;
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        let amean = c.lines().into_iter().find(|l| l.stat == "Amean").unwrap();
        // The facts sheet's tlbflush example: 11.17 -> 10.52 is 5.82% better. No spread: no mark.
        let e = amean.entries[1].unwrap();
        assert_eq!((format!("{:.2}", e.pct), e.significant), ("5.82".to_string(), false));
    }

    #[test]
    fn several_sets_head_columns_with_their_names_and_missing_cells_show_a_dash() {
        let a = set("x", &[("5.18.1", &[(1, &[10.0, 11.0]), (2, &[20.0, 21.0])])]);
        let b = set("y", &[("5.18.1", &[(1, &[12.0, 13.0])])]);
        let c = Comparison::from_sets(&[("run-a".into(), &a), ("run-b".into(), &b)]);
        let text = c.render();
        let mut head = text.lines();
        assert!(head.next().unwrap().contains("run-a") && text.contains("run-b"));
        assert!(head.next().unwrap().matches("5.18.1").count() == 2);
        let min2 = text.lines().find(|l| l.starts_with("Min       2")).unwrap();
        assert!(min2.trim_end().ends_with(" -"), "{min2}");
        let counters = c.render_counters();
        assert!(counters.lines().any(|l| l.starts_with("ipis_sent") && l.contains("0.5000")), "{counters}");
    }

    #[test]
    fn number_formats() {
        assert_eq!(
            fmt_entry(&Some(Entry { value: 266.3, pct: 1.85, significant: true })),
            "      266.30 *   1.85%*"
        );
        assert_eq!(
            fmt_entry(&Some(Entry { value: f64::NAN, pct: 0.0, significant: false })),
            "         NaN (   0.00%)"
        );
        assert_eq!(
            (fmt_counter(0.0), fmt_counter(2.0), fmt_counter(0.05), fmt_counter(123.45)),
            ("0.0".into(), "2.000".into(), "0.0500".into(), "123.5".into())
        );
    }
}
