//! Physical frames: a simple allocator (LIFO free list, then fresh frames) and each frame's
//! owner, which the safety oracle checks every TLB hit against.
//!
//! This is the seam the page-allocator issue replaces: callers only use `alloc` and `free`.

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
}

#[derive(Debug, Clone, Default)]
pub struct Frames {
    owners: Vec<Owner>,
    free: Vec<u64>,
    pub allocated: u64,
    pub freed: u64,
}

/// The shared zero page's frame.
pub const ZERO_PFN: u64 = 0;

impl Frames {
    pub fn new() -> Frames {
        Frames { owners: vec![Owner::Zero], free: Vec::new(), allocated: 0, freed: 0 }
    }

    pub fn alloc(&mut self, owner: Owner) -> u64 {
        self.allocated += 1;
        match self.free.pop() {
            Some(pfn) => {
                self.owners[pfn as usize] = owner;
                pfn
            }
            None => {
                self.owners.push(owner);
                self.owners.len() as u64 - 1
            }
        }
    }

    pub fn free(&mut self, pfn: u64) {
        assert_ne!(pfn, ZERO_PFN, "the zero page is never freed");
        assert_ne!(self.owners[pfn as usize], Owner::Free, "double free of pfn {pfn}");
        self.owners[pfn as usize] = Owner::Free;
        self.free.push(pfn);
        self.freed += 1;
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
    fn freed_frames_are_reused_last_in_first_out() {
        let mut f = Frames::new();
        let a = f.alloc(Owner::PageCache { file: 0, index: 0 });
        let b = f.alloc(Owner::PageCache { file: 0, index: 0 });
        assert_ne!(a, ZERO_PFN);
        f.free(a);
        f.free(b);
        assert_eq!(f.owner(a), Owner::Free);
        assert_eq!(f.alloc(Owner::Zero), b);
        assert_eq!(f.alloc(Owner::Zero), a);
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_is_a_bug() {
        let mut f = Frames::new();
        let a = f.alloc(Owner::PageCache { file: 0, index: 0 });
        f.free(a);
        f.free(a);
    }
}
