//! Not a Linux file: an exhaustive check of the page allocator (linux/mm/page_alloc.rs) and of
//! the order between a zap's flush and its free.
//!
//! Every step is a call into the kernel model's own [`PageAlloc`], as `linux/include/linux/gfp.rs` makes
//! them: `alloc_pages` (the per-CPU list take, `rmqueue_bulk`'s refill, `__rmqueue_smallest` with
//! `expand`'s splits), `free_pages` (the per-CPU list add, `free_pcppages_bulk`'s drain,
//! `__free_one_page`'s merges) and `drain_local_pages`. Each call is one atomic step: the kernel
//! runs the per-CPU part with interrupts off and the buddy part under `zone->lock`, so calls of
//! different CPUs interleave only between calls. v6.7 (auto-tuning) adds the vmstat worker's
//! `decay_pcp_high` as a call, and checks after every free that a list left at or above its
//! (moved) `high` was drained and that `high` stays within `[high_min, high_max]`. The zone is small (one top-order block, 1024
//! pages) and its per-CPU lists are tuned small (`batch`, `high` of the [`AllocVariant`]) so
//! that refills and drains happen within a few calls. The exploration is depth first, keyed by
//! the allocator's logical state (lists in order, counts, held blocks; not the lock clock,
//! which decides nothing).
//!
//! Properties, after every step: no block is handed out while any of its pages is held; the
//! buddy lists, the per-CPU lists and the held blocks cover the zone exactly once, each block
//! aligned and marked as its list says; two free buddies never both sit on the buddy lists
//! (a merge missed) and a merge never absorbs a page that is not free (it would overlap a held
//! or per-CPU block); `nr_free`, each `free_area[order].nr_free` and each `pcp->count` match
//! the lists, and every list's links agree with its walk.
//!
//! The flush scenario (`unmap-free`): CPU 0 allocates a page and maps it; the other CPUs may
//! fill a TLB entry from the present PTE at any moment; CPU 0 clears the PTE and runs the
//! gather's steps in `mmu_gather::zap_order`'s order, its flush dropping every CPU's entry
//! (the shootdown itself is what `check.rs` proves). Property: a page reaches the allocator
//! (a per-CPU list) only when no TLB may still translate to it.

use std::collections::HashSet;

use crate::hw::coherence::LineCosts;
use crate::hw::topology::Topology;
use crate::linux::config::KernelConfig;
use crate::linux::include::linux::mmzone::{List, MigrateType, PageState, MAX_ORDER, NIL};
use crate::linux::mm::mmu_gather::{zap_order, Step as ZapStep};
use crate::linux::mm::page_alloc::{Env, PageAlloc, PageAllocConfig, PageAllocCosts, PcpHigh};
use crate::time::Ps;

use super::explore::{digest128, explore, Model, Order};
use super::Report;

/// Pages of the checked zone: one top-order block.
pub const ZONE_PAGES: u64 = 1 << (MAX_ORDER - 1);
/// Most states explored per run (the exploration is then incomplete).
pub const MAX_ALLOC_STATES: usize = 3_000_000;

/// Timing decides nothing the checker looks at; these only make the calls well defined.
const LINES: LineCosts = LineCosts {
    hit: Ps(1),
    smt_sibling: Ps(1),
    same_socket: Ps(1),
    cross_socket: Ps(1),
    uncached: Ps(1),
    home: Ps(0),
};
const COSTS: PageAllocCosts = PageAllocCosts {
    pcp_alloc: Ps(1),
    pcp_free: Ps(1),
    lock_section: Ps(1),
    buddy_block: Ps(1),
    struct_page: Ps(1),
};

/// One allocator era with small per-CPU lists, and the gather's order.
#[derive(Debug, Clone)]
pub struct AllocVariant {
    pub name: String,
    pub cfg: PageAllocConfig,
    pub batch: u64,
    pub high: u64,
    pub free_before_flush: bool,
}

impl AllocVariant {
    /// A kernel configuration's allocator era and gather order, with `batch` 2 and `high` 3.
    pub fn of(k: &KernelConfig) -> AllocVariant {
        AllocVariant {
            name: format!(
                "{} page_alloc{}",
                k.name,
                if k.mm.free_before_flush { " free_before_flush" } else { "" }
            ),
            cfg: k.page_alloc,
            batch: 2,
            high: 3,
            free_before_flush: k.mm.free_before_flush,
        }
    }
}

/// Every era (4.9, 4.9-hopcpu, 5.14, 6.7) with `batch` 2 and `high` 3 (6.7: `high_min` 3,
/// `high_max` 6, so that refills raise it and free runs lower it within a few calls),
/// flush-then-free, and the unsafe `free_before_flush` of each.
pub fn alloc_variants() -> Vec<AllocVariant> {
    let mut out = Vec::new();
    for era in ["4.9", "4.9-hopcpu", "5.14", "6.7"] {
        for fbf in [false, true] {
            out.push(AllocVariant {
                name: format!(
                    "page_alloc {era} batch=2 high=3{}",
                    if fbf { " free_before_flush" } else { "" }
                ),
                cfg: PageAllocConfig::preset(era).expect("a built-in era"),
                batch: 2,
                high: 3,
                free_before_flush: fbf,
            });
        }
    }
    out
}

/// CPUs, the calls each may make, the orders they ask for, and whether CPU 0 runs the
/// map-then-unmap script of the flush scenario.
#[derive(Debug, Clone, Copy)]
pub struct AllocScenario {
    pub name: &'static str,
    pub cpus: u32,
    /// alloc / free / drain calls per CPU (besides CPU 0's script).
    pub calls: u8,
    /// Most blocks a CPU holds at once.
    pub max_held: usize,
    pub orders: &'static [u8],
    pub unmap: bool,
}

pub const ALLOC_SCENARIOS: [AllocScenario; 3] = [
    AllocScenario {
        name: "2cpu-orders0-3",
        cpus: 2,
        calls: 3,
        max_held: 2,
        orders: &[0, 1, 2, 3],
        unmap: false,
    },
    AllocScenario {
        name: "3cpu-orders0-3",
        cpus: 3,
        calls: 2,
        max_held: 1,
        orders: &[0, 1, 2, 3],
        unmap: false,
    },
    AllocScenario { name: "unmap-free", cpus: 2, calls: 2, max_held: 1, orders: &[0, 1], unmap: true },
];

/// CPU 0's script in the flush scenario.
const SCRIPT_START: u8 = 0;
const SCRIPT_MAPPED: u8 = 1;
/// Then the gather's steps, `SCRIPT_STEPS + k` before step k.
const SCRIPT_STEPS: u8 = 2;

#[derive(Clone)]
pub(super) struct State {
    pa: PageAlloc,
    /// Per CPU: blocks it holds `(pfn, order)`, in the order allocated.
    held: Vec<Vec<(u64, u8)>>,
    calls: Vec<u8>,
    /// The flush scenario: CPU 0's script position, its page, whether its PTE is present, and
    /// which CPUs' TLBs hold a translation to it.
    script: u8,
    page: u64,
    pte: bool,
    tlb: u8,
    clock: Ps,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Action {
    Alloc {
        cpu: u32,
        order: u8,
    },
    Free {
        cpu: u32,
        k: usize,
    },
    Drain {
        cpu: u32,
    },
    /// v6.7's vmstat worker: `decay_pcp_high` on the CPU.
    Decay {
        cpu: u32,
    },
    Fill {
        cpu: u32,
    },
    Script,
}

pub struct AllocChecker<'a> {
    v: &'a AllocVariant,
    sc: &'a AllocScenario,
    topo: Topology,
}

impl<'a> AllocChecker<'a> {
    pub fn new(v: &'a AllocVariant, sc: &'a AllocScenario) -> AllocChecker<'a> {
        AllocChecker { v, sc, topo: Topology { sockets: 1, cores_per_socket: sc.cpus, threads_per_core: 1 } }
    }

    /// Explores every interleaving depth first; stops at the first violation, whose trace is
    /// the path that reached it.
    pub fn run(&self) -> Report {
        explore(self, Order::DepthFirst, MAX_ALLOC_STATES, self.v.name.clone())
    }

    fn env(&self) -> Env<'_> {
        Env { topo: &self.topo, lines: &LINES }
    }

    /// The gather's steps after the PTE is cleared (v5.18 `zap_order`).
    fn zap_steps(&self) -> Vec<ZapStep> {
        zap_order(self.v.free_before_flush, 0, 1 << 12, true, false, false).into_iter().flatten().collect()
    }

    fn apply_inner(&self, s: &mut State, a: Action) -> Result<String, (String, String)> {
        let env = self.env();
        s.clock += Ps(1000);
        let now = s.clock;
        match a {
            Action::Alloc { cpu, order } => {
                s.calls[cpu as usize] -= 1;
                let out = s.pa.alloc_pages(cpu, now, order, MigrateType::Movable, env);
                let Some(pfn) = out.pfn else {
                    return Ok(format!("cpu{cpu} alloc_pages(order {order}) fails"));
                };
                let d = format!(
                    "cpu{cpu} alloc_pages(order {order}) -> pfn {pfn}{}{}",
                    if out.pcp_hit { " (pcp hit)" } else { "" },
                    if out.refill_blocks > 0 {
                        format!(" (refill {} blocks)", out.refill_blocks)
                    } else {
                        String::new()
                    }
                );
                self.hand_out(s, cpu, pfn, order).map_err(|e| (d.clone(), e))?;
                Ok(d)
            }
            Action::Free { cpu, k } => {
                s.calls[cpu as usize] -= 1;
                let (pfn, order) = s.held[cpu as usize].remove(k);
                let d = format!("cpu{cpu} free_pages(pfn {pfn}, order {order})");
                let out =
                    s.pa.free_pages(cpu, now, pfn, order, env)
                        .map_err(|e| (d.clone(), format!("free refused: {e}")))?;
                // A free that leaves the list at or above its high drains (v6.7: whatever
                // nr_pcp_high moved high to).
                let pcp = &s.pa.zones[0].pcp[cpu as usize];
                if out.to_pcp && pcp.count >= pcp.high && out.drained_blocks == 0 {
                    return Err((
                        d,
                        format!("count {} >= high {} after a free that drained nothing", pcp.count, pcp.high),
                    ));
                }
                if pcp.high < pcp.high_min || pcp.high > pcp.high_max {
                    return Err((
                        d,
                        format!("high {} outside [{}, {}]", pcp.high, pcp.high_min, pcp.high_max),
                    ));
                }
                Ok(format!(
                    "cpu{cpu} free_pages(pfn {pfn}, order {order}){}{}",
                    if out.to_pcp { " to its pcp list" } else { " to the buddy lists" },
                    if out.drained_blocks > 0 {
                        format!(", drains {} blocks", out.drained_blocks)
                    } else {
                        String::new()
                    }
                ))
            }
            Action::Drain { cpu } => {
                s.calls[cpu as usize] -= 1;
                s.pa.drain_local_pages(cpu, now, env);
                Ok(format!("cpu{cpu} drain_local_pages"))
            }
            Action::Decay { cpu } => {
                s.calls[cpu as usize] -= 1;
                s.pa.decay_pcp_high(0, cpu, now, env);
                let pcp = &s.pa.zones[0].pcp[cpu as usize];
                Ok(format!("cpu{cpu} decay_pcp_high -> high {}, count {}", pcp.high, pcp.count))
            }
            Action::Fill { cpu } => {
                s.tlb |= 1 << cpu;
                Ok(format!("cpu{cpu} fills a TLB entry for the mapped page (pfn {})", s.page))
            }
            Action::Script => self.script_step(s, now),
        }
    }

    fn hand_out(&self, s: &mut State, cpu: u32, pfn: u64, order: u8) -> Result<(), String> {
        let end = pfn + (1 << order);
        for (c, blocks) in s.held.iter().enumerate() {
            for &(p, o) in blocks {
                if p < end && pfn < p + (1 << o) {
                    return Err(format!(
                        "page handed out twice: pfn {pfn} order {order} to cpu{cpu} overlaps pfn {p} order {o} held by cpu{c}"
                    ));
                }
            }
        }
        if s.script != u8::MAX && s.script > SCRIPT_MAPPED && (pfn..end).contains(&s.page) && s.tlb != 0 {
            return Err(format!("pfn {} handed out again while a TLB still translates to it", s.page));
        }
        s.held[cpu as usize].push((pfn, order));
        Ok(())
    }

    fn script_step(&self, s: &mut State, now: Ps) -> Result<String, (String, String)> {
        let env = self.env();
        let steps = self.zap_steps();
        let at = s.script;
        s.script += 1;
        if at == SCRIPT_START {
            let d = "cpu0 faults in a page".to_string();
            let pfn = s.pa.alloc_pages(0, now, 0, MigrateType::Movable, env).pfn;
            let pfn = pfn.ok_or_else(|| (d.clone(), "no memory for the mapped page".to_string()))?;
            self.hand_out(s, 0, pfn, 0).map_err(|e| (d, e))?;
            // The script's page is not one of CPU 0's free-able blocks.
            s.held[0].pop();
            s.page = pfn;
            s.pte = true;
            return Ok(format!("cpu0 faults in pfn {pfn} and maps it (PTE present)"));
        }
        if at == SCRIPT_MAPPED {
            s.pte = false;
            return Ok("cpu0 munmap: clears the PTE, gathers the page".to_string());
        }
        match steps[(at - SCRIPT_STEPS) as usize] {
            ZapStep::FreeGathered => {
                let d = format!("cpu0 frees the gathered pfn {}", s.page);
                let out =
                    s.pa.free_pages(0, now, s.page, 0, env)
                        .map_err(|e| (d.clone(), format!("free refused: {e}")))?;
                if s.tlb != 0 {
                    let cpus: Vec<String> = (0..self.sc.cpus)
                        .filter(|c| s.tlb & (1 << c) != 0)
                        .map(|c| format!("cpu{c}"))
                        .collect();
                    let e = format!(
                        "use-after-free: pfn {} freed {} while {} may still translate to it",
                        s.page,
                        if out.to_pcp { "to cpu0's pcp list" } else { "to the buddy lists" },
                        cpus.join(", ")
                    );
                    return Err((d, e));
                }
                Ok(d)
            }
            ZapStep::FinishMmu { .. } | ZapStep::ForcedFlush { .. } => {
                s.tlb = 0;
                Ok("cpu0 tlb_finish_mmu: the flush returns, no CPU holds the entry".to_string())
            }
            ZapStep::EndGather => Ok("cpu0 dec_tlb_flush_pending".to_string()),
        }
    }

    /// The zone against the held blocks: exact cover, marks, merges, counts, links.
    fn invariant(&self, s: &State) -> Result<(), String> {
        let z = &s.pa.zones[0];
        let n = z.pages.len();
        let mut seen = vec![0u8; n];
        let mut cover = |i: u32, order: u8, what: u8, name: &str| -> Result<(), String> {
            if i % (1 << order) != 0 || i as usize + (1 << order) > n {
                return Err(format!("{name} block at page {i} order {order} misaligned"));
            }
            for k in i..i + (1 << order) {
                if seen[k as usize] != 0 {
                    return Err(format!("page {k} is in two places ({name} block {i} order {order})"));
                }
                seen[k as usize] = what;
            }
            Ok(())
        };
        let walk = |l: &List, name: &str| -> Result<Vec<u32>, String> {
            let (mut v, mut i, mut prev) = (Vec::new(), l.first, NIL);
            while i != NIL {
                let p = z.pages.get(i);
                if p.prev != prev || v.len() > n {
                    return Err(format!("{name}: broken links at page {i}"));
                }
                v.push(i);
                prev = i;
                i = p.next;
            }
            if v.len() != l.len as usize || l.last != prev {
                return Err(format!("{name}: len {} / last {} but {} walked", l.len, l.last, v.len()));
            }
            Ok(v)
        };
        let mut buddy_pages = 0u64;
        let mut free_heads = HashSet::new();
        for (o, fa) in z.free_area.iter().enumerate() {
            let mut blocks = 0u64;
            for (mt, l) in fa.free_list.iter().enumerate() {
                for i in walk(l, &format!("free_area[{o}][{mt}]"))? {
                    let p = z.pages.get(i);
                    if p.state != PageState::Buddy || p.order as usize != o {
                        return Err(format!(
                            "page {i} on free_area[{o}] marked {:?} order {}",
                            p.state, p.order
                        ));
                    }
                    cover(i, o as u8, 1, "buddy")?;
                    free_heads.insert((i, o as u8));
                    blocks += 1;
                    buddy_pages += 1 << o;
                }
            }
            if blocks != fa.nr_free {
                return Err(format!("free_area[{o}].nr_free {} but {blocks} blocks listed", fa.nr_free));
            }
        }
        if buddy_pages != z.nr_free {
            return Err(format!("nr_free {} but {buddy_pages} pages on the buddy lists", z.nr_free));
        }
        for &(i, o) in &free_heads {
            if o + 1 < MAX_ORDER && free_heads.contains(&(i ^ (1 << o), o)) {
                return Err(format!("free buddies {i} and {} of order {o} not merged", i ^ (1 << o)));
            }
        }
        let lists = self.v.cfg.pcp_lists;
        for (cpu, pcp) in z.pcp.iter().enumerate() {
            let mut pages = 0u64;
            for (pi, l) in pcp.lists.iter().enumerate() {
                let order = lists.order_of(pi);
                for i in walk(l, &format!("cpu{cpu} pcp list {pi}"))? {
                    let p = z.pages.get(i);
                    if p.state != PageState::Pcp || p.order != order {
                        return Err(format!(
                            "page {i} on cpu{cpu}'s pcp list marked {:?} order {}",
                            p.state, p.order
                        ));
                    }
                    cover(i, order, 2, "pcp")?;
                    pages += 1 << order;
                }
            }
            if pages != pcp.count {
                return Err(format!("cpu{cpu} pcp->count {} but {pages} pages listed", pcp.count));
            }
        }
        let script_page =
            (s.script != u8::MAX && s.script >= SCRIPT_MAPPED && !self.page_freed(s)).then_some(s.page);
        for (cpu, blocks) in s.held.iter().enumerate() {
            for &(pfn, o) in blocks.iter().chain(script_page.filter(|_| cpu == 0).map(|p| (p, 0)).iter()) {
                let p = z.pages.get(pfn as u32);
                if p.state != PageState::Allocated || p.order != o {
                    return Err(format!("cpu{cpu}'s block {pfn} marked {:?} order {}", p.state, p.order));
                }
                cover(pfn as u32, o, 3, "held")?;
            }
        }
        if let Some(k) = seen.iter().position(|&w| w == 0) {
            return Err(format!("page {k} is nowhere (lost)"));
        }
        Ok(())
    }

    /// CPU 0's script has freed its page.
    fn page_freed(&self, s: &State) -> bool {
        let steps = self.zap_steps();
        let free_at = steps.iter().position(|&st| st == ZapStep::FreeGathered).expect("a zap frees") as u8;
        s.script > SCRIPT_STEPS + free_at
    }

    fn key_words(&self, s: &State) -> Vec<u32> {
        let z = &s.pa.zones[0];
        let mut k = Vec::with_capacity(128);
        let list = |l: &List, k: &mut Vec<u32>| {
            let mut i = l.first;
            while i != NIL {
                let p = z.pages.get(i);
                k.push(i | (p.mt as u32) << 24);
                i = p.next;
            }
            k.push(NIL);
        };
        for fa in &z.free_area {
            for l in &fa.free_list {
                list(l, &mut k);
            }
        }
        for pcp in &z.pcp {
            k.push(pcp.free_factor);
            // v6.7's tuned state (constant in the older eras, so their state counts stay).
            k.extend([pcp.high as u32, pcp.alloc_factor, pcp.prev_free_high_order as u32]);
            for l in &pcp.lists {
                list(l, &mut k);
            }
        }
        k.extend(z.pageblock_mt.iter().map(|&m| m as u32));
        for (c, h) in s.held.iter().enumerate() {
            k.push(s.calls[c] as u32);
            let mut h: Vec<u32> = h.iter().map(|&(p, o)| (p as u32) << 4 | o as u32).collect();
            h.sort_unstable();
            k.extend(h);
            k.push(NIL);
        }
        k.extend([s.script as u32, s.page as u32, s.pte as u32, s.tlb as u32]);
        k
    }
}

impl Model for AllocChecker<'_> {
    type State = State;
    type Key = u128;
    type Action = Action;

    fn initial(&self) -> State {
        let mut pa = PageAlloc::new(self.v.cfg, COSTS, &self.topo, ZONE_PAGES);
        let tuned = self.v.cfg.high == PcpHigh::AutoTune;
        for p in &mut pa.zones[0].pcp {
            p.batch = self.v.batch;
            p.high = self.v.high;
            p.high_min = self.v.high;
            p.high_max = if tuned { 2 * self.v.high } else { self.v.high };
        }
        let n = self.sc.cpus as usize;
        State {
            pa,
            held: vec![Vec::new(); n],
            calls: vec![self.sc.calls; n],
            script: if self.sc.unmap { SCRIPT_START } else { u8::MAX },
            page: 0,
            pte: false,
            tlb: 0,
            clock: Ps::ZERO,
        }
    }

    /// The logical state (every list in order, counts, marks of listed pages, held blocks),
    /// hashed twice into 128 bits: a collision among a few million states has odds ~2^-88.
    fn key(&self, s: &State) -> u128 {
        digest128(&self.key_words(s))
    }

    fn successors(&self, s: &State, out: &mut Vec<Action>) {
        out.clear();
        for cpu in 0..self.sc.cpus {
            let c = cpu as usize;
            if s.calls[c] > 0 {
                if s.held[c].len() < self.sc.max_held {
                    out.extend(self.sc.orders.iter().map(|&order| Action::Alloc { cpu, order }));
                }
                out.extend((0..s.held[c].len()).map(|k| Action::Free { cpu, k }));
                out.push(Action::Drain { cpu });
                if self.v.cfg.high == PcpHigh::AutoTune {
                    out.push(Action::Decay { cpu });
                }
            }
            if cpu != 0 && s.pte && s.tlb & (1 << cpu) == 0 {
                out.push(Action::Fill { cpu });
            }
        }
        if self.sc.unmap && (s.script as usize) < SCRIPT_STEPS as usize + self.zap_steps().len() {
            out.push(Action::Script);
        }
    }

    /// Applies `a`; returns its description, and the property it broke if any.
    fn apply(&self, s: &mut State, a: Action) -> (String, Option<String>) {
        match self.apply_inner(s, a) {
            Ok(d) => {
                let bad = self.invariant(s).err();
                (d, bad)
            }
            Err((d, e)) => (d, Some(e)),
        }
    }
}

#[cfg(test)]
mod tests;
