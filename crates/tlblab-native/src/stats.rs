//! Medians and spreads of repeated measurements: on a shared, noisy host the median of several
//! runs is the figure, and the spread says how far to trust it.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Interquartile range over the median (0 for fewer than 4 samples' worth of spread).
    pub rel_iqr: f64,
    pub n: usize,
}

/// The `q`-quantile (0..=1) of sorted samples, by linear interpolation.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Summary {
    /// Panics on no samples (every caller measures at least once).
    pub fn of(samples: &[f64]) -> Summary {
        assert!(!samples.is_empty(), "a summary needs samples");
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let median = quantile(&s, 0.5);
        let iqr = quantile(&s, 0.75) - quantile(&s, 0.25);
        Summary {
            median,
            min: s[0],
            max: s[s.len() - 1],
            rel_iqr: if median != 0.0 { (iqr / median).abs() } else { 0.0 },
            n: s.len(),
        }
    }
}

/// Least-squares line `y = a + b x`; `None` with fewer than two distinct x.
pub fn linear_fit(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    let (sx, sy) = pts.iter().fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if pts.len() < 2 || sxx == 0.0 {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// The two-segment least-squares fit of `pts` (sorted by x) with the break after index `k`:
/// returns the break index minimising the summed squared residuals, and both lines. Each side
/// keeps at least `min_side` points.
pub fn two_segment_fit(pts: &[(f64, f64)], min_side: usize) -> Option<(usize, (f64, f64), (f64, f64))> {
    let sse =
        |p: &[(f64, f64)], (a, b): (f64, f64)| p.iter().map(|q| (q.1 - a - b * q.0).powi(2)).sum::<f64>();
    let mut best: Option<(f64, usize, (f64, f64), (f64, f64))> = None;
    for k in min_side..=pts.len().saturating_sub(min_side) {
        let (l, r) = pts.split_at(k);
        let (Some(fl), Some(fr)) = (linear_fit(l), linear_fit(r)) else { continue };
        let e = sse(l, fl) + sse(r, fr);
        if best.is_none_or(|b| e < b.0) {
            best = Some((e, k, fl, fr));
        }
    }
    best.map(|(_, k, l, r)| (k, l, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_quartiles() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((s.median, s.min, s.max, s.n), (3.0, 1.0, 5.0, 5));
        assert!((s.rel_iqr - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(Summary::of(&[1.0, 2.0]).median, 1.5);
    }

    #[test]
    fn fits_find_the_kink() {
        assert_eq!(linear_fit(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), Some((1.0, 2.0)));
        assert_eq!(linear_fit(&[(1.0, 1.0), (1.0, 2.0)]), None);
        // Slope 10 up to x = 33, then flat at 400: the break falls between 33 and 34.
        let pts: Vec<(f64, f64)> =
            (1..=64).map(|x| (x as f64, if x <= 33 { 10.0 * x as f64 + 50.0 } else { 400.0 })).collect();
        let (k, l, r) = two_segment_fit(&pts, 3).unwrap();
        assert_eq!(pts[k - 1].0, 33.0);
        assert!((l.1 - 10.0).abs() < 1e-9 && r.1.abs() < 1e-9);
    }
}
