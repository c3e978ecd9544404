//! kernel/time/tick-sched.c: the scheduler tick on a busy CPU (`NO_HZ_IDLE`: an idle CPU has
//! its tick stopped). The engine delivers it every `1/HZ` (engine/noise.rs); this is what taking
//! it costs: the timer interrupt's entry, the kernel text it runs (so after a full flush it
//! refills its translations like any other path), the tick's own work and the exit.
//! Follows v5.18 (`tick_sched_timer` -> `tick_sched_handle` -> `update_process_times`); the call
//! chain's names are 6.18's, as the text layout is (linux/arch/x86/text.rs).

use crate::attribution::Bucket;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::profile::MachineProfile;
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// Scheduler ticks, counted (the LOC row of /proc/interrupts).
    Counters {
        ticks,
    }
}

/// What one tick costs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Costs {
    /// Interrupt entry and exit: the `[ipi]` handler's (the same `idtentry` and `irq_exit_rcu`
    /// path; its call-function dispatch makes this a slight overestimate), none without `[ipi]`.
    pub entry: Ps,
    pub exit: Ps,
    /// `update_process_times` and what it calls (profile `noise.tick_cycles`).
    pub body: Ps,
}

impl crate::linux::boot::FromProfile for Costs {
    fn from_profile(p: &MachineProfile) -> Costs {
        let Some(n) = &p.noise else { return Costs::default() };
        let (entry, exit) = p.ipi.as_ref().map_or((Ps::ZERO, Ps::ZERO), |i| {
            (Ps::from_ns(i.handler_entry_ns.value), Ps::from_ns(i.handler_exit_ns.value))
        });
        Costs { entry, exit, body: Ps::from_cycles(n.tick_cycles.value, p.clock_mhz()) }
    }
}

impl Kernel {
    /// Takes the tick on `ctx.cpu`; returns the time it took.
    pub fn tick(&mut self, ctx: &mut Ctx) -> Ps {
        self.counters.tick_sched.ticks += 1;
        // scheduler_tick -> entity_tick: the current task's PELT average.
        self.pelt_tick(ctx.cpu, ctx.now);
        // sched_balance_trigger: the periodic balance, if one is due (unbound tasks only).
        self.sched_balance_tick(ctx.cpu, ctx.now);
        // The timer wheel: the memcg statistics' deferrable periodic flush, if due.
        self.flush_memcg_stats_dwork(ctx.now);
        let c = self.costs.tick_sched;
        let walks = ctx.charged(Bucket::Walk);
        let d = c.entry + self.kernel_path(ctx, Path::Tick) + c.body + c.exit;
        let walked = ctx.charged(Bucket::Walk) - walks;
        ctx.charge(Bucket::Tick, d - walked);
        d
    }
}
