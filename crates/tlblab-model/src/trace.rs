//! Trace-driven mode: an address stream through one hardware thread's TLB hierarchy, with an
//! identity page table of one page size (every page is mapped; a miss always walks and fills).
//!
//! This is the mode the cache-simulator peers (pycachesim, ChampSim's TLB) offer, and what the
//! peer cross-check compares against.

use serde::Serialize;

use crate::hw::tlb::{Access, AccessKind, PageSize, TlbHierarchy, TlbPayload, Translation, NR_ACCESS_KINDS};

/// x86-64 kernel addresses are the canonical upper half.
#[inline(always)]
fn is_kernel(va: u64) -> bool {
    va >> 63 == 1
}

/// The driver is one hardware thread: logical processor 0 of its hierarchy (built for one).
const LP: usize = 0;

pub struct TraceDriver {
    tlb: TlbHierarchy,
    page_size: PageSize,
    /// `page_size.shift()`, kept to spare the hot path a table lookup.
    shift: u32,
    accesses: u64,
}

impl TraceDriver {
    pub fn new(tlb: TlbHierarchy, page_size: PageSize) -> TraceDriver {
        TraceDriver { tlb, page_size, shift: page_size.shift(), accesses: 0 }
    }

    /// One lookup of `va`.
    #[inline(always)]
    pub fn lookup(&mut self, va: u64, kind: AccessKind) {
        self.accesses += 1;
        // Every page is mapped: a miss walks and fills (fused, so the fill skips re-searching).
        let payload = TlbPayload::new(va >> self.shift, true);
        let a = Access { va, kind, asid: 0, kernel: is_kernel(va) };
        self.tlb.lookup_or_fill(LP, a, Translation { size: self.page_size, payload, global: false });
    }

    /// An access of `size` bytes at `addr`: one lookup per page it touches (a load that
    /// straddles a page boundary needs both translations).
    #[inline(always)]
    pub fn access(&mut self, addr: u64, size: u32, kind: AccessKind) {
        self.lookup(addr, kind);
        // A one-byte access (every raw64 record) touches one page.
        if size > 1 {
            self.straddle(addr, size, kind);
        }
    }

    /// The lookups of the pages after the first that an access of `size` bytes at `addr` touches.
    #[inline(never)]
    fn straddle(&mut self, addr: u64, size: u32, kind: AccessKind) {
        let shift = self.shift;
        let last = addr.saturating_add(size as u64 - 1) >> shift;
        for page in (addr >> shift) + 1..=last {
            self.lookup(page << shift, kind);
        }
    }

    pub fn tlb(&self) -> &TlbHierarchy {
        &self.tlb
    }

    pub fn report(&self) -> TraceReport {
        let levels = self
            .tlb
            .views(LP)
            .iter()
            .map(|v| {
                let by_kind = |k: AccessKind| KindCounts {
                    hits: v.counters.hits[k as usize].iter().sum(),
                    misses: v.counters.misses[k as usize].iter().sum(),
                };
                LevelReport {
                    name: v.name.clone(),
                    level: v.level,
                    hits: v.counters.total_hits(),
                    misses: v.counters.total_misses(),
                    fetch: by_kind(AccessKind::Fetch),
                    load: by_kind(AccessKind::Load),
                    store: by_kind(AccessKind::Store),
                    kernel_misses: (0..NR_ACCESS_KINDS).map(|k| v.counters.misses[k][1]).sum(),
                }
            })
            .collect();
        TraceReport {
            levels,
            accesses: self.accesses,
            walks: self.tlb.total_walks(LP),
            page_size: self.page_size.name(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    pub hits: u64,
    pub misses: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelReport {
    pub name: String,
    pub level: u8,
    pub hits: u64,
    pub misses: u64,
    pub fetch: KindCounts,
    pub load: KindCounts,
    pub store: KindCounts,
    pub kernel_misses: u64,
}

/// What `tlblab trace --json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceReport {
    pub levels: Vec<LevelReport>,
    pub accesses: u64,
    pub walks: u64,
    pub page_size: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::tlb::{Geometry, Inclusion, Replacement, Serves, StructureSpec};

    fn driver(page_size: PageSize) -> TraceDriver {
        let spec = StructureSpec {
            name: "L1".into(),
            level: 1,
            serves: Serves::Unified,
            page_sizes: vec![page_size],
            geometry: Geometry::new(4, 2).unwrap(),
        };
        TraceDriver::new(
            TlbHierarchy::new(&[spec], Replacement::Lru, Inclusion::NonInclusive).unwrap(),
            page_size,
        )
    }

    #[test]
    fn a_straddling_access_looks_up_both_pages() {
        let mut d = driver(PageSize::Size4K);
        d.access(4096 - 4, 8, AccessKind::Load);
        d.access(4096, 4, AccessKind::Load);
        let r = d.report();
        assert_eq!(r.accesses, 3);
        assert_eq!((r.levels[0].hits, r.levels[0].misses), (1, 2));
        assert_eq!(r.walks, 2);
    }

    #[test]
    fn page_size_sets_the_translation_granule() {
        let mut d = driver(PageSize::Size2M);
        for a in (0..(2u64 << 20)).step_by(4096) {
            d.access(a, 1, AccessKind::Load);
        }
        assert_eq!(d.report().walks, 1);
    }

    #[test]
    fn kernel_addresses_are_counted_apart() {
        let mut d = driver(PageSize::Size4K);
        d.access(0xffff_ffff_8100_0000, 1, AccessKind::Fetch);
        d.access(0x40_0000, 1, AccessKind::Fetch);
        let r = d.report();
        assert_eq!(r.levels[0].kernel_misses, 1);
        assert_eq!(r.levels[0].fetch.misses, 2);
    }
}
