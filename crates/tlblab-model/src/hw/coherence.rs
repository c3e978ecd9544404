//! Contended cache lines (MESI reduced to what the kernel's hot lines need): each line has either
//! one exclusive owner or a set of sharers. A read by a non-holder pulls the line from the owner
//! (E/M -> S); a write or atomic RMW by a non-owner invalidates every other copy (S -> E). The
//! cost is a local hit or a transfer whose latency depends on how far the data comes from.
//!
//! This is where the `mm->context.tlb_gen` ping-pong of seed 002 comes from: every flush
//! initiator's `atomic64_inc_return` takes the line exclusive and every remote
//! `flush_tlb_func` that reads it drags it back to shared.

use super::cpumask::CpuMask;
use super::topology::{Distance, Topology};
use crate::time::Ps;

/// Latencies of a line access by distance to the nearest (read) or farthest (write) holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCosts {
    pub hit: Ps,
    pub smt_sibling: Ps,
    pub same_socket: Ps,
    pub cross_socket: Ps,
    /// No cache holds the line: it comes from the last-level cache / memory side.
    pub uncached: Ps,
}

impl LineCosts {
    /// The latency of moving a line `d` away (a hit when `d` is `Same`).
    pub fn transfer(&self, d: Distance) -> Ps {
        match d {
            Distance::Same => self.hit,
            Distance::SmtSibling => self.smt_sibling,
            Distance::SameSocket => self.same_socket,
            Distance::CrossSocket => self.cross_socket,
        }
    }
}

/// What happened on one line, for the counters of a RunResult.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    pub hits: u64,
    pub transfers: u64,
    pub invalidations: u64,
}

/// One coherent cache line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheLine {
    /// The exclusive (E/M) holder, if any.
    owner: Option<u32>,
    /// Holders of shared copies (empty when owned).
    sharers: CpuMask,
    pub stats: LineStats,
}

impl CacheLine {
    pub fn new() -> CacheLine {
        CacheLine::default()
    }

    pub fn owner(&self) -> Option<u32> {
        self.owner
    }

    pub fn is_shared_by(&self, cpu: u32) -> bool {
        self.sharers.contains(cpu)
    }

    /// A load by `cpu`; returns its latency.
    pub fn read(&mut self, cpu: u32, topo: &Topology, c: &LineCosts) -> Ps {
        if self.owner == Some(cpu) || self.sharers.contains(cpu) {
            self.stats.hits += 1;
            return c.hit;
        }
        let cost = match self.owner.take() {
            Some(o) => {
                self.sharers.set(o);
                self.stats.transfers += 1;
                c.transfer(topo.distance(o, cpu))
            }
            None if self.sharers.is_empty() => c.uncached,
            None => {
                self.stats.transfers += 1;
                c.transfer(nearest(&self.sharers, cpu, topo))
            }
        };
        self.sharers.set(cpu);
        cost
    }

    /// A store or atomic read-modify-write by `cpu`; returns its latency. Every other copy is
    /// invalidated; the cost is that of fetching from (or invalidating) the farthest holder.
    pub fn write(&mut self, cpu: u32, topo: &Topology, c: &LineCosts) -> Ps {
        if self.owner == Some(cpu) {
            self.stats.hits += 1;
            return c.hit;
        }
        if let (Some(o), true) = (self.owner, self.sharers.is_empty()) {
            // The common hand-off of an exclusive line (a queue head, a lock word).
            self.owner = Some(cpu);
            self.stats.invalidations += 1;
            self.stats.transfers += 1;
            return c.transfer(topo.distance(o, cpu));
        }
        let mut others = self.sharers;
        others.clear(cpu);
        let mut invalidated = others.weight() as u64;
        let mut farthest = farthest_of(&others, cpu, topo);
        if let Some(o) = self.owner {
            let d = topo.distance(o, cpu);
            farthest = Some(farthest.map_or(d, |f| f.max(d)));
            invalidated += 1;
        }
        let had_copy = self.sharers.contains(cpu);
        self.owner = Some(cpu);
        self.sharers = CpuMask::new();
        self.stats.invalidations += invalidated;
        match farthest {
            Some(d) => {
                self.stats.transfers += 1;
                c.transfer(d)
            }
            // Upgrade of the only shared copy, or a line nobody caches.
            None if had_copy => {
                self.stats.hits += 1;
                c.hit
            }
            None => c.uncached,
        }
    }
}

/// A line only ever touched by atomic read-modify-writes (a lock-free list head such as a
/// `call_single_queue`): always exclusive at its last writer, so the owner is its whole state.
/// Costs as [`CacheLine::write`] would give for the same sequence of writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RmwLine {
    owner: Option<u32>,
}

impl RmwLine {
    /// An RMW by `cpu`; returns its latency.
    #[inline]
    pub fn rmw(&mut self, cpu: u32, topo: &Topology, c: &LineCosts) -> Ps {
        match self.owner.replace(cpu) {
            Some(o) if o == cpu => c.hit,
            Some(o) => c.transfer(topo.distance(o, cpu)),
            None => c.uncached,
        }
    }
}

/// Distance from `cpu` to the nearest CPU of a non-empty `set` (mask tests, no iteration).
fn nearest(set: &CpuMask, cpu: u32, topo: &Topology) -> Distance {
    if set.weight() <= 4 {
        set.iter().map(|s| topo.distance(s, cpu)).min().expect("a non-empty set")
    } else if set.contains(cpu) {
        Distance::Same
    } else if !set.and(&topo.core_mask(cpu)).is_empty() {
        Distance::SmtSibling
    } else if !set.and(&topo.socket_mask(topo.socket_of(cpu))).is_empty() {
        Distance::SameSocket
    } else {
        Distance::CrossSocket
    }
}

/// Distance from `cpu` to the farthest CPU of `set` (which excludes `cpu`), if any.
fn farthest_of(set: &CpuMask, cpu: u32, topo: &Topology) -> Option<Distance> {
    // Few holders (a csd line, a lock word): ask each; many (mm->tlb_gen): mask tests.
    if set.weight() <= 4 {
        set.iter().map(|s| topo.distance(s, cpu)).max()
    } else if !set.and_not(&topo.socket_mask(topo.socket_of(cpu))).is_empty() {
        Some(Distance::CrossSocket)
    } else if !set.and_not(&topo.core_mask(cpu)).is_empty() {
        Some(Distance::SameSocket)
    } else {
        Some(Distance::SmtSibling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: LineCosts = LineCosts {
        hit: Ps(1_000),
        smt_sibling: Ps(10_000),
        same_socket: Ps(50_000),
        cross_socket: Ps(130_000),
        uncached: Ps(20_000),
    };
    const T: Topology = Topology { sockets: 2, cores_per_socket: 4, threads_per_core: 2 };

    #[test]
    fn exclusive_to_shared_and_back() {
        let mut l = CacheLine::new();
        assert_eq!(l.write(0, &T, &C), C.uncached);
        assert_eq!(l.write(0, &T, &C), C.hit);
        // A same-socket reader pulls the line: E -> S for both.
        assert_eq!(l.read(1, &T, &C), C.same_socket);
        assert_eq!(l.owner(), None);
        assert!(l.is_shared_by(0) && l.is_shared_by(1));
        assert_eq!(l.read(0, &T, &C), C.hit);
        // The initiator's next RMW must invalidate the reader: S -> E.
        assert_eq!(l.write(0, &T, &C), C.same_socket);
        assert_eq!(l.owner(), Some(0));
        assert_eq!(l.stats.invalidations, 1);
    }

    #[test]
    fn a_write_pays_for_the_farthest_sharer() {
        let mut l = CacheLine::new();
        l.write(0, &T, &C);
        l.read(8, &T, &C); // SMT sibling of 0
        l.read(5, &T, &C); // other socket
        assert_eq!(l.write(0, &T, &C), C.cross_socket);
        assert_eq!(l.stats.invalidations, 2);
    }

    #[test]
    fn a_read_is_served_by_the_nearest_sharer_and_upgrades_are_cheap() {
        let mut l = CacheLine::new();
        l.write(4, &T, &C); // socket 1
        l.read(12, &T, &C); // 4's sibling
        l.read(1, &T, &C); // socket 0: nearest holder is cross-socket
        assert_eq!(l.read(9, &T, &C), C.smt_sibling, "cpu 9 is cpu 1's sibling");
        let mut solo = CacheLine::new();
        solo.read(3, &T, &C);
        assert_eq!(solo.write(3, &T, &C), C.hit);
    }

    #[test]
    fn rmw_line_costs_what_a_line_of_writes_costs() {
        let (mut l, mut r) = (CacheLine::new(), RmwLine::default());
        let mut x = 7u64;
        for _ in 0..500 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let cpu = (x >> 33) as u32 % T.cpus();
            assert_eq!(r.rmw(cpu, &T, &C), l.write(cpu, &T, &C));
        }
    }
}
