//! Shootdown cost: one thread `madvise(MADV_DONTNEED)`s N freshly written pages, alone and with
//! a sibling thread of the same mm busy on another CPU. Each call is one `flush_tlb_mm_range()`
//! of N pages (facts sheet §3.3): up to `tlb_single_page_flush_ceiling` (33, §1.4) pages it
//! INVLPGs page by page, beyond it flushes everything, so time over N shows a kink there. The
//! sibling's extra time is the IPI round trip; the sibling's own lost work is what each flush
//! IPI costs the CPU that receives it.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::interrupts::IpiCounter;
use crate::stats::{two_segment_fit, Summary};
use crate::sys::{self, Advice, Backing, Mapping, PAGE};

/// Pages per madvise: dense around the kernel's ceiling of 33, sparse beyond.
pub const PAGES: [usize; 22] =
    [1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 33, 34, 36, 40, 48, 64, 96, 128, 192, 256, 384, 512];

#[derive(Debug, Clone, Serialize)]
pub struct ShootdownPoint {
    pub pages: usize,
    /// ns per madvise call, medians per run, summarised over runs.
    pub alone_ns: Summary,
    /// The same with the sibling running (calls during which it was descheduled are dropped).
    pub sibling_ns: Option<Summary>,
    /// `TLB` interrupts per madvise call (all CPUs), alone and with the sibling.
    pub alone_ipis: Option<f64>,
    pub sibling_ipis: Option<f64>,
    /// Share of the calls during which the sibling was running (only those are in `sibling_ns`).
    pub sibling_running: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShootdownSweep {
    pub points: Vec<ShootdownPoint>,
    pub cpus: (usize, Option<usize>),
    pub reps: usize,
    pub runs: usize,
    /// Interruptions of the sibling's loop (250 ns .. 100 us) during the 1-page blocks: each
    /// flush IPI it takes is one (timer ticks are rarer by orders of magnitude).
    pub target_gap_ns: Option<Summary>,
    pub target_gaps: usize,
    pub notes: Vec<String>,
}

/// One block of `reps` calls at `pages` pages: (median ns, IPIs per call, share of calls kept).
/// With a sibling, only calls during which the sibling's counter advanced are kept: on a shared
/// host the sibling is sometimes descheduled, and then its CPU has another mm loaded and gets no
/// IPI (`should_flush_tlb` skips it), which would mix two populations.
fn block(
    m: &Mapping,
    pages: usize,
    reps: usize,
    sib: Option<&AtomicU64>,
) -> std::io::Result<(f64, Option<f64>, f64)> {
    let ipis = IpiCounter::start();
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let ca = sib.map(|c| c.load(Ordering::Relaxed));
        for p in 0..pages {
            m.write_byte(p * PAGE, 1);
        }
        let cb = sib.map(|c| c.load(Ordering::Relaxed));
        let t = Instant::now();
        m.madvise(0, pages * PAGE, Advice::DontNeed)?;
        let dt = t.elapsed().as_nanos() as f64;
        // Keep the call if the sibling ran before it (its counter moved during the page
        // touches) and runs after it (moves within 20 us: it may still be leaving the handler).
        let running = match (sib, ca, cb) {
            (Some(c), Some(ca), Some(cb)) => {
                let t = Instant::now();
                while c.load(Ordering::Relaxed) == cb && t.elapsed().as_micros() < 20 {
                    std::hint::spin_loop();
                }
                cb > ca && c.load(Ordering::Relaxed) > cb
            }
            _ => true,
        };
        if running {
            samples.push(dt);
        }
    }
    let tlb = ipis.stop().tlb.map(|n| n as f64 / reps as f64);
    let kept = samples.len() as f64 / reps as f64;
    let median = if samples.is_empty() { f64::NAN } else { Summary::of(&samples).median };
    Ok((median, tlb, kept))
}

/// Gaps in the sibling's loop longer than this are interruptions; longer than `GAP_MAX_NS` are
/// descheduling (another task ran), not an IPI handler.
const GAP_MIN_NS: u128 = 250;
const GAP_MAX_NS: u128 = 100_000;

struct Sibling {
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// While set, the sibling records the gaps in its loop.
    record: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<std::io::Result<Vec<f64>>>,
}

impl Sibling {
    /// A thread of this mm on `cpu`, reading its own page and counting loop iterations; while
    /// `record` is set it notes every gap in its loop (each flush IPI it takes makes one).
    fn start(cpu: usize, m: Arc<Mapping>) -> Sibling {
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let record = Arc::new(AtomicBool::new(false));
        let (c, s, r) = (count.clone(), stop.clone(), record.clone());
        let handle = std::thread::spawn(move || {
            sys::pin_to_cpu(cpu)?;
            let mut gaps = Vec::new();
            let mut n = 0u64;
            let mut last = Instant::now();
            while !s.load(Ordering::Relaxed) {
                std::hint::black_box(m.read_byte((n as usize % 64) * 64));
                n += 1;
                c.store(n, Ordering::Relaxed);
                let now = Instant::now();
                if r.load(Ordering::Relaxed) {
                    let gap = (now - last).as_nanos();
                    if (GAP_MIN_NS..GAP_MAX_NS).contains(&gap) && gaps.len() < 1_000_000 {
                        gaps.push(gap as f64);
                    }
                }
                last = now;
            }
            Ok(gaps)
        });
        // Wait until it runs, so the first block already has a target.
        while count.load(Ordering::Relaxed) == 0 && !handle.is_finished() {
            std::hint::spin_loop();
        }
        Sibling { count, stop, record, handle }
    }

    fn stop(self) -> std::io::Result<Vec<f64>> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("sibling thread panicked")
    }
}

/// Runs the sweep on `cpus[0]` (initiator) and `cpus[1]` (sibling, if there is one), on a
/// thread of its own so the caller's CPU affinity is untouched.
pub fn sweep(cpus: &[usize], reps: usize, runs: usize) -> std::io::Result<ShootdownSweep> {
    let (a, b) = (cpus[0], cpus.get(1).copied());
    let mut s =
        std::thread::spawn(move || run_sweep(a, b, reps, runs)).join().expect("shootdown probe panicked")?;
    if b.is_none() {
        s.notes.push("one CPU only: no sibling, so no IPI round trip and no shootdown to count".into());
    }
    Ok(s)
}

fn run_sweep(a: usize, b: Option<usize>, reps: usize, runs: usize) -> std::io::Result<ShootdownSweep> {
    sys::pin_to_cpu(a)?;
    let max = *PAGES.last().unwrap();
    // 4 KiB pages only: a huge page would be zapped as one PMD, not N PTEs.
    let m = Mapping::new(max * PAGE, Backing::Anon)?;
    m.madvise(0, m.len(), Advice::NoHugePage)?;
    let sib_mem = Arc::new(Mapping::new(PAGE, Backing::Anon)?);
    sib_mem.write_byte(0, 1);
    let k = PAGES.len();
    let (mut alone, mut sib, mut kept) = (vec![vec![]; k], vec![vec![]; k], vec![vec![]; k]);
    let (mut alone_ipi, mut sib_ipi) = (vec![Some(0.0); k], vec![Some(0.0); k]);
    let mut gaps = Vec::new();
    let add = |acc: &mut Option<f64>, v: Option<f64>| *acc = acc.zip(v).map(|(x, y)| x + y);
    for _ in 0..runs {
        for (i, &n) in PAGES.iter().enumerate() {
            let (t, ipi, _) = block(&m, n, reps, None)?;
            alone[i].push(t);
            add(&mut alone_ipi[i], ipi);
        }
        let Some(b) = b else { continue };
        let s = Sibling::start(b, sib_mem.clone());
        for (i, &n) in PAGES.iter().enumerate() {
            // The gaps during the 1-page block are the target-side cost of one flush IPI each.
            s.record.store(n == 1, Ordering::Relaxed);
            let (t, ipi, share) = block(&m, n, reps, Some(&s.count))?;
            s.record.store(false, Ordering::Relaxed);
            if !t.is_nan() {
                sib[i].push(t);
            }
            kept[i].push(share);
            add(&mut sib_ipi[i], ipi);
        }
        gaps.extend(s.stop()?);
    }
    let points = PAGES
        .iter()
        .enumerate()
        .map(|(i, &pages)| ShootdownPoint {
            pages,
            alone_ns: Summary::of(&alone[i]),
            sibling_ns: (!sib[i].is_empty()).then(|| Summary::of(&sib[i])),
            alone_ipis: alone_ipi[i].map(|v| v / runs as f64),
            sibling_ipis: if b.is_some() { sib_ipi[i].map(|v| v / runs as f64) } else { None },
            sibling_running: (!kept[i].is_empty())
                .then(|| kept[i].iter().sum::<f64>() / kept[i].len() as f64),
        })
        .collect();
    let target_gap_ns = (!gaps.is_empty()).then(|| Summary::of(&gaps));
    Ok(ShootdownSweep {
        points,
        cpus: (a, b),
        reps,
        runs,
        target_gap_ns,
        target_gaps: gaps.len(),
        notes: vec![],
    })
}

/// Costs read off the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct ShootdownCosts {
    /// The per-page/full-flush switch the two-segment fit finds: after `kink_after` pages.
    pub kink_after: usize,
    pub kink_before: usize,
    /// The ceiling used to split the alone curve (debugfs if readable, else the default 33).
    pub ceiling: usize,
    /// Alone: per-page cost below and above the ceiling; their difference is one INVLPG.
    pub slope_below_ns: f64,
    pub slope_above_ns: f64,
    pub invlpg_ns: f64,
    /// Intercept difference: a full local flush (the refill is not in it: nothing is reused).
    pub full_flush_ns: f64,
    /// Alone, below the ceiling: the cost of a call with no page (syscall, madvise's fixed
    /// path, `flush_tlb_mm_range`'s own overhead).
    pub intercept_below_ns: f64,
    /// Sibling minus alone at 1 page: the initiator's wait for one remote flush.
    pub ipi_round_trip_ns: Option<f64>,
    /// Sibling minus alone, median over the full-flush points (ceiling+1 ..= 64 pages).
    pub ipi_round_trip_full_ns: Option<f64>,
    /// Median interruption of the sibling's loop per flush IPI (1-page blocks).
    pub target_cost_ns: Option<f64>,
    /// TLB interrupts per call while the sibling ran (median over points): ~1 when IPIs are
    /// delivered and counted.
    pub ipis_per_call: Option<f64>,
}

pub fn analyse(s: &ShootdownSweep, ceiling: usize) -> Option<ShootdownCosts> {
    let alone: Vec<(f64, f64)> = s.points.iter().map(|p| (p.pages as f64, p.alone_ns.median)).collect();
    let below: Vec<_> = alone.iter().copied().filter(|p| p.0 <= ceiling as f64).collect();
    let above: Vec<_> = alone.iter().copied().filter(|p| p.0 > ceiling as f64).collect();
    let (a1, b1) = crate::stats::linear_fit(&below)?;
    let (a2, b2) = crate::stats::linear_fit(&above)?;
    let sib: Option<Vec<(f64, f64)>> =
        s.points.iter().map(|p| p.sibling_ns.map(|v| (p.pages as f64, v.median))).collect();
    let curve = sib.unwrap_or_else(|| alone.clone());
    let (k, _, _) = two_segment_fit(&curve, 3)?;
    let at = |pages: usize| s.points.iter().find(|p| p.pages == pages);
    let rt = at(1).and_then(|p| p.sibling_ns.map(|v| v.median - p.alone_ns.median));
    let full: Vec<f64> = s
        .points
        .iter()
        .filter(|p| p.pages > ceiling && p.pages <= 64)
        .filter_map(|p| p.sibling_ns.map(|v| v.median - p.alone_ns.median))
        .collect();
    // IPIs per call while the sibling ran: the block's count over the share of calls it ran.
    let ipis: Vec<f64> = s
        .points
        .iter()
        .filter_map(|p| Some(p.sibling_ipis? / p.sibling_running.filter(|&r| r > 0.05)?))
        .collect();
    Some(ShootdownCosts {
        kink_after: s.points[k - 1].pages,
        kink_before: s.points[k].pages,
        ceiling,
        slope_below_ns: b1,
        slope_above_ns: b2,
        invlpg_ns: b1 - b2,
        full_flush_ns: a2 - a1,
        intercept_below_ns: a1,
        ipi_round_trip_ns: rt,
        ipi_round_trip_full_ns: (!full.is_empty()).then(|| Summary::of(&full).median),
        target_cost_ns: s.target_gap_ns.map(|g| g.median),
        ipis_per_call: (!ipis.is_empty()).then(|| Summary::of(&ipis).median),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(pages: usize, alone: f64, sib: f64) -> ShootdownPoint {
        let s = |v: f64| Summary { median: v, min: v, max: v, rel_iqr: 0.0, n: 1 };
        ShootdownPoint {
            pages,
            alone_ns: s(alone),
            sibling_ns: Some(s(sib)),
            alone_ipis: Some(0.0),
            sibling_ipis: Some(0.5),
            sibling_running: Some(0.5),
        }
    }

    #[test]
    fn costs_of_a_synthetic_sweep() {
        // Alone: 500 + 60/page (zap+free 40 + INVLPG 20) up to 33, then 500 + 300 + 40/page.
        // Sibling adds 2000 ns plus 20 ns per remotely INVLPGed page.
        let points = PAGES
            .iter()
            .map(|&n| {
                let n_ = n as f64;
                let alone = if n <= 33 { 500.0 + 60.0 * n_ } else { 800.0 + 40.0 * n_ };
                let remote = if n <= 33 { 20.0 * n_ } else { 300.0 };
                pt(n, alone, alone + 2000.0 + remote)
            })
            .collect();
        let gap = Summary { median: 900.0, min: 900.0, max: 900.0, rel_iqr: 0.0, n: 1 };
        let s = ShootdownSweep {
            points,
            cpus: (0, Some(1)),
            reps: 1,
            runs: 1,
            target_gap_ns: Some(gap),
            target_gaps: 1,
            notes: vec![],
        };
        let c = analyse(&s, 33).unwrap();
        assert!((c.invlpg_ns - 20.0).abs() < 1e-6 && (c.full_flush_ns - 300.0).abs() < 1e-6, "{c:?}");
        assert!((c.intercept_below_ns - 500.0).abs() < 1e-6 && (c.slope_above_ns - 40.0).abs() < 1e-6);
        assert_eq!((c.kink_after, c.kink_before), (33, 34));
        assert!((c.ipi_round_trip_ns.unwrap() - 2020.0).abs() < 1e-9);
        assert_eq!(c.target_cost_ns, Some(900.0));
        // Half the calls had the sibling running and the block counted 0.5 IPIs per call.
        assert_eq!(c.ipis_per_call, Some(1.0));
    }

    #[test]
    fn a_short_real_sweep_runs() {
        let cpus = sys::allowed_cpus();
        let s = sweep(&cpus, 3, 1).unwrap();
        assert_eq!(s.points.len(), PAGES.len());
        assert!(s.points.iter().all(|p| p.alone_ns.median > 0.0));
        // With a second CPU the share of calls the sibling ran through is always reported (on a
        // busy host it may be 0, so the sibling timings themselves may be absent).
        assert_eq!(s.points[0].sibling_running.is_some(), cpus.len() > 1);
        assert!(s.points.iter().all(|p| p.sibling_running.is_none_or(|r| (0.0..=1.0).contains(&r))));
    }
}
