//! `[table]` of an experiment: the statistics a seed thread prints and the counters per
//! operation its argument rests on, as data. Every counter is named as the result JSON names it
//! and checked against the model's names when the experiment loads.

use serde::{Deserialize, Serialize};

/// How the metric's own rows print: the layout of the tool the seed thread quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// will-it-scale's bare means per task count, each with its change over the first column.
    Bare,
    /// mmtests compare-kernels: a row per statistic and row, columns headed group over label.
    Mmtests,
    /// mmtests compare-kernels as Mel Gorman's 2016 postings print it (`Hmean send-64`).
    Compare,
    /// mmtests' vmscale report: elapsed, then per-process time range and stddev derived from
    /// each task's rate, then User/System/Elapsed.
    Vmscale,
    /// `time dd`'s real/user/sys, split as the run's clock counters split.
    TimeDd,
}

pub const STYLES: &str = "bare, mmtests, compare, vmscale, time_dd";

/// A statistic of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    Mean,
    /// The harmonic mean (mmtests' Hmean), the mean where a row has none.
    Hmean,
    Stddev,
    Coeffvar,
}

impl Stat {
    /// A spread: better when lower, and nothing to show for one run.
    pub fn is_spread(self) -> bool {
        matches!(self, Stat::Stddev | Stat::Coeffvar)
    }
}

/// One statistic row group of the metric block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatRow {
    pub of: Stat,
    /// Printed before the row's number (`Mean`, `Hmean send-`).
    #[serde(default)]
    pub label: String,
    /// The receiving side of the same runs: the statistic times this counter per operation,
    /// over the row (a message size), as netperf prints its receiver's throughput.
    #[serde(default)]
    pub received: Option<String>,
}

/// How a block of counters prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// Per row, each column's values in one cell (`96.2/0.00/0.00/0.0`).
    Packed,
    /// Per row, a line per column with its values in turn.
    KernelRows,
    /// A line per counter, a value per column.
    Lines,
    /// Derived: the share of all CPU time in each attribution bucket.
    CpuTimeShares,
    /// Derived: where an MPC8xx block's clocks go (issue, I-cache, data, handlers).
    ClockParts,
}

pub const FORMS: &str = "packed, kernel_rows, lines, cpu_time_shares, clock_parts";

/// One counter name or several, summed in the order given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    pub fn list(&self) -> Vec<&str> {
        match self {
            Names::One(n) => vec![n.as_str()],
            Names::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// What a value is divided by: a number, or a sum of counters (at least 1e-12).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Divisor {
    Number(f64),
    Counters(Names),
}

/// One value per operation: `scale x sum(counter)` (times the operations per second where
/// `per_second`), over `divide_by`, printed with `format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerOp {
    /// Empty for a value that continues the one before it (`hits:misses`).
    #[serde(default)]
    pub label: String,
    pub counter: Names,
    #[serde(default = "one")]
    pub scale: f64,
    #[serde(default)]
    pub per_second: bool,
    #[serde(default)]
    pub divide_by: Option<Divisor>,
    /// Text with one `{:.N}` (N 0 ..= 6), e.g. `{:.2}` or `{:.1}%`.
    pub format: String,
    /// Before the value in a packed cell or a kernel row (`/` and ` / ` unless given).
    #[serde(default)]
    pub sep: Option<String>,
}

fn one() -> f64 {
    1.0
}

/// A block under the metric: counters per operation, or a derived block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    /// The line over the block; packed and kernel-row blocks append their labels.
    pub title: String,
    pub form: Form,
    /// The width of the row label.
    #[serde(default)]
    pub pad: usize,
    /// The least width of a column (or of a kernel-row's column label).
    #[serde(default)]
    pub width: usize,
    /// Lines: each value followed by its share of the sum of these counters (at least 1).
    #[serde(default)]
    pub share_of: Vec<String>,
    #[serde(default)]
    pub per_op: Vec<PerOp>,
}

/// `[table]` of an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// What the rows count, heading the row column.
    pub rows: String,
    /// The reference table's row heading, where it differs.
    #[serde(default)]
    pub reference_rows: Option<String>,
    pub style: Style,
    #[serde(default)]
    pub stats: Vec<StatRow>,
    /// Decimals of the metric's statistics (mmtests and compare styles).
    #[serde(default = "two")]
    pub decimals: usize,
    #[serde(default, rename = "block")]
    pub blocks: Vec<Block>,
}

fn two() -> usize {
    2
}

/// The number of decimals of a `{:.N}` format, and the text around it.
pub fn parse_format(f: &str) -> Option<(&str, usize, &str)> {
    let start = f.find("{:.")?;
    let rest = &f[start + 3..];
    let close = rest.find('}')?;
    let n: usize = rest[..close].parse().ok().filter(|n| *n <= 6)?;
    let (before, after) = (&f[..start], &rest[close + 1..]);
    if before.contains(['{', '}']) || after.contains(['{', '}']) {
        return None;
    }
    Some((before, n, after))
}

/// `value` as `format` prints it (a format `validate` accepted).
pub fn apply_format(format: &str, value: f64) -> String {
    let (before, n, after) = parse_format(format).expect("a format checked at load");
    format!("{before}{value:.n$}{after}")
}

impl TableSpec {
    /// Every counter the table reads.
    pub fn counters(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        for (i, s) in self.stats.iter().enumerate() {
            if let Some(c) = &s.received {
                out.push((format!("table.stats[{i}].received"), c.as_str()));
            }
        }
        for (b, block) in self.blocks.iter().enumerate() {
            for c in &block.share_of {
                out.push((format!("table.block[{b}].share_of"), c.as_str()));
            }
            for (i, p) in block.per_op.iter().enumerate() {
                let key = format!("table.block[{b}].per_op[{i}]");
                out.extend(p.counter.list().into_iter().map(|c| (format!("{key}.counter"), c)));
                if let Some(Divisor::Counters(n)) = &p.divide_by {
                    out.extend(n.list().into_iter().map(|c| (format!("{key}.divide_by"), c)));
                }
            }
        }
        out
    }

    /// Checks every counter is one of `known` (the model's names) and every format prints one
    /// number; the error names the key and the allowed values.
    pub fn validate(&self, known: &[&str]) -> Result<(), String> {
        for (key, c) in self.counters() {
            if !known.contains(&c) {
                return Err(format!("key `{key}`: `{c}` is not a counter; allowed: {}", known.join(", ")));
            }
        }
        for (b, block) in self.blocks.iter().enumerate() {
            for (i, p) in block.per_op.iter().enumerate() {
                if parse_format(&p.format).is_none() {
                    return Err(format!(
                        "key `table.block[{b}].per_op[{i}].format`: `{}` is not allowed; allowed: text \
                         with one {{:.N}}, N 0 ..= 6 (e.g. \"{{:.2}}\", \"{{:.1}}%\")",
                        p.format
                    ));
                }
                if !p.scale.is_finite()
                    || matches!(p.divide_by, Some(Divisor::Number(d)) if !(d.is_finite() && d != 0.0))
                {
                    return Err(format!(
                        "key `table.block[{b}].per_op[{i}]`: scale and divide_by must be finite, divide_by non-zero"
                    ));
                }
            }
            let derived = matches!(block.form, Form::CpuTimeShares | Form::ClockParts);
            if block.per_op.is_empty() != derived {
                return Err(format!(
                    "key `table.block[{b}].per_op`: a {:?} block {}",
                    block.form,
                    if derived {
                        "derives its lines and takes no per_op"
                    } else {
                        "needs one or more per_op"
                    }
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_prints_one_number_with_its_text() {
        assert_eq!(apply_format("{:.1}%", 12.345), "12.3%");
        assert_eq!(apply_format("{:.0}", 2.5), "2");
        for bad in ["{}", "{:.7}", "{:.2} {:.2}", "x", "{:.x}"] {
            assert!(parse_format(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn an_unknown_counter_is_refused_with_the_allowed_names() {
        let t: TableSpec = toml::from_str(
            r#"rows = "tasks"
style = "bare"
[[block]]
title = "Per operation"
form = "packed"
per_op = [{ label = "IPIs", counter = "ipis_snt", format = "{:.1}" }]"#,
        )
        .unwrap();
        let e = t.validate(&["ipis_sent", "invlpg"]).unwrap_err();
        assert!(e.contains("table.block[0].per_op[0].counter") && e.contains("ipis_snt"), "{e}");
        assert!(e.contains("allowed: ipis_sent, invlpg"), "{e}");
        assert!(t.validate(&["ipis_snt"]).is_ok());
    }
}
