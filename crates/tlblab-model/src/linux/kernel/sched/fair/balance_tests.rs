use crate::engine::sim::Simulation;
use crate::linux::config::KernelConfig;
use crate::time::Ps;

use super::super::tests::Spin;

/// A 2-CPU machine (the i3-3240 without SMT) on `kernel` with five unbound tasks on CPU 0 and
/// one on CPU 1, their averages built up over 100 ms.
fn lopsided(kernel: &str) -> Simulation {
    let mut p = crate::profile::shipped("ivybridge-i3-3240");
    p.topology.threads_per_core = 1;
    let mut s = Simulation::new(&p, KernelConfig::preset(kernel).unwrap());
    for cpu in [0, 0, 0, 0, 0, 1] {
        let mm = s.add_mm();
        s.add_task(Box::new(Spin), mm, cpu);
    }
    for t in 0..6 {
        s.unbind_task(t);
    }
    s.untimed(|k, _| {
        for ms in 1..=100 {
            k.pelt_tick(0, Ps::MS * ms);
            k.pelt_tick(1, Ps::MS * ms);
        }
    });
    s
}

fn nr(s: &Simulation, cpu: usize) -> usize {
    let c = &s.kernel.cpus[cpu];
    c.runq.len() + c.task.is_some() as usize
}

#[test]
fn a_busy_cpu_pulls_queued_load_from_the_busiest_until_the_loads_meet() {
    for kernel in ["5.18", "6.18"] {
        let mut s = lopsided(kernel);
        let (l0, l1) = (s.kernel.cpus[0].cfs_avg.load_avg, s.kernel.cpus[1].cfs_avg.load_avg);
        assert!(l0 > 4 * l1 && l1 > 900, "{kernel}: loads {l0} {l1}");
        // The first tick only starts the interval; the next one past it balances.
        s.untimed(|k, _| k.sched_balance_tick(1, Ps::MS * 100));
        assert_eq!(nr(&s, 1), 1);
        s.untimed(|k, _| k.sched_balance_tick(1, Ps::MS * 110));
        assert_eq!(nr(&s, 1), 1, "{kernel}: 10 ms is inside the busy interval (2 ms x 16)");
        s.untimed(|k, _| k.sched_balance_tick(1, Ps::MS * 140));
        // Imbalance min(5120 - 3072, 3072 - 1024) = 2048: two tasks of 1024.
        assert_eq!((nr(&s, 0), nr(&s, 1)), (3, 3), "{kernel}");
        assert_eq!(s.kernel.counters.sched.balance_migrations, 2);
        assert!(s.kernel.cpus[1].cfs_avg.load_avg > 2 * l1, "{kernel}: the load moved with them");
        // Balanced now: CPU 0's next balance finds itself busiest-free.
        s.untimed(|k, _| {
            k.sched_balance_tick(0, Ps::MS * 140);
            k.sched_balance_tick(0, Ps::MS * 180);
        });
        assert_eq!((nr(&s, 0), nr(&s, 1)), (3, 3), "{kernel}");
    }
}

#[test]
fn cache_hot_tasks_stay_until_balancing_has_failed_twice() {
    let mut s = lopsided("6.18");
    let at = |i: u64| Ps::MS * (100 + 40 * i);
    s.untimed(|k, _| k.sched_balance_tick(1, at(0)));
    for i in 1..=2 {
        // Every queued task ran just before the balance.
        for t in 0..5 {
            s.kernel.tasks[t].last_ran = at(i);
        }
        s.untimed(|k, _| k.sched_balance_tick(1, at(i)));
        assert_eq!(nr(&s, 1), 1, "balance {i}");
        assert_eq!(s.kernel.cpus[1].sd.nr_balance_failed, i as u32);
    }
    for t in 0..5 {
        s.kernel.tasks[t].last_ran = at(3);
    }
    s.untimed(|k, _| k.sched_balance_tick(1, at(3)));
    assert!(nr(&s, 1) > 1, "more failures than cache_nice_tries: hot tasks move");
    assert_eq!(s.kernel.cpus[1].sd.nr_balance_failed, 0);
}

#[test]
fn bound_tasks_are_never_balanced() {
    let mut s = lopsided("6.18");
    for t in 0..6 {
        s.kernel.tasks[t].bound = true;
    }
    s.untimed(|k, _| {
        k.sched_balance_tick(1, Ps::MS * 100);
        k.sched_balance_tick(1, Ps::MS * 140);
    });
    assert_eq!((nr(&s, 0), nr(&s, 1)), (5, 1));
}
