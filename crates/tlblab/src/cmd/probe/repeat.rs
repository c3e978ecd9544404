//! `tlblab probe --repeat N`: the whole probe N times, and per profile key the spread of its
//! value across the runs, with warnings where a key moved by more than 10% from its median or
//! where other processes used the CPU while a run measured.

use serde::Serialize;
use tlblab_model::profile::MachineProfile;
use tlblab_native::probe::ProbeReport;
use tlblab_report::table::Table;

/// A key's run-to-run spread above this share of its median is reported.
pub const KEY_SPREAD_LIMIT: f64 = 0.10;
/// Other processes' share of the machine above which a run is flagged as disturbed.
pub const OTHERS_LIMIT: f64 = 0.10;

/// One numeric profile key across the runs.
#[derive(Debug, Clone, Serialize)]
pub struct KeySpread {
    /// Dotted path in the profile (`kernel.invlpg_cycles`, `tlb.structure[L2 STLB].hit_cycles`).
    pub key: String,
    /// Per run (`None` where that run's profile could not be built or lacks the key).
    pub values: Vec<Option<f64>>,
    /// Per run: the value was measured (not a labelled estimate or below-resolution fallback).
    pub measured: Vec<bool>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The largest distance of a run's value from the median, over the median.
    pub spread: f64,
}

/// Every sourced number of a profile as (key by name, value, measured).
pub fn sourced_values(p: &MachineProfile) -> Vec<(String, f64, bool)> {
    p.sourced().into_iter().map(|(k, x, m)| (k.label, x, m)).collect()
}

/// The spread of every key over the runs' profiles (keys in the first profile's order).
pub fn key_spreads(profiles: &[Option<MachineProfile>]) -> Vec<KeySpread> {
    let per_run: Vec<Vec<(String, f64, bool)>> =
        profiles.iter().map(|p| p.as_ref().map(sourced_values).unwrap_or_default()).collect();
    let mut keys: Vec<String> = Vec::new();
    for run in &per_run {
        for (k, _, _) in run {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.into_iter()
        .filter_map(|key| {
            let got: Vec<Option<(f64, bool)>> =
                per_run.iter().map(|r| r.iter().find(|x| x.0 == key).map(|x| (x.1, x.2))).collect();
            let vals: Vec<f64> = got.iter().flatten().map(|x| x.0).collect();
            if vals.is_empty() {
                return None;
            }
            let s = tlblab_native::stats::Summary::of(&vals);
            let spread = if s.median != 0.0 {
                (s.max - s.median).max(s.median - s.min) / s.median.abs()
            } else if s.max != s.min {
                f64::INFINITY
            } else {
                0.0
            };
            Some(KeySpread {
                key,
                values: got.iter().map(|x| x.map(|x| x.0)).collect(),
                measured: got.iter().map(|x| x.is_some_and(|x| x.1)).collect(),
                median: s.median,
                min: s.min,
                max: s.max,
                spread,
            })
        })
        .collect()
}

/// The run whose values lie closest to every key's median (sum of absolute log ratios): the
/// profile `--write-profile` writes after a repeated probe.
pub fn most_central(profiles: &[Option<MachineProfile>], keys: &[KeySpread]) -> Option<usize> {
    let score = |i: usize| -> f64 {
        keys.iter()
            .filter_map(|k| {
                let v = k.values[i]?;
                (v > 0.0 && k.median > 0.0).then(|| (v / k.median).ln().abs())
            })
            .sum()
    };
    (0..profiles.len()).filter(|&i| profiles[i].is_some()).min_by(|&a, &b| score(a).total_cmp(&score(b)))
}

/// Words for everything worth a warning: disturbed runs and keys that moved.
pub fn warnings(reports: &[ProbeReport], keys: &[KeySpread], failed: &[(usize, String)]) -> Vec<String> {
    let mut w = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let worst = r
            .interference
            .iter()
            .filter_map(|(name, x)| x.map(|x| (name, x.others_share)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((name, share)) = worst.filter(|x| x.1 > OTHERS_LIMIT) {
            w.push(format!(
                "run {}: other processes used {:.0}% of the machine during `{name}` (the most of any part): its \
                 figures are not from a quiet host",
                i + 1,
                100.0 * share
            ));
        }
    }
    for (i, e) in failed {
        w.push(format!("run {}: no profile: {e}", i + 1));
    }
    for k in keys.iter().filter(|k| k.spread > KEY_SPREAD_LIMIT) {
        let flips = k.measured.iter().any(|&m| m) && k.measured.iter().any(|&m| !m);
        w.push(format!(
            "{}: spread {:.0}% over the runs (min {:.4} / median {:.4} / max {:.4}){}",
            k.key,
            100.0 * k.spread,
            k.min,
            k.median,
            k.max,
            if flips { "; measured in some runs, a labelled fallback in others" } else { "" }
        ));
    }
    w
}

/// The per-key table (only keys measured in at least one run, or that moved).
pub fn render(reports: &[ProbeReport], keys: &[KeySpread], warn: &[String]) -> String {
    let n = keys.first().map_or(0, |k| k.values.len());
    let mut head = vec!["key".to_string()];
    head.extend((1..=n).map(|i| format!("run {i}")));
    head.extend(["median".into(), "spread".into(), "".into()]);
    let mut t = Table::new(head);
    for k in keys.iter().filter(|k| k.measured.iter().any(|&m| m) || k.spread > 0.0) {
        let mut row = vec![k.key.clone()];
        row.extend(
            k.values
                .iter()
                .zip(&k.measured)
                .map(|(v, &m)| v.map_or("-".into(), |v| format!("{}{}", fmt(v), if m { "" } else { "*" }))),
        );
        row.push(fmt(k.median));
        row.push(format!("{:.1}%", 100.0 * k.spread));
        row.push(if k.spread > KEY_SPREAD_LIMIT { "> 10%".into() } else { String::new() });
        t.row(row);
    }
    let mut out = format!(
        "probe repeated {n} times: per profile key, every run's value, the median, and the largest distance of a \
         run from the median (* = a labelled estimate or below-resolution fallback, not a measurement)\n"
    );
    out += &t.render();
    let mut it = Table::new(["run", "others' CPU share (worst part)", "steal (worst part)"]);
    for (i, r) in reports.iter().enumerate() {
        let worst = |f: fn(&tlblab_native::host::InterferenceReport) -> f64| {
            r.interference.iter().filter_map(|(_, x)| x.as_ref().map(f)).fold(0.0, f64::max)
        };
        it.row([
            (i + 1).to_string(),
            format!("{:.0}%", 100.0 * worst(|x| x.others_share)),
            format!("{:.1}%", 100.0 * worst(|x| x.steal_share)),
        ]);
    }
    out += &format!("\n{}", it.render());
    if !warn.is_empty() {
        out += "\nwarnings:\n";
        for w in warn {
            out += &format!("  - {w}\n");
        }
    }
    out
}

fn fmt(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests;
