use crate::engine::sim::Simulation;
use crate::linux::config::KernelConfig;
use crate::linux::syscalls::{Op, Program};
use crate::time::Ps;

use super::ORIGIN;

/// A task that computes forever, a microsecond a step (the select and balance tests use it too).
#[derive(Debug)]
pub(super) struct Spin;
impl Program for Spin {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::Compute(Ps::US));
        out.push(Op::Iteration);
    }
}

fn sim(kernel: &str) -> Simulation {
    Simulation::new(&crate::profile::shipped("ivybridge-i3-3240"), KernelConfig::preset(kernel).unwrap())
}

/// Three tasks bound to CPU 0 of a 6.18 kernel (EEVDF): task 0 runs, 1 and 2 wait.
fn three() -> Simulation {
    let mut s = sim("6.18");
    let mm = s.add_mm();
    for _ in 0..3 {
        s.add_task(Box::new(Spin), mm, 0);
    }
    s
}

#[test]
fn the_pick_is_the_earliest_deadline_among_the_eligible() {
    let mut s = three();
    let k = &mut s.kernel;
    let slice = k.base_slice();
    assert_eq!(slice, Ps::US * 2100, "6.18: 0.70 ms scaled by 1 + ilog2(4) on the 4-CPU i3-3240");
    // V = ORIGIN + 1 ms: task 1 (vruntime ORIGIN + 2 ms) is ineligible although its deadline
    // is the earliest; task 2 (ORIGIN + 1 ms) is eligible.
    k.tasks[0].on_cpu_since = Ps::ZERO;
    k.tasks[0].vruntime = ORIGIN;
    k.tasks[0].deadline = ORIGIN + Ps::MS * 5;
    k.tasks[0].vprot = ORIGIN;
    k.tasks[1].vruntime = ORIGIN + Ps::MS * 2;
    k.tasks[1].deadline = ORIGIN + Ps::MS * 2 + Ps::US;
    k.tasks[2].vruntime = ORIGIN + Ps::MS;
    k.tasks[2].deadline = ORIGIN + Ps::MS * 3;
    assert_eq!(k.pick_eevdf(0, Ps::ZERO, true), Some(2));
    // The current task, eligible and inside its protected slice, keeps the CPU.
    k.tasks[0].vprot = ORIGIN + Ps::MS * 5;
    assert_eq!(k.pick_eevdf(0, Ps::ZERO, true), Some(0));
    assert_eq!(k.pick_eevdf(0, Ps::ZERO, false), Some(2), "without RUN_TO_PARITY the deadline decides");
    // Once it has run past V it is ineligible, protected or not: at 2 ms its vruntime is
    // ORIGIN + 2 ms against V = ORIGIN + 5/3 ms.
    assert_eq!(k.pick_eevdf(0, Ps::MS * 2, true), Some(2));
}

#[test]
fn a_sleeper_comes_back_with_the_lag_it_left_with() {
    let mut s = three();
    let k = &mut s.kernel;
    // Task 2 has just left the CPU to sleep (the CPU has no current task until the next
    // pick), 1 ms behind the mean of the three.
    k.cpus[0].runq.retain(|&t| t != 2);
    let curr = k.cpus[0].task.take().unwrap();
    k.cpus[0].runq.push_back(curr);
    k.tasks[0].vruntime = ORIGIN + Ps::MS * 3;
    k.tasks[1].vruntime = ORIGIN + Ps::MS * 3;
    k.tasks[2].vruntime = ORIGIN + Ps(Ps::MS.0 * 3 / 2);
    k.tasks[2].vlag = k.entity_lag(k.sum_with(0, 2), 2);
    assert_eq!(k.tasks[2].vlag, (Ps::MS.0 as i64), "V = 2.5 ms, vruntime 1.5 ms");
    // Later the other two have moved on; placed back, it is 1 ms behind the new mean of three.
    k.tasks[0].vruntime = ORIGIN + Ps::MS * 9;
    k.tasks[1].vruntime = ORIGIN + Ps::MS * 7;
    k.place_entity(2, Ps::ZERO);
    k.cpus[0].runq.push_back(2);
    let mean = (k.tasks[0].vruntime.0 + k.tasks[1].vruntime.0 + k.tasks[2].vruntime.0) / 3;
    assert_eq!(mean - k.tasks[2].vruntime.0, Ps::MS.0, "place_entity's (n + 1) / n keeps the lag");
    assert_eq!(k.tasks[2].deadline, k.tasks[2].vruntime + k.base_slice());
    // A lag beyond two slices (or a tick) is clamped.
    k.cpus[0].runq.retain(|&t| t != 2);
    k.tasks[2].vruntime = ORIGIN;
    k.tasks[2].vlag = k.entity_lag(k.sum_with(0, 2), 2);
    let limit = (2 * k.base_slice().0).max(k.jiffies.period().0) as i64;
    assert_eq!(k.tasks[2].vlag, limit);
}

#[test]
fn a_wake_up_preempts_only_a_current_task_that_is_unprotected_or_ineligible() {
    let mut s = three();
    let k = &mut s.kernel;
    // Task 2 wakes with `lag` against tasks 0 (running since 0, vruntime `v0`) and 1 (2 ms).
    k.cpus[0].runq.retain(|&t| t != 2);
    let slice = k.base_slice();
    let setup = |k: &mut crate::linux::Kernel, v0: Ps, vprot: Ps, lag: Ps| {
        k.cpus[0].need_resched = false;
        k.cpus[0].runq.retain(|&t| t != 2);
        k.tasks[0].on_cpu_since = Ps::ZERO;
        k.tasks[0].vruntime = v0;
        k.tasks[0].deadline = v0 + slice;
        k.tasks[0].vprot = vprot;
        k.tasks[1].vruntime = ORIGIN + Ps::MS * 2;
        k.tasks[1].deadline = ORIGIN + Ps::MS * 2 + slice;
        k.tasks[2].vlag = lag.0 as i64;
        k.place_entity(2, Ps::ZERO);
        k.cpus[0].runq.push_back(2);
        k.wakeup_preempt(0, 2, Ps::ZERO);
        k.cpus[0].need_resched
    };
    // With 0.2 ms of lag task 2 lands at 1.45 ms (V 1.75 ms less 0.2 x 3/2): task 0 at 1.5 ms is
    // still eligible (V = 1.65 ms), inside its protected slice, and keeps the CPU.
    let (v0, lag) = (ORIGIN + Ps(Ps::MS.0 * 3 / 2), Ps::US * 200);
    assert!(!setup(k, v0, ORIGIN + Ps::MS * 3, lag));
    // The same past its protected slice: task 2's deadline (0.05 ms earlier) wins.
    assert!(setup(k, v0, ORIGIN + Ps::MS, lag));
    // Protected but ineligible: task 0 at 3 ms, task 2 placed at 1 ms with 1 ms of lag,
    // V = 2 ms. Protection does not hold, and task 2 has the earliest deadline.
    assert!(setup(k, ORIGIN + Ps::MS * 3, ORIGIN + Ps::MS * 9, Ps::MS));
    // SCHED_BATCH: the same two wake-ups that preempted do not, and the deadline is not renewed.
    k.tasks[2].batch = true;
    assert!(!setup(k, v0, ORIGIN + Ps::MS, lag));
    assert!(!setup(k, ORIGIN + Ps::MS * 3, ORIGIN + Ps::MS * 9, Ps::MS));
}

#[test]
fn under_cfs_a_batch_wakee_does_not_preempt_where_a_normal_one_does() {
    let mut s = sim("5.18");
    let mm = s.add_mm();
    for _ in 0..2 {
        s.add_task(Box::new(Spin), mm, 0);
    }
    let k = &mut s.kernel;
    // Task 0 runs 2 ms ahead of task 1, past the scaled 1 ms wake-up granularity.
    k.cpus[0].runq.retain(|&t| t != 1);
    k.tasks[0].on_cpu_since = Ps::ZERO;
    k.tasks[0].vruntime = Ps::MS * 20;
    k.tasks[1].vruntime = Ps::MS * 20 - Ps::MS * k.sched_factor() - Ps::US;
    for (batch, preempts) in [(false, true), (true, false)] {
        k.tasks[1].batch = batch;
        k.cpus[0].need_resched = false;
        k.cpus[0].runq.push_back(1);
        k.check_preempt_wakeup_cfs(0, 1, Ps::ZERO);
        k.cpus[0].runq.retain(|&t| t != 1);
        assert_eq!(k.cpus[0].need_resched, preempts, "batch {batch}");
    }
}

#[test]
fn the_base_slice_is_0_75_ms_until_v6_15_and_0_70_ms_from_it() {
    // Both scaled by the same 1 + ilog2(min(cpus, 8)) of the machine.
    let (old, new) = (sim("6.14"), sim("6.15"));
    let factor = old.kernel.sched_factor();
    assert_eq!(old.kernel.base_slice(), Ps::US * 750 * factor);
    assert_eq!(new.kernel.base_slice(), Ps::US * 700 * factor);
    assert_eq!(sim("6.18").kernel.base_slice(), new.kernel.base_slice(), "6.18 inherits it");
}

/// `__schedule` reads the runqueue clock before the pick and `set_next_entity` starts the next
/// task's `exec_start` there (v2.6.23 through v6.18), so the switch runs on the next task's
/// vruntime: with three tasks spinning on one CPU, the vruntimes add up to all of the CPU's
/// time, the switches' included (a 50 us switch makes a lost one plain).
#[test]
fn the_switch_is_charged_to_the_next_tasks_vruntime() {
    let mut p = crate::profile::shipped("ivybridge-i3-3240");
    p.kernel.context_switch_ns = Some(crate::profile::Sourced {
        value: 50_000.0,
        source: "test".into(),
        confidence: crate::profile::Confidence::Estimate,
    });
    let mut s = Simulation::new(&p, KernelConfig::preset("6.18").unwrap());
    let mm = s.add_mm();
    for _ in 0..3 {
        s.add_task(Box::new(Spin), mm, 0);
    }
    let end = Ps::MS * 30;
    s.run(Ps::ZERO, end);
    let k = &s.kernel;
    let switches = k.counters.sched.context_switches;
    assert!(switches >= 5, "{switches} switches");
    let curr = k.cpus[0].task.expect("a spinning task runs");
    let ran: u64 = (0..3).map(|t| (k.tasks[t].vruntime - ORIGIN).0).sum::<u64>()
        + end.0.saturating_sub(k.tasks[curr].on_cpu_since.0);
    // Within a step or two of the end, far below one switch.
    assert!(ran.abs_diff(end.0) < (Ps::US * 5).0, "{ran} ps run of {} ps, {switches} switches", end.0);
}
