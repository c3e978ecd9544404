//! v6.15 broadcast flushing on the machine (linux/arch/x86/mm/tlb/broadcast.rs): when an mm gets
//! its global ASID, what its flushes then cost and whom they interrupt, and reclaim's broadcast.

use crate::linux::config::KernelConfig;
use crate::profile::MachineProfile;
use crate::run::{run, RunResult, RunSpec, Workload};
use crate::time::Ps;

fn kernel(invlpgb: bool) -> KernelConfig {
    let mut k = KernelConfig::preset("5.18.1+patch").unwrap();
    k.set("invlpgb", if invlpgb { "on" } else { "off" }).unwrap();
    k
}

fn tlb_flush2(p: &MachineProfile, k: KernelConfig, tasks: u32, warmup: Ps) -> RunResult {
    let spec = RunSpec {
        kernel: k,
        workload: Workload::parse("tlb_flush2_threads").unwrap(),
        tasks,
        seed: 3,
        warmup,
        measure: Ps::MS * 2,
    };
    run(p, &spec).unwrap()
}

#[test]
fn an_mm_gets_a_global_asid_only_on_four_cpus_and_is_then_flushed_without_ipis() {
    let p = crate::profile::shipped("milan-36c");
    // Past the longest sampling wait for 4 threads: (32 - 4) jiffies at HZ 250, plus a tick.
    let warm = Ps::MS * 120;
    let two = tlb_flush2(&p, kernel(true), 2, warm);
    assert_eq!((two.counters["global_asids"], two.counters["broadcast_flushes"]), (0, 0), "{two:?}");
    assert!(two.counters["ipis_sent"] > 0);
    let four = tlb_flush2(&p, kernel(true), 4, warm);
    let c = &four.counters;
    assert_eq!(c["ipis_sent"], 0, "no IPI once every CPU runs the global ASID: {c:?}");
    // One 1-page INVLPGB and one TLBSYNC per madvise(MADV_DONTNEED) of one page.
    assert!(c["broadcast_flushes"] >= four.operations(), "{c:?}");
    assert_eq!((c["invlpgb"], c["tlbsync"]), (c["broadcast_flushes"], c["broadcast_flushes"]));
    assert_eq!(four.oracle.violations, 0);
    // The same run without the knob, and with it on a CPU without INVLPGB: IPIs as before.
    let off = tlb_flush2(&p, kernel(false), 4, Ps::MS);
    assert!(off.counters["ipis_sent"] > 0 && off.counters["invlpgb"] == 0);
    let skx = crate::profile::shipped("skylake-sp-2s");
    let intel = tlb_flush2(&skx, kernel(true), 4, Ps::MS);
    assert!(intel.counters["ipis_sent"] > 0 && intel.counters["invlpgb"] == 0);
    // Without IPIs the 4 threads flush faster.
    assert!(four.metric.value > off.metric.value * 1.2, "{} vs {}", four.metric.value, off.metric.value);
}

#[test]
fn cpus_running_the_mm_switch_to_its_global_asid_on_the_transitions_ipis() {
    let p = crate::profile::shipped("milan-36c");
    // 32 threads: every low-5-bit pid is a flusher, so the first flush samples; measured from 0.
    let r = tlb_flush2(&p, kernel(true), 32, Ps::ZERO);
    let c = &r.counters;
    assert_eq!(c["global_asids"], 1, "{c:?}");
    assert!((31..=32).contains(&c["global_asid_reloads"]), "every CPU running it reloads once: {c:?}");
    assert!(c["broadcast_flushes"] > 0 && r.oracle.violations == 0);
}

#[test]
fn reclaim_flushes_its_batch_with_one_broadcast() {
    // Seed 001's machine with INVLPGB added (a rule test: no shipped INVLPGB profile costs
    // reclaim), the G2 estimates as milan-1s has them.
    let mut p = crate::profile::shipped("ivybridge-4c8t");
    let milan = crate::profile::shipped("milan-1s");
    p.cpu.features.invlpgb = true;
    p.cpu.features.invlpgb_count_max = Some(8);
    (p.kernel.invlpgb_cycles, p.kernel.tlbsync_ns) = (milan.kernel.invlpgb_cycles, milan.kernel.tlbsync_ns);
    let spec = |invlpgb| RunSpec {
        kernel: kernel(invlpgb),
        workload: Workload::parse("vm-scalability lru-file-mmap-read mem_mib=64 ram_mib=2048").unwrap(),
        tasks: 8,
        seed: 1,
        warmup: Ps::MS,
        measure: Ps::MS * 20,
    };
    let on = run(&p, &spec(true)).unwrap();
    let off = run(&p, &spec(false)).unwrap();
    let batches = on.counters["reclaim_batch_flushes"];
    assert!(batches > 0, "{:?}", on.counters);
    assert!(on.counters["invlpgb"] >= batches && on.counters["tlbsync"] >= batches);
    assert!(off.counters["reclaim_batch_flushes"] > 0 && off.counters["invlpgb"] == 0);
    assert_eq!(on.oracle.violations, 0);
}
