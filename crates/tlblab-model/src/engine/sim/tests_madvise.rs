//! madvise's fixed path (`kernel.madvise_call_cycles`,
//! docs/references/machine-costs.md#madvise-fixed-path): once per madvise or munmap, as system
//! call time, whether or not the call flushes; nothing else moves.

use super::tests::{at, profile, script_run, store};
use super::*;
use crate::attribution::Bucket;
use crate::linux::include::linux::mm_types::PAGE_SIZE;
use crate::linux::syscalls::MapKind;
use crate::profile::{Confidence, Sourced};

#[test]
fn madvise_call_is_charged_once_per_call_and_only_as_syscall_time() {
    // Three pages written and zapped by one madvise (one flush), the same range again with
    // every PTE none (no flush on v5.18+: nothing was cleared), then a munmap of the region,
    // where a fourth page is still mapped (a flush).
    let ops = vec![
        Op::Mmap { len: 16 * PAGE_SIZE, kind: MapKind::Anon, reg: 0 },
        store(0),
        store(1),
        store(2),
        store(8),
        Op::MadviseDontneed { addr: at(0), len: 4 * PAGE_SIZE },
        Op::MadviseDontneed { addr: at(0), len: 4 * PAGE_SIZE },
        Op::Munmap { addr: at(0), len: 16 * PAGE_SIZE },
    ];
    let p = profile("haswell-ep-2s");
    assert!(p.kernel.madvise_call_cycles.is_none(), "the built-in profiles have no such key");
    let (a, ca) = script_run(&p, ops.clone());
    let mut q = p.clone();
    let cycles = 1234.0;
    q.kernel.madvise_call_cycles =
        Some(Sourced { value: cycles, source: "test".into(), confidence: Confidence::Estimate });
    q.validate().unwrap();
    let (b, cb) = script_run(&q, ops);
    assert_eq!(ca, cb, "a cost changes no step");
    // Two flushes only: the first madvise's and the munmap's.
    assert_eq!(ca.tlbflush.flush_requests, 2, "{:?}", ca.tlbflush);
    let unit = Ps::from_cycles(cycles, p.clock_mhz());
    let syscall = Bucket::Syscall as usize;
    assert_eq!(b[syscall] - a[syscall], unit * 3);
    for o in
        Bucket::ALL.into_iter().filter(|&o| o != Bucket::Syscall && o != Bucket::Idle && o != Bucket::User)
    {
        assert_eq!(a[o as usize], b[o as usize], "madvise_call moved time into {}", o.name());
    }
}
