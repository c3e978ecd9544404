//! Not a Linux file: an exhaustive check of v6.15's broadcast flushing
//! (linux/arch/x86/mm/tlb/broadcast.rs; docs/references/linux-6x.md#broadcast-flush) on 3 CPUs.
//!
//! Mm 0 has a global ASID. A zap clears its PTEs, issues its INVLPGBs, runs
//! `finish_asid_transition` (flush IPIs while some CPU still runs the mm on a per-CPU ASID, and
//! waits for their acknowledgements), waits in TLBSYNC and frees the frames. INVLPGB is weakly
//! ordered: each CPU's copy of an invalidation completes at a moment of its own, explored as an
//! action of that CPU's, and TLBSYNC waits until the issuer's have completed on every CPU. Around
//! them CPUs context-switch (to mm 1, to a kernel thread in lazy TLB mode, back), handle their
//! flush IPIs, and fill their TLBs from present PTEs at any time.
//!
//! The kernel's own decisions run here: `switch_mm_irqs_off` (which picks the global ASID, never
//! flushing it), `flush_tlb_func` (a straggler reloads with the global ASID) and
//! `transition_stragglers` (which CPUs keep `asid_transition` set).
//!
//! Property, in every reachable state: a CPU running mm 0 (not lazy) holds no entry, in the PCID
//! it runs with, for a page whose frame was freed or whose zap has returned.

use super::explore::{explore, Model, Order};
use super::Report;
use crate::linux::arch::x86::mm::tlb::broadcast::transition_stragglers;
use crate::linux::arch::x86::mm::tlb::{
    flush_tlb_func, leave_mm, switch_mm_irqs_off, FlushAction, FlushInfo, FlushKnobs, TlbState,
    TLB_NR_DYN_ASIDS,
};
use crate::linux::config::KernelConfig;
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};

const NR_CPUS: usize = 3;
/// Pages of mm 0 mapped at the start.
pub const BC_PAGES: u64 = 3;
const MM: MmId = 0;
const OTHER: MmId = 1;
const CTX_ID: [u64; 2] = [1, 2];
/// Mm 0's global ASID, and the per-CPU one a straggler still runs it on.
const GLOBAL: u16 = TLB_NR_DYN_ASIDS as u16;
const DYN: u16 = 0;

/// One checked protocol: the kernel's, or a deliberately broken one.
#[derive(Debug, Clone)]
pub struct BroadcastVariant {
    pub name: String,
    pub knobs: FlushKnobs,
    /// Frees the zap's frames before its TLBSYNC (broken).
    pub free_before_tlbsync: bool,
    /// `finish_asid_transition` sends its flush IPIs (off: broken).
    pub transition_ipis: bool,
}

impl BroadcastVariant {
    /// The kernel configuration's protocol (`invlpgb` on).
    pub fn of(k: &KernelConfig) -> BroadcastVariant {
        BroadcastVariant {
            name: k.name.clone(),
            knobs: k.flush,
            free_before_tlbsync: false,
            transition_ipis: true,
        }
    }
}

/// A zap by the thread on `cpu` of pages `[first, first + pages)`.
#[derive(Debug, Clone, Copy)]
pub struct BcZap {
    pub cpu: u32,
    pub first: u64,
    pub pages: u64,
}

/// The zaps, where the CPUs start, and how many context switches they may make.
#[derive(Debug, Clone, Copy)]
pub struct BroadcastScenario {
    pub name: &'static str,
    pub zaps: &'static [BcZap],
    /// CPU 1 still runs mm 0 on a per-CPU ASID, CPU 2 is lazy on it (`asid_transition` set).
    pub transition: bool,
    pub switches: u8,
}

pub const BROADCAST_SCENARIOS: [BroadcastScenario; 2] = [
    BroadcastScenario {
        name: "2 zaps, 1 switch",
        zaps: &[BcZap { cpu: 0, first: 0, pages: 2 }, BcZap { cpu: 1, first: 1, pages: 2 }],
        transition: false,
        switches: 1,
    },
    BroadcastScenario {
        name: "1 zap in the transition, 2 switches",
        zaps: &[BcZap { cpu: 0, first: 0, pages: 2 }],
        transition: true,
        switches: 2,
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Page {
    Mapped,
    Cleared,
    Freed,
}

/// A zap's progress: 0 not started; then the steps of [`BroadcastChecker::order`]; `DONE`.
const DONE: u8 = u8::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    /// Clear the PTEs under the page-table lock (`mm->tlb_gen` bumped).
    Clear,
    /// The INVLPGBs: each CPU's copy pending until it completes there.
    Invlpgb,
    /// `finish_asid_transition`: IPIs to the mask while a straggler remains.
    Transition,
    /// Wait for the IPIs' acknowledgements.
    Acks,
    /// TLBSYNC: wait until this zap's INVLPGBs completed everywhere.
    Tlbsync,
    Free,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Cpu {
    st: TlbState,
    /// Entries of mm 0: bits `0..BC_PAGES` under the global PCID, then under the per-CPU one.
    tlb: u8,
    /// Per zap, the pages its INVLPGBs have yet to drop here (global PCID).
    pending: [u8; 2],
    /// Per zap, a flush IPI queued here.
    queued: [bool; 2],
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct State {
    cpus: [Cpu; NR_CPUS],
    cpumask: u8,
    tlb_gen: u64,
    asid_transition: bool,
    pages: [Page; BC_PAGES as usize],
    /// Per zap: its step index (0 = not started), `DONE` when returned.
    pc: [u8; 2],
    /// Per zap, IPIs not yet acknowledged.
    acks: [u8; 2],
    switches: u8,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum To {
    Mm(MmId),
    KernelThread,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Action {
    /// CPU `cpu`'s copy of zap `op`'s INVLPGBs completes.
    Complete {
        cpu: u8,
        op: u8,
    },
    Handle {
        cpu: u8,
        op: u8,
    },
    Switch {
        cpu: u8,
        to: To,
    },
    Op {
        op: u8,
    },
}

pub struct BroadcastChecker<'a> {
    v: &'a BroadcastVariant,
    sc: &'a BroadcastScenario,
    order: Vec<Step>,
}

fn pages_bits(z: &BcZap) -> u8 {
    (z.first..(z.first + z.pages).min(BC_PAGES)).fold(0, |m, p| m | 1 << p)
}

impl<'a> BroadcastChecker<'a> {
    pub fn new(v: &'a BroadcastVariant, sc: &'a BroadcastScenario) -> BroadcastChecker<'a> {
        let order = if v.free_before_tlbsync {
            vec![Step::Clear, Step::Invlpgb, Step::Transition, Step::Acks, Step::Free, Step::Tlbsync]
        } else {
            vec![Step::Clear, Step::Invlpgb, Step::Transition, Step::Acks, Step::Tlbsync, Step::Free]
        };
        BroadcastChecker { v, sc, order }
    }

    pub fn run(&self) -> Report {
        explore(self, Order::BreadthFirst, super::MAX_STATES, format!("{} [{}]", self.v.name, self.sc.name))
    }

    /// The PCID bits of `c`'s entries of mm 0 in the PCID it runs with.
    fn shift(c: &Cpu) -> u32 {
        if c.st.loaded_asid == GLOBAL {
            0
        } else {
            BC_PAGES as u32
        }
    }

    fn info(&self, op: usize, s: &State) -> FlushInfo {
        let z = self.sc.zaps[op];
        FlushInfo {
            mm: MM,
            start: z.first << PAGE_SHIFT,
            end: (z.first + z.pages) << PAGE_SHIFT,
            stride_shift: PAGE_SHIFT,
            freed_tables: false,
            new_tlb_gen: s.tlb_gen,
            initiator: z.cpu,
        }
    }

    fn switch(&self, s: &mut State, cpu: usize, to: To) -> String {
        let c = &mut s.cpus[cpu];
        match to {
            To::KernelThread => {
                c.st.is_lazy = true;
                "switches to a kernel thread (lazy TLB)".into()
            }
            To::Mm(mm) => {
                let global = (mm == MM).then_some(GLOBAL);
                let gen = if mm == MM { s.tlb_gen } else { 1 };
                let sw = switch_mm_irqs_off(
                    &mut c.st,
                    mm,
                    (CTX_ID[mm as usize], gen, global),
                    &self.v.knobs,
                    true,
                );
                if sw.left == Some(MM) {
                    s.cpumask &= !(1 << cpu);
                }
                if sw.joined && mm == MM {
                    s.cpumask |= 1 << cpu;
                }
                if sw.flush && mm == MM {
                    c.tlb &= !(((1 << BC_PAGES) - 1) << Self::shift(c));
                }
                format!("switch_mm to mm {mm}: asid {}", c.st.loaded_asid)
            }
        }
    }

    /// TLB fills: a CPU with mm 0 loaded may cache any present page, in the PCID it uses.
    fn saturate(s: &mut State) {
        let present =
            s.pages.iter().enumerate().filter(|(_, p)| **p == Page::Mapped).fold(0u8, |m, (i, _)| m | 1 << i);
        for c in &mut s.cpus {
            if c.st.loaded_mm == Some(MM) {
                c.tlb |= present << Self::shift(c);
            }
        }
    }

    fn op_step(&self, s: &mut State, op: usize) -> String {
        let z = self.sc.zaps[op];
        let bits = pages_bits(&z);
        let step = self.order[s.pc[op] as usize];
        let what = match step {
            Step::Clear => {
                for p in 0..BC_PAGES {
                    if bits & 1 << p != 0 && s.pages[p as usize] == Page::Mapped {
                        s.pages[p as usize] = Page::Cleared;
                    }
                }
                s.tlb_gen += 1;
                "clears its PTEs (inc_mm_tlb_gen)".to_string()
            }
            Step::Invlpgb => {
                for c in &mut s.cpus {
                    c.pending[op] |= bits;
                }
                "issues its INVLPGBs".to_string()
            }
            Step::Transition => {
                let running = s.cpus.iter().map(|c| (c.st.loaded_mm, c.st.loaded_asid));
                let mask = s.cpumask;
                let stragglers = transition_stragglers(
                    running.enumerate().filter(|(i, _)| mask & 1 << i != 0).map(|(_, r)| r),
                    MM,
                    GLOBAL,
                );
                if !s.asid_transition {
                    "no ASID transition".to_string()
                } else if !stragglers {
                    s.asid_transition = false;
                    "finish_asid_transition: none left on a per-CPU ASID".to_string()
                } else if !self.v.transition_ipis {
                    "finish_asid_transition: (broken) sends no IPI".to_string()
                } else {
                    // flush_tlb_multi(mm_cpumask): the other CPUs not lazy get IPIs, the local
                    // flush runs here.
                    let info = self.info(op, s);
                    let mut sent = 0;
                    for cpu in 0..NR_CPUS {
                        if cpu as u32 != z.cpu && mask & 1 << cpu != 0 && !s.cpus[cpu].st.is_lazy {
                            s.cpus[cpu].queued[op] = true;
                            sent += 1;
                        }
                    }
                    s.acks[op] = sent;
                    let local = self.handle(s, z.cpu as usize, &info);
                    format!("finish_asid_transition: {sent} IPI(s); local {local}")
                }
            }
            Step::Acks => "all acknowledged".to_string(),
            Step::Tlbsync => "TLBSYNC returns".to_string(),
            Step::Free => {
                for p in 0..BC_PAGES {
                    if bits & 1 << p != 0 {
                        s.pages[p as usize] = Page::Freed;
                    }
                }
                "frees its frames".to_string()
            }
        };
        s.pc[op] = if s.pc[op] as usize + 1 == self.order.len() { DONE } else { s.pc[op] + 1 };
        format!("cpu{} zap {op}: {what}", z.cpu)
    }

    /// `flush_tlb_func` on `cpu`, applied.
    fn handle(&self, s: &mut State, cpu: usize, info: &FlushInfo) -> String {
        let gen = s.tlb_gen;
        let c = &mut s.cpus[cpu];
        let action = flush_tlb_func(&mut c.st, info, &self.v.knobs, Some(GLOBAL), || gen);
        match action {
            FlushAction::WrongMm => s.cpumask &= !(1 << cpu),
            FlushAction::LeaveLazy => {
                c.tlb &= !(((1 << BC_PAGES) - 1) << Self::shift(c));
                leave_mm(&mut c.st);
                s.cpumask &= !(1 << cpu);
            }
            // A reload with the global PCID leaves the per-CPU one's entries unused for good.
            FlushAction::GlobalAsid { .. } => {}
            other => unreachable!("a global-ASID mm's flush_tlb_func does {other:?}"),
        }
        format!("{action:?}")
    }

    fn zap_waits(&self, s: &State, op: usize) -> bool {
        match self.order.get(s.pc[op] as usize) {
            Some(Step::Acks) => s.acks[op] > 0,
            Some(Step::Tlbsync) => s.cpus.iter().any(|c| c.pending[op] != 0),
            _ => false,
        }
    }

    fn in_zap(&self, s: &State, cpu: usize) -> bool {
        self.sc.zaps.iter().enumerate().any(|(i, z)| z.cpu as usize == cpu && s.pc[i] != 0 && s.pc[i] != DONE)
    }
}

impl Model for BroadcastChecker<'_> {
    type State = State;
    type Key = State;
    type Action = Action;

    fn initial(&self) -> State {
        let cpu = Cpu { st: TlbState::default(), tlb: 0, pending: [0; 2], queued: [false; 2] };
        let mut s = State {
            cpus: [cpu.clone(), cpu.clone(), cpu],
            cpumask: 0,
            tlb_gen: 1,
            asid_transition: self.sc.transition,
            pages: [Page::Mapped; BC_PAGES as usize],
            pc: [0; 2],
            acks: [0; 2],
            switches: self.sc.switches,
        };
        for (i, c) in s.cpus.iter_mut().enumerate() {
            c.st.loaded_mm = Some(MM);
            c.st.loaded_asid = if self.sc.transition && i > 0 { DYN } else { GLOBAL };
            c.st.ctxs[DYN as usize].ctx_id = CTX_ID[MM as usize];
            c.st.ctxs[DYN as usize].tlb_gen = 1;
            c.st.is_lazy = self.sc.transition && i == 2;
            s.cpumask |= 1 << i;
        }
        Self::saturate(&mut s);
        s
    }

    fn key(&self, s: &State) -> State {
        s.clone()
    }

    fn successors(&self, s: &State, out: &mut Vec<Action>) {
        for cpu in 0..NR_CPUS {
            let c = &s.cpus[cpu];
            for op in 0..self.sc.zaps.len() {
                if c.pending[op] != 0 {
                    out.push(Action::Complete { cpu: cpu as u8, op: op as u8 });
                }
                if c.queued[op] {
                    out.push(Action::Handle { cpu: cpu as u8, op: op as u8 });
                }
            }
            if s.switches > 0 && !self.in_zap(s, cpu) {
                let tos: &[To] = match (c.st.loaded_mm, c.st.is_lazy) {
                    (Some(MM), false) => &[To::KernelThread, To::Mm(OTHER)],
                    (Some(MM), true) => &[To::Mm(MM), To::Mm(OTHER)],
                    _ => &[To::Mm(MM), To::KernelThread],
                };
                out.extend(tos.iter().map(|&to| Action::Switch { cpu: cpu as u8, to }));
            }
        }
        for (op, z) in self.sc.zaps.iter().enumerate() {
            let c = &s.cpus[z.cpu as usize];
            let runs = c.st.loaded_mm == Some(MM) && !c.st.is_lazy;
            if s.pc[op] != DONE && (s.pc[op] != 0 || runs) && !self.zap_waits(s, op) {
                out.push(Action::Op { op: op as u8 });
            }
        }
    }

    fn apply(&self, s: &mut State, a: Action) -> (String, Option<String>) {
        let what = match a {
            Action::Complete { cpu, op } => {
                let c = &mut s.cpus[cpu as usize];
                c.tlb &= !c.pending[op as usize];
                c.pending[op as usize] = 0;
                format!("cpu{cpu}: zap {op}'s INVLPGBs complete")
            }
            Action::Handle { cpu, op } => {
                s.cpus[cpu as usize].queued[op as usize] = false;
                let info = self.info(op as usize, s);
                let r = self.handle(s, cpu as usize, &info);
                s.acks[op as usize] -= 1;
                format!("cpu{cpu}: flush IPI of zap {op}: {r}")
            }
            Action::Switch { cpu, to } => {
                s.switches -= 1;
                format!("cpu{cpu} {}", self.switch(s, cpu as usize, to))
            }
            Action::Op { op } => self.op_step(s, op as usize),
        };
        Self::saturate(s);
        (what, None)
    }

    fn violation(&self, s: &State) -> Option<String> {
        for (cpu, c) in s.cpus.iter().enumerate() {
            if c.st.loaded_mm != Some(MM) || c.st.is_lazy {
                continue;
            }
            let held = c.tlb >> Self::shift(c) & ((1 << BC_PAGES) - 1);
            for p in 0..BC_PAGES as usize {
                let returned = self
                    .sc
                    .zaps
                    .iter()
                    .enumerate()
                    .any(|(i, z)| s.pc[i] == DONE && pages_bits(z) & 1 << p != 0);
                if held & 1 << p != 0 && (s.pages[p] == Page::Freed || returned) {
                    let why =
                        if s.pages[p] == Page::Freed { "a freed frame" } else { "a page its zap flushed" };
                    return Some(format!("cpu{cpu} running mm 0 still translates page {p} ({why})"));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant() -> BroadcastVariant {
        let mut k = KernelConfig::preset("5.18.1+patch").unwrap();
        k.set("invlpgb", "on").unwrap();
        BroadcastVariant::of(&k)
    }

    #[test]
    fn the_kernels_protocol_is_safe_in_every_scenario() {
        let v = variant();
        for sc in &BROADCAST_SCENARIOS {
            let r = BroadcastChecker::new(&v, sc).run();
            assert!(r.complete && r.counterexample.is_none(), "{}: {:?}", sc.name, r.counterexample);
            assert!(r.states > 100, "{}: {} states", sc.name, r.states);
        }
    }

    #[test]
    fn freeing_before_tlbsync_is_caught() {
        let v =
            BroadcastVariant { name: "free before TLBSYNC".into(), free_before_tlbsync: true, ..variant() };
        let r = BroadcastChecker::new(&v, &BROADCAST_SCENARIOS[0]).run();
        let cx = r.counterexample.expect("a counterexample");
        assert!(cx.property.contains("freed frame"), "{cx:?}");
    }

    #[test]
    fn a_transition_without_its_ipis_is_caught() {
        let v = BroadcastVariant { name: "no transition IPIs".into(), transition_ipis: false, ..variant() };
        let r = BroadcastChecker::new(&v, &BROADCAST_SCENARIOS[1]).run();
        let cx = r.counterexample.expect("a counterexample");
        assert!(cx.property.contains("cpu1"), "{cx:?}");
    }
}
