//! The core clock and the cache-line transfer time between two CPUs (an atomic ping-pong, half
//! a round trip).
//!
//! The clock is timed on two dependent chains, so no performance counters are needed (guests
//! usually have none): adds of a register whose value the CPU cannot know at rename (one cycle
//! each on every x86 core; a chain of `add reg, imm` is not latency-bound on cores that fold
//! immediate adds at rename, such as Intel's Golden Cove family, and read 5x fast there), and
//! 64-bit multiplies (3 cycles on Intel since Nehalem and AMD since Zen). The reading then checks
//! the two against each other and against the nominal figures of CPUID and the kernel
//! ([`reading`]), and says where they disagree.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::cpuid::CpuidDump;
use crate::stats::Summary;
use crate::sys;

/// Operations per loop iteration of a chain.
const CHAIN: u64 = 64;

/// A dependent chain the clock is timed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// `add x, one` with `one` a register holding 1: latency 1 on every x86 core since the P6.
    Add,
    /// `imul x, m` with `m` a register holding 1: latency 3 on Intel since Nehalem and on AMD
    /// since Zen (4-6 on K10, Bulldozer, Core 2 and the Atom line: Agner Fog, instruction tables).
    Imul,
}

impl Chain {
    /// Latency of one operation in cycles, as assumed.
    pub fn cycles(self) -> u64 {
        match self {
            Chain::Add => 1,
            Chain::Imul => 3,
        }
    }

    /// Runs `iters` x 64 dependent operations; the loop counter runs in parallel.
    #[cfg(target_arch = "x86_64")]
    #[inline(never)]
    fn run(self, iters: u64) -> u64 {
        // A value the CPU cannot know before it executes: it comes from memory at run time.
        let one = std::hint::black_box(1u64);
        let mut x = std::hint::black_box(1u64);
        let mut n = iters;
        // SAFETY: register-only arithmetic; no memory, no stack.
        unsafe {
            match self {
                Chain::Add => core::arch::asm!(
                    "2:",
                    ".rept 64",
                    "add {x}, {one}",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    one = in(reg) one,
                    options(nomem, nostack),
                ),
                Chain::Imul => core::arch::asm!(
                    "2:",
                    ".rept 64",
                    "imul {x}, {one}",
                    ".endr",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    n = inout(reg) n,
                    one = in(reg) one,
                    options(nomem, nostack),
                ),
            }
        }
        let _ = n;
        x
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn run(self, iters: u64) -> u64 {
        let one = std::hint::black_box(1u64);
        let mut x = 1u64;
        for _ in 0..iters * CHAIN {
            x = std::hint::black_box(match self {
                Chain::Add => x.wrapping_add(one),
                Chain::Imul => x.wrapping_mul(one),
            });
        }
        x
    }
}

/// The clock in MHz as one chain reads it: `runs` blocks of ~`ms` milliseconds, each timed in
/// batches of ~0.2 ms and kept as its median batch. Preemption only ever lengthens a batch, and
/// a batch is far shorter than a scheduler time slice, so on a busy host most batches run
/// undisturbed and the median is the clock (a whole-block timing would read the CPU share).
pub fn chain_mhz(chain: Chain, runs: usize, ms: u64) -> Summary {
    let ops = CHAIN * chain.cycles();
    // Calibrate the batch to ~0.2 ms (the best of a few tries: a preempted try reads slow).
    let per_iter = (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(chain.run(10_000));
            t.elapsed().as_secs_f64() / 10_000.0
        })
        .fold(f64::INFINITY, f64::min);
    let iters = (0.2e-3 / per_iter.max(1e-10)).clamp(1e3, 1e8) as u64;
    let batches = ((ms as f64 / 0.2) as usize).max(5);
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let mhz: Vec<f64> = (0..batches)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(chain.run(iters));
                    (iters * ops) as f64 / t.elapsed().as_secs_f64() / 1e6
                })
                .collect();
            Summary::of(&mhz).median
        })
        .collect();
    Summary::of(&samples)
}

/// The kernel's own frequency figures, read at probe time (CPUID's are in the recorded dump).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelClock {
    /// cpufreq `base_frequency` of CPU 0 (intel_pstate and amd-pstate export it), MHz.
    #[serde(default)]
    pub cpufreq_base_mhz: Option<f64>,
    /// cpufreq `cpuinfo_max_freq` of CPU 0, MHz.
    #[serde(default)]
    pub cpufreq_max_mhz: Option<f64>,
}

impl KernelClock {
    pub fn read() -> KernelClock {
        let khz = |f: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cpufreq/{f}"))
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|&k| k > 0.0)
                .map(|k| k / 1000.0)
        };
        KernelClock { cpufreq_base_mhz: khz("base_frequency"), cpufreq_max_mhz: khz("cpuinfo_max_freq") }
    }
}

/// The nominal frequencies the host states, each with where it comes from: CPUID leaf 0x16
/// (base; Intel since Skylake), leaf 0x15 (the TSC from the crystal ratio), the hypervisor's
/// timing leaf 0x4000_0010 (TSC kHz; VMware and KVM guests where the VMM fills it), the kernel's
/// `cpu MHz` (without cpufreq, its TSC rate) and cpufreq's base and maximum.
pub fn nominal(cpuid: &CpuidDump, cpuinfo_mhz: Option<f64>, k: &KernelClock) -> Vec<(String, f64)> {
    let mut v = Vec::new();
    if let Some([eax, ..]) = cpuid.get(0x16, 0) {
        if eax & 0xffff != 0 {
            v.push(("CPUID 0x16 base frequency".to_string(), f64::from(eax & 0xffff)));
        }
    }
    if let Some([den, num, hz, _]) = cpuid.get(0x15, 0) {
        if den != 0 && num != 0 && hz != 0 {
            let mhz = f64::from(hz) * f64::from(num) / f64::from(den) / 1e6;
            v.push(("CPUID 0x15 TSC (crystal x ratio)".to_string(), mhz));
        }
    }
    if let Some([khz, ..]) = cpuid.get(0x4000_0010, 0) {
        if khz != 0 {
            v.push(("hypervisor CPUID 0x40000010 TSC".to_string(), f64::from(khz) / 1000.0));
        }
    }
    if let Some(m) = cpuinfo_mhz.filter(|&m| m > 0.0) {
        v.push(("/proc/cpuinfo cpu MHz".to_string(), m));
    }
    if let Some(m) = k.cpufreq_base_mhz {
        v.push(("cpufreq base_frequency".to_string(), m));
    }
    if let Some(m) = k.cpufreq_max_mhz {
        v.push(("cpufreq cpuinfo_max_freq".to_string(), m));
    }
    v
}

/// Clock readings outside this range (MHz) are not a core's clock: below, the chain was barely
/// scheduled; above, it ran faster than one operation per cycle (folded or eliminated).
pub const PLAUSIBLE_MHZ: std::ops::RangeInclusive<f64> = 100.0..=10_000.0;

/// Two figures agree when they are within this share of each other.
pub const AGREE: f64 = 0.10;

/// What the probe takes as the core clock, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClockReading {
    pub mhz: f64,
    /// Timed on a chain (false: a nominal figure or an assumption stands in).
    pub measured: bool,
    /// Which figure was taken and how the others compare, in words.
    pub source: String,
    /// Every disagreement found, in words (the probe's notes list them).
    pub disagreements: Vec<String>,
}

/// `a` and `b` within [`AGREE`] of each other.
fn agree(a: f64, b: f64) -> bool {
    (a / b - 1.0).abs() <= AGREE && (b / a - 1.0).abs() <= AGREE
}

/// An L1D hit of a pointer chase takes this many cycles on x86 cores since Nehalem and Zen (4
/// with simple addressing, 5 on some: Intel's and AMD's optimization manuals).
pub const L1D_CYCLES: std::ops::RangeInclusive<f64> = 3.5..=5.5;

/// Takes the clock from the two chains and the nominal figures. The add chain is the clock when
/// it is plausible and the multiply chain agrees with it. When they disagree, the one nearer a
/// nominal figure (by ratio) is taken: a folded add chain reads several times too fast, a
/// multiply slower than 3 cycles reads too slow, and a core's clock stays within turbo range of
/// its nominal one. With neither chain plausible, the first nominal figure stands in, labelled;
/// with nothing at all, 2000 MHz is assumed, labelled. `l1d_ns`, the cache ladder's L1D hit,
/// checks the result: at the right clock it is [`L1D_CYCLES`] cycles.
pub fn reading(
    add: &Summary,
    imul: Option<&Summary>,
    nominal: &[(String, f64)],
    l1d_ns: Option<f64>,
) -> ClockReading {
    let mut disagreements = Vec::new();
    let chains: Vec<(&str, f64, &Summary)> =
        [("dependent register adds (1 cycle)", Some(add)), ("dependent 64-bit multiplies (3 cycles)", imul)]
            .into_iter()
            .filter_map(|(n, s)| s.map(|s| (n, s.median, s)))
            .collect();
    for (name, mhz, _) in &chains {
        if !PLAUSIBLE_MHZ.contains(mhz) {
            disagreements.push(format!(
                "the chain of {name} reads {mhz:.0} MHz, outside {:.0}..={:.0} MHz: not a core clock, set aside",
                PLAUSIBLE_MHZ.start(),
                PLAUSIBLE_MHZ.end()
            ));
        }
    }
    let plausible: Vec<&(&str, f64, &Summary)> =
        chains.iter().filter(|c| PLAUSIBLE_MHZ.contains(&c.1)).collect();
    let nominal: Vec<&(String, f64)> = nominal.iter().filter(|n| PLAUSIBLE_MHZ.contains(&n.1)).collect();
    let nearest_nominal =
        |mhz: f64| nominal.iter().map(|n| (mhz / n.1).ln().abs()).fold(f64::INFINITY, f64::min);
    let describe = |c: &(&str, f64, &Summary)| {
        format!(
            "a chain of {} timed by the wall clock, per block the median of 0.2 ms batches, {}",
            c.0,
            c.2.spread_text(0, " MHz")
        )
    };
    let chosen: Option<(&(&str, f64, &Summary), String)> = match plausible.as_slice() {
        [] => None,
        [one] => Some((one, format!("{} (the other chain set aside)", describe(one)))),
        [a, b, ..] if agree(a.1, b.1) => {
            Some((a, format!("{}; the chain of {} agrees ({:.0} MHz)", describe(a), b.0, b.1)))
        }
        [a, b, ..] => {
            let (pick, other) = if !nominal.is_empty() && nearest_nominal(b.1) < nearest_nominal(a.1) {
                (b, a)
            } else {
                (a, b)
            };
            disagreements.push(format!(
                "the two clock chains disagree: {} reads {:.0} MHz, {} reads {:.0} MHz",
                a.0, a.1, b.0, b.1
            ));
            Some((
                pick,
                format!(
                    "{}; the chain of {} disagrees ({:.0} MHz): {}",
                    describe(pick),
                    other.0,
                    other.1,
                    if nominal.is_empty() {
                        "no nominal figure to arbitrate, the add chain kept (its 1-cycle latency holds on every x86 core)".to_string()
                    } else {
                        "the one nearer the nominal figures taken".to_string()
                    }
                ),
            ))
        }
    };
    let nominal_text = if nominal.is_empty() {
        "no nominal figure readable (CPUID 0x15/0x16, hypervisor leaf, /proc/cpuinfo, cpufreq)".to_string()
    } else {
        format!(
            "nominal: {}",
            nominal.iter().map(|(s, v)| format!("{s} {v:.0} MHz")).collect::<Vec<_>>().join(", ")
        )
    };
    match chosen {
        Some((c, how)) => {
            if let Some((s, v)) = nominal
                .iter()
                .min_by(|x, y| (c.1 / x.1).ln().abs().total_cmp(&(c.1 / y.1).ln().abs()))
                .map(|n| (&n.0, n.1))
            {
                if !agree(c.1, v) {
                    disagreements.push(format!(
                        "the core clock read {:.0} MHz is {:.2}x the nearest nominal figure ({s}, {v:.0} MHz): turbo, \
                         power saving or a hypervisor's TSC that does not tick at the core clock",
                        c.1,
                        c.1 / v
                    ));
                }
            }
            let l1d = l1d_check(c.1, l1d_ns, &mut disagreements);
            ClockReading {
                mhz: c.1,
                measured: true,
                source: format!("{how}; {nominal_text}{l1d}"),
                disagreements,
            }
        }
        None => {
            let (mhz, source) = match nominal.first() {
                Some((s, v)) => {
                    (*v, format!("fallback: no plausible clock chain; {s} taken ({nominal_text})"))
                }
                None => (
                    2000.0,
                    format!("fallback: no plausible clock chain and {nominal_text}: 2000 MHz assumed"),
                ),
            };
            disagreements.push(format!("no clock chain gave a plausible core clock: {source}"));
            ClockReading { mhz, measured: false, source, disagreements }
        }
    }
}

/// The L1D cross-check in words (empty without a ladder figure); a disagreement when the L1D hit
/// is not [`L1D_CYCLES`] cycles at `mhz`.
fn l1d_check(mhz: f64, l1d_ns: Option<f64>, disagreements: &mut Vec<String>) -> String {
    let Some(ns) = l1d_ns.filter(|n| *n > 0.0) else { return String::new() };
    let cycles = ns * mhz / 1000.0;
    if L1D_CYCLES.contains(&cycles) {
        format!("; cross-check: the cache ladder's L1D hit ({ns:.2} ns) is {cycles:.1} cycles at this clock, as on every x86 core since Nehalem and Zen (4-5)")
    } else {
        disagreements.push(format!(
            "the cache ladder's L1D hit ({ns:.2} ns) is {cycles:.1} cycles at {mhz:.0} MHz, not the 4-5 of x86 cores \
             since Nehalem and Zen: the clock or the ladder is off"
        ));
        format!("; cross-check: the cache ladder's L1D hit ({ns:.2} ns) is {cycles:.1} cycles at this clock, outside 4-5")
    }
}

/// Round trips timed together inside a block of the ping-pong.
const BATCH: u64 = 64;

/// One-way cache-line transfer between `a` and `b` in ns: two pinned threads bounce a counter,
/// each waiting for the other's value before writing the next. Each of the `runs` blocks times
/// its bounces in batches of 64 round trips and keeps the median batch: a batch during which
/// either thread was descheduled (milliseconds instead of microseconds) is then an outlier of
/// the block, not its figure. Summary over blocks.
pub fn c2c_ns(a: usize, b: usize, runs: usize, bounces: u64) -> std::io::Result<Summary> {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let line = Arc::new(AtomicU64::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let (l2, r2) = (line.clone(), ready.clone());
        let peer = std::thread::spawn(move || -> std::io::Result<()> {
            sys::pin_to_cpu(b)?;
            r2.store(true, Ordering::Release);
            // Odd values are ours to answer.
            let mut want = 1;
            while want < 2 * bounces {
                while l2.load(Ordering::Acquire) != want {
                    std::hint::spin_loop();
                }
                l2.store(want + 1, Ordering::Release);
                want += 2;
            }
            Ok(())
        });
        // The initiating side runs on its own thread too, so the caller's affinity is untouched.
        let ns = std::thread::spawn(move || -> std::io::Result<f64> {
            sys::pin_to_cpu(a)?;
            while !ready.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let mut batches = Vec::with_capacity((bounces / BATCH) as usize + 1);
            let mut t = Instant::now();
            let mut v = 0;
            while v < 2 * bounces {
                line.store(v + 1, Ordering::Release);
                while line.load(Ordering::Acquire) != v + 2 {
                    std::hint::spin_loop();
                }
                v += 2;
                if (v / 2) % BATCH == 0 {
                    batches.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
                    t = Instant::now();
                }
            }
            Ok(if batches.is_empty() {
                t.elapsed().as_nanos() as f64 / bounces as f64
            } else {
                Summary::of(&batches).median
            })
        })
        .join()
        .expect("ping-pong initiator panicked")?;
        peer.join().expect("ping-pong peer panicked")?;
        // Each bounce is a round trip: two transfers.
        samples.push(ns / 2.0);
    }
    Ok(Summary::of(&samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(mhz: f64) -> Summary {
        Summary::of(&[mhz * 0.99, mhz, mhz * 1.01])
    }

    #[test]
    fn a_folded_add_chain_gives_way_to_the_multiply_chain() {
        // The Intel Xeon guest of 2026-11-26 (family 6 model 167): `add reg, 1` read 22,928 MHz,
        // a multiply chain ~4,100 MHz; CPUID 0x15/0x16 read as zeros there, the kernel's cpu MHz
        // is the TSC's rate.
        let r = reading(&summary(22_928.0), Some(&summary(4_100.0)), &[], None);
        assert!(r.measured && (r.mhz - 4_100.0).abs() < 1.0, "{r:?}");
        assert!(r.disagreements.iter().any(|d| d.contains("22928 MHz") && d.contains("set aside")), "{r:?}");
        // Folded but still under 10 GHz: the disagreement is arbitrated by the nominal figure.
        let nominal = [("/proc/cpuinfo cpu MHz".to_string(), 2_100.0)];
        let r = reading(&summary(8_000.0), Some(&summary(3_900.0)), &nominal, None);
        assert!((r.mhz - 3_900.0).abs() < 1.0, "{r:?}");
        assert!(r.disagreements.iter().any(|d| d.contains("disagree")), "{r:?}");
        assert!(r.disagreements.iter().any(|d| d.contains("1.86x the nearest nominal")), "{r:?}");
    }

    #[test]
    fn agreeing_chains_give_the_add_chain_and_a_slow_multiply_does_not_win_unarbitrated() {
        let nominal = [("CPUID 0x16 base frequency".to_string(), 2_000.0)];
        let r = reading(&summary(2_050.0), Some(&summary(2_000.0)), &nominal, Some(2.0));
        assert_eq!(r.mhz, 2_050.0);
        assert!(r.disagreements.is_empty() && r.source.contains("agrees"), "{r:?}");
        assert!(r.source.contains("4.1 cycles at this clock"), "{r:?}");
        // The same chains with an L1D hit of 1 ns: 2 cycles at 2050 MHz, which no x86 core has.
        let r = reading(&summary(2_050.0), Some(&summary(2_000.0)), &nominal, Some(1.0));
        assert!(r.disagreements.iter().any(|d| d.contains("2.0 cycles")), "{r:?}");
        // A 6-cycle multiply (Bulldozer) read as 3 cycles: half the clock. With no nominal
        // figure the add chain is kept.
        let r = reading(&summary(3_600.0), Some(&summary(1_800.0)), &[], None);
        assert_eq!(r.mhz, 3_600.0);
        assert!(r.source.contains("no nominal figure to arbitrate"), "{r:?}");
        // Reports recorded before the multiply chain: the add chain alone.
        let r = reading(&summary(2_400.0), None, &[], None);
        assert_eq!(r.mhz, 2_400.0);
    }

    #[test]
    fn with_no_plausible_chain_a_nominal_figure_or_an_assumption_stands_in() {
        let nominal = [("/proc/cpuinfo cpu MHz".to_string(), 2_995.0)];
        let r = reading(&summary(22_000.0), Some(&summary(40_000.0)), &nominal, None);
        assert!(!r.measured && r.mhz == 2_995.0 && r.source.starts_with("fallback"), "{r:?}");
        let r = reading(&summary(50.0), None, &[], None);
        assert!(!r.measured && r.mhz == 2_000.0 && r.source.contains("assumed"), "{r:?}");
    }

    #[test]
    fn nominal_figures_come_from_cpuid_and_the_kernel() {
        let d = CpuidDump::parse(
            "0x00000015 0x0: 00000002 000000bc 016e3600 00000000\n\
             0x00000016 0x0: 00000bb8 00000fa0 00000064 00000000\n\
             0x40000010 0x0: 002dc6c0 00000000 00000000 00000000\n",
        )
        .unwrap();
        let k = KernelClock { cpufreq_base_mhz: Some(3000.0), cpufreq_max_mhz: None };
        let n = nominal(&d, Some(2995.2), &k);
        let names: Vec<&str> = n.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names.len(), 5, "{n:?}");
        // 0x16: 3000 MHz base; 0x15: 24 MHz crystal x 188/2 = 2256 MHz; 0x40000010: 3,000,000 kHz.
        assert_eq!(n[0].1, 3000.0);
        assert!((n[1].1 - 2256.0).abs() < 1e-9, "{n:?}");
        assert_eq!(n[2].1, 3000.0);
        // Zeros (a hypervisor that hides the leaves) give nothing.
        let z = CpuidDump::parse("0x00000015 0x0: 00000000 00000000 00000000 00000000\n").unwrap();
        assert!(nominal(&z, None, &KernelClock::default()).is_empty());
    }

    #[test]
    fn the_real_chains_give_a_plausible_reading_on_any_host() {
        // What holds on any x86-64 host: each chain times something, and the reading (a chain,
        // or a labelled stand-in when a core surprises both) is a plausible clock.
        let add = chain_mhz(Chain::Add, 3, 5);
        let imul = chain_mhz(Chain::Imul, 3, 5);
        assert!(add.median.is_finite() && add.median > 0.0 && imul.median.is_finite() && imul.median > 0.0);
        let r = reading(&add, Some(&imul), &[], None);
        assert!(PLAUSIBLE_MHZ.contains(&r.mhz), "{r:?}");
    }
}
