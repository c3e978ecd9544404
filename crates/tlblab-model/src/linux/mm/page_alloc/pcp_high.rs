//! The per-CPU lists' `high` and how much a drain or refill moves (mm/page_alloc.c): v5.14's
//! `nr_pcp_free()` free factor, and v6.7's auto-tuning of `pcp->high` between `high_min` and
//! `high_max` (`nr_pcp_high()`, `nr_pcp_alloc()`, `decay_pcp_high()`).

use super::buddy::Section;
use super::{Env, PageAlloc, PageAllocConfig, PcpDrain, PcpHigh, PerCpuPages};
use crate::time::Ps;

impl PageAlloc {
    /// How much one drain frees (entries for v4.9, base pages otherwise), given the `high`
    /// [`nr_pcp_high`] returned.
    pub(super) fn nr_to_drain(&mut self, zi: usize, cpu: u32, high: u64, free_high: bool) -> u64 {
        let cap = self.cfg.batch_scale_max;
        let pcp = &mut self.zones[zi].pcp[cpu as usize];
        match self.cfg.drain {
            PcpDrain::BatchEntries | PcpDrain::BatchPages => pcp.batch,
            PcpDrain::FreeFactor | PcpDrain::FreeHigh => {
                // nr_pcp_free() (v5.14; v6.7 adds free_high and the scale limit).
                let batch = pcp.batch;
                if free_high {
                    return pcp.count.min(batch << self.cfg.scale_max());
                }
                if high < batch {
                    return 1;
                }
                let (min_nr, max_nr) = (batch, high - batch);
                let b = batch << pcp.free_factor.min(20);
                if b < max_nr && cap.is_none_or(|m| pcp.free_factor < m) {
                    pcp.free_factor += 1;
                }
                b.clamp(min_nr, max_nr.max(min_nr))
            }
        }
    }

    /// v6.7 `nr_pcp_alloc()` for an empty list of `order`: raises `high` by the refill's batch
    /// (not under reclaim) and returns how many blocks `rmqueue_bulk` takes.
    pub(super) fn nr_pcp_alloc(&mut self, zi: usize, cpu: u32, order: u8) -> u64 {
        let scale_max = self.cfg.scale_max();
        let reclaim_active = self.zones[zi].reclaim_active;
        let pcp = &mut self.zones[zi].pcp[cpu as usize];
        let base = pcp.batch;
        pcp.high = pcp.high.clamp(pcp.high_min, pcp.high_max);
        let mut high = pcp.high;
        if high < base {
            return 1;
        }
        let mut batch = if order == 0 { base << pcp.alloc_factor } else { base };
        // "If we had larger pcp->high, we could avoid to allocate from zone."
        if pcp.high_min != pcp.high_max && !reclaim_active {
            high = (high + batch).min(pcp.high_max);
            pcp.high = high;
        }
        if order == 0 {
            let max_nr_alloc = high.saturating_sub(pcp.count + base).max(base);
            if batch <= max_nr_alloc && pcp.alloc_factor < scale_max {
                pcp.alloc_factor += 1;
            }
            batch = batch.min(max_nr_alloc);
        }
        if batch > 1 {
            batch = (batch >> order).max(2);
        }
        batch
    }

    /// v6.7 `decay_pcp_high()`, run by the vmstat worker (`refresh_cpu_vm_stats`, every
    /// `sysctl_stat_interval`, 1 s by default) on each CPU: while `high` is above `high_min`,
    /// lower it to the largest of `count - (batch << PCP_BATCH_SCALE_MAX)`, `high - high / 8`
    /// and `high_min`, and free what the list holds above the new `high` under one
    /// `zone->lock`. A run of a few milliseconds sees no decay, or one per CPU at most: a
    /// raised `high` stays raised for the whole window. Returns when done.
    pub fn decay_pcp_high(&mut self, zi: usize, cpu: u32, now: Ps, env: Env) -> Ps {
        let scale_max = self.cfg.scale_max();
        let pcp = &mut self.zones[zi].pcp[cpu as usize];
        if pcp.high <= pcp.high_min {
            return now;
        }
        let by_count = pcp.count.saturating_sub(pcp.batch << scale_max);
        pcp.high = by_count.max(pcp.high - pcp.high / 8).max(pcp.high_min);
        if pcp.count <= pcp.high {
            return now;
        }
        let n = pcp.count - pcp.high;
        let picked = self.pick_for_drain(zi, cpu, n, 1 % self.cfg.pcp_lists.nr_lists());
        let mut s = Section::new();
        let t = now + self.costs.buddy_block * picked.len() as u64;
        self.zones[zi].free_picked(&picked, &mut s);
        let (grant, hold, _) = self.lock_section(zi, cpu, t, &s, env);
        self.stats.drains += 1;
        self.stats.drain_blocks += picked.len() as u64;
        grant + hold
    }
}

/// `nr_pcp_high()`: the `high` a free compares `count` with. Before v6.7 `pcp->high`. v6.7
/// (auto-tuning): `high` clamped into `[high_min, high_max]`; a high-order free run lowers it by
/// `batch << PCP_BATCH_SCALE_MAX` and drains (0); under reclaim it is lowered by the free
/// factor's batch and the list kept to `min(4 * batch, high)`; a list at `high` raises `high` to
/// at least one scaled drain plus a batch. `free_high` without tuning (the v6.7 drain alone)
/// drains as well.
pub(super) fn nr_pcp_high(
    cfg: PageAllocConfig,
    pcp: &mut PerCpuPages,
    reclaim_active: bool,
    free_high: bool,
) -> u64 {
    if cfg.high != PcpHigh::AutoTune {
        return if free_high { 0 } else { pcp.high };
    }
    let batch = pcp.batch;
    pcp.high = pcp.high.clamp(pcp.high_min, pcp.high_max);
    let high = pcp.high;
    if high == 0 {
        return 0;
    }
    if free_high {
        pcp.high = high.saturating_sub(batch << cfg.scale_max()).max(pcp.high_min);
        return 0;
    }
    if reclaim_active {
        pcp.high = high.saturating_sub(batch << pcp.free_factor.min(20)).max(pcp.high_min);
        return (batch << 2).min(pcp.high);
    }
    if pcp.high_min == pcp.high_max {
        return high;
    }
    if pcp.count >= high {
        let need_high = (batch << pcp.free_factor.min(20)) + batch;
        if pcp.high < need_high {
            pcp.high = need_high.clamp(pcp.high_min, pcp.high_max);
        }
    }
    high
}
