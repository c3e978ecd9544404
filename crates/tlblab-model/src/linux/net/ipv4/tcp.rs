//! TCP's send-side coalescing and the receiver's ACKs on loopback: autocorking (net/ipv4/tcp.c
//! `tcp_push` -> `tcp_should_autocork`, v3.14+), Nagle's algorithm as Linux runs it (`tcp_nagle_check`
//! with Minshall's variant, `tcp_minshall_check`), and the receiver's delayed-ACK rules that release
//! what Nagle holds (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`, the delayed-ACK timer;
//! `tcp_measure_rcv_mss` and autotuning are in linux/net/ipv4/tcp_input.rs);
//! docs/references/seeds-001-003-004.md#tcp-autocorking and
//! docs/references/linux-mm.md#nagle-on-loopback.
//!
//! Autocorking.
//!
//! When `tcp_sendmsg` pushes a tail skb smaller than the size goal while an earlier skb of the
//! socket still sits in a qdisc or device queue (its clone still charged to `sk_wmem_alloc`,
//! released at TX completion), Linux holds the tail instead of transmitting it: the next
//! `sendmsg` appends to it, and TX completion (`tcp_wfree` -> the TSQ handler) sends it. The test
//! as v4.9 writes it: `skb->len < size_goal && sysctl_tcp_autocorking && skb !=
//! tcp_write_queue_head(sk) && sk_wmem_alloc > skb->truesize`; v4.15+ writes the third term
//! `!tcp_rtx_queue_empty(sk)` (the retransmit queue split out of the write queue) and v5.x+ adds
//! `tcp_skb_can_collapse_to(skb)`, which a plain send's skb passes. Both say "other data of this
//! socket was sent before", which on the model's loopback is true whenever unacknowledged data
//! is queued at the receiver.
//!
//! On loopback the wmem term never holds at a push: `loopback_xmit` calls `skb_orphan` before
//! `netif_rx`, inside the sender's own `dev_queue_xmit` (`lo` has no qdisc), so the clone's
//! truesize is released before `tcp_sendmsg` returns and `sk_wmem_alloc` is back to its bias of 1
//! at the next send. linux/net/socket.rs evaluates the test at every TCP push with that state and
//! counts the holds (`tcp_autocorks`); they stay zero on loopback, and a held skb would be a
//! departure the oracle flags (no hold path is modelled, since none is reachable).

use serde::{Deserialize, Serialize};

use super::tcp_input::{RcvSpace, RcvbufAutotune};
use crate::time::Ps;

/// `[net]` knobs of a kernel preset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetKnobs {
    /// `net.ipv4.tcp_autocorking` (v3.14+, default 1); off for kernels before it.
    pub tcp_autocorking: bool,
    /// v6.6+ `tcp_measure_rcv_mss`: a received segment of at least `rcv_mss` with PSH set marks
    /// the ACK "pushed" (so the reader that drains the queue ACKs at once); before, only a
    /// segment smaller than `rcv_mss` did, and a full-sized one waited for the delayed-ACK timer.
    /// Absent from results written before it (read as off), and off in the presets before v6.6.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp_ack_pushed_mss: bool,
    /// v5.10+ `tcp_sendmsg`: every payload byte goes to page fragments, the skb's head holds the
    /// headers alone (`MAX_TCP_HEADER`), so a small segment's truesize is about 1.3 KB instead of
    /// v4.9's 2.3 KB kmalloc-2048 head (linux/net/core/skbuff.rs; docs/references/linux-mm.md#tcp-small-windows).
    /// Absent from results written before it (read as off), off in the presets before v5.12.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp_paged_payload: bool,
    /// `tcp_sendmsg` processes the socket's backlog (`sk_flush_backlog`) before a new skb once
    /// it has allocated this many since the call began or the last flush: 1 from "tcp: make
    /// tcp_sendmsg() aware of socket backlog" (d41a69f1d390, 2016; v4.9 has it), 16 from v5.4
    /// ("tcp: batch calls to sk_flush_backlog()"); 0 (never) before d41a69f1d390. Absent from results written before
    /// it (read as 0).
    #[serde(default, skip_serializing_if = "crate::linux::config::is_zero")]
    pub tcp_backlog_flush_skbs: u32,
    /// v6.11+ receive window from a measured `scaling_ratio` ([`Conn::scaling_ratio`];
    /// docs/references/linux-mm.md#tcp-scaling-ratio): the window is the buffer's space times
    /// `skb->len / skb->truesize` of a received segment, starting at one half, and `window_clamp`
    /// follows each new ratio. Off: v4.9's `tcp_adv_win_scale` of 1 (half the space). Absent from
    /// results written before it (read as off); on from the 6.13 preset.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp_scaling_ratio: bool,
    /// Receive-buffer autotuning's rule (`tcp_rcv_space_adjust`, linux/net/ipv4/tcp_input.rs;
    /// docs/references/linux-mm.md#tcp-rcvbuf-autotuning) and the `tcp_rmem` defaults that go
    /// with it. Absent from results written before it (read as off).
    #[serde(default, skip_serializing_if = "RcvbufAutotune::is_off")]
    pub tcp_rcvbuf_autotune: RcvbufAutotune,
}

/// `sk_wmem_alloc`'s bias: a socket's count starts at 1 (`sk_alloc`; `SK_WMEM_ALLOC_BIAS`).
pub const WMEM_ALLOC_BIAS: u64 = 1;

/// What `tcp_should_autocork` reads at a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushState {
    /// The tail skb's payload and truesize.
    pub tail_len: u64,
    pub tail_truesize: u64,
    /// `size_goal` (`tcp_send_mss`): the MSS, or the GSO size goal.
    pub size_goal: u64,
    /// Earlier data of the socket has been sent and not yet acknowledged.
    pub earlier_unacked: bool,
    /// `sk_wmem_alloc`: the bias plus the truesize of clones still in a qdisc or device queue.
    pub wmem_alloc: u64,
}

/// `tcp_should_autocork` (v3.14 .. v6.x, as above).
pub fn should_autocork(k: &NetKnobs, s: &PushState) -> bool {
    s.tail_len < s.size_goal && k.tcp_autocorking && s.earlier_unacked && s.wmem_alloc > s.tail_truesize
}

/// The size goal on loopback: `lo`'s MTU of 65536 (v2.6.31+) gives an MSS above any message the
/// workloads send, so a message never fills it (the first term always holds).
pub const LOOPBACK_SIZE_GOAL: u64 = 65536 - 40 - 12;

/// The TCP header with the timestamp option every loopback segment carries (20 + 12 bytes),
/// `tcp_header_len` in `tcp_bound_to_half_wnd`'s floor.
pub(super) const TCP_HEADER_LEN: u64 = 32;
/// `sizeof(struct tcphdr)`: the header without options.
pub(super) const TCP_HDR_MIN: u64 = 20;

/// `tcp_bound_to_half_wnd` (include/net/tcp.h, v2.6 .. v6.x alike): the sender's MSS
/// (`tcp_sync_mss`) and size goal (`tcp_xmit_size_goal`) are capped at half the largest window
/// the peer has advertised (`max_window`; all of it when that is 536 or less), and never below
/// 68 bytes less the header. So a receiver with a small buffer (netperf's `-S`) makes the sender
/// build segments of half its window, and a segment of that size is full-sized: Nagle no longer
/// holds it (docs/references/linux-mm.md#tcp-small-windows).
pub fn bound_to_half_wnd(max_window: u64, pktsize: u64) -> u64 {
    let cutoff = if max_window > TCP_MSS_DEFAULT { max_window >> 1 } else { max_window };
    if cutoff > 0 && pktsize > cutoff {
        cutoff.max(68 - TCP_HEADER_LEN)
    } else {
        pktsize
    }
}

/// `TCP_MSS_DEFAULT`: the receiver's first `rcv_mss` estimate (`tcp_initialize_rcv_mss`: the
/// least of `advmss`, the MSS, half the window and 536), never below `TCP_MIN_MSS` (88).
pub const TCP_MSS_DEFAULT: u64 = 536;
const TCP_MIN_MSS: u64 = 88;
/// `TCP_DELACK_MIN` (`HZ / 25`, 40 ms): the delayed-ACK timeout wherever the smoothed RTT is
/// below it (`__tcp_send_delayed_ack` caps `ato` at `max(srtt, TCP_DELACK_MIN)`), as on loopback.
pub const DELACK_MIN: Ps = Ps(40 * Ps::MS.0);

/// `tcp_win_from_space` with v4.9's `tcp_adv_win_scale` of 1: half the buffer space is window.
/// (v6.5+ scales by a payload/truesize ratio measured from received skbs: [`Conn::scaling_ratio`].)
pub fn win_from_space(space: u64) -> u64 {
    space - (space >> 1)
}

/// `TCP_RMEM_TO_WIN_SCALE` (v6.5+ include/net/tcp.h): `scaling_ratio` is in 1/256ths.
pub const TCP_RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO` (v6.10+, 697a6c8cec03 "tcp: increase the default TCP scaling
/// ratio"): one half until a segment is measured.
pub const TCP_DEFAULT_SCALING_RATIO: u64 = 1 << (TCP_RMEM_TO_WIN_SCALE - 1);

/// `__tcp_win_from_space(scaling_ratio, space)` (v6.5+): `space * ratio >> 8`.
pub fn win_from_space_ratio(ratio: u64, space: u64) -> u64 {
    (space * ratio) >> TCP_RMEM_TO_WIN_SCALE
}

/// `tcp_select_initial_window`'s `rcv_wscale` (v4.9 and v6.x alike): the scale that fits the
/// largest window the receiver could offer, at least `tcp_rmem[2]` (6 MiB on any machine with
/// enough memory, so 7) unless the application set `SO_RCVBUF`, which clamps the window to the
/// buffer's (`tcp_connect_init` / `tcp_openreq_init_rwin`): no scale below 64 KiB.
pub fn rcv_wscale(window_clamp: u64, locked: bool) -> u32 {
    rcv_wscale_max(window_clamp, locked, 6 << 20)
}

/// [`rcv_wscale`] with a kernel's `tcp_rmem[2]` (32 MiB from v6.16: scale 10).
pub fn rcv_wscale_max(window_clamp: u64, locked: bool, rmem_max: u64) -> u32 {
    let space = if locked { window_clamp } else { rmem_max.max(window_clamp) };
    space.max(1).ilog2().saturating_sub(15).min(14)
}

/// What an ACK tells the sender: everything before `seq` arrived, and it may send up to `edge`
/// (`snd_una + snd_wnd`, the window the receiver advertised in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub seq: u64,
    pub edge: u64,
}

impl Ack {
    /// Two ACKs waiting together (cumulative; a window never shrinks): the later of each.
    pub fn merge(self, o: Ack) -> Ack {
        Ack { seq: self.seq.max(o.seq), edge: self.edge.max(o.edge) }
    }

    /// Queues this ACK where ACKs wait together (a backlog, a softirq on its way): one, merged.
    pub fn queue_on(self, waiting: &mut Option<Ack>) {
        *waiting = Some(waiting.map_or(self, |w| w.merge(self)));
    }
}

/// One connection's sequence state for Nagle and the delayed ACK, in payload bytes: the sender's
/// `snd_nxt`, `snd_una` and `snd_sml` (the end of the last small segment sent), the receiver's
/// `rcv_nxt`, `rcv_wup` (`rcv_nxt` at the last ACK), the window it advertised then, its
/// `rcv_mss` estimate, `ICSK_ACK_PUSHED` and the delayed-ACK timer. On loopback an ACK reaches the
/// sender in the same softirq that sends it, so it is one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conn {
    /// `TCP_NODELAY` on the sending socket (the workload's choice).
    pub nodelay: bool,
    pub snd_nxt: u64,
    pub snd_una: u64,
    pub snd_sml: u64,
    pub rcv_nxt: u64,
    pub rcv_wup: u64,
    pub rcv_wnd: u64,
    pub window_clamp: u64,
    pub rcv_mss: u64,
    /// The sender's `mss_now` and size goal: loopback's MSS bounded by half the largest window
    /// the receiver advertised (`max_window`; at first its `window_clamp`, raised by an ACK that
    /// offers more once autotuning grew the buffer). `tcp_sendmsg` fills skbs up to it
    /// (linux/net/ipv4/tcp_output.rs).
    pub mss: u64,
    /// `tp->max_window`: at first the largest window the initial buffer offers.
    pub max_window: u64,
    /// The receiver's window scale (`rcv_wscale`): 0 for a receive buffer the application set
    /// (`SO_RCVBUF` locks it and clamps the window to it, under 64 KiB here), else 7
    /// ([`rcv_wscale`]).
    pub rcv_wscale: u32,
    /// The right edge of the send window as the sender last learnt it (`snd_una + snd_wnd`).
    pub snd_edge: u64,
    pub pushed: bool,
    /// `icsk_ack.last_seg_size`: the payload of the last segment shorter than `rcv_mss` that
    /// was at least `TCP_MSS_DEFAULT` long with its header, else 0 ([`Conn::received`]).
    pub last_seg_size: u64,
    /// When the armed delayed-ACK timer fires (`icsk_ack.timeout`), if armed.
    pub delack_at: Option<Ps>,
    /// `tp->scaling_ratio` in 1/256ths (v6.11+ rules, [`NetKnobs::tcp_scaling_ratio`]): payload
    /// over truesize of the last segment that changed `rcv_mss`; 0 for v4.9's half of the space.
    pub scaling_ratio: u64,
    /// The receiver's `sk_rcvbuf` (`tcp_full_space` is its window).
    pub rcvbuf: u64,
    /// `tp->rcv_ssthresh`: the most free space a window offers, the initial window until
    /// `tcp_grow_window` raises it ([`Conn::grow_window`]). It binds only once v6.11's ratio has
    /// raised `window_clamp` above the initial window, or autotuning has.
    pub rcv_ssthresh: u64,
    /// Receive-buffer autotuning's state (linux/net/ipv4/tcp_input.rs).
    pub rcvq: RcvSpace,
}

impl Conn {
    /// An established connection with the receiver's `sk_rcvbuf` of `rcvbuf`, set by the
    /// application (`locked`, `SOCK_RCVBUF_LOCK`) or the default.
    pub fn new(nodelay: bool, rcvbuf: u64, locked: bool) -> Conn {
        Conn::with_ratio(nodelay, rcvbuf, locked, 0)
    }

    /// [`Conn::new`] under a kernel's `[net]` knobs: from v6.11 the window starts at
    /// `TCP_DEFAULT_SCALING_RATIO` of the buffer (`tcp_full_space`, for `tcp_select_initial_window`
    /// and `tcp_openreq_init_rwin`'s clamp of a locked buffer), which is v4.9's half.
    pub fn with_knobs(k: &NetKnobs, nodelay: bool, rcvbuf: u64, locked: bool) -> Conn {
        let ratio = if k.tcp_scaling_ratio { TCP_DEFAULT_SCALING_RATIO } else { 0 };
        let mut c = Conn::with_ratio(nodelay, rcvbuf, locked, ratio);
        if !k.tcp_rcvbuf_autotune.is_off() {
            let rmem_max = k.tcp_rcvbuf_autotune.rmem_max();
            c.rcv_wscale = rcv_wscale_max(c.window_clamp, locked, rmem_max);
            c.max_window = c.window_clamp.div_ceil(1 << c.rcv_wscale) << c.rcv_wscale;
            c.init_buffer_space(k, locked);
        }
        c
    }

    fn with_ratio(nodelay: bool, rcvbuf: u64, locked: bool, scaling_ratio: u64) -> Conn {
        let clamp = if scaling_ratio == 0 {
            win_from_space(rcvbuf)
        } else {
            win_from_space_ratio(scaling_ratio, rcvbuf)
        };
        let wscale = rcv_wscale(clamp, locked);
        Conn {
            nodelay,
            snd_nxt: 0,
            snd_una: 0,
            snd_sml: 0,
            rcv_nxt: 0,
            rcv_wup: 0,
            rcv_wnd: clamp,
            window_clamp: clamp,
            rcv_mss: TCP_MSS_DEFAULT.min(clamp / 2).max(TCP_MIN_MSS),
            mss: bound_to_half_wnd(clamp, LOOPBACK_SIZE_GOAL),
            max_window: clamp.div_ceil(1 << wscale) << wscale,
            rcv_wscale: wscale,
            snd_edge: clamp,
            pushed: false,
            last_seg_size: 0,
            delack_at: None,
            scaling_ratio,
            rcvbuf,
            rcv_ssthresh: clamp,
            rcvq: RcvSpace::default(),
        }
    }

    /// `tcp_set_window_clamp` (v6.14+ net/ipv4/tcp.c, which v6.14's `tcp_measure_rcv_mss` calls
    /// after a new ratio): the clamp is at least `SOCK_MIN_RCVBUF / 2`; a smaller one caps
    /// `rcv_ssthresh` (`__tcp_adjust_rcv_ssthresh`, no reserved memory here), a larger one raises
    /// it to the window last offered if that is more.
    pub(super) fn set_window_clamp(&mut self, val: u64) {
        let new = val.max(crate::linux::net::core::skbuff::sock_min_rcvbuf() / 2);
        if new < self.window_clamp {
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        }
        self.window_clamp = new;
    }

    /// `tcp_win_from_space` for this connection: v4.9's half, or the measured ratio.
    pub(super) fn win_from_space(&self, space: u64) -> u64 {
        if self.scaling_ratio == 0 {
            win_from_space(space)
        } else {
            win_from_space_ratio(self.scaling_ratio, space)
        }
    }

    /// `tcp_nagle_check(partial, tp, nonagle)` with `tcp_minshall_check` (v2.4 .. v6.x
    /// net/ipv4/tcp_output.c): the write queue's last skb, of `len` bytes, shorter than the MSS
    /// is held while the last small segment sent (`snd_sml`) is unacknowledged, unless
    /// `TCP_NODELAY`. `tcp_sendmsg` never builds a skb longer than the MSS (the size goal), and
    /// only the last one can be shorter (linux/net/ipv4/tcp_output.rs).
    pub fn nagle_holds(&self, len: u64) -> bool {
        len < self.mss && !self.nodelay && self.snd_nxt > self.snd_una && self.snd_sml > self.snd_una
    }

    /// `tcp_snd_wnd_test` (v2.6 .. v6.x tcp_output.c): a skb of `len` bytes may go only if it
    /// ends inside the window the last ACK offered; a skb held by it stays the write queue's
    /// tail until an ACK opens the window (the sender is "rwnd limited"). A skb is never longer
    /// than the MSS, half the largest window, so with nothing in flight it fits; the second
    /// term only keeps a window smaller than that from stalling the model.
    pub fn fits(&self, len: u64) -> bool {
        self.snd_nxt + len <= self.snd_edge || self.snd_nxt == self.snd_una
    }

    /// A skb of `len` bytes transmitted: `snd_nxt` advances, and `tcp_minshall_update` records
    /// it as the last small one when it is shorter than the MSS.
    pub fn transmitted(&mut self, len: u64) {
        self.snd_nxt += len;
        if len < self.mss {
            self.snd_sml = self.snd_nxt;
        }
    }

    /// The window the receiver would advertise with `free` bytes of `sk_rcvbuf` unused:
    /// `__tcp_select_window` (net/ipv4/tcp_output.c, v4.9 and v6.18 alike with v6.5's
    /// `tcp_shrink_window` sysctl at its default 0; docs/references/linux-mm.md#tcp-segmentation).
    /// Below half the full window the free space is rounded down to the scale and is a zero
    /// window under one `rcv_mss` or 1/16 of the buffer's window; without window scaling the
    /// window is a multiple of `rcv_mss` (the current one kept while within one `rcv_mss` of the
    /// free space), with it the free space rounded up to the scale; the free space offered is
    /// at most `rcv_ssthresh`, which `tcp_grow_window` raises once autotuning (or v6.11's
    /// ratio) lifts the clamp (linux/net/ipv4/tcp_input.rs). With v6.11+'s ratio `tcp_full_space` is
    /// the buffer's window at the current ratio and the full space the lesser of it and
    /// `window_clamp` (which `SOCK_MIN_RCVBUF / 2` floors); before, both are `window_clamp`.
    fn window(&self, free: u64) -> u64 {
        let (allowed, full) = if self.scaling_ratio == 0 {
            // tcp_full_space: the model's window_clamp is the whole buffer's window.
            (self.window_clamp, self.window_clamp)
        } else {
            let allowed = self.win_from_space(self.rcvbuf);
            (allowed, allowed.min(self.window_clamp))
        };
        let mss = self.rcv_mss.min(full);
        if mss == 0 {
            return 0;
        }
        let mut space = self.win_from_space(free);
        let scale = 1u64 << self.rcv_wscale;
        if space < full >> 1 {
            space = space / scale * scale;
            if space < allowed >> 4 || space < mss {
                return 0;
            }
        }
        // The free space offered is at most rcv_ssthresh (v4.9 .. v6.18).
        let space = space.min(self.rcv_ssthresh);
        if self.rcv_wscale > 0 {
            return space.div_ceil(scale) * scale;
        }
        // Signed as the kernel's ints: `free_space - mss` may be negative.
        let (w, s, m) = (self.rcv_wnd as i64, space as i64, mss as i64);
        if w <= s - m || w > s {
            space / mss * mss
        } else if mss == full && s > w + (full as i64 >> 1) {
            space
        } else {
            self.rcv_wnd
        }
    }

    /// `tcp_receive_window`: what is left of the window last advertised.
    fn receive_window(&self) -> u64 {
        (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt)
    }

    /// `__tcp_ack_snd_check` at a received segment (not in quick-ACK mode, which the
    /// connection's first segments use up before any measured window): ACK at once when more
    /// than `rcv_mss` arrived since the last ACK and the window would not shrink.
    pub fn ack_on_receive(&self, free: u64) -> bool {
        self.rcv_nxt - self.rcv_wup > self.rcv_mss && self.window(free) >= self.rcv_wnd
    }

    /// `tcp_cleanup_rbuf` after a read of `copied` bytes that left `rmem_alloc` queued and
    /// `free` of the buffer unused: with data unacknowledged (`inet_csk_ack_scheduled`), ACK when
    /// more than `rcv_mss` is, or the last segments were pushed and the queue is drained (the
    /// connection is not ping-pong: nothing flows back); and, whether or not anything is
    /// unacknowledged (v4.9 .. v6.18 alike: the window test is outside the scheduled-ACK test),
    /// when the window update would at least double a window half used up.
    pub fn ack_after_read(&self, copied: u64, rmem_alloc: u64, free: u64) -> bool {
        if self.rcv_nxt != self.rcv_wup
            && (self.rcv_nxt - self.rcv_wup > self.rcv_mss || (copied > 0 && self.pushed && rmem_alloc == 0))
        {
            return true;
        }
        let now = self.receive_window();
        let w = self.window(free);
        copied > 0 && 2 * now <= self.window_clamp && w > 0 && w >= 2 * now
    }

    /// `tcp_send_ack` from the receiver and `tcp_ack` at the sender, with `free` bytes of the
    /// receive buffer unused: everything received is acknowledged, the window is advertised
    /// afresh (`tcp_select_window` never shrinks it), the pushed mark and the timer clear.
    pub fn ack(&mut self, free: u64) {
        let a = self.ack_sent(free);
        self.acked(a);
    }

    /// The receiver's half of [`Conn::ack`] (`tcp_send_ack`): the window advertised afresh, the
    /// pushed mark and the timer cleared. Returns the ACK (the sequence it acknowledges and the
    /// window's edge), which reaches the sender's `tcp_ack` now or, when the sender's socket is
    /// owned by its user, at its `release_sock` (linux/net/core/sock.rs).
    pub fn ack_sent(&mut self, free: u64) -> Ack {
        self.rcv_wnd = self.window(free).max(self.receive_window());
        self.rcv_wup = self.rcv_nxt;
        self.pushed = false;
        self.delack_at = None;
        Ack { seq: self.rcv_nxt, edge: self.rcv_wup + self.rcv_wnd }
    }

    /// The sender's half (`tcp_ack`): `snd_una` advances to the ACK's sequence and the window
    /// edge to its (an older ACK processed after a newer one moves nothing).
    /// A window larger than any before raises `max_window`, and the MSS follows it
    /// (`tcp_ack_update_window` -> `tcp_sync_mss`, v2.6 .. v6.18 alike).
    pub fn acked(&mut self, a: Ack) {
        self.snd_una = self.snd_una.max(a.seq);
        self.snd_edge = self.snd_edge.max(a.edge);
        if a.edge - a.seq > self.max_window {
            self.max_window = a.edge - a.seq;
            self.mss = bound_to_half_wnd(self.max_window, LOOPBACK_SIZE_GOAL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A truesize for tests that do not measure the ratio (the v4.9 rule ignores it).
    const TS: u64 = 4096;

    fn state(wmem_alloc: u64) -> PushState {
        PushState {
            tail_len: 64,
            tail_truesize: 768,
            size_goal: LOOPBACK_SIZE_GOAL,
            earlier_unacked: true,
            wmem_alloc,
        }
    }

    #[test]
    fn a_small_push_is_held_while_an_earlier_skb_is_in_a_device_queue() {
        let on = NetKnobs { tcp_autocorking: true, ..NetKnobs::default() };
        // An earlier 768-byte clone not yet completed: held.
        assert!(should_autocork(&on, &state(WMEM_ALLOC_BIAS + 768)));
        // Loopback: the clone was orphaned in loopback_xmit, only the bias is left: sent.
        assert!(!should_autocork(&on, &state(WMEM_ALLOC_BIAS)));
        // Before v3.14, or nothing sent before, or a full-sized skb: sent.
        assert!(!should_autocork(&NetKnobs::default(), &state(WMEM_ALLOC_BIAS + 768)));
        assert!(!should_autocork(&on, &PushState { earlier_unacked: false, ..state(WMEM_ALLOC_BIAS + 768) }));
        assert!(!should_autocork(
            &on,
            &PushState { tail_len: LOOPBACK_SIZE_GOAL, ..state(WMEM_ALLOC_BIAS + 768) }
        ));
    }

    #[test]
    fn nagle_holds_a_small_send_while_the_last_small_segment_is_unacknowledged() {
        let mut c = Conn::new(false, 87_380, false);
        // Nothing in flight: the first small send goes.
        assert!(!c.nagle_holds(14));
        c.transmitted(14);
        assert!(c.nagle_holds(14));
        // TCP_NODELAY, or a segment as long as the size goal: sent.
        assert!(!Conn { nodelay: true, ..c }.nagle_holds(14));
        assert!(!c.nagle_holds(c.mss));
        // The ACK of everything received releases it; data still in flight keeps it held.
        let k = NetKnobs::default();
        c.received(&k, 14, TS, Ps::ZERO);
        c.transmitted(14);
        c.ack(87_380);
        assert!(c.nagle_holds(14), "the second segment is not yet received");
        c.received(&k, 14, TS, Ps::ZERO);
        c.ack(87_380);
        assert!(!c.nagle_holds(14));
    }

    #[test]
    fn a_second_segment_as_long_as_the_last_becomes_rcv_mss_and_is_not_marked_pushed() {
        let k = NetKnobs { tcp_ack_pushed_mss: true, ..NetKnobs::default() };
        let mut c = Conn::new(false, 87_380, false);
        c.received(&k, 3000, TS, Ps::ZERO);
        assert_eq!(c.rcv_mss, 3000);
        c.ack(87_380);
        // Shorter than rcv_mss and at least 536 bytes with its header: remembered, pushed.
        c.received(&k, 1500, TS, Ps::ZERO);
        assert_eq!((c.rcv_mss, c.last_seg_size, c.pushed), (3000, 1500, true));
        assert!(c.ack_after_read(1500, 0, 87_380));
        c.ack(87_380);
        // The same length again: taken for the peer's MSS, not pushed, so a drained read of it
        // sends no ACK; a second one unacknowledged is more than rcv_mss and does.
        c.received(&k, 1500, TS, Ps::ZERO);
        assert_eq!((c.rcv_mss, c.pushed), (1500, false));
        assert!(!c.ack_after_read(1500, 0, 87_380));
        c.received(&k, 1500, TS, Ps::ZERO);
        assert!(c.ack_after_read(1500, 0, 87_380));
        c.ack(87_380);
        // A different length in between forgets the last one; 523-byte payloads (555 with the
        // header) are never remembered, and stay pushed however often they repeat.
        c.received(&k, 1000, TS, Ps::ZERO);
        c.received(&k, 523, TS, Ps::ZERO);
        c.ack(87_380);
        c.received(&k, 523, TS, Ps::ZERO);
        assert_eq!((c.rcv_mss, c.last_seg_size, c.pushed), (1500, 0, true));
        c.ack(87_380);
        c.received(&k, 524, TS, Ps::ZERO);
        c.ack(87_380);
        c.received(&k, 524, TS, Ps::ZERO);
        assert_eq!((c.rcv_mss, c.pushed), (524, false));
    }

    #[test]
    fn the_reader_acks_a_drained_queue_of_pushed_segments_and_v6_6_also_a_full_sized_one() {
        let (old, new) = (NetKnobs::default(), NetKnobs { tcp_ack_pushed_mss: true, ..NetKnobs::default() });
        for (k, full_acked) in [(old, false), (new, true)] {
            let mut c = Conn::new(false, 87_380, false);
            assert_eq!(c.rcv_mss, TCP_MSS_DEFAULT);
            c.received(&k, 500, TS, Ps::ZERO);
            assert_eq!(c.delack_at, Some(DELACK_MIN));
            // Shorter than rcv_mss: pushed; ACKed once the queue is drained, not before.
            assert!(!c.ack_after_read(500, 768, 87_380 - 768));
            assert!(c.ack_after_read(500, 0, 87_380));
            c.ack(87_380);
            assert_eq!(c.delack_at, None);
            // A longer coalesced segment becomes the new rcv_mss: exactly one rcv_mss read.
            c.received(&k, 2500, TS, Ps::US);
            assert_eq!(c.rcv_mss, 2500);
            assert_eq!(c.ack_after_read(2500, 0, 87_380), full_acked);
            // More than rcv_mss unacknowledged: ACKed whatever the queue holds.
            c.received(&k, 100, TS, Ps::US);
            assert!(c.ack_after_read(100, 768, 87_380 - 768));
        }
    }

    #[test]
    fn an_ack_held_back_from_the_sender_keeps_nagle_holding_until_it_is_processed() {
        let k = NetKnobs::default();
        let mut c = Conn::new(false, 87_380, false);
        c.transmitted(14);
        c.received(&k, 14, TS, Ps::ZERO);
        let a = c.ack_sent(87_380);
        // The receiver has sent it (its timer and pushed mark are clear) ...
        assert_eq!((a.seq, c.rcv_wup, c.delack_at), (14, 14, None));
        // ... but the sender has not processed it: a small send is still held.
        assert!(c.nagle_holds(14));
        c.acked(a);
        assert!(!c.nagle_holds(14));
        c.acked(Ack { seq: 0, edge: 0 });
        assert_eq!(c.snd_una, 14, "an older ACK moves nothing");
    }

    #[test]
    fn a_small_window_caps_the_mss_at_half_of_it() {
        // netperf -S 320 (2304 bytes, a 1152-byte window) and -S 8448 (16896, 8448), as measured
        // on Linux 6.18 with `ss -tmi` (mss:576, mss:4224); the default buffer; tiny windows whole.
        let mss = |rcvbuf| Conn::new(false, rcvbuf, true).mss;
        assert_eq!((mss(2304), mss(16_896), mss(87_380)), (576, 4224, 21_845));
        assert_eq!((bound_to_half_wnd(400, 1000), bound_to_half_wnd(20, 1000)), (400, 36));
        assert_eq!(bound_to_half_wnd(1152, 64), 64);
        // 64-byte sends: a tail of nine is a full segment Nagle lets go; 8192-byte sends are a
        // full segment and a partial one (8192 = 4224 + 3968), which it holds while the last
        // partial one is unacknowledged.
        let mut c = Conn::new(false, 2304, true);
        c.transmitted(64);
        assert!(c.nagle_holds(64) && !c.nagle_holds(576));
        let mut c = Conn::new(false, 16_896, true);
        c.transmitted(4224);
        assert!(!c.nagle_holds(3968));
        c.transmitted(3968);
        assert!(c.nagle_holds(3968) && !c.nagle_holds(4224));
    }

    #[test]
    fn the_window_scale_is_zero_only_for_a_buffer_the_application_set() {
        // tcp_rmem[2]'s 6 MiB needs a scale of 7; SO_RCVBUF clamps the window to its own.
        assert_eq!(rcv_wscale(win_from_space(87_380), false), 7);
        assert_eq!((rcv_wscale(8448, true), rcv_wscale(1152, true), rcv_wscale(1 << 17, true)), (0, 0, 2));
        assert_eq!(
            (Conn::new(false, 16_896, true).rcv_wscale, Conn::new(false, 87_380, false).rcv_wscale),
            (0, 7)
        );
    }

    #[test]
    fn an_unscaled_window_is_a_multiple_of_the_receivers_mss_or_zero() {
        // netperf -S 8448: a 8448-byte window, segments of 4224 (rcv_mss once one arrived).
        let k = NetKnobs::default();
        let mut c = Conn::new(false, 16_896, true);
        c.received(&k, 4224, TS, Ps::ZERO);
        assert_eq!(c.rcv_mss, 4224);
        // Everything free: the whole window; a segment's truesize queued (5.5 KB of the
        // 16.9 KB buffer): 5.7 KB of space, rounded down to one MSS.
        assert_eq!(c.window(16_896), 8448);
        let w = c.window(16_896 - 5504);
        assert_eq!(w, 4224, "rounded down from {}", win_from_space(16_896 - 5504));
        // Less than one MSS of space under half the window: a zero window (the ACK then keeps
        // the window offered before, tcp_select_window never shrinks it).
        assert_eq!(c.window(16_896 - 10_752), 0);
        c.ack(16_896 - 10_752);
        assert_eq!(c.rcv_wnd, 8448 - 4224);
        // The window offered is kept while within one MSS of the free space.
        let mut c = Conn::new(false, 16_896, true);
        c.received(&k, 4224, TS, Ps::ZERO);
        c.rcv_wnd = 5000;
        assert_eq!(c.window(16_896 - 5504), 5000);
        // With window scaling (the default buffer) it is the free space rounded up to the scale.
        let c = Conn::new(false, 87_380, false);
        assert_eq!(c.window(87_380 - 1000), win_from_space(86_380).div_ceil(128) * 128);
    }

    #[test]
    fn a_skb_goes_only_inside_the_window_the_last_ack_offered() {
        let k = NetKnobs::default();
        let mut c = Conn::new(false, 2304, true);
        // Nothing in flight: anything goes (the model does not split a skb at the edge).
        assert!(c.fits(5000) && c.snd_edge == 1152);
        c.transmitted(576);
        assert!(c.fits(576) && !c.fits(577));
        // Received, and ACKed with the buffer nearly full: the edge stays where it was.
        c.received(&k, 576, TS, Ps::ZERO);
        let a = c.ack_sent(300);
        c.acked(a);
        assert_eq!((c.snd_una, c.snd_edge), (576, 1152));
        c.transmitted(576);
        assert!(!c.fits(1));
        // An ACK after the reader freed the buffer opens it again.
        c.received(&k, 576, TS, Ps::ZERO);
        let a = c.ack_sent(2304);
        c.acked(a);
        assert_eq!(c.snd_edge, 1152 + 1152);
    }

    #[test]
    fn a_window_half_used_is_updated_when_reading_would_double_it() {
        // netperf's -S 8448 with 8192-byte messages: the window is about one message.
        let k = NetKnobs::default();
        let mut c = Conn::new(false, 16_896, true);
        c.received(&k, 8192, TS, Ps::ZERO);
        c.ack(16_896 - 10_496);
        c.received(&k, 8192, TS, Ps::ZERO);
        assert_eq!(c.rcv_mss, 8192);
        // Not pushed and exactly rcv_mss: only the window update ACKs after the read.
        assert!(c.ack_after_read(8192, 0, 16_896));
        assert!(!c.ack_after_read(0, 0, 16_896));
    }

    #[test]
    fn a_read_that_frees_the_window_updates_it_even_with_everything_acknowledged() {
        // netperf's -S 320: a 2304-byte buffer, a 1152-byte window, 576-byte segments.
        let k = NetKnobs::default();
        let mut c = Conn::new(false, 2304, true);
        c.received(&k, 576, TS, Ps::ZERO);
        c.received(&k, 128, TS, Ps::ZERO);
        // ACKed on arrival with most of the buffer still queued: a small window.
        c.ack(2304 - 1856);
        assert_eq!(c.rcv_nxt, c.rcv_wup);
        let offered = c.rcv_wnd;
        assert!(2 * offered <= c.window_clamp, "offered {offered}");
        // The read that drains the queue has nothing new to acknowledge, yet the window it
        // frees at least doubles the one offered: tcp_cleanup_rbuf sends the update.
        assert!(c.ack_after_read(64, 0, 2304));
        // Nothing read, or the window already open: no ACK.
        assert!(!c.ack_after_read(0, 0, 2304));
        c.ack(2304);
        assert!(!c.ack_after_read(64, 0, 2304));
    }

    #[test]
    fn v6_11_measures_the_scaling_ratio_from_a_segment_and_netperfs_320_byte_buffer_offers_one_mss() {
        use crate::linux::net::core::skbuff::{
            skb_data_align, skb_truesize, SKB_SHARED_INFO, TCP_MAX_HEADER,
        };
        // netperf -S 320: a 2304-byte buffer. A 576-byte segment whose headers-only head is the
        // model's kmalloc-1024 object (v5.10+), its payload in page fragments.
        let truesize = skb_truesize(1024 - skb_data_align(SKB_SHARED_INFO)) + 576;
        assert!(skb_data_align(TCP_MAX_HEADER) + skb_data_align(SKB_SHARED_INFO) <= 1024);
        let on = NetKnobs { tcp_scaling_ratio: true, ..NetKnobs::default() };
        let mut c = Conn::with_knobs(&on, false, 2304, true);
        // Before any segment: the 50% start, v4.9's window, MSS and first rcv_mss.
        let old = Conn::new(false, 2304, true);
        assert_eq!((c.scaling_ratio, c.window_clamp, c.mss, c.rcv_mss), (128, 1152, 576, 536));
        assert_eq!((old.window_clamp, old.mss, old.rcv_mss), (1152, 576, 536));
        assert_eq!(c.window(2304), old.window(2304));
        // A 64-byte segment is under rcv_mss: nothing measured.
        c.received(&on, 64, 1344, Ps::ZERO);
        assert_eq!(c.scaling_ratio, 128);
        c.ack(2304);
        // The first full 576-byte segment changes rcv_mss: the ratio is its payload over truesize.
        c.received(&on, 576, truesize, Ps::ZERO);
        assert_eq!(c.scaling_ratio, (576 << 8) / truesize);
        assert_eq!(c.rcv_mss, 576);
        // The clamp keeps SOCK_MIN_RCVBUF / 2 (1152); the full space is the buffer at the ratio,
        // 2304 * 79 / 256 = 711 bytes, and the window a whole rcv_mss of it: one segment.
        assert_eq!(c.window_clamp, 1152);
        assert_eq!(win_from_space_ratio(c.scaling_ratio, 2304), 711);
        assert_eq!(c.window(2304), 576);
        // With that segment queued (its truesize charged), the free space is a zero window.
        assert_eq!(c.window(2304 - truesize), 0);
        // A host's skb (Linux 6.18's small head: truesize 1408, as `ss` shows it): the same one MSS.
        let mut h = Conn::with_knobs(&on, false, 2304, true);
        h.received(&on, 576, 1408, Ps::ZERO);
        assert_eq!(
            (h.scaling_ratio, win_from_space_ratio(h.scaling_ratio, 2304), h.window(2304)),
            (104, 936, 576)
        );
        // A segment of the same length measures nothing again.
        h.received(&on, 576, 4096, Ps::ZERO);
        assert_eq!(h.scaling_ratio, 104);
    }

    #[test]
    fn without_the_knob_the_window_is_half_the_space_whatever_the_truesize() {
        let k = NetKnobs::default();
        let mut c = Conn::with_knobs(&k, false, 2304, true);
        assert_eq!(c, Conn::new(false, 2304, true));
        c.received(&k, 576, 1856, Ps::ZERO);
        assert_eq!((c.scaling_ratio, c.window_clamp, c.rcv_mss), (0, 1152, 576));
        // v4.9: 2304 free is a 1152-byte window, two 576-byte segments.
        assert_eq!(c.window(2304), 1152);
        // netperf -S 8448 alike: 8448, two 4224-byte segments.
        let mut c = Conn::with_knobs(&k, false, 16_896, true);
        c.received(&k, 4224, 5504, Ps::ZERO);
        assert_eq!(c.window(16_896), 8448);
        assert_eq!(c.rcv_ssthresh, 8448);
        c.grow_window(4224, 16_896 - 5504);
        assert_eq!(c.rcv_ssthresh, 8448, "v4.9: rcv_ssthresh is the clamp, no room to grow");
    }

    #[test]
    fn a_larger_ratio_raises_the_clamp_but_rcv_ssthresh_keeps_netperfs_8448_byte_window() {
        // netperf -S 8448 (16,896 bytes) on v6.11+: a 4224-byte segment of truesize 5504 gives a
        // ratio of 196, a clamp of 12,936 (three segments' worth) ...
        let on = NetKnobs { tcp_scaling_ratio: true, ..NetKnobs::default() };
        let mut c = Conn::with_knobs(&on, false, 16_896, true);
        assert_eq!(c.rcv_ssthresh, 8448);
        c.received(&on, 4224, 5504, Ps::ZERO);
        // ... and tcp_grow_window, run with the segment queued, raises rcv_ssthresh only to the
        // window of what is left free: 11,392 * 196 / 256.
        c.grow_window(4224, 16_896 - 5504);
        assert_eq!((c.scaling_ratio, c.window_clamp, c.rcv_ssthresh), (196, 12_936, 8722));
        // An empty buffer would be a 12,936-byte window; rcv_ssthresh leaves two segments, as a
        // host's ss shows (rcv_ssthresh:8448 snd_wnd:8448 on Linux 6.18).
        assert_eq!(c.window(16_896), 2 * 4224);
        // Short segments (under 128 bytes) grow nothing; a smaller ratio caps rcv_ssthresh.
        c.grow_window(100, 16_896);
        assert_eq!(c.rcv_ssthresh, 8722);
        c.received(&on, 8000, 64_000, Ps::ZERO);
        assert_eq!((c.scaling_ratio, c.window_clamp, c.rcv_ssthresh), (32, 2112, 2112));
    }
}
