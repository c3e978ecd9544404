//! TCP autocorking (net/ipv4/tcp.c `tcp_push` -> `tcp_should_autocork`, v3.14+;
//! docs/references/seeds-001-003-004.md#tcp-autocorking).
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

/// `[net]` knobs of a kernel preset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetKnobs {
    /// `net.ipv4.tcp_autocorking` (v3.14+, default 1); off for kernels before it.
    pub tcp_autocorking: bool,
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let on = NetKnobs { tcp_autocorking: true };
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
}
