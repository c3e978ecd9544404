//! The seed-002 claims the model reproduces, pinned on simulated results (not timings): a change
//! that flips one of them fails here. Each cell is the mean of two seeds over a short window, far
//! enough from its threshold that the noise (engine/noise.rs) cannot flip it.

use tlblab_model::kernel::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run, RunResult, RunSpec, Workload};
use tlblab_model::time::Ps;

fn haswell() -> MachineProfile {
    let path = format!("{}/../../profiles/haswell-ep-2s.toml", env!("CARGO_MANIFEST_DIR"));
    let p: MachineProfile = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    p.validate().unwrap();
    p
}

fn cell(p: &MachineProfile, preset: &str, tasks: u32, seed: u64) -> RunResult {
    let spec = RunSpec {
        kernel: KernelConfig::preset(preset).unwrap(),
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
