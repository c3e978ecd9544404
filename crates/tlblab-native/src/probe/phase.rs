//! The probe's cheap primitives measured again, at the quick probe's sizes, in a few seconds:
//! the core clock, the flush sweep, the fault points, a system call, the warm fault and
//! fault-around, the context switch, the pipe, socket and file calls, a new tmpfs folio, the
//! wake-ups, an IPI's entry and exit, the cache-line transfer and the one-core memory rates. On
//! a shared guest these
//! moved 20-45% between probes minutes apart (docs/validate.md, "Where it stands"), so
//! `validate` measures them just before and just after each cell's real runs and simulates the
//! host as it was then ([`Phase::apply`] onto the full probe's report, every derivation redone).
//! The long parts (cache ladder, TLB reach, second-level faults, the all-CPU copy) and the
//! fault-cost spread keep the full probe's figures.

use serde::{Deserialize, Serialize};

use super::{clock, fault, filemap, fs, ipc, irq, net, sched, shmem, shootdown, Measurements, ProbeReport};
use crate::stats::Summary;

/// Blocks per part (the quick probe's).
const RUNS: usize = 3;

/// What [`measure`] re-measured; `None` where the part could not run here (one CPU, no
/// membarrier, no writable tmpfs): the full probe's figure stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Phase {
    pub clock_mhz: Summary,
    pub clock_imul_mhz: Summary,
    pub shootdown: shootdown::ShootdownSweep,
    pub faults: Vec<fault::FaultPoint>,
    pub fault_warm_ns: Summary,
    pub fault_around: filemap::FaultAround,
    pub syscall_ns: Summary,
    pub context_switch_ns: Summary,
    pub ipc: ipc::IpcCalls,
    pub net: net::NetCalls,
    pub fs: Option<fs::FsCalls>,
    pub shmem_new_folio: Option<shmem::NewFolio>,
    pub wake: Option<sched::RemoteWake>,
    pub ttwu_local_ns: Summary,
    pub irq_split: Option<irq::IrqSplit>,
    pub c2c_ns: Option<Summary>,
    pub clear_page_mbps: Summary,
    pub clear_dram_mbps: Summary,
    pub memcpy_mbps: Summary,
    pub read_page_mbps: Summary,
}

/// Measures the primitives now on `cpus` (the first two where a part needs two), at the quick
/// probe's sizes.
pub fn measure(cpus: &[usize], seed: u64) -> std::io::Result<Phase> {
    let pair = match cpus {
        [a, b, ..] => Some((*a, *b)),
        _ => None,
    };
    let cpu = cpus.first().copied().unwrap_or(0);
    let mut faults = vec![fault::fault_point(cpus, 1, 2048, RUNS)?];
    if pair.is_some() {
        faults.push(fault::fault_point(cpus, 2, 2048, RUNS)?);
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let tmpfs = fs::find_tmpfs(&mounts).ok();
    Ok(Phase {
        clock_mhz: clock::chain_mhz(clock::Chain::Add, RUNS, 5),
        clock_imul_mhz: clock::chain_mhz(clock::Chain::Imul, RUNS, 5),
        shootdown: shootdown::sweep(cpus, 12, 5)?,
        faults,
        fault_warm_ns: fault::warm_fault_ns(3 * RUNS, 20)?,
        fault_around: filemap::fault_around(3 * RUNS, 5)?,
        syscall_ns: fault::syscall_ns(3 * RUNS, 10_000),
        context_switch_ns: fault::context_switch_ns(cpu, RUNS, 2_000)?,
        ipc: ipc::ipc_calls(20)?,
        net: net::net_calls_on(cpu, 20)?,
        // A file system that refuses the calls keeps the full probe's figures.
        fs: tmpfs.as_ref().and_then(|t| fs::fs_calls_on(cpu, t, 20, seed).ok()),
        shmem_new_folio: tmpfs.as_ref().and_then(|t| shmem::new_folio_on(cpu, t, RUNS, true).ok()),
        wake: pair.map(|(a, b)| sched::remote_wake_ns(a, b, RUNS, 200)).transpose()?,
        ttwu_local_ns: sched::local_wake_ns(cpu, RUNS, 200)?,
        irq_split: match pair {
            Some((a, b)) => irq::membarrier_split(a, b, RUNS, 500)?,
            None => None,
        },
        c2c_ns: pair.map(|(a, b)| clock::c2c_ns(a, b, 4 * RUNS, 5_000)).transpose()?,
        clear_page_mbps: fault::clear_page_mbps(RUNS, 20_000),
        clear_dram_mbps: fault::clear_dram_mbps(RUNS, 64 << 20),
        memcpy_mbps: fault::memcpy_mbps(RUNS, 64 << 20),
        read_page_mbps: fault::read_page_mbps(RUNS, 20_000),
    })
}

impl Phase {
    /// `r` with these measurements in place of its own, every derivation (the clock, the flush
    /// sweep's analysis) redone; a part this phase lacks keeps `r`'s.
    pub fn apply(&self, r: &ProbeReport) -> ProbeReport {
        let mut out = r.clone();
        let m: &mut Measurements = &mut out.raw;
        m.clock_mhz = self.clock_mhz.clone();
        m.clock_imul_mhz = Some(self.clock_imul_mhz.clone());
        m.shootdown = self.shootdown.clone();
        // A fault point at a thread count the full probe did not measure is not added.
        for f in &mut m.faults {
            if let Some(p) = self.faults.iter().find(|p| p.threads == f.threads) {
                *f = p.clone();
            }
        }
        m.fault_warm_ns = Some(self.fault_warm_ns.clone());
        m.fault_around = Some(self.fault_around.clone());
        m.syscall_ns = self.syscall_ns.clone();
        m.context_switch_ns = self.context_switch_ns.clone();
        m.ipc = Some(self.ipc.clone());
        m.net = Some(self.net.clone());
        if let Some(fs) = &self.fs {
            m.fs = Some(fs.clone());
        }
        if let Some(n) = &self.shmem_new_folio {
            m.shmem_new_folio = Some(n.clone());
        }
        if let Some(w) = &self.wake {
            m.ttwu_ns = Some(w.waker_ns.clone());
            m.wake_latency_ns = Some(w.latency_ns.clone());
        }
        m.ttwu_local_ns = Some(self.ttwu_local_ns.clone());
        if let Some(s) = &self.irq_split {
            m.irq_split = Some(s.clone());
        }
        if let Some(c) = &self.c2c_ns {
            m.c2c_ns = Some(c.clone());
        }
        m.clear_page_mbps = self.clear_page_mbps.clone();
        m.clear_dram_mbps = Some(self.clear_dram_mbps.clone());
        m.memcpy_mbps = self.memcpy_mbps.clone();
        m.read_page_mbps = Some(self.read_page_mbps.clone());
        let cpuid = crate::cpuid::CpuidDump::parse(&out.cpuid_dump).ok();
        if let Some(c) = cpuid {
            out.clock = super::clock_of(&out.raw, &out.host, &c);
        }
        (out.reach_analysis, out.shootdown_costs) = super::derive(&out.raw);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded report and a phase made of its own measurements.
    fn recorded() -> (ProbeReport, Phase) {
        let text = include_str!("../../tests/data/probe-epyc-zen4-kvm-quiet-full.json");
        let r = ProbeReport::from_json(text).unwrap();
        let m = &r.raw;
        let ph = Phase {
            clock_mhz: m.clock_mhz.clone(),
            clock_imul_mhz: m.clock_imul_mhz.clone().unwrap_or_else(|| m.clock_mhz.clone()),
            shootdown: m.shootdown.clone(),
            faults: m.faults.clone(),
            fault_warm_ns: m.fault_warm_ns.clone().unwrap(),
            fault_around: m.fault_around.clone().unwrap(),
            syscall_ns: m.syscall_ns.clone(),
            context_switch_ns: m.context_switch_ns.clone(),
            ipc: m.ipc.clone().unwrap(),
            net: m.net.clone().unwrap(),
            fs: m.fs.clone(),
            shmem_new_folio: None,
            wake: None,
            ttwu_local_ns: m.ttwu_local_ns.clone().unwrap_or_else(|| m.syscall_ns.clone()),
            irq_split: None,
            c2c_ns: None,
            clear_page_mbps: m.clear_page_mbps.clone(),
            clear_dram_mbps: m.clear_dram_mbps.clone().unwrap_or_else(|| m.memcpy_mbps.clone()),
            memcpy_mbps: m.memcpy_mbps.clone(),
            read_page_mbps: m.read_page_mbps.clone().unwrap_or_else(|| m.memcpy_mbps.clone()),
        };
        (r, ph)
    }

    #[test]
    fn a_phase_replaces_its_parts_and_the_derivations_follow() {
        let (r, mut ph) = recorded();
        // Its own measurements back: the same derivations.
        let same = ph.apply(&r);
        assert_eq!(same.clock.mhz, r.clock.mhz);
        assert_eq!(
            serde_json::to_string(&same.shootdown_costs).unwrap(),
            serde_json::to_string(&r.shootdown_costs).unwrap()
        );
        // A slower system call and clock: the report carries them, and the clock is derived again.
        ph.syscall_ns.median *= 1.5;
        for s in [&mut ph.clock_mhz, &mut ph.clock_imul_mhz] {
            s.median *= 0.5;
            s.min *= 0.5;
            s.max *= 0.5;
        }
        let moved = ph.apply(&r);
        assert_eq!(moved.raw.syscall_ns.median, 1.5 * r.raw.syscall_ns.median);
        assert!(moved.clock.mhz < 0.9 * r.clock.mhz, "{} vs {}", moved.clock.mhz, r.clock.mhz);
        // What the phase does not measure keeps the report's (the long parts, the absent ones).
        assert_eq!(moved.raw.cache.len(), r.raw.cache.len());
        assert_eq!(moved.raw.ttwu_ns.as_ref().map(|s| s.median), r.raw.ttwu_ns.as_ref().map(|s| s.median));
    }
}
