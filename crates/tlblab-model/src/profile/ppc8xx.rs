//! The MPC8xx sections of a machine profile (`[caches]`, `[mmu8xx]`, `[head_8xx]` of
//! `profiles/mpc855t.toml`): the caches that decide what a miss costs there, the 8xx TLB rules
//! and the reload handler's instruction costs. Optional in [`super::MachineProfile`], required
//! when `walk.kind = "software"` (checked by `MachineProfile::validate`, which calls
//! [`Ppc8xxSections::validate`]); turned into the specs `hw::ppc8xx::cache`, `hw::ppc8xx::tlb`
//! and `linux::arch::ppc::kernel::head_8xx` take.

use serde::{Deserialize, Serialize};
use std::fmt;

use super::Sourced;
use crate::hw::ppc8xx::cache::{CacheSpec, WritePolicy};
use crate::hw::ppc8xx::tlb::{ENTRIES, FIRST_RESERVED};
use crate::hw::tlb::Replacement;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    pub name: String,
    /// `instruction` or `data`.
    pub serves: String,
    pub size_bytes: Sourced,
    pub line_bytes: Sourced,
    pub ways: Sourced,
    pub hit_cycles: Sourced,
    pub miss_cycles: Sourced,
    pub fill_cycles: Sourced,
    pub writeback_cycles: Sourced,
    pub write_through_cycles: Sourced,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Caches {
    pub replacement: String,
    pub replacement_source: String,
    pub dcache_write_policy: String,
    pub dcache_write_policy_source: String,
    #[serde(rename = "cache")]
    pub caches: Vec<CacheSection>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Mmu8xxSpec {
    pub entries: Sourced,
    pub reserved_entries: Sourced,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HeadCosts {
    pub exception_entry_cycles: Sourced,
    pub rfi_cycles: Sourced,
    pub alu_cycles: Sourced,
    pub mfspr_cycles: Sourced,
    pub mtspr_cycles: Sourced,
    pub taken_branch_cycles: Sourced,
}

/// The three sections together (what a software-loaded-TLB machine has).
#[derive(Debug, Clone, PartialEq)]
pub struct Ppc8xxSections {
    pub caches: Caches,
    pub mmu8xx: Mmu8xxSpec,
    pub head_8xx: HeadCosts,
    /// `[tlb] replacement`: the 8xx TLBs replace by their counter, and the profile must say so.
    pub tlb_replacement: Replacement,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ppc8xxError(pub String);

impl fmt::Display for Ppc8xxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Ppc8xxError {}

/// A whole number of clocks or bytes in `lo..=hi`.
fn whole(key: &str, s: &Sourced, lo: u32, hi: u32) -> Result<u32, String> {
    let v = s.value;
    if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
        return Err(format!("{key} = {v}: must be a whole number in {lo}..={hi}"));
    }
    Ok(v as u32)
}

impl Ppc8xxSections {
    /// A whole machine profile's text, parsed and validated; `file` names the source in errors
    /// (one line: file, key, allowed values). Errors if the profile has no MPC8xx sections.
    pub fn parse(file: &str, text: &str) -> Result<Ppc8xxSections, Ppc8xxError> {
        let p: super::MachineProfile = toml::from_str(text).map_err(|e| {
            Ppc8xxError(format!("{file}: {}", e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")))
        })?;
        p.validate().map_err(|e| Ppc8xxError(format!("{file}: {e}")))?;
        p.ppc8xx()
            .ok_or_else(|| Ppc8xxError(format!("{file}: no [caches], [mmu8xx] and [head_8xx] sections")))
    }

    /// Range and cross-field checks; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.caches.replacement != "lru" {
            return Err(format!(
                "caches.replacement = {:?}: allowed values are [\"lru\"]",
                self.caches.replacement
            ));
        }
        if WritePolicy::parse(&self.caches.dcache_write_policy).is_none() {
            return Err(format!(
                "caches.dcache_write_policy = {:?}: allowed values are [\"copyback\", \"write-through\"]",
                self.caches.dcache_write_policy
            ));
        }
        for side in ["instruction", "data"] {
            let n = self.caches.caches.iter().filter(|c| c.serves == side).count();
            if n != 1 {
                return Err(format!(
                    "caches.cache: need exactly one cache with serves = {side:?}, found {n}"
                ));
            }
        }
        for (i, c) in self.caches.caches.iter().enumerate() {
            if !["instruction", "data"].contains(&c.serves.as_str()) {
                return Err(format!(
                    "caches.cache[{i}].serves = {:?}: allowed values are [\"instruction\", \"data\"]",
                    c.serves
                ));
            }
            self.cache_spec(c)
                .map_err(|m| format!("caches.cache[{i}] ({}).{m}", c.name))?
                .validate()
                .map_err(|e| e.to_string())?;
        }
        let m = &self.mmu8xx;
        let entries = whole("mmu8xx.entries", &m.entries, 1, 64)?;
        if entries as usize != ENTRIES {
            return Err(format!("mmu8xx.entries = {entries}: the 8xx TLB model has {ENTRIES} entries"));
        }
        let rsv = whole("mmu8xx.reserved_entries", &m.reserved_entries, 0, 32)?;
        if rsv as usize != ENTRIES - FIRST_RESERVED {
            return Err(format!(
                "mmu8xx.reserved_entries = {rsv}: the 8xx TLB model reserves {}",
                ENTRIES - FIRST_RESERVED
            ));
        }
        if self.tlb_replacement != Replacement::Counter {
            return Err(format!(
                "tlb.replacement = {:?}: a software-loaded MPC8xx TLB replaces by its decrementing counter; allowed values are [\"counter\"]",
                format!("{:?}", self.tlb_replacement).to_lowercase()
            ));
        }
        self.handler_costs()?;
        Ok(())
    }

    fn cache_spec(&self, c: &CacheSection) -> Result<CacheSpec, String> {
        Ok(CacheSpec {
            name: c.name.clone(),
            size_bytes: whole("size_bytes", &c.size_bytes, 16, 1 << 20)?,
            line_bytes: whole("line_bytes", &c.line_bytes, 4, 256)?,
            ways: whole("ways", &c.ways, 1, 64)?,
            hit_cycles: whole("hit_cycles", &c.hit_cycles, 0, 1000)?,
            miss_cycles: whole("miss_cycles", &c.miss_cycles, 0, 10_000)?,
            fill_cycles: whole("fill_cycles", &c.fill_cycles, 0, 10_000)?,
            writeback_cycles: whole("writeback_cycles", &c.writeback_cycles, 0, 10_000)?,
            write_through_cycles: whole("write_through_cycles", &c.write_through_cycles, 0, 10_000)?,
        })
    }

    fn side(&self, serves: &str) -> CacheSpec {
        let c = self.caches.caches.iter().find(|c| c.serves == serves).expect("validated");
        self.cache_spec(c).expect("validated")
    }

    pub fn icache(&self) -> CacheSpec {
        self.side("instruction")
    }

    pub fn dcache(&self) -> CacheSpec {
        self.side("data")
    }

    pub fn dcache_write_policy(&self) -> WritePolicy {
        WritePolicy::parse(&self.caches.dcache_write_policy).expect("validated")
    }

    pub fn handler_costs(&self) -> Result<HandlerCosts, String> {
        let h = &self.head_8xx;
        Ok(HandlerCosts {
            exception_entry_cycles: whole(
                "head_8xx.exception_entry_cycles",
                &h.exception_entry_cycles,
                0,
                1000,
            )?,
            rfi_cycles: whole("head_8xx.rfi_cycles", &h.rfi_cycles, 0, 1000)?,
            alu_cycles: whole("head_8xx.alu_cycles", &h.alu_cycles, 1, 100)?,
            mfspr_cycles: whole("head_8xx.mfspr_cycles", &h.mfspr_cycles, 1, 100)?,
            mtspr_cycles: whole("head_8xx.mtspr_cycles", &h.mtspr_cycles, 1, 100)?,
            taken_branch_cycles: whole("head_8xx.taken_branch_cycles", &h.taken_branch_cycles, 0, 100)?,
        })
    }
}

/// Clock costs of the handler's instruction classes beyond their cache accesses (profile data:
/// `profiles/mpc855t.toml` `[head_8xx]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerCosts {
    /// Taking the exception: pipeline drain, SRR0/SRR1, fetch redirect to the vector.
    pub exception_entry_cycles: u32,
    /// `rfi`: context synchronisation and refetch at SRR0.
    pub rfi_cycles: u32,
    pub alu_cycles: u32,
    pub mfspr_cycles: u32,
    pub mtspr_cycles: u32,
    /// Extra for a taken conditional branch.
    pub taken_branch_cycles: u32,
}

#[cfg(test)]
mod tests;
