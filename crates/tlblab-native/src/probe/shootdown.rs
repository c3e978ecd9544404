//! Shootdown cost: one thread `madvise(MADV_DONTNEED)`s N freshly written pages, alone and with
//! a sibling thread of the same mm busy on another CPU. Each call is one `flush_tlb_mm_range()`
//! of N pages (docs/references/linux-mm.md#mmu_gather): up to `tlb_single_page_flush_ceiling` (33,
//! #flush-ceiling) pages it INVLPGs page by page, beyond it flushes everything, so time over N shows a kink
//! there. The sibling's extra time is the IPI round trip; the sibling's own lost work is what each flush
//! IPI costs the CPU that receives it.
//!
//! A second line, alone, times the same madvise over PTEs that are already none (the pages
//! written and zapped before the block): no PTE is cleared, so `tlb_flush_mmu_tlbonly` returns
//! before `tlb_flush` and no flush is made (v6.x include/asm-generic/tlb.h;
//! docs/references/machine-costs.md#madvise-fixed-path). Its intercept is madvise's fixed path;
//! the written line's intercept less it is the flush call's own.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::interrupts::IpiCounter;
use crate::stats::{theil_sen, two_segment_fit, BlockEstimate, Summary};
use crate::sys::{self, Advice, Backing, Mapping, PAGE};

/// Pages per madvise: dense around the kernel's ceiling of 33, sparse beyond.
pub const PAGES: [usize; 22] =
    [1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 33, 34, 36, 40, 48, 64, 96, 128, 192, 256, 384, 512];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShootdownPoint {
    pub pages: usize,
    /// ns per madvise call: each block's median, summarised over blocks.
    pub alone_ns: Summary,
    /// The same with the sibling running (calls during which it was descheduled are dropped).
    pub sibling_ns: Option<Summary>,
    /// `TLB` interrupts per madvise call (all CPUs), alone and with the sibling, mean of blocks.
    pub alone_ipis: Option<f64>,
    pub sibling_ipis: Option<f64>,
    /// Share of the calls during which the sibling was running (only those are in `sibling_ns`).
    pub sibling_running: Option<f64>,
    /// ns per madvise over PTEs already none, alone (absent in reports recorded before).
    #[serde(default)]
    pub empty_ns: Option<Summary>,
    /// `TLB` interrupts per such call, alone, mean of blocks.
    #[serde(default)]
    pub empty_ipis: Option<f64>,
}

/// One block: every page count once alone and once with the sibling, the two conditions
/// back to back per count (their order alternating), so a slow phase of the host lasting a
/// second or two hits both sides of every difference the analysis takes. Vectors are indexed
/// like [`ShootdownSweep::pages`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShootdownBlock {
    /// Median ns per call of this block's calls at each page count.
    pub alone_ns: Vec<f64>,
    /// `None` where the sibling never ran through a call (descheduled the whole time).
    pub sibling_ns: Vec<Option<f64>>,
    pub alone_ipis: Vec<Option<f64>>,
    pub sibling_ipis: Vec<Option<f64>>,
    pub sibling_running: Vec<Option<f64>>,
    /// Median interruption of the sibling's loop during this block's 1-page calls.
    pub target_gap_ns: Option<f64>,
    pub target_gaps: usize,
    /// Median ns per call of the same madvise, alone, over PTEs already none: the pages were
    /// written and zapped before the block, so nothing is cleared and nothing is flushed.
    /// Empty in reports recorded before this line was measured.
    #[serde(default)]
    pub empty_ns: Vec<f64>,
    #[serde(default)]
    pub empty_ipis: Vec<Option<f64>>,
    /// `TLB` interrupts per 1-page call over none PTEs while the sibling ran: ~0 where the
    /// empty call makes no flush (the written call's is ~1).
    #[serde(default)]
    pub empty_sibling_ipis: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShootdownSweep {
    /// Pages per call, in the order of every block's vectors.
    pub pages: Vec<usize>,
    /// The raw measurement: one entry per block.
    pub blocks: Vec<ShootdownBlock>,
    /// Per page count, summarised over blocks (for the table).
    pub points: Vec<ShootdownPoint>,
    pub cpus: (usize, Option<usize>),
    pub reps: usize,
    pub runs: usize,
    /// Interruptions of the sibling's loop (250 ns .. 100 us) during the 1-page blocks: each
    /// flush IPI it takes is one (timer ticks are rarer by orders of magnitude). Block medians.
    pub target_gap_ns: Option<Summary>,
    pub target_gaps: usize,
    pub notes: Vec<String>,
}

/// One block of `reps` calls at `pages` pages: (median ns, IPIs per call, share of calls kept).
/// With a sibling, only calls during which the sibling's counter advanced are kept: on a shared
/// host the sibling is sometimes descheduled, and then its CPU has another mm loaded and gets no
/// IPI (`should_flush_tlb` skips it), which would mix two populations.
/// `empty`: the pages are written and zapped once before the block (untimed, before the IPI
/// count starts) and every timed call finds their PTEs none.
fn block(
    m: &Mapping,
    pages: usize,
    reps: usize,
    sib: Option<&AtomicU64>,
    empty: bool,
) -> std::io::Result<(f64, Option<f64>, f64)> {
    if empty {
        for p in 0..pages {
            m.write_byte(p * PAGE, 1);
        }
        m.madvise(0, pages * PAGE, Advice::DontNeed)?;
    }
    let ipis = IpiCounter::start();
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let ca = sib.map(|c| c.load(Ordering::Relaxed));
        if !empty {
            for p in 0..pages {
                m.write_byte(p * PAGE, 1);
            }
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
                // With no page touches between the two reads only the second test applies.
                (empty || cb > ca) && c.load(Ordering::Relaxed) > cb
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
    let mut blocks = Vec::with_capacity(runs);
    for run in 0..runs {
        let mut blk = ShootdownBlock {
            alone_ns: vec![f64::NAN; k],
            sibling_ns: vec![None; k],
            alone_ipis: vec![None; k],
            sibling_ipis: vec![None; k],
            sibling_running: vec![None; k],
            target_gap_ns: None,
            target_gaps: 0,
            empty_ns: vec![f64::NAN; k],
            empty_ipis: vec![None; k],
            empty_sibling_ipis: None,
        };
        // Page counts ascending in even blocks, descending in odd ones; within a count the
        // condition that goes first alternates, so neither side of a difference always runs
        // first (warm caches, the allocator's per-CPU lists) or always later in a drift.
        let order: Vec<usize> = if run % 2 == 0 { (0..k).collect() } else { (0..k).rev().collect() };
        for (j, &i) in order.iter().enumerate() {
            let n = PAGES[i];
            let alone_first = (j + run) % 2 == 0;
            for side in 0..2 {
                if (side == 0) == alone_first {
                    // The written and the empty line back to back, their order alternating by block.
                    for empty in if run % 2 == 0 { [false, true] } else { [true, false] } {
                        let (t, ipi, _) = block(&m, n, reps, None, empty)?;
                        if empty {
                            (blk.empty_ns[i], blk.empty_ipis[i]) = (t, ipi);
                        } else {
                            (blk.alone_ns[i], blk.alone_ipis[i]) = (t, ipi);
                        }
                    }
                    continue;
                }
                let Some(b) = b else { continue };
                let s = Sibling::start(b, sib_mem.clone());
                // The gaps during the 1-page block are the target-side cost of one flush IPI each.
                s.record.store(n == 1, Ordering::Relaxed);
                let (t, ipi, share) = block(&m, n, reps, Some(&s.count), false)?;
                s.record.store(false, Ordering::Relaxed);
                // The check that an empty call flushes nothing: with the sibling running, a
                // written 1-page call sends it an IPI; one over none PTEs must not.
                if n == 1 {
                    let (_, e_ipi, e_share) = block(&m, 1, reps, Some(&s.count), true)?;
                    blk.empty_sibling_ipis = e_ipi.filter(|_| e_share > 0.05).map(|v| v / e_share);
                }
                let gaps = s.stop()?;
                if n == 1 && !gaps.is_empty() {
                    blk.target_gap_ns = Some(Summary::of(&gaps).median);
                    blk.target_gaps = gaps.len();
                }
                blk.sibling_ns[i] = (!t.is_nan()).then_some(t);
                blk.sibling_running[i] = Some(share);
                blk.sibling_ipis[i] = ipi;
            }
        }
        blocks.push(blk);
    }
    Ok(summarise(PAGES.to_vec(), blocks, (a, b), reps))
}

/// The per-page-count table and the gap summary of a set of blocks.
pub fn summarise(
    pages: Vec<usize>,
    blocks: Vec<ShootdownBlock>,
    cpus: (usize, Option<usize>),
    reps: usize,
) -> ShootdownSweep {
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let points = pages
        .iter()
        .enumerate()
        .map(|(i, &pages)| {
            let alone: Vec<f64> = blocks.iter().map(|b| b.alone_ns[i]).filter(|v| v.is_finite()).collect();
            let sib: Vec<f64> = blocks.iter().filter_map(|b| b.sibling_ns[i]).collect();
            ShootdownPoint {
                pages,
                alone_ns: if alone.is_empty() {
                    Summary { median: f64::NAN, min: f64::NAN, max: f64::NAN, rel_iqr: 0.0, n: 0 }
                } else {
                    Summary::of(&alone)
                },
                sibling_ns: (!sib.is_empty()).then(|| Summary::of(&sib)),
                alone_ipis: mean(blocks.iter().filter_map(|b| b.alone_ipis[i]).collect()),
                sibling_ipis: mean(blocks.iter().filter_map(|b| b.sibling_ipis[i]).collect()),
                sibling_running: mean(blocks.iter().filter_map(|b| b.sibling_running[i]).collect()),
                empty_ns: {
                    let e: Vec<f64> = blocks
                        .iter()
                        .filter_map(|b| b.empty_ns.get(i).copied())
                        .filter(|v| v.is_finite())
                        .collect();
                    (!e.is_empty()).then(|| Summary::of(&e))
                },
                empty_ipis: mean(
                    blocks.iter().filter_map(|b| b.empty_ipis.get(i).copied().flatten()).collect(),
                ),
            }
        })
        .collect();
    let gaps: Vec<f64> = blocks.iter().filter_map(|b| b.target_gap_ns).collect();
    ShootdownSweep {
        pages,
        points,
        cpus,
        reps,
        runs: blocks.len(),
        target_gap_ns: (!gaps.is_empty()).then(|| Summary::of(&gaps)),
        target_gaps: blocks.iter().map(|b| b.target_gaps).sum(),
        blocks,
        notes: vec![],
    }
}

/// Costs read off the sweep. Each is derived per block (see [`ShootdownBlock`]) and then
/// summarised over blocks, so one slow block moves the median little and its spread shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShootdownCosts {
    /// The per-page/full-flush switch the two-segment fit of the block-median curve finds:
    /// after `kink_after` pages.
    pub kink_after: usize,
    pub kink_before: usize,
    /// The ceiling used to split the alone curve (debugfs if readable, else the default 33).
    pub ceiling: usize,
    /// Alone, Theil-Sen per block: per-page cost below and above the ceiling.
    pub slope_below_ns: BlockEstimate,
    pub slope_above_ns: BlockEstimate,
    /// Slope below minus slope above, per block: one INVLPG.
    pub invlpg_ns: BlockEstimate,
    /// Intercept above minus intercept below, per block: a full local flush (the refill is not
    /// in it: nothing is reused).
    pub full_flush_ns: BlockEstimate,
    /// Alone, below the ceiling: the cost of a call with no page (syscall, madvise's fixed
    /// path, `flush_tlb_mm_range`'s own overhead).
    pub intercept_below_ns: BlockEstimate,
    /// The empty line's intercept (N <= ceiling), per block: the system call and madvise's fixed
    /// path, no flush. `None` in reports recorded before the line was measured.
    #[serde(default)]
    pub intercept_empty_ns: Option<BlockEstimate>,
    /// Intercept below minus the empty line's intercept, per block: the flush call's own cost.
    #[serde(default)]
    pub flush_call_ns: Option<BlockEstimate>,
    /// TLB interrupts per empty 1-page call while the sibling ran (median over blocks): ~0
    /// where an empty call makes no flush.
    #[serde(default)]
    pub empty_ipis_per_call: Option<f64>,
    /// Sibling minus alone at 1 page, per block: the initiator's wait for one remote flush.
    pub ipi_round_trip_ns: Option<BlockEstimate>,
    /// Sibling minus alone, per block the median over the full-flush points (ceiling+1 ..= 64).
    pub ipi_round_trip_full_ns: Option<BlockEstimate>,
    /// Per block, the median interruption of the sibling's loop per flush IPI (1-page calls).
    pub target_cost_ns: Option<BlockEstimate>,
    /// TLB interrupts per call while the sibling ran (median over points): ~1 when IPIs are
    /// delivered and counted.
    pub ipis_per_call: Option<f64>,
}

/// The lines through one block's alone curve below and above the ceiling (Theil-Sen).
fn block_lines(s: &ShootdownSweep, b: &ShootdownBlock, ceiling: usize) -> Option<((f64, f64), (f64, f64))> {
    let pts = |keep: &dyn Fn(usize) -> bool| -> Vec<(f64, f64)> {
        s.pages
            .iter()
            .zip(&b.alone_ns)
            .filter(|(&n, v)| keep(n) && v.is_finite())
            .map(|(&n, &v)| (n as f64, v))
            .collect()
    };
    Some((theil_sen(&pts(&|n| n <= ceiling))?, theil_sen(&pts(&|n| n > ceiling))?))
}

/// The empty line's intercept in one block (Theil-Sen over N <= ceiling); NaN without the line.
fn empty_intercept(s: &ShootdownSweep, b: &ShootdownBlock, ceiling: usize) -> f64 {
    let pts: Vec<(f64, f64)> = s
        .pages
        .iter()
        .zip(&b.empty_ns)
        .filter(|(&n, v)| n <= ceiling && v.is_finite())
        .map(|(&n, &v)| (n as f64, v))
        .collect();
    theil_sen(&pts).map_or(f64::NAN, |l| l.0)
}

pub fn analyse(s: &ShootdownSweep, ceiling: usize) -> Option<ShootdownCosts> {
    let lines: Vec<Option<((f64, f64), (f64, f64))>> =
        s.blocks.iter().map(|b| block_lines(s, b, ceiling)).collect();
    if lines.iter().all(Option::is_none) {
        return None;
    }
    let per = |f: &dyn Fn((f64, f64), (f64, f64)) -> f64| -> Vec<f64> {
        lines.iter().map(|l| l.map_or(f64::NAN, |(lo, hi)| f(lo, hi))).collect()
    };
    let est = |v: &[f64], how: String| BlockEstimate::positive(v, how);
    let fit = format!("Theil-Sen line through each block's alone curve, N <= {ceiling} and N > {ceiling}");
    let idx = |pages: usize| s.pages.iter().position(|&n| n == pages);
    let diff =
        |b: &ShootdownBlock, i: usize| b.sibling_ns[i].map(|v| v - b.alone_ns[i]).filter(|v| v.is_finite());
    let rt: Option<Vec<f64>> = idx(1).map(|i| s.blocks.iter().filter_map(|b| diff(b, i)).collect());
    let full_idx: Vec<usize> =
        (0..s.pages.len()).filter(|&i| s.pages[i] > ceiling && s.pages[i] <= 64).collect();
    let full: Vec<f64> = s
        .blocks
        .iter()
        .filter_map(|b| {
            let d: Vec<f64> = full_idx.iter().filter_map(|&i| diff(b, i)).collect();
            (!d.is_empty()).then(|| Summary::of(&d).median)
        })
        .collect();
    let gaps: Vec<f64> = s.blocks.iter().filter_map(|b| b.target_gap_ns).collect();
    let empty: Vec<f64> = s.blocks.iter().map(|b| empty_intercept(s, b, ceiling)).collect();
    let has_empty = empty.iter().any(|v| v.is_finite());
    let call: Vec<f64> =
        lines.iter().zip(&empty).map(|(l, e)| l.map_or(f64::NAN, |(lo, _)| lo.0 - e)).collect();
    let empty_ipis: Vec<f64> = s.blocks.iter().filter_map(|b| b.empty_sibling_ipis).collect();
    // The kink, for the record: two-segment fit of the block-median curve (sibling if it ran).
    let med: Option<Vec<(f64, f64)>> =
        s.points.iter().map(|p| p.sibling_ns.map(|v| (p.pages as f64, v.median))).collect();
    let curve = med.unwrap_or_else(|| s.points.iter().map(|p| (p.pages as f64, p.alone_ns.median)).collect());
    let (k, _, _) = two_segment_fit(&curve, 3)?;
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
        slope_below_ns: est(&per(&|lo, _| lo.1), format!("{fit}: slope below")),
        slope_above_ns: est(
            &per(&|_, hi| hi.1),
            format!("{fit}: slope above (zap + free per page, no INVLPG)"),
        ),
        invlpg_ns: est(&per(&|lo, hi| lo.1 - hi.1), format!("{fit}: slope below minus slope above")),
        full_flush_ns: est(
            &per(&|lo, hi| hi.0 - lo.0),
            format!("{fit}: intercept above minus intercept below"),
        ),
        intercept_below_ns: est(&per(&|lo, _| lo.0), format!("{fit}: intercept below")),
        intercept_empty_ns: has_empty.then(|| {
            est(
                &empty,
                format!(
                    "Theil-Sen line through each block's curve over none PTEs, N <= {ceiling}: intercept"
                ),
            )
        }),
        flush_call_ns: has_empty.then(|| {
            est(
                &call,
                format!(
                    "{fit}: intercept below minus the same block's intercept over none PTEs (N <= {ceiling})"
                ),
            )
        }),
        empty_ipis_per_call: (!empty_ipis.is_empty()).then(|| Summary::of(&empty_ipis).median),
        ipi_round_trip_ns: rt.filter(|v| !v.is_empty()).map(|v| {
            est(&v, "per block: median ns with the sibling minus alone, at 1 page (one INVLPG remote)".into())
        }),
        ipi_round_trip_full_ns: (!full.is_empty()).then(|| {
            est(
                &full,
                format!(
                    "per block: median over N = {}..=64 of sibling minus alone (full flush remote)",
                    ceiling + 1
                ),
            )
        }),
        target_cost_ns: (!gaps.is_empty()).then(|| {
            est(
                &gaps,
                "per block: median gap (250 ns..100 us) in the sibling's loop during the 1-page calls".into(),
            )
        }),
        ipis_per_call: (!ipis.is_empty()).then(|| Summary::of(&ipis).median),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Alone: 500 + 60/page (zap+free 40 + INVLPG 20) up to 33, then 800 + 40/page. The sibling
    /// adds 2000 ns plus 20 ns per remotely INVLPGed page (300 for a remote full flush).
    /// Block `j` adds `j * 7` ns of drift to every figure, and `wild` puts one outlier in.
    fn synthetic_block(j: usize, wild: bool) -> ShootdownBlock {
        let k = PAGES.len();
        let mut b = ShootdownBlock {
            alone_ns: vec![0.0; k],
            sibling_ns: vec![None; k],
            alone_ipis: vec![Some(0.0); k],
            sibling_ipis: vec![Some(0.5); k],
            sibling_running: vec![Some(0.5); k],
            target_gap_ns: Some(900.0 + j as f64),
            target_gaps: 10,
            empty_ns: vec![0.0; k],
            empty_ipis: vec![Some(0.0); k],
            empty_sibling_ipis: Some(0.0),
        };
        for (i, &n) in PAGES.iter().enumerate() {
            let n_ = n as f64;
            let alone = if n <= 33 { 500.0 + 60.0 * n_ } else { 800.0 + 40.0 * n_ } + 7.0 * j as f64;
            let remote = if n <= 33 { 20.0 * n_ } else { 300.0 };
            b.alone_ns[i] = alone;
            b.sibling_ns[i] = Some(alone + 2000.0 + remote);
            // Over none PTEs: 450 + 1/page (the walk of an empty PTE), the same drift.
            b.empty_ns[i] = 450.0 + n_ + 7.0 * j as f64;
        }
        if wild {
            b.alone_ns[5] += 5000.0;
        }
        b
    }

    #[test]
    fn costs_of_a_synthetic_sweep() {
        let blocks = (0..5).map(|j| synthetic_block(j, j == 2)).collect();
        let s = summarise(PAGES.to_vec(), blocks, (0, Some(1)), 1);
        let c = analyse(&s, 33).unwrap();
        let near = |e: &BlockEstimate, v: f64| e.resolved && (e.value - v).abs() < 1e-6;
        assert!(near(&c.invlpg_ns, 20.0) && near(&c.full_flush_ns, 300.0), "{c:?}");
        assert!(near(&c.slope_above_ns, 40.0), "{c:?}");
        // The drift shows in the intercept's spread, not in the differences.
        assert!((c.intercept_below_ns.value - 514.0).abs() < 1e-6, "{c:?}");
        assert_eq!((c.intercept_below_ns.blocks.min, c.intercept_below_ns.blocks.max), (500.0, 528.0));
        assert_eq!(c.invlpg_ns.blocks.max - c.invlpg_ns.blocks.min, 0.0);
        // The empty line: its intercept drifts with the block, the flush call (the difference) does not.
        let e = c.intercept_empty_ns.as_ref().unwrap();
        assert_eq!((e.value, e.blocks.min, e.blocks.max), (464.0, 450.0, 478.0));
        let f = c.flush_call_ns.as_ref().unwrap();
        assert!(near(f, 50.0) && f.blocks.max - f.blocks.min < 1e-9, "{f:?}");
        assert_eq!(c.empty_ipis_per_call, Some(0.0));
        assert_eq!((c.kink_after, c.kink_before), (33, 34));
        assert!(near(c.ipi_round_trip_ns.as_ref().unwrap(), 2020.0));
        assert!(near(c.ipi_round_trip_full_ns.as_ref().unwrap(), 2300.0));
        assert!(near(c.target_cost_ns.as_ref().unwrap(), 902.0));
        // Half the calls had the sibling running and the block counted 0.5 IPIs per call.
        assert_eq!(c.ipis_per_call, Some(1.0));
    }

    #[test]
    fn a_flat_curve_is_below_resolution() {
        // No INVLPG cost at all: the slope difference scatters around zero between blocks.
        let blocks = (0..5)
            .map(|j| {
                let mut b = synthetic_block(0, false);
                for (i, &n) in PAGES.iter().enumerate() {
                    let wobble = [3.0, -2.0, 1.0, -4.0, 2.0][j] * if n <= 33 { 1.0 } else { -0.01 };
                    b.alone_ns[i] = 500.0 + 40.0 * n as f64 + wobble * n as f64 / 33.0;
                }
                b
            })
            .collect();
        let s = summarise(PAGES.to_vec(), blocks, (0, Some(1)), 1);
        let c = analyse(&s, 33).unwrap();
        assert!(!c.invlpg_ns.resolved, "{:?}", c.invlpg_ns);
        assert!(!c.full_flush_ns.resolved, "{:?}", c.full_flush_ns);
        assert!(c.slope_above_ns.resolved);
    }

    #[test]
    fn a_short_real_sweep_runs() {
        let cpus = sys::allowed_cpus();
        let s = sweep(&cpus, 3, 1).unwrap();
        assert_eq!(s.points.len(), PAGES.len());
        assert_eq!(s.blocks.len(), 1);
        assert!(s.points.iter().all(|p| p.alone_ns.median > 0.0));
        assert!(s.points.iter().all(|p| p.empty_ns.is_some_and(|e| e.median > 0.0)));
        // With a second CPU the share of calls the sibling ran through is always reported (on a
        // busy host it may be 0, so the sibling timings themselves may be absent).
        assert_eq!(s.points[0].sibling_running.is_some(), cpus.len() > 1);
        assert!(s.points.iter().all(|p| p.sibling_running.is_none_or(|r| (0.0..=1.0).contains(&r))));
    }
}
