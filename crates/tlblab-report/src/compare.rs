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
//! a mean whose difference from the baseline is significant is printed as `*  x.xx%*` instead
//! of `(  x.xx%)`.
//!
//! Two conventions ([`Mode`]):
//! - `Mmtests` (default) follows mmtests as of [`MMTESTS_COMMIT`]: a Multiops summary
//!   (`SummariseMultiops`) of Min, the mean, its standard deviation and coefficient of variation,
//!   Max and the mean of the best 95%, where "the mean" is the harmonic mean for a
//!   higher-is-better benchmark (Hmean, HStddev, HCoeffVar, BHmean.95) and the arithmetic one
//!   otherwise (Amean, Stddev, CoeffVar, BAmean.95). Significance (commit 8cd087ae, Nov 2024):
//!   the mean's confidence interval is mean ± qnorm(0.975, 0, stddev), i.e. 1.96 × stddev (not
//!   divided by √n), and a mean is marked when the intervals do not overlap (|cidiff| > 1).
//! - `Welch` is mmtests before Nov 2024 as tlblab printed it first: Min, Amean, Hmean, Stddev,
//!   CoeffVar, Max, BAmean-95, and Welch's t-test at 95% on the means.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::stats;
use crate::summary::ResultSet;

mod tidy;
pub use tidy::{Delta, TidyRow};

/// The significance level of the `*` marks.
pub const ALPHA: f64 = 0.05;

/// The gormanm/mmtests commit whose compare-kernels rows and significance `Mode::Mmtests`
/// follows (HEAD on 2026-06-25).
pub const MMTESTS_COMMIT: &str = "638401e0";

/// qnorm(0.975): the 97.5% quantile of the standard normal distribution, which mmtests'
/// `_calc_meanci` takes from R (`qnorm(1-alpha/2, mean=0, sd=stddev)` with alpha 0.05).
pub const QNORM_975: f64 = 1.959_963_984_540_054;

/// Which compare-kernels convention the table follows (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Mmtests,
    /// mmtests' `Subselection` summary (`setSummarySubselection`): the multiops rows plus the
    /// subselection estimate and its confidence half-width (`SubHmean`, `SubHmeanCI`), and the
    /// mark on the estimate by `cidiff` of the two intervals.
    Subselection,
    Welch,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "mmtests" => Ok(Mode::Mmtests),
            "subselection" => Ok(Mode::Subselection),
            "welch" => Ok(Mode::Welch),
            _ => Err(format!("--stats `{s}`: allowed: mmtests, subselection, welch")),
        }
    }

    /// One sentence for the reports: what the rows and the marks are.
    pub fn describe(self) -> String {
        match self {
            Mode::Mmtests => format!(
                "Rows and *x%* marks follow mmtests {MMTESTS_COMMIT} (compare-kernels, Multiops): a mean is \
                 marked when its confidence interval (mean ± 1.96 × its stddev, from R's qnorm) does not \
                 overlap the first column's."
            ),
            Mode::Subselection => format!(
                "Rows follow mmtests {MMTESTS_COMMIT}'s Subselection summary: SubHmean (SubAmean) is the \
                 median mean of 1,000 draws of 80% of the iterations with replacement and SubHmeanCI its \
                 95% half-width (after Kalibera, Bulej and Tůma; seeded here, so a table repeats); an \
                 estimate is marked when its interval does not overlap the first column's."
            ),
            Mode::Welch => format!(
                "Rows follow mmtests before Nov 2024; *x%* marks a mean that differs from the first \
                 column's by Welch's t-test at {}%.",
                (1.0 - ALPHA) * 100.0
            ),
        }
    }
}

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
    pub mode: Mode,
    /// Print every counter (`--all-counters`); else only those [`crate::counters::applicable`]
    /// keeps.
    pub all_counters: bool,
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
    HStddev,
    HCoeffVar,
    BHmean95,
    /// `submean-_mean` and `submeanci-_mean` (Stat.pm `calc_submean`, `calc_submeanci`).
    SubAmean,
    SubAmeanCI,
    SubHmean,
    SubHmeanCI,
}

impl Stat {
    const WELCH: [Stat; 7] =
        [Stat::Min, Stat::Amean, Stat::Hmean, Stat::Stddev, Stat::CoeffVar, Stat::Max, Stat::BAmean95];
    /// mmtests `setSummaryMultiops`: min, _mean, stddev-_mean, coeffvar-_mean, max, _mean-95.
    const MULTIOPS_HMEAN: [Stat; 6] =
        [Stat::Min, Stat::Hmean, Stat::HStddev, Stat::HCoeffVar, Stat::Max, Stat::BHmean95];
    const MULTIOPS_AMEAN: [Stat; 6] =
        [Stat::Min, Stat::Amean, Stat::Stddev, Stat::CoeffVar, Stat::Max, Stat::BAmean95];
    /// mmtests `setSummarySubselection`: min, _mean, _mean-95, stddev-_mean, coeffvar-_mean, max,
    /// submean-_mean, submeanci-_mean.
    const SUBSELECTION_HMEAN: [Stat; 8] = [
        Stat::Min,
        Stat::Hmean,
        Stat::BHmean95,
        Stat::HStddev,
        Stat::HCoeffVar,
        Stat::Max,
        Stat::SubHmean,
        Stat::SubHmeanCI,
    ];
    const SUBSELECTION_AMEAN: [Stat; 8] = [
        Stat::Min,
        Stat::Amean,
        Stat::BAmean95,
        Stat::Stddev,
        Stat::CoeffVar,
        Stat::Max,
        Stat::SubAmean,
        Stat::SubAmeanCI,
    ];

    fn rows(mode: Mode, hib: bool) -> &'static [Stat] {
        match (mode, hib) {
            (Mode::Welch, _) => &Stat::WELCH,
            (Mode::Mmtests, true) => &Stat::MULTIOPS_HMEAN,
            (Mode::Mmtests, false) => &Stat::MULTIOPS_AMEAN,
            (Mode::Subselection, true) => &Stat::SUBSELECTION_HMEAN,
            (Mode::Subselection, false) => &Stat::SUBSELECTION_AMEAN,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Stat::Min => "Min",
            Stat::Amean => "Amean",
            Stat::Hmean => "Hmean",
            Stat::Stddev => "Stddev",
            Stat::CoeffVar => "CoeffVar",
            Stat::Max => "Max",
            Stat::BAmean95 => "BAmean-95",
            Stat::HStddev => "HStddev",
            Stat::HCoeffVar => "HCoeffVar",
            Stat::BHmean95 => "BHmean.95",
            Stat::SubAmean => "SubAmean",
            Stat::SubAmeanCI => "SubAmeanCI",
            Stat::SubHmean => "SubHmean",
            Stat::SubHmeanCI => "SubHmeanCI",
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
            Stat::HStddev => stats::hstddev(x),
            Stat::HCoeffVar => stats::hcoeffvar(x),
            Stat::BHmean95 => stats::bhmean(x, 95, hib),
            Stat::SubAmean => stats::subselection_ci(x, stats::mean).map_or(f64::NAN, |c| c.0),
            Stat::SubAmeanCI => stats::subselection_ci(x, stats::mean).map_or(f64::NAN, |c| c.1),
            Stat::SubHmean => stats::subselection_ci(x, stats::hmean).map_or(f64::NAN, |c| c.0),
            Stat::SubHmeanCI => stats::subselection_ci(x, stats::hmean).map_or(f64::NAN, |c| c.1),
        }
    }

    /// Spread rows are better when lower, whatever the metric's direction (Stat.pm compares
    /// `submeanci` with `pndiff` too).
    fn higher_is_better(self, hib: bool) -> bool {
        match self {
            Stat::Stddev
            | Stat::CoeffVar
            | Stat::HStddev
            | Stat::HCoeffVar
            | Stat::SubAmeanCI
            | Stat::SubHmeanCI => false,
            _ => hib,
        }
    }

    /// Welch's test on the samples for the arithmetic mean, and on their reciprocals for the
    /// harmonic mean (the harmonic mean is the reciprocal of the mean reciprocal).
    fn significant(self, mode: Mode, new: &[f64], base: &[f64]) -> bool {
        if mode == Mode::Subselection {
            let sub = |m: fn(&[f64]) -> f64| match (
                stats::subselection_ci(new, m),
                stats::subselection_ci(base, m),
            ) {
                (Some((m1, q1)), Some((m0, q0))) => stats::cidiff(m1, q1, m0, q0).abs() > 1.0,
                _ => false,
            };
            return match self {
                Stat::SubHmean => sub(stats::hmean),
                Stat::SubAmean => sub(stats::mean),
                _ => false,
            };
        }
        if mode == Mode::Mmtests {
            return match self {
                Stat::Hmean => ci_apart(new, base, stats::hmean, stats::hstddev),
                Stat::Amean => ci_apart(new, base, stats::mean, stats::stddev),
                _ => false,
            };
        }
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

/// The confidence half-width mmtests uses: R's qnorm(0.975, 0, stddev) as R prints it, to 7
/// significant digits (the Perl reads R's text back).
pub fn ci_half_width(stddev: f64) -> f64 {
    let q = QNORM_975 * stddev;
    if q == 0.0 || !q.is_finite() {
        return q;
    }
    let digits = 6 - q.abs().log10().floor() as i32;
    let scale = 10f64.powi(digits.abs());
    if digits >= 0 {
        (q * scale).round() / scale
    } else {
        (q / scale).round() * scale
    }
}

/// mmtests' significance since 8cd087ae: the intervals mean ± ci_half_width(stddev) of the two
/// columns do not overlap (|cidiff| > 1). An undefined mean or stddev (one sample; a sample
/// <= 0 under the harmonic mean) marks nothing (R gives NaN there, and NaN compares false).
pub(crate) fn ci_apart(new: &[f64], base: &[f64], mean: fn(&[f64]) -> f64, sd: fn(&[f64]) -> f64) -> bool {
    let (m1, m0) = (mean(new), mean(base));
    let (q1, q0) = (ci_half_width(sd(new)), ci_half_width(sd(base)));
    stats::cidiff(m1, q1, m0, q0).abs() > 1.0
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
        // Thread counts in numeric order, whatever order the sets list them in.
        ops.sort_unstable();
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
            mode: Mode::default(),
            all_counters: false,
        }
    }

    /// The same comparison printing every counter (`true`) or only those that apply.
    pub fn with_all_counters(self, all_counters: bool) -> Comparison {
        Comparison { all_counters, ..self }
    }

    /// The same comparison under another convention.
    pub fn with_mode(self, mode: Mode) -> Comparison {
        Comparison { mode, ..self }
    }

    /// Every statistics row with its entries.
    pub fn lines(&self) -> Vec<Line> {
        let hib = self.higher_is_better;
        let mut out = Vec::new();
        for &stat in Stat::rows(self.mode, hib) {
            for op in &self.ops {
                let base = self.columns.first().and_then(|c| c.samples.get(op)).filter(|x| !x.is_empty());
                let entries = self
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let x = c.samples.get(op).filter(|x| !x.is_empty())?;
                        let value = stat.value(x, hib);
                        // mmtests' Compare.pm prints a NaN statistic (the stddev of one
                        // iteration) as 0 with a 0% difference.
                        if self.mode != Mode::Welch && value.is_nan() {
                            return Some(Entry { value: 0.0, pct: 0.0, significant: false });
                        }
                        let (pct, significant) = match base {
                            Some(b) if i > 0 => {
                                let bv = stat.value(b, hib);
                                let bv = if self.mode != Mode::Welch && bv.is_nan() { 0.0 } else { bv };
                                (
                                    stats::percent_better(value, bv, stat.higher_is_better(hib)),
                                    stat.significant(self.mode, x, b),
                                )
                            }
                            // No baseline cell: nothing to compare with (printed `-`).
                            None if i > 0 => (f64::NAN, false),
                            _ => (0.0, false),
                        };
                        Some(Entry { value, pct, significant })
                    })
                    .collect();
                // mmtests names the best-95% means `BAmean.95` / `BHmean.95` (Stat.pm's
                // "amean-" => "BAmean.%d"); tlblab's first tables said `BAmean-95`.
                let name = match (self.mode, stat) {
                    (Mode::Mmtests | Mode::Subselection, Stat::BAmean95) => "BAmean.95",
                    _ => stat.name(),
                };
                out.push(Line { stat: name, op: op.clone(), entries });
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

    /// The counters to print: [`crate::counters::applicable`] over every (column, operation),
    /// or all of them with `all_counters`.
    pub fn counter_selection(&self) -> crate::counters::Selection {
        crate::counters::applicable(
            self.columns.iter().flat_map(|c| c.counters_per_op.values()),
            self.all_counters,
        )
    }

    /// One counter's value per column at `op` (`None` where the column has no cell); `None`
    /// for the whole row when, unless printing every counter, it is zero in every column.
    fn counter_row(&self, name: &str, op: &str) -> Option<Vec<Option<f64>>> {
        let row: Vec<Option<f64>> = self
            .columns
            .iter()
            .map(|c| c.counters_per_op.get(op).and_then(|m| m.get(name)).copied())
            .collect();
        let all_zero = row.iter().all(|v| v.is_none_or(|v| v == 0.0));
        (self.all_counters || !all_zero).then_some(row)
    }

    /// Event counters per operation, side by side: one row per (counter, operation), only the
    /// counters that apply and no row zero in every column (unless `all_counters`), then a
    /// line saying what was left out.
    pub fn render_counters(&self) -> String {
        let op_w = self.ops.iter().map(String::len).max().unwrap_or(1).max(5);
        let sel = self.counter_selection();
        let names = sel.shown.clone();
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
                let Some(row) = self.counter_row(n, op) else { continue };
                let mut s = format!("{n:<name_w$}{op:<op_w$}");
                for v in row {
                    let _ = write!(s, " {:>w$}", v.map_or("-".to_string(), fmt_counter));
                }
                out += s.trim_end();
                out.push('\n');
            }
        }
        let note = sel.footnote();
        if !note.is_empty() {
            out += &note;
            out.push('\n');
        }
        out
    }

    /// The mean's row (Hmean where higher is better and the mode is mmtests', else Amean).
    fn mean_stat(&self) -> Stat {
        if self.mode != Mode::Welch && self.higher_is_better {
            Stat::Hmean
        } else {
            Stat::Amean
        }
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

/// `value (  pct%)`, or `value *  pct%*` when significant; `-` for a missing cell, and in
/// place of the percentage where the baseline has no cell.
pub fn fmt_entry(e: &Option<Entry>) -> String {
    match e {
        None => "-".into(),
        Some(e) if e.pct.is_nan() => format!("{:>12} {:>10}", fmt_value(e.value), "-"),
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
        let c = Comparison::from_sets(&[("e".into(), &s)]).with_mode(Mode::Welch);
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
    fn current_mmtests_rows_and_confidence_interval_marks() {
        let s = set(
            "e",
            &[
                ("a", &[(1, &[100.0, 101.0, 99.0])]),
                ("b", &[(1, &[110.0, 111.0, 109.0])]),
                ("c", &[(1, &[90.0, 120.0, 95.0])]),
                ("d", &[(1, &[101.0, 102.0, 100.0])]),
            ],
        );
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        assert_eq!(c.mode, Mode::Mmtests);
        let lines = c.lines();
        let order: Vec<&str> = lines.iter().map(|l| l.stat).collect();
        assert_eq!(order, ["Min", "Hmean", "HStddev", "HCoeffVar", "Max", "BHmean.95"]);
        let hmean = &lines[1];
        let marks: Vec<bool> = hmean.entries.iter().map(|e| e.unwrap().significant).collect();
        // b's interval (110 ± 1.96 × 0.82) is far from a's (100 ± 1.6): marked. c is noisy; d is
        // 1% higher, but its interval overlaps a's (1.0 apart < 1.6 + 1.6): unmarked, where
        // Welch's test (t ≈ 1.22, 4 df) would not mark it either.
        assert_eq!(marks, [false, true, false, false]);
        let hsd = lines[2].entries[0].unwrap().value;
        assert!((hsd - stats::hstddev(&[100.0, 101.0, 99.0])).abs() < 1e-12 && hsd > 0.8 && hsd < 0.82);
        // Lower is better: the arithmetic rows.
        let mut low = s.clone();
        low.metric.higher_is_better = false;
        let order: Vec<&str> =
            Comparison::from_sets(&[("e".into(), &low)]).lines().iter().map(|l| l.stat).collect();
        assert_eq!(order, ["Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean.95"]);
        // With many samples the interval (not divided by √n) stays wide: 2% apart at a stddev
        // of ~1.6% is unmarked by mmtests but marked by Welch's test.
        let noisy =
            |m: f64| -> Vec<f64> { (0..100).map(|i| m + if i % 2 == 0 { 1.6 } else { -1.6 }).collect() };
        let s = set("e", &[("a", &[(1, &noisy(100.0))]), ("b", &[(1, &noisy(102.0))])]);
        let cur = Comparison::from_sets(&[("e".into(), &s)]);
        assert!(!cur.lines()[1].entries[1].unwrap().significant);
        let old = cur.with_mode(Mode::Welch);
        assert!(old.lines().iter().find(|l| l.stat == "Amean").unwrap().entries[1].unwrap().significant);
    }

    #[test]
    fn subselection_rows_print_the_estimate_and_its_interval_and_mark_it() {
        // 100 iterations 2% apart, each ±1.6: the multiops interval (± 1.96 stddev) overlaps,
        // the subselection's (± 1.96 √(var / 80)) does not, so only SubHmean is marked.
        let noisy =
            |m: f64| -> Vec<f64> { (0..100).map(|i| m + if i % 2 == 0 { 1.6 } else { -1.6 }).collect() };
        let s = set("e", &[("a", &[(1, &noisy(100.0))]), ("b", &[(1, &noisy(102.0))])]);
        let c = Comparison::from_sets(&[("e".into(), &s)]).with_mode(Mode::Subselection);
        let lines = c.lines();
        let order: Vec<&str> = lines.iter().map(|l| l.stat).collect();
        assert_eq!(
            order,
            ["Min", "Hmean", "BHmean.95", "HStddev", "HCoeffVar", "Max", "SubHmean", "SubHmeanCI"]
        );
        let marked: Vec<&str> =
            lines.iter().filter(|l| l.entries[1].unwrap().significant).map(|l| l.stat).collect();
        assert_eq!(marked, ["SubHmean"]);
        let (sub, ci) = (lines[6].entries[1].unwrap().value, lines[7].entries[1].unwrap().value);
        assert!((sub - 102.0).abs() < 0.3 && ci > 0.25 && ci < 0.45, "{sub} ± {ci}");
        // The interval is a spread: a wider one is worse.
        assert!(lines[7].entries[1].unwrap().pct.abs() < 20.0);
        // Lower is better: the arithmetic rows; one iteration prints 0 as mmtests does.
        let mut low = set("e", &[("a", &[(1, &[5.0])]), ("b", &[(1, &[4.0])])]);
        low.metric.higher_is_better = false;
        let c = Comparison::from_sets(&[("e".into(), &low)]).with_mode(Mode::Subselection);
        let rows: Vec<(&str, f64)> =
            c.lines().iter().map(|l| (l.stat, l.entries[1].unwrap().value)).collect();
        assert_eq!(rows[6], ("SubAmean", 0.0));
        assert_eq!(rows[2].0, "BAmean.95");
        assert!(c.render().contains("SubAmeanCI"));
    }

    #[test]
    fn confidence_half_width_as_r_prints_qnorm() {
        // R: qnorm(0.975, 0, 1) prints 1.959964; qnorm(0.975, 0, 100) 195.9964.
        assert_eq!(ci_half_width(1.0), 1.959964);
        assert_eq!(ci_half_width(100.0), 195.9964);
        assert_eq!(ci_half_width(0.001), 0.001959964);
        assert_eq!(ci_half_width(1e6), 1959964.0);
        assert_eq!(ci_half_width(0.0), 0.0);
        assert_eq!(Mode::parse("welch"), Ok(Mode::Welch));
        assert!(Mode::parse("t").unwrap_err().contains("allowed: mmtests, subselection, welch"));
    }

    #[test]
    fn lower_is_better_flips_the_mean_sign() {
        let mut s = set("e", &[("a", &[(4, &[11.17, 11.17])]), ("b", &[(4, &[10.52, 10.52])])]);
        s.metric.higher_is_better = false;
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        let amean = c.lines().into_iter().find(|l| l.stat == "Amean").unwrap();
        // docs/references/linux-mm.md#mmtests-statistics's example: 11.17 -> 10.52 is 5.82% better. No
        // spread: no mark.
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
    fn threads_in_numeric_order_and_a_missing_baseline_prints_a_dash() {
        // The baseline set has 2 and 10 threads; the other 1, 2 and 10, listed out of order.
        let a = set("x", &[("k", &[(10, &[10.0, 11.0]), (2, &[20.0, 21.0])])]);
        let b = set("y", &[("k", &[(2, &[12.0, 13.0]), (10, &[9.0, 9.5]), (1, &[5.0, 5.5])])]);
        let c = Comparison::from_sets(&[("a".into(), &a), ("b".into(), &b)]);
        assert_eq!(c.ops, ["1", "2", "10"]);
        let text = c.render();
        let hmean1 = text.lines().find(|l| l.starts_with("Hmean     1")).unwrap();
        // The baseline has no 1-thread cell: `-` for it, and `-` for the other's percentage.
        assert!(hmean1.contains(" -  ") && hmean1.trim_end().ends_with('-'), "{hmean1}");
        assert!(!hmean1.contains("0.00%"), "{hmean1}");
    }

    #[test]
    fn one_iteration_prints_what_mmtests_prints() {
        // One run per cell: HStddev is NaN in Stat.pm, printed by Compare.pm as 0.00 (0.00%);
        // HCoeffVar is 0; no marks.
        let s = set("e", &[("a", &[(1, &[100.0])]), ("b", &[(1, &[120.0])])]);
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        let text = c.render();
        let line = |stat: &str| text.lines().find(|l| l.starts_with(stat)).unwrap().to_string();
        assert!(line("HStddev").contains("0.00 (   0.00%)") && !text.contains("NaN"), "{text}");
        assert!(line("Hmean").contains("120.00 (  20.00%)"), "{text}");
        // The older convention keeps NaN.
        assert!(c.with_mode(Mode::Welch).render().contains("NaN"));
    }

    #[test]
    fn counters_print_only_rows_that_counted() {
        let mut s =
            set("e", &[("a", &[(1, &[10.0, 11.0]), (2, &[10.0, 11.0])]), ("b", &[(1, &[12.0, 12.5])])]);
        // Give "a" at 2 threads a zero ext4 counter and a zero ipis_sent.
        for c in s.cells.iter_mut() {
            for r in c.runs.iter_mut() {
                r.counters.insert("ext4_inodes".into(), 0);
                if c.threads == 2 {
                    r.counters.insert("ipis_sent".into(), 0);
                }
            }
        }
        let c = Comparison::from_sets(&[("e".into(), &s)]);
        let text = c.render_counters();
        assert!(!text.contains("ext4_inodes"), "{text}");
        // ipis_sent counted at 1 thread, not at 2 (zero in every column there): no 2-thread row.
        let ipis: Vec<&str> = text.lines().filter(|l| l.starts_with("ipis_sent")).collect();
        assert_eq!(ipis.len(), 1, "{text}");
        assert!(text.contains("--all-counters"));
        let all = c.clone().with_all_counters(true).render_counters();
        assert_eq!(all.lines().filter(|l| l.starts_with("ipis_sent")).count(), 2);
        assert!(all.contains("ext4_inodes") && !all.contains("--all-counters"));
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
