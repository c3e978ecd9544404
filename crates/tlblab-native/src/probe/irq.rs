//! Where an interrupt's cost falls around the handler's acknowledgement: the part the
//! interrupted CPU loses before its handler acknowledges the sender (the entry: on a guest the
//! exit to the hypervisor and the injection too) against the part after it (the handler's exit
//! and the return to the interrupted code).
//!
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (kernel/sched/membarrier.c, v4.14+) sends an
//! IPI to every other CPU running a thread of the caller's mm and waits until each has run its
//! handler, whose work is one full barrier: the same send, delivery, entry, csd acknowledgement
//! and exit as a TLB flush's IPI, with nothing to flush. A sibling thread of the mm spins on
//! another CPU stamping the monotonic clock (coherent across CPUs) and notes each gap in its
//! loop; the caller stamps each call. Per call whose gap falls inside it: the time from the call
//! to the sibling's stop, the sibling's gap, and the time from the sibling's return to user code
//! to the caller's return. The last is the split: the caller returns its own exit path (a system
//! call's second half) plus one line transfer after the acknowledgement, so the sibling's part
//! after the acknowledgement is that much less the measured time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;
use crate::sys;

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` and its registration (include/uapi/linux/membarrier.h).
const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Gaps in the sibling's loop shorter than this are its own jitter; longer than `GAP_MAX_NS`
/// are descheduling.
const GAP_MIN_NS: u64 = 250;
const GAP_MAX_NS: u64 = 20_000;

/// The membarrier IPI's timing, medians per run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IrqSplit {
    /// A call while the sibling sleeps (no IPI: its CPU runs no thread of the mm).
    pub alone_ns: Summary,
    /// From the call's start to the sibling's loop stopping (the IPI's arrival).
    pub to_stop_ns: Summary,
    /// The sibling's gap: the interrupt as the interrupted code loses it.
    pub lost_ns: Summary,
    /// From the sibling's return to its loop to the caller's return (negative when the caller
    /// returns first).
    pub after_ns: Summary,
    /// Calls matched with one gap, over all runs.
    pub matched: usize,
}

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes two integers and no pointer.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0u32, 0i32) }
}

/// `runs` runs of `calls` calls on CPU `a` with the sibling on CPU `b`; `None` where the kernel
/// has no expedited private membarrier (before v4.14, or configured out) or no call could be
/// matched with a gap (the sibling never ran).
pub fn membarrier_split(a: usize, b: usize, runs: usize, calls: usize) -> std::io::Result<Option<IrqSplit>> {
    std::thread::spawn(move || measure(a, b, runs, calls)).join().expect("membarrier probe panicked")
}

fn measure(a: usize, b: usize, runs: usize, calls: usize) -> std::io::Result<Option<IrqSplit>> {
    sys::pin_to_cpu(a)?;
    if membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) != 0 {
        return Ok(None);
    }
    let base = Instant::now();
    let stamp = move || base.elapsed().as_nanos() as u64;
    let (mut alone, mut to_stop, mut lost, mut after, mut matched) = (vec![], vec![], vec![], vec![], 0);
    for _ in 0..runs {
        // Alone first: with no thread of the mm on another CPU the call sends no IPI.
        let t: Vec<f64> = (0..calls)
            .map(|_| {
                let t0 = stamp();
                membarrier(CMD_PRIVATE_EXPEDITED);
                (stamp() - t0) as f64
            })
            .collect();
        alone.push(Summary::of(&t).median);
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::new(AtomicU64::new(0));
        let (s, r) = (stop.clone(), running.clone());
        let sibling = std::thread::spawn(move || -> std::io::Result<Vec<(u64, u64)>> {
            sys::pin_to_cpu(b)?;
            let mut gaps = Vec::with_capacity(4 * calls);
            let mut last = stamp();
            r.store(1, Ordering::Release);
            while !s.load(Ordering::Relaxed) {
                let now = stamp();
                if (GAP_MIN_NS..GAP_MAX_NS).contains(&(now - last)) {
                    gaps.push((last, now));
                }
                last = now;
            }
            Ok(gaps)
        });
        while running.load(Ordering::Acquire) == 0 && !sibling.is_finished() {
            std::hint::spin_loop();
        }
        let mut spans = Vec::with_capacity(calls);
        for i in 0..calls {
            // A few hundred ns of the caller's own work between calls, varying, so the calls do
            // not fall in step with anything periodic on the sibling's side.
            for _ in 0..(200 + (i * 37) % 300) {
                std::hint::spin_loop();
            }
            let t0 = stamp();
            membarrier(CMD_PRIVATE_EXPEDITED);
            spans.push((t0, stamp()));
        }
        stop.store(true, Ordering::Relaxed);
        let gaps = sibling.join().expect("membarrier sibling panicked")?;
        let m = match_gaps(&spans, &gaps);
        matched += m.len();
        if m.is_empty() {
            continue;
        }
        let med = |f: fn(&Matched) -> f64| Summary::of(&m.iter().map(f).collect::<Vec<_>>()).median;
        to_stop.push(med(|x| x.to_stop));
        lost.push(med(|x| x.lost));
        after.push(med(|x| x.after));
    }
    if to_stop.is_empty() {
        return Ok(None);
    }
    Ok(Some(IrqSplit {
        alone_ns: Summary::of(&alone),
        to_stop_ns: Summary::of(&to_stop),
        lost_ns: Summary::of(&lost),
        after_ns: Summary::of(&after),
        matched,
    }))
}

/// One call and the one gap of the sibling's loop inside it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Matched {
    to_stop: f64,
    lost: f64,
    after: f64,
}

/// Pairs each call `(start, end)` with the sibling's gap `(stop, resume)` that starts inside it,
/// when exactly one does and it ends within a microsecond of the call's end (the sibling may
/// resume a little after the caller returns). Both lists ascend.
fn match_gaps(spans: &[(u64, u64)], gaps: &[(u64, u64)]) -> Vec<Matched> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(t0, t1) in spans {
        while j < gaps.len() && gaps[j].0 < t0 {
            j += 1;
        }
        let inside = gaps[j..].iter().take_while(|g| g.0 < t1).count();
        if inside == 1 && gaps[j].1 <= t1 + 1_000 {
            let (s, r) = gaps[j];
            out.push(Matched { to_stop: (s - t0) as f64, lost: (r - s) as f64, after: t1 as f64 - r as f64 });
        }
    }
    out
}

/// The share of an interrupt's entry + exit that falls after the handler's acknowledgement,
/// from a membarrier measurement: the sibling's part after the acknowledgement is the caller's
/// exit path (`exit_path_ns`: half a system call's round trip) plus the acknowledgement's line
/// transfer (`line_ns`), less the measured time from the sibling's return to the caller's;
/// entry + exit is the sibling's gap less the two line transfers the model charges a handler.
/// `None` where the figures leave no positive entry + exit.
pub fn exit_share(s: &IrqSplit, exit_path_ns: f64, line_ns: f64) -> Option<f64> {
    let total = s.lost_ns.median - 2.0 * line_ns;
    if total <= 0.0 {
        return None;
    }
    let exit = (exit_path_ns + line_ns - s.after_ns.median).clamp(0.0, total);
    Some(exit / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_matches_the_one_gap_inside_it() {
        let spans = [(1_000, 2_500), (5_000, 6_500), (9_000, 10_500)];
        // The second call has two gaps inside (not matched), the third none.
        let gaps = [(1_500, 2_490), (5_100, 5_400), (5_600, 6_400), (20_000, 21_000)];
        let m = match_gaps(&spans, &gaps);
        assert_eq!(m, vec![Matched { to_stop: 500.0, lost: 990.0, after: 10.0 }]);
    }

    #[test]
    fn a_sibling_resuming_with_the_caller_puts_little_after_the_acknowledgement() {
        let s = |after: f64| IrqSplit {
            alone_ns: Summary::of(&[83.0]),
            to_stop_ns: Summary::of(&[502.0]),
            lost_ns: Summary::of(&[976.0]),
            after_ns: Summary::of(&[after]),
            matched: 100,
        };
        // This guest's figures: the caller returns as the sibling resumes, so the part after the
        // acknowledgement is the caller's exit path and the line, 88 of 866 ns.
        let share = exit_share(&s(1.0), 32.5, 55.0).unwrap();
        assert!((share - 86.5 / 866.0).abs() < 1e-9, "{share}");
        // A caller returning long after the sibling: nothing after the acknowledgement.
        assert_eq!(exit_share(&s(500.0), 32.5, 55.0), Some(0.0));
        // A gap no longer than the two lines leaves nothing to split.
        let mut short = s(1.0);
        short.lost_ns = Summary::of(&[100.0]);
        assert_eq!(exit_share(&short, 32.5, 55.0), None);
    }
}
