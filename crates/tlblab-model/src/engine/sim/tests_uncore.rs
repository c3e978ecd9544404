//! The shared last-level cache and DRAM bandwidth (hw/uncore.rs) as the engine charges them.

use super::tests::{profile, Script};
use super::*;
use crate::attribution::Bucket;
use crate::linux::syscalls::Addr;

/// `tasks` tasks, one per core of the Ivy Bridge profile (CPUs 0..tasks), each streaming 100
/// copies of 16 KiB in 1 us (16 GB/s) from one shared 64 MiB region into its own 64 KiB buffer;
/// returns the time they waited for DRAM (hw/uncore.rs).
fn streams(tasks: u32, uncore: bool) -> Ps {
    let mut p = profile("ivybridge-4c8t");
    if !uncore {
        p.uncore = None;
    }
    let mut k = KernelConfig::preset("3.13").unwrap();
    k.set("mmap_lock", "off").unwrap();
    let mut sim = Simulation::new(&p, k);
    let mm = sim.add_mm();
    for t in 0..tasks {
        let op = Op::Stream {
            core: Ps::US,
            bytes: 16 << 10,
            src: Addr { reg: 0, offset: 1 << 40 },
            src_len: 64 << 20,
            dst: Addr { reg: 0, offset: (1 << 41) + (t as u64) * (1 << 20) },
            dst_len: 64 << 10,
        };
        sim.add_task(Box::new(Script(vec![op; 100])), mm, t);
    }
    let s = sim.run(Ps::ZERO, Ps::MS);
    Ps(s.attribution.iter().map(|a| a[Bucket::MemWait as usize].0).sum())
}

#[test]
fn streams_past_the_llc_wait_for_dram_only_when_together_they_exceed_it() {
    // 64 MiB against the 8 MiB L3: 7/8 of the bytes miss. One core asks 14 GB/s of DRAM, under
    // the profile's 19.2 GB/s sustained: no wait. Four ask 57 GB/s: they queue.
    assert_eq!(streams(1, true), Ps::ZERO);
    assert!(streams(4, true) > Ps::US * 100, "{:?}", streams(4, true));
    // Without the profile's [uncore] section nothing waits.
    assert_eq!(streams(4, false), Ps::ZERO);
}
