//! VMA merging and splitting through the system calls (linux/mm/vma.rs,
//! docs/references/linux-mm.md#vma-merging): two threads that each map, fill and unmap a buffer
//! share one merged VMA, so with per-VMA locks (v6.4+) one thread's mmap or munmap write-locks
//! the VMA the other is faulting in and waits for it; under `mmap_lock` alone (v6.3) nothing
//! waits there.

use super::tests::{profile, wis};
use super::*;
use crate::hw::tlb::AccessKind;
use crate::linux::include::linux::mm_types::PAGE_SIZE;
use crate::linux::syscalls::{Addr, MapKind};
use crate::workload::will_it_scale::Testcase;

const PAGES: u64 = 32;

/// ebizzy -m's record, without the copy: mmap a buffer, store to each page, munmap it.
struct Record;

impl Program for Record {
    fn next(&mut self, out: &mut Vec<Op>) {
        let at = |i: u64| Addr { reg: 0, offset: i * PAGE_SIZE };
        out.push(Op::Mmap { len: PAGES * PAGE_SIZE, kind: MapKind::Anon, reg: 0 });
        out.extend((0..PAGES).map(|i| Op::Access { addr: at(i), kind: AccessKind::Store }));
        out.push(Op::Munmap { addr: at(0), len: PAGES * PAGE_SIZE });
        out.push(Op::Iteration);
    }
}

fn two_threads(preset: &str) -> (Counters, u64) {
    let mut sim = Simulation::new(&profile("skylake-sp-2s"), KernelConfig::preset(preset).unwrap());
    let mm = sim.add_mm();
    sim.add_task(Box::new(Record), mm, 0);
    sim.add_task(Box::new(Record), mm, 1);
    let s = sim.run(Ps::US * 100, Ps::MS * 5);
    (s.counters, s.iterations.iter().sum())
}

#[test]
fn with_per_vma_locks_a_writer_of_the_merged_vma_waits_for_the_other_threads_faults() {
    let (c, records) = two_threads("6.4");
    assert!(records > 50, "{records}");
    // An mmap that lands next to the other thread's buffer expands it; a munmap while the
    // other buffer is mapped cuts its own out of the merged VMA. (Here the two fall into step
    // through mmap_lock: both unmap, then both map, so about half of each do.)
    assert!(c.mmap.vma_merges * 3 > records, "{:?} in {records}", c.mmap);
    assert!(c.mmap.vma_splits * 3 > records, "{:?} in {records}", c.mmap);
    let v = c.vma_lock.expect("6.4 has per-VMA locks");
    assert!(v.vma_start_write_sleeps > 0, "{v:?}");
    assert_eq!(c.oracle.oracle_violations, 0);
}

#[test]
fn under_mmap_lock_alone_the_same_merges_and_splits_wait_for_no_vma() {
    let (c, records) = two_threads("6.3");
    assert!(records > 50, "{records}");
    assert!(c.mmap.vma_merges > 0 && c.mmap.vma_splits > 0, "{:?}", c.mmap);
    assert_eq!(c.vma_lock, None, "no per-VMA locks to wait on");
    assert!(c.mmap.mmap_lock_sleeps > 0, "the faults and the writers meet on mmap_lock: {:?}", c.mmap);
    assert_eq!(c.oracle.oracle_violations, 0);
}

#[test]
fn per_vma_faults_take_mmap_lock_only_for_a_fresh_vmas_first_fault() {
    // v6.4 on page_fault1 from the start: the tasks' anonymous mappings are adjacent and merge
    // into one VMA (linux/mm/vma.rs), so only the faults that reach it before its first fault
    // has given it an anon_vma fall back to mmap_lock for that (at most the two of each task
    // before the merges, at least one), and those that find it write-locked by another task's
    // mmap merging into it; every other fault runs under the VMA lock alone, and the oracle
    // stays clean.
    let p = profile("skylake-sp-2s");
    let tasks = 4;
    let mut sim = wis(&p, "6.4", Testcase::PageFault1, tasks, true);
    let c = sim.run(Ps::ZERO, Ps::MS * 2).counters;
    let v = c.vma_lock.expect("6.4 reports its per-VMA lock counters");
    assert!((1..=2 * tasks as u64).contains(&v.vma_lock_abort_no_anon_vma), "{v:?}");
    assert_eq!(v.vma_lock_abort, v.vma_lock_abort_no_anon_vma + v.vma_lock_abort_locked, "{v:?}");
    assert_eq!(c.mmap.vma_merges, 3 * tasks as u64 - 1, "every mapping but the first merges: {c:?}");
    assert_eq!(v.vma_lock_success + v.vma_lock_abort, c.memory.page_faults, "{v:?} {c:?}");
    assert!(v.vma_lock_success > 1000, "{v:?}");
    assert_eq!(c.oracle.oracle_violations, 0);
    // 6.3 has no per-VMA locks and reports no such counters.
    let mut sim = wis(&p, "6.3", Testcase::PageFault1, tasks, true);
    assert_eq!(sim.run(Ps::ZERO, Ps::MS * 2).counters.vma_lock, None);
}

#[test]
fn ebizzy_threads_wait_on_the_split_lock_of_the_page_tables_their_buffers_share() {
    // ebizzy -m on v6.18: the two threads' merged buffers lie in the same 2 MiB page tables, and
    // from v4.20 munmap zaps under a table's lock with mmap_lock downgraded to read while the
    // other thread faults on it (linux/mm/pgtable_generic.rs). Alone, a thread never waits.
    let p = profile("skylake-sp-2s");
    let waits = |threads| {
        let spec = crate::run::RunSpec::of("6.18", "ebizzy -m", threads, Ps::US * 500, Ps::MS * 5);
        let r = crate::run::run(&p, &spec).unwrap();
        (r.counters.get("pte_lock_waits").copied().unwrap_or(0), r.operations())
    };
    let (two, records) = waits(2);
    assert!(two > records, "{two} waits in {records} records");
    assert_eq!(waits(1).0, 0);
}
