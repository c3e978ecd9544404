//! Page reclaim (mm/vmscan.c, v4.2 with the v4.3 batched unmap flush as a knob): the file LRU
//! lists of each zone under `zone->lru_lock` (one zone per node, or a named machine's x86-64
//! zones, linux/mm/page_alloc/zones.rs), per-CPU pagevecs feeding them (linux/mm/swap.rs), kswapd as a kernel thread
//! woken when an allocation finds every zone of its node below its low watermark, direct reclaim
//! in an allocating task that would take them below `min`.
//!
//! Rules (v4.2 unless marked; docs/references/seeds-001-003-004.md#reclaim):
//! - `get_scan_count`: the workloads reclaim file pages only (no swap is configured, so
//!   `SCAN_FILE`): each file list's target is `size >> priority`.
//! - `shrink_lruvec`: while targets remain, per round `min(target, SWAP_CLUSTER_MAX)` from the
//!   inactive list (`shrink_inactive_list`), then as many from the active list if the inactive
//!   one is low (`active > inactive`, `inactive_file_is_low`) or (v4.20+, `workingset =
//!   activate-and-deactivate`) the zone activated refaults since its last reclaim ended; stop
//!   once `nr_to_reclaim` is met (file-only reclaim has nothing to rebalance), except direct
//!   reclaim at `DEF_PRIORITY`.
//! - Evictions leave shadow entries and refaults close enough start active (v3.15+,
//!   linux/mm/workingset.rs).
//! - With `memcg_stats = ratelimited` (v6.12+), whether a pass ages the active list is decided
//!   once at its start from the statistics as the last flush left them (linux/mm/memcontrol.rs);
//!   a direct reclaim that reclaimed nothing at any priority while skipping the active list
//!   walks them again with it aged (v5.5 `force_deactivate`, with `activate-and-deactivate`).
//! - `shrink_inactive_list`: `lru_add_drain`, isolate up to `nr_to_scan` pages from the tail
//!   under `lru_lock`, `shrink_page_list` outside it, then (v4.3) `try_to_unmap_flush` before the
//!   survivors go back and the rest are freed.
//! - `shrink_page_list` / `page_check_references`: a mapped page with a young PTE is kept on the
//!   inactive list the first time (`SetPageReferenced`, `PAGEREF_KEEP`) and activated the second;
//!   a page with no young PTE is reclaimed (`try_to_unmap`, linux/mm/rmap.rs), then
//!   `__remove_mapping`.
//! - Large folios (`file_folios = large`, v6.16+ ext4): one LRU entry and one referenced state a
//!   folio; isolation counts its pages against the scan target, and the lists, scan, steal and
//!   (de)activation counts are in pages (docs/references/linux-6x.md#large-folios).
//! - kswapd (`balance_pgdat`): from `DEF_PRIORITY` down, each priority walks the node's zones
//!   from the lowest up to the highest one below its high watermark (`end_zone`);
//!   `kswapd_shrink_zone` skips a zone above high + gap + `lowmem_reserve` and shrinks the others
//!   with `nr_to_reclaim = max(SWAP_CLUSTER_MAX, high_wmark)`; the priority drops when no zone
//!   scanned its `nr_to_reclaim` or nothing was reclaimed; done (and asleep) once every zone is
//!   above its high watermark.
//! - direct reclaim (`do_try_to_free_pages` -> `shrink_zones`): `nr_to_reclaim =
//!   SWAP_CLUSTER_MAX` shared by the zones of the zonelist (Normal, then DMA32), each shrunk in
//!   turn with its own targets; priority 12 down to 0, done after a walk that reclaimed that
//!   much.
//!
//! Not modelled: anonymous LRU lists (no swap: `get_scan_count` never scans them), the
//! `too_many_isolated` stall (counted, not slept: the model has no timers), memcg, slab
//! shrinkers, writeback (the modelled workloads never dirty a file page), `zone_reclaim_mode`,
//! `zone_reclaimable` (the zones skipped below `DEF_PRIORITY` once scanned six times their
//! pages), direct reclaim of other nodes' zones, `throttle_direct_reclaim`.

use crate::linux::include::linux::mmzone::LruList;

use super::page_alloc::Layout;
use crate::attribution::Bucket;
use crate::hw::cpumask::CpuMask;
use crate::hw::lock::SpinLock;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::MmId;
use crate::linux::syscalls::{Op, Program};
use crate::linux::{Continuation, Kernel};
use crate::profile::MachineProfile;
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// Reclaim, counted as /proc/vmstat names it where it has a name.
    Counters {
        pgscan_kswapd,
        pgscan_direct,
        pgsteal_kswapd,
        pgsteal_direct,
        pgactivate,
        pgdeactivate,
        /// Pages `page_check_references` kept on the inactive list (first young reference).
        pgkeep,
        /// `page_referenced` calls on mapped pages that found a young PTE / none.
        pgref_young,
        pgref_old,
        /// Direct reclaim entries (`allocstall`).
        allocstall,
        /// Reclaims a memory cgroup's limit started in a charging task (memory.events `max`;
        /// linux/mm/memcontrol.rs).
        memcg_reclaims,
        /// Time in the memory cgroup's page-counter atomics, charges and uncharges (ps).
        memcg_counter_ps,
        /// Wake-ups of a sleeping kswapd (`pageoutrun` counts its balance passes).
        kswapd_wakeups,
        pageoutrun,
        /// `shrink_inactive_list` calls that isolated at least one page, and the pages.
        isolate_batches,
        isolated_pages,
        /// PTEs `try_to_unmap` cleared.
        reclaim_unmapped_ptes,
        /// `ptep_clear_flush` calls (a flush per page: before v4.3, or when the flush cannot be
        /// deferred).
        reclaim_page_flushes,
        /// `try_to_unmap_flush` rounds that had something to flush (v4.3).
        reclaim_batch_flushes,
        lru_lock_acquisitions,
        lru_lock_contended,
        lru_lock_wait_ps,
        /// Direct reclaimers that found `too_many_isolated` (Linux would stall HZ/10).
        too_many_isolated,
        /// File pages read in again where reclaim had left a shadow entry, and those of them
        /// activated at once (linux/mm/workingset.rs).
        workingset_refault_file,
        workingset_activate_file,
        /// Direct reclaim walks retried with the active list aged whatever the statistics say
        /// (`sc->force_deactivate`, v5.5+).
        force_deactivate,
        /// Flushes of the memory cgroup statistics reclaim reads (`memcg_stats = ratelimited`;
        /// linux/mm/memcontrol.rs): by the periodic work, and by a reader finding it late.
        memcg_stats_flushes,
        memcg_stats_flushes_ratelimited,
    }
}

/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u32 = 12;

/// How `try_to_unmap` flushes during reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnmapFlush {
    /// Up to v4.2: `ptep_clear_flush`, a `flush_tlb_page` (and IPI round) per page.
    PerPage,
    /// v4.3+: `TTU_BATCH_FLUSH`, one full-flush round per `shrink_page_list` batch.
    Batched,
}

/// What reclaim learns from refaults (linux/mm/workingset.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workingset {
    /// Nothing: an evicted page leaves no trace (before v3.15).
    #[default]
    None,
    /// Shadow entries; a refault closer than the active file list's size starts active
    /// (v3.15, a528910e12ec, to v4.19).
    Activate,
    /// As `Activate`, and a reclaim that finds activating refaults since the last one ended
    /// deactivates the active file list whatever its size (v4.20, 2a2e48854d70; from v5.5
    /// `sc->may_deactivate`, b91ac374346b; 6.18 unchanged).
    ActivateAndDeactivate,
}

impl Workingset {
    pub fn is_none(&self) -> bool {
        *self == Workingset::None
    }
}

/// What reclaim and the refault test read of an lruvec's list sizes and activated refaults
/// (`lruvec_page_state`; linux/mm/memcontrol.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemcgStats {
    /// The counts as they are: per-CPU deltas of at most a batch folded in at once (up to
    /// v5.14), or reclaim flushing the statistics whenever a batch per CPU is pending (v5.15 to
    /// v6.11); an error of tens of pages the model does not resolve.
    #[default]
    Exact,
    /// As the last flush left them: the periodic flusher every 2 s, reclaim and refaults
    /// flushing only when it is a full period late (v6.12, "memcg: use ratelimited stats flush
    /// in the reclaim"; 6.18 unchanged).
    Ratelimited,
}

impl MemcgStats {
    pub fn is_exact(&self) -> bool {
        *self == MemcgStats::Exact
    }
}

/// The folios a disk file system's regular files are read into (`mapping_large_folio_support`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFolios {
    /// Single pages (ext4 before v6.16).
    #[default]
    Small,
    /// Readahead picks each window's folio order (v6.16: ext4 "enable large folio for regular
    /// file"; the order ramp of v6.16's `ra->order`): linux/mm/readahead.rs.
    Large,
}

impl FileFolios {
    pub fn is_small(&self) -> bool {
        *self == FileFolios::Small
    }
}

/// The reclaim knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReclaimKnobs {
    pub unmap_flush: UnmapFlush,
    /// `SWAP_CLUSTER_MAX` (and `COMPACT_CLUSTER_MAX`, which is defined as it).
    pub swap_cluster_max: u32,
    /// Workingset detection. Not written into a result's configuration while none.
    #[serde(default, skip_serializing_if = "Workingset::is_none")]
    pub workingset: Workingset,
    /// How fresh the statistics reclaim reads are. Not written into a result's configuration
    /// while exact.
    #[serde(default, skip_serializing_if = "MemcgStats::is_exact")]
    pub memcg_stats: MemcgStats,
    /// The folios the workloads' disk files are read into. Not written into a result's
    /// configuration while small.
    #[serde(default, skip_serializing_if = "FileFolios::is_small")]
    pub file_folios: FileFolios,
}

impl ReclaimKnobs {
    /// v4.3+.
    pub const V4_3: ReclaimKnobs = ReclaimKnobs {
        unmap_flush: UnmapFlush::Batched,
        swap_cluster_max: 32,
        workingset: Workingset::None,
        memcg_stats: MemcgStats::Exact,
        file_folios: FileFolios::Small,
    };
}

/// Unit costs from the profile's `[reclaim]` section (and `struct page` misses from
/// `[page_alloc]`).
#[derive(Debug, Clone)]
pub struct Costs {
    pub lru_lock_section: Ps,
    pub lru_page: Ps,
    pub struct_page_miss: Ps,
    pub shrink_page: Ps,
    pub rmap_vma: Ps,
    pub remove_mapping: Ps,
    pub pagecache_fill_page: Ps,
    /// The parts of `remove_mapping` and `pagecache_fill_page` under the mapping's `i_pages`
    /// lock; none: the mapping's lock is not modelled (a profile without the keys).
    pub remove_mapping_locked: Option<Ps>,
    pub pagecache_add_locked: Option<Ps>,
}

impl Costs {
    pub fn from_profile(p: &MachineProfile) -> Option<Costs> {
        let r = p.reclaim.as_ref()?;
        let mhz = p.clock_mhz();
        let c = |s: &crate::profile::Sourced| Ps::from_cycles(s.value, mhz);
        Some(Costs {
            lru_lock_section: c(&r.lru_lock_section_cycles),
            lru_page: c(&r.lru_page_cycles),
            struct_page_miss: p
                .page_alloc
                .as_ref()
                .map_or(Ps::ZERO, |a| Ps::from_ns(a.struct_page_miss_ns.value)),
            shrink_page: c(&r.shrink_page_cycles),
            rmap_vma: c(&r.rmap_vma_cycles),
            remove_mapping: c(&r.remove_mapping_cycles),
            pagecache_fill_page: c(&r.pagecache_fill_page_cycles),
            remove_mapping_locked: r.remove_mapping_locked_cycles.as_ref().map(c),
            pagecache_add_locked: r.pagecache_add_locked_cycles.as_ref().map(c),
        })
    }
}

// Page flags the model keeps per frame.
const PG_LRU: u8 = 1;
const PG_ACTIVE: u8 = 2;
const PG_REFERENCED: u8 = 4;
/// Some PTE mapping the page has its accessed bit set (the hardware sets it on a walk; a fault
/// installs young PTEs in v4.2). One bit per frame: the modelled files are mapped by one mm.
const PTE_YOUNG: u8 = 8;
/// `PG_readahead` (linux/mm/readahead.rs): the page whose fault pushes the readahead window.
const PG_READAHEAD: u8 = 16;

/// One zone's LRU lists (`struct lruvec`, per zone up to v4.7) and `zone->lru_lock`.
#[derive(Debug, Default)]
pub struct Lruvec {
    /// Head (front) is the newest page; isolation takes from the tail (back).
    pub inactive_file: LruList,
    pub active_file: LruList,
    pub nr_isolated: u64,
    /// The age shadow entries are measured in, the refaults activated here, and their count
    /// when the last reclaim of the lruvec ended (`lruvec->refaults`, `snapshot_refaults`)
    /// (linux/mm/workingset.rs).
    pub nonresident_age: u64,
    pub workingset_activations: u64,
    pub refaults_snapshot: u64,
    pub lock: SpinLock,
}

/// `current->tlb_ubc` (`struct tlbflush_unmap_batch`, v4.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Ubc {
    pub cpumask: CpuMask,
    pub flush_required: bool,
    pub writable: bool,
}

/// A page `shrink_page_list` works on, and the translations its unmap removed (the oracle
/// checks them at the free).
#[derive(Debug, Clone, Default)]
pub(in crate::linux) struct Isolated {
    pub pfn: u64,
    /// Past `page_check_references`, decided for reclaim; the mappings left to unmap.
    pub reclaiming: bool,
    pub to_unmap: Vec<(MmId, u64)>,
    pub unmapped: Vec<(MmId, u64)>,
}

/// Where a page that survives `shrink_page_list` goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Back {
    Inactive,
    Active,
}

/// `struct scan_control` and where the reclaimer is in its walk of the zones and in
/// `shrink_lruvec`.
#[derive(Debug)]
pub(in crate::linux) struct ScanControl {
    kswapd: bool,
    /// A memory cgroup's limit reclaim (`cgroup_reclaim(sc)`; linux/mm/memcontrol.rs).
    memcg: bool,
    node: usize,
    /// The zones this priority's walk shrinks, in order (direct reclaim: the zonelist, Normal
    /// first; kswapd: the lowest zone up to `end_zone`), and how far it got.
    walk: Vec<usize>,
    next: usize,
    /// The zone `shrink_lruvec` works on.
    zone: usize,
    /// kswapd: the highest zone needing balance (`end_zone`, the class zone of its checks), and
    /// whether this priority's walk should raise the priority (no zone scanned its
    /// `nr_to_reclaim`).
    end_zone: usize,
    raise_priority: bool,
    priority: u32,
    nr_to_reclaim: u64,
    /// Reclaimed in this `shrink_lruvec` pass (its local `nr_reclaimed`).
    pass_reclaimed: u64,
    /// Scanned (isolated) in this pass (`sc->nr_scanned`).
    pass_scanned: u64,
    /// `sc->nr_reclaimed`: since direct reclaim started; for kswapd, in this priority's walk.
    total_reclaimed: u64,
    /// Remaining scan targets of this pass: inactive file, active file.
    nr: [u64; 2],
    started: bool,
    /// The round's inactive chunk was taken; the active chunk is next.
    active_next: bool,
    /// Whether this pass ages the active list.
    deactivate: Deactivate,
    /// A pass left the active list unaged (`sc->skipped_deactivate`), and the walk that retries
    /// with it aged whatever the statistics say (`sc->force_deactivate`; v5.5+).
    skipped_deactivate: bool,
    force_deactivate: bool,
    list: Vec<Isolated>,
    pos: usize,
    kept: Vec<(u64, Back)>,
    freed: Vec<Isolated>,
}

/// Whether a pass ages the file active list (`sc->may_deactivate` for the file lists).
#[derive(Debug, Clone, Copy)]
enum Deactivate {
    /// Decided at the pass's start: from the statistics as the last flush left them
    /// (`memcg_stats = ratelimited`), or forced (`sc->force_deactivate`).
    Pass(bool),
    /// At each chunk, from the lists as they are: while the inactive list is low, or whatever
    /// its size if the lruvec activated refaults since its last reclaim ended (`workingset =
    /// activate-and-deactivate`).
    WhileLow { refaults_seen: bool },
}

/// A reclaimer's continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `shrink_lruvec`'s control: the next chunk, the next priority, or done.
    Shrink,
    /// `shrink_inactive_list`'s isolation of `nr` pages.
    Isolate { nr: u32 },
    /// `shrink_page_list` from the current page on.
    Pages,
    /// `ptep_clear_flush`'s flush of one unmapped page of `mm`.
    FlushPage { mm: MmId, va: u64 },
    /// `try_to_unmap_flush` (v4.3).
    FlushBatch,
    /// The batch's end: free the reclaimed pages, put the rest back.
    Finish,
    /// `reclaim_pages`' `shrink_folio_list` from its next folio (vmscan/reclaim_pages.rs).
    PageoutFolio,
    /// `reclaim_pages`' end: free the reclaimed folios, put the rest back.
    PageoutEnd,
}

/// A simulated zone as reclaim sees it: its node, first frame, pages, and the named machine's
/// managed pages it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneSpan {
    pub node: usize,
    pub start: u64,
    pub pages: u64,
    pub sized_as: u64,
}

/// The reclaim state of the machine.
#[derive(Debug, Default)]
pub struct Vmscan {
    pub costs: Option<Costs>,
    flags: Vec<u8>,
    /// Per frame: the order of the folio it heads (0 for a single page; a large folio's other
    /// frames are never on a list, so theirs is unused).
    order: Vec<u8>,
    /// Per zone (the page allocator's zone order).
    pub lruvecs: Vec<Lruvec>,
    zones: Vec<ZoneSpan>,
    /// Per CPU: the folios on their way to the LRU lists (linux/mm/swap.rs).
    pub(in crate::linux) pagevecs: Vec<Vec<u64>>,
    /// Per task.
    pub ubc: Vec<Ubc>,
    sc: Vec<Option<Box<ScanControl>>>,
    /// Per task: the folios `reclaim_pages` works on (madvise(MADV_PAGEOUT)).
    pageout: Vec<Option<reclaim_pages::FolioList>>,
    /// Per node: kswapd's task and whether it sleeps.
    kswapd: Vec<Option<(usize, bool)>>,
    /// Per task: a kswapd just woken (or just started), which preempts its CPU's task at the
    /// next boundary (CFS wake-up preemption); cleared once it runs.
    woken: Vec<bool>,
}

impl Vmscan {
    /// Host bytes per page frame: its LRU flags and its folio's order.
    pub const HOST_BYTES_PER_PAGE: u64 = 2 * std::mem::size_of::<u8>() as u64;

    /// The LRU lists of `layout`'s simulated zones (laid out as the page allocator lays them).
    pub fn new(p: &MachineProfile, layout: &Layout, cpus: u32) -> Vmscan {
        let mut zones = Vec::new();
        let mut start = 0;
        for (node, specs) in layout.nodes.iter().enumerate() {
            for z in specs.iter().filter(|z| z.pages > 0) {
                zones.push(ZoneSpan { node, start, pages: z.pages, sized_as: z.sized_as });
                start += z.pages;
            }
        }
        Vmscan {
            costs: Costs::from_profile(p),
            flags: vec![0; start as usize],
            order: vec![0; start as usize],
            lruvecs: zones.iter().map(|_| Lruvec::default()).collect(),
            zones,
            pagevecs: vec![Vec::with_capacity(super::swap::PAGEVEC_SIZE); cpus as usize],
            ubc: Vec::new(),
            sc: Vec::new(),
            pageout: Vec::new(),
            kswapd: vec![None; layout.nodes.len()],
            woken: Vec::new(),
        }
    }

    /// The zone of `pfn` (`page_zone`).
    pub(in crate::linux) fn zone_of(&self, pfn: u64) -> usize {
        self.zones.iter().rposition(|z| z.start <= pfn).expect("a frame of a zone")
    }

    /// `get_scan_count`'s `size >> priority` for a list of `size` pages of zone `zi`.
    fn scan_target(&self, zi: usize, size: usize, priority: u32) -> u64 {
        let z = &self.zones[zi];
        scan_target(size, (z.sized_as, z.pages), priority)
    }

    /// Pages in the folio headed by `pfn` (`folio_nr_pages`).
    #[inline]
    pub fn nr_pages(&self, pfn: u64) -> u64 {
        1 << self.order[pfn as usize]
    }

    /// The frames from `pfn` are a new folio of `order` (`prep_compound_page`).
    pub(in crate::linux) fn set_folio_order(&mut self, pfn: u64, order: u8) {
        self.order[pfn as usize] = order;
    }

    /// The folio `pfn` onto the head of zone `zone`'s active or inactive file list.
    pub(in crate::linux) fn lru_push(&mut self, zone: usize, active: bool, pfn: u64) {
        let nr = self.nr_pages(pfn);
        let l = &mut self.lruvecs[zone];
        if active { &mut l.active_file } else { &mut l.inactive_file }.push_front(pfn, nr);
    }

    /// `lruvec_add_folio` from a pagevec: `PG_LRU` set, onto the active list if the folio is
    /// active (a refault `workingset_refault` activated), else the inactive one.
    pub(in crate::linux) fn lru_add_folio(&mut self, zone: usize, pfn: u64) {
        let f = &mut self.flags[pfn as usize];
        *f |= PG_LRU;
        let active = *f & PG_ACTIVE != 0;
        self.lru_push(zone, active, pfn);
    }

    /// The oldest folio of zone `zone`'s active or inactive file list, taken off it.
    pub(in crate::linux) fn lru_pop(&mut self, zone: usize, active: bool) -> Option<u64> {
        let Vmscan { lruvecs, order, .. } = self;
        let l = &mut lruvecs[zone];
        if active { &mut l.active_file } else { &mut l.inactive_file }.pop_back(|p| 1 << order[p as usize])
    }

    /// The folio `pfn` taken off whichever file list of zone `zone` holds it.
    pub(in crate::linux) fn lru_remove(&mut self, zone: usize, pfn: u64) -> bool {
        let nr = self.nr_pages(pfn);
        let l = &mut self.lruvecs[zone];
        l.inactive_file.remove(pfn, nr) || l.active_file.remove(pfn, nr)
    }

    /// The hardware set the accessed bit of a PTE mapping `pfn` (a walk), or a fault installed
    /// a young PTE.
    #[inline]
    pub fn mark_young(&mut self, pfn: u64) {
        if let Some(f) = self.flags.get_mut(pfn as usize) {
            *f |= PTE_YOUNG;
        }
    }

    /// `ptep_test_and_clear_young` over the page's PTEs: whether one was young; clears it.
    pub fn test_clear_young(&mut self, pfn: u64) -> bool {
        let f = &mut self.flags[pfn as usize];
        let young = *f & PTE_YOUNG != 0;
        *f &= !PTE_YOUNG;
        young
    }

    /// `folio_set_active` on a page not yet on an LRU list (a refault; linux/mm/workingset.rs).
    pub(in crate::linux) fn set_active(&mut self, pfn: u64) {
        self.flags[pfn as usize] |= PG_ACTIVE;
    }

    /// `SetPageReadahead`, `PageReadahead`, `ClearPageReadahead`.
    pub fn set_readahead(&mut self, pfn: u64) {
        self.flags[pfn as usize] |= PG_READAHEAD;
    }

    pub fn readahead_marked(&self, pfn: u64) -> bool {
        self.flags.get(pfn as usize).is_some_and(|f| f & PG_READAHEAD != 0)
    }

    pub fn clear_readahead(&mut self, pfn: u64) {
        self.flags[pfn as usize] &= !PG_READAHEAD;
    }

    /// A page put on the inactive list outside simulated time (a benchmark's untimed setup).
    pub fn lru_add_untimed(&mut self, pfn: u64) {
        let n = self.zone_of(pfn);
        self.flags[pfn as usize] = PG_LRU;
        self.order[pfn as usize] = 0;
        self.lruvecs[n].inactive_file.push_front(pfn, 1);
    }

    /// The model's page flags of `pfn` (LRU 1, active 2, referenced 4, a young PTE 8, readahead 16), for
    /// tests and debugging.
    pub fn page_flags(&self, pfn: u64) -> u8 {
        self.flags[pfn as usize]
    }

    /// Whether task `t` is a kswapd woken since it last ran (it preempts at once).
    pub fn preempts(&self, t: usize) -> bool {
        self.woken.get(t).copied().unwrap_or(false)
    }

    pub(in crate::linux) fn ensure_task(&mut self, t: usize) {
        if self.ubc.len() <= t {
            self.ubc.resize(t + 1, Ubc::default());
            self.sc.resize_with(t + 1, || None);
            self.pageout.resize_with(t + 1, || None);
            self.woken.resize(t + 1, false);
        }
    }

    /// Whether `pfn` is on an LRU list (`folio_test_lru`).
    pub fn on_lru(&self, pfn: u64) -> bool {
        self.flags.get(pfn as usize).is_some_and(|f| f & PG_LRU != 0)
    }

    /// Pages reclaim accounts for: on the file lists, in the CPUs' pagevecs on their way there,
    /// and isolated by reclaimers (tests: every cached page is one of these).
    #[cfg(test)]
    pub fn lru_accounted_pages(&self) -> u64 {
        let lists: u64 = self
            .lruvecs
            .iter()
            .map(|l| l.inactive_file.pages() + l.active_file.pages() + l.nr_isolated)
            .sum();
        let pagevecs: u64 = self.pagevecs.iter().flatten().map(|&p| self.nr_pages(p)).sum();
        lists + pagevecs
    }

    /// Pages on a zone's file LRU lists (inactive, active).
    pub fn lru_pages(&self, zone: usize) -> (usize, usize) {
        let l = &self.lruvecs[zone];
        (l.inactive_file.pages() as usize, l.active_file.pages() as usize)
    }
}

/// kswapd's loop (`kswapd()`): balance the node, sleep when it is balanced.
pub struct KswapdLoop;

impl Program for KswapdLoop {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.push(Op::Kswapd);
    }
}

impl Kernel {
    pub(in crate::linux) fn reclaim_costs(&self) -> &Costs {
        self.mm.vmscan.costs.as_ref().expect("reclaim needs the profile's [reclaim] section")
    }

    /// Makes task `t` (a kernel thread, `Simulation::add_kthread`) node `node`'s kswapd.
    pub fn register_kswapd(&mut self, node: usize, t: usize) {
        self.mm.vmscan.kswapd[node] = Some((t, false));
        self.mm.vmscan.ensure_task(t);
        self.mm.vmscan.woken[t] = true;
    }

    /// One `lru_lock` section of `work` on `zone` asked for at `at`: spin (lock wait), then the
    /// section (reclaim time). Returns the time from `at` to the unlock.
    pub(in crate::linux) fn lru_locked(&mut self, ctx: &mut Ctx, at: Ps, zone: usize, work: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let hold = self.reclaim_costs().lru_lock_section + work;
        let l = &mut self.mm.vmscan.lruvecs[zone].lock;
        let before = l.stats;
        let grant = l.acquire(ctx.cpu, at, hold, &topo, &lines);
        let c = &mut self.counters.vmscan;
        c.lru_lock_acquisitions += 1;
        c.lru_lock_contended += (l.stats.contended > before.contended) as u64;
        c.lru_lock_wait_ps += (grant - at).0;
        ctx.lock_wait("lru_lock", grant - at);
        ctx.charge(Bucket::Reclaim, hold);
        grant - at + hold
    }

    /// Runs a reclaimer's continuation.
    pub(in crate::linux) fn reclaim_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        match s {
            Step::Shrink => self.shrink_control(ctx, t),
            Step::Isolate { nr } => self.shrink_inactive_list(ctx, t, nr as u64),
            Step::Pages => self.shrink_page_list(ctx, t),
            Step::FlushPage { mm, va } => {
                self.counters.vmscan.reclaim_page_flushes += 1;
                self.flush_tlb_mm_range(
                    ctx,
                    mm,
                    va,
                    va + crate::linux::include::linux::mm_types::PAGE_SIZE,
                    false,
                )
            }
            Step::FlushBatch => self.try_to_unmap_flush(ctx, t),
            Step::Finish => self.finish_batch(ctx, t),
            Step::PageoutFolio => self.shrink_folio(ctx, t),
            Step::PageoutEnd => self.reclaim_pages_end(ctx, t),
        }
    }

    fn sc(&mut self, t: usize) -> &mut ScanControl {
        self.mm.vmscan.sc[t].as_mut().expect("a reclaimer has its scan_control")
    }

    /// `shrink_lruvec`'s loop, the walk of the zones and the priority loop around it
    /// (`balance_pgdat` for kswapd, `do_try_to_free_pages` for direct reclaim): queues the next
    /// chunk or finishes.
    fn shrink_control(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let scm = self.config.reclaim.swap_cluster_max;
        let mut d = Ps::ZERO;
        // kswapd's loops call cond_resched(): past its slice, the CPU's other task runs.
        if self.sc(t).kswapd && self.need_resched(ctx, t) {
            ctx.then(Continuation::Reclaim(Step::Shrink));
            return self.deschedule(ctx, true, ctx.now);
        }
        loop {
            let sc = self.sc(t);
            if sc.nr == [0, 0] {
                if sc.started {
                    // The zone's pass is over (kswapd_shrink_zone returns whether it scanned
                    // nr_to_reclaim).
                    sc.started = false;
                    if sc.kswapd && sc.pass_scanned >= sc.nr_to_reclaim {
                        sc.raise_priority = false;
                    }
                }
                let Some(zi) = self.next_zone(t) else {
                    if self.end_of_walk(t) {
                        self.snapshot_refaults(t);
                        self.mm.vmscan.sc[t] = None;
                        return d;
                    }
                    continue;
                };
                // get_scan_count (SCAN_FILE): size >> priority per file list of the zone, as on
                // the named machine.
                let (inactive, active) = self.mm.vmscan.lru_pages(zi);
                let priority = self.sc(t).priority;
                let nr = [
                    self.mm.vmscan.scan_target(zi, inactive, priority),
                    self.mm.vmscan.scan_target(zi, active, priority),
                ];
                // prepare_scan_control: activated refaults since the last reclaim ended (v4.20+),
                // and (with the statistics flushed at most every 2 s, v6.12+) the inactive list
                // low, as the statistics say, decide for the whole pass whether the active list
                // is aged.
                self.mem_cgroup_flush_stats_ratelimited(ctx.now + d);
                let s = self.lruvec_page_state(zi);
                let refaults_seen = self.config.reclaim.workingset == Workingset::ActivateAndDeactivate
                    && s.workingset_activate_file != self.mm.vmscan.lruvecs[zi].refaults_snapshot;
                let forced = self.sc(t).force_deactivate;
                let deactivate = match self.config.reclaim.memcg_stats {
                    _ if forced => Deactivate::Pass(true),
                    MemcgStats::Exact => Deactivate::WhileLow { refaults_seen },
                    MemcgStats::Ratelimited => {
                        Deactivate::Pass(refaults_seen || s.active_file > s.inactive_file)
                    }
                };
                let sc = self.sc(t);
                sc.zone = zi;
                sc.deactivate = deactivate;
                sc.started = true;
                sc.pass_reclaimed = 0;
                sc.pass_scanned = 0;
                sc.nr = nr;
                sc.active_next = false;
                continue;
            }
            let zone = sc.zone;
            let (inactive, active) = self.mm.vmscan.lru_pages(zone);
            let sc = self.sc(t);
            if !sc.active_next {
                sc.active_next = true;
                if sc.nr[0] > 0 {
                    let n = scan_chunk(sc.nr[0], scm);
                    sc.nr[0] -= n;
                    ctx.then(Continuation::Reclaim(Step::Isolate { nr: n as u32 }));
                    return d;
                }
            }
            sc.active_next = false;
            if sc.nr[1] > 0 {
                let n = scan_chunk(sc.nr[1], scm);
                sc.nr[1] -= n;
                // shrink_list: the active list is aged only while the inactive one is low, or
                // (v4.20+) while refaults are being activated; with exact statistics, the lists
                // as they are at each chunk.
                let sc = self.sc(t);
                let aged = match sc.deactivate {
                    Deactivate::Pass(aged) => aged,
                    Deactivate::WhileLow { refaults_seen } => active > inactive || refaults_seen,
                };
                if aged {
                    d += self.shrink_active_list(ctx, t, n, ctx.now + d);
                } else {
                    sc.skipped_deactivate = true;
                }
            }
            let sc = self.sc(t);
            // Global direct reclaim at DEF_PRIORITY scans its whole target (scan_adjusted, v6.x
            // proportional_reclaim); otherwise file-only reclaim stops once nr_to_reclaim is met.
            let scan_adjusted = !sc.kswapd && !sc.memcg && sc.priority == DEF_PRIORITY;
            if sc.pass_reclaimed >= sc.nr_to_reclaim && !scan_adjusted {
                sc.nr = [0, 0];
            }
        }
    }

    /// `snapshot_refaults` as task `t`'s reclaim ends: each zone of its node remembers how many
    /// refaults it had activated, as the statistics say.
    fn snapshot_refaults(&mut self, t: usize) {
        let node = self.sc(t).node;
        for zi in 0..self.mm.vmscan.zones.len() {
            if self.mm.vmscan.zones[zi].node == node {
                let activated = self.lruvec_page_state(zi).workingset_activate_file;
                self.mm.vmscan.lruvecs[zi].refaults_snapshot = activated;
            }
        }
    }

    /// Whether task `t` reclaims right now (tests).
    pub fn reclaiming(&self, t: usize) -> bool {
        self.mm.vmscan.sc.get(t).is_some_and(|s| s.is_some())
    }
}

mod balance;
mod reclaim_pages;
mod rules;
mod shrink;
pub use rules::{
    batch_end_order, page_check_references, remove_mapping_frees, scan_chunk, scan_target, BatchEnd, PageRef,
};

#[cfg(test)]
mod tests;
