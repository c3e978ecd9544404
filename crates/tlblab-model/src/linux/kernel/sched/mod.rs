//! `kernel/sched`: CFS and EEVDF (`fair.c`), the context switch (`core.c`), and wait queues
//! (`wait.c`).

pub mod core;
pub mod fair;
pub mod wait;

/// `[sched]` knobs of a kernel preset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchedKnobs {
    /// v6.6+ EEVDF (linux/kernel/sched/fair.rs); CFS before (off). Absent from results written
    /// before it and from CFS kernels' (read as off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub eevdf: bool,
}

impl SchedKnobs {
    pub fn is_cfs(&self) -> bool {
        !self.eevdf
    }
}
