//! Inter-processor interrupts: what the sender pays to fan an IPI out (ICR writes, by APIC
//! mode), when each target takes it, and what the target pays to enter and leave the handler.
//! The acknowledgement is not here: it is a write to a coherent line the sender spins on
//! (`hw/coherence.rs`), so its cost depends on where the two CPUs sit.

use super::cpumask::CpuMask;
use crate::time::Ps;

/// x2APIC logical clusters hold 16 CPUs (Linux `x2apic_cluster.c`). The model groups CPU ids
/// 16 at a time, which matches the firmware's usual APIC-id order of cores.
const X2APIC_CLUSTER: u32 = 16;

/// How the local APIC addresses IPIs (decides how many ICR writes a multicast takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApicMode {
    /// xAPIC flat logical mode: one ICR write reaches every target (<= 8 CPUs).
    XapicFlat,
    /// x2APIC cluster mode: one ICR write per 16-CPU cluster.
    X2apicCluster,
    /// x2APIC physical mode: one ICR write per target.
    X2apicPhysical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpiCosts {
    pub mode: ApicMode,
    /// One ICR write by the sender.
    pub send: Ps,
    /// From the ICR write to the target taking the interrupt.
    pub delivery: Ps,
    pub handler_entry: Ps,
    pub handler_exit: Ps,
}

/// One IPI fan-out: the sender's busy time and, per target, when the interrupt arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fanout {
    pub sender_busy: Ps,
    pub icr_writes: u32,
    /// `(target, arrival offset from the start of the send)`, in CPU order.
    pub arrivals: Vec<(u32, Ps)>,
}

impl IpiCosts {
    /// Sends one IPI to every CPU of `targets`. ICR writes are issued back to back; a target's
    /// interrupt leaves with the write that names it.
    pub fn fanout(&self, targets: &CpuMask) -> Fanout {
        let mut arrivals = Vec::with_capacity(targets.weight() as usize);
        let (sender_busy, icr_writes) = self.fanout_into(targets, &mut arrivals);
        Fanout { sender_busy, icr_writes, arrivals }
    }

    /// As `fanout`, into a reused buffer (the engine's hot path); returns the sender's busy time
    /// and the number of ICR writes.
    pub fn fanout_into(&self, targets: &CpuMask, arrivals: &mut Vec<(u32, Ps)>) -> (Ps, u32) {
        arrivals.clear();
        let mut writes = 0u32;
        let mut last_cluster = None;
        for t in targets.iter() {
            let new_write = match self.mode {
                ApicMode::XapicFlat => writes == 0,
                ApicMode::X2apicCluster => {
                    let c = t / X2APIC_CLUSTER;
                    let new = last_cluster != Some(c);
                    last_cluster = Some(c);
                    new
                }
                ApicMode::X2apicPhysical => true,
            };
            if new_write {
                writes += 1;
            }
            arrivals.push((t, self.send * writes as u64 + self.delivery));
        }
        (self.send * writes as u64, writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(mode: ApicMode) -> IpiCosts {
        IpiCosts { mode, send: Ps(100), delivery: Ps(1_000), handler_entry: Ps(500), handler_exit: Ps(200) }
    }

    fn mask(cpus: &[u32]) -> CpuMask {
        let mut m = CpuMask::new();
        cpus.iter().for_each(|&c| m.set(c));
        m
    }

    #[test]
    fn flat_mode_reaches_every_target_with_one_write() {
        let f = costs(ApicMode::XapicFlat).fanout(&mask(&[1, 2, 3]));
        assert_eq!((f.icr_writes, f.sender_busy), (1, Ps(100)));
        assert!(f.arrivals.iter().all(|&(_, t)| t == Ps(1_100)));
    }

    #[test]
    fn cluster_mode_writes_once_per_cluster() {
        let f = costs(ApicMode::X2apicCluster).fanout(&mask(&[1, 2, 17, 40]));
        assert_eq!(f.icr_writes, 3);
        assert_eq!(f.arrivals, [(1, Ps(1_100)), (2, Ps(1_100)), (17, Ps(1_200)), (40, Ps(1_300))]);
    }

    #[test]
    fn physical_mode_writes_once_per_target() {
        let f = costs(ApicMode::X2apicPhysical).fanout(&mask(&[4, 5, 6, 7]));
        assert_eq!((f.icr_writes, f.sender_busy), (4, Ps(400)));
        assert_eq!(f.arrivals.last(), Some(&(7, Ps(1_400))));
    }
}
