//! The host's `[uncore]`: the last-level cache's size (sysfs, as crate::probe::chase reads the
//! other levels) and the memory bandwidth a STREAM-copy-like loop sustains with one CPU and
//! with every CPU this process may use at once, each over its own two buffers of several times
//! the LLC, so that every byte comes from and goes to DRAM.
//!
//! The loop is `copy_from_slice` (glibc's `memcpy`, which for copies this large writes with
//! non-temporal stores: each byte copied is one read and one write on the memory bus, no
//! write-allocate read), so the traffic is twice the bytes copied, as hw/uncore.rs counts a
//! transfer's bytes (reads plus writes).

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use crate::stats::Summary;
use crate::sys;

/// Bus bytes per byte copied (a read and a non-temporal write).
pub const TRAFFIC_PER_BYTE: f64 = 2.0;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamCopy {
    /// The LLC as sysfs gives it (the largest data or unified cache of CPU 0), bytes.
    pub llc_bytes: Option<usize>,
    /// Each buffer's bytes with one CPU (every CPU copies between two of its own; with all,
    /// [`per_cpu_bytes`] each).
    pub buffer_bytes: usize,
    /// Bytes copied per second by one CPU, MB/s, over repetitions.
    pub one_cpu_mbps: Summary,
    /// Bytes copied per second by all `cpus` at once, summed, MB/s, over repetitions.
    pub all_cpus_mbps: Summary,
    pub cpus: usize,
}

/// Each buffer: 4x the LLC, at least 32 MiB.
pub fn buffer_bytes(llc: Option<usize>) -> usize {
    (4 * llc.unwrap_or(32 << 20)).max(32 << 20)
}

/// Each CPU's buffers in the all-CPU round: the one-CPU size up to 8 CPUs; on a larger host
/// shared out so that the round's memory stays that of 8, at least 8 MiB (the buffers together
/// are still 8x the LLC or more).
pub fn per_cpu_bytes(bytes: usize, cpus: usize) -> usize {
    (bytes * 8 / cpus.max(8)).max(8 << 20)
}

/// `threads` pinned threads each copying its own `bytes` once, together: bytes copied per
/// second summed, MB/s (total over the slowest thread's time).
fn copy_round(cpus: &[usize], bytes: usize, reps: usize) -> std::io::Result<Vec<f64>> {
    let start = Arc::new(Barrier::new(cpus.len()));
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            let start = start.clone();
            std::thread::spawn(move || -> std::io::Result<Vec<f64>> {
                sys::pin_to_cpu(cpu)?;
                let src = vec![7u8; bytes];
                let mut dst = vec![1u8; bytes];
                let mut t = Vec::with_capacity(reps);
                for _ in 0..reps {
                    start.wait();
                    let t0 = Instant::now();
                    dst.copy_from_slice(&src);
                    std::hint::black_box(&mut dst);
                    t.push(t0.elapsed().as_secs_f64());
                }
                Ok(t)
            })
        })
        .collect();
    let mut per_thread = Vec::new();
    for h in handles {
        per_thread.push(h.join().map_err(|_| std::io::Error::other("a copy thread panicked"))??);
    }
    Ok((0..reps)
        .map(|r| {
            let slowest = per_thread.iter().map(|t| t[r]).fold(0.0, f64::max);
            (cpus.len() * bytes) as f64 / slowest / 1e6
        })
        .collect())
}

/// Measures the copy with one CPU (the first of `cpus`) and with all of `cpus`, `reps` times
/// each.
pub fn stream_copy(cpus: &[usize], reps: usize) -> std::io::Result<StreamCopy> {
    let llc_bytes = super::chase::cache_sizes().iter().map(|s| s.1).max();
    let bytes = buffer_bytes(llc_bytes);
    let one = copy_round(&cpus[..1], bytes, reps)?;
    let all = copy_round(cpus, per_cpu_bytes(bytes, cpus.len()), reps)?;
    Ok(StreamCopy {
        llc_bytes,
        buffer_bytes: bytes,
        one_cpu_mbps: Summary::of(&one),
        all_cpus_mbps: Summary::of(&all),
        cpus: cpus.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_well_past_the_llc() {
        assert_eq!(buffer_bytes(Some(8 << 20)), 32 << 20);
        assert_eq!(buffer_bytes(Some(32 << 20)), 128 << 20);
        assert_eq!(buffer_bytes(None), 128 << 20);
        assert_eq!(per_cpu_bytes(32 << 20, 2), 32 << 20);
        assert_eq!(per_cpu_bytes(128 << 20, 64), 16 << 20);
        assert_eq!(per_cpu_bytes(32 << 20, 64), 8 << 20);
    }

    #[test]
    fn a_round_on_every_cpu_sums_the_copies() {
        let cpus = sys::allowed_cpus();
        let r = copy_round(&cpus, 1 << 20, 2).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|&x| x > 10.0), "{r:?}");
    }
}
