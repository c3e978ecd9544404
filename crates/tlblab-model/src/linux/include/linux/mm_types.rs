//! Address spaces (`struct mm_struct`): VMAs with their page tables, `mm_cpumask`, and the
//! x86 `mm->context` fields the flush protocol uses (`ctx_id`, `tlb_gen` on its own contended
//! cache line). Pages are 4 KiB; each VMA keeps a flat PTE array (the model's page table: one
//! index per page, no hashing on the hot path).

use crate::hw::coherence::CacheLine;
use crate::hw::cpumask::CpuMask;
use crate::linux::kernel::locking::rwsem::RwSem;

pub type MmId = u32;
pub type FileId = u32;

pub const PAGE_SHIFT: u32 = 12;
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
/// x86-64's `HPAGE_SIZE` (= `PMD_SIZE`): what one PMD entry maps.
pub const HPAGE_SIZE: u64 = PAGE_SIZE << super::mmzone::HPAGE_PMD_ORDER;
/// Top-down mmap starts below this address (a typical x86-64 `mmap_base`).
const MMAP_TOP: u64 = 0x7f00_0000_0000;

/// What backs a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// `MAP_ANONYMOUS | MAP_PRIVATE`.
    Anon,
    /// `MAP_PRIVATE` of a file: reads map page-cache pages read-only, writes copy (COW).
    FilePrivate(FileId),
    /// `MAP_SHARED` of a file: page-cache pages are mapped directly.
    FileShared(FileId),
}

/// A page-table entry. `present == false` is `pte_none`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pte {
    pub pfn: u64,
    pub present: bool,
    pub writable: bool,
    /// Written through since it was installed (`pte_dirty`): a write fault installs it dirty
    /// (`pte_mkdirty`), and only write faults make a PTE writable in this model.
    pub dirty: bool,
}

impl Pte {
    const PRESENT: u64 = 1 << 63;
    const WRITABLE: u64 = 1 << 62;
    const DIRTY: u64 = 1 << 61;

    /// The 8-byte form a VMA stores (a zero word is `pte_none`, so an untouched page table
    /// costs no host memory: the zeroed allocation stays unbacked until written).
    fn pack(self) -> u64 {
        assert!(self.pfn < Pte::DIRTY, "pfn {} too large for a PTE", self.pfn);
        self.pfn
            | if self.present { Pte::PRESENT } else { 0 }
            | if self.writable { Pte::WRITABLE } else { 0 }
            | if self.dirty { Pte::DIRTY } else { 0 }
    }

    fn unpack(v: u64) -> Pte {
        Pte {
            pfn: v & (Pte::DIRTY - 1),
            present: v & Pte::PRESENT != 0,
            writable: v & Pte::WRITABLE != 0,
            dirty: v & Pte::DIRTY != 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub backing: Backing,
    pub writable: bool,
    /// Packed PTEs ([`Pte::pack`]).
    ptes: Vec<u64>,
}

impl Vma {
    /// Host bytes per page mapped: its packed PTE.
    pub const HOST_BYTES_PER_PAGE: u64 = std::mem::size_of::<u64>() as u64;

    pub fn pages(&self) -> u64 {
        (self.end - self.start) >> PAGE_SHIFT
    }

    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }

    /// The file page index backing `addr` (mappings start at file offset 0 here).
    pub fn file_index(&self, addr: u64) -> u64 {
        (addr - self.start) >> PAGE_SHIFT
    }

    fn slot(&self, addr: u64) -> usize {
        ((addr - self.start) >> PAGE_SHIFT) as usize
    }
}

#[derive(Debug, Clone)]
pub struct Mm {
    pub id: MmId,
    /// `mm->context.ctx_id`: unique for the life of the simulation (never reused).
    pub ctx_id: u64,
    /// `mm->context.tlb_gen`: bumped by every flush request.
    pub tlb_gen: u64,
    /// The cache line holding `tlb_gen`.
    pub tlb_gen_line: CacheLine,
    /// `mm_cpumask(mm)`.
    pub cpumask: CpuMask,
    /// The cache line holding `mm_cpumask` (one line up to 512 CPUs): a switch's set or clear is
    /// an atomic RMW on it, a flush initiator's scan a read (charged with `cpumask_line = on`).
    pub cpumask_line: CacheLine,
    /// `mm->context.next_trim_cpumask` (v6.14, 6db2526c1d69): the jiffy after which a flush
    /// trims the mask; `jiffies + HZ` at creation. It shares `tlb_gen`'s line, which the
    /// initiator has just written: its accesses are hits, not charged.
    pub next_trim_cpumask: u64,
    /// Every CPU that ever loaded this mm: only their TLBs can hold its translations (the
    /// oracle looks nowhere else).
    pub ever_loaded: CpuMask,
    /// `mm->mmap_lock`.
    /// `mm->tlb_flush_pending`: threads between `tlb_gather_mmu` and the end of
    /// `tlb_finish_mmu` (v4.14+); more than one means their batched flushes are nested.
    pub tlb_flush_pending: u32,
    pub mmap_lock: RwSem,
    vmas: Vec<Vma>,
}

impl Mm {
    pub fn new(id: MmId, ctx_id: u64) -> Mm {
        Mm {
            id,
            ctx_id,
            tlb_gen: 1,
            tlb_gen_line: CacheLine::new(),
            cpumask: CpuMask::new(),
            cpumask_line: CacheLine::new(),
            next_trim_cpumask: 0,
            ever_loaded: CpuMask::new(),
            mmap_lock: RwSem::default(),
            tlb_flush_pending: 0,
            vmas: Vec::new(),
        }
    }

    pub fn vmas(&self) -> &[Vma] {
        &self.vmas
    }

    /// `mm->total_vm`: pages mapped (what the 3.x flush heuristic compared against).
    pub fn total_vm(&self) -> u64 {
        self.vmas.iter().map(Vma::pages).sum()
    }

    /// Maps `len` bytes (rounded up to pages) top-down in the highest gap that fits.
    pub fn mmap(&mut self, len: u64, backing: Backing, writable: bool) -> u64 {
        let len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        assert!(len > 0, "mmap of zero length");
        let mut start = MMAP_TOP - len;
        // VMAs are sorted by start; walk down from the top until the candidate fits.
        for v in self.vmas.iter().rev() {
            if v.start < start + len && start < v.end {
                start = v.start - len;
            }
        }
        let vma =
            Vma { start, end: start + len, backing, writable, ptes: vec![0; (len >> PAGE_SHIFT) as usize] };
        let at = self.vmas.partition_point(|v| v.start < start);
        self.vmas.insert(at, vma);
        start
    }

    /// Removes the VMA starting at `start` (whole-VMA munmap) and returns it, PTEs included, so
    /// the caller can zap and gather them.
    pub fn remove_vma(&mut self, start: u64) -> Option<Vma> {
        let i = self.vmas.iter().position(|v| v.start == start)?;
        Some(self.vmas.remove(i))
    }

    pub fn vma(&self, addr: u64) -> Option<&Vma> {
        let i = self.vmas.partition_point(|v| v.end <= addr);
        self.vmas.get(i).filter(|v| v.contains(addr))
    }

    pub fn pte(&self, addr: u64) -> Option<Pte> {
        self.vma(addr).map(|v| Pte::unpack(v.ptes[v.slot(addr)]))
    }

    /// Sets the PTE of `addr`; panics if no VMA covers it (a kernel-model bug).
    pub fn set_pte(&mut self, addr: u64, pte: Pte) {
        let i = self.vmas.partition_point(|v| v.end <= addr);
        let v = self.vmas.get_mut(i).filter(|v| v.contains(addr)).expect("set_pte outside any VMA");
        let s = v.slot(addr);
        v.ptes[s] = pte.pack();
    }

    /// Clears every present PTE in `[start, end)` (`zap_pte_range`) and returns `(addr, old)`.
    pub fn zap_range(&mut self, start: u64, end: u64) -> Vec<(u64, Pte)> {
        let mut out = Vec::new();
        for v in self.vmas.iter_mut().filter(|v| v.start < end && start < v.end) {
            let (s, e) = (start.max(v.start), end.min(v.end));
            let mut a = s;
            while a < e {
                let slot = v.slot(a);
                let p = Pte::unpack(v.ptes[slot]);
                if p.present {
                    out.push((a, p));
                    v.ptes[slot] = 0;
                }
                a += PAGE_SIZE;
            }
        }
        out
    }
}

/// Zaps a removed VMA's page table: every present PTE, as `(addr, old)`.
pub fn zap_vma(v: &Vma) -> Vec<(u64, Pte)> {
    v.ptes
        .iter()
        .enumerate()
        .map(|(i, &p)| (i, Pte::unpack(p)))
        .filter(|(_, p)| p.present)
        .map(|(i, p)| (v.start + ((i as u64) << PAGE_SHIFT), p))
        .collect()
}

/// The knobs of the address-space paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MmKnobs {
    /// Faults and address-space system calls take `mmap_lock` (a sleeping rwsem with a
    /// contended count line). Off: no lock at all (an ablation, not a kernel).
    pub mmap_lock: bool,
    /// Free gathered pages before the flush completes. UNSAFE: exists so the oracle can be
    /// shown to catch it.
    pub free_before_flush: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmap_is_top_down_and_reuses_holes() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(128 << 20, Backing::Anon, true);
        let b = mm.mmap(1 << 20, Backing::Anon, true);
        assert_eq!(a, MMAP_TOP - (128 << 20));
        assert_eq!(b, a - (1 << 20));
        assert_eq!(mm.total_vm(), 32768 + 256);
        mm.remove_vma(a).unwrap();
        // The hole at the top is found again, as munmap-then-mmap loops rely on.
        assert_eq!(mm.mmap(128 << 20, Backing::Anon, true), a);
    }

    #[test]
    fn ptes_set_and_zap() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * PAGE_SIZE, Backing::Anon, true);
        assert_eq!(mm.pte(a), Some(Pte::default()));
        assert_eq!(mm.pte(a - 1), None);
        mm.set_pte(a + PAGE_SIZE, Pte { pfn: 7, present: true, writable: true, dirty: true });
        mm.set_pte(a + 3 * PAGE_SIZE, Pte { pfn: 9, present: true, writable: false, dirty: false });
        let z = mm.zap_range(a, a + 2 * PAGE_SIZE);
        assert_eq!(z, [(a + PAGE_SIZE, Pte { pfn: 7, present: true, writable: true, dirty: true })]);
        assert!(!mm.pte(a + PAGE_SIZE).unwrap().present);
        let v = mm.remove_vma(a).unwrap();
        assert_eq!(
            zap_vma(&v),
            [(a + 3 * PAGE_SIZE, Pte { pfn: 9, present: true, writable: false, dirty: false })]
        );
    }
}
