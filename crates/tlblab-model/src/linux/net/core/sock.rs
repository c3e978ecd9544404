//! `release_sock` for the loopback TCP sender (net/core/sock.c, v2.6 .. v6.x alike;
//! docs/references/linux-mm.md#socket-backlog).
//!
//! `tcp_sendmsg` runs under `lock_sock`, which marks the socket owned by its user. A segment
//! that `tcp_v4_rcv` finds for an owned socket is not processed but queued on the socket's
//! backlog (`sk_add_backlog`; v4.14+ `tcp_add_backlog`, which from v5.0 also coalesces a pure
//! ACK into the one queued before it). `release_sock` processes the backlog before giving up
//! ownership (`__release_sock` -> `sk_backlog_rcv` -> `tcp_v4_do_rcv` ->
//! `tcp_rcv_established` -> `tcp_ack`, then `tcp_data_snd_check`), so a tail Nagle held is
//! transmitted there, on the sender's CPU, and its loopback delivery (the softirq run when the
//! transmit path re-enables bottom halves) also runs there. Segments that arrive while the
//! backlog is processed join it and are processed in the same call. The sender that sleeps for
//! buffer room releases the socket while it sleeps (`sk_wait_event`): the model's sender sleeps
//! before it takes the lock, or, inside the call, releases it (the backlog processed) first, so
//! no ACK waits for a sleeping sender.
//!
//! `tcp_release_cb`'s deferred work (TSQ's `tcp_tsq_handler`, deferred timers) has nothing to
//! do on loopback: the clone is orphaned in `loopback_xmit` before TX completion could throttle
//! it (linux/net/ipv4/tcp.rs), and the delayed-ACK timer runs on the receiver's socket. UDP
//! takes no such branch in the model: v4.9's `udp_queue_rcv_skb` queues on the backlog only
//! while the receiving socket is owned, which a UDP receiver is only in `lock_sock_fast`'s
//! contended path, and from v4.10 UDP queues to the receive queue under its own lock
//! without a backlog. Inside `tcp_sendmsg` the backlog is also processed before a new skb, as
//! the preset's `tcp_backlog_flush_skbs` says ([`Kernel::tcp_flush_backlog`];
//! docs/references/linux-mm.md#tcp-segmentation), and while the call sleeps for buffer room. The
//! reader's side alike: a segment
//! that reaches the reader while it is inside `tcp_recvmsg` (from its copy to the `release_sock`
//! after `tcp_cleanup_rbuf`) waits on its backlog and is queued, with its ACK decision, at that
//! release on the reader's CPU ([`Kernel::tcp_rx_release_sock`];
//! docs/references/linux-mm.md#the-tcp-readers-side).
//!
//! The owned flag is guarded by the spinlock `sk_lock.slock` (docs/references/linux-mm.md#socket-spinlock),
//! a FIFO lock on its word's line here (hw/lock.rs): the writer takes it briefly at
//! `lock_sock` and `release_sock` (again after walking a backlog, which it does with the lock
//! dropped), and an ACK's `tcp_v4_rcv` on the reader's CPU takes it for its locked part
//! (`net.tcp_ack_locked_cycles`) and the transmissions that ACK lets go, or, the socket owned,
//! just to queue itself; a writer that arrives meanwhile spins. An ACK walked off the backlog
//! costs the writer that locked part; queueing on the backlog and the walk itself are not
//! charged (no source gives them), and what the ACK sets off (the transmission and the delivery)
//! keeps its sourced cost, moved to the CPU that runs it.

use crate::hw::coherence::copy_lines_from;
use crate::linux::ctx::Ctx;
use crate::linux::mm::slub::Object;
use crate::linux::net::core::skbuff;
use crate::linux::net::socket::{Step, NO_NET};
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

impl Kernel {
    /// The send's `release_sock` runs at `at` on this CPU (the current step's end): the socket
    /// stays owned until then, and the release is the send's next step.
    pub(in crate::linux::net) fn tcp_release_at(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) {
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].owned_until = at;
        ctx.then(Continuation::Net(Step::Release { sock }));
    }

    /// `release_sock` on the sender's CPU: `spin_lock_bh` of `sk_lock.slock`, the ACKs on the
    /// backlog processed with it dropped (`__release_sock`, and what they set off, which may
    /// queue more) and taken again, ownership given up, then the return to user space.
    pub(in crate::linux::net) fn tcp_release_sock(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        f.owned_until = Ps(u64::MAX);
        let backlog = f.backlog.is_some();
        let mut d = self.sk_slock(ctx, sock, ctx.now, Ps::ZERO, false) - ctx.now;
        if backlog {
            d += self.tcp_flush_backlog(ctx, sock, ctx.now + d);
            d = self.sk_slock(ctx, sock, ctx.now + d, Ps::ZERO, false) - ctx.now;
        }
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].owned_until = Ps::ZERO;
        d + self.socket_exit(ctx)
    }

    /// `lock_sock` by the writer at the start of `tcp_sendmsg` (or after a sleep inside it):
    /// `sk_lock.slock` taken (waiting while an ACK's softirq on the other CPU holds it) just to
    /// mark the socket owned, from then until the call's `release_sock`. Returns the time.
    pub(in crate::linux::net) fn lock_sock(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        let got = self.sk_slock(ctx, sock, ctx.now, Ps::ZERO, false);
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].owned_until = Ps(u64::MAX);
        got - ctx.now
    }

    /// Takes the writer's `sk_lock.slock` on this CPU at `at` for `hold` (hw/lock.rs: FIFO on
    /// its word's line), by the writer's process context or (`softirq`) an ACK's `tcp_v4_rcv`.
    /// The time to get it is charged as lock wait; the contended takings and their spin (the
    /// wait beyond the word's transfer) are counted. Returns when it is held.
    pub(in crate::linux::net) fn sk_slock(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        at: Ps,
        hold: Ps,
        softirq: bool,
    ) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let l = &mut s.flows[sock as usize].slock;
        let (contended, spin) = (l.stats.contended, l.stats.spin);
        let got = l.acquire(ctx.cpu, at, hold, &topo, &lines);
        let (waited, spin) = (u64::from(l.stats.contended > contended), (l.stats.spin - spin).0);
        let c = &mut s.counters;
        if softirq {
            c.tcp_ack_slock_waits += waited;
            c.tcp_ack_slock_spin_ps += spin;
        } else {
            c.tcp_slock_waits += waited;
            c.tcp_slock_spin_ps += spin;
        }
        ctx.lock_wait("sk_lock.slock", got - at);
        got
    }

    /// `__release_sock`'s loop from `at` on the sender's CPU, the socket still owned: each ACK
    /// on the backlog processed by `tcp_ack` (what it transmits, and the ACKs that queues, in
    /// turn). Returns the time.
    pub(in crate::linux::net) fn tcp_flush_backlog(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) -> Ps {
        let mut d = Ps::ZERO;
        loop {
            let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
            let Some(ack) = f.backlog.take() else { break };
            let unsent = f.unsent.len();
            // sk_backlog_rcv -> tcp_v4_do_rcv: the ACK's locked part, here with the lock
            // dropped (the rest of its path ran on the CPU that queued it).
            let locked = self.net.sockets.as_ref().expect(NO_NET).costs.tcp_ack_locked;
            ctx.charge(crate::attribution::Bucket::Syscall, locked);
            d += locked;
            d += self.tcp_ack_rcv(ctx, sock, ack, at + d, None);
            let s = self.net.sockets.as_mut().expect(NO_NET);
            if s.flows[sock as usize].unsent.len() < unsent {
                s.counters.tcp_backlog_xmits += 1;
            }
        }
        d
    }

    /// The reader's `release_sock` at `at` on its CPU, after `tcp_cleanup_rbuf`: the segments
    /// that reached it inside `tcp_recvmsg` are queued now, each with `tcp_event_data_recv` and
    /// `__tcp_ack_snd_check` (whose ACK, and what that ACK lets the writer transmit, run here on
    /// the reader's CPU unless the writer owns its socket), then ownership ends. Returns the time.
    pub(in crate::linux::net) fn tcp_rx_release_sock(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) -> Ps {
        let mut d = Ps::ZERO;
        loop {
            let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
            if f.rx_backlog.is_empty() {
                break;
            }
            let skb = f.rx_backlog.remove(0);
            let (len, truesize) = (skb.len, skb.truesize);
            let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
            let (slab, pa) =
                (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
            let s = self.net.sockets.as_mut().expect(NO_NET);
            let f = &mut s.flows[sock as usize];
            skbuff::deliver(slab, pa, ctx.cpu, at + d, skb, &mut f.rx, false, env)
                .unwrap_or_else(|e| panic!("socket delivery: {e:?}"));
            s.counters.net_delivered += 1;
            s.counters.net_delivered_bytes += len;
            d += self.sk_enqueue_lines(ctx, sock, at + d, true);
            d += self.tcp_received(ctx, sock, (len, truesize), at + d);
        }
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].rx_owned_until = Ps::ZERO;
        d
    }
}

/// Which of a receiving socket's shared lines an access is to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::linux::net) enum SkLine {
    Queue,
    Rmem,
}

impl Kernel {
    /// A load (`write` false) or store by this CPU at `at` to a line of `sock`'s receiving
    /// socket: its cost beyond the cache hit the profile's per-call costs hold, charged to the
    /// call (docs/references/linux-mm.md#socket-lines).
    pub(in crate::linux::net) fn sk_line(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        l: SkLine,
        write: bool,
        at: Ps,
    ) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let rx = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].rx;
        let line = match l {
            SkLine::Queue => &mut rx.queue_line,
            SkLine::Rmem => &mut rx.rmem_line,
        };
        let w = line.access_past_hit(ctx.cpu, at, write, &topo, &lines);
        self.call_stall(ctx, w)
    }

    /// A send on this CPU that fills skb objects (each with the lines it writes) a receive on
    /// another CPU last freed: the stores take those lines back from that CPU's cache, a
    /// transfer per [`crate::hw::coherence::FILL_BUFFERS`] lines. Returns the cost, charged to
    /// the call.
    pub(in crate::linux) fn skb_refill_lines(&mut self, ctx: &mut Ctx, objs: &[(Object, u64)]) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mut w = Ps::ZERO;
        for &(o, n) in objs {
            let Some(&(from, at)) = self.net.freed_on.get(&o) else { continue };
            if self.net.freed_bytes[from as usize] - at < crate::linux::net::FREED_IN_CACHE {
                w += copy_lines_from(from, ctx.cpu, n, &topo, &lines);
            }
        }
        self.call_stall(ctx, w)
    }

    /// A TCP send on this CPU that copied into page-fragment pages (`filled`: the page, the
    /// offset and bytes, a new reference taken) which a receive on another CPU last read and
    /// let go: as [`Kernel::skb_refill_lines`], the stores take back the lines the copy begins
    /// (a line the previous copy began is this CPU's already), and a new reference
    /// (`page_ref_inc`) the `struct page` line whose count a `put_page` there wrote since
    /// (docs/references/linux-mm.md#socket-lines). Returns the cost, charged to the call.
    pub(in crate::linux) fn frag_refill_lines(
        &mut self,
        ctx: &mut Ctx,
        filled: &[(u64, u64, u64, bool)],
    ) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mut w = Ps::ZERO;
        for &(pfn, start, bytes, new_ref) in filled {
            let Some(rec) = self.net.frag_freed_on.get_mut(&pfn) else { continue };
            let (from, at, ref_written) = *rec;
            if from == ctx.cpu
                || self.net.freed_bytes[from as usize] - at >= crate::linux::net::FREED_IN_CACHE
            {
                continue;
            }
            let begun = (start + bytes).div_ceil(64) - start.div_ceil(64);
            w += copy_lines_from(from, ctx.cpu, begun, &topo, &lines);
            if new_ref && ref_written {
                rec.2 = false;
                w += copy_lines_from(from, ctx.cpu, 1, &topo, &lines);
            }
        }
        self.call_stall(ctx, w)
    }

    /// Notes that `cpu`'s receive read `bytes` of page-fragment payload on `pages` and dropped
    /// its references to them.
    pub(in crate::linux) fn frag_freed_here(&mut self, cpu: u32, pages: &[u64], bytes: u64) {
        let c = cpu as usize;
        if self.net.freed_bytes.len() <= c {
            self.net.freed_bytes.resize(c + 1, 0);
        }
        self.net.freed_bytes[c] += bytes;
        for &pfn in pages {
            self.net.frag_freed_on.insert(pfn, (cpu, self.net.freed_bytes[c], true));
        }
    }

    /// Notes that `cpu` freed `objs` (its receive consumed their skb, or it dropped it).
    pub(in crate::linux) fn skb_freed_here(&mut self, cpu: u32, objs: &[Object]) {
        let c = cpu as usize;
        if self.net.freed_bytes.len() <= c {
            self.net.freed_bytes.resize(c + 1, 0);
        }
        for &o in objs {
            self.net.freed_bytes[c] += match o {
                Object::Large { order, .. } => 4096 << order,
                Object::Slab { cache, .. } => self.mm.slab.as_ref().map_or(0, |s| s.caches[cache].size),
            };
            self.net.freed_on.insert(o, (cpu, self.net.freed_bytes[c]));
        }
    }

    /// The sender's side of queueing an skb at `sock`'s receiver from `at`: the `sk_rmem_alloc`
    /// test, and if it is queued the charge (`skb_set_owner_r`) and the queue's lock and tail.
    pub(in crate::linux::net) fn sk_enqueue_lines(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        at: Ps,
        queued: bool,
    ) -> Ps {
        let mut d = self.sk_line(ctx, sock, SkLine::Rmem, queued, at);
        if queued {
            d += self.sk_line(ctx, sock, SkLine::Queue, true, at + d);
        }
        d
    }

    /// The reader's side of taking skbs off `sock`'s queue from `at`: the queue's lock and head,
    /// the skbs' own lines and then their bytes from the CPU that wrote them (`skbs`: that CPU,
    /// the skb's lines, the bytes read; each group's loads overlap), and the uncharge of
    /// `sk_rmem_alloc` (`sock_rfree`).
    pub(in crate::linux::net) fn sk_dequeue_lines(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        at: Ps,
        skbs: &[(u32, u64, u64)],
    ) -> Ps {
        let mut d = self.sk_line(ctx, sock, SkLine::Queue, true, at);
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mut w = Ps::ZERO;
        for &(from, meta, bytes) in skbs {
            w += copy_lines_from(from, ctx.cpu, meta, &topo, &lines);
            w += copy_lines_from(from, ctx.cpu, bytes.div_ceil(64), &topo, &lines);
        }
        d += self.call_stall(ctx, w);
        d + self.sk_line(ctx, sock, SkLine::Rmem, true, at + d)
    }
}

#[cfg(test)]
mod tests {
    use crate::run::{run, RunSpec};
    use crate::time::Ps;

    fn sockperf(proto: &str, size: u64) -> crate::run::RunResult {
        let w = format!("sockperf throughput {proto} --mps max --msg-size {size}");
        let spec = RunSpec::of("6.18", &w, 2, Ps::US * 300, Ps::MS);
        run(&crate::profile::shipped("haswell-ep-2698v3-2s"), &spec).unwrap()
    }

    /// A workload's throughput on the Haswell stand-in (6.18), with or without lines moving
    /// between its CPUs.
    fn rate(w: &str, coherence: bool) -> f64 {
        let mut p = crate::profile::shipped("haswell-ep-2698v3-2s");
        if !coherence {
            p.coherence = None;
        }
        let spec = RunSpec::of("6.18", w, 2, Ps::US * 300, Ps::MS);
        run(&p, &spec).unwrap().metric.value
    }

    #[test]
    fn a_writer_spins_on_its_socket_spinlock_while_the_readers_softirq_processes_an_ack() {
        // sockperf's 14-byte TCP stream on 6.18: the reader's ACK, sent and received in the
        // softirq on its CPU, holds the writer's sk_lock.slock for its locked part and the
        // held tail it transmits, and the writer entering tcp_sendmsg spins in lock_sock
        // meanwhile. The whole ACK under the lock instead of its 0.385: the writer spins longer.
        let run_with = |all_locked: bool| {
            let mut p = crate::profile::shipped("haswell-ep-2698v3-2s");
            let n = p.net.as_mut().unwrap();
            if all_locked {
                n.tcp_ack_locked_cycles = n.tcp_ack_cycles.clone();
            }
            let w = "sockperf throughput --tcp --mps max --msg-size 14";
            let r = run(&p, &RunSpec::of("6.18", w, 2, Ps::US * 300, Ps::MS)).unwrap();
            assert_eq!(r.oracle.violations, 0, "{:?}", r.oracle.examples);
            r
        };
        let (part, all) = (run_with(false), run_with(true));
        let spin = |r: &crate::run::RunResult| r.counters["tcp_slock_spin_ps"] as f64 / r.operations() as f64;
        for r in [&part, &all] {
            let c = &r.counters;
            assert!(c["tcp_slock_waits"] * 10 > c["tcp_acks"] && c["tcp_acks"] > 0, "{c:?}");
        }
        assert!(spin(&all) > 1.3 * spin(&part), "{} vs {} ps a message", spin(&all), spin(&part));
    }

    #[test]
    fn a_flow_between_two_cores_pays_for_the_socket_and_skb_lines_that_move() {
        // The sender's rmem charge and queue tail, the reader's queue head, skb and bytes, its
        // rmem uncharge: each a transfer when the other end touched it last. UDP's sender
        // (netperf's metric) pays its share; 8 KB datagrams move 128 lines of bytes a receive.
        for w in ["netperf -t UDP_STREAM -s 320 -S 320 -m 64", "sockperf throughput --mps max --msg-size 14"]
        {
            let (moved, local) = (rate(w, true), rate(w, false));
            assert!(moved < 0.98 * local, "{w}: {moved} with lines moving, {local} without");
        }
    }

    #[test]
    fn a_tcp_sender_takes_back_the_page_fragment_lines_its_reader_read() {
        // netperf's 8 KB sends on 6.18 go into the sender's page fragment, whose pages come
        // back once the reader on the other core has read and freed the skbs on them. The
        // sender's call time a send with lines moving, over that without, holds the transfers
        // of those bytes (128 lines, ten to a transfer) beside the skb's and the queue's few.
        let w = "netperf -t TCP_STREAM -s 8448 -S 8448 -m 8192";
        let sender_ps = |coherence: bool| {
            let mut p = crate::profile::shipped("haswell-ep-2698v3-2s");
            if !coherence {
                p.coherence = None;
            }
            let spec = RunSpec::of("6.18", w, 2, Ps::US * 300, Ps::MS);
            let r = run(&p, &spec).unwrap();
            assert_eq!(r.oracle.violations, 0, "{:?}", r.oracle.examples);
            r.attribution[0]["syscall"] as f64 / r.operations() as f64
        };
        let transfer =
            crate::profile::shipped("haswell-ep-2698v3-2s").coherence.unwrap().same_socket_ns.value;
        let extra_ns = (sender_ps(true) - sender_ps(false)) / 1000.0;
        assert!(extra_ns > 12.0 * transfer, "{extra_ns} ns a send more, a transfer {transfer} ns");
    }

    #[test]
    fn the_sender_pays_try_to_wake_up_for_a_reader_it_wakes() {
        // netperf's UDP reader drains its small queue and sleeps; the sender's delivery wakes
        // it. Ten times the wake-up's cost on the waker slows the sender (netperf's metric).
        let w = "netperf -t UDP_STREAM -s 320 -S 320 -m 64";
        let at = |cycles: f64| {
            let mut p = crate::profile::shipped("haswell-ep-2698v3-2s");
            let t = p.kernel.ttwu_cycles.as_mut().expect("the profile's estimate");
            t.value = cycles;
            let spec = RunSpec::of("6.18", w, 2, Ps::US * 300, Ps::MS);
            let r = run(&p, &spec).unwrap();
            (r.metric.value, r.counters["net_recv_sleeps"])
        };
        let ((fast, sleeps), (slow, _)) = (at(600.0), at(6000.0));
        assert!(sleeps > 0, "the reader sleeps");
        assert!(slow < 0.95 * fast, "10x ttwu: {slow} against {fast}");
    }

    #[test]
    fn acks_that_find_the_sender_in_tcp_sendmsg_release_its_tail_at_release_sock() {
        let r = sockperf("--tcp", 14);
        let c = &r.counters;
        assert_eq!(r.oracle.violations, 0, "{:?}", r.oracle.examples);
        // Some ACKs found the sender inside tcp_sendmsg, and each of those released the tail
        // Nagle held there (at most one held tail per release).
        assert!(c["tcp_backlog_acks"] > 0 && c["tcp_backlog_acks"] <= c["tcp_acks"], "{c:?}");
        assert!(c["tcp_backlog_xmits"] > 0 && c["tcp_backlog_xmits"] <= c["tcp_backlog_acks"], "{c:?}");
        // Every segment is still ACKed and delivered, none by the delayed-ACK timer.
        assert!(c["tcp_acks"].abs_diff(c["net_delivered"]) <= 2 && c["tcp_delayed_acks"] == 0, "{c:?}");
        assert!(c["net_delivered_bytes"] <= (r.operations() + 2) * 14, "{c:?}");
    }

    #[test]
    fn segments_that_find_the_reader_inside_tcp_recvmsg_wait_for_its_release_sock() {
        // netperf's reader takes 64 bytes a call from 576-byte segments: it is inside
        // tcp_recvmsg most of the time, and what arrives then is queued at its release_sock.
        let w = "netperf -t TCP_STREAM -s 320 -S 320 -m 64";
        let spec = RunSpec::of("6.18", w, 2, Ps::US * 300, Ps::MS);
        let r = run(&crate::profile::shipped("haswell-ep-2698v3-2s"), &spec).unwrap();
        let c = &r.counters;
        assert_eq!(r.oracle.violations, 0, "{:?}", r.oracle.examples);
        assert!(c["tcp_rx_backlog"] > 0 && c["tcp_rx_backlog"] <= c["net_delivered"] + 1, "{c:?}");
        // Nothing is lost on the backlog: what was delivered was read, up to the window's edges.
        assert!(c["net_delivered_bytes"].abs_diff(c["net_received_bytes"]) <= 2 * 576, "{c:?}");
        assert_eq!(c["tcp_delayed_acks"], 0, "{c:?}");
    }

    #[test]
    fn udp_has_no_backlog() {
        let c = sockperf("", 14).counters;
        assert!(c["net_delivered"] > 0, "{c:?}");
        assert_eq!((c["tcp_acks"], c["tcp_backlog_acks"], c["tcp_backlog_xmits"]), (0, 0, 0), "{c:?}");
    }
}
