//! `[topology]`: sockets, cores and hardware threads, and how SMT siblings share a core.

use serde::{Deserialize, Serialize};

use super::{check_source, check_sourced, err, Confidence, ProfileError, Sourced};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub source: String,
    pub confidence: Confidence,
    /// What a core delivers with every hardware thread busy, against one thread alone (hw/smt.rs);
    /// required when `threads_per_core` > 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt_throughput: Option<Sourced>,
}

impl Topology {
    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    pub(super) fn validate(&self) -> Result<(), ProfileError> {
        let t = self;
        for (k, v) in [
            ("topology.sockets", t.sockets),
            ("topology.cores_per_socket", t.cores_per_socket),
            ("topology.threads_per_core", t.threads_per_core),
        ] {
            if !(1..=1024).contains(&v) {
                return Err(err(k, format!("{v} is out of range; allowed 1 ..= 1024")));
            }
        }
        let cpus = t.sockets as u64 * t.cores_per_socket as u64 * t.threads_per_core as u64;
        if cpus > crate::hw::cpumask::NR_CPUS as u64 {
            return Err(err(
                "topology",
                format!(
                    "sockets x cores_per_socket x threads_per_core = {cpus} CPUs; allowed 1 ..= {}",
                    crate::hw::cpumask::NR_CPUS
                ),
            ));
        }
        check_source("topology.source", &t.source)?;
        match (&t.smt_throughput, t.threads_per_core) {
            (Some(s), n) if n > 1 => check_sourced("topology.smt_throughput", s, 1.0, f64::from(n))?,
            (Some(_), _) => {
                return Err(err("topology.smt_throughput", "only with threads_per_core > 1 (no siblings to share with)"))
            }
            (None, n) if n > 1 => {
                return Err(err(
                    "topology.smt_throughput",
                    format!(
                        "missing: with threads_per_core = {n}, what a core delivers with every thread busy against one \
                         thread alone; allowed 1 ..= {n}"
                    ),
                ))
            }
            (None, _) => {}
        }
        Ok(())
    }
}

impl crate::hw::topology::Topology {
    pub fn from_profile(t: &Topology) -> crate::hw::topology::Topology {
        let topo = crate::hw::topology::Topology {
            sockets: t.sockets,
            cores_per_socket: t.cores_per_socket,
            threads_per_core: t.threads_per_core,
        };
        assert!(
            topo.cpus() as usize <= crate::hw::cpumask::NR_CPUS,
            "at most {} CPUs",
            crate::hw::cpumask::NR_CPUS
        );
        topo
    }
}
