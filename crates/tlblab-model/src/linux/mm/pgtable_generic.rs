//! The split page-table lock (`pte_offset_map_lock`: include/linux/mm.h up to v6.4,
//! `__pte_offset_map_lock` in mm/pgtable-generic.c from v6.5; split since v2.6.15 wherever
//! `NR_CPUS >= CONFIG_SPLIT_PTLOCK_CPUS`, every x86-64 and arm64 distribution kernel). Each
//! page-table page (the PTEs of 2 MiB of address space with 4 KiB pages) has its own spinlock
//! in its `struct page` (`struct ptdesc` from v6.5): a fault installs its PTE under it, a zap
//! clears a page table's PTEs under it. Threads of one mm whose addresses share a page-table
//! page (ebizzy's chunks, once merged into one VMA) take the same lock and move its line
//! (docs/references/linux-mm.md#split-pte-lock).
//!
//! The probe's fault and zap figures are timed on one CPU, the lock's word a cache hit in
//! them; what sharing adds is the wait for another CPU's section and the word's transfer.

use crate::hw::lock::SpinLock;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};
use crate::linux::Kernel;
use crate::time::Ps;

/// Address bits one page-table page covers: 512 PTEs of 4 KiB (x86-64 and arm64 4K granule).
pub const PMD_SHIFT: u32 = PAGE_SHIFT + 9;

/// The share of `kernel.page_alloc_cycles` a new anonymous page's fault spends under the PTE
/// lock: the estimate's rmap (~30 cycles) and LRU add (~120) of its ~300; the memcg charge
/// (~150) runs before the lock (v3.13-v6.18 `do_anonymous_page`;
/// docs/references/machine-costs.md#pte-lock-section).
pub const NEW_PAGE_LOCKED_SHARE: (u64, u64) = (150, 300);

/// The page-table pages' locks of one mm, by `addr >> PMD_SHIFT`.
#[derive(Debug, Clone, Default)]
pub struct PtLocks {
    locks: std::collections::BTreeMap<u64, SpinLock>,
}

impl PtLocks {
    /// The lock of the page table that maps `addr`.
    pub fn of(&mut self, addr: u64) -> &mut SpinLock {
        self.locks.entry(addr >> PMD_SHIFT).or_default()
    }
}

impl Kernel {
    /// `pte_offset_map_lock` of `addr` in `mm` by this CPU at `at`, holding it for `hold` (work
    /// the caller already charged). Returns what it adds to the caller's time: the wait for
    /// another CPU's section and the word's transfer, beyond the hit the single-CPU figures
    /// hold; charged as lock wait.
    pub(in crate::linux) fn pte_lock(&mut self, ctx: &mut Ctx, mm: MmId, addr: u64, at: Ps, hold: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let got = self.mm.mms[mm as usize].ptlocks.of(addr).acquire(ctx.cpu, at, hold, &topo, &lines);
        let d = got.saturating_sub(at + lines.hit);
        self.counters.memory.pte_lock_waits += u64::from(d > Ps::ZERO);
        ctx.lock_wait("ptl", d);
        d
    }

    /// A zap of the present PTEs at `addrs` (sorted) from `at`, `per` each: each page table's
    /// run under its lock in turn (`zap_pte_range` per PMD). Returns the waits.
    pub(in crate::linux) fn zap_pte_locks(
        &mut self,
        ctx: &mut Ctx,
        mm: MmId,
        addrs: impl IntoIterator<Item = u64>,
        at: Ps,
        per: Ps,
    ) -> Ps {
        let (mut t, mut waited) = (at, Ps::ZERO);
        let mut run: Option<(u64, u64)> = None;
        // A table's section is known once its run ends: at the next table, or after the last.
        for pmd in addrs.into_iter().map(|a| Some(a >> PMD_SHIFT)).chain([None]) {
            match run {
                Some((cur, n)) if Some(cur) == pmd => run = Some((cur, n + 1)),
                _ => {
                    if let Some((cur, n)) = run {
                        let w = self.pte_lock(ctx, mm, cur << PMD_SHIFT, t, per * n);
                        waited += w;
                        t += w + per * n;
                    }
                    run = pmd.map(|p| (p, 1));
                }
            }
        }
        waited
    }
}

#[cfg(test)]
mod tests;
