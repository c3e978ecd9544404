//! A profile's TLB structures: their validation and the simulated hierarchy built from them.

use super::{
    check_source, check_sourced, err, MachineProfile, ProfileError, Sharing, MAX_STRUCTURE_ENTRIES,
    MAX_TLB_ENTRIES,
};
use crate::hw::tlb::{AccessKind, Geometry, PageSize, Replacement, StructureSpec, TlbHierarchy, MAX_LPS};

impl MachineProfile {
    pub(super) fn validate_tlb(&self) -> Result<(), ProfileError> {
        let tlb = &self.tlb;
        check_source("tlb.policy_source", &tlb.policy_source)?;
        check_sourced("tlb.asids", &tlb.asids, 1.0, 65_536.0)?;
        if tlb.structures.is_empty() {
            return Err(err("tlb.structure", "at least one [[tlb.structure]] is required"));
        }
        for (i, s) in tlb.structures.iter().enumerate() {
            let key = |f: &str| format!("tlb.structure[{i}].{f}");
            if s.name.trim().is_empty() {
                return Err(err(key("name"), "must not be empty"));
            }
            if !(1..=2).contains(&s.level) {
                return Err(err(key("level"), format!("{} is not allowed; allowed 1 or 2", s.level)));
            }
            if s.page_sizes.is_empty() {
                return Err(err(key("page_sizes"), "must list at least one of \"4k\", \"2m\", \"1g\""));
            }
            // Ways first: `ways = 0` is the key at fault, not `entries`.
            for (k, n, max) in
                [("ways", s.ways, Geometry::MAX_WAYS), ("entries", s.entries, MAX_STRUCTURE_ENTRIES)]
            {
                if !(1..=max).contains(&n) {
                    return Err(err(key(k), format!("{n} is not allowed; allowed 1 ..= {max}")));
                }
            }
            Geometry::new(s.entries / s.ways, s.ways)
                .and_then(|g| {
                    if g.entries() == s.entries {
                        Ok(())
                    } else {
                        Err(format!("entries {} is not a multiple of ways {}", s.entries, s.ways))
                    }
                })
                .map_err(|m| err(key("entries"), m))?;
            check_source(&key("source"), &s.source)?;
            check_sourced(&key("hit_cycles"), &s.hit_cycles, 0.0, 1000.0)?;
            if tlb.replacement == Replacement::Plru && !s.ways.is_power_of_two() {
                return Err(err(
                    key("ways"),
                    format!(
                        "{} ways cannot use tree-PLRU; allowed: a power of two, or replacement = \"lru\"",
                        s.ways
                    ),
                ));
            }
        }
        // Every CPU holds its own arrays: their entries are memory the run allocates.
        let per_cpu: u64 = tlb.structures.iter().map(|s| s.entries as u64).sum();
        let total = per_cpu * self.topology.cpus() as u64;
        if total > MAX_TLB_ENTRIES {
            let cpus = self.topology.cpus();
            let m = format!(
                "{cpus} CPUs x {per_cpu} entries = {total}; allowed at most {MAX_TLB_ENTRIES} in all"
            );
            return Err(err("tlb.structure", m));
        }
        let lps = self.topology.threads_per_core as usize;
        if lps > MAX_LPS {
            return Err(err(
                "topology.threads_per_core",
                format!("{lps} threads share a core's TLBs (hw/tlb); allowed 1 ..= {MAX_LPS}"),
            ));
        }
        TlbHierarchy::new_core(
            &self.tlb_specs(),
            &self.tlb_shared(),
            lps.max(1),
            tlb.replacement,
            tlb.inclusion,
        )
        .map_err(|m| err("tlb.structure", m))?;
        // Every access kind needs a first-level structure for 4K pages, or no lookup could hit.
        for kind in AccessKind::ALL {
            let has = tlb
                .structures
                .iter()
                .any(|s| s.level == 1 && s.serves.covers(kind) && s.page_sizes.contains(&PageSize::Size4K));
            if !has {
                return Err(err(
                    "tlb.structure",
                    format!("no level-1 structure serves {kind:?} accesses to 4k pages"),
                ));
            }
        }
        Ok(())
    }

    /// The structures of the TLB, as the hardware model takes them. Call after `validate`.
    pub fn tlb_specs(&self) -> Vec<StructureSpec> {
        self.tlb
            .structures
            .iter()
            .map(|s| StructureSpec {
                name: s.name.clone(),
                level: s.level,
                serves: s.serves,
                page_sizes: s.page_sizes.clone(),
                geometry: Geometry::new(s.sets(), s.ways).expect("validated profile"),
            })
            .collect()
    }

    /// One hardware thread's TLB hierarchy, empty (every structure its own). Call after
    /// `validate`.
    pub fn build_tlb(&self) -> TlbHierarchy {
        TlbHierarchy::new(&self.tlb_specs(), self.tlb.replacement, self.tlb.inclusion)
            .expect("validated profile")
    }

    /// One core's TLBs, empty: `topology.threads_per_core` logical processors, which share
    /// the structures marked `sharing = "per-core"` (hw/tlb/mod.rs). Call after `validate`.
    pub fn build_core_tlb(&self) -> TlbHierarchy {
        TlbHierarchy::new_core(
            &self.tlb_specs(),
            &self.tlb_shared(),
            self.topology.threads_per_core as usize,
            self.tlb.replacement,
            self.tlb.inclusion,
        )
        .expect("validated profile")
    }

    /// Per structure (spec order): whether the SMT siblings share it.
    fn tlb_shared(&self) -> Vec<bool> {
        self.tlb.structures.iter().map(|s| s.sharing == Sharing::PerCore).collect()
    }

    /// Lookup latency of `level` for `kind` accesses: the slowest structure there that serves
    /// them (0 when none does). Level 1 is 0 in every profile: hidden in load-to-use latency.
    pub fn level_hit_cycles(&self, level: u8, kind: AccessKind) -> f64 {
        self.tlb
            .structures
            .iter()
            .filter(|s| s.level == level && s.serves.covers(kind))
            .map(|s| s.hit_cycles.value)
            .fold(0.0, f64::max)
    }

    /// The deepest TLB level.
    pub fn tlb_levels(&self) -> u8 {
        self.tlb.structures.iter().map(|s| s.level).max().unwrap_or(1)
    }
}
