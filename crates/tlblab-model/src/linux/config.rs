//! A kernel configuration: knobs by subsystem, each knob defined once in [`KNOBS`] (name, the
//! subsystem it belongs to, allowed values, what it models, how it applies), and presets as TOML
//! files (`kernels/*.toml`, see [`super::preset`]) that set knobs by subsystem section:
//!
//! ```toml
//! description = "v5.18.1 + 'x86/mm/tlb: avoid reading mm_tlb_gen when possible' (v6.0)"
//! inherits = "5.18.1"          # optional: start from a built-in preset
//! merged_in = "6.0"            # optional: the mainline release that merged the change
//! [flush]
//! early_return = true
//! read_tlb_gen = "when-needed"
//! ```
//!
//! A preset without `inherits` must set every knob that applies (no hidden defaults). Knobs apply
//! in [`KNOBS`] order whatever the file's order (the range policy before its parameters).

use crate::linux::arch::ppc::kernel::head_8xx::Version;
use crate::linux::arch::ppc::mm::mmu_8xx::{Ppc8xxKnobs, Writeback};
use crate::linux::arch::x86::mm::tlb::{
    CoalesceIpis, CpumaskUpdate, FlushKnobs, LazyIpis, LazyTest, RangePolicy, ReadTlbGen,
};
use crate::linux::arch::x86::text::TextKnobs;
use crate::linux::include::linux::mm_types::{FaultLock, MmKnobs};
use crate::linux::mm::page_alloc::{PageAllocConfig, PcpDrain, PcpHigh, PcpLists, PcpRefill, ZoneRules};
use crate::linux::mm::vmscan::{ReclaimKnobs, UnmapFlush};

/// A named kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    pub name: String,
    /// What the preset models (its file's `description`).
    pub description: String,
    /// The mainline release that merged the change a patched preset adds (its file's
    /// `merged_in`, e.g. "6.0"); not inherited.
    pub merged_in: Option<String>,
    pub flush: FlushKnobs,
    pub mm: MmKnobs,
    pub text: TextKnobs,
    /// An MPC8xx kernel (its `[ppc8xx]` section); `None` for the x86 kernels.
    pub ppc8xx: Option<Ppc8xxKnobs>,
    /// The page allocator's era: which orders the per-CPU lists hold, batch, high, refill and
    /// drain (linux/mm/page_alloc.rs).
    pub page_alloc: PageAllocConfig,
    /// Page reclaim (linux/mm/vmscan.rs, linux/mm/rmap.rs): how `try_to_unmap` flushes, and
    /// `SWAP_CLUSTER_MAX`.
    pub reclaim: ReclaimKnobs,
    /// Page frames per NUMA node (`node_mib` in `[page_alloc]`): `None` is linux/include/linux/gfp.rs's
    /// `PAGES_PER_NODE`. A reclaim workload scales memory down with it.
    pub node_pages: Option<u64>,
    /// The unscaled machine's pages per node when `node_pages` scales it down (a reclaim
    /// workload's `ram_mib`): boot sizes the watermarks and per-CPU lists for it and reclaim's
    /// scan targets keep its proportion to `SWAP_CLUSTER_MAX` (linux/mm/vmscan.rs).
    pub ram_pages: Option<u64>,
    /// How a node's several zones are used (`zones` in `[page_alloc]`): `None` for a kernel
    /// modelled with one zone per node, which refuses a named machine's zone split (`ram_pages`).
    pub zones: Option<ZoneRules>,
    /// The range policy is derived from the machine for `flushall_shift` presets: `None` means
    /// "use the per-family shift table" (`post_fix` chooses the table).
    pub shift_from_table: Option<bool>,
}

/// Every knob's value by subsystem, as a run records the configuration it ran (result schema 2:
/// the groups of [`KernelConfig`]; schema 1 wrote the flush, mm and text knobs flat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Knobs {
    pub flush: FlushKnobs,
    pub mm: MmKnobs,
    pub text: TextKnobs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppc8xx: Option<Ppc8xxKnobs>,
    pub page_alloc: PageAllocConfig,
    /// `None` for an MPC8xx kernel, which models no reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim: Option<ReclaimKnobs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pages: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram_pages: Option<u64>,
    /// `None` for a kernel with one zone per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<ZoneRules>,
}

/// A knob's value is not among the allowed ones (`None`), or is wrong for another reason.
type Refusal = Option<String>;

/// One knob: its name (as `--set NAME=VALUE` and in a preset's `[section]`), the subsystem
/// section it belongs to, its allowed values, what it models, and how a value applies.
pub struct Knob {
    pub name: &'static str,
    pub section: &'static str,
    pub allowed: &'static str,
    pub doc: &'static str,
    needed: Needed,
    apply: fn(&mut KernelConfig, &str) -> Result<(), Refusal>,
}

/// Whether a preset without `inherits` must set a knob.
#[derive(Clone, Copy)]
enum Needed {
    Always,
    /// Only with `range_policy = "ceiling"`.
    WithCeiling,
    /// Only with `range_policy = "flushall-shift"`.
    WithFlushallShift,
    /// Never: it refines a knob that sets it (`era` sets every allocator rule).
    Refines,
    /// Never: newer than the complete presets, which keep its blank value (the behaviour
    /// before it); the presets that model it set it.
    Newer,
}

fn on_off(v: &str) -> Result<bool, Refusal> {
    match v {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(None),
    }
}

/// Every knob, in the order presets apply them.
pub const KNOBS: &[Knob] = &[
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
        name: "mmap_lock",
        section: "mm",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "faults and mmap/munmap/madvise take mmap_lock; off is an ablation",
        apply: |k, v| on_off(v).map(|b| k.mm.mmap_lock = b),
    },
    Knob {
        name: "fault_lock",
        section: "mm",
        needed: Needed::Refines,
        allowed: "mmap-lock | per-vma",
        doc: "mmap-lock: every fault takes mmap_lock for read (to v6.3); per-vma: v6.4's \
              lock_vma_under_rcu first, anonymous VMAs with an anon_vma only, mmap_lock on failure; \
              munmap write-locks the VMA it removes (default mmap-lock)",
        apply: |k, v| {
            k.mm.fault_lock = match v {
                "mmap-lock" => FaultLock::MmapLock,
                "per-vma" => FaultLock::PerVma,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "munmap_downgrade",
        section: "mm",
        needed: Needed::Refines,
        allowed: "on | off",
        doc: "munmap downgrades mmap_lock to read after detaching the VMA and zaps, flushes and \
              frees under the read lock (v4.20+); off: held for write throughout (default off)",
        apply: |k, v| on_off(v).map(|b| k.mm.munmap_downgrade = b),
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
    Knob {
        name: "kernel_tlb",
        section: "text",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "kernel code and data use the TLB, per linux/arch/x86/text.rs; off = free",
        apply: |k, v| on_off(v).map(|b| k.text.kernel_tlb = b),
    },
    Knob {
        name: "head_8xx",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "2.4 | 2.6",
        doc: "MPC8xx: which head_8xx.S miss handlers (2.4.0 or 2.6.12-rc2) and which dd text/data layouts",
        apply: |k, v| Version::parse(v).map(|v| ppc(k).version = v).ok_or(None),
    },
    Knob {
        name: "pin_tlb",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "MPC8xx CONFIG_PIN_TLB: 8 MB ITLB/DTLB entries at KERNELBASE in the reserved slots (2.6)",
        apply: |k, v| on_off(v).map(|b| ppc(k).pin_tlb = b),
    },
    Knob {
        name: "lose_pinned",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "MPC8xx: the 2.6 bug of seed 003, a tlbie inside the first 8 MB drops the pinned entries",
        apply: |k, v| on_off(v).map(|b| ppc(k).lose_pinned = b),
    },
    Knob {
        name: "switch_tlbia",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "MPC8xx set_context empties the TLBs on a context switch (2.4.0: on; 2.6 ASIDs: off)",
        apply: |k, v| on_off(v).map(|b| ppc(k).switch_tlbia = b),
    },
    Knob {
        name: "hz",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "timer interrupts per second, 1..=10000",
        doc: "MPC8xx HZ (2.4: 100, 2.6: 1000)",
        apply: |k, v| match v.parse::<u32>() {
            Ok(h) if (1..=10_000).contains(&h) => {
                ppc(k).hz = h;
                Ok(())
            }
            _ => Err(None),
        },
    },
    Knob {
        name: "writeback",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "bdflush | pdflush | in-context",
        doc:
            "MPC8xx: who writes dirty pages back: 2.4's bdflush thread, 2.6's pdflush thread (woken over the background threshold), or the writer itself in balance_dirty_pages (2.6 over the dirty threshold)",
        apply: |k, v| {
            ppc(k).writeback = match v {
                "bdflush" => Writeback::Bdflush,
                "pdflush" => Writeback::Pdflush,
                "in-context" => Writeback::InContext,
                _ => return Err(None),
            };
            Ok(())
        },
    },
    Knob {
        name: "writeback_batch",
        section: "ppc8xx",
        needed: Needed::Always,
        allowed: "pages, 1..=100000",
        doc: "MPC8xx: pages per writeback round (2.4 bdflush ndirty in pages; 2.6 the dirty pages pdflush finds per wake-up, or write_chunk in the writer's context)",
        apply: |k, v| match v.parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => {
                ppc(k).writeback_batch = n;
                Ok(())
            }
            _ => Err(None),
        },
    },
    Knob {
        name: "free_before_flush",
        section: "mm",
        needed: Needed::Always,
        allowed: "on | off",
        doc: "UNSAFE: frees pages before the TLB flush; for the oracle",
        apply: |k, v| on_off(v).map(|b| k.mm.free_before_flush = b),
    },
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
        allowed: "six-batch | hopcpu-v5 | low-wmark-per-local-cpu | auto-tune",
        doc: "pcp->high: 6 x batch (v4.9), the 2016 patch's 341, v5.14 zone_highsize(), v6.7's \
              auto-tuning between that and an eighth of the zone per local CPU",
        apply: |k, v| {
            k.page_alloc.high = match v {
                "six-batch" => PcpHigh::SixBatch,
                "hopcpu-v5" => PcpHigh::HopcpuV5,
                "low-wmark-per-local-cpu" => PcpHigh::LowWmarkPerLocalCpu,
                "auto-tune" => PcpHigh::AutoTune,
                _ => return Err(None),
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

/// The subsystem sections a preset file may have.
pub const SECTIONS: &[&str] = &["flush", "mm", "text", "ppc8xx", "page_alloc", "reclaim"];

/// The 8xx knobs, created blank by the first one set (a complete preset sets them all).
fn ppc(k: &mut KernelConfig) -> &mut Ppc8xxKnobs {
    k.ppc8xx.get_or_insert(Ppc8xxKnobs {
        version: Version::V2_6,
        pin_tlb: false,
        lose_pinned: false,
        switch_tlbia: false,
        hz: 100,
        writeback: Writeback::InContext,
        writeback_batch: 1,
    })
}

fn knob_names(section: Option<&str>) -> String {
    KNOBS
        .iter()
        .filter(|k| section.is_none_or(|s| k.section == s))
        .map(|k| k.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl KernelConfig {
    /// Every knob's value (what a run records).
    pub fn knobs(&self) -> Knobs {
        Knobs {
            flush: self.flush,
            mm: self.mm,
            text: self.text,
            ppc8xx: self.ppc8xx,
            page_alloc: self.page_alloc,
            reclaim: self.ppc8xx.is_none().then_some(self.reclaim),
            node_pages: self.node_pages,
            ram_pages: self.ram_pages,
            zones: self.zones,
        }
    }

    /// Sets one knob from `KEY=VALUE` text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let Some(knob) = KNOBS.iter().find(|k| k.name == key) else {
            return Err(format!("unknown knob `{key}`; knobs: {}", knob_names(None)));
        };
        (knob.apply)(self, value).map_err(|r| match r {
            None => format!("knob `{key}`: `{value}` is not allowed; allowed: {}", knob.allowed),
            Some(why) => format!("knob `{key}` {why}"),
        })
    }

    /// A preset from its TOML text. `origin` names the file in errors; `base` resolves
    /// `inherits` (the built-in presets).
    pub fn from_toml(
        name: &str,
        origin: &str,
        text: &str,
        base: impl Fn(&str) -> Result<KernelConfig, String>,
    ) -> Result<KernelConfig, String> {
        Self::from_toml_table(name, origin, text, base).map_err(crate::toml_error::one_line)
    }

    fn from_toml_table(
        name: &str,
        origin: &str,
        text: &str,
        base: impl Fn(&str) -> Result<KernelConfig, String>,
    ) -> Result<KernelConfig, String> {
        let table: toml::Table =
            text.parse().map_err(|e: toml::de::Error| crate::toml_error::describe(origin, text, &e))?;
        let string = |key: &str| -> Result<Option<String>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("{origin}: key `{key}` must be a string")),
            }
        };
        for key in table.keys() {
            let known = ["description", "inherits", "merged_in"].contains(&key.as_str())
                || SECTIONS.contains(&key.as_str());
            if !known {
                return Err(format!(
                    "{origin}: unknown key `{key}`; allowed: description, inherits, merged_in, {}",
                    SECTIONS.join(", ")
                ));
            }
        }
        let inherits = string("inherits")?;
        let mut k = match &inherits {
            Some(b) => base(b).map_err(|e| format!("{origin}: key `inherits`: {e}"))?,
            // Every value is overwritten: completeness is checked below.
            None => blank(),
        };
        k.name = name.to_string();
        k.description = string("description")?.unwrap_or_default();
        k.merged_in = string("merged_in")?;
        if let Some(v) = k.merged_in.as_deref().filter(|v| v.split('.').any(|x| x.parse::<u32>().is_err())) {
            return Err(format!("{origin}: key `merged_in` = \"{v}\": expected a release such as \"6.0\""));
        }
        let mut set = Vec::new();
        for section in SECTIONS {
            let Some(v) = table.get(*section) else { continue };
            let toml::Value::Table(t) = v else {
                return Err(format!("{origin}: key `{section}` must be a table of knobs"));
            };
            if let Some(bad) =
                t.keys().find(|key| !KNOBS.iter().any(|k| k.section == *section && k.name == *key))
            {
                return Err(format!(
                    "{origin}: unknown key `{section}.{bad}`; knobs of [{section}]: {}",
                    knob_names(Some(section))
                ));
            }
        }
        for knob in KNOBS {
            let Some(v) = table.get(knob.section).and_then(|s| s.get(knob.name)) else { continue };
            let key = format!("{}.{}", knob.section, knob.name);
            let value = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
                _ => {
                    return Err(format!(
                        "{origin}: key `{key}`: a string, integer or boolean; allowed: {}",
                        knob.allowed
                    ))
                }
            };
            (knob.apply)(&mut k, &value).map_err(|r| match r {
                None => format!("{origin}: key `{key}`: `{value}` is not allowed; allowed: {}", knob.allowed),
                Some(why) => format!("{origin}: key `{key}` {why}"),
            })?;
            set.push(knob.name);
        }
        if inherits.is_none() {
            let needed = required(&k);
            if let Some(missing) = KNOBS.iter().find(|n| needed(n) && !set.contains(&n.name)) {
                return Err(format!(
                    "{origin}: key `{}.{}` is missing; a preset without `inherits` sets every knob that applies ({})",
                    missing.section,
                    missing.name,
                    missing.allowed
                ));
            }
        }
        Ok(k)
    }
}

/// Which knobs a complete preset must set: an MPC8xx kernel its own section only (the x86
/// flush, mm and text knobs do not apply to it), an x86 one the rest as each knob's `needed`.
fn required(k: &KernelConfig) -> impl Fn(&Knob) -> bool {
    let policy = k.flush.policy;
    let ppc = k.ppc8xx.is_some();
    move |knob| match (knob.section, knob.needed) {
        ("ppc8xx", _) => ppc,
        _ if ppc => false,
        (_, Needed::Always) => true,
        (_, Needed::WithCeiling) => matches!(policy, RangePolicy::Ceiling(_)),
        (_, Needed::WithFlushallShift) => matches!(policy, RangePolicy::FlushallShift { .. }),
        (_, Needed::Refines | Needed::Newer) => false,
    }
}

/// A configuration every knob of which a complete preset overwrites.
fn blank() -> KernelConfig {
    KernelConfig {
        name: String::new(),
        description: String::new(),
        merged_in: None,
        flush: FlushKnobs {
            policy: RangePolicy::AlwaysFull,
            generations: false,
            early_return: false,
            read_tlb_gen: ReadTlbGen::Never,
            concurrent_local: false,
            coalesce_ipis: CoalesceIpis::Off,
            lazy_ipis: LazyIpis::Send,
            pti: false,
            invlpgb: false,
            cpumask: CpumaskUpdate::Eager,
            cpumask_line: false,
            lazy_test: LazyTest::BeforeQueue,
        },
        mm: MmKnobs {
            mmap_lock: false,
            free_before_flush: false,
            fault_lock: FaultLock::MmapLock,
            munmap_downgrade: false,
        },
        text: TextKnobs { kernel_tlb: false },
        ppc8xx: None,
        page_alloc: PageAllocConfig::v4_9(),
        reclaim: ReclaimKnobs::V4_3,
        node_pages: None,
        ram_pages: None,
        zones: None,
        shift_from_table: None,
    }
}
