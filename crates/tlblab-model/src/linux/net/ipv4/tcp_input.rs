//! The receiver's side of net/ipv4/tcp_input.c on a loopback pair: `tcp_measure_rcv_mss` (the
//! `rcv_mss` estimate and the pushed mark, docs/references/linux-mm.md#nagle-on-loopback),
//! `tcp_grow_window`, and receive-buffer autotuning: the receiver's RTT estimate
//! (`tcp_rcv_rtt_measure`, `tcp_rcv_rtt_measure_ts`, `tcp_rcv_rtt_update`) and
//! `tcp_rcv_space_adjust`, which grows `sk_rcvbuf` and `window_clamp` when the reader copied
//! more in one RTT than it did before (docs/references/linux-mm.md#tcp-rcvbuf-autotuning). A
//! larger window lets the sender's MSS follow (`tcp_ack_update_window` -> `tcp_sync_mss`,
//! [`Conn::acked`](super::tcp::Conn::acked)), so sockperf's segments grow to loopback's 64 KB.

use serde::{Deserialize, Serialize};

use super::tcp::{
    win_from_space, Conn, NetKnobs, LOOPBACK_SIZE_GOAL, TCP_HDR_MIN, TCP_HEADER_LEN, TCP_MSS_DEFAULT,
};
use crate::linux::net::core::skbuff;
use crate::time::Ps;

/// Which `tcp_rcv_space_adjust` a kernel runs (`[net] tcp_rcvbuf_autotune`;
/// docs/references/linux-mm.md#tcp-rcvbuf-autotuning). Every kernel since v2.6.7 autotunes
/// (`tcp_moderate_rcvbuf` 1); `Off` is the model before it, kept for the presets whose
/// experiments run no TCP without `SO_RCVBUF`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RcvbufAutotune {
    /// The buffer stays at `tcp_rmem[1]` (87,380 bytes), the window scale fits 6 MiB.
    #[default]
    #[serde(rename = "off")]
    Off,
    /// v4.9: RTT in jiffies (`tcp_time_stamp`), `rcvwin = 2 * copied + 16 * advmss` doubled or
    /// raised by half when the rate grew by 50% or 25%, the buffer in `advmss` blocks of their
    /// truesize, `window_clamp = rcvwin`; `tcp_rmem` 4096 87380 6 MiB.
    #[serde(rename = "4.9")]
    V4_9,
    /// v4.19 .. v6.15: RTT in microseconds, timestamp samples of zero counted as 1 ms;
    /// `rcvwin = 2 * copied + 16 * advmss`, plus twice its share of the rate's growth,
    /// `tcp_space_from_win`; `tcp_rmem` 4096 131072 6 MiB (a337531b942b, v4.19).
    #[serde(rename = "4.19")]
    V4_19,
    /// v6.18 as Linux 6.18.44 runs it: v6.16's receive-side series (zero timestamp samples
    /// dropped, the queued bytes subtracted, `rcvwin = 2 * copied`, `tcp_rmem[2]` 32 MiB) with
    /// aa251c84636c's growth term again.
    #[serde(rename = "6.18")]
    V6_18,
}

impl RcvbufAutotune {
    pub fn is_off(&self) -> bool {
        *self == RcvbufAutotune::Off
    }

    /// `tcp_rmem[1]`, the default `sk_rcvbuf`: 131072 from a337531b942b (v4.19).
    pub fn rmem_default(self) -> u64 {
        match self {
            RcvbufAutotune::Off | RcvbufAutotune::V4_9 => 87_380,
            RcvbufAutotune::V4_19 | RcvbufAutotune::V6_18 => 131_072,
        }
    }

    /// `tcp_rmem[2]`, the ceiling of the growth and what the window scale must fit: 32 MiB
    /// from 572be9bf9d0d (v6.16).
    pub fn rmem_max(self) -> u64 {
        match self {
            RcvbufAutotune::V6_18 => 32 << 20,
            _ => 6 << 20,
        }
    }

    /// The allowed values, for the knob's error.
    pub const ALLOWED: &'static str = "off | 4.9 | 4.19 | 6.18";

    pub fn parse(v: &str) -> Option<RcvbufAutotune> {
        match v {
            "off" => Some(RcvbufAutotune::Off),
            "4.9" => Some(RcvbufAutotune::V4_9),
            "4.19" => Some(RcvbufAutotune::V4_19),
            "6.18" => Some(RcvbufAutotune::V6_18),
            _ => None,
        }
    }
}

/// Loopback's `advmss`: its 65,535-byte path MTU less the IP and TCP headers and the timestamp
/// option (`ss -tmi` on Linux 6.18.44: `advmss:65483`).
pub const LOOPBACK_ADVMSS: u64 = 65_483;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;

/// The clocks the receiver reads, in the rule's units: `us` for `tcp_mstamp` (v4.13+) or
/// `tcp_time_stamp` (v4.9: jiffies), `ts` for the timestamp option (ms from v4.13, jiffies in
/// v4.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpClock {
    pub us: u64,
    pub ts: u64,
}

impl TcpClock {
    /// v4.13+'s clocks at `now` (`tcp_clock_us`, `TCP_TS_HZ` 1000).
    pub fn at(now: Ps) -> TcpClock {
        TcpClock { us: now.0 / Ps::US.0, ts: now.0 / Ps::MS.0 }
    }

    /// v4.9's: both are `jiffies`.
    pub fn jiffies(j: u64) -> TcpClock {
        TcpClock { us: j, ts: j }
    }
}

/// The receiver's autotuning state: `tp->rcv_rtt_est`, `rcv_rtt_last_tsecr`, `tp->rcvq_space`
/// and `copied_seq`, in payload bytes and the rule's clock units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RcvSpace {
    pub rule: RcvbufAutotune,
    /// `SOCK_RCVBUF_LOCK`: the application set `SO_RCVBUF`, nothing grows.
    pub locked: bool,
    /// `rcv_rtt_est.rtt_us` (eight times the estimate; 0 before any sample).
    pub rtt8: u64,
    /// `rcv_rtt_est.seq` and `.time` (`None` before the first measure).
    pub est_seq: u64,
    pub est_time: Option<u64>,
    /// `rcv_rtt_last_tsecr` (v4.19+ rules).
    pub last_tsecr: Option<u64>,
    /// The timestamp the receiver's last ACK carried, which the sender's segments echo
    /// (`rcv_tsecr`; on loopback the ACK reaches the sender at once).
    pub tsval: u64,
    /// `rcvq_space.space`, `.seq`, `.time`.
    pub space: u64,
    pub seq: u64,
    pub time: u64,
    /// `copied_seq`: the bytes the reader has copied out.
    pub copied_seq: u64,
    /// Times `tcp_rcv_space_adjust` raised `sk_rcvbuf`.
    pub grows: u32,
}

impl Conn {
    /// `tcp_init_buffer_space` once the connection is established (at time zero, the workload's
    /// untimed setup): `rcvq_space.space` is the first window (v4.9: `rcv_wnd`; from
    /// 041a14d26715, v4.19: the least of `rcv_ssthresh`, `rcv_wnd` and ten `advmss`).
    pub(super) fn init_buffer_space(&mut self, k: &NetKnobs, locked: bool) {
        let rule = k.tcp_rcvbuf_autotune;
        let space = match rule {
            RcvbufAutotune::V4_9 => self.rcv_wnd,
            _ => self.rcv_ssthresh.min(self.rcv_wnd).min(TCP_INIT_CWND * LOOPBACK_ADVMSS),
        };
        self.rcvq = RcvSpace { rule, locked, space, ..RcvSpace::default() };
        if rule == RcvbufAutotune::V4_9 && !locked {
            // v4.9's tcp_fixup_rcvbuf (removed by a337531b942b, v4.19): room for four times
            // `tcp_default_init_rwnd` (2 at loopback's MSS) segments of two truesizes each; the
            // clamp becomes the full space (tcp_app_win 31), the first window stays.
            let rcvmem = 2 * skbuff::skb_truesize(LOOPBACK_ADVMSS + skbuff::TCP_MAX_HEADER) * 2 * 4;
            if self.rcvbuf < rcvmem {
                self.rcvbuf = rcvmem.min(rule.rmem_max());
                self.window_clamp = self.win_from_space(self.rcvbuf);
            }
        }
    }

    /// The clocks at the connection's establishment: `rcvq_space.time` and the timestamp of the
    /// handshake's last segment, which the first data segments echo.
    pub fn established_at(&mut self, clock: TcpClock) {
        (self.rcvq.time, self.rcvq.tsval) = (clock.us, clock.ts);
    }

    /// The receiver's RTT samples from a segment just queued at `clock` (`full`: it was at least
    /// the `rcv_mss` of before it arrived)
    /// (`tcp_rcv_established` -> `tcp_rcv_rtt_measure_ts`, then `tcp_event_data_recv` ->
    /// `tcp_rcv_rtt_measure`). The window sample is the time from one measure's start until
    /// `rcv_nxt` passes the start's `rcv_nxt + rcv_wnd` (at least one unit), kept only when it is
    /// lower. The timestamp sample, for a segment of at least `rcv_mss`, is the time since the
    /// ACK whose timestamp the segment echoes: on loopback zero but at a tick; v4.9 and v4.19 ..
    /// v6.15 count zero as one unit (1 jiffy, 1 ms), v6.16+ drops it. Past v4.9 a timestamp
    /// already used gives no second sample (`rcv_rtt_last_tsecr`, read in v5.3 and v6.x).
    pub fn rcv_rtt_sample(&mut self, full: bool, clock: TcpClock, rcv_queue_empty: bool) {
        let r = &mut self.rcvq;
        if r.rule.is_off() {
            return;
        }
        if full && r.last_tsecr != Some(r.tsval) {
            if r.rule != RcvbufAutotune::V4_9 {
                r.last_tsecr = Some(r.tsval);
            }
            let ticks = clock.ts.saturating_sub(r.tsval);
            let (sample, keep) = match r.rule {
                RcvbufAutotune::V6_18 => (ticks * 1000, ticks > 0),
                RcvbufAutotune::V4_19 => (ticks.max(1) * 1000, true),
                _ => (ticks.max(1), true),
            };
            if keep {
                rcv_rtt_update(r, sample, false, rcv_queue_empty);
            }
        }
        if let Some(t) = r.est_time {
            if self.rcv_nxt < r.est_seq {
                return;
            }
            rcv_rtt_update(r, clock.us.saturating_sub(t).max(1), true, rcv_queue_empty);
        }
        r.est_seq = self.rcv_nxt + self.rcv_wnd;
        r.est_time = Some(clock.us);
    }

    /// `tcp_rcv_space_adjust` after the reader copied `copied` more bytes at `clock` (before
    /// `tcp_cleanup_rbuf`): once at least one RTT has passed since the last measure, the bytes
    /// copied in it (v6.16+: less those still queued) above `rcvq_space.space` grow the buffer,
    /// unless the application locked it. Returns the new `sk_rcvbuf` if it grew.
    pub fn rcv_space_adjust(&mut self, copied: u64, clock: TcpClock) -> Option<u64> {
        self.rcvq.copied_seq += copied;
        let r = self.rcvq;
        if r.rule.is_off() || r.rtt8 == 0 || clock.us.saturating_sub(r.time) < r.rtt8 >> 3 {
            return None;
        }
        let mut copied = r.copied_seq - r.seq;
        if r.rule == RcvbufAutotune::V6_18 {
            copied = copied.saturating_sub(self.rcv_nxt - r.copied_seq);
        }
        (self.rcvq.seq, self.rcvq.time) = (r.copied_seq, clock.us);
        if copied <= r.space {
            return None;
        }
        self.rcvq.space = copied;
        if r.locked {
            return None;
        }
        let (old, advmss) = (r.space.max(1), LOOPBACK_ADVMSS);
        let (rcvbuf, clamp) = match r.rule {
            RcvbufAutotune::V4_9 => {
                let mut rcvwin = 2 * copied + 16 * advmss;
                if copied >= old + (old >> 2) {
                    rcvwin = if copied >= old + (old >> 1) { rcvwin << 1 } else { rcvwin + (rcvwin >> 1) };
                }
                let mut rcvmem = skbuff::skb_truesize(advmss + skbuff::TCP_MAX_HEADER);
                while win_from_space(rcvmem) < advmss {
                    rcvmem += 128;
                }
                ((rcvwin / advmss * rcvmem).min(r.rule.rmem_max()), rcvwin)
            }
            _ => {
                let mut rcvwin = 2 * copied;
                if r.rule == RcvbufAutotune::V4_19 {
                    rcvwin += 16 * advmss;
                }
                rcvwin += 2 * (rcvwin * (copied - old) / old);
                let rcvbuf = self.space_from_win(rcvwin).min(r.rule.rmem_max());
                (rcvbuf, self.win_from_space(rcvbuf))
            }
        };
        if rcvbuf <= self.rcvbuf {
            return None;
        }
        self.rcvbuf = rcvbuf;
        self.window_clamp = clamp;
        self.rcvq.grows += 1;
        Some(rcvbuf)
    }

    /// `tcp_space_from_win`: the buffer a window needs (v4.9's half, or v6.5+'s ratio).
    fn space_from_win(&self, win: u64) -> u64 {
        (win << super::tcp::TCP_RMEM_TO_WIN_SCALE).checked_div(self.scaling_ratio).unwrap_or(2 * win)
    }

    /// A segment of `len` bytes (PSH set, as every `tcp_sendmsg` push marks its tail) queued at
    /// the receiver at `now`: `tcp_event_data_recv`'s `tcp_measure_rcv_mss` (v4.9 .. v6.18
    /// net/ipv4/tcp_input.c; docs/references/linux-mm.md#nagle-on-loopback) and the
    /// delayed-ACK timer armed if it is not (`__tcp_send_delayed_ack` keeps an earlier deadline).
    /// A segment at least `rcv_mss` long raises the estimate, and only from v6.6 marks the ACK
    /// pushed. A shorter one marks it pushed, unless it is at least `TCP_MSS_DEFAULT` long with
    /// its header and as long as the previous such segment: then it is taken for the peer's
    /// real MSS, `rcv_mss` drops to it, and the ACK is not marked (so a reader that drains the
    /// queue sends none; the clause for segments without PSH never applies here).
    ///
    /// With v6.11+'s `scaling_ratio` (`truesize` is the skb's), a segment that changes `rcv_mss`
    /// upward also measures `len * 256 / truesize` (at least 1); a new ratio re-clamps the window
    /// to the buffer's space at it (`tcp_set_window_clamp`, never below `SOCK_MIN_RCVBUF / 2`).
    pub fn received(&mut self, k: &NetKnobs, len: u64, truesize: u64, now: Ps) {
        self.rcv_nxt += len;
        self.delack_at.get_or_insert(now + super::tcp::DELACK_MIN);
        let lss = std::mem::take(&mut self.last_seg_size);
        if len >= self.rcv_mss {
            if self.scaling_ratio != 0 && len != self.rcv_mss {
                let ratio = ((len << super::tcp::TCP_RMEM_TO_WIN_SCALE) / truesize.max(1)).max(1);
                if ratio != self.scaling_ratio {
                    self.scaling_ratio = ratio;
                    self.set_window_clamp(self.win_from_space(self.rcvbuf));
                }
            }
            self.rcv_mss = len.min(LOOPBACK_SIZE_GOAL);
            self.pushed |= k.tcp_ack_pushed_mss;
            return;
        }
        if len + TCP_HEADER_LEN >= TCP_MSS_DEFAULT + TCP_HDR_MIN {
            self.last_seg_size = len;
            if len == lss {
                self.rcv_mss = len;
                return;
            }
        }
        self.pushed = true;
    }

    /// `tcp_grow_window` (v6.x net/ipv4/tcp_input.c), which `tcp_event_data_recv` runs after a
    /// segment of at least 128 bytes is queued, `free` bytes of the buffer then unused: with room
    /// (the lesser of `window_clamp` and the free space's window, above `rcv_ssthresh`),
    /// `rcv_ssthresh` grows by at most `max(2 * advmss, 2 * len)`. Its truesize test passes for
    /// the paged skbs of v5.10+ (`truesize_adjust` leaves the payload alone); with the v4.9 rule
    /// `rcv_ssthresh` is the clamp until autotuning raises the clamp.
    pub fn grow_window(&mut self, len: u64, free: u64) {
        let room = self.window_clamp.min(self.win_from_space(free)).saturating_sub(self.rcv_ssthresh);
        if len >= 128 && room > 0 {
            self.rcv_ssthresh += room.min((2 * LOOPBACK_SIZE_GOAL).max(2 * len));
        }
    }
}

/// `tcp_rcv_rtt_update(tp, sample, win_dep)`: a first sample is taken; a window sample
/// (`win_dep`) only when lower; a timestamp sample moves the estimate by an eighth of the
/// difference (v4.9 .. v6.15), or (v6.16+, b879dcb1aeec and a00f135cd986) is taken at once
/// when lower and skipped when higher while data waits in the receive queue.
fn rcv_rtt_update(r: &mut RcvSpace, sample: u64, win_dep: bool, rcv_queue_empty: bool) {
    let (old, m) = (r.rtt8, sample.max(1) << 3);
    r.rtt8 = if old == 0 {
        m
    } else if win_dep || (r.rule == RcvbufAutotune::V6_18 && m < old) {
        old.min(m)
    } else if r.rule == RcvbufAutotune::V6_18 && !rcv_queue_empty {
        old
    } else {
        old - (old >> 3) + sample.max(1)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(rule: RcvbufAutotune, locked: bool) -> Conn {
        let k = NetKnobs { tcp_rcvbuf_autotune: rule, ..NetKnobs::default() };
        Conn::with_knobs(&k, false, rule.rmem_default(), locked)
    }

    #[test]
    fn v6_18_grows_the_buffer_as_the_host_traced_it() {
        // Linux 6.18.44's tcp_rcvbuf_grow tracepoint (sockperf 500 B): space 65483, 257,500
        // copied with 85,772 still queued, ratio 251: rcvbuf 131072 -> 1,487,000.
        let mut c = conn(RcvbufAutotune::V6_18, false);
        assert_eq!((c.rcvbuf, c.window_clamp, c.mss, c.rcv_wscale), (131_072, 65_536, 32_768, 10));
        c.rcvq.space = 65_483;
        c.scaling_ratio = 251;
        c.rcvq.rtt8 = 24 << 3;
        c.rcv_nxt = 257_500 + 85_772;
        assert_eq!(c.rcv_space_adjust(257_500, TcpClock { us: 91, ts: 0 }), Some(1_487_000));
        assert_eq!((c.rcvq.space, c.window_clamp), (171_728, 1_487_000 * 251 / 256));
        // Less than one RTT later nothing is measured; the same rate a RTT later grows nothing.
        assert_eq!(c.rcv_space_adjust(171_728, TcpClock { us: 100, ts: 0 }), None);
        assert_eq!(c.rcv_space_adjust(0, TcpClock { us: 116, ts: 0 }), None);
        assert_eq!((c.rcvbuf, c.rcvq.grows), (1_487_000, 1));
    }

    #[test]
    fn the_receive_space_doubles_per_rtt_while_the_reader_doubles_its_rate() {
        // v6.16's rule without the growth term would give 2 * copied; aa251c84636c adds twice
        // the rate's growth, so a doubling rate sees 2 * copied + 4 * copied.
        let mut c = conn(RcvbufAutotune::V6_18, false);
        c.rcvq.rtt8 = 10 << 3;
        let space = c.rcvq.space;
        let mut t = 0;
        let mut bufs = Vec::new();
        for round in 1..=3u64 {
            t += 10;
            c.rcv_nxt += space << round;
            bufs.push(c.rcv_space_adjust(space << round, TcpClock { us: t, ts: 0 }));
            assert_eq!(c.rcvq.space, space << round);
        }
        // ratio 128 (one half): rcvbuf is twice the window, 6 * copied * 2.
        assert_eq!(bufs, [Some(24 * space), Some(48 * space), Some(96 * space)]);
        assert_eq!(c.window_clamp, 48 * space);
    }

    #[test]
    fn a_locked_buffer_is_measured_but_never_grows() {
        for rule in [RcvbufAutotune::V4_9, RcvbufAutotune::V4_19, RcvbufAutotune::V6_18] {
            let mut c = conn(rule, true);
            let before = c;
            c.rcvq.rtt8 = 8;
            c.rcv_nxt = 1 << 20;
            assert_eq!(c.rcv_space_adjust(1 << 20, TcpClock { us: 5000, ts: 5 }), None);
            assert_eq!(c.rcvq.space, 1 << 20, "{rule:?}: rcvq_space still follows the reads");
            assert_eq!((c.rcvbuf, c.window_clamp, c.mss), (before.rcvbuf, before.window_clamp, before.mss));
        }
    }

    #[test]
    fn off_measures_nothing_and_keeps_the_old_connection() {
        let mut c = conn(RcvbufAutotune::Off, false);
        assert_eq!(c, Conn::new(false, 87_380, false));
        c.rcv_nxt = 200_000;
        c.rcv_rtt_sample(true, TcpClock { us: 50, ts: 0 }, true);
        assert_eq!(c.rcv_space_adjust(200_000, TcpClock { us: 5000, ts: 5 }), None);
        assert_eq!((c.rcvq.rtt8, c.rcvbuf), (0, 87_380));
    }

    #[test]
    fn the_older_rules_add_sixteen_advmss_and_v4_9_counts_advmss_blocks() {
        let mut c = conn(RcvbufAutotune::V4_19, false);
        assert_eq!((c.rcvbuf, c.rcvq.space, c.rcv_wscale), (131_072, 65_536, 7));
        c.rcvq.rtt8 = 8000;
        c.rcv_nxt = 131_072;
        // 2 * 131072 + 16 * 65483 = 1,309,872, plus twice its share of the doubled rate.
        let want = (1_309_872 + 2 * 1_309_872) * 2;
        assert_eq!(c.rcv_space_adjust(131_072, TcpClock { us: 1000, ts: 1 }), Some(want.min(6 << 20)));
        let mut c = conn(RcvbufAutotune::V4_9, false);
        // tcp_fixup_rcvbuf at establishment: 16 truesizes of a 64 KB segment; the first window
        // (and MSS) are the 87,380-byte buffer's.
        let rcvmem = 16 * skbuff::skb_truesize(LOOPBACK_ADVMSS + skbuff::TCP_MAX_HEADER);
        assert_eq!((c.rcvbuf, c.window_clamp, c.rcv_wnd, c.mss), (rcvmem, rcvmem / 2, 43_690, 21_845));
        assert_eq!((c.rcv_ssthresh, c.rcvq.space), (43_690, 43_690));
        c.rcvq.rtt8 = 8;
        c.rcv_nxt = 65_536;
        // 65,536 is 1.5 times 43,690: rcvwin = (2 * 65,536 + 16 * 65,483) * 2 = 2,357,600, the
        // buffer 36 advmss blocks of 131,019 bytes (a 64 KB skb's truesize raised by 128s until
        // half of it holds advmss), the clamp rcvwin itself.
        assert_eq!(c.rcv_space_adjust(65_536, TcpClock::jiffies(1)), Some(36 * 131_019));
        assert_eq!(c.window_clamp, 2_357_600);
        // A locked buffer keeps its size from the start.
        assert_eq!(
            Conn::with_knobs(
                &NetKnobs { tcp_rcvbuf_autotune: RcvbufAutotune::V4_9, ..NetKnobs::default() },
                false,
                16_896,
                true
            )
            .rcvbuf,
            16_896
        );
    }

    #[test]
    fn the_rtt_is_the_least_window_sample_and_v6_18_drops_zero_timestamp_samples() {
        let mut c = conn(RcvbufAutotune::V6_18, false);
        c.rcv_rtt_sample(true, TcpClock { us: 100, ts: 0 }, true);
        assert_eq!(c.rcvq.rtt8, 0, "the first segment only starts the window measure");
        c.rcv_nxt = 65_536 + 10;
        c.rcv_rtt_sample(true, TcpClock { us: 107, ts: 0 }, true);
        assert_eq!(c.rcvq.rtt8, 7 << 3);
        // A larger window sample is ignored; a 1 ms timestamp sample (a tick) with data queued too.
        c.rcv_nxt += 200_000;
        c.rcv_rtt_sample(true, TcpClock { us: 1200, ts: 1 }, false);
        assert_eq!(c.rcvq.rtt8, 7 << 3);
        // v4.19 .. v6.15: a zero timestamp sample counts as 1 ms and pulls the average up.
        let mut c = conn(RcvbufAutotune::V4_19, false);
        c.rcvq.rtt8 = 7 << 3;
        c.rcv_rtt_sample(true, TcpClock { us: 10, ts: 0 }, true);
        assert_eq!(c.rcvq.rtt8, 56 - 7 + 1000);
        // The same echoed timestamp gives no second sample.
        c.rcv_rtt_sample(true, TcpClock { us: 11, ts: 0 }, true);
        assert_eq!(c.rcvq.rtt8, 56 - 7 + 1000);
    }

    #[test]
    fn each_preset_autotunes_by_its_kernels_rule_and_the_older_ones_not_at_all() {
        let rule = |p: &str| crate::linux::config::KernelConfig::preset(p).unwrap().net.tcp_rcvbuf_autotune;
        assert_eq!((rule("4.9"), rule("4.9-hopcpu")), (RcvbufAutotune::V4_9, RcvbufAutotune::V4_9));
        for p in ["5.12", "5.14", "5.18.1", "6.3", "6.13", "6.15"] {
            assert_eq!(rule(p), RcvbufAutotune::V4_19, "{p}");
        }
        assert_eq!((rule("6.18"), rule("6.18+drain")), (RcvbufAutotune::V6_18, RcvbufAutotune::V6_18));
        assert_eq!((rule("3.17"), rule("4.1")), (RcvbufAutotune::Off, RcvbufAutotune::Off));
        // Off serializes as before (absent), so older results read back unchanged.
        let k = NetKnobs::default();
        assert!(!toml::to_string(&k).unwrap().contains("autotune"));
    }
}
