//! The per-CPU-list rules of each era, as data (a kernel preset names one), and the unit costs
//! built from a profile's `[page_alloc]` section.

use serde::{Deserialize, Serialize};

use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

/// `CONFIG_PCP_BATCH_SCALE_MAX`'s default and its Kconfig range (52166607ecc9, v6.7).
pub const PCP_BATCH_SCALE_MAX_DEFAULT: u32 = 5;
pub const PCP_BATCH_SCALE_MAX_LIMIT: u32 = 6;

use crate::linux::include::linux::mmzone::{
    int_sqrt, rounddown_pow_of_two, HPAGE_PMD_ORDER, MIGRATE_PCPTYPES, PAGE_ALLOC_COSTLY_ORDER,
};

/// Which orders the per-CPU lists hold and how a (migratetype, order) picks its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PcpLists {
    /// v2.6.24 .. v5.13: `lists[MIGRATE_PCPTYPES]`, order 0 only.
    Order0,
    /// Mel Gorman's "High-order per-cpu page allocator" v5 (2016-12-02, never merged): lists
    /// 0-2 order 0 per migratetype, 3-5 one list per order 1..=3 shared by every migratetype
    /// (`order_to_pindex = order ? MIGRATE_PCPTYPES - 1 + order : migratetype`).
    HopcpuV5,
    /// v5.14 (44042b449872): orders 0..=3 per migratetype plus the THP order, 15 lists
    /// (`order_to_pindex = MIGRATE_PCPTYPES * base + migratetype`, base 4 for THP).
    V5_14,
}

impl PcpLists {
    pub fn nr_lists(self) -> usize {
        match self {
            PcpLists::Order0 => MIGRATE_PCPTYPES,
            PcpLists::HopcpuV5 => MIGRATE_PCPTYPES + PAGE_ALLOC_COSTLY_ORDER as usize,
            PcpLists::V5_14 => MIGRATE_PCPTYPES * (PAGE_ALLOC_COSTLY_ORDER as usize + 2),
        }
    }

    /// `pcp_allowed_order()` (v5.14) / the `order == 0` test (v4.9) / `order <=
    /// PAGE_ALLOC_COSTLY_ORDER` (the 2016 patch).
    pub fn allowed(self, order: u8) -> bool {
        match self {
            PcpLists::Order0 => order == 0,
            PcpLists::HopcpuV5 => order <= PAGE_ALLOC_COSTLY_ORDER,
            PcpLists::V5_14 => order <= PAGE_ALLOC_COSTLY_ORDER || order == HPAGE_PMD_ORDER,
        }
    }

    /// `order_to_pindex()`. Call only for allowed orders; `mt` < MIGRATE_PCPTYPES.
    pub fn pindex(self, mt: usize, order: u8) -> usize {
        match self {
            PcpLists::Order0 => mt,
            PcpLists::HopcpuV5 if order == 0 => mt,
            PcpLists::HopcpuV5 => MIGRATE_PCPTYPES - 1 + order as usize,
            PcpLists::V5_14 => {
                let base = if order > PAGE_ALLOC_COSTLY_ORDER { PAGE_ALLOC_COSTLY_ORDER + 1 } else { order };
                MIGRATE_PCPTYPES * base as usize + mt
            }
        }
    }

    /// `pindex_to_order()`.
    pub fn order_of(self, pindex: usize) -> u8 {
        match self {
            PcpLists::Order0 => 0,
            PcpLists::HopcpuV5 if pindex < MIGRATE_PCPTYPES => 0,
            PcpLists::HopcpuV5 => (pindex + 1 - MIGRATE_PCPTYPES) as u8,
            PcpLists::V5_14 => match (pindex / MIGRATE_PCPTYPES) as u8 {
                b if b > PAGE_ALLOC_COSTLY_ORDER => HPAGE_PMD_ORDER,
                b => b,
            },
        }
    }
}

/// `pcp->high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PcpHigh {
    /// v4.9 `pageset_set_batch()`: `high = 6 * batch`.
    SixBatch,
    /// The 2016 patch v5: `batch * MIGRATE_PCPTYPES + (batch << PAGE_ALLOC_COSTLY_ORDER)`, so one
    /// refill of an order-3 list is unlikely to make the next free drain.
    HopcpuV5,
    /// v5.14 `zone_highsize()`: the zone's low watermark split over the CPUs of its node, at
    /// least `4 * batch`.
    LowWmarkPerLocalCpu,
    /// v6.7 (Huang Ying, "mm: tune PCP high automatically"; docs/references/linux-6x.md#pcp-auto-tuning):
    /// `high` moves between `high_min` (the v5.14 value) and `high_max` (an eighth of the
    /// zone's managed pages split over the node's CPUs, `vm.percpu_pagelist_high_fraction`'s
    /// smallest value): raised by every refill's batch unless the zone is under reclaim,
    /// lowered by high-order free runs, under reclaim and by the vmstat worker's decay.
    AutoTune,
    /// A fixed `high` in pages, whatever the batch: what an administrator's
    /// `vm.percpu_pagelist_fraction` (v2.6.16-v5.13) set by hand, here given directly so that
    /// `high` and `batch` move apart (seed 004's idea: where more caching stops paying).
    Pages(u64),
}

/// How many blocks `rmqueue_bulk` takes when a per-CPU list is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PcpRefill {
    /// v4.9 and the 2016 patch: `batch` blocks of the requested order (248 pages at order 3).
    Batch,
    /// v5.14 (44042b449872): `max(batch >> order, 2)` blocks when `batch > 1`.
    BatchShiftedByOrder,
    /// v6.7 `nr_pcp_alloc()` (c0a242394cb9, "mm, page_alloc: scale the number of pages that are
    /// batch allocated"): order 0 takes `batch << alloc_factor`, at most `max(high - count -
    /// batch, batch)`; `alloc_factor` grows by one per refill while the scaled batch fits, up to
    /// `PCP_BATCH_SCALE_MAX`, and every free halves it. Then `max(batch >> order, 2)` as v5.14.
    AllocFactor,
}

/// How much `free_pcppages_bulk` frees once `count >= high`, and where its round robin starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PcpDrain {
    /// v4.9: `batch` list entries (order-0 pages), round robin from list 1.
    BatchEntries,
    /// The 2016 patch: until `batch` base pages are freed, round robin from the freeing
    /// migratetype's list (docs/references/seeds-001-003-004.md#hopcpu-2016).
    BatchPages,
    /// v5.13-v5.14 `nr_pcp_free()`: `batch << free_factor` base pages clamped to
    /// `[batch, high - batch]`, the factor growing with consecutive drains and halved by every
    /// per-CPU allocation; round robin from list 1.
    FreeFactor,
    /// v6.7 `nr_pcp_free()`: `FreeFactor`, plus `free_high` (a run of order 1..=3 frees without
    /// an allocation between, ca71fe1ad922's `free_factor &&` test) draining at once up to
    /// `batch << PCP_BATCH_SCALE_MAX` pages (docs/references/linux-6x.md#pcp-auto-tuning).
    FreeHigh,
}

/// One era of the page allocator. Every field settable alone; `v4_9()`, `v4_9_hopcpu()` and
/// `v5_14()` are the presets the seeds name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageAllocConfig {
    pub pcp_lists: PcpLists,
    /// `zone_batchsize()`'s cap: 512 KiB of pages up to v5.13, 1 MiB from v5.14.
    pub batch_cap_kib: u64,
    pub high: PcpHigh,
    pub refill: PcpRefill,
    pub drain: PcpDrain,
    /// v4.18+ (Aaron Lu, 0a5f4e5b4562): `free_pcppages_bulk` picks the pages off the per-CPU
    /// lists before taking `zone->lock`. v4.9 picks them under the lock.
    pub drain_picks_outside_lock: bool,
    /// `min_free_kbytes`'s upper bound: 65536 (v4.9), 262144 (v5.7+).
    pub min_free_kbytes_max: u64,
    /// `watermark_scale_factor` (default 10 since v4.6); 0 gives the pre-v4.6 gaps (low = min +
    /// min/4, high = min + min/2), which `max(min / 4, 0)` reproduces.
    pub watermark_scale_factor: u64,
    /// v6.7 `CONFIG_PCP_BATCH_SCALE_MAX` (52166607ecc9, default 5, 0..=6): the largest
    /// `free_factor` / `alloc_factor`. `None` before v6.7: the free factor grows while the scaled
    /// drain fits under `high` (absent from older runs' records, which stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_scale_max: Option<u32>,
}

impl PageAllocConfig {
    /// v4.9: order-0 per-CPU lists, batch 31 on zones >= 512 MiB, high 186.
    pub fn v4_9() -> PageAllocConfig {
        PageAllocConfig {
            pcp_lists: PcpLists::Order0,
            batch_cap_kib: 512,
            high: PcpHigh::SixBatch,
            refill: PcpRefill::Batch,
            drain: PcpDrain::BatchEntries,
            drain_picks_outside_lock: false,
            min_free_kbytes_max: 65_536,
            watermark_scale_factor: 10,
            batch_scale_max: None,
        }
    }

    /// v4.9-rc5 + "mm: page_alloc: High-order per-cpu page allocator v5" (the seed's kernel).
    pub fn v4_9_hopcpu() -> PageAllocConfig {
        PageAllocConfig {
            pcp_lists: PcpLists::HopcpuV5,
            high: PcpHigh::HopcpuV5,
            drain: PcpDrain::BatchPages,
            ..PageAllocConfig::v4_9()
        }
    }

    /// v5.14: 44042b449872 plus the same window's batch (1 MiB cap), high (zone_highsize) and
    /// free-factor rules.
    pub fn v5_14() -> PageAllocConfig {
        PageAllocConfig {
            pcp_lists: PcpLists::V5_14,
            batch_cap_kib: 1024,
            high: PcpHigh::LowWmarkPerLocalCpu,
            refill: PcpRefill::BatchShiftedByOrder,
            drain: PcpDrain::FreeFactor,
            drain_picks_outside_lock: true,
            min_free_kbytes_max: 262_144,
            watermark_scale_factor: 10,
            batch_scale_max: None,
        }
    }

    /// v6.7: v5.14's lists and sizes with PCP high auto-tuning, the scaled refill and the v6.7
    /// drain, the factors capped at `PCP_BATCH_SCALE_MAX` = 5 (52166607ecc9; the series is in
    /// mm-stable-2023-11-01, docs/references/linux-6x.md#pcp-auto-tuning).
    pub fn v6_7() -> PageAllocConfig {
        PageAllocConfig {
            high: PcpHigh::AutoTune,
            refill: PcpRefill::AllocFactor,
            drain: PcpDrain::FreeHigh,
            batch_scale_max: Some(PCP_BATCH_SCALE_MAX_DEFAULT),
            ..PageAllocConfig::v5_14()
        }
    }

    /// The preset of that name: `4.9`, `4.9-hopcpu`, `5.14`, `6.7`.
    pub fn preset(name: &str) -> Result<PageAllocConfig, String> {
        match name {
            "4.9" => Ok(PageAllocConfig::v4_9()),
            "4.9-hopcpu" => Ok(PageAllocConfig::v4_9_hopcpu()),
            "5.14" => Ok(PageAllocConfig::v5_14()),
            "6.7" => Ok(PageAllocConfig::v6_7()),
            _ => Err(format!("unknown page allocator era `{name}`; allowed: 4.9, 4.9-hopcpu, 5.14, 6.7")),
        }
    }

    /// The cap on `alloc_factor` / `free_factor`: the Kconfig value, or v6.7's default where
    /// a rule that exists only with the limit (the scaled refill) runs without it set.
    pub fn scale_max(&self) -> u32 {
        self.batch_scale_max.unwrap_or(PCP_BATCH_SCALE_MAX_DEFAULT)
    }

    /// `zone_batchsize()` (v4.9 and v5.14 differ only in the cap): 0.1% of the zone or the cap,
    /// a quarter of that, then `2^n - 1` so alternating tasks do not alias cache colours.
    pub fn zone_batchsize(&self, managed_pages: u64) -> u64 {
        let size = (managed_pages / 1024).min(self.batch_cap_kib / 4);
        let batch = (size / 4).max(1);
        (rounddown_pow_of_two(batch + batch / 2) - 1).max(1)
    }

    /// `pcp->high` for a zone of `managed_pages` with `low_wmark`, on a node of `node_cpus`.
    pub fn pcp_high(&self, batch: u64, low_wmark: u64, node_cpus: u64) -> u64 {
        match self.high {
            PcpHigh::SixBatch => 6 * batch,
            PcpHigh::HopcpuV5 => batch * MIGRATE_PCPTYPES as u64 + (batch << PAGE_ALLOC_COSTLY_ORDER),
            PcpHigh::LowWmarkPerLocalCpu | PcpHigh::AutoTune => {
                (low_wmark / node_cpus.max(1)).max(batch << 2)
            }
            PcpHigh::Pages(n) => n,
        }
    }

    /// v6.7 `pcp->high_max`: `zone_highsize()` at `MIN_PERCPU_PAGELIST_HIGH_FRACTION` (8), an
    /// eighth of the zone's managed pages split over the node's CPUs, at least `4 * batch`;
    /// `high_min` (the [`PageAllocConfig::pcp_high`] value) when high is not tuned.
    pub fn pcp_high_max(&self, batch: u64, high_min: u64, managed_pages: u64, node_cpus: u64) -> u64 {
        match self.high {
            PcpHigh::AutoTune => (managed_pages / 8 / node_cpus.max(1)).max(batch << 2).max(high_min),
            _ => high_min,
        }
    }

    /// `init_per_zone_wmark_min()`: `min_free_kbytes = sqrt(lowmem_kbytes * 16)`, clamped to
    /// `[128, min_free_kbytes_max]`.
    pub fn min_free_kbytes(&self, lowmem_pages: u64) -> u64 {
        int_sqrt(lowmem_pages * 4 * 16).clamp(128, self.min_free_kbytes_max)
    }
}

/// Unit costs of the allocator, converted once from the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageAllocCosts {
    pub pcp_alloc: Ps,
    pub pcp_free: Ps,
    pub lock_section: Ps,
    pub buddy_block: Ps,
    pub struct_page: Ps,
}

impl PageAllocCosts {
    /// From the profile's `[page_alloc]` section; the error names the missing section.
    pub fn from_profile(p: &MachineProfile) -> Result<PageAllocCosts, ProfileError> {
        let s = p.page_alloc()?;
        let mhz = p.clock_mhz();
        let cyc = |v: &crate::profile::Sourced| Ps::from_cycles(v.value, mhz);
        Ok(PageAllocCosts {
            pcp_alloc: cyc(&s.pcp_alloc_cycles),
            pcp_free: cyc(&s.pcp_free_cycles),
            lock_section: cyc(&s.zone_lock_section_cycles),
            buddy_block: cyc(&s.buddy_block_cycles),
            struct_page: Ps::from_ns(s.struct_page_miss_ns.value),
        })
    }
}
