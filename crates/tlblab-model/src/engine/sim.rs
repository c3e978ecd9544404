//! The simulated machine running the kernel model: CPUs with their TLBs and `tlb_state`, tasks
//! with their operation streams, address spaces, the page cache, and the flush protocol's IPIs
//! as timed events.
//!
//! Each CPU executes one step at a time (a user access, a fault, one phase of a system call, one
//! IPI handler); a step takes simulated time and ends at an operation boundary, where pending
//! IPIs are taken (DESIGN.md rule 3). A CPU spinning for shootdown acknowledgements takes IPIs
//! at once (Linux waits with interrupts enabled). Kernel paths follow v5.18 unless a knob says
//! otherwise; each rule's comment names its source.

use std::collections::VecDeque;

use super::ops::{Addr, MapKind, Op, NR_REGS};
use super::queue::Agenda;
use super::time::Ps;
use super::Program;
use crate::hw::coherence::{LineCosts, RmwLine};
use crate::hw::ipi::IpiCosts;
use crate::hw::tlb::{
    Access, AccessKind, L1Way, Lookup, PageSize, TlbHierarchy, TlbPayload, Translation, NR_ACCESS_KINDS,
};
use crate::hw::topology::Topology;
use crate::kernel::frames::{Frames, Owner, ZERO_PFN};
use crate::kernel::mm::{zap_vma, Backing, Mm, MmId, Pte, PAGE_SHIFT, PAGE_SIZE};
use crate::kernel::preset::KernelConfig;
use crate::kernel::text::{At, KernelText, Mapping, Path, LAYOUT, NR_PATHS};
use crate::kernel::tlbflush::{
    decide_range, flush_tlb_func, flushall_shift, FlushAction, FlushInfo, RangeInputs, RangePolicy, TlbState,
    TLB_FLUSH_ALL,
};
use crate::oracle::Oracle;
use crate::profile::MachineProfile;

/// `fault_around_bytes` default (mm/memory.c): 64 KiB = 16 pages.
const FAULT_AROUND_PAGES: u64 = 16;

/// Where a CPU's time went (DESIGN.md §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bucket {
    User,
    Walk,
    Syscall,
    Fault,
    Zeroing,
    FlushWork,
    IpiSend,
    IpiWait,
    Handler,
    /// Context switches and the scheduler.
    Sched,
    /// Waiting for a lock (sleeping tasks leave their CPU idle instead).
    LockWait,
    Idle,
}

pub const NR_BUCKETS: usize = 12;

impl Bucket {
    pub const ALL: [Bucket; NR_BUCKETS] = [
        Bucket::User,
        Bucket::Walk,
        Bucket::Syscall,
        Bucket::Fault,
        Bucket::Zeroing,
        Bucket::FlushWork,
        Bucket::IpiSend,
        Bucket::IpiWait,
        Bucket::Handler,
        Bucket::Sched,
        Bucket::LockWait,
        Bucket::Idle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Bucket::User => "user",
            Bucket::Walk => "page_walk",
            Bucket::Syscall => "syscall",
            Bucket::Fault => "fault",
            Bucket::Zeroing => "zero_copy",
            Bucket::FlushWork => "flush",
            Bucket::IpiSend => "ipi_send",
            Bucket::IpiWait => "ipi_wait",
            Bucket::Handler => "ipi_handler",
            Bucket::Sched => "sched",
            Bucket::LockWait => "lock_wait",
            Bucket::Idle => "idle",
        }
    }
}

/// Defines [`Counters`] from one list of fields, with the window difference and the named list
/// reports print: a new counter is one line here.
macro_rules! counters {
    ($($(#[$doc:meta])* $f:ident,)*) => {
        /// Event counters of a run.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Counters {
            $($(#[$doc])* pub $f: u64,)*
        }

        impl Counters {
            fn minus(&self, o: &Counters) -> Counters {
                Counters { $($f: self.$f - o.$f),* }
            }

            /// `(name, value)` pairs in a fixed order, for reports.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($f), self.$f)),*]
            }
        }
    };
}

counters! {
    flush_requests,
    shootdowns,
    ipis_sent,
    ipis_received,
    /// Remote `flush_tlb_func` calls (`nr_tlb_remote_flush_received`, the TLB row of
    /// /proc/interrupts): one per queued request, however many one interrupt drains.
    remote_flushes_received,
    invlpg,
    full_flushes,
    partial_flushes,
    flushes_skipped,
    early_returns,
    tlb_gen_reads,
    tlb_gen_transfers,
    tlb_misses,
    /// Misses on a translation a flush had removed from this CPU's TLB (not a fault's retry).
    tlb_misses_after_flush,
    page_faults,
    cow_flushes,
    pages_zeroed,
    pages_copied,
    pages_freed,
    context_switches,
    /// Tasks that slept on `mmap_lock`.
    mmap_lock_sleeps,
    /// Full flushes at a switch into an mm the CPU had fallen behind on (leaving lazy mode, or
    /// an ASID slot whose generation is stale).
    switch_flushes,
    /// Flushes of the user PCID on the way back to user space, deferred there by full flushes
    /// (or, without INVPCID, single-page ones) under page-table isolation.
    pti_user_flushes,
    /// Kernel code/data translations that missed every TLB level (kernel/text.rs).
    kernel_tlb_misses,
    /// Lazy TLB CPUs that left the mm on a flush IPI (`leave_mm` / switch to `init_mm`).
    lazy_leaves,
    /// Flushes forced inside the zap because it cleared dirty shared-file PTEs (v5.18
    /// `zap_pte_range`: flush before the page-table lock drops and the page is dirtied).
    dirty_pte_flushes,
    /// Whole-mm flushes `tlb_finish_mmu` added because another thread's gather was in flight
    /// (`mm_tlb_flush_nested`).
    nested_flushes,
    oracle_violations,
}

/// Unit costs in picoseconds, converted once from the profile.
#[derive(Debug, Clone)]
struct Costs {
    user_access: Ps,
    /// `[kind][i]`: lookup latency of a hit at level `i + 1` (index 0: L1, free).
    level_hit: [Vec<Ps>; NR_ACCESS_KINDS],
    walk: Ps,
    syscall_half: Ps,
    fault: Ps,
    fault_around_page: Ps,
    page_alloc: Ps,
    page_free: Ps,
    zap_pte: Ps,
    flush_call: Ps,
    clear_page: Ps,
    copy_page: Ps,
    invlpg: Ps,
    full_flush: Ps,
    context_switch: Option<Ps>,
    /// INVPCID of one user page, under PTI with INVPCID (`None`: no INVPCID, the user PCID's
    /// flush is deferred to the return to user space instead).
    invpcid_single: Option<Ps>,
    ipi: Option<IpiCosts>,
    lines: LineCosts,
}

impl Costs {
    fn new(p: &MachineProfile) -> Costs {
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

/// A kernel step queued on a CPU (system-call phases and fault follow-ups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Op(Op),
    /// A user access at an absolute address (a retry after a fault).
    Access {
        va: u64,
        kind: AccessKind,
    },
    Fault {
        addr: u64,
        write: bool,
    },
    /// `flush_tlb_mm_range` on the task's mm.
    Flush {
        start: u64,
        end: u64,
        freed_tables: bool,
    },
    SetPte {
        addr: u64,
        pte: Pte,
    },
    FreeGathered,
    /// The flush `zap_pte_range` forces before dropping the page-table lock when it cleared
    /// dirty shared-file PTEs (v5.18), which also resets the gather's range.
    ForcedFlush {
        start: u64,
        end: u64,
    },
    /// `tlb_finish_mmu` (v5.18 mm/mmu_gather.c): if another thread of the mm is between its
    /// own gather and finish (`mm_tlb_flush_nested`), flush the whole mm, page tables included,
    /// whatever was flushed already; else flush the gathered range unless a forced flush did.
    FinishMmu {
        start: u64,
        end: u64,
        cleared: bool,
        freed_tables: bool,
        flushed: bool,
    },
    /// `dec_tlb_flush_pending` at the end of `tlb_finish_mmu`.
    EndGather,
    SyscallExit,
    /// `mmap_read_lock` / `mmap_write_lock`: may put the task to sleep.
    MmapLock {
        write: bool,
    },
    MmapUnlock {
        write: bool,
    },
    /// A system call's body, once `mmap_lock` is held.
    Locked(Op),
}

/// A flush request on a CPU's `call_single_queue`: when the sender's `llist_add` landed, and
/// the shootdown whose `flush_tlb_info` it carries.
#[derive(Debug, Clone, Copy)]
struct Csd {
    at: Ps,
    shootdown: u32,
}

#[derive(Debug, Clone, Copy)]
struct Shootdown {
    info: FlushInfo,
    initiator: u32,
    pending: u32,
    /// When the initiator sees the last acknowledgement / finishes its own flush.
    last_ack: Ps,
    local_done: Ps,
}

/// A CPU's `call_single_queue` (kernel/smp.c): its requests in enqueue-time order, and its head,
/// on which every sender's `llist_add` and the handler's `llist_del_all` are atomic RMWs. Kept
/// apart from [`Cpu`], in one dense vector: a shootdown touches the queue of every target.
struct CallQueue {
    entries: VecDeque<Csd>,
    head: RmwLine,
}

struct Cpu {
    /// Boxed: the arrays' bookkeeping is kilobytes, and the shootdown path touches the rest of
    /// `Cpu` (queue, lines, tlb_state) for every target, so keep that part dense.
    tlb: Box<TlbHierarchy>,
    st: TlbState,
    task: Option<usize>,
    steps: VecDeque<Step>,
    /// Runnable tasks waiting for this CPU, in order (CFS with equal weights and no wake-up
    /// preemption reduces to round robin).
    runq: VecDeque<usize>,
    /// Interrupts on their way, by arrival time (ascending; rarely more than one).
    arrivals: Vec<Ps>,
    /// An interrupt has arrived and is not taken yet. Like the APIC's IRR bit for the vector,
    /// a second arrival before it is taken merges into it.
    irq_pending: bool,
    /// Requests the running call-function interrupt took with `llist_del_all` and has not
    /// handled yet; non-empty only inside the handler.
    taken: VecDeque<Csd>,
    /// Inside the call-function interrupt handler (between entry and exit).
    in_irq: bool,
    /// The shootdown this CPU spins on.
    waiting: Option<usize>,
    /// The pending step event, if any.
    step_at: Option<Ps>,
    /// End of the CPU's last step: nothing new starts before it.
    busy_until: Ps,
    time: [Ps; NR_BUCKETS],
    /// Pages (VA >> 12) whose translation a flush dropped from this CPU's TLB and that it has
    /// not translated since: the next miss on one is a miss caused by the flush. Sorted, no
    /// duplicates (a few hundred entries: a flat vector beats a tree here).
    flushed: Vec<u64>,
    /// User pages `(pcid, vpn)` filled since the CPU last took stock, with repeats: the only
    /// pages a full flush can drop, so it peeks these few instead of scanning the whole TLB.
    /// Unused (`filled_overflow`) once more than [`MAX_FILLED_TRACKED`] pile up.
    filled: Vec<(u16, u64)>,
    filled_overflow: bool,
    /// Page-table isolation is on: user entries have a PCID of their own.
    pti: bool,
    /// `user_pcid_flush_mask` (v5.18): the user PCID must be flushed on the way back to user
    /// space (`SWITCH_TO_USER_CR3` then writes CR3 without the no-flush bit).
    user_flush_pending: bool,
    /// Per kernel path, where its translations sat at level 1 after it last ran.
    kpaths: Box<[KPathWays; NR_PATHS]>,
}

/// The level-1 ways a kernel path's touches hit when it last ran, for the stack of task `slot`
/// (`n == 0`: none known). While every way still holds its translation for the loaded PCID
/// ([`TlbHierarchy::still_hits`]), the path's lookups would hit exactly those ways, and replaying
/// the hits is their exact effect without the probes.
#[derive(Debug, Clone, Copy)]
struct KPathWays {
    slot: usize,
    n: u8,
    ways: [L1Way; MAX_PATH_TOUCHES],
}

const MAX_PATH_TOUCHES: usize = 8;
const NO_KPATH: KPathWays = KPathWays { slot: 0, n: 0, ways: [L1Way::NONE; MAX_PATH_TOUCHES] };

/// Bound on `Cpu::flushed` (pages never touched again would otherwise pile up).
const MAX_FLUSHED_TRACKED: usize = 1 << 16;
/// Bound on `Cpu::filled`: beyond it a full flush scans the TLB (cheaper than that many peeks).
const MAX_FILLED_TRACKED: usize = 128;

impl Cpu {
    fn note_flushed(&mut self, vpn: u64) {
        if self.flushed.len() >= MAX_FLUSHED_TRACKED {
            self.flushed.clear();
        }
        if let Err(i) = self.flushed.binary_search(&vpn) {
            self.flushed.insert(i, vpn);
        }
    }

    /// Whether `vpn` was dropped by a flush (and forgets it: it is being translated again).
    fn take_flushed(&mut self, vpn: u64) -> bool {
        match self.flushed.binary_search(&vpn) {
            Ok(i) => {
                self.flushed.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// A full flush of `pcid`'s non-global entries, remembering the 4K user pages it drops so
    /// their next misses count as the flush's. Every full flush of the engine goes through
    /// here; one of an address space with nothing cached (a CPU flushing again before it
    /// refilled, as in a shootdown storm) stays O(1).
    fn flush_asid(&mut self, pcid: u16) {
        // invalidate_user_asid(): the user PCID is flushed at the next return to user space.
        self.user_flush_pending |= self.pti;
        if self.tlb.may_hold(pcid) {
            self.note_flushed_asid(pcid);
        }
        self.tlb.flush_asid(pcid);
    }

    /// A TLB fill of the user page `vpn` (every fill the engine makes is a 4K user page).
    fn note_filled(&mut self, pcid: u16, vpn: u64) {
        if self.filled_overflow {
            return;
        }
        if self.filled.len() >= MAX_FILLED_TRACKED {
            self.filled_overflow = true;
            self.filled.clear();
        } else {
            self.filled.push((pcid, vpn));
        }
    }

    /// Records every 4K user page of `pcid` a full flush is about to drop: the filled pages of
    /// `pcid` still cached, or, if too many were filled to track, every one a scan finds (and
    /// then the other address spaces' cached pages become the new list).
    fn note_flushed_asid(&mut self, pcid: u16) {
        if !self.filled_overflow {
            let Cpu { tlb, filled, .. } = self;
            let mut dropped = std::mem::take(&mut self.flushed);
            filled.retain(|&(p, vpn)| {
                if p != pcid {
                    return true;
                }
                // Every user fill of the engine is a 4K page.
                if tlb.peek_sized(vpn << PAGE_SHIFT, pcid, PageSize::Size4K).is_some() {
                    if let Err(i) = dropped.binary_search(&vpn) {
                        dropped.insert(i, vpn);
                    }
                }
                false
            });
            self.flushed = dropped;
            if self.flushed.len() >= MAX_FLUSHED_TRACKED {
                self.flushed.clear();
            }
            return;
        }
        let Cpu { tlb, flushed, filled, .. } = self;
        if flushed.len() >= MAX_FLUSHED_TRACKED {
            flushed.clear();
        }
        let user_4k = |e: &crate::hw::tlb::Entry| !e.global && e.size == PageSize::Size4K;
        filled.clear();
        for (_, e) in tlb.entries().filter(|(_, e)| user_4k(e)) {
            if e.asid == pcid {
                flushed.push(e.vpn);
            } else {
                filled.push((e.asid, e.vpn));
            }
        }
        flushed.sort_unstable();
        flushed.dedup();
        self.filled_overflow = filled.len() > MAX_FILLED_TRACKED;
        if self.filled_overflow {
            filled.clear();
        }
    }
}

struct Task {
    program: Box<dyn Program>,
    mm: MmId,
    regs: [u64; NR_REGS],
    gathered: Vec<u64>,
    iterations: u64,
    measured: u64,
    buf: Vec<Op>,
    /// The CPU the task is bound to (will-it-scale and the model never migrate tasks).
    cpu: u32,
    /// Steps of the system call or fault the task was in when it left the CPU.
    saved: VecDeque<Step>,
    /// When it last got its CPU, for its time slice.
    on_cpu_since: Ps,
}

/// The result of one simulation run (before it is wrapped with its configuration).
#[derive(Debug, Clone)]
pub struct RunStats {
    /// Loop iterations per task inside the measured interval.
    pub iterations: Vec<u64>,
    pub measured: Ps,
    pub counters: Counters,
    /// Per CPU, time by bucket, inside the measured interval.
    pub attribution: Vec<[Ps; NR_BUCKETS]>,
}

pub struct Simulation {
    topo: Topology,
    costs: Costs,
    kernel: KernelConfig,
    policy: RangePolicy,
    pcid: bool,
    range_sizes: (u64, u64),
    cpus: Vec<Cpu>,
    csqs: Vec<CallQueue>,
    /// The CPUs whose `tlb_state.is_lazy` is set (a mirror, so choosing a shootdown's targets is
    /// mask arithmetic instead of a visit to every CPU of `mm_cpumask`).
    lazy: crate::hw::cpumask::CpuMask,
    tasks: Vec<Task>,
    mms: Vec<Mm>,
    files: Vec<Vec<u64>>,
    frames: Frames,
    oracle: Oracle,
    shootdowns: Vec<Shootdown>,
    /// Finished shootdown slots, reused so memory stays flat over long runs.
    free_shootdowns: Vec<usize>,
    agenda: Agenda,
    /// Scratch for IPI fan-outs and lock wake-ups.
    fan: Vec<(u32, Ps)>,
    woken: Vec<usize>,
    counters: Counters,
    next_ctx_id: u64,
    /// The kernel's own translations per path, when `kernel_tlb` is on and the CPU is x86.
    text: Option<KernelText>,
}

const NO_PAGE: u64 = u64::MAX;

impl Simulation {
    pub fn new(profile: &MachineProfile, kernel: KernelConfig) -> Simulation {
        let topo = Topology::from_profile(&profile.topology);
        let policy = match (kernel.flush.policy, kernel.shift_from_table) {
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
        let cpus = (0..topo.cpus())
            .map(|_| Cpu {
                tlb: Box::new(profile.build_tlb()),
                st: TlbState::default(),
                task: None,
                steps: VecDeque::new(),
                runq: VecDeque::new(),
                arrivals: Vec::new(),
                irq_pending: false,
                taken: VecDeque::new(),
                in_irq: false,
                waiting: None,
                step_at: None,
                busy_until: Ps::ZERO,
                time: [Ps::ZERO; NR_BUCKETS],
                flushed: Default::default(),
                filled: Vec::new(),
                filled_overflow: false,
                pti: kernel.flush.pti && profile.cpu.features.pti,
                user_flush_pending: false,
                kpaths: Box::new([NO_KPATH; NR_PATHS]),
            })
            .collect();
        // Linux uses PCID for user address spaces since v4.14 (with the generation-tracked
        // ASID slots); before, every CR3 load flushed.
        let pcid = profile.cpu.features.pcid && kernel.flush.generations;
        // Where lazy CPUs get every flush IPI, none may keep a stale translation either.
        let mut oracle = Oracle::default();
        // The layout is an x86-64 kernel's: other architectures' kernels map themselves
        // differently (seed 003's 8xx is its own layout, not modelled yet).
        let x86 = matches!(profile.cpu.vendor.as_str(), "intel" | "amd");
        let text = (kernel.flush.kernel_tlb && x86).then(|| {
            let gbpages = profile.tlb.structures.iter().any(|s| {
                s.serves != crate::hw::tlb::Serves::Instruction && s.page_sizes.contains(&PageSize::Size1G)
            });
            let map = Mapping { pti: kernel.flush.pti && profile.cpu.features.pti, pcid, gbpages };
            KernelText::new(&LAYOUT, map)
        });
        oracle.lazy_cpus_flushed = kernel.flush.lazy_ipis == crate::kernel::tlbflush::LazyIpis::Send;
        // Under PTI every kernel entry and exit switches CR3 (v4.15+ entry code): a system call
        // pays it at both halves, a fault once.
        let mut costs = Costs::new(profile);
        if kernel.flush.pti && profile.cpu.features.pti {
            let adder = Ps::from_ns(profile.kernel.pti_entry_exit_ns.as_ref().map_or(0.0, |c| c.value));
            costs.syscall_half += Ps(adder.0 / 2);
            costs.fault += adder;
        }
        Simulation {
            topo,
            costs,
            kernel,
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
            lazy: crate::hw::cpumask::CpuMask::new(),
            tasks: Vec::new(),
            mms: Vec::new(),
            files: Vec::new(),
            frames: Frames::new(),
            oracle,
            shootdowns: Vec::new(),
            free_shootdowns: Vec::new(),
            agenda: Agenda::new(topo.cpus()),
            fan: Vec::new(),
            woken: Vec::new(),
            counters: Counters::default(),
            next_ctx_id: 1,
            text,
        }
    }

    pub fn cpus(&self) -> u32 {
        self.topo.cpus()
    }

    /// A new, empty address space.
    pub fn add_mm(&mut self) -> MmId {
        let id = self.mms.len() as MmId;
        self.mms.push(Mm::new(id, self.next_ctx_id));
        self.next_ctx_id += 1;
        id
    }

    /// Maps `len` bytes of anonymous memory in `mm`, every page present and written, at no
    /// simulated time: what a benchmark's untimed setup leaves behind (ebizzy's main thread fills
    /// its chunks before it lets the workers go). Returns the start address.
    pub fn map_populated(&mut self, mm: MmId, len: u64) -> u64 {
        let start = self.mms[mm as usize].mmap(len, Backing::Anon, true);
        let mut a = start;
        while a < start + len {
            let pfn = self.frames.alloc(Owner::Anon { mm, vpn: a >> PAGE_SHIFT });
            self.mms[mm as usize].set_pte(a, Pte { pfn, present: true, writable: true, dirty: true });
            a += PAGE_SIZE;
        }
        start
    }

    /// Binds a task running `program` in `mm` to `cpu` (one task per CPU), starting at time 0.
    pub fn add_task(&mut self, program: Box<dyn Program>, mm: MmId, cpu: u32) {
        self.add_task_at(program, mm, cpu, Ps::ZERO);
    }

    /// As `add_task`, starting at `start`.
    pub fn add_task_at(&mut self, program: Box<dyn Program>, mm: MmId, cpu: u32, start: Ps) {
        assert!(cpu < self.cpus(), "cpu {cpu} does not exist");
        let t = self.tasks.len();
        self.tasks.push(Task {
            program,
            mm,
            regs: [0; NR_REGS],
            gathered: Vec::new(),
            iterations: 0,
            measured: 0,
            buf: Vec::new(),
            cpu,
            saved: VecDeque::new(),
            on_cpu_since: start,
        });
        let c = &mut self.cpus[cpu as usize];
        if c.task.is_some() {
            // A second task on a busy CPU waits for a time slice.
            assert!(
                self.costs.context_switch.is_some(),
                "tasks sharing a CPU need kernel.context_switch_ns in the machine profile"
            );
            c.runq.push_back(t);
            return;
        }
        c.task = Some(t);
        self.switch_mm(cpu, mm);
        self.cpus[cpu as usize].busy_until = start;
    }

    /// `switch_mm_irqs_off` to `mm` (v5.18, facts §1.7): the same mm is free unless the CPU was
    /// lazy and fell behind `mm->context.tlb_gen` (then one full flush); another mm joins
    /// `mm_cpumask` (the CPU leaves the old mm's) and picks an ASID slot, flushing it if stale.
    /// Returns whether it flushed.
    ///
    /// v3.x (no generations, lazy CPUs get every flush IPI): a lazy CPU still in `mm_cpumask`
    /// missed no flush and reloads nothing; one a flush IPI made `leave_mm` has `loaded_mm`
    /// none here, so it takes the other-mm path: rejoin the mask and load CR3 (no PCID before
    /// v4.14: a full flush). v3.10-v3.13 `switch_mm`, prev == next branch.
    fn switch_mm(&mut self, cpu: u32, mm: MmId) -> bool {
        let m = &mut self.mms[mm as usize];
        let c = &mut self.cpus[cpu as usize];
        let was_lazy = std::mem::replace(&mut c.st.is_lazy, false);
        self.lazy.clear(cpu);
        let gen_check = self.kernel.flush.generations
            || self.kernel.flush.lazy_ipis == crate::kernel::tlbflush::LazyIpis::Skip;
        let need_flush = if c.st.loaded_mm == Some(mm) {
            let asid = c.st.loaded_asid as usize;
            // Without generations the slot's tlb_gen is only set here, so the check is a
            // conservative stand-in, needed only when flushes may have skipped this CPU.
            was_lazy && gen_check && c.st.ctxs[asid].tlb_gen < m.tlb_gen
        } else {
            // Stop remote flushes for the previous mm (v3.x-v6.x switch_mm_irqs_off; lazily
            // left in the mask for flush IPIs to trim only since v6.12's "x86,tlb: update
            // mm_cpumask lazily").
            if let Some(prev) = c.st.loaded_mm {
                self.mms[prev as usize].cpumask.clear(cpu);
            }
            let m = &mut self.mms[mm as usize];
            m.cpumask.set(cpu);
            m.ever_loaded.set(cpu);
            let (asid, need_flush) = c.st.choose_new_asid(m.ctx_id, m.tlb_gen, self.pcid);
            c.st.loaded_asid = asid;
            c.st.loaded_mm = Some(mm);
            need_flush
        };
        if need_flush {
            let m = &self.mms[mm as usize];
            let asid = c.st.loaded_asid as usize;
            c.st.ctxs[asid] = crate::kernel::tlbflush::TlbContext { ctx_id: m.ctx_id, tlb_gen: m.tlb_gen };
            let pcid = c.st.pcid();
            c.flush_asid(pcid);
        }
        need_flush
    }

    /// CFS's slice for `nr` equal-weight runnable tasks (kernel/sched/fair.c, v5.18):
    /// `max(sched_latency / nr, min_granularity)`, both scaled by `1 + ilog2(min(cpus, 8))`.
    fn time_slice(&self, nr: usize) -> Ps {
        let factor = 1 + (self.cpus().min(8) as u64).ilog2() as u64;
        let latency = Ps::US * 6_000 * factor;
        let min_gran = Ps::US * 750 * factor;
        Ps(latency.0 / nr.max(1) as u64).max(min_gran)
    }

    /// `__schedule()` on `cpu` to `next`, which was runnable: `switch_mm`, restore the steps it
    /// was in. The previous task must already be off the CPU. Returns the cost.
    fn switch_to(&mut self, cpu: u32, next: usize, now: Ps) -> Ps {
        let c = &mut self.cpus[cpu as usize];
        debug_assert!(c.task.is_none() && c.steps.is_empty());
        c.task = Some(next);
        std::mem::swap(&mut c.steps, &mut self.tasks[next].saved);
        let mut d = self.context_switch(cpu);
        if self.switch_mm(cpu, self.tasks[next].mm) {
            self.counters.switch_flushes += 1;
            self.counters.full_flushes += 1;
            d += self.costs.full_flush;
            self.charge(cpu, Bucket::Sched, self.costs.full_flush);
        }
        self.tasks[next].on_cpu_since = now + d;
        d
    }

    /// `__schedule()` itself: counted and charged; the TLB work is the caller's.
    fn context_switch(&mut self, cpu: u32) -> Ps {
        self.counters.context_switches += 1;
        let d = self.costs.context_switch.expect("a context switch needs kernel.context_switch_ns");
        self.charge(cpu, Bucket::Sched, d);
        d + self.kernel_path(cpu, Path::ContextSwitch)
    }

    /// The kernel translations `path` needs on `cpu` (kernel/text.rs), in order: each a TLB
    /// lookup, and on a miss a walk and a fill (global or tagged with the loaded PCID, as the
    /// kernel maps it). Charged to page_walk; returns the walks' time.
    fn kernel_path(&mut self, cpu: u32, path: Path) -> Ps {
        let Some(text) = &self.text else { return Ps::ZERO };
        let c = &mut self.cpus[cpu as usize];
        let pcid = c.st.pcid();
        // The running task's stack, or the idle task's.
        let slot = c.task.unwrap_or(self.tasks.len() + cpu as usize);
        let touches = text.touches(path);
        let known = &c.kpaths[path as usize];
        let ways = &known.ways[..known.n as usize];
        if ways.len() == touches.len() && known.slot == slot && ways.iter().all(|w| c.tlb.still_hits(w, pcid))
        {
            for (t, w) in touches.iter().zip(ways) {
                c.tlb.rehit(w, t.kind, true);
            }
            return Ps::ZERO;
        }
        let mut d = Ps::ZERO;
        // Where each translation sits at level 1 after its lookup, for the next run.
        let mut known = KPathWays { slot, ..NO_KPATH };
        let mut all_known = touches.len() <= MAX_PATH_TOUCHES;
        for (i, t) in touches.iter().enumerate() {
            let va = match t.at {
                At::Fixed(va) => va,
                At::Stack => KernelText::stack_page(slot),
            };
            let a = Access { va, kind: t.kind, asid: pcid, kernel: true };
            // The payload is never read back: no kernel page is ever freed.
            let payload = TlbPayload::new(va >> PAGE_SHIFT, false);
            if c.tlb.lookup_or_fill_sized(a, Translation { size: t.size, payload, global: t.global })
                == Lookup::Miss
            {
                self.counters.kernel_tlb_misses += 1;
                let depth = self.costs.level_hit[t.kind as usize].last().copied().unwrap_or(Ps::ZERO);
                d += self.costs.walk + depth;
            }
            if all_known {
                match c.tlb.l1_way(a, t.size) {
                    Some(w) => known.ways[i] = w,
                    None => all_known = false,
                }
            }
        }
        c.time[Bucket::Walk as usize] += d;
        known.n = if all_known { touches.len() as u8 } else { 0 };
        c.kpaths[path as usize] = known;
        d
    }

    /// Takes the current task off `cpu` (its pending steps go with it) and runs the next
    /// runnable one, or idles in lazy TLB mode (`enter_lazy_tlb`: the mm stays loaded, remote
    /// flushers skip this CPU). Returns the cost.
    fn deschedule(&mut self, cpu: u32, requeue: bool, now: Ps) -> Ps {
        let c = &mut self.cpus[cpu as usize];
        let t = c.task.take().expect("a running task");
        std::mem::swap(&mut c.steps, &mut self.tasks[t].saved);
        if requeue {
            c.runq.push_back(t);
        }
        match self.cpus[cpu as usize].runq.pop_front() {
            Some(next) => self.switch_to(cpu, next, now),
            None => {
                let c = &mut self.cpus[cpu as usize];
                if c.st.loaded_mm.is_some() {
                    c.st.is_lazy = true;
                    self.lazy.set(cpu);
                }
                self.context_switch(cpu)
            }
        }
    }

    /// `try_to_wake_up` of task `t` (which now holds what it slept for): an idle CPU is kicked
    /// (a reschedule IPI's delivery); a busy one runs it after the current task's slice.
    fn wake(&mut self, t: usize, now: Ps) {
        let cpu = self.tasks[t].cpu;
        self.cpus[cpu as usize].runq.push_back(t);
        if self.cpus[cpu as usize].task.is_none() {
            let kick = self.costs.ipi.map_or(Ps::ZERO, |i| i.send + i.delivery);
            self.schedule(cpu, now + kick);
        }
    }

    fn schedule(&mut self, cpu: u32, at: Ps) {
        let c = &mut self.cpus[cpu as usize];
        let at = at.max(c.busy_until);
        if c.step_at.is_none_or(|t| at < t) {
            c.step_at = Some(at);
            self.requeue(cpu);
        }
    }

    /// Puts `cpu`'s next event (its next step or the next interrupt arrival) on the agenda.
    fn requeue(&mut self, cpu: u32) {
        let c = &self.cpus[cpu as usize];
        let next = match (c.step_at, c.arrivals.first()) {
            (Some(s), Some(&a)) => Some(s.min(a)),
            (s, a) => s.or(a.copied()),
        };
        if self.agenda.get(cpu) != next {
            self.agenda.set(cpu, next);
        }
    }

    /// An interrupt for `cpu` will arrive at `at`.
    fn send_ipi(&mut self, cpu: u32, at: Ps) {
        let a = &mut self.cpus[cpu as usize].arrivals;
        let i = a.partition_point(|&t| t <= at);
        a.insert(i, at);
        self.counters.ipis_sent += 1;
        self.requeue(cpu);
    }

    fn charge(&mut self, cpu: u32, b: Bucket, d: Ps) {
        self.cpus[cpu as usize].time[b as usize] += d;
    }

    /// Runs until `warmup + measure`; statistics cover `[warmup, warmup + measure)`.
    pub fn run(&mut self, warmup: Ps, measure: Ps) -> RunStats {
        for cpu in 0..self.cpus() {
            if self.cpus[cpu as usize].task.is_some() {
                self.schedule(cpu, Ps::ZERO);
            }
        }
        let end = warmup + measure;
        let mut snap: Option<(Counters, Vec<[Ps; NR_BUCKETS]>)> = None;
        while let Some((now, cpu)) = self.agenda.first() {
            if now >= end {
                break;
            }
            if snap.is_none() && now >= warmup {
                snap = Some(self.snapshot(warmup));
            }
            let c = &mut self.cpus[cpu as usize];
            if c.arrivals.first() == Some(&now) {
                // An arrival is noted before a step at the same instant, so that step takes it.
                c.arrivals.remove(0);
                c.irq_pending = true;
                if c.step_at.is_none() {
                    self.schedule(cpu, now);
                }
            } else {
                c.step_at = None;
                self.step(cpu, now, warmup, end);
            }
            self.requeue(cpu);
        }
        let start = snap.unwrap_or_else(|| self.snapshot(warmup));
        let end_snap = self.snapshot(end);
        RunStats {
            iterations: self.tasks.iter().map(|t| t.measured).collect(),
            measured: measure,
            counters: end_snap.0.minus(&start.0),
            attribution: end_snap
                .1
                .iter()
                .zip(&start.1)
                .map(|(e, s)| std::array::from_fn(|i| e[i] - s[i]))
                .collect(),
        }
    }

    /// Counters and attribution as of `at`: CPUs idle or spinning at `at` are charged up to it
    /// (so buckets only ever grow and window differences are exact up to one step).
    fn snapshot(&mut self, at: Ps) -> (Counters, Vec<[Ps; NR_BUCKETS]>) {
        self.counters.oracle_violations = self.oracle.violations;
        for cpu in 0..self.cpus() {
            self.charge_gap(cpu, at);
        }
        (self.counters, self.cpus.iter().map(|c| c.time).collect())
    }

    /// Charges the time since the CPU's last step up to `now`: spinning on a shootdown, or idle.
    fn charge_gap(&mut self, cpu: u32, now: Ps) {
        let c = &mut self.cpus[cpu as usize];
        if c.busy_until < now {
            let b = if c.waiting.is_some() { Bucket::IpiWait } else { Bucket::Idle };
            c.time[b as usize] += now - c.busy_until;
            c.busy_until = now;
        }
    }

    fn step(&mut self, cpu: u32, now: Ps, warmup: Ps, end: Ps) {
        let ci = cpu as usize;
        self.charge_gap(cpu, now);
        if self.cpus[ci].in_irq || self.cpus[ci].irq_pending {
            // The handler's kernel-text refills are charged as walks as they happen.
            let walks = self.cpus[ci].time[Bucket::Walk as usize];
            let d = if self.cpus[ci].in_irq {
                self.drain_taken(cpu, now)
            } else {
                self.cpus[ci].irq_pending = false;
                self.handle_irq(cpu, now)
            };
            let walked = self.cpus[ci].time[Bucket::Walk as usize] - walks;
            self.charge(cpu, Bucket::Handler, d - walked);
            self.finish_step(cpu, now + d);
            return;
        }
        if let Some(sd) = self.cpus[ci].waiting {
            let s = self.shootdowns[sd];
            if s.pending > 0 {
                return; // keep spinning; an ack or an IPI will wake us
            }
            let resume = s.last_ack.max(s.local_done);
            if resume > now {
                self.schedule(cpu, resume);
                return;
            }
            self.cpus[ci].waiting = None;
            self.free_shootdowns.push(sd);
        }
        let Some(t) = self.cpus[ci].task else {
            if let Some(next) = self.cpus[ci].runq.pop_front() {
                let d = self.switch_to(cpu, next, now);
                self.finish_step(cpu, now + d);
            }
            return;
        };
        // Preemption happens on the way back to user space: only between operations.
        if self.cpus[ci].steps.is_empty()
            && !self.cpus[ci].runq.is_empty()
            && now >= self.tasks[t].on_cpu_since + self.time_slice(self.cpus[ci].runq.len() + 1)
        {
            let d = self.deschedule(cpu, true, now);
            self.finish_step(cpu, now + d);
            return;
        }
        // Back to user space under PTI: a flush of the user PCID deferred by invalidate_user_asid
        // (SWITCH_TO_USER_CR3 writes CR3 without the no-flush bit), once however many full
        // flushes asked for it since.
        if self.cpus[ci].steps.is_empty() && self.cpus[ci].user_flush_pending {
            self.cpus[ci].user_flush_pending = false;
            self.counters.pti_user_flushes += 1;
            let d = self.costs.full_flush;
            self.charge(cpu, Bucket::FlushWork, d);
            self.finish_step(cpu, now + d);
            return;
        }
        let step = match self.cpus[ci].steps.pop_front() {
            Some(s) => s,
            None => {
                let task = &mut self.tasks[t];
                if task.buf.is_empty() {
                    task.program.next(&mut task.buf);
                    task.buf.reverse();
                }
                Step::Op(task.buf.pop().expect("a program always has a next operation"))
            }
        };
        if let Step::Op(Op::Iteration) = step {
            let task = &mut self.tasks[t];
            task.iterations += 1;
            if now >= warmup && now < end {
                task.measured += 1;
            }
            self.schedule(cpu, now);
            return;
        }
        let d = self.exec(cpu, t, step, now);
        self.finish_step(cpu, now + d);
    }

    /// Ends a step at `at`: the CPU continues then, unless it now spins on a shootdown.
    fn finish_step(&mut self, cpu: u32, at: Ps) {
        let c = &mut self.cpus[cpu as usize];
        c.busy_until = at;
        match c.waiting {
            Some(sd) => {
                let s = self.shootdowns[sd];
                if s.pending == 0 || c.irq_pending || c.in_irq {
                    self.schedule(cpu, at);
                }
            }
            None => self.schedule(cpu, at),
        }
    }

    fn reg_addr(&self, t: usize, a: Addr) -> u64 {
        self.tasks[t].regs[a.reg] + a.offset
    }

    /// Executes one step of task `t` on `cpu`; returns its duration.
    fn exec(&mut self, cpu: u32, t: usize, step: Step, now: Ps) -> Ps {
        let mm = self.tasks[t].mm;
        // System calls that change the address space run under mmap_lock (v5.18): mmap and
        // munmap for write, madvise(MADV_DONTNEED) for read.
        let step = match step {
            Step::Op(op @ (Op::Mmap { .. } | Op::Munmap { .. } | Op::MadviseDontneed { .. }))
                if self.kernel.flush.mmap_lock =>
            {
                let steps = &mut self.cpus[cpu as usize].steps;
                steps.push_front(Step::Locked(op));
                steps.push_front(Step::MmapLock { write: !matches!(op, Op::MadviseDontneed { .. }) });
                return Ps::ZERO;
            }
            Step::Locked(op) => Step::Op(op),
            s => s,
        };
        match step {
            Step::MmapLock { write } => {
                let (topo, lines) = (self.topo, self.costs.lines);
                let sem = &mut self.mms[mm as usize].mmap_lock;
                let d = sem.line.write(cpu, &topo, &lines);
                let got = sem.acquire(t, write);
                self.charge(cpu, Bucket::LockWait, d);
                if got {
                    return d;
                }
                self.counters.mmap_lock_sleeps += 1;
                d + self.deschedule(cpu, false, now + d)
            }
            Step::MmapUnlock { write } => {
                let (topo, lines) = (self.topo, self.costs.lines);
                let sem = &mut self.mms[mm as usize].mmap_lock;
                let d = sem.line.write(cpu, &topo, &lines);
                let mut woken = std::mem::take(&mut self.woken);
                sem.release(t, write, &mut woken);
                for &w in &woken {
                    self.wake(w, now + d);
                }
                woken.clear();
                self.woken = woken;
                self.charge(cpu, Bucket::LockWait, d);
                d
            }
            Step::Locked(_) => unreachable!("unwrapped above"),
            Step::Op(Op::Access { addr, kind }) => {
                let va = self.reg_addr(t, addr);
                self.access(cpu, t, mm, va, kind)
            }
            Step::Access { va, kind } => self.access(cpu, t, mm, va, kind),
            Step::Op(Op::Compute(d)) => {
                self.charge(cpu, Bucket::User, d);
                d
            }
            Step::Op(Op::CreateFile { pages, reg, cached }) => {
                let file = self.files.len() as u32;
                let slots =
                    (0..pages)
                        .map(|index| {
                            if cached {
                                self.frames.alloc(Owner::PageCache { file, index })
                            } else {
                                NO_PAGE
                            }
                        })
                        .collect();
                self.files.push(slots);
                self.tasks[t].regs[reg] = file as u64;
                // open + ftruncate + unlink
                let d = self.costs.syscall_half * 6;
                self.charge(cpu, Bucket::Syscall, d);
                d
            }
            Step::Op(Op::Mmap { len, kind, reg }) => {
                let backing = match kind {
                    MapKind::Anon => Backing::Anon,
                    MapKind::FilePrivate { file_reg } => {
                        Backing::FilePrivate(self.tasks[t].regs[file_reg] as u32)
                    }
                    MapKind::FileShared { file_reg } => {
                        Backing::FileShared(self.tasks[t].regs[file_reg] as u32)
                    }
                };
                self.tasks[t].regs[reg] = self.mms[mm as usize].mmap(len, backing, true);
                if self.kernel.flush.mmap_lock {
                    self.cpus[cpu as usize].steps.push_front(Step::MmapUnlock { write: true });
                }
                let d = self.costs.syscall_half * 2;
                self.charge(cpu, Bucket::Syscall, d);
                d + self.kernel_path(cpu, Path::SyscallEntry)
                    + self.kernel_path(cpu, Path::Mmap)
                    + self.kernel_path(cpu, Path::SyscallExit)
            }
            Step::Op(Op::Munmap { addr }) => {
                let start = self.reg_addr(t, addr);
                let vma = self.mms[mm as usize].remove_vma(start).expect("munmap of an unmapped address");
                let zapped = zap_vma(&vma);
                self.gather(t, mm, &zapped);
                let dirty = matches!(vma.backing, Backing::FileShared(_)) && zapped.iter().any(|z| z.1.dirty);
                self.mms[mm as usize].tlb_flush_pending += 1;
                // Page tables existed only if something was mapped: then free_pgtables sets
                // freed_tables and the flush must reach lazy CPUs too.
                self.queue_zap_flush(cpu, vma.start, vma.end, !zapped.is_empty(), true, dirty);
                let d = self.costs.syscall_half + self.costs.zap_pte * zapped.len() as u64;
                self.charge(cpu, Bucket::Syscall, d);
                d + self.kernel_path(cpu, Path::SyscallEntry) + self.kernel_path(cpu, Path::Munmap)
            }
            Step::Op(Op::MadviseDontneed { addr, len }) => {
                let start = self.reg_addr(t, addr);
                let m = &mut self.mms[mm as usize];
                let zapped = m.zap_range(start, start + len);
                let dirty = zapped.iter().any(|&(a, p)| {
                    p.dirty && m.vma(a).is_some_and(|v| matches!(v.backing, Backing::FileShared(_)))
                });
                m.tlb_flush_pending += 1;
                self.gather(t, mm, &zapped);
                self.queue_zap_flush(cpu, start, start + len, !zapped.is_empty(), false, dirty);
                let d = self.costs.syscall_half + self.costs.zap_pte * zapped.len() as u64;
                self.charge(cpu, Bucket::Syscall, d);
                d + self.kernel_path(cpu, Path::SyscallEntry) + self.kernel_path(cpu, Path::Madvise)
            }
            Step::Op(Op::Iteration) => unreachable!("counted in step()"),
            Step::Fault { addr, write } => self.fault(cpu, mm, addr, write),
            Step::Flush { start, end, freed_tables } => {
                self.flush_tlb_mm_range(cpu, mm, start, end, freed_tables, now)
            }
            Step::ForcedFlush { start, end } => {
                self.counters.dirty_pte_flushes += 1;
                self.flush_tlb_mm_range(cpu, mm, start, end, false, now)
            }
            Step::FinishMmu { start, end, cleared, freed_tables, flushed } => {
                if self.mms[mm as usize].tlb_flush_pending > 1 {
                    self.counters.nested_flushes += 1;
                    self.flush_tlb_mm_range(cpu, mm, 0, TLB_FLUSH_ALL, true, now)
                } else if cleared && !flushed {
                    self.flush_tlb_mm_range(cpu, mm, start, end, freed_tables, now)
                } else {
                    Ps::ZERO
                }
            }
            Step::EndGather => {
                self.mms[mm as usize].tlb_flush_pending -= 1;
                Ps::ZERO
            }
            Step::SetPte { addr, pte } => {
                self.mms[mm as usize].set_pte(addr, pte);
                Ps::ZERO
            }
            Step::FreeGathered => {
                let pages = std::mem::take(&mut self.tasks[t].gathered);
                for &pfn in &pages {
                    self.oracle.check_free(pfn, &self.frames, &self.mms, &self.cpus, |c| (&c.tlb, &c.st));
                    self.frames.free(pfn);
                }
                self.counters.pages_freed += pages.len() as u64;
                // release_pages after the flush (tlb_finish_mmu -> tlb_flush_mmu_free).
                let mut d = self.costs.page_free * pages.len() as u64;
                self.charge(cpu, Bucket::Syscall, d);
                if !pages.is_empty() {
                    d += self.kernel_path(cpu, Path::FreePages);
                }
                self.tasks[t].gathered = pages;
                self.tasks[t].gathered.clear();
                d
            }
            Step::SyscallExit => {
                self.charge(cpu, Bucket::Syscall, self.costs.syscall_half);
                self.costs.syscall_half + self.kernel_path(cpu, Path::SyscallExit)
            }
        }
    }

    /// `mmu_gather`: anonymous pages are freed after the flush; page-cache pages stay cached.
    fn gather(&mut self, t: usize, mm: MmId, zapped: &[(u64, Pte)]) {
        for &(addr, pte) in zapped {
            // The frame keeps its owner until it is freed: until then a stale TLB entry may
            // still legally reach it.
            if self.frames.owner(pte.pfn) == (Owner::Anon { mm, vpn: addr >> PAGE_SHIFT }) {
                self.tasks[t].gathered.push(pte.pfn);
            }
        }
    }

    /// The rest of a zap (v5.18 `zap_pte_range` / `tlb_finish_mmu`), queued: a flush forced by
    /// dirty shared-file PTEs (`dirty`), then the free, then `tlb_finish_mmu`'s flush (skipped
    /// if forced already, unless nested), then return to user space. With the unsafe
    /// `free_before_flush` knob the pages are freed before any flush.
    fn queue_zap_flush(
        &mut self,
        cpu: u32,
        start: u64,
        end: u64,
        cleared: bool,
        freed_tables: bool,
        dirty: bool,
    ) {
        let steps = &mut self.cpus[cpu as usize].steps;
        let forced = dirty && cleared;
        let finish = Step::FinishMmu { start, end, cleared, freed_tables, flushed: forced };
        let order: &[Step] = match (self.kernel.flush.free_before_flush, forced) {
            (true, true) => &[Step::FreeGathered, Step::ForcedFlush { start, end }, finish, Step::EndGather],
            (true, false) => &[Step::FreeGathered, finish, Step::EndGather],
            // The forced flush frees the batch at once (v5.18 zap_pte_range's tlb_flush_mmu).
            (false, true) => &[Step::ForcedFlush { start, end }, Step::FreeGathered, finish, Step::EndGather],
            (false, false) => &[finish, Step::FreeGathered, Step::EndGather],
        };
        // The flush and the free happen under mmap_lock; the unlock comes before the return.
        // munmap, the only caller that frees page tables, holds it for write.
        steps.push_front(Step::SyscallExit);
        if self.kernel.flush.mmap_lock {
            steps.push_front(Step::MmapUnlock { write: freed_tables });
        }
        for s in order.iter().rev() {
            steps.push_front(*s);
        }
    }

    /// A user access: TLB lookup, page walk on a miss, fault if the PTE does not allow it.
    fn access(&mut self, cpu: u32, t: usize, mm: MmId, va: u64, kind: AccessKind) -> Ps {
        let write = kind == AccessKind::Store;
        let c = &mut self.cpus[cpu as usize];
        let pcid = c.st.pcid();
        // Every user translation of the engine is a 4K page: the kernel's 2M and 1G entries
        // need not be probed for.
        let a = Access { va, kind, asid: pcid, kernel: false };
        match c.tlb.lookup_sized(a, PageSize::Size4K) {
            Lookup::Hit { level, payload, .. } => {
                let (pfn, writable) = (payload.pfn(), payload.writable());
                self.oracle.check_access(pfn, mm, va, &self.frames);
                let d = self.costs.level_hit[kind as usize][level as usize - 1] + self.costs.user_access;
                if write && !writable {
                    // A write through a read-only entry faults; the CPU drops the entry.
                    self.cpus[cpu as usize].tlb.invlpg(va, pcid);
                    self.push_fault(cpu, va, kind, write);
                }
                self.charge(cpu, Bucket::User, d);
                d
            }
            Lookup::Miss => {
                self.counters.tlb_misses += 1;
                let depth = self.costs.level_hit[kind as usize].last().copied().unwrap_or(Ps::ZERO);
                let walk = self.costs.walk + depth;
                self.charge(cpu, Bucket::Walk, walk);
                match self.mms[mm as usize].pte(va) {
                    Some(p) if p.present && (p.writable || !write) => {
                        let c = &mut self.cpus[cpu as usize];
                        if c.take_flushed(va >> PAGE_SHIFT) {
                            self.counters.tlb_misses_after_flush += 1;
                        }
                        let payload = TlbPayload::new(p.pfn, p.writable);
                        c.tlb.fill(a, Translation { size: PageSize::Size4K, payload, global: false });
                        c.note_filled(pcid, va >> PAGE_SHIFT);
                        self.oracle.note_fill(cpu, p.pfn);
                        self.charge(cpu, Bucket::User, self.costs.user_access);
                        walk + self.costs.user_access
                    }
                    Some(_) => {
                        // The fault installs a new translation: a miss on it is not the flush's.
                        self.cpus[cpu as usize].take_flushed(va >> PAGE_SHIFT);
                        self.push_fault(cpu, va, kind, write);
                        walk
                    }
                    None => {
                        panic!("task {t} touched unmapped address {va:#x} (SIGSEGV in the workload model)")
                    }
                }
            }
        }
    }

    /// Queues the fault, then the access again (the faulting instruction restarts).
    /// The handler runs under `mmap_read_lock` (v5.18; per-VMA locks came in v6.4).
    fn push_fault(&mut self, cpu: u32, va: u64, kind: AccessKind, write: bool) {
        let lock = self.kernel.flush.mmap_lock;
        let steps = &mut self.cpus[cpu as usize].steps;
        steps.push_front(Step::Access { va, kind });
        if lock {
            steps.push_front(Step::MmapUnlock { write: false });
        }
        steps.push_front(Step::Fault { addr: va, write });
        if lock {
            steps.push_front(Step::MmapLock { write: false });
        }
    }

    /// A page-cache page of `file`, read in (zero-filled: the files are sparse) if absent.
    fn page_cache_page(&mut self, cpu: u32, file: u32, index: u64) -> (u64, Ps) {
        let slot = self.files[file as usize][index as usize];
        if slot != NO_PAGE {
            return (slot, Ps::ZERO);
        }
        let pfn = self.frames.alloc(Owner::PageCache { file, index });
        self.files[file as usize][index as usize] = pfn;
        self.counters.pages_zeroed += 1;
        // filemap_add_folio charges and LRU-adds the new page as an anonymous one would be.
        self.charge(cpu, Bucket::Fault, self.costs.page_alloc);
        self.charge(cpu, Bucket::Zeroing, self.costs.clear_page);
        (pfn, self.costs.page_alloc + self.costs.clear_page)
    }

    /// The page-fault handler (mm/memory.c, v5.18): anonymous, zero page, file read with
    /// fault-around, COW of private file pages, shared-file write notify.
    fn fault(&mut self, cpu: u32, mm: MmId, va: u64, write: bool) -> Ps {
        self.counters.page_faults += 1;
        let addr = va & !(PAGE_SIZE - 1);
        let vpn = addr >> PAGE_SHIFT;
        let (backing, index, vstart, vend) = {
            let v = self.mms[mm as usize].vma(addr).expect("fault outside a VMA");
            (v.backing, v.file_index(addr), v.start, v.end)
        };
        let pte = self.mms[mm as usize].pte(addr).unwrap();
        let mut d = self.costs.fault + self.kernel_path(cpu, Path::Fault);
        self.charge(cpu, Bucket::Fault, self.costs.fault);
        // A new anonymous page: allocated, charged and LRU-added (fault time), then zeroed or
        // copied (zero_copy time).
        let anon_page = |s: &mut Simulation, copy: bool| {
            let pfn = s.frames.alloc(Owner::Anon { mm, vpn });
            let c = if copy {
                s.counters.pages_copied += 1;
                s.costs.copy_page
            } else {
                s.counters.pages_zeroed += 1;
                s.costs.clear_page
            };
            s.charge(cpu, Bucket::Fault, s.costs.page_alloc);
            s.charge(cpu, Bucket::Zeroing, c);
            (pfn, s.costs.page_alloc + c)
        };
        let new_pte = match (backing, pte.present, write) {
            // A write fault on a PTE that already allows it: another CPU upgraded it in place
            // while this one held the old read-only entry (handle_pte_fault's spurious-fault
            // path; flush_tlb_fix_spurious_fault is a no-op on x86). The retry refills.
            (_, true, true) if pte.writable => return d,
            // Permission upgrade of a present PTE.
            (Backing::FileShared(_), true, true) => {
                // do_wp_page -> wp_page_shared: page_mkwrite, make writable and dirty; no flush
                // on x86.
                Pte { writable: true, dirty: true, ..pte }
            }
            (_, true, true) => {
                // wp_page_copy: new page, then ptep_clear_flush of the old PTE, then install.
                let (pfn, c) = anon_page(self, pte.pfn != ZERO_PFN);
                d += c;
                self.mms[mm as usize].set_pte(addr, Pte::default());
                self.counters.cow_flushes += 1;
                let steps = &mut self.cpus[cpu as usize].steps;
                steps.push_front(Step::SetPte {
                    addr,
                    pte: Pte { pfn, present: true, writable: true, dirty: true },
                });
                steps.push_front(Step::Flush { start: addr, end: addr + PAGE_SIZE, freed_tables: false });
                return d;
            }
            (_, true, false) => return d, // raced with another fault: nothing to do
            (Backing::Anon, false, false) => {
                Pte { pfn: ZERO_PFN, present: true, writable: false, dirty: false }
            }
            (Backing::Anon, false, true) => {
                let (pfn, c) = anon_page(self, false);
                d += c;
                Pte { pfn, present: true, writable: true, dirty: true }
            }
            (Backing::FilePrivate(f), false, true) => {
                // do_cow_fault: read the file page, copy it into a new anonymous page.
                let (_, c0) = self.page_cache_page(cpu, f, index);
                let (pfn, c) = anon_page(self, true);
                d += c0 + c;
                Pte { pfn, present: true, writable: true, dirty: true }
            }
            (Backing::FileShared(f), false, true) => {
                let (pfn, c) = self.page_cache_page(cpu, f, index);
                d += c;
                Pte { pfn, present: true, writable: true, dirty: true }
            }
            (Backing::FilePrivate(f) | Backing::FileShared(f), false, false) => {
                // do_read_fault: do_fault_around first (filemap_map_pages visits every cached
                // page of the 16-page aligned window, mapping read-only those whose PTE is
                // none); a faulting page that was not cached is then read in by __do_fault.
                let was_cached = self.files[f as usize][index as usize] != NO_PAGE;
                let (pfn, c) = self.page_cache_page(cpu, f, index);
                d += c;
                let win = FAULT_AROUND_PAGES * PAGE_SIZE;
                let (ws, we) = ((addr & !(win - 1)).max(vstart), ((addr & !(win - 1)) + win).min(vend));
                let mut visited = was_cached as u64;
                let mut a = ws;
                while a < we {
                    if a != addr {
                        let i = (a - vstart) >> PAGE_SHIFT;
                        let cached = self.files[f as usize][i as usize];
                        let m = &mut self.mms[mm as usize];
                        if cached != NO_PAGE {
                            visited += 1;
                            if !m.pte(a).unwrap().present {
                                m.set_pte(
                                    a,
                                    Pte { pfn: cached, present: true, writable: false, dirty: false },
                                );
                            }
                        }
                    }
                    a += PAGE_SIZE;
                }
                let around = self.costs.fault_around_page * visited;
                self.charge(cpu, Bucket::Fault, around);
                d += around;
                Pte { pfn, present: true, writable: false, dirty: false }
            }
        };
        self.mms[mm as usize].set_pte(addr, new_pte);
        d
    }

    /// `flush_tlb_func` on `cpu` for `info`; returns its cost. Local (initiator) or remote.
    fn run_flush_func(&mut self, cpu: u32, info: &FlushInfo) -> Ps {
        let mut cost = Ps::ZERO;
        let knobs = self.kernel.flush;
        let (topo, lines) = (self.topo, self.costs.lines);
        let Simulation { cpus, mms, counters, costs, lazy, .. } = &mut *self;
        let m = &mut mms[info.mm as usize];
        let c = &mut cpus[cpu as usize];
        let action = flush_tlb_func(&mut c.st, info, &knobs, || {
            counters.tlb_gen_reads += 1;
            let before = m.tlb_gen_line.stats.transfers;
            cost += m.tlb_gen_line.read(cpu, &topo, &lines);
            counters.tlb_gen_transfers += m.tlb_gen_line.stats.transfers - before;
            m.tlb_gen
        });
        let pcid = c.st.pcid();
        match action {
            FlushAction::WrongMm => m.cpumask.clear(cpu),
            FlushAction::LeaveLazy => {
                // v4.14+ switch_mm_irqs_off(NULL, &init_mm) / v3.13 leave_mm(): leave the mm
                // (no more flush IPIs for it), which also flushes; switch_mm reloads on return.
                m.cpumask.clear(cpu);
                c.st.loaded_mm = None;
                c.st.is_lazy = false;
                lazy.clear(cpu);
                c.flush_asid(pcid);
                counters.lazy_leaves += 1;
                counters.full_flushes += 1;
                cost += costs.full_flush;
            }
            FlushAction::EarlyReturn => {
                counters.early_returns += 1;
                counters.flushes_skipped += 1;
            }
            FlushAction::UpToDate => counters.flushes_skipped += 1,
            FlushAction::Partial { start, nr, stride_shift } => {
                for i in 0..nr {
                    let va = start + (i << stride_shift);
                    if c.tlb.invlpg(va, pcid) > 0 && stride_shift == PAGE_SHIFT {
                        c.note_flushed(va >> PAGE_SHIFT);
                    }
                }
                counters.partial_flushes += 1;
                counters.invlpg += nr;
                cost += costs.invlpg * nr;
                // flush_tlb_one_user (v5.18) under PTI: the user PCID's copy too, with INVPCID,
                // or by a full flush of it on the way back to user space.
                if c.pti {
                    match costs.invpcid_single {
                        Some(one) => cost += one * nr,
                        None => c.user_flush_pending = true,
                    }
                }
            }
            FlushAction::Full => {
                c.flush_asid(pcid);
                counters.full_flushes += 1;
                cost += costs.full_flush;
            }
        }
        cost
    }

    /// `flush_tlb_mm_range` (v5.18 arch/x86/mm/tlb.c): bump `mm->tlb_gen`, choose the range,
    /// send IPIs to the other CPUs of `mm_cpumask` (lazy ones per `lazy_ipis`: v4.19+ skips
    /// them unless page tables were freed, v3.x-v4.18 sends to them too), flush locally
    /// (concurrently or first, per knob), then wait for every ack.
    fn flush_tlb_mm_range(
        &mut self,
        cpu: u32,
        mm: MmId,
        start: u64,
        end: u64,
        freed_tables: bool,
        now: Ps,
    ) -> Ps {
        self.counters.flush_requests += 1;
        let (topo, lines) = (self.topo, self.costs.lines);
        // Refills of the kernel code and data this path runs on (charged as page walks).
        let text = self.kernel_path(cpu, Path::FlushInitiator);
        let now = now + text;
        let m = &mut self.mms[mm as usize];
        // The call's own work (flush_tlb_info set-up, cpumask scan, IRQ and preemption toggles),
        // then inc_mm_tlb_gen: an atomic RMW on the contended line (v4.14+; v3.x had none).
        let mut d = self.costs.flush_call;
        if self.kernel.flush.generations {
            d += m.tlb_gen_line.write(cpu, &topo, &lines);
        }
        m.tlb_gen += 1;
        let inputs = RangeInputs {
            lld_4k: self.range_sizes.0,
            lli_4k: self.range_sizes.1,
            total_vm: m.total_vm(),
            vm_exec: false,
            vm_hugetlb: false,
            range_has_huge_pmd: false,
        };
        let r = decide_range(self.policy, start, end, PAGE_SHIFT, &inputs);
        let info = FlushInfo {
            mm,
            start: r.start,
            end: r.end,
            stride_shift: r.stride_shift,
            freed_tables,
            new_tlb_gen: m.tlb_gen,
            initiator: cpu,
        };
        let lazy_too = self.kernel.flush.lazy_ipis.targets_lazy(freed_tables);
        let mut targets = if lazy_too { m.cpumask } else { m.cpumask.and_not(&self.lazy) };
        targets.clear(cpu);
        let loaded_here = self.cpus[cpu as usize].st.loaded_mm == Some(mm);
        let local = |s: &mut Simulation| {
            if loaded_here {
                s.run_flush_func(cpu, &info)
            } else {
                Ps::ZERO
            }
        };
        if targets.is_empty() {
            let l = local(self);
            self.charge(cpu, Bucket::FlushWork, d + l);
            return text + d + l;
        }
        let ipi = self.costs.ipi.expect("a machine with several CPUs has IPI costs");
        self.counters.shootdowns += 1;
        let mut pre = Ps::ZERO;
        if !self.kernel.flush.concurrent_local {
            pre = local(self);
        }
        // smp_call_function_many_cond (kernel/smp.c, v5.18): per target, csd_lock and fill the
        // sender's csd for it (a store to a line the target wrote last, at its previous unlock),
        // then llist_add it to the target's call_single_queue (an RMW on the queue head). Only
        // targets whose queue was empty get an IPI (with coalesce_ipis; v3.4 always sends).
        let sd = self.free_shootdowns.pop().unwrap_or(self.shootdowns.len());
        let t0 = now + d + pre;
        let mut send = Ps::ZERO;
        let mut ipi_mask = crate::hw::cpumask::CpuMask::new();
        let coalesce = self.kernel.flush.coalesce_ipis;
        for t in targets.iter() {
            let q = &mut self.csqs[t as usize];
            send += lines.transfer(topo.distance(cpu, t));
            send += q.head.rmw(cpu, &topo, &lines);
            let at = t0 + send;
            if q.entries.is_empty() || !coalesce {
                ipi_mask.set(t);
            }
            // Senders run in step order, not enqueue order: keep the queue sorted by time.
            let csd = Csd { at, shootdown: sd as u32 };
            if q.entries.back().is_none_or(|b| b.at <= at) {
                q.entries.push_back(csd);
            } else {
                let i = q.entries.partition_point(|e| e.at <= at);
                q.entries.insert(i, csd);
            }
        }
        let mut fan = std::mem::take(&mut self.fan);
        let (busy, _) = ipi.fanout_into(&ipi_mask, &mut fan);
        let icr_t0 = t0 + send;
        send += busy;
        for &(t, at) in &fan {
            self.send_ipi(t, icr_t0 + at);
        }
        self.fan = fan;
        let post = if self.kernel.flush.concurrent_local { local(self) } else { Ps::ZERO };
        let local_done = t0 + send + post;
        let record =
            Shootdown { info, initiator: cpu, pending: targets.weight(), last_ack: Ps::ZERO, local_done };
        if sd == self.shootdowns.len() {
            self.shootdowns.push(record);
        } else {
            self.shootdowns[sd] = record;
        }
        self.charge(cpu, Bucket::FlushWork, d + pre + post);
        self.charge(cpu, Bucket::IpiSend, send);
        d += pre + send + post;
        self.cpus[cpu as usize].waiting = Some(sd);
        text + d
    }

    /// The call-function interrupt (`generic_smp_call_function_single_interrupt` ->
    /// `flush_smp_call_function_queue`, v5.18): entry, `llist_del_all` of the queue, then for
    /// each request in order `flush_tlb_func` and `csd_unlock` (the acknowledgement the sender
    /// spins on), exit. Returns the time this step took; the handler may go on in later steps
    /// (see [`Self::drain_taken`]).
    fn handle_irq(&mut self, cpu: u32, now: Ps) -> Ps {
        let ipi = self.costs.ipi.expect("IPIs need IPI costs");
        let (topo, lines) = (self.topo, self.costs.lines);
        self.counters.ipis_received += 1;
        let ci = cpu as usize;
        let mut d = ipi.handler_entry + self.kernel_path(cpu, Path::IrqEntry);
        d += self.csqs[ci].head.rmw(cpu, &topo, &lines);
        let taken_at = now + d;
        let c = &mut self.cpus[ci];
        let q = &mut self.csqs[ci].entries;
        while q.front().is_some_and(|e| e.at <= taken_at) {
            c.taken.extend(q.pop_front());
        }
        c.in_irq = true;
        d + self.drain_taken(cpu, now + d)
    }

    /// Handles the taken requests one after another from `now`, and exits the handler after the
    /// last. Every other CPU's event that falls before a request runs before it, exactly as if
    /// each request were an event of its own: the lines a request touches (`mm->tlb_gen`, the
    /// csd) move between the requests of one drain, as they do in a shootdown storm (seed 002's
    /// E->S / S->E ping-pong). Returns the time spent in this step; if it stops early, the CPU
    /// goes on at its end.
    fn drain_taken(&mut self, cpu: u32, now: Ps) -> Ps {
        let ipi = self.costs.ipi.expect("IPIs need IPI costs");
        let (topo, lines) = (self.topo, self.costs.lines);
        let ci = cpu as usize;
        let mut d = Ps::ZERO;
        while let Some(&e) = self.cpus[ci].taken.front() {
            let t = now + d;
            // This CPU's own agenda entry is the continuation being computed: look past it,
            // at the other CPUs and at this CPU's interrupt arrivals.
            if let Some((to, c)) = self.agenda.first_excluding(cpu) {
                if to < t || (to == t && c < cpu) {
                    return d;
                }
            }
            if self.cpus[ci].arrivals.first().is_some_and(|&a| a <= t) {
                return d;
            }
            self.cpus[ci].taken.pop_front();
            self.counters.remote_flushes_received += 1;
            let info = self.shootdowns[e.shootdown as usize].info;
            // The csd line travels sender -> handler (read func/info), handler -> sender
            // (csd_unlock invalidates the sender's copy; its spin reads it back).
            let hop = lines.transfer(topo.distance(info.initiator, cpu));
            d += hop;
            d += self.kernel_path(cpu, Path::FlushFunc);
            d += self.run_flush_func(cpu, &info);
            d += hop;
            let ack = now + d + hop;
            let s = &mut self.shootdowns[e.shootdown as usize];
            s.pending -= 1;
            s.last_ack = s.last_ack.max(ack);
            if s.pending == 0 && self.cpus[s.initiator as usize].step_at.is_none() {
                let at = s.last_ack.max(s.local_done);
                let init = s.initiator;
                self.schedule(init, at);
            }
        }
        // A request that landed after llist_del_all found the queue empty, so its sender sent
        // an IPI. (Senders run whole in the model: its ICR write is not charged to it.)
        if let Some(&e) = self.csqs[ci].entries.front() {
            let c = &self.cpus[ci];
            if self.kernel.flush.coalesce_ipis && c.arrivals.is_empty() && !c.irq_pending {
                self.send_ipi(cpu, e.at + ipi.send + ipi.delivery);
            }
        }
        self.cpus[ci].in_irq = false;
        d + ipi.handler_exit + self.kernel_path(cpu, Path::IrqExit)
    }

    /// The flush knobs in force, with a table-derived shift resolved for this machine.
    pub fn effective_knobs(&self) -> crate::kernel::tlbflush::FlushKnobs {
        crate::kernel::tlbflush::FlushKnobs { policy: self.policy, ..self.kernel.flush }
    }

    /// Violations found and the first few, described.
    pub fn oracle_report(&self) -> (u64, Vec<String>) {
        (self.oracle.violations, self.oracle.examples.clone())
    }
}

#[cfg(test)]
mod tests;
