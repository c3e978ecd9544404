use super::*;

#[test]
fn a_page_table_covers_2_mib_and_each_has_its_own_lock() {
    // The FIFO hand-off is SpinLock's (hw/lock.rs tests it); here, which lock an address takes.
    let mut l = PtLocks::default();
    let base = 0x7f00_0000_0000u64;
    l.of(base).release_at(Ps(1_000));
    assert_eq!(l.of(base + (2 << 20) - 4096).free_at(), Ps(1_000), "the table's last page");
    assert_eq!(l.of(base + (2 << 20)).free_at(), Ps::ZERO, "the next table");
    assert_eq!(l.of(base - 4096).free_at(), Ps::ZERO, "the table before");
}
