use crate::run::{run, RunResult, RunSpec};
use crate::time::Ps;

const MACHINE: &str = "kunpeng920-2s128";

/// The move-pages loop (256 pages) on the Kunpeng 920 with `preset`.
fn moves(preset: &str) -> RunResult {
    let spec = RunSpec::of(preset, "move-pages", 1, Ps::MS * 2, Ps::MS * 10);
    run(&crate::profile::shipped(MACHINE), &spec).unwrap()
}

#[test]
fn per_page_each_unmap_waits_for_a_dsb_batched_one_dsb_per_batch() {
    let (p, b) = (moves("6.6-arm64"), moves("6.6-arm64+batch"));
    let (pc, bc) = (&p.counters, &b.counters);
    for r in [&p, &b] {
        assert!(r.operations() >= 2, "{} loops", r.operations());
        assert_eq!(r.oracle.violations, 0);
        // Every page moved twice per loop, one batch per move_pages.
        let c = &r.counters;
        assert!(c["pgmigrate_success"].abs_diff(512 * r.operations()) <= 256, "{}", c["pgmigrate_success"]);
        assert!(c["migrate_batches"].abs_diff(2 * r.operations()) <= 1);
    }
    // Per page: a flush (TLBI + DSB) per unmapped PTE, nothing posted.
    assert_eq!(pc["reclaim_page_flushes"], pc["reclaim_unmapped_ptes"]);
    assert_eq!(pc.get("batched_tlbis").copied().unwrap_or(0), 0);
    assert!(pc["dsb_ish"] >= pc["reclaim_unmapped_ptes"]);
    // Batched: every TLBI posted, one DSB per batch.
    assert_eq!(bc["batched_tlbis"], bc["reclaim_unmapped_ptes"]);
    assert_eq!(bc.get("reclaim_page_flushes").copied().unwrap_or(0), 0);
    assert!(bc["batch_dsbs"].abs_diff(bc["migrate_batches"]) <= 1, "{} batch DSBs", bc["batch_dsbs"]);
    assert!(b.metric.value < p.metric.value, "{} s batched vs {} s per page", b.metric.value, p.metric.value);
}
