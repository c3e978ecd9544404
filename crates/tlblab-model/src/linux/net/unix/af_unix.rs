//! AF_UNIX stream socket pairs (net/unix/af_unix.c, v4.9): what hackbench's socket mode runs
//! through. One pair here is a receiving socket (its `sk_receive_queue`) and the peer every
//! sender writes through (its `sk_wmem_alloc` against `sk_sndbuf`): hackbench makes one
//! `socketpair(AF_UNIX, SOCK_STREAM)` per receiver and its 20 senders share the other end.
//!
//! `unix_stream_sendmsg` (v4.9), for a message that fits one skb: `sock_alloc_send_pskb` sleeps
//! while the sending socket's `sk_wmem_alloc` is at least `sk_sndbuf` (`sock_wait_for_wmem`),
//! else allocates an skb with the whole message linear (`alloc_skb_with_frags` -> `__alloc_skb`:
//! the `sk_buff` from `skbuff_head_cache`, the head `kmalloc`'d at `SKB_DATA_ALIGN(len) +
//! SKB_DATA_ALIGN(sizeof(skb_shared_info))`: 448 bytes, kmalloc-512, for hackbench's 100) and
//! charges its truesize to the sender (`skb_set_owner_w`); copies the data, queues the skb on the
//! peer under its state lock and wakes it (`sk_data_ready`). `unix_stream_read_generic` takes
//! the bytes it asked for off the queue; a drained skb is unlinked and freed on the reader's CPU
//! (`consume_skb`: kfree of the head, kmem_cache_free of the `sk_buff`), and its destructor
//! (`sock_wfree`) returns the truesize to the sender and, once `unix_writable` (`wmem << 2 <=
//! sndbuf`), wakes every sleeping sender (`unix_write_space`). So every message is one SLUB
//! allocation pair on a sender's CPU and one free pair on its receiver's: the remote-free
//! pattern whose slab pages come and go through the page allocator at the caches' orders.
//!
//! Sleepers wait on non-exclusive wait queues (`prepare_to_wait`), so a wake-up wakes them all.
//! The receiving socket's state lock (`unix_state_lock`, with the queue's own lock folded in) is a
//! FIFO lock on its line. Departures: `u->iolock` (one reader per socket in hackbench) and SCM
//! credentials (`maybe_add_creds`, `unix_scm_to_skb`, `scm_destroy`) are a per-call cost in
//! `[ipc]`, timed on one thread; used from two CPUs, the lines the ends share move as a
//! loopback socket's do (docs/references/linux-mm.md#socket-lines): the sending socket's
//! `sk_wmem_alloc` (the sender's charge, the reader's `sock_wfree`), and the skb and its bytes,
//! which the reader loads from the sender's cache. Messages larger than `(sk_sndbuf >> 1) - 64` (split over several skbs, page frags
//! beyond `SKB_MAX_HEAD`) are refused, not modelled.

use std::collections::VecDeque;

use crate::attribution::Bucket;
use crate::hw::coherence::{copy_lines_from, CacheLine};
use crate::hw::lock::SpinLock;
use crate::linux::ctx::Ctx;
use crate::linux::lib::iov_iter::CopyRate;
use crate::linux::mm::slub::Object;
use crate::linux::net::core::skbuff::{self, NetCaches};
use crate::linux::{Continuation, Kernel};
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// AF_UNIX stream sockets, counted.
    Counters {
        unix_sends,
        unix_recvs,
        /// Senders that slept for `sk_sndbuf` room, readers that slept on an empty queue.
        unix_send_sleeps,
        unix_recv_sleeps,
        /// Sleepers the wake-ups woke.
        unix_wakeups,
    }
}

/// `sysctl_wmem_default` (v4.9: `SK_WMEM_MAX` = `SKB_TRUESIZE(256) * 256` = 212992 here), the
/// `sk_sndbuf` of a socket nobody set `SO_SNDBUF` on (hackbench does not).
pub fn default_sndbuf() -> u64 {
    skbuff::sk_mem_max()
}

/// What a call costs besides entry/exit, SLUB, the copy and the state lock (`[ipc]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    pub send: Ps,
    pub recv: Ps,
    pub copy: CopyRate,
}

/// Costed only where the profile has `[ipc]`.
impl crate::linux::boot::FromSection for Costs {
    fn from_section(p: &MachineProfile) -> Result<Costs, ProfileError> {
        let ipc = p.ipc()?;
        let mhz = p.clock_mhz();
        Ok(Costs {
            send: Ps::from_cycles(ipc.unix_send_cycles.value, mhz),
            recv: Ps::from_cycles(ipc.unix_recv_cycles.value, mhz),
            copy: CopyRate::from_profile(p),
        })
    }
}

/// One queued skb: its objects, its length, what has been read of it, its truesize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixSkb {
    pub skb: Object,
    pub head: Object,
    pub len: u64,
    pub consumed: u64,
    pub truesize: u64,
    /// The sender's CPU, which allocated and filled it.
    pub cpu: u32,
}

/// A connected stream pair as hackbench uses it.
#[derive(Debug, Clone, Default)]
pub struct UnixPair {
    /// The sending socket's `sk_sndbuf` and `sk_wmem_alloc`.
    pub sndbuf: u64,
    pub wmem: u64,
    /// The receiving socket's `sk_receive_queue`.
    pub queue: VecDeque<UnixSkb>,
    /// Tasks asleep in `sock_wait_for_wmem` on the sending socket, and in
    /// `unix_stream_data_wait` on the receiving one.
    pub writers: Vec<usize>,
    pub readers: Vec<usize>,
    /// The receiving socket's `unix_state_lock`.
    pub lock: SpinLock,
    /// The line of the sending socket's `sk_wmem_alloc`.
    pub wmem_line: CacheLine,
}

/// An AF_UNIX call's continuation: the call again after its task slept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Send { pair: u32, len: u32 },
    Recv { pair: u32, len: u32 },
}

/// `unix_writable()` (v4.9): `(sk_wmem_alloc << 2) <= sk_sndbuf`.
pub fn unix_writable(wmem: u64, sndbuf: u64) -> bool {
    wmem << 2 <= sndbuf
}

impl Kernel {
    /// `socketpair(AF_UNIX, SOCK_STREAM, 0, fds)` in a workload's setup; returns its id.
    pub fn add_unix_pair(&mut self) -> u32 {
        self.net.unix.push(UnixPair { sndbuf: default_sndbuf(), ..Default::default() });
        (self.net.unix.len() - 1) as u32
    }

    /// One `write` of `len` bytes by task `t` to pair `pair` if it would not sleep: for a
    /// workload's untimed setup ([`Kernel::untimed`]) building the queues its senders fill.
    /// Returns whether it wrote.
    pub fn unix_send_if_room(&mut self, ctx: &mut Ctx, t: usize, pair: u32, len: u32) -> bool {
        let p = &self.net.unix[pair as usize];
        if p.wmem >= p.sndbuf {
            return false;
        }
        self.unix_send(ctx, t, pair, len);
        true
    }

    fn unix_costs(&self) -> Costs {
        self.costs.af_unix.expect("AF_UNIX needs the profile's [ipc] section (run::run checks it)")
    }

    /// `write(fd, buf, len)` on the sending end of pair `pair`, from task `t`.
    pub(in crate::linux) fn unix_send(&mut self, ctx: &mut Ctx, t: usize, pair: u32, len: u32) -> Ps {
        self.enter_syscall(ctx, |k, ctx, at| k.unix_send_body(ctx, t, pair, len as u64, at))
    }

    /// `read(fd, buf, len)` on the receiving end of pair `pair`, from task `t`.
    pub(in crate::linux) fn unix_recv(&mut self, ctx: &mut Ctx, t: usize, pair: u32, len: u32) -> Ps {
        self.enter_syscall(ctx, |k, ctx, at| k.unix_recv_body(ctx, t, pair, len as u64, at))
    }

    pub(in crate::linux) fn unix_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        match s {
            Step::Send { pair, len } => self.unix_send_body(ctx, t, pair, len as u64, ctx.now),
            Step::Recv { pair, len } => self.unix_recv_body(ctx, t, pair, len as u64, ctx.now),
        }
    }

    /// Wakes every task in `who` (a non-exclusive wait queue, linux/kernel/sched/wait.rs).
    fn unix_wake(&mut self, ctx: &mut Ctx, who: Vec<usize>, at: Ps) -> (Vec<usize>, Ps) {
        let (who, n, d) = self.wake_up_all(ctx, who, at);
        self.counters.af_unix.unix_wakeups += n;
        (who, d)
    }

    /// Takes the receiving socket's state lock at `at`, held until `release_at`.
    fn unix_lock(&mut self, ctx: &mut Ctx, pair: u32, at: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let got = self.net.unix[pair as usize].lock.acquire(ctx.cpu, at, Ps::ZERO, &topo, &lines);
        ctx.lock_wait("unix_state_lock", got - at);
        got
    }

    /// A store by this CPU at `at` to `pair`'s `sk_wmem_alloc` line: its cost beyond a cache
    /// hit, charged to the call.
    fn unix_wmem_line(&mut self, ctx: &mut Ctx, pair: u32, at: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let w = self.net.unix[pair as usize].wmem_line.access_past_hit(ctx.cpu, at, true, &topo, &lines);
        self.call_stall(ctx, w)
    }

    fn unix_send_body(&mut self, ctx: &mut Ctx, t: usize, pair: u32, len: u64, at: Ps) -> Ps {
        let c = self.unix_costs();
        let p = &mut self.net.unix[pair as usize];
        assert!(
            len <= (p.sndbuf >> 1) - 64,
            "an AF_UNIX message of {len} bytes needs several skbs (not modelled)"
        );
        if p.wmem >= p.sndbuf {
            // sock_alloc_send_pskb -> sock_wait_for_wmem.
            p.writers.push(t);
            self.counters.af_unix.unix_send_sleeps += 1;
            ctx.then(Continuation::Unix(Step::Send { pair, len: len as u32 }));
            return self.deschedule(ctx, false, at);
        }
        let mut now = at;
        let caches =
            NetCaches::lookup(self.mm.slab.as_ref().expect("AF_UNIX needs SLUB (run::run checks [slab])"));
        let (skb, d) = self.kmem_cache_alloc(ctx, now, caches.skbuff_head, Bucket::Syscall);
        now += d;
        let (head, d) = self.kmalloc(ctx, now, skbuff::skb_head_size(len), Bucket::Syscall);
        now += d;
        let truesize = skbuff::skb_truesize_of(self.mm.slab.as_ref().expect("SLUB"), head);
        // Objects a reader on another CPU freed: the stores take their lines back.
        now += self.skb_refill_lines(ctx, &[(skb, skbuff::skb_meta_lines()), (head, len.div_ceil(64))]);
        let work = c.send + c.copy.copy(len);
        ctx.charge(Bucket::Syscall, work);
        now += work;
        // The copy into the skb reads the user buffer and writes the head (hw/uncore.rs).
        now += self.bulk(ctx, now - c.copy.copy(len), 2 * len, c.copy.copy(len));
        self.net.unix[pair as usize].wmem += truesize;
        now += self.unix_wmem_line(ctx, pair, now);
        // unix_state_lock(other); skb_queue_tail; unix_state_unlock; sk_data_ready.
        now = self.unix_lock(ctx, pair, now);
        let p = &mut self.net.unix[pair as usize];
        p.queue.push_back(UnixSkb { skb, head, len, consumed: 0, truesize, cpu: ctx.cpu });
        p.lock.release_at(now);
        let readers = std::mem::take(&mut p.readers);
        let (readers, d) = self.unix_wake(ctx, readers, now);
        now += d;
        self.net.unix[pair as usize].readers = readers;
        self.counters.af_unix.unix_sends += 1;
        let exit = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, exit);
        now + exit - at
    }

    fn unix_recv_body(&mut self, ctx: &mut Ctx, t: usize, pair: u32, len: u64, at: Ps) -> Ps {
        let c = self.unix_costs();
        let mut now = self.unix_lock(ctx, pair, at);
        if self.net.unix[pair as usize].queue.is_empty() {
            // unix_stream_data_wait.
            let p = &mut self.net.unix[pair as usize];
            p.lock.release_at(now);
            p.readers.push(t);
            self.counters.af_unix.unix_recv_sleeps += 1;
            ctx.then(Continuation::Unix(Step::Recv { pair, len: len as u32 }));
            return (now - at) + self.deschedule(ctx, false, now);
        }
        let mut want = len;
        let mut copied = 0;
        // The first `drained` skbs are read whole; they leave the queue after the copy.
        let mut drained = 0;
        // The skbs' lines and bytes the copy loads from their senders' caches.
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mut moved = Ps::ZERO;
        while want > 0 {
            let Some(skb) = self.net.unix[pair as usize].queue.get_mut(drained) else { break };
            let chunk = (skb.len - skb.consumed).min(want);
            moved += copy_lines_from(skb.cpu, ctx.cpu, skbuff::skb_meta_lines(), &topo, &lines);
            moved += copy_lines_from(skb.cpu, ctx.cpu, chunk.div_ceil(64), &topo, &lines);
            skb.consumed += chunk;
            want -= chunk;
            copied += chunk;
            if skb.consumed < skb.len {
                break;
            }
            drained += 1;
        }
        self.net.unix[pair as usize].lock.release_at(now);
        now += self.call_stall(ctx, moved);
        let work = c.recv + c.copy.copy(copied);
        ctx.charge(Bucket::Syscall, work);
        now += work;
        now += self.bulk(ctx, now - c.copy.copy(copied), 2 * copied, c.copy.copy(copied));
        for _ in 0..drained {
            // consume_skb: the destructor (sock_wfree) first, then the head and the sk_buff.
            let p = &mut self.net.unix[pair as usize];
            let skb = p.queue.pop_front().expect("an skb read whole");
            p.wmem -= skb.truesize;
            now += self.unix_wmem_line(ctx, pair, now);
            let p = &mut self.net.unix[pair as usize];
            if unix_writable(p.wmem, p.sndbuf) && !p.writers.is_empty() {
                let writers = std::mem::take(&mut p.writers);
                let (writers, d) = self.unix_wake(ctx, writers, now);
                now += d;
                self.net.unix[pair as usize].writers = writers;
            }
            now += self.kfree(ctx, now, skb.head, Bucket::Syscall);
            now += self.kfree(ctx, now, skb.skb, Bucket::Syscall);
            self.skb_freed_here(ctx.cpu, &[skb.head, skb.skb]);
        }
        self.counters.af_unix.unix_recvs += 1;
        if want > 0 && copied == 0 {
            unreachable!("a non-empty queue gives at least one byte");
        }
        // A short read (less queued than asked) returns what there was; hackbench reads again.
        // Here the same call goes on for the rest, as its `goto again` would.
        if want > 0 {
            return (now - at) + self.unix_recv_body(ctx, t, pair, want, now);
        }
        let exit = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, exit);
        now + exit - at
    }
}

#[cfg(test)]
mod tests;
