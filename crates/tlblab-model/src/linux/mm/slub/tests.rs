use std::collections::HashSet;

use proptest::prelude::*;

use super::*;
use crate::hw::topology::Topology;
use crate::linux::mm::page_alloc::fixtures::{LINES, PAGE_ALLOC, SLAB};
use crate::linux::mm::page_alloc::PageAllocConfig;

const TOPO: Topology = Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 1 };

fn env() -> Env<'static> {
    Env { topo: &TOPO, lines: &LINES }
}

fn machine(cfg: PageAllocConfig) -> (PageAlloc, Slab) {
    (PageAlloc::new(cfg, PAGE_ALLOC, &TOPO, 65_536), Slab::new(SLAB, TOPO.cpus(), 1))
}

#[test]
fn slab_orders_follow_calculate_order_and_the_cpu_count() {
    // docs/references/seeds-001-003-004.md#slub-orders's table: (object size, order at nr_cpu_ids 4, 8, 64).
    for (size, want) in
        [(256, [0, 1, 1]), (512, [1, 2, 2]), (1024, [2, 3, 3]), (2048, [3, 3, 3]), (8192, [3, 3, 3])]
    {
        let got = [4, 8, 64].map(|n| calculate_order(size, n));
        assert_eq!(got, want, "size {size}");
    }
    assert_eq!(hwcache_aligned_size(SKBUFF_HEAD_CACHE.1), 256);
    assert_eq!(hwcache_aligned_size(40), 64);
    assert_eq!(hwcache_aligned_size(24), 32);
    let s = Slab::new(SLAB, 4, 1);
    let sk = &s.caches[s.cache_by_name("skbuff_head_cache").unwrap()];
    assert_eq!((sk.size, sk.order, sk.objects, sk.cpu_partial, sk.min_partial), (256, 0, 16, 13, 5));
    let k512 = &s.caches[s.kmalloc_cache(448).unwrap()];
    assert_eq!((k512.name.as_str(), k512.order, k512.objects), ("kmalloc-512", 1, 16));
}

#[test]
fn kmalloc_size_classes_and_large_requests() {
    let s = Slab::new(SLAB, 4, 1);
    let name = |n| s.kmalloc_cache(n).map(|c| s.caches[c].name.clone());
    assert_eq!(name(1).as_deref(), Some("kmalloc-8"));
    assert_eq!(name(65).as_deref(), Some("kmalloc-96"));
    assert_eq!(name(97).as_deref(), Some("kmalloc-128"));
    assert_eq!(name(129).as_deref(), Some("kmalloc-192"));
    assert_eq!(name(8192).as_deref(), Some("kmalloc-8192"));
    assert_eq!(name(8193), None);
    let (mut pa, mut s) = machine(PageAllocConfig::v4_9());
    // A 16 KiB UDP payload's head (~16.8 KB): an order-3 block straight from the allocator.
    let (o, out) = s.kmalloc(&mut pa, 0, Ps(0), 16_800, env()).unwrap();
    assert_eq!(out.page_order, Some(3));
    assert!(matches!(o, Object::Large { order: 3, .. }));
    assert_eq!(pa.stats.buddy_allocs[3], 1, "4.9: order 3 bypasses the per-CPU lists");
    let f = s.free(&mut pa, 1, out.done, o, env()).unwrap();
    assert_eq!(f.page_order, Some(3));
    assert_eq!(pa.stats.frees_to_buddy[3], 1);
    assert!(s.free(&mut pa, 1, f.done, o, env()).is_err(), "double free");
}

#[test]
fn local_alloc_and_free_stay_on_the_fast_path() {
    let (mut pa, mut s) = machine(PageAllocConfig::v4_9());
    let c = s.kmalloc_cache(448).unwrap();
    let mut objs = Vec::new();
    let mut t = Ps(0);
    for i in 0..16 {
        let (o, out) = s.kmem_cache_alloc(&mut pa, c, 0, t, env()).unwrap();
        assert_eq!(out.fastpath, i > 0);
        assert_eq!(out.page_order, (i == 0).then_some(1));
        t = out.done;
        objs.push(o);
    }
    assert_eq!(objs.iter().collect::<HashSet<_>>().len(), 16);
    for o in objs {
        let out = s.free(&mut pa, 0, t, o, env()).unwrap();
        assert!(out.fastpath);
        t = out.done;
    }
    assert_eq!(s.caches[c].stats.alloc_slab, 1);
    assert_eq!(s.caches[c].stats.free_slab, 0, "the active slab stays");
    s.check().unwrap();
}

#[test]
fn cross_cpu_frees_cycle_slab_pages_through_the_page_allocator() {
    // Sender CPU 0 allocates kmalloc-512 heads, receiver CPU 1 frees them `depth` messages
    // later (a socket queue). In lock-step (depth 1) the frees land on the sender's active slab
    // and it refills from them: one slab forever. Deeper queues exhaust slabs before their
    // objects come back: full slabs, then CPU partial lists, node lists, new and freed slabs.
    let run = |cfg, depth: usize| {
        let (mut pa, mut s) = machine(cfg);
        let c = s.kmalloc_cache(448).unwrap();
        let mut t = Ps(0);
        let mut queue = std::collections::VecDeque::new();
        for i in 0..2_000 + depth {
            if i < 2_000 {
                let (o, a) = s.kmem_cache_alloc(&mut pa, c, 0, t, env()).unwrap();
                queue.push_back(o);
                t = a.done;
            }
            if queue.len() >= depth || i >= 2_000 {
                if let Some(o) = queue.pop_front() {
                    t = s.free(&mut pa, 1, t, o, env()).unwrap().done;
                }
            }
        }
        s.check().unwrap();
        assert_eq!(s.objects_in_use(c), 0);
        // Every page is free, cached on a per-CPU list, or in a slab.
        assert_eq!(pa.free_and_cached_pages() + s.slab_pages(), 65_536);
        (s.caches[c].stats.clone(), pa.stats.clone())
    };
    let (lockstep, _) = run(PageAllocConfig::v4_9(), 1);
    assert_eq!(
        (lockstep.alloc_slab, lockstep.free_slab, lockstep.free_frozen),
        (1, 0, 2_000),
        "{lockstep:?}"
    );
    let (st, pa) = run(PageAllocConfig::v4_9(), 100);
    assert_eq!(st.free_fastpath, 0, "every free is remote");
    assert!(st.alloc_slab > 50, "{st:?}");
    assert!(st.free_slab > 50, "{st:?}");
    assert!(st.cpu_partial_drain > 0 && st.list_lock_acquisitions > 0);
    // Each new slab is an order-1 page-allocator call under zone->lock in 4.9.
    assert_eq!(pa.buddy_allocs[1], st.alloc_slab);
    let (st2, pa2) = run(PageAllocConfig::v4_9_hopcpu(), 100);
    assert_eq!(st2.alloc_slab, st.alloc_slab, "SLUB does the same; only the allocator differs");
    assert!(
        pa2.zone_lock_acquisitions * 5 < pa.zone_lock_acquisitions,
        "{} vs {}",
        pa2.zone_lock_acquisitions,
        pa.zone_lock_acquisitions
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn objects_are_never_handed_out_twice(ops in proptest::collection::vec((0u32..4, any::<bool>(), 1u64..20_000, any::<u16>()), 1..400)) {
        let (mut pa, mut s) = machine(PageAllocConfig::v4_9_hopcpu());
        let mut live: Vec<Object> = Vec::new();
        let mut seen: HashSet<Object> = HashSet::new();
        let mut t = Ps(0);
        for (cpu, alloc, size, pick) in ops {
            t += Ps(1_000);
            if alloc || live.is_empty() {
                let (o, out) = s.kmalloc(&mut pa, cpu, t, size, env()).unwrap();
                prop_assert!(seen.insert(o), "{:?} handed out while live", o);
                live.push(o);
                prop_assert!(out.done >= t);
            } else {
                let o = live.swap_remove(pick as usize % live.len());
                seen.remove(&o);
                s.free(&mut pa, cpu, t, o, env()).unwrap();
            }
            s.check().map_err(TestCaseError::fail)?;
        }
        let large: u64 = live.iter().map(|o| match o { Object::Large { order, .. } => 1u64 << order, _ => 0 }).sum();
        prop_assert_eq!(pa.free_and_cached_pages() + s.slab_pages() + large, 65_536);
    }
}

/// The kernel's entry points (kmalloc / kfree on a booted kernel): charges and frame ownership.
mod kernel_entry {
    use super::super::Object;
    use crate::attribution::{Bucket, CpuTime, NR_BUCKETS};
    use crate::linux::config::KernelConfig;
    use crate::linux::ctx::{Ctx, Engine};
    use crate::linux::frames::Owner;
    use crate::linux::Kernel;
    use crate::time::Ps;
    use std::collections::VecDeque;

    /// A machine with nothing else running: no other CPU's event, no interrupt.
    struct Quiet;
    impl Engine for Quiet {
        fn send_ipi(&mut self, _: u32, _: Ps) {}
        fn kick(&mut self, _: u32, _: Ps) {}
        fn stepping(&self, _: u32) -> bool {
            false
        }
        fn first_other(&self, _: u32) -> Option<(Ps, u32)> {
            None
        }
        fn next_arrival(&self, _: u32) -> Option<Ps> {
            None
        }
        fn irq_pending(&self, _: u32) -> bool {
            false
        }
        fn irqs_on(&mut self, _: u32) {}
    }

    fn kernel(preset: &str) -> Kernel {
        Kernel::boot(&crate::profile::shipped("haswell-ep-2698v3-2s"), KernelConfig::preset(preset).unwrap())
    }

    /// Sender CPU 0 kmallocs `size` bytes, receiver CPU `rx` frees each object `depth` later.
    /// Returns the kernel and each CPU's buckets.
    fn stream(preset: &str, size: u64, depth: usize, rx: u32) -> (Kernel, [[Ps; NR_BUCKETS]; 2]) {
        let mut k = kernel(preset);
        let mut times = [CpuTime::default(); 2];
        let mut steps = VecDeque::new();
        let mut t = Ps::ZERO;
        let mut q = VecDeque::new();
        let mut eng = Quiet;
        for i in 0..3_000 + depth {
            if i < 3_000 {
                let mut ctx = Ctx::new(0, t, &mut times[0], &mut steps, &mut eng);
                let (o, d) = k.kmalloc(&mut ctx, t, size, Bucket::Syscall);
                t += d;
                q.push_back(o);
            }
            if q.len() >= depth || i >= 3_000 {
                if let Some(o) = q.pop_front() {
                    let mut ctx = Ctx::new(rx, t, &mut times[1], &mut steps, &mut eng);
                    t += k.kfree(&mut ctx, t, o, Bucket::Syscall);
                }
            }
        }
        (k, times.map(|t| t.by_bucket))
    }

    #[test]
    fn slab_pages_are_owned_while_in_use_and_charges_add_up() {
        for (size, preset) in [(448, "4.9"), (448, "4.9-hopcpu"), (16_800, "4.9")] {
            let (k, times) = stream(preset, size, 200, 32);
            let c = k.slab_counters().unwrap();
            assert_eq!(k.oracle.violations, 0, "{:?}", k.oracle.examples);
            if size > 8192 {
                assert_eq!((c.kmalloc_large_allocs, c.kmalloc_large_frees), (3_000, 3_000), "{c:?}");
            } else {
                // 64 CPUs: kmalloc-512 slabs are order 2, 32 objects each; remote frees on the
                // other socket keep new slabs coming and empty ones going back.
                assert!(c.slabs_allocated > 50 && c.slabs_freed > 40, "{c:?}");
                assert_eq!(c.slab_pages_allocated, 4 * c.slabs_allocated);
                assert_eq!(c.slab_free_fastpath, 0, "{c:?}");
                let pa = k.page_alloc_counters().unwrap();
                assert_eq!(pa.slab_pages, c.slab_pages_allocated);
            }
            // Whatever is still allocated is a slab page (the slabs SLUB keeps) or a zero page.
            let live: u64 = (0..crate::linux::include::linux::gfp::PAGES_PER_NODE * 2)
                .filter(|&p| !matches!(k.mm.frames.owner(p), Owner::Free))
                .count() as u64;
            assert_eq!(live, 1 + k.mm.slab.as_ref().unwrap().slab_pages(), "{size} {preset}");
            // The time each call returned is charged: lock spin apart, the rest to the caller.
            let total: Ps = times.iter().flat_map(|t| t.iter().copied()).fold(Ps::ZERO, |a, b| a + b);
            assert!(total > Ps::ZERO);
            assert_eq!(
                times
                    .iter()
                    .map(|t| t[Bucket::Syscall as usize] + t[Bucket::LockWait as usize])
                    .fold(Ps::ZERO, |a, b| a + b),
                total
            );
        }
    }

    #[test]
    fn a_double_kfree_is_a_violation() {
        let mut k = kernel("4.9");
        let mut times = CpuTime::default();
        let mut steps = VecDeque::new();
        let mut eng = Quiet;
        let mut ctx = Ctx::new(0, Ps::ZERO, &mut times, &mut steps, &mut eng);
        let (o, _) = k.kmalloc(&mut ctx, Ps::ZERO, 100, Bucket::Syscall);
        assert!(matches!(
            k.mm.frames.owner(k.mm.slab.as_ref().unwrap().page_of(o)),
            Owner::Slab { inuse: 1, .. }
        ));
        k.kfree(&mut ctx, Ps::ZERO, o, Bucket::Syscall);
        assert_eq!(k.oracle.violations, 0);
        k.kfree(&mut ctx, Ps::ZERO, o, Bucket::Syscall);
        assert!(k.oracle.violations >= 1, "{:?}", k.oracle.examples);
        let (big, _) = k.kmalloc(&mut ctx, Ps::ZERO, 10_000, Bucket::Syscall);
        assert!(matches!(big, Object::Large { order: 2, .. }));
        let Object::Large { pfn, .. } = big else { unreachable!() };
        assert_eq!(k.mm.frames.owner(pfn + 3), Owner::Tail { head: pfn });
    }
}
