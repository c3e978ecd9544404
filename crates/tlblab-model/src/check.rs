//! Not a Linux file: an exhaustive model checker of the x86 TLB shootdown protocol.
//!
//! The oracle ([`crate::linux::oracle`]) checks the runs we happen to make; this explores every
//! interleaving of a small system, breadth first with state hashing: 3 CPUs, the mm under test
//! (mm 0) with [`NR_PAGES`] anonymous pages, a second mm to switch to, kernel threads (lazy TLB
//! mode), and up to [`MAX_OPS`] zaps (`munmap`s: mixed full and partial flushes over overlapping
//! ranges), each run by a thread on its CPU.
//!
//! Every decision is the kernel model's own code, called here as the kernel calls it:
//! `flush_tlb_func`, `switch_mm_irqs_off` (and `choose_new_asid`), `flush_targets`, `flush_info`
//! (`decide_range`), `FlushAction::clears_bit` / `leave_mm` (linux/arch/x86/mm/tlb.rs), `zap_order` and
//! `finish_mmu_flush` (linux/mm/mmu_gather.rs). What this file adds is what those leave to the
//! machine: a TLB as a set of `(ASID slot, page)` entries, filled from present PTEs at any time
//! (an access or a speculative walk; see `saturate`), and the atomic steps at which Linux (v5.18
//! arch/x86/mm/tlb.c, mm/mmu_gather.c) may interleave:
//! - a CPU context-switches (to the other mm, to a kernel thread, which is lazy TLB mode, or
//!   back), unless its thread is inside a zap, as many times as the [`Scenario`] allows;
//! - a zap clears its PTEs under the page-table lock and gathers the pages
//!   (`inc_tlb_flush_pending` first), then runs `zap_order`'s steps; its flush is four steps:
//!   `inc_mm_tlb_gen` and the `flush_tlb_info`, the local `flush_tlb_func`, the send (targets
//!   read from `mm_cpumask` then, one request queued per target), in the order the
//!   `concurrent_local` knob gives (v5.13+ sends first), then the return once every target has
//!   acknowledged;
//! - under v6.14's `cpumask = lazy-trim`, the send either trims or not (`should_trim_cpumask`
//!   depends on jiffies, which the checker does not keep: both are explored); the lazy mask
//!   itself needs no step of its own (a CPU that switched away keeps its bit until a request
//!   reaches it);
//! - a CPU runs `flush_tlb_func` for its oldest queued request and acknowledges it (one at a
//!   time: draining several at once is one of the interleavings explored); under seed 002's
//!   proposed `remote_drain = max-gen` it takes every queued request at once
//!   (`llist_del_all`), runs `flush_tlb_func_max_gen` for those of the mm it runs (the others
//!   one by one), and only then acknowledges them all: one step, as the interrupt runs with
//!   interrupts off and nothing else reads this CPU's TLB or generation in between.
//!
//! Properties, checked in every reachable state: a CPU running mm 0 (not lazy) holds no entry,
//! in the ASID slot it runs with, for a page whose frame was freed (a use-after-free), nor for a
//! page whose zap's flush has returned to its initiator (a stale translation). A lazy CPU
//! holding one is legal until it switches back; the switch is explored, so a switch that fails
//! to flush shows as a violation right after it.
//!
//! Not modelled: page-table freeing and paging-structure caches (`freed_tables` only changes
//! who is targeted), the dirty-PTE forced flush, PTI's user PCID, global pages, more mms.

use explore::{explore, Model, Order};

use crate::hw::cpumask::CpuMask;
use crate::linux::arch::x86::mm::tlb::{
    drain_joins, flush_info, flush_targets, flush_tlb_func, flush_tlb_func_max_gen, leave_mm,
    switch_mm_irqs_off, CpumaskUpdate, Drained, FlushAction, FlushInfo, FlushKnobs, RangeInputs, RemoteDrain,
    Switch, TlbState, TLB_NR_DYN_ASIDS,
};
use crate::linux::config::KernelConfig;
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};
use crate::linux::mm::mmu_gather::{finish_mmu_flush, zap_order, Step as ZapStep};

/// CPUs of the checked system.
pub const NR_CPUS: usize = 3;
/// Pages of mm 0 that are mapped at the start.
pub const NR_PAGES: u64 = 3;
/// Most zaps in one scenario.
pub const MAX_OPS: usize = 3;
/// The mm under test and the other one; their `mm->context.ctx_id`s.
const MM: MmId = 0;
const OTHER: MmId = 1;
const CTX_ID: [u64; 2] = [1, 2];
/// `mm->context.tlb_gen` of a new mm (as `Mm::new`).
const FIRST_TLB_GEN: u64 = 1;

/// `flush_tlb_func`'s signature: the kernel's, or a deliberately broken one in a test.
pub type Handler = fn(&mut TlbState, &FlushInfo, &FlushKnobs, &mut dyn FnMut() -> u64) -> FlushAction;

/// `flush_tlb_func_max_gen`'s signature (`remote_drain = max-gen`): the kernel model's, or a
/// deliberately broken one in a test.
pub type Drainer = fn(&mut TlbState, &[FlushInfo]) -> Drained;

/// `switch_mm_irqs_off`'s signature, with whether the CPU's bit in the next mm's `mm_cpumask`
/// is set: the kernel's (which does not look), or a deliberately broken one in a test.
/// The mm's `(ctx_id, tlb_gen, global ASID)` as `switch_mm_irqs_off` takes them.
pub type Switcher = fn(&mut TlbState, MmId, (u64, u64, Option<u16>), &FlushKnobs, bool, bool) -> Switch;

/// The kernel model's `switch_mm_irqs_off`.
pub fn kernel_switch(
    st: &mut TlbState,
    next: MmId,
    mm: (u64, u64, Option<u16>),
    k: &FlushKnobs,
    pcid: bool,
    _in_mask: bool,
) -> Switch {
    switch_mm_irqs_off(st, next, mm, k, pcid)
}

/// The kernel model's `flush_tlb_func`.
pub fn kernel_handler(
    st: &mut TlbState,
    f: &FlushInfo,
    k: &FlushKnobs,
    read: &mut dyn FnMut() -> u64,
) -> FlushAction {
    flush_tlb_func(st, f, k, None, read)
}

/// One protocol variant: the flush knobs, the gather's order, and whether the machine has PCIDs
/// (as at boot: only with generations).
#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub knobs: FlushKnobs,
    pub free_before_flush: bool,
    pub pcid: bool,
}

impl Variant {
    /// A kernel configuration on a machine with or without PCIDs.
    pub fn of(k: &KernelConfig, pcid: bool) -> Variant {
        let pcid = pcid && k.flush.generations;
        Variant {
            name: format!("{}{}", k.name, if pcid { " pcid" } else { "" }),
            knobs: k.flush,
            free_before_flush: k.mm.free_before_flush,
            pcid,
        }
    }
}

/// One zap: the CPU its thread runs on and the pages `[first, first + pages)` it unmaps (a
/// range beyond [`NR_PAGES`] unmaps pages never mapped: a large `munmap`, which the range
/// policy may turn into a full flush).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zap {
    pub cpu: u32,
    pub first: u64,
    pub pages: u64,
}

impl Zap {
    fn range(&self) -> (u64, u64) {
        (self.first << PAGE_SHIFT, (self.first + self.pages) << PAGE_SHIFT)
    }
}

/// Zaps run concurrently, and how many context switches the CPUs may make in all.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    pub zaps: &'static [Zap],
    pub switches: u8,
}

const PARTIAL_0: Zap = Zap { cpu: 0, first: 0, pages: 2 };
const PARTIAL_1: Zap = Zap { cpu: 1, first: 1, pages: 2 };
/// 64 pages: a full flush under the ceiling of 33 and the 3.x shift rules.
const FULL_2: Zap = Zap { cpu: 2, first: 0, pages: 64 };

/// The shipped scenarios: three concurrent zaps on three CPUs (two partial ones that overlap,
/// and a full one) without context switches (376k states for v5.18.1); two zaps (a partial and
/// a full one) with two context switches anywhere in between, which covers a round trip
/// through lazy TLB mode or the other mm (49k states). Three zaps with two switches is 3.1M
/// states, too many for every knob combination in CI.
pub const SCENARIOS: [Scenario; 2] = [
    Scenario { name: "3 zaps", zaps: &[PARTIAL_0, PARTIAL_1, FULL_2], switches: 0 },
    Scenario { name: "2 zaps, 2 switches", zaps: &[PARTIAL_0, FULL_2], switches: 2 },
];

/// What the range policy reads (a 64-entry 4K data TLB, a 64-page mapping).
const INPUTS: RangeInputs = RangeInputs {
    lld_4k: 64,
    lli_4k: 64,
    total_vm: 64,
    vm_exec: false,
    vm_hugetlb: false,
    range_has_huge_pmd: false,
    cpus_to_flush: None,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Page {
    Mapped,
    /// PTE cleared, frame gathered, flush not returned.
    Cleared,
    /// The flush of the zap that cleared it has returned to its initiator.
    Flushed,
    Freed,
}

/// A zap's flush in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Flight {
    info: FlushInfo,
    local_done: bool,
    sent: bool,
    pending: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct OpState {
    /// 0: not started; 1 + i: at step i of its `zap_order`; `DONE`: returned.
    pc: u8,
    cleared: bool,
    gathered: u8,
    flight: Option<Flight>,
}

const DONE: u8 = u8::MAX;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CpuState {
    st: TlbState,
    /// Entries of mm 0: bit `slot * NR_PAGES + page`.
    tlb: u32,
    /// Queued flush requests (op indices), oldest first.
    queue: [u8; MAX_OPS],
    queued: u8,
    /// A broken drain (a test's `acks_before_flush`): requests acknowledged, flush not yet done.
    deferred: [Option<FlushInfo>; MAX_OPS],
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    cpus: [CpuState; NR_CPUS],
    tlb_gen: [u64; 2],
    cpumask: [u8; 2],
    tlb_flush_pending: u8,
    pages: [Page; NR_PAGES as usize],
    ops: [OpState; MAX_OPS],
    /// Context switches the CPUs may still make, together (the bound that keeps the space
    /// small; every interleaving within it is explored).
    switches: u8,
}

/// What a CPU switches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Mm(MmId),
    KernelThread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Handle {
        cpu: u32,
    },
    /// The flush a broken drain deferred past its acknowledgements.
    DeferredFlush {
        cpu: u32,
    },
    Switch {
        cpu: u32,
        to: To,
    },
    /// The op's next step; `trim` is `should_trim_cpumask`'s answer where its send step is next
    /// under `cpumask = lazy-trim` (a second may have passed or not: both are explored).
    Op {
        op: u8,
        trim: bool,
    },
}

/// A property broken, and the steps from the initial state that break it.
#[derive(Debug, Clone)]
pub struct Counterexample {
    pub property: String,
    pub trace: Vec<String>,
}

/// The outcome for one variant.
#[derive(Debug, Clone)]
pub struct Report {
    pub variant: String,
    pub states: u64,
    pub transitions: u64,
    pub counterexample: Option<Counterexample>,
    /// Every reachable state was explored (false: stopped at [`MAX_STATES`]).
    pub complete: bool,
}

/// The exploration stops (incomplete) beyond this many states, to bound memory.
pub const MAX_STATES: usize = 4_000_000;

/// The checked system: a variant, a scenario, the handler under test.
pub struct Checker<'a> {
    v: &'a Variant,
    zaps: &'a [Zap],
    handler: Handler,
    switcher: Switcher,
    drainer: Drainer,
    /// Broken on purpose (a test): a max-gen drain acknowledges before it flushes.
    acks_before_flush: bool,
    switches: u8,
}

fn bit(slot: u16, page: u64) -> u32 {
    1 << (slot as u64 * NR_PAGES + page)
}

/// What a checker's context switch reads: the knobs, the PCID mode and the mms' generations.
struct SwitchCtx<'a> {
    knobs: &'a FlushKnobs,
    pcid: bool,
    tlb_gen: &'a [u64; 2],
    switcher: Switcher,
}

impl SwitchCtx<'_> {
    /// A checker CPU (`st`, its TLB bits `tlb`) switches to `to`: `enter_lazy_tlb` keeps the mm
    /// loaded and marks the CPU lazy; a switch to an mm runs the engine's `switch_mm_irqs_off`
    /// and applies its effects to the mm_cpumasks and the TLB bits. Shared by every checker.
    fn apply(&self, st: &mut TlbState, tlb: &mut u32, cpumask: &mut [u8; 2], cpu: u32, to: To) -> String {
        match to {
            To::KernelThread => {
                st.is_lazy = true;
                "switches to a kernel thread (lazy TLB)".into()
            }
            To::Mm(mm) => {
                let in_mask = cpumask[mm as usize] & (1 << cpu) != 0;
                let sw = (self.switcher)(
                    st,
                    mm,
                    (CTX_ID[mm as usize], self.tlb_gen[mm as usize], None),
                    self.knobs,
                    self.pcid,
                    in_mask,
                );
                if let Some(prev) = sw.left {
                    cpumask[prev as usize] &= !(1 << cpu);
                }
                if sw.joined {
                    cpumask[mm as usize] |= 1 << cpu;
                }
                if sw.flush {
                    *tlb &= !slot_bits(st.loaded_asid);
                }
                format!(
                    "switch_mm to mm {mm}: asid {}{}",
                    st.loaded_asid,
                    if sw.flush { ", flushed" } else { ", no flush" }
                )
            }
        }
    }
}

fn slot_bits(slot: u16) -> u32 {
    ((1u32 << NR_PAGES) - 1) << (slot as u64 * NR_PAGES)
}

/// Every CPU running mm 0 holds an entry for every mapped page: the TLB's largest content. The
/// protocol's decisions never read the TLB, and a flush removes the same entries whatever else
/// is cached, so any violation of a run with fewer fills shows in the same run with every fill
/// made (and every fill is a step the hardware may take): exploring fills one by one would
/// only multiply the states.
fn saturate(s: &mut State) {
    for c in s.cpus.iter_mut() {
        if running_mm(c) == Some(MM) {
            for page in 0..NR_PAGES {
                if s.pages[page as usize] == Page::Mapped {
                    c.tlb |= bit(c.st.loaded_asid, page);
                }
            }
        }
    }
}

fn mask(bits: u8) -> CpuMask {
    let mut m = CpuMask::new();
    (0..8).filter(|c| bits >> c & 1 == 1).for_each(|c| m.set(c));
    m
}

fn running_mm(c: &CpuState) -> Option<MmId> {
    if c.st.is_lazy {
        None
    } else {
        c.st.loaded_mm
    }
}

impl<'a> Checker<'a> {
    pub fn new(v: &'a Variant, sc: &Scenario, handler: Handler) -> Checker<'a> {
        let zaps = sc.zaps;
        assert!(zaps.len() <= MAX_OPS && zaps.iter().all(|z| (z.cpu as usize) < NR_CPUS));
        Checker {
            v,
            zaps,
            handler,
            switcher: kernel_switch,
            drainer: flush_tlb_func_max_gen,
            acks_before_flush: false,
            switches: sc.switches,
        }
    }

    /// The same, with `flush_tlb_func_max_gen` replaced (a broken one, in a test).
    pub fn with_drainer(self, drainer: Drainer) -> Checker<'a> {
        Checker { drainer, ..self }
    }

    /// The same, with a max-gen drain that acknowledges its requests before its flush (broken).
    pub fn with_acks_before_flush(self) -> Checker<'a> {
        Checker { acks_before_flush: true, ..self }
    }

    /// The same, with `switch_mm_irqs_off` replaced (a broken one, in a test).
    pub fn with_switcher(self, switcher: Switcher) -> Checker<'a> {
        Checker { switcher, ..self }
    }

    /// Explores every reachable state, breadth first (a counterexample's trace is then a
    /// shortest one); stops at the first violation.
    pub fn run(&self) -> Report {
        explore(self, Order::BreadthFirst, MAX_STATES, self.v.name.clone())
    }

    /// The zap steps of op `i` (known once its PTEs are cleared).
    fn steps(&self, i: usize, cleared: bool) -> Vec<ZapStep> {
        let (start, end) = self.zaps[i].range();
        zap_order(self.v.free_before_flush, start, end, cleared, false, false).into_iter().flatten().collect()
    }

    /// The op whose thread is inside its zap on `cpu`, or the next to start there.
    fn op_on(&self, s: &State, cpu: u32) -> Option<usize> {
        (0..self.zaps.len()).find(|&i| self.zaps[i].cpu == cpu && s.ops[i].pc != DONE)
    }

    fn in_zap(&self, s: &State, cpu: u32) -> bool {
        self.op_on(s, cpu).is_some_and(|i| s.ops[i].pc != 0)
    }

    /// The op's next step is its flush's send (as `op_step` orders the local flush and the send).
    fn send_is_next(&self, o: &OpState) -> bool {
        match o.flight {
            Some(f) => !f.sent && !(!f.local_done && (!self.v.knobs.concurrent_local || f.sent)),
            None => false,
        }
    }

    fn flush_slot(c: &mut CpuState) {
        c.tlb &= !slot_bits(c.st.loaded_asid);
    }

    /// A partial or full flush of the loaded slot.
    fn flush(c: &mut CpuState, action: FlushAction) {
        match action {
            FlushAction::Partial { start, nr, stride_shift } => {
                for i in 0..nr {
                    let page = (start + (i << stride_shift)) >> PAGE_SHIFT;
                    if page < NR_PAGES {
                        c.tlb &= !bit(c.st.loaded_asid, page);
                    }
                }
            }
            FlushAction::Full => Self::flush_slot(c),
            _ => {}
        }
    }

    /// Seed 002's proposed drain (`remote_drain = max-gen`) on `cpu`: every queued request taken,
    /// those of the mm it runs flushed once by the drainer, the others by `flush_tlb_func` one by
    /// one; then every request acknowledged (before the flush under `acks_before_flush`).
    fn run_drain(&self, s: &mut State, cpu: u32) -> String {
        let c = &mut s.cpus[cpu as usize];
        let ops: Vec<usize> = c.queue[..c.queued as usize].iter().map(|&o| o as usize).collect();
        c.queued = 0;
        let mut joined = Vec::new();
        let mut what = Vec::new();
        for &op in &ops {
            let info = s.ops[op].flight.expect("a queued request has a flight").info;
            if drain_joins(&s.cpus[cpu as usize].st, &info, &self.v.knobs, false, None) {
                joined.push(info);
            } else {
                what.push(self.run_handler(s, cpu, op));
            }
        }
        for &op in &ops {
            s.ops[op].flight.as_mut().expect("in flight").pending -= 1;
        }
        let c = &mut s.cpus[cpu as usize];
        if self.acks_before_flush {
            for (d, f) in c.deferred.iter_mut().zip(&joined) {
                *d = Some(*f);
            }
            what.push(format!("acks, defers the flush of {} request(s)", joined.len()));
        } else if !joined.is_empty() {
            let d = (self.drainer)(&mut c.st, &joined);
            Self::flush(c, d.action);
            let gens: Vec<u64> = joined.iter().map(|f| f.new_tlb_gen).collect();
            what.push(format!("max-gen drain of gens {gens:?} -> {:?}", d.action));
        }
        format!("takes ops {ops:?}: {}, acks all", what.join("; "))
    }

    /// The flush a broken drain deferred past its acknowledgements.
    fn deferred_flush(&self, s: &mut State, cpu: u32) -> String {
        let c = &mut s.cpus[cpu as usize];
        let joined: Vec<FlushInfo> = c.deferred.iter_mut().filter_map(|d| d.take()).collect();
        if c.st.loaded_mm != Some(MM) || c.st.is_lazy {
            return "deferred flush: the mm is gone".into();
        }
        let d = (self.drainer)(&mut c.st, &joined);
        Self::flush(c, d.action);
        format!("deferred max-gen flush -> {:?}", d.action)
    }

    fn switch(&self, s: &mut State, cpu: u32, to: To) -> String {
        let c = &mut s.cpus[cpu as usize];
        let sw = SwitchCtx {
            knobs: &self.v.knobs,
            pcid: self.v.pcid,
            tlb_gen: &s.tlb_gen,
            switcher: self.switcher,
        };
        sw.apply(&mut c.st, &mut c.tlb, &mut s.cpumask, cpu, to)
    }

    /// `flush_tlb_func` of op `op`'s request on `cpu`, applied.
    fn run_handler(&self, s: &mut State, cpu: u32, op: usize) -> String {
        let info = s.ops[op].flight.expect("a queued request has a flight").info;
        let gen = s.tlb_gen[MM as usize];
        let c = &mut s.cpus[cpu as usize];
        let action = (self.handler)(&mut c.st, &info, &self.v.knobs, &mut || gen);
        if action.clears_bit(self.v.knobs.cpumask) {
            s.cpumask[MM as usize] &= !(1 << cpu);
        }
        match action {
            FlushAction::LeaveLazy => {
                Self::flush_slot(c);
                leave_mm(&mut c.st);
            }
            FlushAction::Partial { .. } | FlushAction::Full => Self::flush(c, action),
            // No global ASIDs here (the broadcast checker is check/broadcast.rs).
            FlushAction::WrongMm
            | FlushAction::EarlyReturn
            | FlushAction::UpToDate
            | FlushAction::GlobalAsid { .. } => {}
        }
        format!("flush_tlb_func(op {op}, gen {}) -> {action:?}", info.new_tlb_gen)
    }

    fn op_step(&self, s: &mut State, i: usize, trim: bool) -> String {
        let z = self.zaps[i];
        let o = s.ops[i];
        if o.pc == 0 {
            // tlb_gather_mmu (inc_tlb_flush_pending), then zap_pte_range under the PTL.
            s.tlb_flush_pending += 1;
            let mut gathered = 0u8;
            for p in z.first..(z.first + z.pages).min(NR_PAGES) {
                if s.pages[p as usize] == Page::Mapped {
                    s.pages[p as usize] = Page::Cleared;
                    gathered |= 1 << p;
                }
            }
            s.ops[i] = OpState { pc: 1, cleared: gathered != 0, gathered, flight: None };
            return format!(
                "clears PTEs of pages {}..{} (gathered {gathered:#b})",
                z.first,
                z.first + z.pages
            );
        }
        let steps = self.steps(i, o.cleared);
        let step = steps[o.pc as usize - 1];
        let advance = |s: &mut State| {
            let pc = o.pc as usize + 1;
            s.ops[i].pc = if pc > steps.len() { DONE } else { pc as u8 };
        };
        match step {
            ZapStep::FreeGathered => {
                for p in 0..NR_PAGES {
                    if o.gathered & (1 << p) != 0 {
                        s.pages[p as usize] = Page::Freed;
                    }
                }
                advance(s);
                "frees the gathered pages".into()
            }
            ZapStep::EndGather => {
                s.tlb_flush_pending -= 1;
                advance(s);
                "dec_tlb_flush_pending, returns".into()
            }
            ZapStep::ForcedFlush { .. } => unreachable!("the checker's zaps clear no dirty shared PTEs"),
            ZapStep::FinishMmu { .. } => match o.flight {
                None => match finish_mmu_flush(step, s.tlb_flush_pending > 1) {
                    None => {
                        advance(s);
                        "tlb_finish_mmu: nothing to flush".into()
                    }
                    Some(ff) => {
                        let m = MM as usize;
                        s.tlb_gen[m] += 1;
                        let (info, _) = flush_info(
                            self.v.knobs.policy,
                            &INPUTS,
                            MM,
                            (ff.start, ff.end),
                            ff.freed_tables,
                            s.tlb_gen[m],
                            z.cpu,
                        );
                        s.ops[i].flight = Some(Flight { info, local_done: false, sent: false, pending: 0 });
                        let kind = if info.is_full() {
                            "full".to_string()
                        } else {
                            format!("{} pages", info.nr_entries())
                        };
                        format!("flush_tlb_mm_range: inc_mm_tlb_gen -> {}, {kind}", s.tlb_gen[m])
                    }
                },
                Some(f) if !f.local_done && (!self.v.knobs.concurrent_local || f.sent) => {
                    s.ops[i].flight.as_mut().expect("in flight").local_done = true;
                    format!("local {}", self.run_handler(s, z.cpu, i))
                }
                Some(f) if !f.sent => {
                    let lazy = mask((0..NR_CPUS).filter(|&c| s.cpus[c].st.is_lazy).map(|c| 1 << c).sum());
                    let mask = mask(s.cpumask[MM as usize]);
                    // v6.14 should_flush_tlb: unless the request trims, only the CPUs whose
                    // loaded_mm is the mm (lazy ones are filtered as before).
                    let running = crate::check::mask(
                        (0..NR_CPUS).filter(|&c| s.cpus[c].st.loaded_mm == Some(MM)).map(|c| 1 << c).sum(),
                    );
                    let running = (!trim).then_some(&running);
                    let targets =
                        flush_targets(&mask, &lazy, running, &self.v.knobs, f.info.freed_tables, z.cpu);
                    for t in targets.iter() {
                        let c = &mut s.cpus[t as usize];
                        c.queue[c.queued as usize] = i as u8;
                        c.queued += 1;
                    }
                    let fl = s.ops[i].flight.as_mut().expect("in flight");
                    fl.sent = true;
                    fl.pending = targets.weight() as u8;
                    format!(
                        "sends the request to cpus {:?}{}",
                        targets.iter().collect::<Vec<_>>(),
                        if trim { " (trims mm_cpumask)" } else { "" }
                    )
                }
                Some(_) => {
                    for p in 0..NR_PAGES {
                        if o.gathered & (1 << p) != 0 && s.pages[p as usize] == Page::Cleared {
                            s.pages[p as usize] = Page::Flushed;
                        }
                    }
                    s.ops[i].flight = None;
                    advance(s);
                    "every target acknowledged: the flush returns".into()
                }
            },
        }
    }
}

impl Model for Checker<'_> {
    type State = State;
    /// The state itself (hashed with `explore::Fx`).
    type Key = State;
    type Action = Action;

    fn initial(&self) -> State {
        let idle = CpuState {
            st: TlbState::default(),
            tlb: 0,
            queue: [0; MAX_OPS],
            queued: 0,
            deferred: [None; MAX_OPS],
        };
        let op = OpState { pc: 0, cleared: false, gathered: 0, flight: None };
        let mut s = State {
            cpus: [idle.clone(), idle.clone(), idle],
            tlb_gen: [FIRST_TLB_GEN; 2],
            cpumask: [0; 2],
            tlb_flush_pending: 0,
            pages: [Page::Mapped; NR_PAGES as usize],
            ops: [op; MAX_OPS],
            switches: self.switches,
        };
        for cpu in 0..NR_CPUS as u32 {
            self.switch(&mut s, cpu, To::Mm(MM));
        }
        saturate(&mut s);
        s
    }

    fn key(&self, s: &State) -> State {
        s.clone()
    }

    fn successors(&self, s: &State, out: &mut Vec<Action>) {
        out.clear();
        for cpu in 0..NR_CPUS as u32 {
            let c = &s.cpus[cpu as usize];
            // Inside a broken drain's interrupt, between its acks and its flush: nothing else.
            if c.deferred.iter().any(Option::is_some) {
                out.push(Action::DeferredFlush { cpu });
                continue;
            }
            if c.queued > 0 {
                out.push(Action::Handle { cpu });
            }
            if s.switches > 0 && !self.in_zap(s, cpu) {
                let tos: &[To] = match running_mm(c) {
                    Some(MM) => &[To::KernelThread, To::Mm(OTHER)],
                    Some(_) => &[To::KernelThread, To::Mm(MM)],
                    None => &[To::Mm(MM), To::Mm(OTHER)],
                };
                out.extend(tos.iter().map(|&to| Action::Switch { cpu, to }));
            }
            if let Some(i) = self.op_on(s, cpu) {
                let o = &s.ops[i];
                let ready = match o.flight {
                    None => o.pc != 0 || running_mm(c) == Some(MM),
                    Some(f) => !(f.local_done && f.sent) || f.pending == 0,
                };
                if ready {
                    out.push(Action::Op { op: i as u8, trim: false });
                    if self.v.knobs.cpumask == CpumaskUpdate::LazyTrim && self.send_is_next(o) {
                        out.push(Action::Op { op: i as u8, trim: true });
                    }
                }
            }
        }
    }

    fn apply(&self, s: &mut State, a: Action) -> (String, Option<String>) {
        let what = match a {
            Action::Handle { cpu } if self.v.knobs.remote_drain == RemoteDrain::MaxGen => {
                format!("cpu{cpu}: {}", self.run_drain(s, cpu))
            }
            Action::DeferredFlush { cpu } => format!("cpu{cpu}: {}", self.deferred_flush(s, cpu)),
            Action::Handle { cpu } => {
                let c = &mut s.cpus[cpu as usize];
                let op = c.queue[0] as usize;
                c.queue.rotate_left(1);
                c.queued -= 1;
                let what = self.run_handler(s, cpu, op);
                let f = s.ops[op].flight.as_mut().expect("in flight");
                f.pending -= 1;
                format!("cpu{cpu}: {what}, acks")
            }
            Action::Switch { cpu, to } => {
                s.switches -= 1;
                format!("cpu{cpu}: {}", self.switch(s, cpu, to))
            }
            Action::Op { op, trim } => {
                format!("cpu{}: op {op}: {}", self.zaps[op as usize].cpu, self.op_step(s, op as usize, trim))
            }
        };
        saturate(s);
        (what, None)
    }

    /// The property broken in `s`, if any.
    fn violation(&self, s: &State) -> Option<String> {
        for (cpu, c) in s.cpus.iter().enumerate() {
            if running_mm(c) != Some(MM) {
                continue;
            }
            for page in 0..NR_PAGES {
                if c.tlb & bit(c.st.loaded_asid, page) == 0 {
                    continue;
                }
                match s.pages[page as usize] {
                    Page::Freed => {
                        return Some(format!(
                            "use-after-free: cpu{cpu} runs mm 0 and can still translate page {page}, whose frame was freed"
                        ))
                    }
                    Page::Flushed => {
                        return Some(format!(
                            "stale translation: cpu{cpu} runs mm 0 and can still translate page {page}, whose unmap's flush has returned"
                        ))
                    }
                    Page::Mapped | Page::Cleared => {}
                }
            }
        }
        None
    }
}

/// The entries of every ASID slot fit `CpuState::tlb`.
const _: () = assert!(TLB_NR_DYN_ASIDS as u64 * NR_PAGES <= 32);

pub mod broadcast;
mod explore;
mod variants;
pub use variants::knob_variants;
pub mod page_alloc;
pub mod reclaim;
pub mod tlbi;

#[cfg(test)]
mod tests;
