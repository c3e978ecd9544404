//! Which zones reclaim works on and when (mm/vmscan.c, mm/page_alloc.c v4.2): kswapd's wake-up
//! and `balance_pgdat` zone by zone, direct reclaim's entry and `shrink_zones` over the
//! zonelist, and the priority loops around their walks (linux/mm/vmscan.rs runs each zone's
//! `shrink_lruvec`).

use super::super::page_alloc::{PageAlloc, ZoneType};
use super::{Deactivate, ScanControl, Step, Workingset, DEF_PRIORITY};
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mmzone::MigrateType;
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

impl Kernel {
    fn pa(&self) -> &PageAlloc {
        self.mm.page_alloc.as_ref().expect("reclaim needs the page allocator")
    }

    /// `zone_balanced(zone, 0, gap, classzone)` (v4.2): zone `zi` is above its high watermark
    /// plus `gap` plus its `lowmem_reserve` for an allocation of class zone `class`.
    fn zone_balanced(&self, zi: usize, gap: u64, class: ZoneType) -> bool {
        let pa = self.pa();
        pa.watermark_ok(zi, 0, pa.zones[zi].wmark.high + gap, class)
    }

    /// `pgdat_balanced` (v4.2, order 0): every zone of the node above its high watermark.
    fn node_balanced(&self, node: usize) -> bool {
        self.pa().node_zones(node).all(|zi| self.zone_balanced(zi, 0, self.pa().zones[zi].ty))
    }

    /// After an allocation on `node`: if no zone of the node is above its low watermark (plus
    /// `lowmem_reserve`), the next allocation's fast path fails and `wake_all_kswapds` wakes the
    /// node's kswapd (`wakeup_kswapd`: a zone is below its high watermark) if it sleeps.
    pub(in crate::linux) fn maybe_wake_kswapd(&mut self, ctx: &mut Ctx, at: Ps, node: usize) {
        let Some((t, true)) = self.mm.vmscan.kswapd[node] else { return };
        let pa = self.pa();
        let class = pa.classzone(node);
        if pa.node_zones(node).any(|zi| pa.watermark_ok(zi, 0, pa.zones[zi].wmark.low, class)) {
            return;
        }
        self.mm.vmscan.kswapd[node] = Some((t, false));
        self.mm.vmscan.woken[t] = true;
        self.counters.vmscan.kswapd_wakeups += 1;
        self.wake(ctx, t, at);
    }

    /// Whether the `pages` allocations of a read-around on this CPU would fail the slow path's
    /// last watermark (`min` plus `lowmem_reserve` on every zone of the node, with the per-CPU
    /// lists' refills: [`PageAlloc::min_capacity`]), or their charges the memory cgroup's limit
    /// (linux/mm/memcontrol.rs): it then reclaims directly first. Only with reclaim costs.
    pub(in crate::linux) fn should_direct_reclaim(&self, cpu: u32, pages: u64) -> bool {
        if self.mm.vmscan.costs.is_none() {
            return false;
        }
        if self.memcg_over(cpu, pages) {
            return true;
        }
        let Some(pa) = self.mm.page_alloc.as_ref() else { return false };
        pa.min_capacity(cpu, MigrateType::Movable, pages) < pages
    }

    /// `__alloc_pages_direct_reclaim` in task `t` for an allocation of `nr` pages (it retries
    /// afterwards), or `try_charge_memcg`'s `try_to_free_mem_cgroup_pages` when the charge is
    /// what fails: queues `do_try_to_free_pages` of `SWAP_CLUSTER_MAX` pages, or for a charge
    /// `max(nr, SWAP_CLUSTER_MAX)` (a large folio's charge asks for its pages).
    pub(in crate::linux) fn direct_reclaim(&mut self, ctx: &mut Ctx, t: usize, nr: u64) {
        let node = self.pa().node_of_cpu(ctx.cpu) as usize;
        let memcg = self.memcg_over(ctx.cpu, nr);
        if memcg {
            self.counters.vmscan.memcg_reclaims += 1;
        } else {
            self.counters.vmscan.allocstall += 1;
        }
        let scm = self.config.reclaim.swap_cluster_max as u64;
        let nr_to_reclaim = if memcg { scm.max(nr) } else { scm };
        self.start_reclaim(t, (false, memcg), node, nr_to_reclaim);
        ctx.then(Continuation::Reclaim(Step::Shrink));
    }

    /// `(kswapd, memcg)`: who reclaims, kswapd or a task, and for a cgroup's limit or not.
    fn start_reclaim(&mut self, t: usize, (kswapd, memcg): (bool, bool), node: usize, nr_to_reclaim: u64) {
        self.mm.vmscan.ensure_task(t);
        self.mm.vmscan.sc[t] = Some(Box::new(ScanControl {
            kswapd,
            memcg,
            node,
            walk: Vec::new(),
            next: 0,
            zone: 0,
            end_zone: 0,
            raise_priority: true,
            priority: DEF_PRIORITY,
            nr_to_reclaim,
            pass_reclaimed: 0,
            pass_scanned: 0,
            total_reclaimed: 0,
            nr: [0; 2],
            started: false,
            active_next: false,
            deactivate: Deactivate::WhileLow { refaults_seen: false },
            skipped_deactivate: false,
            force_deactivate: false,
            list: Vec::new(),
            pos: 0,
            kept: Vec::new(),
            freed: Vec::new(),
        }));
        self.begin_walk(t);
    }

    /// A priority's walk of the zones. Direct reclaim (`shrink_zones`, v4.2): the zonelist's
    /// zones of the node, the highest first (the other nodes' zones are not walked). kswapd
    /// (`balance_pgdat`, v4.2): `end_zone` is the highest zone below its high watermark; the walk
    /// goes from the lowest zone up to it ("the page allocator works in the opposite
    /// direction"), `sc.nr_reclaimed` starting at 0. Returns false when no zone needs kswapd.
    fn begin_walk(&mut self, t: usize) -> bool {
        let sc = self.mm.vmscan.sc[t].as_ref().expect("a reclaimer has its scan_control");
        let (node, kswapd) = (sc.node, sc.kswapd);
        let zones: Vec<usize> = self.pa().node_zones(node).collect();
        let (walk, end_zone) = if kswapd {
            let Some(end) = zones.iter().rposition(|&zi| !self.zone_balanced(zi, 0, ZoneType::Dma)) else {
                return false;
            };
            (zones[..=end].to_vec(), zones[end])
        } else {
            (zones.into_iter().rev().collect(), 0)
        };
        let sc = self.sc(t);
        sc.walk = walk;
        sc.next = 0;
        sc.end_zone = end_zone;
        if kswapd {
            sc.raise_priority = true;
            sc.total_reclaimed = 0;
        }
        true
    }

    /// The next zone of the walk to shrink. For kswapd, `kswapd_shrink_zone` (v4.2): its
    /// `nr_to_reclaim` is `max(SWAP_CLUSTER_MAX, high_wmark_pages(zone))`, and a zone above its
    /// high watermark plus a gap (`min(low, 1% of the zone)`, `KSWAPD_ZONE_BALANCE_GAP_RATIO`)
    /// plus its `lowmem_reserve` for `end_zone` is skipped (and counts as having scanned enough).
    pub(super) fn next_zone(&mut self, t: usize) -> Option<usize> {
        let scm = self.config.reclaim.swap_cluster_max as u64;
        loop {
            let sc = self.sc(t);
            let zi = *sc.walk.get(sc.next)?;
            sc.next += 1;
            if !sc.kswapd {
                return Some(zi);
            }
            let end_zone = sc.end_zone;
            let pa = self.pa();
            let z = &pa.zones[zi];
            let (high, gap) = (z.wmark.high, z.wmark.low.min(z.sized_as.div_ceil(100)));
            let balanced = self.zone_balanced(zi, gap, pa.zones[end_zone].ty);
            let sc = self.sc(t);
            sc.nr_to_reclaim = scm.max(high);
            if balanced {
                sc.raise_priority = false;
                continue;
            }
            return Some(zi);
        }
    }

    /// The end of a priority's walk: `do_try_to_free_pages` (v4.2) is done once
    /// `nr_to_reclaim` is reclaimed or priority 0 was walked; `balance_pgdat` (v4.2) raises the
    /// priority when no zone scanned its `nr_to_reclaim` or nothing was reclaimed, and is done
    /// at priority 0 or once the node is balanced (`pgdat_balanced`). Returns whether done;
    /// otherwise the next walk has begun.
    pub(super) fn end_of_walk(&mut self, t: usize) -> bool {
        let retry = self.config.reclaim.workingset == Workingset::ActivateAndDeactivate;
        let sc = self.sc(t);
        if !sc.kswapd {
            if sc.total_reclaimed >= sc.nr_to_reclaim {
                return true;
            }
            if sc.priority == 0 {
                // v5.5+ (b91ac374346b): nothing reclaimed at any priority while the active list
                // was left unaged: the walk again from DEF_PRIORITY, deactivating whatever the
                // statistics say.
                if !(retry && sc.total_reclaimed == 0 && sc.skipped_deactivate) {
                    return true;
                }
                (sc.priority, sc.force_deactivate, sc.skipped_deactivate) = (DEF_PRIORITY, true, false);
                self.counters.vmscan.force_deactivate += 1;
                return !self.begin_walk(t);
            }
            sc.priority -= 1;
            return !self.begin_walk(t);
        }
        if sc.raise_priority || sc.total_reclaimed == 0 {
            sc.priority -= 1;
        }
        let (node, priority) = (sc.node, sc.priority);
        if priority < 1 || self.node_balanced(node) {
            return true;
        }
        !self.begin_walk(t)
    }

    /// kswapd's loop body (`kswapd` -> `balance_pgdat`, v4.2): sleep if the node is balanced
    /// (every zone above its high watermark), else a balance run from `DEF_PRIORITY`.
    pub(in crate::linux) fn kswapd(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let node = (0..self.mm.vmscan.kswapd.len())
            .find(|&n| self.mm.vmscan.kswapd[n].is_some_and(|(kt, _)| kt == t))
            .expect("Op::Kswapd from a task that is no kswapd");
        self.mm.vmscan.woken[t] = false;
        if self.node_balanced(node) {
            self.mm.vmscan.kswapd[node] = Some((t, true));
            return self.deschedule(ctx, false, ctx.now);
        }
        self.counters.vmscan.pageoutrun += 1;
        let scm = self.config.reclaim.swap_cluster_max as u64;
        self.start_reclaim(t, (true, false), node, scm);
        ctx.then(Continuation::Reclaim(Step::Shrink));
        Ps::ZERO
    }
}
