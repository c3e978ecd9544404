//! Physical frames: who each page frame belongs to right now, which the safety oracle checks
//! every TLB hit and every free against. The frames themselves come from and go back to the page
//! allocator (kernel/page_alloc.rs); this is only the ownership map (`page->mapping` and
//! `page->index`, as far as the oracle needs them).

use super::mm::MmId;

/// Who a frame belongs to right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Free,
    /// Mapped (or about to be) at `vpn` of an anonymous/COW mapping of `mm`.
    Anon {
        mm: MmId,
        vpn: u64,
    },
    /// A page-cache page of `file` at page `index` (shared by every mapping of it).
    PageCache {
        file: u32,
        index: u64,
    },
    /// The shared zero page.
    Zero,
    /// A page of pipe `pipe`'s buffers or its cached `tmp_page` (kernel/pipe.rs): never mapped.
    Pipe {
        pipe: u32,
    },
    /// The first page of a SLUB slab of cache `cache`, with the objects the kernel holds from
    /// it (counted by the kernel's kmalloc/kfree, apart from SLUB's own bookkeeping, so the
    /// oracle can tell a slab freed while in use).
    Slab {
        cache: u16,
        inuse: u32,
    },
    /// The first page of a `kmalloc_large` block or a socket's page fragment.
    KernelBlock,
    /// Another page of a higher-order block whose first page is `head` (`compound_head`).
    Tail {
        head: u64,
    },
}

#[derive(Debug, Clone, Default)]
pub struct Frames {
    owners: Vec<Owner>,
    /// The shared zero page's frame (`empty_zero_page`, allocated at boot here).
    pub zero_pfn: u64,
    pub allocated: u64,
    pub freed: u64,
}

impl Frames {
    /// `nr_pfns` page frames, every one free.
    pub fn new(nr_pfns: u64) -> Frames {
        Frames { owners: vec![Owner::Free; nr_pfns as usize], zero_pfn: u64::MAX, allocated: 0, freed: 0 }
    }

    /// The allocator handed out `pfn`: it now belongs to `owner`. Returns false if the frame
    /// already had an owner (a page handed out twice: the oracle counts it).
    #[must_use]
    pub fn assign(&mut self, pfn: u64, owner: Owner) -> bool {
        self.allocated += 1;
        let slot = &mut self.owners[pfn as usize];
        let was_free = *slot == Owner::Free;
        *slot = owner;
        was_free
    }

    /// `pfn` goes back to the allocator. Returns false if it had no owner (a double free).
    #[must_use]
    pub fn release(&mut self, pfn: u64) -> bool {
        assert_ne!(pfn, self.zero_pfn, "the zero page is never freed");
        self.freed += 1;
        let slot = &mut self.owners[pfn as usize];
        let had_owner = *slot != Owner::Free;
        *slot = Owner::Free;
        had_owner
    }

    pub fn owner(&self, pfn: u64) -> Owner {
        self.owners.get(pfn as usize).copied().unwrap_or(Owner::Free)
    }

    pub fn set_owner(&mut self, pfn: u64, owner: Owner) {
        self.owners[pfn as usize] = owner;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_handed_out_twice_or_freed_twice_is_reported() {
        let mut f = Frames::new(8);
        assert!(f.assign(3, Owner::PageCache { file: 0, index: 0 }));
        assert_eq!(f.owner(3), Owner::PageCache { file: 0, index: 0 });
        assert!(!f.assign(3, Owner::Anon { mm: 0, vpn: 1 }), "second owner without a free");
        assert!(f.release(3));
        assert_eq!(f.owner(3), Owner::Free);
        assert!(!f.release(3), "double free");
        assert_eq!((f.allocated, f.freed), (2, 2));
    }
}
