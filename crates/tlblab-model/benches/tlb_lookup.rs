//! The TLB lookup hot path: lookups per second through one hardware thread's hierarchy.
//!
//! `cargo bench -p tlblab-model --bench tlb_lookup`; criterion reports element throughput
//! (lookups/s). Streams are deterministic: a hot set that fits a 64-entry L1 plus a cold tail.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use tlblab_model::hw::tlb::{
    Access, AccessKind, Geometry, Inclusion, PageSize, Replacement, Serves, StructureSpec, TlbHierarchy,
    TlbPayload, Translation,
};
use tlblab_model::profile::MachineProfile;
use tlblab_model::rng::Rng;
use tlblab_model::trace::TraceDriver;

const N: usize = 1 << 20;

/// `hot_percent` of accesses go to 48 hot pages, the rest uniformly over 4096 pages.
fn stream(hot_percent: u64) -> Vec<u64> {
    let mut r = Rng::stream(1, "bench stream");
    (0..N)
        .map(|_| {
            let page = if r.below(100) < hot_percent { r.below(48) } else { r.below(4096) };
            0x7f00_0000_0000 + page * 4096 + r.below(4096)
        })
        .collect()
}

fn explicit(levels: &[(u32, u32)]) -> TlbHierarchy {
    let specs: Vec<_> = levels
        .iter()
        .enumerate()
        .map(|(i, &(s, w))| StructureSpec {
            name: format!("L{}", i + 1),
            level: i as u8 + 1,
            serves: Serves::Unified,
            page_sizes: vec![PageSize::Size4K],
            geometry: Geometry::new(s, w).unwrap(),
        })
        .collect();
    TlbHierarchy::new(&specs, Replacement::Lru, Inclusion::NonInclusive).unwrap()
}

fn bench(c: &mut Criterion) {
    let ivb: MachineProfile = toml::from_str(tlblab_model::builtin::profile("ivybridge-4c8t")).unwrap();
    let mut g = c.benchmark_group("tlb_lookup");
    g.throughput(Throughput::Elements(N as u64));
    for hot in [70, 95] {
        let addrs = stream(hot);
        let cases: [(&str, TlbHierarchy); 3] = [
            ("16x4", explicit(&[(16, 4)])),
            ("16x4+128x8", explicit(&[(16, 4), (128, 8)])),
            ("ivybridge", ivb.build_tlb()),
        ];
        for (name, tlb) in cases {
            let mut d = TraceDriver::new(tlb, PageSize::Size4K);
            g.bench_function(format!("{name}/hot{hot}"), |b| {
                b.iter(|| {
                    for &a in &addrs {
                        d.lookup(black_box(a), AccessKind::Load);
                    }
                })
            });
        }
    }
    g.finish();
}

/// The kernel-path pattern (engine/sim.rs `kernel_path`) on the Haswell-EP profile: four kernel
/// translations of fixed sizes (two 2M text pages, the 1G direct map, a 4K stack page) looked up
/// with `lookup_or_fill_sized`, against replaying their level-1 ways (`still_hits` + `rehit`),
/// and after every full flush of the PCID (all four miss and refill), the shootdown storm case.
fn kernel_path(c: &mut Criterion) {
    let hsw: MachineProfile = toml::from_str(tlblab_model::builtin::profile("haswell-ep-2s")).unwrap();
    let touches = [
        (0xffff_ffff_8120_0000u64, AccessKind::Fetch, PageSize::Size2M),
        (0xffff_ffff_8140_0000, AccessKind::Fetch, PageSize::Size2M),
        (0xffff_8880_0000_0000, AccessKind::Load, PageSize::Size1G),
        (0xffff_c900_0000_3000, AccessKind::Store, PageSize::Size4K),
    ];
    // A kernel touch: the access in PCID 1 and the translation a walk finds (engine/sim.rs's).
    let touch = |va: u64, kind: AccessKind, size: PageSize| {
        let t = Translation { size, payload: TlbPayload::new(va >> 12, false), global: false };
        (Access { va, kind, asid: 1, kernel: true }, t)
    };
    let mut g = c.benchmark_group("kernel_path");
    g.throughput(Throughput::Elements(touches.len() as u64));
    let mut t = hsw.build_tlb();
    g.bench_function("lookup_or_fill_sized/hits", |b| {
        b.iter(|| {
            for &(va, k, z) in &touches {
                let (a, tr) = touch(black_box(va), k, z);
                black_box(t.lookup_or_fill_sized(0, a, tr));
            }
        })
    });
    let ways: Vec<_> = touches
        .iter()
        .map(|&(va, k, z)| {
            let (a, tr) = touch(va, k, z);
            t.lookup_or_fill_sized(0, a, tr);
            t.l1_way(0, a, z).unwrap()
        })
        .collect();
    g.bench_function("replay/hits", |b| {
        b.iter(|| {
            if ways.iter().all(|w| t.still_hits(0, w, 1)) {
                for (w, &(_, k, _)) in ways.iter().zip(&touches) {
                    t.rehit(0, w, k, true);
                }
            }
        })
    });
    g.bench_function("after_full_flush/misses", |b| {
        b.iter(|| {
            t.flush_asid(0, 1);
            for &(va, k, z) in &touches {
                let (a, tr) = touch(black_box(va), k, z);
                black_box(t.lookup_or_fill_sized(0, a, tr));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench, kernel_path);
criterion_main!(benches);
