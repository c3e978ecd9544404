//! The pipe and AF_UNIX stream primitives `[ipc]` holds, timed alone: one thread writes a
//! burst of small messages into a pipe (or a socket pair) that nobody waits on, then reads them
//! back, so each call is the system call and its path with no sleep, no wake-up and no context
//! switch (the model simulates those separately). Not hackbench: a burst stays below the pipe's
//! 16 buffers and the socket's send buffer, so no call blocks.
//!
//! What the model adds on top of `[ipc]`'s cycles, and the derivation therefore takes off the
//! measured call: the system-call entry and exit (`kernel.syscall_ns`) and the copy (at
//! `memory.memcpy_mbps`). Left in, and said so in the source: a pipe's page allocated for every
//! `PAGE / MSG` writes and freed for as many reads (a few cycles a call), the uncontended lock
//! word the model also simulates, and, for the socket pair, the SLUB calls of each skb and its
//! head (the probe has no `[slab]` to take them off with): the model charges those again.

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::time::Instant;

use crate::stats::Summary;
use crate::sys::PAGE;
use tlblab_model::linux::lib::iov_iter::CopyRate;

/// hackbench's message size.
pub const MSG: usize = 100;
/// Writes per burst: 16 pipe buffers of `PAGE / MSG` merged writes each, less a margin.
const PIPE_BURST: usize = 15 * (PAGE / MSG);
/// Sends per burst on the socket pair (well inside the default send buffer).
const UNIX_BURST: usize = 100;

/// Per-call nanoseconds of each primitive, medians over bursts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IpcCalls {
    pub pipe_write_ns: Summary,
    pub pipe_read_ns: Summary,
    pub unix_send_ns: Summary,
    pub unix_recv_ns: Summary,
}

/// Times `bursts` bursts of `n` `send` calls then `n` `recv` calls, one untimed burst first
/// (the buffers, pages and slabs warm); per-call nanoseconds of each burst. The calling thread
/// stays where it is (the probe pins it). Shared with crate::probe::net.
pub(crate) fn timed_bursts(
    n: usize,
    bursts: usize,
    mut send: impl FnMut() -> std::io::Result<()>,
    mut recv: impl FnMut() -> std::io::Result<()>,
) -> std::io::Result<(Vec<f64>, Vec<f64>)> {
    let (mut ws, mut rs) = (Vec::with_capacity(bursts), Vec::with_capacity(bursts));
    for b in 0..=bursts {
        let t = Instant::now();
        for _ in 0..n {
            send()?;
        }
        let tw = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        for _ in 0..n {
            recv()?;
        }
        let tr = t.elapsed().as_nanos() as f64 / n as f64;
        if b > 0 {
            ws.push(tw);
            rs.push(tr);
        }
    }
    Ok((ws, rs))
}

/// Bursts of writes then reads of `MSG` bytes on `w` / `r`, `n` per burst.
fn bursts(
    w: &mut impl Write,
    r: &mut impl Read,
    n: usize,
    bursts: usize,
) -> std::io::Result<(Vec<f64>, Vec<f64>)> {
    let (msg, mut buf) = ([7u8; MSG], [0u8; MSG]);
    timed_bursts(n, bursts, || w.write_all(&msg), || r.read_exact(&mut buf))
}

/// Measures all four primitives, `runs` bursts each.
pub fn ipc_calls(runs: usize) -> std::io::Result<IpcCalls> {
    let (mut pr, mut pw) = std::io::pipe()?;
    let (pipe_w, pipe_r) = bursts(&mut pw, &mut pr, PIPE_BURST, runs)?;
    let (mut a, mut b) = std::os::unix::net::UnixStream::pair()?;
    let (unix_w, unix_r) = bursts(&mut a, &mut b, UNIX_BURST, runs)?;
    Ok(IpcCalls {
        pipe_write_ns: Summary::of(&pipe_w),
        pipe_read_ns: Summary::of(&pipe_r),
        unix_send_ns: Summary::of(&unix_w),
        unix_recv_ns: Summary::of(&unix_r),
    })
}

/// The smallest path a call can have and still be told from the system call's own spread.
pub const FLOOR_CYCLES: f64 = 50.0;

/// A primitive's path cycles: the call's `ns` at `mhz`, less the system call (`syscall_ns`) and
/// the copy of `MSG` bytes as the model charges it (`copy`: linux/lib/iov_iter.rs, in cache for
/// a message this small). `None` below [`FLOOR_CYCLES`] (the measurement cannot resolve the path).
pub fn path_cycles(ns: f64, mhz: f64, syscall_ns: f64, copy: CopyRate) -> Option<f64> {
    path_cycles_of(MSG, ns, mhz, syscall_ns, copy)
}

/// As [`path_cycles`] for a call that copies `bytes`.
pub fn path_cycles_of(bytes: usize, ns: f64, mhz: f64, syscall_ns: f64, copy: CopyRate) -> Option<f64> {
    let copy_ns = copy.copy(bytes as u64).as_ns_f64();
    let c = (ns - syscall_ns - copy_ns) * mhz / 1e3;
    (c >= FLOOR_CYCLES).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_cycles_take_off_what_the_model_adds() {
        // 400 ns at 2000 MHz with a 100 ns syscall and a 10 GB/s in-cache copy (10 ns for 100 B;
        // the 1 GB/s DRAM rate is not the one of a 100-byte message):
        // (400 - 100 - 10) ns x 2 cycles/ns = 580 cycles.
        let rate = CopyRate::new(10_000.0, 1_000.0);
        let c = path_cycles(400.0, 2000.0, 100.0, rate).unwrap();
        assert!((c - 580.0).abs() < 1e-9, "{c}");
        // Below the floor: not resolved.
        assert_eq!(path_cycles(120.0, 2000.0, 100.0, rate), None);
    }

    #[test]
    fn a_burst_never_blocks_and_times_every_call() {
        let c = ipc_calls(2).unwrap();
        for s in [&c.pipe_write_ns, &c.pipe_read_ns, &c.unix_send_ns, &c.unix_recv_ns] {
            assert!(s.median > 0.0 && s.min <= s.median && s.median <= s.max);
        }
        assert!(PIPE_BURST * MSG < 16 * PAGE);
    }
}
