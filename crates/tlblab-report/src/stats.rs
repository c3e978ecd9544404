//! Summary statistics of repeated runs. (The mmtests set — Hmean, Gmean, CoeffVar, trimmed
//! means, Welch's t-test — arrives with the reports issue.)

/// Arithmetic mean; NaN for no samples.
pub fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Sample standard deviation (n - 1); NaN for fewer than two samples.
pub fn stddev(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return f64::NAN;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64).sqrt()
}

pub fn min(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::INFINITY, f64::min)
}

pub fn max(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed() {
        let x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&x), 5.0);
        // Sum of squared deviations 32, n - 1 = 7.
        assert!((stddev(&x) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((min(&x), max(&x)), (2.0, 9.0));
        assert!(stddev(&[1.0]).is_nan());
    }
}
