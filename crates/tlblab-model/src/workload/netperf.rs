//! netperf 2.4.5's UDP_STREAM and TCP_STREAM on localhost
//! (docs/references/seeds-001-003-004.md#benchmarks-2016): the netperf process sends `-m` bytes per `send()`
//! as fast as it can, netserver `recv()`s; both unpinned, so the scheduler puts them on two CPUs of one
//! socket (the model: CPU 0 and CPU 1, two cores).
//! `-s` / `-S` set `SO_SNDBUF` / `SO_RCVBUF` on both ends, as mmtests 3d1013d4 passed them
//! (`-s $((SIZE+256)) -S $((SIZE+256))`); without them the sockets keep the defaults.
//!
//! The metric is netperf's "Throughput 10^6bits/sec" (higher is better). For UDP_STREAM netperf
//! prints two lines, the sender's and the receiver's; `side=recv` reports the receiver's (what
//! arrived after drops), the default `side=send` the sender's. TCP's two lines agree.

use super::{flag_count, flag_pairs, Benchmark, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::linux::net::socket::Proto;
use crate::linux::syscalls::{Op, Program};
use crate::profile::Section;
use crate::time::Ps;

/// The largest UDP payload over IPv4 (65535 - 8 - 20); netperf refuses larger `-m`.
pub const MAX_MSG: u64 = 65_507;
/// The largest `-s` / `-S` accepted (the kernel caps at `wmem_max` / `rmem_max` anyway).
pub const MAX_BUF: u64 = 1 << 30;

const OPTIONS: &str = "-t UDP_STREAM|TCP_STREAM (required), -m BYTES (send size, 1..=65507, required), \
     -s BYTES -S BYTES (SO_SNDBUF / SO_RCVBUF, 1..=1073741824, both or neither), side=send|recv (UDP: which line)";

/// Which of netperf's result lines the metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Send,
    Recv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Netperf {
    pub proto: Proto,
    pub size: u64,
    pub bufs: Option<(u64, u64)>,
    pub side: Side,
}

fn test_name(p: Proto) -> &'static str {
    match p {
        Proto::Udp => "UDP_STREAM",
        Proto::Tcp => "TCP_STREAM",
    }
}

impl Benchmark for Netperf {
    fn parse(text: &str) -> Option<Result<Netperf, String>> {
        let mut words = text.split_whitespace();
        if words.next()? != "netperf" {
            return None;
        }
        Some(parse_args(&words.collect::<Vec<_>>()))
    }

    fn names() -> Vec<String> {
        vec!["netperf -t UDP_STREAM -m 1024".into(), "netperf -t TCP_STREAM -m 1024".into()]
    }

    fn options() -> &'static str {
        OPTIONS
    }

    fn name(&self) -> String {
        let mut s = format!("netperf -t {}", test_name(self.proto));
        if let Some((snd, rcv)) = self.bufs {
            s += &format!(" -s {snd} -S {rcv}");
        }
        s += &format!(" -m {}", self.size);
        if self.side == Side::Recv {
            s += " side=recv";
        }
        s
    }

    fn metric(&self) -> MetricKind {
        let name = match self.side {
            Side::Send => "throughput",
            Side::Recv => "recv throughput",
        };
        MetricKind { name, unit: "10^6bits/s", higher_is_better: true }
    }

    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        Some(2)
    }

    fn fixed_tasks(&self) -> Option<u32> {
        Some(2)
    }

    fn sections(&self) -> &'static [Section] {
        &[Section::Slab, Section::Net]
    }

    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        // mmtests passes `-M SIZE` too: netserver reads `-m` bytes a call.
        stream_pair(sim, run, self.proto, self.bufs, self.size, self.size as u32, self.side);
    }

    /// Payload bits per second in units of 10^6, from the messages the counted side completed.
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        iterations as f64 * self.size as f64 * 8.0 / 1e6 / measured.as_secs_f64()
    }
}

fn parse_args(words: &[&str]) -> Result<Netperf, String> {
    let mut proto = None;
    let (mut size, mut snd, mut rcv) = (None, None, None);
    let mut side = Side::Send;
    for (flag, value) in flag_pairs(words, &[]) {
        match flag {
            "-t" => {
                proto = Some(match value.unwrap_or("") {
                    "UDP_STREAM" => Proto::Udp,
                    "TCP_STREAM" => Proto::Tcp,
                    v => {
                        return Err(format!(
                            "netperf: `-t {v}` is not allowed; allowed UDP_STREAM, TCP_STREAM"
                        ))
                    }
                });
            }
            "-m" => size = Some(flag_count("netperf", flag, value, MAX_MSG)?),
            "-s" => snd = Some(flag_count("netperf", flag, value, MAX_BUF)?),
            "-S" => rcv = Some(flag_count("netperf", flag, value, MAX_BUF)?),
            "side=send" => side = Side::Send,
            "side=recv" => side = Side::Recv,
            _ => return Err(format!("netperf: `{flag}` is not allowed; options: {OPTIONS}")),
        }
    }
    let proto = proto.ok_or_else(|| format!("netperf: `-t` is required; options: {OPTIONS}"))?;
    let size = size.ok_or_else(|| format!("netperf: `-m` is required; options: {OPTIONS}"))?;
    let bufs = match (snd, rcv) {
        (Some(s), Some(r)) => Some((s, r)),
        (None, None) => None,
        _ => return Err(format!("netperf: give `-s` and `-S` together; options: {OPTIONS}")),
    };
    if proto == Proto::Tcp && side == Side::Recv {
        return Err("netperf: `side=recv` is for UDP_STREAM only (TCP_STREAM prints one throughput); allowed side=send".into());
    }
    Ok(Netperf { proto, size, bufs, side })
}

/// A sender and a receiver on a connected loopback pair: the sender on CPU 0, the receiver on
/// CPU 1 (another core of the same socket, where an unbound run's wake-ups land them), each in
/// its own process. The receiver asks for `recv_len` bytes a call ([`Op::Recv`]). `side` says
/// whose completed calls the loop iterations count.
#[allow(clippy::too_many_arguments)]
pub(super) fn stream_pair(
    sim: &mut Simulation,
    run: &Setup<'_>,
    proto: Proto,
    bufs: Option<(u64, u64)>,
    size: u64,
    recv_len: u32,
    side: Side,
) {
    assert!(run.profile.topology.cpus() >= 2, "a stream test needs two CPUs (run::run checks)");
    let sock = sim.kernel.socket_pair(proto, bufs);
    let (tx, rx) = (sim.add_mm(), sim.add_mm());
    sim.add_task(Box::new(Sender { sock, len: size as u32, count: side == Side::Send }), tx, 0);
    sim.add_task(Box::new(Receiver { sock, len: recv_len, count: side == Side::Recv }), rx, 1);
}

/// The sending loop: `send(fd, buf, len, 0)` forever.
pub(super) struct Sender {
    pub sock: u16,
    pub len: u32,
    pub count: bool,
}

impl Program for Sender {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::Send { sock: self.sock, len: self.len });
        if self.count {
            out.push(Op::Iteration);
        }
    }
}

/// The receiving loop: `recv(fd, buf, len, 0)` forever.
pub(super) struct Receiver {
    pub sock: u16,
    pub len: u32,
    pub count: bool,
}

impl Program for Receiver {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::Recv { sock: self.sock, len: self.len });
        if self.count {
            out.push(Op::Iteration);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::run::{run, RunResult, RunSpec, Workload};
    use crate::time::Ps;

    fn netperf(machine: &str, kernel: &str, workload: &str) -> RunResult {
        let spec = RunSpec::of(kernel, workload, 2, Ps::US * 300, Ps::MS * 2);
        run(&crate::profile::shipped(machine), &spec).unwrap()
    }

    #[test]
    fn options_round_trip_and_bad_input_names_the_flag_and_allowed_values() {
        for w in [
            "netperf -t UDP_STREAM -s 320 -S 320 -m 64",
            "netperf -t UDP_STREAM -s 320 -S 320 -m 64 side=recv",
            "netperf -t TCP_STREAM -m 16384",
            "sockperf throughput --mps max --msg-size 14",
            "sockperf throughput --tcp --mps max --msg-size 850",
        ] {
            assert_eq!(Workload::parse(w).unwrap().name(), w);
        }
        for (w, want) in [
            ("netperf -t SCTP_STREAM -m 64", "UDP_STREAM, TCP_STREAM"),
            ("netperf -t UDP_STREAM -m 0", "`-m 0` is not allowed; allowed 1..=65507"),
            ("netperf -t UDP_STREAM -m 70000", "allowed 1..=65507"),
            ("netperf -t UDP_STREAM", "`-m` is required"),
            ("netperf -t UDP_STREAM -m 64 -s 320", "`-s` and `-S` together"),
            ("netperf -t TCP_STREAM -m 64 side=recv", "allowed side=send"),
            ("netperf -t UDP_STREAM -m 64 -x", "`-x` is not allowed"),
            ("sockperf throughput --msg-size 14 --mps 1000", "`--mps 1000` is not allowed; allowed max"),
            ("sockperf throughput --msg-size abc", "allowed 1..=65506"),
            ("sockperf ping-pong --msg-size 14", "`throughput` subcommand"),
        ] {
            let e = Workload::parse(w).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{w}: {e}");
        }
    }

    #[test]
    fn tcp_64_byte_sends_coalesce_into_half_window_segments_that_the_reader_takes_64_bytes_a_call() {
        // mmtests' -s/-S 320: a 2304-byte receive buffer, a 1152-byte window, a 576-byte MSS.
        let w = "netperf -t TCP_STREAM -s 320 -S 320 -m 64";
        let new = netperf("haswell-ep-2698v3-2s", "6.18", w);
        let c = &new.counters;
        assert_eq!((new.oracle.violations, c["tcp_delayed_acks"]), (0, 0), "{c:?}");
        // Several sends a segment, none longer than the MSS's nine messages ...
        let segs = c["net_delivered"];
        assert!(segs * 3 < new.operations() && c["net_delivered_bytes"] <= segs * 576, "{c:?}");
        // ... some queued on the reader's backlog while it was inside tcp_recvmsg, and one read
        // per message.
        assert!(c["tcp_rx_backlog"] > 0 && c["tcp_rx_backlog"] < segs, "{c:?}");
        assert!(c["net_received_bytes"] == c["net_received"] * 64 && c["net_received"] > 3 * segs, "{c:?}");
        // v4.9 puts the payload in a 2 KB head whose truesize fills the buffer: one segment at a
        // time, each read at once (Nagle holds a tail only when an ACK is late: the waker's
        // try_to_wake_up of the sleeping reader delays a few, 5 of ~310 here).
        let old = netperf("haswell-ep-2698v3-2s", "4.9", w);
        let c = &old.counters;
        let ops = old.operations();
        assert!(c["net_delivered"] * 100 >= ops * 97 && c["tcp_nagle_held"] * 30 <= ops, "{ops} {c:?}");
        assert!(new.metric.value > 3.0 * old.metric.value, "{} {}", new.metric.value, old.metric.value);
    }

    #[test]
    fn v6_11s_scaling_ratio_gives_netperfs_320_byte_buffer_a_one_segment_window_of_fuller_segments() {
        // The same pair on 6.7 (v4.9's half of the space: a 1152-byte window, two segments) and
        // 6.18 (the ratio measured from a 576-byte segment: a 711-byte full space, one segment;
        // docs/references/linux-mm.md#tcp-scaling-ratio).
        let w = "netperf -t TCP_STREAM -s 320 -S 320 -m 64";
        let (new, old) =
            (netperf("haswell-ep-2698v3-2s", "6.18", w), netperf("haswell-ep-2698v3-2s", "6.7", w));
        let per_segment = |c: &std::collections::BTreeMap<String, u64>| {
            c["net_received"] as f64 / c["net_delivered"] as f64
        };
        let (n, o) = (&new.counters, &old.counters);
        assert_eq!((new.oracle.violations, old.oracle.violations), (0, 0));
        // With one segment in flight the sender's tail waits for the window, and more sends go
        // into each segment (still none longer than the MSS).
        assert!(
            n["tcp_rwnd_held"] > 0 && n["tcp_rwnd_held"] > 2 * o["tcp_rwnd_held"],
            "{} {}",
            n["tcp_rwnd_held"],
            o["tcp_rwnd_held"]
        );
        assert!(per_segment(n) > 1.5 * per_segment(o), "{} {}", per_segment(n), per_segment(o));
        assert!(n["net_delivered_bytes"] <= n["net_delivered"] * 576, "{n:?}");
    }

    #[test]
    fn a_stream_needs_two_tasks_and_the_machine_sections() {
        let mut spec = RunSpec::of("4.9", "netperf -t UDP_STREAM -m 64", 3, Ps::US * 10, Ps::US * 100);
        let e = run(&crate::profile::shipped("haswell-ep-2698v3-2s"), &spec).unwrap_err();
        assert!(e.contains("allowed -t 2"), "{e}");
        spec.tasks = 2;
        let e = run(&crate::profile::shipped("haswell-ep-2s"), &spec).unwrap_err();
        assert!(e.contains("[slab]") || e.contains("[net]"), "{e}");
    }

    #[test]
    fn udp_sends_are_delivered_or_dropped_and_every_skb_is_freed_by_the_receiver() {
        for size in [64, 16384] {
            let s = size + 256;
            let send = netperf(
                "haswell-ep-2698v3-2s",
                "4.9",
                &format!("netperf -t UDP_STREAM -s {s} -S {s} -m {size}"),
            );
            let recv = netperf(
                "haswell-ep-2698v3-2s",
                "4.9",
                &format!("netperf -t UDP_STREAM -s {s} -S {s} -m {size} side=recv"),
            );
            let c = &send.counters;
            assert_eq!(send.oracle.violations, 0, "{:?}", send.oracle.examples);
            // The same run, counted on the other side: the same counters.
            assert_eq!(send.counters, recv.counters);
            // Every send completed is delivered or dropped (up to the one in flight at an edge);
            // the receiver takes what was delivered (up to what sits in the queue at an edge).
            let sent = send.operations();
            assert!((c["net_delivered"] + c["net_drops"]).abs_diff(sent) <= 1, "{c:?}");
            assert!(c["net_received"].abs_diff(c["net_delivered"]) <= 4, "{c:?}");
            assert_eq!(c["net_received_bytes"], c["net_received"] * size);
            assert!(recv.metric.value <= send.metric.value * 1.01);
            // 2 objects per skb: allocated on the sender, freed on the receiver (slow path).
            let allocs = c["slab_alloc_fastpath"] + c["slab_alloc_slowpath"];
            if size > 8192 {
                // The head is a kmalloc_large block: order 3 from the page allocator, and in 4.9
                // one zone->lock for its allocation and one for its free.
                assert!(c["kmalloc_large_allocs"].abs_diff(sent) <= 1 && allocs.abs_diff(sent) <= 1, "{c:?}");
                assert!(c["zone_lock_acquisitions"].abs_diff(2 * sent) <= 3, "{c:?}");
            } else {
                assert!(allocs.abs_diff(2 * sent) <= 2, "{c:?}");
            }
        }
    }

    #[test]
    fn tcp_senders_block_on_a_full_buffer_and_runs_repeat() {
        let w = "netperf -t TCP_STREAM -s 320 -S 320 -m 64";
        let a = netperf("haswell-ep-2698v3-2s", "4.9", w);
        // One 2304-byte-truesize skb fills the 2304-byte receive buffer: lock-step.
        assert!(a.per_op("net_send_sleeps") > 0.9, "{:?}", a.counters);
        assert_eq!(a.counters["net_drops"], 0);
        assert_eq!(a.oracle.violations, 0, "{:?}", a.oracle.examples);
        assert_eq!(a, netperf("haswell-ep-2698v3-2s", "4.9", w));
    }
}
