//! The probe's measured spread as two more profiles: the host as it measured at its slow and at
//! its fast quartile. Every measurement the probe summarises (`median`, `min`, `max`,
//! `rel_iqr` over its blocks or bursts) moves its median by half its interquartile range,
//! clamped to the measured range: up for times (ns, cycles) on the slow side, down for rates
//! (MB/s, MHz), and the other way on the fast side. The profile is then built from the moved
//! report exactly as from the real one, so `validate` can simulate the host at both ends of
//! what the probe saw (beside the seeds' spread) and say when the intervals overlap.

use serde_json::Value;

use crate::probe::ProbeReport;

/// Which end of the probe's spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Slow,
    Fast,
}

/// Whether a measurement named `key` is a rate (higher is faster) rather than a time.
fn is_rate(key: &str) -> bool {
    key.contains("mbps") || key.contains("mhz") || key.contains("rate")
}

/// A summary's median moved to the quartile on `end`'s side.
fn moved(median: f64, min: f64, max: f64, rel_iqr: f64, rate: bool, end: End) -> f64 {
    let up = (end == End::Slow) != rate;
    let half = 0.5 * rel_iqr * median.abs();
    let m = if up { median + half } else { median - half };
    m.clamp(min.min(max), max.max(min))
}

/// Walks `v`, moving every summary found (an object with `median`, `min`, `max` and `rel_iqr`);
/// `rate` is inherited from the nearest named field.
fn walk(v: &mut Value, rate: bool, end: End) {
    match v {
        Value::Object(o) => {
            let get = |k: &str| o.get(k).and_then(Value::as_f64);
            if let (Some(med), Some(min), Some(max), Some(iqr)) =
                (get("median"), get("min"), get("max"), get("rel_iqr"))
            {
                let m = moved(med, min, max, iqr, rate, end);
                if let Some(n) = serde_json::Number::from_f64(m) {
                    o.insert("median".into(), Value::Number(n));
                }
                return;
            }
            for (k, x) in o.iter_mut() {
                walk(x, rate || is_rate(k), end);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| walk(x, rate, end)),
        _ => {}
    }
}

/// The report as the host measured at `end` of its spread (every derivation redone).
pub fn at_end(r: &ProbeReport, end: End) -> Result<ProbeReport, String> {
    let mut v = serde_json::to_value(r).map_err(|e| format!("probe report: {e}"))?;
    if let Value::Object(o) = &mut v {
        for (k, x) in o.iter_mut() {
            // Only the raw measurements move; the host's facts and the notes stay.
            if !matches!(
                k.as_str(),
                "host" | "cpuid_dump" | "interference" | "notes" | "date" | "phase_baseline"
            ) {
                walk(x, is_rate(k), end);
            }
        }
    }
    ProbeReport::from_json(&v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_go_up_and_rates_down_on_the_slow_side_within_the_range() {
        // A time of median 100, IQR 20%: slow 110, fast 90.
        assert_eq!(moved(100.0, 80.0, 150.0, 0.2, false, End::Slow), 110.0);
        assert_eq!(moved(100.0, 80.0, 150.0, 0.2, false, End::Fast), 90.0);
        // A rate the other way.
        assert_eq!(moved(100.0, 80.0, 150.0, 0.2, true, End::Slow), 90.0);
        // Never past what was measured.
        assert_eq!(moved(100.0, 95.0, 150.0, 0.2, false, End::Fast), 95.0);
        assert!(is_rate("memcpy_mbps") && is_rate("clock_mhz") && !is_rate("syscall_ns"));
    }

    #[test]
    fn a_summary_nested_under_a_rate_moves_as_a_rate() {
        let mut v = serde_json::json!({
            "memcpy_mbps": {"median": 100.0, "min": 50.0, "max": 200.0, "rel_iqr": 0.2, "n": 5},
            "syscall_ns": {"median": 100.0, "min": 50.0, "max": 200.0, "rel_iqr": 0.2, "n": 5},
        });
        walk(&mut v, false, End::Slow);
        assert_eq!(v["memcpy_mbps"]["median"], 90.0);
        assert_eq!(v["syscall_ns"]["median"], 110.0);
    }
}
