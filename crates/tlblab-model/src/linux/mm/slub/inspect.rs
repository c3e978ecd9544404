//! What SLUB says about itself: its counters, the consistency checks the tests and the
//! checker run, and the `list_lock` clocks an untimed section puts back (linux/mod.rs
//! `Kernel::untimed`).

use super::*;

impl Slab {
    /// Every `list_lock`'s clocks, cache by cache and node by node (for untimed sections). A
    /// slab page's freelist line keeps its last transfer: untimed RMWs at one instant overlap
    /// (`queued_start`), so it lands at most one transfer later.
    pub fn lock_timings(&self) -> Vec<LockTiming> {
        self.caches.iter().flat_map(|c| c.nodes.iter().map(|n| n.list_lock.timing())).collect()
    }

    /// Puts back the clocks [`Slab::lock_timings`] took.
    pub fn rewind_locks(&mut self, timing: Vec<LockTiming>) {
        let locks = self.caches.iter_mut().flat_map(|c| c.nodes.iter_mut().map(|n| &mut n.list_lock));
        for (l, t) in locks.zip(timing) {
            l.rewind(t);
        }
    }

    /// SLUB's counters summed over the caches (`CONFIG_SLUB_STATS` names where one exists).
    pub fn counters(&self) -> Counters {
        let mut c = Counters {
            kmalloc_large_allocs: self.large_allocs,
            kmalloc_large_frees: self.large_frees,
            ..Counters::default()
        };
        for k in &self.caches {
            let s = &k.stats;
            c.slab_alloc_fastpath += s.alloc_fastpath;
            c.slab_alloc_slowpath += s.alloc_slowpath;
            c.slab_free_fastpath += s.free_fastpath;
            c.slab_free_slowpath += s.free_slowpath;
            c.slab_alloc_from_partial += s.alloc_from_cpu_partial + s.alloc_from_node_partial;
            c.slab_cpu_partial_drains += s.cpu_partial_drain;
            c.slabs_allocated += s.alloc_slab;
            c.slabs_freed += s.free_slab;
            c.slab_list_lock_acquisitions += s.list_lock_acquisitions;
            c.slab_list_lock_contended += s.list_lock_contended;
            c.slab_list_lock_wait_ps += s.list_lock_wait.0;
        }
        c.slab_pages_allocated = self.pages_allocated;
        c.slab_pages_freed = self.pages_freed;
        c
    }

    /// Objects handed out and not freed, per cache (for checks).
    pub fn objects_in_use(&self, cache: CacheId) -> u64 {
        self.live_slabs()
            .filter(|s| s.cache == cache)
            .map(|s| s.allocated.iter().filter(|&&a| a).count() as u64)
            .sum()
    }

    fn live_slabs(&self) -> impl Iterator<Item = &SlabPage> {
        self.slabs.iter().enumerate().filter(|(i, _)| !self.free_ids.contains(&(*i as u32))).map(|(_, s)| s)
    }

    /// Base pages held in slabs (for checks against the page allocator).
    pub fn slab_pages(&self) -> u64 {
        self.live_slabs().map(|s| 1u64 << s.order).sum()
    }

    /// Checks every slab: each object is exactly one of allocated, on the page freelist, or on
    /// the CPU freelist; lists and places agree. Returns the first inconsistency.
    pub fn check(&self) -> Result<(), String> {
        for (i, s) in self.slabs.iter().enumerate() {
            if self.free_ids.contains(&(i as u32)) {
                continue;
            }
            let mut seen = s.allocated.clone();
            for &o in s.free.iter().chain(&s.cpu_free) {
                if std::mem::replace(&mut seen[o as usize], true) {
                    return Err(format!("slab {i}: object {o} is free twice or free and allocated"));
                }
            }
            if !seen.iter().all(|&x| x) {
                return Err(format!("slab {i}: an object is lost"));
            }
            if !matches!(s.place, Place::Active(_)) && !s.cpu_free.is_empty() {
                return Err(format!("slab {i}: a CPU freelist on a slab no CPU owns"));
            }
            let k = &self.caches[s.cache];
            let ok = match s.place {
                Place::Active(c) => k.cpus[c as usize].page == Some(i as u32),
                Place::CpuPartial(c) => k.cpus[c as usize].partial.contains(&(i as u32)),
                Place::NodePartial => {
                    k.nodes[s.node as usize].partial.iter(&self.slabs).any(|x| x == i as u32)
                        && !s.free.is_empty()
                }
                Place::Full => s.free.is_empty(),
            };
            if !ok {
                return Err(format!("slab {i}: place {:?} disagrees with the lists", s.place));
            }
        }
        Ok(())
    }
}
