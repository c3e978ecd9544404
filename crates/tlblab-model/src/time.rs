//! Simulated time: integer picoseconds, so every run is bit-reproducible (docs/design.md#time).
//! Profile costs (cycles at the profile's clock, or nanoseconds, as `f64` with their sources)
//! are converted once, when a machine is built, rounding to the nearest picosecond.

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};

/// A point in, or a span of, simulated time in picoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ps(pub u64);

impl Ps {
    pub const ZERO: Ps = Ps(0);
    pub const NS: Ps = Ps(1_000);
    pub const US: Ps = Ps(1_000_000);
    pub const MS: Ps = Ps(1_000_000_000);
    pub const S: Ps = Ps(1_000_000_000_000);

    /// Nanoseconds from a profile value.
    pub fn from_ns(ns: f64) -> Ps {
        assert!(ns.is_finite() && ns >= 0.0, "a cost must be a finite, non-negative number of ns");
        Ps::round_from(ns * 1_000.0)
    }

    /// Cycles of a `mhz` clock from a profile value.
    pub fn from_cycles(cycles: f64, mhz: u64) -> Ps {
        assert!(
            cycles.is_finite() && cycles >= 0.0,
            "a cost must be a finite, non-negative number of cycles"
        );
        assert!(mhz > 0, "the clock must be positive");
        // 1 cycle at f MHz = 10^6 / f ps.
        Ps::round_from(cycles * 1_000_000.0 / mhz as f64)
    }

    /// The picoseconds nearest to `ps` (ties away from zero), exactly as `ps.round() as u64`,
    /// without the software `round` a baseline x86-64 build calls (a hot spot in per-copy
    /// costs): below 2^52 the fraction `ps - trunc(ps)` is exact; from 2^52 on every `f64` is
    /// an integer already.
    pub fn round_from(ps: f64) -> Ps {
        assert!(ps.is_finite() && ps >= 0.0, "a time must be a finite, non-negative number");
        if ps >= (1u64 << 52) as f64 {
            return Ps(ps as u64);
        }
        let t = ps as u64;
        Ps(t + (ps - t as f64 >= 0.5) as u64)
    }

    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }

    pub fn saturating_sub(self, o: Ps) -> Ps {
        Ps(self.0.saturating_sub(o.0))
    }
}

impl Add for Ps {
    type Output = Ps;
    fn add(self, o: Ps) -> Ps {
        Ps(self.0 + o.0)
    }
}

impl AddAssign for Ps {
    fn add_assign(&mut self, o: Ps) {
        self.0 += o.0;
    }
}

impl Sub for Ps {
    type Output = Ps;
    fn sub(self, o: Ps) -> Ps {
        Ps(self.0.checked_sub(o.0).expect("simulated time went backwards"))
    }
}

impl Mul<u64> for Ps {
    type Output = Ps;
    fn mul(self, n: u64) -> Ps {
        Ps(self.0 * n)
    }
}

impl fmt::Display for Ps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        if p >= Ps::MS.0 {
            write!(f, "{:.3} ms", p as f64 / 1e9)
        } else if p >= Ps::US.0 {
            write!(f, "{:.3} us", p as f64 / 1e6)
        } else {
            write!(f, "{:.3} ns", p as f64 / 1e3)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_from_rounds_as_f64_round_does() {
        let mut r = crate::rng::Rng::stream(3, "round test");
        let edges = [0.0, 0.5, 1.5, 2.5, 0.49999999999999994, 4503599627370495.5, 4503599627370496.0];
        let random = (0..100_000).map(|_| {
            let bits = r.next_u64() >> 2; // non-negative, finite
            let x = f64::from_bits(bits);
            if x < 1e19 {
                x
            } else {
                x / 1e300
            }
        });
        for x in edges.into_iter().chain(random).chain((0..10_000).map(|i| i as f64 * 0.25)) {
            assert_eq!(Ps::round_from(x), Ps(x.round() as u64), "{x:e}");
        }
    }

    #[test]
    fn conversions_round_to_the_nearest_picosecond() {
        assert_eq!(Ps::from_ns(1.5), Ps(1_500));
        // 100 cycles at 3400 MHz = 29.41 ns.
        assert_eq!(Ps::from_cycles(100.0, 3400), Ps(29_412));
        assert_eq!(Ps::from_cycles(1.0, 48), Ps(20_833));
        assert_eq!(Ps::from_ns(0.0), Ps::ZERO);
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn time_never_runs_backwards() {
        let _ = Ps(1) - Ps(2);
    }

    #[test]
    fn displays_in_a_readable_unit() {
        assert_eq!(Ps(1_500).to_string(), "1.500 ns");
        assert_eq!(Ps(2_500_000).to_string(), "2.500 us");
        assert_eq!((Ps::MS * 3).to_string(), "3.000 ms");
    }
}
