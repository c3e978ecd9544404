//! Networking's knobs (net/ipv4/tcp.c).

use super::*;

pub(super) const KNOBS: &[Knob] = &[Knob {
    name: "tcp_autocorking",
    section: "net",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "net.ipv4.tcp_autocorking (v3.14+, default on): tcp_push holds a small tail skb while an earlier \
          one of the socket is in a qdisc or device queue (linux/net/ipv4/tcp.rs); off before v3.14 \
          (default off)",
    apply: |k, v| on_off(v).map(|b| k.net.tcp_autocorking = b),
}, Knob {
    name: "tcp_ack_pushed_mss",
    section: "net",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "v6.6+ tcp_measure_rcv_mss ('tcp: fix delayed ACKs for MSS boundary condition'): a received segment \
          of at least rcv_mss with PSH marks the ACK pushed, so the reader that drains the queue ACKs at once \
          and Nagle's held tail goes; before v6.6 (off) such a segment waits for the 40 ms delayed-ACK timer \
          (linux/net/ipv4/tcp.rs)",
    apply: |k, v| on_off(v).map(|b| k.net.tcp_ack_pushed_mss = b),
}, Knob {
    name: "tcp_paged_payload",
    section: "net",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "v5.10+ tcp_sendmsg: all of a send's payload goes to page fragments and the skb's head holds the \
          headers alone, so a small segment's truesize is about 1.3 KB; before (off, v4.9's select_size) the \
          first 1.4 KB go into a 2 KB linear head (linux/net/core/skbuff.rs)",
    apply: |k, v| on_off(v).map(|b| k.net.tcp_paged_payload = b),
}, Knob {
    name: "tcp_backlog_flush_skbs",
    section: "net",
    needed: Needed::Newer,
    allowed: "0..=1024 skbs (0 before d41a69f1d390 of 2016, 1 from it (v4.9) to v5.3, 16 from v5.4)",
    doc: "tcp_sendmsg's sk_flush_backlog: the ACKs that waited on the sender's backlog are processed before a \
          new skb once the call has allocated this many since it began or the last flush (d41a69f1d390, in v4.9: \
          before every skb after the first; v5.4 'tcp: batch calls to sk_flush_backlog()': every 16); 0 never \
          (linux/net/ipv4/tcp_output.rs)",
    apply: |k, v| match v.parse::<u32>() {
        Ok(n) if n <= 1024 => {
            k.net.tcp_backlog_flush_skbs = n;
            Ok(())
        }
        _ => Err(None),
    },
}, Knob {
    name: "tcp_scaling_ratio",
    section: "net",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "v6.11+ receive window (dfa2f0483360 of v6.5, with v6.10's 50% start and v6.11's window_clamp that \
          follows): the window is the buffer's space times skb->len / skb->truesize of a received segment that \
          changed rcv_mss, starting at one half; off is v4.9's tcp_adv_win_scale of 1, half the space \
          (linux/net/ipv4/tcp.rs)",
    apply: |k, v| on_off(v).map(|b| k.net.tcp_scaling_ratio = b),
}, Knob {
    name: "tcp_rcvbuf_autotune",
    section: "net",
    needed: Needed::Newer,
    allowed: crate::linux::net::ipv4::tcp_input::RcvbufAutotune::ALLOWED,
    doc: "receive-buffer autotuning (tcp_rcv_space_adjust) of a socket without SO_RCVBUF, by the kernel whose \
          rule it follows: 4.9 (RTT in jiffies, 2 * copied + 16 * advmss in advmss blocks, tcp_rmem[1] 87380), \
          4.19 (v4.19 .. v6.15: RTT in us with 1 ms timestamp samples, tcp_rmem[1] 131072), 6.18 (v6.16's \
          2 * copied less the queued bytes, aa251c84636c's growth term, tcp_rmem[2] 32 MiB); off keeps the \
          buffer at 87380 (linux/net/ipv4/tcp_input.rs)",
    apply: |k, v| {
        crate::linux::net::ipv4::tcp_input::RcvbufAutotune::parse(v)
            .map(|r| k.net.tcp_rcvbuf_autotune = r)
            .ok_or(None)
    },
}];
