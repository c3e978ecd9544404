//! The probe's derivations over recorded raw measurements (`tests/data/probe-*.json`, written by
//! `tlblab probe --json` on real hosts): nothing here is timed, so the fitting code is tested
//! on the noise real hosts make, deterministically.

use tlblab_model::profile::{Confidence, MachineProfile, Sourced};
use tlblab_native::host_profile;
use tlblab_native::probe::ProbeReport;
use tlblab_native::stats::BlockEstimate;

/// File-creation calls on tmpfs with fixed costs above a system call of `sys` ns (every block
/// alike), fs_mark's user work touched or not.
fn fs_calls(
    sys: f64,
    user_touched_ns: Option<tlblab_native::stats::Summary>,
) -> tlblab_native::probe::fs::FsCalls {
    let at = |ns: f64| tlblab_native::stats::Summary::of(&[ns, ns, ns]);
    tlblab_native::probe::fs::FsCalls {
        mount: "/dev/shm".into(),
        create_ns: at(sys + 1500.0),
        walk_ns: at(sys + 250.0),
        open_existing_ns: at(sys + 300.0),
        mkdir_exists_ns: at(sys + 600.0),
        write_empty_ns: at(sys + 150.0),
        close_ns: at(sys + 110.0),
        user_ns: at(1800.0),
        user_touched_ns,
        files: 10_550,
        pwrite_page_ns: Some(at(sys + 900.0)),
    }
}

fn fixtures() -> Vec<(String, String)> {
    let dir = format!("{}/tests/data", env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("probe-"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    v.sort();
    assert!(v.len() >= 2, "expected recorded probe fixtures in {dir}");
    v
}

/// The block rule, restated: the median of the finite block figures, resolved when the lower
/// quartile is positive and the median exceeds half the interquartile range.
fn check_estimate(name: &str, e: &BlockEstimate) {
    let mut v: Vec<f64> = e.per_block.iter().copied().filter(|x| x.is_finite()).collect();
    assert_eq!(v.len(), e.blocks.n, "{name}");
    if v.is_empty() {
        assert!(!e.resolved, "{name}");
        return;
    }
    v.sort_by(f64::total_cmp);
    let q = |f: f64| {
        let pos = f * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    };
    assert_eq!(e.value, q(0.5), "{name}");
    assert_eq!((e.blocks.min, e.blocks.max), (v[0], v[v.len() - 1]), "{name}");
    assert_eq!(e.resolved, q(0.25) > 0.0 && q(0.5) > 0.5 * (q(0.75) - q(0.25)), "{name}: {e:?}")
}

fn key<'a>(p: &'a MachineProfile, name: &str) -> &'a Sourced {
    match name {
        "invlpg" => &p.kernel.invlpg_cycles,
        "full_flush" => &p.kernel.full_flush_cycles,
        "walk" => &p.walk.cycles,
        "flush_call" => &p.kernel.flush_call_cycles,
        "page_free" => &p.kernel.page_free_cycles,
        _ => unreachable!(),
    }
}

/// A derived key is measured exactly when its estimate is resolved; then its value is the
/// estimate in cycles and its source carries the spread, otherwise the source says "below
/// resolution" and the value is the labelled fallback.
fn check_key(p: &MachineProfile, name: &str, e: &BlockEstimate, cycles: Option<f64>, file: &str) {
    let k = key(p, name);
    if e.resolved {
        assert_eq!(k.confidence, Confidence::Measured, "{file} {name}: {}", k.source);
        if let Some(c) = cycles {
            assert!((k.value - c).abs() <= 1e-9 * c.abs().max(1.0), "{file} {name}: {} vs {c}", k.value);
        }
        assert!(
            k.source.contains("blocks min") && k.source.contains(&format!("n = {}", e.blocks.n)),
            "{}",
            k.source
        );
    } else {
        assert_eq!(k.confidence, Confidence::Estimate, "{file} {name}: {}", k.source);
        assert!(k.source.contains("below") && k.source.contains("resolution"), "{file} {name}: {}", k.source);
    }
}

#[test]
fn derivations_of_recorded_probes() {
    for (file, text) in fixtures() {
        let r = ProbeReport::from_json(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        // Reading back is deterministic and re-derives the same analyses.
        let again = ProbeReport::from_json(&text).unwrap();
        assert_eq!(
            serde_json::to_string(&r.shootdown_costs).unwrap(),
            serde_json::to_string(&again.shootdown_costs).unwrap()
        );
        let sc = r.shootdown_costs.as_ref().unwrap_or_else(|| panic!("{file}: no shootdown analysis"));
        let sd = &r.raw.shootdown;
        assert_eq!(sc.invlpg_ns.per_block.len(), sd.blocks.len(), "{file}");
        for (name, e) in [
            ("slope below", &sc.slope_below_ns),
            ("slope above", &sc.slope_above_ns),
            ("invlpg", &sc.invlpg_ns),
            ("full flush", &sc.full_flush_ns),
            ("intercept", &sc.intercept_below_ns),
        ] {
            check_estimate(&format!("{file} {name}"), e);
        }
        // INVLPG is the difference of the two slopes within each block.
        for (j, inv) in sc.invlpg_ns.per_block.iter().enumerate() {
            let d = sc.slope_below_ns.per_block[j] - sc.slope_above_ns.per_block[j];
            assert!((inv - d).abs() < 1e-9 || (inv.is_nan() && d.is_nan()), "{file} block {j}");
        }
        // The round trip is sibling minus alone at 1 page, block by block.
        if let Some(rt) = &sc.ipi_round_trip_ns {
            check_estimate(&format!("{file} rt"), rt);
            let i = sd.pages.iter().position(|&n| n == 1).unwrap();
            let want: Vec<f64> =
                sd.blocks.iter().filter_map(|b| b.sibling_ns[i].map(|s| s - b.alone_ns[i])).collect();
            assert_eq!(rt.per_block, want, "{file}");
        }
        let reach = r.reach_analysis.as_ref();
        if let Some(w) = reach.and_then(|a| a.walk.as_ref()) {
            check_estimate(&format!("{file} walk"), w);
        }

        let p = host_profile::build(&r, "fixture").unwrap_or_else(|e| panic!("{file}: {e}")).profile;
        let mhz = r.clock.mhz;
        let cyc = |ns: f64| ns * mhz / 1000.0;
        check_key(&p, "invlpg", &sc.invlpg_ns, Some(cyc(sc.invlpg_ns.value)), &file);
        check_key(&p, "full_flush", &sc.full_flush_ns, Some(cyc(sc.full_flush_ns.value)), &file);
        if let Some(w) = reach.and_then(|a| a.walk.as_ref()) {
            check_key(&p, "walk", w, Some(cyc(w.value)), &file);
        }
        // flush_call: without a line over none PTEs (the reports recorded before it), the
        // intercept minus the syscall round trip, block by block, and no madvise_call; with one
        // that resolved, the written line against it, and madvise's fixed path is that line's
        // intercept minus the syscall.
        let split = match (&sc.intercept_empty_ns, &sc.flush_call_ns) {
            (Some(e), Some(c)) if e.resolved && c.resolved => Some((e, c)),
            _ => None,
        };
        match split {
            None => {
                assert!(p.kernel.madvise_call_cycles.is_none(), "{file}");
                let call = sc.intercept_below_ns.map(|ns| cyc(ns - r.raw.syscall_ns.median), "test");
                check_key(&p, "flush_call", &call, Some(call.value), &file);
            }
            Some((empty, call)) => {
                let m = p.kernel.madvise_call_cycles.as_ref().expect("madvise_call with the line resolved");
                assert!((m.value - cyc(empty.value - r.raw.syscall_ns.median)).abs() < 1e-6, "{file}");
                let call = call.map(cyc, "test");
                check_key(&p, "flush_call", &call, Some(call.value), &file);
            }
        }
        // The syscall and clock carry their block spread.
        assert!(p.kernel.syscall_ns.source.contains("blocks min"), "{}", p.kernel.syscall_ns.source);
        assert!(p.cpu.clock_mhz.source.contains("blocks min"), "{}", p.cpu.clock_mhz.source);
        if let Some(c) = &p.coherence {
            assert_eq!(c.same_socket_ns.value, r.raw.c2c_ns.unwrap().median, "{file}");
            assert!(c.same_socket_ns.source.contains("blocks min"), "{}", c.same_socket_ns.source);
        }
    }
}

#[test]
fn a_damaged_fixture_is_refused_with_its_reason() {
    let (_, text) = fixtures().remove(0);
    let e = ProbeReport::from_json(&text.replacen("\"shootdown\"", "\"shootdwn\"", 1)).unwrap_err();
    assert!(e.contains("shootdown"), "{e}");
    let e = ProbeReport::from_json("{}").unwrap_err();
    assert!(e.starts_with("probe report:"), "{e}");
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn the_intel_guest_takes_the_multiply_clock_and_a_twelve_way_stlb() {
    // Reconstructed from what the Intel Xeon guest showed (reconstruct_intel_probe.py): the
    // add-immediate chain read 22,928 MHz, CPUID leaf 0x18 is zeros, the chase's L2 reach 12,288.
    let r = ProbeReport::from_json(&fixture("probe-xeon-kvm-reconstructed.json")).unwrap();
    assert!(r.cpuid_tlb.entries.is_empty(), "{:?}", r.cpuid_tlb);
    assert!((r.clock.mhz - 4100.0).abs() < 5.0 && r.clock.measured, "{:?}", r.clock);
    assert!(
        r.clock.disagreements.iter().any(|d| d.contains("22928") && d.contains("set aside")),
        "{:?}",
        r.clock
    );
    let b = host_profile::build(&r, "xeon").unwrap();
    let p = &b.profile;
    assert_eq!(p.cpu.clock_mhz.confidence, Confidence::Measured);
    assert!(p.cpu.clock_mhz.source.contains("multiplies"), "{}", p.cpu.clock_mhz.source);
    let stlb = p.tlb.structures.iter().find(|s| s.level == 2).expect("an L2 TLB from the chase");
    assert_eq!((stlb.entries, stlb.ways), (12_288, 12), "{}", stlb.source);
    assert!(
        stlb.source.contains("1024 sets x 12 ways") && stlb.source.contains("measured"),
        "{}",
        stlb.source
    );
    // The L2-hit penalty (1.7 ns in the reconstruction) in cycles at the clock taken.
    assert!((stlb.hit_cycles.value - 1.7 * 4.1).abs() < 1.0, "{:?}", stlb.hit_cycles);
}

#[test]
fn a_host_that_surprises_the_probe_still_gets_a_profile_with_labelled_fallbacks() {
    let mut v: serde_json::Value = serde_json::from_str(&fixture("probe-epyc-kvm-busy-quick.json")).unwrap();
    // No cache ladder, no fault, no ping-pong, a syscall of 5 s, both clock chains absurd.
    v["cache"] = serde_json::json!([]);
    v["faults"] = serde_json::json!([]);
    v["c2c_ns"] = serde_json::Value::Null;
    v["syscall_ns"]["median"] = serde_json::json!(5e9);
    v["clock_mhz"]["median"] = serde_json::json!(40_000.0);
    v["clock_imul_mhz"] =
        serde_json::json!({"median": 30000.0, "min": 30000.0, "max": 30000.0, "rel_iqr": 0.0, "n": 1});
    let r = ProbeReport::from_json(&v.to_string()).unwrap();
    let b = host_profile::build(&r, "surprised").unwrap_or_else(|e| panic!("{e}"));
    let p = &b.profile;
    p.validate().unwrap();
    // The clock: the kernel's cpu MHz of the recording stands in, labelled.
    assert_eq!(p.cpu.clock_mhz.value, r.host.cpuinfo_mhz.unwrap());
    assert_eq!(p.cpu.clock_mhz.confidence, Confidence::Estimate);
    // The syscall: the range's bound, with what was derived.
    let s = &p.kernel.syscall_ns;
    assert_eq!((s.value, s.confidence), (1_000_000.0, Confidence::Estimate));
    assert!(s.source.starts_with("fallback") && s.source.contains("5000000000"), "{}", s.source);
    for (key, k) in [("l1d", &p.memory.l1d_hit_cycles), ("fault", &p.kernel.fault_ns)] {
        assert_eq!(k.confidence, Confidence::Estimate, "{key}");
        assert!(k.source.contains("fallback"), "{key}: {}", k.source);
    }
    assert!(p.coherence.as_ref().unwrap().same_socket_ns.source.contains("fallback"));
    for w in ["kernel.syscall_ns", "L1D", "fault", "cache-line"] {
        assert!(b.warnings.iter().any(|x| x.contains(w)), "{w}: {:?}", b.warnings);
    }
}

/// `[ipc]` from the pipe and socket-pair calls: absent in the recorded reports (measured since),
/// so the section is None there; given calls, each key is the call less the system call and the
/// copy, in cycles at the probe's clock, and names its micro-measurement; a call that does not
/// stand above the system call leaves the section to a stand-in, with a warning.
#[test]
fn ipc_comes_from_the_probes_own_calls() {
    use tlblab_native::probe::ipc::{IpcCalls, MSG};
    use tlblab_native::stats::Summary;
    let (file, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    assert!(r.raw.ipc.is_none(), "{file}");
    assert!(host_profile::build(&r, "host").unwrap().profile.ipc.is_none(), "{file}");
    let sys = r.raw.syscall_ns.median;
    let at = |ns: f64| Summary::of(&[ns, ns, ns]);
    r.raw.ipc = Some(IpcCalls {
        pipe_write_ns: at(sys + 300.0),
        pipe_read_ns: at(sys + 250.0),
        unix_send_ns: at(sys + 900.0),
        unix_recv_ns: at(sys + 700.0),
    });
    let b = host_profile::build(&r, "host").unwrap();
    let ipc = b.profile.ipc.as_ref().expect("[ipc] from the calls");
    // A 100-byte message copy fits the L1d: the model charges it at the in-cache rate.
    let copy_ns = MSG as f64 / r.raw.clear_page_mbps.median * 1e3;
    let want = |extra: f64| ((extra - copy_ns) * r.clock.mhz / 1e3).round();
    assert_eq!(ipc.pipe_write_cycles.value, want(300.0), "{}", ipc.pipe_write_cycles.source);
    assert_eq!(ipc.unix_recv_cycles.value, want(700.0));
    assert_eq!(ipc.pipe_write_cycles.confidence, Confidence::Measured);
    assert!(ipc.unix_send_cycles.source.contains("micro-measurement `AF_UNIX stream send`"));
    assert!(ipc.unix_send_cycles.source.contains("SLUB"), "{}", ipc.unix_send_cycles.source);
    b.profile.validate().unwrap();
    // A pipe read no slower than the system call itself: not resolved.
    r.raw.ipc.as_mut().unwrap().pipe_read_ns = at(sys);
    let b = host_profile::build(&r, "host").unwrap();
    assert!(b.profile.ipc.is_none());
    assert!(b.warnings.iter().any(|w| w.contains("`pipe read`")), "{:?}", b.warnings);
}

/// `kernel.fault_ns` is the fault with a warm page: from the recycled-page measurement where
/// the report has one (the fresh region's figure only named beside it), from the fresh region's
/// first writes in reports recorded before; `memory.clear_dram_mbps` only where measured.
#[test]
fn the_fault_path_comes_from_warm_pages_and_the_cold_clear_from_its_own_measurement() {
    use tlblab_native::stats::Summary;
    let (file, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    assert!(r.raw.fault_warm_ns.is_none() && r.raw.clear_dram_mbps.is_none(), "{file}");
    assert!(r.raw.read_page_mbps.is_none(), "{file}");
    let old = host_profile::build(&r, "host").unwrap().profile;
    assert!(old.memory.read_page_mbps.is_none());
    assert!(old.kernel.fault_ns.source.contains("fresh anonymous"), "{}", old.kernel.fault_ns.source);
    assert!(old.memory.clear_dram_mbps.is_none());
    let cold = r.raw.faults[0].fault_ns.median;
    r.raw.fault_warm_ns = Some(Summary::of(&[cold / 2.0; 3]));
    r.raw.clear_dram_mbps = Some(Summary::of(&[5000.0; 3]));
    r.raw.read_page_mbps = Some(Summary::of(&[20000.0; 3]));
    let p = host_profile::build(&r, "host").unwrap().profile;
    p.validate().unwrap();
    let f = &p.kernel.fault_ns;
    // The same clearing and allocation shares come off either figure.
    assert!(
        (old.kernel.fault_ns.value - f.value - cold / 2.0).abs() < 1e-6,
        "{} {}",
        old.kernel.fault_ns.value,
        f.value
    );
    assert!(
        f.source.contains("recycled") && f.source.contains(&format!("{cold:.0} ns/page")),
        "{}",
        f.source
    );
    let c = p.memory.clear_dram_mbps.as_ref().expect("measured");
    assert_eq!((c.value, c.confidence), (5000.0, Confidence::Measured));
    assert!(c.source.contains("rep stosb"), "{}", c.source);
    let w = p.memory.read_page_mbps.as_ref().expect("measured");
    assert_eq!((w.value, w.confidence), (20000.0, Confidence::Measured));
    assert!(w.source.contains("64-bit word"), "{}", w.source);
}

/// `[fs]` from the file-creation calls on tmpfs: absent in the recorded reports (measured since),
/// so the section is None there; given calls, each key is the call less the system call (the
/// create's locked part: the create less an open of an existing file), in cycles at the probe's clock,
/// naming its micro-measurement, with mkdir's locked lookup the one estimate; fs_mark's user
/// work is its own figure; a create no slower than the walk leaves the section to a stand-in.
#[test]
fn fs_comes_from_the_probes_own_calls_on_tmpfs() {
    use tlblab_native::stats::Summary;
    let (file, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    assert!(r.raw.fs.is_none(), "{file}");
    assert!(host_profile::build(&r, "host").unwrap().profile.fs.is_none(), "{file}");
    let sys = r.raw.syscall_ns.median;
    let at = |ns: f64| Summary::of(&[ns, ns, ns]);
    r.raw.fs = Some(fs_calls(sys, Some(at(1000.0))));
    let b = host_profile::build(&r, "host").unwrap();
    let fs = b.profile.fs.as_ref().unwrap_or_else(|| panic!("[fs] from the calls: {:?}", b.warnings));
    let cyc = |ns: f64| (ns * r.clock.mhz / 1e3).round();
    assert_eq!(fs.open_walk_cycles.value, cyc(300.0), "{}", fs.open_walk_cycles.source);
    assert_eq!(fs.create_locked_cycles.value, cyc(1200.0), "{}", fs.create_locked_cycles.source);
    assert_eq!(fs.write_empty_cycles.value, cyc(150.0));
    assert_eq!(fs.close_cycles.value, cyc(110.0));
    assert_eq!(fs.fsmark_user_cycles.value, cyc(1800.0));
    // The pwrite of a cached page less the system call and the 4 KiB copy at the clearing rate.
    let copy_ns = 4096.0 * 1000.0 / r.raw.clear_page_mbps.median;
    let tw = fs.tmpfs_write_cycles.as_ref().unwrap();
    assert_eq!(tw.value, cyc(900.0 - copy_ns), "{}", tw.source);
    assert!(tw.source.contains("pwrite") && tw.source.contains("never dd"), "{}", tw.source);
    assert!(
        fs.fsmark_user_cycles.source.contains("first touches are 800 ns"),
        "{}",
        fs.fsmark_user_cycles.source
    );
    let lookup = host_profile::sections::MKDIR_LOOKUP_CYCLES;
    assert_eq!(fs.mkdir_walk_cycles.value, (600.0 * r.clock.mhz / 1e3 - lookup).round());
    assert_eq!(fs.mkdir_lookup_cycles.confidence, Confidence::Estimate);
    for k in [&fs.open_walk_cycles, &fs.create_locked_cycles, &fs.close_cycles, &fs.fsmark_user_cycles] {
        assert_eq!(k.confidence, Confidence::Measured);
        assert!(k.source.contains("micro-measurement") && k.source.contains("never fs_mark"), "{}", k.source);
    }
    assert!(
        fs.create_locked_cycles.source.contains("tmpfs") && fs.create_locked_cycles.source.contains("SLUB")
    );
    b.profile.validate().unwrap();
    // A create no slower than an open of an existing file: the locked part is not resolved.
    r.raw.fs.as_mut().unwrap().create_ns = at(sys + 300.0);
    let b = host_profile::build(&r, "host").unwrap();
    assert!(b.profile.fs.is_none());
    assert!(b.warnings.iter().any(|w| w.contains("[fs]")), "{:?}", b.warnings);
}

/// `kernel.idle_exit_ns` from the wake-up loop's latency: absent without it (the recorded
/// reports), else the latency less the waker's time, the IPI's send and delivery and a context
/// switch, never below zero.
#[test]
fn the_idle_exit_is_the_wake_latency_less_what_the_model_already_charges() {
    use tlblab_native::stats::Summary;
    let (file, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    assert!(host_profile::build(&r, "host").unwrap().profile.kernel.idle_exit_ns.is_none(), "{file}");
    let at = |ns: f64| Summary::of(&[ns, ns, ns]);
    let cs = r.raw.context_switch_ns.median;
    let b = host_profile::build(&r, "host").unwrap();
    let ipi = b.profile.ipi.as_ref().expect("the fixture measured an IPI");
    let kick = ipi.send_ns.value + ipi.delivery_ns.value;
    r.raw.ttwu_ns = Some(at(800.0));
    r.raw.wake_latency_ns = Some(at(800.0 + kick + cs + 5000.0));
    let b = host_profile::build(&r, "host").unwrap();
    let exit = b.profile.kernel.idle_exit_ns.as_ref().expect("derived");
    let want = 5000.0;
    assert!((exit.value - want).abs() < 1e-6, "{} vs {want}: {}", exit.value, exit.source);
    assert_eq!(exit.confidence, Confidence::Measured);
    b.profile.validate().unwrap();
    // A wake-up faster than the model's own path: none left for the exit.
    r.raw.wake_latency_ns = Some(at(900.0));
    let b = host_profile::build(&r, "host").unwrap();
    assert_eq!(b.profile.kernel.idle_exit_ns.as_ref().unwrap().value, 0.0);
}

/// The line over none PTEs (measured since the recorded reports): madvise's fixed path is its
/// intercept less the system call, the flush call the written intercept less it, block by
/// block, so the two add up to what the one key held before; the source says no flush was seen.
#[test]
fn madvise_fixed_path_comes_from_the_line_over_none_ptes() {
    let (file, text) = &fixtures()[0];
    let r = ProbeReport::from_json(text).unwrap();
    let old = host_profile::build(&r, "host").unwrap().profile;
    assert_eq!(old.kernel.flush_call_cycles.confidence, Confidence::Measured, "{file}");
    // Each block's calls over none PTEs: 200 ns below its written ones at every N (a fit is
    // shift-equivariant, so each block's intercepts differ by exactly 200 ns).
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    for b in v["shootdown"]["blocks"].as_array_mut().unwrap() {
        let alone: Vec<f64> = b["alone_ns"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        b["empty_ns"] = serde_json::json!(alone.iter().map(|a| a - 200.0).collect::<Vec<_>>());
        b["empty_sibling_ipis"] = serde_json::json!(0.0);
    }
    let r = ProbeReport::from_json(&v.to_string()).unwrap();
    let sc = r.shootdown_costs.as_ref().unwrap();
    let f = sc.flush_call_ns.as_ref().unwrap();
    assert!(f.per_block.iter().all(|x| (x - 200.0).abs() < 1e-6), "{f:?}");
    assert_eq!(sc.empty_ipis_per_call, Some(0.0));
    let p = host_profile::build(&r, "host").unwrap().profile;
    p.validate().unwrap();
    let cyc = r.clock.mhz / 1000.0;
    let (m, c) = (p.kernel.madvise_call_cycles.as_ref().expect("split"), &p.kernel.flush_call_cycles);
    assert!((c.value - 200.0 * cyc).abs() < 1e-6, "{}", c.source);
    assert!((m.value + c.value - old.kernel.flush_call_cycles.value).abs() < 1e-6, "{} {}", m.value, c.value);
    assert_eq!((m.confidence, c.confidence), (Confidence::Measured, Confidence::Measured));
    assert!(m.source.contains("none") && m.source.contains("with the sibling running: 0.00"), "{}", m.source);
    assert!(
        c.source.contains("less the same over none PTEs") && c.source.contains("blocks min"),
        "{}",
        c.source
    );
    // A line that does not stand apart (the same as the written one): the old single key.
    for b in v["shootdown"]["blocks"].as_array_mut().unwrap() {
        b["empty_ns"] = b["alone_ns"].clone();
    }
    let r = ProbeReport::from_json(&v.to_string()).unwrap();
    let p = host_profile::build(&r, "host").unwrap().profile;
    assert!(p.kernel.madvise_call_cycles.is_none());
    assert_eq!(p.kernel.flush_call_cycles.value, old.kernel.flush_call_cycles.value);
    assert!(
        p.kernel.flush_call_cycles.source.contains("did not resolve"),
        "{}",
        p.kernel.flush_call_cycles.source
    );
}

/// `kernel.context_switch_ns` is the switch loop less what the model charges apart on its path:
/// the AF_UNIX send and receive measured alone and the local wake-up; the whole loop where they
/// are not measured (older reports) or leave nothing, with a warning.
#[test]
fn the_switch_is_the_loop_less_its_write_read_and_local_wake_up() {
    use tlblab_native::probe::ipc::IpcCalls;
    use tlblab_native::stats::Summary;
    let (file, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    let cs = r.raw.context_switch_ns.median;
    let b = host_profile::build(&r, "host").unwrap();
    assert_eq!(b.profile.kernel.context_switch_ns.as_ref().unwrap().value, cs, "{file}");
    assert!(b.warnings.iter().any(|w| w.contains("kernel.context_switch_ns")), "{:?}", b.warnings);
    let at = |ns: f64| Summary::of(&[ns, ns, ns]);
    let sys = r.raw.syscall_ns.median;
    r.raw.ipc = Some(IpcCalls {
        pipe_write_ns: at(sys + 300.0),
        pipe_read_ns: at(sys + 250.0),
        unix_send_ns: at(cs * 0.2),
        unix_recv_ns: at(cs * 0.1),
    });
    r.raw.ttwu_local_ns = Some(at(cs * 0.1));
    let b = host_profile::build(&r, "host").unwrap();
    let k = b.profile.kernel.context_switch_ns.as_ref().unwrap();
    assert!((k.value - cs * 0.6).abs() < 1e-6, "{} vs {}: {}", k.value, cs * 0.6, k.source);
    assert!(k.source.contains("local wake-up"), "{}", k.source);
    b.profile.validate().unwrap();
    // Calls that take longer than the loop: the whole loop stands.
    r.raw.ttwu_local_ns = Some(at(cs));
    let b = host_profile::build(&r, "host").unwrap();
    assert_eq!(b.profile.kernel.context_switch_ns.as_ref().unwrap().value, cs);
}

/// `memory.second_level_fault_ns`: absent where the report has no fresh-region measurement (the
/// recorded fixtures); the fresh regions' slow pages' time beyond the recycled pages' where
/// they have slow pages; 0, said so, where they have none (bare metal).
#[test]
fn the_second_level_fault_is_the_fresh_regions_slow_pages_beyond_the_recycled_ones() {
    use tlblab_native::probe::fault::SecondLevel;
    use tlblab_native::stats::Summary;
    let (file, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    assert!(r.raw.second_level.is_none(), "{file}");
    assert!(host_profile::build(&r, "host").unwrap().profile.memory.second_level_fault_ns.is_none());
    let level = |per_2m: f64, fresh: f64, recycled: f64| SecondLevel {
        pages: 32_768,
        fresh_slow_ns: Summary::of(&[fresh; 3]),
        fresh_slow_per_2m: Summary::of(&[per_2m; 3]),
        fresh_ns: Summary::of(&[2000.0; 3]),
        recycled_slow_ns: Summary::of(&[recycled; 3]),
    };
    r.raw.second_level = Some(level(0.6, 900.0, 60.0));
    let p = host_profile::build(&r, "host").unwrap().profile;
    p.validate().unwrap();
    let k = p.memory.second_level_fault_ns.as_ref().expect("measured");
    assert_eq!((k.value, k.confidence), (840.0, Confidence::Measured));
    assert!(k.source.contains("840 ns a page"), "{}", k.source);
    // A guest fault never takes 16 x the median: no slow pages beyond the recycled ones' share.
    for (per_2m, fresh) in [(0.0, 60.0), (0.05, 65.0), (0.6, 65.0)] {
        r.raw.second_level = Some(level(per_2m, fresh, 60.0));
        let p = host_profile::build(&r, "host").unwrap().profile;
        let k = p.memory.second_level_fault_ns.as_ref().expect("measured");
        assert_eq!(k.value, 0.0, "{per_2m} {fresh}");
        assert!(k.source.contains("no second-level faults"), "{}", k.source);
    }
}

/// `fs.shmem_alloc_and_add_folio_cycles`: absent where the report has no new-page measurement
/// (every recorded fixture reads back without one); else the fallocate of a hole less that of a
/// written page, in cycles, less the model's own allocator charge for the page, naming the
/// measurement; below the floor, left out with a warning.
#[test]
fn the_new_tmpfs_page_is_fallocate_of_a_hole_less_a_lookup_and_the_simulated_allocator() {
    use tlblab_native::probe::shmem::NewFolio;
    use tlblab_native::stats::Summary;
    for (file, text) in fixtures() {
        let r = ProbeReport::from_json(&text).unwrap();
        assert!(r.raw.shmem_new_folio.is_none(), "{file}");
        let p = host_profile::build(&r, "host").unwrap().profile;
        assert!(p.fs.as_ref().is_none_or(|f| f.shmem_alloc_and_add_folio_cycles.is_none()), "{file}");
    }
    let (_, text) = &fixtures()[0];
    let mut r = ProbeReport::from_json(text).unwrap();
    let sys = r.raw.syscall_ns.median;
    let at = |ns: f64| Summary::of(&[ns, ns, ns]);
    r.raw.fs = Some(fs_calls(sys, None));
    let folio = |extra: f64| NewFolio {
        mount: "/dev/shm".into(),
        pages: 1024,
        new_ns: at(800.0 + extra),
        cached_ns: at(800.0),
        extra_ns: at(extra),
        punch_ns: at(2500.0),
        punch_empty_ns: at(1000.0),
        remove_extra_ns: at(1500.0),
    };
    r.raw.shmem_new_folio = Some(folio(1200.0));
    let b = host_profile::build(&r, "host").unwrap();
    b.profile.validate().unwrap();
    let pa = b.profile.page_alloc.as_ref().unwrap();
    let mhz = r.clock.mhz;
    let share =
        pa.pcp_alloc_cycles.value + pa.buddy_block_cycles.value + pa.struct_page_miss_ns.value * mhz / 1e3;
    let k = b.profile.fs.as_ref().unwrap().shmem_alloc_and_add_folio_cycles.as_ref().expect("measured");
    assert_eq!(k.value, (1200.0 * mhz / 1e3 - share).round(), "{}", k.source);
    assert_eq!(k.confidence, Confidence::Measured);
    assert!(k.source.contains("fallocate") && k.source.contains("never dd"), "{}", k.source);
    // The same page through the allocator alone: nothing above the simulated charge.
    r.raw.shmem_new_folio = Some(folio(share * 1e3 / mhz));
    let b = host_profile::build(&r, "host").unwrap();
    assert!(b.profile.fs.as_ref().unwrap().shmem_alloc_and_add_folio_cycles.is_none());
    assert!(b.warnings.iter().any(|w| w.contains("shmem_alloc_and_add_folio_cycles")), "{:?}", b.warnings);
}
