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
    doc: "v5.16+ ttwu_queue_wakelist for an idle target (kernel/sched/core.c): a wake-up of a task whose CPU is \
          idle goes to that CPU's call-single queue with a function-call IPI, counted as `wakelist_ipis` (CAL in \
          /proc/interrupts); off: a reschedule IPI (before v5.16), not counted; the kick costs the same either way",
    apply: |k, v| on_off(v).map(|b| k.sched.wakelist_ipi = b),
}];
