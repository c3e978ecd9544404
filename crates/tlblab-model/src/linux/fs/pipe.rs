//! Anonymous pipes (fs/pipe.c, v4.9): what hackbench's `-pipe` mode runs through.
//!
//! A pipe is a ring of `PIPE_DEF_BUFFERS` (16) buffers, each a page with an offset and a length.
//! `pipe_write` first tries to merge a short write into the last buffer when the page has room
//! (`PIPE_BUF_FLAG_CAN_MERGE` on anonymous pipes); otherwise it takes a new slot, with the page
//! `pipe->tmp_page` caches if there is one, else a fresh `alloc_page(GFP_HIGHUSER)` (through
//! linux/include/linux/gfp.rs: the per-CPU lists, the zone lock). `pipe_read` copies out of the
//! oldest buffers and releases a buffer it drained (`anon_pipe_buf_release`): the page becomes
//! `tmp_page` if
//! none is cached, else it is freed (`put_page` -> `__free_page` on the reader's CPU). So a
//! reader that keeps up recycles one page forever; a pipe that fills allocates on the writer's
//! CPU and frees on the reader's: the producer/consumer pattern seed 004 is about, at order 0.
//!
//! Blocking, by `[fs] pipe_wait` (docs/references/linux-6x.md#pipe-wake-ups):
//! - `4.9` follows `pipe_wait` (v4.9): one wait queue per pipe (`pipe->wait`) for readers and
//!   writers alike, entered with `prepare_to_wait` (non-exclusive), so every wake-up
//!   (`wake_up_interruptible_sync_poll`) wakes every sleeper, reader or writer; a writer that
//!   loses the race for the freed slot sleeps again. A writer wakes the queue after every write
//!   that added data (merge or new buffer); a reader after it released a buffer.
//! - `5.6` (v5.6..v6.18): readers sleep on `rd_wait`, writers on `wr_wait`, both exclusive, so a
//!   wake-up wakes the first sleeper only. A write wakes a reader only if the pipe was empty when
//!   it took the mutex (`was_empty`); a read wakes a writer only if a buffer it released left a
//!   full pipe (`wake_writer`). A task woken there passes the wake-up on when it leaves what it
//!   came for behind (`wake_next_reader` if data remains, `wake_next_writer` if room remains).
//!
//! `pipe->mutex` is modelled as a FIFO lock on its line (hw/lock.rs) held for the section's work:
//! v4.9 mutexes spin on a running owner (`mutex_optimistic_spin`) and no holder here sleeps with
//! it, so waiting for it is spinning. Departures: the fd lookup and VFS layers are one per-call
//! cost (`[ipc]` in the profile); the waker pays `try_to_wake_up` for each sleeper it wakes.
//!
//! The lines writer and reader share (docs/references/linux-mm.md#pipe-lines): `[ipc]` is timed
//! with one thread, every line in its cache, so what a pipe used from two CPUs adds is the
//! lines that move between them (hw/coherence.rs). Besides the mutex's word (its lock's line),
//! the line of `pipe_inode_info` with the ring's state (`nrbufs`, `curbuf`, `tmp_page`), which
//! a write that takes a slot and a read that releases one store to and every call reads; the
//! `pipe_buffer` entry a call works on (16 entries of 40 bytes, ten lines, by ring slot), whose
//! `offset` and `len` both sides store to; and the message's bytes, which the reader's copy
//! loads from the writer's cache (its loads overlap: one transfer per
//! [`crate::hw::coherence::FILL_BUFFERS`] lines). The writer's stores to lines the reader last
//! read drain from its store buffer off the call's path (not charged).

use std::collections::VecDeque;

use crate::attribution::Bucket;
use crate::hw::coherence::{copy_lines_from, CacheLine};
use crate::hw::lock::SpinLock;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::include::linux::mm_types::PAGE_SIZE;
use crate::linux::lib::iov_iter::CopyRate;
use crate::linux::Continuation;
use crate::linux::Kernel;
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

/// How pipe sleepers are woken (`[fs] pipe_wait`; see the module comment).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PipeWait {
    /// One non-exclusive queue, every event wakes everyone (v2.6..v5.4).
    #[default]
    #[serde(rename = "4.9")]
    V4_9,
    /// Split exclusive queues, woken on the empty and full edges (v5.6..v6.18).
    #[serde(rename = "5.6")]
    V5_6,
}

impl PipeWait {
    pub fn parse(v: &str) -> Option<PipeWait> {
        match v {
            "4.9" => Some(PipeWait::V4_9),
            "5.6" => Some(PipeWait::V5_6),
            _ => None,
        }
    }
}

/// `[fs]` knobs of a kernel preset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FsKnobs {
    /// Absent from results written before it (read as v4.9's rule).
    #[serde(default)]
    pub pipe_wait: PipeWait,
}

impl FsKnobs {
    /// Every knob at its blank value: left out of results.
    pub fn is_blank(&self) -> bool {
        *self == FsKnobs::default()
    }
}

/// `PIPE_DEF_BUFFERS` (include/linux/pipe_fs_i.h, v4.9).
pub const PIPE_DEF_BUFFERS: usize = 16;
/// `sizeof(struct pipe_buffer)` on 64-bit (page, offset, len, ops, flags, private: v4.9 to v6.x).
const PIPE_BUFFER_BYTES: usize = 40;
/// The lines the ring's `pipe_buffer` array spans.
const SLOT_LINES: usize = (PIPE_DEF_BUFFERS * PIPE_BUFFER_BYTES).div_ceil(64);

crate::linux::vmstat::counters! {
    /// Pipes, counted.
    Counters {
        /// `pipe_write` calls that completed.
        pipe_writes,
        /// Writes merged into the last buffer's page.
        pipe_merges,
        /// New buffers whose page came from `pipe->tmp_page`.
        pipe_tmp_page_reuses,
        /// New buffers whose page came from `alloc_page`.
        pipe_page_allocs,
        /// `pipe_read` calls that completed.
        pipe_reads,
        /// Drained buffers whose page became `pipe->tmp_page`.
        pipe_tmp_page_caches,
        /// Drained buffers whose page was freed.
        pipe_page_frees,
        /// Tasks that slept in `pipe_wait`: readers on an empty pipe, writers on a full one.
        pipe_read_sleeps,
        pipe_write_sleeps,
        /// Sleepers a pipe wake-up woke.
        pipe_wakeups,
    }
}

/// What a pipe call costs besides the page allocator, the copy and the lock (`[ipc]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// `sys_write` -> `vfs_write` -> `pipe_write`, without entry/exit, copy, allocation, lock.
    pub write: Ps,
    /// `sys_read` -> `vfs_read` -> `pipe_read`, likewise.
    pub read: Ps,
    /// Copying between user space and a pipe page (linux/lib/iov_iter.rs).
    pub copy: CopyRate,
}

/// Costed only where the profile has `[ipc]`.
impl crate::linux::boot::FromSection for Costs {
    fn from_section(p: &MachineProfile) -> Result<Costs, ProfileError> {
        let ipc = p.ipc()?;
        let mhz = p.clock_mhz();
        Ok(Costs {
            write: Ps::from_cycles(ipc.pipe_write_cycles.value, mhz),
            read: Ps::from_cycles(ipc.pipe_read_cycles.value, mhz),
            copy: CopyRate::from_profile(p),
        })
    }
}

/// One `struct pipe_buffer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipeBuffer {
    pub pfn: u64,
    pub offset: u64,
    pub len: u64,
}

/// `struct pipe_inode_info`.
#[derive(Debug, Clone, Default)]
pub struct Pipe {
    /// The occupied slots, oldest first (`curbuf` .. `curbuf + nrbufs`).
    pub bufs: VecDeque<PipeBuffer>,
    /// `pipe->curbuf`: the ring slot of `bufs[0]`.
    pub curbuf: usize,
    pub tmp_page: Option<u64>,
    /// `pipe->wait` (v4.9): sleeping tasks, readers and writers alike; `pipe->rd_wait` (v5.6+):
    /// sleeping readers, in the order they slept.
    pub waiters: Vec<usize>,
    /// `pipe->wr_wait` (v5.6+): sleeping writers, in the order they slept.
    pub wr_waiters: Vec<usize>,
    /// `pipe->mutex`.
    pub mutex: SpinLock,
    /// The line with the ring's state (`nrbufs`, `curbuf`, `tmp_page`).
    pub ring: CacheLine,
    /// The lines of the `pipe_buffer` array, by slot (`slot * 40 / 64`).
    pub slots: [CacheLine; SLOT_LINES],
    /// The unread bytes in order, as (bytes, the CPU whose write put them there).
    pub written: VecDeque<(u64, u32)>,
}

impl Pipe {
    /// Bytes waiting to be read.
    pub fn bytes(&self) -> u64 {
        self.bufs.iter().map(|b| b.len).sum()
    }
}

/// A pipe call's continuation: the call again after its task slept in `pipe_wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// `woken`: the call slept and was woken (v5.6+: it then passes the wake-up on).
pub enum Step {
    Write { pipe: u32, len: u32, woken: bool },
    Read { pipe: u32, len: u32, woken: bool },
}

/// How a write finds its room (the decision of `pipe_write`, v4.9, for one write of `len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    /// Into the last buffer's page: it can merge and `offset + len <= PAGE_SIZE`.
    Merge,
    /// A new slot: fewer than `PIPE_DEF_BUFFERS` buffers are in use.
    NewBuffer,
    /// Full: sleep.
    Full,
}

fn room(p: &Pipe, len: u64) -> Room {
    if let Some(last) = p.bufs.back() {
        // "We try to merge small writes": chars = total_len & (PAGE_SIZE - 1).
        let chars = len & (PAGE_SIZE - 1);
        if chars != 0 && last.offset + last.len + chars <= PAGE_SIZE {
            return Room::Merge;
        }
    }
    if p.bufs.len() < PIPE_DEF_BUFFERS {
        Room::NewBuffer
    } else {
        Room::Full
    }
}

impl Kernel {
    /// `pipe()`: a new, empty pipe; returns its id.
    pub fn add_pipe(&mut self) -> u32 {
        self.fs.pipes.push(Pipe::default());
        (self.fs.pipes.len() - 1) as u32
    }

    /// One `write` of `len` bytes by task `t` to `pipe` if it would not sleep: for a workload's
    /// untimed setup ([`Kernel::untimed`]) building the buffers its writers fill. Returns
    /// whether it wrote.
    pub fn pipe_write_if_room(&mut self, ctx: &mut Ctx, t: usize, pipe: u32, len: u32) -> bool {
        if room(&self.fs.pipes[pipe as usize], len as u64) == Room::Full {
            return false;
        }
        self.pipe_write(ctx, t, pipe, len);
        true
    }

    fn pipe_costs(&self) -> Costs {
        self.costs.pipe.expect("a pipe needs the profile's [ipc] section (run::run checks it)")
    }

    /// `write(fd, buf, len)` on a pipe, from task `t`: the system call entry, then the body.
    pub(in crate::linux) fn pipe_write(&mut self, ctx: &mut Ctx, t: usize, pipe: u32, len: u32) -> Ps {
        self.enter_syscall(ctx, |k, ctx, at| k.pipe_write_body(ctx, t, pipe, len as u64, false, at))
    }

    /// `read(fd, buf, len)` on a pipe, from task `t`.
    pub(in crate::linux) fn pipe_read(&mut self, ctx: &mut Ctx, t: usize, pipe: u32, len: u32) -> Ps {
        self.enter_syscall(ctx, |k, ctx, at| k.pipe_read_body(ctx, t, pipe, len as u64, false, at))
    }

    pub(in crate::linux) fn pipe_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        match s {
            Step::Write { pipe, len, woken } => {
                self.pipe_write_body(ctx, t, pipe, len as u64, woken, ctx.now)
            }
            Step::Read { pipe, len, woken } => self.pipe_read_body(ctx, t, pipe, len as u64, woken, ctx.now),
        }
    }

    /// Takes `pipe->mutex` at `at`; returns when it is held (spin charged as lock wait).
    fn pipe_lock(&mut self, ctx: &mut Ctx, pipe: u32, at: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let got = self.fs.pipes[pipe as usize].mutex.acquire(ctx.cpu, at, Ps::ZERO, &topo, &lines);
        ctx.lock_wait("pipe->mutex", got - at);
        got
    }

    /// Releases `pipe->mutex` at `at` (the section ran from the grant to `at`).
    fn pipe_unlock(&mut self, pipe: u32, at: Ps) {
        self.fs.pipes[pipe as usize].mutex.release_at(at);
    }

    /// A load (`write` false) or store to one of `pipe`'s shared lines (`slot`: the
    /// `pipe_buffer` entry of that ring slot; `None`: the ring's state) by this CPU at `at`:
    /// what it costs beyond the cache hit `[ipc]` already holds, charged to the call.
    fn pipe_line(&mut self, ctx: &mut Ctx, pipe: u32, slot: Option<usize>, write: bool, at: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let p = &mut self.fs.pipes[pipe as usize];
        let line = match slot {
            Some(s) => &mut p.slots[s * PIPE_BUFFER_BYTES / 64],
            None => &mut p.ring,
        };
        let w = line.access_past_hit(ctx.cpu, at, write, &topo, &lines);
        self.call_stall(ctx, w)
    }

    /// The ring slot of `pipe`'s buffer `k` (0: the oldest).
    fn pipe_slot(&self, pipe: u32, k: usize) -> usize {
        (self.fs.pipes[pipe as usize].curbuf + k) % PIPE_DEF_BUFFERS
    }

    /// `len` bytes this CPU wrote join the end of `pipe`'s unread bytes.
    fn pipe_note_written(&mut self, cpu: u32, pipe: u32, len: u64) {
        let w = &mut self.fs.pipes[pipe as usize].written;
        match w.back_mut() {
            Some((n, c)) if *c == cpu => *n += len,
            _ => w.push_back((len, cpu)),
        }
    }

    /// The reader's copy of the first `len` unread bytes of `pipe` at `at`: the lines other
    /// CPUs wrote come from their caches. Returns what they cost, charged to the call.
    fn pipe_copy_lines(&mut self, ctx: &mut Ctx, pipe: u32, mut len: u64) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let w = &mut self.fs.pipes[pipe as usize].written;
        let mut d = Ps::ZERO;
        while len > 0 {
            let Some((n, from)) = w.front_mut() else { break };
            let take = (*n).min(len);
            d += copy_lines_from(*from, ctx.cpu, take.div_ceil(64), &topo, &lines);
            *n -= take;
            len -= take;
            if *n == 0 {
                w.pop_front();
            }
        }
        self.call_stall(ctx, d)
    }

    /// `wake_up_interruptible_sync_poll(&pipe->wait, ...)`: every sleeper is woken. Returns
    /// the waker's time.
    fn pipe_wake(&mut self, ctx: &mut Ctx, pipe: u32, at: Ps) -> Ps {
        let waiters = std::mem::take(&mut self.fs.pipes[pipe as usize].waiters);
        let (waiters, n, d) = self.wake_up_all(ctx, waiters, at);
        self.counters.pipe.pipe_wakeups += n;
        self.fs.pipes[pipe as usize].waiters = waiters;
        d
    }

    /// v5.6+ `wake_up_interruptible_sync_poll` of `rd_wait` (`writers` false) or `wr_wait`:
    /// every sleeper there is exclusive, so the first one is woken. Returns the waker's time.
    fn pipe_wake_one(&mut self, ctx: &mut Ctx, pipe: u32, writers: bool, at: Ps) -> Ps {
        let p = &mut self.fs.pipes[pipe as usize];
        let q = if writers { &mut p.wr_waiters } else { &mut p.waiters };
        if q.is_empty() {
            return Ps::ZERO;
        }
        let first = vec![q.remove(0)];
        let (_, n, d) = self.wake_up_all(ctx, first, at);
        self.counters.pipe.pipe_wakeups += n;
        d
    }

    /// `pipe_wait` (v4.9) or `wait_event_interruptible_exclusive` on `rd_wait` / `wr_wait`
    /// (v5.6+): task `t` joins the wait queue, drops the mutex and sleeps; it runs `retry` when
    /// woken. Returns the cost of going to sleep.
    fn pipe_sleep(&mut self, ctx: &mut Ctx, t: usize, pipe: u32, retry: Step, at: Ps) -> Ps {
        let p = &mut self.fs.pipes[pipe as usize];
        match (self.config.fs.pipe_wait, retry) {
            (PipeWait::V5_6, Step::Write { .. }) => p.wr_waiters.push(t),
            _ => p.waiters.push(t),
        }
        ctx.then(Continuation::Pipe(retry));
        self.deschedule(ctx, false, at)
    }

    /// `pipe_write` (v4.9; v5.6+'s wake-ups by `[fs] pipe_wait`) of `len` bytes, from `at`:
    /// merge, or a new buffer, or sleep while full. `woken`: the call slept and was woken.
    fn pipe_write_body(&mut self, ctx: &mut Ctx, t: usize, pipe: u32, len: u64, woken: bool, at: Ps) -> Ps {
        let c = self.pipe_costs();
        let start = at;
        let mut now = self.pipe_lock(ctx, pipe, at);
        let room = room(&self.fs.pipes[pipe as usize], len);
        // v5.5+: readers are woken only on the empty -> non-empty edge.
        let was_empty = self.fs.pipes[pipe as usize].bufs.is_empty();
        // nrbufs and curbuf: stored to when a slot is taken, else read.
        now += self.pipe_line(ctx, pipe, None, room == Room::NewBuffer, now);
        match room {
            Room::Full => {
                self.pipe_unlock(pipe, now);
                self.counters.pipe.pipe_write_sleeps += 1;
                let d = now - start;
                let retry = Step::Write { pipe, len: len as u32, woken: true };
                return d + self.pipe_sleep(ctx, t, pipe, retry, now);
            }
            Room::Merge => {
                self.counters.pipe.pipe_merges += 1;
                let last = self.fs.pipes[pipe as usize].bufs.len() - 1;
                let slot = self.pipe_slot(pipe, last);
                now += self.pipe_line(ctx, pipe, Some(slot), true, now);
                let last = self.fs.pipes[pipe as usize].bufs.back_mut().expect("a buffer to merge into");
                last.len += len;
            }
            Room::NewBuffer => {
                let pfn = match self.fs.pipes[pipe as usize].tmp_page.take() {
                    Some(pfn) => {
                        self.counters.pipe.pipe_tmp_page_reuses += 1;
                        pfn
                    }
                    None => {
                        self.counters.pipe.pipe_page_allocs += 1;
                        // alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT): unmovable, order 0.
                        let (pfn, d) = self.alloc_frame(ctx, now, Owner::Pipe { pipe }, Bucket::Syscall);
                        now += d;
                        pfn
                    }
                };
                let slot = self.pipe_slot(pipe, self.fs.pipes[pipe as usize].bufs.len());
                now += self.pipe_line(ctx, pipe, Some(slot), true, now);
                self.fs.pipes[pipe as usize].bufs.push_back(PipeBuffer { pfn, offset: 0, len });
            }
        }
        self.pipe_note_written(ctx.cpu, pipe, len);
        self.counters.pipe.pipe_writes += 1;
        let work = c.write + c.copy.copy(len);
        ctx.charge(Bucket::Syscall, work);
        now += work;
        // copy_page_from_iter reads the user buffer and writes the pipe page (hw/uncore.rs).
        now += self.bulk(ctx, now - c.copy.copy(len), 2 * len, c.copy.copy(len));
        self.pipe_unlock(pipe, now);
        match self.config.fs.pipe_wait {
            // do_wakeup: data was added.
            PipeWait::V4_9 => now += self.pipe_wake(ctx, pipe, now),
            PipeWait::V5_6 => {
                if was_empty {
                    now += self.pipe_wake_one(ctx, pipe, false, now);
                }
                // wake_next_writer: a woken writer leaves room behind it for the next.
                let full = self.fs.pipes[pipe as usize].bufs.len() >= PIPE_DEF_BUFFERS;
                if woken && !full {
                    now += self.pipe_wake_one(ctx, pipe, true, now);
                }
            }
        }
        let exit = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, exit);
        now + exit - start
    }

    /// `pipe_read` (v4.9; v5.6+'s wake-ups by `[fs] pipe_wait`) of up to `len` bytes from `at`:
    /// copy out of the oldest buffers, release drained ones, or sleep while the pipe is empty.
    /// `woken`: the call slept and was woken.
    fn pipe_read_body(&mut self, ctx: &mut Ctx, t: usize, pipe: u32, len: u64, woken: bool, at: Ps) -> Ps {
        let c = self.pipe_costs();
        let start = at;
        let mut now = self.pipe_lock(ctx, pipe, at);
        now += self.pipe_line(ctx, pipe, None, false, now);
        if self.fs.pipes[pipe as usize].bufs.is_empty() {
            self.pipe_unlock(pipe, now);
            self.counters.pipe.pipe_read_sleeps += 1;
            let d = now - start;
            let retry = Step::Read { pipe, len: len as u32, woken: true };
            return d + self.pipe_sleep(ctx, t, pipe, retry, now);
        }
        let mut want = len;
        let mut released = false;
        // v5.5+ wake_writer: a buffer was released from a full pipe.
        let mut was_full = false;
        let mut copied = 0;
        while want > 0 {
            if self.fs.pipes[pipe as usize].bufs.is_empty() {
                break;
            }
            // The entry's offset and len.
            let slot = self.pipe_slot(pipe, 0);
            now += self.pipe_line(ctx, pipe, Some(slot), true, now);
            let Some(buf) = self.fs.pipes[pipe as usize].bufs.front_mut() else { break };
            let chars = buf.len.min(want);
            buf.offset += chars;
            buf.len -= chars;
            want -= chars;
            copied += chars;
            if buf.len == 0 {
                let pfn = buf.pfn;
                let p = &mut self.fs.pipes[pipe as usize];
                was_full |= p.bufs.len() >= PIPE_DEF_BUFFERS;
                p.bufs.pop_front();
                p.curbuf = (p.curbuf + 1) % PIPE_DEF_BUFFERS;
                released = true;
                // anon_pipe_buf_release: keep the page as tmp_page if it is the only reference
                // and none is cached, else put_page.
                if self.fs.pipes[pipe as usize].tmp_page.is_none() {
                    self.counters.pipe.pipe_tmp_page_caches += 1;
                    self.fs.pipes[pipe as usize].tmp_page = Some(pfn);
                } else {
                    self.counters.pipe.pipe_page_frees += 1;
                    now += self.free_frame(ctx, now, pfn, Bucket::Syscall);
                }
            }
        }
        // A short read returns what there was (hackbench reads again for the rest: here the
        // same call goes on after the next write, as its `goto again` would).
        self.counters.pipe.pipe_reads += 1;
        if released {
            // curbuf and nrbufs move.
            now += self.pipe_line(ctx, pipe, None, true, now);
        }
        now += self.pipe_copy_lines(ctx, pipe, copied);
        let work = c.read + c.copy.copy(copied);
        ctx.charge(Bucket::Syscall, work);
        now += work;
        now += self.bulk(ctx, now - c.copy.copy(copied), 2 * copied, c.copy.copy(copied));
        self.pipe_unlock(pipe, now);
        match self.config.fs.pipe_wait {
            // do_wakeup: a slot was freed for writers.
            PipeWait::V4_9 if released => now += self.pipe_wake(ctx, pipe, now),
            PipeWait::V4_9 => {}
            PipeWait::V5_6 => {
                if was_full {
                    now += self.pipe_wake_one(ctx, pipe, true, now);
                }
                // wake_next_reader: a woken reader leaves data behind it for the next.
                if woken && !self.fs.pipes[pipe as usize].bufs.is_empty() {
                    now += self.pipe_wake_one(ctx, pipe, false, now);
                }
            }
        }
        if want > 0 {
            let d = now - start;
            self.counters.pipe.pipe_read_sleeps += 1;
            let retry = Step::Read { pipe, len: want as u32, woken: true };
            return d + self.pipe_sleep(ctx, t, pipe, retry, now);
        }
        let exit = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, exit);
        now + exit - start
    }
}

#[cfg(test)]
mod tests;
