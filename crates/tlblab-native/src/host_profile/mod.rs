//! A machine profile of the host built from the probe's measurements alone. No workload-level
//! figure (ops/s, IPIs per operation of a benchmark) feeds it: `validate` compares against
//! exactly those, so using them here would make the comparison circular.
//!
//! Every number cites what was measured, the median of how many runs, and the date. Numbers the
//! probe cannot measure from user space say what was assumed and carry `estimate`.

use tlblab_model::hw::ipi::ApicMode;
use tlblab_model::hw::tlb::{Inclusion, Replacement, Serves};
use tlblab_model::profile::{
    Coherence, Confidence, Cpu, Features, Ipi, KernelCosts, MachineProfile, Memory, PageAllocProfile,
    Sourced, Tlb, Topology, Walk, WalkKind, SCHEMA_VERSION, STEP_FACTORS,
};

use crate::probe::ProbeReport;

mod kernel_paths;
pub mod sections;
pub mod spread;
mod tlb;

use kernel_paths::kernel_path_costs;
use sections::{fs_section, ipc_section, net_section, uncore_section};

fn measured(value: f64, source: String) -> Sourced {
    Sourced { value, source, confidence: Confidence::Measured }
}

fn estimate(value: f64, source: impl Into<String>) -> Sourced {
    Sourced { value, source: source.into(), confidence: Confidence::Estimate }
}

/// Builds the host profile named `name` from a probe report. Whatever the host did, it gives a
/// valid profile: a figure the probe could not measure or derive is a labelled fallback, listed
/// in [`Built::warnings`].
pub fn build(r: &ProbeReport, name: &str) -> Result<Built, String> {
    let h = &r.host;
    let vm = h.hypervisor.as_ref().map_or_else(|| "bare metal".to_string(), |v| format!("{v} guest"));
    let tag = format!("tlblab probe {} on {} ({vm}, Linux {})", r.date, h.model_name, h.kernel);
    let spread = |s: &crate::stats::Summary| format!("median over blocks, {}", s.spread_text(2, ""));
    let mhz = r.clock.mhz;
    let cyc = |ns: f64| ns * mhz / 1000.0;
    let cache = |lvl: &str| r.raw.cache.iter().find(|c| c.name == lvl);
    let cache_src = |lvl: &str| {
        cache(lvl).map_or_else(String::new, |c| {
            format!(
                "{tag}: random pointer chase over every line of a {} KiB working set{}, {}",
                c.working_set >> 10,
                if h.thp_usable() { " on huge pages" } else { " (4 KiB pages)" },
                spread(&c.ns)
            )
        })
    };
    // A level the ladder did not measure (sysfs gave no cache sizes, or the chase failed) falls
    // back to a labelled x86 figure in cycles at the clock taken.
    let mut warnings: Vec<String> = Vec::new();
    let mut latency = |lvl: &str, typical_cycles: f64| match cache(lvl) {
        Some(c) => (c.ns.median, None),
        None => {
            warnings.push(format!("the cache ladder has no {lvl} latency: {typical_cycles} cycles assumed"));
            (
                typical_cycles * 1000.0 / mhz,
                Some(format!(
                    "{tag}: fallback: the cache ladder measured no {lvl} latency; {typical_cycles} cycles assumed \
                     (x86 cores since Nehalem and Zen: L1D 4-5, L2 12-14, L3 40-70 cycles; vendors' optimization \
                     manuals)"
                )),
            )
        }
    };
    let (l1d_ns, l1d_fb) = latency("L1D", 5.0);
    let (l2_ns, l2_fb) = latency("L2", 14.0);
    let (llc_ns, llc_fb) = latency("LLC", 50.0);
    let cache_key = |ns: f64, value: f64, lvl: &str, fb: &Option<String>| match fb {
        Some(src) => estimate(value, src.clone()),
        None => measured(value, format!("{} = {ns:.2} ns x {mhz:.0} MHz", cache_src(lvl))),
    };

    // TLBs: CPUID first, the chase when CPUID is silent.
    let reach = r.reach_analysis.as_ref();
    let l2_hit = match reach.and_then(|x| x.l2_hit.as_ref()) {
        Some(e) if e.resolved => measured(
            cyc(e.value),
            format!(
                "{tag}: TLB-reach pointer chase, 4K minus THP time per access inside the L2 reach = {:.2} ns x {mhz:.0} \
                 MHz ({}; {})",
                e.value,
                e.describe(2, " ns"),
                reach.map_or("", |x| x.reading.as_str())
            ),
        ),
        e => estimate(
            8.0,
            format!(
                "{}G4 estimate 7-9 cycles, midpoint 8",
                e.map_or("no L2-TLB plateau in the reach sweep: ".into(), |e| format!(
                    "the L2-TLB hit is below the chase's resolution ({}): ",
                    e.describe(2, " ns")
                ))
            ),
        ),
    };
    let mut structures = tlb::structures_from_cpuid(&r.cpuid_tlb, &tag, &l2_hit);
    let has_l1_data = structures.iter().any(|s| s.level == 1 && s.serves != Serves::Instruction);
    if !has_l1_data {
        structures = match reach {
            Some(reach) => tlb::structures_from_reach(reach, &tag, &l2_hit),
            None => {
                let why = "CPUID gave no TLB geometry and the pointer chase found no reach";
                warnings.push(format!("{why}: Skylake's TLBs assumed"));
                tlb::structures_assumed(&tag, why, &l2_hit)
            }
        };
    } else if let Some(x) = reach {
        // Cross-check the CPUID L1 DTLB against the measured reach, in its source.
        for s in structures.iter_mut().filter(|s| s.level == 1 && s.serves == Serves::Data) {
            s.source += &format!("; pointer chase: {}", x.reading);
        }
    }

    let walk = reach.and_then(|x| x.walk.as_ref());
    let walk_cycles = match walk {
        Some(w) if w.resolved => measured(
            cyc(w.value),
            format!(
                "{tag}: TLB-reach chase, page walk with page-table entries cached = {:.2} ns x {mhz:.0} MHz ({})",
                w.value,
                w.describe(2, " ns")
            ),
        ),
        w => estimate(
            15.0 + cyc(l1d_ns),
            format!(
                "{}G4 model 15 cycles + the measured L1D hit ({:.1} cycles)",
                w.map_or("no page-walk plateau in the reach sweep: ".into(), |w| format!(
                    "the walk is below the chase's resolution ({}): ",
                    w.describe(2, " ns")
                )),
                cyc(l1d_ns)
            ),
        ),
    };

    let sc = r.shootdown_costs.as_ref();
    let sd = &r.raw.shootdown;
    let sd_src = format!(
        "{tag}: madvise(MADV_DONTNEED) of N freshly written pages, N = 1..512, alone and with a busy sibling \
         interleaved per N, {} blocks of {} calls per point and condition",
        sd.blocks.len(),
        sd.reps
    );
    let inv = sc.map(|c| &c.invlpg_ns);
    let invlpg_cycles = match inv {
        Some(e) if e.resolved => {
            measured(cyc(e.value), format!("{sd_src}: {} = {:.1} ns x {mhz:.0} MHz", e.describe(1, " ns"), e.value))
        }
        e => estimate(
            150.0,
            format!(
                "{}G3 estimate 100-200 cycles, midpoint 150",
                e.map_or("no shootdown sweep: ".into(), |e| format!(
                    "below resolution: the per-page flush cost does not stand above the blocks' scatter ({}): ",
                    e.describe(1, " ns")
                ))
            ),
        ),
    };
    let full = sc.map(|c| &c.full_flush_ns);
    let full_flush_cycles = match full {
        Some(e) if e.resolved => measured(
            cyc(e.value),
            format!("{sd_src}: {} = {:.0} ns x {mhz:.0} MHz", e.describe(0, " ns"), e.value),
        ),
        e => Sourced {
            value: invlpg_cycles.value,
            source: format!(
                "{}taken equal to one INVLPG (DH14: 'not by much')",
                e.map_or("no shootdown sweep: ".into(), |e| format!(
                    "below resolution: no full-flush cost above the blocks' scatter ({}): ",
                    e.describe(0, " ns")
                ))
            ),
            confidence: Confidence::Estimate,
        },
    };

    let clear_ns = 4096.0 * 1000.0 / r.raw.clear_page_mbps.median;
    let (per_page, paths) = kernel_path_costs(r, sc, &tag, &sd_src, mhz);
    // What the model's simulated allocator charges a fresh page, which the measured new tmpfs
    // page holds too: the per-CPU list and the refill's share (a buddy list move, a struct page).
    let alloc_share = sections::AllocShare {
        pcp_alloc_cycles: per_page.pcp_alloc_cycles.value,
        buddy_block_cycles: per_page.buddy_block_cycles.value,
        struct_page_ns: llc_ns,
    };
    // The probe's first write to an anonymous page pays the fault, the allocation and the
    // clearing: the allocation's share (the per-CPU list and the rest of page_alloc_cycles) is
    // the borrowed estimate, the clearing is measured. The key is the path with a warm page
    // (the model clears at the cache-resident rate), so the recycled-page figure comes first;
    // a fresh region's also pays cold zeroing and a guest's first touches, and stands in only
    // for reports recorded before the warm one was measured.
    let alloc_ns = (per_page.page_alloc_cycles.value + per_page.pcp_alloc_cycles.value) * 1000.0 / mhz;
    let cold = r.raw.faults.first().map(|f| &f.fault_ns);
    let fault_ns = match (&r.raw.fault_warm_ns, cold) {
        (Some(w), _) => measured(
            (w.median - clear_ns - alloc_ns).max(0.0),
            format!(
                "{tag}: first write to a recycled anonymous 4 KiB page, 1 thread: a {}-page mapping mapped, \
                 written and unmapped over and over, so the faults get back the pages the last unmap freed, \
                 cache-warm ({:.0} ns/page, {}) minus clearing one page at the measured clear_page rate \
                 ({clear_ns:.0} ns) minus page_alloc_cycles and page_alloc.pcp_alloc_cycles ({alloc_ns:.0} ns, \
                 borrowed estimates){}",
                crate::probe::fault::WARM_PAGES,
                w.median,
                spread(w),
                cold.map_or(String::new(), |c| format!(
                    "; a fresh region's first writes (cold zeroing, a guest's first touches) cost {:.0} ns/page",
                    c.median
                ))
            ),
        ),
        (None, Some(f)) => measured(
            (f.median - clear_ns - alloc_ns).max(0.0),
            format!(
                "{tag}: first write to a fresh anonymous 4 KiB page, 1 thread ({:.0} ns/page, {}) minus clearing \
                 one page at the measured clear_page rate ({clear_ns:.0} ns) minus page_alloc_cycles and \
                 page_alloc.pcp_alloc_cycles ({alloc_ns:.0} ns, borrowed estimates)",
                f.median,
                spread(f)
            ),
        ),
        (None, None) => {
            warnings.push("the probe has no fault measurement: fault_ns borrowed".into());
            let from = builtin_profile("milan-1s").kernel.fault_ns;
            estimate(
                from.value,
                format!(
                    "{tag}: fallback: no fault measurement; profiles/milan-1s.toml's {:.0} ns, borrowed ({})",
                    from.value, from.source
                ),
            )
        }
    };

    let second_level_fault_ns = r.raw.second_level.as_ref().map(|s| second_level(s, r, clear_ns, &tag));
    let smp = h.cpus.len() > 1;
    // Each ping-pong block is already the median of its batches of round trips (a batch during
    // which either thread was descheduled is an outlier of its block): the median block is
    // the transfer time.
    let c2c = r.raw.c2c_ns.map(|s| s.median);
    let coherence = match (smp, r.raw.c2c_ns) {
        (true, Some(c)) => {
            let src = format!(
                "{tag}: CPU {} <-> CPU {} atomic ping-pong, half a round trip, per block the median of batches of 64 \
                 round trips, median over blocks ({})",
                h.cpus[0],
                h.cpus[1],
                c.spread_text(1, " ns")
            );
            Some(Coherence {
                smt_sibling_ns: if h.threads_per_core > 1 {
                    measured(c.median, format!("{src} (the two CPUs may be SMT siblings: not separated)"))
                } else {
                    estimate(
                        c.median,
                        format!(
                            "no SMT siblings visible: set to the measured same-socket figure (unused). {src}"
                        ),
                    )
                },
                same_socket_ns: measured(c.median, src.clone()),
                cross_socket_ns: estimate(
                    c.median,
                    format!(
                        "{} socket(s) visible: set to the same-socket figure (unused on one socket). {src}",
                        h.sockets
                    ),
                ),
                // No probe of a caching agent's per-address occupancy: no home rule.
                home_ns: None,
            })
        }
        (true, None) => {
            let from =
                builtin_profile("skylake-sp-2s").coherence.expect("a 2-socket profile has [coherence]");
            let ns = from.same_socket_ns.value;
            warnings
                .push(format!("several CPUs but no cache-line transfer measurement: {ns:.0} ns borrowed"));
            let src = format!(
                "{tag}: fallback: no cache-line transfer measured; profiles/skylake-sp-2s.toml's same-socket \
                 figure ({ns:.0} ns), borrowed ({})",
                from.same_socket_ns.source
            );
            Some(Coherence {
                smt_sibling_ns: estimate(ns, src.clone()),
                same_socket_ns: estimate(ns, src.clone()),
                cross_socket_ns: estimate(ns, src),
                home_ns: None,
            })
        }
        (false, _) => None,
    };

    let ipi = if smp {
        let c2c = c2c.unwrap_or(0.0);
        // The remote INVLPG as the profile has it (measured, or its labelled fallback).
        let inv = invlpg_cycles.value * 1000.0 / mhz;
        let rt_e = sc.and_then(|c| c.ipi_round_trip_ns.as_ref().or(c.ipi_round_trip_full_ns.as_ref()));
        let measured_rest = rt_e.map(|e| (e, e.value - inv - 3.0 * c2c));
        // Skylake-SP's split (send + delivery + handler entry), borrowed where the sweep gives none.
        let mut borrowed = |why: String| {
            warnings.push(format!("{why}: the IPI costs are borrowed"));
            let i = builtin_profile("skylake-sp-2s").ipi.expect("a 2-socket profile has [ipi]");
            let r = i.send_ns.value + i.delivery_ns.value + i.handler_entry_ns.value;
            (
                r,
                format!(
                    "{tag}: fallback: {why}; R = {r:.0} ns, profiles/skylake-sp-2s.toml's send + delivery + handler \
                     entry of an IPI, borrowed"
                ),
                false,
            )
        };
        let (rest, rt_src, rest_measured) = match measured_rest {
            Some((e, rest)) => {
                let src = format!(
                    "{sd_src}: IPI round trip = {:.0} ns ({}); minus the remote INVLPG ({inv:.0} ns) and the 3 \
                     simulated csd/ack line transfers (3 x {c2c:.0} ns) leaves R = {rest:.0} ns",
                    e.value,
                    e.describe(0, " ns")
                );
                if rest > 0.0 {
                    (rest, src, true)
                } else {
                    borrowed(format!("{src}: R is not positive, so the measured IPI costs cannot be split"))
                }
            }
            None => borrowed(
                "several CPUs but no IPI round trip measured (the sibling never ran during the sweep)".into(),
            ),
        };
        let target_e = sc.and_then(|c| c.target_cost_ns.as_ref()).filter(|_| rest_measured);
        let target = target_e.map(|t| t.value - inv - 2.0 * c2c).filter(|&t| t > 0.0 && t < rest);
        // The split around the acknowledgement, from membarrier's IPIs where measured
        // (docs/references/machine-costs.md#ipi-entry-and-exit).
        let split = r.raw.irq_split.as_ref().and_then(|m| {
            let share = crate::probe::irq::exit_share(m, r.raw.syscall_ns.median / 2.0, c2c)?;
            Some((
                share,
                format!(
                    "split {:.0}:{:.0} as membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)'s IPIs to a sibling \
                     spinning in user space fall (per run the median of its matched calls; {} calls): the \
                     sibling stops {:.0} ns after the call, loses {:.0} ns, and the call returns {:.0} ns after \
                     it resumes, so after the acknowledgement the sibling spends the caller's exit path \
                     (getppid()'s half, {:.0} ns) and a line transfer less that: {:.0} of {:.0} ns",
                    100.0 * (1.0 - share),
                    100.0 * share,
                    m.matched,
                    m.to_stop_ns.median,
                    m.lost_ns.median,
                    m.after_ns.median,
                    r.raw.syscall_ns.median / 2.0,
                    share * (m.lost_ns.median - 2.0 * c2c),
                    m.lost_ns.median - 2.0 * c2c
                ),
            ))
        });
        let (entry, exit, handler_conf, handler_src) = match target {
            Some(t) => {
                let (share, how) = split.unwrap_or_else(|| {
                    (1.0 / 3.0, "split 2:1 (assumed, as every profile: exit = half of entry)".to_string())
                });
                (
                    t * (1.0 - share),
                    t * share,
                    Confidence::Measured,
                    format!(
                        "the sibling's lost time per flush IPI ({}) minus the remote INVLPG and 2 line transfers \
                         = {t:.0} ns of interrupt entry + exit, {how}",
                        target_e.map_or(String::new(), |e| e.describe(0, " ns"))
                    ),
                )
            }
            None => (
                rest * 0.5,
                rest * 0.25,
                Confidence::Estimate,
                "no usable sibling-slowdown figure: entry = 50% of R and exit = half of entry (the split every \
                 profile uses)"
                    .to_string(),
            ),
        };
        let sd = rest - entry;
        let ipi_src = |part: &str| format!("{rt_src}; {handler_src}; {part}");
        let x2apic = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.contains(" x2apic"));
        Some(Ipi {
            apic_mode: if x2apic { ApicMode::X2apicPhysical } else { ApicMode::XapicFlat },
            apic_source: format!(
                "{tag}: CPU flags {} x2apic; Linux's APIC routing is not visible from user space, so the mode is \
                 assumed (with {} CPUs every mode sends one ICR write per target)",
                if x2apic { "include" } else { "lack" },
                h.cpus.len()
            ),
            apic_confidence: Confidence::Estimate,
            send_ns: estimate(sd * 0.2, ipi_src(&format!("send = 20% of R - entry = {sd:.0} ns (the 10:40 split of every profile)"))),
            delivery_ns: estimate(sd * 0.8, ipi_src(&format!("delivery = 80% of R - entry = {sd:.0} ns"))),
            handler_entry_ns: Sourced {
                value: entry,
                source: ipi_src("handler entry"),
                confidence: handler_conf,
            },
            handler_exit_ns: Sourced { value: exit, source: ipi_src("handler exit"), confidence: handler_conf },
        })
    } else {
        None
    };

    let switch = sections::context_switch(r, &tag, &mut warnings);
    let features_src = format!(
        "{tag}: CPUID.1:ECX[17] PCID, CPUID.7:EBX[10] INVPCID, CPUID 0x80000008 EBX[3] INVLPGB; PTI from \
         /sys/devices/system/cpu/vulnerabilities/meltdown"
    );
    let profile = MachineProfile {
        schema_version: SCHEMA_VERSION,
        name: name.to_string(),
        description: format!(
            "The host as measured by tlblab probe on {}: {} (family {} model {}), {} CPUs, {vm}, Linux {}{}",
            r.date,
            h.model_name,
            h.family,
            h.model,
            h.cpus.len(),
            h.kernel,
            if r.quick { " (quick probe)" } else { "" }
        ),
        cpu: Cpu {
            vendor: h.vendor.clone(),
            model_name: h.model_name.clone(),
            family: h.family,
            model: h.model,
            clock_mhz: Sourced {
                value: mhz,
                source: format!("{tag}: {}", r.clock.source),
                confidence: if r.clock.measured { Confidence::Measured } else { Confidence::Estimate },
            },
            features: Features {
                pcid: h.pcid,
                invpcid: h.invpcid,
                pti: h.pti,
                invlpgb: h.invlpgb,
                invlpgb_count_max: h.invlpgb.then_some(h.invlpgb_count_max),
                source: features_src,
                confidence: Confidence::Measured,
            },
        },
        topology: Topology {
            sockets: h.sockets,
            cores_per_socket: h.cores_per_socket,
            threads_per_core: h.threads_per_core,
            source: format!(
                "{tag}: sysfs topology (physical_package_id, thread_siblings_list) of the {} CPUs this process may use",
                h.cpus.len()
            ),
            confidence: Confidence::Measured,
            smt_throughput: (h.threads_per_core > 1).then(|| {
                estimate(
                    1.3,
                    "not measured (the probe times no compute loop with a busy sibling): Intel Hyper-Threading's \
                     up-to-30% (Marr et al., Intel Technology Journal 6(1), 2002), as the shipped profiles",
                )
            }),
        },
        tlb: Tlb {
            replacement: Replacement::Lru,
            inclusion: Inclusion::NonInclusive,
            policy_source: "assumption: neither CPUID nor a pointer chase over a cyclic order tells LRU from other \
                            policies or shows inclusion; true LRU and non-inclusive levels assumed, as in every \
                            built-in profile"
                .into(),
            policy_confidence: Confidence::Estimate,
            asids: if h.pcid {
                Sourced {
                    value: 4096.0,
                    source: format!("{tag}: PCID present (CPUID.1:ECX[17]): 12-bit PCID in CR3"),
                    confidence: Confidence::Measured,
                }
            } else {
                Sourced {
                    value: 1.0,
                    source: format!("{tag}: no PCID (CPUID.1:ECX[17] clear)"),
                    confidence: Confidence::Measured,
                }
            },
            structures,
        },
        walk: Walk {
            kind: WalkKind::Hardware,
            cycles: walk_cycles,
        },
        memory: Memory {
            l1d_hit_cycles: cache_key(l1d_ns, cyc(l1d_ns), "L1D", &l1d_fb),
            l2_hit_cycles: cache_key(l2_ns, cyc(l2_ns), "L2", &l2_fb),
            llc_hit_ns: match &llc_fb {
                Some(src) => estimate(llc_ns, src.clone()),
                None => measured(llc_ns, cache_src("LLC")),
            },
            clear_page_mbps: measured(
                r.raw.clear_page_mbps.median,
                format!("{tag}: memset of one cache-resident 4 KiB page, repeated, {}", spread(&r.raw.clear_page_mbps)),
            ),
            memcpy_mbps: measured(
                r.raw.memcpy_mbps.median,
                format!("{tag}: one-core copy between two large buffers (past the LLC), {}", spread(&r.raw.memcpy_mbps)),
            ),
            clear_dram_mbps: r.raw.clear_dram_mbps.as_ref().map(|c| {
                measured(
                    c.median,
                    format!(
                        "{tag}: one core clearing a large buffer (past the LLC) a 4 KiB page at a time with \
                         `rep stosb`, as clear_page_erms does, {}",
                        spread(c)
                    ),
                )
            }),
            second_level_fault_ns,
            read_page_mbps: r.raw.read_page_mbps.as_ref().map(|c| {
                measured(
                    c.median,
                    format!(
                        "{tag}: one core summing a cache-resident 4 KiB page a 64-bit word at a time, each word \
                         a volatile load of its own, repeated, {}",
                        spread(c)
                    ),
                )
            }),
        },
        kernel: KernelCosts {
            invlpg_cycles,
            full_flush_cycles,
            syscall_ns: measured(
                r.raw.syscall_ns.median,
                format!("{tag}: getppid() round trip with this kernel's mitigations, {}", spread(&r.raw.syscall_ns)),
            ),
            fault_ns,
            fault_around_page_cycles: sections::fault_around(r, mhz, &tag)
                .unwrap_or(per_page.fault_around_page_cycles),
            page_alloc_cycles: per_page.page_alloc_cycles.clone(),
            page_free_cycles: paths.page_free_cycles,
            zap_pte_cycles: per_page.zap_pte_cycles,
            flush_call_cycles: paths.flush_call_cycles,
            madvise_call_cycles: paths.madvise_call_cycles,
            context_switch_ns: Some(switch.clone()),
            ttwu_cycles: r.raw.ttwu_ns.as_ref().map(|w| sections::ttwu(w, mhz, &tag)),
            ttwu_local_cycles: r.raw.ttwu_local_ns.as_ref().map(|w| sections::ttwu_local(w, mhz, &tag)),
            idle_exit_ns: sections::idle_exit(
                r,
                ipi.as_ref().map(|i| i.send_ns.value + i.delivery_ns.value),
                switch.value,
                &tag,
            ),
            rwsem_section_cycles: None,
            // PTI's per-page INVPCID of the user PCID cannot be timed from user space.
            invpcid_single_cycles: (h.pti && h.invpcid).then(|| {
                estimate(
                    175.0,
                    "not measurable from user space: DH17's per-page flush increment with PTI (~350 cycles, Skylake \
                     desktop) minus an INVLPG (~175 cycles), as the Intel profiles",
                )
            }),
            // The measured syscall and fault times already include this kernel's PTI, if any.
            pti_entry_exit_ns: h.pti.then(|| {
                measured(0.0, format!("{tag}: included in the measured syscall_ns and fault_ns (PTI is on here)"))
            }),
            // INVLPGB and TLBSYNC are privileged: not timed from user space.
            invlpgb_cycles: h.invlpgb.then(|| {
                estimate(
                    100.0,
                    "not measurable from user space: INVLPGB is posted and weakly ordered, about 50 to 150 cycles \
                     to issue (docs/references/machine-costs.md#g2, estimate), midpoint",
                )
            }),
            tlbsync_ns: h.invlpgb.then(|| {
                estimate(
                    250.0,
                    "not measurable from user space: TLBSYNC waits about one fabric round trip, 0.2 to 0.3 us on \
                     one socket (docs/references/machine-costs.md#g2, estimate), midpoint",
                )
            }),
        },
        coherence,
        ipi,
        page_alloc: Some(PageAllocProfile {
            pcp_alloc_cycles: per_page.pcp_alloc_cycles,
            pcp_free_cycles: per_page.pcp_free_cycles,
            zone_lock_section_cycles: per_page.zone_lock_section_cycles,
            buddy_block_cycles: per_page.buddy_block_cycles,
            struct_page_miss_ns: estimate(
                llc_ns,
                "one struct page line found in the L3: this profile's measured memory.llc_hit_ns (the \
                 prefetcher and DRAM misses are not modelled)",
            ),
        }),
        slab: None,
        reclaim: None,
        swap: None,
        ipc: ipc_section(r, &tag, &mut warnings),
        net: net_section(r, &tag, &mut warnings),
        fs: fs_section(r, &tag, &mut warnings).map(|mut f| {
            f.shmem_alloc_and_add_folio_cycles = sections::shmem_new_folio(r, &tag, &alloc_share, &mut warnings);
            f
        }),
        tlbi: None,
        caches: None,
        mmu8xx: None,
        head_8xx: None,
        noise: noise(r, &tag),
        uncore: uncore_section(r, &tag),
    };
    let profile = settle(profile, &tag, &mut warnings)?;
    Ok(Built { profile, warnings })
}

/// Slow first writes per page below which a fresh region shows no second-level faults: a
/// tenth of a slow page per 2 MiB block, or 10 ns a page.
const SECOND_LEVEL_MIN_PER_2M: f64 = 0.1;
const SECOND_LEVEL_MIN_NS: f64 = 10.0;

/// `memory.second_level_fault_ns` from the probe's fresh regions: the time their slow first
/// writes take a page beyond the recycled pages' (docs/references/machine-costs.md#second-level-faults).
/// A guest fault with a clear at DRAM rate is never a slow page, so the figure holds none of
/// what the model charges a cold page (`memory.clear_dram_mbps`, `page_alloc`'s refill); 0,
/// said so, where the fresh regions have no slow pages beyond the recycled ones (bare metal).
fn second_level(s: &crate::probe::fault::SecondLevel, r: &ProbeReport, clear_ns: f64, tag: &str) -> Sourced {
    let extra = s.extra_ns();
    let spread = |x: &crate::stats::Summary| x.spread_text(1, "");
    let cold = r.raw.clear_dram_mbps.as_ref().map(|c| 4096.0 * 1000.0 / c.median);
    let check = match (&r.raw.fault_warm_ns, cold) {
        (Some(w), Some(c)) => format!(
            "; cross-check: the fresh first writes' mean {:.0} ns less the recycled fault {:.0} ns and the \
             cold clear's extra {:.0} ns leaves {:.0} ns (it also holds what else a cold page costs)",
            s.fresh_ns.median,
            w.median,
            c - clear_ns,
            s.fresh_ns.median - w.median - (c - clear_ns)
        ),
        _ => String::new(),
    };
    let what = format!(
        "{tag}: first writes to {} fresh anonymous pages a page at a time, each region after a {} s pause \
         (free page reporting's delay), against as many pages recycled through this CPU's free list, each run a block; a \
         slow page is a first write over {:.0} x its region's median, its time net of the probe thread's \
         waits for its CPU (scheduler statistics): fresh {:.1} slow pages a 2 MiB block ({}), \
         their time {:.0} ns a page ({}), recycled {:.0} ns a page ({})",
        s.pages,
        crate::probe::fault::REPORT_PAUSE_S,
        crate::probe::fault::SLOW_FACTOR,
        s.fresh_slow_per_2m.median,
        spread(&s.fresh_slow_per_2m),
        s.fresh_slow_ns.median,
        spread(&s.fresh_slow_ns),
        s.recycled_slow_ns.median,
        spread(&s.recycled_slow_ns),
    );
    if s.fresh_slow_per_2m.median < SECOND_LEVEL_MIN_PER_2M || extra < SECOND_LEVEL_MIN_NS {
        measured(
            0.0,
            format!(
                "{what}: no second-level faults (under {SECOND_LEVEL_MIN_PER_2M} slow pages a 2 MiB block or \
                 {SECOND_LEVEL_MIN_NS:.0} ns a page; bare metal, or a host that keeps a guest's free pages), 0{check}"
            ),
        )
    } else {
        measured(extra, format!("{what}: the difference, {extra:.0} ns a page{check}"))
    }
}

/// A profile built from a probe, and what surprised the build (each a labelled fallback in the
/// profile too).
#[derive(Debug, Clone)]
pub struct Built {
    pub profile: MachineProfile,
    pub warnings: Vec<String>,
}

/// Makes a derived profile valid without failing: a number outside its allowed range becomes
/// the nearest bound, labelled as a fallback with what was derived; TLB structures the model
/// cannot hold give way to assumed ones. Only what no fallback covers is an error.
fn settle(mut p: MachineProfile, tag: &str, warnings: &mut Vec<String>) -> Result<MachineProfile, String> {
    let mut assumed_tlb = false;
    // Each round fixes one key; a profile has fewer than 200 numbers.
    for _ in 0..200 {
        let e = match p.validate() {
            Ok(()) => return Ok(p),
            Err(e) => e,
        };
        if let (Some((min, max)), Some(path)) = (e.allowed, e.key.strip_suffix(".value")) {
            let mut found = false;
            p = p
                .map_sourced(&mut |k, t| {
                    if k.path != path {
                        return;
                    }
                    found = true;
                    let was = tlblab_model::profile::sourced_value(t).unwrap_or(f64::NAN);
                    let old = t.get("source").and_then(|x| x.as_str()).unwrap_or_default().to_string();
                    let to = if was.is_nan() { min } else { was.clamp(min, max) };
                    warnings.push(format!(
                        "{path}: derived {was} is outside {min} ..= {max}: {to} used (a labelled fallback)"
                    ));
                    t.insert("value".into(), toml::Value::Float(to));
                    t.insert("confidence".into(), toml::Value::String("estimate".into()));
                    t.insert(
                        "source".into(),
                        toml::Value::String(format!(
                            "fallback: the probe derived {was}, outside the allowed {min} ..= {max}: the nearest \
                             bound taken (derived as: {old})"
                        )),
                    );
                })
                .map_err(|x| format!("the host profile: {x}"))?;
            if !found {
                return Err(format!("the host profile does not validate: {e}"));
            }
        } else if e.key.starts_with("tlb.structure") && !assumed_tlb {
            assumed_tlb = true;
            let why = format!("the TLB structures found cannot be modelled ({e})");
            warnings.push(format!("{why}: Skylake's TLBs assumed"));
            let hit = p.tlb.structures.iter().find(|s| s.level == 2).map_or_else(
                || estimate(8.0, "G4 estimate 7-9 cycles, midpoint 8"),
                |s| s.hit_cycles.clone(),
            );
            p.tlb.structures = tlb::structures_assumed(tag, &why, &hit);
        } else {
            return Err(format!("the host profile does not validate: {e}"));
        }
    }
    Err("the host profile does not validate after 200 fallbacks".into())
}

/// A built-in profile a fallback borrows from (their own tests check that they parse).
fn builtin_profile(name: &str) -> MachineProfile {
    toml::from_str(tlblab_model::builtin::profile(name)).expect("a built-in profile parses")
}

/// `[noise]`: the tick rate of the running kernel, the spread of a minor fault's cost measured
/// fault by fault, and the tick's own work (not measured yet: the built-in profiles' estimate).
fn noise(r: &ProbeReport, tag: &str) -> Option<tlblab_model::profile::NoiseProfile> {
    use tlblab_model::profile::{NoiseProfile, SourcedQuantiles};
    if r.raw.fault_spread.len() != tlblab_model::profile::STEP_PERCENTILES.len() {
        return None;
    }
    Some(NoiseProfile {
        hz: match r.raw.config_hz {
            Some(hz) => measured(hz, format!("{tag}: CONFIG_HZ of the running kernel (its configuration)")),
            None => estimate(250.0, "kernel configuration not readable: kernel/Kconfig.hz's default HZ_250 (v2.6.13+)"),
        },
        tick_cycles: estimate(2000.0, TICK_CYCLES_ESTIMATE),
        step_quantiles: SourcedQuantiles {
            // A fault timed at 30-50x the median is the probe's thread preempted (a loaded
            // host), not the fault path's own spread: the model's range bounds it.
            value: r.raw.fault_spread.iter().map(|f| f.clamp(*STEP_FACTORS.start(), *STEP_FACTORS.end())).collect(),
            source: format!(
                "{tag}: minor anonymous write faults timed one by one (rdtscp, the timer's own cost taken off), \
                 1st..99th percentiles over the median{}",
                if r.raw.fault_spread.iter().any(|f| !STEP_FACTORS.contains(f)) {
                    format!(
                        "; measured {:.3?}, clamped to {:?} (a tail that far out is the probe preempted)",
                        r.raw.fault_spread, STEP_FACTORS
                    )
                } else {
                    String::new()
                }
            ),
            confidence: Confidence::Measured,
        },
    })
}

/// The tick's own work, as every profile estimates it until a probe measures it.
pub const TICK_CYCLES_ESTIMATE: &str = "estimate: update_process_times (account_process_tick, sched_tick with \
    task_tick_fair's update_curr and load tracking, rcu_sched_clock_irq, run_local_timers) plus hrtimer_interrupt's \
    expiry and TSC-deadline reprogram, about 2000 cycles; no published per-tick cost of these machines was found";
