//! netperf's UDP_STREAM and TCP_STREAM on loopback, as a native runner: netperf is not packaged
//! by the distributions the tests run on, so this is its stream loop (src/nettest_bsd.c,
//! `send_udp_stream` / `recv_udp_stream` and `send_tcp_stream` / `recv_tcp_stream`) with mmtests'
//! settings of the seed's era (docs/references/seeds-001-003-004.md#benchmarks-2016 and
//! docs/references/seeds-001-003-004.md#loopback-allocations:
//! `-- -s $((SIZE+256)) -S $((SIZE+256)) -m SIZE -M SIZE`).
//!
//! What netperf does and this keeps:
//! - `-s N` sets both `SO_SNDBUF` and `SO_RCVBUF` of the sender's data socket to N, `-S N` the
//!   receiver's (a single value without a comma fills both of the pair); the kernel doubles them.
//! - UDP_STREAM: the sender's socket is not connected; every message is one `sendto(2)` of
//!   `-m` bytes to the receiver, cycling through a ring of 32 buffers (netperf's default width
//!   for UDP); a send failing with `ENOBUFS` is counted as failed and the loop goes on. The
//!   receiver `recv(2)`s `-M` bytes at a time into one buffer.
//! - TCP_STREAM: `send(2)` of `-m` bytes from a ring of `SO_SNDBUF / m + 1` buffers (at least
//!   two); the receiver `recv(2)`s `-M` bytes into a ring of `SO_RCVBUF / M + 1`.
//! - The metric is netperf's sending side, payload bytes sent in the interval, in
//!   `-f m` units: 10^6 bits/s (the seed tables' unit and the model's).
//!
//! Where this departs: sender and receiver are two threads of this process, not netperf and
//! netserver, each pinned to its own CPU (the first two this process may use), as the model
//! puts them (sender on CPU 0, receiver on CPU 1); with one thread per CPU neither switches mm,
//! so the process boundary costs nothing the loop sees. netperf's control connection and its
//! `-i 3,3` confidence iterations are replaced by validate's warm-up, window and repeated runs.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::{
    background_rates, measure_window, pin_and_wait, read_counters, result, Counter, NativeResult, Outcome,
};
use crate::sys;

/// The two tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    UdpStream,
    TcpStream,
}

/// netperf's default buffer ring width for UDP_STREAM (`send_width = 32` when unset).
const UDP_SEND_WIDTH: usize = 32;

/// How long a blocked `send` / `recv` waits before looking at the stop flag again.
const POLL: Duration = Duration::from_millis(50);

impl Test {
    pub const ALL: [Test; 2] = [Test::UdpStream, Test::TcpStream];

    /// The name `validate` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Test::UdpStream => "netperf-udp",
            Test::TcpStream => "netperf-tcp",
        }
    }

    pub fn parse(name: &str) -> Option<Test> {
        Test::ALL.into_iter().find(|t| t.name() == name)
    }

    /// netperf's `-t`.
    pub fn test_name(self) -> &'static str {
        match self {
            Test::UdpStream => "UDP_STREAM",
            Test::TcpStream => "TCP_STREAM",
        }
    }

    /// The seed experiment whose simulated warm-up and window the twin runs with.
    pub fn experiment(self) -> &'static str {
        match self {
            Test::UdpStream => "seed-004-netperf-udp-1s",
            Test::TcpStream => "seed-004-netperf-tcp",
        }
    }

    /// The model's workload text for message size `size`, as the seed experiments write it.
    pub fn sim_text(self, size: u64) -> String {
        let b = socket_buffer(size);
        format!("netperf -t {} -s {b} -S {b} -m {size}", self.test_name())
    }
}

/// mmtests' socket buffer request for message size `size`: `-s $((SIZE+256))`.
pub fn socket_buffer(size: u64) -> u64 {
    size + 256
}

/// netperf's send ring width: 32 buffers for UDP; for TCP the socket's send buffer (as the
/// kernel reports it back) over the message size, plus one, at least two.
pub fn send_width(test: Test, sndbuf: u64, size: u64) -> usize {
    match test {
        Test::UdpStream => UDP_SEND_WIDTH,
        Test::TcpStream => ((sndbuf / size.max(1)) as usize + 1).max(2),
    }
}

/// netserver's receive ring width: one buffer for UDP; for TCP as the send ring.
pub fn recv_width(test: Test, rcvbuf: u64, size: u64) -> usize {
    match test {
        Test::UdpStream => 1,
        Test::TcpStream => send_width(Test::TcpStream, rcvbuf, size),
    }
}

/// Payload bytes over seconds, in netperf's `-f m` unit (10^6 bits/s).
pub fn throughput_mbit(messages: u64, size: u64, seconds: f64) -> f64 {
    messages as f64 * size as f64 * 8.0 / 1e6 / seconds
}

#[derive(Debug, Clone)]
pub struct NetperfSpec {
    pub test: Test,
    /// `-m` and `-M`: bytes per send and per receive.
    pub size: u64,
    pub warmup: Duration,
    pub measure: Duration,
}

/// Sets `SO_SNDBUF` and `SO_RCVBUF` of `fd` to `bytes` and returns what the kernel made of them
/// (it doubles the request and applies its minimums).
fn set_buffers(fd: &impl AsRawFd, bytes: u64) -> Result<(u64, u64), String> {
    let fd = fd.as_raw_fd();
    let v: libc::c_int = bytes.min(i32::MAX as u64) as libc::c_int;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    let mut got = [0u64; 2];
    for (i, opt) in [libc::SO_SNDBUF, libc::SO_RCVBUF].into_iter().enumerate() {
        // SAFETY: `v` outlives the call and `len` is its size.
        let r =
            unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, opt, (&v as *const libc::c_int).cast(), len) };
        if r != 0 {
            return Err(format!("setsockopt({opt}, {bytes}): {}", std::io::Error::last_os_error()));
        }
        let (mut out, mut olen): (libc::c_int, libc::socklen_t) = (0, len);
        // SAFETY: `out` and `olen` are valid for the kernel to fill.
        let r = unsafe {
            libc::getsockopt(fd, libc::SOL_SOCKET, opt, (&mut out as *mut libc::c_int).cast(), &mut olen)
        };
        if r != 0 {
            return Err(format!("getsockopt({opt}): {}", std::io::Error::last_os_error()));
        }
        got[i] = out.max(0) as u64;
    }
    Ok((got[0], got[1]))
}

/// A blocked call that timed out (the stop flag is looked at) rather than failed.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// The two ends' sockets, connected (TCP) or bound (UDP).
enum Pair {
    Udp { tx: UdpSocket, rx: UdpSocket, to: SocketAddr },
    Tcp { tx: TcpStream, rx: TcpStream },
}

/// Creates the loopback pair with mmtests' buffers; returns it and the sender's `SO_SNDBUF` and
/// the receiver's `SO_RCVBUF` as the kernel set them.
fn pair(test: Test, size: u64) -> Result<(Pair, u64, u64), String> {
    let buf = socket_buffer(size);
    let io = |what: &str, e: std::io::Error| format!("{what}: {e}");
    match test {
        Test::UdpStream => {
            let rx = UdpSocket::bind("127.0.0.1:0").map_err(|e| io("binding the receiver", e))?;
            let tx = UdpSocket::bind("127.0.0.1:0").map_err(|e| io("binding the sender", e))?;
            let (_, rcv) = set_buffers(&rx, buf)?;
            let (snd, _) = set_buffers(&tx, buf)?;
            let to = rx.local_addr().map_err(|e| io("the receiver's address", e))?;
            Ok((Pair::Udp { tx, rx, to }, snd, rcv))
        }
        Test::TcpStream => {
            // The listener's buffers are inherited by the accepted socket and set before the
            // connection's handshake, which sizes the receive window from them (netserver sets
            // them on its data socket before listening). The sender's receive buffer only takes
            // ACKs; its send buffer is read at every send.
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| io("listening", e))?;
            let (_, rcv) = set_buffers(&l, buf)?;
            let to = l.local_addr().map_err(|e| io("the listener's address", e))?;
            let tx = TcpStream::connect(to).map_err(|e| io("connecting", e))?;
            let (snd, _) = set_buffers(&tx, buf)?;
            let (rx, _) = l.accept().map_err(|e| io("accepting", e))?;
            Ok((Pair::Tcp { tx, rx }, snd, rcv))
        }
    }
}

/// Runs `spec` once: warm-up, then the sender's and receiver's counters read at the start and
/// end of the measured interval, with the `TLB` and `CAL` rows of `/proc/interrupts`.
pub fn run(spec: &NetperfSpec) -> Result<NativeResult, String> {
    if spec.size == 0 || spec.size > 65_507 {
        return Err(format!("netperf: message size {} is not in 1..=65507", spec.size));
    }
    let cpus = sys::allowed_cpus();
    let (tx_cpu, rx_cpu) = (cpus[0], cpus[1 % cpus.len()]);
    let background = background_rates(200);
    let (pair, sndbuf, rcvbuf) = pair(spec.test, spec.size)?;
    let size = spec.size as usize;
    let (sw, rw) = (send_width(spec.test, sndbuf, spec.size), recv_width(spec.test, rcvbuf, spec.size));
    let stop = Arc::new(AtomicBool::new(false));
    // [0]: messages sent, [1]: messages received (UDP) or bytes received (TCP).
    let counters: Arc<[Counter; 2]> = Arc::new([Counter::default(), Counter::default()]);
    let failed = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(3));
    let (tx_body, rx_body): (
        Box<dyn FnOnce() -> Result<(), String> + Send>,
        Box<dyn FnOnce() -> Result<(), String> + Send>,
    ) = match pair {
        Pair::Udp { tx, rx, to } => {
            for (s, r) in [(&tx, false), (&rx, true)] {
                let set = if r { s.set_read_timeout(Some(POLL)) } else { s.set_write_timeout(Some(POLL)) };
                set.map_err(|e| format!("socket timeout: {e}"))?;
            }
            let (stop_t, c, f) = (stop.clone(), counters.clone(), failed.clone());
            let tx_body = Box::new(move || {
                let ring = vec![vec![0x5au8; size]; sw];
                let (mut i, mut n) = (0usize, 0u64);
                while !stop_t.load(Ordering::Relaxed) {
                    match tx.send_to(&ring[i], to) {
                        Ok(len) if len == size => {
                            n += 1;
                            c[0].0.store(n, Ordering::Relaxed);
                            i = (i + 1) % ring.len();
                        }
                        Ok(len) => return Err(format!("sendto sent {len} of {size} bytes")),
                        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                            f.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) if timed_out(&e) => {}
                        // The other end closing once the run is over (a TCP reset) is the end, not a failure.
                        Err(_) if stop_t.load(Ordering::Relaxed) => break,
                        Err(e) => return Err(format!("sendto: {e}")),
                    }
                }
                Ok(())
            });
            let (stop_r, c) = (stop.clone(), counters.clone());
            let rx_body = Box::new(move || {
                let mut ring = vec![vec![0u8; size]; rw];
                let (mut i, mut n) = (0usize, 0u64);
                while !stop_r.load(Ordering::Relaxed) {
                    match rx.recv(&mut ring[i]) {
                        Ok(_) => {
                            n += 1;
                            c[1].0.store(n, Ordering::Relaxed);
                            i = (i + 1) % ring.len();
                        }
                        Err(e) if timed_out(&e) => {}
                        // The other end closing once the run is over (a TCP reset) is the end, not a failure.
                        Err(_) if stop_r.load(Ordering::Relaxed) => break,
                        Err(e) => return Err(format!("recv: {e}")),
                    }
                }
                Ok(())
            });
            (tx_body, rx_body)
        }
        Pair::Tcp { tx, rx } => {
            tx.set_write_timeout(Some(POLL)).map_err(|e| format!("socket timeout: {e}"))?;
            rx.set_read_timeout(Some(POLL)).map_err(|e| format!("socket timeout: {e}"))?;
            let (stop_t, c) = (stop.clone(), counters.clone());
            let tx_body = Box::new(move || {
                use std::io::Write;
                let ring = vec![vec![0x5au8; size]; sw];
                let mut tx = tx;
                let (mut i, mut n, mut partial) = (0usize, 0u64, 0usize);
                while !stop_t.load(Ordering::Relaxed) {
                    // A send cut short by the time-out resumes where it stopped, so every
                    // counted message is `size` bytes on the wire.
                    match tx.write(&ring[i][partial..]) {
                        Ok(0) => return Err("send: the connection closed".into()),
                        Ok(len) => {
                            partial += len;
                            if partial == size {
                                partial = 0;
                                n += 1;
                                c[0].0.store(n, Ordering::Relaxed);
                                i = (i + 1) % ring.len();
                            }
                        }
                        Err(e) if timed_out(&e) => {}
                        // The other end closing once the run is over (a TCP reset) is the end, not a failure.
                        Err(_) if stop_t.load(Ordering::Relaxed) => break,
                        Err(e) => return Err(format!("send: {e}")),
                    }
                }
                Ok(())
            });
            let (stop_r, c) = (stop.clone(), counters.clone());
            let rx_body = Box::new(move || {
                use std::io::Read;
                let mut ring = vec![vec![0u8; size]; rw];
                let mut rx = rx;
                let (mut i, mut bytes) = (0usize, 0u64);
                while !stop_r.load(Ordering::Relaxed) {
                    match rx.read(&mut ring[i]) {
                        Ok(0) => break,
                        Ok(len) => {
                            bytes += len as u64;
                            c[1].0.store(bytes, Ordering::Relaxed);
                            i = (i + 1) % ring.len();
                        }
                        Err(e) if timed_out(&e) => {}
                        // The other end closing once the run is over (a TCP reset) is the end, not a failure.
                        Err(_) if stop_r.load(Ordering::Relaxed) => break,
                        Err(e) => return Err(format!("recv: {e}")),
                    }
                }
                Ok(())
            });
            (tx_body, rx_body)
        }
    };
    let spawn = |cpu: usize, body: Box<dyn FnOnce() -> Result<(), String> + Send>, start: Arc<Barrier>| {
        std::thread::spawn(move || -> Result<(), String> {
            pin_and_wait(cpu, &start)?;
            body()
        })
    };
    let handles = [spawn(rx_cpu, rx_body, start.clone()), spawn(tx_cpu, tx_body, start.clone())];
    let window = measure_window(&start, spec.warmup, spec.measure, &handles, || read_counters(&counters[..]));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| "a netperf thread panicked".to_string())??;
    }
    let [sent, received] = window.per_task()[..] else { unreachable!("two counters") };
    if sent == 0 {
        return Err(format!(
            "{} -m {}: no message sent in {:.2} s",
            spec.test.test_name(),
            spec.size,
            window.seconds
        ));
    }
    let outcome = Outcome {
        workload: spec.test.name().into(),
        cpus: vec![tx_cpu, rx_cpu],
        metric: "throughput".into(),
        unit: "10^6bits/s".into(),
        value: throughput_mbit(sent, spec.size, window.seconds),
        operations: sent,
        // The sender's messages and the receiver's messages (UDP) or bytes (TCP).
        per_thread: vec![sent, received],
    };
    Ok(result(outcome, &window, background))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmtests_buffers_and_netperf_rings() {
        assert_eq!(socket_buffer(64), 320);
        assert_eq!(socket_buffer(8192), 8448);
        // UDP: 32 buffers whatever the socket; the receiver one.
        assert_eq!(send_width(Test::UdpStream, 4608, 64), 32);
        assert_eq!(recv_width(Test::UdpStream, 2304, 64), 1);
        // TCP: the kernel's (doubled) send buffer over the message, plus one, at least two.
        assert_eq!(send_width(Test::TcpStream, 4608, 64), 73);
        assert_eq!(send_width(Test::TcpStream, 16896, 8192), 3);
        assert_eq!(send_width(Test::TcpStream, 4608, 16384), 2);
    }

    #[test]
    fn throughput_is_in_megabits() {
        // 1000 messages of 1250 bytes in one second: 10^7 bits/s.
        assert!((throughput_mbit(1000, 1250, 1.0) - 10.0).abs() < 1e-12);
        assert!((throughput_mbit(1000, 1250, 2.0) - 5.0).abs() < 1e-12);
    }

    #[test]
    fn the_simulated_twin_is_the_seed_experiments_text() {
        assert_eq!(Test::UdpStream.sim_text(64), "netperf -t UDP_STREAM -s 320 -S 320 -m 64");
        for t in Test::ALL {
            assert_eq!(Test::parse(t.name()), Some(t));
            let text = t.sim_text(8192);
            let w = tlblab_model::workload::Workload::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(w.metric().unit, "10^6bits/s");
        }
        assert_eq!(Test::parse("netperf"), None);
    }

    #[test]
    fn a_bad_size_is_an_error() {
        let spec = |size| NetperfSpec {
            test: Test::UdpStream,
            size,
            warmup: Duration::ZERO,
            measure: Duration::ZERO,
        };
        assert!(run(&spec(0)).unwrap_err().contains("1..=65507"));
        assert!(run(&spec(70_000)).unwrap_err().contains("1..=65507"));
    }
}
