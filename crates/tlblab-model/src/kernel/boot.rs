//! Boot: what the kernel resolves from the machine profile and its configuration before the
//! first task runs (the range policy's per-family shift, PCID use, page-table isolation, the
//! kernel text mapping), and the unit costs every path charges.

use std::collections::VecDeque;

use super::config::KernelConfig;
use super::cpu::Cpu;
use super::frames::Frames;
use super::mm::PAGE_SIZE;
use super::smp::CallQueue;
use super::text::{KernelText, Mapping, LAYOUT, NO_KPATH, NR_PATHS};
use super::tlbflush::{flushall_shift, LazyIpis, RangeInputs, RangePolicy, TlbState};
use super::vmstat::Counters;
use super::Kernel;
use crate::hw::coherence::{LineCosts, RmwLine};
use crate::hw::cpumask::CpuMask;
use crate::hw::ipi::IpiCosts;
use crate::hw::tlb::{AccessKind, PageSize, Serves, NR_ACCESS_KINDS};
use crate::hw::topology::Topology;
use crate::kernel::oracle::Oracle;
use crate::profile::MachineProfile;
use crate::time::Ps;

/// Unit costs in picoseconds, converted once from the profile.
#[derive(Debug, Clone)]
pub struct Costs {
    pub user_access: Ps,
    /// `[kind][i]`: lookup latency of a hit at level `i + 1` (index 0: L1, free).
    pub level_hit: [Vec<Ps>; NR_ACCESS_KINDS],
    pub walk: Ps,
    pub syscall_half: Ps,
    pub fault: Ps,
    pub fault_around_page: Ps,
    pub page_alloc: Ps,
    pub page_free: Ps,
    pub zap_pte: Ps,
    pub flush_call: Ps,
    pub clear_page: Ps,
    pub copy_page: Ps,
    pub invlpg: Ps,
    pub full_flush: Ps,
    pub context_switch: Option<Ps>,
    /// INVPCID of one user page, under PTI with INVPCID (`None`: no INVPCID, the user PCID's
    /// flush is deferred to the return to user space instead).
    pub invpcid_single: Option<Ps>,
    pub ipi: Option<IpiCosts>,
    pub lines: LineCosts,
}

impl Costs {
    pub fn new(p: &MachineProfile) -> Costs {
        let mhz = p.clock_mhz();
        let level_hit = AccessKind::ALL
            .map(|k| (1..=p.tlb_levels()).map(|l| Ps::from_cycles(p.level_hit_cycles(l, k), mhz)).collect());
        let page_time = |mbps: f64| Ps::from_ns(PAGE_SIZE as f64 * 1000.0 / mbps);
        Costs {
            user_access: Ps::from_cycles(p.memory.l1d_hit_cycles.value, mhz),
            level_hit,
            walk: Ps::from_cycles(p.walk.cycles.value, mhz),
            syscall_half: Ps::from_ns(p.kernel.syscall_ns.value / 2.0),
            fault: Ps::from_ns(p.kernel.fault_ns.value),
            fault_around_page: Ps::from_cycles(p.kernel.fault_around_page_cycles.value, mhz),
            page_alloc: Ps::from_cycles(p.kernel.page_alloc_cycles.value, mhz),
            page_free: Ps::from_cycles(p.kernel.page_free_cycles.value, mhz),
            zap_pte: Ps::from_cycles(p.kernel.zap_pte_cycles.value, mhz),
            flush_call: Ps::from_cycles(p.kernel.flush_call_cycles.value, mhz),
            clear_page: page_time(p.memory.clear_page_mbps.value),
            copy_page: page_time(p.memory.memcpy_mbps.value),
            invlpg: Ps::from_cycles(p.kernel.invlpg_cycles.value, mhz),
            full_flush: Ps::from_cycles(p.kernel.full_flush_cycles.value, mhz),
            context_switch: p.kernel.context_switch_ns.as_ref().map(|c| Ps::from_ns(c.value)),
            invpcid_single: match (p.cpu.features.invpcid, &p.kernel.invpcid_single_cycles) {
                (true, Some(c)) => Some(Ps::from_cycles(c.value, mhz)),
                _ => None,
            },
            ipi: IpiCosts::from_profile(p),
            lines: LineCosts::from_profile(p),
        }
    }
}

impl Kernel {
    /// Boots `config` on the machine `profile` describes.
    pub fn boot(profile: &MachineProfile, config: KernelConfig) -> Kernel {
        let topo = Topology::from_profile(&profile.topology);
        let policy = match (config.flush.policy, config.shift_from_table) {
            (RangePolicy::FlushallShift { post_fix, huge_walk, .. }, Some(table_post_fix)) => {
                RangePolicy::FlushallShift {
                    shift: flushall_shift(
                        &profile.cpu.vendor,
                        profile.cpu.family,
                        profile.cpu.model,
                        table_post_fix,
                    ),
                    post_fix,
                    huge_walk,
                }
            }
            (p, _) => p,
        };
        let pti = config.flush.pti && profile.cpu.features.pti;
        let cpus = (0..topo.cpus())
            .map(|_| Cpu {
                tlb: Box::new(profile.build_tlb()),
                st: TlbState::default(),
                task: None,
                runq: VecDeque::new(),
                taken: VecDeque::new(),
                in_irq: false,
                waiting: None,
                flushed: Default::default(),
                filled: Vec::new(),
                filled_overflow: false,
                pti,
                user_flush_pending: false,
                kpaths: Box::new([NO_KPATH; NR_PATHS]),
            })
            .collect();
        // Linux uses PCID for user address spaces since v4.14 (with the generation-tracked
        // ASID slots); before, every CR3 load flushed.
        let pcid = profile.cpu.features.pcid && config.flush.generations;
        // Where lazy CPUs get every flush IPI, none may keep a stale translation either.
        let mut oracle = Oracle::default();
        // The layout is an x86-64 kernel's: other architectures' kernels map themselves
        // differently (seed 003's 8xx is its own layout, not modelled yet).
        let x86 = matches!(profile.cpu.vendor.as_str(), "intel" | "amd");
        let text = (config.text.kernel_tlb && x86).then(|| {
            let gbpages = profile
                .tlb
                .structures
                .iter()
                .any(|s| s.serves != Serves::Instruction && s.page_sizes.contains(&PageSize::Size1G));
            KernelText::new(&LAYOUT, Mapping { pti, pcid, gbpages })
        });
        oracle.lazy_cpus_flushed = config.flush.lazy_ipis == LazyIpis::Send;
        // Under PTI every kernel entry and exit switches CR3 (v4.15+ entry code): a system call
        // pays it at both halves, a fault once.
        let mut costs = Costs::new(profile);
        if pti {
            let adder = Ps::from_ns(profile.kernel.pti_entry_exit_ns.as_ref().map_or(0.0, |c| c.value));
            costs.syscall_half += Ps(adder.0 / 2);
            costs.fault += adder;
        }
        Kernel {
            topo,
            costs,
            config,
            policy,
            pcid,
            range_sizes: RangeInputs::tlb_sizes(profile),
            csqs: (0..topo.cpus())
                .map(|_| CallQueue {
                    // At most one request per shootdown in flight, one shootdown per CPU.
                    entries: VecDeque::with_capacity(topo.cpus() as usize),
                    head: RmwLine::default(),
                })
                .collect(),
            cpus,
            lazy: CpuMask::new(),
            tasks: Vec::new(),
            mms: Vec::new(),
            files: Vec::new(),
            frames: Frames::new(),
            oracle,
            shootdowns: Vec::new(),
            free_shootdowns: Vec::new(),
            fan: Vec::new(),
            woken: Vec::new(),
            counters: Counters::default(),
            next_ctx_id: 1,
            text,
        }
    }
}
