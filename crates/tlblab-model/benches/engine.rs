//! The engine's speed: simulated time per wall time for will-it-scale tlb_flush1_threads with
//! every core busy on the 56-core Skylake-SP profile (issue 3's yardstick).
//!
//! `cargo bench -p tlblab-model --bench engine`. Each iteration simulates 1 ms after a 100 us
//! warm-up; simulated/wall = 1.1 ms / (reported time per iteration).

use criterion::{criterion_group, criterion_main, Criterion};
use tlblab_model::engine::time::Ps;
use tlblab_model::kernel::preset::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run, RunSpec, Workload};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    for (machine, text, tasks) in [
        ("skylake-sp-2s", include_str!("../../../profiles/skylake-sp-2s.toml"), 56),
        ("haswell-ep-2s", include_str!("../../../profiles/haswell-ep-2s.toml"), 45),
    ] {
        let p: MachineProfile = toml::from_str(text).unwrap();
        for kernel in ["5.18.1", "5.18.1+patch"] {
            let spec = RunSpec {
                kernel: KernelConfig::preset(kernel).unwrap(),
                workload: Workload::parse("tlb_flush1_threads").unwrap(),
                tasks,
                seed: 1,
                warmup: Ps::US * 100,
                measure: Ps::MS,
            };
            g.bench_function(format!("tlb_flush1_threads/{machine}/{tasks}/{kernel}/1.1ms"), |b| {
                b.iter(|| run(&p, &spec).unwrap())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
