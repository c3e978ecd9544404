//! The scheduler's knobs (kernel/sched/fair.c).

use super::*;

pub(super) const KNOBS: &[Knob] = &[Knob {
    name: "eevdf",
    section: "sched",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "v6.6+ EEVDF (kernel/sched/fair.c): a woken task is placed with the lag it slept with, picks go to \
          the eligible task with the earliest virtual deadline, and a wake-up preempts whenever that pick is \
          the woken task and the current one is past its protected slice or ineligible (RUN_TO_PARITY); off: \
          CFS's place_entity and 1 ms wake-up granularity (v2.6.23..v6.5) (linux/kernel/sched/fair.rs)",
    apply: |k, v| on_off(v).map(|b| k.sched.eevdf = b),
}, Knob {
    name: "wakelist_ipi",
    section: "sched",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "v6.0+ ttwu_queue_wakelist for an idle target (kernel/sched/core.c): a wake-up of a task whose CPU is \
          idle goes to that CPU's call-single queue with a function-call IPI, counted as `wakelist_ipis` (CAL in \
          /proc/interrupts); off: a reschedule IPI (before v6.0), not counted; the kick costs the same either way",
    apply: |k, v| on_off(v).map(|b| k.sched.wakelist_ipi = b),
}, Knob {
    name: "base_slice_us",
    section: "sched",
    needed: Needed::Newer,
    allowed: "1 ..= 100000 (microseconds)",
    doc: "EEVDF's sysctl_sched_base_slice before its 1 + ilog2(min(cpus, 8)) scaling: 750 us in v6.6 \
          (the blank value), 700 us from v6.15 (kernel/sched/fair.c); used only with eevdf = on",
    apply: |k, v| match v.parse::<u32>() {
        Ok(n) if (1..=100_000).contains(&n) => {
            k.sched.base_slice_us = n;
            Ok(())
        }
        _ => Err(None),
    },
}, Knob {
    name: "delay_dequeue",
    section: "sched",
    needed: Needed::Newer,
    allowed: "on | off",
    doc: "v6.12+ EEVDF DELAY_DEQUEUE with DELAY_ZERO (kernel/sched/fair.c): a task that blocks while \
          ineligible stays queued, counted in V and the load, until a pick reaches it (dequeued then, its \
          positive lag clipped to zero) or a wake-up requeues it where it was; off: every sleeper leaves at \
          once with its lag (v6.6..v6.11); used only with eevdf = on (linux/kernel/sched/fair/delay.rs)",
    apply: |k, v| on_off(v).map(|b| k.sched.delay_dequeue = b),
}];
