//! kernel/time/jiffies.c: `jiffies`, the tick count. The engine delivers the tick every `1/HZ`
//! from a phase drawn per run (engine/noise.rs); `jiffies` counts those ticks from a start value
//! drawn per run too (Linux starts it at `INITIAL_JIFFIES`, five minutes before wrapping, so a
//! benchmark starts at an arbitrary value). Only rules that sample `jiffies` read it (v6.15
//! `consider_global_asid`: `(current->pid & 0x1f) == (jiffies & 0x1f)`).

use crate::profile::MachineProfile;
use crate::rng::Rng;
use crate::time::Ps;

/// `CONFIG_HZ`'s default (kernel/Kconfig.hz, `HZ_250`), for a profile without `noise.hz`.
pub const DEFAULT_HZ: f64 = 250.0;

#[derive(Debug, Clone, Copy)]
pub struct Jiffies {
    /// `HZ`.
    pub hz: u64,
    period: Ps,
    first_tick: Ps,
    at_start: u64,
}

impl Jiffies {
    pub fn boot(p: &MachineProfile) -> Jiffies {
        let hz = p.noise.as_ref().map(|n| n.hz.value).filter(|&hz| hz >= 1.0).unwrap_or(DEFAULT_HZ);
        Jiffies { hz: hz.round() as u64, period: Ps::from_ns(1e9 / hz), first_tick: Ps::ZERO, at_start: 0 }
    }

    /// `TICK_NSEC`: one jiffy.
    pub fn period(&self) -> Ps {
        self.period
    }

    /// Run `seed`'s start value, and the engine's tick (`(period, first tick)`) if it has one.
    pub fn seed(&mut self, seed: u64, tick: Option<(Ps, Ps)>) {
        if let Some((period, first)) = tick {
            (self.period, self.first_tick) = (period, first);
        }
        self.at_start = Rng::stream(seed, "jiffies at start").next_u64() >> 1;
    }

    /// `jiffies` at `now`: one more at every tick.
    pub fn at(&self, now: Ps) -> u64 {
        let ticks =
            if now < self.first_tick { 0 } else { (now.0 - self.first_tick.0) / self.period.0.max(1) + 1 };
        self.at_start.wrapping_add(ticks)
    }
}

impl crate::linux::Kernel {
    /// Run `seed`'s start of `jiffies`, on the engine's tick.
    pub fn seed_jiffies(&mut self, seed: u64, tick: Option<(Ps, Ps)>) {
        self.jiffies.seed(seed, tick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiffies_step_at_each_tick_from_a_seeded_start() {
        let p: MachineProfile = toml::from_str(crate::builtin::profile("milan-1s")).unwrap();
        let mut j = Jiffies::boot(&p);
        j.seed(7, Some((Ps::MS * 4, Ps::US * 100)));
        let start = j.at(Ps::ZERO);
        assert_eq!(j.at(Ps::US * 99), start);
        assert_eq!(j.at(Ps::US * 100), start + 1);
        assert_eq!(j.at(Ps::US * 4100), start + 2);
        let mut other = Jiffies::boot(&p);
        other.seed(8, Some((Ps::MS * 4, Ps::US * 100)));
        assert_ne!(other.at(Ps::ZERO), start, "each run starts elsewhere");
    }
}
