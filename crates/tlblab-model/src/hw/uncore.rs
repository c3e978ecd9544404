//! The uncore of one socket as bulk transfers see it: the last-level cache's capacity, shared by
//! the working sets of the CPUs that stream through it, and the DRAM bandwidth of the socket's
//! memory controllers behind it (docs/references/machine-costs.md#shared-memory-limits).
//!
//! A capacity model, not a cache simulation: each CPU holds up to two streaming regions (the
//! source and the destination of its last bulk copy); a region several CPUs hold (ebizzy's
//! chunks) counts once. While the socket's live footprint fits the LLC, a transfer hits it and
//! draws no DRAM bandwidth; past it, the fraction `1 - llc / footprint` of the bytes misses (a
//! random-access working set larger than the cache under LRU). The missing bytes queue on the
//! socket's DRAM as one FIFO server at the sustained rate (peak x sustained fraction), in the
//! order the engine presents requests, as hw/lock.rs queues lock holders: a lone copy streaming
//! below that rate never waits; copies that together ask for more wait for the controller, so
//! the wait (the latency above the unloaded one) grows as utilisation reaches saturation.

use crate::time::Ps;

/// A streaming region: what identifies it (the same key from two CPUs is one region) and its
/// size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub key: u64,
    pub bytes: u64,
}

/// A socket's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UncoreStats {
    /// Bytes bulk transfers moved (reads plus writes).
    pub bytes: u64,
    /// Of them, bytes that missed the LLC and went to DRAM.
    pub dram_bytes: u64,
    /// Time transfers waited for DRAM beyond their own copy time.
    pub wait: Ps,
}

#[derive(Debug, Clone)]
struct Socket {
    /// When the memory controllers have served every byte queued so far.
    free_at: Ps,
    /// Live regions: (key, bytes, how many CPU slots hold it).
    live: Vec<(u64, u64, u32)>,
    footprint: u64,
    stats: UncoreStats,
}

/// Every socket's LLC capacity and DRAM queue.
#[derive(Debug, Clone)]
pub struct Uncore {
    llc_bytes: u64,
    /// Picoseconds per byte at the sustained DRAM rate.
    dram_ps_per_byte: f64,
    sockets: Vec<Socket>,
    /// Per CPU, its source and destination region.
    held: Vec<[Option<Region>; 2]>,
}

/// Which of a CPU's two regions a stream names.
pub const SRC: usize = 0;
pub const DST: usize = 1;

impl Uncore {
    /// `llc_bytes` per socket; DRAM at `sustained_mbps` (MB/s = 10^6 B/s) per socket.
    pub fn new(sockets: u32, cpus: u32, llc_bytes: u64, sustained_mbps: f64) -> Uncore {
        Uncore {
            llc_bytes,
            dram_ps_per_byte: 1e6 / sustained_mbps,
            sockets: (0..sockets)
                .map(|_| Socket {
                    free_at: Ps::ZERO,
                    live: Vec::new(),
                    footprint: 0,
                    stats: Default::default(),
                })
                .collect(),
            held: vec![[None; 2]; cpus as usize],
        }
    }

    /// `cpu` (on `socket`) now streams through `region` in `slot` ([`SRC`] or [`DST`]); the region
    /// it held there before is released.
    pub fn hold(&mut self, cpu: u32, socket: u32, slot: usize, region: Option<Region>) {
        let old = self.held[cpu as usize][slot];
        if old == region {
            return;
        }
        let s = &mut self.sockets[socket as usize];
        if let Some(o) = old {
            if let Some(i) = s.live.iter().position(|l| l.0 == o.key) {
                s.live[i].2 -= 1;
                if s.live[i].2 == 0 {
                    s.footprint -= s.live[i].1;
                    s.live.swap_remove(i);
                }
            }
        }
        if let Some(r) = region {
            match s.live.iter().position(|l| l.0 == r.key) {
                Some(i) => s.live[i].2 += 1,
                None => {
                    s.live.push((r.key, r.bytes, 1));
                    s.footprint += r.bytes;
                }
            }
        }
        self.held[cpu as usize][slot] = region;
    }

    /// The fraction of a transfer's bytes that misses the LLC on `socket` now.
    pub fn miss_fraction(&self, socket: u32) -> f64 {
        let f = self.sockets[socket as usize].footprint;
        if f <= self.llc_bytes {
            0.0
        } else {
            1.0 - self.llc_bytes as f64 / f as f64
        }
    }

    /// A bulk transfer on `socket` at `now` that moves `bytes` (reads plus writes) and takes
    /// `core` on its CPU alone. Returns how long it waits for DRAM beyond `core`.
    pub fn transfer(&mut self, socket: u32, now: Ps, bytes: u64, core: Ps) -> Ps {
        let m = self.miss_fraction(socket);
        self.sockets[socket as usize].stats.bytes += bytes;
        if m == 0.0 {
            return Ps::ZERO;
        }
        self.queue(socket, now, (bytes as f64 * m).round() as u64, core)
    }

    /// A transfer whose `bytes` all miss the LLC whatever the footprint (lines last written
    /// long ago); as [`Uncore::transfer`] otherwise.
    pub fn transfer_dram(&mut self, socket: u32, now: Ps, bytes: u64, core: Ps) -> Ps {
        self.sockets[socket as usize].stats.bytes += bytes;
        self.queue(socket, now, bytes, core)
    }

    /// `dram` bytes join the socket's DRAM queue at `now`; returns the wait beyond `core`.
    fn queue(&mut self, socket: u32, now: Ps, dram: u64, core: Ps) -> Ps {
        let s = &mut self.sockets[socket as usize];
        s.stats.dram_bytes += dram;
        let service = Ps::round_from(dram as f64 * self.dram_ps_per_byte);
        s.free_at = s.free_at.max(now) + service;
        let wait = (s.free_at - now).saturating_sub(core);
        s.stats.wait += wait;
        wait
    }

    pub fn stats(&self, socket: u32) -> UncoreStats {
        self.sockets[socket as usize].stats
    }

    /// Every socket's counters summed.
    pub fn total(&self) -> UncoreStats {
        self.sockets.iter().fold(UncoreStats::default(), |a, s| UncoreStats {
            bytes: a.bytes + s.stats.bytes,
            dram_bytes: a.dram_bytes + s.stats.dram_bytes,
            wait: a.wait + s.stats.wait,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn r(key: u64, mib: u64) -> Option<Region> {
        Some(Region { key, bytes: mib * MIB })
    }

    #[test]
    fn shared_region_counts_once_and_misses_start_past_capacity() {
        // 8 MiB LLC, 10 GB/s DRAM.
        let mut u = Uncore::new(1, 8, 8 * MIB, 10_000.0);
        for cpu in 0..4 {
            u.hold(cpu, 0, SRC, r(1, 5));
            u.hold(cpu, 0, DST, Some(Region { key: 100 + cpu as u64, bytes: MIB / 2 }));
        }
        // 5 MiB shared + 4 x 0.5 MiB = 7 MiB: fits.
        assert_eq!(u.miss_fraction(0), 0.0);
        assert_eq!(u.transfer(0, Ps(0), 4096, Ps(1)), Ps::ZERO);
        for cpu in 4..8 {
            u.hold(cpu, 0, SRC, r(1, 5));
            u.hold(cpu, 0, DST, Some(Region { key: 100 + cpu as u64, bytes: MIB / 2 }));
        }
        // 9 MiB live: 1/9 misses.
        assert!((u.miss_fraction(0) - 1.0 / 9.0).abs() < 1e-12);
        // Releasing a CPU's buffer shrinks the footprint again.
        u.hold(7, 0, DST, None);
        assert!((u.miss_fraction(0) - (1.0 - 8.0 / 8.5)).abs() < 1e-12);
        u.hold(7, 0, SRC, None);
        u.hold(6, 0, DST, None);
        assert_eq!(u.miss_fraction(0), 0.0);
    }

    #[test]
    fn dram_queue_delays_only_demand_beyond_the_sustained_rate() {
        // Everything misses: a 1 MiB LLC under a 2 MiB region.
        let mut u = Uncore::new(1, 2, MIB, 10_000.0);
        u.hold(0, 0, SRC, r(1, 2));
        let m = u.miss_fraction(0);
        assert_eq!(m, 0.5);
        // 20,000 bytes -> 10,000 to DRAM at 100 ps/B = 1 us of service.
        let us = Ps::US;
        // A lone copy whose own time (2 us) exceeds its DRAM service never waits.
        assert_eq!(u.transfer(0, Ps::ZERO, 20_000, us * 2), Ps::ZERO);
        // Two more at the same instant: the queue holds 3 us of service; the last waits 1 us
        // beyond its own 2 us.
        assert_eq!(u.transfer(0, Ps::ZERO, 20_000, us * 2), Ps::ZERO);
        assert_eq!(u.transfer(0, Ps::ZERO, 20_000, us * 2), us);
        assert_eq!(u.stats(0).wait, us);
        assert_eq!(u.stats(0).dram_bytes, 30_000);
        // Long after, the controller is idle again.
        assert_eq!(u.transfer(0, us * 100, 20_000, us * 2), Ps::ZERO);
    }

    #[test]
    fn a_transfer_to_dram_queues_every_byte_whatever_the_footprint() {
        // Nothing held: a plain transfer hits, one to DRAM queues all its bytes.
        let mut u = Uncore::new(1, 2, MIB, 10_000.0);
        let us = Ps::US;
        assert_eq!(u.transfer(0, Ps::ZERO, 20_000, us), Ps::ZERO);
        assert_eq!(u.stats(0).dram_bytes, 0);
        // 20,000 bytes at 100 ps/B: 2 us of service each; alone within its own 2 us.
        assert_eq!(u.transfer_dram(0, Ps::ZERO, 20_000, us * 2), Ps::ZERO);
        // A second at once waits for the first's service.
        assert_eq!(u.transfer_dram(0, Ps::ZERO, 20_000, us * 2), us * 2);
        let s = u.stats(0);
        assert_eq!((s.bytes, s.dram_bytes, s.wait), (60_000, 40_000, us * 2));
    }
}
