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
use super::queue::EventQueue;
use super::time::Ps;
use super::Program;
use crate::hw::coherence::{CacheLine, LineCosts};
use crate::hw::ipi::IpiCosts;
use crate::hw::tlb::{AccessKind, Lookup, PageSize, TlbHierarchy, NR_ACCESS_KINDS};
use crate::hw::topology::Topology;
use crate::kernel::frames::{Frames, Owner, ZERO_PFN};
use crate::kernel::mm::{zap_vma, Backing, Mm, MmId, Pte, PAGE_SHIFT, PAGE_SIZE};
use crate::kernel::preset::KernelConfig;
use crate::kernel::tlbflush::{
    decide_range, flush_tlb_func, flushall_shift, FlushAction, FlushInfo, RangeInputs, RangePolicy, TlbState,
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
    Idle,
}

pub const NR_BUCKETS: usize = 10;

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
            Bucket::Idle => "idle",
        }
    }
}

/// Event counters of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub flush_requests: u64,
    pub shootdowns: u64,
    pub ipis_sent: u64,
    pub ipis_received: u64,
    pub invlpg: u64,
    pub full_flushes: u64,
    pub partial_flushes: u64,
    pub flushes_skipped: u64,
    pub early_returns: u64,
    pub tlb_gen_reads: u64,
    pub tlb_gen_transfers: u64,
    pub tlb_misses: u64,
    /// Misses on a translation a flush had removed from this CPU's TLB (not a fault's retry).
    pub tlb_misses_after_flush: u64,
    pub page_faults: u64,
    pub cow_flushes: u64,
    pub pages_zeroed: u64,
    pub pages_copied: u64,
    pub pages_freed: u64,
    pub oracle_violations: u64,
}

impl Counters {
    fn minus(&self, o: &Counters) -> Counters {
        macro_rules! sub {
            ($($f:ident),*) => { Counters { $($f: self.$f - o.$f),* } };
        }
        sub!(
            flush_requests,
            shootdowns,
            ipis_sent,
            ipis_received,
            invlpg,
            full_flushes,
            partial_flushes,
            flushes_skipped,
            early_returns,
            tlb_gen_reads,
            tlb_gen_transfers,
            tlb_misses,
            tlb_misses_after_flush,
            page_faults,
            cow_flushes,
            pages_zeroed,
            pages_copied,
            pages_freed,
            oracle_violations
        )
    }

    /// `(name, value)` pairs in a fixed order, for reports.
    pub fn fields(&self) -> [(&'static str, u64); 19] {
        [
            ("flush_requests", self.flush_requests),
            ("shootdowns", self.shootdowns),
            ("ipis_sent", self.ipis_sent),
            ("ipis_received", self.ipis_received),
            ("invlpg", self.invlpg),
            ("full_flushes", self.full_flushes),
            ("partial_flushes", self.partial_flushes),
            ("flushes_skipped", self.flushes_skipped),
            ("early_returns", self.early_returns),
            ("tlb_gen_reads", self.tlb_gen_reads),
            ("tlb_gen_transfers", self.tlb_gen_transfers),
            ("tlb_misses", self.tlb_misses),
            ("tlb_misses_after_flush", self.tlb_misses_after_flush),
            ("page_faults", self.page_faults),
            ("cow_flushes", self.cow_flushes),
            ("pages_zeroed", self.pages_zeroed),
            ("pages_copied", self.pages_copied),
            ("pages_freed", self.pages_freed),
            ("oracle_violations", self.oracle_violations),
        ]
    }
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
    clear_page: Ps,
    copy_page: Ps,
    invlpg: Ps,
    full_flush: Ps,
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
            clear_page: page_time(p.memory.clear_page_mbps.value),
            copy_page: page_time(p.memory.memcpy_mbps.value),
            invlpg: Ps::from_cycles(p.kernel.invlpg_cycles.value, mhz),
            full_flush: Ps::from_cycles(p.kernel.full_flush_cycles.value, mhz),
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
    SyscallExit,
}

/// A flush IPI: the index of its shootdown, which holds the `flush_tlb_info` (events stay
/// small, so the heap moves little).
#[derive(Debug, Clone, Copy)]
struct Irq {
    shootdown: usize,
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

struct Cpu {
    tlb: TlbHierarchy,
    st: TlbState,
    task: Option<usize>,
    steps: VecDeque<Step>,
    irqs: VecDeque<Irq>,
    /// The shootdown this CPU spins on.
    waiting: Option<usize>,
    /// The pending step event, if any.
    step_at: Option<Ps>,
    /// End of the CPU's last step: nothing new starts before it.
    busy_until: Ps,
    time: [Ps; NR_BUCKETS],
    /// This CPU's call-function-data lock word (`csd->node.u_flags`): written by the sender,
    /// read and released by the handler, spun on by the sender.
    csd_line: CacheLine,
    /// Pages (VA >> 12) whose translation a flush dropped from this CPU's TLB and that it has
    /// not translated since: the next miss on one is a miss caused by the flush. Sorted, no
    /// duplicates (a few hundred entries: a flat vector beats a tree here).
    flushed: Vec<u64>,
}

/// Bound on `Cpu::flushed` (pages never touched again would otherwise pile up).
const MAX_FLUSHED_TRACKED: usize = 1 << 16;

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

    /// Records every 4K user page of `pcid` a full flush is about to drop.
    fn note_flushed_asid(&mut self, pcid: u16) {
        let Cpu { tlb, flushed, .. } = self;
        if flushed.len() >= MAX_FLUSHED_TRACKED {
            flushed.clear();
        }
        let user_4k = |e: &crate::hw::tlb::Entry| !e.global && e.asid == pcid && e.size == PageSize::Size4K;
        flushed.extend(tlb.entries().filter(|(_, e)| user_4k(e)).map(|(_, e)| e.vpn));
        flushed.sort_unstable();
        flushed.dedup();
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
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Step(u32),
    Irq(u32, Irq),
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
    tasks: Vec<Task>,
    mms: Vec<Mm>,
    files: Vec<Vec<u64>>,
    frames: Frames,
    oracle: Oracle,
    shootdowns: Vec<Shootdown>,
    /// Finished shootdown slots, reused so memory stays flat over long runs.
    free_shootdowns: Vec<usize>,
    queue: EventQueue<Event>,
    counters: Counters,
    next_ctx_id: u64,
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
                tlb: profile.build_tlb(),
                st: TlbState::default(),
                task: None,
                steps: VecDeque::new(),
                irqs: VecDeque::new(),
                waiting: None,
                step_at: None,
                busy_until: Ps::ZERO,
                time: [Ps::ZERO; NR_BUCKETS],
                csd_line: CacheLine::new(),
                flushed: Default::default(),
            })
            .collect();
        Simulation {
            topo,
            costs: Costs::new(profile),
            kernel,
            policy,
            pcid: profile.cpu.features.pcid,
            range_sizes: RangeInputs::tlb_sizes(profile),
            cpus,
            tasks: Vec::new(),
            mms: Vec::new(),
            files: Vec::new(),
            frames: Frames::new(),
            oracle: Oracle::default(),
            shootdowns: Vec::new(),
            free_shootdowns: Vec::new(),
            queue: EventQueue::new(),
            counters: Counters::default(),
            next_ctx_id: 1,
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
            self.mms[mm as usize].set_pte(a, Pte { pfn, present: true, writable: true });
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
        assert!(self.cpus[cpu as usize].task.is_none(), "cpu {cpu} already runs a task");
        let t = self.tasks.len();
        self.tasks.push(Task {
            program,
            mm,
            regs: [0; NR_REGS],
            gathered: Vec::new(),
            iterations: 0,
            measured: 0,
            buf: Vec::new(),
        });
        self.cpus[cpu as usize].task = Some(t);
        self.switch_mm(cpu, mm);
        self.cpus[cpu as usize].busy_until = start;
    }

    /// `switch_mm_irqs_off` from init_mm to `mm` (v5.18): pick an ASID slot, flush it if stale,
    /// join `mm_cpumask`.
    fn switch_mm(&mut self, cpu: u32, mm: MmId) {
        let m = &mut self.mms[mm as usize];
        m.cpumask.set(cpu);
        let c = &mut self.cpus[cpu as usize];
        let (asid, need_flush) = c.st.choose_new_asid(m.ctx_id, m.tlb_gen, self.pcid);
        c.st.loaded_asid = asid;
        c.st.loaded_mm = Some(mm);
        c.st.is_lazy = false;
        if need_flush {
            c.st.ctxs[asid as usize] =
                crate::kernel::tlbflush::TlbContext { ctx_id: m.ctx_id, tlb_gen: m.tlb_gen };
            c.tlb.flush_asid(c.st.pcid());
        }
    }

    fn schedule(&mut self, cpu: u32, at: Ps) {
        let c = &mut self.cpus[cpu as usize];
        let at = at.max(c.busy_until);
        if c.step_at.is_none_or(|t| at < t) {
            c.step_at = Some(at);
            self.queue.push(at, cpu, Event::Step(cpu));
        }
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
        while let Some(key) = self.queue.peek() {
            if key.time >= end {
                break;
            }
            if snap.is_none() && key.time >= warmup {
                snap = Some(self.snapshot(warmup));
            }
            let (key, ev) = self.queue.pop().unwrap();
            let now = key.time;
            match ev {
                Event::Step(cpu) => {
                    if self.cpus[cpu as usize].step_at != Some(now) {
                        continue; // superseded by an earlier step
                    }
                    self.cpus[cpu as usize].step_at = None;
                    self.step(cpu, now, warmup, end);
                }
                Event::Irq(cpu, irq) => {
                    self.cpus[cpu as usize].irqs.push_back(irq);
                    if self.cpus[cpu as usize].step_at.is_none() {
                        self.schedule(cpu, now);
                    }
                }
            }
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
        if let Some(irq) = self.cpus[ci].irqs.pop_front() {
            let d = self.handle_irq(cpu, irq, now);
            self.charge(cpu, Bucket::Handler, d);
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
        let Some(t) = self.cpus[ci].task else { return };
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
                if s.pending == 0 || !c.irqs.is_empty() {
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
        match step {
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
                let d = self.costs.syscall_half * 2;
                self.charge(cpu, Bucket::Syscall, d);
                d
            }
            Step::Op(Op::Munmap { addr }) => {
                let start = self.reg_addr(t, addr);
                let vma = self.mms[mm as usize].remove_vma(start).expect("munmap of an unmapped address");
                let zapped = zap_vma(&vma);
                self.gather(t, mm, &zapped);
                // Page tables existed only if something was mapped: then free_pgtables sets
                // freed_tables and the flush must reach lazy CPUs too.
                self.queue_zap_flush(cpu, vma.start, vma.end, !zapped.is_empty(), true);
                self.charge(cpu, Bucket::Syscall, self.costs.syscall_half);
                self.costs.syscall_half
            }
            Step::Op(Op::MadviseDontneed { addr, len }) => {
                let start = self.reg_addr(t, addr);
                let zapped = self.mms[mm as usize].zap_range(start, start + len);
                self.gather(t, mm, &zapped);
                self.queue_zap_flush(cpu, start, start + len, !zapped.is_empty(), false);
                self.charge(cpu, Bucket::Syscall, self.costs.syscall_half);
                self.costs.syscall_half
            }
            Step::Op(Op::Iteration) => unreachable!("counted in step()"),
            Step::Fault { addr, write } => self.fault(cpu, mm, addr, write),
            Step::Flush { start, end, freed_tables } => {
                self.flush_tlb_mm_range(cpu, mm, start, end, freed_tables, now)
            }
            Step::SetPte { addr, pte } => {
                self.mms[mm as usize].set_pte(addr, pte);
                Ps::ZERO
            }
            Step::FreeGathered => {
                let pages = std::mem::take(&mut self.tasks[t].gathered);
                for &pfn in &pages {
                    self.oracle.check_free(
                        pfn,
                        &self.frames,
                        &self.mms,
                        self.cpus.iter().map(|c| (&c.tlb, &c.st)),
                    );
                    self.frames.free(pfn);
                }
                self.counters.pages_freed += pages.len() as u64;
                self.tasks[t].gathered = pages;
                self.tasks[t].gathered.clear();
                Ps::ZERO
            }
            Step::SyscallExit => {
                self.charge(cpu, Bucket::Syscall, self.costs.syscall_half);
                self.costs.syscall_half
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

    /// `tlb_finish_mmu`: flush if anything was cleared, then free, then return to user space.
    /// With the unsafe `free_before_flush` knob the pages are freed first.
    fn queue_zap_flush(&mut self, cpu: u32, start: u64, end: u64, cleared: bool, freed_tables: bool) {
        let steps = &mut self.cpus[cpu as usize].steps;
        let flush = Step::Flush { start, end, freed_tables };
        let order: &[Step] = match (cleared, self.kernel.flush.free_before_flush) {
            (false, _) => &[Step::FreeGathered, Step::SyscallExit],
            (true, false) => &[flush, Step::FreeGathered, Step::SyscallExit],
            (true, true) => &[Step::FreeGathered, flush, Step::SyscallExit],
        };
        for s in order.iter().rev() {
            steps.push_front(*s);
        }
    }

    /// A user access: TLB lookup, page walk on a miss, fault if the PTE does not allow it.
    fn access(&mut self, cpu: u32, t: usize, mm: MmId, va: u64, kind: AccessKind) -> Ps {
        let write = kind == AccessKind::Store;
        let c = &mut self.cpus[cpu as usize];
        let pcid = c.st.pcid();
        match c.tlb.lookup(va, kind, pcid, false) {
            Lookup::Hit { level, pfn: payload, .. } => {
                let (pfn, writable) = (payload >> 1, payload & 1 == 1);
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
                        c.tlb.fill(va, kind, pcid, PageSize::Size4K, p.pfn << 1 | p.writable as u64, false);
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
    fn push_fault(&mut self, cpu: u32, va: u64, kind: AccessKind, write: bool) {
        let steps = &mut self.cpus[cpu as usize].steps;
        steps.push_front(Step::Access { va, kind });
        steps.push_front(Step::Fault { addr: va, write });
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
        self.charge(cpu, Bucket::Zeroing, self.costs.clear_page);
        (pfn, self.costs.clear_page)
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
        let mut d = self.costs.fault;
        self.charge(cpu, Bucket::Fault, self.costs.fault);
        let anon_page = |s: &mut Simulation, copy: bool| {
            let pfn = s.frames.alloc(Owner::Anon { mm, vpn });
            let c = if copy {
                s.counters.pages_copied += 1;
                s.costs.copy_page
            } else {
                s.counters.pages_zeroed += 1;
                s.costs.clear_page
            };
            s.charge(cpu, Bucket::Zeroing, c);
            (pfn, c)
        };
        let new_pte = match (backing, pte.present, write) {
            // Permission upgrade of a present PTE.
            (Backing::FileShared(_), true, true) => {
                // do_wp_page -> wp_page_shared: page_mkwrite, make writable; no flush on x86.
                Pte { writable: true, ..pte }
            }
            (_, true, true) => {
                // wp_page_copy: new page, then ptep_clear_flush of the old PTE, then install.
                let (pfn, c) = anon_page(self, pte.pfn != ZERO_PFN);
                d += c;
                self.mms[mm as usize].set_pte(addr, Pte::default());
                self.counters.cow_flushes += 1;
                let steps = &mut self.cpus[cpu as usize].steps;
                steps.push_front(Step::SetPte { addr, pte: Pte { pfn, present: true, writable: true } });
                steps.push_front(Step::Flush { start: addr, end: addr + PAGE_SIZE, freed_tables: false });
                return d;
            }
            (_, true, false) => return d, // raced with another fault: nothing to do
            (Backing::Anon, false, false) => Pte { pfn: ZERO_PFN, present: true, writable: false },
            (Backing::Anon, false, true) => {
                let (pfn, c) = anon_page(self, false);
                d += c;
                Pte { pfn, present: true, writable: true }
            }
            (Backing::FilePrivate(f), false, true) => {
                // do_cow_fault: read the file page, copy it into a new anonymous page.
                let (_, c0) = self.page_cache_page(cpu, f, index);
                let (pfn, c) = anon_page(self, true);
                d += c0 + c;
                Pte { pfn, present: true, writable: true }
            }
            (Backing::FileShared(f), false, true) => {
                let (pfn, c) = self.page_cache_page(cpu, f, index);
                d += c;
                Pte { pfn, present: true, writable: true }
            }
            (Backing::FilePrivate(f) | Backing::FileShared(f), false, false) => {
                // do_read_fault: map the page, and (do_fault_around) every neighbour in the
                // 16-page aligned window that is already cached and not mapped, read-only.
                let (pfn, c) = self.page_cache_page(cpu, f, index);
                d += c;
                let win = FAULT_AROUND_PAGES * PAGE_SIZE;
                let (ws, we) = ((addr & !(win - 1)).max(vstart), ((addr & !(win - 1)) + win).min(vend));
                let mut a = ws;
                while a < we {
                    if a != addr {
                        let i = (a - vstart) >> PAGE_SHIFT;
                        let cached = self.files[f as usize][i as usize];
                        let m = &mut self.mms[mm as usize];
                        if cached != NO_PAGE && !m.pte(a).unwrap().present {
                            m.set_pte(a, Pte { pfn: cached, present: true, writable: false });
                        }
                    }
                    a += PAGE_SIZE;
                }
                Pte { pfn, present: true, writable: false }
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
        let Simulation { cpus, mms, counters, costs, .. } = &mut *self;
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
                // switch_mm_irqs_off(NULL, &init_mm): leave the mm, which also flushes.
                m.cpumask.clear(cpu);
                c.st.loaded_mm = None;
                c.st.is_lazy = false;
                c.note_flushed_asid(pcid);
                c.tlb.flush_asid(pcid);
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
            }
            FlushAction::Full => {
                c.note_flushed_asid(pcid);
                c.tlb.flush_asid(pcid);
                counters.full_flushes += 1;
                cost += costs.full_flush;
            }
        }
        cost
    }

    /// `flush_tlb_mm_range` (v5.18 arch/x86/mm/tlb.c): bump `mm->tlb_gen`, choose the range,
    /// send IPIs to the other CPUs of `mm_cpumask` (skipping lazy ones unless page tables were
    /// freed), flush locally (concurrently or first, per knob), then wait for every ack.
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
        let m = &mut self.mms[mm as usize];
        // inc_mm_tlb_gen: an atomic RMW on the contended line (v4.14+; v3.x had no generation).
        let mut d =
            if self.kernel.flush.generations { m.tlb_gen_line.write(cpu, &topo, &lines) } else { Ps::ZERO };
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
        let mut targets = crate::hw::cpumask::CpuMask::new();
        for c in m.cpumask.iter().filter(|&c| c != cpu) {
            if freed_tables || !self.cpus[c as usize].st.is_lazy {
                targets.set(c);
            }
        }
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
            return d + l;
        }
        let ipi = self.costs.ipi.expect("a machine with several CPUs has IPI costs");
        self.counters.shootdowns += 1;
        let mut pre = Ps::ZERO;
        if !self.kernel.flush.concurrent_local {
            pre = local(self);
        }
        // Queue one call-function entry per target (a write to the target's csd line).
        let mut send = Ps::ZERO;
        for t in targets.iter() {
            send += self.cpus[t as usize].csd_line.write(cpu, &topo, &lines);
        }
        let fan = ipi.fanout(&targets);
        send += fan.sender_busy;
        let sd = self.free_shootdowns.pop().unwrap_or(self.shootdowns.len());
        let t0 = now + d + pre;
        for &(t, at) in &fan.arrivals {
            self.queue.push(t0 + at, t, Event::Irq(t, Irq { shootdown: sd }));
        }
        self.counters.ipis_sent += fan.arrivals.len() as u64;
        let post = if self.kernel.flush.concurrent_local { local(self) } else { Ps::ZERO };
        let local_done = t0 + send + post;
        let record = Shootdown {
            info,
            initiator: cpu,
            pending: fan.arrivals.len() as u32,
            last_ack: Ps::ZERO,
            local_done,
        };
        if sd == self.shootdowns.len() {
            self.shootdowns.push(record);
        } else {
            self.shootdowns[sd] = record;
        }
        self.charge(cpu, Bucket::FlushWork, d + pre + post);
        self.charge(cpu, Bucket::IpiSend, send);
        d += pre + send + post;
        self.cpus[cpu as usize].waiting = Some(sd);
        d
    }

    /// An IPI handler run: entry, `flush_tlb_func`, acknowledgement, exit.
    fn handle_irq(&mut self, cpu: u32, irq: Irq, now: Ps) -> Ps {
        let ipi = self.costs.ipi.expect("IPIs need IPI costs");
        let (topo, lines) = (self.topo, self.costs.lines);
        self.counters.ipis_received += 1;
        let mut d = ipi.handler_entry;
        d += self.cpus[cpu as usize].csd_line.read(cpu, &topo, &lines);
        let info = self.shootdowns[irq.shootdown].info;
        let f = self.run_flush_func(cpu, &info);
        d += f;
        // csd_unlock: a store to the csd line; the spinning sender then reads it back.
        let initiator = info.initiator;
        d += self.cpus[cpu as usize].csd_line.write(cpu, &topo, &lines);
        let seen = self.cpus[cpu as usize].csd_line.read(initiator, &topo, &lines);
        let ack = now + d + seen;
        d += ipi.handler_exit;
        let s = &mut self.shootdowns[irq.shootdown];
        s.pending -= 1;
        s.last_ack = s.last_ack.max(ack);
        if s.pending == 0 && self.cpus[s.initiator as usize].step_at.is_none() {
            let at = s.last_ack.max(s.local_done);
            let init = s.initiator;
            self.schedule(init, at);
        }
        d
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
