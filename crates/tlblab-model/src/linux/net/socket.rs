//! Loopback IPv4 sockets as system calls (net/socket.c `sendto` / `recvfrom` into
//! net/ipv4/udp.c and tcp.c), as of v4.9, over linux/net/core/skbuff.rs's allocations: a send allocates
//! the skb and its head (and TCP's page fragments) on the sender's CPU, the loopback softirq
//! delivers it on the same CPU once the sender's path has run (`netif_rx` raises NET_RX there),
//! and a receive takes it off the queue and frees it on the receiver's CPU: the remote-free
//! pattern that makes the per-CPU page lists miss on one side and overflow on the other.
//!
//! Blocking follows net/core: a receive on an empty queue sleeps (`__skb_recv_datagram` /
//! `sk_wait_data`) until a delivery wakes it (`sk_data_ready`); a TCP send sleeps while the
//! sender's unacknowledged data fills `sk_sndbuf` or the receiver's queue fills `sk_rcvbuf`
//! (`sk_stream_wait_memory`; at the call's start, and before each new skb inside it), woken by
//! the receive that frees room (`sk_write_space`); a TCP skb is transmitted only inside the
//! window the last ACK offered, and the MSS is half the largest window (linux/net/ipv4/tcp.rs;
//! docs/references/linux-mm.md#tcp-small-windows). UDP on loopback never blocks the sender
//! (`loopback_xmit` orphans the skb, releasing its wmem at once); a full receive queue drops.
//!
//! TCP segmentation (linux/net/ipv4/tcp_output.rs; docs/references/linux-mm.md#tcp-segmentation):
//! `tcp_sendmsg` fills skbs up to the size goal (the MSS here), so a send longer than the MSS is
//! several segments, each transmitted when the window (and, for the last, Nagle) lets it and
//! delivered before the call goes on; the unsent ones wait on the write queue. The receiver's
//! window is `__tcp_select_window`'s: whole multiples of its MSS estimate without window scaling
//! (netperf's `-S`), the scale's with it.
//!
//! TCP autocorking (v3.14+) is tested at every push (linux/net/ipv4/tcp.rs) and never holds on
//! loopback. Nagle's algorithm (netperf without `-D` and sockperf's throughput mode leave it on)
//! holds a send while the last small segment is unacknowledged: the next sends append to that
//! tail skb, and the receiver's ACK (as `tcp_cleanup_rbuf` and the delayed-ACK timer send it,
//! linux/net/ipv4/tcp.rs) transmits it on the CPU that processes the ACK: the receiver's, or,
//! when the ACK finds the sender inside `tcp_sendmsg`, the sender's at its `release_sock`
//! (linux/net/core/sock.rs). A TCP send costs `net.tcp_append_cycles` once (`tcp_sendmsg`'s
//! bookkeeping, the push that Nagle stops) and each segment it or a later ACK transmits the rest
//! of `net.tcp_send_cycles`; a pure ACK costs `net.tcp_ack_cycles` on the CPU that sends it
//! (the reader's, or the writer's for one sent in the delivery's softirq), its locked part run
//! under the writer's `sk_lock.slock` there or, the writer owning its socket, by the writer at
//! `release_sock` (linux/net/core/sock.rs). Not modelled: socket creation as a
//! system call (the workloads connect their pair in their untimed setup, as netperf's control
//! connection does before the test), quick-ACK mode (the connection's first
//! segments), the send buffer's growth (`tcp_wmem` stays at its default; the receive buffer
//! autotunes: linux/net/ipv4/tcp_input.rs, docs/references/linux-mm.md#tcp-rcvbuf-autotuning),
//! `SO_RCVLOWAT`, a read size for sockperf's reader (it takes the front segment whole; netperf's
//! reads `-m` bytes a call across segments), and several readers or writers per socket.

use crate::attribution::Bucket;
use crate::hw::lock::SpinLock;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::lib::iov_iter::CopyRate;
use crate::linux::mm::slub::Object;
use crate::linux::net::core::skbuff::{self, NetCaches, NetOutcome, PageFrag, RecvSock, SkBuff};
use crate::linux::net::ipv4::{tcp, tcp_input};
use crate::linux::syscalls::Op;
use crate::linux::{Continuation, Kernel};
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// The loopback socket paths, counted.
    Counters {
        /// Datagrams or segments delivered to a receive queue, and their payload bytes.
        net_delivered,
        net_delivered_bytes,
        /// Datagrams dropped on a full receive queue (`sk_drops`, UDP only).
        net_drops,
        /// Receives completed, and their payload bytes.
        net_received,
        net_received_bytes,
        /// Receivers that slept on an empty queue; TCP senders that slept for buffer room.
        net_recv_sleeps,
        net_send_sleeps,
        /// TCP pushes `tcp_should_autocork` would hold (linux/net/ipv4/tcp.rs): none on
        /// loopback, whose transmit releases the clone before the next send.
        tcp_autocorks,
        /// TCP sends that ended with data on the write queue, held by Nagle or the window; ACKs
        /// the receiver sent, and those of them the delayed-ACK timer sent.
        tcp_nagle_held,
        tcp_acks,
        tcp_delayed_acks,
        /// ACKs that found the sender's socket owned by its user (inside `tcp_sendmsg`) and
        /// waited on its backlog; held tails the sender then transmitted at `release_sock`
        /// (linux/net/core/sock.rs).
        tcp_backlog_acks,
        tcp_backlog_xmits,
        /// Of those, the sends whose first unsent skb would end beyond the window the receiver
        /// offered (`tcp_snd_wnd_test`) where Nagle would have let it go.
        tcp_rwnd_held,
        /// TCP segments that found the reader inside `tcp_recvmsg` and waited on its backlog
        /// for its `release_sock` (linux/net/core/sock.rs).
        tcp_rx_backlog,
        /// `sk_flush_backlog` calls inside `tcp_sendmsg`, before a new skb
        /// (`tcp_backlog_flush_skbs`; linux/net/ipv4/tcp_output.rs).
        tcp_backlog_flushes,
        /// Takings of the writer's `sk_lock.slock` (linux/net/core/sock.rs) that found it held,
        /// and the time spun for it (ps; the lock word's transfer, charged too, not counted):
        /// by the writer at `lock_sock` / `release_sock`, and by an ACK's softirq at
        /// `bh_lock_sock_nested`.
        tcp_slock_waits,
        tcp_slock_spin_ps,
        tcp_ack_slock_waits,
        tcp_ack_slock_spin_ps,
    }
}

/// The transport of a socket pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Udp,
    Tcp,
}

/// `sysctl_wmem_default` / `sysctl_rmem_default` (v4.9: `SK_WMEM_MAX` = `SK_RMEM_MAX` =
/// `SKB_TRUESIZE(256) * 256`), what a UDP socket gets without `SO_SNDBUF` / `SO_RCVBUF`.
fn udp_default_bufs() -> (u64, u64) {
    (skbuff::sk_mem_max(), skbuff::sk_mem_max())
}

/// A TCP socket's buffers without `SO_SNDBUF` / `SO_RCVBUF`: `tcp_rmem[1]` (87380 in v4.9, 131072
/// from v4.19; linux/net/ipv4/tcp_input.rs grows it as the kernel's rule does) and the send buffer
/// `tcp_init_buffer_space` sets once the connection is established: v4.9's `tcp_fixup_sndbuf`,
/// `SKB_TRUESIZE(mss_clamp + MAX_TCP_HEADER)` for `TCP_INIT_CWND` (10) segments, under
/// `tcp_wmem[2]` (4 MiB): with loopback's MSS about 650 KiB, room for a held tail to reach the
/// size goal (v6.x's `tcp_sndbuf_expand` gives more still; the later growth is not modelled).
fn tcp_default_bufs(rule: tcp_input::RcvbufAutotune) -> (u64, u64) {
    const LOOPBACK_MSS_CLAMP: u64 = 65_536 - 40;
    let sndbuf = (skbuff::skb_truesize(LOOPBACK_MSS_CLAMP + skbuff::TCP_MAX_HEADER) * 10).min(4 << 20);
    (sndbuf, rule.rmem_default())
}

/// A connected loopback pair: the sender's side and the receiver's queue.
#[derive(Debug, Clone)]
pub struct Flow {
    pub proto: Proto,
    pub sndbuf: u64,
    pub rx: RecvSock,
    /// TCP: truesize of the skbs sent and not yet consumed by the receiver (`sk_wmem_queued`
    /// until acknowledged and freed). UDP: always 0 (orphaned at `loopback_xmit`).
    pub wmem: u64,
    /// The sending task's `task_frag` (TCP payload pages).
    pub frag: PageFrag,
    /// TCP: Nagle's and the delayed ACK's sequence state.
    pub conn: tcp::Conn,
    /// TCP: the write queue from `tcp_send_head` on, the skbs built and not yet transmitted
    /// (held by Nagle or the window), the last one the tail the next bytes fill; and the bytes
    /// of the `tcp_sendmsg` under way not yet copied.
    pub(in crate::linux::net) unsent: std::collections::VecDeque<SkBuff>,
    pub(in crate::linux::net) send_left: u64,
    /// TCP: the skbs that call allocated since it began or last flushed its backlog
    /// (`process_backlog` in `tcp_sendmsg`).
    pub(in crate::linux::net) new_skbs: u32,
    /// The skb between the sender's path and its delivery.
    pub(in crate::linux::net) in_flight: Option<SkBuff>,
    /// A task asleep in `recvfrom` / in `sendto`.
    pub(in crate::linux::net) reader: Option<usize>,
    pub(in crate::linux::net) writer: Option<usize>,
    /// TCP: until when the sender's socket is owned by its user (`lock_sock` in `tcp_sendmsg`
    /// up to its `release_sock`; `Ps(u64::MAX)` while that time is not known yet, zero outside),
    /// and the highest sequence acknowledged by the ACKs waiting on its backlog meanwhile.
    pub(in crate::linux::net) owned_until: Ps,
    pub(in crate::linux::net) backlog: Option<tcp::Ack>,
    /// TCP: until when the reader's socket is owned by its user (`lock_sock` in `tcp_recvmsg`
    /// to its `release_sock`, as `owned_until` for the sender), and the segments that reached
    /// it meanwhile, waiting on its backlog (linux/net/core/sock.rs).
    pub(in crate::linux::net) rx_owned_until: Ps,
    pub(in crate::linux::net) rx_backlog: Vec<SkBuff>,
    /// TCP: the writer's `sk_lock.slock`, and the ACK the reader sent that its softirq has yet
    /// to bring to it (linux/net/core/sock.rs).
    pub(in crate::linux::net) slock: SpinLock,
    pub(in crate::linux::net) ack_in_flight: Option<tcp::Ack>,
}

impl Flow {
    /// Room for another TCP send: `sk_stream_memory_free`, and the receiver's queue under its
    /// buffer (the model's stand-in for the receive memory limit; the window itself is
    /// `tcp::Conn::fits`, tested at each transmission).
    pub(in crate::linux::net) fn tcp_room(&self) -> bool {
        self.wmem < self.sndbuf && self.rx.rmem_alloc < self.rx.rcvbuf
    }
}

/// A socket call's continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A send's body (after the entry, or after a sleep for buffer room).
    Send { sock: u16, len: u32 },
    /// A receive's body (after the entry, or after a sleep on an empty queue): `len` as in
    /// [`Op::Recv`].
    Recv { sock: u16, len: u32 },
    /// The loopback softirq delivering the send's skb, then the return to user space.
    Deliver { sock: u16 },
    /// The receiver's delayed-ACK timer (`tcp_delack_timer`) on its CPU, before its receive.
    DelAck { sock: u16 },
    /// TCP: `tcp_sendmsg` going on after a segment's delivery, or after a sleep for buffer
    /// room inside the call (linux/net/ipv4/tcp_output.rs).
    Sendmsg { sock: u16 },
    /// TCP: the send's `release_sock` (its backlog processed), then the return to user space.
    Release { sock: u16 },
    /// TCP: `tcp_sendmsg_locked` from its start, after `lock_sock`.
    Locked { sock: u16 },
    /// TCP: `lock_sock` again after a sleep for buffer room inside the call (`sk_wait_event`).
    LockSock { sock: u16 },
    /// TCP: the reader's ACK reaching `tcp_v4_rcv`'s `bh_lock_sock_nested` of the writer's
    /// socket in the softirq on the reader's CPU.
    AckRcv { sock: u16 },
    /// TCP: the reader's `release_sock` after its ACK went out, then the return to user space.
    RxRelease { sock: u16 },
    /// TCP: the receive's `tcp_cleanup_rbuf` after copying `copied` bytes out (the ACK, if one
    /// is due), then the return to user space. Its own step, so that the ACK meets the
    /// sender's socket as it is at that time (owned or not).
    Cleanup { sock: u16, copied: u32 },
}

/// The protocol paths' costs (`[net]`) and the payload copy (linux/lib/iov_iter.rs).
#[derive(Debug, Clone)]
pub struct Costs {
    pub udp_send: Ps,
    pub udp_recv: Ps,
    pub tcp_send: Ps,
    pub tcp_recv: Ps,
    /// A send Nagle holds, and the transmission of a held tail (the rest of `tcp_send`, less
    /// its loopback receive).
    pub tcp_append: Ps,
    pub tcp_xmit: Ps,
    /// A segment's loopback receive (`net.tcp_deliver_cycles`; zero without it): the NET_RX
    /// softirq's part of `tcp_send`, run after whatever queued the segment.
    pub tcp_deliver: Ps,
    /// A pure ACK up to the writer's `sk_lock.slock` (its transmission and the softirq's path
    /// to `tcp_v4_rcv`'s lock), and its part under that lock (`net.tcp_ack_cycles` less and
    /// `net.tcp_ack_locked_cycles`; zero without them).
    pub tcp_ack_pre: Ps,
    pub tcp_ack_locked: Ps,
    pub copy: CopyRate,
}

impl Costs {
    pub fn from_profile(p: &MachineProfile) -> Result<Costs, ProfileError> {
        let n = p.net()?;
        let mhz = p.clock_mhz();
        let cyc = |v: &crate::profile::Sourced| Ps::from_cycles(v.value, mhz);
        let locked = n.tcp_ack_locked_cycles.as_ref().map_or(Ps::ZERO, cyc);
        let deliver = n.tcp_deliver_cycles.as_ref().map_or(Ps::ZERO, cyc);
        Ok(Costs {
            udp_send: cyc(&n.udp_send_cycles),
            udp_recv: cyc(&n.udp_recv_cycles),
            tcp_send: cyc(&n.tcp_send_cycles),
            tcp_recv: cyc(&n.tcp_recv_cycles),
            tcp_append: cyc(&n.tcp_append_cycles),
            tcp_xmit: cyc(&n.tcp_send_cycles)
                .saturating_sub(cyc(&n.tcp_append_cycles))
                .saturating_sub(deliver),
            tcp_deliver: deliver,
            tcp_ack_pre: n.tcp_ack_cycles.as_ref().map_or(Ps::ZERO, cyc).saturating_sub(locked),
            tcp_ack_locked: locked,
            copy: CopyRate::from_profile(p),
        })
    }
}

/// The socket layer's state on a machine that boots it (SLUB and a `[net]` section).
#[derive(Debug, Clone)]
pub struct Sockets {
    pub costs: Costs,
    pub flows: Vec<Flow>,
    pub counters: Counters,
}

impl Sockets {
    pub fn new(costs: Costs) -> Sockets {
        Sockets { costs, flows: Vec::new(), counters: Counters::default() }
    }
}

pub(in crate::linux::net) const NO_NET: &str =
    "socket calls need SLUB and the profile's [net] section (run::run checks both)";

impl Kernel {
    /// Connects a loopback pair of `proto` in the workload's untimed setup, with `SO_SNDBUF` /
    /// `SO_RCVBUF` set to `bufs` (as netperf's `-s` / `-S` do) or the defaults. Returns its id.
    pub fn socket_pair(&mut self, proto: Proto, bufs: Option<(u64, u64)>) -> u16 {
        let (knobs, clock) = (self.config.net, self.tcp_clock(Ps::ZERO));
        let (sndbuf, rcvbuf) = match (bufs, proto) {
            (Some((s, r)), _) => skbuff::setsockopt_bufs(s, r),
            (None, Proto::Udp) => udp_default_bufs(),
            (None, Proto::Tcp) => tcp_default_bufs(knobs.tcp_rcvbuf_autotune),
        };
        let mut conn = tcp::Conn::with_knobs(&knobs, false, rcvbuf, bufs.is_some());
        conn.established_at(clock);
        self.net.sockets.as_mut().expect(NO_NET).flows.push(Flow {
            proto,
            sndbuf,
            // v4.9's tcp_fixup_rcvbuf may have raised it at establishment.
            rx: RecvSock {
                rcvbuf: if proto == Proto::Tcp { conn.rcvbuf } else { rcvbuf },
                ..Default::default()
            },
            wmem: 0,
            frag: PageFrag::default(),
            conn,
            unsent: std::collections::VecDeque::new(),
            send_left: 0,
            new_skbs: 0,
            in_flight: None,
            reader: None,
            writer: None,
            owned_until: Ps::ZERO,
            backlog: None,
            rx_owned_until: Ps::ZERO,
            rx_backlog: Vec::new(),
            slock: SpinLock::new(),
            ack_in_flight: None,
        });
        (self.net.sockets.as_mut().expect(NO_NET).flows.len() - 1) as u16
    }

    /// `setsockopt(TCP_NODELAY)` on the pair's sending socket (Linux's default is off).
    pub fn socket_nodelay(&mut self, sock: u16, on: bool) {
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].conn.nodelay = on;
    }

    /// The socket layer's counters, on a machine that boots it.
    pub fn socket_counters(&self) -> Option<Counters> {
        self.net.sockets.as_ref().map(|n| n.counters)
    }

    /// The effective `(sk_sndbuf, sk_rcvbuf)` of a pair.
    pub fn socket_bufs(&self, sock: u16) -> (u64, u64) {
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        (f.sndbuf, f.rx.rcvbuf)
    }

    /// `sendto` / `recvfrom` from task `t`: the entry, then the body as a continuation.
    pub(in crate::linux) fn socket_call(&mut self, ctx: &mut Ctx, op: Op) -> Ps {
        let step = match op {
            Op::Send { sock, len } => Step::Send { sock, len },
            Op::Recv { sock, len } => Step::Recv { sock, len },
            _ => unreachable!("not a socket call: {op:?}"),
        };
        ctx.then(Continuation::Net(step));
        let d = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, d);
        d + self.kernel_path(ctx, Path::SyscallEntry)
    }

    pub(in crate::linux) fn socket_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        match s {
            Step::Send { sock, len } => self.sock_send(ctx, t, sock, len as u64),
            Step::Recv { sock, len } => self.sock_recv(ctx, t, sock, len),
            Step::Deliver { sock } => self.sock_deliver(ctx, sock),
            Step::DelAck { sock } => self.tcp_delack_timer(ctx, sock),
            Step::Sendmsg { sock } => self.tcp_sendmsg(ctx, t, sock, false),
            Step::Release { sock } => self.tcp_release_sock(ctx, sock),
            Step::Cleanup { sock, copied } => self.tcp_cleanup_rbuf(ctx, sock, copied as u64),
            Step::Locked { sock } => self.tcp_sendmsg(ctx, t, sock, true),
            Step::LockSock { sock } => self.lock_sock(ctx, sock),
            Step::AckRcv { sock } => {
                let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
                let ack = f.ack_in_flight.take().expect("an ACK on its way");
                self.tcp_ack_arrives(ctx, sock, ack, ctx.now)
            }
            Step::RxRelease { sock } => {
                let d = self.tcp_rx_release_sock(ctx, sock, ctx.now);
                d + self.socket_exit(ctx)
            }
        }
    }

    /// The return to user space.
    pub(in crate::linux::net) fn socket_exit(&mut self, ctx: &mut Ctx) -> Ps {
        let d = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, d);
        d + self.kernel_path(ctx, Path::SyscallExit)
    }

    /// `udp_sendmsg` / `tcp_sendmsg`: sleep for room (TCP), then UDP allocates the datagram's
    /// skb, copies the payload and runs the protocol path, and TCP fills its skbs
    /// (linux/net/ipv4/tcp_output.rs); the delivery follows as its own step.
    fn sock_send(&mut self, ctx: &mut Ctx, t: usize, sock: u16, len: u64) -> Ps {
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        if f.proto == Proto::Tcp {
            if !f.tcp_room() {
                f.writer = Some(t);
                self.net.sockets.as_mut().expect(NO_NET).counters.net_send_sleeps += 1;
                ctx.then(Continuation::Net(Step::Send { sock, len: len as u32 }));
                let d = self.deschedule(ctx, false, ctx.now);
                return d + self.tcp_stalled(ctx, sock);
            }
            (f.send_left, f.new_skbs) = (len, 0);
            // lock_sock, then the call's body from the time it holds the socket.
            ctx.then(Continuation::Net(Step::Locked { sock }));
            return self.lock_sock(ctx, sock);
        }
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let (slab, pa) = (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
        let caches = NetCaches::lookup(slab);
        let Ok((skb, out)) = skbuff::udp_alloc(slab, pa, caches, ctx.cpu, ctx.now, len, env) else {
            panic!("out of memory in the socket layer (skbs are not reclaimable in the model)")
        };
        self.sync_net_pages(sock);
        for o in [skb.skb, skb.head] {
            self.object_held(o, 1);
        }
        let path = self.net.sockets.as_ref().expect(NO_NET).costs.udp_send;
        ctx.charge(Bucket::Syscall, path);
        let (alloc, copy) = self.skb_copy_in(ctx, &out, len, ctx.now);
        // The head takes a datagram whole; its lines and the sk_buff's a receive on another CPU
        // may hold.
        let head_lines = (len + skbuff::UDP_IP_HEADERS).div_ceil(64).max(1);
        let copy =
            copy + self.skb_refill_lines(ctx, &[(skb.skb, skbuff::skb_meta_lines()), (skb.head, head_lines)]);
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        f.in_flight = Some(skb);
        ctx.then(Continuation::Net(Step::Deliver { sock }));
        alloc + copy + path
    }

    /// `tcp_sendmsg`'s new skb of `len` bytes at `at`: allocated (v4.9 copies its first bytes
    /// into a 2 KB linear head; v5.10+ into frags only), filled, queued unsent at the write
    /// queue's tail and charged to `sk_wmem_queued`. Returns the allocation and copy time.
    pub(in crate::linux::net) fn tcp_new_skb(&mut self, ctx: &mut Ctx, sock: u16, len: u64, at: Ps) -> Ps {
        let linear = !self.config.net.tcp_paged_payload;
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let (slab, pa) = (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
        let caches = NetCaches::lookup(slab);
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let r = skbuff::tcp_alloc(slab, pa, caches, &mut f.frag, ctx.cpu, at, len, linear, env);
        let Ok((skb, out)) = r else {
            panic!("out of memory in the socket layer (skbs are not reclaimable in the model)")
        };
        self.sync_net_pages(sock);
        for o in [skb.skb, skb.head] {
            self.object_held(o, 1);
        }
        let (alloc, copy) = self.skb_copy_in(ctx, &out, len, at);
        // The head takes a v4.9 send up to its linear room, a v5.10+ send only its headers.
        let head_bytes = if linear { len.min(skbuff::tcp_linear_room()) } else { 0 };
        let head_lines = head_bytes.div_ceil(64).max(1);
        let copy =
            copy + self.skb_refill_lines(ctx, &[(skb.skb, skbuff::skb_meta_lines()), (skb.head, head_lines)]);
        let copy = copy + self.tcp_frag_refill(ctx, sock);
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        f.wmem += skb.truesize;
        f.unsent.push_back(skb);
        alloc + copy
    }

    /// What the send's copies into the pair's page fragment since the last call take back
    /// from a reader's cache ([`Kernel::frag_refill_lines`]).
    pub(in crate::linux::net) fn tcp_frag_refill(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let mut filled = std::mem::take(&mut f.frag.filled);
        let d = self.frag_refill_lines(ctx, &filled);
        // The log goes back empty, its capacity kept (no allocation per skb).
        filled.clear();
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].frag.filled = filled;
        d
    }

    /// After a softirq that ran inside `tcp_sendmsg` (at `at`): the call goes on with the rest
    /// of the send or the next skb it may transmit, else `release_sock` follows.
    fn tcp_sendmsg_goes_on(&mut self, ctx: &mut Ctx, sock: u16, at: Ps) {
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        if f.send_left > 0 || !f.unsent.is_empty() {
            ctx.then(Continuation::Net(Step::Sendmsg { sock }));
        } else {
            self.tcp_release_at(ctx, sock, at);
        }
    }

    /// The NET_RX softirq on the sender's CPU: queue (or drop) the skb, wake the receiver. A
    /// TCP segment's receive path (`tcp_deliver`) is charged here, after its transmission.
    fn sock_deliver(&mut self, ctx: &mut Ctx, sock: u16) -> Ps {
        let s = self.net.sockets.as_mut().expect(NO_NET);
        let f = &mut s.flows[sock as usize];
        let skb = f.in_flight.take().expect("a send in flight");
        let rx = if f.proto == Proto::Tcp { s.costs.tcp_deliver } else { Ps::ZERO };
        ctx.charge(Bucket::Syscall, rx);
        let now = ctx.now + rx;
        if f.proto == Proto::Tcp && now < f.rx_owned_until {
            // tcp_v4_rcv finds the reader's socket owned: sk_add_backlog, nothing else here.
            f.rx_backlog.push(skb);
            s.counters.tcp_rx_backlog += 1;
            // The call goes on if the send has more (bytes left or skbs unsent).
            self.tcp_sendmsg_goes_on(ctx, sock, now);
            return rx;
        }
        let (len, truesize, objs) = (skb.len, skb.truesize, [skb.skb, skb.head]);
        let drop = f.proto == Proto::Udp && f.rx.rmem_alloc >= f.rx.rcvbuf;
        if drop {
            for o in objs {
                self.object_held(o, -1);
            }
            self.skb_freed_here(ctx.cpu, &objs);
        }
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let (slab, pa) = (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let may_drop = f.proto == Proto::Udp;
        let out = skbuff::deliver(slab, pa, ctx.cpu, now, skb, &mut f.rx, may_drop, env)
            .unwrap_or_else(|e| panic!("socket delivery: {e:?}"));
        debug_assert_eq!(out.dropped, drop);
        self.sync_net_pages(sock);
        let mut d = rx + self.charge_net(ctx, &out, now);
        d += self.sk_enqueue_lines(ctx, sock, ctx.now + d, !drop);
        let c = &mut self.net.sockets.as_mut().expect(NO_NET).counters;
        if drop {
            c.net_drops += 1;
        } else {
            c.net_delivered += 1;
            // The payload (TCP: all of it; UDP: without the headers the skb's length counts).
            c.net_delivered_bytes += if may_drop { len - skbuff::UDP_IP_HEADERS } else { len };
            if !may_drop {
                d += self.tcp_received(ctx, sock, (len, truesize), ctx.now + d);
            }
            if let Some(r) = self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].reader.take() {
                d += self.try_to_wake_up(ctx, r, ctx.now + d);
            }
        }
        if !may_drop {
            self.tcp_sendmsg_goes_on(ctx, sock, ctx.now + d);
            return d;
        }
        d += self.socket_exit(ctx);
        d
    }

    /// `udp_recvmsg` / `tcp_recvmsg` of one skb: sleep on an empty queue, else dequeue, copy
    /// out, free the skb here (and TCP's fragment pages when this was their last reference),
    /// give the sender its room back.
    fn sock_recv(&mut self, ctx: &mut Ctx, t: usize, sock: u16, len: u32) -> Ps {
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        if f.rx.queue.is_empty() && self.tcp_stall(sock) {
            // Nothing will come before the delayed-ACK timer: wait for it here, then receive.
            ctx.then(Continuation::Net(Step::Recv { sock, len }));
            ctx.then(Continuation::Net(Step::DelAck { sock }));
            return Ps::ZERO;
        }
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let Some(front) = f.rx.queue.front() else {
            f.reader = Some(t);
            self.net.sockets.as_mut().expect(NO_NET).counters.net_recv_sleeps += 1;
            ctx.then(Continuation::Net(Step::Recv { sock, len }));
            return self.deschedule(ctx, false, ctx.now);
        };
        if f.proto == Proto::Tcp {
            // Owned from here to the release_sock after tcp_cleanup_rbuf (its own step).
            f.rx_owned_until = Ps(u64::MAX);
        }
        if f.proto == Proto::Tcp && len > 0 {
            return self.tcp_recvmsg(ctx, sock, len as u64);
        }
        let (objs, truesize, tcp) = ([front.skb, front.head], front.truesize, f.proto == Proto::Tcp);
        let lines = [(front.cpu, skbuff::skb_meta_lines(), front.len)];
        let frags = (front.frags.clone(), front.len - front.len.min(front.room));
        let freed = objs;
        for o in objs {
            self.object_held(o, -1);
        }
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let (slab, pa) = (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let frag = if tcp { Some(&mut f.frag) } else { None };
        let (len, out) = skbuff::recv(slab, pa, frag, ctx.cpu, ctx.now, &mut f.rx, env)
            .unwrap_or_else(|e| panic!("socket receive: {e:?}"))
            .expect("a queued skb");
        self.sync_net_pages(sock);
        self.skb_freed_here(ctx.cpu, &freed);
        if tcp {
            self.frag_freed_here(ctx.cpu, &frags.0, frags.1);
        }
        let payload = if tcp { len } else { len - skbuff::UDP_IP_HEADERS };
        let costs = &self.net.sockets.as_ref().expect(NO_NET).costs;
        let (path, copy) = (if tcp { costs.tcp_recv } else { costs.udp_recv }, costs.copy.copy(payload));
        let free = self.charge_net(ctx, &out, ctx.now);
        ctx.charge(Bucket::Zeroing, copy);
        ctx.charge(Bucket::Syscall, path);
        let copy = copy + self.bulk(ctx, ctx.now + free, 2 * payload, copy);
        let mut d = free + copy + path;
        d += self.sk_dequeue_lines(ctx, sock, ctx.now + d, &lines);
        let c = &mut self.net.sockets.as_mut().expect(NO_NET).counters;
        c.net_received += 1;
        c.net_received_bytes += payload;
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        if tcp {
            f.wmem -= truesize;
            // tcp_cleanup_rbuf: the ACK, and what it lets the sender transmit; the writer
            // asleep for room is woken where that ACK is processed (or here without one).
            ctx.then(Continuation::Net(Step::Cleanup { sock, copied: payload as u32 }));
            return d;
        }
        d += self.socket_exit(ctx);
        d
    }

    /// `tcp_recvmsg` of up to `max` bytes from a non-empty queue: copy out across the queued
    /// segments, free those used up (a segment read in part stays queued and charged), give the
    /// sender its room back; `tcp_cleanup_rbuf` follows as its own step.
    fn tcp_recvmsg(&mut self, ctx: &mut Ctx, sock: u16, max: u64) -> Ps {
        // The skbs this read uses up, released from the kernel's count before they are freed.
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        let (mut left, mut off, mut objs) = (max, f.rx.front_read, Vec::new());
        // Each skb the read copies from: its writer, its own lines, the bytes taken.
        let mut lines = Vec::new();
        // The frag pages of the skbs it uses up, and their frag bytes.
        let (mut pages, mut frag_bytes) = (Vec::new(), 0);
        for skb in &f.rx.queue {
            lines.push((skb.cpu, skbuff::skb_meta_lines(), (skb.len - off).min(left)));
            if skb.len - off > left {
                break;
            }
            left -= skb.len - off;
            off = 0;
            objs.extend([skb.skb, skb.head]);
            pages.extend_from_slice(&skb.frags);
            frag_bytes += skb.len - skb.len.min(skb.room);
            if left == 0 {
                break;
            }
        }
        for &o in &objs {
            self.object_held(o, -1);
        }
        self.skb_freed_here(ctx.cpu, &objs);
        self.frag_freed_here(ctx.cpu, &pages, frag_bytes);
        let env = crate::linux::mm::page_alloc::Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let (slab, pa) = (self.mm.slab.as_mut().expect(NO_NET), self.mm.page_alloc.as_mut().expect(NO_NET));
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        let (copied, freed, out) =
            skbuff::tcp_recv_upto(slab, pa, &mut f.frag, ctx.cpu, ctx.now, &mut f.rx, max, env)
                .unwrap_or_else(|e| panic!("socket receive: {e:?}"))
                .expect("a queued skb");
        self.sync_net_pages(sock);
        let costs = &self.net.sockets.as_ref().expect(NO_NET).costs;
        let (path, copy) = (costs.tcp_recv, costs.copy.copy(copied));
        let free = self.charge_net(ctx, &out, ctx.now);
        ctx.charge(Bucket::Zeroing, copy);
        ctx.charge(Bucket::Syscall, path);
        let copy = copy + self.bulk(ctx, ctx.now + free, 2 * copied, copy);
        let mut d = free + copy + path;
        d += self.sk_dequeue_lines(ctx, sock, ctx.now + d, &lines);
        let s = self.net.sockets.as_mut().expect(NO_NET);
        s.counters.net_received += 1;
        s.counters.net_received_bytes += copied;
        let f = &mut s.flows[sock as usize];
        f.wmem -= freed;
        ctx.then(Continuation::Net(Step::Cleanup { sock, copied: copied as u32 }));
        d
    }

    /// `tcp_cleanup_rbuf` after a read of `copied` bytes: the ACK if one is due (and what it
    /// lets the sender transmit), then the return to user space.
    fn tcp_cleanup_rbuf(&mut self, ctx: &mut Ctx, sock: u16, copied: u64) -> Ps {
        // tcp_recvmsg's tcp_rcv_space_adjust comes first: the window update sees the new buffer.
        let clock = self.tcp_clock(ctx.now);
        let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
        if let Some(rcvbuf) = f.conn.rcv_space_adjust(copied, clock) {
            f.rx.rcvbuf = rcvbuf;
        }
        let f = &self.net.sockets.as_ref().expect(NO_NET).flows[sock as usize];
        let free = f.rx.rcvbuf.saturating_sub(f.rx.rmem_alloc);
        if f.conn.ack_after_read(copied, f.rx.rmem_alloc, free) {
            // tcp_send_ack; its softirq reaches the writer's socket lock as a step of its own,
            // so that the lock and ownership are met as they are then.
            let (ack, pre) = self.tcp_send_ack(ctx, sock);
            let f = &mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize];
            ack.queue_on(&mut f.ack_in_flight);
            ctx.then(Continuation::Net(Step::RxRelease { sock }));
            ctx.then(Continuation::Net(Step::AckRcv { sock }));
            return pre;
        }
        // No ACK now: the room the read freed wakes a writer asleep for it from here (the
        // model's stand-in for the window update or timer that would).
        let d = self.tcp_write_space(ctx, sock, ctx.now);
        let d = d + self.tcp_rx_release_sock(ctx, sock, ctx.now + d);
        d + self.socket_exit(ctx)
    }

    /// A send's copy of `len` bytes into an skb at `at`, after the allocation `out` made for it:
    /// the allocation charged, the copy at the profile's rate, and its read of the user buffer
    /// and write of the skb drawn on the machine's memory (hw/uncore.rs). Returns the
    /// allocation's and the copy's time.
    pub(in crate::linux::net) fn skb_copy_in(
        &mut self,
        ctx: &mut Ctx,
        out: &NetOutcome,
        len: u64,
        at: Ps,
    ) -> (Ps, Ps) {
        let copy = self.net.sockets.as_ref().expect(NO_NET).costs.copy.copy(len);
        let alloc = self.charge_net(ctx, out, at);
        ctx.charge(Bucket::Zeroing, copy);
        (alloc, copy + self.bulk(ctx, at + alloc, 2 * len, copy))
    }

    /// Charges what an allocation or free of the network paths took from `at`: lock spin to
    /// [`Bucket::LockWait`], the rest to the system call. Returns the time.
    pub(in crate::linux::net) fn charge_net(&mut self, ctx: &mut Ctx, out: &NetOutcome, at: Ps) -> Ps {
        let d = out.done - at;
        ctx.lock_wait("zone->lock, list_lock", out.lock_wait());
        ctx.charge(Bucket::Syscall, d - out.lock_wait());
        d
    }

    /// The kernel's count of objects it holds in `obj`'s slab (see linux/mm/slub.rs), by `delta`.
    fn object_held(&mut self, obj: Object, delta: i32) {
        use crate::linux::frames::Owner;
        let head = self.mm.slab.as_ref().expect(NO_NET).page_of(obj);
        match (obj, self.mm.frames.owner(head)) {
            (Object::Slab { .. }, Owner::Slab { cache, inuse }) if delta > 0 || inuse > 0 => {
                let inuse = (inuse as i64 + delta as i64) as u32;
                self.mm.frames.set_owner(head, Owner::Slab { cache, inuse });
            }
            (Object::Large { .. }, Owner::KernelBlock) => {}
            (_, other) => self.oracle.flag_object(format!("skb object {obj:?}: pfn {head} is {other:?}")),
        }
    }

    /// Mirrors the page-allocator calls SLUB and the pair's page fragment made.
    pub(in crate::linux::net) fn sync_net_pages(&mut self, sock: u16) {
        self.sync_slab_pages();
        let ev =
            std::mem::take(&mut self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].frag.events);
        for &(pfn, order, alloc) in &ev {
            if alloc {
                self.assign_block(pfn, order, crate::linux::frames::Owner::KernelBlock);
            } else {
                if self.mm.frames.owner(pfn) != crate::linux::frames::Owner::KernelBlock {
                    let o = self.mm.frames.owner(pfn);
                    self.oracle.flag_object(format!("frag page {pfn} freed while {o:?}"));
                }
                self.release_block(pfn, order);
            }
        }
        let mut ev = ev;
        ev.clear();
        self.net.sockets.as_mut().expect(NO_NET).flows[sock as usize].frag.events = ev;
    }
}
