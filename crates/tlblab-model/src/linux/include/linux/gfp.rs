//! The kernel's entry points to the page allocator (include/linux/gfp.h: `alloc_pages`,
//! `__free_pages`): every page the model's paths take (anonymous and COW faults, page-cache
//! fills, ebizzy's populated buffers) comes from [`crate::linux::mm::page_alloc::PageAlloc`] here, and
//! every page `mmu_gather` releases goes back through it. The allocator's own time is split as
//! the kernel spends it: waiting for `zone->lock` is lock spin, the rest is the caller's path.

use super::mmzone::MigrateType;
use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::mm::page_alloc::Env;
use crate::linux::Kernel;
use crate::time::Ps;

/// Page frames per NUMA node (4 GiB of 4 KiB pages). The machines' real memory is larger, but
/// what the per-CPU lists do depends on the zone size only through `zone_batchsize()` (capped at
/// 512 KiB / 1 MiB of pages from 512 MiB / 1 GiB zones up, so the real batch of 31 / 63) and,
/// in v5.14, `zone_highsize()`'s low watermark (that of a 4 GiB zone here). 4 GiB holds the
/// largest workload (will-it-scale page_fault1, 128 MiB per task) for 32 tasks per node. Host
/// memory goes only to the 16 MiB sections a run touches: 12 bytes of `struct page`, 8 of
/// owner and, for frames a TLB was filled with, one bit per CPU.
pub const PAGES_PER_NODE: u64 = 1 << 20;

/// Every machine whose paths allocate pages boots with an allocator (`run::run` refuses an x86
/// profile without `[page_alloc]`); the MPC8xx machine's dd paths allocate none.
const NO_ALLOCATOR: &str = "this machine's kernel booted without a page allocator";

/// `gfp_migratetype()` of the allocations the model makes.
pub fn migratetype_of(owner: Owner) -> MigrateType {
    match owner {
        // GFP_HIGHUSER_MOVABLE (anonymous faults, COW) and the page cache's mapping gfp.
        Owner::Anon { .. } | Owner::PageCache { .. } => MigrateType::Movable,
        // The zero page is part of the kernel image in Linux (never movable).
        // Slab pages, kmalloc_large blocks and page fragments: GFP_KERNEL / GFP_ATOMIC.
        Owner::Zero | Owner::Free | Owner::Slab { .. } | Owner::KernelBlock | Owner::Tail { .. } => {
            MigrateType::Unmovable
        }
        // pipe_write's alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT): no __GFP_MOVABLE (v4.9).
        Owner::Pipe { .. } => MigrateType::Unmovable,
        // sb_getblk -> __getblk_gfp(..., __GFP_MOVABLE) on the bdev mapping (v4.9).
        Owner::Buffer { .. } => MigrateType::Movable,
    }
}

impl Kernel {
    /// `alloc_page()` for `owner` on this CPU at `at` (the caller's time so far): charges the
    /// allocator's time, `zone->lock` spin to [`Bucket::LockWait`] and the rest to `bucket`.
    /// Returns the frame and the time taken.
    pub(in crate::linux) fn alloc_frame(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        owner: Owner,
        bucket: Bucket,
    ) -> (u64, Ps) {
        let nid = self.mm.page_alloc.as_ref().expect(NO_ALLOCATOR).node_of_cpu(ctx.cpu);
        self.alloc_frame_node(ctx, at, nid, owner, bucket)
    }

    /// `alloc_pages_node(nid, ...)`: as [`Kernel::alloc_frame`], from node `nid`'s zonelist.
    pub(in crate::linux) fn alloc_frame_node(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        nid: u32,
        owner: Owner,
        bucket: Bucket,
    ) -> (u64, Ps) {
        let Some(got) = self.alloc_pages_owned(ctx, at, (nid, 0), owner, bucket) else {
            // Reclaim (linux/mm/vmscan.rs) frees clean file pages only, and only for a workload
            // that reclaims: any other must fit in the model's nodes (run::run checks it first).
            panic!(
                "out of memory: {} nodes of {} MiB are exhausted (nothing reclaimable)",
                self.mm.page_alloc.as_ref().map_or(0, |a| a.nr_nodes()),
                PAGES_PER_NODE >> 8
            );
        };
        got
    }

    /// A block of `order` from node `nid`'s zonelist for `owner` (a page-cache folio's pages
    /// each own their index), on this CPU at `at`: the allocator's time charged as
    /// [`Kernel::alloc_frame`] says, found or not. `None`: no zone had a free block of the order
    /// above its watermark. Returns the first frame and the time taken.
    fn alloc_pages_owned(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        (nid, order): (u32, u8),
        owner: Owner,
        bucket: Bucket,
    ) -> Option<(u64, Ps)> {
        let env = Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let pa = self.mm.page_alloc.as_mut().expect(NO_ALLOCATOR);
        let out = pa.alloc_pages_node(ctx.cpu, nid, at, order, migratetype_of(owner), env);
        if let Some(pfn) = out.pfn {
            for i in 0..1u64 << order {
                let owner = match owner {
                    Owner::PageCache { file, index } => Owner::PageCache { file, index: index + i },
                    o => o,
                };
                if !self.mm.frames.assign(pfn + i, owner) {
                    self.oracle.flag_handed_out_twice(pfn + i, self.mm.frames.owner(pfn + i));
                }
            }
            // get_page_from_freelist found the zone at or below its low watermark: wake kswapd
            // (linux/mm/vmscan.rs; only a workload that reclaims has one).
            self.maybe_wake_kswapd(ctx, out.done, nid as usize);
        }
        let d = out.done - at;
        ctx.lock_wait("zone->lock", out.lock_wait);
        ctx.charge(bucket, d - out.lock_wait);
        out.pfn.map(|pfn| (pfn, d))
    }

    /// `__free_pages(page, 0)` of `pfn` on this CPU at `at`, after the oracle's checks (not
    /// mapped, no usable TLB entry to it); charges as [`Kernel::alloc_frame`]. Returns the time.
    pub(in crate::linux) fn free_frame(&mut self, ctx: &mut Ctx, at: Ps, pfn: u64, bucket: Bucket) -> Ps {
        self.free_folio(ctx, at, pfn, 0, bucket)
    }

    /// `filemap_alloc_folio(gfp, order)` for a readahead (`__GFP_NORETRY`: no reclaim, no
    /// compaction here) of the pages `[index, index + 2^order)` of `file`, on this CPU at `at`;
    /// charged as [`Kernel::alloc_frame`]. `None` when no zone has a free block of the order
    /// above its watermark: the readahead falls back to single pages. Returns the first frame
    /// and the time taken.
    pub(in crate::linux) fn alloc_folio(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        order: u8,
        (file, index): (u32, u64),
        bucket: Bucket,
    ) -> Option<(u64, Ps)> {
        let nid = self.mm.page_alloc.as_ref().expect(NO_ALLOCATOR).node_of_cpu(ctx.cpu);
        self.alloc_pages_owned(ctx, at, (nid, order), Owner::PageCache { file, index }, bucket)
    }

    /// `folio_put` of a folio of `order` from `pfn` on this CPU at `at`, after the oracle's
    /// checks of each of its pages; charged as [`Kernel::free_frame`]. Returns the time.
    pub(in crate::linux) fn free_folio(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        pfn: u64,
        order: u8,
        bucket: Bucket,
    ) -> Ps {
        for p in pfn..pfn + (1 << order) {
            self.oracle.check_free(p, &self.mm.frames, &self.mm.mms, &self.cpus, |c| {
                (&self.tlbs[c.core], c.lp, &c.x86.st)
            });
            if !self.mm.frames.release(p) {
                self.oracle.flag_double_free(p);
                return Ps::ZERO;
            }
        }
        let env = Env { topo: &self.topo, lines: &self.costs.hw.lines };
        match self.mm.page_alloc.as_mut().expect(NO_ALLOCATOR).free_pages(ctx.cpu, at, pfn, order, env) {
            Ok(out) => {
                let d = out.done - at;
                ctx.lock_wait("zone->lock", out.lock_wait);
                ctx.charge(bucket, d - out.lock_wait);
                d
            }
            Err(e) => {
                self.oracle.flag_double_free_allocator(pfn, &e.to_string());
                Ps::ZERO
            }
        }
    }

    /// An allocation outside simulated time (boot, a benchmark's untimed setup, a steady state
    /// a workload starts from) on `cpu` at `at`: the allocator's state changes, no CPU is
    /// charged and `zone->lock`'s clock does not move.
    pub(in crate::linux) fn alloc_frame_untimed(&mut self, cpu: u32, at: Ps, owner: Owner) -> u64 {
        let env = Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let pfn = self
            .mm
            .page_alloc
            .as_mut()
            .expect(NO_ALLOCATOR)
            .alloc_pages_untimed(cpu, at, 0, migratetype_of(owner), env)
            .expect("out of memory during untimed setup (nothing reclaimable)");
        if !self.mm.frames.assign(pfn, owner) {
            self.oracle.flag_handed_out_twice(pfn, self.mm.frames.owner(pfn));
        }
        pfn
    }

    /// The frames of a block of `1 << order` pages at `pfn` now belong to `head` (its first
    /// page) and its tail pages; a frame already owned is the oracle's.
    pub(in crate::linux) fn assign_block(&mut self, pfn: u64, order: u8, head: Owner) {
        for p in pfn..pfn + (1 << order) {
            let o = if p == pfn { head } else { Owner::Tail { head: pfn } };
            if !self.mm.frames.assign(p, o) {
                self.oracle.flag_handed_out_twice(p, self.mm.frames.owner(p));
            }
        }
    }

    /// The frames of a block go back to the allocator; one already free is a double free.
    pub(in crate::linux) fn release_block(&mut self, pfn: u64, order: u8) {
        for p in pfn..pfn + (1 << order) {
            if !self.mm.frames.release(p) {
                self.oracle.flag_double_free(p);
            }
        }
    }
}
