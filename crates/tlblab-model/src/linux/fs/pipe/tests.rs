use super::*;
use crate::engine::sim::Simulation;
use crate::linux::config::KernelConfig;
use crate::linux::syscalls::{Op, Program};

fn pipe_with(bufs: &[(u64, u64)]) -> Pipe {
    let mut p = Pipe::default();
    for (i, &(offset, len)) in bufs.iter().enumerate() {
        p.bufs.push_back(PipeBuffer { pfn: i as u64, offset, len });
    }
    p
}

#[test]
fn small_writes_merge_until_the_page_is_full_then_take_a_slot_until_sixteen() {
    assert_eq!(room(&Pipe::default(), 100), Room::NewBuffer);
    // 40 messages of 100 bytes fill 4000 bytes: a 41st does not fit the page.
    assert_eq!(room(&pipe_with(&[(0, 3900)]), 100), Room::Merge);
    assert_eq!(room(&pipe_with(&[(0, 4000)]), 100), Room::NewBuffer);
    // What was read still occupies the page: offset + len is the end.
    assert_eq!(room(&pipe_with(&[(3900, 100)]), 100), Room::NewBuffer);
    assert_eq!(room(&pipe_with(&[(0, 4096)]), 4096), Room::NewBuffer, "a page-sized write never merges");
    let full: Vec<_> = (0..PIPE_DEF_BUFFERS).map(|_| (0, 4000)).collect();
    assert_eq!(room(&pipe_with(&full), 100), Room::Full);
    assert_eq!(room(&pipe_with(&full[1..]), 100), Room::NewBuffer);
}

#[derive(Debug)]
struct Writer(u32);
impl Program for Writer {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::PipeWrite { pipe: self.0, len: 100 });
        out.push(Op::Iteration);
    }
}

#[derive(Debug)]
struct Reader(u32);
impl Program for Reader {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::PipeRead { pipe: self.0, len: 100 });
        out.push(Op::Iteration);
    }
}

fn sim() -> Simulation {
    Simulation::new(&crate::profile::shipped("ivybridge-i3-3240"), KernelConfig::preset("4.9").unwrap())
}

#[test]
fn writers_without_a_reader_fill_sixteen_pages_then_all_sleep() {
    let mut s = sim();
    let mm = s.add_mm();
    let p = s.add_pipe();
    for cpu in 0..3 {
        s.add_task(Box::new(Writer(p)), mm, cpu);
    }
    let stats = s.run(Ps::ZERO, Ps::MS);
    let c = stats.counters.pipe;
    assert_eq!(c.pipe_writes, 16 * 40, "{c:?}");
    assert_eq!(c.pipe_page_allocs, 16);
    assert_eq!(c.pipe_merges, 16 * 39);
    assert_eq!(c.pipe_write_sleeps, 3, "each writer sleeps once on the full pipe: {c:?}");
    assert_eq!(s.kernel.fs.pipes[p as usize].bytes(), 16 * 40 * 100);
}

#[test]
fn one_wake_up_wakes_every_sleeper_and_the_losers_sleep_again() {
    // Three writers on CPU 0..2 fill the pipe and sleep; a reader on CPU 3 starts later and
    // drains it. Each buffer it releases wakes all three writers (pipe->wait is one
    // non-exclusive queue in v4.9), so writers sleep many more times than there are buffers.
    let (c, left, violations) = writers_then_a_reader(sim());
    assert!(c.pipe_reads > 1000, "{c:?}");
    // Every message written was read or is still in the pipe.
    assert_eq!(c.pipe_writes * 100, c.pipe_reads * 100 + left, "{c:?}");
    // The reader never waits (the pipe stays full), so every wake-up is a released buffer's,
    // and each woke all three writers, not one.
    let released = c.pipe_tmp_page_caches + c.pipe_page_frees;
    assert!(c.pipe_wakeups.abs_diff(3 * released) <= 3, "{c:?}");
    assert!(c.pipe_write_sleeps >= 2 * released, "the losers sleep again: {c:?}");
    assert_eq!(violations, 0);
}

/// Three writers on CPUs 0..2 fill `s`'s one pipe and sleep; a reader on CPU 3 starts at 300 us
/// and drains it, 2 ms in all. Returns the pipe counters, the bytes left in the pipe and the
/// oracle's violations.
fn writers_then_a_reader(mut s: Simulation) -> (Counters, u64, u64) {
    let mm = s.add_mm();
    let p = s.add_pipe();
    for cpu in 0..3 {
        s.add_task(Box::new(Writer(p)), mm, cpu);
    }
    s.add_task_at(Box::new(Reader(p)), mm, 3, Ps::US * 300);
    let stats = s.run(Ps::ZERO, Ps::MS * 2);
    (stats.counters.pipe, s.kernel.fs.pipes[p as usize].bytes(), stats.counters.oracle.oracle_violations)
}

#[test]
fn pages_are_conserved_and_owned_by_their_pipe() {
    // Writers on two CPUs, readers on the other two: pages move from the writers' per-CPU
    // lists to the readers'. Whatever the pipes hold (buffers and tmp_page) is exactly what
    // was allocated and not freed, every page owned by its pipe.
    let mut s = sim();
    let mm = s.add_mm();
    let pipes: Vec<u32> = (0..2).map(|_| s.add_pipe()).collect();
    for (i, &p) in pipes.iter().enumerate() {
        s.add_task(Box::new(Writer(p)), mm, i as u32);
        s.add_task(Box::new(Reader(p)), mm, 2 + i as u32);
    }
    let stats = s.run(Ps::ZERO, Ps::MS * 3);
    let c = stats.counters.pipe;
    let mut held = 0;
    for &p in &pipes {
        let pipe = &s.kernel.fs.pipes[p as usize];
        for pfn in pipe.bufs.iter().map(|b| b.pfn).chain(pipe.tmp_page) {
            assert_eq!(s.kernel.mm.frames.owner(pfn), Owner::Pipe { pipe: p });
            held += 1;
        }
    }
    assert_eq!(c.pipe_page_allocs - c.pipe_page_frees, held, "{c:?}");
    assert!(c.pipe_reads > 1000 && stats.counters.oracle.oracle_violations == 0, "{c:?}");
    let pa = stats.counters.page_alloc.unwrap();
    assert_eq!(pa.pcp_hits_order0 + pa.pcp_misses_order0, c.pipe_page_allocs, "{pa:?}");
}

/// Messages a writer on CPU 0 gets to a reader on CPU 1 in 2 ms, and the pipe after.
fn pair_across(coherence: bool) -> (u64, Pipe) {
    let mut p = crate::profile::shipped("ivybridge-i3-3240");
    if !coherence {
        // Every line access a hit: what the pipe costs with no line moving between the CPUs.
        p.coherence = None;
    }
    let mut s = Simulation::new(&p, KernelConfig::preset("4.9").unwrap());
    let mm = s.add_mm();
    let pipe = s.add_pipe();
    s.add_task(Box::new(Writer(pipe)), mm, 0);
    s.add_task(Box::new(Reader(pipe)), mm, 1);
    let reads = s.run(Ps::ZERO, Ps::MS * 2).counters.pipe.pipe_reads;
    (reads, s.kernel.fs.pipes[pipe as usize].clone())
}

#[test]
fn a_pipe_used_from_two_cores_moves_its_ring_entry_and_bytes_between_them() {
    let (moved, p) = pair_across(true);
    let (local, _) = pair_across(false);
    assert!(p.ring.stats.transfers > 0, "the ring's line moved: {:?}", p.ring.stats);
    assert!(p.slots.iter().any(|l| l.stats.transfers > 0), "an entry's line moved");
    // Every message's ring, entry and bytes cross (the reader keeps up): a few transfers of
    // ~40-80 ns against calls of a few hundred ns.
    assert!(moved * 10 < local * 9, "reads in 2 ms: {moved} with the lines moving, {local} without");
    // The bytes not yet read are the writers' record of them, byte for byte.
    assert_eq!(p.written.iter().map(|&(n, _)| n).sum::<u64>(), p.bytes());
}

/// The 4.9 preset with pipes' wake-ups as `rule` (`[fs] pipe_wait`).
fn sim_with(rule: &str) -> Simulation {
    let mut k = KernelConfig::preset("4.9").unwrap();
    k.set("pipe_wait", rule).unwrap();
    Simulation::new(&crate::profile::shipped("ivybridge-i3-3240"), k)
}

/// Writes `n` messages after 100 us, then computes.
#[derive(Debug)]
struct WriteLater(u32, u32);
impl Program for WriteLater {
    fn next(&mut self, out: &mut Vec<Op>) {
        if self.1 == 0 {
            out.push(Op::Compute(Ps::MS));
            return;
        }
        if self.1 == u32::MAX {
            self.1 = 1;
        }
        out.push(Op::Compute(Ps::US * 100));
        out.push(Op::PipeWrite { pipe: self.0, len: 100 });
        self.1 -= 1;
    }
}

/// Three readers asleep on an empty pipe, one message written: (wake-ups, reader sleeps, reads).
fn three_readers_one_message(rule: &str) -> (u64, u64, u64) {
    let mut s = sim_with(rule);
    let mm = s.add_mm();
    let p = s.add_pipe();
    s.add_task(Box::new(WriteLater(p, u32::MAX)), mm, 0);
    for cpu in 1..4 {
        s.add_task(Box::new(Reader(p)), mm, cpu);
    }
    let c = s.run(Ps::ZERO, Ps::MS).counters.pipe;
    (c.pipe_wakeups, c.pipe_read_sleeps, c.pipe_reads)
}

#[test]
fn from_v5_6_a_write_wakes_one_exclusive_reader_not_the_whole_queue() {
    // v4.9: pipe->wait is non-exclusive, so the write wakes all three; two find the pipe empty
    // again and sleep a second time, as does the winner on its next read.
    assert_eq!(three_readers_one_message("4.9"), (3, 6, 1));
    // v5.6+ (0ddad21d3e99): readers wait exclusively on rd_wait; the write wakes the first one,
    // which takes the message and leaves nothing to pass on.
    assert_eq!(three_readers_one_message("5.6"), (1, 4, 1));
}

#[test]
fn from_v5_6_a_freed_slot_of_a_full_pipe_wakes_one_writer() {
    // The scenario of `one_wake_up_wakes_every_sleeper_and_the_losers_sleep_again` under the
    // v5.6 rule: each buffer the reader releases from the full pipe wakes one writer (wr_wait
    // is exclusive); a woken writer that leaves room behind (a second slot freed before it ran,
    // or its write merged) passes the wake-up to the next (wake_next_writer). No 3 per buffer.
    let (c, left, violations) = writers_then_a_reader(sim_with("5.6"));
    assert!(c.pipe_reads > 1000, "{c:?}");
    assert_eq!(c.pipe_writes * 100, c.pipe_reads * 100 + left, "{c:?}");
    let released = c.pipe_tmp_page_caches + c.pipe_page_frees;
    assert!(c.pipe_wakeups >= released && c.pipe_wakeups * 2 < released * 3, "{c:?}");
    assert!(c.pipe_write_sleeps * 2 < released * 3, "few losers sleep again: {c:?}");
    assert_eq!(violations, 0);
}

#[test]
fn presets_from_5_12_wake_pipes_as_v5_6_and_4_9_keeps_the_shared_queue() {
    use crate::linux::fs::pipe::PipeWait;
    for (preset, rule) in [("4.9", PipeWait::V4_9), ("5.12", PipeWait::V5_6), ("5.18.1", PipeWait::V5_6)] {
        assert_eq!(KernelConfig::preset(preset).unwrap().fs.pipe_wait, rule, "{preset}");
    }
    assert_eq!(KernelConfig::preset("6.18").unwrap().fs.pipe_wait, PipeWait::V5_6);
}
