//! The scheduler, as far as the workloads need it (kernel/sched/core.c and fair.c, v5.18): tasks
//! bound to one CPU each, CFS time slices among a CPU's runnable tasks, `__schedule` with its
//! `switch_mm`, lazy TLB mode for an idle CPU, and wake-ups with CFS's wake-up preemption
//! (`place_entity` and `check_preempt_wakeup`, the same rules in v4.9 and v5.18).
//!
//! Virtual runtime is each task's time on its CPU (every task has nice 0); the next task is the
//! runnable one with the least (`pick_next_entity`'s leftmost; ties to the longest queued).
//! Departures: the reschedule IPI to a busy remote CPU is not sent: that CPU sees the flag at its
//! next operation boundary; `wakeup_preempt_entity`'s buddy hints (`next`, `last`, `skip`) and
//! load balancing are not modelled.

use std::collections::VecDeque;

use crate::attribution::Bucket;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::MmId;
use crate::linux::syscalls::NR_REGS;
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// The scheduler, counted.
    Counters {
        context_switches,
        /// A user task's switches out of its CPU, as `getrusage` counts them (`nvcsw`, `nivcsw`):
        /// voluntary when it blocks, involuntary when it is preempted while runnable. Kernel
        /// threads (kswapd) and the idle task are not counted.
        voluntary_switches,
        involuntary_switches,
        /// Wake-ups sent to an idle CPU as a function-call IPI (`[sched] wakelist_ipi`, v6.0+).
        wakelist_ipis,
        /// Wake-ups by where the woken task is queued against the waker's CPU, as v6.18's
        /// `ttwu_stat` counts them into schedstat's `nr_wakeups_local` and `nr_wakeups_remote`
        /// (a still-queued delayed sleeper's on its own CPU;
        /// docs/references/linux-6x.md#wake-up-statistics).
        wakeups_local,
        wakeups_remote,
        /// Wake-ups whose wakee is to preempt the running task (`check_preempt_wakeup` /
        /// `wakeup_preempt` set `need_resched`), the wake-up preemptions a trace of
        /// `sched_wakeup` and `sched_switch` shows as a runnable task switched out for the wakee.
        wakeup_preempts,
        /// Wake-ups that moved a task to another CPU (`set_task_cpu`: `nr_migrations`).
        migrations,
        /// Of those, tasks the periodic load balancer pulled (linux/kernel/sched/fair/balance.rs).
        balance_migrations,
        /// Picoseconds of `__schedule` into the idle task. Linux charges a sleeper's runtime up
        /// to its dequeue (`update_curr` in `dequeue_task_fair`); the switch that follows is the
        /// idle task's, outside any thread's CPU time (what `validate` compares busy CPUs with).
        idle_switch_ps,
    }
}

/// A task's kernel side (`task_struct`): its mm, registers, pages gathered for freeing, and the
/// continuations it was in when it left its CPU.
pub struct Task {
    /// `task->mm`: none for a kernel thread (kswapd), which runs on whatever mm its CPU has
    /// loaded, in lazy TLB mode.
    pub mm: Option<MmId>,
    pub regs: [u64; NR_REGS],
    pub gathered: Vec<u64>,
    /// The task's CPU (`task_cpu`): where it runs, queues, or last ran if asleep.
    pub cpu: u32,
    /// Bound to `cpu` (`nr_cpus_allowed == 1`, as will-it-scale and ebizzy pin theirs): a
    /// wake-up keeps it there. Unbound tasks are placed at each wake-up
    /// (linux/kernel/sched/fair/select.rs).
    pub bound: bool,
    /// `SCHED_BATCH` (`task->policy`): its wake-ups never preempt the running task
    /// (`check_preempt_wakeup[_fair]`: "their preemption is driven by the tick"; CFS and EEVDF
    /// alike, v4.x to v6.18; docs/references/linux-6x.md#sched-batch).
    pub batch: bool,
    /// PELT's `se.avg` (linux/kernel/sched/pelt.rs).
    pub avg: super::pelt::SchedAvg,
    /// `wakee_flips`, `wakee_flip_decay_ts` (jiffies), `last_wakee` and `recent_used_cpu`.
    pub wakee_flips: u64,
    pub wakee_flip_decay_ts: u64,
    pub last_wakee: Option<usize>,
    pub recent_used_cpu: u32,
    /// Steps of the system call or fault the task was in when it left the CPU.
    pub saved: VecDeque<Continuation>,
    /// When it last got its CPU, for its time slice.
    pub on_cpu_since: Ps,
    /// When it last left its CPU (`se.exec_start` as the balancer's `task_hot` reads it).
    pub last_ran: Ps,
    /// The fair class's `se.vruntime` up to `on_cpu_since` (nice 0: the time it ran, moved by
    /// wake-up placement).
    pub vruntime: Ps,
    /// EEVDF (linux/kernel/sched/fair.rs): `se.deadline`, the lag it slept with (`se.vlag`, in
    /// picoseconds) and the end of its protected slice (`se.vprot`). Unused under CFS.
    pub deadline: Ps,
    pub vlag: i64,
    pub vprot: Ps,
    /// `se.sched_delayed` (v6.12+, linux/kernel/sched/fair/delay.rs): asleep but still queued.
    pub delayed: bool,
}

/// What the scheduler costs: `__schedule` between two tasks (measured on the host by `probe`;
/// `None` where the profile has no figure, and then no CPU may be shared).
#[derive(Debug, Clone)]
pub struct Costs {
    pub context_switch: Option<Ps>,
    /// `try_to_wake_up` on the waker (kernel.ttwu_cycles; zero where the profile has none).
    pub ttwu: Ps,
    /// The same onto the waker's own CPU, no interrupt (kernel.ttwu_local_cycles; `None`: as
    /// `ttwu`).
    pub ttwu_local: Option<Ps>,
    /// One rwsem section under `wait_lock` (kernel.rwsem_section_cycles; zero where absent).
    pub rwsem_section: Ps,
    /// An idle CPU's way out of idle before it takes a wake-up's interrupt (kernel.idle_exit_ns;
    /// zero where absent).
    pub idle_exit: Ps,
}

impl crate::linux::boot::FromProfile for Costs {
    fn from_profile(p: &crate::profile::MachineProfile) -> Costs {
        let mhz = p.clock_mhz();
        let cycles = |c: &Option<crate::profile::Sourced>| {
            c.as_ref().map_or(Ps::ZERO, |c| Ps::from_cycles(c.value, mhz))
        };
        Costs {
            context_switch: p.kernel.context_switch_ns.as_ref().map(|c| Ps::from_ns(c.value)),
            ttwu: cycles(&p.kernel.ttwu_cycles),
            ttwu_local: p.kernel.ttwu_local_cycles.as_ref().map(|c| Ps::from_cycles(c.value, mhz)),
            rwsem_section: cycles(&p.kernel.rwsem_section_cycles),
            idle_exit: p.kernel.idle_exit_ns.as_ref().map_or(Ps::ZERO, |c| Ps::from_ns(c.value)),
        }
    }
}

impl Task {
    /// The mm of a user task (every path that touches user memory runs in one).
    pub fn user_mm(&self) -> MmId {
        self.mm.expect("a kernel thread has no user mm")
    }
}

impl Kernel {
    /// Binds a new task in `mm` (none: a kernel thread) to `cpu`, starting at `start`. Returns
    /// whether it runs at once (else it waits in the CPU's runqueue for a time slice).
    pub fn add_task(&mut self, mm: Option<MmId>, cpu: u32, start: Ps) -> bool {
        assert!(cpu < self.nr_cpus(), "cpu {cpu} does not exist");
        let t = self.tasks.len();
        let (vruntime, slice) = if self.config.sched.eevdf {
            (super::fair::ORIGIN, self.base_slice())
        } else {
            (Ps::ZERO, Ps::ZERO)
        };
        self.tasks.push(Task {
            mm,
            regs: [0; NR_REGS],
            gathered: Vec::new(),
            cpu,
            bound: true,
            batch: false,
            // init_entity_runnable_average: a new task starts at full load.
            avg: super::pelt::SchedAvg { load_avg: super::pelt::NICE_0_LOAD, ..Default::default() },
            wakee_flips: 0,
            wakee_flip_decay_ts: self.jiffies.at(start),
            last_wakee: None,
            recent_used_cpu: cpu,
            saved: VecDeque::new(),
            on_cpu_since: start,
            last_ran: start,
            vruntime,
            deadline: vruntime + slice,
            vlag: 0,
            vprot: vruntime + slice,
            delayed: false,
        });
        self.pelt_attach_new(cpu, t, start);
        let c = &mut self.cpus[cpu as usize];
        if c.task.is_some() {
            // A second task on a busy CPU waits for a time slice.
            assert!(
                self.costs.sched.context_switch.is_some(),
                "tasks sharing a CPU need kernel.context_switch_ns in the machine profile"
            );
            c.runq.push_back(t);
            return false;
        }
        c.task = Some(t);
        self.enter_mm(cpu, mm, start);
        true
    }

    /// What `context_switch` does to the TLB for a task of `mm` (v4.2 kernel/sched/core.c, the
    /// same through v5.18): a user task's `switch_mm`, which returns whether it flushed; a kernel
    /// thread (`mm` none) borrows the loaded mm (`next->active_mm = oldmm`) and
    /// `enter_lazy_tlb`: the CPU stays in that mm's `mm_cpumask`, lazy (x86: `TLBSTATE_LAZY` up
    /// to v4.13, `is_lazy` from v4.14), so flush IPIs for it still reach the CPU, which leaves
    /// the mm at the first one `flush_tlb_func` handles (or at a flush of that mm the thread
    /// itself makes, `flush_tlb_page`'s `leave_mm` for `current->mm == NULL`).
    /// Returns whether it flushed and what the `mm_cpumask` line cost at `at` (with
    /// `cpumask_line`).
    fn enter_mm(&mut self, cpu: u32, mm: Option<MmId>, at: Ps) -> (bool, Ps) {
        if let Some(mm) = mm {
            return self.switch_mm(cpu, mm, at);
        }
        let c = &mut self.cpus[cpu as usize];
        if c.x86.st.loaded_mm.is_some() {
            c.x86.st.is_lazy = true;
            self.arch.x86.lazy.set(cpu);
        }
        (false, Ps::ZERO)
    }

    /// `sysctl_sched_*` scaling (`SCHED_TUNABLESCALING_LOG`): `1 + ilog2(min(cpus, 8))`.
    pub(in crate::linux) fn sched_factor(&self) -> u64 {
        1 + (self.nr_cpus().min(8) as u64).ilog2() as u64
    }

    /// CFS's slice for `nr` equal-weight runnable tasks (kernel/sched/fair.c, v5.18):
    /// `max(sched_latency / nr, min_granularity)`, both scaled by `1 + ilog2(min(cpus, 8))`.
    fn time_slice(&self, nr: usize) -> Ps {
        let latency = Ps::US * 6_000 * self.sched_factor();
        Ps(latency.0 / nr.max(1) as u64).max(self.min_granularity())
    }

    /// `sysctl_sched_min_granularity`, scaled (v5.18: 0.75 ms before scaling).
    fn min_granularity(&self) -> Ps {
        Ps::US * 750 * self.sched_factor()
    }

    /// Preemption happens on the way back to user space, only between operations: once task
    /// `t`'s slice is over and another task is runnable, the next one runs. Returns the cost.
    pub(in crate::linux) fn preempt(&mut self, ctx: &mut Ctx, t: usize) -> Option<Ps> {
        let c = &self.cpus[ctx.cpu as usize];
        if c.runq.is_empty() {
            return None;
        }
        if self.config.sched.eevdf {
            return self.eevdf_resched(ctx.cpu, t, ctx.now).then(|| self.deschedule(ctx, true, ctx.now));
        }
        // A woken kswapd preempts at once (CFS wake-up preemption: a thread that slept has the
        // smallest vruntime; check_preempt_wakeup), but only while its vruntime is below the
        // current task's: one that ran more than its CPU's task lately waits for the slice, as
        // pick_next_entity would pick the current task again (preempting then only switched
        // to it again, at every operation boundary).
        let curr_v = self.tasks[t].vruntime + ctx.now.saturating_sub(self.tasks[t].on_cpu_since);
        let kthread =
            c.runq.front().is_some_and(|&n| self.mm.vmscan.preempts(n) && self.tasks[n].vruntime < curr_v);
        if kthread || c.need_resched || self.slice_over(ctx.now, t, c.runq.len() + 1) {
            self.cpus[ctx.cpu as usize].need_resched = false;
            return Some(self.deschedule(ctx, true, ctx.now));
        }
        None
    }

    /// Whether task `t`'s time slice is over and another task waits for the CPU (what
    /// `cond_resched()` in a long kernel loop tests: kswapd's reclaim loop).
    pub(in crate::linux) fn need_resched(&self, ctx: &Ctx, t: usize) -> bool {
        let c = &self.cpus[ctx.cpu as usize];
        if c.runq.is_empty() {
            return false;
        }
        if self.config.sched.eevdf {
            // update_curr's test, then the pick schedule() would make.
            let v = self.tasks[t].vruntime + ctx.now.saturating_sub(self.tasks[t].on_cpu_since);
            let over = c.need_resched || v >= self.tasks[t].deadline || v >= self.tasks[t].vprot;
            return over && self.pick_eevdf_live(ctx.cpu, ctx.now) != Some(t);
        }
        self.slice_over(ctx.now, t, c.runq.len() + 1)
    }

    /// Whether task `t`, on its CPU since `on_cpu_since`, has used up its slice at `now` with
    /// `nr` tasks runnable there. A slice is never below the minimum granularity, so before that
    /// the answer needs no division (every operation boundary asks).
    fn slice_over(&self, now: Ps, t: usize, nr: usize) -> bool {
        let since = self.tasks[t].on_cpu_since;
        now >= since + self.min_granularity() && now >= since + self.time_slice(nr)
    }

    /// `__schedule()` on this CPU at `now` to `next`, which was runnable: `switch_mm`, restore the steps it
    /// was in. The previous task must already be off the CPU. Returns the cost.
    pub(in crate::linux) fn switch_to(&mut self, ctx: &mut Ctx, next: usize, now: Ps) -> Ps {
        let cpu = ctx.cpu;
        debug_assert!(self.cpus[cpu as usize].task.is_none() && ctx.in_user());
        self.pelt_set_next(cpu, next, now);
        let c = &mut self.cpus[cpu as usize];
        c.task = Some(next);
        ctx.swap_steps(&mut self.tasks[next].saved);
        let mut d = self.context_switch(ctx);
        let (flushed, line) = self.enter_mm(cpu, self.tasks[next].mm, now + d);
        if line > Ps::ZERO {
            d += line;
            ctx.charge(Bucket::Sched, line);
        }
        if flushed {
            self.counters.tlbflush.switch_flushes += 1;
            self.counters.tlbflush.full_flushes += 1;
            d += self.costs.tlbflush.full_flush;
            ctx.charge(Bucket::Sched, self.costs.tlbflush.full_flush);
        }
        // set_next_entity's exec_start is the rq clock __schedule read before the pick (v2.6.23
        // through v6.18): the switch itself runs on the next task's runtime and vruntime
        // (docs/references/linux-6x.md#eevdf).
        self.tasks[next].on_cpu_since = now;
        // set_next_entity: EEVDF protects the slice it was picked with (RUN_TO_PARITY).
        self.tasks[next].vprot = self.tasks[next].deadline;
        d
    }

    /// `__schedule()` itself: counted and charged; the TLB work is the caller's.
    fn context_switch(&mut self, ctx: &mut Ctx) -> Ps {
        self.counters.sched.context_switches += 1;
        let d = self.costs.sched.context_switch.expect("a context switch needs kernel.context_switch_ns");
        ctx.charge(Bucket::Sched, d);
        d + self.kernel_path(ctx, Path::ContextSwitch)
    }

    /// Takes the current task off this CPU (its pending steps go with it) and runs the next
    /// runnable one, or idles in lazy TLB mode (`enter_lazy_tlb`: the mm stays loaded, remote
    /// flushers skip this CPU). Returns the cost.
    pub fn deschedule(&mut self, ctx: &mut Ctx, requeue: bool, now: Ps) -> Ps {
        let cpu = ctx.cpu;
        let t = self.cpus[cpu as usize].task.expect("a running task");
        if self.tasks[t].mm.is_some() {
            let s = &mut self.counters.sched;
            *if requeue { &mut s.involuntary_switches } else { &mut s.voluntary_switches } += 1;
        }
        self.pelt_put_prev(cpu, t, now);
        let c = &mut self.cpus[cpu as usize];
        c.task = None;
        c.need_resched = false;
        ctx.swap_steps(&mut self.tasks[t].saved);
        let task = &mut self.tasks[t];
        task.vruntime += now.saturating_sub(task.on_cpu_since);
        task.last_ran = now;
        if self.config.sched.eevdf {
            let v = self.tasks[t].vruntime;
            if v >= self.tasks[t].deadline {
                self.tasks[t].deadline = v + self.base_slice();
            }
            // v6.12+: an ineligible sleeper stays queued (fair/delay.rs), its lag taken later.
            if !requeue {
                let with_t = self.sum_with(cpu, t);
                if !self.delay_dequeue(cpu, t, with_t) {
                    self.tasks[t].vlag = self.entity_lag(with_t, t);
                }
            }
        }
        let c = &mut self.cpus[cpu as usize];
        if requeue {
            c.runq.push_back(t);
        }
        match self.pick_next(cpu, now) {
            Some(next) => self.switch_to(ctx, next, now),
            None => {
                // The idle task is a kernel thread too.
                self.enter_mm(cpu, None, now);
                let d = self.context_switch(ctx);
                self.counters.sched.idle_switch_ps += d.0;
                d
            }
        }
    }

    /// `try_to_wake_up` of task `t` from this CPU at `at`, its cost on the waker charged
    /// (`kernel.ttwu_cycles`, docs/references/linux-mm.md#wake-ups); the task is woken when the
    /// call ends. Returns the waker's time.
    pub(in crate::linux) fn try_to_wake_up(&mut self, ctx: &mut Ctx, t: usize, at: Ps) -> Ps {
        self.try_to_wake_up_as(ctx, t, at, false)
    }

    /// As [`Kernel::try_to_wake_up`], `sync` for `WF_SYNC` (a `wake_up_*_sync` caller: pipes
    /// and AF_UNIX sockets), which the placement of an unbound task reads.
    pub(in crate::linux) fn try_to_wake_up_as(&mut self, ctx: &mut Ctx, t: usize, at: Ps, sync: bool) -> Ps {
        self.wake_from(ctx, t, at, sync, true)
    }

    /// The wake-up of task `t` (which now holds what it slept for), as of `now`: an idle CPU is kicked
    /// (a reschedule IPI's delivery); on a busy one the woken task is placed (`place_entity`)
    /// and preempts the current task if `check_preempt_wakeup` says so, else it runs after the
    /// current task's slice.
    pub(in crate::linux) fn wake(&mut self, ctx: &mut Ctx, t: usize, now: Ps) {
        self.wake_as(ctx, t, now, false);
    }

    /// [`Kernel::wake`], `sync` as `WF_SYNC`; an unbound task is first placed
    /// (`select_task_rq`, linux/kernel/sched/fair/select.rs).
    pub(in crate::linux) fn wake_as(&mut self, ctx: &mut Ctx, t: usize, now: Ps, sync: bool) {
        self.wake_from(ctx, t, now, sync, false);
    }

    /// The waker's cost of a wake-up onto `cpu`: on its own CPU no interrupt goes out
    /// (`kernel.ttwu_local_cycles` where the profile has it), elsewhere the measured wake-up
    /// across CPUs, its interrupt included (`kernel.ttwu_cycles`).
    fn ttwu_cost(&self, ctx: &Ctx, cpu: u32) -> Ps {
        let s = &self.costs.sched;
        match s.ttwu_local {
            Some(local) if cpu == ctx.cpu => local,
            _ => s.ttwu,
        }
    }

    /// A wake-up from `at`: placed first, as `select_task_rq` runs at the start of
    /// `try_to_wake_up`; the enqueue once the waker's cost (`charged`) is spent. Returns it.
    fn wake_from(&mut self, ctx: &mut Ctx, t: usize, at: Ps, sync: bool, charged: bool) -> Ps {
        if self.tasks[t].delayed {
            // v6.12+ ttwu_runnable: still queued where it slept (fair/delay.rs).
            let cpu = self.tasks[t].cpu;
            let d = if charged { self.ttwu_cost(ctx, cpu) } else { Ps::ZERO };
            ctx.charge(Bucket::Sched, d);
            self.count_wakeup(ctx.cpu, cpu);
            self.requeue_delayed(t, at + d);
            return d;
        }
        let cpu = self.ttwu_place(ctx, t, sync, at);
        let d = if charged { self.ttwu_cost(ctx, cpu) } else { Ps::ZERO };
        ctx.charge(Bucket::Sched, d);
        self.enqueue_woken(ctx, t, cpu, at + d);
        d
    }

    /// The woken task `t` queued on `cpu` at `now`.
    fn enqueue_woken(&mut self, ctx: &mut Ctx, t: usize, cpu: u32, now: Ps) {
        self.count_wakeup(ctx.cpu, cpu);
        if self.config.sched.eevdf {
            self.place_entity(t, now);
        }
        let Some(curr) = self.cpus[cpu as usize].task else {
            self.cpus[cpu as usize].runq.push_back(t);
            // The interrupt reaches the CPU once it is out of idle (a halted vCPU's exit on a
            // guest, a C-state's exit latency on bare metal: kernel.idle_exit_ns).
            let exit = self.costs.sched.idle_exit;
            let kick = self.costs.hw.ipi.map_or(Ps::ZERO, |i| i.send + i.delivery) + exit;
            let c = &mut self.cpus[cpu as usize];
            if exit > Ps::ZERO && c.out_of_idle <= now {
                c.out_of_idle = now + kick;
            }
            // v6.0+: ttwu_queue_cond picks the wake list for an idle target (nr_running == 0),
            // sent as CALL_FUNCTION_SINGLE; the model's idle CPU never polls, so every one is an IPI.
            if self.config.sched.wakelist_ipi && self.costs.hw.ipi.is_some() {
                self.counters.sched.wakelist_ipis += 1;
            }
            ctx.kick(cpu, now + kick);
            return;
        };
        if self.config.sched.eevdf {
            self.cpus[cpu as usize].runq.push_back(t);
            self.wakeup_preempt(cpu, t, now);
            return;
        }
        // The current task's vruntime as of now, and the queue's minimum (`cfs_rq->min_vruntime`).
        let curr_v = self.tasks[curr].vruntime + now.saturating_sub(self.tasks[curr].on_cpu_since);
        let min_v =
            self.cpus[cpu as usize].runq.iter().map(|&q| self.tasks[q].vruntime).fold(curr_v, Ps::min);
        // place_entity (GENTLE_FAIR_SLEEPERS): a sleeper gets at most half a latency of credit.
        let thresh = Ps::US * 3_000 * self.sched_factor();
        let v = &mut self.tasks[t].vruntime;
        *v = (*v).max(min_v.saturating_sub(thresh));
        self.cpus[cpu as usize].runq.push_back(t);
        self.check_preempt_wakeup_cfs(cpu, t, now);
    }

    /// `ttwu_stat`'s local or remote count of a wake-up from `waker`'s CPU onto `target`.
    fn count_wakeup(&mut self, waker: u32, target: u32) {
        let s = &mut self.counters.sched;
        *if waker == target { &mut s.wakeups_local } else { &mut s.wakeups_remote } += 1;
    }

    /// CFS's `check_preempt_wakeup` (v5.18) for task `t`, just queued on `cpu` at `now`: a
    /// `SCHED_BATCH` wakee never preempts; else preempt if the current task is ahead by more than
    /// the wake-up granularity (`sysctl_sched_wakeup_granularity` 1 ms, scaled).
    pub(in crate::linux) fn check_preempt_wakeup_cfs(&mut self, cpu: u32, t: usize, now: Ps) {
        let Some(curr) = self.cpus[cpu as usize].task else { return };
        if self.tasks[t].batch {
            return;
        }
        let curr_v = self.tasks[curr].vruntime + now.saturating_sub(self.tasks[curr].on_cpu_since);
        let gran = Ps::US * 1_000 * self.sched_factor();
        let c = &mut self.cpus[cpu as usize];
        if curr_v > self.tasks[t].vruntime + gran && !c.need_resched {
            c.need_resched = true;
            self.counters.sched.wakeup_preempts += 1;
        }
    }

    /// `pick_next_entity`: takes the runnable task of `cpu` with the least vruntime off its
    /// queue (with equal vruntimes, the one queued first); under EEVDF at `now`, delayed
    /// sleepers it reaches dequeued on the way (v6.12+).
    pub(in crate::linux) fn pick_next(&mut self, cpu: u32, now: Ps) -> Option<usize> {
        if self.config.sched.eevdf {
            // The CPU has no current task here: the pick is among the queued.
            let next = self.pick_eevdf_dequeuing(cpu, now, false)?;
            let q = &mut self.cpus[cpu as usize].runq;
            let i = q.iter().position(|&x| x == next).expect("the pick is queued");
            return q.remove(i);
        }
        let q = &self.cpus[cpu as usize].runq;
        let i = (0..q.len()).min_by_key(|&i| self.tasks[q[i]].vruntime)?;
        self.cpus[cpu as usize].runq.remove(i)
    }
}

#[cfg(test)]
mod tests;
