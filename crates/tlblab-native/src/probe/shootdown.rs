//! Shootdown cost: one thread `madvise(MADV_DONTNEED)`s N freshly written pages, alone and with
//! a sibling thread of the same mm busy on another CPU. Each call is one `flush_tlb_mm_range()`
//! of N pages (facts sheet §3.3): up to `tlb_single_page_flush_ceiling` (33, §1.4) pages it
//! INVLPGs page by page, beyond it flushes everything, so time over N shows a kink there. The
//! sibling's extra time is the IPI round trip; the sibling's own lost work is what each flush
//! IPI costs the CPU that receives it.

use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    pub sibling_ns: Option<Summary>,
    /// `TLB` interrupts per madvise call (all CPUs), alone and with the sibling.
    pub alone_ipis: Option<f64>,
    pub sibling_ipis: Option<f64>,
    /// The sibling's lost work per madvise call, ns (its loop rate against the rate while the
    /// initiator only spins).
    pub sibling_loss_ns: Option<Summary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShootdownSweep {
    pub points: Vec<ShootdownPoint>,
    pub cpus: (usize, Option<usize>),
    pub reps: usize,
    pub runs: usize,
    pub notes: Vec<String>,
}

/// One block of `reps` calls at `pages` pages: (median ns, IPIs per call, wall ns of the block).
fn block(m: &Mapping, pages: usize, reps: usize) -> std::io::Result<(f64, Option<f64>, f64)> {
    let ipis = IpiCounter::start();
    let t0 = Instant::now();
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        for p in 0..pages {
            m.write_byte(p * PAGE, 1);
        }
        let t = Instant::now();
        m.madvise(0, pages * PAGE, Advice::DontNeed)?;
        samples.push(t.elapsed().as_nanos() as f64);
    }
    let wall = t0.elapsed().as_nanos() as f64;
    let tlb = ipis.stop().tlb.map(|n| n as f64 / reps as f64);
    Ok((Summary::of(&samples).median, tlb, wall))
}

struct Sibling {
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Sibling {
    /// A thread of this mm on `cpu`, reading its own page and counting loop iterations.
    fn start(cpu: usize, m: Arc<Mapping>) -> Sibling {
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (count.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            sys::pin_to_cpu(cpu)?;
            let mut n = 0u64;
            while !s.load(Ordering::Relaxed) {
                std::hint::black_box(m.read_byte((n as usize % 64) * 64));
                n += 1;
                c.store(n, Ordering::Relaxed);
            }
            Ok(())
        });
        // Wait until it runs, so the first block already has a target.
        while count.load(Ordering::Relaxed) == 0 && !handle.is_finished() {
            std::hint::spin_loop();
        }
        Sibling { count, stop, handle }
    }

    fn stop(self) -> std::io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("sibling thread panicked")
    }
}

/// Sibling iterations per ns while the initiator spins without system calls for `ms`.
fn sibling_base_rate(s: &Sibling, ms: u64) -> f64 {
    let c0 = s.count.load(Ordering::Relaxed);
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(ms) {
        std::hint::spin_loop();
    }
    (s.count.load(Ordering::Relaxed) - c0) as f64 / t.elapsed().as_nanos() as f64
}

/// Runs the sweep on `cpus[0]` (initiator) and `cpus[1]` (sibling, if there is one).
pub fn sweep(cpus: &[usize], reps: usize, runs: usize) -> std::io::Result<ShootdownSweep> {
    let (a, b) = (cpus[0], cpus.get(1).copied());
    let reps_ = reps;
    let handle = std::thread::spawn(move || run_sweep(a, b, reps_, runs));
    let mut s = handle.join().expect("shootdown probe panicked")?;
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
    let (mut alone, mut sib, mut loss) = (vec![vec![]; k], vec![vec![]; k], vec![vec![]; k]);
    let (mut alone_ipi, mut sib_ipi) = (vec![Some(0.0); k], vec![Some(0.0); k]);
    let add = |acc: &mut Option<f64>, v: Option<f64>| *acc = acc.zip(v).map(|(x, y)| x + y);
    for _ in 0..runs {
        for (i, &n) in PAGES.iter().enumerate() {
            let (t, ipi, _) = block(&m, n, reps)?;
            alone[i].push(t);
            add(&mut alone_ipi[i], ipi);
        }
        let Some(b) = b else { continue };
        let s = Sibling::start(b, sib_mem.clone());
        let base = sibling_base_rate(&s, 20);
        for (i, &n) in PAGES.iter().enumerate() {
            let c0 = s.count.load(Ordering::Relaxed);
            let (t, ipi, wall) = block(&m, n, reps)?;
            let done = (s.count.load(Ordering::Relaxed) - c0) as f64;
            sib[i].push(t);
            add(&mut sib_ipi[i], ipi);
            // Work the sibling did not do during the block, in ns of its time, per call.
            loss[i].push((wall - done / base) / reps as f64);
        }
        s.stop()?;
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
            sibling_loss_ns: (!loss[i].is_empty()).then(|| Summary::of(&loss[i])),
        })
        .collect();
    Ok(ShootdownSweep { points, cpus: (a, b), reps, runs, notes: vec![] })
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
    /// Sibling minus alone at 1 page: the initiator's wait for one remote flush.
    pub ipi_round_trip_ns: Option<f64>,
    /// Sibling minus alone, median over the full-flush points (34..=64 pages).
    pub ipi_round_trip_full_ns: Option<f64>,
    /// The sibling's lost time per flush IPI it received (1..=8-page points).
    pub target_cost_ns: Option<f64>,
    /// TLB interrupts per call with the sibling (median over points): ~1 when IPIs are visible.
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
    let curve = sib.clone().unwrap_or_else(|| alone.clone());
    let (k, _, _) = two_segment_fit(&curve, 3)?;
    let at = |pages: usize| s.points.iter().find(|p| p.pages == pages);
    let rt = at(1).and_then(|p| p.sibling_ns.map(|v| v.median - p.alone_ns.median));
    let full: Vec<f64> = s
        .points
        .iter()
        .filter(|p| p.pages > ceiling && p.pages <= 64)
        .filter_map(|p| p.sibling_ns.map(|v| v.median - p.alone_ns.median))
        .collect();
    let per_ipi: Vec<f64> = s
        .points
        .iter()
        .filter(|p| p.pages <= 8)
        .filter_map(|p| {
            let ipis = p.sibling_ipis.filter(|&i| i > 0.5)?;
            Some(p.sibling_loss_ns?.median / ipis)
        })
        .collect();
    let ipis: Vec<f64> = s.points.iter().filter_map(|p| p.sibling_ipis).collect();
    Some(ShootdownCosts {
        kink_after: s.points[k - 1].pages,
        kink_before: s.points[k].pages,
        ceiling,
        slope_below_ns: b1,
        slope_above_ns: b2,
        invlpg_ns: b1 - b2,
        full_flush_ns: a2 - a1,
        ipi_round_trip_ns: rt,
        ipi_round_trip_full_ns: (!full.is_empty()).then(|| Summary::of(&full).median),
        target_cost_ns: (!per_ipi.is_empty()).then(|| Summary::of(&per_ipi).median),
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
            sibling_ipis: Some(1.0),
            sibling_loss_ns: Some(s(900.0)),
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
        let s = ShootdownSweep { points, cpus: (0, Some(1)), reps: 1, runs: 1, notes: vec![] };
        let c = analyse(&s, 33).unwrap();
        assert!((c.invlpg_ns - 20.0).abs() < 1e-6 && (c.full_flush_ns - 300.0).abs() < 1e-6, "{c:?}");
        assert_eq!((c.kink_after, c.kink_before), (33, 34));
        assert!((c.ipi_round_trip_ns.unwrap() - 2020.0).abs() < 1e-9);
        assert_eq!(c.target_cost_ns, Some(900.0));
        assert_eq!(c.ipis_per_call, Some(1.0));
    }

    #[test]
    fn a_short_real_sweep_runs() {
        let cpus = sys::allowed_cpus();
        let s = sweep(&cpus, 3, 1).unwrap();
        assert_eq!(s.points.len(), PAGES.len());
        assert!(s.points.iter().all(|p| p.alone_ns.median > 0.0));
        assert_eq!(s.points[0].sibling_ns.is_some(), cpus.len() > 1);
    }
}
