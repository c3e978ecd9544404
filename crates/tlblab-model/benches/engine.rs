//! The engine's speed: simulated time per wall time for will-it-scale tlb_flush1_threads with
//! every core busy on the 56-core Skylake-SP profile (the yardstick of `scripts/speed.sh`).
//!
//! `cargo bench -p tlblab-model --bench engine`. Each iteration simulates 1 ms after a 100 us
//! warm-up; simulated/wall = 1.1 ms / (reported time per iteration).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use tlblab_model::engine::queue::Agenda;
use tlblab_model::linux::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run, RunSpec, Workload};
use tlblab_model::time::Ps;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    for (machine, text, tasks) in [
        ("skylake-sp-2s", tlblab_model::builtin::profile("skylake-sp-2s"), 56),
        ("haswell-ep-2s", tlblab_model::builtin::profile("haswell-ep-2s"), 45),
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

/// The agenda alone: one `set` of a pseudo-random CPU's next time and one `first`, on the
/// Skylake-SP profile's 112 CPUs (what the engine does per event).
fn agenda(c: &mut Criterion) {
    let mut a = Agenda::new(112);
    for cpu in 0..112 {
        a.set(cpu, Some(Ps(cpu as u64 * 7)));
    }
    let mut x = 1u64;
    c.bench_function("agenda/112cpus/set+first", |b| {
        b.iter(|| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            a.set((x >> 33) as u32 % 112, Some(Ps(x >> 40)));
            black_box(a.first())
        })
    });
}

criterion_group!(benches, bench, agenda);
criterion_main!(benches);
