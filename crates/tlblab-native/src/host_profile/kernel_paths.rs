//! The kernel paths the madvise sweep prices (zap and free, the flush call, madvise's fixed
//! path), and the per-page costs the probe cannot isolate, borrowed and labelled.

use tlblab_model::profile::Sourced;

use super::{estimate, measured};
use crate::probe::ProbeReport;

/// Per-page kernel costs the probe cannot isolate from user space: the x86 profiles' estimates
/// (their reasoning is in `profiles/*.toml`), borrowed and labelled as such.
pub(super) struct Borrowed {
    pub(super) fault_around_page_cycles: Sourced,
    pub(super) page_alloc_cycles: Sourced,
    pub(super) zap_pte_cycles: Sourced,
    /// `[page_alloc]` per-operation costs (the allocator is simulated; these are its rest).
    pub(super) pcp_alloc_cycles: Sourced,
    pub(super) pcp_free_cycles: Sourced,
    pub(super) zone_lock_section_cycles: Sourced,
    pub(super) buddy_block_cycles: Sourced,
}

/// What the madvise sweep gives for the zap/free, flush-call and madvise paths.
pub(super) struct Derived {
    pub(super) page_free_cycles: Sourced,
    pub(super) flush_call_cycles: Sourced,
    pub(super) madvise_call_cycles: Option<Sourced>,
}

pub(super) fn kernel_path_costs(
    r: &ProbeReport,
    sc: Option<&crate::probe::shootdown::ShootdownCosts>,
    tag: &str,
    sd_src: &str,
    mhz: f64,
) -> (Borrowed, Derived) {
    let cyc = |ns: f64| ns * mhz / 1000.0;
    let borrowed = |v: f64, what: &str| {
        estimate(
            v,
            format!(
                "not measurable from user space ({what}): the built-in x86 profiles' estimate, borrowed \
                 (reasoning in profiles/haswell-ep-2s.toml)"
            ),
        )
    };
    let b = Borrowed {
        fault_around_page_cycles: borrowed(100.0, "fault-around is one part of a read fault"),
        page_alloc_cycles: borrowed(
            300.0,
            "memcg charge, rmap and LRU add are one part of the measured first-write fault",
        ),
        zap_pte_cycles: borrowed(60.0, "the zap is one part of the madvise per-page slope"),
        pcp_alloc_cycles: borrowed(100.0, "a per-CPU list allocation is one part of the first-write fault"),
        pcp_free_cycles: borrowed(100.0, "a per-CPU list free is one part of the madvise per-page slope"),
        zone_lock_section_cycles: borrowed(60.0, "zone->lock sections are not timed from user space"),
        buddy_block_cycles: borrowed(30.0, "buddy list moves are not timed from user space"),
    };
    // Above the ceiling the flush is one full flush whatever the count, so the per-page slope
    // is the zap and the free of each page (freed in batches there: the LRU lock and the memcg
    // uncharge are shared, so this is a lower bound for a lone page).
    // The per-CPU list free is simulated (page_alloc.pcp_free_cycles): it leaves the slope too.
    let zap = b.zap_pte_cycles.value;
    let pcp_free = b.pcp_free_cycles.value;
    let free = sc.map(|c| {
        c.slope_above_ns.map(
            |ns| cyc(ns) - zap - pcp_free,
            format!(
                "{} x {mhz:.0} MHz minus zap_pte_cycles ({zap:.0}) and page_alloc.pcp_free_cycles ({pcp_free:.0}), \
                 borrowed estimates",
                c.slope_above_ns.how
            ),
        )
    });
    let page_free_cycles = match free {
        Some(f) if f.resolved => measured(
            f.value,
            format!(
                "{sd_src}: per-page slope alone above the ceiling (zap + free, no INVLPG): {} cycles; batched \
                 frees, a lower bound for a lone page",
                f.describe(0, "")
            ),
        ),
        f => estimate(
            150.0,
            format!(
                "{}the x86 profiles' estimate, borrowed",
                f.map_or("the madvise sweep gave no per-page slope above the ceiling: ".into(), |f| format!(
                    "below resolution ({}): ",
                    f.describe(0, " cycles")
                ))
            ),
        ),
    };
    let sys = r.raw.syscall_ns.median;
    // madvise over none PTEs (no flush, docs/references/machine-costs.md#madvise-fixed-path):
    // its intercept less the syscall is madvise's fixed path, and the written line's intercept
    // less it the flush call's own. Both resolved, or neither is used.
    let split = sc.and_then(|c| {
        let empty = c.intercept_empty_ns.as_ref()?.map(
            |ns| cyc(ns - sys),
            format!(
                "{} minus the measured getppid() round trip ({sys:.0} ns), x {mhz:.0} MHz",
                c.intercept_empty_ns.as_ref()?.how
            ),
        );
        let call =
            c.flush_call_ns.as_ref()?.map(cyc, format!("{}, x {mhz:.0} MHz", c.flush_call_ns.as_ref()?.how));
        (empty.resolved && call.resolved).then_some((empty, call))
    });
    if let Some((empty, call)) = split {
        let ipis = sc.and_then(|c| c.empty_ipis_per_call).map_or(String::new(), |v| {
            format!("; TLB interrupts per 1-page call over none PTEs with the sibling running: {v:.2}")
        });
        let madvise = measured(
            empty.value,
            format!(
                "{sd_src}: madvise(MADV_DONTNEED) of N pages whose PTEs are none (written and zapped before: no \
                 flush on v6.x), {} cycles{ipis}",
                empty.describe(0, "")
            ),
        );
        let flush = measured(
            call.value,
            format!(
                "{sd_src}: madvise of N written pages against N, less the same over none PTEs: {} cycles",
                call.describe(0, "")
            ),
        );
        return (
            b,
            Derived { page_free_cycles, flush_call_cycles: flush, madvise_call_cycles: Some(madvise) },
        );
    }
    let unsplit = sc.and_then(|c| c.flush_call_ns.as_ref()).map_or(String::new(), |_| {
        "; the line over none PTEs did not resolve madvise's fixed path apart".to_string()
    });
    let call = sc.map(|c| {
        c.intercept_below_ns.map(
            |ns| cyc(ns - sys),
            format!(
                "{} minus the measured getppid() round trip ({sys:.0} ns), x {mhz:.0} MHz",
                c.intercept_below_ns.how
            ),
        )
    });
    let flush_call_cycles = match call {
        Some(f) if f.resolved => measured(
            f.value,
            format!(
                "{sd_src}: {} cycles; also holds madvise's own fixed path, which the model has no other key for{unsplit}",
                f.describe(0, "")
            ),
        ),
        f => estimate(
            714.0,
            format!(
                "{tag}: {}DH14's Ivy Bridge flush_tlb_mm_range() call overhead (714 cycles), borrowed",
                f.map_or("the madvise sweep gave no intercept: ".into(), |f| format!(
                    "below resolution ({}): ",
                    f.describe(0, " cycles")
                ))
            ),
        ),
    };
    (b, Derived { page_free_cycles, flush_call_cycles, madvise_call_cycles: None })
}
