//! `tlblab probe`: measures the host. Each part repeats its measurement in short blocks (the
//! conditions a cost is a difference of run back to back inside every block), derives each
//! cost per block and keeps the median over blocks with its spread, records how busy the rest
//! of the machine was meanwhile, and says why it skipped anything.
//!
//! The report keeps the raw per-block measurements beside what is derived from them, so a
//! recorded report (`tlblab probe --json`) can be read back with [`ProbeReport::from_json`]
//! and every derivation re-run without timing anything (`tests/data/probe-*.json`).

pub mod chase;
pub mod clock;
pub mod fault;
pub mod filemap;
pub mod fs;
pub mod ipc;
pub mod irq;
pub mod net;
pub mod phase;
pub mod sched;
pub mod shmem;
pub mod shootdown;
pub mod smt;
pub mod uncore;

use serde::{Deserialize, Serialize};

use crate::cpuid::{decode_tlbs, CpuidDump, TlbGeometry};
use crate::host::{HostInfo, Interference, InterferenceReport};
use crate::stats::Summary;

#[derive(Debug, Clone, Copy)]
pub struct ProbeOptions {
    /// A few seconds in all (tests, CI); the full probe takes about a minute.
    pub quick: bool,
    pub seed: u64,
}

impl ProbeOptions {
    /// Blocks of the chases, the ladder and the fault points.
    fn runs(&self) -> usize {
        if self.quick {
            3
        } else {
            11
        }
    }

    /// Blocks of the shootdown sweep and calls per point and condition in each: many short
    /// blocks rather than a few long ones (the same number of calls in all).
    fn shootdown_blocks(&self) -> (usize, usize) {
        if self.quick {
            (5, 12)
        } else {
            (15, 80)
        }
    }
}

/// Everything the probe measured, with the analysis of each sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeReport {
    pub date: String,
    pub quick: bool,
    pub runs: usize,
    pub host: HostInfo,
    /// The raw CPUID leaves the geometry came from (`tlblab probe --dump-cpuid` format).
    pub cpuid_dump: String,
    /// Decoded from `cpuid_dump` (again, when a report is read back).
    #[serde(skip_deserializing)]
    pub cpuid_tlb: TlbGeometry,
    #[serde(flatten)]
    pub raw: Measurements,
    /// Derived from `raw` (again, when a report is read back).
    #[serde(skip_deserializing)]
    pub reach_analysis: Option<chase::Reach>,
    #[serde(skip_deserializing)]
    pub shootdown_costs: Option<shootdown::ShootdownCosts>,
    /// The core clock taken from the chains and the nominal figures (again, when read back).
    #[serde(skip_deserializing)]
    pub clock: clock::ClockReading,
    /// Per part: the others' share of the machine while it ran.
    pub interference: Vec<(String, Option<InterferenceReport>)>,
    /// Skipped parts and caveats, in words.
    pub notes: Vec<String>,
    /// The cheap primitives again at the quick probe's sizes, right after the full probe
    /// ([`phase::measure`]): what `validate`'s later samples are read against, so that a quick
    /// measurement's own bias against the full one cancels (absent from older reports).
    #[serde(default)]
    pub phase_baseline: Option<phase::Phase>,
}

/// The raw measurements, every one kept per block: what the derivations read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurements {
    /// The chain of dependent adds ([`clock::Chain::Add`]; reports recorded before 2026-11-27
    /// timed `add reg, 1`, which cores that fold immediate adds run faster than their clock).
    pub clock_mhz: Summary,
    /// The chain of dependent multiplies ([`clock::Chain::Imul`]; absent from older reports).
    #[serde(default)]
    pub clock_imul_mhz: Option<Summary>,
    /// The kernel's cpufreq figures (CPUID's are in the dump; absent from older reports).
    #[serde(default)]
    pub kernel_clock: clock::KernelClock,
    pub cache: Vec<chase::CacheLevel>,
    pub reach: chase::ReachSweep,
    pub shootdown: shootdown::ShootdownSweep,
    /// The flush ceiling that splits the madvise curve (debugfs, else the kernel default 33).
    pub ceiling: usize,
    /// The L2 data TLB's 4K entries as CPUID reports them (tells the reach kinks apart).
    pub cpuid_l2: Option<usize>,
    pub c2c_ns: Option<Summary>,
    pub faults: Vec<fault::FaultPoint>,
    /// The fault on a recycled, cache-warm page ([`fault::warm_fault_ns`]; absent from reports
    /// recorded before it was measured).
    #[serde(default)]
    pub fault_warm_ns: Option<Summary>,
    pub syscall_ns: Summary,
    /// Shared shmem read faults with and without fault-around's neighbours
    /// ([`filemap::fault_around`]; absent from reports recorded before it was measured).
    #[serde(default)]
    pub fault_around: Option<filemap::FaultAround>,
    /// One minor fault's cost at `fault::SPREAD_PERCENTILES`, relative to the median (empty in
    /// reports recorded before it was measured).
    #[serde(default)]
    pub fault_spread: Vec<f64>,
    /// `CONFIG_HZ` of the running kernel, if its configuration is readable.
    #[serde(default)]
    pub config_hz: Option<f64>,
    /// A thread-to-thread context switch on one CPU, wake-up included.
    pub context_switch_ns: Summary,
    /// An IPI's timing around its acknowledgement, from membarrier's ([`irq::membarrier_split`];
    /// absent on one CPU, without expedited membarrier, and from reports recorded before it).
    #[serde(default)]
    pub irq_split: Option<irq::IrqSplit>,
    /// The waker's cost of waking a thread asleep on another CPU ([`sched::remote_wake_ns`];
    /// absent on one CPU and from reports recorded before it was measured).
    #[serde(default)]
    pub ttwu_ns: Option<Summary>,
    /// The waker's cost of waking a thread asleep on its own CPU ([`sched::local_wake_ns`]; absent
    /// from reports recorded before it was measured).
    #[serde(default)]
    pub ttwu_local_ns: Option<Summary>,
    /// The same wake-up's latency: from its start until the woken thread has run
    /// ([`sched::RemoteWake`]; absent where `ttwu_ns` is).
    #[serde(default)]
    pub wake_latency_ns: Option<Summary>,
    /// The same latency after the target CPU idled 2 us to 1 ms ([`sched::wake_latency_by_idle`];
    /// reported, not yet read by the model; absent on one CPU and from older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_latency_by_idle: Option<Vec<sched::IdleLatency>>,
    /// Whether the first two CPUs share a core's issue resources, whatever sysfs says
    /// ([`smt::core_sharing`]; reported, not read by the model; absent on one CPU and from
    /// older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_sharing: Option<smt::CoreSharing>,
    /// Pipe and AF_UNIX stream calls alone, 100 bytes each (absent in reports recorded before
    /// they were measured).
    #[serde(default)]
    pub ipc: Option<ipc::IpcCalls>,
    /// Loopback UDP and TCP calls alone, 64 bytes each (absent in older reports).
    #[serde(default)]
    pub net: Option<net::NetCalls>,
    /// File creation's calls alone on tmpfs, and fs_mark's user work per file (absent in older
    /// reports, and where no tmpfs is writable).
    #[serde(default)]
    pub fs: Option<fs::FsCalls>,
    /// A tmpfs file's new page alone, `fallocate` of a hole against a written page, and its
    /// removal ([`shmem::new_folio_on`]; absent in older reports and where no tmpfs is writable).
    #[serde(default)]
    pub shmem_new_folio: Option<shmem::NewFolio>,
    /// The LLC's size and a STREAM-like copy with one CPU and with all (absent in older reports).
    #[serde(default)]
    pub stream: Option<uncore::StreamCopy>,
    pub clear_page_mbps: Summary,
    /// Clearing pages past the LLC, one core ([`fault::clear_dram_mbps`]; absent from older
    /// reports).
    #[serde(default)]
    pub clear_dram_mbps: Option<Summary>,
    pub memcpy_mbps: Summary,
    /// Reading a cache-resident page a word at a time ([`fault::read_page_mbps`]; absent from
    /// older reports).
    #[serde(default)]
    pub read_page_mbps: Option<Summary>,
    /// First writes to pages fresh from the buddy lists after a pause, against recycled ones
    /// ([`fault::second_level_faults`]; absent from older reports).
    #[serde(default)]
    pub second_level: Option<fault::SecondLevel>,
}

/// The analyses of the two sweeps, from the raw measurements alone.
pub fn derive(m: &Measurements) -> (Option<chase::Reach>, Option<shootdown::ShootdownCosts>) {
    (chase::analyse(&m.reach, m.cpuid_l2), shootdown::analyse(&m.shootdown, m.ceiling))
}

/// The core clock from the two chains and the host's nominal figures.
pub fn clock_of(m: &Measurements, host: &HostInfo, cpuid: &CpuidDump) -> clock::ClockReading {
    let nominal = clock::nominal(cpuid, host.cpuinfo_mhz, &m.kernel_clock);
    let l1d = m.cache.iter().find(|c| c.name == "L1D").map(|c| c.ns.median);
    clock::reading(&m.clock_mhz, m.clock_imul_mhz.as_ref(), &nominal, l1d)
}

impl ProbeReport {
    /// Reads a recorded report (`tlblab probe --json`) back and re-derives everything that is
    /// derived: the TLB geometry from the CPUID dump, the clock and the sweeps' analyses.
    pub fn from_json(text: &str) -> Result<ProbeReport, String> {
        let mut r: ProbeReport = serde_json::from_str(text).map_err(|e| format!("probe report: {e}"))?;
        let cpuid = CpuidDump::parse(&r.cpuid_dump)?;
        r.cpuid_tlb = decode_tlbs(&cpuid);
        r.clock = clock_of(&r.raw, &r.host, &cpuid);
        (r.reach_analysis, r.shootdown_costs) = derive(&r.raw);
        Ok(r)
    }
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock (days-to-civil conversion).
pub fn today() -> String {
    let secs =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    civil_date(secs.div_euclid(86_400))
}

/// The proleptic Gregorian date of `days` since 1970-01-01.
pub fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A part counts as disturbed when other processes took more than this share of the machine,
/// or the hypervisor stole more than [`STEAL_QUIET`] of it, while it ran.
const OTHERS_QUIET: f64 = 0.03;
const STEAL_QUIET: f64 = 0.01;

/// Runs one part of the probe up to `tries` times, stopping at the first try that others did
/// not disturb, and keeps the least disturbed try with its interference report. A slow phase
/// of the host (a neighbour's burst, hypervisor steal) lasts seconds: it moves a whole part,
/// which medians over its own blocks cannot undo.
fn quietest<T>(
    tries: usize,
    ncpu: usize,
    mut f: impl FnMut() -> std::io::Result<T>,
) -> std::io::Result<(T, Option<InterferenceReport>)> {
    let disturbance = |r: &Option<InterferenceReport>| {
        r.map_or(0.0, |r| (r.others_share / OTHERS_QUIET).max(r.steal_share / STEAL_QUIET))
    };
    let mut best: Option<(T, Option<InterferenceReport>)> = None;
    for _ in 0..tries.max(1) {
        let i = Interference::start();
        let v = f()?;
        let r = i.stop(ncpu);
        let d = disturbance(&r);
        if best.as_ref().is_none_or(|b| d < disturbance(&b.1)) {
            best = Some((v, r));
        }
        if d <= 1.0 {
            break;
        }
    }
    Ok(best.expect("at least one try"))
}

/// Runs every part of the probe. `progress` hears the name of each part as it starts.
pub fn run(opts: ProbeOptions, mut progress: impl FnMut(&str)) -> std::io::Result<ProbeReport> {
    let runs = opts.runs();
    let cpuid = CpuidDump::read_host();
    let host = HostInfo::detect(&cpuid);
    let cpus = host.cpus.clone();
    let ncpu = cpus.len();
    let mut notes = Vec::new();
    let mut interference = Vec::new();
    // Each part runs up to `tries` times while it was disturbed, keeping the quietest try.
    let tries = if opts.quick { 1 } else { 3 };
    let mut part = |name: &str| {
        progress(name);
        name.to_string()
    };
    let cpuid_tlb = decode_tlbs(&cpuid);
    if let Some(h) = &host.hypervisor {
        notes.push(format!(
            "the host is a virtual machine (hypervisor `{h}`): IPIs are virtualised (exits to the host), so \
             IPI costs are the guest's, not the hardware's"
        ));
    }
    if host.kvm_pv_tlb_flush {
        notes.push(
            "KVM offers paravirtual remote TLB flush: flushes aimed at a preempted vCPU are done by the host \
             without an IPI, so the TLB row undercounts when vCPUs are preempted"
                .into(),
        );
    }
    let damon = crate::host::damon_monitors();
    if !damon.is_empty() {
        notes.push(format!(
            "DAMON is monitoring this host ({}): a paddr monitor clears accessed bits and a pageout scheme \
             reclaims memory it finds cold, so buffers idle between blocks may come back as faults or split \
             huge pages; walk, fault and clear_page figures vary with it",
            damon.join("; ")
        ));
    }
    let thp = host.thp_usable();

    let name = part("core clock");
    let ms = if opts.quick { 5 } else { 20 };
    let ((clock_mhz, clock_imul_mhz), r) = quietest(tries, ncpu, || {
        Ok((clock::chain_mhz(clock::Chain::Add, runs, ms), clock::chain_mhz(clock::Chain::Imul, runs, ms)))
    })?;
    interference.push((name, r));

    let name = part("cache latency ladder");
    let steps = if opts.quick { 100_000 } else { 1_000_000 };
    let dram = if opts.quick { 64 << 20 } else { 256 << 20 };
    let ((cache, n), r) = quietest(tries, ncpu, || chase::cache_ladder(runs, steps, dram, thp, opts.seed))?;
    notes.extend(n);
    interference.push((name, r));

    let name = part("TLB reach pointer chase");
    let max_pages = if opts.quick { 8192 } else { 1 << 18 };
    let steps = if opts.quick { 50_000 } else { 400_000 };
    let (reach, r) = quietest(tries, ncpu, || chase::reach_sweep(max_pages, runs, steps, thp, opts.seed))?;
    notes.extend(reach.notes.iter().cloned());
    let cpuid_l2 = cpuid_tlb
        .entries
        .iter()
        .filter(|e| {
            e.level == 2 && e.serves != crate::cpuid::Serves::Instruction && e.page_sizes.contains(&"4k")
        })
        .map(|e| e.entries as usize)
        .max();
    if chase::analyse(&reach, cpuid_l2).is_none() && thp {
        notes.push("the TLB-reach sweep shows no kink (penalty never rose by 1 ns): no reach figures".into());
    }
    interference.push((name, r));

    let name = part("shootdown sweep");
    let (blocks, reps) = opts.shootdown_blocks();
    let (shoot, r) = quietest(tries, ncpu, || shootdown::sweep(&cpus, reps, blocks))?;
    notes.extend(shoot.notes.iter().cloned());
    let ceiling = host.flush_ceiling.map_or(33, |c| c as usize);
    if host.flush_ceiling.is_none() {
        notes.push(
            "debugfs tlb_single_page_flush_ceiling not readable (needs root and debugfs): the kernel default 33 \
             splits the alone curve"
                .into(),
        );
    }
    if let Some(c) = &shootdown::analyse(&shoot, ceiling) {
        if ncpu > 1 && c.ipis_per_call.is_some_and(|v| v < 0.5) {
            notes.push(
                "the TLB row of /proc/interrupts barely moved with a sibling running: remote flushes are not \
                 delivered as counted IPIs here (paravirtual flush?), so IPI counts below are not trustworthy"
                    .into(),
            );
        }
    }
    interference.push((name, r));

    let c2c_ns = if ncpu > 1 {
        let name = part("cache-line ping-pong");
        let trips = if opts.quick { 5_000 } else { 50_000 };
        let (s, r) = quietest(tries, ncpu, || clock::c2c_ns(cpus[0], cpus[1], 4 * runs, trips))?;
        interference.push((name, r));
        Some(s)
    } else {
        notes.push("one CPU only: no cache-line transfer to measure".into());
        None
    };

    let name = part("page faults");
    let pages = if opts.quick { 2048 } else { 16_384 };
    let (faults, r) = quietest(tries, ncpu, || {
        let mut faults = vec![fault::fault_point(&cpus, 1, pages, runs)?];
        if ncpu > 1 {
            faults.push(fault::fault_point(&cpus, 2, pages, runs)?);
        }
        Ok(faults)
    })?;
    if ncpu == 1 {
        notes.push("one CPU only: the 2-thread fault point is skipped".into());
    }
    interference.push((name, r));

    let name =
        part("syscall, warm fault, fault-around, context switch, pipe and socket calls, clear_page, memcpy");
    let (
        (
            syscall_ns,
            fault_spread,
            fault_warm_ns,
            fault_around,
            context_switch_ns,
            ipc,
            clear_page_mbps,
            clear_dram_mbps,
            memcpy_mbps,
            read_page_mbps,
        ),
        r,
    ) = quietest(tries, ncpu, || {
        Ok((
            fault::syscall_ns(3 * runs, if opts.quick { 10_000 } else { 60_000 }),
            fault::fault_spread(if opts.quick { 5_000 } else { 50_000 })?,
            Some(fault::warm_fault_ns(3 * runs, if opts.quick { 20 } else { 100 })?),
            Some(filemap::fault_around(3 * runs, if opts.quick { 5 } else { 30 })?),
            fault::context_switch_ns(cpus[0], runs, if opts.quick { 2_000 } else { 20_000 })?,
            Some(ipc::ipc_calls(if opts.quick { 20 } else { 200 })?),
            fault::clear_page_mbps(runs, if opts.quick { 20_000 } else { 200_000 }),
            Some(fault::clear_dram_mbps(runs, if opts.quick { 64 << 20 } else { 256 << 20 })),
            fault::memcpy_mbps(runs, if opts.quick { 64 << 20 } else { 256 << 20 }),
            Some(fault::read_page_mbps(runs, if opts.quick { 20_000 } else { 200_000 })),
        ))
    })?;
    interference.push((name, r));

    // Last of the memory parts: it pauses before each fresh region (free page reporting's delay).
    let name = part("first writes to fresh pages after a pause (a guest's second-level faults)");
    let (second_level, r) = quietest(tries, ncpu, || {
        Ok(Some(fault::second_level_faults(
            if opts.quick { 8192 } else { 32_768 },
            if opts.quick { 1 } else { 3 },
        )?))
    })?;
    interference.push((name, r));

    let name = part("a wake-up across CPUs, and its latency after idling 2 us to 1 ms");
    let (wake, r) = quietest(tries, ncpu, || {
        Ok(match cpus[..] {
            [a, b, ..] => Some((
                sched::remote_wake_ns(a, b, runs, if opts.quick { 200 } else { 2_000 })?,
                sched::wake_latency_by_idle(a, b, runs, if opts.quick { 50 } else { 200 })?,
            )),
            _ => None,
        })
    })?;
    let (wake, wake_by_idle) = wake.unzip();
    interference.push((name, r));

    let name = part("one CPU's store-bound loop with the other CPU asleep and busy (a shared core)");
    let (core_sharing, r) = quietest(tries, ncpu, || {
        Ok(match cpus[..] {
            [a, b, ..] => Some(smt::core_sharing(a, b, if opts.quick { 5 } else { 15 }, 4_000_000)?),
            _ => None,
        })
    })?;
    interference.push((name, r));

    let name = part("a wake-up on the waker's CPU");
    let (local_wake, r) = quietest(tries, ncpu, || {
        Ok(Some(sched::local_wake_ns(cpus[0], runs, if opts.quick { 200 } else { 2_000 })?))
    })?;
    interference.push((name, r));

    let name = part("an IPI's entry and exit (membarrier)");
    let (irq_split, r) = quietest(tries, ncpu, || match cpus[..] {
        [a, b, ..] => irq::membarrier_split(a, b, runs, if opts.quick { 500 } else { 5_000 }),
        _ => Ok(None),
    })?;
    interference.push((name, r));
    if irq_split.is_none() && ncpu > 1 {
        notes.push(
            "no membarrier IPI measured (no expedited private membarrier, or the sibling never ran): the IPI \
             handler's entry and exit are split 2:1 by assumption"
                .into(),
        );
    }

    let name = part("loopback UDP and TCP calls");
    let (net, r) =
        quietest(tries, ncpu, || Ok(Some(net::net_calls_on(cpus[0], if opts.quick { 20 } else { 200 })?)))?;
    interference.push((name, r));

    let name = part("file creation calls on tmpfs");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let fs = match fs::find_tmpfs(&mounts) {
        Ok(tmpfs) => {
            let bursts = if opts.quick { 20 } else { 200 };
            // A file system that refuses the calls costs the section, not the probe.
            match quietest(tries, ncpu, || fs::fs_calls_on(cpus[0], &tmpfs, bursts, opts.seed)) {
                Ok((c, r)) => {
                    interference.push((name, r));
                    Some(c)
                }
                Err(e) => {
                    notes.push(format!(
                        "the file creation calls on {} failed ({e}): no [fs]",
                        tmpfs.display()
                    ));
                    None
                }
            }
        }
        Err(why) => {
            notes.push(why);
            None
        }
    };

    let name = part("a tmpfs file's new page (fallocate of a hole against a written page)");
    let shmem_new_folio = match fs::find_tmpfs(&mounts) {
        Ok(tmpfs) => match quietest(tries, ncpu, || shmem::new_folio_on(cpus[0], &tmpfs, runs, opts.quick)) {
            Ok((n, r)) => {
                interference.push((name, r));
                Some(n)
            }
            Err(e) => {
                notes.push(format!(
                    "fallocate of tmpfs pages on {} failed ({e}): no new-page figure",
                    tmpfs.display()
                ));
                None
            }
        },
        // Said once, for [fs].
        Err(_) => None,
    };

    let name = part("memory bandwidth, one CPU and all");
    let (stream, r) =
        quietest(tries, ncpu, || Ok(Some(uncore::stream_copy(&cpus, if opts.quick { 3 } else { 10 })?)))?;
    interference.push((name, r));

    let name = part("the cheap primitives again at the quick sizes (validate's baseline)");
    let (phase_baseline, r) = quietest(1, ncpu, || phase::measure(&cpus, opts.seed))?;
    interference.push((name, r));

    for (name, r) in &interference {
        if let Some(r) = r {
            if r.others_share > 0.10 {
                notes.push(format!(
                    "interference: other processes used {:.0}% of the machine during `{name}` (medians help, \
                     but expect spread)",
                    100.0 * r.others_share
                ));
            }
            if r.steal_share > 0.05 {
                notes.push(format!("steal time {:.0}% during `{name}`", 100.0 * r.steal_share));
            }
        }
    }
    let raw = Measurements {
        clock_mhz,
        clock_imul_mhz: Some(clock_imul_mhz),
        kernel_clock: clock::KernelClock::read(),
        cache,
        reach,
        shootdown: shoot,
        ceiling,
        cpuid_l2,
        c2c_ns,
        faults,
        fault_warm_ns,
        fault_around,
        syscall_ns,
        fault_spread,
        config_hz: crate::host::config_hz(),
        context_switch_ns,
        irq_split,
        ttwu_ns: wake.as_ref().map(|w| w.waker_ns.clone()),
        ttwu_local_ns: local_wake,
        wake_latency_ns: wake.map(|w| w.latency_ns),
        wake_latency_by_idle: wake_by_idle,
        core_sharing,
        ipc,
        net,
        fs,
        shmem_new_folio,
        stream,
        clear_page_mbps,
        clear_dram_mbps,
        memcpy_mbps,
        read_page_mbps,
        second_level,
    };
    let (reach_analysis, shootdown_costs) = derive(&raw);
    let clock = clock_of(&raw, &host, &cpuid);
    notes.extend(clock.disagreements.iter().map(|d| format!("clock: {d}")));
    Ok(ProbeReport {
        date: today(),
        quick: opts.quick,
        runs,
        host,
        cpuid_dump: cpuid.to_text(),
        cpuid_tlb,
        raw,
        reach_analysis,
        shootdown_costs,
        clock,
        interference,
        notes,
        phase_baseline: Some(phase_baseline),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(19_723), "2024-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }
}
