//! `reclaim_pages` (mm/vmscan.c, v6.6; docs/references/linux-6x.md#madv-pageout): the folios
//! madvise(MADV_PAGEOUT) isolated, reclaimed by `reclaim_folio_list` -> `shrink_folio_list`
//! outside the LRU scan (no `scan_control` priority loop, no zone walk).
//!
//! Per folio, as v6.6 `shrink_folio_list` runs it for a mapped shmem folio (one step each, so
//! the reclaimer's clock moves between them as it does between the TLBIs it posts):
//! - `folio_trylock` and the checks (`reclaim.shrink_page_cycles`), then
//!   `folio_check_references` (`reclaim_folio_list` passes `ignore_references = false` until
//!   v6.9): an rmap walk; madvise cleared the PTE's young bit and `PG_referenced`, so
//!   the folio is reclaimed;
//! - `try_to_unmap(folio, TTU_BATCH_FLUSH)`: linux/mm/rmap.rs `try_to_unmap_one`, which on
//!   arm64 posts the TLBI (batched) or leaves `ptep_clear_flush`'s TLBI and DSB to run before
//!   the next step (per page);
//! - the folio is dirty: `try_to_unmap_flush_dirty` (a flush only if a dirty PTE was batched),
//!   then `pageout` -> `shmem_writepage` (linux/mm/shmem.rs) and `__remove_mapping` from the swap
//!   cache (`reclaim.remove_mapping_cycles`);
//! - at the list's end `try_to_unmap_flush`, then `free_unref_page_list` (the order of
//!   vmscan.rs `batch_end_order`), and the folios kept go back to the LRU
//!   (`folio_putback_lru`).

use super::{batch_end_order, BatchEnd, Isolated, PageRef, Step, UnmapFlush};
use super::{PG_ACTIVE, PG_LRU};
use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

/// `reclaim_pages`' list (one node's folios: the model's shmem pages are on one node).
#[derive(Debug, Default)]
pub(in crate::linux) struct FolioList {
    pages: Vec<Isolated>,
    pos: usize,
    freed: Vec<Isolated>,
    kept: Vec<u64>,
}

impl Kernel {
    /// `folio_isolate_lru` of `pfn` at `at`: off its LRU list under `lru_lock`. Returns the
    /// time taken, or `None` for a folio on no LRU list.
    pub(in crate::linux) fn folio_isolate_lru(&mut self, ctx: &mut Ctx, at: Ps, pfn: u64) -> Option<Ps> {
        if !self.mm.vmscan.on_lru(pfn) {
            return None;
        }
        let zone = self.mm.vmscan.zone_of(pfn);
        let c = self.reclaim_costs();
        let d = self.lru_locked(ctx, at, zone, c.lru_page + c.struct_page_miss);
        let on = self.mm.vmscan.lru_remove(zone, pfn);
        assert!(on, "pfn {pfn} flagged PG_LRU but on no list");
        self.mm.vmscan.lruvecs[zone].nr_isolated += self.mm.vmscan.nr_pages(pfn);
        self.mm.vmscan.flags[pfn as usize] &= !(PG_LRU | PG_ACTIVE);
        self.counters.vmscan.isolated_pages += 1;
        Some(d)
    }

    /// `reclaim_pages` of the isolated folios `pfns` by task `t`: queues `shrink_folio_list`.
    pub(in crate::linux) fn reclaim_pages(&mut self, ctx: &mut Ctx, t: usize, pfns: Vec<u64>) {
        if pfns.is_empty() {
            return;
        }
        self.counters.vmscan.isolate_batches += 1;
        self.mm.vmscan.ensure_task(t);
        let pages = pfns
            .into_iter()
            .map(|pfn| Isolated { pfn, reclaiming: false, to_unmap: Vec::new(), unmapped: Vec::new() })
            .collect();
        self.mm.vmscan.pageout[t] = Some(FolioList { pages, ..Default::default() });
        ctx.then(Continuation::Reclaim(Step::PageoutFolio));
    }

    fn folio_list(&mut self, t: usize) -> &mut FolioList {
        self.mm.vmscan.pageout[t].as_mut().expect("reclaim_pages has its list")
    }

    /// `shrink_folio_list` (v6.6) on the list's next folio; at the list's end, queues
    /// `try_to_unmap_flush` and the list's end.
    pub(super) fn shrink_folio(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let c = self.reclaim_costs().clone();
        let batched = self.config.reclaim.unmap_flush == UnmapFlush::Batched;
        let l = self.folio_list(t);
        if l.pos == l.pages.len() {
            ctx.then_all(batch_end_order(self.config.mm.free_before_flush).map(|end| {
                Continuation::Reclaim(match end {
                    BatchEnd::Flush => Step::FlushBatch,
                    BatchEnd::Free => Step::PageoutEnd,
                })
            }));
            return Ps::ZERO;
        }
        let i = l.pos;
        let pfn = l.pages[i].pfn;
        let mut d = Ps::ZERO;
        if !l.pages[i].reclaiming {
            // folio_check_references: the rmap walk of folio_referenced.
            let (w, decision) = self.check_references(ctx, pfn);
            d += w;
            if decision != PageRef::Reclaim {
                let l = self.folio_list(t);
                l.kept.push(pfn);
                l.pos += 1;
                ctx.then(Continuation::Reclaim(Step::PageoutFolio));
                return d;
            }
            let maps = self.folio_mappings(pfn);
            let p = &mut self.folio_list(t).pages[i];
            p.reclaiming = true;
            p.to_unmap = maps;
        }
        let mut page = std::mem::take(&mut self.folio_list(t).pages[i]);
        let (w, done) =
            self.try_to_unmap(ctx, t, &mut page, batched, Continuation::Reclaim(Step::PageoutFolio));
        self.folio_list(t).pages[i] = page;
        d += w;
        if !done {
            return d;
        }
        // A dirty folio: try_to_unmap_flush_dirty, then pageout.
        if self.mm.vmscan.ubc[t].writable {
            d += self.try_to_unmap_flush(ctx, t);
        }
        d += self.shmem_writepage(ctx, pfn);
        // __remove_mapping: out of the swap cache; freed at the list's end.
        d += c.remove_mapping;
        ctx.charge(Bucket::Reclaim, c.remove_mapping);
        let l = self.folio_list(t);
        let page = std::mem::replace(
            &mut l.pages[i],
            Isolated { pfn, reclaiming: true, to_unmap: Vec::new(), unmapped: Vec::new() },
        );
        l.freed.push(page);
        l.pos += 1;
        ctx.then(Continuation::Reclaim(Step::PageoutFolio));
        d
    }

    /// `reclaim_pages`' end: `free_unref_page_list` of the reclaimed folios (after the batch's
    /// flush), `folio_putback_lru` of the others.
    pub(super) fn reclaim_pages_end(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let l = self.mm.vmscan.pageout[t].take().expect("reclaim_pages has its list");
        let mut d = Ps::ZERO;
        for page in &l.freed {
            let zone = self.mm.vmscan.zone_of(page.pfn);
            self.mm.vmscan.lruvecs[zone].nr_isolated -= self.mm.vmscan.nr_pages(page.pfn);
            d += self.free_reclaimed(ctx, ctx.now + d, page);
        }
        for pfn in l.kept {
            let zone = self.mm.vmscan.zone_of(pfn);
            self.mm.vmscan.lruvecs[zone].nr_isolated -= self.mm.vmscan.nr_pages(pfn);
            d += self.folio_putback_lru(ctx, ctx.now + d, pfn);
        }
        d
    }

    /// `folio_putback_lru` of `pfn` at `at` (its isolation's count is the caller's): onto its
    /// zone's inactive list under `lru_lock`. Returns the time taken.
    pub(in crate::linux) fn folio_putback_lru(&mut self, ctx: &mut Ctx, at: Ps, pfn: u64) -> Ps {
        let c = self.reclaim_costs().lru_page;
        let zone = self.mm.vmscan.zone_of(pfn);
        let d = self.lru_locked(ctx, at, zone, c);
        self.mm.vmscan.flags[pfn as usize] |= PG_LRU;
        self.mm.vmscan.lru_push(zone, false, pfn);
        d
    }
}
