use super::*;

#[test]
fn a_page_table_covers_2_mib_and_each_has_its_own_lock() {
    let mut l = PtLocks::default();
    let base = 0x7f00_0000_0000u64;
    let hw = crate::hw::topology::Topology { sockets: 1, cores_per_socket: 2, threads_per_core: 1 };
    let c = crate::hw::coherence::LineCosts {
        hit: Ps(1),
        smt_sibling: Ps(10),
        same_socket: Ps(50),
        cross_socket: Ps(130),
        uncached: Ps(20),
        home: Ps::ZERO,
    };
    // CPU 0 holds the lock of [base, base + 2 MiB) from 20 to 1,020.
    assert_eq!(l.of(base).acquire(0, Ps(0), Ps(1_000), &hw, &c), Ps(20));
    // CPU 1 at the table's last page waits for it and takes the word's line over.
    assert_eq!(l.of(base + (2 << 20) - 4096).acquire(1, Ps(100), Ps(10), &hw, &c), Ps(1_020 + 50));
    // The next table's lock is another word: free at once.
    assert_eq!(l.of(base + (2 << 20)).acquire(1, Ps(100), Ps(10), &hw, &c), Ps(120));
}
