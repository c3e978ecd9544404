use crate::engine::sim::Simulation;
use crate::linux::config::KernelConfig;
use crate::linux::Kernel;
use crate::run::{run, RunSpec};
use crate::time::Ps;

use super::super::tests::Spin;
use super::super::ORIGIN;

fn sim(kernel: &str) -> Simulation {
    Simulation::new(&crate::profile::shipped("ivybridge-i3-3240"), KernelConfig::preset(kernel).unwrap())
}

/// Three tasks bound to CPU 0: task 0 has just blocked (off the CPU, its vruntime charged), 1
/// and 2 are queued; vruntimes and deadlines in ms past ORIGIN.
fn blocked(kernel: &str, v: [u64; 3], d: [u64; 3]) -> Simulation {
    let mut s = sim(kernel);
    let mm = s.add_mm();
    for _ in 0..3 {
        s.add_task(Box::new(Spin), mm, 0);
    }
    let k = &mut s.kernel;
    assert_eq!(k.cpus[0].task.take(), Some(0));
    for t in 0..3 {
        k.tasks[t].vruntime = ORIGIN + Ps::MS * v[t];
        k.tasks[t].deadline = ORIGIN + Ps::MS * d[t];
    }
    s
}

/// Task `t` runs on CPU 0 from time zero.
fn run_on_cpu0(k: &mut Kernel, t: usize) {
    k.cpus[0].runq.retain(|&q| q != t);
    k.cpus[0].task = Some(t);
    k.tasks[t].on_cpu_since = Ps::ZERO;
    k.tasks[t].vprot = k.tasks[t].deadline;
}

fn counted(k: &Kernel) -> [u64; 3] {
    let c = k.delay_counters().expect("6.18 has the delayed dequeue");
    [c.delayed_dequeues, c.delayed_requeues, c.delayed_picks]
}

#[test]
fn an_ineligible_sleeper_stays_queued_and_pays_its_debt_while_others_run() {
    // V = 2 ms: task 0 at 3 ms blocks 1 ms in debt.
    let mut s = blocked("6.18", [3, 1, 2], [6, 5, 4]);
    let k = &mut s.kernel;
    assert!({
        let w = k.sum_with(0, 0);
        k.delay_dequeue(0, 0, w)
    });
    assert!(k.tasks[0].delayed && k.cpus[0].runq.contains(&0));
    // The pick passes it over (ineligible): task 2, eligible at V, has the earlier deadline.
    assert_eq!(k.pick_next(0, Ps::ZERO), Some(2));
    assert!(k.tasks[0].delayed && k.cpus[0].runq.contains(&0), "still queued, still delayed");
    run_on_cpu0(k, 2);
    // Task 2 runs 1.5 ms (to 3.5 ms): V = (3 + 1 + 3.5) / 3 = 2.5 ms, task 0 counted in it.
    let now = Ps(Ps::MS.0 * 3 / 2);
    let (sum, n) = k.vruntime_sum(0, now);
    assert_eq!((sum / n) as u64, (ORIGIN + Ps(Ps::MS.0 * 5 / 2)).0);
    // Woken, it is requeued where it slept, 0.5 ms in debt now (not the 1 ms it blocked with).
    k.requeue_delayed(0, now);
    assert!(!k.tasks[0].delayed);
    assert_eq!(k.tasks[0].vruntime, ORIGIN + Ps::MS * 3);
    assert_eq!(k.tasks[0].deadline, ORIGIN + Ps::MS * 6);
    assert_eq!(k.tasks[0].vlag, -(Ps::MS.0 as i64) / 2);
    assert_eq!(k.cpus[0].runq.iter().filter(|&&q| q == 0).count(), 1);
    assert_eq!(counted(k), [1, 1, 0]);
}

#[test]
fn an_eligible_sleeper_is_dequeued_at_once() {
    // V = 2 ms: task 0 at 1 ms blocks with 1 ms of credit and leaves the queue.
    let mut s = blocked("6.18", [1, 2, 3], [4, 5, 6]);
    let k = &mut s.kernel;
    assert!(!{
        let w = k.sum_with(0, 0);
        k.delay_dequeue(0, 0, w)
    });
    assert!(!k.tasks[0].delayed && !k.cpus[0].runq.contains(&0));
    assert_eq!(counted(k), [0, 0, 0]);
}

#[test]
fn a_delayed_task_picked_is_dequeued_not_run_and_its_credit_dropped() {
    // Task 0 blocked ineligible at 3 ms (V = 2 ms).
    let mut s = blocked("6.18", [3, 1, 2], [4, 8, 9]);
    let k = &mut s.kernel;
    assert!({
        let w = k.sum_with(0, 0);
        k.delay_dequeue(0, 0, w)
    });
    // Then the others moved on (5 ms each): V = 13/3 ms, task 0 is eligible with the earliest
    // deadline. The pick reaches it, dequeues it, and goes on to task 1.
    k.tasks[1].vruntime = ORIGIN + Ps::MS * 5;
    k.tasks[2].vruntime = ORIGIN + Ps::MS * 5;
    assert_eq!(k.pick_eevdf(0, Ps::ZERO, false), Some(0));
    assert_eq!(k.pick_next(0, Ps::ZERO), Some(1));
    assert!(!k.tasks[0].delayed && !k.cpus[0].runq.contains(&0));
    // Its lag then was +4/3 ms; DELAY_ZERO keeps none of it.
    assert_eq!(k.tasks[0].vlag, 0);
    assert_eq!(counted(k), [1, 0, 1]);
}

#[test]
fn a_delayed_task_woken_in_credit_is_placed_again_at_v() {
    let mut s = blocked("6.18", [3, 1, 2], [4, 8, 9]);
    let k = &mut s.kernel;
    assert!({
        let w = k.sum_with(0, 0);
        k.delay_dequeue(0, 0, w)
    });
    run_on_cpu0(k, 1);
    // The others move to 5 ms: task 0 (3 ms) is 4/3 ms ahead of V when woken.
    k.tasks[1].vruntime = ORIGIN + Ps::MS * 5;
    k.tasks[2].vruntime = ORIGIN + Ps::MS * 5;
    k.requeue_delayed(0, Ps::ZERO);
    assert_eq!((k.tasks[0].vruntime, k.tasks[0].vlag), (ORIGIN + Ps::MS * 5, 0), "at V of the others");
    assert_eq!(k.tasks[0].deadline, k.tasks[0].vruntime + k.base_slice());
}

#[test]
fn before_v6_12_every_sleeper_leaves_at_once() {
    // 6.7 (EEVDF, no delayed dequeue): the same ineligible sleeper is dequeued.
    let mut s = blocked("6.7", [3, 1, 2], [6, 5, 4]);
    assert!(!{
        let w = s.kernel.sum_with(0, 0);
        s.kernel.delay_dequeue(0, 0, w)
    });
    assert!(!s.kernel.cpus[0].runq.contains(&0));
    assert_eq!(s.kernel.delay_counters(), None);
    let on = |k: &str| KernelConfig::preset(k).unwrap().sched.delay_dequeue;
    assert!(!on("6.6") && !on("6.7"));
    assert!(on("6.13") && on("6.14") && on("6.15") && on("6.18"), "set in 6.13 (on v6.12), inherited");
}

#[test]
fn hackbench_pipes_sleep_delayed_on_6_18() {
    let spec = RunSpec::of("6.18", "hackbench -pipe process 200", 1, Ps::MS * 2, Ps::MS * 5);
    let r = run(&crate::profile::shipped("ivybridge-i3-3240"), &spec).unwrap();
    let (d, q, p) =
        (r.counters["delayed_dequeues"], r.counters["delayed_requeues"], r.counters["delayed_picks"]);
    assert!(d > 0 && q + p > 0, "{d} delayed, {q} requeued, {p} picked");
    // Each delayed sleep ends once, requeued or picked (up to the group's 40 tasks delayed at
    // the window's edges).
    assert!((d as i64 - (q + p) as i64).abs() <= 40, "{d} vs {q} + {p}");
}
