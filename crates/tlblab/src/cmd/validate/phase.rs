//! The host as it was just before and just after each cell's real runs. On a shared guest the
//! probe's primitives (a system call, the socket and file calls, the flush call, the memory
//! rates) moved 20-45% between probes minutes apart, and each validation's misses followed its
//! probe (docs/validate.md, "Where it stands"). So `validate` measures them again around each
//! cell (tlblab_native::probe::phase, the quick probe's sizes, a few seconds) and simulates seed
//! 1 on the host as measured before and after: the simulated range covers the machine the real
//! runs had. A quick sample is read against the same quick sample the probe took just after its
//! full measurements (`phase_baseline`): each key of the full probe's profile moves by the ratio
//! of the two profiles built from them, so what the quick sizes measure differently from the
//! full ones (fs_mark's user work, the flush sweep's intercept) cancels and only the host's drift
//! remains. Nothing here reads the benchmark's own runs: no cost is fitted to the benchmark it is
//! compared with.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde::Serialize;
use tlblab_model::profile::{sourced_value, MachineProfile};
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
    /// The profile built from the quick sample taken just after the full probe: a later
    /// sample's keys are read against it.
    baseline: MachineProfile,
    cpus: Vec<usize>,
    start: Instant,
    last: Option<(Instant, MachineProfile, Sample)>,
}

impl<'a> Sampler<'a> {
    /// With the report's baseline sample, or (a report recorded before the probe took one) one
    /// taken now, which `notes` then says.
    pub fn new(
        report: &'a ProbeReport,
        central: &'a MachineProfile,
        notes: &mut Vec<String>,
    ) -> Result<Sampler<'a>> {
        let cpus = tlblab_native::sys::allowed_cpus();
        let first = match &report.phase_baseline {
            Some(b) => b.clone(),
            None => {
                notes.push(
                    "the probe's report has no baseline sample of its primitives (recorded before it took one): \
                     the first sample, at validate's start, stands in for it"
                        .into(),
                );
                phase::measure(&cpus, 1).map_err(|e| anyhow!("measuring the host's primitives: {e}"))?
            }
        };
        let baseline = build(report, &first, &central.name)?;
        Ok(Sampler { report, central, baseline, cpus, start: Instant::now(), last: None })
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
        let now = build(self.report, &ph, &self.central.name)?;
        let p = drifted(self.central, &self.baseline, &now)?;
        let s = Sample { when, at_s: self.start.elapsed().as_secs_f64(), moved: moved(self.central, &p) };
        self.last = Some((Instant::now(), p.clone(), s.clone()));
        Ok((p, s))
    }
}

/// The profile built from the report with the sample's measurements in place of its own.
fn build(report: &ProbeReport, ph: &Phase, name: &str) -> Result<MachineProfile> {
    Ok(tlblab_native::host_profile::build(&ph.apply(report), name)
        .map_err(|e| anyhow!("the host profile at a sample of its primitives: {e}"))?
        .profile)
}

/// `central` with each key moved by the drift the quick samples saw: times `now / baseline`,
/// where the full probe, the baseline and this sample all measured it (a key a quick sample
/// left unresolved, a labelled fallback, keeps the full probe's figure: its estimate is not the
/// host moving). A quick sample's own bias against the full probe's sizes cancels in the ratio.
fn drifted(
    central: &MachineProfile,
    baseline: &MachineProfile,
    now: &MachineProfile,
) -> Result<MachineProfile> {
    let tables = |p: &MachineProfile| -> Result<Vec<(String, toml::Table)>> {
        let mut v = Vec::new();
        p.map_sourced(&mut |k, t| v.push((k.path.clone(), t.clone())))
            .map_err(|e| anyhow!("the host profile: {e}"))?;
        Ok(v)
    };
    let (base, now) = (tables(baseline)?, tables(now)?);
    let measured = |t: &toml::Table| t.get("confidence").and_then(|c| c.as_str()) == Some("measured");
    let find =
        |v: &[(String, toml::Table)], path: &str| v.iter().find(|(p, _)| p == path).map(|(_, t)| t.clone());
    central
        .map_sourced(&mut |k, t| {
            let (Some(b), Some(n)) = (find(&base, &k.path), find(&now, &k.path)) else { return };
            let (Some(c), Some(bv), Some(nv)) = (sourced_value(t), sourced_value(&b), sourced_value(&n))
            else {
                return;
            };
            if !(measured(t) && measured(&b) && measured(&n)) || bv == 0.0 {
                return;
            }
            let v = c * nv / bv;
            // An integer key stays an integer.
            let value = match t.get("value") {
                Some(toml::Value::Integer(_)) => toml::Value::Integer(v.round() as i64),
                _ => toml::Value::Float(v),
            };
            t.insert("value".into(), value);
            let src = t.get("source").and_then(|s| s.as_str()).unwrap_or_default().to_string();
            t.insert(
                "source".into(),
                toml::Value::String(format!(
                    "{src}; x {:.3}: validate's quick sample of the host's primitives just before or after a \
                     cell's real runs ({nv:.4}) against the same quick sample just after the probe ({bv:.4})",
                    nv / bv
                )),
            );
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
    fn keys_move_by_the_samples_drift_and_unresolved_ones_stay() {
        let p = crate::machines::load("milan-1s").unwrap();
        let mut central = p.clone();
        central.kernel.syscall_ns.confidence = Confidence::Measured;
        central.memory.memcpy_mbps.confidence = Confidence::Measured;
        let mut base = central.clone();
        // The quick sample's own bias: it reads the system call 10% dearer than the full probe.
        base.kernel.syscall_ns.value *= 1.1;
        let mut now = base.clone();
        now.kernel.syscall_ns.value *= 1.5;
        now.memory.memcpy_mbps =
            Sourced { value: 1.0, source: "fallback".into(), confidence: Confidence::Estimate };
        let d = drifted(&central, &base, &now).unwrap();
        let want = central.kernel.syscall_ns.value * 1.5;
        assert!((d.kernel.syscall_ns.value - want).abs() < 1e-9 * want, "{}", d.kernel.syscall_ns.value);
        assert!(d.kernel.syscall_ns.source.contains("x 1.500"), "{}", d.kernel.syscall_ns.source);
        assert_eq!(d.memory.memcpy_mbps, central.memory.memcpy_mbps);
        // A key the full probe did not measure (an estimate) does not move.
        let mut est = now.clone();
        est.kernel.syscall_ns.value = 1.0;
        let mut c2 = central.clone();
        c2.kernel.syscall_ns.confidence = Confidence::Estimate;
        assert_eq!(drifted(&c2, &base, &est).unwrap().kernel.syscall_ns, c2.kernel.syscall_ns);
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
