//! VMA merging and splitting (mm/vma.c from v6.12; mm/mmap.c's `vma_merge`, `__split_vma` and
//! `do_munmap` before): a new anonymous mapping next to a compatible VMA expands that VMA
//! instead of adding one (`vma_merge_new_range` -> `vma_expand`), and a munmap of part of a VMA
//! splits it first (`__split_vma`, once per end that falls inside a VMA). From v6.4 both
//! write-lock the VMAs they change (`vma_start_write`), which waits for the faults that hold
//! them under their per-VMA lock (docs/references/linux-mm.md#vma-merging).
//!
//! The decision is the same in every kernel the presets model (2.6 to 6.x) for what the model
//! maps: no fork shares an `anon_vma`, no mempolicy, userfaultfd or anon name differs, and no
//! mapping is `VM_SPECIAL`.

use crate::linux::include::linux::mm_types::{AnonVmaId, Backing, Mm, Vma, PAGE_SHIFT, PAGE_SIZE};
use crate::linux::kernel::locking::rwsem::RwSem;

/// What `vma_merge_new_range` (v6.12; `vma_merge` before) does with a new mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// No compatible neighbour: a new VMA is inserted.
    None,
    /// The VMA ending where the range starts (`prev`, named by its start) expands over it.
    Prev(u64),
    /// The VMA starting where the range ends (`next`) expands down over it.
    Next(u64),
    /// `prev` expands over the range and `next`, which is removed.
    Both { prev: u64, next: u64 },
}

impl Merge {
    /// The VMAs `vma_expand` write-locks (v6.4+), in its order: the one it expands, then the
    /// one it removes.
    pub fn write_locks(self) -> Vec<u64> {
        match self {
            Merge::None => vec![],
            Merge::Prev(v) | Merge::Next(v) => vec![v],
            Merge::Both { prev, next } => vec![prev, next],
        }
    }
}

/// What a munmap did to the address space.
#[derive(Debug)]
pub struct Unmapped {
    /// The detached VMAs, in address order, their PTEs still set for the zap.
    pub vmas: Vec<Vma>,
    /// `__split_vma` calls: one for a start inside a VMA, one for an end inside one.
    pub splits: u32,
}

/// `vm_pgoff` of a new mapping at `start`: do_mmap gives an anonymous private one
/// `addr >> PAGE_SHIFT`; the model maps files from offset 0.
fn new_pgoff(backing: Backing, start: u64) -> u64 {
    match backing {
        Backing::Anon => start >> PAGE_SHIFT,
        Backing::FilePrivate(_) | Backing::FileShared(_) => 0,
    }
}

/// `is_mergeable_vma`: the same flags (here: protection and shared-or-private) and file.
fn is_mergeable_vma(v: &Vma, backing: Backing, writable: bool) -> bool {
    v.backing == backing && v.writable == writable
}

/// `is_mergeable_anon_vma(anon_vma1, anon_vma2, vma)`: either is unset and `vma`'s
/// `anon_vma_chain` is singular (without fork: it has an `anon_vma`), or both are the same.
fn is_mergeable_anon_vma(a1: Option<AnonVmaId>, a2: Option<AnonVmaId>, chain: Option<&Vma>) -> bool {
    (a1.is_none() || a2.is_none()) && chain.is_none_or(|v| v.anon_vma.is_some()) || a1 == a2
}

impl Mm {
    /// Index of the first VMA that ends above `addr`.
    fn vma_index(&self, addr: u64) -> usize {
        self.vmas.partition_point(|v| v.end <= addr)
    }

    /// `vma_merge_new_range`'s decision for a new mapping `[start, end)` in a gap: merge with
    /// `prev` if `can_vma_merge_after`, with `next` if `can_vma_merge_before` (and, when both
    /// qualify, their own `anon_vma`s are compatible), else insert.
    pub fn merge_new_range(&self, start: u64, end: u64, backing: Backing, writable: bool) -> Merge {
        let i = self.vmas.partition_point(|v| v.start < start);
        let pgoff = new_pgoff(backing, start);
        let prev = i.checked_sub(1).map(|j| &self.vmas[j]).filter(|p| p.end == start);
        let next = self.vmas.get(i).filter(|n| n.start == end);
        // A new range has no anon_vma of its own (vmg->anon_vma is NULL).
        let left = prev.filter(|p| {
            is_mergeable_vma(p, backing, writable)
                && is_mergeable_anon_vma(None, p.anon_vma, Some(p))
                && p.pgoff + p.pages() == pgoff
        });
        let right = next.filter(|n| {
            is_mergeable_vma(n, backing, writable)
                && is_mergeable_anon_vma(None, n.anon_vma, Some(n))
                && n.pgoff == pgoff + ((end - start) >> PAGE_SHIFT)
                && left.is_none_or(|p| is_mergeable_anon_vma(p.anon_vma, n.anon_vma, None))
        });
        match (left, right) {
            (Some(p), Some(n)) => Merge::Both { prev: p.start, next: n.start },
            (Some(p), None) => Merge::Prev(p.start),
            (None, Some(n)) => Merge::Next(n.start),
            (None, None) => Merge::None,
        }
    }

    /// `mmap_region` of `[start, start + len)` (a gap, page-aligned): `vma_expand` of the
    /// neighbour(s) `merge_new_range` picks, else a new VMA. Returns what it did.
    pub fn mmap_region(&mut self, start: u64, len: u64, backing: Backing, writable: bool) -> Merge {
        let end = start + len;
        let merge = self.merge_new_range(start, end, backing, writable);
        let pages = (len >> PAGE_SHIFT) as usize;
        let i = self.vmas.partition_point(|v| v.start < start);
        match merge {
            Merge::None => {
                let vma = Vma {
                    start,
                    end,
                    backing,
                    writable,
                    pgoff: new_pgoff(backing, start),
                    anon_vma: None,
                    vm_lock_seq: None,
                    vm_lock: RwSem::default(),
                    ptes: vec![0; pages],
                };
                self.vmas.insert(i, vma);
            }
            Merge::Prev(_) => {
                let p = &mut self.vmas[i - 1];
                p.end = end;
                p.ptes.resize(p.ptes.len() + pages, 0);
            }
            Merge::Next(_) => {
                let n = &mut self.vmas[i];
                n.start = start;
                n.pgoff = new_pgoff(backing, start);
                n.ptes.splice(0..0, std::iter::repeat_n(0, pages));
            }
            Merge::Both { .. } => {
                // vma_expand over next: commit_merge removes it, dup_anon_vma gives prev its
                // anon_vma if prev had none.
                let n = self.vmas.remove(i);
                let p = &mut self.vmas[i - 1];
                p.end = n.end;
                p.ptes.resize(p.ptes.len() + pages, 0);
                p.ptes.extend_from_slice(&n.ptes);
                p.anon_vma = p.anon_vma.or(n.anon_vma);
            }
        }
        merge
    }

    /// `__split_vma(vma, addr, new_below)` of the VMA containing `addr`: a new VMA (a copy:
    /// `vm_area_dup`, `anon_vma_clone`) takes `[vm_start, addr)` if `new_below`, else
    /// `[addr, vm_end)`, with its PTEs; the original keeps the rest, its `vm_lock` and its
    /// write-lock mark. The new one is write-locked in the same section (`vma_start_write(new)`).
    pub fn split_vma(&mut self, addr: u64, new_below: bool) {
        let i = self.vma_index(addr);
        let v = &mut self.vmas[i];
        assert!(v.start < addr && addr < v.end, "split of {addr:#x} outside [{:#x}, {:#x})", v.start, v.end);
        let k = v.slot(addr);
        let mut new = Vma {
            start: v.start,
            end: v.end,
            backing: v.backing,
            writable: v.writable,
            pgoff: v.pgoff,
            anon_vma: v.anon_vma,
            vm_lock_seq: v.vm_lock_seq,
            vm_lock: RwSem::default(),
            ptes: Vec::new(),
        };
        let pgoff_at = v.pgoff + k as u64;
        if new_below {
            new.end = addr;
            new.ptes = v.ptes.drain(..k).collect();
            v.start = addr;
            v.pgoff = pgoff_at;
            self.vmas.insert(i, new);
        } else {
            new.start = addr;
            new.pgoff = pgoff_at;
            new.ptes = v.ptes.split_off(k);
            v.end = addr;
            self.vmas.insert(i + 1, new);
        }
    }

    /// The starts of the VMAs overlapping `[start, end)`, in address order: those munmap
    /// write-locks (v6.4+: the first and last before they are split, each before it is detached).
    pub fn vmas_overlapping(&self, start: u64, end: u64) -> Vec<u64> {
        self.vmas[self.vma_index(start)..].iter().take_while(|v| v.start < end).map(|v| v.start).collect()
    }

    /// `do_vmi_munmap` (v6.12; `do_munmap` before) of `[start, start + len)`: splits the VMA
    /// the start falls inside (`new_below`) and the one the end falls inside, then detaches
    /// every VMA in the range and returns them.
    pub fn munmap(&mut self, start: u64, len: u64) -> Unmapped {
        let end = start + len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let mut splits = 0;
        let mut i = self.vma_index(start);
        if self.vmas.get(i).is_none_or(|v| v.start >= end) {
            return Unmapped { vmas: Vec::new(), splits };
        }
        if self.vmas[i].start < start {
            self.split_vma(start, true);
            splits += 1;
            i += 1;
        }
        let mut j = i;
        while j < self.vmas.len() && self.vmas[j].start < end {
            if self.vmas[j].end > end {
                self.split_vma(end, false);
                splits += 1;
            }
            j += 1;
        }
        Unmapped { vmas: self.vmas.drain(i..j).collect(), splits }
    }

    /// `find_mergeable_anon_vma` (mm/vma.c v6.12; mm/mmap.c before), for `anon_vma_prepare`
    /// of the VMA at index `i`: the `anon_vma` of an adjacent, `anon_vma_compatible` neighbour
    /// (same file, flags equal but for protection, offsets linear), next first, else none.
    pub(in crate::linux) fn find_mergeable_anon_vma(&self, i: usize) -> Option<AnonVmaId> {
        let compatible =
            |a: &Vma, b: &Vma| a.end == b.start && a.backing == b.backing && b.pgoff == a.pgoff + a.pages();
        let v = &self.vmas[i];
        let next = self.vmas.get(i + 1).filter(|n| compatible(v, n)).and_then(|n| n.anon_vma);
        let prev =
            || i.checked_sub(1).map(|j| &self.vmas[j]).filter(|p| compatible(p, v)).and_then(|p| p.anon_vma);
        next.or_else(prev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::include::linux::mm_types::{zap_vma, Pte, MMAP_TOP};

    const P: u64 = PAGE_SIZE;

    fn pte(pfn: u64) -> Pte {
        Pte { pfn, present: true, writable: true, dirty: true }
    }

    fn layout(mm: &Mm) -> Vec<(u64, u64)> {
        mm.vmas.iter().map(|v| (v.start, v.end)).collect()
    }

    #[test]
    fn adjacent_anonymous_mmaps_merge_into_one_vma() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * P, Backing::Anon, true);
        mm.set_pte(a, pte(10));
        mm.anon_vma_prepare(a);
        // Top-down: the next mapping ends where `a` starts, so `a` expands down over it
        // (can_vma_merge_before: the new range has no anon_vma, `a`'s chain is singular).
        let b = mm.mmap(2 * P, Backing::Anon, true);
        assert_eq!(b, a - 2 * P);
        assert_eq!(layout(&mm), [(b, a + 4 * P)]);
        let v = mm.vma(b).unwrap();
        assert_eq!((v.pgoff, v.anon_vma), (b >> PAGE_SHIFT, Some(1)));
        // The old PTEs moved with their addresses; the new pages are none.
        assert_eq!(mm.pte(a), Some(pte(10)));
        assert_eq!(mm.pte(b), Some(Pte::default()));
        assert_eq!(mm.total_vm(), 6);
    }

    #[test]
    fn different_backing_or_protection_does_not_merge() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * P, Backing::Anon, true);
        let f = mm.mmap(4 * P, Backing::FilePrivate(0), true);
        let r = mm.mmap(4 * P, Backing::Anon, false);
        let s = mm.mmap(4 * P, Backing::FileShared(0), true);
        // The same file again: offset 0 is not linear with the neighbour's, no merge either.
        let s2 = mm.mmap(4 * P, Backing::FileShared(0), true);
        assert_eq!(mm.vmas.len(), 5, "{:x?}", layout(&mm));
        assert_eq!([f, r, s, s2], [a - 4 * P, a - 8 * P, a - 12 * P, a - 16 * P]);
        assert_eq!(mm.merge_new_range(s2 - P, s2, Backing::FileShared(0), true), Merge::None);
        assert_eq!(mm.merge_new_range(a - 9 * P, r, Backing::Anon, false), Merge::Next(r));
    }

    #[test]
    fn a_hole_between_two_vmas_merges_both_unless_their_anon_vmas_differ() {
        let mut mm = Mm::new(0, 1);
        let hi = mm.mmap(4 * P, Backing::Anon, true);
        let mid = mm.mmap(4 * P, Backing::FileShared(0), true);
        let lo = mm.mmap(4 * P, Backing::Anon, true);
        mm.set_pte(hi, pte(1));
        mm.set_pte(lo + 3 * P, pte(2));
        mm.munmap(mid, 4 * P);
        // Neither side has an anon_vma: prev expands over the hole and next.
        assert_eq!(mm.merge_new_range(mid, hi, Backing::Anon, true), Merge::Both { prev: lo, next: hi });
        // Each side with its own anon_vma: prev and next are not compatible with each other,
        // so only prev expands.
        mm.anon_vma_prepare(hi);
        mm.anon_vma_prepare(lo);
        assert_ne!(mm.vma(hi).unwrap().anon_vma, mm.vma(lo).unwrap().anon_vma);
        assert_eq!(mm.mmap_region(mid, 4 * P, Backing::Anon, true), Merge::Prev(lo));
        assert_eq!(layout(&mm), [(lo, hi), (hi, hi + 4 * P)]);
        // Unmap it again and let hi share lo's anon_vma: now both merge, PTEs in place.
        mm.munmap(mid, 4 * P);
        mm.vmas[1].anon_vma = mm.vmas[0].anon_vma;
        assert_eq!(mm.mmap_region(mid, 4 * P, Backing::Anon, true), Merge::Both { prev: lo, next: hi });
        assert_eq!(layout(&mm), [(lo, hi + 4 * P)]);
        assert_eq!(
            (mm.pte(hi), mm.pte(lo + 3 * P), mm.pte(mid)),
            (Some(pte(1)), Some(pte(2)), Some(Pte::default()))
        );
    }

    #[test]
    fn munmap_of_a_middle_range_splits_twice_and_leaves_the_right_pages() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * P, Backing::Anon, true);
        let b = mm.mmap(4 * P, Backing::Anon, true);
        assert_eq!(mm.vmas.len(), 1);
        for i in 0..8 {
            mm.set_pte(b + i * P, pte(100 + i));
        }
        mm.anon_vma_prepare(b);
        mm.vmas[0].vm_lock_seq = Some(7);
        // Pages 3..5 of the merged VMA: a split at each end, one VMA detached with its PTEs.
        let u = mm.munmap(b + 3 * P, 2 * P);
        assert_eq!(u.splits, 2);
        assert_eq!(u.vmas.len(), 1);
        assert_eq!(zap_vma(&u.vmas[0]), [(b + 3 * P, pte(103)), (b + 4 * P, pte(104))]);
        assert_eq!(layout(&mm), [(b, b + 3 * P), (b + 5 * P, a + 4 * P)]);
        for v in &mm.vmas {
            // anon_vma_clone and vma_start_write(new): both halves share the anon_vma and the
            // write-lock mark; offsets stay linear.
            assert_eq!((v.anon_vma, v.vm_lock_seq, v.pgoff), (Some(1), Some(7), v.start >> PAGE_SHIFT));
        }
        for i in [0, 1, 2, 5, 6, 7] {
            assert_eq!(mm.pte(b + i * P), Some(pte(100 + i)), "page {i}");
        }
        assert_eq!(mm.pte(b + 3 * P), None);
        // A range covering one whole VMA and part of the next: one split, two VMAs detached.
        let u = mm.munmap(b, 6 * P);
        assert_eq!((u.splits, u.vmas.len()), (1, 2));
        assert_eq!(layout(&mm), [(b + 6 * P, a + 4 * P)]);
        // Nothing mapped there: nothing to do.
        assert_eq!(mm.munmap(MMAP_TOP, P).vmas.len(), 0);
    }

    #[test]
    fn anon_vma_prepare_reuses_a_compatible_neighbours() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(4 * P, Backing::Anon, true);
        mm.anon_vma_prepare(a);
        // Read-only next to it: no merge, but anon_vma_compatible ignores the protection.
        let r = mm.mmap(4 * P, Backing::Anon, false);
        assert_eq!(mm.vmas.len(), 2);
        mm.anon_vma_prepare(r);
        assert_eq!(mm.vma(r).unwrap().anon_vma, mm.vma(a).unwrap().anon_vma);
        // A file mapping is not compatible: a new anon_vma.
        let f = mm.mmap(4 * P, Backing::FilePrivate(3), true);
        mm.anon_vma_prepare(f);
        assert_eq!(mm.vma(f).unwrap().anon_vma, Some(2));
    }
}
