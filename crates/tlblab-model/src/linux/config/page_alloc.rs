//! The page allocator's knobs (mm/page_alloc.c): the era that sets every rule, and each rule alone.

use super::*;

pub(super) const KNOBS: &[Knob] = &[
    Knob {
        name: "era",
        section: "page_alloc",
        needed: Needed::Always,
        allowed: "4.9 | 4.9-hopcpu | 5.14 | 6.7",
        doc: "the page allocator's per-CPU list rules: v2.6.24-v5.13 order 0 only (4.9), the 2016 \
              high-order patch v5 (4.9-hopcpu), v5.14+ orders 0-3 and THP (5.14), v6.7's PCP high \
              auto-tuning with scaled refills and drains (6.7); the knobs below refine it",
        apply: |k, v| {
            k.page_alloc = PageAllocConfig::preset(v).map_err(|_| None)?;
            Ok(())
        },
    },
    Knob {
        name: "pcp_lists",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "order0 | hopcpu-v5 | v5-14",
        doc: "which orders the per-CPU lists hold and how an order picks its list",
        apply: |k, v| {
            k.page_alloc.pcp_lists = match v {
                "order0" => PcpLists::Order0,
                "hopcpu-v5" => PcpLists::HopcpuV5,
                "v5-14" => PcpLists::V5_14,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "batch_cap_kib",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "KiB, 4..1048576 (512 up to v5.13, 1024 from v5.14)",
        doc: "zone_batchsize()'s cap on the per-CPU batch",
        apply: |k, v| {
            let kib: u64 = v.parse().map_err(|_| None)?;
            if !(4..=1 << 20).contains(&kib) {
                return Err(None);
            }
            k.page_alloc.batch_cap_kib = kib;
            Ok(())
        },
    },
    Knob {
        name: "pcp_high",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "six-batch | hopcpu-v5 | low-wmark-per-local-cpu | auto-tune | pages 1..=1048576",
        doc: "pcp->high: 6 x batch (v4.9), the 2016 patch's 341, v5.14 zone_highsize(), v6.7's \
              auto-tuning between that and an eighth of the zone per local CPU, or a fixed count \
              of pages (as vm.percpu_pagelist_fraction set it by hand, batch unchanged)",
        apply: |k, v| {
            k.page_alloc.high = match v {
                "six-batch" => PcpHigh::SixBatch,
                "hopcpu-v5" => PcpHigh::HopcpuV5,
                "low-wmark-per-local-cpu" => PcpHigh::LowWmarkPerLocalCpu,
                "auto-tune" => PcpHigh::AutoTune,
                _ => match v.parse::<u64>() {
                    Ok(n) if (1..=1 << 20).contains(&n) => PcpHigh::Pages(n),
                    _ => return Err(None),
                },
            };
            Ok(())
        },
    },
    Knob {
        name: "pcp_refill",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "batch | batch-shifted-by-order | alloc-factor",
        doc: "blocks rmqueue_bulk takes on an empty list: batch (v4.9, 2016), max(batch >> order, 2) \
              (v5.14), order 0 scaled by v6.7's alloc_factor (c0a242394cb9)",
        apply: |k, v| {
            k.page_alloc.refill = match v {
                "batch" => PcpRefill::Batch,
                "batch-shifted-by-order" => PcpRefill::BatchShiftedByOrder,
                "alloc-factor" => PcpRefill::AllocFactor,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "pcp_drain",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "batch-entries | batch-pages | free-factor | free-high",
        doc: "what free_pcppages_bulk frees at count >= high: batch entries (v4.9), batch base pages \
              (2016), nr_pcp_free() (v5.13+), v6.7's nr_pcp_free() with high-order free runs",
        apply: |k, v| {
            k.page_alloc.drain = match v {
                "batch-entries" => PcpDrain::BatchEntries,
                "batch-pages" => PcpDrain::BatchPages,
                "free-factor" => PcpDrain::FreeFactor,
                "free-high" => PcpDrain::FreeHigh,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "batch_scale_max",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "0..=6 (CONFIG_PCP_BATCH_SCALE_MAX, v6.7 default 5), or none (before v6.7: no limit)",
        doc: "the largest free_factor / alloc_factor: drains and refills of at most batch << it \
              (52166607ecc9)",
        apply: |k, v| {
            k.page_alloc.batch_scale_max = match v {
                "none" => None,
                _ => {
                    let m: u32 = v.parse().map_err(|_| None)?;
                    if m > crate::linux::mm::page_alloc::PCP_BATCH_SCALE_MAX_LIMIT {
                        return Err(None);
                    }
                    Some(m)
                }
            };
            Ok(())
        },
    },
    Knob {
        name: "drain_picks_outside_lock",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "on | off",
        doc: "free_pcppages_bulk picks the pages before taking zone->lock (v4.18+)",
        apply: |k, v| on_off(v).map(|b| k.page_alloc.drain_picks_outside_lock = b),
    },
    Knob {
        name: "min_free_kbytes_max",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "KiB, 128..1048576 (65536 up to v5.6, 262144 from v5.7)",
        doc: "the upper clamp of the boot-time min_free_kbytes",
        apply: |k, v| {
            let kib: u64 = v.parse().map_err(|_| None)?;
            if !(128..=1 << 20).contains(&kib) {
                return Err(None);
            }
            k.page_alloc.min_free_kbytes_max = kib;
            Ok(())
        },
    },
    Knob {
        name: "watermark_scale_factor",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "0..1000 (0: the pre-v4.6 low = min + min/4, high = min + min/2; default 10 since v4.6)",
        doc: "the watermark gap in 1/10000 of the zone (v4.6+)",
        apply: |k, v| {
            let f: u64 = v.parse().map_err(|_| None)?;
            if f > 1000 {
                return Err(None);
            }
            k.page_alloc.watermark_scale_factor = f;
            Ok(())
        },
    },
    Knob {
        name: "node_mib",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "MiB, 16..=4096, a multiple of 4 (default 4096: linux/include/linux/gfp.rs PAGES_PER_NODE)",
        doc: "memory per NUMA node; reclaim workloads scale the machine's memory down with it",
        apply: |k, v| {
            let mib: u64 = v.parse().map_err(|_| None)?;
            if !(16..=4096).contains(&mib) || mib % 4 != 0 {
                return Err(None);
            }
            k.node_pages = Some(mib << 8);
            Ok(())
        },
    },
    Knob {
        name: "zones",
        section: "page_alloc",
        needed: Needed::Refines,
        allowed: "v4.2 | none",
        doc: "how a node's several zones are used (a workload's ram_mib= gives the named machine \
              x86-64's ZONE_DMA32 and ZONE_NORMAL): v4.2 (v3.12..v4.7: per-zone LRUs, watermarks \
              with lowmem_reserve, per-CPU lists and reclaim, the fair zone allocation policy); \
              none: one zone per node, ram_mib= refused",
        apply: |k, v| {
            k.zones = match v {
                "v4.2" => Some(ZoneRules::V4_2),
                "none" => None,
                _ => return Err(None),
            };
            Ok(())
        },
    },
];
