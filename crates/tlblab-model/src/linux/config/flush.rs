//! The x86 flush protocol's knobs (arch/x86/mm/tlb.c, kernel/smp.c): the range policy and its parameters, generations, the handler's early return, the sender's rules (local flush, IPI coalescing, lazy CPUs), PTI, mm_cpumask upkeep, INVLPGB.

use super::*;

pub(super) const KNOBS: &[Knob] = &[
    Knob {
        name: "range_policy",
        section: "flush",
        needed: Needed::Always,
        allowed: "always-full | flushall-shift | ceiling",
        doc: "how flush_tlb_mm_range chooses INVLPGs or a full flush: v3.4, v3.6-v3.13, v3.17+",
        apply: |k, v| {
            k.flush.policy = match v {
                "always-full" => RangePolicy::AlwaysFull,
                "ceiling" => RangePolicy::Ceiling(33),
                "flushall-shift" => {
                    k.shift_from_table.get_or_insert(true);
                    RangePolicy::FlushallShift { shift: 6, post_fix: true, huge_walk: false }
                }
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "ceiling",
        section: "flush",
        needed: Needed::WithCeiling,
        allowed: "pages, e.g. 33",
        doc: "tlb_single_page_flush_ceiling (v3.17+; sets range_policy=ceiling)",
        apply: |k, v| {
            k.flush.policy = RangePolicy::Ceiling(v.parse().map_err(|_| None)?);
            Ok(())
        },
    },
    Knob {
        name: "flushall_shift",
        section: "flush",
        needed: Needed::WithFlushallShift,
        allowed: "-1..63 | table | table-postfix",
        doc: "tlb_flushall_shift (v3.6-v3.13), or the per-family table (pre- or post-fix)",
        apply: |k, v| {
            let (post_fix, huge_walk) = match k.flush.policy {
                RangePolicy::FlushallShift { post_fix, huge_walk, .. } => (post_fix, huge_walk),
                _ => (true, false),
            };
            if v == "table" || v == "table-postfix" {
                k.shift_from_table = Some(v == "table-postfix");
                k.flush.policy =
                    RangePolicy::FlushallShift { shift: 6, post_fix: v == "table-postfix", huge_walk };
                return Ok(());
            }
            let shift: i8 = v.parse().map_err(|_| None)?;
            if !(-1..=63).contains(&shift) {
                return Err(None);
            }
            k.shift_from_table = None;
            k.flush.policy = RangePolicy::FlushallShift { shift, post_fix, huge_walk };
            Ok(())
        },
    },
    Knob {
        name: "post_fix",
        section: "flush",
        needed: Needed::WithFlushallShift,
        allowed: "on | off",
        doc: "Mel Gorman's v3.14 flushall-shift formula",
        apply: |k, v| {
            let v = on_off(v)?;
            match &mut k.flush.policy {
                RangePolicy::FlushallShift { post_fix, .. } => {
                    *post_fix = v;
                    if let Some(t) = &mut k.shift_from_table {
                        *t = v;
                    }
                    Ok(())
                }
                _ => Err(Some("applies only with range_policy=flushall-shift".into())),
            }
        },
    },
    Knob {
        name: "huge_walk",
        section: "flush",
        needed: Needed::WithFlushallShift,
        allowed: "on | off",
        doc: "the has_large_page() walk of v3.6-v3.13",
        apply: |k, v| {
            let v = on_off(v)?;
            match &mut k.flush.policy {
                RangePolicy::FlushallShift { huge_walk, .. } => {
                    *huge_walk = v;
                    Ok(())
                }
                _ => Err(Some("applies only with range_policy=flushall-shift".into())),
            }
        },
    },
    Knob {
        name: "range_cpus",
        section: "flush",
        needed: Needed::Refines,
        allowed: "on | off",
        doc: "with flushall-shift: the pages to flush times the CPUs in mm_cpumask against the \
              balance point (Mel Gorman's v1 patch of Dec 2013, dropped in v2; never merged)",
        apply: |k, v| {
            let v = on_off(v)?;
            match k.flush.policy {
                RangePolicy::FlushallShift { .. } => {
                    k.flush.range_cpus = v;
                    Ok(())
                }
                _ if !v => {
                    k.flush.range_cpus = false;
                    Ok(())
                }
                _ => Err(Some("applies only with range_policy=flushall-shift".into())),
            }
        },
    },
    Knob {
        name: "early_return",
        section: "flush",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "flush_tlb_func returns at once when the request is already covered (v6.0+)",
        apply: |k, v| on_off(v).map(|b| k.flush.early_return = b),
    },
    Knob {
        name: "read_tlb_gen",
        section: "flush",
        needed: Needed::Always,
        allowed: "always | when-needed | never",
        doc: "when flush_tlb_func reads mm->context.tlb_gen (v4.14-v5.19 | v6.0+ | seed 002's fourth column)",
        apply: |k, v| {
            k.flush.read_tlb_gen = match v {
                "always" => ReadTlbGen::Always,
                "when-needed" => ReadTlbGen::WhenNeeded,
                "never" => ReadTlbGen::Never,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "remote_drain",
        section: "flush",
        needed: Needed::Newer,
        allowed: "per-entry | max-gen",
        doc: "how a remote CPU runs the flush requests one interrupt took: per-entry (every kernel: \
              flush_tlb_func and the ack per request) or max-gen (seed 002's unmerged proposal: \
              walk them, flush once to the largest new_tlb_gen without reading mm->tlb_gen, then ack)",
        apply: |k, v| {
            k.flush.remote_drain = match v {
                "per-entry" => RemoteDrain::PerEntry,
                "max-gen" => RemoteDrain::MaxGen,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "concurrent_local",
        section: "flush",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "the initiator flushes locally while remote handlers run (v5.13+)",
        apply: |k, v| on_off(v).map(|b| k.flush.concurrent_local = b),
    },
    Knob {
        name: "generations",
        section: "flush",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "the v4.14+ tlb_gen protocol; off = the v3.x handler",
        apply: |k, v| on_off(v).map(|b| k.flush.generations = b),
    },
    Knob {
        name: "coalesce_ipis",
        section: "flush",
        needed: Needed::Always,
        allowed: "on | lone | off",
        doc: "IPI only to CPUs whose call queue was empty: on = every call (v4.13+); lone = only a \
              call with one target (v3.9-v4.12); off = never (v3.4)",
        apply: |k, v| {
            k.flush.coalesce_ipis = match v {
                "on" | "true" | "1" => CoalesceIpis::On,
                "lone" => CoalesceIpis::Lone,
                "off" | "false" | "0" => CoalesceIpis::Off,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "lazy_ipis",
        section: "flush",
        needed: Needed::Always,
        allowed: "send | skip",
        doc: "send: v3.x-v4.19, lazy CPUs get flush IPIs and leave the mm; skip: v4.20+, only when \
              page tables were freed",
        apply: |k, v| {
            k.flush.lazy_ipis = match v {
                "send" => LazyIpis::Send,
                "skip" => LazyIpis::Skip,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "lazy_test",
        section: "flush",
        needed: Needed::Newer,
        allowed: "before-queue | in-queue",
        doc: "when a target's laziness is tested: before-queue (6035152d8eeb, v5.13-v5.18-rc1: \
              one mask before any request is queued) or in-queue (v4.20-v5.12 and after the revert \
              d39268ad24c0: per target as the enqueue loop reaches it)",
        apply: |k, v| {
            k.flush.lazy_test = match v {
                "before-queue" => LazyTest::BeforeQueue,
                "in-queue" => LazyTest::InQueue,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "cpumask",
        section: "flush",
        needed: Needed::Newer,
        allowed: "eager | lazy | lazy-trim",
        doc: "mm_cpumask upkeep: eager (v4.14-v6.13, the switch clears the old mm's bit), lazy \
              (v6.14 209954cbc7d0: a flush IPI clears it), lazy-trim (v6.14 6db2526c1d69: flushes \
              skip CPUs running another mm but once a second)",
        apply: |k, v| {
            k.flush.cpumask = match v {
                "eager" => CpumaskUpdate::Eager,
                "lazy" => CpumaskUpdate::Lazy,
                "lazy-trim" => CpumaskUpdate::LazyTrim,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "cpumask_line",
        section: "flush",
        needed: Needed::Newer,
        allowed: "on | off",
        doc: "charge mm_cpumask as a coherent line: a switch's set/clear is an atomic RMW, a flush's \
              scan a read (the v6.14 presets' cost side)",
        apply: |k, v| {
            k.flush.cpumask_line = on_off(v)?;
            Ok(())
        },
    },
    Knob {
        name: "pti",
        section: "flush",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "v4.15+ page-table isolation, where the machine profile says the CPU needs it",
        apply: |k, v| on_off(v).map(|b| k.flush.pti = b),
    },
    Knob {
        name: "invlpgb",
        section: "flush",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "v6.15+ broadcast flushing: global ASIDs and INVLPGB/TLBSYNC instead of IPIs for mms \
              running on 4 or more CPUs, and for reclaim's batch, where the CPU has INVLPGB",
        apply: |k, v| on_off(v).map(|b| k.flush.invlpgb = b),
    },
];
