//! Physical frames: who each page frame belongs to right now, which the safety oracle checks
//! every TLB hit and every free against. The frames themselves come from and go back to the page
//! allocator (linux/mm/page_alloc.rs); this is only the ownership map (`page->mapping` and
//! `page->index`, as far as the oracle needs them).

use crate::linux::include::linux::mm_types::MmId;
use crate::sparse::SectionVec;

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
    /// A page of pipe `pipe`'s buffers or its cached `tmp_page` (linux/fs/pipe.rs): never mapped.
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
    /// A page of the block device's page cache holding metadata block `block` of the file system
    /// (an ext4 inode table or directory block, linux/fs/ext4.rs): never mapped here.
    Buffer {
        block: u64,
    },
    /// The first page of a `kmalloc_large` block or a socket's page fragment.
    KernelBlock,
    /// Another page of a higher-order block whose first page is `head` (`compound_head`).
    Tail {
        head: u64,
    },
}

/// An [`Owner`] in 8 bytes (the enum takes 16): a 3-bit tag over 61 bits of fields (`Buffer`
/// shares `KernelBlock`'s tag, told apart by bit 60). The
/// bounds hold for every value the model makes: virtual page numbers below 2^36 (48-bit
/// addresses), file page indices below 2^36, ids below 2^25.
mod packed {
    use super::Owner;

    const TAG: u32 = 61;
    const LOW: u32 = 36;
    const LOW_MASK: u64 = (1 << LOW) - 1;
    const ID_MAX: u64 = 1 << (TAG - LOW);

    fn pair(tag: u64, id: u32, low: u64) -> u64 {
        assert!((id as u64) < ID_MAX && low <= LOW_MASK, "frame owner id {id} / {low:#x} too large to pack");
        tag << TAG | (id as u64) << LOW | low
    }

    pub(super) fn pack(o: Owner) -> u64 {
        match o {
            Owner::Free => 0,
            Owner::Anon { mm, vpn } => pair(1, mm, vpn),
            Owner::PageCache { file, index } => pair(2, file, index),
            Owner::Zero => 3 << TAG,
            Owner::Pipe { pipe } => 4 << TAG | pipe as u64,
            Owner::Slab { cache, inuse } => 5 << TAG | (cache as u64) << 32 | inuse as u64,
            Owner::KernelBlock => 6 << TAG,
            // Tag 6 with bit 60 set: the ninth kind shares KernelBlock's tag.
            Owner::Buffer { block } => {
                assert!(block < 1 << (TAG - 1), "block {block} too large to pack");
                6 << TAG | 1 << (TAG - 1) | block
            }
            Owner::Tail { head } => {
                assert!(head < 1 << TAG, "pfn {head} too large to pack");
                7 << TAG | head
            }
        }
    }

    pub(super) fn unpack(v: u64) -> Owner {
        let (id, low) = (((v >> LOW) & (ID_MAX - 1)) as u32, v & LOW_MASK);
        match v >> TAG {
            0 => Owner::Free,
            1 => Owner::Anon { mm: id, vpn: low },
            2 => Owner::PageCache { file: id, index: low },
            3 => Owner::Zero,
            4 => Owner::Pipe { pipe: v as u32 },
            5 => Owner::Slab { cache: (v >> 32) as u16, inuse: v as u32 },
            6 if v >> (TAG - 1) & 1 == 1 => Owner::Buffer { block: v & ((1 << (TAG - 1)) - 1) },
            6 => Owner::KernelBlock,
            _ => Owner::Tail { head: v & ((1 << TAG) - 1) },
        }
    }
}

#[derive(Debug, Clone)]
pub struct Frames {
    /// Packed owners, allocated a 16 MiB section at a time: a run touches a few of a node's
    /// 2^20 frames.
    owners: SectionVec<u64>,
    /// The shared zero page's frame (`empty_zero_page`, allocated at boot here).
    pub zero_pfn: u64,
    pub allocated: u64,
    pub freed: u64,
}

impl Frames {
    /// Host bytes per frame once its section is written: one packed owner.
    pub const HOST_BYTES_PER_FRAME: u64 = std::mem::size_of::<u64>() as u64;

    /// `nr_pfns` page frames, every one free.
    pub fn new(nr_pfns: u64) -> Frames {
        Frames {
            owners: SectionVec::new(nr_pfns as usize, packed::pack(Owner::Free)),
            zero_pfn: u64::MAX,
            allocated: 0,
            freed: 0,
        }
    }

    /// The allocator handed out `pfn`: it now belongs to `owner`. Returns false if the frame
    /// already had an owner (a page handed out twice: the oracle counts it).
    #[must_use]
    pub fn assign(&mut self, pfn: u64, owner: Owner) -> bool {
        self.allocated += 1;
        let slot = self.owners.get_mut(pfn as usize);
        let was_free = *slot == packed::pack(Owner::Free);
        *slot = packed::pack(owner);
        was_free
    }

    /// `pfn` goes back to the allocator. Returns false if it had no owner (a double free).
    #[must_use]
    pub fn release(&mut self, pfn: u64) -> bool {
        assert_ne!(pfn, self.zero_pfn, "the zero page is never freed");
        self.freed += 1;
        let had_owner = self.owners.get(pfn as usize) != packed::pack(Owner::Free);
        self.owners.set(pfn as usize, packed::pack(Owner::Free));
        had_owner
    }

    pub fn owner(&self, pfn: u64) -> Owner {
        packed::unpack(self.owners.get(pfn as usize))
    }

    pub fn set_owner(&mut self, pfn: u64, owner: Owner) {
        self.owners.set(pfn as usize, packed::pack(owner));
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

    #[test]
    fn every_owner_packs_and_unpacks() {
        let all = [
            Owner::Free,
            Owner::Anon { mm: (1 << 25) - 1, vpn: 0x7f00_0000_0000 >> 12 },
            Owner::Anon { mm: 0, vpn: 1 },
            Owner::PageCache { file: 7, index: (1 << 36) - 1 },
            Owner::Zero,
            Owner::Pipe { pipe: u32::MAX },
            Owner::Slab { cache: u16::MAX, inuse: u32::MAX },
            Owner::KernelBlock,
            Owner::Buffer { block: 0 },
            Owner::Buffer { block: (1 << 60) - 1 },
            Owner::Tail { head: (1 << 61) - 1 },
        ];
        for o in all {
            assert_eq!(packed::unpack(packed::pack(o)), o);
        }
        assert!(std::panic::catch_unwind(|| packed::pack(Owner::Anon { mm: 1 << 25, vpn: 0 })).is_err());
    }
}
