//! The host as it was just before and just after each cell's real runs. On a shared guest the
//! probe's primitives (a system call, the socket and file calls, the flush call, the memory
//! rates) moved 20-45% between probes minutes apart, and each validation's misses followed its
//! probe (docs/validate.md, "Where it stands"). So `validate` measures them again around each
//! cell (tlblab_native::probe::phase, the quick probe's sizes, a few seconds), puts them in the
//! full probe's report, builds the profile from it exactly as `probe --write-profile` does, and
//! simulates seed 1 on the host as measured before and after: the simulated range covers the
//! machine the real runs had. Nothing here reads the benchmark's own runs: no cost is fitted to
//! the benchmark it is compared with.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde::Serialize;
use tlblab_model::profile::MachineProfile;
use tlblab_native::probe::phase::{self, Phase};
use tlblab_native::probe::ProbeReport;

/// A sample this recent is the next cell's "before" too (the simulation ran in between, not the
/// host's other tenants' minutes).
const REUSE: Duration = Duration::from_secs(60);

/// A profile key the host moved by more than this share of the probe's value is listed.
pub const MOVED: f64 = 0.10;

/// One key of the profile that moved in a sample.
#[derive(Debug, Clone, Serialize)]
pub struct Moved {
    pub key: String,
    /// The full probe's value.
    pub probe: f64,
    pub sampled: f64,
}

/// One sample of the primitives: the keys that moved past [`MOVED`], largest first.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// `before` or `after` the cell's real runs.
    pub when: &'static str,
    /// Seconds since the validation started.
    pub at_s: f64,
    pub moved: Vec<Moved>,
}

/// The samples around a cell (JSON `phase`).
#[derive(Debug, Clone, Serialize)]
pub struct Around {
    pub samples: Vec<Sample>,
}

/// Samples the host's primitives and builds the host profile as each sample found it.
pub struct Sampler<'a> {
    report: &'a ProbeReport,
    central: &'a MachineProfile,
    /// What turns a built profile into the one the cells run on (the borrowed sections).
    finish: &'a dyn Fn(&mut MachineProfile) -> Result<()>,
    cpus: Vec<usize>,
    start: Instant,
    last: Option<(Instant, MachineProfile, Sample)>,
}

impl<'a> Sampler<'a> {
    pub fn new(
        report: &'a ProbeReport,
        central: &'a MachineProfile,
        finish: &'a dyn Fn(&mut MachineProfile) -> Result<()>,
    ) -> Sampler<'a> {
        Sampler {
            report,
            central,
            finish,
            cpus: tlblab_native::sys::allowed_cpus(),
            start: Instant::now(),
            last: None,
        }
    }

    /// The host now (`when`: before or after a cell's runs); a "before" reuses the last sample
    /// when it is under [`REUSE`] old.
    pub fn sample(&mut self, when: &'static str) -> Result<(MachineProfile, Sample)> {
        if when == "before" {
            if let Some((t, p, s)) = &self.last {
                if t.elapsed() < REUSE {
                    return Ok((p.clone(), Sample { when, ..s.clone() }));
                }
            }
        }
        let ph =
            phase::measure(&self.cpus, 1).map_err(|e| anyhow!("measuring the host's primitives: {e}"))?;
        let p = self.profile_of(&ph)?;
        let s = Sample { when, at_s: self.start.elapsed().as_secs_f64(), moved: moved(self.central, &p) };
        self.last = Some((Instant::now(), p.clone(), s.clone()));
        Ok((p, s))
    }

    fn profile_of(&self, ph: &Phase) -> Result<MachineProfile> {
        let r = ph.apply(self.report);
        let p = tlblab_native::host_profile::build(&r, &self.central.name)
            .map_err(|e| anyhow!("the host profile at a sample of its primitives: {e}"))?
            .profile;
        let mut p = keep_resolved(self.central, &p)?;
        (self.finish)(&mut p)?;
        Ok(p)
    }
}

/// `sampled` with every key the full probe measured but the quick sample could not resolve (a
/// labelled fallback: a slope below its blocks' resolution, say) back at the full probe's value
/// and source: a sample's own estimates are not the host moving.
fn keep_resolved(central: &MachineProfile, sampled: &MachineProfile) -> Result<MachineProfile> {
    let base: Vec<(String, toml::Table)> = {
        let mut v = Vec::new();
        central
            .map_sourced(&mut |k, t| v.push((k.path.clone(), t.clone())))
            .map_err(|e| anyhow!("the probe's profile: {e}"))?;
        v
    };
    let measured = |t: &toml::Table| t.get("confidence").and_then(|c| c.as_str()) == Some("measured");
    sampled
        .map_sourced(&mut |k, t| {
            if let Some((_, b)) = base.iter().find(|(p, _)| *p == k.path) {
                if measured(b) && !measured(t) {
                    *t = b.clone();
                }
            }
        })
        .map_err(|e| anyhow!("the host profile at a sample of its primitives: {e}"))
}

/// The keys of `p` more than [`MOVED`] from `central`'s, largest move first.
pub fn moved(central: &MachineProfile, p: &MachineProfile) -> Vec<Moved> {
    let base = central.sourced();
    let mut out: Vec<(f64, Moved)> = p
        .sourced()
        .into_iter()
        .filter_map(|(k, v, _)| {
            let (_, b, _) = base.iter().find(|(c, _, _)| c.label == k.label)?;
            let rel = if *b != 0.0 { (v - b).abs() / b.abs() } else { 0.0 };
            (rel > MOVED).then(|| (rel, Moved { key: k.label, probe: *b, sampled: v }))
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter().map(|(_, m)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_model::profile::{Confidence, Sourced};

    #[test]
    fn a_key_the_sample_could_not_resolve_keeps_the_probes() {
        let p = crate::machines::load("milan-1s").unwrap();
        let mut measured = p.clone();
        measured.kernel.syscall_ns.confidence = Confidence::Measured;
        measured.memory.memcpy_mbps.confidence = Confidence::Measured;
        let mut sampled = measured.clone();
        sampled.kernel.syscall_ns =
            Sourced { value: 1.0, source: "fallback".into(), confidence: Confidence::Estimate };
        sampled.memory.memcpy_mbps.value *= 2.0;
        let kept = keep_resolved(&measured, &sampled).unwrap();
        assert_eq!(kept.kernel.syscall_ns, measured.kernel.syscall_ns);
        assert_eq!(kept.memory.memcpy_mbps.value, 2.0 * measured.memory.memcpy_mbps.value);
    }

    #[test]
    fn only_keys_moved_past_the_share_are_listed_largest_first() {
        let p = crate::machines::load("milan-1s").unwrap();
        assert!(moved(&p, &p).is_empty());
        let mut q = p.clone();
        q.memory.memcpy_mbps.value *= 1.5;
        q.kernel.syscall_ns.value *= 0.8;
        q.cpu.clock_mhz.value *= 1.05;
        let m = moved(&p, &q);
        let keys: Vec<&str> = m.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys.len(), 2, "{keys:?}");
        assert!(keys[0].contains("memcpy_mbps") && keys[1].contains("syscall_ns"), "{keys:?}");
        assert_eq!(m[0].sampled, 1.5 * m[0].probe);
    }
}
