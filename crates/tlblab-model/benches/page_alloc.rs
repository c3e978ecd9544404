//! Host cost of the allocator models (they sit on every fault, munmap free and network send):
//! per operation, on the seed-004 2-socket stand-in profile (64 CPUs, 1 GiB per node).
//!
//! `cargo bench -p tlblab-model --bench page_alloc`. Each iteration is 1000 operations.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use tlblab_model::hw::coherence::LineCosts;
use tlblab_model::hw::topology::Topology;
use tlblab_model::linux::include::linux::mmzone::MigrateType;
use tlblab_model::linux::mm::page_alloc::{Env, PageAlloc, PageAllocConfig, PageAllocCosts};
use tlblab_model::linux::mm::slub::{Slab, SlabCosts};
use tlblab_model::profile::MachineProfile;
use tlblab_model::time::Ps;

fn bench(c: &mut Criterion) {
    let p: MachineProfile = toml::from_str(tlblab_model::builtin::profile("haswell-ep-2698v3-2s")).unwrap();
    let topo = Topology::from_profile(&p.topology);
    let lines = LineCosts::from_profile(&p);
    let env = Env { topo: &topo, lines: &lines };
    let costs = PageAllocCosts::from_profile(&p).unwrap();
    let scosts = SlabCosts::from_profile(&p).unwrap();
    let mut g = c.benchmark_group("page_alloc");
    for era in ["4.9", "4.9-hopcpu", "5.14"] {
        let cfg = PageAllocConfig::preset(era).unwrap();
        let fresh = PageAlloc::new(cfg, costs, &topo, 262_144);
        g.bench_function(format!("order0_alloc_free_same_cpu/{era}/1000"), |b| {
            let mut pa = fresh.clone();
            let mut t = Ps::ZERO;
            b.iter(|| {
                for _ in 0..1000 {
                    let a = pa.alloc_pages(0, t, 0, MigrateType::Movable, env);
                    t = pa.free_pages(0, a.done, a.pfn.unwrap(), 0, env).unwrap().done;
                }
                black_box(t)
            })
        });
        g.bench_function(format!("order3_producer_consumer/{era}/1000"), |b| {
            let mut pa = fresh.clone();
            let mut t = Ps::ZERO;
            b.iter(|| {
                for _ in 0..1000 {
                    let a = pa.alloc_pages(0, t, 3, MigrateType::Unmovable, env);
                    t = pa.free_pages(1, a.done, a.pfn.unwrap(), 3, env).unwrap().done;
                }
                black_box(t)
            })
        });
        g.bench_function(format!("kmalloc512_sender_receiver_q64/{era}/1000"), |b| {
            let mut pa = fresh.clone();
            let mut slab = Slab::new(scosts, topo.cpus(), topo.sockets);
            let k = slab.kmalloc_cache(448).unwrap();
            let mut q = std::collections::VecDeque::new();
            let mut t = Ps::ZERO;
            b.iter(|| {
                for _ in 0..1000 {
                    let (o, a) = slab.kmem_cache_alloc(&mut pa, k, 0, t, env).unwrap();
                    t = a.done;
                    q.push_back(o);
                    if q.len() > 64 {
                        t = slab.free(&mut pa, 1, t, q.pop_front().unwrap(), env).unwrap().done;
                    }
                }
                black_box(t)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
