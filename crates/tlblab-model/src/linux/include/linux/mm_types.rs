//! Address spaces (`struct mm_struct`): VMAs with their page tables, `mm_cpumask`, and the
//! x86 `mm->context` fields the flush protocol uses (`ctx_id`, `tlb_gen` on its own contended
//! cache line). Pages are 4 KiB; each VMA keeps a flat PTE array (the model's page table: one
//! index per page, no hashing on the hot path). From v6.4 each VMA also has its own lock
//! (`vm_lock`, `vm_lock_seq`) and the mm an `mm_lock_seq` (docs/references/linux-6x.md#per-vma-locks).

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
pub(in crate::linux) const MMAP_TOP: u64 = 0x7f00_0000_0000;

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
    /// `vma->vm_pgoff`: the file page at `start`; for an anonymous mapping `start >> PAGE_SHIFT`
    /// (do_mmap), so address-adjacent anonymous VMAs are also offset-linear and may merge.
    pub pgoff: u64,
    /// `vma->anon_vma`, by identity: set by the VMA's first anonymous page (`anon_vma_prepare`,
    /// linux/mm/rmap.rs), shared by the halves of a split and taken over by a merge.
    pub anon_vma: Option<AnonVmaId>,
    /// `vma->vm_lock_seq` (v6.4): the `mm_lock_seq` of the `mmap_lock` write section that
    /// write-locked this VMA; `None` for the initial -1.
    pub vm_lock_seq: Option<u64>,
    /// `vma->vm_lock` (v6.4): a rw_semaphore in its own slab object, so its count word is a line
    /// of its own that every per-VMA fault does two atomic RMWs on.
    pub vm_lock: RwSem,
    /// Packed PTEs ([`Pte::pack`]).
    pub(in crate::linux) ptes: Vec<u64>,
}

/// Which `struct anon_vma` a VMA points to.
pub type AnonVmaId = u32;

/// Why `lock_vma_under_rcu` (v6.4 mm/memory.c) gave the fault back to `mmap_lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmaLockAbort {
    /// No VMA covers the address (a concurrent munmap removed it).
    NoVma,
    /// v6.4 handles only anonymous VMAs (file-backed ones from v6.7: `FaultLock::PerVmaFile`).
    NotAnonymous,
    /// `find_mergeable_anon_vma` would look at unlocked neighbours: the first write fault of a
    /// fresh anonymous VMA takes `mmap_lock`.
    NoAnonVma,
    /// `vma_start_read`: write-locked in the current `mmap_lock` write section
    /// (`vm_lock_seq == mm_lock_seq`).
    WriteLocked,
    /// `vma_start_read`: `down_read_trylock` failed (a writer holds or waits for `vm_lock`).
    Contended,
}

impl Vma {
    /// Whether a fault of this VMA may run under its lock. v6.4: anonymous VMAs that have an
    /// `anon_vma`. v6.7: file-backed ones too, but a COW fault (a store to a private file
    /// mapping) still needs the `anon_vma`, which only `mmap_lock` may create
    /// (`vmf_anon_prepare` retries; here the fault goes to `mmap_lock` at once).
    pub fn vma_lock_qualifies(&self, rule: FaultLock, write: bool) -> Result<(), VmaLockAbort> {
        match self.backing {
            Backing::Anon if self.anon_vma.is_none() => Err(VmaLockAbort::NoAnonVma),
            Backing::Anon => Ok(()),
            _ if rule != FaultLock::PerVmaFile => Err(VmaLockAbort::NotAnonymous),
            Backing::FilePrivate(_) if write && self.anon_vma.is_none() => Err(VmaLockAbort::NoAnonVma),
            _ => Ok(()),
        }
    }

    /// Host bytes per page mapped: its packed PTE.
    pub const HOST_BYTES_PER_PAGE: u64 = std::mem::size_of::<u64>() as u64;

    pub fn pages(&self) -> u64 {
        (self.end - self.start) >> PAGE_SHIFT
    }

    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }

    /// `vma_start_read` (v6.4 include/linux/mm.h): fails if the VMA is write-locked in the
    /// current write section of `mmap_lock` or its `vm_lock` cannot be read-locked at once;
    /// on success the caller holds `vm_lock` for read until `vma_end_read`.
    pub fn start_read(&mut self, mm_lock_seq: u64) -> Result<(), VmaLockAbort> {
        if self.vm_lock_seq == Some(mm_lock_seq) {
            return Err(VmaLockAbort::WriteLocked);
        }
        // The recheck of vm_lock_seq after the trylock sees the same values: state changes
        // only between steps, and a writer that set it holds or held vm_lock for write.
        self.vm_lock.try_read().then_some(()).ok_or(VmaLockAbort::Contended)
    }

    /// The file page index backing `addr` (`linear_page_index`).
    pub fn file_index(&self, addr: u64) -> u64 {
        self.pgoff + ((addr - self.start) >> PAGE_SHIFT)
    }

    pub(in crate::linux) fn slot(&self, addr: u64) -> usize {
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
    /// `mm->tlb_flush_batched` (arm64, v6.5+): reclaim posted a TLBI for one of this mm's PTEs
    /// that `flush_tlb_batched_pending` has not yet caught up with.
    pub tlb_flush_batched: bool,
    pub mmap_lock: RwSem,
    /// `mm->mm_lock_seq` (v6.4): incremented by `mmap_write_unlock` and `mmap_write_downgrade`
    /// (`vma_end_write_all`), which releases every VMA write-locked in that section at once.
    pub mm_lock_seq: u64,
    /// The line holding `mm_lock_seq`: read by every per-VMA fault, written at the end of each
    /// write section (placed on a line of its own: an estimate, the v6.4 `mm_struct` layout
    /// was not read).
    pub mm_lock_seq_line: CacheLine,
    /// The VMAs, sorted by start (the maple tree `mm->mm_mt`).
    pub(in crate::linux) vmas: Vec<Vma>,
    /// The next `anon_vma` to create (identities only; no fork shares them across mms).
    pub(in crate::linux) next_anon_vma: AnonVmaId,
    /// `mm->context.global_asid` (x86 v6.15): one ASID on every CPU, flushed by broadcast.
    pub global_asid: Option<u16>,
    /// `mm->context.asid_transition`: some CPU may still run the mm on a per-CPU ASID.
    pub asid_transition: bool,
    /// Each page-table page's split PTE lock (linux/mm/pgtable_generic.rs).
    pub ptlocks: crate::linux::mm::pgtable_generic::PtLocks,
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
            mm_lock_seq: 0,
            mm_lock_seq_line: CacheLine::new(),
            tlb_flush_pending: 0,
            tlb_flush_batched: false,
            vmas: Vec::new(),
            next_anon_vma: 1,
            global_asid: None,
            asid_transition: false,
            ptlocks: Default::default(),
        }
    }

    pub fn vmas(&self) -> &[Vma] {
        &self.vmas
    }

    /// `mm->total_vm`: pages mapped (what the 3.x flush heuristic compared against).
    pub fn total_vm(&self) -> u64 {
        self.vmas.iter().map(Vma::pages).sum()
    }

    /// Maps `len` bytes (rounded up to pages) top-down in the highest gap that fits, merged
    /// with a compatible neighbour where Linux merges it (linux/mm/vma.rs). Returns the start.
    pub fn mmap(&mut self, len: u64, backing: Backing, writable: bool) -> u64 {
        let len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        assert!(len > 0, "mmap of zero length");
        let start = self.get_unmapped_area(len);
        self.mmap_region(start, len, backing, writable);
        start
    }

    /// `get_unmapped_area` (top-down, `unmapped_area_topdown`): the highest gap under
    /// `MMAP_TOP` that holds `len` bytes.
    pub fn get_unmapped_area(&self, len: u64) -> u64 {
        let mut start = MMAP_TOP - len;
        // VMAs are sorted by start; walk down from the top until the candidate fits.
        for v in self.vmas.iter().rev() {
            if v.start < start + len && start < v.end {
                start = v.start - len;
            }
        }
        start
    }

    pub fn vma(&self, addr: u64) -> Option<&Vma> {
        let i = self.vmas.partition_point(|v| v.end <= addr);
        self.vmas.get(i).filter(|v| v.contains(addr))
    }

    pub fn vma_mut(&mut self, addr: u64) -> Option<&mut Vma> {
        let i = self.vmas.partition_point(|v| v.end <= addr);
        self.vmas.get_mut(i).filter(|v| v.contains(addr))
    }

    /// `lock_vma_under_rcu` (v6.4 mm/memory.c): the VMA at `addr` read-locked for a fault
    /// without `mmap_lock` if it qualifies under `rule` ([`Vma::vma_lock_qualifies`]) and
    /// `vma_start_read` succeeds.
    /// (userfaultfd and swap-in, the other v6.4 refusals, are not modelled.)
    pub fn lock_vma_under_rcu(
        &mut self,
        addr: u64,
        rule: FaultLock,
        write: bool,
    ) -> Result<&mut Vma, VmaLockAbort> {
        let seq = self.mm_lock_seq;
        let v = self.vma_mut(addr).ok_or(VmaLockAbort::NoVma)?;
        v.vma_lock_qualifies(rule, write)?;
        v.start_read(seq)?;
        Ok(v)
    }

    /// `vma_end_write_all` (v6.4, in `mmap_write_unlock` and `mmap_write_downgrade`): every VMA
    /// write-locked in the section that ends is released by moving the sequence on.
    pub fn vma_end_write_all(&mut self) {
        self.mm_lock_seq += 1;
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

/// How a user page fault is serialised against changes to the address space.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultLock {
    /// Every fault takes `mmap_lock` for read (up to v6.3).
    #[default]
    MmapLock,
    /// v6.4 (0bff0aaea03e and its series): `lock_vma_under_rcu` first, `mmap_lock` on failure;
    /// writers write-lock each VMA they change (docs/references/linux-6x.md#per-vma-locks).
    /// Anonymous VMAs with an `anon_vma` only.
    PerVma,
    /// v6.7 (Matthew Wilcox, "Handle more faults under the VMA lock"): file-backed VMAs too:
    /// read faults, shared faults, and COW faults once the VMA has an `anon_vma`.
    PerVmaFile,
}

impl FaultLock {
    fn is_mmap_lock(&self) -> bool {
        *self == FaultLock::MmapLock
    }

    /// Faults try the VMA lock first (v6.4 on).
    pub fn per_vma(self) -> bool {
        self != FaultLock::MmapLock
    }
}

/// The rwsem's contended path (`rwsem_slowpath`, docs/references/linux-mm.md#rwsem-slow-path).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RwsemSlowpath {
    /// The lock's queue only: a sleeper and its waker pay the count line and the context
    /// switches, nothing for `wait_lock` or `try_to_wake_up` (the model before the v3.x rules).
    #[default]
    Off,
    /// lib/rwsem.c to v3.9: the slow paths run under `wait_lock`, the waker pays
    /// `try_to_wake_up` for each task it wakes, and a release grants the lock to the head writer.
    Grant,
    /// v3.10-v3.15 lib/rwsem-xadd.c: as `Grant`, but a head writer is woken without the lock
    /// and a running writer may steal it (no optimistic spinning: that came in v3.16).
    Steal,
}

impl RwsemSlowpath {
    fn is_off(&self) -> bool {
        *self == RwsemSlowpath::Off
    }
}

/// What a read fault on a file maps besides its own page (`filemap_map_pages`, `finish_fault`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultAround {
    /// The cached pages of the `fault_around_bytes` window (16 pages, aligned) whose PTEs are
    /// none (v3.15 to v6.17).
    #[default]
    Window,
    /// As `Window`, and every page of a large folio met in it or faulted on, within the VMA
    /// and the fault's page table (v6.18: 357b92761d94 "mm/filemap: map entire large folio
    /// faultaround", 19773df031bc "mm/fault: try to map the entire file folio in
    /// finish_fault()").
    Folio,
}

impl FaultAround {
    fn is_window(&self) -> bool {
        *self == FaultAround::Window
    }
}

fn is_false(b: &bool) -> bool {
    !*b
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
    /// Per-VMA locks (v6.4). Left out of a run's record at its default, so results of
    /// configurations that predate it read as before.
    #[serde(default, skip_serializing_if = "FaultLock::is_mmap_lock")]
    pub fault_lock: FaultLock,
    /// munmap downgrades `mmap_lock` to read once the VMA is detached and zaps, flushes and
    /// frees under the read lock (v4.20+; docs/references/linux-6x.md#per-vma-locks). Off in the
    /// older presets, which model munmap holding it for write throughout.
    #[serde(default, skip_serializing_if = "is_false")]
    pub munmap_downgrade: bool,
    /// The rwsem's contended path as the v3.x kernels ran it. Left out of a run's record at
    /// its default (off), so results of configurations that predate it read as before.
    #[serde(default, skip_serializing_if = "RwsemSlowpath::is_off")]
    pub rwsem_slowpath: RwsemSlowpath,
    /// What a file read fault maps around its page. Left out of a run's record at its default.
    #[serde(default, skip_serializing_if = "FaultAround::is_window")]
    pub fault_around: FaultAround,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmap_is_top_down_and_reuses_holes() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(128 << 20, Backing::Anon, true);
        let b = mm.mmap(1 << 20, Backing::FileShared(0), true);
        assert_eq!(a, MMAP_TOP - (128 << 20));
        assert_eq!(b, a - (1 << 20));
        assert_eq!(mm.total_vm(), 32768 + 256);
        assert_eq!(mm.munmap(a, 128 << 20).vmas.len(), 1);
        // The hole at the top is found again, as munmap-then-mmap loops rely on.
        assert_eq!(mm.mmap(128 << 20, Backing::Anon, true), a);
    }

    #[test]
    fn lock_vma_under_rcu_admits_anonymous_vmas_with_an_anon_vma_outside_a_write_section() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * PAGE_SIZE, Backing::Anon, true);
        let f = mm.mmap(4 * PAGE_SIZE, Backing::FilePrivate(0), true);
        assert_eq!(
            mm.lock_vma_under_rcu(a + 4 * PAGE_SIZE, FaultLock::PerVma, false).err(),
            Some(VmaLockAbort::NoVma)
        );
        assert_eq!(
            mm.lock_vma_under_rcu(f, FaultLock::PerVma, false).err(),
            Some(VmaLockAbort::NotAnonymous)
        );
        assert_eq!(mm.lock_vma_under_rcu(a, FaultLock::PerVma, false).err(), Some(VmaLockAbort::NoAnonVma));
        mm.vma_mut(a).unwrap().anon_vma = Some(1);
        assert_eq!(
            mm.lock_vma_under_rcu(a + PAGE_SIZE, FaultLock::PerVma, false).map(|v| v.start).ok(),
            Some(a)
        );
        assert_eq!(mm.vma(a).unwrap().vm_lock.readers(), 1);
    }

    #[test]
    fn from_v6_7_file_backed_vmas_fault_under_their_lock_but_a_cow_needs_the_anon_vma() {
        let mut mm = Mm::new(0, 1);
        let sh = mm.mmap(4 * PAGE_SIZE, Backing::FileShared(0), true);
        let pr = mm.mmap(4 * PAGE_SIZE, Backing::FilePrivate(1), true);
        let an = mm.mmap(4 * PAGE_SIZE, Backing::Anon, true);
        let q = |mm: &Mm, a, rule, write| mm.vma(a).unwrap().vma_lock_qualifies(rule, write);
        for write in [false, true] {
            assert_eq!(q(&mm, sh, FaultLock::PerVma, write), Err(VmaLockAbort::NotAnonymous));
            assert_eq!(q(&mm, sh, FaultLock::PerVmaFile, write), Ok(()));
            assert_eq!(q(&mm, an, FaultLock::PerVmaFile, write), Err(VmaLockAbort::NoAnonVma));
        }
        assert_eq!(q(&mm, pr, FaultLock::PerVmaFile, false), Ok(()));
        assert_eq!(q(&mm, pr, FaultLock::PerVmaFile, true), Err(VmaLockAbort::NoAnonVma));
        mm.vma_mut(pr).unwrap().anon_vma = Some(1);
        assert_eq!(q(&mm, pr, FaultLock::PerVmaFile, true), Ok(()));
        assert!(mm.lock_vma_under_rcu(sh, FaultLock::PerVmaFile, true).is_ok());
    }

    #[test]
    fn a_fault_racing_munmap_of_its_vma_waits_for_it_or_falls_back() {
        // The interleavings of a per-VMA fault (lock_vma_under_rcu .. vma_end_read) with
        // munmap's vma_start_write (down_write, vm_lock_seq = mm_lock_seq, up_write) on one VMA.
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * PAGE_SIZE, Backing::Anon, true);
        mm.vma_mut(a).unwrap().anon_vma = Some(1);
        let mut woken = Vec::new();
        // 1. The fault holds the VMA lock first: the writer sleeps until vma_end_read hands it
        //    over, so the zap cannot run under the fault.
        assert!(mm.lock_vma_under_rcu(a, FaultLock::PerVma, false).is_ok());
        assert!(!mm.vma_mut(a).unwrap().vm_lock.acquire(7, true), "vma_start_write waits for the fault");
        // A second fault meanwhile fails the trylock (a writer waits) and falls back.
        assert_eq!(mm.lock_vma_under_rcu(a, FaultLock::PerVma, false).err(), Some(VmaLockAbort::Contended));
        mm.vma_mut(a).unwrap().vm_lock.release(0, false, &mut woken);
        assert_eq!(woken, [7]);
        // 2. The writer marks the VMA and drops vm_lock: faults still fail, on the sequence,
        //    for the rest of the write section.
        let seq = mm.mm_lock_seq;
        let v = mm.vma_mut(a).unwrap();
        v.vm_lock_seq = Some(seq);
        v.vm_lock.release(7, true, &mut woken);
        assert_eq!(mm.lock_vma_under_rcu(a, FaultLock::PerVma, false).err(), Some(VmaLockAbort::WriteLocked));
        // 3. munmap detaches it: the fault finds no VMA.
        let kept = mm.munmap(a, 4 * PAGE_SIZE).vmas.pop().unwrap();
        assert_eq!(mm.lock_vma_under_rcu(a, FaultLock::PerVma, false).err(), Some(VmaLockAbort::NoVma));
        // A VMA write-locked in a section that ended (mmap_write_unlock) is free again.
        mm.vmas.push(kept);
        mm.vma_end_write_all();
        assert!(mm.lock_vma_under_rcu(a, FaultLock::PerVma, false).is_ok());
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
        let v = mm.munmap(a, 4 * PAGE_SIZE).vmas.pop().unwrap();
        assert_eq!(
            zap_vma(&v),
            [(a + 3 * PAGE_SIZE, Pte { pfn: 9, present: true, writable: false, dirty: false })]
        );
    }
}
