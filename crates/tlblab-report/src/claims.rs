//! A seed thread's claims as data (`[[claim]]` of an experiment): the sentence as the thread
//! writes it and a condition over the experiment's summary that says whether the model
//! reproduces it. `reproduce` prints every verdict; the claim tests run the same entries.

use serde::{Deserialize, Serialize};

use crate::seed_table::style::time_range;
use crate::summary::{Row, Summary};

/// What a claim checks, at each of its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The gain of `column` over `baseline` in percent, positive where `column` is better
    /// (higher or lower as the metric is), lies within `min` ..= `max`.
    Gain,
    /// The `columns` are in order from worse to better.
    Order,
    /// A counter per operation of each of `columns`, or its ratio `column` / `baseline`, lies
    /// within `min` ..= `max`.
    Counter,
}

pub const KINDS: &str = "gain, order, counter";

/// What a gain compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The metric (the Hmean where the table has one).
    #[default]
    Metric,
    /// vmscale's per-process time range (lower is better).
    TimeRange,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// A short key, unique in the experiment: claims.json's and the tests'.
    pub id: String,
    /// The thread's sentence, as written.
    pub says: String,
    pub kind: Kind,
    #[serde(default)]
    pub column: String,
    #[serde(default)]
    pub baseline: String,
    #[serde(default)]
    pub columns: Vec<String>,
    pub rows: Vec<u32>,
    #[serde(default)]
    pub measure: Measure,
    #[serde(default)]
    pub counter: Option<String>,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

/// One claim's verdict (`claims.json`; keys sorted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub experiment: String,
    pub id: String,
    pub reason: String,
    pub reproduced: bool,
    pub says: String,
}

impl Claim {
    /// Every column the claim reads.
    pub fn reads(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.columns.iter().map(String::as_str).collect();
        for c in [&self.column, &self.baseline] {
            if !c.is_empty() {
                v.push(c);
            }
        }
        v
    }

    /// Checks the claim against its experiment: `columns` its labels, `rows` its rows,
    /// `counters` the model's names. The error names the claim's key.
    pub fn validate(
        &self,
        i: usize,
        columns: &[String],
        rows: &[u32],
        counters: &[&str],
    ) -> Result<(), String> {
        let key = |k: &str| format!("key `claim[{i}].{k}`");
        if self.id.trim().is_empty() || self.says.trim().is_empty() {
            return Err(format!("{}: a claim needs an id and the sentence it checks", key("id")));
        }
        let (one, many) = (!self.column.is_empty(), !self.columns.is_empty());
        let shape_ok = match self.kind {
            Kind::Gain => one && !self.baseline.is_empty() && !many,
            Kind::Order => self.columns.len() >= 2 && !one && self.baseline.is_empty(),
            Kind::Counter => one != many && (self.baseline.is_empty() || one),
        };
        if !shape_ok {
            return Err(format!(
                "{}: gain takes column and baseline, order two or more columns, counter column (and \
                 baseline for a ratio) or columns",
                key("kind")
            ));
        }
        for c in self.reads() {
            if !columns.iter().any(|l| l == c) {
                return Err(format!(
                    "{}: `{c}` is not a column; allowed: {}",
                    key("column"),
                    columns.join(", ")
                ));
            }
        }
        if self.rows.is_empty() || self.rows.iter().any(|r| !rows.contains(r)) {
            let all: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
            return Err(format!(
                "{}: give one or more of the table's rows; allowed: {}",
                key("rows"),
                all.join(", ")
            ));
        }
        match (&self.counter, self.kind) {
            (None, Kind::Counter) => {
                return Err(format!("{}: a counter claim names its counter", key("counter")))
            }
            (Some(_), Kind::Gain | Kind::Order) => {
                return Err(format!("{}: only a counter claim names a counter", key("counter")))
            }
            (Some(c), _) if !counters.contains(&c.as_str()) => {
                return Err(format!(
                    "{}: `{c}` is not a counter; allowed: {}",
                    key("counter"),
                    counters.join(", ")
                ))
            }
            _ => {}
        }
        if self.kind != Kind::Order && self.min.is_none() && self.max.is_none() {
            return Err(format!("{}: give min, max or both", key("min")));
        }
        Ok(())
    }

    /// The verdict on `s`: reproduced where the condition holds at every row, with the numbers.
    pub fn evaluate(&self, s: &Summary) -> Verdict {
        let (reproduced, reason) = match self.check(s) {
            Ok(r) => r,
            Err(missing) => (false, missing),
        };
        Verdict {
            experiment: s.experiment.clone(),
            id: self.id.clone(),
            reason,
            reproduced,
            says: self.says.clone(),
        }
    }

    fn row<'s>(s: &'s Summary, k: &str, t: u32) -> Result<&'s Row, String> {
        s.rows.iter().find(|r| r.kernel == k && r.threads == t).ok_or_else(|| format!("no run of {k} at {t}"))
    }

    /// The compared value of a cell, and whether higher is better.
    fn measure(&self, s: &Summary, r: &Row) -> (f64, bool) {
        match self.measure {
            Measure::Metric => (r.hmean.unwrap_or(r.mean), s.metric.higher_is_better),
            Measure::TimeRange => (time_range(r), false),
        }
    }

    fn gain(&self, s: &Summary, new: &Row, base: &Row) -> f64 {
        let ((n, hb), (b, _)) = (self.measure(s, new), self.measure(s, base));
        if hb {
            100.0 * (n / b - 1.0)
        } else {
            100.0 * (1.0 - n / b)
        }
    }

    /// `min ..= max` as text.
    fn bounds(&self, unit: &str) -> String {
        // A gain is signed; a counter is not.
        let f = |v: f64| if unit.is_empty() { format!("{v}") } else { format!("{v:+}{unit}") };
        match (self.min, self.max) {
            (Some(a), Some(b)) => format!("{} ..= {}", f(a), f(b)),
            (Some(a), None) => format!(">= {}", f(a)),
            (None, Some(b)) => format!("<= {}", f(b)),
            (None, None) => "any".into(),
        }
    }

    fn within(&self, v: f64) -> bool {
        self.min.map_or(true, |a| v >= a) && self.max.map_or(true, |b| v <= b) && v.is_finite()
    }

    /// Per row: `value(t)` against the bounds, and how the reason shows it; (all within, shown).
    fn per_row(
        &self,
        value: impl Fn(u32) -> Result<f64, String>,
        show: impl Fn(f64, u32) -> String,
    ) -> Result<(bool, String), String> {
        let mut ok = true;
        let mut parts = Vec::new();
        for &t in &self.rows {
            let v = value(t)?;
            ok &= self.within(v);
            parts.push(show(v, t));
        }
        Ok((ok, parts.join(", ")))
    }

    fn check(&self, s: &Summary) -> Result<(bool, String), String> {
        let mut ok = true;
        let mut parts = Vec::new();
        let what = match self.measure {
            Measure::Metric => "",
            Measure::TimeRange => "time_range ",
        };
        let reason = match self.kind {
            Kind::Gain => {
                let gain =
                    |t| Ok(self.gain(s, Self::row(s, &self.column, t)?, Self::row(s, &self.baseline, t)?));
                let (within, shown) = self.per_row(gain, |g, t| format!("{g:+.1}% at {t}"))?;
                ok = within;
                format!("{what}{} over {}: {shown} (claim: {})", self.column, self.baseline, self.bounds("%"))
            }
            Kind::Order => {
                for &t in &self.rows {
                    let gains = self
                        .columns
                        .windows(2)
                        .map(|w| Ok(self.gain(s, Self::row(s, &w[1], t)?, Self::row(s, &w[0], t)?)))
                        .collect::<Result<Vec<f64>, String>>()?;
                    ok &= gains.iter().all(|g| *g > 0.0 && self.within(*g));
                    let steps: Vec<String> = gains.iter().map(|g| format!("{g:+.1}%")).collect();
                    parts.push(format!("{} at {t}", steps.join(" then ")));
                }
                format!("{what}{}, each over the one before: {}", self.columns.join(" < "), parts.join(", "))
            }
            Kind::Counter => {
                let c = self.counter.as_deref().unwrap_or_default();
                let per = |k: &str, t: u32| -> Result<f64, String> {
                    Ok(Self::row(s, k, t)?.counters_per_op.get(c).copied().unwrap_or(0.0))
                };
                if self.baseline.is_empty() {
                    let cols: Vec<&str> = if self.columns.is_empty() {
                        vec![&self.column]
                    } else {
                        self.columns.iter().map(String::as_str).collect()
                    };
                    for &t in &self.rows {
                        for k in &cols {
                            let v = per(k, t)?;
                            ok &= self.within(v);
                            parts.push(format!("{k} {v:.4} at {t}"));
                        }
                    }
                    format!("{c} per operation: {} (claim: {})", parts.join(", "), self.bounds(""))
                } else {
                    let ratio = |t| Ok(per(&self.column, t)? / per(&self.baseline, t)?);
                    let (within, shown) = self.per_row(ratio, |r, t| format!("x{r:.3} at {t}"))?;
                    ok = within;
                    format!(
                        "{c} per operation, {} / {}: {shown} (claim: {})",
                        self.column,
                        self.baseline,
                        self.bounds("")
                    )
                }
            }
        };
        Ok((ok, reason))
    }
}

/// The verdicts as `reproduce` ends with them: a count, then one line per claim.
pub fn summary_text(verdicts: &[Verdict]) -> String {
    let yes = verdicts.iter().filter(|v| v.reproduced).count();
    let mut out = format!(
        "Seed claims: {yes} reproduced, {} not reproduced (the sentences: each experiment's \
         [[claim]] and claims.json)\n",
        verdicts.len() - yes
    );
    for v in verdicts {
        let mark = if v.reproduced { "reproduced    " } else { "NOT reproduced" };
        out += &format!("{mark} {}/{}: {}\n", v.experiment, v.id, v.reason);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::MetricInfo;
    use std::collections::BTreeMap;

    fn summary(higher_is_better: bool) -> Summary {
        let row = |k: &str, t: u32, mean: f64, ipis: f64| Row {
            kernel: k.into(),
            threads: t,
            n: 1,
            mean,
            stddev: 0.0,
            min: mean,
            max: mean,
            counters_per_op: BTreeMap::from([("ipis_sent".to_string(), ipis)]),
            oracle_violations: 0,
            ops_per_second: 0.0,
            task_ops: Vec::new(),
            attribution_ps: BTreeMap::new(),
            hmean: None,
        };
        Summary {
            schema_version: 1,
            experiment: "e".into(),
            machine: "m".into(),
            workload: "w".into(),
            metric: MetricInfo { name: "ops".into(), unit: "ops/s".into(), higher_is_better },
            kernels: vec!["a".into(), "b".into(), "c".into()],
            rows: vec![row("a", 1, 100.0, 2.0), row("b", 1, 110.0, 1.0), row("c", 1, 120.0, 0.5)],
            reference: Vec::new(),
        }
    }

    fn claim(toml_text: &str) -> Claim {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn a_gain_claim_holds_or_fails_by_its_bounds_and_says_the_numbers() {
        let c = claim("id = \"g\"\nsays = \"b wins\"\nkind = \"gain\"\ncolumn = \"b\"\nbaseline = \"a\"\nrows = [1]\nmin = 5.0");
        let v = c.evaluate(&summary(true));
        assert!(v.reproduced, "{v:?}");
        assert_eq!(v.reason, "b over a: +10.0% at 1 (claim: >= +5%)");
        // Lower is better: b's 110 is 10% worse than a's 100, and the claim flips.
        assert!(!c.evaluate(&summary(false)).reproduced);
    }

    #[test]
    fn order_and_counter_claims_check_every_column() {
        let o =
            claim("id = \"o\"\nsays = \"\"\nkind = \"order\"\ncolumns = [\"a\", \"b\", \"c\"]\nrows = [1]");
        assert!(o.evaluate(&summary(true)).reproduced);
        assert!(!o.evaluate(&summary(false)).reproduced);
        let c = claim(
            "id = \"c\"\nsays = \"\"\nkind = \"counter\"\ncolumn = \"c\"\nbaseline = \"a\"\ncounter = \"ipis_sent\"\nrows = [1]\nmax = 0.5",
        );
        let v = c.evaluate(&summary(true));
        assert!(v.reproduced && v.reason.contains("x0.250 at 1"), "{v:?}");
    }

    #[test]
    fn a_claim_naming_an_unknown_column_row_or_counter_is_refused() {
        let cols = vec!["a".to_string(), "b".to_string()];
        let c = claim("id = \"g\"\nsays = \"s\"\nkind = \"gain\"\ncolumn = \"z\"\nbaseline = \"a\"\nrows = [1]\nmin = 0.0");
        let e = c.validate(0, &cols, &[1], &["ipis_sent"]).unwrap_err();
        assert!(e.contains("claim[0].column") && e.contains("allowed: a, b"), "{e}");
        let c = claim("id = \"g\"\nsays = \"s\"\nkind = \"gain\"\ncolumn = \"b\"\nbaseline = \"a\"\nrows = [3]\nmin = 0.0");
        assert!(c.validate(0, &cols, &[1], &[]).unwrap_err().contains("claim[0].rows"));
        let c = claim("id = \"c\"\nsays = \"s\"\nkind = \"counter\"\ncolumns = [\"a\"]\ncounter = \"ipi\"\nrows = [1]\nmax = 1.0");
        assert!(c.validate(2, &cols, &[1], &["ipis_sent"]).unwrap_err().contains("claim[2].counter"));
    }
}
