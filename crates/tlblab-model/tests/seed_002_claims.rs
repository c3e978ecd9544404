//! The seed-002 claims the model reproduces, pinned on simulated results (not timings): a change
//! that flips one of them fails here. Each cell is the mean of two seeds over a short window, far
//! enough from its threshold that the noise (engine/noise.rs) cannot flip it.

use tlblab_model::linux::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run, RunResult, RunSpec, Workload};
use tlblab_model::time::Ps;

fn haswell() -> MachineProfile {
    profile("haswell-ep-2s")
}

fn profile(name: &str) -> MachineProfile {
    let p: MachineProfile = toml::from_str(tlblab_model::builtin::profile(name)).unwrap();
    p.validate().unwrap();
    p
}

fn cell(p: &MachineProfile, preset: &str, tasks: u32, seed: u64) -> RunResult {
    let mut kernel = KernelConfig::preset(preset).unwrap();
    if p.name.starts_with("skylake") {
        // The patch's own figures were taken with PTI off.
        kernel.set("pti", "off").unwrap();
    }
    let spec = RunSpec {
        kernel,
        workload: Workload::parse("tlb_flush1_threads").unwrap(),
        tasks,
        seed,
        warmup: Ps::US * 300,
        measure: Ps::MS * 3,
    };
    run(p, &spec).unwrap()
}

/// ops/s of `preset` at `tasks`, mean of seeds 1 and 2.
fn ops(p: &MachineProfile, preset: &str, tasks: u32) -> f64 {
    (1..=2).map(|s| cell(p, preset, tasks, s).metric.value).sum::<f64>() / 2.0
}

#[test]
fn the_patch_wins_from_twenty_tasks_and_never_reading_the_generation_loses() {
    let p = haswell();
    for tasks in [20, 45] {
        let (vanilla, patch) = (ops(&p, "5.18.1", tasks), ops(&p, "5.18.1+patch", tasks));
        assert!(patch > vanilla * 1.02, "{tasks} tasks: +patch {patch} vs 5.18.1 {vanilla}");
    }
    for tasks in [10, 45] {
        let (patch, nogen) = (ops(&p, "5.18.1+patch", tasks), ops(&p, "5.18.1-no-tlb-gen", tasks));
        assert!(nogen < patch * 0.98, "{tasks} tasks: no mm->tlb_gen {nogen} vs +patch {patch}");
    }
    // Below one socket the no-generation variant loses to vanilla too, as in the seed (at 25
    // tasks and more the model puts it slightly above: see the experiment's note).
    for tasks in [10, 20] {
        let (vanilla, nogen) = (ops(&p, "5.18.1", tasks), ops(&p, "5.18.1-no-tlb-gen", tasks));
        assert!(nogen < vanilla * 0.995, "{tasks} tasks: no mm->tlb_gen {nogen} vs 5.18.1 {vanilla}");
    }
}

#[test]
fn touching_the_generation_line_costs_part_of_the_patch_gain() {
    // The seed's decomposition: early return alone (touch) gains, and not reading the line adds
    // more; the model puts touch between vanilla and +patch from 15 tasks on as well.
    let p = haswell();
    for tasks in [20, 45] {
        let vanilla = ops(&p, "5.18.1", tasks);
        let touch = ops(&p, "5.18.1-early-return-touch", tasks);
        let patch = ops(&p, "5.18.1+patch", tasks);
        assert!(vanilla < touch && touch < patch, "{tasks} tasks: {vanilla} / {touch} / {patch}");
    }
}

#[test]
fn the_patch_wins_on_the_56_core_skylake() {
    // The seed's +26.8% at 55 threads is not reproduced (the model gives about +8%), but the
    // sign and a gain of several percent are, from interrupts taken inside faults and send loops.
    let p = profile("skylake-sp-2s");
    let (vanilla, patch) = (ops(&p, "5.18.1", 56), ops(&p, "5.18.1+patch", 56));
    assert!(patch > vanilla * 1.04, "+patch {patch} vs 5.18.1 {vanilla}");
}

#[test]
fn no_task_starves_in_a_shootdown_storm() {
    // With both sockets full every task completes at least half the mean. (Not yet with one
    // task alone on the second socket: at 19 tasks it completes about a third of the mean, the
    // audit's cliff, which contended lines served as queues should fix; see the note.)
    let p = haswell();
    for tasks in [45] {
        for preset in ["5.18.1", "5.18.1+patch"] {
            let r = cell(&p, preset, tasks, 1);
            let mean = r.iterations.iter().sum::<u64>() as f64 / tasks as f64;
            let min = *r.iterations.iter().min().unwrap() as f64;
            assert!(min >= mean / 2.0, "{preset}, {tasks} tasks: {:?}", r.iterations);
        }
    }
}

#[test]
fn one_task_runs_at_the_calibrated_single_task_rate() {
    // kernel.fault_ns is calibrated to the seed's 1-task figure (159,504 ops/s): a regression
    // in the single-task path shows here before it skews every multi-task cell.
    let r = ops(&haswell(), "5.18.1", 1);
    assert!((r / 159_504.0 - 1.0).abs() < 0.02, "{r}");
}
