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

use crate::hw::tlb::{PageSize, Serves};
use crate::profile::MachineProfile;

use super::mm::{MmId, PAGE_SHIFT};

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
    /// v3.x-v4.18: every other CPU of `mm_cpumask` gets the IPI; a lazy one leaves the mm in the
    /// handler (v3.13 `flush_tlb_func` -> `leave_mm`: clear its `mm_cpumask` bit and load
    /// `swapper_pg_dir`; v4.14-v4.18 switch to `init_mm`), so it gets no further IPIs for the
    /// mm and reloads CR3 (a full flush) when it switches back.
    Send,
    /// v4.19+ (Rik van Riel, "x86/mm/tlb: Only send page table free TLB flush to lazy TLB
    /// CPUs"): lazy CPUs are skipped unless page tables were freed; one that fell behind
    /// catches up with a full flush at its next `switch_mm` (the `tlb_gen` check).
    Skip,
}

impl LazyIpis {
    /// Whether a lazy CPU is a target of a flush that did (not) free page tables.
    pub fn targets_lazy(self, freed_tables: bool) -> bool {
        match self {
            LazyIpis::Send => true,
            LazyIpis::Skip => freed_tables,
        }
    }
}

fn on() -> bool {
    true
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
    /// `smp_call_function_many` sends an IPI only to CPUs whose call queue was empty (v3.9+,
    /// Shaohua Li's per-CPU csd rework; llist since v3.14); a handler run drains every request
    /// queued so far. Off: v3.4, one IPI per target per call.
    pub coalesce_ipis: bool,
    /// Lazy TLB CPUs as flush targets (the sender's side of the rule; the handler's
    /// `LeaveLazy` is the same in every era).
    pub lazy_ipis: LazyIpis,
    /// Faults and address-space system calls take `mmap_lock` (a sleeping rwsem with a
    /// contended count line). Off: no lock at all (an ablation, not a kernel).
    pub mmap_lock: bool,
    /// Kernel page-table isolation (v4.15+) where the CPU is Meltdown-affected (the profile's
    /// `cpu.features.pti`): user entries live in a PCID of their own, so each single-page
    /// flush also invalidates it there (INVPCID, or a deferred full flush of it without INVPCID)
    /// and each full flush defers a flush of it to the next return to user space.
    pub pti: bool,
    /// The kernel's own code and data go through the TLB (kernel/text.rs): its entries are
    /// refilled after flushes that drop them (PTI with PCID) and compete with user entries.
    /// Off: kernel translations are free (an ablation).
    #[serde(default = "on")]
    pub kernel_tlb: bool,
    /// Free gathered pages before the flush completes. UNSAFE: exists so the oracle can be
    /// shown to catch it.
    pub free_before_flush: bool,
}

/// `struct flush_tlb_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TlbContext {
    pub ctx_id: u64,
    pub tlb_gen: u64,
}

/// Per-CPU `struct tlb_state` (the parts the model needs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    let mut mm_gen = None;
    if knobs.read_tlb_gen == ReadTlbGen::Always {
        let g = read_mm_tlb_gen();
        mm_gen = Some(g);
    }
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
    let full = RangeDecision { start: 0, end: TLB_FLUSH_ALL, stride_shift };
    if end == TLB_FLUSH_ALL {
        return full;
    }
    let keep = RangeDecision { start, end, stride_shift };
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
            // only patch 4/4 ("nowalk") removed it: the walk follows `huge_walk` alone.
            if pages > act || (huge_walk && inp.range_has_huge_pmd) {
                full
            } else {
                keep
            }
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

#[cfg(test)]
mod tests;
