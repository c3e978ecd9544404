use crate::run::{run, RunSpec};
use crate::time::Ps;

/// ebizzy -m with two threads: each sleeps on `mmap_lock` behind the other's mmap or munmap
/// (and, with per-VMA locks, in `vma_start_write` behind the other's faults in their merged
/// VMA), and its CPU idles until the release wakes it.
fn ebizzy(kernel: &str) -> crate::run::RunResult {
    let spec = RunSpec::of(kernel, "ebizzy -m", 2, Ps::US * 500, Ps::MS * 10);
    run(&crate::profile::shipped("ivybridge-i3-3240"), &spec).unwrap()
}

#[test]
fn a_wake_up_of_an_idle_cpu_is_a_function_call_ipi_from_v6_0_only() {
    // 6.18 (v6.0+ ttwu_queue_wakelist): every wake-up of a sleeper whose CPU idles is counted.
    let r = ebizzy("6.18");
    let (wakes, sleeps) =
        (r.counters["wakelist_ipis"], r.counters["mmap_lock_sleeps"] + r.counters["vma_start_write_sleeps"]);
    assert!(wakes > 0 && wakes <= sleeps, "{wakes} wake-list IPIs, {sleeps} sleeps");
    // 4.9 and 5.18 send the same wake-up as a reschedule IPI: the same kick, not counted.
    for k in ["4.9", "5.18.1"] {
        let old = ebizzy(k);
        assert!(old.counters["mmap_lock_sleeps"] > 0, "{k}");
        assert_eq!(old.counters.get("wakelist_ipis").copied().unwrap_or(0), 0, "{k}");
    }
}

#[test]
fn an_idle_cpu_takes_its_wake_up_only_once_out_of_idle() {
    // ebizzy -m's sleepers wake on idle CPUs: with a 20 us way out of idle each wake-up keeps
    // its CPU idle that much longer.
    let spec = RunSpec::of("6.18", "ebizzy -m", 2, Ps::US * 500, Ps::MS * 10);
    let mut p = crate::profile::shipped("ivybridge-i3-3240");
    let base = run(&p, &spec).unwrap();
    p.kernel.idle_exit_ns = Some(crate::profile::Sourced {
        value: 20_000.0,
        source: "test".into(),
        confidence: crate::profile::Confidence::Estimate,
    });
    let slow = run(&p, &spec).unwrap();
    let idle = |r: &crate::run::RunResult| -> u64 {
        r.attribution.iter().map(|c| c.get("idle").copied().unwrap_or(0)).sum()
    };
    let wakes = slow.counters["wakelist_ipis"];
    assert!(wakes > 0);
    // Each wake-up adds up to 20 us (less where the window ends first); at least half on average.
    assert!(
        idle(&slow) >= idle(&base) + wakes * Ps::US.0 * 10,
        "{} vs {}, {wakes} wake-ups",
        idle(&slow),
        idle(&base)
    );
}

#[test]
fn a_wake_up_on_the_wakers_own_cpu_costs_the_local_path_only() {
    let at = |local: Option<f64>| {
        let mut p = crate::profile::shipped("ivybridge-i3-3240");
        let key = |v: f64| crate::profile::Sourced {
            value: v,
            source: "test".into(),
            confidence: crate::profile::Confidence::Estimate,
        };
        p.kernel.ttwu_cycles = Some(key(20_000.0));
        p.kernel.ttwu_local_cycles = local.map(key);
        let config = crate::linux::config::KernelConfig::preset("6.18").unwrap();
        let mut s = crate::engine::sim::Simulation::new(&p, config);
        // From CPU 1: onto itself, then onto CPU 0.
        s.untimed(|k, ctx| {
            ctx.cpu = 1;
            (k.ttwu_cost(ctx, 1), k.ttwu_cost(ctx, 0))
        })
    };
    let mhz = crate::profile::shipped("ivybridge-i3-3240").clock_mhz();
    let (remote, local) = (Ps::from_cycles(20_000.0, mhz), Ps::from_cycles(200.0, mhz));
    // Without the key a wake-up costs the measured one across CPUs wherever it lands.
    assert_eq!(at(None), (remote, remote));
    assert_eq!(at(Some(200.0)), (local, remote));
}
