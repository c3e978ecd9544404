//! EEVDF, the fair class from v6.6 ("sched/fair: Implement an EEVDF-like scheduling policy";
//! the rules below as of v6.18), for the model's tasks: all nice 0 and each bound to one CPU, so
//! every weight is equal and V below is a plain mean (docs/references/linux-6x.md#eevdf).
//!
//! - V (`avg_vruntime`): the mean vruntime of the CPU's tasks, the running one included. A task
//!   is eligible while its vruntime is at most V (`entity_eligible`: it has had no more than its
//!   share).
//! - Each task asks for a slice, `sysctl_sched_base_slice` (0.75 ms, scaled as CFS's tunables);
//!   its virtual deadline is one slice past the vruntime it asked at (`update_deadline` asks
//!   again when vruntime reaches it).
//! - `pick_eevdf`: the eligible task with the earliest deadline. The current task keeps the CPU
//!   while it is eligible and short of the deadline it was picked with (`RUN_TO_PARITY`,
//!   `protect_slice`; with equal slices the protected span is the whole request).
//! - A sleeper leaves with its lag, V - vruntime, clamped to two slices or a tick
//!   (`update_entity_lag`), and comes back at V - lag, the lag scaled by (n + 1) / n so that
//!   joining n tasks keeps it (`place_entity`, `PLACE_LAG`).
//! - A wake-up preempts when the pick with the woken task queued is the woken task
//!   (`check_preempt_wakeup_fair`); the current task leaves at its next return to user space.
//!   A `SCHED_BATCH` task's wake-up never preempts.
//!
//! - v6.12+ `DELAY_DEQUEUE` (`[sched] delay_dequeue`, linux/kernel/sched/fair/delay.rs): an
//!   ineligible sleeper stays queued until it is picked or woken.
//!
//! Departures: the next-buddy hint is not modelled.

pub mod balance;
pub mod delay;
mod select;

use crate::linux::Kernel;
use crate::time::Ps;

/// Where an EEVDF task's vruntime starts: far enough from zero that V - lag cannot go below it
/// (a lag is at most a few slices).
pub const ORIGIN: Ps = Ps(1 << 50);

impl Kernel {
    /// `sysctl_sched_base_slice`: 0.75 ms (v6.6; 0.70 ms from v6.15, `[sched] base_slice_us`)
    /// scaled by `1 + ilog2(min(cpus, 8))`.
    pub(in crate::linux) fn base_slice(&self) -> Ps {
        let us = match self.config.sched.base_slice_us {
            0 => 750,
            us => us as u64,
        };
        Ps::US * us * self.sched_factor()
    }

    /// The current task of `cpu` and its vruntime at `now`.
    fn curr_vruntime(&self, cpu: u32, now: Ps) -> Option<(usize, Ps)> {
        let t = self.cpus[cpu as usize].task?;
        let task = &self.tasks[t];
        Some((t, task.vruntime + now.saturating_sub(task.on_cpu_since)))
    }

    /// The sum and number of the vruntimes queued on `cpu`, the current task's at `now` included.
    fn vruntime_sum(&self, cpu: u32, now: Ps) -> (u128, u128) {
        self.vruntime_sum_without(cpu, now, &[])
    }

    /// [`Kernel::vruntime_sum`] with the queued tasks in `gone` left out (delayed sleepers a
    /// pick has dequeued, linux/kernel/sched/fair/delay.rs).
    fn vruntime_sum_without(&self, cpu: u32, now: Ps, gone: &[usize]) -> (u128, u128) {
        let c = &self.cpus[cpu as usize];
        let (mut sum, mut n) = c
            .runq
            .iter()
            .filter(|q| !gone.contains(q))
            .fold((0u128, 0u128), |(s, n), &q| (s + self.tasks[q].vruntime.0 as u128, n + 1));
        if let Some((_, v)) = self.curr_vruntime(cpu, now) {
            sum += v.0 as u128;
            n += 1;
        }
        (sum, n)
    }

    /// Task `t`'s deadline once `update_deadline` has seen vruntime `v`.
    fn deadline_at(&self, t: usize, v: Ps) -> Ps {
        let d = self.tasks[t].deadline;
        if v >= d {
            v + self.base_slice()
        } else {
            d
        }
    }

    /// `update_curr`'s deadline part for `cpu`'s current task at `now`: a new request once
    /// vruntime reaches the deadline. Returns whether it did (`update_deadline`: reschedule).
    pub(in crate::linux) fn update_deadline(&mut self, cpu: u32, now: Ps) -> bool {
        let Some((t, v)) = self.curr_vruntime(cpu, now) else { return false };
        let d = self.deadline_at(t, v);
        let reached = d != self.tasks[t].deadline;
        self.tasks[t].deadline = d;
        reached
    }

    /// `pick_eevdf` on `cpu` at `now`; `protect` applies RUN_TO_PARITY to the current task.
    pub(in crate::linux) fn pick_eevdf(&self, cpu: u32, now: Ps, protect: bool) -> Option<usize> {
        self.pick_eevdf_without(cpu, now, protect, &[])
    }

    /// [`Kernel::pick_eevdf`] with the queued tasks in `gone` no longer on the queue.
    fn pick_eevdf_without(&self, cpu: u32, now: Ps, protect: bool, gone: &[usize]) -> Option<usize> {
        let c = &self.cpus[cpu as usize];
        let (sum, n) = self.vruntime_sum_without(cpu, now, gone);
        let mut curr = self.curr_vruntime(cpu, now);
        let mut queued = c.runq.iter().copied().filter(|q| !gone.contains(q));
        if n == 1 {
            return curr.map(|(t, _)| t).or_else(|| queued.next());
        }
        // entity_eligible: V * n >= v * n, without the division.
        let eligible = |v: Ps| v.0 as u128 * n <= sum;
        if let Some((t, v)) = curr {
            if !eligible(v) {
                curr = None;
            } else if protect && v < self.tasks[t].vprot {
                return Some(t);
            }
        }
        // The earliest deadline among the eligible (the first queued of equals, as the tree's
        // leftmost).
        let best = queued
            .clone()
            .filter(|&q| eligible(self.tasks[q].vruntime))
            .min_by_key(|&q| self.tasks[q].deadline);
        match (curr, best) {
            (Some((t, v)), Some(b)) if self.deadline_at(t, v) < self.tasks[b].deadline => Some(t),
            (Some((t, _)), None) => Some(t),
            (_, Some(b)) => Some(b),
            (None, None) => queued.next(),
        }
    }

    /// `place_entity` of task `t`, woken onto its CPU at `now` (not queued yet): at V minus the
    /// lag it slept with, scaled so that joining keeps it; its deadline one slice on.
    pub(in crate::linux) fn place_entity(&mut self, t: usize, now: Ps) {
        let cpu = self.tasks[t].cpu;
        let (sum, n) = self.vruntime_sum(cpu, now);
        let slice = self.base_slice();
        let task = &mut self.tasks[t];
        // With nothing else queued the lag is dropped and the vruntime stays.
        if let Some(v) = sum.checked_div(n) {
            let lag = task.vlag as i128 * (n as i128 + 1) / n as i128;
            task.vruntime = Ps((v as i128 - lag) as u64);
        }
        task.deadline = task.vruntime + slice;
    }

    /// The vruntime sum and count of `cpu`'s queue with task `t`, which just left the CPU and
    /// is not queued, counted back in (`avg_vruntime` as `dequeue_entity` sees it).
    pub(in crate::linux) fn sum_with(&self, cpu: u32, t: usize) -> (u128, u128) {
        let c = &self.cpus[cpu as usize];
        let sum: u128 = c.runq.iter().map(|&q| self.tasks[q].vruntime.0 as u128).sum();
        (sum + self.tasks[t].vruntime.0 as u128, c.runq.len() as u128 + 1)
    }

    /// `update_entity_lag` of task `t` against the average `sum / n` (with `t` counted): V less
    /// its vruntime, clamped to the larger of two base slices and a tick.
    pub(in crate::linux) fn entity_lag(&self, (sum, n): (u128, u128), t: usize) -> i64 {
        let limit = (2 * self.base_slice().0).max(self.jiffies.period().0) as i128;
        ((sum / n) as i128 - self.tasks[t].vruntime.0 as i128).clamp(-limit, limit) as i64
    }

    /// `check_preempt_wakeup_fair` for task `t`, just queued on `cpu`'s runqueue at `now`. A
    /// `SCHED_BATCH` wakee returns before `update_curr`.
    pub(in crate::linux) fn wakeup_preempt(&mut self, cpu: u32, t: usize, now: Ps) {
        if self.tasks[t].batch {
            return;
        }
        self.update_deadline(cpu, now);
        if self.pick_eevdf(cpu, now, true) == Some(t) && !self.cpus[cpu as usize].need_resched {
            self.cpus[cpu as usize].need_resched = true;
            self.counters.sched.wakeup_preempts += 1;
        }
    }

    /// At a return to user space: whether the current task `t` of `cpu` should leave it
    /// (`update_curr` asked for a reschedule, or a wake-up did, and the pick is another task).
    pub(in crate::linux) fn eevdf_resched(&mut self, cpu: u32, t: usize, now: Ps) -> bool {
        let reached = self.update_deadline(cpu, now);
        let (_, v) = self.curr_vruntime(cpu, now).expect("a current task");
        let c = &mut self.cpus[cpu as usize];
        if !(c.need_resched || reached || v >= self.tasks[t].vprot) {
            return false;
        }
        c.need_resched = false;
        // schedule(): delayed sleepers the pick reaches leave first (v6.12+); picking `t` again
        // is no switch.
        self.pick_eevdf_dequeuing(cpu, now, true) != Some(t)
    }
}

#[cfg(test)]
mod tests;
