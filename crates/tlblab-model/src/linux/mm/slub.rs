//! SLUB (mm/slub.c and the kmalloc caches of mm/slab_common.c), as of v4.9, on top of
//! [`PageAlloc`]: kmalloc size classes and dedicated caches, the slab order `calculate_order`
//! picks from the CPU count, a per-CPU active slab (`kmem_cache_cpu`: freelist + page) and per-CPU
//! partial list, per-node partial lists under `kmem_cache_node->list_lock`, frees from other
//! CPUs onto the slab page's own freelist, and empty slabs going back to the page allocator.
//! Requests above `KMALLOC_MAX_CACHE_SIZE` (two pages) go to the page allocator directly
//! (`kmalloc_large`). So the high-order page requests seed 004 is about arise where SLUB makes
//! them: one per slab's worth of objects, at the cache's order.
//!
//! Not modelled: debugging, RCU-freed caches, memcg caches, `get_any_partial` (partial slabs of
//! other nodes), the order fallback of `allocate_slab` beyond retrying at the minimum order, and
//! the object cache lines themselves (only the slab page's line travels between CPUs).

use crate::hw::coherence::RmwLine;
use crate::hw::lock::{LockTiming, SpinLock};
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

use super::page_alloc::{Env, PageAlloc};
use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::include::linux::mmzone::{fls, get_order, MigrateType, PAGE_ALLOC_COSTLY_ORDER};
use crate::linux::Kernel;
use list::{Link, SlabList};

/// `KMALLOC_MAX_CACHE_SIZE` for SLUB on 4 KiB pages (v4.9: `1 << (PAGE_SHIFT + 1)`).
pub const KMALLOC_MAX_CACHE_SIZE: u64 = 8192;
/// `slub_max_order` default = `PAGE_ALLOC_COSTLY_ORDER`.
pub const SLUB_MAX_ORDER: u8 = PAGE_ALLOC_COSTLY_ORDER;
/// `MIN_PARTIAL` / `MAX_PARTIAL`.
pub const MIN_PARTIAL: u64 = 5;
pub const MAX_PARTIAL: u64 = 10;
/// The kmalloc caches of v4.9 x86-64 (`kmalloc_caches[]` with the 96 and 192 byte ones).
pub const KMALLOC_SIZES: [u64; 13] = [8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192];
/// `cache_line_size()` on x86-64.
const CACHE_LINE: u64 = 64;

/// Dedicated caches the network paths use, with their v4.9 x86-64 object sizes and
/// `SLAB_HWCACHE_ALIGN`: `skbuff_head_cache` is `struct sk_buff` (232 bytes per
/// docs/references/seeds-001-003-004.md#slub-orders, exact size unverified), `skbuff_fclone_cache` two of
/// them plus a refcount.
pub const SKBUFF_HEAD_CACHE: (&str, u64) = ("skbuff_head_cache", 232);
pub const SKBUFF_FCLONE_CACHE: (&str, u64) = ("skbuff_fclone_cache", 2 * 232 + 4);

/// Where a slab page is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Some CPU's `c->page` (frozen).
    Active(u32),
    /// On a CPU's `c->partial` list (frozen).
    CpuPartial(u32),
    /// On its node's partial list.
    NodePartial,
    /// Every object handed out: on no list.
    Full,
}

/// One slab: a block of `1 << order` pages cut into objects.
#[derive(Debug, Clone)]
struct SlabPage {
    cache: CacheId,
    pfn: u64,
    order: u8,
    node: u32,
    /// `page->freelist`: objects freed back to the page (remote frees, or all free objects while
    /// the slab is not a CPU's).
    free: Vec<u16>,
    /// `c->freelist` while the slab is a CPU's active slab.
    cpu_free: Vec<u16>,
    allocated: Vec<bool>,
    place: Place,
    /// Its links on a node's partial list.
    lru: Link,
    /// The `struct page` line the cmpxchg_double slow paths write.
    line: RmwLine,
}

impl SlabPage {
    fn frozen(&self) -> bool {
        matches!(self.place, Place::Active(_) | Place::CpuPartial(_))
    }

    /// `page->inuse` for an unfrozen slab: objects not on the page's freelist.
    fn inuse(&self) -> u64 {
        self.allocated.len() as u64 - self.free.len() as u64
    }
}

/// `struct kmem_cache_cpu`.
#[derive(Debug, Clone, Default)]
struct CacheCpu {
    page: Option<u32>,
    /// `c->partial`, most recent first, and the `pobjects` estimate kept at its head.
    partial: Vec<u32>,
    pobjects: u64,
}

/// `struct kmem_cache_node`.
#[derive(Debug, Clone, Default)]
struct CacheNode {
    partial: SlabList,
    list_lock: SpinLock,
}

crate::linux::vmstat::counters! {
    /// SLUB's event counters over every cache (`CONFIG_SLUB_STATS` names where one exists).
    Counters {
    /// `slab_alloc` served from the CPU's freelist.
    slab_alloc_fastpath,
    /// `___slab_alloc` runs (refill from the active slab, a partial slab or a new one).
    slab_alloc_slowpath,
    /// `slab_free` to the CPU's own active slab.
    slab_free_fastpath,
    /// `__slab_free` runs (another CPU's or an inactive slab).
    slab_free_slowpath,
    /// Slow-path allocations that took a partial slab (the CPU's or the node's).
    slab_alloc_from_partial,
    /// `unfreeze_partials` runs (a CPU partial list moved to the node).
    slab_cpu_partial_drains,
    /// `new_slab` and `discard_slab` calls (slabs, any order).
    slabs_allocated,
    slabs_freed,
    /// Base pages of those slabs (`1 << order` each).
    slab_pages_allocated,
    slab_pages_freed,
    /// `kmalloc_large` blocks (requests above `KMALLOC_MAX_CACHE_SIZE`) and their frees.
    kmalloc_large_allocs,
    kmalloc_large_frees,
    /// `kmem_cache_node->list_lock` sections, those that found it held, and the wait.
    slab_list_lock_acquisitions,
    slab_list_lock_contended,
    slab_list_lock_wait_ps,
    }
}

/// Per-cache counters (the `CONFIG_SLUB_STATS` names where one exists).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub alloc_fastpath: u64,
    pub alloc_slowpath: u64,
    pub alloc_refill: u64,
    pub alloc_from_cpu_partial: u64,
    pub alloc_from_node_partial: u64,
    pub alloc_slab: u64,
    pub free_fastpath: u64,
    pub free_slowpath: u64,
    pub free_frozen: u64,
    pub cpu_partial_free: u64,
    pub cpu_partial_drain: u64,
    pub free_slab: u64,
    pub list_lock_acquisitions: u64,
    pub list_lock_contended: u64,
    pub list_lock_wait: Ps,
}

/// `struct kmem_cache`.
#[derive(Debug, Clone)]
pub struct KmemCache {
    pub name: String,
    pub object_size: u64,
    /// `s->size`: the object slot.
    pub size: u64,
    pub order: u8,
    pub objects: u32,
    pub min_partial: u64,
    pub cpu_partial: u64,
    cpus: Vec<CacheCpu>,
    nodes: Vec<CacheNode>,
    pub stats: CacheStats,
}

impl KmemCache {
    /// `kmem_cache_create()` + `kmem_cache_open()` (v4.9) on a machine of `nr_cpu_ids` CPUs and
    /// `nodes` nodes. `hwcache_align` is `SLAB_HWCACHE_ALIGN`; kmalloc caches are 8-byte aligned.
    pub fn new(name: &str, object_size: u64, hwcache_align: bool, nr_cpu_ids: u32, nodes: u32) -> KmemCache {
        let size =
            if hwcache_align { hwcache_aligned_size(object_size) } else { object_size.div_ceil(8) * 8 };
        let order = calculate_order(size, nr_cpu_ids);
        let objects = ((4096u64 << order) / size) as u32;
        // set_min_partial(s, ilog2(s->size) / 2), clamped to [MIN_PARTIAL, MAX_PARTIAL].
        let min_partial = ((63 - size.leading_zeros()) as u64 / 2).clamp(MIN_PARTIAL, MAX_PARTIAL);
        // set_cpu_partial() (v4.9, CONFIG_SLUB_CPU_PARTIAL).
        let cpu_partial = match size {
            s if s >= 4096 => 2,
            s if s >= 1024 => 6,
            s if s >= 256 => 13,
            _ => 30,
        };
        KmemCache {
            name: name.to_string(),
            object_size,
            size,
            order,
            objects,
            min_partial,
            cpu_partial,
            cpus: vec![CacheCpu::default(); nr_cpu_ids as usize],
            nodes: vec![CacheNode::default(); nodes as usize],
            stats: CacheStats::default(),
        }
    }
}

/// A cache id within a [`Slab`].
pub type CacheId = usize;

/// An object handed out by [`Slab`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Object {
    /// Object `idx` of slab `slab` of cache `cache`.
    Slab { cache: CacheId, slab: u32, idx: u16 },
    /// `kmalloc_large`: a compound page block straight from the page allocator.
    Large { pfn: u64, order: u8 },
}

/// What one allocation or free did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlabOutcome {
    pub done: Ps,
    pub fastpath: bool,
    /// A slab page allocated (`new_slab`) or freed (`discard_slab`), or a `kmalloc_large` block.
    pub page_order: Option<u8>,
    pub zone_lock_wait: Ps,
    pub list_lock_wait: Ps,
}

/// A page-allocator call SLUB made: the kernel mirrors it in the frame ownership map
/// (linux/frames.rs) so the oracle sees slab pages and `kmalloc_large` blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageEvent {
    pub pfn: u64,
    pub order: u8,
    /// Allocated (`new_slab`, `kmalloc_large`) or freed (`discard_slab`, `kfree` of a large block).
    pub alloc: bool,
    /// The slab's cache, or `None` for a `kmalloc_large` block.
    pub cache: Option<CacheId>,
}

/// A free SLUB refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlabError {
    NotAllocated(Object),
    OutOfMemory,
}

/// Every cache, and the slab pages.
#[derive(Debug, Clone)]
pub struct Slab {
    pub costs: SlabCosts,
    pub caches: Vec<KmemCache>,
    /// `kmalloc_caches[]`: cache ids of `KMALLOC_SIZES`.
    kmalloc: Vec<CacheId>,
    /// `skbuff_head_cache`, `skbuff_fclone_cache`.
    skbuff: [CacheId; 2],
    slabs: Vec<SlabPage>,
    free_ids: Vec<u32>,
    nr_cpu_ids: u32,
    nodes: u32,
    pub large_allocs: u64,
    pub large_frees: u64,
    /// Page-allocator calls since the owner last took them ([`Slab::take_page_events`]).
    page_events: Vec<PageEvent>,
    /// Base pages of the slabs allocated and freed (`1 << order` each).
    pages_allocated: u64,
    pages_freed: u64,
}

impl Slab {
    /// The kmalloc caches plus the skbuff caches, for `nr_cpu_ids` CPUs on `nodes` nodes.
    pub fn new(costs: SlabCosts, nr_cpu_ids: u32, nodes: u32) -> Slab {
        let mut s = Slab {
            costs,
            caches: Vec::new(),
            kmalloc: Vec::new(),
            skbuff: [0; 2],
            slabs: Vec::new(),
            free_ids: Vec::new(),
            nr_cpu_ids,
            nodes,
            large_allocs: 0,
            large_frees: 0,
            page_events: Vec::new(),
            pages_allocated: 0,
            pages_freed: 0,
        };
        for size in KMALLOC_SIZES {
            let id = s.create(&format!("kmalloc-{size}"), size, false);
            s.kmalloc.push(id);
        }
        s.skbuff = [
            s.create(SKBUFF_HEAD_CACHE.0, SKBUFF_HEAD_CACHE.1, true),
            s.create(SKBUFF_FCLONE_CACHE.0, SKBUFF_FCLONE_CACHE.1, true),
        ];
        s
    }

    /// The `skbuff_head_cache` and `skbuff_fclone_cache` ids (kept, not looked up by name on
    /// every send).
    pub fn skbuff_caches(&self) -> [CacheId; 2] {
        self.skbuff
    }

    /// `kmem_cache_create()`.
    pub fn create(&mut self, name: &str, object_size: u64, hwcache_align: bool) -> CacheId {
        self.caches.push(KmemCache::new(name, object_size, hwcache_align, self.nr_cpu_ids, self.nodes));
        self.caches.len() - 1
    }

    pub fn cache_by_name(&self, name: &str) -> Option<CacheId> {
        self.caches.iter().position(|c| c.name == name)
    }

    /// `kmalloc_slab()`: the kmalloc cache for `size` (`None` above `KMALLOC_MAX_CACHE_SIZE`).
    pub fn kmalloc_cache(&self, size: u64) -> Option<CacheId> {
        KMALLOC_SIZES.iter().position(|&s| size <= s).map(|i| self.kmalloc[i])
    }

    /// `kmalloc(size)` on `cpu` at `now`.
    pub fn kmalloc(
        &mut self,
        pa: &mut PageAlloc,
        cpu: u32,
        now: Ps,
        size: u64,
        env: Env,
    ) -> Result<(Object, SlabOutcome), SlabError> {
        match self.kmalloc_cache(size) {
            Some(c) => self.kmem_cache_alloc(pa, c, cpu, now, env),
            None => {
                // kmalloc_large() -> kmalloc_order(): a compound block of get_order(size).
                let order = get_order(size);
                let a = pa.alloc_pages(cpu, now, order, MigrateType::Unmovable, env);
                let pfn = a.pfn.ok_or(SlabError::OutOfMemory)?;
                self.large_allocs += 1;
                self.page_events.push(PageEvent { pfn, order, alloc: true, cache: None });
                let out = SlabOutcome {
                    done: a.done,
                    page_order: Some(order),
                    zone_lock_wait: a.lock_wait,
                    ..Default::default()
                };
                Ok((Object::Large { pfn, order }, out))
            }
        }
    }

    /// `kfree()` / `kmem_cache_free()` on `cpu` at `now`.
    pub fn free(
        &mut self,
        pa: &mut PageAlloc,
        cpu: u32,
        now: Ps,
        obj: Object,
        env: Env,
    ) -> Result<SlabOutcome, SlabError> {
        match obj {
            Object::Large { pfn, order } => {
                let f = pa.free_pages(cpu, now, pfn, order, env).map_err(|_| SlabError::NotAllocated(obj))?;
                self.large_frees += 1;
                self.page_events.push(PageEvent { pfn, order, alloc: false, cache: None });
                Ok(SlabOutcome {
                    done: f.done,
                    page_order: Some(order),
                    zone_lock_wait: f.lock_wait,
                    ..Default::default()
                })
            }
            Object::Slab { cache, slab, idx } => self.slab_free(pa, cache, slab, idx, cpu, now, env),
        }
    }

    /// `slab_alloc_node()`: the CPU's freelist, else `___slab_alloc`.
    pub fn kmem_cache_alloc(
        &mut self,
        pa: &mut PageAlloc,
        cache: CacheId,
        cpu: u32,
        now: Ps,
        env: Env,
    ) -> Result<(Object, SlabOutcome), SlabError> {
        let c = cpu as usize;
        if let Some(sid) = self.caches[cache].cpus[c].page {
            if let Some(idx) = self.slabs[sid as usize].cpu_free.pop() {
                self.slabs[sid as usize].allocated[idx as usize] = true;
                let k = &mut self.caches[cache];
                k.stats.alloc_fastpath += 1;
                let out =
                    SlabOutcome { done: now + self.costs.alloc_fast, fastpath: true, ..Default::default() };
                return Ok((Object::Slab { cache, slab: sid, idx }, out));
            }
        }
        self.slab_alloc_slow(pa, cache, cpu, now, env)
    }

    /// `___slab_alloc()` (v4.9).
    fn slab_alloc_slow(
        &mut self,
        pa: &mut PageAlloc,
        cache: CacheId,
        cpu: u32,
        now: Ps,
        env: Env,
    ) -> Result<(Object, SlabOutcome), SlabError> {
        let c = cpu as usize;
        let mut out = SlabOutcome::default();
        let mut t = now + self.costs.alloc_slow;
        self.caches[cache].stats.alloc_slowpath += 1;
        // get_freelist(): objects other CPUs freed to the active slab meanwhile.
        if let Some(sid) = self.caches[cache].cpus[c].page {
            let s = &mut self.slabs[sid as usize];
            t += s.line.rmw(cpu, t, env.topo, env.lines);
            if !s.free.is_empty() {
                // The CPU freelist is empty (else no slow path): swap keeps both allocations.
                debug_assert!(s.cpu_free.is_empty());
                std::mem::swap(&mut s.cpu_free, &mut s.free);
                self.caches[cache].stats.alloc_refill += 1;
                return Ok(self.take_active(cache, cpu, t, out));
            }
            // Full: unfrozen, on no list.
            s.place = Place::Full;
            self.caches[cache].cpus[c].page = None;
        }
        // The per-CPU partial list.
        if let Some(sid) = self.pop_cpu_partial(cache, cpu) {
            self.activate(cache, cpu, sid, env, &mut t);
            self.caches[cache].stats.alloc_from_cpu_partial += 1;
            // A CPU partial slab always holds the free that put it there.
            return Ok(self.take_active(cache, cpu, t, out));
        }
        // get_partial_node(): the node's partial list under list_lock, taking one slab as the
        // active one and more onto the CPU partial list until over half of cpu_partial.
        let node = pa.node_of_cpu(cpu);
        if !self.caches[cache].nodes[node as usize].partial.is_empty() {
            let mut touched = 0u64;
            let mut available = 0u64;
            let mut first = true;
            while let Some(sid) = self.caches[cache].nodes[node as usize].partial.pop_front(&mut self.slabs) {
                touched += 1;
                let s = &mut self.slabs[sid as usize];
                let free = s.free.len() as u64;
                if first {
                    s.place = Place::Active(cpu);
                    debug_assert!(s.cpu_free.is_empty(), "a slab off every CPU has no CPU freelist");
                    std::mem::swap(&mut s.cpu_free, &mut s.free);
                    self.caches[cache].cpus[c].page = Some(sid);
                    available = free;
                    first = false;
                } else {
                    s.place = Place::CpuPartial(cpu);
                    let cc = &mut self.caches[cache].cpus[c];
                    cc.partial.insert(0, sid);
                    cc.pobjects += free;
                    available += free;
                }
                if available > self.caches[cache].cpu_partial / 2 {
                    break;
                }
            }
            let hold = self.costs.list_lock_section + self.costs.struct_page * touched;
            let (grant, wait) = self.list_lock(cache, node, cpu, t, hold, env);
            out.list_lock_wait += wait;
            t = grant + hold;
            self.caches[cache].stats.alloc_from_node_partial += 1;
            return Ok(self.take_active(cache, cpu, t, out));
        }
        // new_slab(): a fresh slab from the page allocator.
        let k = &self.caches[cache];
        let (order, objects) = (k.order, k.objects);
        let a = pa.alloc_pages(cpu, t, order, MigrateType::Unmovable, env);
        let pfn = a.pfn.ok_or(SlabError::OutOfMemory)?;
        out.page_order = Some(order);
        out.zone_lock_wait = a.lock_wait;
        self.page_events.push(PageEvent { pfn, order, alloc: true, cache: Some(cache) });
        self.pages_allocated += 1 << order;
        t = a.done + self.costs.new_slab_object * objects as u64;
        let slab = SlabPage {
            cache,
            pfn,
            order,
            node: pa.zone_of(pfn).map_or(0, |z| pa.zones[z].node),
            free: Vec::new(),
            // The freelist runs in address order from the first object.
            cpu_free: (0..objects as u16).rev().collect(),
            allocated: vec![false; objects as usize],
            place: Place::Active(cpu),
            lru: Link::default(),
            line: RmwLine::default(),
        };
        let sid = match self.free_ids.pop() {
            Some(id) => {
                self.slabs[id as usize] = slab;
                id
            }
            None => {
                self.slabs.push(slab);
                self.slabs.len() as u32 - 1
            }
        };
        self.slabs[sid as usize].line.rmw(cpu, t, env.topo, env.lines);
        self.caches[cache].cpus[c].page = Some(sid);
        self.caches[cache].stats.alloc_slab += 1;
        Ok(self.take_active(cache, cpu, t, out))
    }

    fn take_active(
        &mut self,
        cache: CacheId,
        cpu: u32,
        t: Ps,
        mut out: SlabOutcome,
    ) -> (Object, SlabOutcome) {
        let sid = self.caches[cache].cpus[cpu as usize].page.expect("an active slab");
        let s = &mut self.slabs[sid as usize];
        let idx = s.cpu_free.pop().expect("the active slab has a free object");
        s.allocated[idx as usize] = true;
        out.done = t;
        (Object::Slab { cache, slab: sid, idx }, out)
    }

    fn pop_cpu_partial(&mut self, cache: CacheId, cpu: u32) -> Option<u32> {
        let cc = &mut self.caches[cache].cpus[cpu as usize];
        if cc.partial.is_empty() {
            return None;
        }
        let sid = cc.partial.remove(0);
        let free = self.slabs[sid as usize].free.len() as u64;
        cc.pobjects = cc.pobjects.saturating_sub(free);
        Some(sid)
    }

    /// Make a frozen slab this CPU's active one, taking its page freelist (`get_freelist`).
    fn activate(&mut self, cache: CacheId, cpu: u32, sid: u32, env: Env, t: &mut Ps) {
        let s = &mut self.slabs[sid as usize];
        *t += s.line.rmw(cpu, *t, env.topo, env.lines);
        s.place = Place::Active(cpu);
        debug_assert!(s.cpu_free.is_empty(), "a slab off every CPU has no CPU freelist");
        std::mem::swap(&mut s.cpu_free, &mut s.free);
        self.caches[cache].cpus[cpu as usize].page = Some(sid);
    }

    /// Takes a node's `list_lock` for `hold`; returns (grant, wait).
    fn list_lock(&mut self, cache: CacheId, node: u32, cpu: u32, at: Ps, hold: Ps, env: Env) -> (Ps, Ps) {
        let k = &mut self.caches[cache];
        let l = &mut k.nodes[node as usize].list_lock;
        let before = l.stats.contended;
        let grant = l.acquire(cpu, at, hold, env.topo, env.lines);
        k.stats.list_lock_acquisitions += 1;
        k.stats.list_lock_contended += l.stats.contended - before;
        k.stats.list_lock_wait += grant - at;
        (grant, grant - at)
    }

    /// `slab_free()` (v4.9): the CPU's own active slab takes the object back on its freelist;
    /// anything else is `__slab_free`.
    #[allow(clippy::too_many_arguments)]
    fn slab_free(
        &mut self,
        pa: &mut PageAlloc,
        cache: CacheId,
        sid: u32,
        idx: u16,
        cpu: u32,
        now: Ps,
        env: Env,
    ) -> Result<SlabOutcome, SlabError> {
        let obj = Object::Slab { cache, slab: sid, idx };
        let s = self.slabs.get_mut(sid as usize).ok_or(SlabError::NotAllocated(obj))?;
        if !s.allocated.get(idx as usize).copied().unwrap_or(false) {
            return Err(SlabError::NotAllocated(obj));
        }
        s.allocated[idx as usize] = false;
        if s.place == Place::Active(cpu) {
            s.cpu_free.push(idx);
            self.caches[cache].stats.free_fastpath += 1;
            return Ok(SlabOutcome {
                done: now + self.costs.free_fast,
                fastpath: true,
                ..Default::default()
            });
        }
        // __slab_free(): a cmpxchg_double on the slab page.
        let mut out = SlabOutcome::default();
        let mut t = now + self.costs.free_slow;
        t += s.line.rmw(cpu, t, env.topo, env.lines);
        self.caches[cache].stats.free_slowpath += 1;
        let prior_empty = s.free.is_empty();
        s.free.push(idx);
        if s.frozen() {
            self.caches[cache].stats.free_frozen += 1;
            out.done = t;
            return Ok(out);
        }
        if prior_empty {
            // A full slab got its first free object: it goes to this CPU's partial list.
            s.place = Place::CpuPartial(cpu);
            self.caches[cache].stats.cpu_partial_free += 1;
            t = self.put_cpu_partial(pa, cache, cpu, sid, t, env, &mut out)?;
            out.done = t;
            return Ok(out);
        }
        if s.inuse() == 0 {
            // Empty and on the node partial list: discard it if the node keeps enough.
            let node = s.node;
            let keep = (self.caches[cache].nodes[node as usize].partial.len() as u64)
                < self.caches[cache].min_partial;
            let hold = self.costs.list_lock_section + self.costs.struct_page;
            let (grant, wait) = self.list_lock(cache, node, cpu, t, hold, env);
            out.list_lock_wait += wait;
            t = grant + hold;
            if !keep {
                self.caches[cache].nodes[node as usize].partial.remove(&mut self.slabs, sid);
                t = self.discard_slab(pa, cache, sid, cpu, t, env, &mut out)?;
            }
        }
        out.done = t;
        Ok(out)
    }

    /// `put_cpu_partial(s, page, 1)`: once the list holds more than `cpu_partial` free objects,
    /// `unfreeze_partials` moves it all to the node lists first.
    #[allow(clippy::too_many_arguments)]
    fn put_cpu_partial(
        &mut self,
        pa: &mut PageAlloc,
        cache: CacheId,
        cpu: u32,
        sid: u32,
        mut t: Ps,
        env: Env,
        out: &mut SlabOutcome,
    ) -> Result<Ps, SlabError> {
        if self.caches[cache].cpus[cpu as usize].pobjects > self.caches[cache].cpu_partial {
            t = self.unfreeze_partials(pa, cache, cpu, t, env, out)?;
        }
        let free = self.slabs[sid as usize].free.len() as u64;
        let cc = &mut self.caches[cache].cpus[cpu as usize];
        cc.partial.insert(0, sid);
        cc.pobjects += free;
        Ok(t)
    }

    /// `unfreeze_partials()` (v4.9): every slab of the CPU partial list goes to its node's
    /// partial list under `list_lock`, or, when empty and the node already keeps
    /// `min_partial`, back to the page allocator after the lock is dropped.
    fn unfreeze_partials(
        &mut self,
        pa: &mut PageAlloc,
        cache: CacheId,
        cpu: u32,
        mut t: Ps,
        env: Env,
        out: &mut SlabOutcome,
    ) -> Result<Ps, SlabError> {
        let list = std::mem::take(&mut self.caches[cache].cpus[cpu as usize].partial);
        self.caches[cache].cpus[cpu as usize].pobjects = 0;
        self.caches[cache].stats.cpu_partial_drain += 1;
        let mut discard = Vec::new();
        for node in 0..self.nodes {
            let mine: Vec<u32> =
                list.iter().copied().filter(|&s| self.slabs[s as usize].node == node).collect();
            if mine.is_empty() {
                continue;
            }
            for &sid in &mine {
                let min_partial = self.caches[cache].min_partial;
                let n = &mut self.caches[cache].nodes[node as usize];
                let s = &mut self.slabs[sid as usize];
                if s.inuse() == 0 && n.partial.len() as u64 >= min_partial {
                    discard.push(sid);
                } else {
                    s.place = Place::NodePartial;
                    n.partial.push_back(&mut self.slabs, sid);
                }
            }
            let hold = self.costs.list_lock_section + self.costs.struct_page * mine.len() as u64;
            let (grant, wait) = self.list_lock(cache, node, cpu, t, hold, env);
            out.list_lock_wait += wait;
            t = grant + hold;
        }
        for sid in discard {
            t = self.discard_slab(pa, cache, sid, cpu, t, env, out)?;
        }
        Ok(t)
    }

    /// `discard_slab()`: the slab's pages go back to the page allocator.
    #[allow(clippy::too_many_arguments)]
    fn discard_slab(
        &mut self,
        pa: &mut PageAlloc,
        cache: CacheId,
        sid: u32,
        cpu: u32,
        t: Ps,
        env: Env,
        out: &mut SlabOutcome,
    ) -> Result<Ps, SlabError> {
        let s = &self.slabs[sid as usize];
        let (pfn, order) = (s.pfn, s.order);
        let f = pa.free_pages(cpu, t, pfn, order, env).map_err(|_| SlabError::OutOfMemory)?;
        self.page_events.push(PageEvent { pfn, order, alloc: false, cache: Some(cache) });
        self.pages_freed += 1 << order;
        self.free_ids.push(sid);
        self.slabs[sid as usize].allocated.clear();
        self.slabs[sid as usize].free.clear();
        self.slabs[sid as usize].place = Place::Full;
        self.caches[cache].stats.free_slab += 1;
        out.page_order = Some(order);
        out.zone_lock_wait += f.lock_wait;
        Ok(f.done)
    }

    /// Whether page-allocator calls were made since the last [`Slab::take_page_events`].
    pub fn has_page_events(&self) -> bool {
        !self.page_events.is_empty()
    }

    /// The page-allocator calls made since the last call, oldest first.
    pub fn take_page_events(&mut self, into: &mut Vec<PageEvent>) {
        into.clear();
        into.append(&mut self.page_events);
    }

    /// The first page frame of the slab an object lives in (its block's for `kmalloc_large`).
    pub fn page_of(&self, obj: Object) -> u64 {
        match obj {
            Object::Slab { slab, .. } => self.slabs[slab as usize].pfn,
            Object::Large { pfn, .. } => pfn,
        }
    }
}

/// Every x86 machine whose workloads allocate kernel objects boots SLUB (a `[slab]` section).
const NO_SLAB: &str = "this machine's kernel booted without SLUB (its profile has no [slab] section)";

mod inspect;
mod kmalloc;
mod list;
mod order;
pub use kmalloc::SlabCosts;
pub use order::{calculate_order, hwcache_aligned_size};

#[cfg(test)]
mod tests;
