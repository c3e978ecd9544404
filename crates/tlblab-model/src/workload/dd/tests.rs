use super::*;
use crate::linux::config::KernelConfig;
use crate::profile::MachineProfile;
use crate::run::{run, RunResult, RunSpec, Workload};

fn mpc855t() -> MachineProfile {
    let p: MachineProfile = toml::from_str(crate::builtin::profile("mpc855t")).unwrap();
    p.validate().unwrap();
    p
}

fn dd(preset: &str, set: &[(&str, &str)]) -> RunResult {
    let mut k = KernelConfig::preset(preset).unwrap();
    for (key, v) in set {
        k.set(key, v).unwrap();
    }
    let spec = RunSpec {
        kernel: k,
        workload: Workload::parse("dd").unwrap(),
        tasks: 1,
        seed: 1,
        // Past the first writeback rounds of 2.4 (16 pages a bdflush round); 2.6 writes back every 976.
        warmup: Ps::MS * 150,
        measure: Ps::MS * 150,
    };
    run(&mpc855t(), &spec).unwrap()
}

fn itlb(r: &RunResult) -> f64 {
    r.per_op("itlb_miss_user") + r.per_op("itlb_miss_kernel")
}

/// Seed 003's mechanism, from the layouts and the 8xx TLB alone: 2.6 unpinned thrashes the ITLB
/// (an order of magnitude above 2.4), kernel pages evict user ones, sys time grows, and the pinned
/// 8 MB entry brings 2.6 back near 2.4; the lost pin is the unpinned case.
#[test]
fn seed_003_two_six_thrashes_the_itlb_and_the_pin_restores_it() {
    let v24 = dd("2.4-8xx", &[]);
    let v26 = dd("2.6-8xx", &[]);
    let pin = dd("2.6-8xx", &[("pin_tlb", "on")]);
    let lost = dd("2.6-8xx", &[("pin_tlb", "on"), ("lose_pinned", "on")]);
    for (n, r) in [("2.4", &v24), ("2.6", &v26), ("2.6 pin", &pin), ("2.6 pin lost", &lost)] {
        eprintln!(
            "{n}: real {:.3} s; per block itlb user {:.2} kernel {:.2} dtlb user {:.2} kernel {:.2} err {:.2}; user {:.0} sys {:.0} clocks",
            r.metric.value,
            r.per_op("itlb_miss_user"),
            r.per_op("itlb_miss_kernel"),
            r.per_op("dtlb_miss_user"),
            r.per_op("dtlb_miss_kernel"),
            r.per_op("dtlb_error"),
            r.per_op("user_clocks"),
            r.per_op("sys_clocks"),
        );
        assert!(r.operations() > 20, "{n}: {} blocks", r.operations());
        assert_eq!(r.metric.unit, "seconds");
    }
    assert!(itlb(&v26) >= 10.0 * itlb(&v24).max(0.5), "{} vs {}", itlb(&v26), itlb(&v24));
    assert!(v26.per_op("itlb_miss_user") > v24.per_op("itlb_miss_user") + 1.0);
    assert!(v26.per_op("sys_clocks") > 1.05 * v24.per_op("sys_clocks"));
    // dd's own time (the writeback threads' rounds fall unevenly into a 150 ms window: 2.6's
    // pdflush writes every 976 pages).
    let own = |r: &RunResult| r.per_op("user_clocks") + r.per_op("sys_clocks");
    assert!(own(&v26) > own(&v24));
    assert!(itlb(&pin) <= itlb(&v24) + 1.0, "{} vs {}", itlb(&pin), itlb(&v24));
    assert!(own(&pin) < own(&v26));
    assert!(itlb(&lost) >= itlb(&v26) - 1.0, "{} vs {}", itlb(&lost), itlb(&v26));
    // Deterministic.
    assert_eq!(dd("2.6-8xx", &[]), v26);
}

#[test]
fn dd_options_and_machines_are_checked() {
    assert_eq!(Workload::parse("dd").unwrap().name(), "dd");
    assert_eq!(Workload::parse("dd if=/dev/zero of=f bs=4k count=10").unwrap().name(), "dd of=f count=10");
    let e = Workload::parse("dd bs=8k").unwrap_err();
    assert!(e.contains("`bs=8k`") && e.contains("bs=4k (only)"), "{e}");
    // dd's paths are the 8xx kernel's; an x86 machine or an x86 kernel is refused.
    let x86: MachineProfile = toml::from_str(crate::builtin::profile("haswell-ep-2s")).unwrap();
    let spec = |k: &str| RunSpec::of(k, "dd", 1, Ps::ZERO, Ps::MS);
    let e = run(&x86, &spec("2.6-8xx")).unwrap_err();
    assert!(e.contains("walk.kind = \"software\"") && e.contains("haswell-ep-2s"), "{e}");
    let e = run(&mpc855t(), &spec("3.17")).unwrap_err();
    assert!(e.contains("[ppc8xx]") && e.contains("2.6-8xx"), "{e}");
    let e = KernelConfig::preset("2.6-8xx").unwrap().set("writeback", "kupdate").unwrap_err();
    assert!(e.contains("bdflush | pdflush | in-context"), "{e}");
}
