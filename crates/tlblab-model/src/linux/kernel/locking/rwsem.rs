//! `mmap_lock` and, from v6.4, each VMA's `vm_lock` (`struct rw_semaphore`,
//! kernel/locking/rwsem.c, v5.18): a reader-writer sleeping lock. The model keeps what decides who runs: readers share it while no writer holds it and
//! nobody waits (a reader that finds waiters queues behind them, so writers do not starve);
//! waiters sleep in FIFO order; a release hands the lock to the head of the queue — a writer, or
//! every reader up to the next writer — and wakes them already holding it.
//!
//! Departures: optimistic spinning (a writer spins while the owner runs, v3.16+) is not modelled;
//! waiters always sleep. `downgrade_write` (munmap's, v4.20+) is a knob of the mm paths.
//! The count word is a coherent line: every acquire and release is an atomic RMW on it.
//!
//! Writer lock stealing (v3.10 lib/rwsem-xadd.c, Michel Lespinasse's "rwsem: implement support
//! for write lock stealing"; docs/references/linux-mm.md#rwsem-slow-path): a release with a
//! writer at the head of the queue only wakes it, without granting the lock; the woken writer
//! takes the lock once it runs if nobody holds it, else sleeps again, and a writer arriving
//! while the lock is free takes it ahead of the queue. Readers are still granted the lock by the
//! waker, every reader up to the next writer. [`RwSem::steal`] selects it; before v3.10 (and in
//! the model's default) a release hands the lock to a writer at the head.

use std::collections::VecDeque;

use crate::hw::coherence::CacheLine;
use crate::hw::lock::SpinLock;

/// A task waiting for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiter {
    pub task: usize,
    pub write: bool,
}

#[derive(Debug, Clone, Default)]
pub struct RwSem {
    readers: u32,
    writer: Option<usize>,
    waiters: VecDeque<Waiter>,
    /// The count word (`sem->count`).
    pub line: CacheLine,
    /// `sem->wait_lock`: the spinlock the slow paths queue and wake under (used with
    /// `rwsem_slowpath`; in v3.x it sits beside the count, here it has a line of its own).
    pub wait_lock: SpinLock,
    /// v3.10+: writers are woken, not granted, and may steal the lock (see the module's doc).
    pub steal: bool,
    /// The writer at the head of the queue was woken (steal mode) and has not run yet.
    head_woken: bool,
}

impl RwSem {
    /// `down_read` / `down_write` by `task`: `true` if it holds the lock now, `false` if it
    /// queued and must sleep until a release hands the lock over.
    pub fn acquire(&mut self, task: usize, write: bool) -> bool {
        let free = if write { self.readers == 0 && self.writer.is_none() } else { self.writer.is_none() };
        // v3.10 rwsem_down_write_failed: a writer that finds the lock free takes it even with
        // waiters queued (`rwsem_try_write_lock` on a count of RWSEM_WAITING_BIAS).
        let steals = self.steal && write && free;
        if free && (self.waiters.is_empty() || steals) {
            if write {
                self.writer = Some(task);
            } else {
                self.readers += 1;
            }
            true
        } else {
            self.waiters.push_back(Waiter { task, write });
            false
        }
    }

    /// The woken writer `task` (steal mode), running again: takes the lock if nobody holds it
    /// (it leaves the queue), else stays at the head, asleep until the next release wakes it.
    pub fn retry_write(&mut self, task: usize) -> bool {
        debug_assert_eq!(self.waiters.front().map(|w| w.task), Some(task), "a woken writer is the head");
        self.head_woken = false;
        if self.readers == 0 && self.writer.is_none() {
            self.waiters.pop_front();
            self.writer = Some(task);
            return true;
        }
        false
    }

    /// `down_read_trylock`: takes the lock for read only if no writer holds it and nobody waits
    /// (v5.18+ `RWSEM_READ_FAILED_MASK` includes the waiters flag); never queues.
    pub fn try_read(&mut self) -> bool {
        let ok = self.writer.is_none() && self.waiters.is_empty();
        self.readers += ok as u32;
        ok
    }

    /// `downgrade_write` by the writer `task`: it holds the lock for read now, and the readers
    /// at the head of the queue (up to the next writer) get it too; they are appended to `woken`.
    pub fn downgrade(&mut self, task: usize, woken: &mut Vec<usize>) {
        assert_eq!(self.writer, Some(task), "downgrade_write by a task that does not hold the lock");
        self.writer = None;
        self.readers = 1;
        while let Some(w) = self.waiters.front().filter(|w| !w.write) {
            self.readers += 1;
            woken.push(w.task);
            self.waiters.pop_front();
        }
    }

    /// `up_read` / `up_write`; appends the tasks that now hold the lock (to be woken) to `woken`.
    pub fn release(&mut self, task: usize, write: bool, woken: &mut Vec<usize>) {
        if write {
            assert_eq!(self.writer, Some(task), "up_write by a task that does not hold the lock");
            self.writer = None;
        } else {
            assert!(self.readers > 0, "up_read of a lock no reader holds");
            self.readers -= 1;
        }
        if self.readers > 0 || self.writer.is_some() {
            return;
        }
        match self.waiters.front() {
            // v3.10+: wake the writer, do not grant (`wake_up_process` of a task already woken
            // does nothing).
            Some(w) if w.write && self.steal => {
                if !self.head_woken {
                    self.head_woken = true;
                    woken.push(w.task);
                }
            }
            Some(w) if w.write => {
                self.writer = Some(w.task);
                woken.push(w.task);
                self.waiters.pop_front();
            }
            _ => {
                while let Some(w) = self.waiters.front().filter(|w| !w.write) {
                    self.readers += 1;
                    woken.push(w.task);
                    self.waiters.pop_front();
                }
            }
        }
    }

    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    pub fn readers(&self) -> u32 {
        self.readers
    }

    pub fn writer(&self) -> Option<usize> {
        self.writer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_share_writers_exclude() {
        let mut s = RwSem::default();
        assert!(s.acquire(1, false) && s.acquire(2, false));
        assert!(!s.acquire(3, true), "a writer waits for the readers");
        assert!(!s.acquire(4, false), "a reader queues behind a waiting writer");
        let mut woken = Vec::new();
        s.release(1, false, &mut woken);
        assert!(woken.is_empty());
        s.release(2, false, &mut woken);
        assert_eq!((woken.as_slice(), s.writer()), (&[3][..], Some(3)));
        woken.clear();
        s.release(3, true, &mut woken);
        assert_eq!((woken.as_slice(), s.readers()), (&[4][..], 1));
    }

    #[test]
    fn a_release_wakes_every_reader_up_to_the_next_writer() {
        let mut s = RwSem::default();
        assert!(s.acquire(0, true));
        for (t, w) in [(1, false), (2, false), (3, true), (4, false)] {
            assert!(!s.acquire(t, w));
        }
        let mut woken = Vec::new();
        s.release(0, true, &mut woken);
        assert_eq!(woken, [1, 2]);
        assert_eq!((s.readers(), s.waiting()), (2, 2));
    }

    #[test]
    fn trylock_fails_on_a_writer_or_a_waiter_and_never_queues() {
        let mut s = RwSem::default();
        assert!(s.try_read());
        assert!(!s.acquire(1, true), "the writer waits for the trylock's reader");
        assert!(!s.try_read(), "a waiting writer fails the trylock");
        assert_eq!((s.readers(), s.waiting()), (1, 1));
        let mut woken = Vec::new();
        s.release(0, false, &mut woken);
        assert_eq!((woken.as_slice(), s.writer()), (&[1][..], Some(1)));
        assert!(!s.try_read(), "a held writer fails the trylock");
    }

    #[test]
    fn a_woken_writer_is_not_granted_and_a_running_writer_steals_the_lock() {
        let mut s = RwSem { steal: true, ..RwSem::default() };
        assert!(s.acquire(0, true));
        assert!(!s.acquire(1, true) && !s.acquire(2, false));
        let mut woken = Vec::new();
        s.release(0, true, &mut woken);
        assert_eq!((woken.as_slice(), s.writer(), s.waiting()), (&[1][..], None, 2), "woken, not granted");
        assert!(s.acquire(3, true), "a writer finding the lock free steals it past the queue");
        woken.clear();
        assert!(!s.retry_write(1), "the woken writer finds it stolen and sleeps again");
        assert!(!s.acquire(4, false), "a reader queues while the woken writer has not run");
        s.release(3, true, &mut woken);
        assert_eq!(woken, [1]);
        woken.clear();
        assert!(s.retry_write(1), "woken again, it finds the lock free");
        s.release(1, true, &mut woken);
        assert_eq!((woken.as_slice(), s.readers()), (&[2, 4][..], 2), "readers are granted in a batch");
    }

    #[test]
    fn downgrade_lets_the_queued_readers_in_but_not_past_a_writer() {
        let mut s = RwSem::default();
        assert!(s.acquire(0, true));
        for (t, w) in [(1, false), (2, false), (3, true), (4, false)] {
            assert!(!s.acquire(t, w));
        }
        let mut woken = Vec::new();
        s.downgrade(0, &mut woken);
        assert_eq!((woken.as_slice(), s.readers(), s.writer(), s.waiting()), (&[1, 2][..], 3, None, 2));
        woken.clear();
        for t in [0, 1, 2] {
            s.release(t, false, &mut woken);
        }
        assert_eq!((woken.as_slice(), s.writer()), (&[3][..], Some(3)));
    }
}
