use super::*;

/// The MPC855T D-cache geometry (4 KB, 16-byte lines, 2-way = 128 sets) with round latencies.
fn dcache() -> Cache {
    Cache::new(CacheSpec {
        name: "D".into(),
        size_bytes: 4096,
        line_bytes: 16,
        ways: 2,
        hit_cycles: 1,
        miss_cycles: 8,
        fill_cycles: 10,
        writeback_cycles: 9,
        write_through_cycles: 4,
    })
    .unwrap()
}

const WAY: u64 = 2048; // addresses this far apart share a set

#[test]
fn geometry_and_hit_after_miss() {
    let mut c = dcache();
    assert_eq!(c.spec().sets(), 128);
    let a = c.read(0x1234);
    assert_eq!((a.hit, a.cycles), (false, 8));
    // Same 16-byte line hits, the next line misses.
    assert!(c.read(0x123c).hit);
    assert!(!c.read(0x1240).hit);
    assert_eq!(c.stats().read_misses, 2);
    assert_eq!(c.stats().cycles, 8 + 1 + 8);
}

#[test]
fn lru_within_a_set_and_invalid_way_first() {
    let mut c = dcache();
    c.read(0);
    c.read(WAY);
    c.read(0); // 0 is now most recent
    c.read(2 * WAY); // evicts WAY, not 0
    assert!(c.contains(0));
    assert!(!c.contains(WAY));
    assert!(c.contains(2 * WAY));
    // Other sets are untouched.
    assert!(!c.contains(16));
}

#[test]
fn a_streaming_copy_larger_than_the_cache_misses_every_line_every_pass() {
    let mut c = dcache();
    for _ in 0..3 {
        for a in (0..8192u64).step_by(4) {
            c.read(a);
        }
    }
    assert_eq!(c.stats().read_misses, 3 * 8192 / 16);
    // A 4 KB working set fits entirely after the first pass.
    let mut c = dcache();
    for _ in 0..3 {
        for a in (0..4096u64).step_by(4) {
            c.read(a);
        }
    }
    assert_eq!(c.stats().read_misses, 4096 / 16);
}

#[test]
fn copyback_allocates_on_store_miss_and_writes_back_dirty_victims() {
    let mut c = dcache();
    let w = c.write(0, WritePolicy::CopyBack);
    assert_eq!((w.hit, w.cycles), (false, 10));
    assert!(c.is_dirty(0));
    c.read(WAY);
    let r = c.read(2 * WAY); // victim: line 0, dirty
    assert!(r.writeback);
    assert_eq!(r.cycles, 8 + 9);
    assert_eq!(c.stats().writebacks, 1);
}

#[test]
fn write_through_never_allocates_and_always_pays_the_bus() {
    let mut c = dcache();
    let w = c.write(0x100, WritePolicy::WriteThrough);
    assert!(!w.hit);
    assert!(!c.contains(0x100));
    c.read(0x100);
    let w = c.write(0x100, WritePolicy::WriteThrough);
    assert_eq!((w.hit, w.cycles), (true, 4));
    assert!(!c.is_dirty(0x100));
    assert_eq!(c.stats().write_throughs, 2);
}

#[test]
fn dcbz_establishes_a_line_without_reading() {
    let mut c = dcache();
    let z = c.zero_line(0x40, WritePolicy::CopyBack);
    assert_eq!(z.cycles, 1);
    assert!(c.is_dirty(0x40));
    assert_eq!(c.stats().fills, 0);
    assert!(c.read(0x44).hit);
    assert_eq!(c.flush_all(), 9);
    assert!(!c.is_dirty(0x40));
}

#[test]
fn bad_geometry_names_the_cache_and_the_rule() {
    let mut s = dcache().spec().clone();
    s.size_bytes = 3000;
    assert!(Cache::new(s.clone()).unwrap_err().to_string().contains("cache D: size_bytes = 3000"));
    s.size_bytes = 4096;
    s.line_bytes = 12;
    assert!(Cache::new(s.clone()).is_err());
    s.line_bytes = 16;
    s.miss_cycles = 20;
    assert!(Cache::new(s).unwrap_err().to_string().contains("miss_cycles"));
    assert_eq!(WritePolicy::parse("copyback"), Some(WritePolicy::CopyBack));
    assert_eq!(WritePolicy::parse("wb"), None);
}
