//! What translates an access that missed every TLB level: the architecture's choice.
//!
//! - **x86** walks the page tables in hardware: the page-miss handler loads the entries itself
//!   and fills the TLB, so a miss costs a walk and the last level's lookup (the profile's
//!   `walk.cycles`), charged where the access happens (linux/mm/memory.rs, linux/arch/x86/text.rs).
//! - **MPC8xx** has no walker: a miss raises an exception (ITLB miss 0x1100, DTLB miss 0x1200,
//!   DTLB error 0x1400 for a store through an entry without the changed bit) and the kernel's
//!   handler reloads the entry in software, translation off: its instruction fetches go through
//!   the I-cache at the vector, its page-table loads and stores through the D-cache
//!   (linux/arch/ppc/kernel/head_8xx.rs runs it; linux/arch/ppc/mm/mmu_8xx.rs takes the exception).
//!
//! The kernel asks [`Walker::on_miss`] what happens and does it; the hardware cost of a walk
//! lives here, the handler's in the kernel (it is kernel code).

use crate::hw::tlb::{AccessKind, NR_ACCESS_KINDS};
use crate::profile::{MachineProfile, WalkKind};
use crate::time::Ps;

/// The hardware page walk's costs (x86).
#[derive(Debug, Clone)]
pub struct HardwareWalk {
    /// A walk whose entries hit in the data cache (`walk.cycles`).
    pub walk: Ps,
    /// `[kind][i]`: lookup latency of a hit at level `i + 1` (index 0: L1, free).
    pub level_hit: [Vec<Ps>; NR_ACCESS_KINDS],
}

impl HardwareWalk {
    /// A walk after a miss at every level: the walk plus the last level's lookup.
    pub fn miss(&self, kind: AccessKind) -> Ps {
        self.walk + self.level_hit[kind as usize].last().copied().unwrap_or(Ps::ZERO)
    }
}

/// The exception an MPC8xx TLB miss raises (the vector the handler runs at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissException {
    /// 0x1100: no ITLB entry for a fetch.
    InstructionTlbMiss,
    /// 0x1200: no DTLB entry for a load or store.
    DataTlbMiss,
    /// 0x1400: a store through a DTLB entry whose changed bit is clear.
    DataTlbError,
}

/// What a miss does on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMiss {
    /// The hardware walked and filled: this long.
    Walked(Ps),
    /// The CPU took this exception: the kernel's handler runs.
    Exception(MissException),
}

/// How a machine serves TLB misses.
#[derive(Debug, Clone)]
pub enum Walker {
    Hardware(HardwareWalk),
    /// A software-loaded TLB (MPC8xx).
    Exception,
}

impl Walker {
    /// The machine's walker; `level_hit` as the x86 TLB hierarchy's lookups cost.
    pub fn from_profile(p: &MachineProfile, level_hit: [Vec<Ps>; NR_ACCESS_KINDS]) -> Walker {
        match p.walk.kind {
            WalkKind::Hardware => Walker::Hardware(HardwareWalk {
                walk: Ps::from_cycles(p.walk.cycles.value, p.clock_mhz()),
                level_hit,
            }),
            WalkKind::Software => Walker::Exception,
        }
    }

    /// What a miss of `kind` does: a walk and its cost, or the exception taken (a store that
    /// finds an entry without the changed bit is not a miss: the caller raises `DataTlbError`).
    pub fn on_miss(&self, kind: AccessKind) -> OnMiss {
        match self {
            Walker::Hardware(w) => OnMiss::Walked(w.miss(kind)),
            Walker::Exception => OnMiss::Exception(match kind {
                AccessKind::Fetch => MissException::InstructionTlbMiss,
                _ => MissException::DataTlbMiss,
            }),
        }
    }

    /// The hardware walk's cost after a miss of `kind`. The x86 paths (linux/mm/memory.rs,
    /// linux/arch/x86/text.rs) run only on a hardware-walk machine: `run::run` refuses their workloads on
    /// an exception machine.
    pub fn walk(&self, kind: AccessKind) -> Ps {
        match self.on_miss(kind) {
            OnMiss::Walked(d) => d,
            OnMiss::Exception(e) => {
                panic!("{e:?}: an x86 path on a software-loaded TLB (run::run refuses it)")
            }
        }
    }

    pub fn is_software(&self) -> bool {
        matches!(self, Walker::Exception)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hardware_miss_is_the_walk_plus_the_last_level_lookup_and_8xx_misses_trap() {
        let lv = |v: &[u64]| v.iter().map(|&p| Ps(p)).collect::<Vec<_>>();
        let w = Walker::Hardware(HardwareWalk {
            walk: Ps(1000),
            level_hit: [lv(&[0, 70]), lv(&[0, 90]), lv(&[0, 90])],
        });
        assert_eq!(w.on_miss(AccessKind::Fetch), OnMiss::Walked(Ps(1070)));
        assert_eq!(w.walk(AccessKind::Load), Ps(1090));
        let e = Walker::Exception;
        assert_eq!(e.on_miss(AccessKind::Fetch), OnMiss::Exception(MissException::InstructionTlbMiss));
        assert_eq!(e.on_miss(AccessKind::Store), OnMiss::Exception(MissException::DataTlbMiss));
        assert!(e.is_software() && !w.is_software());
    }
}
