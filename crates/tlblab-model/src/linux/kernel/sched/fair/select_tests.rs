use crate::engine::sim::Simulation;
use crate::linux::config::KernelConfig;
use crate::time::Ps;

use super::super::tests::Spin;

/// The 4-CPU i3-3240 (one LLC) on `kernel`, with tasks added on the CPUs given; task `sleeper`
/// (queued behind another) is taken off its queue as if it slept, unbound.
fn machine(kernel: &str, cpus: &[u32], sleeper: usize) -> Simulation {
    let mut s =
        Simulation::new(&crate::profile::shipped("ivybridge-i3-3240"), KernelConfig::preset(kernel).unwrap());
    for &cpu in cpus {
        let mm = s.add_mm();
        s.add_task(Box::new(Spin), mm, cpu);
    }
    let k = &mut s.kernel;
    let prev = k.tasks[sleeper].cpu as usize;
    k.cpus[prev].runq.retain(|&q| q != sleeper);
    k.tasks[sleeper].bound = false;
    s
}

/// Wakes task `t` from CPU `waker_cpu` (whatever runs there is the waker) at 1 ms.
fn wake_from(s: &mut Simulation, waker_cpu: u32, t: usize, sync: bool) -> u32 {
    s.untimed(|k, ctx| {
        ctx.cpu = waker_cpu;
        k.wake_as(ctx, t, Ps::MS, sync);
        k.tasks[t].cpu
    })
}

#[test]
fn a_wake_up_with_busy_target_and_prev_picks_an_idle_cpu_of_the_llc() {
    // Task 0 runs on CPU 0, task 1 (asleep) last ran there, task 2 runs on CPU 1; 2 and 3 idle.
    let mut s = machine("6.18", &[0, 0, 1], 1);
    assert_eq!(wake_from(&mut s, 0, 1, false), 2, "the first idle CPU after the target");
    assert_eq!(s.kernel.counters.sched.migrations, 1);
    assert!(s.kernel.cpus[2].runq.contains(&1));
    // Its load left CPU 0's average (at the next update) and joined CPU 2's.
    assert!(s.kernel.cpus[2].cfs_avg.load_avg >= s.kernel.tasks[1].avg.load_avg);
    assert_eq!(s.kernel.cpus[0].cfs_avg.removed_load, s.kernel.tasks[1].avg.load_avg);
}

#[test]
fn a_bound_task_is_woken_where_it_is() {
    let mut s = machine("6.18", &[0, 0, 1], 1);
    s.kernel.tasks[1].bound = true;
    assert_eq!(wake_from(&mut s, 0, 1, false), 0);
    assert_eq!(s.kernel.counters.sched.migrations, 0);
}

#[test]
fn a_sync_waker_alone_on_its_cpu_pulls_the_wakee_to_it_unless_both_flip_wide() {
    // Every CPU busy: the waker (task 0) alone on CPU 0, the sleeper (task 2) last ran on CPU 1.
    for kernel in ["5.18", "6.18"] {
        let busy = [0, 1, 1, 2, 3];
        let mut s = machine(kernel, &busy, 2);
        assert_eq!(wake_from(&mut s, 0, 2, true), 0, "{kernel}: wake_affine_idle's sync rule");
        // The same wake-up without WF_SYNC goes to wake_affine_weight: CPU 0 with the wakee
        // (1024 + 1024) is not lighter than CPU 1 without it (2048 - 1024, biased by 108/100).
        let mut s = machine(kernel, &busy, 2);
        assert_eq!(wake_from(&mut s, 0, 2, false), 1, "{kernel}: wake_affine_weight");
        // Both waker and wakee switch partners often (wake_wide): the wakee stays on CPU 1.
        let mut s = machine(kernel, &busy, 2);
        s.kernel.tasks[0].wakee_flips = 64;
        s.kernel.tasks[0].wakee_flip_decay_ts = s.kernel.jiffies.at(Ps::MS);
        s.kernel.tasks[2].wakee_flips = 8;
        assert_eq!(wake_from(&mut s, 0, 2, true), 1, "{kernel}: wake_wide");
    }
}

#[test]
fn wake_affine_weight_keeps_the_wakee_on_a_lighter_previous_cpu() {
    // CPU 0 runs the waker with three more queued; CPU 1 runs one task; the sleeper last ran on
    // CPU 1. After 100 ms of this the averages say CPU 0 is four times as loaded.
    let mut s = machine("6.18", &[0, 0, 0, 0, 1, 1, 2, 3], 5);
    let now = Ps::MS * 100;
    s.untimed(|k, _| {
        for cpu in 0..4 {
            k.pelt_tick(cpu, now);
        }
    });
    let load = |c: usize| s.kernel.cpus[c].cfs_avg.load_avg;
    assert!(load(0) > 3 * load(1), "CPU 0 {} vs CPU 1 {}", load(0), load(1));
    let cpu = s.untimed(|k, ctx| {
        ctx.cpu = 0;
        k.wake_as(ctx, 5, now, false);
        k.tasks[5].cpu
    });
    assert_eq!(cpu, 1);
}
