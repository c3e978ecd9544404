//! The per-CPU batches that feed the LRU lists (mm/swap.c, v4.2; a `folio_batch` from v5.16):
//! a new page-cache folio goes into its CPU's pagevec, and the pagevec onto the lists under
//! `lru_lock` when full or drained (the lists and the lock are linux/mm/vmscan.rs's).

use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::time::Ps;

/// `PAGEVEC_SIZE` (v4.2).
pub const PAGEVEC_SIZE: usize = 14;

impl Kernel {
    /// `lru_cache_add` of a new page-cache folio on this CPU at `at`: into the CPU's pagevec,
    /// which drains to the lists under `lru_lock` when full (`__pagevec_lru_add`). Returns the
    /// time taken.
    pub(in crate::linux) fn lru_cache_add(&mut self, ctx: &mut Ctx, at: Ps, pfn: u64) -> Ps {
        let cpu = ctx.cpu as usize;
        self.mm.vmscan.pagevecs[cpu].push(pfn);
        if self.mm.vmscan.pagevecs[cpu].len() < PAGEVEC_SIZE {
            return Ps::ZERO;
        }
        self.lru_add_drain(ctx, at)
    }

    /// `lru_add_drain` on this CPU: its pagevec onto the inactive lists (an activated refault
    /// onto the active one), one `lru_lock` section per run of folios of one zone
    /// (`pagevec_lru_move_fn` (v4.2) takes the next folio's zone's lock when the zone changes).
    /// Returns the time taken.
    pub(in crate::linux) fn lru_add_drain(&mut self, ctx: &mut Ctx, at: Ps) -> Ps {
        let cpu = ctx.cpu as usize;
        if self.mm.vmscan.pagevecs[cpu].is_empty() {
            return Ps::ZERO;
        }
        let mut pv = std::mem::take(&mut self.mm.vmscan.pagevecs[cpu]);
        let per = self.reclaim_costs().lru_page + self.reclaim_costs().struct_page_miss;
        let mut d = Ps::ZERO;
        let mut i = 0;
        while i < pv.len() {
            let zone = self.mm.vmscan.zone_of(pv[i]);
            let n = pv[i..].iter().take_while(|&&p| self.mm.vmscan.zone_of(p) == zone).count();
            d += self.lru_locked(ctx, at + d, zone, per * n as u64);
            for &pfn in &pv[i..i + n] {
                self.mm.vmscan.lru_add_folio(zone, pfn);
            }
            i += n;
        }
        pv.clear();
        self.mm.vmscan.pagevecs[cpu] = pv;
        d
    }
}
