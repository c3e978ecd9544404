//! The mechanisms behind seed 004's claims, pinned on simulated results (not timings): what the
//! notes give for the claims the model reproduces and for those it does not (the claims
//! themselves are the experiments' `[[claim]]`, tested in crates/tlblab/tests/seed_claims.rs). Short windows (2 ms after 300 us): netperf's Hmean moves < 0.3% from 5 to
//! 40 ms, and every threshold below sits well away from the measured value.

use tlblab_model::linux::config::KernelConfig;
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::{run, RunResult, RunSpec, Workload};
use tlblab_model::time::Ps;

fn profile(name: &str) -> MachineProfile {
    let p: MachineProfile = toml::from_str(tlblab_model::builtin::profile(name)).unwrap();
    p.validate().unwrap();
    p
}

fn cell(machine: &str, preset: &str, workload: &str) -> RunResult {
    let spec = RunSpec {
        kernel: KernelConfig::preset(preset).unwrap(),
        workload: Workload::parse(workload).unwrap(),
        tasks: 2,
        seed: 1,
        warmup: Ps::US * 300,
        measure: Ps::MS * 2,
    };
    let r = run(&profile(machine), &spec).unwrap();
    assert_eq!(r.oracle.violations, 0, "{machine} {preset} {workload}: {:?}", r.oracle.examples);
    r
}

/// netperf UDP_STREAM at `size` with mmtests' -s/-S.
fn udp(machine: &str, preset: &str, size: u64) -> RunResult {
    let b = size + 256;
    cell(machine, preset, &format!("netperf -t UDP_STREAM -s {b} -S {b} -m {size}"))
}

#[test]
fn hopcpu_takes_zone_lock_less_where_the_head_comes_from_the_page_allocator() {
    for (machine, size) in
        [("haswell-ep-2698v3-2s", 8192), ("haswell-ep-2698v3-2s", 16384), ("ivybridge-i3-3240", 8192)]
    {
        let (v, h) = (udp(machine, "4.9", size), udp(machine, "4.9-hopcpu", size));
        // kmalloc_large: one zone->lock for the sender's allocation, one for the receiver's free.
        assert!((v.per_op("zone_lock_acquisitions") - 2.0).abs() < 0.05, "{:?}", v.counters);
        assert!(h.per_op("zone_lock_acquisitions") < 0.5, "{:?}", h.counters);
        assert!(h.per_op("zone_lock_wait_ps") < v.per_op("zone_lock_wait_ps") / 3.0);
    }
}

#[test]
fn small_messages_make_no_page_allocator_calls() {
    // The note's explanation of the seed's unreproduced +36..+50%: the receiver's frees land on
    // the sender's active slab, no slab page is allocated or freed, zone->lock is never taken.
    for size in [64, 1024] {
        let (v, h) =
            (udp("haswell-ep-2698v3-2s", "4.9", size), udp("haswell-ep-2698v3-2s", "4.9-hopcpu", size));
        for r in [&v, &h] {
            assert!(r.per_op("zone_lock_acquisitions") < 0.01, "{size}: {:?}", r.counters);
            assert!(r.per_op("slab_pages_allocated") < 0.01, "{size}: {:?}", r.counters);
            // Every received message's two frees are remote (the SLUB slow path on the
            // receiver's CPU); a dropped one is freed on the sender's, in the fast path.
            let c = |k: &str| r.counters[k] as f64;
            assert!(c("slab_free_slowpath") / c("net_received") > 1.9, "{size}: {:?}", r.counters);
        }
    }
}

#[test]
fn udp_receivers_keep_up_with_mmtests_socket_sizes() {
    // The seed's recv rows are within 1% of its send rows; the model drops a few percent on the
    // 2-socket machine (a 2-3 skb receive queue), Jesper Brouer measured ~12% at 1024 B.
    for size in [64, 1024, 16384] {
        let r = udp("haswell-ep-2698v3-2s", "4.9", size);
        let dropped = r.per_op("net_drops");
        assert!(dropped > 0.0 || size == 16384, "{size}: {:?}", r.counters);
        assert!(dropped < 0.1, "{size}: {:?}", r.counters);
    }
}

/// fs_mark zero-size files as mmtests runs them, `threads` children, 1 ms + 5 ms (10, 20 and
/// 40 ms windows move Files/sec by < 0.2%).
fn fsmark(machine: &str, preset: &str, threads: u32) -> RunResult {
    fsmark_on(machine, preset, threads, "")
}

/// As [`fsmark`], with `extra` options (`--fs tmpfs`).
fn fsmark_on(machine: &str, preset: &str, threads: u32, extra: &str) -> RunResult {
    let text = format!("fsmark -d /tmp/fsmark -D 64 -s 0 -S 0 -n 500000 {extra}");
    let spec = RunSpec {
        kernel: KernelConfig::preset(preset).unwrap(),
        workload: Workload::parse(&text).unwrap(),
        tasks: threads,
        seed: 1,
        warmup: Ps::MS,
        measure: Ps::MS * 5,
    };
    let r = run(&profile(machine), &spec).unwrap();
    assert_eq!(r.oracle.violations, 0, "{machine} {preset} fsmark: {:?}", r.oracle.examples);
    r
}

/// On tmpfs a file is a dentry, its name and a shmem inode: no journal handle, inode table or
/// directory block, so fewer and smaller objects than ext4's at the same `[fs]` costs, and the
/// parent's `i_rwsem` is still taken for every create.
#[test]
fn fsmark_on_tmpfs_allocates_an_inode_and_a_dentry_and_nothing_of_ext4() {
    for threads in [1, 4] {
        let (e, t) = (
            fsmark("ivybridge-i3-3240", "4.9", threads),
            fsmark_on("ivybridge-i3-3240", "4.9", threads, "--fs tmpfs"),
        );
        assert!(t.config.workload.ends_with("--fs tmpfs"), "{}", t.config.workload);
        for c in ["ext4_inodes", "ext4_itable_blocks", "ext4_dir_splits", "ext4_metadata_pages"] {
            assert_eq!(t.per_op(c), 0.0, "{threads}: {c} {:?}", t.counters);
            assert!(e.per_op(c) > 0.0 || c == "ext4_dir_splits", "{threads}: ext4 {c}");
        }
        for c in ["fs_creates", "d_allocs", "d_external_names"] {
            assert!((t.per_op(c) - 1.0).abs() < 0.01, "{threads}: {c} {:?}", t.counters);
        }
        // A 744-byte inode against ext4's 1072 plus its handle and metadata: fewer slab pages.
        let (se, st) = (e.per_op("slab_pages_allocated"), t.per_op("slab_pages_allocated"));
        assert!(st > 0.0 && st < 0.9 * se, "{threads}: slab pages tmpfs {st} vs ext4 {se}");
        assert!(t.metric.value > e.metric.value, "{threads}: {} vs {}", t.metric.value, e.metric.value);
        if threads > 1 {
            // The children share one subdirectory: its lock is still contended.
            assert!(t.per_op("fs_dir_lock_contended") > 0.0, "{:?}", t.counters);
        }
    }
}

#[test]
fn fsmark_only_allocates_and_zone_lock_is_a_fraction_of_a_file() {
    for (machine, threads) in [
        ("ivybridge-i3-3240", 1),
        ("ivybridge-i3-3240", 4),
        ("haswell-ep-2698v3-2s", 1),
        ("haswell-ep-2698v3-2s", 16),
    ] {
        let (v, h) = (fsmark(machine, "4.9", threads), fsmark(machine, "4.9-hopcpu", threads));
        let what = format!("{machine} {threads} threads");
        for r in [&v, &h] {
            // Only allocation: no page, slab page or per-CPU list page comes back.
            for c in ["pages_freed", "buddy_frees", "pcp_frees", "slab_pages_freed"] {
                assert_eq!(r.per_op(c), 0.0, "{what}: {c} {:?}", r.counters);
            }
            assert!((r.per_op("fs_creates") - 1.0).abs() < 0.01, "{what}: {:?}", r.counters);
        }
        // The same slab demand (an inode in order-3 slabs, a dentry, a name) in both kernels.
        let (sv, sh) = (v.per_op("slab_pages_allocated"), h.per_op("slab_pages_allocated"));
        assert!(sv > 0.2 && (sh / sv - 1.0).abs() < 0.05, "{what}: slab pages {sv} vs {sh}");
        // hopcpu batches the order-3 refills (31 blocks per zone->lock), so it takes the lock
        // less; but the lock's whole cost per file, held and waited, is a fraction of a percent
        // of a file's time in vanilla: there is nothing for the caching to win.
        assert!(h.per_op("zone_lock_acquisitions") < v.per_op("zone_lock_acquisitions"), "{what}");
        let file_ps = 1e12 * threads as f64 / v.metric.value;
        let lock_ps = v.per_op("zone_lock_hold_ps") + v.per_op("zone_lock_wait_ps");
        assert!(lock_ps < 0.005 * file_ps, "{what}: zone->lock {lock_ps} ps of {file_ps} ps per file");
    }
}
