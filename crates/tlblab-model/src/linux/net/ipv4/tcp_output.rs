//! Nagle's hold on a loopback TCP pair, in the kernel's steps (net/ipv4/tcp.c `tcp_sendmsg`
//! appending to the held tail, tcp_output.c `tcp_push_pending_frames` when an ACK lets it go,
//! tcp_timer.c `tcp_delack_timer`), over linux/net/socket.rs's flows and the sequence rules of
//! linux/net/ipv4/tcp.rs (docs/references/linux-mm.md#nagle-on-loopback).

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::net::core::skbuff;
use crate::linux::net::ipv4::tcp;
use crate::linux::net::socket::{Step, NO_NET};
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

impl Kernel {
    /// `tcp_sendmsg` of `len` bytes onto the tail Nagle holds: the copy into its linear room or
    /// the page fragment, `net.tcp_append_cycles` of bookkeeping and the push Nagle stops, then
    /// `release_sock` and the return to user space. A tail that reaches the size goal is no partial segment any
    /// more, so Nagle lets it go at once (its delivery follows as the send's next step).
    pub(in crate::linux::net) fn tcp_append(&mut self, ctx: &mut Ctx, sock: u16, len: u64) -> Ps {
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let pa = self.mm.page_alloc.as_mut().expect(NO_NET);
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        let tail = f.held.as_mut().expect("a held tail");
        let before = tail.truesize;
        let out =
            skbuff::tcp_append(pa, &mut f.frag, tail, ctx.cpu, ctx.now, len, env).unwrap_or_else(|_| {
                panic!("out of memory in the socket layer (skbs are not reclaimable in the model)")
            });
        // A full-sized tail goes unless the window is closed (then it waits for an ACK).
        let full = tail.len >= f.conn.mss;
        if full && !f.conn.fits(tail.len) {
            s.counters.tcp_rwnd_held += 1;
        }
        let full = full && f.conn.fits(tail.len);
        f.wmem += tail.truesize - before;
        s.counters.tcp_nagle_held += 1;
        self.sync_net_pages(sock);
        let costs = &self.net.sockets.as_ref().expect(NO_NET).costs;
        let (path, copy, xmit) = (costs.tcp_append, costs.copy.copy(len), costs.tcp_xmit);
        let alloc = self.charge_net(ctx, &out, ctx.now);
        ctx.charge(Bucket::Zeroing, copy);
        ctx.charge(Bucket::Syscall, path);
        let copy = copy + self.bulk(ctx, ctx.now + alloc, 2 * len, copy);
        let d = alloc + copy + path;
        if full {
            let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
            let tail = f.held.take().expect("the held tail");
            f.conn.transmitted(tail.len);
            f.in_flight = Some(tail);
            // Owned through the loopback softirq that follows (release_sock comes after it).
            f.owned_until = Ps(u64::MAX);
            ctx.charge(Bucket::Syscall, xmit);
            ctx.then(Continuation::Net(Step::Deliver { sock }));
            return d + xmit;
        }
        let d = d + self.tcp_stalled(ctx, sock);
        self.tcp_release_at(ctx, sock, ctx.now + d);
        d
    }

    /// A segment of `len` bytes just queued at the receiver at `at`: `tcp_event_data_recv`'s
    /// bookkeeping and `__tcp_ack_snd_check`, which may ACK at once (on this CPU, in the same
    /// softirq). Returns the time the ACK and what it released took.
    pub(in crate::linux::net) fn tcp_received(&mut self, ctx: &mut Ctx, sock: u16, len: u64, at: Ps) -> Ps {
        let k = self.config.net;
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        f.conn.received(&k, len, at);
        if f.conn.ack_on_receive(f.rx.rcvbuf.saturating_sub(f.rx.rmem_alloc)) {
            self.tcp_ack(ctx, sock, at)
        } else {
            Ps::ZERO
        }
    }

    /// The receiver's ACK at `at` on this CPU. Through loopback, in the same softirq,
    /// `tcp_v4_rcv` finds the sender's socket: owned by its user (the sender inside
    /// `tcp_sendmsg`, between `lock_sock` and `release_sock`), the ACK waits on its backlog for
    /// `release_sock` on the sender's CPU (linux/net/core/sock.rs); else it is processed here
    /// ([`Kernel::tcp_ack_rcv`]). Returns the time taken on this CPU.
    pub(in crate::linux::net) fn tcp_ack(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) -> Ps {
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        let ack = f.conn.ack_sent(f.rx.rcvbuf.saturating_sub(f.rx.rmem_alloc));
        s.counters.tcp_acks += 1;
        if at < f.owned_until {
            // sk_add_backlog: ACKs are cumulative, so the latest covers those queued before it
            // (v5.0+'s tcp_add_backlog coalesces them into one skb alike).
            f.backlog = Some(f.backlog.map_or(ack, |b| b.merge(ack)));
            s.counters.tcp_backlog_acks += 1;
            return Ps::ZERO;
        }
        self.tcp_ack_rcv(ctx, sock, ack, at)
    }

    /// The sender's `tcp_ack` of `seq` at `at` on this CPU, whose `tcp_data_snd_check`
    /// transmits the held tail if Nagle now lets it go (what is still in flight keeps it held)
    /// and queues it at the receiver: the rest of `net.tcp_send_cycles` on this CPU. Wakes a
    /// sleeping reader. Returns the time taken.
    pub(in crate::linux::net) fn tcp_ack_rcv(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        ack: tcp::Ack,
        at: Ps,
    ) -> Ps {
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let (slab, pa) = (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        f.conn.acked(ack);
        let go = f.held.as_ref().is_some_and(|t| !f.conn.nagle_holds(t.len) && f.conn.fits(t.len));
        if !go {
            return Ps::ZERO;
        }
        let tail = f.held.take().expect("the held tail");
        let len = tail.len;
        f.conn.transmitted(len);
        let xmit = s.costs.tcp_xmit;
        ctx.charge(Bucket::Syscall, xmit);
        if at + xmit < f.rx_owned_until {
            // The reader is inside tcp_recvmsg: the segment waits on its backlog.
            f.rx_backlog.push(tail);
            s.counters.tcp_rx_backlog += 1;
            return xmit;
        }
        let out = skbuff::deliver(slab, pa, ctx.cpu, at + xmit, tail, &mut f.rx, false, env)
            .unwrap_or_else(|e| panic!("socket delivery: {e:?}"));
        debug_assert!(!out.dropped && out.done == at + xmit);
        s.counters.net_delivered += 1;
        s.counters.net_delivered_bytes += len;
        let d = xmit + self.sk_enqueue_lines(ctx, sock, at + xmit, true);
        let d = d + self.tcp_received(ctx, sock, len, at + d);
        if let Some(r) = self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].reader.take() {
            return d + self.try_to_wake_up(ctx, r, at + d);
        }
        d
    }

    /// Whether the pair is in the state no read can end: the sender's tail held and the sender
    /// asleep for buffer room (so the tail cannot grow to the size goal and go by itself),
    /// nothing in flight, the receive queue empty. Only the delayed-ACK timer ACKs then (before
    /// v6.6, after a segment of at least `rcv_mss`; linux/net/ipv4/tcp.rs). With the default
    /// send buffer (linux/net/socket.rs) the tail reaches the size goal first.
    pub(in crate::linux::net) fn tcp_stall(&self, sock: u16) -> bool {
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        f.held.is_some()
            && f.writer.is_some()
            && f.in_flight.is_none()
            && f.rx.queue.is_empty()
            && f.rx_backlog.is_empty()
    }

    /// The stall begun by a sender going to sleep while the receiver sleeps in its receive: the receiver is woken
    /// to wait out the timer on its CPU (linux/net/socket.rs puts the timer's wait before a
    /// receive that would sleep into it); the stream workloads give the receiver a CPU of its
    /// own, so the wait is that CPU's idle time either way.
    pub(in crate::linux::net) fn tcp_stalled(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        if !self.tcp_stall(sock) {
            return Ps::ZERO;
        }
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let Some(r) = f.reader.take() else { return Ps::ZERO };
        self.tasks[r].saved.push_front(Continuation::Net(Step::DelAck { sock }));
        self.wake(ctx, r, ctx.now);
        Ps::ZERO
    }

    /// `tcp_delack_timer` on the receiver's CPU: idle until it fires (`Conn::delack_at`), then
    /// the ACK still pending is sent, with what it releases (the timer interrupt's own entry and
    /// exit are not charged).
    pub(in crate::linux::net) fn tcp_delack_timer(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let c = &s.flows[sock as usize].conn;
        if c.rcv_nxt == c.rcv_wup {
            return Ps::ZERO;
        }
        let wait = c.delack_at.map_or(Ps::ZERO, |t| t.saturating_sub(ctx.now));
        ctx.charge(Bucket::Idle, wait);
        s.counters.tcp_delayed_acks += 1;
        wait + self.tcp_ack(ctx, sock, ctx.now + wait)
    }
}

#[cfg(test)]
mod tests {
    use crate::run::{run, RunSpec};
    use crate::time::Ps;

    fn sockperf(kernel: &str, size: u64, warmup: Ps, window: Ps) -> crate::run::RunResult {
        let w = format!("sockperf throughput --tcp --mps max --msg-size {size}");
        let spec = RunSpec::of(kernel, &w, 2, warmup, window);
        run(&crate::profile::shipped("haswell-ep-2698v3-2s"), &spec).unwrap()
    }

    #[test]
    fn nagle_coalesces_small_sends_and_each_segment_is_acked_by_the_reader() {
        let r = sockperf("6.18", 14, Ps::US * 300, Ps::MS);
        let c = &r.counters;
        assert_eq!(r.oracle.violations, 0, "{:?}", r.oracle.examples);
        let sent = r.operations();
        // Every send held (a new tail or appended) or a segment of its own (the ACK of the tail
        // the sender transmitted at release_sock came while it was in user space), most held,
        // several a segment, one ACK a segment.
        let (held, segs) = (c["tcp_nagle_held"], c["net_delivered"]);
        assert!(held + segs + 2 >= sent && held * 4 > sent * 3, "{c:?}");
        assert!(c["net_delivered"] * 2 < sent, "{c:?}");
        assert!(c["tcp_acks"].abs_diff(c["net_delivered"]) <= 2 && c["tcp_delayed_acks"] == 0, "{c:?}");
        // Nothing lost on the way: bytes delivered are bytes sent, up to the tail held at the edge.
        assert!(c["net_delivered_bytes"] <= (sent + 2) * 14, "{c:?}");
    }

    #[test]
    fn before_v6_6_a_new_largest_segment_goes_when_the_held_tail_fills_the_size_goal() {
        // 500-byte messages: the first coalesced segment (two or more) is a new rcv_mss, which
        // v4.9's reader does not ACK; the default send buffer lets the held tail grow to the size
        // goal, which Nagle sends, long before the 40 ms timer.
        let old = sockperf("4.9", 500, Ps::US * 50, Ps::MS * 2);
        let new = sockperf("6.18", 500, Ps::US * 50, Ps::MS * 2);
        for r in [&old, &new] {
            let c = &r.counters;
            assert_eq!(c["tcp_delayed_acks"], 0, "{c:?}");
            assert!(r.operations() > 1000 && r.oracle.violations == 0, "{c:?}");
        }
    }
}
