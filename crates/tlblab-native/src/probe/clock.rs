//! The core clock (a chain of dependent one-cycle adds, so no performance counters are needed:
//! guests usually have none) and the cache-line transfer time between two CPUs (an atomic
//! ping-pong, half a round trip).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::stats::Summary;
use crate::sys;

/// Adds per loop iteration of the chain.
const CHAIN: u64 = 64;

/// Runs `iters` x 64 dependent adds: 64 cycles per iteration on any x86 core with 1-cycle ALU
/// latency (every x86 core since the P6); the loop counter runs in parallel.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn add_chain(iters: u64) -> u64 {
    let mut x = 0u64;
    let mut n = iters;
    // SAFETY: register-only arithmetic; no memory, no stack.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 64",
            "add {x}, 1",
            ".endr",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) n,
            options(nomem, nostack),
        );
    }
    let _ = n;
    x
}

#[cfg(not(target_arch = "x86_64"))]
fn add_chain(iters: u64) -> u64 {
    let mut x = 0u64;
    for _ in 0..iters * CHAIN {
        x = std::hint::black_box(x + 1);
    }
    x
}

/// Core clock in MHz: `runs` blocks of ~`ms` milliseconds, each timed in batches of ~0.2 ms
/// and kept as its median batch. Preemption only ever lengthens a batch, and a batch is far
/// shorter than a scheduler time slice, so on a busy host most batches run undisturbed and the
/// median is the clock (a whole-block timing would read the CPU share, not the clock).
pub fn core_clock_mhz(runs: usize, ms: u64) -> Summary {
    // Calibrate the batch to ~0.2 ms (the best of a few tries: a preempted try reads slow).
    let per_iter = (0..5)
        .map(|_| {
            let t = Instant::now();
            add_chain(10_000);
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
                    std::hint::black_box(add_chain(iters));
                    (iters * CHAIN) as f64 / t.elapsed().as_secs_f64() / 1e6
                })
                .collect();
            Summary::of(&mhz).median
        })
        .collect();
    Summary::of(&samples)
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

    #[test]
    fn the_clock_is_plausible() {
        let s = core_clock_mhz(3, 5);
        assert!((100.0..10_000.0).contains(&s.median), "{s:?}");
    }
}
