//! The seed thread's published figures (`[reference]` of an experiment) beside the model's:
//! for display and comparison only, never an input to a run.

use std::collections::BTreeMap;

use crate::summary::Summary;

/// The seed's published figures (`[reference]` in an experiment file): for display and
/// comparison only, never an input to a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Where the figures are printed (message, table).
    pub source: String,
    /// Per column label, the metric at each thread count the seed gives (`"5.18.1" = { 1 = 159504 }`).
    pub values: BTreeMap<String, BTreeMap<String, f64>>,
}

/// One published figure beside the model's (a row of `summary.json`'s `reference`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RefPoint {
    pub kernel: String,
    /// The thread count the seed gives the figure at.
    pub threads: u32,
    /// The model's nearest thread count (the same, where the experiment runs it).
    pub model_threads: u32,
    /// The published figure (`seed` in `summary.json`).
    #[serde(rename = "seed")]
    pub published: f64,
    pub model: f64,
    /// `model / seed - 1`, in percent.
    pub difference_pct: f64,
    /// Against the first column at the same thread count, where the seed gives both: its gain,
    /// and the model's (percent; positive is better for a lower-is-better metric too).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "seed_gain_pct")]
    pub published_gain_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_gain_pct: Option<f64>,
}

impl Reference {
    /// Checks the figures name columns of the experiment and thread counts as numbers.
    pub fn validate(&self, columns: &[String]) -> Result<(), String> {
        if self.source.trim().is_empty() {
            return Err("reference.source: must say where the figures are printed".into());
        }
        for (k, by_threads) in &self.values {
            if !columns.contains(k) {
                return Err(format!(
                    "reference.values: `{k}` is not a kernel column; columns are {columns:?}"
                ));
            }
            for (t, v) in by_threads {
                if t.parse::<u32>().map_or(true, |t| t == 0) || !v.is_finite() {
                    return Err(format!(
                        "reference.values.\"{k}\".{t}: needs a positive thread count and a finite value"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every figure beside the model's value at the nearest thread count it ran.
    pub fn points(&self, s: &Summary) -> Vec<RefPoint> {
        let hb = s.metric.higher_is_better;
        let gain =
            |new: f64, base: f64| if hb { 100.0 * (new / base - 1.0) } else { 100.0 * (1.0 - new / base) };
        let base_label = &s.kernels[0];
        let published_at = |k: &str, t: u32| self.values.get(k).and_then(|m| m.get(&t.to_string())).copied();
        let mut out = Vec::new();
        for k in &s.kernels {
            let Some(by_threads) = self.values.get(k) else { continue };
            let mut pts: Vec<(u32, f64)> =
                by_threads.iter().map(|(t, &v)| (t.parse().unwrap_or(0), v)).collect();
            pts.sort_by_key(|p| p.0);
            for (t, published) in pts {
                let near = |k: &str| {
                    s.rows.iter().filter(|r| r.kernel == k).min_by_key(|r| (r.threads.abs_diff(t), r.threads))
                };
                let Some(row) = near(k) else { continue };
                let model = row.hmean.unwrap_or(row.mean);
                let (published_gain_pct, model_gain_pct) =
                    match (k != base_label, published_at(base_label, t), near(base_label)) {
                        (true, Some(b), Some(m)) => {
                            (Some(gain(published, b)), Some(gain(model, m.hmean.unwrap_or(m.mean))))
                        }
                        _ => (None, None),
                    };
                out.push(RefPoint {
                    kernel: k.clone(),
                    threads: t,
                    model_threads: row.threads,
                    published,
                    model,
                    difference_pct: 100.0 * (model / published - 1.0),
                    published_gain_pct,
                    model_gain_pct,
                });
            }
        }
        out
    }
}

/// The seed's figures beside the model's, one row per thread count the seed gives: the first
/// column's figure and the model's ratio to it, then each other column's gain over the first,
/// the seed's beside the model's. `rows` heads the row column.
pub(super) fn render_reference(r: &Reference, s: &Summary, rows: &str) -> String {
    let pts = r.points(s);
    if pts.is_empty() {
        return String::new();
    }
    let w = 22;
    let mut out = format!(
        "\nThe seed's figures beside the model's (reference only, never an input; {}).\n\
         First column: seed {} and model/seed; the others: gain over the first column, seed | model.\n",
        r.source.trim(),
        s.metric.unit
    );
    let mut head = format!("{rows:<10}");
    for k in &s.kernels {
        head += &format!(" {k:>w$}");
    }
    out += &format!("{}\n", head.trim_end());
    let mut threads: Vec<(u32, u32)> = pts.iter().map(|p| (p.threads, p.model_threads)).collect();
    threads.sort_unstable();
    threads.dedup();
    for (t, mt) in threads {
        let label = if t == mt { format!("{t}") } else { format!("{t} (model {mt})") };
        let mut line = format!("{label:<10}");
        for (i, k) in s.kernels.iter().enumerate() {
            let p = pts.iter().find(|p| &p.kernel == k && p.threads == t);
            let txt = match p {
                None => "-".to_string(),
                Some(p) if i == 0 => format!("{:.0} x{:.2}", p.published, p.model / p.published),
                Some(p) => match (p.published_gain_pct, p.model_gain_pct) {
                    (Some(pg), Some(mg)) => format!("{pg:+.1}% | {mg:+.1}%"),
                    _ => format!("{:.0} x{:.2}", p.published, p.model / p.published),
                },
            };
            line += &format!(" {txt:>w$}");
        }
        out += &format!("{}\n", line.trim_end());
    }
    out
}
