//! Reclaim's knobs (mm/vmscan.c, mm/rmap.c): the unmap flush and SWAP_CLUSTER_MAX.

use super::*;

pub(super) const KNOBS: &[Knob] = &[
    Knob {
        name: "unmap_flush",
        section: "reclaim",
        needed: Needed::Always,
        allowed: "per-page | batched",
        doc: "how try_to_unmap flushes during reclaim: ptep_clear_flush, one flush and IPI round per \
              page (up to v4.2), or TTU_BATCH_FLUSH, one full-flush round per shrink_page_list \
              batch (v4.3+)",
        apply: |k, v| {
            k.reclaim.unmap_flush = match v {
                "per-page" => UnmapFlush::PerPage,
                "batched" => UnmapFlush::Batched,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "swap_cluster_max",
        section: "reclaim",
        needed: Needed::Always,
        allowed: "pages, 1..=1024 (32 in every release; 256 in Mel Gorman's 2015 v7 4/4)",
        doc: "SWAP_CLUSTER_MAX: pages isolated per shrink_inactive_list batch (COMPACT_CLUSTER_MAX \
              follows it)",
        apply: |k, v| match v.parse::<u32>() {
            Ok(n) if (1..=1024).contains(&n) => {
                k.reclaim.swap_cluster_max = n;
                Ok(())
            }
            _ => Err(None),
        },
    },
];
