//! Page migration (mm/migrate.c, v6.6; docs/references/linux-6x.md#migration-batch):
//! `move_pages(2)` of a range of the caller's shmem pages to one node, and `migrate_pages` of
//! the folios it isolated as v6.6's `migrate_pages_batch` runs it (7e12beb8ca2a):
//!
//! - the unmap phase, per folio (`migrate_folio_unmap`): the new folio is allocated on the
//!   target node first (`alloc_migration_target`), then `try_to_migrate(src, TTU_BATCH_FLUSH)`:
//!   reclaim's `try_to_unmap_one` (linux/mm/rmap.rs, through vmscan/shrink.rs `try_to_unmap`),
//!   so the flush is `ptep_clear_flush`'s per page, or deferred to the batch (x86: the mm's CPUs
//!   join `tlb_ubc`; arm64 v6.5: the TLBI is posted, `arch_tlbbatch_add_pending`);
//! - ONE `try_to_unmap_flush` for the batch (the batch is at most `NR_MAX_BATCHED_MIGRATION`,
//!   512 pages: the modelled ranges fit in one);
//! - the move phase, per folio (`migrate_folio_move`): the copy (`folio_migrate_copy`, 4 KiB at
//!   the profile's `memory.memcpy_mbps`), `remove_migration_ptes` (each PTE now maps the new
//!   page, with the old PTE's permissions), the new folio onto the LRU, the old one freed.
//!   The oracle checks at that free that no CPU still translates to the old page.
//!
//! Departures: the unmapped PTE is left none rather than a migration entry (the only task is
//! inside the system call, so nothing faults on it); the per-folio bookkeeping (folio lock,
//! refcount freeze, the page-cache slot's replacement) is not costed; `__GFP_THISNODE` is not
//! modelled (the target node always has room here). The unmap's counters and cost bucket are
//! reclaim's (`reclaim_unmapped_ptes`, `reclaim_page_flushes`, `reclaim_batch_flushes`): the
//! same rmap code runs.

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::include::linux::mm_types::{MmId, Pte, PAGE_SIZE};
use crate::linux::mm::mmap;
use crate::linux::mm::vmscan::{batch_end_order, BatchEnd, Isolated, Step as ReclaimStep, UnmapFlush};
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// Page migration, counted as /proc/vmstat names it.
    Counters {
        /// Folios migrated (`pgmigrate_success`).
        pgmigrate_success,
        /// `migrate_pages_batch` calls: one `try_to_unmap_flush` each.
        migrate_batches,
    }
}

/// A continuation of `migrate_pages_batch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `migrate_folio_unmap` of the batch's next folio; at the end, the flush and the moves.
    Unmap,
    /// `migrate_folio_move` of the batch's next folio.
    Move,
}

/// A folio in the batch: the page being unmapped (and its removed mappings, for the oracle),
/// the new page, and the PTEs to rebuild.
#[derive(Debug, Default)]
struct Folio {
    old: Isolated,
    new: Option<u64>,
    ptes: Vec<(MmId, u64, Pte)>,
}

/// One task's `migrate_pages_batch`.
#[derive(Debug, Default)]
pub(in crate::linux) struct Batch {
    nid: u32,
    folios: Vec<Folio>,
    pos: usize,
}

/// Page migration's state: the migrating tasks' batches and the counters.
#[derive(Debug, Default)]
pub struct Migrate {
    batches: Vec<Option<Batch>>,
    pub counters: Counters,
}

impl Kernel {
    /// Page migration's counters, on a machine a migrating workload set up ([`Kernel::migrate_init`]).
    pub fn migrate_counters(&self) -> Option<Counters> {
        self.mm.migrate.as_ref().map(|m| m.counters)
    }

    /// Readies page migration (a workload's setup that moves pages calls it).
    pub fn migrate_init(&mut self) {
        self.mm.migrate.get_or_insert_with(Migrate::default);
    }

    /// The node `pfn` lies on.
    pub(in crate::linux) fn page_to_nid(&self, pfn: u64) -> u32 {
        self.mm.page_alloc.as_ref().and_then(|a| a.node_of_pfn(pfn)).expect("a page of a zone")
    }

    /// The body of `move_pages(2)` for task `t`, every page of `[start, start + len)` to `nid`,
    /// `mmap_lock` held for read (v6.6 `do_pages_move` -> `add_page_for_migration`): each
    /// present page on the LRU and not on `nid` is isolated (`folio_isolate_lru`); then, after
    /// the unlock, `do_move_pages_to_node` -> `migrate_pages` of the list, and the return.
    pub(in crate::linux) fn move_pages(
        &mut self,
        ctx: &mut Ctx,
        t: usize,
        start: u64,
        len: u64,
        nid: u32,
    ) -> Ps {
        let mm = self.tasks[t].user_mm();
        let entry = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, entry);
        let mut d = entry + self.kernel_path(ctx, crate::linux::arch::x86::text::Path::SyscallEntry);
        let mut folios = Vec::new();
        let mut a = start;
        while a < start + len {
            let pte = self.mm.mms[mm as usize].pte(a).filter(|p| p.present);
            if let Some(p) = pte.filter(|p| self.page_to_nid(p.pfn) != nid) {
                if let Some(w) = self.folio_isolate_lru(ctx, ctx.now + d, p.pfn) {
                    d += w;
                    let old = Isolated { pfn: p.pfn, ..Default::default() };
                    folios.push(Folio { old, ..Default::default() });
                }
            }
            a += PAGE_SIZE;
        }
        let unlock =
            self.config.mm.mmap_lock.then_some(Continuation::Sys(mmap::Step::Unlock { write: false }));
        let batch = (!folios.is_empty()).then_some(Continuation::Migrate(Step::Unmap));
        ctx.then_all(unlock.into_iter().chain(batch).chain([Continuation::Sys(mmap::Step::Exit)]));
        if !folios.is_empty() {
            self.mm.vmscan.ensure_task(t);
            let m = self.mm.migrate.as_mut().expect("move_pages on a machine set up for migration");
            if m.batches.len() <= t {
                m.batches.resize_with(t + 1, || None);
            }
            m.batches[t] = Some(Batch { nid, folios, pos: 0 });
        }
        d
    }

    fn batch(&mut self, t: usize) -> &mut Batch {
        self.mm.migrate.as_mut().and_then(|m| m.batches[t].as_mut()).expect("a migrating task has its batch")
    }

    pub(in crate::linux) fn migrate_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        match s {
            Step::Unmap => self.migrate_folio_unmap(ctx, t),
            Step::Move => self.migrate_folio_move(ctx, t),
        }
    }

    /// `migrate_folio_unmap` (v6.6) of the batch's next folio: the new folio on the target node,
    /// then `try_to_migrate` with `TTU_BATCH_FLUSH`. At the batch's end, `try_to_unmap_flush`
    /// and the move phase (in `batch_end_order`: the test-only `free_before_flush` moves first).
    fn migrate_folio_unmap(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let batched = self.config.reclaim.unmap_flush == UnmapFlush::Batched;
        let b = self.batch(t);
        if b.pos == b.folios.len() {
            b.pos = 0;
            self.mm.migrate.as_mut().unwrap().counters.migrate_batches += 1;
            ctx.then_all(batch_end_order(self.config.mm.free_before_flush).map(|end| match end {
                BatchEnd::Flush => Continuation::Reclaim(ReclaimStep::FlushBatch),
                BatchEnd::Free => Continuation::Migrate(Step::Move),
            }));
            return Ps::ZERO;
        }
        let (i, nid) = (b.pos, b.nid);
        let mut d = Ps::ZERO;
        let mut f = std::mem::take(&mut self.batch(t).folios[i]);
        if f.new.is_none() {
            // alloc_migration_target: the same page-cache slot's page, on node nid.
            let (pfn, w) =
                self.alloc_frame_node(ctx, ctx.now, nid, self.mm.frames.owner(f.old.pfn), Bucket::Reclaim);
            d += w;
            f.new = Some(pfn);
            let maps = self.folio_mappings(f.old.pfn);
            f.ptes =
                maps.iter().map(|&(mm, va)| (mm, va, self.mm.mms[mm as usize].pte(va).unwrap())).collect();
            f.old.to_unmap = maps;
        }
        let (w, done) = self.try_to_unmap(ctx, t, &mut f.old, batched, Continuation::Migrate(Step::Unmap));
        d += w;
        let b = self.batch(t);
        b.folios[i] = f;
        if done {
            b.pos += 1;
            ctx.then(Continuation::Migrate(Step::Unmap));
        }
        d
    }

    /// `migrate_folio_move` (v6.6) of the batch's next folio: copy, `remove_migration_ptes`,
    /// the new folio onto the LRU, the old one freed (the oracle's check first).
    fn migrate_folio_move(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let b = self.batch(t);
        if b.pos == b.folios.len() {
            self.mm.migrate.as_mut().unwrap().batches[t] = None;
            return Ps::ZERO;
        }
        let i = b.pos;
        b.pos += 1;
        let f = std::mem::take(&mut b.folios[i]);
        let new = f.new.expect("allocated in the unmap phase");
        let copy = self.costs.memory.copy_page;
        ctx.charge(Bucket::Reclaim, copy);
        let mut d = copy;
        // remove_migration_ptes: an rmap walk, each PTE now maps the new page.
        let rmap_vma = self.reclaim_costs().rmap_vma;
        for &(mm, va, pte) in &f.ptes {
            ctx.charge(Bucket::Reclaim, rmap_vma);
            d += rmap_vma;
            self.mm.mms[mm as usize].set_pte(va, Pte { pfn: new, ..pte });
        }
        if let Owner::PageCache { file, index } = self.mm.frames.owner(f.old.pfn) {
            self.mm.files[file as usize].set(index, new);
        }
        // folio_putback_lru of the new folio; the old one leaves isolation and is freed.
        d += self.folio_putback_lru(ctx, ctx.now + d, new);
        let old_zone = self.mm.vmscan.zone_of(f.old.pfn);
        self.mm.vmscan.lruvecs[old_zone].nr_isolated -= 1;
        d += self.free_reclaimed(ctx, ctx.now + d, &f.old);
        self.mm.migrate.as_mut().unwrap().counters.pgmigrate_success += 1;
        ctx.then(Continuation::Migrate(Step::Move));
        d
    }
}

#[cfg(test)]
mod tests;
