//! `kernel/sched`: CFS and EEVDF (`fair.c`), the context switch (`core.c`), and wait queues
//! (`wait.c`).

pub mod core;
pub mod fair;
pub mod pelt;
pub mod wait;

/// `[sched]` knobs of a kernel preset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchedKnobs {
    /// v6.6+ EEVDF (linux/kernel/sched/fair.rs); CFS before (off). Absent from results written
    /// before it and from CFS kernels' (read as off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eevdf: bool,
    /// v6.0+ `ttwu_queue_wakelist` for an idle target: a wake-up of a task whose CPU is idle
    /// queues it on that CPU's call-single queue and sends a function-call IPI (counted as `CAL`,
    /// not `TLB`); before, a reschedule IPI (docs/references/linux-mm.md#wake-ups). Only the count
    /// differs: both deliveries cost the kick's IPI. Not modelled: v5.8+'s wake list to a busy CPU
    /// across LLCs. Absent from results written before it (read as off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wakelist_ipi: bool,
    /// EEVDF's `sysctl_sched_base_slice` before scaling, in microseconds: 0 for v6.6's 750,
    /// 700 from v6.15 ("sched: Reduce the default slice to avoid tasks getting an extra tick",
    /// docs/references/linux-6x.md#eevdf). Absent from results written before it (read as 750).
    #[serde(default, skip_serializing_if = "crate::linux::config::is_zero")]
    pub base_slice_us: u32,
    /// v6.12+ EEVDF `DELAY_DEQUEUE` with `DELAY_ZERO` (152e11f6df29): a task that blocks while
    /// ineligible stays queued until picked or woken (linux/kernel/sched/fair/delay.rs,
    /// docs/references/linux-6x.md#delayed-dequeue); used only with `eevdf`. Absent from results
    /// written before it (read as off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delay_dequeue: bool,
}

impl SchedKnobs {
    /// Every knob at its blank value (CFS, no wake-list IPIs): left out of results.
    pub fn is_blank(&self) -> bool {
        *self == SchedKnobs::default()
    }
}
