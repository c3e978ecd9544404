//! x86 TLB flushing: the range policy of `flush_tlb_mm_range` by kernel era, the per-CPU TLB
//! state (`struct tlb_state`), and `flush_tlb_func`, the handler every target runs.
//!
//! Rules follow, per knob (docs/references/linux-mm.md#range-flush, #flush_tlb_func, #ipi-send):
//! - range policy: `always_full` (v3.4 and earlier), `flushall_shift` (v3.6-v3.13, the
//!   per-family shift of `arch/x86/kernel/cpu/intel.c`, pre- and post-Mel-Gorman-fix formulas),
//!   `ceiling(n)` (v3.17+, `tlb_single_page_flush_ceiling`, default 33) with the huge-page
//!   stride of v4.19+;
//! - `flush_tlb_func`: the generation protocol of v4.14+ with the 2022 early return (v6.0,
//!   Nadav Amit) and the read of `mm->context.tlb_gen` as knobs.
//!   The order of operations follows arch/x86/mm/tlb.c of v5.18 / v6.0.
//!
//! The rules themselves are pure, in [`policy`] (the model checker runs them too); this file
//! applies them on the machine: `switch_mm`, `flush_tlb_mm_range` and `flush_tlb_func` on a CPU.

use crate::attribution::Bucket;
use crate::hw::cpumask::CpuMask;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::{MmId, PAGE_SHIFT};
use crate::linux::Kernel;
use crate::profile::MachineProfile;
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// What arch/x86/mm/tlb.c does, counted (the TLB rows of /proc/vmstat and more).
    Counters {
        flush_requests,
        shootdowns,
        invlpg,
        full_flushes,
        partial_flushes,
        flushes_skipped,
        early_returns,
        tlb_gen_reads,
        tlb_gen_transfers,
        /// Full flushes at a switch into an mm the CPU had fallen behind on (leaving lazy mode, or
        /// an ASID slot whose generation is stale).
        switch_flushes,
        /// Flushes of the user PCID on the way back to user space, deferred there by full flushes
        /// (or, without INVPCID, single-page ones) under page-table isolation.
        pti_user_flushes,
        /// Lazy TLB CPUs that left the mm on a flush IPI (`leave_mm` / switch to `init_mm`).
        lazy_leaves,
        /// Flushes of a global-ASID mm by INVLPGB (v6.15 `broadcast_tlb_flush`).
        broadcast_flushes,
        /// INVLPGB instructions issued.
        invlpgb,
        /// TLBSYNC waits.
        tlbsync,
        /// Mms given a global ASID (`use_global_asid`).
        global_asids,
        /// CPUs that switched a running mm to its global ASID on a flush IPI.
        global_asid_reloads,
    }
}

crate::linux::vmstat::counters! {
    /// `mm_cpumask` upkeep (v6.14's lazy mask and its trim), counted where a preset models it
    /// (`cpumask` other than eager, or `cpumask_line` on).
    MaskCounters {
        /// Flush requests handled (`flush_tlb_func` calls) on a CPU that runs another mm or
        /// `init_mm`, which only clear its bit: 2815a56e4b72's `TLB_REMOTE_WRONG_CPU`
        /// tracepoint, which fires per call (one IPI may drain several queued requests).
        wrong_cpu_flushes,
        /// Flushes whose `should_trim_cpumask` said yes (6db2526c1d69).
        cpumask_trims,
        /// Stale CPUs a flush skipped (in the mask, running another mm, not trimming).
        stale_skipped,
        /// Atomic sets and clears of a bit on a context switch or a leave.
        cpumask_writes,
        /// Transfers of an `mm_cpumask` line between CPUs (with `cpumask_line` on).
        cpumask_transfers,
    }
}

pub mod broadcast;
pub mod policy;
pub use policy::*;

// The mechanism on the machine (the pure rules are in policy.rs): switch_mm, flush_tlb_mm_range,
// flush_tlb_func applied.

/// A `flush_tlb_mm_range` call queued as a continuation (a COW fault's `ptep_clear_flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub start: u64,
    pub end: u64,
    pub freed_tables: bool,
}

/// What the flush paths cost on this CPU.
#[derive(Debug, Clone)]
pub struct Costs {
    /// `flush_tlb_mm_range`'s own work (flush_tlb_info set-up, cpumask scan, IRQ toggles).
    pub flush_call: Ps,
    pub invlpg: Ps,
    pub full_flush: Ps,
    /// One step of v3.6-v3.13 `has_large_page()`: pgd, pud and pmd loads of the range's own
    /// page tables, which its faults and walks keep cached (taken as L2 hits,
    /// `memory.l2_hit_cycles` each).
    pub pmd_probe: Ps,
    /// INVPCID of one user page, under PTI with INVPCID (`None`: no INVPCID, the user PCID's
    /// flush is deferred to the return to user space instead).
    pub invpcid_single: Option<Ps>,
    /// INVLPGB and TLBSYNC, where the CPU has them.
    pub broadcast: Option<broadcast::Costs>,
}

impl crate::linux::boot::FromProfile for Costs {
    fn from_profile(p: &MachineProfile) -> Costs {
        let mhz = p.clock_mhz();
        Costs {
            flush_call: Ps::from_cycles(p.kernel.flush_call_cycles.value, mhz),
            invlpg: Ps::from_cycles(p.kernel.invlpg_cycles.value, mhz),
            full_flush: Ps::from_cycles(p.kernel.full_flush_cycles.value, mhz),
            pmd_probe: Ps::from_cycles(3.0 * p.memory.l2_hit_cycles.value, mhz),
            invpcid_single: match (p.cpu.features.invpcid, &p.kernel.invpcid_single_cycles) {
                (true, Some(c)) => Some(Ps::from_cycles(c.value, mhz)),
                _ => None,
            },
            broadcast: broadcast::Costs::from_profile(p),
        }
    }
}

impl Kernel {
    /// `tlb_is_not_lazy(cpu)` (v4.20+): the CPU's `cpu_tlbstate_shared.is_lazy` is clear.
    pub(in crate::linux) fn tlb_is_not_lazy(&self, cpu: u32) -> bool {
        !self.arch.x86.lazy.contains(cpu)
    }

    /// Back to user space under PTI: a flush of the user PCID deferred by invalidate_user_asid
    /// (SWITCH_TO_USER_CR3 writes CR3 without the no-flush bit), once however many full
    /// flushes asked for it since (v5.18). Returns its cost if one was due.
    pub(in crate::linux) fn return_to_user(&mut self, ctx: &mut Ctx) -> Option<Ps> {
        let c = &mut self.cpus[ctx.cpu as usize];
        if !c.x86.user_flush_pending {
            return None;
        }
        c.x86.user_flush_pending = false;
        self.counters.tlbflush.pti_user_flushes += 1;
        let d = self.costs.tlbflush.full_flush;
        ctx.charge(Bucket::FlushWork, d);
        Some(d)
    }

    /// `switch_mm_irqs_off` to `mm` (v5.18, docs/references/linux-mm.md#pcid): the same mm is free unless the
    /// CPU was lazy and fell behind `mm->context.tlb_gen` (then one full flush); another mm joins
    /// `mm_cpumask` (the CPU leaves the old mm's) and picks an ASID slot, flushing it if stale.
    /// Returns whether it flushed.
    ///
    /// v3.x (no generations, lazy CPUs get every flush IPI): a lazy CPU still in `mm_cpumask`
    /// missed no flush and reloads nothing; one a flush IPI made `leave_mm` has `loaded_mm`
    /// none here, so it takes the other-mm path: rejoin the mask and load CR3 (no PCID before
    /// v4.14: a full flush). v3.10-v3.13 `switch_mm`, prev == next branch.
    ///
    /// The mask's bits: v4.14-v6.13 clear the previous mm's and set the next mm's; v6.14's lazy
    /// mask (209954cbc7d0) sets the next mm's only if clear and leaves the previous mm's for a
    /// flush IPI to clear. With `cpumask_line` each set or clear is an atomic RMW on the mask's
    /// line at `at`, whose cost is added to the second value returned.
    pub(in crate::linux) fn x86_switch_mm(&mut self, cpu: u32, mm: MmId, at: Ps) -> (bool, Ps) {
        let c = &mut self.cpus[cpu as usize];
        self.arch.x86.lazy.clear(cpu);
        let m = &self.mm.mms[mm as usize];
        let knobs = self.config.flush;
        let global = self.arch.x86.broadcast.as_ref().and(m.global_asid);
        let s =
            switch_mm_irqs_off(&mut c.x86.st, mm, (m.ctx_id, m.tlb_gen, global), &knobs, self.arch.x86.pcid);
        let mut cost = Ps::ZERO;
        if let Some(prev) = s.left {
            cost += self.cpumask_write(prev, cpu, at + cost, false);
        }
        if s.joined {
            // v4.14-v6.13 cpumask_set_cpu unconditionally (a locked bts); v6.14 tests first.
            let set = self.mm.mms[mm as usize].cpumask.contains(cpu);
            if knobs.cpumask.switch_clears() || !set {
                cost += self.cpumask_write(mm, cpu, at + cost, true);
            }
            self.mm.mms[mm as usize].ever_loaded.set(cpu);
        }
        let c = &mut self.cpus[cpu as usize];
        if s.flush {
            let pcid = c.x86.st.pcid();
            c.flush_asid(&mut self.tlbs[c.core], pcid);
        }
        (s.flush, cost)
    }

    /// `cpumask_set_cpu` / `cpumask_clear_cpu` of `cpu` in `mm`'s mask at `at`; returns the
    /// line's cost (none without `cpumask_line`).
    fn cpumask_write(&mut self, mm: MmId, cpu: u32, at: Ps, set: bool) -> Ps {
        let m = &mut self.mm.mms[mm as usize];
        if set {
            m.cpumask.set(cpu);
        } else {
            m.cpumask.clear(cpu);
        }
        if !self.config.flush.cpumask_line {
            return Ps::ZERO;
        }
        self.arch.x86.mask.cpumask_writes += 1;
        let before = m.cpumask_line.stats.transfers;
        let d = m.cpumask_line.write(cpu, at, &self.topo, &self.costs.hw.lines);
        self.arch.x86.mask.cpumask_transfers += m.cpumask_line.stats.transfers - before;
        self.stall(cpu, d)
    }

    /// `flush_tlb_func` on `cpu` for `info` from `at`; returns its cost. The initiator's own
    /// call (its `flush_tlb_info` is in its cache); remote handlers use
    /// [`Kernel::run_remote_flush_func`].
    pub fn run_flush_func(&mut self, cpu: u32, at: Ps, info: &FlushInfo) -> Ps {
        self.run_remote_flush_func(cpu, at, info, Ps::ZERO, Ps::ZERO)
    }

    /// `flush_tlb_func` on `cpu` for `info` from `at`, where the load of the initiator's
    /// `flush_tlb_info` was issued at `at` and takes `info_read`, and no flushing instruction
    /// can execute before `fence` (the handler's earlier `csd_unlock` store still draining).
    /// Returns its cost.
    ///
    /// The loads overlap as the out-of-order core runs them (docs/references/machine-costs.md#memory-level-parallelism):
    /// v4.14-v5.18 read `loaded_mm->context.tlb_gen` in the declarations, an address that does
    /// not depend on the request, so its miss is outstanding beside the `flush_tlb_info` miss
    /// and the two cost their longer one; the v6.0 patch reads it only after comparing
    /// `f->new_tlb_gen` with the local generation (`read_tlb_gen = when-needed`), so its miss
    /// starts once `f` has arrived. INVLPG, INVPCID and a CR3 write are serialising: they wait
    /// for `fence`.
    pub fn run_remote_flush_func(
        &mut self,
        cpu: u32,
        at: Ps,
        info: &FlushInfo,
        info_read: Ps,
        fence: Ps,
    ) -> Ps {
        let mut gen_done = Ps::ZERO;
        let knobs = self.config.flush;
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let action = {
            let Kernel { cpus, mm: crate::linux::mm::Memory { mms, .. }, counters, arch, .. } = &mut *self;
            let m = &mut mms[info.mm as usize];
            let c = &mut cpus[cpu as usize];
            let global = arch.x86.broadcast.as_ref().and(m.global_asid);
            // Issued in the declarations (`always`) or after the test on `f` (`when-needed`).
            let issue = if knobs.read_tlb_gen == ReadTlbGen::Always { Ps::ZERO } else { info_read };
            flush_tlb_func(&mut c.x86.st, info, &knobs, global, || {
                counters.tlbflush.tlb_gen_reads += 1;
                let before = m.tlb_gen_line.stats.transfers;
                gen_done = issue + m.tlb_gen_line.read(cpu, at + issue, &topo, &lines);
                counters.tlbflush.tlb_gen_transfers += m.tlb_gen_line.stats.transfers - before;
                m.tlb_gen
            })
        };
        let mut cost = info_read.max(gen_done);
        if action.serialises() && fence > at + cost {
            cost = fence - at;
        }
        // Up to here the handler waits on memory: the overlapped loads, then the store drain.
        self.stall(cpu, cost) + self.apply_flush_action(cpu, at + cost, info.mm, action)
    }

    /// Seed 002's proposed drain stage (`remote_drain = max-gen`) on `cpu` from `at`: one flush
    /// for `reqs`, the taken requests for the mm it runs (each [`drain_joins`]), to their largest
    /// generation, without reading `mm->tlb_gen`. Counts each request covered by the CPU's
    /// generation as an early return and each outstanding one beyond the first as a skipped
    /// flush. Returns its cost.
    pub fn run_flush_max_gen(&mut self, cpu: u32, at: Ps, mm: MmId, reqs: &[FlushInfo]) -> Ps {
        let d = flush_tlb_func_max_gen(&mut self.cpus[cpu as usize].x86.st, reqs);
        let c = &mut self.counters.tlbflush;
        c.early_returns += d.covered;
        c.flushes_skipped += d.covered + d.merged;
        if d.action.flushes() {
            self.apply_flush_action(cpu, at, mm, d.action)
        } else {
            Ps::ZERO
        }
    }

    /// Whether a request taken on `cpu` joins a `remote_drain = max-gen` stage's one flush
    /// ([`drain_joins`], with the mm's global ASID where broadcast flushing is on).
    pub(in crate::linux) fn drain_joins_on(&self, cpu: u32, info: &FlushInfo, batch: bool) -> bool {
        let global = self.arch.x86.broadcast.as_ref().and(self.mm.mms[info.mm as usize].global_asid);
        drain_joins(&self.cpus[cpu as usize].x86.st, info, &self.config.flush, batch, global)
    }

    /// What `flush_tlb_func` decided on `cpu` for a request of `mm`, applied from `at`: the
    /// cpumask bit, the flush, the counters. Returns its cost.
    fn apply_flush_action(&mut self, cpu: u32, at: Ps, mm: MmId, action: FlushAction) -> Ps {
        let mut cost = Ps::ZERO;
        let knobs = self.config.flush;
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let Kernel { cpus, tlbs, mm: crate::linux::mm::Memory { mms, .. }, counters, costs, arch, .. } =
            &mut *self;
        let m = &mut mms[mm as usize];
        let c = &mut cpus[cpu as usize];
        let tlb = &mut tlbs[c.core];
        let pcid = c.x86.st.pcid();
        if action.clears_bit(knobs.cpumask) {
            m.cpumask.clear(cpu);
            if knobs.cpumask_line {
                arch.x86.mask.cpumask_writes += 1;
                let before = m.cpumask_line.stats.transfers;
                let w = m.cpumask_line.write(cpu, at + cost, &topo, &lines);
                cost += w;
                c.stall += w; // Kernel::stall, with the kernel borrowed apart
                arch.x86.mask.cpumask_transfers += m.cpumask_line.stats.transfers - before;
            }
        }
        match action {
            // 2815a56e4b72's tracepoint: an IPI to a CPU that had left the mm.
            FlushAction::WrongMm => arch.x86.mask.wrong_cpu_flushes += 1,
            FlushAction::LeaveLazy => {
                // v4.14+ switch_mm_irqs_off(NULL, &init_mm) / v3.13 leave_mm(): leave the mm
                // (no more flush IPIs for it), which also flushes; switch_mm reloads on return.
                leave_mm(&mut c.x86.st);
                arch.x86.lazy.clear(cpu);
                c.flush_asid(tlb, pcid);
                counters.tlbflush.lazy_leaves += 1;
                counters.tlbflush.full_flushes += 1;
                cost += costs.tlbflush.full_flush;
            }
            FlushAction::EarlyReturn => {
                counters.tlbflush.early_returns += 1;
                counters.tlbflush.flushes_skipped += 1;
            }
            FlushAction::UpToDate => counters.tlbflush.flushes_skipped += 1,
            FlushAction::GlobalAsid { reloaded } => {
                // switch_mm_irqs_off(NULL, loaded_mm): a CR3 write to the global PCID without
                // the flush (charged as the CR3 write's instruction cost).
                if reloaded {
                    counters.tlbflush.global_asid_reloads += 1;
                    cost += costs.tlbflush.full_flush;
                }
            }
            FlushAction::Partial { start, nr, stride_shift } => {
                for i in 0..nr {
                    let va = start + (i << stride_shift);
                    if tlb.invlpg(c.lp, va, pcid) > 0 && stride_shift == PAGE_SHIFT {
                        c.note_flushed(va >> PAGE_SHIFT);
                    }
                }
                counters.tlbflush.partial_flushes += 1;
                counters.tlbflush.invlpg += nr;
                cost += costs.tlbflush.invlpg * nr;
                // flush_tlb_one_user (v5.18) under PTI: the user PCID's copy too, with INVPCID,
                // or by a full flush of it on the way back to user space.
                if c.x86.pti {
                    match costs.tlbflush.invpcid_single {
                        Some(one) => cost += one * nr,
                        None => c.x86.user_flush_pending = true,
                    }
                }
            }
            FlushAction::Full => {
                c.flush_asid(tlb, pcid);
                counters.tlbflush.full_flushes += 1;
                cost += costs.tlbflush.full_flush;
            }
        }
        cost
    }

    /// `flush_tlb_mm_range` (v5.18 arch/x86/mm/tlb.c): bump `mm->tlb_gen`, choose the range,
    /// send IPIs to the other CPUs of `mm_cpumask` (lazy ones per `lazy_ipis`: v4.20+ skips
    /// them unless page tables were freed, v3.x-v4.19 sends to them too), flush locally
    /// (concurrently or first, per knob), then wait for every ack.
    pub(in crate::linux) fn x86_flush_tlb_mm_range(
        &mut self,
        ctx: &mut Ctx,
        mm: MmId,
        start: u64,
        end: u64,
        freed_tables: bool,
    ) -> Ps {
        let (cpu, now) = (ctx.cpu, ctx.now);
        self.counters.tlbflush.flush_requests += 1;
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        // Refills of the kernel code and data this path runs on (charged as page walks).
        let text = self.kernel_path(ctx, Path::FlushInitiator);
        let now = now + text;
        let m = &mut self.mm.mms[mm as usize];
        // The call's own work (flush_tlb_info set-up, cpumask scan, IRQ and preemption toggles),
        // then inc_mm_tlb_gen: an atomic RMW on the contended line (v4.14+; v3.x had none).
        let mut d = self.costs.tlbflush.flush_call;
        if self.config.flush.generations {
            let w = m.tlb_gen_line.write(cpu, now + d, &topo, &lines);
            d += self.stall(cpu, w);
        }
        let m = &mut self.mm.mms[mm as usize];
        m.tlb_gen += 1;
        let inputs = RangeInputs {
            lld_4k: self.arch.x86.range_sizes.0,
            lli_4k: self.arch.x86.range_sizes.1,
            total_vm: m.total_vm(),
            vm_exec: false,
            vm_hugetlb: false,
            range_has_huge_pmd: false,
            cpus_to_flush: self.config.flush.range_cpus.then(|| m.cpumask.weight() as u64),
        };
        let (info, pmds_walked) =
            flush_info(self.arch.x86.policy, &inputs, mm, (start, end), freed_tables, m.tlb_gen, cpu);
        d += self.costs.tlbflush.pmd_probe * pmds_walked;
        // get_flush_tlb_info fills this CPU's flush_tlb_info: a store to a line the handlers
        // of its last flush read (v5.18).
        let w = self.cpus[cpu as usize].x86.flush_info_line.write(cpu, now + d, &topo, &lines);
        d += self.stall(cpu, w);
        // v6.15: a global-ASID mm is flushed by INVLPGBs and a TLBSYNC, without IPIs, unless
        // some CPU still runs it on a per-CPU ASID (`finish_asid_transition` then sends the
        // IPIs too, before the TLBSYNC: here the TLBSYNC's wait is charged first). The mask
        // is neither scanned nor trimmed on this path.
        let global = self.global_asid(mm);
        if let Some(asid) = global {
            d += self.broadcast_tlb_flush(asid, &info);
            d += self.tlbsync();
            if !self.asid_transition_pending(mm, asid) {
                ctx.charge(Bucket::FlushWork, d);
                return text + d;
            }
        }
        let m = &mut self.mm.mms[mm as usize];
        // The cpumask scan reads the mask's line (v6.14 presets charge it: `cpumask_line`).
        if self.config.flush.cpumask_line {
            let before = m.cpumask_line.stats.transfers;
            let r = m.cpumask_line.read(cpu, now + d, &topo, &lines);
            self.arch.x86.mask.cpumask_transfers += m.cpumask_line.stats.transfers - before;
            d += r;
            self.cpus[cpu as usize].stall += r; // Kernel::stall, `m` borrowed
        }
        // v6.14 (6db2526c1d69): with other CPUs in the mask, once a second per mm the request
        // also goes to the CPUs that left it, which clear their bits; otherwise
        // should_flush_tlb skips them. Their tlb_state lines are read in the scan, not charged.
        let trim_rule = self.config.flush.cpumask == CpumaskUpdate::LazyTrim;
        let mut running = None;
        if trim_rule && m.cpumask.any_but(cpu).is_some() {
            if should_trim_cpumask(&mut m.next_trim_cpumask, self.jiffies.at(now), self.jiffies.hz) {
                self.arch.x86.mask.cpumask_trims += 1;
            } else {
                let mut on = CpuMask::new();
                for c in m.cpumask.iter() {
                    if self.cpus[c as usize].x86.st.loaded_mm == Some(mm) {
                        on.set(c);
                    }
                }
                running = Some(on);
            }
        }
        // `lazy_test = in-queue`: the enqueue loop tests each target as it reaches it, so here
        // no CPU is lazy yet.
        let skip_lazy = self.config.flush.lazy_in_queue(freed_tables);
        let none = CpuMask::new();
        let targets = flush_targets(
            &m.cpumask,
            if skip_lazy { &none } else { &self.arch.x86.lazy },
            running.as_ref(),
            &self.config.flush,
            freed_tables,
            cpu,
        );
        if let Some(on) = &running {
            if !freed_tables {
                let stale = m.cpumask.and_not(on).and_not(&self.arch.x86.lazy);
                self.arch.x86.mask.stale_skipped += stale.weight() as u64 - stale.contains(cpu) as u64;
            }
        }
        let loaded_here = self.cpus[cpu as usize].x86.st.loaded_mm == Some(mm);
        let local = |s: &mut Kernel, at: Ps| {
            if loaded_here {
                s.run_flush_func(cpu, at, &info)
            } else {
                Ps::ZERO
            }
        };
        if targets.is_empty() {
            let l = local(self, now + d);
            ctx.charge(Bucket::FlushWork, d + l);
            return text + d + l;
        }
        self.counters.tlbflush.shootdowns += 1;
        let mut pre = Ps::ZERO;
        if !self.config.flush.concurrent_local {
            pre = local(self, now + d);
        }
        let t0 = now + d + pre;
        ctx.charge(Bucket::FlushWork, d + pre);
        let concurrent = self.config.flush.concurrent_local;
        let sent = self.call_function_many(ctx, info, false, &targets, t0, concurrent, skip_lazy);
        // v6.15: after an IPI flush, perhaps a global ASID for next time.
        if global.is_none() && self.arch.x86.broadcast.is_some() {
            let t = self.cpus[cpu as usize].task.unwrap_or(0);
            self.consider_global_asid(mm, t, t0 + sent);
        }
        text + d + pre + sent
    }
}

#[cfg(test)]
mod tests;
