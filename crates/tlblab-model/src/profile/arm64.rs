//! The `[tlbi]` section of an AArch64 profile (`cpu.vendor = "arm"`): the ASID width and range
//! TLBIs the CPU reports, and what broadcast maintenance costs (hw/arm64/tlbi.rs).

use serde::{Deserialize, Serialize};

use super::{check_source, check_sourced, err, MachineProfile, ProfileError, Sourced};
use crate::hw::arm64::tlbi::TlbiCosts;
use crate::time::Ps;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tlbi {
    /// `ID_AA64MMFR0_EL1.ASIDBits`: 8 or 16.
    pub asid_bits: u32,
    /// FEAT_TLBIRANGE (ARMv8.4, `ID_AA64ISAR0_EL1.TLB`): `TLBI RVA*` exist.
    pub range_ops: bool,
    /// Where `asid_bits` and `range_ops` come from (the core's TRM).
    pub features_source: String,
    /// One TLBI's cost to the issuing core (posted).
    pub issue_cycles: Sourced,
    /// The interconnect's DVM node, per broadcast message per core of the domain.
    pub per_target_ns: Sourced,
    /// A DVM Sync's round trip once sent (the `DSB ISH`'s wait beyond the queue).
    pub sync_round_trip_ns: Sourced,
}

impl Tlbi {
    pub fn costs(&self, mhz: u64) -> TlbiCosts {
        TlbiCosts {
            issue: Ps::from_cycles(self.issue_cycles.value, mhz),
            per_target: Ps::from_ns(self.per_target_ns.value),
            sync_round_trip: Ps::from_ns(self.sync_round_trip_ns.value),
        }
    }
}

impl MachineProfile {
    /// An Arm profile has `[tlbi]` and no x86 features; another has none.
    pub(super) fn validate_arm64(&self) -> Result<(), ProfileError> {
        let arm = self.cpu.vendor == "arm";
        match (&self.tlbi, arm) {
            (None, true) => {
                Err(err("tlbi", "is required with cpu.vendor = \"arm\" (broadcast TLB maintenance)"))
            }
            (Some(_), false) => Err(err("tlbi", "is allowed only with cpu.vendor = \"arm\"")),
            (None, false) => Ok(()),
            (Some(t), true) => {
                let f = &self.cpu.features;
                if f.pcid || f.invpcid || f.pti || f.invlpgb {
                    return Err(err(
                        "cpu.features",
                        "an Arm CPU has no pcid, invpcid, pti or invlpgb (its ASIDs are in [tlbi])",
                    ));
                }
                if t.asid_bits != 8 && t.asid_bits != 16 {
                    return Err(err(
                        "tlbi.asid_bits",
                        format!("{} is not allowed; allowed 8 or 16", t.asid_bits),
                    ));
                }
                check_source("tlbi.features_source", &t.features_source)?;
                check_sourced("tlbi.issue_cycles", &t.issue_cycles, 0.0, 100_000.0)?;
                check_sourced("tlbi.per_target_ns", &t.per_target_ns, 0.0, 100_000.0)?;
                check_sourced("tlbi.sync_round_trip_ns", &t.sync_round_trip_ns, 0.0, 1_000_000.0)?;
                Ok(())
            }
        }
    }
}
