//! Per-CPU kernel state: the CPU's TLB (hardware) with the arch's per-CPU state beside it,
//! the runqueue's current task and waiting tasks, the call-function handler's taken requests,
//! and the bookkeeping that tells a flush's misses from others.

use std::collections::VecDeque;

use crate::hw::tlb::{Entry, PageSize, TlbHierarchy};
use crate::linux::include::linux::mm_types::PAGE_SHIFT;
use crate::linux::kernel::smp::Csd;

pub struct Cpu {
    /// The core whose TLBs this CPU uses (`Kernel::tlbs[core]`), and which of its logical
    /// processors it is (hw/topology.rs: CPU `c` is thread `c / cores` of core `c % cores`).
    pub core: usize,
    pub lp: usize,
    /// x86's per-CPU state (`cpu_tlbstate` and the rest).
    pub x86: crate::linux::arch::x86::PerCpu,
    pub task: Option<usize>,
    /// Runnable tasks waiting for this CPU, in order (CFS with equal weights and no wake-up
    /// preemption reduces to round robin).
    pub runq: VecDeque<usize>,
    /// `TIF_NEED_RESCHED`: a woken task should preempt the current one at its next return to
    /// user space (linux/kernel/sched/core.rs, `check_preempt_wakeup`).
    pub need_resched: bool,
    /// PELT's `rq->cfs.avg` (linux/kernel/sched/pelt.rs), read by wake-up placement.
    pub cfs_avg: crate::linux::kernel::sched::pelt::SchedAvg,
    /// Its LLC domain's balancing state (linux/kernel/sched/fair/balance.rs).
    pub sd: crate::linux::kernel::sched::fair::balance::Domain,
    /// An idle CPU woken by a wake-up's interrupt runs nothing before this time, its way out of
    /// idle (`kernel.idle_exit_ns`; linux/kernel/sched/core.rs `wake`). Zero where none applies.
    pub out_of_idle: crate::time::Ps,
    /// Requests the running call-function interrupt took with `llist_del_all` and has not
    /// handled yet; non-empty only inside the handler.
    pub taken: VecDeque<Csd>,
    /// Inside the call-function interrupt handler (between entry and exit).
    pub in_irq: bool,
    /// Of the current step's time, the part this CPU waited on memory (cache-line transfers
    /// and the store-buffer drains behind them): what an SMT sibling does not stretch
    /// (hw/smt.rs). Recorded with `Kernel::stall`, taken by the engine after each step.
    pub stall: crate::time::Ps,
    /// The shootdown this CPU spins on.
    pub waiting: Option<usize>,
    /// Pages (VA >> 12) whose translation a flush dropped from this CPU's TLB and that it has
    /// not translated since: the next miss on one is a miss caused by the flush. Sorted, no
    /// duplicates (a few hundred entries: a flat vector beats a tree here).
    pub flushed: Vec<u64>,
    /// User pages `(pcid, vpn)` filled since the CPU last took stock, with repeats: the only
    /// pages a full flush can drop, so it peeks these few instead of scanning the whole TLB.
    /// Unused (`filled_overflow`) once more than `MAX_FILLED_TRACKED` pile up.
    pub filled: Vec<(u16, u64)>,
    pub filled_overflow: bool,
    /// A `smp_call_function_many` enqueue loop an interrupt stopped (linux/kernel/smp.rs).
    pub sending: Option<Box<crate::linux::kernel::smp::SendLoop>>,
}

/// Bound on `Cpu::flushed` (pages never touched again would otherwise pile up).
const MAX_FLUSHED_TRACKED: usize = 1 << 16;
/// Bound on `Cpu::filled`: beyond it a full flush scans the TLB (cheaper than that many peeks).
const MAX_FILLED_TRACKED: usize = 128;

impl Cpu {
    pub fn note_flushed(&mut self, vpn: u64) {
        if self.flushed.len() >= MAX_FLUSHED_TRACKED {
            self.flushed.clear();
        }
        if let Err(i) = self.flushed.binary_search(&vpn) {
            self.flushed.insert(i, vpn);
        }
    }

    /// Whether `vpn` was dropped by a flush (and forgets it: it is being translated again).
    pub fn take_flushed(&mut self, vpn: u64) -> bool {
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
    /// refilled, as in a shootdown storm) stays O(1). `tlb`: this CPU's core's.
    pub fn flush_asid(&mut self, tlb: &mut TlbHierarchy, pcid: u16) {
        // invalidate_user_asid(): the user PCID is flushed at the next return to user space.
        self.x86.user_flush_pending |= self.x86.pti;
        if tlb.may_hold(self.lp, pcid) {
            self.note_flushed_asid(tlb, pcid);
        }
        tlb.flush_asid(self.lp, pcid);
    }

    /// A TLB fill of the user page `vpn` (every fill the engine makes is a 4K user page).
    pub fn note_filled(&mut self, pcid: u16, vpn: u64) {
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
    pub fn note_flushed_asid(&mut self, tlb: &TlbHierarchy, pcid: u16) {
        let lp = self.lp;
        if !self.filled_overflow {
            let Cpu { filled, .. } = self;
            let mut dropped = std::mem::take(&mut self.flushed);
            filled.retain(|&(p, vpn)| {
                if p != pcid {
                    return true;
                }
                // Every user fill of the engine is a 4K page.
                if tlb.peek_sized(lp, vpn << PAGE_SHIFT, pcid, PageSize::Size4K).is_some() {
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
        let Cpu { flushed, filled, .. } = self;
        if flushed.len() >= MAX_FLUSHED_TRACKED {
            flushed.clear();
        }
        let user_4k = |e: &Entry| !e.global && e.size == PageSize::Size4K;
        filled.clear();
        for (_, e) in tlb.entries(lp).filter(|(_, e)| user_4k(e)) {
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
