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
}];
