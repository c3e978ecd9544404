//! The MPC8xx (PowerQUICC: 860, 855T, 885...) translation lookaside buffers.
//!
//! The 8xx has two of them, one for instruction fetches (ITLB) and one for data (DTLB), each
//! 32 entries, fully associative, reloaded by software: a miss raises the ITLB-miss (0x1100) or
//! DTLB-miss (0x1200) exception, whose handler (Linux `arch/ppc/kernel/head_8xx.S`, modelled in
//! `linux/arch/ppc/kernel/head_8xx.rs`) walks the page tables and writes `MI_RPN` / `MD_RPN`; that
//! write loads the entry the replacement counter points at.
//!
//! Hardware rules this file follows, with their sources (MPC885 Reference Manual = "885RM",
//! MPC860 User's Manual = "860UM", MPC801 User's Manual = "801UM";
//! docs/references/seeds-001-003-004.md#mpc8xx-mmu summarises them):
//! - Replacement is a counter, not LRU: the entry loaded on a reload is the one indexed by
//!   `MI_CTR[ITLB_INDX]` / `MD_CTR[DTLB_INDX]`, and that index *decrements* after each reload
//!   (885RM §8.10.2; 801UM §11.8.2). `tlbia` clears the counters to 0 (same sections), so the
//!   first reload after a `tlbia` lands in entry 0 and the next in entry 31 (or 27, see below).
//!   The counter does not look for invalid entries first: it is a plain round-robin over the slots.
//! - `MI_CTR[RSV4I]` / `MD_CTR[RSV4D]` restrict the counter to entries 0-27, so entries 28-31
//!   keep what was loaded into them ("Four entries in each TLB can be made unavailable to the
//!   replacement algorithm", 885RM §8.10.2). Loading them: clear RSV4x, set the index to 28..31,
//!   write the entry, set RSV4x again (885RM §8.10.3) — Linux 2.6 `initial_mmu` writes the index
//!   with RSV4x already set, which this model allows too ([`Tlb8xx::set_ctr`]).
//! - `tlbie` invalidates every entry that matches the effective address, *reserved ones
//!   included*; it compares EA[0-21] (the 4 KB page number; for larger pages the low bits of the
//!   EPN are ignored, so any address inside an 8 MB entry hits it) and ignores the ASID, so several
//!   entries with different ASIDs can go at once (885RM §8.10.4; 801UM §11.8.3).
//! - `tlbia` invalidates every entry of both TLBs except, when RSV4x is set, the four reserved
//!   ones (801UM §11.8.3; 885RM §8.10.4), and resets the counter.
//! - Page sizes 4 KB, 16 KB (the "small page size" bit in a 4 KB-class level-2 descriptor),
//!   512 KB and 8 MB (801UM Table 11-5 SPS bit; Linux `MD_PS4K_16K`/`MD_PS512K`/`MD_PS8MEG`).
//! - Entries are tagged with a 4-bit ASID compared against `M_CASID`, unless the entry's SH
//!   (shared) bit is set, which disables the comparison (801UM Table 11-5, bit 29).
//! - A store that hits a DTLB entry whose changed (C) bit is clear raises the DTLB-error
//!   exception (0x1400) instead of completing; Linux sets C through `_PAGE_HWWRITE` there
//!   (head_8xx.S `DataTLBError`, 2.4.0 and 2.6.12-rc2).
//!
//! One [`Tlb8xx`] is one of the two TLBs; a CPU owns two. Everything is fixed-size and
//! allocation-free: lookups scan 32 entries, as the CAM does in one cycle.

use std::fmt;

/// Entries per TLB on every 8xx part with the 32-entry MMU (MPC860/855T/885; the 801/823 have 8).
pub const ENTRIES: usize = 32;
/// First reserved entry: with RSV4x set the counter selects among 0..=27 only.
pub const FIRST_RESERVED: usize = 28;
/// Width of `M_CASID`: 16 address-space identifiers.
pub const ASIDS: u8 = 16;
/// Ways of the simulator's lookup memo ([`Tlb8xx::hit`]).
const MEMO: usize = 16;

/// Page sizes an 8xx TLB entry can map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageSize8xx {
    Size4K,
    Size16K,
    Size512K,
    Size8M,
}

impl PageSize8xx {
    pub const ALL: [PageSize8xx; 4] =
        [PageSize8xx::Size4K, PageSize8xx::Size16K, PageSize8xx::Size512K, PageSize8xx::Size8M];

    pub const fn shift(self) -> u32 {
        match self {
            PageSize8xx::Size4K => 12,
            PageSize8xx::Size16K => 14,
            PageSize8xx::Size512K => 19,
            PageSize8xx::Size8M => 23,
        }
    }

    pub const fn bytes(self) -> u32 {
        1 << self.shift()
    }

    /// Mask that keeps the effective page number of an address in a page of this size.
    pub const fn epn_mask(self) -> u32 {
        !(self.bytes() - 1)
    }

    pub fn name(self) -> &'static str {
        match self {
            PageSize8xx::Size4K => "4k",
            PageSize8xx::Size16K => "16k",
            PageSize8xx::Size512K => "512k",
            PageSize8xx::Size8M => "8m",
        }
    }

    /// Parses `4k`, `16k`, `512k`, `8m`.
    pub fn parse(s: &str) -> Option<PageSize8xx> {
        PageSize8xx::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl fmt::Display for PageSize8xx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which of the two TLBs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// ITLB (`MI_*` registers).
    Instruction,
    /// DTLB (`MD_*` registers).
    Data,
}

/// What an entry maps: written by the reload handler's `MI_RPN` / `MD_RPN` store (or by boot
/// code loading a pinned entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbEntry8xx {
    /// Effective address of the page (aligned to `size`).
    pub epn: u32,
    /// Physical address of the page (aligned to `size`).
    pub rpn: u32,
    pub size: PageSize8xx,
    /// The entry's ASID (`M_CASID` when it was loaded); ignored when `shared`.
    pub asid: u8,
    /// SH bit: match in every address space.
    pub shared: bool,
    /// C bit (DTLB): without it a store raises the DTLB-error exception.
    pub changed: bool,
    /// Cache-inhibited (the IMMR window).
    pub cache_inhibit: bool,
}

impl TlbEntry8xx {
    /// A 4 KB entry mapping `ea`'s page to `pa`'s page.
    pub fn page_4k(ea: u32, pa: u32, asid: u8, shared: bool, changed: bool) -> TlbEntry8xx {
        let m = PageSize8xx::Size4K.epn_mask();
        TlbEntry8xx {
            epn: ea & m,
            rpn: pa & m,
            size: PageSize8xx::Size4K,
            asid,
            shared,
            changed,
            cache_inhibit: false,
        }
    }

    /// Whether this entry translates `ea` in address space `casid`.
    #[inline]
    pub fn matches(&self, ea: u32, casid: u8) -> bool {
        (ea & self.size.epn_mask()) == self.epn && (self.shared || self.asid == casid)
    }

    /// Whether `tlbie ea` hits it: EA[0-21] against the EPN, low EPN bits ignored for large
    /// pages, ASID ignored (885RM §8.10.4).
    #[inline]
    pub fn tlbie_matches(&self, ea: u32) -> bool {
        (ea & self.size.epn_mask()) == self.epn
    }

    /// Physical address of `ea` through this entry.
    #[inline]
    pub fn translate(&self, ea: u32) -> u32 {
        self.rpn | (ea & !self.size.epn_mask())
    }
}

/// Outcome of one translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup8xx {
    /// Translated; `slot` is the entry that hit.
    Hit { slot: u8, pa: u32 },
    /// No entry: the ITLB-miss / DTLB-miss exception.
    Miss,
    /// A store hit an entry without the changed bit: the DTLB-error exception.
    ChangedFault { slot: u8 },
}

/// Counters, as every component reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tlb8xxStats {
    pub hits: u64,
    pub misses: u64,
    pub changed_faults: u64,
    /// Entries written by a reload (`Mx_RPN` write).
    pub reloads: u64,
    /// Reloads that overwrote a valid entry.
    pub evictions: u64,
    pub tlbie: u64,
    /// Entries `tlbie` invalidated (reserved ones included).
    pub tlbie_invalidated: u64,
    /// Reserved entries (28-31) `tlbie` invalidated.
    pub tlbie_invalidated_reserved: u64,
    pub tlbia: u64,
}

/// Error from a register write the hardware would not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tlb8xxError {
    IndexOutOfRange(u8),
    AsidOutOfRange(u8),
    Misaligned { epn: u32, size: PageSize8xx },
}

impl fmt::Display for Tlb8xxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tlb8xxError::IndexOutOfRange(i) => write!(f, "TLB index {i} out of range (0..=31)"),
            Tlb8xxError::AsidOutOfRange(a) => write!(f, "ASID {a} out of range (0..=15)"),
            Tlb8xxError::Misaligned { epn, size } => {
                write!(f, "EPN {epn:#010x} is not aligned to its page size {size}")
            }
        }
    }
}

impl std::error::Error for Tlb8xxError {}

/// One 32-entry 8xx TLB with its `Mx_CTR` replacement counter and reservation bit.
#[derive(Debug, Clone)]
pub struct Tlb8xx {
    side: Side,
    slots: [Option<TlbEntry8xx>; ENTRIES],
    /// `xTLB_INDX`: the slot the next reload writes.
    index: u8,
    /// `RSV4I` / `RSV4D`.
    reserve4: bool,
    stats: Tlb8xxStats,
    /// The simulator's memo of recent [`Self::hit`] scans, direct-mapped by 4 KB page number:
    /// (page, ASID, slot of the first matching entry). Every entry size is a multiple of 4 KB and
    /// aligned, so any address of that page in that ASID has the same first match until a slot
    /// changes; every write to `slots` clears it. Several ways because a copy alternates between
    /// its source and destination pages. Not hardware state.
    memo: [Option<(u32, u8, u8)>; MEMO],
}

impl Tlb8xx {
    /// An empty TLB, counter 0, nothing reserved (the state after `tlbia` with `Mx_CTR` = 0).
    pub fn new(side: Side) -> Tlb8xx {
        Tlb8xx {
            side,
            slots: [None; ENTRIES],
            index: 0,
            reserve4: false,
            stats: Tlb8xxStats::default(),
            memo: [None; MEMO],
        }
    }

    pub fn side(&self) -> Side {
        self.side
    }

    pub fn stats(&self) -> &Tlb8xxStats {
        &self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = Tlb8xxStats::default();
    }

    /// The current `xTLB_INDX`.
    pub fn index(&self) -> u8 {
        self.index
    }

    pub fn reserve4(&self) -> bool {
        self.reserve4
    }

    /// `mtspr Mx_CTR`: the reservation bit and the replacement index.
    pub fn set_ctr(&mut self, reserve4: bool, index: u8) -> Result<(), Tlb8xxError> {
        if index as usize >= ENTRIES {
            return Err(Tlb8xxError::IndexOutOfRange(index));
        }
        self.reserve4 = reserve4;
        self.index = index;
        Ok(())
    }

    pub fn slot(&self, slot: usize) -> Option<&TlbEntry8xx> {
        self.slots.get(slot).and_then(|s| s.as_ref())
    }

    /// Valid entries with their slot numbers.
    pub fn entries(&self) -> impl Iterator<Item = (usize, &TlbEntry8xx)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|e| (i, e)))
    }

    pub fn valid_count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// The slot whose entry translates `ea` in `casid`, without touching the counters (what an
    /// `MI_CAM` dump would show; used by tests and by reports).
    pub fn probe(&self, ea: u32, casid: u8) -> Option<usize> {
        self.slots.iter().position(|s| s.is_some_and(|e| e.matches(ea, casid)))
    }

    /// The physical address if `ea` hits (for a store: an entry with C set), counted as a hit;
    /// `None` leaves the miss or changed fault to [`Self::lookup`] (the simulator's fast path).
    #[inline]
    pub fn hit(&mut self, ea: u32, casid: u8, store: bool) -> Option<u32> {
        let page = ea >> 12;
        let way = page as usize % MEMO;
        let slot = match self.memo[way] {
            Some((p, a, slot)) if p == page && a == casid => slot as usize,
            _ => {
                let slot = self.slots.iter().position(|s| s.is_some_and(|e| e.matches(ea, casid)))?;
                self.memo[way] = Some((page, casid, slot as u8));
                slot
            }
        };
        let e = self.slots[slot].as_ref().expect("the memo names a valid slot");
        if store && !e.changed {
            return None;
        }
        let pa = e.translate(ea);
        self.stats.hits += 1;
        Some(pa)
    }

    /// Translate `ea` in address space `casid`; `store` for a data store (checks the C bit).
    /// Counts a hit, a miss or a changed fault.
    #[inline]
    pub fn lookup(&mut self, ea: u32, casid: u8, store: bool) -> Lookup8xx {
        for (i, s) in self.slots.iter().enumerate() {
            if let Some(e) = s {
                if e.matches(ea, casid) {
                    if store && !e.changed {
                        self.stats.changed_faults += 1;
                        return Lookup8xx::ChangedFault { slot: i as u8 };
                    }
                    self.stats.hits += 1;
                    return Lookup8xx::Hit { slot: i as u8, pa: e.translate(ea) };
                }
            }
        }
        self.stats.misses += 1;
        Lookup8xx::Miss
    }

    /// The `Mx_RPN` write at the end of a reload: the entry goes into the slot the counter points
    /// at, then the counter decrements, wrapping within 0..=27 when RSV4x is set and 0..=31
    /// otherwise (885RM §8.10.2). Returns the slot written.
    pub fn reload(&mut self, entry: TlbEntry8xx) -> Result<usize, Tlb8xxError> {
        check(&entry)?;
        let slot = self.index as usize;
        if self.slots[slot].is_some() {
            self.stats.evictions += 1;
        }
        self.slots[slot] = Some(entry);
        self.forget(slot, &entry);
        self.stats.reloads += 1;
        let top = if self.reserve4 { FIRST_RESERVED - 1 } else { ENTRIES - 1 } as u8;
        self.index = if self.index == 0 { top } else { self.index - 1 };
        Ok(slot)
    }

    /// Rewrite the entry in `slot` in place (the DTLB-error handler reloads the entry that
    /// faulted, with C now set: the write goes to the matching entry's slot).
    pub fn rewrite(&mut self, slot: usize, entry: TlbEntry8xx) -> Result<(), Tlb8xxError> {
        check(&entry)?;
        if slot >= ENTRIES {
            return Err(Tlb8xxError::IndexOutOfRange(slot as u8));
        }
        self.slots[slot] = Some(entry);
        self.forget(slot, &entry);
        Ok(())
    }

    /// Drops the memo ways a write of `entry` into `slot` may change: those whose first match was
    /// that slot, and those the new entry matches (it may now come first). The others keep their
    /// first match.
    fn forget(&mut self, slot: usize, entry: &TlbEntry8xx) {
        for m in &mut self.memo {
            if m.is_some_and(|(page, asid, s)| s as usize == slot || entry.matches(page << 12, asid)) {
                *m = None;
            }
        }
    }

    /// Load a reserved (pinned) entry the way 885RM §8.10.3 describes and Linux 2.6
    /// `initial_mmu` does (`CONFIG_PIN_TLB`): point the counter at `slot`, write, and leave
    /// RSV4x set. The counter afterwards is whatever the decrement left; boot code follows with a
    /// `tlbia` (2.6.12-rc2 `start_here`), which resets it and spares the reserved slots.
    pub fn load_reserved(&mut self, slot: u8, entry: TlbEntry8xx) -> Result<(), Tlb8xxError> {
        if !(FIRST_RESERVED as u8..ENTRIES as u8).contains(&slot) {
            return Err(Tlb8xxError::IndexOutOfRange(slot));
        }
        self.set_ctr(true, slot)?;
        self.reload(entry)?;
        Ok(())
    }

    /// `tlbie ea`: invalidate every entry whose page contains `ea`, reserved entries included,
    /// whatever its ASID. Returns how many entries went.
    pub fn tlbie(&mut self, ea: u32) -> usize {
        self.stats.tlbie += 1;
        self.memo = [None; MEMO];
        let mut n = 0;
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.is_some_and(|e| e.tlbie_matches(ea)) {
                *s = None;
                n += 1;
                if i >= FIRST_RESERVED {
                    self.stats.tlbie_invalidated_reserved += 1;
                }
            }
        }
        self.stats.tlbie_invalidated += n as u64;
        n
    }

    /// `tlbia` (this TLB's half of it): invalidate everything except the reserved entries when
    /// RSV4x is set; reset the counter to 0.
    pub fn tlbia(&mut self) {
        self.stats.tlbia += 1;
        self.memo = [None; MEMO];
        let keep = if self.reserve4 { FIRST_RESERVED } else { ENTRIES };
        for s in &mut self.slots[..keep] {
            *s = None;
        }
        self.index = 0;
    }
}

fn check(e: &TlbEntry8xx) -> Result<(), Tlb8xxError> {
    if e.asid >= ASIDS {
        return Err(Tlb8xxError::AsidOutOfRange(e.asid));
    }
    let low = !e.size.epn_mask();
    if e.epn & low != 0 || e.rpn & low != 0 {
        return Err(Tlb8xxError::Misaligned { epn: e.epn, size: e.size });
    }
    Ok(())
}

/// The pair a CPU has: ITLB and DTLB, plus `M_CASID`. `tlbia` acts on both, as the instruction
/// does on the 8xx (801UM §11.8.3: "invalidate all entries in both TLBs").
#[derive(Debug, Clone)]
pub struct Mmu8xx {
    pub itlb: Tlb8xx,
    pub dtlb: Tlb8xx,
    /// `M_CASID`: the current address space.
    pub casid: u8,
}

impl Default for Mmu8xx {
    fn default() -> Self {
        Mmu8xx::new()
    }
}

impl Mmu8xx {
    pub fn new() -> Mmu8xx {
        Mmu8xx { itlb: Tlb8xx::new(Side::Instruction), dtlb: Tlb8xx::new(Side::Data), casid: 0 }
    }

    pub fn tlb(&mut self, side: Side) -> &mut Tlb8xx {
        match side {
            Side::Instruction => &mut self.itlb,
            Side::Data => &mut self.dtlb,
        }
    }

    /// `tlbie`: one instruction, both TLBs (the EA may be cached in either).
    pub fn tlbie(&mut self, ea: u32) -> usize {
        self.itlb.tlbie(ea) + self.dtlb.tlbie(ea)
    }

    pub fn tlbia(&mut self) {
        self.itlb.tlbia();
        self.dtlb.tlbia();
    }
}

#[cfg(test)]
mod tests;
