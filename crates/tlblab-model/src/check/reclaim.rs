//! Not a Linux file: an exhaustive check of reclaim's unmap flush (linux/mm/rmap.rs,
//! linux/mm/vmscan.rs): a reclaimer on CPU 0 unmaps and frees a few file pages of one mm while
//! the other CPUs, running that mm, use the pages, refill their TLBs, refault, context-switch and
//! go lazy.
//!
//! Every decision is the kernel model's own code, called as the engine calls it:
//! `scan_chunk` (how many pages `shrink_lruvec` isolates per batch), `page_check_references`,
//! `should_defer_flush` and `Ubc::add_mm` (`try_to_unmap_one`'s flush per page or into the
//! batch), `Ubc::flush_plan` (`try_to_unmap_flush`), `batch_end_order` (flush, then free), and
//! for the flush per page the shootdown's own `flush_info`, `flush_targets` and `flush_tlb_func`;
//! the CPUs switch with `switch_mm_irqs_off`. What this file adds is the machine: a TLB as a set
//! of `(ASID slot, page)` entries of the pages' original frames, filled by a walk of a present
//! PTE (which sets its accessed bit), and the atomic steps at which Linux (v4.2 mm/vmscan.c and
//! mm/rmap.c, v4.3's `TTU_BATCH_FLUSH`, v5.18 arch/x86/mm/tlb.c) may interleave:
//! - the reclaimer isolates a batch; per page, `page_check_references` and `try_to_unmap` (one
//!   step: the page is locked); a flush per page when it is not deferred (`inc_mm_tlb_gen`, the
//!   local flush and the send in the `concurrent_local` order, the return once every target has
//!   acknowledged); `__remove_mapping`; at the batch's end `try_to_unmap_flush` (the local full
//!   flush and the send, then the return) and the free, in `batch_end_order`'s order;
//! - a CPU running the mm fills a TLB entry from a present PTE, or faults on a cleared one: the
//!   engine's fault (linux/mm/memory.rs) maps the page-cache page if the slot still holds it, a new
//!   frame otherwise;
//! - a CPU runs the handler of its queued request: `flush_tlb_func` for a flush per page,
//!   `flush_tlb_batch_pages` (a full flush of what it runs) for the batch's IPI;
//! - a CPU other than the reclaimer context-switches (to the other mm, a kernel thread, which
//!   is lazy TLB mode, or back), within the scenario's budget.
//!
//! Properties, in every reachable state: a CPU running the mm (not lazy) holds no entry, in the
//! ASID slot it runs with, for a page whose frame was freed; and no frame is freed while a PTE
//! still maps it. A lazy CPU, or an entry in an ASID slot the CPU does not run with, may hold
//! one (Linux skips lazy CPUs from v4.20 and flushes a slot when it switches back to it if the
//! mm's `tlb_gen` moved); the switch back is explored, so a switch that fails to flush shows as
//! a violation right after it.
//!
//! Not modelled: writeback (the engine's reclaim never meets a dirty page, so
//! `try_to_unmap_flush_dirty` never runs), a second reclaimer, pages mapped by several mms.

use std::hash::Hash;

use crate::hw::cpumask::CpuMask;
use crate::linux::arch::x86::mm::tlb::{
    flush_info, flush_targets, flush_tlb_func, leave_mm, FlushAction, FlushInfo, FlushKnobs, TlbState,
};
use crate::linux::config::KernelConfig;
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};
use crate::linux::mm::rmap::should_defer_flush;
use crate::linux::mm::vmscan::{
    batch_end_order, page_check_references, remove_mapping_frees, scan_chunk, BatchEnd, PageRef,
    ReclaimKnobs, Ubc, UnmapFlush,
};

use super::{
    bit,
    explore::{digest128, explore, Model, Order},
    mask, slot_bits, Report, SwitchCtx, To, FIRST_TLB_GEN, INPUTS, MM, NR_CPUS, OTHER,
};

/// The mm a CPU can use translations of (none while lazy).
fn running_mm(st: &TlbState) -> Option<MmId> {
    if st.is_lazy {
        None
    } else {
        st.loaded_mm
    }
}

/// The reclaimer's CPU.
const RECLAIMER: u32 = 0;
/// Most states explored per run (the exploration is then incomplete).
pub const MAX_RECLAIM_STATES: usize = 3_000_000;

/// One variant: the flush and reclaim knobs, the gather's order, PCIDs (as at boot: only with
/// generations).
#[derive(Debug, Clone)]
pub struct ReclaimVariant {
    pub name: String,
    pub knobs: FlushKnobs,
    pub reclaim: ReclaimKnobs,
    pub free_before_flush: bool,
    pub pcid: bool,
}

impl ReclaimVariant {
    /// A kernel configuration on a machine with or without PCIDs.
    pub fn of(k: &KernelConfig, pcid: bool) -> ReclaimVariant {
        let pcid = pcid && k.flush.generations;
        let r = k.reclaim;
        ReclaimVariant {
            name: format!(
                "{}{} reclaim unmap_flush={} swap_cluster_max={}{}",
                k.name,
                if pcid { " pcid" } else { "" },
                unmap_flush_name(r.unmap_flush),
                r.swap_cluster_max,
                if k.mm.free_before_flush { " free_before_flush" } else { "" }
            ),
            knobs: k.flush,
            reclaim: r,
            free_before_flush: k.mm.free_before_flush,
            pcid,
        }
    }
}

fn unmap_flush_name(u: UnmapFlush) -> &'static str {
    match u {
        UnmapFlush::PerPage => "per-page",
        UnmapFlush::Batched => "batched",
    }
}

/// Every `[reclaim]` combination the checker distinguishes on top of `base`: the flush per
/// page or batched, and `swap_cluster_max` 1, 2 (batches of one and of two pages) and 32 (one
/// batch), with and without PCIDs where `base` has generations.
pub fn reclaim_knob_variants(base: &KernelConfig) -> Vec<ReclaimVariant> {
    let mut out = Vec::new();
    for unmap_flush in [UnmapFlush::PerPage, UnmapFlush::Batched] {
        for swap_cluster_max in [1, 2, 32] {
            for pcid in if base.flush.generations { &[false, true][..] } else { &[false][..] } {
                let mut k = base.clone();
                k.reclaim = ReclaimKnobs { unmap_flush, swap_cluster_max, ..base.reclaim };
                out.push(ReclaimVariant::of(&k, *pcid));
            }
        }
    }
    out
}

/// The pages the reclaimer takes, who reclaims, and how many context switches the other CPUs
/// may make in all.
#[derive(Debug, Clone, Copy)]
pub struct ReclaimScenario {
    pub name: &'static str,
    /// File pages of the mm on the inactive list, all isolated in turn (at most
    /// [`super::NR_PAGES`]).
    pub pages: u8,
    /// Direct reclaim by a thread of the mm (CPU 0 runs the mm); else kswapd (CPU 0 in lazy TLB
    /// mode on the mm it ran last).
    pub direct: bool,
    pub switches: u8,
}

/// kswapd with three pages and two switches (a lazy round trip, or a visit to the other mm);
/// direct reclaim with two pages and one switch.
pub const RECLAIM_SCENARIOS: [ReclaimScenario; 2] = [
    ReclaimScenario { name: "kswapd 3 pages, 2 switches", pages: 3, direct: false, switches: 2 },
    ReclaimScenario { name: "direct 2 pages, 1 switch", pages: 2, direct: true, switches: 1 },
];

/// What a page's PTE maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Pte {
    None,
    /// The page's original frame, the one under reclaim.
    Orig,
    /// A frame a refault read in after the original left the page cache.
    New,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Page {
    pte: Pte,
    /// The PTE's accessed bit (of the original frame's PTE).
    young: bool,
    /// `PG_referenced`.
    referenced: bool,
    /// The original frame is in the page cache.
    cached: bool,
    freed: bool,
}

/// A flush request queued on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Req {
    Range(FlushInfo),
    Batch,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Cpu {
    st: TlbState,
    /// Entries of the pages' original frames: bit `slot * NR_PAGES + page`.
    tlb: u32,
    /// The request queued on it (one initiator, one flush at a time).
    req: Option<Req>,
}

/// A flush of the reclaimer in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Flight {
    /// The flush per page's `flush_tlb_info` (`None`: the batch's flush).
    info: Option<FlushInfo>,
    local_done: bool,
    sent: bool,
    pending: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    /// `shrink_lruvec`: isolate the next batch, or done.
    Isolate,
    /// `page_check_references` and `try_to_unmap` of page `i`.
    Check {
        i: u8,
    },
    /// `ptep_clear_flush`'s flush of page `i`.
    PageFlush {
        i: u8,
        flight: Option<Flight>,
    },
    /// `__remove_mapping` of page `i`.
    Remove {
        i: u8,
    },
    /// Step `k` of the batch's end.
    End {
        k: u8,
        flight: Option<Flight>,
    },
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct State {
    cpus: [Cpu; NR_CPUS],
    tlb_gen: [u64; 2],
    cpumask: [u8; 2],
    pages: [Page; super::NR_PAGES as usize],
    phase: Phase,
    /// The next page to isolate, and the current batch's end.
    next: u8,
    batch_end: u8,
    /// The batch's pages to free.
    to_free: u8,
    ubc: Ubc,
    switches: u8,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Action {
    Reclaim,
    Fill { cpu: u32, page: u8 },
    Fault { cpu: u32, page: u8 },
    Handle { cpu: u32 },
    Switch { cpu: u32, to: To },
}

pub struct ReclaimChecker<'a> {
    v: &'a ReclaimVariant,
    sc: &'a ReclaimScenario,
}

impl<'a> ReclaimChecker<'a> {
    pub fn new(v: &'a ReclaimVariant, sc: &'a ReclaimScenario) -> ReclaimChecker<'a> {
        assert!(sc.pages as u64 <= super::NR_PAGES && sc.pages > 0);
        ReclaimChecker { v, sc }
    }

    /// Explores every interleaving depth first; stops at the first violation, whose trace is
    /// the path that reached it.
    pub fn run(&self) -> Report {
        explore(self, Order::DepthFirst, MAX_RECLAIM_STATES, self.v.name.clone())
    }

    fn switch(&self, s: &mut State, cpu: u32, to: To) -> String {
        let c = &mut s.cpus[cpu as usize];
        let sw = SwitchCtx {
            knobs: &self.v.knobs,
            pcid: self.v.pcid,
            tlb_gen: &s.tlb_gen,
            switcher: super::kernel_switch,
        };
        sw.apply(&mut c.st, &mut c.tlb, &mut s.cpumask, cpu, to)
    }

    fn lazy_mask(s: &State) -> CpuMask {
        mask((0..NR_CPUS).filter(|&c| s.cpus[c].st.is_lazy).map(|c| 1 << c).sum())
    }

    /// `flush_tlb_func` of `info` on `cpu`, applied (as check.rs's handler).
    fn flush_func(&self, s: &mut State, cpu: u32, info: &FlushInfo) -> String {
        let gen = s.tlb_gen[MM as usize];
        let c = &mut s.cpus[cpu as usize];
        let action = flush_tlb_func(&mut c.st, info, &self.v.knobs, None, || gen);
        if action.clears_bit(self.v.knobs.cpumask) {
            s.cpumask[MM as usize] &= !(1 << cpu);
        }
        match action {
            FlushAction::LeaveLazy => {
                c.tlb &= !slot_bits(c.st.loaded_asid);
                leave_mm(&mut c.st);
            }
            FlushAction::Partial { start, nr, stride_shift } => {
                for k in 0..nr {
                    let page = (start + (k << stride_shift)) >> PAGE_SHIFT;
                    if page < super::NR_PAGES {
                        c.tlb &= !bit(c.st.loaded_asid, page);
                    }
                }
            }
            FlushAction::Full => c.tlb &= !slot_bits(c.st.loaded_asid),
            // No global ASIDs in this checker.
            FlushAction::WrongMm
            | FlushAction::EarlyReturn
            | FlushAction::UpToDate
            | FlushAction::GlobalAsid { .. } => {}
        }
        format!("flush_tlb_func(gen {}) -> {action:?}", info.new_tlb_gen)
    }

    /// `flush_tlb_batch_pages` on `cpu` (linux/mm/rmap.rs): a full flush of the PCID it runs with.
    fn batch_func(s: &mut State, cpu: u32) -> String {
        let c = &mut s.cpus[cpu as usize];
        c.tlb &= !slot_bits(c.st.loaded_asid);
        format!("flush_tlb_batch_pages: full flush of asid {}", c.st.loaded_asid)
    }

    /// The reclaimer can take a step (it is not waiting for acknowledgements).
    fn reclaim_ready(&self, s: &State) -> bool {
        let waiting = |f: &Option<Flight>| f.is_some_and(|f| f.local_done && f.sent && f.pending > 0);
        match &s.phase {
            Phase::Done => false,
            Phase::PageFlush { flight, .. } | Phase::End { flight, .. } => !waiting(flight),
            _ => true,
        }
    }

    /// The page after `i` in the batch, or the batch's end.
    fn after(&self, s: &State, i: u8) -> Phase {
        if i + 1 < s.batch_end {
            Phase::Check { i: i + 1 }
        } else {
            Phase::End { k: 0, flight: None }
        }
    }

    fn reclaim_step(&self, s: &mut State) -> String {
        match s.phase {
            Phase::Done => unreachable!("no step after the end"),
            Phase::Isolate => {
                let left = (self.sc.pages - s.next) as u64;
                if left == 0 {
                    s.phase = Phase::Done;
                    return "shrink_lruvec: nothing left to scan".into();
                }
                let n = scan_chunk(left, self.v.reclaim.swap_cluster_max) as u8;
                let first = s.next;
                s.next += n;
                s.batch_end = s.next;
                s.phase = Phase::Check { i: first };
                format!("shrink_inactive_list isolates pages {first}..{}", s.next)
            }
            Phase::Check { i } => {
                let p = &mut s.pages[i as usize];
                // page_referenced: the accessed bit of the PTE mapping the page (none if unmapped).
                let young = p.pte == Pte::Orig && std::mem::take(&mut p.young);
                let (decision, referenced) = page_check_references(young as u32, p.referenced);
                p.referenced = referenced;
                if decision != PageRef::Reclaim {
                    s.phase = self.after(s, i);
                    return format!("page {i}: page_check_references -> {decision:?}");
                }
                if p.pte != Pte::Orig {
                    s.phase = Phase::Remove { i };
                    return format!("page {i}: reclaim, not mapped");
                }
                p.pte = Pte::None;
                let cpumask = mask(s.cpumask[MM as usize]);
                let batched = self.v.reclaim.unmap_flush == UnmapFlush::Batched;
                if should_defer_flush(batched, &cpumask, RECLAIMER) {
                    if s.ubc.add_mm(&cpumask, false, &self.v.knobs) {
                        s.tlb_gen[MM as usize] += 1;
                    }
                    s.phase = Phase::Remove { i };
                    format!(
                        "page {i}: reclaim; try_to_unmap clears the PTE, flush deferred to cpus {:?}",
                        s.ubc.cpumask.iter().collect::<Vec<_>>()
                    )
                } else {
                    s.phase = Phase::PageFlush { i, flight: None };
                    format!("page {i}: reclaim; ptep_clear_flush clears the PTE")
                }
            }
            Phase::PageFlush { i, flight } => {
                let (what, f) = self.page_flush_step(s, i as u64, flight);
                s.phase = match f {
                    Some(f) => Phase::PageFlush { i, flight: Some(f) },
                    None => Phase::Remove { i },
                };
                format!("page {i}: {what}")
            }
            Phase::Remove { i } => {
                if !remove_mapping_frees(s.pages[i as usize].pte == Pte::Orig) {
                    s.phase = self.after(s, i);
                    return format!("page {i}: __remove_mapping fails (a fault mapped it again): kept");
                }
                s.pages[i as usize].cached = false;
                s.to_free |= 1 << i;
                s.phase = self.after(s, i);
                format!("page {i}: __remove_mapping (leaves the page cache)")
            }
            Phase::End { k, flight } => {
                let order = batch_end_order(self.v.free_before_flush);
                let next = |k: u8| {
                    if k as usize + 1 < order.len() {
                        Phase::End { k: k + 1, flight: None }
                    } else {
                        Phase::Isolate
                    }
                };
                match order[k as usize] {
                    BatchEnd::Free => {
                        let freed: Vec<u8> =
                            (0..self.sc.pages).filter(|&p| s.to_free & (1 << p) != 0).collect();
                        for &p in &freed {
                            s.pages[p as usize].freed = true;
                        }
                        s.to_free = 0;
                        s.phase = next(k);
                        format!("free_hot_cold_page_list frees pages {freed:?}")
                    }
                    BatchEnd::Flush => {
                        let (what, f) = self.batch_flush_step(s, flight);
                        s.phase = match f {
                            Some(f) => Phase::End { k, flight: Some(f) },
                            None => next(k),
                        };
                        what
                    }
                }
            }
        }
    }

    /// One step of `flush_tlb_mm_range(mm, page, page + 1)` from the reclaimer; `None` once it
    /// has returned.
    fn page_flush_step(&self, s: &mut State, page: u64, f: Option<Flight>) -> (String, Option<Flight>) {
        let Some(mut f) = f else {
            // inc_mm_tlb_gen, flush_tlb_info.
            let m = MM as usize;
            s.tlb_gen[m] += 1;
            let range = (page << PAGE_SHIFT, (page + 1) << PAGE_SHIFT);
            let (info, _) =
                flush_info(self.v.knobs.policy, &INPUTS, MM, range, false, s.tlb_gen[m], RECLAIMER);
            let f = Flight { info: Some(info), local_done: false, sent: false, pending: 0 };
            return (format!("flush_tlb_mm_range: inc_mm_tlb_gen -> {}", s.tlb_gen[m]), Some(f));
        };
        let info = f.info.expect("a flush per page has its info");
        if !f.local_done && (!self.v.knobs.concurrent_local || f.sent) {
            f.local_done = true;
            // The local flush_tlb_func runs only where the mm is loaded.
            if s.cpus[RECLAIMER as usize].st.loaded_mm != Some(MM) {
                return ("no local flush (mm not loaded here)".into(), Some(f));
            }
            return (format!("local {}", self.flush_func(s, RECLAIMER, &info)), Some(f));
        }
        if !f.sent {
            let targets = flush_targets(
                &mask(s.cpumask[MM as usize]),
                &Self::lazy_mask(s),
                None,
                &self.v.knobs,
                false,
                RECLAIMER,
            );
            f.sent = true;
            f.pending = targets.weight() as u8;
            for t in targets.iter() {
                s.cpus[t as usize].req = Some(Req::Range(info));
            }
            return (format!("sends the flush to cpus {:?}", targets.iter().collect::<Vec<_>>()), Some(f));
        }
        ("every target acknowledged: the flush returns".into(), None)
    }

    /// One step of `try_to_unmap_flush` (linux/mm/rmap.rs); `None` once it has returned.
    fn batch_flush_step(&self, s: &mut State, f: Option<Flight>) -> (String, Option<Flight>) {
        if f.is_some() {
            return ("try_to_unmap_flush: every target acknowledged, returns".into(), None);
        }
        let ubc = std::mem::take(&mut s.ubc);
        // The engine's target rule: lazy CPUs skipped from v4.20 (`lazy_ipis`).
        let Some(plan) = ubc.flush_plan(RECLAIMER, &Self::lazy_mask(s), &self.v.knobs) else {
            return ("try_to_unmap_flush: nothing pending".into(), None);
        };
        let mut what = "try_to_unmap_flush:".to_string();
        if plan.local {
            what += &format!(" local {};", Self::batch_func(s, RECLAIMER));
        }
        for t in plan.others.iter() {
            s.cpus[t as usize].req = Some(Req::Batch);
        }
        what += &format!(" sends to cpus {:?}", plan.others.iter().collect::<Vec<_>>());
        let f = Flight { info: None, local_done: true, sent: true, pending: plan.others.weight() as u8 };
        (what, Some(f))
    }
}

impl Model for ReclaimChecker<'_> {
    type State = State;
    type Key = u128;
    type Action = Action;

    fn initial(&self) -> State {
        let idle = Cpu { st: TlbState::default(), tlb: 0, req: None };
        let page = Page { pte: Pte::Orig, young: false, referenced: false, cached: true, freed: false };
        let mut s = State {
            cpus: [idle.clone(), idle.clone(), idle],
            tlb_gen: [FIRST_TLB_GEN; 2],
            cpumask: [0; 2],
            pages: [page; super::NR_PAGES as usize],
            phase: Phase::Isolate,
            next: 0,
            batch_end: 0,
            to_free: 0,
            ubc: Ubc::default(),
            switches: self.sc.switches,
        };
        for p in self.sc.pages as usize..super::NR_PAGES as usize {
            s.pages[p] =
                Page { pte: Pte::None, young: false, referenced: false, cached: false, freed: false };
        }
        // Every CPU ran the mm and cached every page; aging has since cleared the accessed bits
        // (ptep_clear_flush_young flushes nothing on x86). kswapd's CPU went lazy.
        for cpu in 0..NR_CPUS as u32 {
            self.switch(&mut s, cpu, To::Mm(MM));
            let c = &mut s.cpus[cpu as usize];
            for p in 0..self.sc.pages as u64 {
                c.tlb |= bit(c.st.loaded_asid, p);
            }
        }
        if !self.sc.direct {
            s.cpus[RECLAIMER as usize].st.is_lazy = true;
        }
        s
    }

    /// A 128-bit digest of the state (two independent hashes): the visited set stores only
    /// these.
    fn key(&self, s: &State) -> u128 {
        digest128(s)
    }

    /// The enabled steps. The search takes the last first: the reclaimer, then handlers, then
    /// the other CPUs' accesses and switches (counterexample traces then stay short).
    fn successors(&self, s: &State, out: &mut Vec<Action>) {
        out.clear();
        for cpu in 0..NR_CPUS as u32 {
            let c = &s.cpus[cpu as usize];
            if cpu != RECLAIMER && s.switches > 0 {
                let tos: &[To] = match running_mm(&c.st) {
                    Some(MM) => &[To::KernelThread, To::Mm(OTHER)],
                    Some(_) => &[To::KernelThread, To::Mm(MM)],
                    None => &[To::Mm(MM), To::Mm(OTHER)],
                };
                out.extend(tos.iter().map(|&to| Action::Switch { cpu, to }));
            }
            if running_mm(&c.st) == Some(MM) {
                for page in 0..self.sc.pages {
                    match s.pages[page as usize].pte {
                        Pte::Orig if c.tlb & bit(c.st.loaded_asid, page as u64) == 0 => {
                            out.push(Action::Fill { cpu, page })
                        }
                        // The reclaimer's thread is in the kernel: it does not touch the pages.
                        Pte::None if cpu != RECLAIMER => out.push(Action::Fault { cpu, page }),
                        _ => {}
                    }
                }
            }
        }
        for cpu in 0..NR_CPUS as u32 {
            if s.cpus[cpu as usize].req.is_some() {
                out.push(Action::Handle { cpu });
            }
        }
        if self.reclaim_ready(s) {
            out.push(Action::Reclaim);
        }
    }

    /// Applies `a`; returns its description.
    fn apply(&self, s: &mut State, a: Action) -> (String, Option<String>) {
        let what = match a {
            Action::Reclaim => format!("cpu{RECLAIMER}: {}", self.reclaim_step(s)),
            Action::Fill { cpu, page } => {
                let c = &mut s.cpus[cpu as usize];
                c.tlb |= bit(c.st.loaded_asid, page as u64);
                s.pages[page as usize].young = true;
                format!("cpu{cpu}: walks page {page}'s PTE, fills its TLB (accessed bit set)")
            }
            Action::Fault { cpu, page } => {
                // The engine's read fault (linux/mm/memory.rs): fault-around maps, with young PTEs
                // (v4.2), every page-cache page of its window whose PTE is none (the pages are in
                // one window); the faulting page is read into a new frame if it left the cache.
                let mut around = Vec::new();
                for (q, p) in s.pages.iter_mut().enumerate().take(self.sc.pages as usize) {
                    if p.pte == Pte::None && p.cached {
                        p.pte = Pte::Orig;
                        p.young = true;
                        around.push(q);
                    }
                }
                let p = &mut s.pages[page as usize];
                if p.pte == Pte::None {
                    p.pte = Pte::New;
                }
                format!(
                    "cpu{cpu}: faults on page {page}: maps page-cache pages {around:?}{}",
                    if p.pte == Pte::New { ", reads the page into a new frame" } else { "" }
                )
            }
            Action::Handle { cpu } => {
                let req = s.cpus[cpu as usize].req.take().expect("a queued request");
                let what = match req {
                    Req::Range(info) => self.flush_func(s, cpu, &info),
                    Req::Batch => Self::batch_func(s, cpu),
                };
                let f = match &mut s.phase {
                    Phase::PageFlush { flight, .. } | Phase::End { flight, .. } => flight.as_mut(),
                    _ => None,
                };
                f.expect("a request belongs to the flush in flight").pending -= 1;
                format!("cpu{cpu}: {what}, acks")
            }
            Action::Switch { cpu, to } => {
                s.switches -= 1;
                format!("cpu{cpu}: {}", self.switch(s, cpu, to))
            }
        };
        (what, None)
    }

    /// The property broken in `s`, if any.
    fn violation(&self, s: &State) -> Option<String> {
        for (p, page) in s.pages.iter().enumerate() {
            if page.freed && page.pte == Pte::Orig {
                return Some(format!("freed while mapped: page {p}'s frame was freed while a PTE maps it"));
            }
        }
        for (cpu, c) in s.cpus.iter().enumerate() {
            if running_mm(&c.st) != Some(MM) {
                continue;
            }
            for p in 0..self.sc.pages as u64 {
                if s.pages[p as usize].freed && c.tlb & bit(c.st.loaded_asid, p) != 0 {
                    return Some(format!(
                        "use-after-free: cpu{cpu} runs mm 0 and can still translate page {p} to its frame, which reclaim freed"
                    ));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
