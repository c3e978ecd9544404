//! Noise with a source (docs/design.md#noise): a real machine is never in lockstep. Two sources,
//! both from the profile's `[noise]` section, each on its own seeded stream:
//! - the scheduler tick: every busy CPU takes a timer interrupt every `1/HZ`; the ticks of all
//!   CPUs fall on the same instants (`skew_tick=0`, the default since its introduction in v3.4,
//!   kernel/time/tick-sched.c `tick_setup_sched_timer`), at a phase drawn once per run;
//! - per-step cost jitter: each step's time is scaled by a factor drawn from the profile's
//!   measured distribution (`step_quantiles`), on one stream per CPU.
//!
//! Integer arithmetic throughout (factors in parts per million), so a run's bytes do not depend
//! on the platform's floating point.

use crate::profile::{MachineProfile, STEP_PERCENTILES};
use crate::rng::Rng;
use crate::time::Ps;

const PPM: i64 = 1_000_000;

#[derive(Debug, Clone)]
pub struct Noise {
    /// The tick period and the first tick, if the profile has ticks.
    tick: Option<(Ps, Ps)>,
    /// The profile's tick rate (kept to draw the phase again when the run is seeded).
    period: Option<Ps>,
    /// `step_quantiles` as factors in ppm, at `STEP_PERCENTILES` (in ppm of probability).
    quantiles: Option<[i64; 9]>,
    /// `STEP_PERCENTILES` in ppm of probability, and `span[i]` divides by the span from `at[i -
    /// 1]` to `at[i]` (`span[0]` is never used).
    at: [i64; 9],
    span: [Divisor; 9],
    /// One jitter stream per CPU.
    streams: Vec<Rng>,
}

impl Noise {
    pub fn new(p: &MachineProfile, cpus: u32, seed: u64) -> Noise {
        let n = p.noise.as_ref();
        let period = n.filter(|n| n.hz.value > 0.0).map(|n| Ps::from_ns(1e9 / n.hz.value));
        let quantiles =
            n.map(|n| std::array::from_fn(|i| (n.step_quantiles.value[i] * PPM as f64).round() as i64));
        let at: [i64; 9] = std::array::from_fn(|i| (STEP_PERCENTILES[i] * 10_000.0) as i64);
        let span = std::array::from_fn(|i| Divisor::new(if i == 0 { 1 } else { at[i] - at[i - 1] }));
        let mut noise = Noise { tick: None, period, quantiles, at, span, streams: Vec::new() };
        noise.seed(cpus, seed);
        noise
    }

    /// Draws the tick phase and the jitter streams of run `seed`.
    pub fn seed(&mut self, cpus: u32, seed: u64) {
        self.tick =
            self.period.map(|period| (period, Ps(Rng::stream(seed, "tick phase").below(period.0.max(1)))));
        self.streams = (0..cpus).map(|c| Rng::stream(seed, &format!("step jitter (cpu {c})"))).collect();
    }

    /// The tick period and the instant of the first tick.
    pub fn tick(&self) -> Option<(Ps, Ps)> {
        self.tick
    }

    /// Whether steps are jittered at all (the profile has `step_quantiles`).
    pub fn jitters(&self) -> bool {
        self.quantiles.is_some()
    }

    /// Scales `d` by a factor drawn for `cpu`: linear between the measured percentiles, flat
    /// beyond the first and last.
    pub fn factor_ppm(&mut self, cpu: u32) -> i64 {
        let Some(q) = &self.quantiles else { return PPM };
        let u = self.streams[cpu as usize].below(PPM as u64) as i64;
        // The first percentile at or above `u`, counted without a branch per percentile (the
        // search loop's unpredictable exit was a hot spot).
        let i = self.at.iter().filter(|&&a| a < u).count();
        match i {
            0 => q[0],
            _ if i == q.len() => q[q.len() - 1],
            _ => q[i - 1] + self.span[i].div((q[i] - q[i - 1]) * (u - self.at[i - 1])),
        }
    }
}

/// What scaling `d` by `ppm` adds (negative when it shortens), rounded toward zero.
pub fn extra(d: Ps, ppm: i64) -> i64 {
    // In 64 bits when the product fits (every step of a run: the 128-bit division was a hot
    // spot); both round toward zero alike.
    match i64::try_from(d.0).ok().and_then(|d| d.checked_mul(ppm - PPM)) {
        Some(p) => p / PPM,
        None => (d.0 as i128 * (ppm - PPM) as i128 / PPM as i128) as i64,
    }
}

pub const UNIT: i64 = PPM;

/// Division by a fixed positive divisor `d`, as `/` gives it, without a hardware divide on the
/// common path (one per step was a hot spot): for `0 <= n` with `n x d < 2^64`,
/// `floor(n / d) = (n x ceil(2^64 / d)) >> 64` exactly (the error term `n x e / (d 2^64)`, with
/// `e < d`, stays below `1 / d`); any other `n` takes `/`.
#[derive(Debug, Clone, Copy)]
struct Divisor {
    d: i64,
    /// `ceil(2^64 / d)`; 0 for `d = 1`, where it does not fit (then `/` is used).
    m: u64,
}

impl Divisor {
    fn new(d: i64) -> Divisor {
        assert!(d > 0, "a percentile span is positive");
        Divisor { d, m: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 } }
    }

    fn div(self, n: i64) -> i64 {
        if self.m != 0 && n >= 0 && (n as u64).checked_mul(self.d as u64).is_some() {
            ((n as u128 * self.m as u128) >> 64) as i64
        } else {
            n / self.d
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::MachineProfile;

    fn profile() -> MachineProfile {
        let mut p = crate::profile::shipped("haswell-ep-2s");
        p.noise.as_mut().expect("built-in profiles carry [noise]").step_quantiles.value =
            vec![0.8, 0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1, 1.3];
        p
    }

    #[test]
    fn factors_follow_the_quantiles() {
        let mut n = Noise::new(&profile(), 2, 7);
        let mut f: Vec<i64> = (0..20_000).map(|_| n.factor_ppm(1)).collect();
        f.sort_unstable();
        let pct = |p: usize| f[f.len() * p / 100] as f64 / PPM as f64;
        assert!((pct(50) - 1.0).abs() < 0.005, "{}", pct(50));
        assert!((pct(10) - 0.95).abs() < 0.005 && (pct(90) - 1.05).abs() < 0.005);
        assert!(f[0] >= 800_000 && f[f.len() - 1] <= 1_300_000);
    }

    #[test]
    fn streams_are_per_cpu_and_seeded() {
        let p = profile();
        let draw = |seed, cpu| {
            let mut n = Noise::new(&p, 4, seed);
            (0..8).map(|_| n.factor_ppm(cpu)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 0), draw(1, 0));
        assert_ne!(draw(1, 0), draw(1, 1));
        assert_ne!(draw(1, 0), draw(2, 0));
        let (period, first) = Noise::new(&p, 4, 1).tick().unwrap();
        assert!(first < period && period == Ps::from_ns(1e9 / p.noise.unwrap().hz.value));
    }

    #[test]
    fn the_reciprocal_divides_as_slash_does() {
        let mut r = crate::rng::Rng::stream(1, "divisor test");
        for d in [1, 2, 3, 7, 40_000, 50_000, 150_000, 250_000, 999_983, i64::MAX / 3] {
            let v = Divisor::new(d);
            for _ in 0..20_000 {
                let n = (r.next_u64() >> (r.below(64) as u32)) as i64 * if r.below(4) == 0 { -1 } else { 1 };
                assert_eq!(v.div(n), n / d, "{n} / {d}");
            }
            for n in [0, d - 1, d, d + 1, 2 * d - 1, i64::MAX, -d, -1] {
                assert_eq!(v.div(n), n / d, "{n} / {d}");
            }
        }
    }

    #[test]
    fn without_a_noise_section_nothing_moves() {
        let mut p = profile();
        p.noise = None;
        let mut n = Noise::new(&p, 1, 1);
        assert_eq!((n.factor_ppm(0), n.tick()), (PPM, None));
        assert_eq!((extra(Ps(1000), 1_050_000), extra(Ps(1000), 900_000)), (50, -100));
    }
}
