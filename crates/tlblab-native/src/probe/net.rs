//! The loopback socket primitives `[net]` holds, timed alone as crate::probe::ipc times the
//! pipe: one thread sends a burst of small messages to a socket nobody waits on, then receives
//! them back, so each call is its system call and its protocol path with no sleep, no wake-up
//! and no context switch (the model simulates those separately). Never netperf's or sockperf's
//! stream: a burst stays far inside the receive buffer, so no call blocks or drops.
//!
//! - `udp_sendto`: one `sendto(2)` of a [`MSG`]-byte datagram on an unconnected UDP socket to a
//!   bound one on 127.0.0.1: `udp_sendmsg` .. `ip_make_skb` .. `ip_send_skb` .. `loopback_xmit`
//!   .. `netif_rx`, and the NET_RX softirq that runs on the same CPU when the send re-enables
//!   bottom halves (`ip_rcv` .. `udp_rcv` .. `__udp_enqueue_schedule_skb`, `sock_def_readable`
//!   finding nobody to wake): all of `net.udp_send_cycles`' path.
//! - `udp_recv`: one `recv(2)` of a queued datagram: `udp_recvmsg`, `__skb_recv_udp`, the copy,
//!   `skb_consume_udp`.
//! - `tcp_send`: one `send(2)` of a [`MSG`]-byte segment on a connected loopback TCP socket with
//!   `TCP_NODELAY` (each send its own segment, as `net.tcp_send_cycles` counts them):
//!   `tcp_sendmsg` .. `tcp_write_xmit` .. `tcp_transmit_skb` .. loopback, and in the softirq
//!   `tcp_v4_rcv` .. `tcp_rcv_established`. Almost no ACK: a burst stays inside the window
//!   and nobody reads meanwhile, so the receiver ACKs few of its segments (0.03 a send, and
//!   0.04 a read in the receive phase, by `nstat` around this pattern on a Linux 6.18 guest);
//!   a pure ACK's own path is in none of these primitives.
//! - `tcp_recv`: one `recv(2)` of one queued segment: `tcp_recvmsg`, `tcp_cleanup_rbuf` and the
//!   window update it may send.
//! - `tcp_cork_send`: one `send(2)` of [`MSG`] bytes on the same socket with `TCP_CORK` set, so
//!   that the data is appended to the write queue's unsent tail and `tcp_push` stops at
//!   `tcp_nagle_test`, as for a send Nagle holds (`net.tcp_append_cycles`); each burst is then
//!   uncorked (one segment) and read back untimed.
//! - `tcp_acked`: a `send(2)` of one segment (`TCP_NODELAY`) and at once the `recv(2)` of it,
//!   [`TCP_BURST`] pairs a burst: each read drains a queue of one pushed segment, so its
//!   `tcp_cleanup_rbuf` ACKs at once (`tcp_send_ack` .. loopback) and the softirq on the same
//!   CPU brings that pure ACK to the writer's socket (`tcp_v4_rcv` .. `tcp_ack`, freeing the
//!   acknowledged skb): one ACK a pair (1.00 by `nstat`'s `TcpOutSegs` on a Linux 6.18 guest,
//!   against 0.06 a message in the bursts above). A pair less `tcp_send` and `tcp_recv` is the
//!   pure ACK's path (`net.tcp_ack_cycles`; docs/references/machine-costs.md#tcp-ack-path).
//!
//! What the model adds on top of `[net]`'s cycles, and the derivation therefore takes off the
//! measured call: the system-call entry and exit (`kernel.syscall_ns`) and the copy (at
//! `memory.memcpy_mbps`). Left in, and said so in the source: the SLUB calls of the skb and its
//! head (the probe has no `[slab]` to take them off with), which the model charges again.

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::time::Instant;

use super::ipc::timed_bursts;
use crate::stats::Summary;

/// The message: a small datagram or segment (netperf's smallest size in the seed's sweep).
pub const MSG: usize = 64;
/// Datagrams per burst: about 50 KiB of truesize, a quarter of the default `rmem_default`.
const UDP_BURST: usize = 64;
/// Segments per burst: well inside the default `tcp_rmem` and the initial window.
const TCP_BURST: usize = 32;

/// Per-call nanoseconds of each primitive over bursts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetCalls {
    pub udp_send_ns: Summary,
    pub udp_recv_ns: Summary,
    pub tcp_send_ns: Summary,
    pub tcp_recv_ns: Summary,
    /// Absent from reports written before it.
    #[serde(default)]
    pub tcp_cork_send_ns: Option<Summary>,
    /// A send and the read of its segment, which ACKs it. Absent from reports written before it.
    #[serde(default)]
    pub tcp_acked_ns: Option<Summary>,
}

/// Measures the four primitives, `runs` bursts each, on a thread pinned to `cpu` (the softirq
/// of every send runs there too).
pub fn net_calls_on(cpu: usize, runs: usize) -> std::io::Result<NetCalls> {
    std::thread::spawn(move || {
        crate::sys::pin_to_cpu(cpu)?;
        net_calls(runs)
    })
    .join()
    .map_err(|_| std::io::Error::other("the net probe thread panicked"))?
}

/// Measures the four primitives, `runs` bursts each, on the calling thread.
pub fn net_calls(runs: usize) -> std::io::Result<NetCalls> {
    let (msg, mut buf) = ([7u8; MSG], [0u8; MSG]);
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    let to = rx.local_addr()?;
    let wrong = |what: &str, n: usize| std::io::Error::other(format!("{what} moved {n} of {MSG} bytes"));
    let (udp_w, udp_r) = timed_bursts(
        UDP_BURST,
        runs,
        || match tx.send_to(&msg, to)? {
            MSG => Ok(()),
            n => Err(wrong("sendto", n)),
        },
        || match rx.recv(&mut buf)? {
            MSG => Ok(()),
            n => Err(wrong("recv", n)),
        },
    )?;
    let l = TcpListener::bind("127.0.0.1:0")?;
    let mut tx = TcpStream::connect(l.local_addr()?)?;
    tx.set_nodelay(true)?;
    let (mut rx, _) = l.accept()?;
    let mut buf = [0u8; MSG];
    let (tcp_w, tcp_r) = timed_bursts(TCP_BURST, runs, || tx.write_all(&msg), || rx.read_exact(&mut buf))?;
    let mut corked = Vec::with_capacity(runs);
    let mut all = [0u8; MSG * TCP_BURST];
    for b in 0..=runs {
        crate::sys::set_tcp_cork(&tx, true)?;
        let t = Instant::now();
        for _ in 0..TCP_BURST {
            tx.write_all(&msg)?;
        }
        let per = t.elapsed().as_nanos() as f64 / TCP_BURST as f64;
        crate::sys::set_tcp_cork(&tx, false)?;
        rx.read_exact(&mut all)?;
        // The first burst warms the path, as timed_bursts does.
        if b > 0 {
            corked.push(per);
        }
    }
    let mut acked = Vec::with_capacity(runs);
    for b in 0..=runs {
        let t = Instant::now();
        for _ in 0..TCP_BURST {
            tx.write_all(&msg)?;
            rx.read_exact(&mut buf)?;
        }
        if b > 0 {
            acked.push(t.elapsed().as_nanos() as f64 / TCP_BURST as f64);
        }
    }
    Ok(NetCalls {
        udp_send_ns: Summary::of(&udp_w),
        udp_recv_ns: Summary::of(&udp_r),
        tcp_send_ns: Summary::of(&tcp_w),
        tcp_recv_ns: Summary::of(&tcp_r),
        tcp_cork_send_ns: Some(Summary::of(&corked)),
        tcp_acked_ns: Some(Summary::of(&acked)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_primitive_is_timed_without_blocking() {
        let c = net_calls(2).unwrap();
        let cork = c.tcp_cork_send_ns.as_ref().expect("measured");
        let acked = c.tcp_acked_ns.as_ref().expect("measured");
        for s in [&c.udp_send_ns, &c.udp_recv_ns, &c.tcp_send_ns, &c.tcp_recv_ns, cork, acked] {
            assert!(s.median > 0.0 && s.min <= s.median && s.median <= s.max, "{s:?}");
            assert_eq!(s.n, 2);
        }
    }
}
