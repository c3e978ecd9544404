use super::*;
use crate::workload::region_loop::RegionLoop;

#[test]
fn parses_its_parameters_and_refuses_bad_ones() {
    let w = MadvPageout::parse("madv-pageout size_kib=64 loops=10 cpu=4").unwrap().unwrap();
    assert_eq!(w, MadvPageout(RegionLoop { size_kib: 64, loops: 10, cpu: 4 }));
    assert_eq!(w.name(), "madv-pageout size_kib=64 loops=10 cpu=4");
    assert_eq!(MadvPageout::parse("madv-pageout").unwrap().unwrap().name(), "madv-pageout");
    let e = MadvPageout::parse("madv-pageout size_kib=3").unwrap().unwrap_err();
    assert!(e.contains("size_kib") && e.contains("4..=65536"), "{e}");
    assert!(MadvPageout::parse("madv-pageout foo=1").unwrap().is_err());
    assert!(MadvPageout::parse("vm-scalability").is_none());
}

/// The benchmark on `machine` with `preset`, 60 loops' worth of warm-up and window.
fn pageout(machine: &str, preset: &str) -> crate::run::RunResult {
    let spec = crate::run::RunSpec::of(preset, "madv-pageout", 1, Ps::MS * 5, Ps::MS * 40);
    crate::run::run(&crate::profile::shipped(machine), &spec).unwrap()
}

#[test]
fn each_loop_swaps_every_page_in_and_out_through_zram_same_filled_pages() {
    let r = pageout("snapdragon888", "6.6-arm64");
    let c = &r.counters;
    let loops = r.operations() as f64;
    assert!(loops >= 20.0, "{loops} loops");
    for k in ["pswpout", "pswpin", "zram_same_pages", "page_faults", "reclaim_unmapped_ptes"] {
        let per = c[k] as f64 / loops;
        assert!((per - 256.0).abs() < 8.0, "{k}: {per:.1} per loop");
    }
    assert_eq!(c["pswpout"], c["zram_same_pages"], "every page is same-filled: nothing compressed");
    assert_eq!(r.oracle.violations, 0);
    assert_eq!(c.get("ipis_sent").copied().unwrap_or(0), 0);
}

#[test]
fn per_page_each_unmap_is_a_tlbi_and_a_dsb_batched_one_dsb_ends_each_madvise() {
    for machine in ["snapdragon888", "kunpeng920-2s128"] {
        let per_page = pageout(machine, "6.6-arm64");
        let batched = pageout(machine, "6.6-arm64+batch");
        let (p, b) = (&per_page.counters, &batched.counters);
        // Per page: one flush (TLBI + DSB) per unmapped PTE, plus tlb_end_vma's range flush
        // of the young PTEs madvise made old (one per loop).
        assert_eq!(p["reclaim_page_flushes"], p["reclaim_unmapped_ptes"]);
        assert_eq!(p.get("batched_tlbis").copied().unwrap_or(0), 0);
        let range_flushes = p["arm64_flushes"] - p["reclaim_page_flushes"];
        assert!(
            range_flushes.abs_diff(per_page.operations()) <= 1,
            "{machine}: {range_flushes} range flushes"
        );
        // Batched: every unmap's TLBI posted, one DSB per reclaim_pages (one per loop).
        assert_eq!(b["batched_tlbis"], b["reclaim_unmapped_ptes"]);
        assert_eq!(b.get("reclaim_page_flushes").copied().unwrap_or(0), 0);
        assert!(
            b["batch_dsbs"].abs_diff(batched.operations()) <= 1,
            "{machine}: {} batch DSBs",
            b["batch_dsbs"]
        );
        // And the loop is faster.
        assert!(
            batched.metric.value < per_page.metric.value,
            "{machine}: {} s batched vs {} s per page",
            batched.metric.value,
            per_page.metric.value
        );
        assert_eq!(per_page.oracle.violations + batched.oracle.violations, 0);
    }
}
