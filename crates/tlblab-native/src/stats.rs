//! Medians and spreads of repeated measurements: on a shared, noisy host the median of several
//! runs is the figure, and the spread says how far to trust it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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

impl Summary {
    /// The spread the profile writes beside a value: min / median / max over the blocks.
    pub fn spread_text(&self, digits: usize, unit: &str) -> String {
        format!(
            "blocks min {:.d$} / median {:.d$} / max {:.d$}{unit} (n = {})",
            self.min,
            self.median,
            self.max,
            self.n,
            d = digits
        )
    }

    /// (max - min) / |median|: the relative width of the spread (0 when the median is 0).
    pub fn rel_range(&self) -> f64 {
        if self.median != 0.0 {
            ((self.max - self.min) / self.median).abs()
        } else {
            0.0
        }
    }
}

/// A cost derived once per block (each block a short, complete repetition of the experiment,
/// its conditions interleaved), then summarised over blocks. `resolved` is false when the
/// block estimates do not show the cost above their own noise: then the figure is "below
/// resolution" and the profile must fall back to a sourced value and say so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockEstimate {
    /// Median over blocks.
    pub value: f64,
    pub blocks: Summary,
    pub resolved: bool,
    /// How the per-block figure is derived (experiment, difference or fit), in words.
    pub how: String,
    /// The per-block figures, in block order (NaN where a block gave none).
    pub per_block: Vec<f64>,
}

impl BlockEstimate {
    /// Summarises per-block estimates of a cost that must be positive. Resolved when at least
    /// three quarters of the blocks give a positive figure and the median stands above the
    /// blocks' own scatter: median > the semi-interquartile range (for 5 blocks, the 2nd
    /// smallest must be positive, and the middle half may not straddle zero). Non-finite
    /// block figures (a fit that had too few points) are dropped; none left means unresolved.
    pub fn positive(per_block: &[f64], how: impl Into<String>) -> BlockEstimate {
        let v: Vec<f64> = per_block.iter().copied().filter(|x| x.is_finite()).collect();
        let how = how.into();
        if v.is_empty() {
            let nan = Summary { median: f64::NAN, min: f64::NAN, max: f64::NAN, rel_iqr: 0.0, n: 0 };
            return BlockEstimate {
                value: f64::NAN,
                blocks: nan,
                resolved: false,
                how,
                per_block: per_block.to_vec(),
            };
        }
        let mut s = v.clone();
        s.sort_by(f64::total_cmp);
        let (q1, q3) = (quantile(&s, 0.25), quantile(&s, 0.75));
        let blocks = Summary::of(&v);
        let resolved = q1 > 0.0 && blocks.median > 0.5 * (q3 - q1);
        BlockEstimate { value: blocks.median, blocks, resolved, how, per_block: per_block.to_vec() }
    }

    /// A cost derived from this one block by block (`f` of each block's figure).
    pub fn map(&self, f: impl Fn(f64) -> f64, how: impl Into<String>) -> BlockEstimate {
        let v: Vec<f64> = self.per_block.iter().map(|&x| f(x)).collect();
        BlockEstimate::positive(&v, how)
    }

    /// `value` with the derivation and the spread, for a profile's `source`.
    pub fn describe(&self, digits: usize, unit: &str) -> String {
        format!("{}; {}", self.how, self.blocks.spread_text(digits, unit))
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

/// Theil-Sen line `y = a + b x`: the slope is the median of the slopes between every pair of
/// points with distinct x, the intercept the median of `y - b x`. One wild point (a block hit
/// by a timer or a migration) moves it little, where it can tilt a least-squares line.
/// `None` with fewer than two distinct x.
pub fn theil_sen(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let mut slopes = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        for q in &pts[i + 1..] {
            if q.0 != p.0 {
                slopes.push((q.1 - p.1) / (q.0 - p.0));
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    let b = Summary::of(&slopes).median;
    let a = Summary::of(&pts.iter().map(|p| p.1 - b * p.0).collect::<Vec<_>>()).median;
    Some((a, b))
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
    fn block_estimates_resolve_only_above_their_scatter() {
        let e = BlockEstimate::positive(&[10.0, 11.0, 9.0, 10.5, f64::NAN], "test");
        assert!(e.resolved && e.value == 10.25 && e.blocks.n == 4, "{e:?}");
        // Straddling zero: below resolution, whatever the median.
        assert!(!BlockEstimate::positive(&[5.0, -3.0, 8.0, -1.0, 2.0], "t").resolved);
        // All positive but the median lost in the scatter.
        assert!(!BlockEstimate::positive(&[1.0, 1.0, 2.0, 40.0, 80.0], "t").resolved);
        assert!(!BlockEstimate::positive(&[], "t").resolved);
    }

    #[test]
    fn theil_sen_ignores_one_wild_point() {
        let mut pts: Vec<(f64, f64)> = (0..10).map(|x| (x as f64, 3.0 + 2.0 * x as f64)).collect();
        pts[9].1 = 500.0;
        let (a, b) = theil_sen(&pts).unwrap();
        assert!((b - 2.0).abs() < 1e-9 && (a - 3.0).abs() < 1e-9, "{a} {b}");
        assert!(linear_fit(&pts).unwrap().1 > 2.5);
        assert_eq!(theil_sen(&[(1.0, 1.0), (1.0, 2.0)]), None);
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
