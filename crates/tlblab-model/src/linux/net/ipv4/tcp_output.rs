//! A loopback TCP pair's sending side in the kernel's steps: `tcp_sendmsg` cutting a send into
//! skbs of the size goal and pushing them (net/ipv4/tcp.c; docs/references/linux-mm.md#tcp-segmentation),
//! Nagle's hold on the last one and the window's on any (tcp_output.c `tcp_write_xmit`, run
//! again when an ACK comes; docs/references/linux-mm.md#nagle-on-loopback), the receiver's
//! delayed-ACK timer (tcp_timer.c `tcp_delack_timer`), over linux/net/socket.rs's flows and the
//! sequence rules of linux/net/ipv4/tcp.rs.

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::net::core::skbuff;
use crate::linux::net::ipv4::{tcp, tcp_input};
use crate::linux::net::socket::{Step, NO_NET};
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

impl Kernel {
    /// `tcp_sendmsg_locked` (net/ipv4/tcp.c, v4.9 .. v6.18) from where the call stands (`first`:
    /// its start): the bytes left go into the write queue's tail while it is shorter than the
    /// size goal, then into new skbs of the size goal each (`tcp_send_mss`; the MSS here), the
    /// last one partial. A skb filled with more to copy goes at once if nothing is queued
    /// before it (`tcp_push_one`) and the window lets it; at the end `tcp_push` transmits the
    /// send head if the window and, for the last skb, Nagle let it. Each transmission is
    /// followed by its loopback delivery (the softirq `netif_rx` raised, run when the transmit
    /// path re-enables bottom halves) and the call goes on after it. A new skb needs
    /// `sk_stream_memory_free`, else the call sleeps in it ([`Kernel::tcp_wait_for_space`]).
    /// The call's bookkeeping costs `net.tcp_append_cycles` once; each transmission the rest of
    /// `net.tcp_send_cycles` (docs/references/linux-mm.md#tcp-segmentation). Before a new skb
    /// the call processes the ACKs waiting on its backlog as `tcp_backlog_flush_skbs` says (v4.9:
    /// before every skb after its first; v5.4+: every 16th).
    pub(in crate::linux::net) fn tcp_sendmsg(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        sock: u16,
        first: bool,
    ) -> Ps {
        let (mut d, mut first) = (Ps::ZERO, first);
        loop {
            let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
            if f.send_left == 0 {
                break;
            }
            let mss = f.conn.mss;
            let room = f.unsent.back().map_or(0, |tail| mss.saturating_sub(tail.len));
            if room == 0 && !first && !f.tcp_room() {
                return d + self.tcp_wait_for_space(ctx, t, sock, ctx.now + d);
            }
            let every = self.config.net.tcp_backlog_flush_skbs;
            if room == 0 && every > 0 && f.new_skbs >= every {
                // sk_flush_backlog, then the loop again (`goto restart`).
                f.new_skbs = 0;
                self.net.sockets.as_mut().expect(NO_NET).counters.tcp_backlog_flushes += 1;
                d += self.tcp_flush_backlog(ctx, sock, ctx.now + d);
                continue;
            }
            let copy = if room > 0 { room } else { mss }.min(f.send_left);
            f.send_left -= copy;
            f.new_skbs += u32::from(room == 0);
            d += if room > 0 {
                self.tcp_fill_tail(ctx, sock, copy, ctx.now + d)
            } else {
                self.tcp_new_skb(ctx, sock, copy, ctx.now + d)
            };
            if first {
                let path = self.net.sockets.as_ref().expect(NO_NET).costs.tcp_append;
                ctx.charge(Bucket::Syscall, path);
                d += path;
                first = false;
            }
            let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
            if f.send_left > 0 && f.unsent.len() == 1 && f.conn.fits(f.unsent[0].len) {
                return d + self.tcp_xmit_head(ctx, sock);
            }
        }
        if self.tcp_head_may_go(sock, true) {
            return d + self.tcp_xmit_head(ctx, sock);
        }
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &s.flows[sock as usize];
        if let Some(h) = f.unsent.front() {
            // The call ends with data held: by Nagle (the last skb, partial) or by the window.
            s.counters.tcp_nagle_held += 1;
            let nagle = f.unsent.len() == 1 && f.conn.nagle_holds(h.len);
            s.counters.tcp_rwnd_held += (!nagle && !f.conn.fits(h.len)) as u64;
        }
        let d = d + self.tcp_stalled(ctx, sock);
        self.tcp_release_at(ctx, sock, ctx.now + d);
        d
    }

    /// The receiver's clocks at `now` for its kernel's autotuning rule (v4.9: `jiffies`).
    pub(in crate::linux::net) fn tcp_clock(&self, now: Ps) -> tcp_input::TcpClock {
        if self.config.net.tcp_rcvbuf_autotune == tcp_input::RcvbufAutotune::V4_9 {
            tcp_input::TcpClock::jiffies(self.jiffies.at(now))
        } else {
            tcp_input::TcpClock::at(now)
        }
    }

    /// Whether `tcp_write_xmit` sends the write queue's head now: it ends inside the window
    /// (`tcp_snd_wnd_test`) and, if it is the last skb, Nagle lets it go (`tcp_nagle_test`;
    /// the others are full-sized; not asked with `nagle` false: `tcp_push`'s `TCP_NAGLE_PUSH`).
    pub(in crate::linux::net) fn tcp_head_may_go(&self, sock: u16, nagle: bool) -> bool {
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        let Some(h) = f.unsent.front() else { return false };
        f.conn.fits(h.len) && !(nagle && f.unsent.len() == 1 && f.conn.nagle_holds(h.len))
    }

    /// `tcp_transmit_skb` of the write queue's head from inside `tcp_sendmsg`: the rest of
    /// `net.tcp_send_cycles`, with the autocork test of its push (linux/net/ipv4/tcp.rs); its
    /// delivery follows as the next step, the socket still owned.
    fn tcp_xmit_head(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        let knobs = self.config.net;
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        let skb = f.unsent.pop_front().expect("an unsent skb");
        // Earlier data is unacknowledged while the receiver has not read it; `sk_wmem_alloc`
        // holds the clones still in a device queue: none here, loopback_xmit orphaned the last.
        let push = tcp::PushState {
            tail_len: skb.len,
            tail_truesize: skb.truesize,
            size_goal: f.conn.mss,
            earlier_unacked: f.wmem > skb.truesize,
            wmem_alloc: tcp::WMEM_ALLOC_BIAS + f.in_flight.as_ref().map_or(0, |q| q.truesize),
        };
        if tcp::should_autocork(&knobs, &push) {
            s.counters.tcp_autocorks += 1;
        }
        f.conn.transmitted(skb.len);
        f.in_flight = Some(skb);
        // Owned through the loopback softirq that follows (release_sock comes after it).
        f.owned_until = Ps(u64::MAX);
        let xmit = s.costs.tcp_xmit;
        ctx.charge(Bucket::Syscall, xmit);
        ctx.then(Continuation::Net(Step::Deliver { sock }));
        xmit
    }

    /// `tcp_sendmsg` copying `len` more bytes at `at` into the write queue's tail (not yet
    /// transmitted): what fits of the linear room, the rest in the task's page fragment, as a
    /// new skb is filled. Returns the time.
    fn tcp_fill_tail(&mut self, ctx: &mut Ctx, sock: u16, len: u64, at: Ps) -> Ps {
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let pa = self.mm.page_alloc.as_mut().expect(NO_NET);
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let tail = f.unsent.back_mut().expect("a tail");
        let before = tail.truesize;
        let out = skbuff::tcp_append(pa, &mut f.frag, tail, ctx.cpu, at, len, env).unwrap_or_else(|_| {
            panic!("out of memory in the socket layer (skbs are not reclaimable in the model)")
        });
        f.wmem += tail.truesize - before;
        self.sync_net_pages(sock);
        let (alloc, copy) = self.skb_copy_in(ctx, &out, len, at);
        alloc + copy + self.tcp_frag_refill(ctx, sock)
    }

    /// `tcp_sendmsg`'s `wait_for_space` at `at`, a new skb needed and `sk_stream_memory_free`
    /// false: `tcp_push` with `TCP_NAGLE_PUSH` (every skb queued is full here, so only the window
    /// holds the head), else `sk_stream_wait_memory`: the socket released (its backlog
    /// processed) while the writer sleeps until a read frees room, then the call goes on.
    fn tcp_wait_for_space(&mut self, ctx: &mut Ctx, t: usize, sock: u16, at: Ps) -> Ps {
        if self.tcp_head_may_go(sock, false) {
            return self.tcp_xmit_head(ctx, sock);
        }
        let d = self.tcp_flush_backlog(ctx, sock, at);
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        f.owned_until = Ps::ZERO;
        f.writer = Some(t);
        s.counters.net_send_sleeps += 1;
        // Woken, sk_wait_event takes the socket again (lock_sock), then the call goes on.
        ctx.then(Continuation::Net(Step::Sendmsg { sock }));
        ctx.then(Continuation::Net(Step::LockSock { sock }));
        let d = d + self.deschedule(ctx, false, at + d);
        d + self.tcp_stalled(ctx, sock)
    }

    /// A segment of `len` bytes just queued at the receiver at `at`: `tcp_event_data_recv`'s
    /// bookkeeping and `__tcp_ack_snd_check`, which may ACK at once (on this CPU, in the same
    /// softirq). `truesize` is the skb's (v6.11+ measures its `scaling_ratio` from it). Returns
    /// the time the ACK and what it released took.
    pub(in crate::linux::net) fn tcp_received(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        (len, truesize): (u64, u64),
        at: Ps,
    ) -> Ps {
        let (k, clock) = (self.config.net, self.tcp_clock(at));
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let full = len >= f.conn.rcv_mss;
        f.conn.received(&k, len, truesize, at);
        // tcp_rcv_established's timestamp sample (against the rcv_mss before this segment), then
        // tcp_event_data_recv's window sample.
        f.conn.rcv_rtt_sample(full, clock, f.rx.queue.len() <= 1);
        let free = f.rx.rcvbuf.saturating_sub(f.rx.rmem_alloc);
        f.conn.grow_window(len, free);
        if f.conn.ack_on_receive(free) {
            self.tcp_ack(ctx, sock, at)
        } else {
            Ps::ZERO
        }
    }

    /// The receiver's ACK at `at` on this CPU, sent and brought to the writer's socket in the
    /// same softirq ([`Kernel::tcp_send_ack`], [`Kernel::tcp_ack_arrives`]). Returns the time
    /// taken on this CPU.
    pub(in crate::linux::net) fn tcp_ack(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) -> Ps {
        let (ack, pre) = self.tcp_send_ack(ctx, sock);
        pre + self.tcp_ack_arrives(ctx, sock, ack, at + pre)
    }

    /// The receiver's `tcp_send_ack` on this CPU and the loopback softirq's path up to
    /// `tcp_v4_rcv`'s `bh_lock_sock_nested` of the writer's socket: `net.tcp_ack_cycles` less
    /// its locked part, charged. Returns the ACK and that time.
    pub(in crate::linux::net) fn tcp_send_ack(&mut self, ctx: &mut Ctx, sock: u16) -> (tcp::Ack, Ps) {
        let clock = self.tcp_clock(ctx.now);
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        let ack = f.conn.ack_sent(f.rx.rcvbuf.saturating_sub(f.rx.rmem_alloc));
        // Its timestamp, which the sender's next segments echo (`rcv_tsecr`).
        f.conn.rcvq.tsval = clock.ts;
        s.counters.tcp_acks += 1;
        let pre = s.costs.tcp_ack_pre;
        ctx.charge(Bucket::Syscall, pre);
        (ack, pre)
    }

    /// `tcp_v4_rcv` of the ACK at `at` on this CPU, under the writer's `sk_lock.slock`
    /// (linux/net/core/sock.rs; docs/references/linux-mm.md#socket-spinlock): a socket owned by
    /// its user (the writer inside `tcp_sendmsg`, between `lock_sock` and `release_sock`) gets
    /// it on its backlog, for `release_sock` on the writer's CPU; else it is processed here
    /// ([`Kernel::tcp_ack_rcv`]), the lock held for `net.tcp_ack_locked_cycles` and the
    /// transmissions that ACK lets go (their deliveries run after the unlock, as the softirq's
    /// next packets). Returns the time taken on this CPU.
    pub(in crate::linux::net) fn tcp_ack_arrives(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        ack: tcp::Ack,
        at: Ps,
    ) -> Ps {
        let s = self.net.sockets.as_ref().expect(NO_NET);
        let owned = at < s.flows[sock as usize].owned_until;
        let locked = if owned { Ps::ZERO } else { s.costs.tcp_ack_locked };
        let got = self.sk_slock(ctx, sock, at, locked, true);
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        if owned {
            // sk_add_backlog: ACKs are cumulative, so the latest covers those queued before it
            // (v5.0+'s tcp_add_backlog coalesces them into one skb alike).
            ack.queue_on(&mut f.backlog);
            s.counters.tcp_backlog_acks += 1;
            return got - at;
        }
        ctx.charge(Bucket::Syscall, locked);
        let d = got - at + locked;
        d + self.tcp_ack_rcv(ctx, sock, ack, at + d, Some(got))
    }

    /// The sender's `tcp_ack` of `seq` at `at` on this CPU, whose `tcp_data_snd_check` ->
    /// `tcp_write_xmit` transmits, in order, the unsent skbs the window and (for the last) Nagle
    /// now let go, and queues each at the receiver: the rest of `net.tcp_send_cycles` each, on
    /// this CPU, then wakes a writer asleep for room, then receives what it sent. Wakes a
    /// sleeping reader. `slock`: when this CPU took the writer's
    /// `sk_lock.slock` for it (the softirq's path), which it holds on through the
    /// transmissions. Returns the time taken.
    pub(in crate::linux::net) fn tcp_ack_rcv(
        &mut self,
        ctx: &mut Ctx,
        sock: u16,
        ack: tcp::Ack,
        at: Ps,
        slock: Option<Ps>,
    ) -> Ps {
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].conn.acked(ack);
        let mut sent = Vec::new();
        while self.tcp_head_may_go(sock, true) {
            let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
            let skb = f.unsent.pop_front().expect("the head");
            f.conn.transmitted(skb.len);
            sent.push(skb);
        }
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let (xmits, rx) = (s.costs.tcp_xmit * sent.len() as u64, s.costs.tcp_deliver);
        if let Some(got) = slock {
            s.flows[sock as usize].slock.release_at(got + s.costs.tcp_ack_locked + xmits);
        }
        // Each transmission ends at `netif_rx`, queueing the segment on this CPU's backlog;
        // tcp_data_snd_check's `tcp_check_space` then wakes the writer, and only after this
        // ACK's processing does `process_backlog` receive the segments (v4.9 .. v6.18).
        ctx.charge(Bucket::Syscall, xmits);
        let mut d = xmits;
        d += self.tcp_write_space(ctx, sock, at + d);
        for skb in sent {
            let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
            let (slab, pa) =
                (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
            let s = self.net.sockets.as_mut().expect(NO_NET);
            let f = &mut s.flows[sock as usize];
            let (len, truesize) = (skb.len, skb.truesize);
            ctx.charge(Bucket::Syscall, rx);
            d += rx;
            if at + d < f.rx_owned_until {
                // The reader is inside tcp_recvmsg: the segment waits on its backlog.
                f.rx_backlog.push(skb);
                s.counters.tcp_rx_backlog += 1;
                continue;
            }
            let out = skbuff::deliver(slab, pa, ctx.cpu, at + d, skb, &mut f.rx, false, env)
                .unwrap_or_else(|e| panic!("socket delivery: {e:?}"));
            debug_assert!(!out.dropped && out.done == at + d);
            s.counters.net_delivered += 1;
            s.counters.net_delivered_bytes += len;
            d += self.sk_enqueue_lines(ctx, sock, at + d, true);
            d += self.tcp_received(ctx, sock, (len, truesize), at + d);
            if let Some(r) = self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].reader.take() {
                d += self.try_to_wake_up(ctx, r, at + d);
            }
        }
        d
    }

    /// `sk_stream_write_space` at `at` on this CPU: a writer asleep for buffer room is woken
    /// once there is room (the skbs an ACK acknowledged are freed: `sk_wmem_queued` falls
    /// below `sk_sndbuf`; the read freed room at the receiver). Returns the time.
    pub(in crate::linux::net) fn tcp_write_space(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) -> Ps {
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        if !f.tcp_room() {
            return Ps::ZERO;
        }
        match f.writer.take() {
            Some(w) => self.try_to_wake_up(ctx, w, at),
            None => Ps::ZERO,
        }
    }

    /// Whether the pair is in the state no read can end: the sender's tail held and the sender
    /// asleep for buffer room (so the tail cannot grow to the size goal and go by itself),
    /// nothing in flight, the receive queue empty. Only the delayed-ACK timer ACKs then (before
    /// v6.6, after a segment of at least `rcv_mss`; linux/net/ipv4/tcp.rs). With the default
    /// send buffer (linux/net/socket.rs) the tail reaches the size goal first.
    pub(in crate::linux::net) fn tcp_stall(&self, sock: u16) -> bool {
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        !f.unsent.is_empty()
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
    fn an_ack_wakes_the_writer_before_the_segments_it_released_are_received() {
        // netperf's 8 KiB stream with mmtests' 8448-byte buffers on 6.18, each side waking the
        // other from idle (a guest's 20 us way out of idle, as the probe measures on a KVM
        // guest, so that the pair's pace is its wake-ups): the reader's ACK lets the writer's
        // held segments go and frees its room. The kernel queues those segments (netif_rx) and
        // wakes the writer before process_backlog receives them, so splitting the receive out
        // of the same send path wakes the writer sooner and the pair runs faster; received
        // first (the split folded back into the transmission), it would not.
        let run_with = |split: bool| {
            let mut p = crate::profile::shipped("haswell-ep-2698v3-2s");
            p.kernel.idle_exit_ns = Some(crate::profile::Sourced {
                value: 20_000.0,
                source: "test".into(),
                confidence: crate::profile::Confidence::Estimate,
            });
            if !split {
                p.net.as_mut().unwrap().tcp_deliver_cycles = None;
            }
            let w = "netperf -t TCP_STREAM -s 8448 -S 8448 -m 8192";
            let r = run(&p, &RunSpec::of("6.18", w, 2, Ps::US * 500, Ps::MS * 5)).unwrap();
            assert_eq!(r.oracle.violations, 0, "{:?}", r.oracle.examples);
            r
        };
        let (split, folded) = (run_with(true), run_with(false));
        assert!(split.counters["net_send_sleeps"] * 3 > split.operations(), "{:?}", split.counters);
        assert!(
            split.metric.value > folded.metric.value * 1.01,
            "split {} against folded {} Mbps",
            split.metric.value,
            folded.metric.value
        );
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

    fn netperf(kernel: &str, buf: u64, size: u64) -> crate::run::RunResult {
        let w = format!("netperf -t TCP_STREAM -s {buf} -S {buf} -m {size}");
        let spec = RunSpec::of(kernel, &w, 2, Ps::US * 300, Ps::MS);
        run(&crate::profile::shipped("haswell-ep-2698v3-2s"), &spec).unwrap()
    }

    #[test]
    fn a_send_longer_than_the_mss_is_segments_of_the_mss() {
        // mmtests' -s/-S 8448: a 8448-byte window, an MSS of 4224, so an 8192-byte send is a
        // full segment and a partial one, in v4.9 and v6.18 alike (a Linux 6.18 host: 2.00 data
        // segments a send). Every segment is at most the MSS.
        for kernel in ["4.9", "6.18"] {
            let r = netperf(kernel, 8448, 8192);
            let c = &r.counters;
            assert_eq!(r.oracle.violations, 0, "{kernel}: {:?}", r.oracle.examples);
            let per_send = c["net_delivered"] as f64 / r.operations() as f64;
            assert!((1.9..=2.1).contains(&per_send), "{kernel}: {per_send} segments a send, {c:?}");
            assert!(c["net_delivered_bytes"] <= c["net_delivered"] * 4224, "{kernel}: {c:?}");
            assert_eq!(c["tcp_delayed_acks"], 0, "{kernel}: {c:?}");
        }
    }

    #[test]
    fn v4_9_processes_the_senders_backlog_before_its_second_skb_and_v5_4_every_16th() {
        // Four skbs a send, two a window: the reader's window update comes while the sender is
        // still inside the call; v4.9 (a flush before every skb after the first) processes it
        // there, v5.4+ (every 16th) only at release_sock: the same segments a send, the flushes
        // counted where the call makes them.
        let w = "netperf -t TCP_STREAM -s 8448 -S 8448 -m 16384";
        let at = |every: u32| {
            let mut spec = RunSpec::of("4.9", w, 2, Ps::US * 300, Ps::MS);
            spec.kernel.net.tcp_backlog_flush_skbs = every;
            run(&crate::profile::shipped("haswell-ep-2698v3-2s"), &spec).unwrap()
        };
        assert_eq!(crate::linux::config::KernelConfig::preset("4.9").unwrap().net.tcp_backlog_flush_skbs, 1);
        assert_eq!(
            crate::linux::config::KernelConfig::preset("6.18").unwrap().net.tcp_backlog_flush_skbs,
            16
        );
        let (each, batched) = (at(1), at(16));
        for r in [&each, &batched] {
            let per_send = r.counters["net_delivered"] as f64 / r.operations() as f64;
            assert!(r.oracle.violations == 0 && (3.8..=4.1).contains(&per_send), "{:?}", r.counters);
        }
        // v4.9: sk_flush_backlog before each of a send's skbs after its first, three a send;
        // v5.4+: a call of four skbs never reaches the 16th.
        let flushes =
            |r: &crate::run::RunResult| r.counters["tcp_backlog_flushes"] as f64 / r.operations() as f64;
        assert!((2.9..=3.1).contains(&flushes(&each)), "{:?}", each.counters);
        assert_eq!(batched.counters["tcp_backlog_flushes"], 0, "{:?}", batched.counters);
    }

    #[test]
    fn a_send_within_loopbacks_mss_is_never_split() {
        // -s/-S 256 KiB: a 256 KiB window, so the MSS is loopback's size goal and a 16 KiB send fits
        // in one segment (Nagle may coalesce several into one, never split one).
        let r = netperf("6.18", 1 << 18, 16_384);
        let c = &r.counters;
        assert!(r.operations() > 100 && r.oracle.violations == 0, "{c:?}");
        assert!(
            c["net_delivered"] <= r.operations() + 2,
            "{} segments for {} sends",
            c["net_delivered"],
            r.operations()
        );
        assert!(
            c["net_delivered_bytes"] <= c["net_delivered"] * crate::linux::net::ipv4::tcp::LOOPBACK_SIZE_GOAL,
            "{c:?}"
        );
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
