//! Inter-processor interrupts: what the sender pays to fan an IPI out (ICR writes, by APIC
//! mode), when each target takes it, and what the target pays to enter and leave the handler.
//! The acknowledgement is not here: it is a write to a coherent line the sender spins on
//! (`hw/coherence.rs`), so its cost depends on where the two CPUs sit.

use super::cpumask::CpuMask;
use super::topology::Topology;
use crate::time::Ps;

/// An x2APIC logical cluster is 16 consecutive APIC IDs (Linux `x2apic_cluster.c`, v5.18:
/// cluster = apicid >> 4): 8 cores with both their threads on an SMT part, never two packages'
/// CPUs when a package has 16 or more IDs ([`Topology::apic_id`]).
const X2APIC_CLUSTER_SHIFT: u32 = 4;

/// More clusters than one fan-out can name (1024 APIC IDs): each further one costs its write.
const MAX_CLUSTERS: usize = 64;

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
    pub fn fanout(&self, targets: &CpuMask, topo: &Topology) -> Fanout {
        let mut arrivals = Vec::with_capacity(targets.weight() as usize);
        let (sender_busy, icr_writes) = self.fanout_into(targets, topo, &mut arrivals);
        Fanout { sender_busy, icr_writes, arrivals }
    }

    /// As `fanout`, into a reused buffer (the engine's hot path); returns the sender's busy time
    /// and the number of ICR writes. In cluster mode v5.18's `__x2apic_send_IPI_mask` walks the
    /// mask in CPU order and, at the first CPU of a cluster not yet sent to, writes the ICR once
    /// for every target of that cluster; an SMT sibling (numbered after every core) shares its
    /// core's cluster and so its write.
    pub fn fanout_into(
        &self,
        targets: &CpuMask,
        topo: &Topology,
        arrivals: &mut Vec<(u32, Ps)>,
    ) -> (Ps, u32) {
        arrivals.clear();
        let mut writes = 0u32;
        let mut sent = [(0u32, 0u32); MAX_CLUSTERS];
        for t in targets.iter() {
            let write = match self.mode {
                ApicMode::XapicFlat => {
                    writes = 1;
                    1
                }
                ApicMode::X2apicCluster => {
                    let c = topo.apic_id(t) >> X2APIC_CLUSTER_SHIFT;
                    let known = (writes as usize).min(MAX_CLUSTERS);
                    match sent[..known].iter().find(|&&(k, _)| k == c) {
                        Some(&(_, w)) => w,
                        None => {
                            writes += 1;
                            if known < MAX_CLUSTERS {
                                sent[known] = (c, writes);
                            }
                            writes
                        }
                    }
                }
                ApicMode::X2apicPhysical => {
                    writes += 1;
                    writes
                }
            };
            arrivals.push((t, self.send * write as u64 + self.delivery));
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

    /// Haswell-EP: 2 sockets x 18 cores x 2 threads.
    const HSX: Topology = Topology { sockets: 2, cores_per_socket: 18, threads_per_core: 2 };

    fn mask(cpus: &[u32]) -> CpuMask {
        let mut m = CpuMask::new();
        cpus.iter().for_each(|&c| m.set(c));
        m
    }

    #[test]
    fn flat_mode_reaches_every_target_with_one_write() {
        let f = costs(ApicMode::XapicFlat).fanout(&mask(&[1, 2, 3]), &HSX);
        assert_eq!((f.icr_writes, f.sender_busy), (1, Ps(100)));
        assert!(f.arrivals.iter().all(|&(_, t)| t == Ps(1_100)));
    }

    #[test]
    fn cluster_mode_writes_once_per_cluster() {
        // CPUs 1 and 2 (cores 1, 2) and 40 (core 4's sibling) share cluster 0 (APIC IDs 0-15,
        // cores 0-7 of socket 0); 17 (core 17, ID 34) is in cluster 2; 18 (socket 1's first
        // core, ID 64) in cluster 4: socket 1's CPUs never share socket 0's writes.
        let f = costs(ApicMode::X2apicCluster).fanout(&mask(&[1, 2, 17, 18, 40]), &HSX);
        assert_eq!(f.icr_writes, 3);
        assert_eq!(
            f.arrivals,
            [(1, Ps(1_100)), (2, Ps(1_100)), (17, Ps(1_200)), (18, Ps(1_300)), (40, Ps(1_100))]
        );
        // Every thread of 18 cores on one socket: clusters of 8, 8 and 2 cores.
        let all: Vec<u32> = (0..18).chain(36..54).collect();
        assert_eq!(costs(ApicMode::X2apicCluster).fanout(&mask(&all), &HSX).icr_writes, 3);
    }

    #[test]
    fn physical_mode_writes_once_per_target() {
        let f = costs(ApicMode::X2apicPhysical).fanout(&mask(&[4, 5, 6, 7]), &HSX);
        assert_eq!((f.icr_writes, f.sender_busy), (4, Ps(400)));
        assert_eq!(f.arrivals.last(), Some(&(7, Ps(1_400))));
    }
}
