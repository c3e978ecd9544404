//! Boot: what the kernel resolves from the machine profile and its configuration before the
//! first task runs (the range policy's per-family shift, PCID use, page-table isolation, the
//! kernel text mapping), and the unit costs every path charges.

use std::collections::VecDeque;

use super::config::KernelConfig;
use super::cpu::Cpu;
use super::frames::{Frames, Owner};
use super::Kernel;
use super::{Costs, Counters};
use crate::hw::coherence::CacheLine;
use crate::hw::coherence::{LineCosts, RmwLine};
use crate::hw::cpumask::CpuMask;
use crate::hw::ipi::IpiCosts;
use crate::hw::tlb::{AccessKind, PageSize, Serves, NR_ACCESS_KINDS};
use crate::hw::topology::Topology;
use crate::hw::walk::Walker;
use crate::linux::arch::x86::mm::tlb::{flushall_shift, LazyIpis, RangeInputs, RangePolicy, TlbState};
use crate::linux::arch::x86::text::{KTouches, KernelText, Mapping, LAYOUT, MAX_TOUCHES, NO_KTOUCH};
use crate::linux::arch::x86::X86;
use crate::linux::arch::Arch;
use crate::linux::fs::Fs;
use crate::linux::include::linux::gfp::PAGES_PER_NODE;
use crate::linux::kernel::smp::{CallQueue, Smp};
use crate::linux::mm::page_alloc::{Layout, PageAlloc, PageAllocCosts};
use crate::linux::mm::slub::{Slab, SlabCosts};
use crate::linux::mm::Memory;
use crate::linux::net::Net;
use crate::linux::oracle::Oracle;
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

/// A subsystem's unit costs, converted from the machine profile at boot: its registration in
/// linux/mod.rs names the type, its own file implements this (or [`FromSection`]).
pub trait FromProfile {
    fn from_profile(p: &MachineProfile) -> Self;
}

/// The costs of a subsystem that boots only where the profile has its section: registered as
/// `Option<T>`, `None` without the section.
pub trait FromSection: Sized {
    fn from_section(p: &MachineProfile) -> Result<Self, ProfileError>;
}

impl<T: FromSection> FromProfile for Option<T> {
    fn from_profile(p: &MachineProfile) -> Self {
        T::from_section(p).ok()
    }
}

/// What the hardware charges: a user access, a TLB hit per level, a miss (hw/walk.rs), a
/// coherent line moving, an IPI.
#[derive(Debug, Clone)]
pub struct HwCosts {
    pub user_access: Ps,
    /// `[kind][i]`: lookup latency of a hit at level `i + 1` (index 0: L1, free).
    pub level_hit: [Vec<Ps>; NR_ACCESS_KINDS],
    pub walker: Walker,
    pub ipi: Option<IpiCosts>,
    pub lines: LineCosts,
}

impl HwCosts {
    /// A hardware walk after a miss at every level (x86 paths only: see [`Walker::walk`]).
    pub fn miss(&self, kind: AccessKind) -> Ps {
        self.walker.walk(kind)
    }
}

impl Costs {
    pub fn new(p: &MachineProfile) -> Costs {
        let mhz = p.clock_mhz();
        let level_hit = AccessKind::ALL
            .map(|k| (1..=p.tlb_levels()).map(|l| Ps::from_cycles(p.level_hit_cycles(l, k), mhz)).collect());
        let hw = HwCosts {
            user_access: Ps::from_cycles(p.memory.l1d_hit_cycles.value, mhz),
            walker: Walker::from_profile(p, level_hit.clone()),
            level_hit,
            ipi: IpiCosts::from_profile(p),
            lines: LineCosts::from_profile(p),
        };
        Costs::with_subsystems(hw, super::syscalls::Costs::from_profile(p), p)
    }
}

impl Kernel {
    /// Boots `config` on the machine `profile` describes. An x86 profile must have a
    /// `[page_alloc]` section (`run::run` checks it first and reports its absence).
    pub fn boot(profile: &MachineProfile, config: KernelConfig) -> Kernel {
        let topo = Topology::from_profile(&profile.topology);
        let node_pages = config.node_pages.unwrap_or(PAGES_PER_NODE);
        let layout = Layout::boot(topo.sockets, &config);
        // The MPC8xx machine runs dd's own paths and has no allocator section.
        let page_alloc = profile.page_alloc.is_some().then(|| {
            PageAlloc::with_layout(
                config.page_alloc,
                PageAllocCosts::from_profile(profile).unwrap_or_else(|e| panic!("{e}")),
                &topo,
                &layout,
                config.zones,
            )
        });
        // SLUB on the machines whose profile costs it (`[slab]`), over their page allocator.
        let slab = match (&page_alloc, profile.slab.is_some()) {
            (Some(_), true) => Some(Slab::new(
                SlabCosts::from_profile(profile).unwrap_or_else(|e| panic!("{e}")),
                topo.cpus(),
                topo.sockets,
            )),
            _ => None,
        };
        // Loopback sockets where SLUB runs and the profile costs the protocol paths.
        let net = match (&slab, profile.net.is_some()) {
            (Some(_), true) => Some(crate::linux::net::socket::Sockets::new(
                crate::linux::net::socket::Costs::from_profile(profile).unwrap_or_else(|e| panic!("{e}")),
            )),
            _ => None,
        };
        // File creation where SLUB runs and the profile costs the paths (`[fs]`).
        let mut slab = slab;
        let fs = match (&mut slab, profile.fs.is_some()) {
            (Some(s), true) => Some(crate::linux::fs::namei::Mount::new(
                crate::linux::fs::namei::Costs::from_profile(profile).unwrap_or_else(|e| panic!("{e}")),
                s,
                0,
            )),
            _ => None,
        };
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
            .map(|cpu| Cpu {
                core: topo.core_of(cpu) as usize,
                lp: (cpu / topo.cores()) as usize,
                x86: crate::linux::arch::x86::PerCpu {
                    st: TlbState::default(),
                    pti,
                    user_flush_pending: false,
                    ktouch: Box::new(KTouches([NO_KTOUCH; MAX_TOUCHES])),
                    flush_info_line: CacheLine::new(),
                },
                task: None,
                runq: VecDeque::new(),
                need_resched: false,
                cfs_avg: Default::default(),
                sd: Default::default(),
                out_of_idle: Ps::ZERO,
                taken: VecDeque::new(),
                in_irq: false,
                stall: Ps::ZERO,
                waiting: None,
                flushed: Default::default(),
                filled: Vec::new(),
                filled_overflow: false,
                sending: None,
            })
            .collect();
        // Linux uses PCID for user address spaces since v4.14 (with the generation-tracked
        // ASID slots); before, every CR3 load flushed.
        let pcid = profile.cpu.features.pcid && config.flush.generations;
        // v6.15: broadcast flushing where the kernel has it and the CPU reports INVLPGB (global
        // ASIDs are PCIDs, so only with them).
        let broadcast = (config.flush.invlpgb && profile.cpu.features.invlpgb && pcid).then(|| {
            crate::linux::arch::x86::mm::tlb::broadcast::Broadcast::new(
                profile.cpu.features.invlpgb_count_max.unwrap_or(1),
                pti,
            )
        });
        // Where lazy CPUs get every flush IPI, none may keep a stale translation either.
        let mut oracle = Oracle::new(topo.cpus(), PAGES_PER_NODE * topo.sockets as u64);
        // The layout is an x86-64 kernel's: the MPC8xx kernel maps itself with its own layouts
        // (`m8xx` below, linux/arch/ppc/mm/mmu_8xx.rs).
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
        let adder = Ps::from_ns(profile.kernel.pti_entry_exit_ns.as_ref().map_or(0.0, |c| c.value));
        if pti {
            costs.entry.syscall_half += Ps(adder.0 / 2);
            costs.memory.fault += adder;
        }
        // The interrupt entry and exit figures of a CPU that needs PTI were split from a round
        // trip measured under it (profiles' handler_entry_ns: G1, "incl. PTI CR3 switch"); a
        // kernel without PTI there (v3.x, or pti=off) skips the CR3 write at each half.
        if profile.cpu.features.pti && !pti {
            if let Some(ipi) = costs.hw.ipi.as_mut() {
                ipi.handler_entry = ipi.handler_entry.saturating_sub(Ps(adder.0 / 2));
                ipi.handler_exit = ipi.handler_exit.saturating_sub(Ps(adder.0 / 2));
            }
        }
        // A software-loaded TLB: the MPC8xx machine with the kernel's own layouts (run::run has
        // checked that the kernel is an 8xx one).
        let m8xx = match (costs.hw.walker.is_software(), config.ppc8xx) {
            (true, Some(k)) => {
                let (text, data) = crate::linux::arch::ppc::mm::mmu_8xx::builtin_layouts(k.version);
                let m = crate::linux::arch::ppc::mm::mmu_8xx::Machine8xx::boot(profile, k, text, data)
                    .unwrap_or_else(|e| panic!("{e}"));
                Some(Box::new(m))
            }
            _ => None,
        };
        let uncore = profile.uncore.as_ref().map(|u| {
            crate::hw::uncore::Uncore::new(
                topo.sockets,
                topo.cpus(),
                (u.llc_mib.value * (1u64 << 20) as f64).round() as u64,
                u.dram_peak_mbps.value * u.dram_sustained_fraction.value,
            )
        });
        let arm64_knobs = config.arm64;
        let mut k = Kernel {
            topo,
            uncore,
            costs,
            config,
            cpus,
            tlbs: (0..topo.cores()).map(|_| profile.build_core_tlb()).collect(),
            smp: Smp {
                csqs: (0..topo.cpus())
                    .map(|_| CallQueue {
                        // At most one request per shootdown in flight, one shootdown per CPU.
                        entries: VecDeque::with_capacity(topo.cpus() as usize),
                        head: RmwLine::default(),
                        drain: Default::default(),
                        unlock_lands: Ps::ZERO,
                    })
                    .collect(),
                shootdowns: Vec::new(),
                free_shootdowns: Vec::new(),
                fan: Vec::new(),
            },
            tasks: Vec::new(),
            jiffies: crate::linux::kernel::time::jiffies::Jiffies::boot(profile),
            mm: Memory {
                mms: Vec::new(),
                next_ctx_id: 1,
                woken: Vec::new(),
                vma_lock: Default::default(),
                files: Vec::new(),
                disk_ra_pages: crate::linux::mm::readahead::RA_PAGES,
                frames: Frames::new(node_pages * topo.sockets as u64),
                page_alloc,
                vmscan: crate::linux::mm::vmscan::Vmscan::new(profile, &layout, topo.cpus()),
                slab,
                slab_events: Vec::new(),
                shmem: Default::default(),
                memcg: None,
                memcg_stats: Default::default(),
                migrate: None,
            },
            fs: Fs { mount: fs, pipes: Vec::new() },
            net: Net {
                sockets: net,
                unix: Vec::new(),
                freed_on: Default::default(),
                freed_bytes: Vec::new(),
                frag_freed_on: Default::default(),
            },
            arch: Arch {
                x86: X86 {
                    policy,
                    pcid,
                    range_sizes: RangeInputs::tlb_sizes(profile),
                    lazy: CpuMask::new(),
                    mask: Default::default(),
                    text,
                    broadcast,
                },
                ppc8xx: m8xx,
                // arm64 (linux/arch/arm64) on an Arm machine with an arm64 kernel (run::run has
                // checked that they go together).
                arm64: match (profile.cpu.vendor.as_str(), arm64_knobs) {
                    ("arm", Some(knobs)) => {
                        Some(Box::new(crate::linux::arch::arm64::Arm64::boot(profile, knobs, topo.cpus())))
                    }
                    _ => None,
                },
            },
            oracle,
            counters: Counters::default(),
        };
        // empty_zero_page lives in the kernel image; here it is the first page boot takes.
        if k.mm.page_alloc.is_some() {
            k.mm.frames.zero_pfn = k.alloc_frame_untimed(0, Ps::ZERO, Owner::Zero);
        }
        k
    }
}
