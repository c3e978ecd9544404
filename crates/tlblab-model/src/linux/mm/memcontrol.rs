//! One memory cgroup's limit on a workload's page cache (mm/memcontrol.c; the rule is the same
//! from v2.6.25's limit reclaim to v6.18's `try_charge_memcg`, docs/references/linux-mm.md#memcg-limit):
//! - `filemap_add_folio` charges each new page-cache page to the cgroup (`mem_cgroup_charge`);
//!   a charge that would take the usage past the limit (`page_counter_try_charge` fails)
//!   reclaims from the cgroup's own LRU in the charging task first
//!   (`try_to_free_mem_cgroup_pages`, `nr_to_reclaim = max(nr_pages, SWAP_CLUSTER_MAX)`, the
//!   priority loop of direct reclaim over the cgroup's lruvecs), then charges again. It wakes
//!   no kswapd and counts no `allocstall`: the machine's free memory is not low.
//! - The reclaimed pages are uncharged as they are freed (`mem_cgroup_uncharge_folios` before
//!   `free_unref_folios`, at the end of `shrink_folio_list`'s batch).
//!
//! The model charges page-cache fills of files (linux/mm/filemap.rs), the only memory of the
//! workload that sets a limit (vm-scalability's readers); its page tables and stacks, which
//! Linux charges too, are a few pages. The cgroup's LRU is the zones' LRU: every page on it is
//! the cgroup's.
//!
//! - Charges come from a per-CPU stock (`consume_stock`); an empty stock charges
//!   `MEMCG_CHARGE_BATCH` pages to the page counters and keeps the surplus (`refill_stock`). A
//!   batch the limit refuses falls back to the page itself. Each `page_counter_try_charge`,
//!   `_cancel` and `_uncharge` is an atomic on each counter from the cgroup up to the root (and,
//!   with v1's swap accounting, first on the `memsw` counters): lines the CPUs that charge and
//!   the CPUs that reclaim hand over (docs/references/linux-mm.md#page-counter).
//!
//! The statistics reclaim reads (`lruvec_page_state`: the file lists' sizes and the activated
//! refaults) are, with `memcg_stats = ratelimited` (v6.12+), as the last flush left them
//! (docs/references/linux-mm.md#memcg-statistics): the periodic flusher folds the per-CPU
//! deltas in every `FLUSH_TIME` (2 s; a deferrable work item, so it runs at the first tick of a
//! busy CPU once due), and reclaim and the refault path flush only when it is a full period late
//! (`mem_cgroup_flush_stats_ratelimited`). The flush's own few microseconds in a kworker every
//! 2 s are not charged. With `exact` the readers see the counts as they are.

use crate::hw::coherence::CacheLine;
use crate::linux::ctx::Ctx;
use crate::linux::mm::vmscan::{Lruvec, MemcgStats};
use crate::linux::Kernel;
use crate::rng::Rng;
use crate::time::Ps;

/// `MEMCG_CHARGE_BATCH` (v5.x-v6.18: 64 pages).
pub const CHARGE_BATCH: u64 = 64;

/// The cgroup's limit and usage, in pages (`memory.max` / `memory.limit_in_bytes`, and the
/// page counter's `usage`, which counts the CPUs' stocks), its per-CPU stocks, and its page
/// counters' lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemCgroup {
    pub max: u64,
    pub usage: u64,
    /// Per CPU: pages charged and not yet used (`memcg_stock_pcp`).
    pub stock: Vec<u64>,
    /// The `memory` counters from the cgroup up to the root (`page_counter.parent`), then, with
    /// v1's swap accounting, the `memsw` ones: one `usage` line each.
    lines: Vec<CacheLine>,
    /// The last charge's walk over `lines` (a buffer kept between charges).
    walk: Vec<usize>,
    pub depth: usize,
    pub memsw: bool,
}

/// The hierarchy a charge walks: `depth` counters from the cgroup to the root, and whether v1's
/// swap accounting (`do_memsw_account`) doubles them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hierarchy {
    pub depth: usize,
    pub memsw: bool,
}

impl MemCgroup {
    pub fn new(max: u64, cpus: usize, h: Hierarchy) -> MemCgroup {
        let n = h.depth * if h.memsw { 2 } else { 1 };
        MemCgroup {
            max,
            usage: 0,
            stock: vec![0; cpus],
            lines: vec![CacheLine::new(); n],
            walk: Vec::with_capacity(4 * h.depth + 2),
            depth: h.depth,
            memsw: h.memsw,
        }
    }

    /// Whether `consume_stock` of `pages` on `cpu` succeeds (at most a batch, all in stock).
    fn stocked(&self, cpu: u32, pages: u64) -> bool {
        pages <= CHARGE_BATCH && self.stock.get(cpu as usize).is_some_and(|&s| s >= pages)
    }

    /// Whether charging `pages` on `cpu` would pass the limit: its stock is short and the
    /// counter would go over (`consume_stock` and `page_counter_try_charge` both fail).
    pub fn over(&self, cpu: u32, pages: u64) -> bool {
        !self.stocked(cpu, pages) && self.usage + pages > self.max
    }

    /// The counters' lines one `try_charge_memcg` of `nr` pages (a folio) on `cpu` writes, in
    /// order (memsw index `depth + i`), with its effect on the usage and the stock: a batch of
    /// `max(MEMCG_CHARGE_BATCH, nr)`, its surplus to the stock.
    fn charge_walk(&mut self, cpu: u32, nr: u64) -> &[usize] {
        let c = cpu as usize;
        self.walk.clear();
        if self.stocked(cpu, nr) {
            self.stock[c] -= nr;
            return &self.walk;
        }
        let d = self.depth;
        let memsw = if self.memsw { d..2 * d } else { 0..0 };
        let batch = CHARGE_BATCH.max(nr);
        // The batch: memsw (unlimited) charged at every level, then memory's levels.
        self.walk.extend(memsw.clone());
        if self.usage + batch <= self.max {
            self.walk.extend(0..d);
            self.usage += batch;
            self.stock[c] += batch - nr;
            return &self.walk;
        }
        // The cgroup's own counter refuses it (add, then cancel); memsw's charge is undone at
        // every level; then the folio alone.
        self.walk.extend([0, 0]);
        self.walk.extend(memsw.clone());
        self.walk.extend(memsw);
        self.walk.extend(0..d);
        self.usage += nr;
        &self.walk
    }
}

/// `FLUSH_TIME` (mm/memcontrol.c, v5.15-v6.18: `2UL*HZ`), in seconds.
pub const FLUSH_TIME_S: u64 = 2;

/// One lruvec's statistics as `lruvec_page_state` reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LruvecStat {
    pub inactive_file: u64,
    pub active_file: u64,
    pub workingset_activate_file: u64,
}

impl LruvecStat {
    /// The counts as they are.
    fn of(l: &Lruvec) -> LruvecStat {
        LruvecStat {
            inactive_file: l.inactive_file.pages(),
            active_file: l.active_file.pages(),
            workingset_activate_file: l.workingset_activations,
        }
    }
}

/// The statistics of every lruvec as the last flush left them, and the flushes' clock.
#[derive(Debug, Clone, Default)]
pub struct Rstat {
    flushed: Vec<LruvecStat>,
    /// `flush_last_time`: `jiffies` at the last flush of the whole tree.
    last_flush: u64,
    /// When `stats_flush_dwork` is next due, in `jiffies`.
    next_periodic: u64,
}

impl Kernel {
    /// Run `seed`'s phase of the periodic flush (queued at boot, long before any benchmark, so
    /// due at any moment of its period), on `jiffies` as seeded.
    pub fn seed_memcg_stats(&mut self, seed: u64) {
        let period = FLUSH_TIME_S * self.jiffies.hz;
        let now = self.jiffies.at(Ps::ZERO);
        let s = &mut self.mm.memcg_stats;
        s.next_periodic = now + 1 + Rng::stream(seed, "memcg stats flush phase").below(period);
        s.last_flush = s.next_periodic - period;
    }

    /// As the run starts: the last flush saw the machine as it was set up.
    pub fn memcg_stats_start(&mut self) {
        let live = self.live_lruvec_stats();
        self.mm.memcg_stats.flushed = live;
    }

    fn live_lruvec_stats(&self) -> Vec<LruvecStat> {
        self.mm.vmscan.lruvecs.iter().map(LruvecStat::of).collect()
    }

    /// `lruvec_page_state` of zone `zi`'s lruvec: as the last flush left it, or as it is.
    pub(in crate::linux) fn lruvec_page_state(&self, zi: usize) -> LruvecStat {
        if self.config.reclaim.memcg_stats == MemcgStats::Ratelimited {
            if let Some(s) = self.mm.memcg_stats.flushed.get(zi) {
                return *s;
            }
        }
        LruvecStat::of(&self.mm.vmscan.lruvecs[zi])
    }

    /// `do_flush_stats` of the whole tree at `now`.
    fn do_flush_stats(&mut self, now: Ps) {
        let live = self.live_lruvec_stats();
        let s = &mut self.mm.memcg_stats;
        s.flushed = live;
        s.last_flush = self.jiffies.at(now);
    }

    /// `flush_memcg_stats_dwork`, at a busy CPU's tick: flushes if due and queues itself
    /// `FLUSH_TIME` on.
    pub(in crate::linux) fn flush_memcg_stats_dwork(&mut self, now: Ps) {
        if self.config.reclaim.memcg_stats != MemcgStats::Ratelimited {
            return;
        }
        let j = self.jiffies.at(now);
        if j < self.mm.memcg_stats.next_periodic {
            return;
        }
        self.do_flush_stats(now);
        self.counters.vmscan.memcg_stats_flushes += 1;
        let s = &mut self.mm.memcg_stats;
        s.next_periodic = j + FLUSH_TIME_S * self.jiffies.hz;
    }

    /// `mem_cgroup_flush_stats_ratelimited` (reclaim's `prepare_scan_control`, the refault
    /// path): flushes only when the last flush is more than two periods old. Its threshold of
    /// pending updates (`MEMCG_CHARGE_BATCH` a CPU) is taken as passed: a reclaim batch alone
    /// moves 32 pages.
    pub(in crate::linux) fn mem_cgroup_flush_stats_ratelimited(&mut self, now: Ps) {
        if self.config.reclaim.memcg_stats != MemcgStats::Ratelimited {
            return;
        }
        if self.jiffies.at(now) > self.mm.memcg_stats.last_flush + 2 * FLUSH_TIME_S * self.jiffies.hz {
            self.do_flush_stats(now);
            self.counters.vmscan.memcg_stats_flushes_ratelimited += 1;
        }
    }

    /// Puts the workload in a memory cgroup limited to `pages` with hierarchy `h` (set before
    /// it runs).
    pub fn set_memcg_limit(&mut self, pages: u64, h: Hierarchy) {
        self.mm.memcg = Some(MemCgroup::new(pages, self.cpus.len(), h));
    }

    /// Whether a charge of `pages` on `cpu` would pass the cgroup's limit (no cgroup: never).
    pub(in crate::linux) fn memcg_over(&self, cpu: u32, pages: u64) -> bool {
        self.mm.memcg.as_ref().is_some_and(|m| m.over(cpu, pages))
    }

    /// `mem_cgroup_charge` of a new page-cache folio of `nr` pages on this CPU at `at` (its
    /// reclaim, if any, came first): the counters' atomics in turn. Returns the time taken.
    pub(in crate::linux) fn memcg_charge(&mut self, ctx: &Ctx, at: Ps, nr: u64) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let Some(m) = &mut self.mm.memcg else { return Ps::ZERO };
        m.charge_walk(ctx.cpu, nr);
        let mut d = Ps::ZERO;
        for &i in &m.walk {
            d += m.lines[i].write(ctx.cpu, at + d, &topo, &lines);
        }
        self.counters.vmscan.memcg_counter_ps += d.0;
        d
    }

    /// `mem_cgroup_uncharge_folios` of `pages` page-cache pages reclaim frees on this CPU at
    /// `at`: one `page_counter_uncharge` of the batch (memory, then memsw), an atomic a level.
    /// Returns the time taken.
    pub(in crate::linux) fn memcg_uncharge(&mut self, ctx: &Ctx, at: Ps, pages: u64) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let Some(m) = &mut self.mm.memcg else { return Ps::ZERO };
        m.usage = m.usage.saturating_sub(pages);
        let mut d = Ps::ZERO;
        if pages > 0 {
            for l in &mut m.lines {
                d += l.write(ctx.cpu, at + d, &topo, &lines);
            }
        }
        self.counters.vmscan.memcg_counter_ps += d.0;
        d
    }

    /// The cgroup's usage and limit, in pages, where the workload has one.
    pub fn memcg(&self) -> Option<&MemCgroup> {
        self.mm.memcg.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::{Hierarchy, MemCgroup, CHARGE_BATCH};

    const V2: Hierarchy = Hierarchy { depth: 2, memsw: false };

    #[test]
    fn a_charge_fails_only_past_the_limit_and_the_stock() {
        let mut m = MemCgroup::new(32, 2, V2);
        m.usage = 31;
        assert!(!m.over(0, 1));
        assert!(m.over(0, 2));
        m.usage = 32;
        assert!(m.over(0, 1));
        // Pages in CPU 1's stock are charged already: it may use them, CPU 0 may not.
        m.stock[1] = 5;
        assert!(!m.over(1, 1) && m.over(0, 1));
    }

    #[test]
    fn a_charge_takes_a_batch_when_it_fits_and_the_page_alone_at_the_limit() {
        let mut m = MemCgroup::new(1000, 1, V2);
        // A batch: both levels once, 63 pages stocked; the next 63 touch no counter.
        assert_eq!(m.charge_walk(0, 1), vec![0, 1]);
        assert_eq!((m.usage, m.stock[0]), (CHARGE_BATCH, CHARGE_BATCH - 1));
        for _ in 1..CHARGE_BATCH {
            assert!(m.charge_walk(0, 1).is_empty());
        }
        // Near the limit: the cgroup's counter refuses the batch (add and cancel), then the
        // page is charged at every level.
        m.usage = m.max - 10;
        assert_eq!(m.charge_walk(0, 1), vec![0, 0, 0, 1]);
        assert_eq!((m.usage, m.stock[0]), (m.max - 9, 0));
        // v1 with swap accounting: memsw charged first at every level and undone.
        let mut v1 = MemCgroup::new(100, 1, Hierarchy { depth: 2, memsw: true });
        v1.usage = 90;
        assert_eq!(v1.charge_walk(0, 1), vec![2, 3, 0, 0, 2, 3, 2, 3, 0, 1]);
    }

    #[test]
    fn a_folio_past_a_batch_is_charged_whole_and_never_from_the_stock() {
        let mut m = MemCgroup::new(1000, 1, V2);
        m.stock[0] = 60;
        // 16 pages come from the stock; 128 cannot (consume_stock takes at most a batch).
        assert!(m.charge_walk(0, 16).is_empty());
        assert_eq!(m.stock[0], 44);
        assert_eq!(m.charge_walk(0, 128), vec![0, 1]);
        assert_eq!((m.usage, m.stock[0]), (128, 44));
        // At the limit the folio is over whatever the stock holds.
        m.usage = m.max - 100;
        assert!(m.over(0, 128) && !m.over(0, 44));
    }
}
