//! Not a Linux file: an exhaustive check of arm64's TLBI/DSB protocol in reclaim
//! (linux/arch/arm64/include/asm/tlbflush.rs; docs/references/linux-6x.md#arm64-batched-unmap)
//! on 3 CPUs.
//!
//! Mm 0 has `TLBI_PAGES` pages and one ASID; cpu1 and cpu2 run it and may cache any present
//! page at any time. Kswapd on cpu0 reclaims every page: it clears a PTE and posts its
//! `TLBI VALE1IS`, then either waits in `DSB ISH` at once (`ptep_clear_flush`, v6.4) or after the
//! last page (`arch_tlbbatch_flush`, v6.5's batched unmap), then frees the frames. A TLBI is
//! weakly ordered: each CPU's copy completes at a moment of its own (an action of that CPU's),
//! and a DSB waits only for the TLBIs its own CPU issued (the Arm ARM's rule). In the second
//! scenario cpu1 munmaps the whole range meanwhile: under the page-table lock it first runs
//! `flush_tlb_batched_pending` if reclaim left the mm's batch pending
//! (`arch_flush_tlb_batched_pending`: a DSB of its own in v6.5-v6.15, `flush_tlb_mm` from v6.16),
//! then clears what PTEs remain and, if it cleared any, flushes the mm itself before it returns.
//!
//! Property, in every reachable state: a CPU running mm 0 holds no entry for a page whose frame
//! was freed, or that a returned munmap covered.

use super::explore::{explore, Model, Order};
use super::Report;
use crate::linux::arch::arm64::BatchedPending;
use crate::linux::config::KernelConfig;
use crate::linux::mm::vmscan::UnmapFlush;

const NR_CPUS: usize = 3;
/// Pages of mm 0 mapped at the start.
pub const TLBI_PAGES: u8 = 2;
const ALL: u8 = (1 << TLBI_PAGES) - 1;
/// The reclaimer's CPU (kswapd: it does not run mm 0) and the munmapping one.
const KSWAPD: usize = 0;
const MUNMAP: usize = 1;

/// One checked protocol: a kernel's, or a deliberately broken one.
#[derive(Debug, Clone)]
pub struct TlbiVariant {
    pub name: String,
    /// Reclaim's batched unmap flush (`batched_unmap` with `unmap_flush = batched`).
    pub batched: bool,
    pub pending: BatchedPending,
    /// Frees the frames before the DSB that completes their TLBIs (broken).
    pub free_before_dsb: bool,
}

impl TlbiVariant {
    /// The arm64 kernel's protocol; `None` for a kernel without an `[arm64]` section.
    pub fn of(k: &KernelConfig) -> Option<TlbiVariant> {
        let a = k.arm64?;
        Some(TlbiVariant {
            name: k.name.clone(),
            batched: a.batched_unmap && k.reclaim.unmap_flush == UnmapFlush::Batched,
            pending: a.batched_pending,
            free_before_dsb: false,
        })
    }
}

/// Whether cpu1 munmaps the reclaimed range meanwhile.
#[derive(Debug, Clone, Copy)]
pub struct TlbiScenario {
    pub name: &'static str,
    pub munmap: bool,
}

pub const TLBI_SCENARIOS: [TlbiScenario; 2] = [
    TlbiScenario { name: "kswapd reclaims 2 pages", munmap: false },
    TlbiScenario { name: "kswapd reclaims 2 pages, cpu1 munmaps them", munmap: true },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    /// Clear page `p`'s PTE and post its TLBI (under the page-table lock).
    Unmap(u8),
    /// `DSB ISH`: wait until this CPU's TLBIs completed on every CPU.
    Dsb,
    Free,
}

/// The munmap's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Munmap {
    NotStarted,
    /// `arch_flush_tlb_batched_pending` posted `flush_tlb_mm`'s TLBI; its DSB is next.
    PendingDsb,
    /// Cleared PTEs and posted its own flush's TLBI; its DSB is next.
    ZapDsb,
    Returned,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct State {
    /// Per CPU, the pages of mm 0 its TLB holds.
    tlb: [u8; NR_CPUS],
    /// Per CPU, per issuing CPU, the pages whose TLBI from that issuer has yet to complete here.
    pending: [[u8; NR_CPUS]; NR_CPUS],
    /// Present PTEs, the pages whose PTE reclaim cleared, and frames freed.
    present: u8,
    reclaimed: u8,
    freed: u8,
    /// The reclaimer's step index into its order (its length: done).
    pc: u8,
    /// Reclaim left the mm's batch pending (`mm->tlb_flush_batched`).
    batched_pending: bool,
    munmap: Munmap,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Action {
    /// CPU `cpu`'s copies of `issuer`'s TLBIs complete.
    Complete {
        cpu: u8,
        issuer: u8,
    },
    Reclaim,
    Munmap,
}

pub struct TlbiChecker<'a> {
    v: &'a TlbiVariant,
    sc: &'a TlbiScenario,
    order: Vec<Step>,
}

impl<'a> TlbiChecker<'a> {
    pub fn new(v: &'a TlbiVariant, sc: &'a TlbiScenario) -> TlbiChecker<'a> {
        let mut order = Vec::new();
        for p in 0..TLBI_PAGES {
            order.push(Step::Unmap(p));
            if !v.batched {
                order.push(Step::Dsb);
            }
        }
        if v.free_before_dsb {
            // Broken: the batch's DSB (or the last page's) after the free.
            if !v.batched {
                order.pop();
            }
            order.extend([Step::Free, Step::Dsb]);
        } else {
            if v.batched {
                order.push(Step::Dsb);
            }
            order.push(Step::Free);
        }
        TlbiChecker { v, sc, order }
    }

    pub fn run(&self) -> Report {
        explore(self, Order::BreadthFirst, super::MAX_STATES, format!("{} [{}]", self.v.name, self.sc.name))
    }

    /// CPUs 1 and 2 run mm 0: they may cache every present page.
    fn saturate(s: &mut State) {
        for cpu in 1..NR_CPUS {
            s.tlb[cpu] |= s.present;
        }
    }

    /// `issuer` posts TLBIs for `pages` (`ALL` for `TLBI ASIDE1IS`): pending on every CPU.
    fn post(s: &mut State, issuer: usize, pages: u8) {
        for cpu in 0..NR_CPUS {
            s.pending[cpu][issuer] |= pages;
        }
    }

    /// `issuer`'s TLBIs still incomplete somewhere: its DSB waits.
    fn dsb_waits(s: &State, issuer: usize) -> bool {
        (0..NR_CPUS).any(|cpu| s.pending[cpu][issuer] != 0)
    }

    fn reclaim_step(&self, s: &mut State) -> String {
        let what = match self.order[s.pc as usize] {
            Step::Unmap(p) => {
                let bit = 1 << p;
                if s.present & bit == 0 {
                    format!("page {p}: PTE already gone (munmap), nothing to unmap")
                } else {
                    s.present &= !bit;
                    s.reclaimed |= bit;
                    Self::post(s, KSWAPD, bit);
                    if self.v.batched {
                        // set_tlb_ubc_flush_pending: the mm's batch is pending.
                        s.batched_pending = true;
                        format!("page {p}: ptep_get_and_clear, TLBI posted (arch_tlbbatch_add_pending)")
                    } else {
                        format!("page {p}: ptep_clear_flush's PTE clear and TLBI")
                    }
                }
            }
            Step::Dsb => "DSB ISH returns".to_string(),
            // Only what it unmapped: a page the munmap took is the munmap's to free, after its
            // own flush (its mmu_gather holds the reference until then).
            Step::Free => {
                s.freed = s.reclaimed;
                "frees the frames it unmapped".to_string()
            }
        };
        s.pc += 1;
        format!("cpu0 reclaim: {what}")
    }

    fn reclaim_enabled(&self, s: &State) -> bool {
        match self.order.get(s.pc as usize) {
            None => false,
            Some(Step::Dsb) => !Self::dsb_waits(s, KSWAPD),
            // The page-table lock: not while the munmap holds it for flush_tlb_mm's DSB.
            Some(Step::Unmap(_)) => s.munmap != Munmap::PendingDsb,
            Some(Step::Free) => true,
        }
    }

    /// Kswapd holds the page-table lock: `ptep_clear_flush` clears the PTE, issues the TLBI and
    /// waits in the DSB under it (`page_vma_mapped_walk` took it); a batched unmap drops it once
    /// the TLBI is posted.
    fn reclaim_holds_ptl(&self, s: &State) -> bool {
        let pc = s.pc as usize;
        !self.v.batched
            && pc > 0
            && self.order.get(pc) == Some(&Step::Dsb)
            && matches!(self.order[pc - 1], Step::Unmap(_))
    }

    fn munmap_step(&self, s: &mut State) -> String {
        let what = match s.munmap {
            Munmap::NotStarted => {
                let mut what = String::new();
                if s.batched_pending {
                    s.batched_pending = false;
                    match self.v.pending {
                        BatchedPending::Dsb => {
                            what += "flush_tlb_batched_pending: DSB ISH (its own TLBIs: none); "
                        }
                        BatchedPending::FlushMm => {
                            Self::post(s, MUNMAP, ALL);
                            s.munmap = Munmap::PendingDsb;
                            return "cpu1 munmap: flush_tlb_batched_pending: flush_tlb_mm's TLBI ASIDE1IS posted"
                                .to_string();
                        }
                    }
                }
                what + &self.zap(s)
            }
            Munmap::PendingDsb => format!("flush_tlb_mm's DSB ISH returns; {}", self.zap(s)),
            Munmap::ZapDsb => {
                s.munmap = Munmap::Returned;
                "its flush's DSB ISH returns; munmap returns".to_string()
            }
            Munmap::Returned => unreachable!("a returned munmap takes no step"),
        };
        format!("cpu1 munmap: {what}")
    }

    /// The zap under the page-table lock: clears what PTEs remain; flushes if it cleared any.
    fn zap(&self, s: &mut State) -> String {
        if s.present == 0 {
            s.munmap = Munmap::Returned;
            return "no PTE left to clear, no flush; munmap returns".to_string();
        }
        s.present = 0;
        Self::post(s, MUNMAP, ALL);
        s.munmap = Munmap::ZapDsb;
        "clears the PTEs left, posts its flush's TLBI".to_string()
    }

    fn munmap_enabled(&self, s: &State) -> bool {
        match s.munmap {
            // Under the page-table lock, which kswapd may hold.
            Munmap::NotStarted => self.sc.munmap && !self.reclaim_holds_ptl(s),
            Munmap::PendingDsb | Munmap::ZapDsb => !Self::dsb_waits(s, MUNMAP),
            Munmap::Returned => false,
        }
    }
}

impl Model for TlbiChecker<'_> {
    type State = State;
    type Key = State;
    type Action = Action;

    fn initial(&self) -> State {
        let mut s = State {
            tlb: [0; NR_CPUS],
            pending: [[0; NR_CPUS]; NR_CPUS],
            present: ALL,
            reclaimed: 0,
            freed: 0,
            pc: 0,
            batched_pending: false,
            munmap: Munmap::NotStarted,
        };
        Self::saturate(&mut s);
        s
    }

    fn key(&self, s: &State) -> State {
        s.clone()
    }

    fn successors(&self, s: &State, out: &mut Vec<Action>) {
        for cpu in 0..NR_CPUS {
            for issuer in 0..NR_CPUS {
                if s.pending[cpu][issuer] != 0 {
                    out.push(Action::Complete { cpu: cpu as u8, issuer: issuer as u8 });
                }
            }
        }
        if self.reclaim_enabled(s) {
            out.push(Action::Reclaim);
        }
        if self.munmap_enabled(s) {
            out.push(Action::Munmap);
        }
    }

    fn apply(&self, s: &mut State, a: Action) -> (String, Option<String>) {
        let what = match a {
            Action::Complete { cpu, issuer } => {
                let (c, i) = (cpu as usize, issuer as usize);
                s.tlb[c] &= !s.pending[c][i];
                s.pending[c][i] = 0;
                format!("cpu{cpu}: cpu{issuer}'s TLBIs complete here")
            }
            Action::Reclaim => self.reclaim_step(s),
            Action::Munmap => self.munmap_step(s),
        };
        Self::saturate(s);
        (what, None)
    }

    fn violation(&self, s: &State) -> Option<String> {
        for cpu in 1..NR_CPUS {
            for p in 0..TLBI_PAGES {
                let bit = 1 << p;
                if s.tlb[cpu] & bit == 0 {
                    continue;
                }
                if s.freed & bit != 0 {
                    return Some(format!("cpu{cpu} running mm 0 still translates page {p} (a freed frame)"));
                }
                if s.munmap == Munmap::Returned {
                    return Some(format!(
                        "cpu{cpu} running mm 0 still translates page {p} (munmap returned)"
                    ));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(batched: bool, pending: BatchedPending) -> TlbiVariant {
        TlbiVariant { name: "test".into(), batched, pending, free_before_dsb: false }
    }

    #[test]
    fn per_page_and_batched_with_the_v6_16_fix_are_safe_in_every_scenario() {
        for v in [variant(false, BatchedPending::Dsb), variant(true, BatchedPending::FlushMm)] {
            for sc in &TLBI_SCENARIOS {
                let r = TlbiChecker::new(&v, sc).run();
                assert!(
                    r.complete && r.counterexample.is_none(),
                    "{v:?} {}: {:?}",
                    sc.name,
                    r.counterexample
                );
                assert!(r.states >= 10, "{}: {} states", sc.name, r.states);
            }
        }
    }

    #[test]
    fn freeing_before_the_dsb_is_caught_batched_or_not() {
        for batched in [false, true] {
            let v = TlbiVariant { free_before_dsb: true, ..variant(batched, BatchedPending::FlushMm) };
            let r = TlbiChecker::new(&v, &TLBI_SCENARIOS[0]).run();
            let cx = r.counterexample.expect("a counterexample");
            assert!(cx.property.contains("freed frame"), "{cx:?}");
        }
    }

    #[test]
    fn v6_5s_dsb_for_a_pending_batch_is_caught_by_a_munmap_on_another_cpu() {
        let v = variant(true, BatchedPending::Dsb);
        assert!(TlbiChecker::new(&v, &TLBI_SCENARIOS[0]).run().counterexample.is_none());
        let r = TlbiChecker::new(&v, &TLBI_SCENARIOS[1]).run();
        let cx = r.counterexample.expect("a counterexample");
        assert!(cx.property.contains("munmap returned"), "{cx:?}");
    }

    #[test]
    fn the_arm64_presets_map_to_their_protocols() {
        let k = KernelConfig::preset("6.6-arm64").unwrap();
        let v = TlbiVariant::of(&k).unwrap();
        assert!(!v.batched);
        let k = KernelConfig::preset("6.6-arm64+batch").unwrap();
        let v = TlbiVariant::of(&k).unwrap();
        assert!(v.batched && v.pending == BatchedPending::FlushMm);
        assert!(TlbiVariant::of(&KernelConfig::preset("6.6").unwrap()).is_none());
    }
}
