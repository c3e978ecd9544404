//! The pure part of x86 TLB flushing (arch/x86/mm/tlb.c, v5.18 / v6.0, and the 3.x range
//! policies): the knobs, `struct flush_tlb_info` and `struct tlb_state`, and the decisions
//! `switch_mm_irqs_off`, `flush_tlb_mm_range` (which CPUs, which range) and `flush_tlb_func` take
//! on them. Nothing here touches the machine: [`super`] applies these on it, and the model checker
//! (`crate::check`) runs the same functions.

use crate::hw::cpumask::CpuMask;
use crate::hw::tlb::{PageSize, Serves};
use crate::linux::include::linux::mm_types::{MmId, HPAGE_SIZE, PAGE_SHIFT};
use crate::profile::MachineProfile;

/// `TLB_NR_DYN_ASIDS`: per-CPU dynamic ASID slots (arch/x86/include/asm/tlbflush.h, v4.14+).
pub const TLB_NR_DYN_ASIDS: usize = 6;
/// `TLB_FLUSH_ALL`.
pub const TLB_FLUSH_ALL: u64 = u64::MAX;

/// Whether `asid` is a global one (v6.15, d504d1247e36: ASIDs from `TLB_NR_DYN_ASIDS` up are
/// handed to whole mms for broadcast flushing; docs/references/linux-6x.md#global-asids).
pub fn is_global_asid(asid: u16) -> bool {
    asid as usize >= TLB_NR_DYN_ASIDS
}

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

/// How a remote CPU's `flush_smp_call_function_queue` runs the flush requests it took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemoteDrain {
    /// Every kernel: `flush_tlb_func` once per request, each acknowledged after its own flush.
    #[default]
    PerEntry,
    /// Seed 002's closing proposal (Nadav Amit, never merged nor measured): a stage in
    /// `flush_smp_call_function_queue` walks the taken requests first, flushes once to the
    /// largest `f->new_tlb_gen` of those for the loaded mm without reading `mm->tlb_gen`
    /// ([`flush_tlb_func_max_gen`]), then acknowledges every request
    /// (docs/references/linux-6x.md#remote-drain).
    MaxGen,
}

impl RemoteDrain {
    pub fn is_per_entry(&self) -> bool {
        *self == RemoteDrain::PerEntry
    }
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

/// When the sender tests whether a target is lazy (`tlb_is_not_lazy`), under `lazy_ipis = skip`
/// (docs/references/linux-6x.md#retpoline-revert).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LazyTest {
    /// Once for every target, before the first request is queued: 6035152d8eeb (v5.13 to
    /// v5.18-rc1) builds a cpumask of the non-lazy CPUs, then `on_each_cpu_mask`. Also the stand-in
    /// the presets before v6.15 keep where the kernel tests in the loop (the loop runs whole in
    /// one step there, so the two differ only across an interrupt of the loop).
    #[default]
    BeforeQueue,
    /// Per target, in `smp_call_function_many_cond`'s enqueue loop, when the loop reaches it
    /// (`on_each_cpu_cond_mask(tlb_is_not_lazy, ...)`: v4.20 to v5.12, and again after the
    /// revert d39268ad24c0, v5.18-rc2+). The loop gives way to every other CPU's earlier event
    /// before it tests a target, so a CPU that goes idle while the loop runs is skipped.
    InQueue,
}

impl LazyTest {
    pub fn is_before_queue(&self) -> bool {
        *self == LazyTest::BeforeQueue
    }
}

/// Which cross-CPU call requests skip the IPI when the target's call queue already held one
/// (kernel/smp.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoalesceIpis {
    /// v3.4: one IPI per target per call.
    Off,
    /// v3.9-v4.12: a call with a lone target goes through `generic_exec_single`, which IPIs only
    /// if its `list_empty` (v3.9-v3.13) / `llist_add` (v3.14+) found the queue empty; a call
    /// with several targets ends with `arch_send_call_function_ipi_mask(cfd->cpumask)`, which
    /// IPIs every one (read in v4.8's kernel/smp.c).
    Lone,
    /// v4.13+ (Aaron Lu, "smp: Avoid sending needless IPI in smp_call_function_many()", 2017):
    /// `cfd->cpumask_ipi` holds only the targets whose `llist_add` found the queue empty.
    On,
}

impl CoalesceIpis {
    /// Whether a call to `targets` CPUs IPIs only those whose queue was empty.
    pub fn coalesces(self, targets: u32) -> bool {
        match self {
            CoalesceIpis::Off => false,
            CoalesceIpis::Lone => targets == 1,
            CoalesceIpis::On => true,
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

/// How `mm_cpumask` follows the CPUs that run an mm (docs/references/linux-6x.md#lazy-cpumask,
/// #cpumask-trim).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpumaskUpdate {
    /// v4.14-v6.13: `switch_mm_irqs_off` clears the CPU's bit in the previous mm's mask and sets
    /// it in the next one's (leaving for `init_mm` clears it too).
    #[default]
    Eager,
    /// v6.14, 209954cbc7d0 "x86/mm/tlb: Update mm_cpumask lazily": the switch sets the next
    /// mm's bit only if it is clear and never clears the previous mm's; a CPU clears its own bit
    /// when a flush IPI for an mm it no longer runs reaches `flush_tlb_func` (the wrong-mm
    /// branch). The sender's filter is unchanged.
    Lazy,
    /// v6.14, 6db2526c1d69 "x86/mm/tlb: Only trim the mm_cpumask once a second": lazy, and
    /// `should_flush_tlb` sends only to CPUs that run the mm (not lazily) unless the request
    /// trims (`should_trim_cpumask`: at most once per `HZ` jiffies per mm) or freed page tables.
    LazyTrim,
}

impl CpumaskUpdate {
    pub fn is_eager(&self) -> bool {
        *self == CpumaskUpdate::Eager
    }

    /// A CPU leaving an mm (for another, or for `init_mm`) clears its bit at the switch.
    pub fn switch_clears(self) -> bool {
        self == CpumaskUpdate::Eager
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
    /// How `mm_cpumask` is kept (v6.14's lazy mask and its trim). Not written into a result's
    /// configuration while eager, so results of the kernels before it read as they did.
    #[serde(default, skip_serializing_if = "CpumaskUpdate::is_eager")]
    pub cpumask: CpumaskUpdate,
    /// `mm_cpumask` is a coherent line: a switch's set or clear of a bit is an atomic RMW on it,
    /// a flush initiator's scan of it a read (off: neither is charged, as before v6.14's
    /// presets; not written into a result's configuration while off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpumask_line: bool,
    /// v6.15 broadcast flushing (`CONFIG_BROADCAST_TLB_FLUSH`, 4afeb0ed1753), used only where the
    /// CPU has INVLPGB: an mm seen running on 4 or more CPUs gets a global ASID, and its flushes
    /// become INVLPGBs and one TLBSYNC, with no IPI (docs/references/linux-6x.md#broadcast-flush). Not written into a result's
    /// configuration while off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invlpgb: bool,
    /// When a target's laziness is tested: before queueing (6035152d8eeb's rule, and the older
    /// presets' stand-in) or per target in the enqueue loop. Not written into a result's
    /// configuration while before-queue.
    #[serde(default, skip_serializing_if = "LazyTest::is_before_queue")]
    pub lazy_test: LazyTest,
    /// How a remote CPU drains its flush requests (seed 002's proposal). Not written into a
    /// result's configuration while per-entry.
    #[serde(default, skip_serializing_if = "RemoteDrain::is_per_entry")]
    pub remote_drain: RemoteDrain,
    /// Under `range_policy = flushall-shift`: the number of CPUs in `mm_cpumask` multiplies the
    /// pages to flush before the balance-point test (the patch Mel Gorman's v1 series of Dec 2013
    /// carried and v2 dropped; seed 000's idea, docs/references/linux-mm.md#flushall-shift-cpus).
    /// Never merged: off in every preset, and not written into a result's configuration while
    /// off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub range_cpus: bool,
}

impl FlushKnobs {
    /// The enqueue loop itself skips lazy targets (`lazy_test = in-queue` on a request that did
    /// not free page tables, where lazy CPUs are skipped at all).
    pub fn lazy_in_queue(&self, freed_tables: bool) -> bool {
        self.lazy_test == LazyTest::InQueue && !self.lazy_ipis.targets_lazy(freed_tables)
    }
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

    /// The loaded slot's generation; a global ASID has none (INVLPGB keeps it current), so its
    /// callers never ask.
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
    /// The mm has a global ASID, which broadcast flushes keep current: nothing to flush here
    /// (v6.15 `flush_tlb_func`). `reloaded`: the CPU still ran it on a per-CPU ASID and switched
    /// to the global one (the IPIs of `finish_asid_transition` exist to make it).
    GlobalAsid {
        reloaded: bool,
    },
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

    /// The action runs a serialising instruction (INVLPG, INVPCID, a CR3 write), which waits
    /// for the CPU's earlier stores to drain.
    pub fn serialises(&self) -> bool {
        matches!(
            self,
            FlushAction::Partial { .. }
                | FlushAction::Full
                | FlushAction::LeaveLazy
                | FlushAction::GlobalAsid { reloaded: true }
        )
    }

    /// The CPU clears its bit in the request's `mm_cpumask` (it gets no further flush IPIs for
    /// the mm): always in the wrong-mm branch; on leaving lazy mode for `init_mm` only where the
    /// switch clears the previous mm's bit (eager, v4.14-v6.13: v6.14's lazy mask keeps it, and
    /// the next flush IPI finds the CPU on another mm).
    pub fn clears_bit(&self, cpumask: CpumaskUpdate) -> bool {
        match self {
            FlushAction::WrongMm => true,
            FlushAction::LeaveLazy => cpumask.switch_clears(),
            _ => false,
        }
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

/// `switch_mm_irqs_off`'s decision on one CPU's `tlb_state` (see `Kernel::switch_mm` for the
/// rules and kernel versions): `next` is the mm switched to, with its `ctx_id` and current
/// `tlb_gen`; `pcid` whether the machine uses PCIDs; `global_asid` the mm's global ASID (v6.15).
/// The caller applies the cpumask changes and the flush. Pure, so that the model checker
/// (`crate::check`) runs the same decision.
pub fn switch_mm_irqs_off(
    st: &mut TlbState,
    next: MmId,
    (ctx_id, mm_tlb_gen, global_asid): (u64, u64, Option<u16>),
    knobs: &FlushKnobs,
    pcid: bool,
) -> Switch {
    let was_lazy = std::mem::replace(&mut st.is_lazy, false);
    // v6.15 (be88a1dd6112): `choose_new_asid` returns the mm's global ASID, never to be
    // flushed (broadcasts keep it current); the same mm switches to it if it still ran on a
    // per-CPU ASID.
    if let Some(g) = global_asid {
        let mut out = Switch { left: None, joined: false, flush: false };
        if st.loaded_mm != Some(next) {
            out.left = st.loaded_mm;
            out.joined = true;
        }
        st.loaded_mm = Some(next);
        st.loaded_asid = g;
        return out;
    }
    let gen_check = knobs.lazy_ipis.switch_checks_tlb_gen(knobs.generations);
    let mut out = Switch { left: None, joined: false, flush: false };
    if st.loaded_mm == Some(next) {
        let asid = st.loaded_asid as usize;
        // Without generations the slot's tlb_gen is only set here, so the check is a
        // conservative stand-in, needed only when flushes may have skipped this CPU.
        out.flush = was_lazy && gen_check && st.ctxs[asid].tlb_gen < mm_tlb_gen;
    } else {
        // Stop remote flushes for the previous mm (v3.x-v6.13 switch_mm_irqs_off); since v6.14
        // (209954cbc7d0) the bit stays, for a flush IPI to clear (docs/references/linux-6x.md#lazy-cpumask).
        if knobs.cpumask.switch_clears() {
            out.left = st.loaded_mm;
        }
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
/// ones per `lazy_ipis` (v4.20+ skips them unless page tables were freed). With the v6.14 trim
/// (`cpumask = lazy-trim`, 6db2526c1d69 `should_flush_tlb`), a request that neither freed page
/// tables nor trims goes only to the CPUs of `running`, those whose `loaded_mm` is the mm;
/// `running` is `None` for a request that trims or has no mm (a reclaim batch: every CPU).
pub fn flush_targets(
    cpumask: &CpuMask,
    lazy: &CpuMask,
    running: Option<&CpuMask>,
    knobs: &FlushKnobs,
    freed_tables: bool,
    initiator: u32,
) -> CpuMask {
    let mut targets =
        if knobs.lazy_ipis.targets_lazy(freed_tables) { *cpumask } else { cpumask.and_not(lazy) };
    if let (CpumaskUpdate::LazyTrim, false, Some(running)) = (knobs.cpumask, freed_tables, running) {
        targets = targets.and(running);
    }
    targets.clear(initiator);
    targets
}

/// `should_trim_cpumask(mm)` (v6.14, 6db2526c1d69): true when `jiffies` is after
/// `mm->context.next_trim_cpumask`, which then moves to `jiffies + HZ`; so at most one flush a
/// second per mm also reaches the CPUs that left it (docs/references/linux-6x.md#cpumask-trim).
pub fn should_trim_cpumask(next_trim_cpumask: &mut u64, jiffies: u64, hz: u64) -> bool {
    // time_after(a, b): b - a < 0 in wrapping arithmetic.
    if (*next_trim_cpumask).wrapping_sub(jiffies) as i64 >= 0 {
        return false;
    }
    *next_trim_cpumask = jiffies + hz;
    true
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
/// `global_asid` is the mm's global ASID (v6.15), if it has one.
pub fn flush_tlb_func(
    st: &mut TlbState,
    f: &FlushInfo,
    knobs: &FlushKnobs,
    global_asid: Option<u16>,
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
    // v6.15: a CPU still on a per-CPU ASID of a global-ASID mm reloads with the global one (it
    // was loaded when the mm had none); a global ASID needs no flush.
    if let Some(g) = global_asid {
        let reloaded = st.loaded_asid != g;
        st.loaded_asid = g;
        return FlushAction::GlobalAsid { reloaded };
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

/// Whether a taken request joins the one flush of a `remote_drain = max-gen` stage: a
/// `flush_tlb_func` request (not a reclaim batch) with a generation, for the mm this CPU runs,
/// not lazily, on a per-CPU ASID (`global_asid`: the mm's, if it has one). Any other request
/// runs `flush_tlb_func` alone, as in every kernel: the wrong-mm and lazy branches change
/// `tlb_state`, and a global ASID needs no flush.
pub fn drain_joins(
    st: &TlbState,
    f: &FlushInfo,
    knobs: &FlushKnobs,
    batch: bool,
    global_asid: Option<u16>,
) -> bool {
    knobs.generations
        && !batch
        && f.new_tlb_gen != 0
        && global_asid.is_none()
        && st.loaded_mm == Some(f.mm)
        && !st.is_lazy
}

/// What one `remote_drain = max-gen` stage decided for the requests that joined it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// `EarlyReturn` when every request was already covered, else the one flush.
    pub action: FlushAction,
    /// Requests already covered by the local generation (each an early return).
    pub covered: u64,
    /// Outstanding requests whose flush the one flush also did (skipped flushes).
    pub merged: u64,
}

/// Seed 002's closing proposal (Nadav Amit, 2022-06-08; docs/references/linux-6x.md#remote-drain):
/// the remote CPU has walked the requests it took (`reqs`, every one [`drain_joins`]) and flushes
/// once, to the largest `f->new_tlb_gen`, never reading `mm->context.tlb_gen`. Partial only if
/// exactly one request is outstanding, it is a range and it is `local + 1` (then its range is
/// every change since the CPU's generation, the rule `flush_tlb_func` applies with the mm's
/// generation); full if several are outstanding ("multiple outstanding TLB shootdowns": the
/// proposal names no union of ranges) or the one is further ahead. Updates the slot's generation
/// to the maximum; the caller acknowledges every request after the flush.
pub fn flush_tlb_func_max_gen(st: &mut TlbState, reqs: &[FlushInfo]) -> Drained {
    let local = st.local_tlb_gen();
    let mut outstanding = reqs.iter().filter(|f| f.new_tlb_gen > local);
    let first = outstanding.next();
    let n = first.map_or(0, |_| 1 + outstanding.count() as u64);
    let covered = reqs.len() as u64 - n;
    let Some(first) = first else {
        return Drained { action: FlushAction::EarlyReturn, covered, merged: 0 };
    };
    let max = reqs.iter().map(|f| f.new_tlb_gen).max().unwrap_or(local);
    st.ctxs[st.loaded_asid as usize].tlb_gen = max;
    let action = if n == 1 && !first.is_full() && first.new_tlb_gen == local + 1 {
        FlushAction::Partial { start: first.start, nr: first.nr_entries(), stride_shift: first.stride_shift }
    } else {
        FlushAction::Full
    };
    Drained { action, covered, merged: n - 1 }
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
    /// `cpumask_weight(mm_cpumask(mm))` where the CPU-count rule is on (`range_cpus`), else
    /// `None`.
    pub cpus_to_flush: Option<u64>,
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
            // The v1 CPU-count rule (never merged; docs/references/linux-mm.md#flushall-shift-cpus):
            // every CPU of the mask runs the INVLPG loop, so the work is `pages` times the CPUs,
            // weighed against the same balance point.
            let work = pages.saturating_mul(inp.cpus_to_flush.unwrap_or(1).max(1));
            if work > act {
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
