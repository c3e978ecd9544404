//! Reclaim's knobs (mm/vmscan.c, mm/rmap.c, mm/workingset.c, mm/memcontrol.c): the unmap flush,
//! SWAP_CLUSTER_MAX, workingset detection, how fresh the statistics reclaim reads are and the page cache's folios.

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
    Knob {
        name: "workingset",
        section: "reclaim",
        needed: Needed::Newer,
        allowed: "none | activate | activate-and-deactivate",
        doc: "workingset detection (mm/workingset.c): none (before v3.15), activate (v3.15+: reclaim \
              leaves shadow entries and a refault closer than the active file list's size starts \
              active), activate-and-deactivate (v4.20+: also, a reclaim that finds activating \
              refaults since the last one deactivates the active file list whatever its size)",
        apply: |k, v| {
            k.reclaim.workingset = match v {
                "none" => Workingset::None,
                "activate" => Workingset::Activate,
                "activate-and-deactivate" => Workingset::ActivateAndDeactivate,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "memcg_stats",
        section: "reclaim",
        needed: Needed::Newer,
        allowed: "exact | ratelimited",
        doc: "what reclaim's inactive:active test, its refaults-since-last-reclaim test and the \
              refault distance test read of the lists and the activated refaults (mm/memcontrol.c \
              lruvec_page_state): exact (up to v6.11: per-CPU batches, or reclaim flushing them), \
              ratelimited (v6.12+: as the periodic 2-s flush left them; reclaim and refaults flush \
              only when it is a full period late)",
        apply: |k, v| {
            k.reclaim.memcg_stats = match v {
                "exact" => MemcgStats::Exact,
                "ratelimited" => MemcgStats::Ratelimited,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "file_folios",
        section: "reclaim",
        needed: Needed::Newer,
        allowed: "small | large",
        doc: "the folios the workloads' disk files are read into: small (single pages; ext4 before \
              v6.16), large (v6.16+ ext4: readahead reads each window in folios of its order, 0 for \
              a read-around, 2 more at each window pushed forward, up to PMD order; one LRU entry, \
              one referenced state and one shadow per folio)",
        apply: |k, v| {
            k.reclaim.file_folios = match v {
                "small" => FileFolios::Small,
                "large" => FileFolios::Large,
                _ => return Err(None),
            };
            Ok(())
        },
    },
];
