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
}];
