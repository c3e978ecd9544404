//! The LRU shrinking of mm/vmscan.c (v4.2, with v4.3's `TTU_BATCH_FLUSH`): `shrink_active_list`,
//! `shrink_inactive_list`'s isolation, `shrink_page_list` and the batch's end
//! (`free_hot_cold_page_list`, `putback_inactive_pages`); the rules are vmscan.rs's.

use super::{batch_end_order, page_check_references, remove_mapping_frees, BatchEnd, PageRef};
use super::{Back, Isolated, Step, UnmapFlush, PG_ACTIVE, PG_LRU, PG_REFERENCED};
use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

impl Kernel {
    /// `shrink_active_list` (v4.2): isolate `nr` pages' worth of folios from the active tail
    /// (v5.x+ `isolate_lru_folios` counts a folio's pages), age them through the rmap (file
    /// pages that are not executable go inactive whatever their references), put them on the
    /// inactive head. Returns the time taken from `at`.
    pub(super) fn shrink_active_list(&mut self, ctx: &mut Ctx, t: usize, nr: u64, at: Ps) -> Ps {
        let zone = self.sc(t).zone;
        let c = self.reclaim_costs().clone();
        let mut moved = Vec::with_capacity(nr as usize);
        let mut pages = 0;
        while pages < nr {
            let Some(pfn) = self.mm.vmscan.lru_pop(zone, true) else { break };
            pages += self.mm.vmscan.nr_pages(pfn);
            moved.push(pfn);
        }
        let n = moved.len() as u64;
        let per = c.lru_page + c.struct_page_miss;
        let mut d = self.lru_locked(ctx, at, zone, per * n);
        for &pfn in &moved {
            let (_, vmas) = self.page_referenced(pfn);
            let w = c.rmap_vma * vmas as u64;
            ctx.charge(Bucket::Reclaim, w);
            d += w;
            self.mm.vmscan.flags[pfn as usize] &= !PG_ACTIVE;
        }
        d += self.lru_locked(ctx, at + d, zone, c.lru_page * n);
        for pfn in moved {
            self.mm.vmscan.lru_push(zone, false, pfn);
        }
        self.counters.vmscan.pgdeactivate += pages;
        d
    }

    /// `shrink_inactive_list`'s first half (v4.2): `lru_add_drain`, then under `lru_lock`
    /// `isolate_lru_pages` of up to `nr` pages from the inactive tail (folios until their pages
    /// reach `nr`, as v5.x+ `isolate_lru_folios` counts them).
    pub(super) fn shrink_inactive_list(&mut self, ctx: &mut Ctx, t: usize, nr: u64) -> Ps {
        let (zone, kswapd) = (self.sc(t).zone, self.sc(t).kswapd);
        if !kswapd {
            // too_many_isolated for a GFP_KERNEL-like caller: isolated > inactive / 8.
            let l = &self.mm.vmscan.lruvecs[zone];
            if l.nr_isolated > l.inactive_file.len() as u64 >> 3 {
                self.counters.vmscan.too_many_isolated += 1;
            }
        }
        let mut d = self.lru_add_drain(ctx, ctx.now);
        let c = self.reclaim_costs().clone();
        let mut list = Vec::with_capacity(nr as usize);
        let mut n = 0;
        while n < nr {
            let Some(pfn) = self.mm.vmscan.lru_pop(zone, false) else { break };
            self.mm.vmscan.flags[pfn as usize] &= !PG_LRU;
            n += self.mm.vmscan.nr_pages(pfn);
            list.push(Isolated { pfn, reclaiming: false, to_unmap: Vec::new(), unmapped: Vec::new() });
        }
        // Per folio taken, and per page short of `nr` where the list ran out (the count the
        // single-page model always charged).
        let units = list.len() as u64 + nr.saturating_sub(n);
        d += self.lru_locked(ctx, ctx.now + d, zone, (c.lru_page + c.struct_page_miss) * units.max(1));
        self.sc(t).pass_scanned += n;
        let cnt = &mut self.counters.vmscan;
        if kswapd {
            cnt.pgscan_kswapd += n;
        } else {
            cnt.pgscan_direct += n;
        }
        if n == 0 {
            ctx.then(Continuation::Reclaim(Step::Shrink));
            return d;
        }
        cnt.isolate_batches += 1;
        cnt.isolated_pages += n;
        self.mm.vmscan.lruvecs[zone].nr_isolated += n;
        let sc = self.sc(t);
        sc.list = list;
        sc.pos = 0;
        ctx.then(Continuation::Reclaim(Step::Pages));
        d
    }

    /// `shrink_page_list` (v4.2, with v4.3's `TTU_BATCH_FLUSH`) from the current page: the
    /// reference check, `try_to_unmap`, `__remove_mapping`. A flush per page ends the step (the
    /// reclaimer waits for it); the list's end queues the batch flush and the batch's end.
    pub(super) fn shrink_page_list(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let c = self.reclaim_costs().clone();
        let batched = self.config.reclaim.unmap_flush == UnmapFlush::Batched;
        let mut d = Ps::ZERO;
        loop {
            let sc = self.sc(t);
            if sc.pos == sc.list.len() {
                // v4.3: try_to_unmap_flush before the pages are freed (free_hot_cold_page_list);
                // the UNSAFE knob frees first.
                ctx.then_all(batch_end_order(self.config.mm.free_before_flush).map(|end| {
                    Continuation::Reclaim(match end {
                        BatchEnd::Flush => Step::FlushBatch,
                        BatchEnd::Free => Step::Finish,
                    })
                }));
                return d;
            }
            let i = sc.pos;
            let pfn = sc.list[i].pfn;
            if !sc.list[i].reclaiming {
                let (w, decision) = self.check_references(ctx, pfn);
                d += w;
                let back = match decision {
                    PageRef::Activate => Some(Back::Active),
                    PageRef::Keep => Some(Back::Inactive),
                    PageRef::Reclaim => None,
                };
                let sc = self.sc(t);
                if let Some(b) = back {
                    sc.kept.push((pfn, b));
                    sc.pos += 1;
                    continue;
                }
                let maps = self.folio_mappings(pfn);
                let sc = self.sc(t);
                sc.list[i].reclaiming = true;
                sc.list[i].to_unmap = maps;
            }
            let mut page = std::mem::take(&mut self.sc(t).list[i]);
            let (w, done) = self.try_to_unmap(ctx, t, &mut page, batched, Continuation::Reclaim(Step::Pages));
            self.sc(t).list[i] = page;
            d += w;
            if !done {
                return d;
            }
            // __remove_mapping: the page leaves the page cache; freed at the batch's end. A
            // fault that mapped it again meanwhile (during a flush per page) keeps it.
            if !remove_mapping_frees(!self.folio_mappings(pfn).is_empty()) {
                let sc = self.sc(t);
                sc.kept.push((pfn, Back::Inactive));
                sc.pos += 1;
                continue;
            }
            let Owner::PageCache { file, index } = self.mm.frames.owner(pfn) else {
                panic!("reclaim of pfn {pfn}, which is no page-cache page");
            };
            let nr = self.mm.vmscan.nr_pages(pfn);
            let shadow = self.workingset_eviction(pfn, nr);
            self.mm.files[file as usize].evict(index, nr, shadow);
            d += self.i_pages_path(
                ctx,
                ctx.now + d,
                file,
                c.remove_mapping,
                c.remove_mapping_locked,
                Bucket::Reclaim,
            );
            let sc = self.sc(t);
            let page = std::mem::replace(
                &mut sc.list[i],
                Isolated { pfn, reclaiming: true, to_unmap: Vec::new(), unmapped: Vec::new() },
            );
            sc.freed.push(page);
            sc.pos += 1;
            if c.remove_mapping_locked.is_some() {
                // One page a step from here: the next page's `i_pages` section is asked for in
                // time order with the other CPUs' (hw/lock.rs needs requests in time order; a
                // batch's 32 sections in one step would hold the locks ahead of them).
                ctx.then(Continuation::Reclaim(Step::Pages));
                return d;
            }
        }
    }

    /// The end of `shrink_inactive_list` (v4.2): free the reclaimed pages
    /// (`free_hot_cold_page_list`), put the others back under `lru_lock`
    /// (`putback_inactive_pages`), then back to `shrink_lruvec`.
    pub(super) fn finish_batch(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let c = self.reclaim_costs().clone();
        let sc = self.sc(t);
        let (zone, kswapd) = (sc.zone, sc.kswapd);
        let freed = std::mem::take(&mut sc.freed);
        let kept = std::mem::take(&mut sc.kept);
        sc.list.clear();
        sc.pos = 0;
        // Every folio isolated was freed or kept.
        let v = &self.mm.vmscan;
        let n: u64 = freed.iter().map(|p| v.nr_pages(p.pfn)).sum();
        let isolated = n + kept.iter().map(|&(p, _)| v.nr_pages(p)).sum::<u64>();
        let sc = self.sc(t);
        sc.pass_reclaimed += n;
        sc.total_reclaimed += n;
        // mem_cgroup_uncharge_folios, then free_unref_folios (v6.x; linux/mm/memcontrol.rs).
        let mut d = self.memcg_uncharge(ctx, ctx.now, n);
        ctx.charge(Bucket::Reclaim, d);
        for page in &freed {
            d += self.free_reclaimed(ctx, ctx.now + d, page);
        }
        d += self.lru_locked(ctx, ctx.now + d, zone, c.lru_page * kept.len() as u64);
        let mut activated = 0;
        for (pfn, back) in kept {
            let nr = self.mm.vmscan.nr_pages(pfn);
            let f = &mut self.mm.vmscan.flags[pfn as usize];
            *f |= PG_LRU;
            match back {
                Back::Inactive => {
                    self.mm.vmscan.lru_push(zone, false, pfn);
                    self.counters.vmscan.pgkeep += nr;
                }
                Back::Active => {
                    *f |= PG_ACTIVE;
                    self.mm.vmscan.lru_push(zone, true, pfn);
                    activated += nr;
                }
            }
        }
        self.mm.vmscan.lruvecs[zone].nr_isolated -= isolated;
        let cnt = &mut self.counters.vmscan;
        cnt.pgactivate += activated;
        if kswapd {
            cnt.pgsteal_kswapd += n;
        } else {
            cnt.pgsteal_direct += n;
        }
        ctx.then(Continuation::Reclaim(Step::Shrink));
        d
    }

    /// `page_check_references` (v4.2; v6.6's `folio_check_references` decides the same for the
    /// pages modelled) of `pfn`, with `shrink_page_list`'s per-page work before it: the rmap walk
    /// of `page_referenced` and `PG_referenced`'s update. Returns the time taken and the decision.
    pub(super) fn check_references(&mut self, ctx: &mut Ctx, pfn: u64) -> (Ps, PageRef) {
        let c = self.reclaim_costs();
        let (shrink_page, rmap_vma) = (c.shrink_page, c.rmap_vma);
        ctx.charge(Bucket::Reclaim, shrink_page);
        let (referenced_ptes, vmas) = self.page_referenced(pfn);
        let w = rmap_vma * vmas as u64;
        ctx.charge(Bucket::Reclaim, w);
        let f = &mut self.mm.vmscan.flags[pfn as usize];
        let (decision, referenced) = page_check_references(referenced_ptes, *f & PG_REFERENCED != 0);
        *f = if referenced { *f | PG_REFERENCED } else { *f & !PG_REFERENCED };
        (shrink_page + w, decision)
    }

    /// `try_to_unmap` (`TTU_BATCH_FLUSH`) of `page`'s mappings left to unmap, one VMA at a
    /// time. Returns the time taken and whether every mapping is gone; when a PTE's flush is not
    /// deferred (`ptep_clear_flush`), the flush runs and is waited for, then `next` resumes.
    pub(in crate::linux) fn try_to_unmap(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        page: &mut Isolated,
        batched: bool,
        next: Continuation,
    ) -> (Ps, bool) {
        let mut d = Ps::ZERO;
        let large = self.mm.vmscan.nr_pages(page.pfn) > 1;
        while let Some((mm, va)) = page.to_unmap.pop() {
            // A large folio's PTEs in one VMA are one try_to_unmap_one walk: the VMA's visit for
            // the first, a cleared PTE (as zap_pte_range clears one) for each other.
            let first = !large || page.unmapped.last().is_none_or(|&(m, _)| m != mm);
            let walk = if first { self.reclaim_costs().rmap_vma } else { self.costs.memory.zap_pte };
            let (w, deferred) = self.try_to_unmap_one(ctx, t, mm, va, batched, walk);
            d += w;
            page.unmapped.push((mm, va));
            if !deferred {
                ctx.then_all([Continuation::Reclaim(Step::FlushPage { mm, va }), next]);
                return (d, false);
            }
        }
        (d, true)
    }

    /// A reclaimed page's free at `at` (after the batch's flush): the oracle first (no CPU may
    /// still translate any of the removed mappings to the page), then the frame. Returns the time
    /// taken.
    pub(in crate::linux) fn free_reclaimed(&mut self, ctx: &mut Ctx, at: Ps, page: &Isolated) -> Ps {
        for &(mm, va) in &page.unmapped {
            let pfn = self.folio_page_at(page.pfn, mm, va);
            self.oracle.check_translation_gone(
                pfn,
                mm,
                va >> crate::linux::include::linux::mm_types::PAGE_SHIFT,
                &self.mm.mms,
                &self.cpus,
                |c| (&self.tlbs[c.core], c.lp, &c.x86.st),
            );
        }
        let order = self.mm.vmscan.order[page.pfn as usize];
        self.mm.vmscan.flags[page.pfn as usize] = 0;
        self.mm.vmscan.order[page.pfn as usize] = 0;
        self.free_folio(ctx, at, page.pfn, order, Bucket::Reclaim)
    }
}
