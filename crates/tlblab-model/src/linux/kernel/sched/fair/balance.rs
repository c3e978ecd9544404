//! The periodic load balancer of a busy CPU (kernel/sched/fair.c `sched_balance_trigger` ->
//! `sched_balance_domains` -> `sched_balance_rq`, v6.18; `load_balance` in v5.18, the same
//! rules; docs/references/linux-6x.md#wake-placement), as far as unbound tasks need it: one
//! domain, the LLC, its groups single CPUs. At a tick whose jiffy has reached the domain's next
//! balance (`balance_interval` = the span's CPU count in ms, x `busy_factor` 16 on a busy CPU),
//! the CPU compares itself with the busiest CPU of its LLC and pulls queued tasks from it.
//!
//! - `update_sd_lb_stats`/`group_classify`: a CPU's load is its runqueue `load_avg`; it is
//!   overloaded with more than one runnable task and its utilisation or runnable average above
//!   capacity x 100 / imbalance_pct, has spare with no task or both below, else fully busy.
//! - `find_busiest_group`: nothing when the local CPU's class is above the busiest's, when a busy
//!   CPU would balance a busiest that is not overloaded, or (local overloaded) when the local
//!   load is at or above the busiest's or the mean, or the busiest is within imbalance_pct of it.
//! - `calculate_imbalance`: local with spare: half the difference in runnable tasks
//!   (`migrate_task`, v5.18's single-CPU-group rule); else (`migrate_load`) the smaller of the
//!   busiest's excess over the mean and the local deficit, unless the local CPU is already at or
//!   above either.
//! - `detach_tasks`: the busiest CPU's queued tasks, oldest queued first (the model's stand-in
//!   for `cfs_tasks`' tail), at most `sysctl_sched_nr_migrate` (32); a task that ran within
//!   `sysctl_sched_migration_cost` (0.5 ms) is cache hot and stays unless balancing failed more
//!   than `cache_nice_tries` (1) times; for `migrate_load` a task heavier than the imbalance
//!   (shifted right by the failures) or lighter than 16 with no failure (`LB_MIN`) stays.
//! - `attach_tasks`: the task leaves with its lag (EEVDF) or its distance to the minimum vruntime
//!   (CFS), its load moves between the runqueues' averages, and the wake-up preemption check
//!   runs (`check_preempt_curr`).
//!   `nr_balance_failed` counts balances that found an imbalance and moved nothing.
//!
//! Left out: idle and newly-idle balancing (an idle CPU here gets no tick), active balancing
//! (the running task is never pushed), the SMT and NUMA levels, `should_we_balance`'s idle-CPU
//! preference (single-CPU groups: each CPU balances for itself), the balancer's own CPU time.

use crate::linux::kernel::sched::pelt::NICE_0_LOAD;
use crate::linux::Kernel;
use crate::time::Ps;

/// `sd->busy_factor`.
const BUSY_FACTOR: u64 = 16;
/// `sysctl_sched_nr_migrate`.
const NR_MIGRATE: usize = 32;
/// `sysctl_sched_migration_cost`.
const MIGRATION_COST: Ps = Ps(500_000_000);
/// `sd->cache_nice_tries` of an LLC domain.
const CACHE_NICE_TRIES: u32 = 1;
/// `SCHED_CAPACITY_SCALE`: every CPU's capacity.
const CAPACITY: u64 = 1024;

/// Per CPU: its LLC domain's balancing state (`struct sched_domain`'s `last_balance`,
/// `nr_balance_failed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Domain {
    /// Jiffies of the last balance; `None` before the first tick.
    pub last_balance: Option<u64>,
    pub nr_balance_failed: u32,
}

/// `group_type`, in the kernel's order (the higher, the busier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

#[derive(Debug, Clone, Copy)]
struct Stats {
    cpu: u32,
    load: u64,
    nr: u64,
    kind: GroupType,
}

impl Kernel {
    fn lb_stats(&self, cpu: u32) -> Stats {
        let c = &self.cpus[cpu as usize];
        let nr = (c.runq.len() + c.task.is_some() as usize) as u64;
        let a = &c.cfs_avg;
        let pct = super::select::IMBALANCE_PCT;
        let kind = if nr > 1 && (a.util_avg * pct > CAPACITY * 100 || a.runnable_avg * 100 > CAPACITY * pct) {
            GroupType::Overloaded
        } else if nr < 1 || (CAPACITY * 100 > a.util_avg * pct && CAPACITY * pct > a.runnable_avg * 100) {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        };
        Stats { cpu, load: a.load_avg, nr, kind }
    }

    /// At `cpu`'s tick at `now` (it runs a task): its LLC domain's periodic balance if due.
    pub(in crate::linux) fn sched_balance_tick(&mut self, cpu: u32, now: Ps) {
        if self.tasks.iter().all(|t| t.bound) {
            return;
        }
        let jiffies = self.jiffies.at(now);
        let weight = (0..self.nr_cpus()).filter(|&c| self.share_cache(c, cpu)).count() as u64;
        // get_sd_balance_interval: span-weight ms, x busy_factor when busy, in jiffies.
        let ms = weight * BUSY_FACTOR;
        let interval = (ms * self.jiffies.hz).div_ceil(1000).max(1);
        let sd = &mut self.cpus[cpu as usize].sd;
        match sd.last_balance {
            None => {
                sd.last_balance = Some(jiffies);
                return;
            }
            Some(last) if jiffies < last + interval => return,
            Some(_) => sd.last_balance = Some(jiffies),
        }
        let span: Vec<u32> = (0..self.nr_cpus()).filter(|&c| self.share_cache(c, cpu)).collect();
        let moved = self.sched_balance_rq(cpu, &span, now);
        let sd = &mut self.cpus[cpu as usize].sd;
        // load_balance: a failed pull counts; a pull, or a balanced domain (`out_balanced`),
        // clears the count.
        match moved {
            Some(0) => sd.nr_balance_failed += 1,
            _ => sd.nr_balance_failed = 0,
        }
    }

    /// `sched_balance_rq` for busy `cpu` over `span`: `None` when balanced, else the tasks it
    /// pulled.
    fn sched_balance_rq(&mut self, cpu: u32, span: &[u32], now: Ps) -> Option<u32> {
        let local = self.lb_stats(cpu);
        let all: Vec<Stats> = span.iter().map(|&c| self.lb_stats(c)).collect();
        // update_sd_pick_busiest: the busiest class, then the highest load.
        let busiest = all
            .iter()
            .filter(|s| s.cpu != cpu && s.nr > 0)
            .max_by_key(|s| (s.kind, s.load, u32::MAX - s.cpu))?;
        let total_load: u64 = all.iter().map(|s| s.load).sum();
        let avg = total_load / all.len() as u64;
        if local.kind > busiest.kind {
            return None;
        }
        if local.kind == GroupType::Overloaded
            && (local.load >= busiest.load
                || local.load >= avg
                || 100 * busiest.load <= super::select::IMBALANCE_PCT * local.load)
        {
            return None;
        }
        if busiest.kind != GroupType::Overloaded {
            // A busy CPU leaves a busiest that is not overloaded alone.
            return None;
        }
        let (by_load, mut imbalance) = if local.kind == GroupType::HasSpare {
            (false, (busiest.nr.saturating_sub(local.nr) >> 1) as i64)
        } else {
            if local.load >= busiest.load || local.load >= avg {
                return None;
            }
            (true, (busiest.load - avg).min(avg - local.load) as i64)
        };
        if imbalance <= 0 {
            return None;
        }
        let failed = self.cpus[cpu as usize].sd.nr_balance_failed;
        let src = busiest.cpu;
        let queued: Vec<usize> = self.cpus[src as usize].runq.iter().copied().take(NR_MIGRATE).collect();
        let mut moved = 0;
        for t in queued {
            // v6.18: a delayed sleeper is off cfs_tasks, out of the balancer's reach.
            if self.tasks[t].bound || self.tasks[t].delayed {
                continue;
            }
            let hot = now.saturating_sub(self.tasks[t].last_ran) < MIGRATION_COST;
            if hot && failed <= CACHE_NICE_TRIES {
                continue;
            }
            if by_load {
                let load = self.tasks[t].avg.load_avg.max(1);
                if (load < 16 && failed == 0) || (load >> failed.min(63)) as i64 > imbalance {
                    continue;
                }
                imbalance -= load as i64;
            } else {
                imbalance -= 1;
            }
            self.move_queued_task(t, src, cpu, now);
            moved += 1;
            if imbalance <= 0 {
                break;
            }
        }
        Some(moved)
    }

    /// `detach_task` + `attach_task` of queued task `t` from `src` to `dst` at `now`.
    fn move_queued_task(&mut self, t: usize, src: u32, dst: u32, now: Ps) {
        self.counters.sched.migrations += 1;
        self.counters.sched.balance_migrations += 1;
        // dequeue_entity: the averages to now, the task's load detached from src.
        self.pelt_cfs_now(src, now);
        self.pelt_se_queued(t, now);
        let se = self.tasks[t].avg;
        let a = &mut self.cpus[src as usize].cfs_avg;
        a.load_avg = a.load_avg.saturating_sub(se.load_avg);
        a.load_sum = a.load_sum.saturating_sub(se.load_sum * NICE_0_LOAD);
        a.util_avg = a.util_avg.saturating_sub(se.util_avg);
        a.util_sum = a.util_sum.saturating_sub(se.util_sum);
        if self.config.sched.eevdf {
            // update_entity_lag against src's V (its current task included).
            let (sum, n) = self.vruntime_sum(src, now);
            let limit = (2 * self.base_slice().0).max(self.jiffies.period().0) as i128;
            let v = self.tasks[t].vruntime.0 as i128;
            self.tasks[t].vlag = ((sum / n) as i128 - v).clamp(-limit, limit) as i64;
        }
        // CFS: the distance to src's minimum, taken with the task still queued (v5.18
        // dequeue_entity subtracts min_vruntime before updating it).
        let old_min = self.cfs_min_vruntime(src, now);
        self.cpus[src as usize].runq.retain(|&x| x != t);
        if !self.config.sched.eevdf {
            let v = self.tasks[t].vruntime;
            let old_min = old_min.unwrap_or(v);
            let new_min = self.cfs_min_vruntime(dst, now).unwrap_or(old_min);
            self.tasks[t].vruntime = Ps((v.0 + new_min.0).saturating_sub(old_min.0));
        }
        self.tasks[t].cpu = dst;
        // enqueue_entity on dst: place, attach, queue, and check_preempt_curr.
        if self.config.sched.eevdf {
            self.place_entity(t, now);
        }
        self.pelt_cfs_now(dst, now);
        let mut se = self.tasks[t].avg;
        self.cpus[dst as usize].cfs_avg.attach(&mut se);
        self.tasks[t].avg = se;
        self.cpus[dst as usize].runq.push_back(t);
        if self.config.sched.eevdf {
            self.wakeup_preempt(dst, t, now);
        } else {
            // No sleeper credit: not a wake-up.
            self.check_preempt_wakeup_cfs(dst, t, now);
        }
    }
}

#[cfg(test)]
#[path = "balance_tests.rs"]
mod tests;
