//! Not a Linux file: the checker that watches the kernel model.
//!
//! The safety oracle (docs/design.md#safety-oracle), checked in every run:
//! - at every TLB hit, the frame the entry translates to must still belong to the mapping the
//!   access goes through (a hit on a freed or reallocated frame is a use-after-free through the
//!   TLB);
//! - when a frame is freed, no CPU may still hold a *usable* translation to it: one in the PCID
//!   it runs the mm with right now, or in a PCID slot it would switch back to without a flush
//!   (slot generation not behind `mm->context.tlb_gen`).
//!
//! - the page allocator never hands out a frame that still has an owner, and a frame is freed
//!   only once, and never while a page table still maps it.
//!
//! Stale entries are legal between clearing a PTE and the completion of its flush, as long as
//! the frame is not freed: that is exactly what the flush-then-free rule of `mmu_gather` buys.

use crate::hw::cpumask::{CpuMask, NR_CPUS};
use crate::hw::tlb::{PageSize, TlbHierarchy};
use crate::linux::arch::x86::mm::tlb::TlbState;
use crate::linux::frames::{Frames, Owner};
use crate::linux::include::linux::mm_types::{Mm, MmId, PAGE_SHIFT};
use crate::sparse::SectionVec;

crate::linux::vmstat::counters! {
    /// The oracle's findings, counted with the events so a window shows its own.
    Counters {
        oracle_violations,
    }
}

#[derive(Debug, Clone)]
pub struct Oracle {
    pub violations: u64,
    /// The first few violations, described, for the report.
    pub examples: Vec<String>,
    /// Per frame: every CPU that ever filled a TLB entry translating to it (in any life of the
    /// frame). Only those can hold one, so a free checks them instead of every CPU of the mm.
    /// A mask of the machine's CPUs (`words` u64 per frame), allocated only for the sections
    /// of frames a TLB was filled with: a 512-CPU mask per frame of two 4 GiB nodes was 128 MiB.
    fillers: SectionVec<u64>,
    words: usize,
    /// Lazy TLB CPUs receive every flush (v3.x-v4.19 `lazy_ipis = send`): hold them to the
    /// rule of running CPUs. Otherwise (v4.20+) a lazy CPU may keep stale entries until its
    /// next `switch_mm` catches it up.
    pub lazy_cpus_flushed: bool,
}

const MAX_EXAMPLES: usize = 8;

impl Oracle {
    /// Host bytes per frame a TLB was filled with: its filler mask on `cpus` CPUs.
    pub fn host_bytes_per_frame(cpus: u32) -> u64 {
        ((cpus as usize).div_ceil(64).max(1) * std::mem::size_of::<u64>()) as u64
    }

    /// The oracle of a machine of `cpus` CPUs and `nr_pfns` page frames.
    pub fn new(cpus: u32, nr_pfns: u64) -> Oracle {
        assert!(cpus as usize <= NR_CPUS, "{cpus} CPUs: the model supports up to {NR_CPUS}");
        let words = (cpus as usize).div_ceil(64).max(1);
        Oracle {
            violations: 0,
            examples: Vec::new(),
            fillers: SectionVec::new(nr_pfns as usize * words, 0),
            words,
            lazy_cpus_flushed: false,
        }
    }

    fn flag(&mut self, what: String) {
        self.violations += 1;
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(what);
        }
    }

    /// A TLB hit of `mm` at `va` translated to `pfn`.
    pub fn check_access(&mut self, pfn: u64, mm: MmId, va: u64, frames: &Frames) {
        let vpn = va >> PAGE_SHIFT;
        match frames.owner(pfn) {
            Owner::Anon { mm: m, vpn: v } if m == mm && v == vpn => {}
            Owner::PageCache { .. } | Owner::Zero => {}
            other => self.flag(format!("mm {mm} va {va:#x}: TLB hit on pfn {pfn} owned by {other:?}")),
        }
    }

    /// The allocator handed out `pfn` while it still belonged to `owner`.
    pub fn flag_handed_out_twice(&mut self, pfn: u64, owner: Owner) {
        self.flag(format!("pfn {pfn} handed out while still owned by {owner:?}"));
    }

    /// `pfn` was freed again without being allocated in between.
    pub fn flag_double_free(&mut self, pfn: u64) {
        self.flag(format!("pfn {pfn} freed twice"));
    }

    /// The allocator refused a free (`why`: its error).
    pub fn flag_double_free_allocator(&mut self, pfn: u64, why: &str) {
        self.flag(format!("pfn {pfn}: free refused by the page allocator: {why}"));
    }

    /// A kernel object (slab object, slab page, `kmalloc_large` block) used against its owner.
    pub fn flag_object(&mut self, what: String) {
        self.flag(what);
    }

    /// `cpu` filled a TLB entry translating to `pfn`.
    #[inline]
    pub fn note_fill(&mut self, cpu: u32, pfn: u64) {
        let w = self.fillers.get_mut(pfn as usize * self.words + cpu as usize / 64);
        *w |= 1 << (cpu % 64);
    }

    /// The CPUs that ever filled a TLB entry translating to `pfn`.
    fn fillers_of(&self, pfn: u64) -> CpuMask {
        let base = pfn as usize * self.words;
        let mut m = CpuMask::new();
        for w in 0..self.words {
            m.set_word(w, self.fillers.get(base + w));
        }
        m
    }

    /// `pfn` is about to be freed; its owner says where it was mapped.
    pub fn check_free<'a, C>(
        &mut self,
        pfn: u64,
        frames: &Frames,
        mms: &[Mm],
        cpus: &'a [C],
        view: impl Fn(&'a C) -> (&'a TlbHierarchy, usize, &'a TlbState),
    ) {
        let Owner::Anon { mm, vpn } = frames.owner(pfn) else {
            return;
        };
        let m = &mms[mm as usize];
        if m.pte(vpn << PAGE_SHIFT).is_some_and(|p| p.present && p.pfn == pfn) {
            self.flag(format!("pfn {pfn} freed while mm {mm} still maps it at vpn {vpn:#x}"));
        }
        self.check_translation_gone(pfn, mm, vpn, mms, cpus, view);
    }

    /// `pfn` is about to be freed (or written back) after `mm`'s mapping of it at `vpn` was
    /// removed: no CPU may still hold a usable translation of `vpn` to it (page reclaim checks
    /// every mapping its unmap removed this way).
    pub fn check_translation_gone<'a, C>(
        &mut self,
        pfn: u64,
        mm: MmId,
        vpn: u64,
        mms: &[Mm],
        cpus: &'a [C],
        view: impl Fn(&'a C) -> (&'a TlbHierarchy, usize, &'a TlbState),
    ) {
        let m = &mms[mm as usize];
        // Only a CPU that ever filled a translation to the frame can hold one.
        let fillers = self.fillers_of(pfn);
        if fillers.is_empty() {
            return;
        }
        for cpu in fillers.and(&m.ever_loaded).iter() {
            let (tlb, lp, st) = view(&cpus[cpu as usize]);
            for (slot, ctx) in st.ctxs.iter().enumerate() {
                if ctx.ctx_id != m.ctx_id {
                    continue;
                }
                let running = st.loaded_mm == Some(mm)
                    && st.loaded_asid as usize == slot
                    && (!st.is_lazy || self.lazy_cpus_flushed);
                let reusable = ctx.tlb_gen >= m.tlb_gen;
                if !(running || reusable) {
                    continue;
                }
                let pcid = slot as u16 + 1;
                let held = matches!(
                    tlb.peek(lp, vpn << PAGE_SHIFT, pcid),
                    Some((PageSize::Size4K, payload)) if payload.pfn() == pfn
                );
                if held {
                    self.flag(format!(
                        "pfn {pfn} freed while cpu {cpu} can still translate mm {mm} vpn {vpn:#x} to it"
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::include::linux::mm_types::{Backing, Pte, PAGE_SIZE};

    #[test]
    fn a_frame_freed_while_a_pte_maps_it_is_a_violation() {
        let mut mm = Mm::new(0, 1);
        let a = mm.mmap(2 * PAGE_SIZE, Backing::Anon, true);
        let mut frames = Frames::new(16);
        assert!(frames.assign(5, Owner::Anon { mm: 0, vpn: a >> PAGE_SHIFT }));
        assert!(frames.assign(6, Owner::Anon { mm: 0, vpn: (a >> PAGE_SHIFT) + 1 }));
        mm.set_pte(a, Pte { pfn: 5, present: true, writable: true, dirty: true });
        let mut o = Oracle::new(1, 16);
        let no_cpus: &[(TlbHierarchy, TlbState)] = &[];
        // Page 6 was never mapped (or its PTE was cleared): freeing it is fine.
        o.check_free(6, &frames, std::slice::from_ref(&mm), no_cpus, |c| (&c.0, 0, &c.1));
        assert_eq!(o.violations, 0);
        o.check_free(5, &frames, std::slice::from_ref(&mm), no_cpus, |c| (&c.0, 0, &c.1));
        assert_eq!(o.violations, 1, "{:?}", o.examples);
        assert!(o.examples[0].contains("still maps it"), "{:?}", o.examples);
    }
}
