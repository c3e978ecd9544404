//! The TLB-reach pointer chase (the simulated twin of `tlblab probe`'s latency measurement):
//! one cache line per page, pages visited in a random cyclic order, so every page is touched
//! exactly once per lap and LRU-like TLBs hit only while the pages fit.
//!
//! Run on one hardware thread's TLB hierarchy with an identity page table; reports per-level
//! miss ratios and the translation cycles per access the profile's latencies imply.

use serde::Serialize;

use crate::hw::tlb::{AccessKind, PageSize};
use crate::profile::MachineProfile;
use crate::rng::Rng;
use crate::trace::TraceDriver;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChasePoint {
    pub pages: u64,
    /// Misses per access at each level of the data side, innermost first.
    pub level_miss_ratio: Vec<(String, f64)>,
    pub walks_per_access: f64,
    /// Extra cycles per access spent translating: every lookup below L1 at that level's hit
    /// latency, plus each walk at the profile's walk cost.
    pub translation_cycles: f64,
}

/// Chases `pages` pages of `size` for `laps` laps after one warm-up lap.
pub fn chase(profile: &MachineProfile, pages: u64, size: PageSize, laps: u64, seed: u64) -> ChasePoint {
    let mut order: Vec<u64> = (0..pages).collect();
    Rng::stream(seed, "pointer-chase order").shuffle(&mut order);
    // Place the chased line at a different offset in each page, as the probe does, so cache
    // sets (not modelled here) would not alias; the TLB sees only the page.
    let base = 0x7f00_0000_0000u64;
    let line = |i: u64| base + order[i as usize] * size.bytes() + (i % 64) * 64;
    let mut warm = TraceDriver::new(profile.build_tlb(), size);
    for i in 0..pages {
        warm.lookup(line(i), AccessKind::Load);
    }
    // Measure on the warmed hierarchy with fresh counters: clone the state, zero the counts.
    let mut d = TraceDriver::new(warm.tlb().clone_reset_counters(), size);
    for _ in 0..laps {
        for i in 0..pages {
            d.lookup(line(i), AccessKind::Load);
        }
    }
    let r = d.report();
    let accesses = r.accesses as f64;
    let data_levels: Vec<_> = r.levels.iter().filter(|l| l.load.hits + l.load.misses > 0).collect();
    let mut cycles = 0.0;
    for l in &data_levels {
        if l.level > 1 {
            let hit_cycles = profile.level_hit_cycles(l.level, AccessKind::Load);
            // Every access that reaches this level pays its lookup, hit or miss.
            cycles += (l.load.hits + l.load.misses) as f64 * hit_cycles;
        }
    }
    cycles += r.walks as f64 * profile.walk.cycles.value;
    ChasePoint {
        pages,
        level_miss_ratio: data_levels
            .iter()
            .map(|l| (l.name.clone(), l.load.misses as f64 / accesses))
            .collect(),
        walks_per_access: r.walks as f64 / accesses,
        translation_cycles: cycles / accesses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ivb() -> MachineProfile {
        let text = crate::builtin::profile("ivybridge-4c8t");
        let p: MachineProfile = toml::from_str(text).unwrap();
        p.validate().unwrap();
        p
    }

    #[test]
    fn reach_kinks_follow_the_geometry() {
        let p = ivb();
        // 32 pages fit the 64-entry L1 DTLB; 256 fit the 512-entry STLB but not L1; 2048 fit
        // nothing, and a random cyclic order thrashes LRU.
        let small = chase(&p, 32, PageSize::Size4K, 4, 1);
        assert_eq!(small.walks_per_access, 0.0);
        assert_eq!(small.level_miss_ratio[0].1, 0.0);
        let mid = chase(&p, 256, PageSize::Size4K, 4, 1);
        assert!(mid.level_miss_ratio[0].1 > 0.5, "{mid:?}");
        assert!(mid.walks_per_access < 0.05, "{mid:?}");
        let big = chase(&p, 2048, PageSize::Size4K, 4, 1);
        assert!(big.walks_per_access > 0.9, "{big:?}");
        assert!(big.translation_cycles > mid.translation_cycles);
    }

    #[test]
    fn same_seed_same_result() {
        let p = ivb();
        assert_eq!(chase(&p, 300, PageSize::Size4K, 2, 9), chase(&p, 300, PageSize::Size4K, 2, 9));
    }
}
