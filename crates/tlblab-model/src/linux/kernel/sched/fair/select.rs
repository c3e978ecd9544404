//! Where a woken task runs (kernel/sched/fair.c `select_task_rq_fair`'s wake-up fast path,
//! v5.18 and v6.18 alike for what is modelled; docs/references/linux-6x.md#wake-placement), for
//! a task that is not bound to one CPU (`Task::bound` false: hackbench's, `place=wake`), and the
//! PELT bookkeeping it reads (linux/kernel/sched/pelt.rs): updated where `enqueue_entity`,
//! `dequeue_entity`, `put_prev_entity`, `set_next_entity` and `entity_tick` update it.
//!
//! - `record_wakee`: the waker counts a flip when it wakes another task than last time, halved
//!   once a second; `wake_wide` sends the wakee off the affine path when both sides flip more
//!   than the LLC is wide and one flips that factor more than the other.
//! - `wake_affine` (the waker's CPU against the wakee's previous CPU): `wake_affine_idle`
//!   (an idle waker CPU sharing the cache, a sync waker alone on its CPU, an idle previous CPU),
//!   then `wake_affine_weight` on the runqueues' and tasks' `load_avg` with `WA_BIAS`
//!   (imbalance_pct 117: the MC/PKG domains' `sd_init` value).
//! - `select_idle_sibling` on the chosen target: the target if idle, the previous CPU if idle
//!   and sharing its cache, the task's `recent_used_cpu` likewise, else the first idle CPU of the
//!   target's LLC from target + 1, else the target.
//! - The move (`set_task_cpu` -> `migrate_task_rq_fair`): the task's load leaves its old
//!   runqueue's average (`remove_entity_load_avg`) and joins the new one at enqueue
//!   (`attach_entity_load_avg`); under CFS (before v6.6) its vruntime keeps its distance to the
//!   runqueue's minimum, under EEVDF its lag does (place_entity, linux/kernel/sched/fair.rs).
//!
//! Left out: EAS (`find_energy_efficient_cpu`, no asymmetric capacities here), the slow path
//! (no domain has `SD_BALANCE_WAKE`), `SIS_UTIL`/`SIS_PROP`'s bound on the idle scan, the
//! SMT idle-core search, periodic, idle and NUMA balancing, misfit migration.

use crate::linux::ctx::Ctx;
use crate::linux::kernel::sched::pelt::NICE_0_LOAD;
use crate::linux::Kernel;
use crate::time::Ps;

/// `sd->imbalance_pct` of the MC and PKG domains (kernel/sched/topology.c `sd_init`).
pub(super) const IMBALANCE_PCT: u64 = 117;

/// PELT's clock: nanoseconds.
fn pelt_now(now: Ps) -> u64 {
    now.0 / 1000
}

impl Kernel {
    /// `cpus_share_cache`: the model's LLC is the socket.
    pub(super) fn share_cache(&self, a: u32, b: u32) -> bool {
        self.topo.socket_of(a) == self.topo.socket_of(b)
    }

    /// `available_idle_cpu`: nothing running and nothing queued (a woken task is queued at once).
    pub(in crate::linux) fn idle_cpu(&self, cpu: u32) -> bool {
        let c = &self.cpus[cpu as usize];
        c.task.is_none() && c.runq.is_empty()
    }

    /// `update_load_avg` of task `t` to `now`, runnable (`on_rq`) and `running` since its last
    /// update.
    fn pelt_se(&mut self, t: usize, now: Ps, on_rq: bool, running: bool) {
        let a = &mut self.tasks[t].avg;
        a.update(pelt_now(now), on_rq as u64, on_rq as u64, running, NICE_0_LOAD);
    }

    /// `update_cfs_rq_load_avg` of `cpu` to `now`, with `nr` tasks runnable (the current one
    /// included) and a current one if `running`, since its last update.
    fn pelt_cfs(&mut self, cpu: u32, now: Ps, nr: usize, running: bool) {
        self.cpus[cpu as usize].cfs_avg.update_cfs(pelt_now(now), nr as u64, running);
    }

    /// Both averages as `cpu` stands now (before a change to it).
    pub(super) fn pelt_cfs_now(&mut self, cpu: u32, now: Ps) {
        let c = &self.cpus[cpu as usize];
        let (nr, running) = (c.runq.len() + c.task.is_some() as usize, c.task.is_some());
        self.pelt_cfs(cpu, now, nr, running);
    }

    /// A queued (not running) task `t`'s average to `now` (`dequeue_entity` for a migration).
    pub(super) fn pelt_se_queued(&mut self, t: usize, now: Ps) {
        self.pelt_se(t, now, true, false);
    }

    /// `dequeue_entity` / `put_prev_entity` of `cpu`'s current task `t` at `now`.
    pub(in crate::linux) fn pelt_put_prev(&mut self, cpu: u32, t: usize, now: Ps) {
        self.pelt_se(t, now, true, true);
        self.pelt_cfs_now(cpu, now);
    }

    /// `set_next_entity` of task `next`, just taken off `cpu`'s queue with no current task.
    pub(in crate::linux) fn pelt_set_next(&mut self, cpu: u32, next: usize, now: Ps) {
        self.pelt_se(next, now, true, false);
        let nr = self.cpus[cpu as usize].runq.len() + 1;
        self.pelt_cfs(cpu, now, nr, false);
    }

    /// `entity_tick`'s update of `cpu`'s current task.
    pub(in crate::linux) fn pelt_tick(&mut self, cpu: u32, now: Ps) {
        if let Some(t) = self.cpus[cpu as usize].task {
            self.pelt_put_prev(cpu, t, now);
        }
    }

    /// `enqueue_entity`'s update of a sleeping task `t` being woken onto its CPU, with the
    /// attach of a migrated one.
    fn pelt_enqueue(&mut self, t: usize, now: Ps, migrated: bool) {
        let cpu = self.tasks[t].cpu;
        if !migrated {
            self.pelt_se(t, now, false, false);
        }
        self.pelt_cfs_now(cpu, now);
        if migrated {
            let mut se = self.tasks[t].avg;
            self.cpus[cpu as usize].cfs_avg.attach(&mut se);
            self.tasks[t].avg = se;
        }
    }

    /// `wake_up_new_task` -> `post_init_entity_util_avg` -> `attach_entity_cfs_rq`: new task
    /// `t`'s load joins `cpu`'s runqueue average at `start`.
    pub(in crate::linux) fn pelt_attach_new(&mut self, cpu: u32, t: usize, start: Ps) {
        self.pelt_cfs_now(cpu, start);
        let mut se = self.tasks[t].avg;
        self.cpus[cpu as usize].cfs_avg.attach(&mut se);
        self.tasks[t].avg = se;
    }

    /// `record_wakee` by the waker `w` of `p` at `now`.
    fn record_wakee(&mut self, w: usize, p: usize, now: Ps) {
        let jiffies = self.jiffies.at(now);
        let hz = self.jiffies.hz;
        let waker = &mut self.tasks[w];
        if jiffies.wrapping_sub(waker.wakee_flip_decay_ts + hz) as i64 > 0 {
            waker.wakee_flips >>= 1;
            waker.wakee_flip_decay_ts = jiffies;
        }
        if waker.last_wakee != Some(p) {
            waker.last_wakee = Some(p);
            waker.wakee_flips += 1;
        }
    }

    /// `wake_wide`: whether waker `w` and wakee `p` flip too much for an affine wake-up.
    fn wake_wide(&self, w: usize, p: usize, llc_size: u64) -> bool {
        let (a, b) = (self.tasks[w].wakee_flips, self.tasks[p].wakee_flips);
        let (master, slave) = (a.max(b), a.min(b));
        !(slave < llc_size || master < slave * llc_size)
    }

    /// `wake_affine_idle`: `Some(cpu)` to decide, `None` to leave it to the weights.
    fn wake_affine_idle(&self, this: u32, prev: u32, sync: bool) -> Option<u32> {
        if self.idle_cpu(this) && self.share_cache(this, prev) {
            return Some(if self.idle_cpu(prev) { prev } else { this });
        }
        if sync {
            let c = &self.cpus[this as usize];
            if c.runq.len() + c.task.is_some() as usize == 1 {
                return Some(this);
            }
        }
        self.idle_cpu(prev).then_some(prev)
    }

    /// `wake_affine_weight`: whether `this` (the waker's CPU, the waker `w` running there) is
    /// the lighter place for `p` than `prev`, by the stored `load_avg`s (not decayed to now:
    /// the fast path does not sync them). All capacities are equal.
    fn wake_affine_weight(&self, w: Option<usize>, p: usize, this: u32, prev: u32, sync: bool) -> bool {
        let mut this_eff = self.cpus[this as usize].cfs_avg.load_avg as i64;
        if sync {
            let current = w.map_or(0, |w| self.tasks[w].avg.load_avg) as i64;
            if current > this_eff {
                return true;
            }
            this_eff -= current;
        }
        let task_load = self.tasks[p].avg.load_avg as i64;
        this_eff = (this_eff + task_load) * 100;
        let mut prev_eff = self.cpus[prev as usize].cfs_avg.load_avg as i64 - task_load;
        prev_eff *= 100 + (IMBALANCE_PCT as i64 - 100) / 2;
        if sync {
            prev_eff += 1;
        }
        this_eff < prev_eff
    }

    /// `select_idle_sibling(p, prev, target)`.
    fn select_idle_sibling(&mut self, p: usize, prev: u32, target: u32) -> u32 {
        if self.idle_cpu(target) {
            return target;
        }
        if prev != target && self.share_cache(prev, target) && self.idle_cpu(prev) {
            return prev;
        }
        let recent = std::mem::replace(&mut self.tasks[p].recent_used_cpu, prev);
        if recent != prev && recent != target && self.share_cache(recent, target) && self.idle_cpu(recent) {
            return recent;
        }
        // select_idle_cpu: the LLC from target + 1, wrapping.
        let n = self.nr_cpus();
        (1..n)
            .map(|i| (target + i) % n)
            .find(|&c| self.share_cache(c, target) && self.idle_cpu(c))
            .unwrap_or(target)
    }

    /// `select_task_rq_fair` for the wake-up of `p` by whatever runs on `ctx.cpu` at `now`
    /// (`sync`: the waker is about to sleep or yield, `WF_SYNC`, as pipes' and sockets'
    /// `wake_up_interruptible_sync_poll` say). Returns the CPU.
    fn select_task_rq_fair(&mut self, ctx: &Ctx, p: usize, sync: bool, now: Ps) -> u32 {
        let this = ctx.cpu;
        let prev = self.tasks[p].cpu;
        let waker = self.cpus[this as usize].task;
        if let Some(w) = waker {
            self.record_wakee(w, p, now);
        }
        let llc_size = (0..self.nr_cpus()).filter(|&c| self.share_cache(c, this)).count() as u64;
        let want_affine = waker.is_none_or(|w| !self.wake_wide(w, p, llc_size));
        let mut target = prev;
        // Every domain of `this` has SD_WAKE_AFFINE and the top one spans `prev`.
        if want_affine && this != prev {
            let affine = match self.wake_affine_idle(this, prev, sync) {
                Some(c) => c == this,
                None => self.wake_affine_weight(waker, p, this, prev, sync),
            };
            if affine {
                target = this;
            }
        }
        self.select_idle_sibling(p, prev, target)
    }

    /// At `try_to_wake_up` of task `t` from `ctx.cpu` at `now`: its CPU, moved there if it is
    /// not bound and the placement picks another (`set_task_cpu`), and the `enqueue_entity`
    /// PELT update. Returns the CPU.
    pub(in crate::linux) fn ttwu_place(&mut self, ctx: &Ctx, t: usize, sync: bool, now: Ps) -> u32 {
        let prev = self.tasks[t].cpu;
        let cpu = if self.tasks[t].bound { prev } else { self.select_task_rq_fair(ctx, t, sync, now) };
        if cpu != prev {
            self.migrate_task(t, prev, cpu, now);
        }
        self.pelt_enqueue(t, now, cpu != prev);
        cpu
    }

    /// `set_task_cpu` of sleeping task `t` from `prev` to `cpu` (`migrate_task_rq_fair`).
    fn migrate_task(&mut self, t: usize, prev: u32, cpu: u32, now: Ps) {
        self.counters.sched.migrations += 1;
        // sync_entity_load_avg to the old runqueue's clock, then remove_entity_load_avg.
        let last = self.cpus[prev as usize].cfs_avg.last_update_time;
        self.tasks[t].avg.update(last, 0, 0, false, NICE_0_LOAD);
        let (load, util) = (self.tasks[t].avg.load_avg, self.tasks[t].avg.util_avg);
        let old = &mut self.cpus[prev as usize].cfs_avg;
        old.removed_load += load;
        old.removed_util += util;
        if !self.config.sched.eevdf {
            // v5.18: vruntime -= old min_vruntime at the move, += the new one at the enqueue
            // (the model's minimum is the CPU's current and queued tasks'; an empty CPU's is
            // taken as the task's own).
            let v = self.tasks[t].vruntime;
            let old_min = self.cfs_min_vruntime(prev, now).unwrap_or(v);
            let new_min = self.cfs_min_vruntime(cpu, now).unwrap_or(old_min);
            self.tasks[t].vruntime = Ps((v.0 + new_min.0).saturating_sub(old_min.0));
        }
        self.tasks[t].cpu = cpu;
    }

    /// The least vruntime of `cpu`'s current and queued tasks at `now` (CFS).
    pub(super) fn cfs_min_vruntime(&self, cpu: u32, now: Ps) -> Option<Ps> {
        let c = &self.cpus[cpu as usize];
        let curr = c.task.map(|q| self.tasks[q].vruntime + now.saturating_sub(self.tasks[q].on_cpu_since));
        c.runq.iter().map(|&q| self.tasks[q].vruntime).chain(curr).min()
    }
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
