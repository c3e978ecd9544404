//! x86 TLB flushing: the range policy of `flush_tlb_mm_range` by kernel era, the per-CPU TLB
//! state (`struct tlb_state`), and `flush_tlb_func`, the handler every target runs.
//!
//! Rules follow, per knob (facts sheet §1, §2, §7.2):
//! - range policy: `always_full` (v3.4 and earlier), `flushall_shift` (v3.6-v3.13, the
//!   per-family shift of `arch/x86/kernel/cpu/intel.c`, pre- and post-Mel-Gorman-fix formulas),
//!   `ceiling(n)` (v3.17+, `tlb_single_page_flush_ceiling`, default 33) with the huge-page
//!   stride of v4.19+;
//! - `flush_tlb_func`: the generation protocol of v4.14+ with the 2022 early return (v6.0,
//!   Nadav Amit) and the read of `mm->context.tlb_gen` as knobs.
//!   The order of operations follows arch/x86/mm/tlb.c of v5.18 / v6.0.

use crate::attribution::Bucket;
use crate::hw::cpumask::CpuMask;
use crate::hw::tlb::{PageSize, Serves};
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::{MmId, HPAGE_SIZE, PAGE_SHIFT};
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
    }
}

/// `TLB_NR_DYN_ASIDS`: per-CPU dynamic ASID slots (arch/x86/include/asm/tlbflush.h, v4.14+).
pub const TLB_NR_DYN_ASIDS: usize = 6;
/// `TLB_FLUSH_ALL`.
pub const TLB_FLUSH_ALL: u64 = u64::MAX;

/// How `flush_tlb_mm_range` chooses between INVLPGs and a full flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RangePolicy {
    /// v3.4: every range flush of a user mm is a full flush (no x86 range support).
    AlwaysFull,
    /// v3.6-v3.13: INVLPG when `pages <= active / 2^shift` (`tlb_flushall_shift`).
    /// `post_fix` selects Mel Gorman's v3.14 formula (ceiling = `min(total_vm, entries >> shift)`,
    /// no huge-page walk); otherwise the v3.6-v3.13 one (`min(total_vm, entries) >> shift`,
    /// plus the `has_large_page()` walk when `huge_walk`). `shift < 0` disables range flushes.
    FlushallShift { shift: i8, post_fix: bool, huge_walk: bool },
    /// v3.17+: INVLPG when `(end - start) >> stride_shift <= ceiling`.
    Ceiling(u64),
}

/// Whether `flush_tlb_func` reads `mm->context.tlb_gen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadTlbGen {
    /// At entry, always (v4.14 - v5.19).
    Always,
    /// Only after the early-return test fails (v6.0+, the seed-002 patch).
    WhenNeeded,
    /// Never: catch up to the request's own generation only (seed 002's fourth column).
    Never,
}

/// Whether `flush_tlb_mm_range` interrupts CPUs of `mm_cpumask` that are in lazy TLB mode
/// (idle, or running a kernel thread, with the user mm still loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LazyIpis {
    /// v3.x-v4.19: every other CPU of `mm_cpumask` gets the IPI; a lazy one leaves the mm in the
    /// handler (v3.13 `flush_tlb_func` -> `leave_mm`: clear its `mm_cpumask` bit and load
    /// `swapper_pg_dir`; v4.14-v4.19 switch to `init_mm`), so it gets no further IPIs for the
    /// mm and reloads CR3 (a full flush) when it switches back.
    Send,
    /// v4.20+ (Rik van Riel, "x86/mm/tlb: Only send page table free TLB flush to lazy TLB
    /// CPUs", out of v4.19 by a revert): lazy CPUs are skipped unless page tables were freed;
    /// one that fell behind flushes in full at its next `switch_mm` (the `tlb_gen` check).
    Skip,
}

/// Which cross-CPU call requests skip the IPI when the target's call queue already held one
/// (kernel/smp.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoalesceIpis {
    /// v3.4: one IPI per target per call.
    Never,
    /// v3.9-v4.12: a call with a lone target goes through `generic_exec_single`, which IPIs only
    /// if its `list_empty` (v3.9-v3.13) / `llist_add` (v3.14+) found the queue empty; a call
    /// with several targets ends with `arch_send_call_function_ipi_mask(cfd->cpumask)`, which
    /// IPIs every one (read in v4.8's kernel/smp.c).
    Lone,
    /// v4.13+ (Aaron Lu, "smp: Avoid sending needless IPI in smp_call_function_many()", 2017):
    /// `cfd->cpumask_ipi` holds only the targets whose `llist_add` found the queue empty.
    Always,
}

impl CoalesceIpis {
    /// Whether a call to `targets` CPUs IPIs only those whose queue was empty.
    pub fn coalesces(self, targets: u32) -> bool {
        match self {
            CoalesceIpis::Never => false,
            CoalesceIpis::Lone => targets == 1,
            CoalesceIpis::Always => true,
        }
    }
}

impl LazyIpis {
    /// Whether a lazy CPU is a target of a flush that did (not) free page tables.
    pub fn targets_lazy(self, freed_tables: bool) -> bool {
        match self {
            LazyIpis::Send => true,
            LazyIpis::Skip => freed_tables,
        }
    }

    /// A lazy CPU switching back compares `tlb_gen`s (v4.14+ generations; or a stand-in where
    /// flushes skip lazy CPUs without them): a flush that skips one bumps the mm's `tlb_gen`.
    pub fn switch_checks_tlb_gen(self, generations: bool) -> bool {
        generations || self == LazyIpis::Skip
    }
}

/// The flush-protocol knobs; every one settable alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlushKnobs {
    pub policy: RangePolicy,
    /// The v4.14+ generation protocol (`mm->context.tlb_gen`, per-ASID generations). Off: the
    /// v3.x handler, which does exactly the flush it was asked for.
    pub generations: bool,
    /// `f->new_tlb_gen <= local_tlb_gen` returns at once (v6.0+).
    pub early_return: bool,
    pub read_tlb_gen: ReadTlbGen,
    /// The initiator flushes locally while the remote handlers run (v5.13+), instead of first.
    pub concurrent_local: bool,
    /// Which requests get an IPI only if the target's call queue was empty; a handler run
    /// drains every request queued so far.
    pub coalesce_ipis: CoalesceIpis,
    /// Lazy TLB CPUs as flush targets (the sender's side of the rule; the handler's
    /// `LeaveLazy` is the same in every era).
    pub lazy_ipis: LazyIpis,
    /// Kernel page-table isolation (v4.15+) where the CPU is Meltdown-affected (the profile's
    /// `cpu.features.pti`): user entries live in a PCID of their own, so each single-page
    /// flush also invalidates it there (INVPCID, or a deferred full flush of it without INVPCID)
    /// and each full flush defers a flush of it to the next return to user space.
    pub pti: bool,
}

/// `struct flush_tlb_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlushInfo {
    pub mm: MmId,
    pub start: u64,
    /// `TLB_FLUSH_ALL` for a full flush.
    pub end: u64,
    pub stride_shift: u32,
    pub freed_tables: bool,
    pub new_tlb_gen: u64,
    pub initiator: u32,
}

impl FlushInfo {
    pub fn is_full(&self) -> bool {
        self.end == TLB_FLUSH_ALL
    }

    /// Entries a partial flush invalidates.
    pub fn nr_entries(&self) -> u64 {
        if self.is_full() {
            0
        } else {
            (self.end - self.start) >> self.stride_shift
        }
    }
}

/// One ASID slot: `struct tlb_context`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TlbContext {
    pub ctx_id: u64,
    pub tlb_gen: u64,
}

/// Per-CPU `struct tlb_state` (the parts the model needs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TlbState {
    pub loaded_mm: Option<MmId>,
    pub loaded_asid: u16,
    pub next_asid: u16,
    pub is_lazy: bool,
    pub ctxs: [TlbContext; TLB_NR_DYN_ASIDS],
}

impl TlbState {
    /// The PCID the hardware tags this CPU's current user entries with (kPCID = ASID + 1).
    pub fn pcid(&self) -> u16 {
        self.loaded_asid + 1
    }

    pub fn local_tlb_gen(&self) -> u64 {
        self.ctxs[self.loaded_asid as usize].tlb_gen
    }

    /// `choose_new_asid`: the slot already holding `ctx_id`, else the next slot round-robin.
    /// Returns `(asid, need_flush)`. Without PCID every switch flushes slot 0.
    pub fn choose_new_asid(&mut self, ctx_id: u64, mm_tlb_gen: u64, pcid: bool) -> (u16, bool) {
        if !pcid {
            return (0, true);
        }
        if let Some(a) = self.ctxs.iter().position(|c| c.ctx_id == ctx_id) {
            return (a as u16, self.ctxs[a].tlb_gen < mm_tlb_gen);
        }
        let mut asid = self.next_asid;
        self.next_asid += 1;
        if asid as usize >= TLB_NR_DYN_ASIDS {
            asid = 0;
            self.next_asid = 1;
        }
        (asid, true)
    }
}

/// What `flush_tlb_func` decided on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushAction {
    /// The CPU no longer runs the mm (it switched away): it leaves `mm_cpumask`.
    WrongMm,
    /// Lazy CPU: leave the mm (v3.x `leave_mm`: clear the `mm_cpumask` bit, load
    /// `swapper_pg_dir`; v4.14+ `switch_mm_irqs_off(NULL, &init_mm)`), which flushes, and stop
    /// receiving IPIs for it.
    LeaveLazy,
    /// Early return: the request was already covered (`new_tlb_gen <= local`).
    EarlyReturn,
    /// `local == mm_tlb_gen` after reading it: a concurrent flush already caught us up.
    UpToDate,
    /// INVLPG `nr` entries of `1 << stride_shift` from `start`.
    Partial {
        start: u64,
        nr: u64,
        stride_shift: u32,
    },
    Full,
}

impl FlushAction {
    pub fn flushes(&self) -> bool {
        matches!(self, FlushAction::Partial { .. } | FlushAction::Full)
    }

    /// The CPU leaves `mm_cpumask` (it gets no further flush IPIs for the mm).
    pub fn leaves_mm(&self) -> bool {
        matches!(self, FlushAction::WrongMm | FlushAction::LeaveLazy)
    }
}

/// The `tlb_state` side of [`FlushAction::LeaveLazy`]: the CPU runs on `init_mm` (v4.14+) /
/// `swapper_pg_dir` (v3.x) from now on; the caller flushes the PCID it was using.
pub fn leave_mm(st: &mut TlbState) {
    st.loaded_mm = None;
    st.is_lazy = false;
}

/// What `switch_mm_irqs_off` did to one CPU's `tlb_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// The mm whose `mm_cpumask` the CPU left.
    pub left: Option<MmId>,
    /// The CPU joined the next mm's `mm_cpumask`.
    pub joined: bool,
    /// The slot now loaded must be flushed (its generation was brought up to the mm's).
    pub flush: bool,
}

/// `switch_mm_irqs_off`'s decision on one CPU's `tlb_state` (see [`Kernel::switch_mm`] for the
/// rules and kernel versions): `next` is the mm switched to, with its `ctx_id` and current
/// `tlb_gen`; `pcid` whether the machine uses PCIDs. The caller applies the cpumask changes and
/// the flush. Pure, so that the model checker (`crate::check`) runs the same decision.
pub fn switch_mm_irqs_off(
    st: &mut TlbState,
    next: MmId,
    ctx_id: u64,
    mm_tlb_gen: u64,
    knobs: &FlushKnobs,
    pcid: bool,
) -> Switch {
    let was_lazy = std::mem::replace(&mut st.is_lazy, false);
    let gen_check = knobs.lazy_ipis.switch_checks_tlb_gen(knobs.generations);
    let mut out = Switch { left: None, joined: false, flush: false };
    if st.loaded_mm == Some(next) {
        let asid = st.loaded_asid as usize;
        // Without generations the slot's tlb_gen is only set here, so the check is a
        // conservative stand-in, needed only when flushes may have skipped this CPU.
        out.flush = was_lazy && gen_check && st.ctxs[asid].tlb_gen < mm_tlb_gen;
    } else {
        // Stop remote flushes for the previous mm (v3.x-v6.x switch_mm_irqs_off; lazily
        // left in the mask for flush IPIs to trim only since v6.12's "x86,tlb: update
        // mm_cpumask lazily").
        out.left = st.loaded_mm;
        out.joined = true;
        let (asid, need_flush) = st.choose_new_asid(ctx_id, mm_tlb_gen, pcid);
        st.loaded_asid = asid;
        st.loaded_mm = Some(next);
        out.flush = need_flush;
    }
    if out.flush {
        st.ctxs[st.loaded_asid as usize] = TlbContext { ctx_id, tlb_gen: mm_tlb_gen };
    }
    out
}

/// The CPUs `flush_tlb_mm_range` sends the request to: the other CPUs of `mm_cpumask`, lazy
/// ones per `lazy_ipis` (v4.20+ skips them unless page tables were freed).
pub fn flush_targets(
    cpumask: &CpuMask,
    lazy: &CpuMask,
    knobs: &FlushKnobs,
    freed_tables: bool,
    initiator: u32,
) -> CpuMask {
    let mut targets =
        if knobs.lazy_ipis.targets_lazy(freed_tables) { *cpumask } else { cpumask.and_not(lazy) };
    targets.clear(initiator);
    targets
}

/// The `flush_tlb_info` of a `flush_tlb_mm_range(mm, start, end)` whose `inc_mm_tlb_gen`
/// returned `new_tlb_gen`: the range as the policy keeps it; and the 2 MiB steps the policy's
/// `has_large_page()` walked to decide.
pub fn flush_info(
    policy: RangePolicy,
    inputs: &RangeInputs,
    mm: MmId,
    (start, end): (u64, u64),
    freed_tables: bool,
    new_tlb_gen: u64,
    initiator: u32,
) -> (FlushInfo, u64) {
    let r = decide_range(policy, start, end, PAGE_SHIFT, inputs);
    let info = FlushInfo {
        mm,
        start: r.start,
        end: r.end,
        stride_shift: r.stride_shift,
        freed_tables,
        new_tlb_gen,
        initiator,
    };
    (info, r.pmds_walked)
}

/// `flush_tlb_func` on a CPU whose state is `st`. `read_mm_tlb_gen` reads `mm->context.tlb_gen`
/// (the caller charges the coherent-line read); it is called at most once, and only where the
/// knobs say. Updates the slot's generation.
pub fn flush_tlb_func(
    st: &mut TlbState,
    f: &FlushInfo,
    knobs: &FlushKnobs,
    mut read_mm_tlb_gen: impl FnMut() -> u64,
) -> FlushAction {
    // v4.14-v5.18 read `loaded_mm->context.tlb_gen` in flush_tlb_func's declarations, before
    // the wrong-mm and lazy checks: a lazy CPU pays the read too. Seed 002's patch (v6.0) moved
    // it after them. A CPU running another mm reads that mm's line, which no flush of `f.mm`
    // contends: not charged.
    let mut mm_gen = None;
    if knobs.generations && knobs.read_tlb_gen == ReadTlbGen::Always && st.loaded_mm == Some(f.mm) {
        mm_gen = Some(read_mm_tlb_gen());
    }
    if st.loaded_mm != Some(f.mm) {
        return FlushAction::WrongMm;
    }
    // v3.13 checks `cpu_tlbstate.state == TLBSTATE_LAZY` after the active_mm test, as v4.14+
    // checks `is_lazy` after the loaded_mm test: the same order in every era.
    if st.is_lazy {
        return FlushAction::LeaveLazy;
    }
    if !knobs.generations {
        // v3.14 flush_tlb_func: TLBSTATE_OK -> full flush for TLB_FLUSH_ALL, else INVLPG loop.
        return if f.is_full() {
            FlushAction::Full
        } else {
            FlushAction::Partial { start: f.start, nr: f.nr_entries(), stride_shift: f.stride_shift }
        };
    }
    let local = st.local_tlb_gen();
    if knobs.early_return && f.new_tlb_gen != 0 && f.new_tlb_gen <= local {
        return FlushAction::EarlyReturn;
    }
    let latest = match (mm_gen, knobs.read_tlb_gen) {
        (Some(g), _) => g,
        (None, ReadTlbGen::WhenNeeded) => read_mm_tlb_gen(),
        // Without the read, the request's own generation is the best we know.
        (None, _) => f.new_tlb_gen.max(local),
    };
    if local >= latest {
        return FlushAction::UpToDate;
    }
    let partial = !f.is_full() && f.new_tlb_gen == local + 1 && f.new_tlb_gen == latest;
    st.ctxs[st.loaded_asid as usize].tlb_gen = latest;
    if partial {
        FlushAction::Partial { start: f.start, nr: f.nr_entries(), stride_shift: f.stride_shift }
    } else {
        FlushAction::Full
    }
}

/// What the range policy decides for a flush of `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeDecision {
    pub start: u64,
    pub end: u64,
    pub stride_shift: u32,
    /// 2 MiB steps `has_large_page()` walked to decide (v3.6-v3.13; 0 where it did not run).
    pub pmds_walked: u64,
}

/// The inputs the 3.x heuristics read from the CPU and the mm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeInputs {
    /// `tlb_lld_4k[ENTRIES]` / `tlb_lli_4k[ENTRIES]`: the largest 4K-entry count of the data
    /// (instruction) side, as `intel_tlb_lookup()` keeps the maximum of the CPUID descriptors.
    pub lld_4k: u64,
    pub lli_4k: u64,
    /// `mm->total_vm`.
    pub total_vm: u64,
    pub vm_exec: bool,
    pub vm_hugetlb: bool,
    /// Some 2 MB-aligned address in the range is mapped by a huge PMD.
    pub range_has_huge_pmd: bool,
}

impl RangeInputs {
    /// The TLB sizes Linux would read from CPUID for this profile.
    pub fn tlb_sizes(p: &MachineProfile) -> (u64, u64) {
        let max_4k = |side: fn(Serves) -> bool| {
            p.tlb
                .structures
                .iter()
                .filter(|s| side(s.serves) && s.page_sizes.contains(&PageSize::Size4K))
                .map(|s| s.entries as u64)
                .max()
                .unwrap_or(0)
        };
        let data = max_4k(|s| matches!(s, Serves::Data | Serves::Load | Serves::Unified));
        let inst = max_4k(|s| matches!(s, Serves::Instruction | Serves::Unified));
        (data, inst)
    }
}

/// The range `flush_tlb_mm_range` ends up flushing: `(start, end)` kept for INVLPGs, or
/// `(0, TLB_FLUSH_ALL)`.
pub fn decide_range(
    policy: RangePolicy,
    start: u64,
    end: u64,
    stride_shift: u32,
    inp: &RangeInputs,
) -> RangeDecision {
    let full = RangeDecision { start: 0, end: TLB_FLUSH_ALL, stride_shift, pmds_walked: 0 };
    if end == TLB_FLUSH_ALL {
        return full;
    }
    let keep = RangeDecision { start, end, stride_shift, pmds_walked: 0 };
    match policy {
        RangePolicy::AlwaysFull => full,
        RangePolicy::FlushallShift { shift, post_fix, huge_walk } => {
            if shift < 0 || inp.vm_hugetlb {
                return full;
            }
            let entries = if inp.vm_exec { inp.lli_4k } else { inp.lld_4k };
            let pages = (end - start) >> PAGE_SHIFT;
            let act = if post_fix {
                inp.total_vm.min(entries >> shift)
            } else {
                inp.total_vm.min(entries) >> shift
            };
            // Mel Gorman's v2 patch 1/4 moved has_large_page() into the same test but kept it;
            // only patch 4/4 ("nowalk") removed it: the walk follows `huge_walk` alone. The `||`
            // runs it only for a range short enough for INVLPGs; it steps 2 MiB at a time from
            // ALIGN(start, HPAGE_SIZE) below `end`, reading pgd, pud and pmd (v3.13
            // arch/x86/mm/tlb.c), and stops at the first huge PMD.
            if pages > act {
                return full;
            }
            if huge_walk {
                let from = start.next_multiple_of(HPAGE_SIZE);
                let steps = end.saturating_sub(from).div_ceil(HPAGE_SIZE);
                if inp.range_has_huge_pmd && steps > 0 {
                    return RangeDecision { pmds_walked: steps, ..full };
                }
                return RangeDecision { pmds_walked: steps, ..keep };
            }
            keep
        }
        RangePolicy::Ceiling(ceiling) => {
            if (end - start) >> stride_shift > ceiling {
                full
            } else {
                keep
            }
        }
    }
}

/// `tlb_flushall_shift` per CPU model, from `intel_tlb_flushall_shift_set()` (v3.10
/// arch/x86/kernel/cpu/intel.c) or, with `post_fix`, after Mel Gorman's 2014 patch 5/5
/// (IvyBridge 1 -> 2; Sandy Bridge 5 -> 6; AMD 6).
pub fn flushall_shift(vendor: &str, family: u32, model: u32, post_fix: bool) -> i8 {
    match vendor {
        "amd" => {
            if post_fix || family > 0x11 {
                if post_fix {
                    6
                } else {
                    5
                }
            } else {
                4
            }
        }
        "intel" if family == 6 => match model {
            0x0f | 0x16 | 0x17 | 0x1d => -1,
            0x1a | 0x1e | 0x25 | 0x2c | 0x2e | 0x2f => 6,
            0x2a | 0x2d => {
                if post_fix {
                    6
                } else {
                    5
                }
            }
            0x3a => {
                if post_fix {
                    2
                } else {
                    1
                }
            }
            _ => 6,
        },
        // Not x86 (or an unknown family): the x86 range-flush heuristic does not apply.
        _ => -1,
    }
}

// ---- The mechanism on the machine: switch_mm, flush_tlb_mm_range, flush_tlb_func applied ----

/// A `flush_tlb_mm_range` call queued as a continuation (a COW fault's `ptep_clear_flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub start: u64,
    pub end: u64,
    pub freed_tables: bool,
}

/// A shootdown in flight: the `flush_tlb_info` its requests carry, and what its initiator
/// waits for.
#[derive(Debug, Clone, Copy)]
pub struct Shootdown {
    pub info: FlushInfo,
    pub initiator: u32,
    pub pending: u32,
    /// When the initiator sees the last acknowledgement / finishes its own flush.
    pub last_ack: Ps,
    pub local_done: Ps,
    /// A reclaim batch flush (v4.3 `try_to_unmap_flush`): every target runs
    /// `percpu_flush_tlb_batch_pages` (a full flush of whatever it runs) instead of
    /// `flush_tlb_func` on `info`.
    pub batch: bool,
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
}

impl Costs {
    pub fn from_profile(p: &MachineProfile) -> Costs {
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
        }
    }
}

impl Kernel {
    /// A queued `flush_tlb_mm_range` of task `t`'s mm.
    pub(in crate::linux) fn flush_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        let mm = self.tasks[t].user_mm();
        self.flush_tlb_mm_range(ctx, mm, s.start, s.end, s.freed_tables)
    }

    /// Back to user space under PTI: a flush of the user PCID deferred by invalidate_user_asid
    /// (SWITCH_TO_USER_CR3 writes CR3 without the no-flush bit), once however many full
    /// flushes asked for it since (v5.18). Returns its cost if one was due.
    pub(in crate::linux) fn return_to_user(&mut self, ctx: &mut Ctx) -> Option<Ps> {
        let c = &mut self.cpus[ctx.cpu as usize];
        if !c.user_flush_pending {
            return None;
        }
        c.user_flush_pending = false;
        self.counters.tlbflush.pti_user_flushes += 1;
        let d = self.costs.flush.full_flush;
        ctx.charge(Bucket::FlushWork, d);
        Some(d)
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
    pub fn switch_mm(&mut self, cpu: u32, mm: MmId) -> bool {
        let c = &mut self.cpus[cpu as usize];
        self.lazy.clear(cpu);
        let m = &self.mms[mm as usize];
        let s = switch_mm_irqs_off(&mut c.st, mm, m.ctx_id, m.tlb_gen, &self.config.flush, self.pcid);
        if let Some(prev) = s.left {
            self.mms[prev as usize].cpumask.clear(cpu);
        }
        if s.joined {
            let m = &mut self.mms[mm as usize];
            m.cpumask.set(cpu);
            m.ever_loaded.set(cpu);
        }
        if s.flush {
            let pcid = c.st.pcid();
            c.flush_asid(&mut self.tlbs[c.core], pcid);
        }
        s.flush
    }

    /// `flush_tlb_func` on `cpu` for `info` from `at`; returns its cost. Local (initiator) or
    /// remote.
    pub fn run_flush_func(&mut self, cpu: u32, at: Ps, info: &FlushInfo) -> Ps {
        let mut cost = Ps::ZERO;
        let knobs = self.config.flush;
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let Kernel { cpus, tlbs, mms, counters, costs, lazy, .. } = &mut *self;
        let m = &mut mms[info.mm as usize];
        let c = &mut cpus[cpu as usize];
        let tlb = &mut tlbs[c.core];
        let action = flush_tlb_func(&mut c.st, info, &knobs, || {
            counters.tlbflush.tlb_gen_reads += 1;
            let before = m.tlb_gen_line.stats.transfers;
            cost += m.tlb_gen_line.read(cpu, at + cost, &topo, &lines);
            counters.tlbflush.tlb_gen_transfers += m.tlb_gen_line.stats.transfers - before;
            m.tlb_gen
        });
        let pcid = c.st.pcid();
        if action.leaves_mm() {
            m.cpumask.clear(cpu);
        }
        match action {
            FlushAction::WrongMm => {}
            FlushAction::LeaveLazy => {
                // v4.14+ switch_mm_irqs_off(NULL, &init_mm) / v3.13 leave_mm(): leave the mm
                // (no more flush IPIs for it), which also flushes; switch_mm reloads on return.
                leave_mm(&mut c.st);
                lazy.clear(cpu);
                c.flush_asid(tlb, pcid);
                counters.tlbflush.lazy_leaves += 1;
                counters.tlbflush.full_flushes += 1;
                cost += costs.flush.full_flush;
            }
            FlushAction::EarlyReturn => {
                counters.tlbflush.early_returns += 1;
                counters.tlbflush.flushes_skipped += 1;
            }
            FlushAction::UpToDate => counters.tlbflush.flushes_skipped += 1,
            FlushAction::Partial { start, nr, stride_shift } => {
                for i in 0..nr {
                    let va = start + (i << stride_shift);
                    if tlb.invlpg(c.lp, va, pcid) > 0 && stride_shift == PAGE_SHIFT {
                        c.note_flushed(va >> PAGE_SHIFT);
                    }
                }
                counters.tlbflush.partial_flushes += 1;
                counters.tlbflush.invlpg += nr;
                cost += costs.flush.invlpg * nr;
                // flush_tlb_one_user (v5.18) under PTI: the user PCID's copy too, with INVPCID,
                // or by a full flush of it on the way back to user space.
                if c.pti {
                    match costs.flush.invpcid_single {
                        Some(one) => cost += one * nr,
                        None => c.user_flush_pending = true,
                    }
                }
            }
            FlushAction::Full => {
                c.flush_asid(tlb, pcid);
                counters.tlbflush.full_flushes += 1;
                cost += costs.flush.full_flush;
            }
        }
        cost
    }

    /// `flush_tlb_mm_range` (v5.18 arch/x86/mm/tlb.c): bump `mm->tlb_gen`, choose the range,
    /// send IPIs to the other CPUs of `mm_cpumask` (lazy ones per `lazy_ipis`: v4.20+ skips
    /// them unless page tables were freed, v3.x-v4.19 sends to them too), flush locally
    /// (concurrently or first, per knob), then wait for every ack.
    pub(in crate::linux) fn flush_tlb_mm_range(
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
        let m = &mut self.mms[mm as usize];
        // The call's own work (flush_tlb_info set-up, cpumask scan, IRQ and preemption toggles),
        // then inc_mm_tlb_gen: an atomic RMW on the contended line (v4.14+; v3.x had none).
        let mut d = self.costs.flush.flush_call;
        if self.config.flush.generations {
            d += m.tlb_gen_line.write(cpu, now + d, &topo, &lines);
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
        let (info, pmds_walked) =
            flush_info(self.policy, &inputs, mm, (start, end), freed_tables, m.tlb_gen, cpu);
        d += self.costs.flush.pmd_probe * pmds_walked;
        // get_flush_tlb_info fills this CPU's flush_tlb_info: a store to a line the handlers
        // of its last flush read (v5.18).
        d += self.cpus[cpu as usize].flush_info_line.write(cpu, now + d, &topo, &lines);
        let targets = flush_targets(&m.cpumask, &self.lazy, &self.config.flush, freed_tables, cpu);
        let loaded_here = self.cpus[cpu as usize].st.loaded_mm == Some(mm);
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
        text + d + pre + self.call_function_many(ctx, info, false, &targets, t0, concurrent)
    }
}

#[cfg(test)]
mod tests;
