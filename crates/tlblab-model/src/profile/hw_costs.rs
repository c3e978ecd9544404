//! The hardware model's parameters from a profile (here, so `hw` needs no profile types).

use super::MachineProfile;
use crate::hw::coherence::LineCosts;
use crate::hw::ipi::IpiCosts;
use crate::time::Ps;

impl LineCosts {
    pub fn from_profile(p: &MachineProfile) -> LineCosts {
        let mhz = p.clock_mhz();
        let hit = Ps::from_cycles(p.memory.l1d_hit_cycles.value, mhz);
        let uncached = Ps::from_ns(p.memory.llc_hit_ns.value);
        match &p.coherence {
            Some(c) => LineCosts {
                hit,
                smt_sibling: Ps::from_ns(c.smt_sibling_ns.value),
                same_socket: Ps::from_ns(c.same_socket_ns.value),
                cross_socket: Ps::from_ns(c.cross_socket_ns.value),
                uncached,
                home: c.home_ns.as_ref().map_or(Ps::ZERO, |h| Ps::from_ns(h.value)),
            },
            // A uniprocessor never transfers a line between CPUs.
            None => LineCosts {
                hit,
                smt_sibling: hit,
                same_socket: hit,
                cross_socket: hit,
                uncached,
                home: Ps::ZERO,
            },
        }
    }
}

impl IpiCosts {
    /// `None` on a uniprocessor profile (no IPIs).
    pub fn from_profile(p: &MachineProfile) -> Option<IpiCosts> {
        let i = p.ipi.as_ref()?;
        Some(IpiCosts {
            mode: i.apic_mode,
            send: Ps::from_ns(i.send_ns.value),
            delivery: Ps::from_ns(i.delivery_ns.value),
            handler_entry: Ps::from_ns(i.handler_entry_ns.value),
            handler_exit: Ps::from_ns(i.handler_exit_ns.value),
        })
    }
}
