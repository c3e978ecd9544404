//! EEVDF's delayed dequeue, v6.12+ (`[sched] delay_dequeue`; "sched/fair: Implement delayed
//! dequeue", 152e11f6df29, with `DELAY_ZERO`; default on through v6.18;
//! docs/references/linux-6x.md#delayed-dequeue).
//!
//! - `dequeue_entity`: a task that blocks while ineligible (vruntime past V) is not dequeued. It
//!   stays queued, `sched_delayed`, still counted in V and in the runqueue's load and
//!   `nr_running`; its lag is not taken yet, so sleeping does not shed it.
//! - `pick_next_entity`: when `pick_eevdf` picks a delayed task, the dequeue finishes then
//!   (`DEQUEUE_DELAYED`: its lag taken against V with it still counted, a positive one clipped to
//!   zero by `DELAY_ZERO`) and the pick starts again; the delayed task does not run.
//! - `ttwu_runnable`: a delayed task woken is still queued: no `select_task_rq`, no migration,
//!   no IPI. `requeue_delayed_entity` clears the mark; with `DELAY_ZERO` a task whose lag has
//!   turned positive meanwhile is placed again at V with zero lag, one still in debt stays where it
//!   was (vruntime and deadline kept). Then `wakeup_preempt` as for any wake-up.
//!
//! The waker pays `kernel.ttwu_cycles` as for any wake-up (the shorter `ttwu_runnable` path is
//! not costed apart). Departures: PELT counts a delayed task as runnable for the runqueue's load and runnable
//! averages (v6.12's rule; v6.13 took delayed tasks out of the runnable count, 76f2f783294d,
//! not modelled). The balancer never moves a delayed task (v6.18: it is off `cfs_tasks`).

use crate::linux::Kernel;
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// The delayed dequeue (v6.12+), counted where the kernel has it.
    Counters {
        /// Sleepers left queued because they blocked ineligible (`set_delayed`).
        delayed_dequeues,
        /// Delayed tasks woken while still queued (`requeue_delayed_entity`).
        delayed_requeues,
        /// Delayed tasks a pick reached, dequeued then without running (`DEQUEUE_DELAYED`).
        delayed_picks,
    }
}

impl Kernel {
    /// The delayed-dequeue counters, where the kernel has it (results of the kernels before keep
    /// their counters as they were).
    pub fn delay_counters(&self) -> Option<Counters> {
        let s = &self.config.sched;
        (s.eevdf && s.delay_dequeue).then(|| self.counters.sched_delay.unwrap_or_default())
    }

    fn delay_counted(&mut self) -> &mut Counters {
        self.counters.sched_delay.get_or_insert_with(Counters::default)
    }

    /// `dequeue_entity` of task `t`, which just blocked and left `cpu` (its vruntime charged, not
    /// queued; `with_t`: the queue's vruntime sum and count with it, [`Kernel::sum_with`]):
    /// whether the dequeue is delayed, leaving it queued. It is eligible when `v * n <= sum`
    /// (`entity_eligible`); alone it always is.
    pub(in crate::linux) fn delay_dequeue(&mut self, cpu: u32, t: usize, (sum, n): (u128, u128)) -> bool {
        let s = &self.config.sched;
        if !(s.eevdf && s.delay_dequeue) || self.tasks[t].vruntime.0 as u128 * n <= sum {
            return false;
        }
        self.tasks[t].delayed = true;
        self.cpus[cpu as usize].runq.push_back(t);
        self.delay_counted().delayed_dequeues += 1;
        true
    }

    /// `pick_eevdf` on `cpu` at `now` as `pick_next_entity` goes on with it: delayed tasks the
    /// pick reaches are taken off the queue one after the other (their dequeue finished) until
    /// it reaches a task to run, the current one included, or nothing.
    pub(in crate::linux) fn pick_eevdf_dequeuing(
        &mut self,
        cpu: u32,
        now: Ps,
        protect: bool,
    ) -> Option<usize> {
        let (pick, gone) = self.pick_past_delayed(cpu, now, protect);
        for q in gone {
            self.finish_delayed_dequeue(cpu, q, now);
        }
        pick
    }

    /// The task `schedule()` would run on `cpu` at `now` with RUN_TO_PARITY, past the delayed
    /// sleepers it would dequeue on the way (what `cond_resched()` asks; nothing changes).
    pub(in crate::linux) fn pick_eevdf_live(&self, cpu: u32, now: Ps) -> Option<usize> {
        self.pick_past_delayed(cpu, now, true).0
    }

    /// The pick and, in order, the delayed tasks it reaches before it.
    fn pick_past_delayed(&self, cpu: u32, now: Ps, protect: bool) -> (Option<usize>, Vec<usize>) {
        let mut gone = Vec::new();
        loop {
            match self.pick_eevdf_without(cpu, now, protect, &gone) {
                Some(q) if self.tasks[q].delayed => gone.push(q),
                p => return (p, gone),
            }
        }
    }

    /// `dequeue_entity` with `DEQUEUE_DELAYED` of queued task `t` on `cpu` at `now`: its lag
    /// against V with it still counted (clamped as any sleeper's), `DELAY_ZERO`, then off the
    /// queue, asleep. Earlier finished ones are already off, as the kernel dequeues in turn.
    fn finish_delayed_dequeue(&mut self, cpu: u32, t: usize, now: Ps) {
        // PELT: queued, not running, since its last update.
        self.pelt_cfs_now(cpu, now);
        self.pelt_se_queued(t, now);
        let lag = self.entity_lag(self.vruntime_sum(cpu, now), t);
        // DELAY_ZERO: a positive lag is not kept through the sleep.
        self.tasks[t].vlag = lag.min(0);
        self.tasks[t].delayed = false;
        self.cpus[cpu as usize].runq.retain(|&q| q != t);
        self.delay_counted().delayed_picks += 1;
    }

    /// `ttwu_runnable` of delayed task `t` at `now`: `requeue_delayed_entity` with `DELAY_ZERO`,
    /// then `wakeup_preempt`.
    pub(in crate::linux) fn requeue_delayed(&mut self, t: usize, now: Ps) {
        let cpu = self.tasks[t].cpu;
        debug_assert!(self.cpus[cpu as usize].task.is_some(), "a delayed task's CPU runs a task");
        self.delay_counted().delayed_requeues += 1;
        self.pelt_cfs_now(cpu, now);
        self.pelt_se_queued(t, now);
        // update_entity_lag with t still queued.
        let lag = self.entity_lag(self.vruntime_sum(cpu, now), t);
        self.tasks[t].delayed = false;
        if lag > 0 {
            // Out of the tree, placed at V (of the others) with zero lag, back in.
            self.cpus[cpu as usize].runq.retain(|&q| q != t);
            self.tasks[t].vlag = 0;
            self.place_entity(t, now);
            self.cpus[cpu as usize].runq.push_back(t);
        } else {
            self.tasks[t].vlag = lag;
        }
        self.wakeup_preempt(cpu, t, now);
    }
}

#[cfg(test)]
#[path = "delay_tests.rs"]
mod tests;
