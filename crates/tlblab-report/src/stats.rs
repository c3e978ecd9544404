//! Summary statistics of repeated runs, as mmtests computes and compares them
//! (gormanm/mmtests `bin/lib/MMTests/Stat.pm` and `Compare.pm`, HEAD 638401e0;
//! docs/references/linux-mm.md#mmtests-statistics), plus Welch's t-test with its own Student-t distribution
//! function.
//!
//! Which mmtests code each follows (read at 638401e0):
//! - `Stat.pm`: `calc_amean`/`calc_hmean` ([`mean`], [`hmean`]); `calc_stddev` with the mean's
//!   name ([`stddev`] for "amean": n − 1; [`hstddev`] for "hmean": the reciprocals' spread scaled
//!   by H⁴ over n); `calc_coeffvar` ([`coeffvar_of`]: a NaN spread counts as 0);
//!   `select_highest`/`select_lowest` behind `_mean-95` ([`best`], [`bhmean`] = BHmean.95);
//!   `_calc_meanci` (mean ± R's `qnorm(1 − α/2, 0, stddev)`: the stddev, not the standard
//!   error; `compare::ci_half_width`); `cidiff` ([`cidiff_interval`]: the gap between the means
//!   over the room the two intervals leave towards each other, which may be asymmetric; |ratio|
//!   > 1 is the `*` mark); `pdiff`/`pndiff` ([`pdiff`], [`pndiff`]).
//! - `bin/lib/Python/subselection-confidence-interval.py` (the `SubHmean`/`SubHmeanCI` rows of
//!   `setSummarySubselection`): the only resampling confidence interval mmtests computes (after
//!   Kalibera, Bulej and Tůma): 1000 subselections of 80% of the samples drawn with replacement,
//!   the median of their means and of their (population) variances, and a normal half-width
//!   from those ([`subselection_ci`]). mmtests draws from numpy's unseeded generator; here the
//!   draws come from a named, seeded stream (`tlblab_model::rng`), so a report's bytes repeat.
//!   mmtests gives BHmean.95 no interval of its own; [`bootstrap_pct_ci`] is tlblab's interval
//!   of a percent difference, by the same seeded resampling.
//! - With one iteration mmtests' stddev is "NaN" (`calc_stddev`, n <= 1), its CoeffVar 0
//!   (`calc_coeffvar`), its interval NaN (R's qnorm of a NaN sd), so no `*` mark; and
//!   `Compare.pm` prints a NaN statistic as 0 with a 0% difference. `compare` does the same in
//!   its mmtests mode.

/// Arithmetic mean (mmtests `Amean`); NaN for no samples.
pub fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Harmonic mean (mmtests `Hmean`, "the mean" of higher-is-better benchmarks); NaN when there
/// are no samples or any sample is <= 0 (mmtests refuses those too).
pub fn hmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v <= 0.0 || v.is_nan()) {
        return f64::NAN;
    }
    x.len() as f64 / x.iter().map(|v| 1.0 / v).sum::<f64>()
}

/// Geometric mean (mmtests `Gmean`); computed through logarithms so long products of large
/// throughputs do not overflow. NaN for no samples or any sample <= 0.
pub fn gmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v <= 0.0 || v.is_nan()) {
        return f64::NAN;
    }
    (x.iter().map(|v| v.ln()).sum::<f64>() / x.len() as f64).exp()
}

/// Sample standard deviation (n - 1); NaN for fewer than two samples.
pub fn stddev(x: &[f64]) -> f64 {
    variance(x).sqrt()
}

/// mmtests `HStddev` (`calc_stddev("hmean")`, since 8a0e63a2 "Stat: Use proper mean for stddev
/// calculation", Nov 2024): the spread of the reciprocals around 1/Hmean scaled back to the
/// samples' units, √(Σ(1/x − 1/H)² · H⁴ / n); NaN for fewer than two samples or an undefined
/// Hmean.
pub fn hstddev(x: &[f64]) -> f64 {
    let h = hmean(x);
    if x.len() < 2 || h.is_nan() {
        return f64::NAN;
    }
    let d: f64 = x.iter().map(|v| (1.0 / v - 1.0 / h).powi(2)).sum();
    (d * h.powi(4) / x.len() as f64).sqrt()
}

/// mmtests `HCoeffVar`: HStddev × 100 / Hmean, with an undefined stddev counting as 0 and an
/// undefined or zero mean giving 0 (as `calc_coeffvar`).
pub fn hcoeffvar(x: &[f64]) -> f64 {
    coeffvar_of(hstddev(x), hmean(x))
}

/// Sample variance (n - 1); NaN for fewer than two samples.
pub fn variance(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return f64::NAN;
    }
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64
}

/// Coefficient of variation in percent, stddev × 100 / mean; as mmtests, an undefined stddev
/// counts as 0 and a zero or undefined mean gives 0.
pub fn coeffvar(x: &[f64]) -> f64 {
    coeffvar_of(stddev(x), mean(x))
}

/// mmtests' `calc_coeffvar` of a spread and its mean: `stddev` × 100 / `mean`, an undefined
/// stddev counting as 0 and a zero or undefined mean giving 0.
pub fn coeffvar_of(stddev: f64, mean: f64) -> f64 {
    let s = if stddev.is_nan() { 0.0 } else { stddev };
    if mean == 0.0 || mean.is_nan() {
        0.0
    } else {
        s * 100.0 / mean
    }
}

pub fn min(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::INFINITY, f64::min)
}

pub fn max(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// The best `pct`% of the samples (mmtests `_mean-95` preparation): sorted best-first (descending
/// when higher is better), then the first int(n × pct / 100) of them, at least one.
pub fn best(x: &[f64], pct: u32, higher_is_better: bool) -> Vec<f64> {
    let mut v = x.to_vec();
    v.sort_by(|a, b| if higher_is_better { b.total_cmp(a) } else { a.total_cmp(b) });
    let keep = (x.len() * pct as usize / 100).max(1).min(x.len());
    v.truncate(keep);
    v
}

/// `BAmean-<pct>`: arithmetic mean of the best `pct`% of the samples.
pub fn bamean(x: &[f64], pct: u32, higher_is_better: bool) -> f64 {
    mean(&best(x, pct, higher_is_better))
}

/// `BHmean-<pct>`: harmonic mean of the best `pct`% of the samples.
pub fn bhmean(x: &[f64], pct: u32, higher_is_better: bool) -> f64 {
    hmean(&best(x, pct, higher_is_better))
}

/// mmtests `pdiff(new, base)`: percent change where higher is better.
pub fn pdiff(new: f64, base: f64) -> f64 {
    if new == base || new == 0.0 {
        0.0
    } else if base == 0.0 || base.is_nan() {
        100.0
    } else {
        new * 100.0 / base - 100.0
    }
}

/// mmtests `pndiff(new, base)`: percent change where lower is better.
pub fn pndiff(new: f64, base: f64) -> f64 {
    if new == base {
        0.0
    } else if new == 0.0 {
        100.0
    } else if base == 0.0 {
        -99.0
    } else {
        100.0 - new * 100.0 / base
    }
}

/// The percent column of a comparison row, positive meaning "better": `pdiff` for a
/// higher-is-better quantity, `pndiff` for a lower-is-better one. Spread rows (Stddev,
/// CoeffVar) are always lower-is-better, whatever the metric's direction.
pub fn percent_better(new: f64, base: f64, higher_is_better: bool) -> f64 {
    if higher_is_better {
        pdiff(new, base)
    } else {
        pndiff(new, base)
    }
}

/// Outcome of Welch's unequal-variances t-test of two samples' means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// t = (mean_a − mean_b) / √(s_a²/n_a + s_b²/n_b).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (not rounded).
    pub df: f64,
    /// Two-sided p-value from the Student-t distribution with `df` degrees of freedom.
    pub p: f64,
}

/// Welch's t-test; `None` when either side has fewer than two samples or both have zero
/// variance (no spread to judge a difference against; mmtests' R call gives NaN there too).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (va, vb) = (variance(a) / a.len() as f64, variance(b) / b.len() as f64);
    // Both variances zero (or NaN): nothing to judge a difference against.
    if va + vb <= 0.0 || (va + vb).is_nan() {
        return None;
    }
    let t = (mean(a) - mean(b)) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    Some(Welch { t, df, p: student_t_two_sided_p(t, df) })
}

/// Whether Welch's test rejects equal means at level `alpha` (0.05 for 95%). Like mmtests'
/// `calc_welch_test`, the degrees of freedom are rounded down to an integer (at least 1) before
/// the Student-t quantile is taken, which is slightly conservative.
pub fn welch_significant(a: &[f64], b: &[f64], alpha: f64) -> bool {
    match welch(a, b) {
        Some(w) => student_t_two_sided_p(w.t, w.df.floor().max(1.0)) < alpha,
        None => false,
    }
}

/// mmtests `cidiff`: the mean difference over the sum of the two confidence half-widths;
/// |ratio| > 1 means the intervals do not overlap (mmtests' default significance mark).
pub fn cidiff(new: f64, new_ci: f64, base: f64, base_ci: f64) -> f64 {
    let sum = new_ci + base_ci;
    if sum == 0.0 {
        new - base
    } else {
        (new - base) / sum
    }
}

/// mmtests `cidiff(new, [new_low, new_high], base, [base_low, base_high])` (Stat.pm since
/// 8cd087ae): the difference of the means over the sum of the parts of the two intervals that
/// face each other (the new interval's low side and the base's high side when the new mean is
/// higher); |ratio| > 1 means the intervals do not overlap. A NaN bound gives NaN (no mark).
pub fn cidiff_interval(new: f64, new_ci: (f64, f64), base: f64, base_ci: (f64, f64)) -> f64 {
    let diff = new - base;
    let sum = if new < base { new_ci.1 - new + base - base_ci.0 } else { new - new_ci.0 + base_ci.1 - base };
    if sum == 0.0 {
        diff
    } else {
        diff / sum
    }
}

/// The seeded stream every resampling here draws from: `tlblab_model::rng`'s named stream of
/// seed 1 (the CLI's default seed), so the same samples always give the same interval.
fn resampling_stream(name: &str) -> tlblab_model::rng::Rng {
    tlblab_model::rng::Rng::stream(1, name)
}

/// `k` draws with replacement from `x`.
fn draw(rng: &mut tlblab_model::rng::Rng, x: &[f64], k: usize) -> Vec<f64> {
    (0..k).map(|_| x[rng.below(x.len() as u64) as usize]).collect()
}

/// Median of a sample (the mean of the middle two for an even count); NaN when empty.
pub fn median(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Population variance (numpy's `var`, n in the denominator); NaN when empty.
fn pvariance(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / x.len() as f64
}

/// mmtests' subselection estimate and confidence half-width
/// (`subselection-confidence-interval.py`'s `confidence_interval` for one group of samples):
/// 1000 subselections of int(0.8 n) samples with replacement; the estimate is the median of
/// their `mean`s, the half-width qnorm(0.975) × √(median of their population variances / the
/// subselection size). `None` for fewer than two samples (a subselection of 0.8 of one sample
/// is empty). Deterministic: the draws come from a seeded stream.
pub fn subselection_ci(x: &[f64], mean_fn: fn(&[f64]) -> f64) -> Option<(f64, f64)> {
    const SELECTIONS: usize = 1000;
    let len = (0.8 * x.len() as f64) as usize;
    if len == 0 || x.len() < 2 {
        return None;
    }
    let mut rng = resampling_stream("mmtests-subselection");
    let means: Vec<f64> = (0..SELECTIONS).map(|_| mean_fn(&draw(&mut rng, x, len))).collect();
    let vars: Vec<f64> = (0..SELECTIONS).map(|_| pvariance(&draw(&mut rng, x, len))).collect();
    let half = crate::compare::QNORM_975 * (median(&vars) / len as f64).sqrt();
    Some((median(&means), half))
}

/// A 95% percentile-bootstrap interval of the percent difference of `stat` between `new` and
/// `base` (positive = better, as [`percent_better`]): 2000 resamples of each side with
/// replacement, the 2.5th and 97.5th percentiles of the percent differences. `None` when a
/// side has fewer than two samples. Deterministic (a seeded stream), so a page's bytes repeat.
pub fn bootstrap_pct_ci(
    new: &[f64],
    base: &[f64],
    stat: fn(&[f64]) -> f64,
    higher_is_better: bool,
) -> Option<(f64, f64)> {
    const RESAMPLES: usize = 2000;
    if new.len() < 2 || base.len() < 2 {
        return None;
    }
    let mut rng = resampling_stream("bootstrap-percent-difference");
    let mut d: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let (n, b) = (draw(&mut rng, new, new.len()), draw(&mut rng, base, base.len()));
            percent_better(stat(&n), stat(&b), higher_is_better)
        })
        .filter(|v| v.is_finite())
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_by(f64::total_cmp);
    let at = |q: f64| d[((q * (d.len() - 1) as f64).round() as usize).min(d.len() - 1)];
    Some((at(0.025), at(0.975)))
}

/// The smallest relative step a count of `ops` operations can show, in percent: one operation
/// more or less moves a rate by 1/ops (10 records resolve 10% steps).
pub fn resolution_pct(ops: u64) -> f64 {
    100.0 / ops.max(1) as f64
}

/// P(T <= t) for Student's t with `df` degrees of freedom (df > 0, real).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    // P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
    let tail = reg_inc_beta(df / 2.0, 0.5, df / (df + t * t)) / 2.0;
    if t > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// P(|T| >= |t|).
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// ln Γ(x) for x > 0: Lanczos approximation (g = 7, 9 coefficients; the widely published set,
/// relative error below 1e-15), with the reflection formula below 0.5.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x)Γ(1−x) = π / sin(πx)
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified
/// Lentz), using the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) where the fraction converges slowly.
pub fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if !(0.0..=1.0).contains(&x) || a <= 0.0 || b <= 0.0 {
        return f64::NAN;
    }
    if x == 0.0 || x == 1.0 {
        return x;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Continued fraction for I_x(a, b) (terms d_{2m}, d_{2m+1} of the standard expansion).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut f = d;
    for m in 1..=10_000 {
        let m = m as f64;
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + num / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            f *= c * d;
        }
        if (c * d - 1.0).abs() < EPS {
            break;
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn hand_computed() {
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&x), 5.0);
        // Sum of squared deviations 32, n - 1 = 7.
        assert!((stddev(&x) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((min(&x), max(&x)), (2.0, 9.0));
        assert!(stddev(&[1.0]).is_nan());
        // 1/1 + 1/2 + 1/4 = 7/4, n = 3: Hmean 12/7; Gmean (1·2·4)^(1/3) = 2.
        assert!(close(hmean(&[1.0, 2.0, 4.0]), 12.0 / 7.0, 1e-15));
        assert!(close(gmean(&[1.0, 2.0, 4.0]), 2.0, 1e-15));
        assert!(hmean(&[1.0, 0.0]).is_nan() && gmean(&[-1.0, 2.0]).is_nan());
        // CoeffVar of x: sqrt(32/7) * 100 / 5.
        assert!(close(coeffvar(&x), (32.0f64 / 7.0).sqrt() * 20.0, 1e-14));
        assert_eq!(coeffvar(&[3.0]), 0.0);
        assert_eq!(coeffvar(&[-1.0, 1.0]), 0.0);
    }

    #[test]
    fn best_95_percent_drops_the_worst_samples() {
        // 20 samples 1..=20: the best 95% is 19 of them; which end is dropped depends on the
        // direction.
        let x: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(bamean(&x, 95, true), (2..=20).sum::<i32>() as f64 / 19.0);
        assert_eq!(bamean(&x, 95, false), (1..=19).sum::<i32>() as f64 / 19.0);
        // With 3 samples int(3 * 0.95) = 2: the best two.
        assert_eq!(bamean(&[10.0, 30.0, 20.0], 95, true), 25.0);
        assert_eq!(bamean(&[10.0, 30.0, 20.0], 95, false), 15.0);
        assert!(close(bhmean(&[10.0, 30.0, 20.0], 95, true), 24.0, 1e-15));
        // One sample is kept whole.
        assert_eq!(bamean(&[7.0], 95, true), 7.0);
    }

    #[test]
    fn percent_signs_follow_the_facts_sheet_examples() {
        // docs/references/linux-mm.md#mmtests-statistics: throughput mean 1000.00 -> 1061.60 is +6.16%.
        assert!(close(percent_better(1061.60, 1000.00, true), 6.16, 1e-12));
        // tlbflush (lower is better) 11.17 -> 10.52 is 5.82%.
        assert_eq!(format!("{:.2}", percent_better(10.52, 11.17, false)), "5.82");
        // ebizzy Stddev 42.71 -> 53.16 is -24.46% (spread: lower is better). The sheet's inputs
        // are themselves rounded to two places, hence the tolerance of one in the last digit.
        assert!((pndiff(53.16, 42.71) - -24.46).abs() < 0.01);
        // Edge cases as in Stat.pm.
        assert_eq!((pdiff(5.0, 5.0), pdiff(0.0, 5.0), pdiff(5.0, 0.0)), (0.0, 0.0, 100.0));
        assert_eq!((pndiff(5.0, 5.0), pndiff(0.0, 5.0), pndiff(5.0, 0.0)), (0.0, 100.0, -99.0));
    }

    #[test]
    fn student_t_matches_closed_forms_and_tables() {
        // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π.
        for t in [-3.0, -0.5, 0.0, 0.7, 2.0, 12.0] {
            let exact = 0.5 + f64::atan(t) / std::f64::consts::PI;
            assert!(close(student_t_cdf(t, 1.0), exact, 1e-12), "df 1 t {t}");
        }
        // df = 2: F(t) = 1/2 + t / (2 √(2 + t²)).
        for t in [-4.0f64, -1.0, 0.3, 1.5, 9.0] {
            let exact = 0.5 + t / (2.0 * (2.0 + t * t).sqrt());
            assert!(close(student_t_cdf(t, 2.0), exact, 1e-12), "df 2 t {t}");
        }
        // Two-sided 5% critical values from printed t tables (R qt(0.975, df)).
        for (df, q) in
            [(1.0, 12.706205), (2.0, 4.302653), (5.0, 2.570582), (10.0, 2.228139), (30.0, 2.042272)]
        {
            assert!(close(student_t_cdf(q, df), 0.975, 1e-6), "df {df}");
            assert!(close(student_t_two_sided_p(q, df), 0.05, 2e-5), "df {df}");
        }
        assert!(close(student_t_cdf(1.959964, 1e7), 0.975, 1e-6));
    }

    #[test]
    fn ln_gamma_and_incomplete_beta_known_values() {
        // Γ(5) = 24, Γ(1/2) = √π, Γ(0.1) = 9.513507698668732.
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-14));
        assert!(close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-14));
        assert!(close(ln_gamma(0.1), 9.513507698668732f64.ln(), 1e-13));
        // I_x(1, 1) = x; I_x(2, 1) = x²; I_x(1, 3) = 1 − (1 − x)³.
        for x in [0.1, 0.5, 0.93] {
            assert!(close(reg_inc_beta(1.0, 1.0, x), x, 1e-13));
            assert!(close(reg_inc_beta(2.0, 1.0, x), x * x, 1e-13));
            assert!(close(reg_inc_beta(1.0, 3.0, x), 1.0 - (1.0 - x).powi(3), 1e-13));
        }
    }

    #[test]
    fn welch_by_hand() {
        // a: mean 3, s² 2.5; b: mean 6, s² 10; n = 5 each.
        // s²/n: 0.5 and 2; t = -3 / √2.5; df = 2.5² / (0.5²/4 + 2²/4) = 6.25 / 1.0625.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0];
        let w = welch(&a, &b).unwrap();
        assert!(close(w.t, -3.0 / 2.5f64.sqrt(), 1e-14));
        assert!(close(w.df, 6.25 / 1.0625, 1e-14));
        assert!(w.p > 0.05 && w.p < 0.2, "{w:?}");
        assert!(!welch_significant(&a, &b, 0.05));
        // Far apart, tight samples: significant.
        assert!(welch_significant(&[100.0, 101.0, 99.0], &[110.0, 111.0, 109.0], 0.05));
        // df = 2 exactly (equal variance and n = 2 both sides): s² = 0.5, s²/n = 0.25 each,
        // t = −2 / √0.5; Welch df = 0.25 / (2 · 0.0625) = 2, so p has the closed form of df 2.
        let w = welch(&[1.0, 2.0], &[3.0, 4.0]).unwrap();
        assert!(close(w.df, 2.0, 1e-14));
        let t = -2.0 / 0.5f64.sqrt();
        assert!(close(w.p, 2.0 * (0.5 + t / (2.0 * (2.0 + t * t).sqrt())), 1e-12));
        // Undefined cases.
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
        assert!(welch(&[1.0, 1.0], &[2.0, 2.0]).is_none());
        assert!(!welch_significant(&[1.0], &[5.0], 0.05));
    }

    #[test]
    fn harmonic_spread_by_hand() {
        // 1, 2, 4: H = 12/7; reciprocals 1, 1/2, 1/4 around 7/12.
        let h = 12.0 / 7.0;
        let d =
            (1.0f64 - 7.0 / 12.0).powi(2) + (0.5f64 - 7.0 / 12.0).powi(2) + (0.25f64 - 7.0 / 12.0).powi(2);
        let want = (d * h * h * h * h / 3.0).sqrt();
        assert!(close(hstddev(&[1.0, 2.0, 4.0]), want, 1e-14));
        assert!(close(hcoeffvar(&[1.0, 2.0, 4.0]), want * 100.0 / h, 1e-14));
        // Equal samples: no spread.
        assert!(hstddev(&[5.0, 5.0, 5.0]) < 1e-12);
        assert!(hstddev(&[5.0]).is_nan() && hstddev(&[5.0, 0.0]).is_nan());
        assert_eq!(hcoeffvar(&[5.0]), 0.0);
    }

    #[test]
    fn cidiff_of_intervals_as_stat_pm() {
        // Symmetric intervals: the same as the half-width form.
        assert!(close(cidiff_interval(110.0, (105.0, 115.0), 100.0, (96.0, 104.0)), 10.0 / 9.0, 1e-15));
        // Asymmetric: new higher uses new's low side (110 - 108 = 2) and base's high side
        // (101 - 100 = 1): 10 / 3.
        assert!(close(cidiff_interval(110.0, (108.0, 130.0), 100.0, (50.0, 101.0)), 10.0 / 3.0, 1e-15));
        // new lower: new's high side (1) and base's low side (100 - 99 = 1): -10 / 2.
        assert!(close(cidiff_interval(90.0, (0.0, 91.0), 100.0, (99.0, 200.0)), -5.0, 1e-15));
        assert_eq!(cidiff_interval(3.0, (3.0, 3.0), 1.0, (1.0, 1.0)), 2.0);
        assert!(cidiff_interval(3.0, (f64::NAN, f64::NAN), 1.0, (1.0, 1.0)).is_nan());
    }

    #[test]
    fn subselection_ci_is_seeded_and_sane() {
        let x: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let (m, h) = subselection_ci(&x, hmean).unwrap();
        // The estimate sits among the samples near their mean; the half-width is about
        // 1.96 × √(var / 16) with var ≈ 2 (the samples 100..104): ≈ 0.69.
        assert!(m > 101.0 && m < 103.0, "{m}");
        assert!(h > 0.5 && h < 0.9, "{h}");
        // Same input, same bytes.
        assert_eq!(subselection_ci(&x, hmean), Some((m, h)));
        assert!(subselection_ci(&[1.0], mean).is_none());
        // Constant samples: no spread.
        assert_eq!(subselection_ci(&[5.0; 10], mean), Some((5.0, 0.0)));
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn bootstrap_interval_of_a_difference_covers_it_and_repeats() {
        let base: Vec<f64> = (0..10).map(|i| 100.0 + (i % 3) as f64).collect();
        let new: Vec<f64> = base.iter().map(|v| v * 1.1).collect();
        let (lo, hi) = bootstrap_pct_ci(&new, &base, hmean, true).unwrap();
        assert!(lo < 10.0 && hi > 10.0 && lo > 7.0 && hi < 13.0, "{lo} {hi}");
        assert_eq!(bootstrap_pct_ci(&new, &base, hmean, true), Some((lo, hi)));
        // Lower is better: the same samples read as ~9% worse.
        let (lo, hi) = bootstrap_pct_ci(&new, &base, mean, false).unwrap();
        assert!(hi < 0.0 && lo < -9.0, "{lo} {hi}");
        assert!(bootstrap_pct_ci(&[1.0], &base, mean, true).is_none());
        assert_eq!((resolution_pct(10), resolution_pct(1000), resolution_pct(0)), (10.0, 0.1, 100.0));
    }

    #[test]
    fn cidiff_ratio() {
        // Means 100 and 110, half-widths 4 and 5: the intervals are 1 apart, ratio 10/9.
        assert!(close(cidiff(110.0, 5.0, 100.0, 4.0), 10.0 / 9.0, 1e-15));
        assert_eq!(cidiff(3.0, 0.0, 1.0, 0.0), 2.0);
    }
}
