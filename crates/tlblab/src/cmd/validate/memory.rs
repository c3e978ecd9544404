//! The host's memory bandwidth around each cell's real runs. A guest shares its DRAM channels
//! with the host's other tenants, and its one-core clear and copy rates moved ~2x between
//! probes minutes apart (docs/validate.md, "Where it stands"); the probe samples them once. So
//! `validate` measures them again, with the probe's own micro-measurements
//! (tlblab_native::probe::fault::{clear_dram_mbps, memcpy_mbps}), just before and just after each
//! cell's real runs; where the slowest or the fastest lies beyond the rate of every profile
//! the cell is simulated on (the central one, the ends of the probe's spread), seed 1 also runs
//! on the central profile at that rate, so the simulated range covers the machine the real runs
//! had. Nothing here reads the benchmark's own runs: no cost is fitted to the benchmark it is
//! compared with.

use serde::Serialize;
use tlblab_model::profile::{Confidence, MachineProfile, Sourced};
use tlblab_native::host_profile::spread::End;
use tlblab_native::probe::fault;

/// One sample of the two DRAM-bound rates of one core, MB/s.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Rates {
    pub clear_dram_mbps: f64,
    pub memcpy_mbps: f64,
}

/// Passes over the buffers a sample takes (the median is kept), and their size: past any LLC
/// (256 MiB; 64 MiB quick, as the probe's own --quick).
const PASSES: usize = 3;

/// Measures the rates now.
pub fn sample(quick: bool) -> Rates {
    let bytes = if quick { 64 << 20 } else { 256 << 20 };
    Rates {
        clear_dram_mbps: fault::clear_dram_mbps(PASSES, bytes).median,
        memcpy_mbps: fault::memcpy_mbps(PASSES, bytes).median,
    }
}

/// The host's memory rates around a cell's real runs, beside the profile's.
#[derive(Debug, Clone, Serialize)]
pub struct Around {
    /// Before the first real run, then after the last.
    pub samples: Vec<Rates>,
    pub profile_memcpy_mbps: f64,
    pub profile_clear_dram_mbps: Option<f64>,
    /// Profiles simulated (seed 1) because a sample lay beyond every other profile's rate.
    pub profiles_added: usize,
}

/// The central profile with its memory rates at the slowest (`End::Slow`) or fastest of
/// `samples`, when that lies beyond the rate of every profile the cell is simulated on anyway
/// (`simulated`: the central one and the ends of the probe's spread); `None` when every sample
/// lies within them.
pub fn beyond(
    central: &MachineProfile,
    side: End,
    samples: &[Rates],
    simulated: &[&MachineProfile],
) -> Option<MachineProfile> {
    let past = |a: f64, b: f64| if side == End::Slow { a < b } else { a > b };
    let extreme = |f: fn(&Rates) -> f64| samples.iter().map(f).reduce(|a, b| if past(a, b) { a } else { b });
    // A rate beyond every simulated profile's, or None.
    let outside = |seen: Option<f64>, of: &dyn Fn(&MachineProfile) -> Option<f64>| {
        seen.filter(|&x| simulated.iter().filter_map(|p| of(p)).all(|v| past(x, v)))
    };
    let copy = outside(extreme(|s| s.memcpy_mbps), &|p| Some(p.memory.memcpy_mbps.value));
    let clear =
        outside(extreme(|s| s.clear_dram_mbps), &|p| p.memory.clear_dram_mbps.as_ref().map(|c| c.value))
            .filter(|_| central.memory.clear_dram_mbps.is_some());
    if copy.is_none() && clear.is_none() {
        return None;
    }
    let label = |key: &str, own: &Sourced, v: f64| {
        Sourced {
        value: v,
        source: format!(
            "validate: the {} `{key}` of the host measured just before and after the cell's real runs \
             ({:.0} MB/s, the probe's own micro-measurement), beyond every profile simulated; the probe's was {:.0}: {}",
            if side == End::Slow { "slowest" } else { "fastest" },
            v,
            own.value,
            own.source
        ),
        confidence: Confidence::Measured,
    }
    };
    let mut p = central.clone();
    let m = &mut p.memory;
    if let Some(v) = copy {
        m.memcpy_mbps = label("memcpy_mbps", &m.memcpy_mbps, v);
    }
    if let (Some(v), Some(c)) = (clear, &m.clear_dram_mbps) {
        m.clear_dram_mbps = Some(label("clear_dram_mbps", c, v));
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rates_beyond_every_simulated_profile_add_one() {
        let p = crate::machines::load("milan-1s").unwrap();
        let own = p.memory.memcpy_mbps.value;
        let clear = p.memory.clear_dram_mbps.as_ref().map(|c| c.value);
        let s = [
            Rates { clear_dram_mbps: clear.unwrap_or(1.0), memcpy_mbps: own * 0.5 },
            Rates { clear_dram_mbps: clear.unwrap_or(1.0), memcpy_mbps: own * 2.0 },
        ];
        let slow = beyond(&p, End::Slow, &s, &[&p]).unwrap();
        let fast = beyond(&p, End::Fast, &s, &[&p]).unwrap();
        assert_eq!(slow.memory.memcpy_mbps.value, own * 0.5);
        assert_eq!(fast.memory.memcpy_mbps.value, own * 2.0);
        assert!(slow.memory.memcpy_mbps.source.contains("slowest"), "{}", slow.memory.memcpy_mbps.source);
        // The clear rate did not move: it stays the central one's.
        assert_eq!(slow.memory.clear_dram_mbps, p.memory.clear_dram_mbps);
        slow.validate().unwrap();
        // An end of the spread already slower than every sample: nothing to add on that side.
        let mut end = p.clone();
        end.memory.memcpy_mbps.value = own * 0.4;
        assert!(beyond(&p, End::Slow, &s, &[&p, &end]).is_none());
        assert!(beyond(&p, End::Fast, &s, &[&p, &end]).is_some());
        // Samples inside the central rate add nothing.
        let inside = [Rates { clear_dram_mbps: clear.unwrap_or(1.0), memcpy_mbps: own }];
        assert!(beyond(&p, End::Fast, &inside, &[&p]).is_none());
    }
}
