//! The entry points the kernel's paths call (include/linux/slab.h: `kmalloc`,
//! `kmem_cache_alloc`, `kfree`), charged as linux/include/linux/gfp.rs charges the page allocator, and
//! SLUB's unit costs from the profile.

use super::*;

/// SLUB's unit costs, from the profile's `[slab]` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabCosts {
    pub alloc_fast: Ps,
    pub free_fast: Ps,
    pub alloc_slow: Ps,
    pub free_slow: Ps,
    pub new_slab_object: Ps,
    /// One `list_lock` section's fixed part (reused from `[page_alloc]`: the same irqsave +
    /// spinlock pair) and one slab page touched inside it.
    pub list_lock_section: Ps,
    pub struct_page: Ps,
}

impl SlabCosts {
    pub fn from_profile(p: &MachineProfile) -> Result<SlabCosts, ProfileError> {
        let s = p.slab()?;
        let pa = p.page_alloc()?;
        let mhz = p.clock_mhz();
        let cyc = |v: &crate::profile::Sourced| Ps::from_cycles(v.value, mhz);
        Ok(SlabCosts {
            alloc_fast: cyc(&s.alloc_fastpath_cycles),
            free_fast: cyc(&s.free_fastpath_cycles),
            alloc_slow: cyc(&s.alloc_slowpath_cycles),
            free_slow: cyc(&s.free_slowpath_cycles),
            new_slab_object: cyc(&s.new_slab_object_cycles),
            list_lock_section: cyc(&pa.zone_lock_section_cycles),
            struct_page: Ps::from_ns(pa.struct_page_miss_ns.value),
        })
    }
}

/// The kernel's entry points to SLUB (`kmalloc`, `kmem_cache_alloc`, `kfree`): charged as
/// linux/include/linux/gfp.rs charges the page allocator (waiting for `zone->lock` or a node's `list_lock` is
/// lock spin, the rest the caller's path), and every page SLUB takes or returns mirrored in the
/// frame ownership map, where the oracle checks it: a slab page or `kmalloc_large` block is never
/// handed out twice, and never freed while the kernel still holds an object in it.
impl Kernel {
    /// `kmalloc(size, GFP_KERNEL)` on this CPU at `at`. Returns the object and the time taken.
    pub fn kmalloc(&mut self, ctx: &mut Ctx, at: Ps, size: u64, bucket: Bucket) -> (Object, Ps) {
        let env = Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let slab = self.mm.slab.as_mut().expect(NO_SLAB);
        let r = slab.kmalloc(self.mm.page_alloc.as_mut().expect(NO_SLAB), ctx.cpu, at, size, env);
        self.slab_allocated(ctx, at, r, bucket)
    }

    /// `kmem_cache_alloc(cache, GFP_KERNEL)` on this CPU at `at`.
    pub fn kmem_cache_alloc(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        cache: CacheId,
        bucket: Bucket,
    ) -> (Object, Ps) {
        let env = Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let slab = self.mm.slab.as_mut().expect(NO_SLAB);
        let r = slab.kmem_cache_alloc(self.mm.page_alloc.as_mut().expect(NO_SLAB), cache, ctx.cpu, at, env);
        self.slab_allocated(ctx, at, r, bucket)
    }

    /// `kfree(obj)` / `kmem_cache_free()` on this CPU at `at`. Returns the time taken.
    pub fn kfree(&mut self, ctx: &mut Ctx, at: Ps, obj: Object, bucket: Bucket) -> Ps {
        let slab = self.mm.slab.as_mut().expect(NO_SLAB);
        // The kernel gives the object back before SLUB may discard its slab.
        let head = slab.page_of(obj);
        match (obj, self.mm.frames.owner(head)) {
            (Object::Slab { cache, .. }, Owner::Slab { cache: c, inuse })
                if c as usize == cache && inuse > 0 =>
            {
                self.mm.frames.set_owner(head, Owner::Slab { cache: c, inuse: inuse - 1 })
            }
            (Object::Large { .. }, Owner::KernelBlock) => {}
            (_, other) => self.oracle.flag_object(format!("kfree of {obj:?}: pfn {head} is {other:?}")),
        }
        let env = Env { topo: &self.topo, lines: &self.costs.hw.lines };
        let slab = self.mm.slab.as_mut().expect(NO_SLAB);
        match slab.free(self.mm.page_alloc.as_mut().expect(NO_SLAB), ctx.cpu, at, obj, env) {
            Ok(out) => {
                self.sync_slab_pages();
                let d = out.done - at;
                let lock = out.zone_lock_wait + out.list_lock_wait;
                ctx.lock_wait("zone->lock, list_lock", lock);
                ctx.charge(bucket, d - lock);
                d
            }
            Err(e) => {
                self.oracle.flag_object(format!("kfree refused by SLUB: {e:?}"));
                Ps::ZERO
            }
        }
    }

    fn slab_allocated(
        &mut self,
        ctx: &mut Ctx,
        at: Ps,
        r: Result<(Object, SlabOutcome), SlabError>,
        bucket: Bucket,
    ) -> (Object, Ps) {
        let Ok((obj, out)) = r else {
            // Reclaim (linux/mm/vmscan.rs) frees file pages only, never slab (no shrinkers): a
            // workload's objects must fit in the model's nodes.
            panic!("out of memory in SLUB (slab is not reclaimable in the model)");
        };
        self.sync_slab_pages();
        if let Object::Slab { cache, .. } = obj {
            let head = self.mm.slab.as_ref().expect(NO_SLAB).page_of(obj);
            match self.mm.frames.owner(head) {
                Owner::Slab { cache: c, inuse } if c as usize == cache => {
                    self.mm.frames.set_owner(head, Owner::Slab { cache: c, inuse: inuse + 1 })
                }
                other => {
                    self.oracle.flag_object(format!("{obj:?} handed out from pfn {head} owned by {other:?}"))
                }
            }
        }
        let d = out.done - at;
        let lock = out.zone_lock_wait + out.list_lock_wait;
        ctx.lock_wait("zone->lock, list_lock", lock);
        ctx.charge(bucket, d - lock);
        (obj, d)
    }

    /// Mirrors the page-allocator calls SLUB just made in the frame ownership map.
    pub(in crate::linux) fn sync_slab_pages(&mut self) {
        if !self.mm.slab.as_ref().expect(NO_SLAB).has_page_events() {
            return; // the common case: the object came from or went to a slab SLUB holds
        }
        let mut ev = std::mem::take(&mut self.mm.slab_events);
        self.mm.slab.as_mut().expect(NO_SLAB).take_page_events(&mut ev);
        for e in &ev {
            let head_owner = match e.cache {
                Some(c) => Owner::Slab { cache: c as u16, inuse: 0 },
                None => Owner::KernelBlock,
            };
            if e.alloc {
                self.assign_block(e.pfn, e.order, head_owner);
            } else {
                // An empty slab (no object the kernel holds), or the large block itself.
                if self.mm.frames.owner(e.pfn) != head_owner {
                    let o = self.mm.frames.owner(e.pfn);
                    self.oracle.flag_object(format!("pfn {} freed by SLUB while {o:?}", e.pfn));
                }
                self.release_block(e.pfn, e.order);
            }
        }
        self.mm.slab_events = ev;
    }
}
