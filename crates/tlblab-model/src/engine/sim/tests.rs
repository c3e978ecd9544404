use super::*;
use crate::workload::will_it_scale::{Testcase, WisTask};

fn profile(name: &str) -> MachineProfile {
    let path = format!("{}/../../profiles/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let p: MachineProfile = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    p.validate().unwrap();
    p
}

/// `tasks` threads of one mm (or processes), task i on CPU i.
fn wis(p: &MachineProfile, preset: &str, test: Testcase, tasks: u32, threads: bool) -> Simulation {
    let mut sim = Simulation::new(p, KernelConfig::preset(preset).unwrap());
    let shared = sim.add_mm();
    for i in 0..tasks {
        let mm = if threads {
            shared
        } else if i == 0 {
            shared
        } else {
            sim.add_mm()
        };
        sim.add_task(Box::new(WisTask::new(test)), mm, i);
    }
    sim
}

fn run(sim: &mut Simulation) -> RunStats {
    sim.run(Ps::US * 200, Ps::MS * 2)
}

#[test]
fn one_task_makes_no_ipis_and_frees_every_page_it_zaps() {
    let p = profile("haswell-ep-2s");
    let mut sim = wis(&p, "5.18.1", Testcase::TlbFlush2, 1, true);
    let s = run(&mut sim);
    let c = s.counters;
    let ops = s.iterations[0];
    assert!(ops > 100, "{ops}");
    assert_eq!((c.ipis_sent, c.shootdowns), (0, 0));
    // Each iteration: one 1-page madvise flush (INVLPG), one freed page. The first iteration
    // counted may have flushed and freed before the window opened.
    assert!(c.partial_flushes + 1 >= ops && c.partial_flushes <= ops + 2, "{c:?} {ops}");
    assert!(c.pages_freed + 1 >= ops && c.pages_freed <= ops + 2, "{c:?}");
    assert_eq!(c.oracle_violations, 0);
}

#[test]
fn threads_shoot_down_every_other_cpu() {
    let p = profile("haswell-ep-2s");
    let mut sim = wis(&p, "5.18.1", Testcase::TlbFlush2, 4, true);
    let s = run(&mut sim);
    let ops: u64 = s.iterations.iter().sum();
    let c = s.counters;
    assert!(ops > 100);
    let per_op = c.remote_flushes_received as f64 / ops as f64;
    assert!((2.9..=3.1).contains(&per_op), "3 other CPUs run flush_tlb_func per flush, got {per_op} ({c:?})");
    // An interrupt drains every queued request, and a sender only interrupts a CPU whose queue
    // was empty: never more interrupts than requests. IPIs in flight at the window's edges may
    // be counted on one side only.
    assert!(c.ipis_sent <= c.remote_flushes_received + 4, "{c:?}");
    assert!(c.ipis_received.abs_diff(c.ipis_sent) <= 3 * 4, "{c:?}");
    assert_eq!(c.oracle_violations, 0);
    // Processes: no shared mm, no IPIs.
    let mut sim = wis(&p, "5.18.1", Testcase::TlbFlush2, 4, false);
    assert_eq!(run(&mut sim).counters.ipis_sent, 0);
}

#[test]
fn tlb_flush1_cow_of_fault_around_pages_flushes_twice_per_operation() {
    // The file is cached (the harness's steady state): read faults map 16-page windows
    // read-only, so the next page's write replaces a present PTE (COW) and needs its own flush.
    let p = profile("haswell-ep-2s");
    let mut sim = wis(&p, "5.18.1", Testcase::TlbFlush1, 2, true);
    let s = sim.run(Ps::US * 200, Ps::MS * 2);
    let ops: u64 = s.iterations.iter().sum();
    let flushes = s.counters.flush_requests as f64 / ops as f64;
    assert!(flushes > 1.8 && flushes < 2.0, "flush requests per op: {flushes} ({:?})", s.counters);
    assert_eq!(s.counters.oracle_violations, 0);
}

#[test]
fn the_oracle_catches_freeing_before_the_flush() {
    let p = profile("haswell-ep-2s");
    let mut k = KernelConfig::preset("5.18.1").unwrap();
    k.set("free_before_flush", "on").unwrap();
    let mut sim = Simulation::new(&p, k);
    let mm = sim.add_mm();
    for i in 0..2 {
        sim.add_task(Box::new(WisTask::new(Testcase::TlbFlush2)), mm, i);
    }
    let s = run(&mut sim);
    assert!(s.counters.oracle_violations > 0, "{:?}", s.counters);
}

#[test]
fn every_preset_runs_clean() {
    let p = profile("ivybridge-4c8t");
    for (name, _) in crate::kernel::preset::PRESETS {
        for test in [
            Testcase::TlbFlush1,
            Testcase::TlbFlush2,
            Testcase::TlbFlush3,
            Testcase::PageFault1,
            Testcase::Mmap1,
        ] {
            let mut sim = wis(&p, name, test, 3, true);
            let s = sim.run(Ps::US * 100, Ps::US * 500);
            assert_eq!(s.counters.oracle_violations, 0, "{name} {test:?}");
            assert!(s.iterations.iter().sum::<u64>() > 0, "{name} {test:?}");
        }
    }
}

#[test]
fn same_inputs_same_result() {
    let p = profile("haswell-ep-2s");
    let a = run(&mut wis(&p, "5.18.1+patch", Testcase::TlbFlush1, 5, true));
    let b = run(&mut wis(&p, "5.18.1+patch", Testcase::TlbFlush1, 5, true));
    assert_eq!(a.iterations, b.iterations);
    assert_eq!(a.counters, b.counters);
}

#[test]
fn attribution_adds_up_to_the_measured_time() {
    let p = profile("haswell-ep-2s");
    let s = run(&mut wis(&p, "5.18.1", Testcase::TlbFlush2, 3, true));
    for (cpu, t) in s.attribution.iter().enumerate().take(3) {
        let total: u64 = t.iter().map(|p| p.0).sum();
        let m = s.measured.0 as f64;
        assert!((total as f64 - m).abs() / m < 0.01, "cpu {cpu}: {total} vs {m}");
    }
}

#[test]
fn coalesced_call_queues_need_fewer_interrupts_in_a_storm() {
    // 16 threads all flushing: requests pile up on each CPU's call queue, so with v3.9+
    // coalescing most requests ride on an interrupt already sent; v3.4 sends one per request.
    let p = profile("haswell-ep-2s");
    let storm = |coalesce: &str| {
        let mut k = KernelConfig::preset("5.18.1").unwrap();
        k.set("coalesce_ipis", coalesce).unwrap();
        let mut sim = Simulation::new(&p, k);
        let mm = sim.add_mm();
        for cpu in 0..16 {
            sim.add_task(Box::new(WisTask::new(Testcase::TlbFlush1)), mm, cpu);
        }
        run(&mut sim).counters
    };
    let (on, off) = (storm("on"), storm("off"));
    assert!(on.ipis_sent * 2 < on.remote_flushes_received, "{on:?}");
    assert!(off.ipis_sent >= off.remote_flushes_received, "{off:?}");
    // Without coalescing, interrupts that arrive while one is pending merge (one IRR bit).
    assert!(off.ipis_received < off.ipis_sent, "{off:?}");
    assert_eq!((on.oracle_violations, off.oracle_violations), (0, 0));
}

#[test]
fn tasks_sharing_a_cpu_take_turns_by_cfs_slices() {
    // Two threads on one CPU of a 72-CPU machine: slice = max(24 ms / 2, 3 ms) = 12 ms.
    let p = profile("haswell-ep-2s");
    let mut sim = Simulation::new(&p, KernelConfig::preset("5.18.1").unwrap());
    let mm = sim.add_mm();
    for _ in 0..2 {
        sim.add_task(Box::new(WisTask::new(Testcase::TlbFlush2)), mm, 0);
    }
    let s = sim.run(Ps::ZERO, Ps::MS * 30);
    assert!(s.iterations.iter().all(|&i| i > 0), "both ran: {:?}", s.iterations);
    // Switches at about 12 and 24 ms.
    assert!((2..=3).contains(&s.counters.context_switches), "{:?}", s.counters);
    // Threads of one mm on one CPU: no IPIs, no flush at the switch.
    assert_eq!((s.counters.ipis_sent, s.counters.switch_flushes), (0, 0));
}

#[test]
fn sleepers_on_mmap_lock_go_lazy_and_catch_up_with_one_flush() {
    // page_fault1 munmaps 128 MiB under mmap_lock for write while the other threads fault
    // under it for read: readers sleep, their CPUs idle in lazy TLB mode, flushes skip them
    // (unless page tables are freed), and each returns with a full flush if it fell behind.
    let p = profile("haswell-ep-2s");
    let mut sim = wis(&p, "5.18.1", Testcase::PageFault1, 4, true);
    // Each thread faults 32768 pages (~30 ms) between munmaps.
    let s = sim.run(Ps::ZERO, Ps::MS * 100);
    let c = s.counters;
    assert!(c.mmap_lock_sleeps > 0 && c.context_switches >= c.mmap_lock_sleeps, "{c:?}");
    assert!(c.switch_flushes > 0, "{c:?}");
    assert!(s.attribution[..4].iter().any(|a| a[Bucket::Idle as usize] > Ps::ZERO), "sleepers idle");
    assert_eq!(c.oracle_violations, 0);
    // Without the lock nobody sleeps.
    let mut k = KernelConfig::preset("5.18.1").unwrap();
    k.set("mmap_lock", "off").unwrap();
    let mut sim = Simulation::new(&p, k);
    let mm = sim.add_mm();
    for cpu in 0..4 {
        sim.add_task(Box::new(WisTask::new(Testcase::PageFault1)), mm, cpu);
    }
    assert_eq!(sim.run(Ps::ZERO, Ps::MS * 20).counters.mmap_lock_sleeps, 0);
}
