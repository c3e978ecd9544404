//! Spinlocks as FIFO queues on a coherent line (queued spinlocks hand the lock over in arrival
//! order). Acquiring costs an RMW on the lock word; a waiter spins until the holder's release
//! plus the hand-off transfer of the line to it.

use super::coherence::{CacheLine, LineCosts};
use super::topology::Topology;
use crate::time::Ps;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockStats {
    pub acquisitions: u64,
    pub contended: u64,
    pub spin: Ps,
}

/// A lock's clocks: when it is next free, and when its word's line is busy (for untimed
/// sections: [`SpinLock::timing`], [`SpinLock::rewind`]).
pub type LockTiming = (Ps, (Ps, Ps));

/// A spinlock. Time is the caller's: `acquire` says when the caller will hold it. Because the
/// engine presents requests in time order, chaining each grant after the previous release is
/// exactly a FIFO queue of waiters.
#[derive(Debug, Clone, Default)]
pub struct SpinLock {
    line: CacheLine,
    /// When the current holder (or the last queued waiter) releases.
    free_at: Ps,
    holder: Option<u32>,
    pub stats: LockStats,
}

impl SpinLock {
    pub fn new() -> SpinLock {
        SpinLock::default()
    }

    /// `cpu` asks for the lock at `now` and will hold it for `hold`. Returns when it gets the
    /// lock. Callers must present requests in time order (the engine does).
    pub fn acquire(&mut self, cpu: u32, now: Ps, hold: Ps, topo: &Topology, c: &LineCosts) -> Ps {
        // The RMW that takes the lock is made when it is free (queued spinlocks spin on their
        // own node until handed the lock).
        let rmw = self.line.write(cpu, now.max(self.free_at), topo, c);
        let start = if self.free_at > now {
            self.stats.contended += 1;
            // The waiter gets the line from the releaser once it is free.
            self.free_at + rmw
        } else {
            now + rmw
        };
        self.stats.spin += start - now - rmw;
        self.stats.acquisitions += 1;
        self.free_at = start + hold;
        self.holder = Some(cpu);
        start
    }

    /// Undoes the timing of sections run outside simulated time (a benchmark's untimed setup):
    /// the lock is free again at `free_at` and its word's line is busy as before them, what
    /// [`SpinLock::timing`] said before them; the line keeps its owner.
    pub fn rewind(&mut self, (free_at, busy): LockTiming) {
        self.free_at = free_at;
        self.line.rewind(busy);
    }

    /// When the lock is next free and when its word's line lands (for [`SpinLock::rewind`]).
    pub fn timing(&self) -> LockTiming {
        (self.free_at, self.line.busy())
    }

    /// The holder granted last releases at `at`: for a section whose length is known only once
    /// it has run (a pipe's mutex held across a page allocation). Never moves a release earlier.
    pub fn release_at(&mut self, at: Ps) {
        self.free_at = self.free_at.max(at);
    }

    /// When the lock next becomes free.
    pub fn free_at(&self) -> Ps {
        self.free_at
    }

    pub fn holder(&self) -> Option<u32> {
        self.holder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: LineCosts = LineCosts {
        hit: Ps(1),
        smt_sibling: Ps(10),
        same_socket: Ps(50),
        cross_socket: Ps(130),
        uncached: Ps(20),
        home: Ps::ZERO,
    };
    const T: Topology = Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 1 };

    #[test]
    fn uncontended_then_fifo_handoff() {
        let mut l = SpinLock::new();
        // CPU 0 takes a free lock: one RMW on an uncached line.
        assert_eq!(l.acquire(0, Ps(0), Ps(1_000), &T, &C), Ps(20));
        // CPU 1 arrives while it is held: waits for the release, then pays the transfer.
        assert_eq!(l.acquire(1, Ps(100), Ps(1_000), &T, &C), Ps(1_020 + 50));
        // CPU 2 queues behind CPU 1.
        let t2 = l.acquire(2, Ps(200), Ps(10), &T, &C);
        assert_eq!(t2, Ps(2_070 + 50));
        assert_eq!(l.stats.contended, 2);
        assert_eq!(l.stats.spin, Ps((1_020 - 100) + (2_070 - 200)));
        assert_eq!(l.holder(), Some(2));
    }
}
