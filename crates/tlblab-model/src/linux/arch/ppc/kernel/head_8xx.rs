//! The MPC8xx software TLB reload: `InstructionTLBMiss` (vector 0x1100), `DataStoreTLBMiss`
//! (0x1200) and `DataTLBError` (0x1400) of Linux `arch/ppc/kernel/head_8xx.S`, plus the boot-time
//! MMU setup that decides what the TLBs hold before any miss (`initial_mmu` / `start_here`,
//! `CONFIG_PIN_TLB`).
//!
//! Two versions, read from their sources:
//! - **2.4.0** (`Robin329/Linux-2.4.0`): handlers use r20/r21; the ITLB handler has the
//!   `_PAGE_ACCESSED` store compiled out (`#if 0`), the DTLB-miss handler never had one; the
//!   level-1 entry holds a virtual address, so each walk does a `tophys`; no `CONFIG_PIN_TLB`:
//!   the boot 8 MB entries are dropped by the `tlbia` in `start_here` (and 2.4.0's `set_context`
//!   does a `tlbia` on every context switch).
//! - **2.6.12-rc2** (`torvalds/linux` 1da177e4, the first git import, closest to Marcelo's
//!   2.6.11): r10/r11; both miss handlers store `_PAGE_ACCESSED` back into the PTE on every miss
//!   (an extra `ori` + `stw`, and a second `mfspr MD_TWC` in the DTLB handler); the level-1
//!   entry is physical (no `tophys`); `DataTLBError` first copies DAR and `M_CASID` into `MD_EPN`
//!   (6 more instructions); `CONFIG_PIN_TLB` loads ITLB entry 28 and DTLB entries 28 (kernel) and 29
//!   (IMMR) with 8 MB pages at boot and sets RSV4I/RSV4D (its DTLB 30/31 writes carry no valid
//!   translation: [`boot`]).
//!
//! Both: save CR and two GPRs (one in `M_TW`, the others at physical 0 and 4), read `M_TWB`
//! (level-1 entry address of the current pgd), substitute `swapper_pg_dir` when the EA is at or
//! above 0x80000000, load the level-1 entry, bail out if it is 0, set `Mx_TWC`, read the PTE
//! address from `MD_TWC`, load the PTE, force the four subpage-valid bits, write `Mx_RPN`
//! (which loads the TLB entry the replacement counter points at), restore, `rfi`. All of it runs
//! with translation off, so its instruction fetches are physical addresses at the vector
//! (through the I-cache) and its loads and stores go to physical memory through the D-cache.
//! `CONFIG_8xx_CPU6` (an erratum workaround) adds a store/load pair before every SPR write; it
//! is a knob here ([`Head8xxConfig::cpu6`]).
//!
//! Each handler is a table of its instructions along the path it takes (see [`handler`]), so the
//! cost of a miss comes from executing them against the caches, not from a constant.

use std::collections::BTreeMap;
use std::fmt;

use crate::hw::ppc8xx::cache::{Cache, WritePolicy};
use crate::hw::ppc8xx::tlb::{Lookup8xx, Mmu8xx, PageSize8xx, Side, TlbEntry8xx};
use crate::profile::ppc8xx::HandlerCosts;

/// `KERNELBASE` (= `PAGE_OFFSET`) of ppc32 Linux.
pub const KERNELBASE: u32 = 0xc000_0000;
/// The handlers' test: `M_TWB` bit 0x800 is EA bit 0, i.e. EA >= 0x80000000 uses
/// `swapper_pg_dir`. The seed's `/proc/tlbmiss` user/kernel split is assumed to follow it.
pub const KERNEL_SPACE: u32 = 0x8000_0000;

/// Linux 8xx PTE bits (include/asm-ppc/pgtable.h, 2.6.12-rc2, `CONFIG_8xx` block).
pub mod pte {
    pub const PRESENT: u32 = 0x0001;
    pub const NO_CACHE: u32 = 0x0002;
    /// No ASID compare: the TLB entry's SH bit.
    pub const SHARED: u32 = 0x0004;
    pub const EXEC: u32 = 0x0008;
    pub const GUARDED: u32 = 0x0010;
    pub const DIRTY: u32 = 0x0020;
    pub const RW: u32 = 0x0040;
    pub const ACCESSED: u32 = 0x0080;
    /// The hardware changed bit: a store through an entry without it takes `DataTLBError`.
    pub const HWWRITE: u32 = 0x0100;
    pub const USER: u32 = 0x0800;
    /// `_PAGE_KERNEL` = BASE | SHARED | WRENABLE.
    pub const KERNEL: u32 = PRESENT | ACCESSED | SHARED | RW | DIRTY | HWWRITE;
    /// A user page that may be written, before its first write (`PAGE_SHARED`-like).
    pub const USER_RW: u32 = PRESENT | ACCESSED | USER | RW;
    /// User text (`PAGE_READONLY_X`).
    pub const USER_RX: u32 = PRESENT | ACCESSED | USER | EXEC;
}

/// Which head_8xx.S.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Version {
    /// Linux 2.4.0.
    #[serde(rename = "2.4")]
    V2_4,
    /// Linux 2.6.12-rc2 (standing in for 2.6.11).
    #[serde(rename = "2.6")]
    V2_6,
}

impl Version {
    pub fn parse(s: &str) -> Option<Version> {
        match s {
            "2.4" => Some(Version::V2_4),
            "2.6" => Some(Version::V2_6),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Version::V2_4 => "2.4",
            Version::V2_6 => "2.6",
        }
    }
}

/// The three reload exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Handler {
    InstructionTlbMiss,
    DataTlbMiss,
    DataTlbError,
}

impl Handler {
    /// Exception vector = physical address of the handler's first instruction.
    pub fn vector(self) -> u32 {
        match self {
            Handler::InstructionTlbMiss => 0x1100,
            Handler::DataTlbMiss => 0x1200,
            Handler::DataTlbError => 0x1400,
        }
    }
}

/// What one instruction of a handler does, as far as cost is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Integer instruction (li, ori, rlwimi, andi., mfcr, mtcr ...).
    Alu,
    /// `mfspr` of an MMU/exception SPR.
    Mfspr,
    /// `mtspr` of an MMU SPR (serialising on the 8xx).
    Mtspr,
    /// `mtspr Mx_RPN`: also writes the TLB entry.
    MtsprRpn,
    /// Conditional branch over the kernel-only instructions: taken for user addresses.
    BranchUser,
    /// Conditional branch to the bail-out path: not taken when the walk succeeds.
    BranchBail,
    /// A branch taken on the path listed (v4.14's `blt cr7, ...Linear`).
    BranchTaken,
    /// Store of a saved register to physical 0 + offset.
    StoreScratch(u32),
    /// Reload of a saved register from physical 0 + offset.
    LoadScratch(u32),
    /// `lwz` of the level-1 (pgd) entry.
    LoadL1,
    /// `lwz` of the PTE.
    LoadPte,
    /// `stw` of the updated PTE (ACCESSED in 2.6 misses; DIRTY|ACCESSED|HWWRITE in errors).
    StorePte,
    /// `rfi`.
    Rfi,
}

/// One instruction: what it costs, its text (for reports), and whether it exists only on some
/// path or build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub op: Op,
    pub text: &'static str,
    /// Executed only for kernel addresses (the `swapper_pg_dir` substitution).
    pub kernel_only: bool,
    /// Present only with `CONFIG_8xx_CPU6`.
    pub cpu6: bool,
}

mod handlers;
pub use handlers::{handler, linear};

/// The instructions executed for a successful reload, each with its physical text address: the
/// build has CPU6 instructions only when `cpu6` (they shift the addresses of what follows); a
/// user address skips the kernel-only ones (they keep their addresses).
pub fn path(
    version: Version,
    h: Handler,
    cpu6: bool,
    kernel: bool,
) -> impl Iterator<Item = (u32, &'static Insn)> {
    handler(version, h)
        .iter()
        .filter(move |x| cpu6 || !x.cpu6)
        .enumerate()
        .map(move |(n, x)| (h.vector() + 4 * n as u32, x))
        .filter(move |(_, x)| kernel || !x.kernel_only)
}

/// Where a CPU's page tables are, and how its data cache writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head8xxConfig {
    pub version: Version,
    /// `CONFIG_8xx_CPU6`.
    pub cpu6: bool,
    /// `MD_CTR[WTDEF]`: write-through unless `CONFIG_8xx_COPYBACK` (both versions).
    pub dcache_policy: WritePolicy,
    pub costs: HandlerCosts,
    /// v4.14's 8 MB linear-map reloads (the `linear_8m` knob): misses in [`LINEAR_TEXT`] (ITLB)
    /// or [`LINEAR_DATA`] (DTLB) run [`linear`]'s path instead of the version's walk.
    pub linear_8m: bool,
}

/// The kernel text the v4.14 ITLB handler maps by 8 MB entries: the first 8 MB page.
pub const LINEAR_TEXT: std::ops::Range<u32> = KERNELBASE..KERNELBASE + (8 << 20);
/// The model's lowmem: 32 MB of RAM (an estimate: the seed does not give the board's).
pub const LOWMEM: u32 = 32 << 20;
/// The kernel data the v4.14 DTLB handler maps by 8 MB entries: lowmem (its `DTLBMiss_cmp` is
/// patched at boot to the end of the linear map).
pub const LINEAR_DATA: std::ops::Range<u32> = KERNELBASE..KERNELBASE + LOWMEM;

/// Whether `cfg` reloads `ea` through the v4.14 linear path of `h`.
fn takes_linear(cfg: &Head8xxConfig, h: Handler, ea: u32) -> bool {
    cfg.linear_8m
        && match h {
            Handler::InstructionTlbMiss => LINEAR_TEXT.contains(&ea),
            Handler::DataTlbMiss => LINEAR_DATA.contains(&ea),
            Handler::DataTlbError => false,
        }
}

/// Physical memory holding 2-level 8xx page tables: 4 KB pages of 1024 words, keyed by their
/// physical address. The pgd entry holds the PTE page's physical address | `_PMD_PRESENT` in
/// 2.6; 2.4.0 stores a virtual address and the handler does `tophys` — the model stores the
/// physical address for both and charges 2.4's `tophys` instruction.
#[derive(Debug, Clone, Default)]
pub struct PageTables8xx {
    pages: BTreeMap<u32, Box<[u32; 1024]>>,
    next_free: u32,
}

impl PageTables8xx {
    /// Tables allocated from physical `base` upwards.
    pub fn new(base: u32) -> PageTables8xx {
        PageTables8xx { pages: BTreeMap::new(), next_free: base & !0xfff }
    }

    /// A new, empty pgd; returns its physical address (what `M_TWB` is set from).
    pub fn new_pgd(&mut self) -> u32 {
        self.alloc()
    }

    fn alloc(&mut self) -> u32 {
        let p = self.next_free;
        self.next_free += 4096;
        self.pages.insert(p, Box::new([0; 1024]));
        p
    }

    pub fn read(&self, phys: u32) -> u32 {
        self.pages.get(&(phys & !0xfff)).map_or(0, |p| p[((phys & 0xfff) >> 2) as usize])
    }

    pub fn write(&mut self, phys: u32, v: u32) {
        if let Some(p) = self.pages.get_mut(&(phys & !0xfff)) {
            p[((phys & 0xfff) >> 2) as usize] = v;
        }
    }

    /// Physical address of the level-1 entry for `ea` (what `mfspr M_TWB` returns).
    pub fn l1_addr(pgd: u32, ea: u32) -> u32 {
        pgd + ((ea >> 22) << 2)
    }

    /// Physical address of `ea`'s PTE given its level-1 entry (what `mfspr MD_TWC` returns).
    pub fn pte_addr(l1: u32, ea: u32) -> u32 {
        (l1 & !0xfff) + (((ea >> 12) & 0x3ff) << 2)
    }

    /// Map the 4 KB page at `ea` to `pa` with Linux PTE bits `flags`.
    pub fn map(&mut self, pgd: u32, ea: u32, pa: u32, flags: u32) {
        let l1a = Self::l1_addr(pgd, ea);
        let mut l1 = self.read(l1a);
        if l1 == 0 {
            l1 = self.alloc() | 1; // _PMD_PRESENT
            self.write(l1a, l1);
        }
        self.write(Self::pte_addr(l1, ea), (pa & !0xfff) | flags);
    }

    /// Map `[ea, ea + len)` linearly to `pa` (the kernel's lowmem map, `mapin_ram`).
    pub fn map_range(&mut self, pgd: u32, ea: u32, pa: u32, len: u32, flags: u32) {
        for off in (0..len).step_by(4096) {
            self.map(pgd, ea + off, pa + off, flags);
        }
    }

    /// The PTE for `ea` (0 when there is no table).
    pub fn pte(&self, pgd: u32, ea: u32) -> u32 {
        let l1 = self.read(Self::l1_addr(pgd, ea));
        if l1 == 0 {
            0
        } else {
            self.read(Self::pte_addr(l1, ea))
        }
    }
}

/// The machine state a reload touches.
pub struct Cpu8xx<'a> {
    pub mmu: &'a mut Mmu8xx,
    pub icache: &'a mut Cache,
    pub dcache: &'a mut Cache,
    pub tables: &'a mut PageTables8xx,
    /// The current task's pgd (physical), loaded into `M_TWB` by `set_context`.
    pub user_pgd: u32,
    /// `swapper_pg_dir` (physical).
    pub swapper_pgd: u32,
}

/// How a reload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// The TLB entry was written into `slot`.
    Loaded { slot: u8 },
    /// The walk found no table or no writable PTE: the handler branched to `InstructionAccess`
    /// / `DataAccess` and the kernel's page-fault path (not modelled here) takes over.
    PageFault,
}

/// What one miss cost and did: the counters a `/proc/tlbmiss`-style report and the time
/// attribution need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissEvents {
    pub handler: Handler,
    /// EA >= 0x80000000 (the handler took the `swapper_pg_dir` path).
    pub kernel: bool,
    pub instructions: u32,
    pub cycles: u64,
    pub icache_misses: u32,
    pub dcache_misses: u32,
    /// Cycles spent waiting for I-cache and D-cache misses (part of `cycles`).
    pub cache_stall_cycles: u64,
    pub pte_stores: u32,
    pub result: Reload,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head8xxError {
    /// A DataTLBError for an address that has no entry (the caller got the exception wrong).
    NoFaultingEntry(u32),
    Tlb(String),
}

impl fmt::Display for Head8xxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Head8xxError::NoFaultingEntry(ea) => {
                write!(f, "DataTLBError at {ea:#010x} without a matching DTLB entry")
            }
            Head8xxError::Tlb(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Head8xxError {}

/// Run `h` for the effective address `ea`: fetch each executed instruction through the I-cache,
/// do its loads and stores through the D-cache (physical, translation off), walk the tables,
/// update the PTE as the version does, and write the TLB entry as `Mx_RPN` does.
pub fn handle(
    cfg: &Head8xxConfig,
    cpu: &mut Cpu8xx<'_>,
    h: Handler,
    ea: u32,
) -> Result<MissEvents, Head8xxError> {
    let c = &cfg.costs;
    let kernel = ea >= KERNEL_SPACE;
    let pgd = if kernel { cpu.swapper_pgd } else { cpu.user_pgd };
    let mut ev = MissEvents {
        handler: h,
        kernel,
        instructions: 0,
        cycles: c.exception_entry_cycles as u64,
        icache_misses: 0,
        dcache_misses: 0,
        cache_stall_cycles: 0,
        pte_stores: 0,
        result: Reload::PageFault,
    };
    let ihit = cpu.icache.spec().hit_cycles;
    let dhit = cpu.dcache.spec().hit_cycles;
    let (mut l1, mut pte_addr, mut pte_val) = (0u32, 0u32, 0u32);
    let faulting_slot = if h == Handler::DataTlbError {
        Some(cpu.mmu.dtlb.probe(ea, cpu.mmu.casid).ok_or(Head8xxError::NoFaultingEntry(ea))?)
    } else {
        None
    };
    let linear_path = takes_linear(cfg, h, ea).then(|| linear(h)).flatten();
    let lin = linear_path.into_iter().flat_map(move |(table, tail, tail_addr)| {
        table.iter().enumerate().map(move |(n, x)| {
            let at = if n < tail { h.vector() + 4 * n as u32 } else { tail_addr + 4 * (n - tail) as u32 };
            (at, x)
        })
    });
    let walk = linear_path.is_none().then(|| path(cfg.version, h, cfg.cpu6, kernel)).into_iter().flatten();
    let insns = lin.chain(walk);
    for (addr, x) in insns {
        ev.instructions += 1;
        let f = cpu.icache.read(addr as u64);
        if !f.hit {
            ev.icache_misses += 1;
            let stall = (f.cycles - ihit) as u64;
            ev.cycles += stall;
            ev.cache_stall_cycles += stall;
        }
        let data = |ev: &mut MissEvents, acc: crate::hw::ppc8xx::cache::CacheAccess| {
            ev.cycles += acc.cycles as u64;
            if !acc.hit {
                ev.dcache_misses += 1;
            }
            ev.cache_stall_cycles += acc.cycles.saturating_sub(dhit) as u64;
        };
        match x.op {
            Op::Alu => ev.cycles += c.alu_cycles as u64,
            Op::Mfspr => ev.cycles += c.mfspr_cycles as u64,
            Op::Mtspr | Op::MtsprRpn => ev.cycles += c.mtspr_cycles as u64,
            Op::BranchUser => {
                ev.cycles += c.alu_cycles as u64 + if kernel { 0 } else { c.taken_branch_cycles as u64 };
            }
            Op::BranchBail => ev.cycles += c.alu_cycles as u64,
            Op::BranchTaken => ev.cycles += c.alu_cycles as u64 + c.taken_branch_cycles as u64,
            Op::StoreScratch(off) => data(&mut ev, cpu.dcache.write(off as u64, cfg.dcache_policy)),
            Op::LoadScratch(off) => data(&mut ev, cpu.dcache.read(off as u64)),
            Op::LoadL1 => {
                let a = PageTables8xx::l1_addr(pgd, ea);
                data(&mut ev, cpu.dcache.read(a as u64));
                l1 = cpu.tables.read(a);
                if l1 == 0 {
                    // beq 2f: restore and branch to the page-fault path (2.6's ITLB handler instead
                    // loads an invalid entry that faults at once; the outcome is the same).
                    ev.cycles += c.taken_branch_cycles as u64 + 4 * c.alu_cycles as u64 + c.rfi_cycles as u64;
                    return Ok(ev);
                }
            }
            Op::LoadPte => {
                pte_addr = PageTables8xx::pte_addr(l1, ea);
                data(&mut ev, cpu.dcache.read(pte_addr as u64));
                pte_val = cpu.tables.read(pte_addr);
                let bail =
                    pte_val & pte::PRESENT == 0 || (h == Handler::DataTlbError && pte_val & pte::RW == 0);
                if bail {
                    ev.cycles += c.taken_branch_cycles as u64 + 4 * c.alu_cycles as u64 + c.rfi_cycles as u64;
                    return Ok(ev);
                }
            }
            Op::StorePte => {
                pte_val |= match h {
                    Handler::DataTlbError => pte::DIRTY | pte::ACCESSED | pte::HWWRITE,
                    _ => pte::ACCESSED,
                };
                cpu.tables.write(pte_addr, pte_val);
                ev.pte_stores += 1;
                data(&mut ev, cpu.dcache.write(pte_addr as u64, cfg.dcache_policy));
            }
            Op::Rfi => ev.cycles += c.rfi_cycles as u64,
        }
        if x.op == Op::MtsprRpn && linear_path.is_some() {
            // v4.14: `rlwinm r10,r10,0,0x0f800000` then `ori` SHARED | DIRTY | PRESENT: an 8 MB
            // entry at the EA's 8 MB page, physical = EA - KERNELBASE, changed (no DTLB error).
            let side = if h == Handler::InstructionTlbMiss { Side::Instruction } else { Side::Data };
            let entry = TlbEntry8xx {
                epn: ea & PageSize8xx::Size8M.epn_mask(),
                rpn: ea & 0x0f80_0000,
                size: PageSize8xx::Size8M,
                asid: cpu.mmu.casid,
                shared: true,
                changed: true,
                cache_inhibit: false,
            };
            let slot = cpu.mmu.tlb(side).reload(entry).map_err(|e| Head8xxError::Tlb(e.to_string()))?;
            ev.result = Reload::Loaded { slot: slot as u8 };
        } else if x.op == Op::MtsprRpn {
            let entry = TlbEntry8xx {
                epn: ea & PageSize8xx::Size4K.epn_mask(),
                rpn: pte_val & !0xfff,
                size: PageSize8xx::Size4K,
                asid: cpu.mmu.casid,
                shared: pte_val & pte::SHARED != 0,
                changed: pte_val & pte::HWWRITE != 0,
                cache_inhibit: pte_val & pte::NO_CACHE != 0,
            };
            let side = if h == Handler::InstructionTlbMiss { Side::Instruction } else { Side::Data };
            let slot = match faulting_slot {
                // Assumption: on a TLB error the index points at the entry that faulted, so the
                // reload replaces it rather than adding a duplicate (the manuals read here do
                // not say).
                Some(s) => {
                    cpu.mmu.dtlb.rewrite(s, entry).map_err(|e| Head8xxError::Tlb(e.to_string()))?;
                    s
                }
                None => cpu.mmu.tlb(side).reload(entry).map_err(|e| Head8xxError::Tlb(e.to_string()))?,
            };
            ev.result = Reload::Loaded { slot: slot as u8 };
        }
    }
    Ok(ev)
}

/// Translate one access and, on a miss or a changed fault, run the handler: what a
/// fetch/load/store costs in translation. Returns `None` on a TLB hit.
pub fn translate(
    cfg: &Head8xxConfig,
    cpu: &mut Cpu8xx<'_>,
    side: Side,
    ea: u32,
    store: bool,
) -> Result<Option<MissEvents>, Head8xxError> {
    let casid = cpu.mmu.casid;
    let r = cpu.mmu.tlb(side).lookup(ea, casid, store && side == Side::Data);
    let h = match (r, side) {
        (Lookup8xx::Hit { .. }, _) => return Ok(None),
        (Lookup8xx::Miss, Side::Instruction) => Handler::InstructionTlbMiss,
        (Lookup8xx::Miss, Side::Data) => Handler::DataTlbMiss,
        (Lookup8xx::ChangedFault { .. }, _) => Handler::DataTlbError,
    };
    let ev = handle(cfg, cpu, h, ea)?;
    // A store that missed reloads first; if the loaded entry lacks C the store then takes the
    // error exception too (two exceptions for the first write to a clean page).
    if h == Handler::DataTlbMiss && store {
        if let Lookup8xx::ChangedFault { .. } = cpu.mmu.dtlb.lookup(ea, casid, true) {
            let e2 = handle(cfg, cpu, Handler::DataTlbError, ea)?;
            return Ok(Some(MissEvents {
                instructions: ev.instructions + e2.instructions,
                cycles: ev.cycles + e2.cycles,
                icache_misses: ev.icache_misses + e2.icache_misses,
                dcache_misses: ev.dcache_misses + e2.dcache_misses,
                cache_stall_cycles: ev.cache_stall_cycles + e2.cache_stall_cycles,
                pte_stores: ev.pte_stores + e2.pte_stores,
                result: e2.result,
                ..ev
            }));
        }
    }
    Ok(Some(ev))
}

/// Boot-time MMU state (`initial_mmu` then `start_here`'s `tlbia`), and the bug of seed 003.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinConfig {
    /// `CONFIG_PIN_TLB` (2.6.12-rc2): ITLB 28 = 8 MB at KERNELBASE; DTLB 28 = the same,
    /// 29 = the 8 MB IMMR window (cache-inhibited). DTLB 30/31 are reserved but translate nothing
    /// (see [`boot`]), so lowmem data above KERNELBASE + 8 MB uses 4 KB entries in slots 0-27.
    /// 2.4.0 has no such option; setting it for 2.4 is a what-if.
    pub pin_tlb: bool,
    /// The 2.6 bug Marcelo found (MT05: "a bug causing the first 8Mbyte entry to be
    /// invalidated"): some kernel path issued `tlbie` for an address inside the first 8 MB of
    /// KERNELBASE, and `tlbie` hits reserved entries too (885RM §8.10.4), so the pinned text
    /// entry was lost and kernel text was mapped by 4 KB PTEs again. The thread does not name the
    /// path; the model issues one `tlbie(KERNELBASE + lost_at)` after boot.
    pub lose_pinned: bool,
    /// Offset inside the first 8 MB that the buggy `tlbie` names.
    pub lost_at: u32,
    /// IMMR base (8 MB aligned) for the pinned DTLB entry 29.
    pub immr: u32,
}

/// Set up the TLBs as boot leaves them. Follows 2.6.12-rc2 `initial_mmu` for the pins. Its
/// "two more 8M kernel data pages" (DTLB 30/31) write `MD_RPN` from the register holding the
/// *EPN* value (KERNELBASE + 8 MB | `MD_EVALID`), not from the RPN it computed in r11: that
/// value has the RPN's V bit (bit 31, 0x1; `MI_BOOTINIT` = 0x1fd sets it, `MD_EVALID` = 0x200 is
/// another bit) and the subpage-valid bits clear, and names physical 0xc0800000, which is not
/// RAM. Such an entry cannot translate a kernel access (885RM §8.9: a page valid bit of zero
/// is a DTLB error, not a translation); since the seed's pinned kernel ran, its data above
/// KERNELBASE + 8 MB was translated through the page tables, which the model does by leaving
/// the two slots empty (still out of the counter's reach: RSV4D). Later trees write r11 there
/// (arch/powerpc/kernel/head_8xx.S of 3.x). IMMR (DTLB 29) is not on dd's paths.
pub fn boot(mmu: &mut Mmu8xx, pin: &PinConfig) {
    mmu.tlbia();
    let big = |epn: u32, rpn: u32, ci: bool| TlbEntry8xx {
        epn,
        rpn: rpn & PageSize8xx::Size8M.epn_mask(),
        size: PageSize8xx::Size8M,
        asid: 0,
        shared: true,
        changed: true,
        cache_inhibit: ci,
    };
    if pin.pin_tlb {
        // MI_CTR = RSV4I | index 28; MD_CTR = RSV4D | index 28, then 29 by `addi 0x100`; the
        // entries written for 30/31 carry V = 0 (above) and are not loaded.
        mmu.itlb.load_reserved(28, big(KERNELBASE, 0, false)).expect("valid pinned entry");
        mmu.dtlb.load_reserved(28, big(KERNELBASE, 0, false)).expect("valid pinned entry");
        mmu.dtlb.load_reserved(29, big(pin.immr, pin.immr, true)).expect("valid IMMR entry");
    }
    // start_here: tlbia drops the unpinned boot entries and resets the counters.
    mmu.tlbia();
    if pin.lose_pinned {
        mmu.tlbie(KERNELBASE + pin.lost_at);
    }
}

#[cfg(test)]
mod tests;
