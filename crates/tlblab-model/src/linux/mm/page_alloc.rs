//! The zoned buddy allocator and its per-CPU page lists (mm/page_alloc.c).
//!
//! One `ZONE_NORMAL` per NUMA node (a socket), or a named machine's x86-64 zones (`zones.rs`:
//! DMA32 and Normal, chosen by the zonelist and v4.2's fair zone allocation policy), each with
//! buddy free lists per order and migratetype under `zone->lock` (a FIFO spinlock on a contended
//! line, hw/lock.rs), watermarks, `lowmem_reserve`, and one `per_cpu_pages` per CPU. The buddy
//! rules (`__rmqueue_smallest` + `expand`, `__rmqueue_fallback` with pageblock stealing,
//! `__free_one_page` with the buddy-is-free test and
//! the tail placement when the next-order buddy is free) follow v4.9; v5.14 keeps them for the
//! cases modelled here (no CMA, no isolation, no highatomic reserve, no page shuffling). What
//! differs by era (which orders the per-CPU lists hold, batch, high, refill and drain sizes) is
//! a [`PageAllocConfig`].
//!
//! Like `linux/arch/x86/mm/tlb.rs::flush_tlb_func`, this is engine-independent: the caller says which
//! CPU asks at what time and gets back when the call returns, how long it waited for
//! `zone->lock`, and what happened. Time inside `zone->lock` is built from what the call did:
//! blocks moved, `struct page` lines touched (blocks, buddies, list neighbours), and the zone's
//! data line, which travels with the lock.

mod buddy;
mod config;
mod pcp_high;
mod stats;
mod zones;

use buddy::Section;
use pcp_high::nr_pcp_high;

pub use config::*;
pub use stats::*;
pub use zones::*;

use crate::hw::coherence::{CacheLine, LineCosts};
use crate::hw::lock::{LockTiming, SpinLock};
use crate::hw::topology::Topology;
use crate::time::Ps;

use crate::linux::include::linux::mmzone::*;

/// What the caller's machine looks like to the allocator.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    pub topo: &'a Topology,
    pub lines: &'a LineCosts,
}

/// `get_page_from_freelist`'s walks of the zonelist: `ALLOC_FAIR | ALLOC_WMARK_LOW` (v3.12 ..
/// v4.7, nodes of several zones), `ALLOC_WMARK_LOW`, then the slow path's `ALLOC_WMARK_MIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Fair,
    Low,
    Min,
}

/// What `alloc_pages` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocOutcome {
    /// The first page frame of the block, or `None` when every zone was below `min` or had no
    /// block of the order (the kernel would reclaim or fail).
    pub pfn: Option<u64>,
    pub done: Ps,
    pub lock_wait: Ps,
    pub pcp_hit: bool,
    pub refill_blocks: u32,
    pub zone_locked: bool,
    pub contended: bool,
    pub splits: u32,
    /// The block came from another node's zone (the local one failed its watermark).
    pub remote_zone: bool,
}

/// What `free_pages` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeOutcome {
    pub done: Ps,
    pub lock_wait: Ps,
    pub to_pcp: bool,
    pub drained_blocks: u32,
    pub zone_locked: bool,
    pub contended: bool,
    pub merges: u32,
}

/// A free the allocator refuses: the block is not allocated at that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageAllocError {
    NoSuchPage(u64),
    NotAllocated { pfn: u64, order: u8 },
}

impl AllocOutcome {
    /// Nothing allocated yet, at `now`.
    fn nothing(now: Ps) -> AllocOutcome {
        AllocOutcome {
            pfn: None,
            done: now,
            lock_wait: Ps::ZERO,
            pcp_hit: false,
            refill_blocks: 0,
            zone_locked: false,
            contended: false,
            splits: 0,
            remote_zone: false,
        }
    }
}

impl std::fmt::Display for PageAllocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageAllocError::NoSuchPage(p) => write!(f, "pfn {p} is in no zone"),
            PageAllocError::NotAllocated { pfn, order } => {
                write!(f, "pfn {pfn} is not an allocated block of order {order} (double free?)")
            }
        }
    }
}

/// `struct zone` (the parts the allocator uses).
#[derive(Debug, Clone)]
pub struct Zone {
    pub node: u32,
    pub ty: ZoneType,
    pub start_pfn: u64,
    /// `struct page`s, a section at a time (the untouched ones are as boot left them).
    pub pages: MemMap,
    pub free_area: [FreeArea; MAX_ORDER as usize],
    /// `get_pageblock_migratetype()` per pageblock.
    pub pageblock_mt: Vec<MigrateType>,
    /// `NR_FREE_PAGES`: base pages on the buddy lists (not on per-CPU lists).
    pub nr_free: u64,
    pub managed: u64,
    /// The named machine's managed pages of this zone (`managed` when memory is not scaled): what
    /// the boot-time size rules and reclaim's scan targets read.
    pub sized_as: u64,
    pub wmark: Watermarks,
    /// `zone->lowmem_reserve[]`, by class zone ([`ZoneType`] index).
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    /// `NR_ALLOC_BATCH` and `ZONE_FAIR_DEPLETED` (the fair zone allocation policy, v3.12..v4.7).
    pub alloc_batch: i64,
    pub fair_depleted: bool,
    pub lock: SpinLock,
    /// The zone's `free_area` / counters line, written under the lock by whoever holds it.
    pub data_line: CacheLine,
    /// `zone->pageset`, indexed by CPU.
    pub pcp: Vec<PerCpuPages>,
    /// A bit per page: the block was put on a per-CPU list by a free (the kernel's hot page, at
    /// the list head, still in the freeing CPU's caches) and has not gone back to the buddy
    /// lists since (`free_one_page` clears it), so a refill never brings a warm block. Apart
    /// from `pages` to keep `PageMeta` at 11 bytes.
    warm: Vec<u64>,
    /// `ZONE_RECLAIM_ACTIVE` (v5.14+): reclaim is running on the zone. Only v6.7's tuning reads
    /// it here (no raise on refill, lowered high and a short list on free); reclaim does not
    /// set it yet (linux/mm/vmscan.rs), so it is set by whoever models reclaim on the zone.
    pub reclaim_active: bool,
}

impl Zone {
    /// Sets page `i`'s bit of [`Zone::warm`].
    fn set_warm(&mut self, i: u32, warm: bool) {
        let (w, b) = ((i / 64) as usize, 1u64 << (i % 64));
        if warm {
            self.warm[w] |= b;
        } else {
            self.warm[w] &= !b;
        }
    }

    fn new(node: u32, spec: ZoneSpec, start_pfn: u64, cpus: usize, nr_lists: usize) -> Zone {
        let nr_pages = spec.pages;
        let block = 1u64 << (MAX_ORDER - 1);
        assert!(nr_pages > 0 && nr_pages % block == 0, "a zone is a whole number of 4 MiB blocks");
        assert!(start_pfn % block == 0 && nr_pages < NIL as u64);
        let mut z = Zone {
            node,
            ty: spec.ty,
            start_pfn,
            pages: MemMap::new(nr_pages as u32),
            free_area: [FreeArea::default(); MAX_ORDER as usize],
            // memmap_init_zone() marks every pageblock MOVABLE at boot (v4.9).
            pageblock_mt: vec![MigrateType::Movable; (nr_pages >> PAGEBLOCK_ORDER) as usize],
            nr_free: 0,
            managed: nr_pages,
            sized_as: spec.sized_as,
            wmark: Watermarks::default(),
            lowmem_reserve: [0; MAX_NR_ZONES],
            alloc_batch: 0,
            fair_depleted: false,
            lock: SpinLock::new(),
            data_line: CacheLine::new(),
            pcp: vec![PerCpuPages { lists: vec![List::default(); nr_lists], ..Default::default() }; cpus],
            reclaim_active: false,
            warm: vec![0; (nr_pages as usize).div_ceil(64)],
        };
        // Boot frees memory in MAX_ORDER-1 blocks, in address order (each added at the tail):
        // the MemMap computes those pages until something writes them.
        let top = MAX_ORDER - 1;
        let list = z.pages.boot_list();
        z.free_area[top as usize].free_list[MigrateType::Movable as usize] = list;
        z.free_area[top as usize].nr_free = list.len as u64;
        z.nr_free = nr_pages;
        z
    }
}

/// The page allocator: a node's zones, per-CPU lists, counters.
#[derive(Debug, Clone)]
pub struct PageAlloc {
    pub cfg: PageAllocConfig,
    pub costs: PageAllocCosts,
    /// Every node's zones, node by node, lowest zone first.
    pub zones: Vec<Zone>,
    /// Per node: its zonelist for a Normal-class allocation (the node's zones from the highest
    /// down, then the other nodes' in node order).
    zonelists: Vec<Vec<usize>>,
    /// The fair zone allocation policy is in force (v3.12..v4.7 rules on nodes of several zones).
    fair: bool,
    cpu_node: Vec<u32>,
    pub stats: PageAllocStats,
    /// [`PageAlloc::alloc_pages_untimed`]'s saved clocks, kept to be reused: a workload's setup
    /// allocates every page it caches this way (a `Vec` per page was a hot spot of start-up).
    untimed_clocks: Vec<(LockTiming, (Ps, Ps))>,
}

impl PageAlloc {
    /// A machine of `topo` with one zone of `pages_per_node` page frames on each socket's node
    /// (a multiple of 1024). Watermarks, batch and high are computed as the era's kernel does at
    /// boot.
    pub fn new(
        cfg: PageAllocConfig,
        costs: PageAllocCosts,
        topo: &Topology,
        pages_per_node: u64,
    ) -> PageAlloc {
        PageAlloc::with_layout(
            cfg,
            costs,
            topo,
            &Layout::one_zone_per_node(topo.sockets, pages_per_node),
            None,
        )
    }

    /// A machine of `topo` whose nodes have `layout`'s zones (the simulated ones; each node's
    /// simulated pages a multiple of 1024), used by `rules` where a node has several. The
    /// boot-time rules that read a zone's size (`init_per_zone_wmark_min`'s `min_free_kbytes`,
    /// `__setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`, `zone_batchsize`,
    /// `pcp->high`) read each zone's `sized_as`: a machine whose memory is scaled down has the
    /// named machine's watermarks and per-CPU lists in pages (their proportion to
    /// `SWAP_CLUSTER_MAX` and to a CPU's allocation rate, which do not scale, is kept).
    pub fn with_layout(
        cfg: PageAllocConfig,
        costs: PageAllocCosts,
        topo: &Topology,
        layout: &Layout,
        rules: Option<ZoneRules>,
    ) -> PageAlloc {
        let cpus = topo.cpus() as usize;
        let nr_lists = cfg.pcp_lists.nr_lists();
        assert_eq!(layout.nodes.len(), topo.sockets as usize, "a layout per node");
        let mut zones = Vec::new();
        let mut start = 0;
        let mut node_zones = Vec::new();
        for (n, specs) in layout.nodes.iter().enumerate() {
            let mut mine = Vec::new();
            for (i, &spec) in specs.iter().enumerate() {
                if spec.pages == 0 {
                    continue;
                }
                let mut z = Zone::new(n as u32, spec, start, cpus, nr_lists);
                z.lowmem_reserve = layout.lowmem_reserve(n, i);
                start += spec.pages;
                mine.push(zones.len());
                zones.push(z);
            }
            node_zones.push(mine);
        }
        let zonelists = (0..node_zones.len())
            .map(|n| {
                let mut l: Vec<usize> = node_zones[n].iter().rev().copied().collect();
                for (m, other) in node_zones.iter().enumerate() {
                    if m != n {
                        l.extend(other.iter().rev());
                    }
                }
                l
            })
            .collect();
        let several = node_zones.iter().any(|z| z.len() > 1);
        let fair = several && rules == Some(ZoneRules::V4_2);
        let cpu_node = (0..cpus as u32).map(|c| topo.socket_of(c)).collect();
        let mut pa = PageAlloc {
            cfg,
            costs,
            zones,
            zonelists,
            fair,
            cpu_node,
            stats: PageAllocStats::default(),
            untimed_clocks: Vec::new(),
        };
        pa.setup_per_zone_wmarks(layout.lowmem_pages());
        let node_cpus = (pa.cpu_node.len() as u64 / topo.sockets as u64).max(1);
        for z in &mut pa.zones {
            let batch = cfg.zone_batchsize(z.sized_as);
            let high = cfg.pcp_high(batch, z.wmark.low, node_cpus);
            // v6.7: tuned from high_min (pcp->high starts at 0 and nr_pcp_high clamps it up).
            let high_max = cfg.pcp_high_max(batch, high, z.sized_as, node_cpus);
            for p in &mut z.pcp {
                p.batch = batch;
                p.high = high;
                p.high_min = high;
                p.high_max = high_max;
            }
        }
        pa
    }

    /// `__setup_per_zone_wmarks()`: `min` is the zone's share of `min_free_kbytes` (computed
    /// from `lowmem` pages) by its managed pages; `low` and `high` add `max(min / 4, managed *
    /// scale / 10000)` once and twice (v4.6+, same in v5.14), or `min / 4` and `min / 2` before
    /// v4.6 (`watermark_scale_factor` 0). `NR_ALLOC_BATCH` starts at `high - low`.
    fn setup_per_zone_wmarks(&mut self, lowmem: u64) {
        let pages_min = self.cfg.min_free_kbytes(lowmem) / 4;
        for z in &mut self.zones {
            let min = pages_min * z.sized_as / lowmem;
            let scale = self.cfg.watermark_scale_factor;
            let gap = (min / 4).max(z.sized_as * scale / 10_000);
            let high = if scale == 0 { min + min / 2 } else { min + 2 * gap };
            z.wmark = Watermarks { min, low: min + gap, high };
            z.alloc_batch = (high - min - gap) as i64;
        }
    }

    pub fn node_of_cpu(&self, cpu: u32) -> u32 {
        self.cpu_node[cpu as usize]
    }

    /// The node of the zone holding `pfn` (`page_to_nid`).
    pub fn node_of_pfn(&self, pfn: u64) -> Option<u32> {
        self.zone_of(pfn).map(|zi| self.zones[zi].node)
    }

    /// Whether the block at `pfn` came to its owner warm: freed onto a per-CPU list and handed
    /// out from it again, not refilled from the buddy lists or allocated from them directly.
    pub fn warm(&self, pfn: u64) -> bool {
        self.zone_of(pfn).is_some_and(|zi| {
            let z = &self.zones[zi];
            let i = (pfn - z.start_pfn) as u32;
            z.warm[(i / 64) as usize] & (1 << (i % 64)) != 0
        })
    }

    /// The zone holding `pfn`.
    pub fn zone_of(&self, pfn: u64) -> Option<usize> {
        self.zones.iter().position(|z| pfn >= z.start_pfn && pfn < z.start_pfn + z.pages.len() as u64)
    }

    /// Takes `zone->lock` for a section whose work is `s`; returns (grant, hold, contended).
    fn lock_section(&mut self, zi: usize, cpu: u32, at: Ps, s: &Section, env: Env) -> (Ps, Ps, bool) {
        let z = &mut self.zones[zi];
        let data = z.data_line.write(cpu, at.max(z.lock.free_at()), env.topo, env.lines);
        let hold = self.costs.lock_section
            + self.costs.buddy_block * s.blocks as u64
            + self.costs.struct_page * s.touches as u64
            + data;
        let before = z.lock.stats;
        let grant = z.lock.acquire(cpu, at, hold, env.topo, env.lines);
        let st = &mut self.stats;
        st.zone_lock_acquisitions += 1;
        let contended = z.lock.stats.contended > before.contended;
        st.zone_lock_contended += contended as u64;
        st.zone_lock_wait += grant - at;
        st.zone_lock_hold += hold;
        st.struct_page_touches += s.touches as u64;
        st.buddy_splits += s.splits as u64;
        st.buddy_merges += s.merges as u64;
        (grant, hold, contended)
    }

    /// `alloc_pages(gfp, order)` on `cpu` at `now`, for a `mt` allocation (`gfp_migratetype`) of
    /// class zone Normal: `get_page_from_freelist` over the zonelist with the low watermark (on
    /// nodes of several zones under the fair zone allocation policy first, `zones.rs`), then
    /// once more with `min` (the slow path, after waking kswapd; direct reclaim is the caller's,
    /// linux/mm/vmscan.rs). A zone must be above the mark plus its `lowmem_reserve`.
    pub fn alloc_pages(&mut self, cpu: u32, now: Ps, order: u8, mt: MigrateType, env: Env) -> AllocOutcome {
        self.alloc_pages_node(cpu, self.node_of_cpu(cpu), now, order, mt, env)
    }

    /// `__alloc_pages(gfp, order, nid)` on `cpu`: as [`Self::alloc_pages`], from node `nid`'s
    /// zonelist (page migration's `alloc_migration_target`, linux/mm/migrate.rs).
    pub fn alloc_pages_node(
        &mut self,
        cpu: u32,
        nid: u32,
        now: Ps,
        order: u8,
        mt: MigrateType,
        env: Env,
    ) -> AllocOutcome {
        assert!(order < MAX_ORDER && (mt as usize) < MIGRATE_PCPTYPES, "order {order}, migratetype {mt:?}");
        let local = nid as usize;
        let class = self.classzone(local);
        for pass in [Pass::Fair, Pass::Low, Pass::Min] {
            if pass == Pass::Fair && !self.fair {
                continue;
            }
            let mut skipped = 0;
            for k in 0..self.zonelists[local].len() {
                let zi = self.zonelists[local][k];
                let z = &self.zones[zi];
                if pass == Pass::Fair {
                    // zone_local(): the fair walk stays on the local node.
                    if z.node as usize != local {
                        break;
                    }
                    if z.fair_depleted {
                        skipped += 1;
                        continue;
                    }
                }
                let mark = if pass == Pass::Min { z.wmark.min } else { z.wmark.low };
                if !self.watermark_ok(zi, order, mark, class) {
                    continue;
                }
                let mut out = self.rmqueue(zi, cpu, now, order, mt, env);
                if out.pfn.is_some() {
                    if self.fair {
                        // buffered_rmqueue (v4.2): every allocation takes its pages off the
                        // zone's NR_ALLOC_BATCH.
                        let z = &mut self.zones[zi];
                        z.alloc_batch -= 1 << order;
                        if z.alloc_batch <= 0 {
                            z.fair_depleted = true;
                        }
                    }
                    out.remote_zone = self.zones[zi].node as usize != local;
                    return out;
                }
            }
            if pass == Pass::Fair && skipped > 0 {
                self.reset_alloc_batches(local);
            }
            if pass == Pass::Low {
                self.stats.kswapd_wakeups += 1;
            }
        }
        self.stats.alloc_failures += 1;
        AllocOutcome::nothing(now)
    }

    /// `buffered_rmqueue()` (v4.9) / `rmqueue()` (v5.14): the per-CPU list for the orders the era
    /// caches (refilled by `rmqueue_bulk` under one `zone->lock`), else one `__rmqueue` under it.
    fn rmqueue(
        &mut self,
        zi: usize,
        cpu: u32,
        now: Ps,
        order: u8,
        mt: MigrateType,
        env: Env,
    ) -> AllocOutcome {
        let mut out = AllocOutcome::nothing(now);
        let lists = self.cfg.pcp_lists;
        if !lists.allowed(order) {
            let mut s = Section::new();
            let got = self.zones[zi].rmqueue(order, mt, &mut self.stats, &mut s);
            let (grant, hold, contended) = self.lock_section(zi, cpu, now, &s, env);
            out.done = grant + hold;
            out.lock_wait = grant - now;
            out.zone_locked = true;
            out.contended = contended;
            out.splits = s.splits;
            if let Some(i) = got {
                let p = self.zones[zi].pages.get_mut(i);
                p.state = PageState::Allocated;
                p.order = order;
                out.pfn = Some(self.zones[zi].start_pfn + i as u64);
                self.stats.buddy_allocs[order as usize] += 1;
            }
            return out;
        }
        let pindex = lists.pindex(mt as usize, order);
        let mut t = now + self.costs.pcp_alloc;
        if matches!(self.cfg.drain, PcpDrain::FreeFactor | PcpDrain::FreeHigh) {
            // v5.13+: an allocation halves the free factor.
            self.zones[zi].pcp[cpu as usize].free_factor >>= 1;
        }
        if self.zones[zi].pcp[cpu as usize].lists[pindex].is_empty() {
            let batch = self.zones[zi].pcp[cpu as usize].batch;
            let n = match self.cfg.refill {
                PcpRefill::Batch => batch,
                PcpRefill::BatchShiftedByOrder if batch > 1 => (batch >> order).max(2),
                PcpRefill::BatchShiftedByOrder => batch,
                PcpRefill::AllocFactor => self.nr_pcp_alloc(zi, cpu, order),
            };
            let mut s = Section::new();
            let z = &mut self.zones[zi];
            let mut got = 0;
            for _ in 0..n {
                let Some(i) = z.rmqueue(order, mt, &mut self.stats, &mut s) else { break };
                let p = z.pages.get_mut(i);
                p.state = PageState::Pcp;
                p.order = order;
                // rmqueue_bulk appends after the previous page: address order from the head.
                let pcp = &mut z.pcp[cpu as usize];
                pcp.lists[pindex].push_back(&mut z.pages, i);
                got += 1;
            }
            z.pcp[cpu as usize].count += got << order;
            let (grant, hold, contended) = self.lock_section(zi, cpu, t, &s, env);
            out.lock_wait = grant - t;
            out.zone_locked = true;
            out.contended = contended;
            out.refill_blocks = got as u32;
            out.splits = s.splits;
            t = grant + hold;
            self.stats.pcp_misses[order as usize] += 1;
            self.stats.refills += 1;
            self.stats.refill_blocks += got;
        } else {
            out.pcp_hit = true;
            self.stats.pcp_hits[order as usize] += 1;
        }
        let z = &mut self.zones[zi];
        let pcp = &mut z.pcp[cpu as usize];
        let i = pcp.lists[pindex].first;
        out.done = t;
        if i == NIL {
            return out;
        }
        pcp.lists[pindex].remove(&mut z.pages, i);
        pcp.count -= 1 << order;
        let p = z.pages.get_mut(i);
        p.state = PageState::Allocated;
        p.order = order;
        out.pfn = Some(z.start_pfn + i as u64);
        out
    }

    /// `__free_pages(page, order)` on `cpu` at `now`: onto this CPU's list for the orders the era
    /// caches (draining `free_pcppages_bulk` under `zone->lock` once `count >= high`), else
    /// `free_one_page` under `zone->lock`.
    pub fn free_pages(
        &mut self,
        cpu: u32,
        now: Ps,
        pfn: u64,
        order: u8,
        env: Env,
    ) -> Result<FreeOutcome, PageAllocError> {
        let zi = self.zone_of(pfn).ok_or(PageAllocError::NoSuchPage(pfn))?;
        let z = &mut self.zones[zi];
        let i = (pfn - z.start_pfn) as u32;
        let p = z.pages.get(i);
        if p.state != PageState::Allocated || p.order != order {
            return Err(PageAllocError::NotAllocated { pfn, order });
        }
        // get_pfnblock_migratetype(); highatomic blocks go on the MOVABLE list (v4.9).
        let mut mt = z.mt_of(i);
        if mt as usize >= MIGRATE_PCPTYPES {
            mt = MigrateType::Movable;
        }
        let mut out = FreeOutcome {
            done: now,
            lock_wait: Ps::ZERO,
            to_pcp: false,
            drained_blocks: 0,
            zone_locked: false,
            contended: false,
            merges: 0,
        };
        let lists = self.cfg.pcp_lists;
        if !lists.allowed(order) {
            // __free_pages_ok() -> free_one_page()
            z.pages.get_mut(i).state = PageState::None;
            let mut s = Section::new();
            z.free_one_page(i, order, mt, &mut s);
            let (grant, hold, contended) = self.lock_section(zi, cpu, now, &s, env);
            out.done = grant + hold;
            out.lock_wait = grant - now;
            out.zone_locked = true;
            out.contended = contended;
            out.merges = s.merges;
            self.stats.frees_to_buddy[order as usize] += 1;
            return Ok(out);
        }
        let pindex = lists.pindex(mt as usize, order);
        let reclaim_active = z.reclaim_active;
        z.set_warm(i, true);
        let pcp = &mut z.pcp[cpu as usize];
        if self.cfg.refill == PcpRefill::AllocFactor {
            // v6.7 free_unref_page_commit(): a free halves the refill's scale.
            pcp.alloc_factor >>= 1;
        }
        z.pages.get_mut(i).state = PageState::Pcp;
        z.pages.get_mut(i).mt = mt;
        pcp.lists[pindex].push_front(&mut z.pages, i);
        pcp.count += 1 << order;
        out.to_pcp = true;
        self.stats.frees_to_pcp[order as usize] += 1;
        let mut t = now + self.costs.pcp_free;
        let mut free_high = false;
        if self.cfg.drain == PcpDrain::FreeHigh {
            // v6.7: a high-order free right after another one, with no allocation since the
            // last drain (free_factor not yet halved to 0), is a run to drain at once.
            if order > 0 && order <= PAGE_ALLOC_COSTLY_ORDER {
                free_high = pcp.free_factor > 0 && pcp.prev_free_high_order;
                pcp.prev_free_high_order = true;
            } else {
                pcp.prev_free_high_order = false;
            }
        }
        let high = nr_pcp_high(self.cfg, pcp, reclaim_active, free_high);
        if pcp.count >= high {
            let n = self.nr_to_drain(zi, cpu, high, free_high);
            let start = match self.cfg.drain {
                PcpDrain::BatchPages => pindex,
                _ => 1 % lists.nr_lists(),
            };
            let picked = self.pick_for_drain(zi, cpu, n, start);
            let mut s = Section::new();
            if self.cfg.drain_picks_outside_lock {
                t += self.costs.buddy_block * picked.len() as u64;
            } else {
                s.blocks += picked.len() as u32;
            }
            self.zones[zi].free_picked(&picked, &mut s);
            let (grant, hold, contended) = self.lock_section(zi, cpu, t, &s, env);
            out.lock_wait = grant - t;
            out.zone_locked = true;
            out.contended = contended;
            out.drained_blocks = picked.len() as u32;
            out.merges = s.merges;
            t = grant + hold;
            self.stats.drains += 1;
            self.stats.drain_blocks += picked.len() as u64;
        }
        out.done = t;
        Ok(out)
    }

    /// `free_pcppages_bulk()`'s picking: round robin over the lists from `start`, taking from
    /// each list's tail (coldest) `batch_free` blocks, where `batch_free` grows with every empty
    /// list passed; the last non-empty list gives everything left. Counts entries (v4.9) or base
    /// pages (later). Removes the blocks from the lists and `pcp->count`.
    fn pick_for_drain(&mut self, zi: usize, cpu: u32, count: u64, start: usize) -> Vec<(u32, u8)> {
        let lists = self.cfg.pcp_lists;
        let per_page = self.cfg.drain != PcpDrain::BatchEntries;
        let z = &mut self.zones[zi];
        let pcp = &mut z.pcp[cpu as usize];
        let nr = pcp.lists.len();
        let mut remaining = count.min(pcp.count) as i64;
        let mut picked = Vec::new();
        let mut pindex = (start + nr - 1) % nr;
        let mut batch_free = 0i64;
        while remaining > 0 && pcp.count > 0 {
            loop {
                batch_free += 1;
                pindex = (pindex + 1) % nr;
                if !pcp.lists[pindex].is_empty() {
                    break;
                }
            }
            if batch_free == nr as i64 {
                batch_free = remaining;
            }
            let order = lists.order_of(pindex);
            loop {
                let j = pcp.lists[pindex].last;
                pcp.lists[pindex].remove(&mut z.pages, j);
                pcp.count -= 1 << order;
                remaining -= if per_page { 1 << order } else { 1 };
                picked.push((j, order));
                batch_free -= 1;
                if remaining <= 0 || batch_free == 0 || pcp.lists[pindex].is_empty() {
                    break;
                }
            }
        }
        picked
    }

    /// `drain_pages_zone()` on every zone: `cpu`'s per-CPU lists go back to the buddy lists, one
    /// `zone->lock` section per non-empty zone (what `drain_all_pages` runs on each CPU before
    /// reclaim gives up, and CPU hot-unplug). Returns when done.
    pub fn drain_local_pages(&mut self, cpu: u32, now: Ps, env: Env) -> Ps {
        let mut t = now;
        for zi in 0..self.zones.len() {
            let count = self.zones[zi].pcp[cpu as usize].count;
            if count == 0 {
                continue;
            }
            let picked = self.pick_for_drain_all(zi, cpu);
            let mut s = Section::new();
            s.blocks += picked.len() as u32;
            self.zones[zi].free_picked(&picked, &mut s);
            let (grant, hold, _) = self.lock_section(zi, cpu, t, &s, env);
            t = grant + hold;
            self.stats.drains += 1;
            self.stats.drain_blocks += picked.len() as u64;
        }
        t
    }

    fn pick_for_drain_all(&mut self, zi: usize, cpu: u32) -> Vec<(u32, u8)> {
        let lists = self.cfg.pcp_lists;
        let z = &mut self.zones[zi];
        let pcp = &mut z.pcp[cpu as usize];
        let mut picked = Vec::new();
        for (pindex, list) in pcp.lists.iter_mut().enumerate() {
            let order = lists.order_of(pindex);
            while !list.is_empty() {
                let j = list.last;
                list.remove(&mut z.pages, j);
                picked.push((j, order));
            }
        }
        pcp.count = 0;
        picked
    }

    /// `alloc_pages` outside simulated time (a benchmark's untimed setup): the allocator's
    /// state and counters change, `zone->lock`'s clock does not.
    pub fn alloc_pages_untimed(
        &mut self,
        cpu: u32,
        at: Ps,
        order: u8,
        mt: MigrateType,
        env: Env,
    ) -> Option<u64> {
        let mut clocks = std::mem::take(&mut self.untimed_clocks);
        clocks.clear();
        clocks.extend(self.clocks());
        let out = self.alloc_pages(cpu, at, order, mt, env);
        self.rewind_from(&clocks);
        self.untimed_clocks = clocks;
        out.pfn
    }

    /// Each zone's `zone->lock` and data-line clocks (for untimed sections).
    pub fn timings(&self) -> Vec<(LockTiming, (Ps, Ps))> {
        self.clocks().collect()
    }

    /// Each zone's lock and data-line clocks, as [`PageAlloc::timings`] keeps them.
    fn clocks(&self) -> impl Iterator<Item = (LockTiming, (Ps, Ps))> + '_ {
        self.zones.iter().map(|z| (z.lock.timing(), z.data_line.busy()))
    }

    /// Puts back clocks [`PageAlloc::timings`] took: the state stays, the time did not pass.
    pub fn rewind(&mut self, timing: Vec<(LockTiming, (Ps, Ps))>) {
        self.rewind_from(&timing);
    }

    /// [`PageAlloc::rewind`] from borrowed clocks.
    fn rewind_from(&mut self, timing: &[(LockTiming, (Ps, Ps))]) {
        for (z, &(lock, data)) in self.zones.iter_mut().zip(timing) {
            z.lock.rewind(lock);
            z.data_line.rewind(data);
        }
    }

    /// Base pages free in the buddy lists plus on every per-CPU list (for checks).
    pub fn free_and_cached_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.nr_free + z.pcp.iter().map(|p| p.count).sum::<u64>()).sum()
    }
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
