use super::*;
use crate::engine::sim::Simulation;
use crate::linux::config::KernelConfig;
use crate::linux::syscalls::{Op, Program};

#[derive(Debug)]
struct Sender(u32);
impl Program for Sender {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::UnixSend { pair: self.0, len: 100 });
        out.push(Op::Iteration);
    }
}

#[derive(Debug)]
struct Receiver(u32);
impl Program for Receiver {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::UnixRecv { pair: self.0, len: 100 });
        out.push(Op::Iteration);
    }
}

fn sim() -> Simulation {
    Simulation::new(&crate::profile::shipped("ivybridge-i3-3240"), KernelConfig::preset("4.9").unwrap())
}

#[test]
fn writable_is_a_quarter_of_sndbuf_and_the_default_is_wmem_default() {
    assert_eq!(default_sndbuf(), 212_992);
    assert!(unix_writable(53_248, 212_992) && !unix_writable(53_249, 212_992));
}

#[test]
fn senders_without_a_reader_stop_once_their_truesize_reaches_sndbuf() {
    // A 100-byte message: head kmalloc(128 + 320 = 448) -> kmalloc-512; truesize
    // SKB_TRUESIZE(512 - 320) = 192 + 256 + 320 = 768. sock_alloc_send_pskb lets a send through
    // while wmem < 212992: 278 of them, then every sender sleeps.
    let mut s = sim();
    let mm = s.add_mm();
    let pair = s.add_unix_pair();
    for cpu in 0..3 {
        s.add_task(Box::new(Sender(pair)), mm, cpu);
    }
    let stats = s.run(Ps::ZERO, Ps::MS);
    let c = stats.counters.af_unix;
    let p = &s.kernel.net.unix[pair as usize];
    assert_eq!(p.queue.front().map(|q| q.truesize), Some(768));
    assert_eq!((c.unix_sends, p.wmem), (278, 278 * 768), "{c:?}");
    assert_eq!(c.unix_send_sleeps, 3, "{c:?}");
    assert_eq!(stats.counters.oracle.oracle_violations, 0);
}

#[test]
fn every_message_is_allocated_on_the_senders_cpu_and_freed_on_the_readers() {
    // Senders on CPUs 0-1, a reader on CPU 2 each; SLUB objects come and go, slab pages with
    // them; whatever is still queued is exactly what was sent and not read, and the sender's
    // wmem is its truesize.
    let mut s = sim();
    let mm = s.add_mm();
    let pair = s.add_unix_pair();
    s.add_task(Box::new(Sender(pair)), mm, 0);
    s.add_task(Box::new(Sender(pair)), mm, 1);
    s.add_task(Box::new(Receiver(pair)), mm, 2);
    let stats = s.run(Ps::ZERO, Ps::MS * 3);
    let c = stats.counters.af_unix;
    let p = &s.kernel.net.unix[pair as usize];
    assert!(c.unix_recvs > 1000, "{c:?}");
    assert_eq!(c.unix_sends - c.unix_recvs, p.queue.len() as u64, "{c:?}");
    assert_eq!(p.wmem, p.queue.iter().map(|q| q.truesize).sum::<u64>());
    let slab = stats.counters.slab.expect("SLUB on this machine");
    assert!(slab.slab_pages_allocated > 0, "{slab:?}");
    assert_eq!(stats.counters.oracle.oracle_violations, 0);
}

/// Messages one sender on CPU 0 gets to one reader on CPU 1 in 2 ms.
fn pair_across(coherence: bool) -> u64 {
    let mut p = crate::profile::shipped("ivybridge-i3-3240");
    if !coherence {
        // Every line access a hit.
        p.coherence = None;
    }
    let mut s = Simulation::new(&p, KernelConfig::preset("4.9").unwrap());
    let (mm, pair) = (s.add_mm(), s.add_unix_pair());
    s.add_task(Box::new(Sender(pair)), mm, 0);
    s.add_task(Box::new(Receiver(pair)), mm, 1);
    s.run(Ps::ZERO, Ps::MS * 2).counters.af_unix.unix_recvs
}

#[test]
fn a_reader_on_another_core_loads_the_skbs_and_the_senders_wmem_line_from_it() {
    let (moved, local) = (pair_across(true), pair_across(false));
    assert!(moved * 100 < local * 98, "receives in 2 ms: {moved} with the lines moving, {local} without");
}
