//! Contended cache lines (MESI reduced to what the kernel's hot lines need): each line has either
//! one exclusive owner or a set of sharers. A read by a non-holder pulls the line from the owner
//! (E/M -> S); a write or atomic RMW by a non-owner invalidates every other copy (S -> E). The
//! cost is a local hit or a transfer whose latency depends on how far the data comes from.
//!
//! This is where the `mm->context.tlb_gen` ping-pong of seed 002 comes from: every flush
//! initiator's `atomic64_inc_return` takes the line exclusive and every remote
//! `flush_tlb_func` that reads it drags it back to shared.
//!
//! A line has occupancy: it is in one place at a time. A request that needs the line moved
//! (a write, or a read of a line some core holds exclusive) waits for the transfer before it to
//! land, then moves it; so concurrent requests queue in the order they are presented (the
//! engine presents them in time order), each paying its own transfer by distance. A read of a
//! line already shared is served beside the other readers (a clean copy in the shared cache or
//! a sharer forwards it; nothing has to be invalidated), after any transfer still in flight.
//! Hits do not occupy the line. This is the serialisation behind lock-word and counter
//! ping-pong (Intel's coherence engine handles one ownership transfer of a line at a time; see
//! docs/references/machine-costs.md on c2c latencies).
//!
//! A line also has a home: the caching agent of its address on each socket (an L3 slice's Cbo
//! on Haswell-EP, a CHA on Skylake-SP), which takes one request to one address at a time (a
//! second one is retried until the first completes:
//! docs/references/machine-costs.md#home-serialisation). So a read of an already shared line,
//! which moves no copy, still holds its socket's home for [`LineCosts::home`] (for its whole
//! transfer when its socket holds no copy yet), and the next request to the line from that
//! socket waits for it; a request that moves the line waits for every socket's home. With
//! `home` zero (a profile without the figure) reads of a shared line queue for nothing.

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
    /// How long a socket's caching agent holds a read of a line it serves from that socket's
    /// cache (zero: no home rule).
    pub home: Ps,
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

/// Line fill buffers per core: how many missed lines a core's loads fetch at once
/// (docs/references/machine-costs.md#fill-buffers: 10 on Intel's cores from Nehalem to
/// Haswell, 12 from Skylake). A copy's loads are independent, so a copy of lines another core
/// wrote waits for one transfer per this many lines.
pub const FILL_BUFFERS: u64 = 10;

/// What loading `lines` lines `from` another CPU's cache costs CPU `to` (a copy's loads,
/// overlapped [`FILL_BUFFERS`] at a time); nothing when `from` is `to`.
pub fn copy_lines_from(from: u32, to: u32, lines: u64, topo: &Topology, c: &LineCosts) -> Ps {
    match topo.distance(from, to) {
        Distance::Same => Ps::ZERO,
        d => c.transfer(d) * lines.div_ceil(FILL_BUFFERS),
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
    /// When the last transfer presented started and when it lands: the line is in flight
    /// between the two.
    busy: (Ps, Ps),
    /// Per socket, when the last shared read its home holds started and when the home frees.
    home: [(Ps, Ps); HOME_SOCKETS],
    pub stats: LineStats,
}

/// Sockets with a home window of their own: eight, the most sockets an x86 server joins without
/// a node controller (Xeon Scalable Platinum, 8S; docs/references/machine-costs.md#home-serialisation).
/// A profile with more gives its further sockets the eighth's window.
const HOME_SOCKETS: usize = 8;

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

    /// A load by `cpu` at `at`; returns its latency, the wait for a transfer in flight
    /// included.
    pub fn read(&mut self, cpu: u32, at: Ps, topo: &Topology, c: &LineCosts) -> Ps {
        let start = queued_start(self.busy, at);
        if self.owner == Some(cpu) || self.sharers.contains(cpu) {
            self.stats.hits += 1;
            return start - at + c.hit;
        }
        let (start, cost) = match self.owner.take() {
            Some(o) => {
                // E/M -> S: the owner's copy moves; the line is busy until it lands.
                let start = self.after_homes(start, at, topo);
                self.sharers.set(o);
                self.stats.transfers += 1;
                let cost = c.transfer(topo.distance(o, cpu));
                self.busy = (start, start + cost);
                (start, cost)
            }
            None if self.sharers.is_empty() => (start, c.uncached),
            None => {
                // Already shared: served beside the other readers, but one request at a time
                // at this socket's home (a sibling's copy is the core's own cache: no home).
                self.stats.transfers += 1;
                let d = nearest(&self.sharers, cpu, topo);
                let cost = c.transfer(d);
                if c.home == Ps::ZERO || d == Distance::SmtSibling {
                    (start, cost)
                } else {
                    let h = home_index(topo, cpu);
                    let start = start.max(queued_start(self.home[h], at));
                    let held = if d == Distance::CrossSocket { cost } else { c.home };
                    self.home[h] = (start, start + held);
                    (start, cost)
                }
            }
        };
        self.sharers.set(cpu);
        start - at + cost
    }

    /// When a request that moves the line, made at `at` and not before `start`, gets past
    /// every socket's home: after the shared reads they hold (a write invalidates them all).
    fn after_homes(&self, start: Ps, at: Ps, topo: &Topology) -> Ps {
        let used = (topo.sockets as usize).clamp(1, HOME_SOCKETS);
        self.home[..used].iter().fold(start, |s, &w| s.max(queued_start(w, at)))
    }

    /// A load (`write` false) or store by `cpu` at `at`: its latency beyond a cache hit (what a
    /// per-call cost timed on one thread, the line in its cache, leaves out).
    pub fn access_past_hit(&mut self, cpu: u32, at: Ps, write: bool, topo: &Topology, c: &LineCosts) -> Ps {
        let d = if write { self.write(cpu, at, topo, c) } else { self.read(cpu, at, topo, c) };
        d.saturating_sub(c.hit)
    }

    /// A store or atomic read-modify-write by `cpu` at `at`; returns its latency, the wait for
    /// the transfers queued before it included. Every other copy is invalidated; the transfer
    /// costs the fetch from (or invalidation of) the farthest holder.
    pub fn write(&mut self, cpu: u32, at: Ps, topo: &Topology, c: &LineCosts) -> Ps {
        let start = queued_start(self.busy, at);
        let (cost, moved) = self.take_exclusive(cpu, topo, c);
        let start = if moved { self.after_homes(start, at, topo) } else { start };
        if moved {
            self.busy = (start, start + cost);
        }
        start - at + cost
    }

    /// The state change of a write by `cpu`: the cost, and whether the line had to move.
    fn take_exclusive(&mut self, cpu: u32, topo: &Topology, c: &LineCosts) -> (Ps, bool) {
        if self.owner == Some(cpu) {
            self.stats.hits += 1;
            return (c.hit, false);
        }
        if let (Some(o), true) = (self.owner, self.sharers.is_empty()) {
            // The common hand-off of an exclusive line (a queue head, a lock word).
            self.owner = Some(cpu);
            self.stats.invalidations += 1;
            self.stats.transfers += 1;
            return (c.transfer(topo.distance(o, cpu)), true);
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
                (c.transfer(d), true)
            }
            // Upgrade of the only shared copy, or a line nobody caches.
            None if had_copy => {
                self.stats.hits += 1;
                (c.hit, false)
            }
            None => (c.uncached, true),
        }
    }

    /// When the last transfer presented started and lands.
    pub fn busy(&self) -> (Ps, Ps) {
        self.busy
    }

    /// Undoes the timing of accesses made outside simulated time (a benchmark's untimed
    /// set-up): the line is busy as [`CacheLine::busy`] said before them; the holders stay.
    /// The homes are not rewound: only reads of a shared line hold them, and the untimed
    /// set-ups (lock words, a zone's data line) write.
    pub fn rewind(&mut self, busy: (Ps, Ps)) {
        self.busy = busy;
    }
}

/// A line only ever touched by atomic read-modify-writes (a lock-free list head such as a
/// `call_single_queue`): always exclusive at its last writer, so the owner and when its
/// transfer lands are its whole state. Costs as [`CacheLine::write`] would give for the same
/// sequence of writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RmwLine {
    owner: Option<u32>,
    busy: (Ps, Ps),
}

impl RmwLine {
    /// An RMW by `cpu` at `at`; returns its latency, the wait for earlier transfers included.
    #[inline]
    pub fn rmw(&mut self, cpu: u32, at: Ps, topo: &Topology, c: &LineCosts) -> Ps {
        let start = queued_start(self.busy, at);
        let cost = match self.owner.replace(cpu) {
            Some(o) if o == cpu => return start - at + c.hit,
            Some(o) => c.transfer(topo.distance(o, cpu)),
            None => c.uncached,
        };
        self.busy = (start, start + cost);
        start - at + cost
    }
}

/// Which home window serves `cpu`'s socket.
#[inline]
fn home_index(topo: &Topology, cpu: u32) -> usize {
    (topo.socket_of(cpu) as usize).min(HOME_SOCKETS - 1)
}

/// When a request made at `at` gets a line last busy over `busy`: after that transfer lands.
/// The engine presents a step's accesses when the step runs, so a later access of a long step
/// (a sender's loop over its targets) can be presented before another CPU's earlier one; a
/// request made before the last transfer started went first on the machine, and is served
/// without waiting for it.
#[inline]
fn queued_start((from, until): (Ps, Ps), at: Ps) -> Ps {
    if at < from {
        at
    } else {
        at.max(until)
    }
}

/// Distance from `cpu` to the nearest CPU of a non-empty `set`: mask tests, nearest first. The
/// least `distance` over the set's CPUs at any size, without counting or visiting them (a
/// `mm->tlb_gen` line read by every CPU of a shootdown in turn gains a holder at each read, so
/// there is no answer to keep between two reads).
fn nearest(set: &CpuMask, cpu: u32, topo: &Topology) -> Distance {
    if set.contains(cpu) {
        Distance::Same
    } else if topo.in_core(set, cpu) > 0 {
        Distance::SmtSibling
    } else if topo.any_in_socket(set, topo.socket_of(cpu)) {
        Distance::SameSocket
    } else {
        Distance::CrossSocket
    }
}

/// Distance from `cpu` to the farthest CPU of `set` (which excludes `cpu`), if any.
fn farthest_of(set: &CpuMask, cpu: u32, topo: &Topology) -> Option<Distance> {
    // Few holders (a csd line, a lock word): ask each; many (mm->tlb_gen): mask tests.
    let n = set.weight();
    if n <= 4 {
        set.iter().map(|s| topo.distance(s, cpu)).max()
    } else if n > topo.in_socket(set, topo.socket_of(cpu)) {
        Some(Distance::CrossSocket)
    } else if n > topo.in_core(set, cpu) {
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
        home: Ps::ZERO,
    };
    /// The same costs with a home that holds a shared read for 10 ns.
    const H: LineCosts = LineCosts { home: Ps(10_000), ..C };
    const T: Topology = Topology { sockets: 2, cores_per_socket: 4, threads_per_core: 2 };

    /// A time 1 ms after the last one asked for: accesses far enough apart that none waits.
    fn later() -> Ps {
        static NOW: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ps(NOW.fetch_add(1_000_000_000, std::sync::atomic::Ordering::Relaxed) + 1_000_000_000)
    }

    /// The mask tests give the least distance over the set's CPUs, for sets of any size.
    #[test]
    fn nearest_is_the_closest_holder() {
        let t = Topology { sockets: 2, cores_per_socket: 28, threads_per_core: 2 };
        let mut x = 11u64;
        for n in 1..40 {
            let mut set = CpuMask::new();
            for _ in 0..n {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                set.set((x >> 33) as u32 % t.cpus());
            }
            for cpu in 0..t.cpus() {
                let want = set.iter().map(|s| t.distance(s, cpu)).min().unwrap();
                assert_eq!(nearest(&set, cpu, &t), want, "cpu {cpu}, {} holders", set.weight());
            }
        }
    }

    #[test]
    fn exclusive_to_shared_and_back() {
        let mut l = CacheLine::new();
        assert_eq!(l.write(0, later(), &T, &C), C.uncached);
        assert_eq!(l.write(0, later(), &T, &C), C.hit);
        // A same-socket reader pulls the line: E -> S for both.
        assert_eq!(l.read(1, later(), &T, &C), C.same_socket);
        assert_eq!(l.owner(), None);
        assert!(l.is_shared_by(0) && l.is_shared_by(1));
        assert_eq!(l.read(0, later(), &T, &C), C.hit);
        // The initiator's next RMW must invalidate the reader: S -> E.
        assert_eq!(l.write(0, later(), &T, &C), C.same_socket);
        assert_eq!(l.owner(), Some(0));
        assert_eq!(l.stats.invalidations, 1);
    }

    #[test]
    fn a_write_pays_for_the_farthest_sharer() {
        let mut l = CacheLine::new();
        l.write(0, later(), &T, &C);
        l.read(8, later(), &T, &C); // SMT sibling of 0
        l.read(5, later(), &T, &C); // other socket
        assert_eq!(l.write(0, later(), &T, &C), C.cross_socket);
        assert_eq!(l.stats.invalidations, 2);
    }

    #[test]
    fn a_read_is_served_by_the_nearest_sharer_and_upgrades_are_cheap() {
        let mut l = CacheLine::new();
        l.write(4, later(), &T, &C); // socket 1
        l.read(12, later(), &T, &C); // 4's sibling
        l.read(1, later(), &T, &C); // socket 0: nearest holder is cross-socket
        assert_eq!(l.read(9, later(), &T, &C), C.smt_sibling, "cpu 9 is cpu 1's sibling");
        let mut solo = CacheLine::new();
        solo.read(3, later(), &T, &C);
        assert_eq!(solo.write(3, later(), &T, &C), C.hit);
    }

    #[test]
    fn concurrent_transfers_queue_and_shared_reads_do_not() {
        let mut l = CacheLine::new();
        assert_eq!(l.write(0, Ps::ZERO, &T, &C), C.uncached);
        // Two other CPUs ask for it exclusive at the same instant: the second waits for the first.
        assert_eq!(l.write(1, Ps(20_000), &T, &C), C.same_socket);
        assert_eq!(l.write(2, Ps(20_000), &T, &C), C.same_socket + C.same_socket);
        // A reader arriving before that lands waits for it, then pulls the line to shared.
        let r = l.read(3, Ps(100_000), &T, &C);
        assert_eq!(r, Ps(120_000) - Ps(100_000) + C.same_socket);
        // Once shared, readers are served side by side (each its own transfer, no queue).
        let at = Ps(500_000);
        assert_eq!(l.read(1, at, &T, &C), C.same_socket);
        assert_eq!(l.read(0, at, &T, &C), C.same_socket);
        // A hit waits for nothing it has not already got.
        assert_eq!(l.read(0, at, &T, &C), C.hit);
        // An RMW line queues the same way.
        let mut r = RmwLine::default();
        assert_eq!(r.rmw(0, Ps::ZERO, &T, &C), C.uncached);
        assert_eq!(r.rmw(1, Ps::ZERO, &T, &C), C.uncached + C.same_socket);
        assert_eq!(r.rmw(1, Ps(30_000), &T, &C), C.uncached + C.same_socket - Ps(30_000) + C.hit);
        // A request presented late but made before the last transfer started went first.
        assert_eq!(r.rmw(2, Ps(1), &T, &C), C.same_socket);
    }

    #[test]
    fn rmw_line_costs_what_a_line_of_writes_costs() {
        let (mut l, mut r) = (CacheLine::new(), RmwLine::default());
        let mut x = 7u64;
        for _ in 0..500 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let cpu = (x >> 33) as u32 % T.cpus();
            assert_eq!(r.rmw(cpu, later(), &T, &C), l.write(cpu, later(), &T, &C));
        }
    }
    #[test]
    fn shared_reads_queue_at_their_socket_home() {
        let mut l = CacheLine::new();
        l.write(0, Ps::ZERO, &T, &H);
        // CPU 1 pulls it to shared (an owner transfer: busy until 50 ns + 20 ns).
        assert_eq!(l.read(1, Ps(20_000), &T, &H), C.same_socket);
        // Three same-socket readers at one instant after that: each its own transfer, one after
        // another at socket 0's home, 10 ns apart.
        let at = Ps(500_000);
        assert_eq!(l.read(2, at, &T, &H), C.same_socket);
        assert_eq!(l.read(3, at, &T, &H), H.home + C.same_socket);
        // CPU 8 is CPU 0's sibling: the core's own cache, no home.
        assert_eq!(l.read(8, at, &T, &H), C.smt_sibling);
        // Socket 1's first reader finds no copy there: it holds its own home for the transfer,
        // and does not wait for socket 0's.
        assert_eq!(l.read(4, at, &T, &H), C.cross_socket);
        assert_eq!(l.read(5, at, &T, &H), C.cross_socket + C.same_socket);
        // Without a home figure the same readers are served side by side.
        let mut m = CacheLine::new();
        m.write(0, Ps::ZERO, &T, &C);
        m.read(1, Ps(20_000), &T, &C);
        assert_eq!(m.read(2, at, &T, &C), C.same_socket);
        assert_eq!(m.read(3, at, &T, &C), C.same_socket);
    }

    #[test]
    fn every_socket_of_a_four_socket_machine_has_its_own_home() {
        const T4: Topology = Topology { sockets: 4, cores_per_socket: 2, threads_per_core: 1 };
        let mut l = CacheLine::new();
        l.write(0, Ps::ZERO, &T4, &H);
        l.read(1, Ps(20_000), &T4, &H);
        let at = Ps(500_000);
        // The first reader of sockets 1, 2 and 3 each holds its own socket's home for its
        // transfer: none waits for another socket's.
        for cpu in [2, 4, 6] {
            assert_eq!(l.read(cpu, at, &T4, &H), C.cross_socket, "CPU {cpu}");
        }
        // Socket 3's second reader waits for its own home only.
        assert_eq!(l.read(7, at, &T4, &H), C.cross_socket + C.same_socket);
        // A write waits for all four homes.
        assert_eq!(l.write(0, at, &T4, &H), C.cross_socket + C.cross_socket);
    }

    #[test]
    fn a_write_waits_for_the_reads_its_homes_hold() {
        let mut l = CacheLine::new();
        l.write(0, Ps::ZERO, &T, &H);
        l.read(1, Ps(20_000), &T, &H);
        let at = Ps(500_000);
        // Socket 0's home is held until at + 10 ns, socket 1's until at + 130 ns.
        l.read(2, at, &T, &H);
        l.read(4, at, &T, &H);
        // CPU 3's RMW must invalidate every copy: it goes after both homes free.
        assert_eq!(l.write(3, at, &T, &H), C.cross_socket + C.cross_socket);
        // A hit waits for no home.
        assert_eq!(l.write(3, Ps(2_000_000), &T, &H), C.hit);
    }
}
