//! The page allocator's data structures (include/linux/mmzone.h): migratetypes, zones with their
//! buddy free areas, per-CPU page lists, watermarks, and the `struct page` fields the allocator
//! reads (`PageBuddy` + order, the migratetype cached for per-CPU lists).
//!
//! Lists are intrusive, as in the kernel: every page frame has one link pair, a block is on at
//! most one list (a buddy free list or a per-CPU list), and list operations touch the neighbours'
//! `struct page`s, which is what `zone->lock` hold times are made of (Aaron Lu, 2018: cache
//! misses on `struct page` dominate). Constants are x86-64's, the same in v4.9 and v5.14.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `MAX_ORDER` (v4.9 .. v5.14: 11, orders 0..=10).
pub const MAX_ORDER: u8 = 11;
/// `PAGE_ALLOC_COSTLY_ORDER`.
pub const PAGE_ALLOC_COSTLY_ORDER: u8 = 3;
/// `pageblock_order` = `HUGETLB_PAGE_ORDER` on x86-64 (2 MiB pageblocks).
pub const PAGEBLOCK_ORDER: u8 = 9;
/// `HPAGE_PMD_ORDER` (THP) on x86-64.
pub const HPAGE_PMD_ORDER: u8 = 9;
/// `MIGRATE_PCPTYPES`: migratetypes with per-CPU lists.
pub const MIGRATE_PCPTYPES: usize = 3;
/// Migratetypes the model keeps free lists for (no CMA, no isolation).
pub const MIGRATE_TYPES: usize = 4;

/// `enum migratetype` (v4.9 order; `MIGRATE_HIGHATOMIC == MIGRATE_PCPTYPES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigrateType {
    Unmovable = 0,
    Movable = 1,
    Reclaimable = 2,
    HighAtomic = 3,
}

impl MigrateType {
    pub const PCP: [MigrateType; MIGRATE_PCPTYPES] =
        [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable];

    pub fn from_index(i: usize) -> MigrateType {
        match i {
            0 => MigrateType::Unmovable,
            1 => MigrateType::Movable,
            2 => MigrateType::Reclaimable,
            _ => MigrateType::HighAtomic,
        }
    }

    /// `fallbacks[]` of mm/page_alloc.c (v4.9; unchanged in v5.14 without CMA).
    pub fn fallbacks(self) -> &'static [MigrateType] {
        match self {
            MigrateType::Unmovable => &[MigrateType::Reclaimable, MigrateType::Movable],
            MigrateType::Reclaimable => &[MigrateType::Unmovable, MigrateType::Movable],
            MigrateType::Movable => &[MigrateType::Reclaimable, MigrateType::Unmovable],
            MigrateType::HighAtomic => &[],
        }
    }
}

/// One LRU list (`lruvec->lists[lru]`) of folios by their first frame, 4 bytes each (the model's
/// frames are below 2^32): seed 002's 56 tlb_flush1 tasks put 1.8 M cached pages on the inactive
/// lists, and a `u64` per page took 8 MiB more per run. The list's size in pages
/// (`lruvec_lru_size`, which counts a large folio's pages) is kept beside it.
#[derive(Debug, Default)]
pub struct LruList {
    folios: VecDeque<u32>,
    pages: u64,
}

impl LruList {
    /// `list_del` of the folio at `pfn` (of `nr` pages) wherever it is (an isolation by address,
    /// not from the tail). Returns whether it was there.
    pub fn remove(&mut self, pfn: u64, nr: u64) -> bool {
        let Some(i) = self.folios.iter().position(|&p| p as u64 == pfn) else { return false };
        self.folios.remove(i);
        self.pages -= nr;
        true
    }

    /// `list_add`: the newest folio, of `nr` pages, at the head.
    pub fn push_front(&mut self, pfn: u64, nr: u64) {
        let p = u32::try_from(pfn).unwrap_or_else(|_| panic!("pfn {pfn} too large for an LRU list"));
        self.folios.push_front(p);
        self.pages += nr;
    }

    /// The oldest folio, from the tail; `nr` gives a folio's pages.
    pub fn pop_back(&mut self, nr: impl Fn(u64) -> u64) -> Option<u64> {
        let pfn = self.folios.pop_back().map(u64::from)?;
        self.pages -= nr(pfn);
        Some(pfn)
    }

    /// Folios on the list.
    pub fn len(&self) -> usize {
        self.folios.len()
    }

    /// Pages on the list.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    pub fn is_empty(&self) -> bool {
        self.folios.is_empty()
    }
}

/// "No page": the end of an intrusive list.
pub const NIL: u32 = u32::MAX;

/// What a page frame currently is, as far as the allocator knows (head pages only; the other
/// pages of a block keep `None`, as the kernel keeps `PageBuddy` only on the head).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    /// Not the head of any block (a tail, or a head absorbed by a merge).
    None,
    /// `PageBuddy`: head of a free block on `free_area[order].free_list[mt]`.
    Buddy,
    /// Head of a block on a per-CPU list.
    Pcp,
    /// Head of a block handed out to a caller.
    Allocated,
}

/// The `struct page` fields the allocator uses. Packed (11 bytes, not 12): one per page a run
/// touches, 1.8 M of them in seed 002's Skylake runs.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed)]
pub struct PageMeta {
    pub prev: u32,
    pub next: u32,
    pub order: u8,
    pub state: PageState,
    /// For a buddy block, the free list it is on; for a per-CPU or allocated block,
    /// `set_pcppage_migratetype` (page->index): the free list it goes back to.
    pub mt: MigrateType,
}

impl Default for PageMeta {
    fn default() -> Self {
        PageMeta { prev: NIL, next: NIL, order: 0, state: PageState::None, mt: MigrateType::Movable }
    }
}

/// Pages per `mem_map` section (16 MiB of memory, 48 KiB of `PageMeta`).
const SECTION_SHIFT: u32 = 12;

/// A zone's `struct page` array, allocated a section at a time (SPARSEMEM's `mem_section`): a
/// section nobody wrote since boot holds what boot left there, and that is computed, not stored
/// (a model node has 2^20 pages and a run touches a few percent of them; 12 MiB per node
/// otherwise). Boot frees the zone in `MAX_ORDER - 1` blocks in address order
/// (`memblock_free_all`), so an untouched page is a tail, or the head of a free top-order block
/// on the MOVABLE list, linked to the blocks beside it.
#[derive(Debug, Clone)]
pub struct MemMap {
    sections: Vec<Option<Box<[PageMeta]>>>,
    nr_pages: u32,
}

impl MemMap {
    /// `nr_pages` pages (a whole number of top-order blocks) as boot leaves them.
    pub fn new(nr_pages: u32) -> MemMap {
        let sections = (nr_pages as usize).div_ceil(1 << SECTION_SHIFT);
        MemMap { sections: vec![None; sections], nr_pages }
    }

    pub fn len(&self) -> usize {
        self.nr_pages as usize
    }

    pub fn is_empty(&self) -> bool {
        self.nr_pages == 0
    }

    /// The boot free list at the top order: its first and last block heads and its length.
    pub fn boot_list(&self) -> List {
        let block = 1u32 << (MAX_ORDER - 1);
        let n = self.nr_pages / block;
        if n == 0 {
            return List::default();
        }
        List { first: 0, last: (n - 1) * block, len: n }
    }

    /// Page `i` as boot left it.
    fn boot_page(&self, i: u32) -> PageMeta {
        let block = 1u32 << (MAX_ORDER - 1);
        if i % block != 0 {
            return PageMeta::default();
        }
        PageMeta {
            prev: if i == 0 { NIL } else { i - block },
            next: if i + block >= self.nr_pages { NIL } else { i + block },
            order: MAX_ORDER - 1,
            state: PageState::Buddy,
            mt: MigrateType::Movable,
        }
    }

    /// Page `i`'s `struct page`.
    #[inline]
    pub fn get(&self, i: u32) -> PageMeta {
        assert!(i < self.nr_pages, "page {i} of a {}-page zone", self.nr_pages);
        match &self.sections[(i >> SECTION_SHIFT) as usize] {
            Some(s) => s[(i & ((1 << SECTION_SHIFT) - 1)) as usize],
            None => self.boot_page(i),
        }
    }

    /// Page `i`'s `struct page`, for writing (its section made real first). Inlined whole, the
    /// panic out of line: every list operation of the allocator goes through it.
    #[inline(always)]
    pub fn get_mut(&mut self, i: u32) -> &mut PageMeta {
        if i >= self.nr_pages {
            outside(i, self.nr_pages);
        }
        let sec = (i >> SECTION_SHIFT) as usize;
        if self.sections[sec].is_none() {
            self.make_real(sec);
        }
        let s = self.sections[sec].as_mut().expect("made real above");
        &mut s[(i & ((1 << SECTION_SHIFT) - 1)) as usize]
    }

    /// Section `sec` as boot left it, stored. Out of line: once per section, while `get_mut`
    /// runs for every list operation of the allocator (a setup caching files makes millions).
    #[cold]
    #[inline(never)]
    fn make_real(&mut self, sec: usize) {
        let base = (sec as u32) << SECTION_SHIFT;
        let end = (base + (1 << SECTION_SHIFT)).min(self.nr_pages);
        let pages: Box<[PageMeta]> = (base..end).map(|j| self.boot_page(j)).collect();
        self.sections[sec] = Some(pages);
    }

    /// Sections written since boot (for tests).
    pub fn sections_allocated(&self) -> usize {
        self.sections.iter().filter(|s| s.is_some()).count()
    }
}

/// The panic of a page index past a zone's end ([`MemMap::get_mut`]).
#[cold]
#[inline(never)]
fn outside(i: u32, nr_pages: u32) -> ! {
    panic!("page {i} of a {nr_pages}-page zone")
}

/// An intrusive doubly linked list over a zone's page array (`struct list_head`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List {
    pub first: u32,
    pub last: u32,
    pub len: u32,
}

impl Default for List {
    fn default() -> Self {
        List { first: NIL, last: NIL, len: 0 }
    }
}

/// List surgery, reporting the other pages whose `struct page` it wrote (the neighbours).
impl List {
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `list_add`: at the head. Returns the old first page (its `prev` is written), if any.
    pub fn push_front(&mut self, pages: &mut MemMap, i: u32) -> Option<u32> {
        let old = self.first;
        let p = pages.get_mut(i);
        p.prev = NIL;
        p.next = old;
        if old == NIL {
            self.last = i;
        } else {
            pages.get_mut(old).prev = i;
        }
        self.first = i;
        self.len += 1;
        (old != NIL).then_some(old)
    }

    /// `list_add_tail`. Returns the old last page, if any.
    pub fn push_back(&mut self, pages: &mut MemMap, i: u32) -> Option<u32> {
        let old = self.last;
        let p = pages.get_mut(i);
        p.next = NIL;
        p.prev = old;
        if old == NIL {
            self.first = i;
        } else {
            pages.get_mut(old).next = i;
        }
        self.last = i;
        self.len += 1;
        (old != NIL).then_some(old)
    }

    /// `list_del`. Returns the neighbours written (up to two).
    pub fn remove(&mut self, pages: &mut MemMap, i: u32) -> [Option<u32>; 2] {
        let PageMeta { prev, next, .. } = pages.get(i);
        if prev == NIL {
            self.first = next;
        } else {
            pages.get_mut(prev).next = next;
        }
        if next == NIL {
            self.last = prev;
        } else {
            pages.get_mut(next).prev = prev;
        }
        let p = pages.get_mut(i);
        p.prev = NIL;
        p.next = NIL;
        self.len -= 1;
        [(prev != NIL).then_some(prev), (next != NIL).then_some(next)]
    }
}

/// `struct free_area`: one free list per migratetype and the count of free blocks.
#[derive(Debug, Clone, Copy, Default)]
pub struct FreeArea {
    pub free_list: [List; MIGRATE_TYPES],
    pub nr_free: u64,
}

/// `zone->watermark[]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

/// `struct per_cpu_pages`: `count` in base pages, `high`, `batch`, and the lists (how many and
/// which orders they hold is the era's; see `PcpLists`). `free_factor` is v5.13+; `high_min`,
/// `high_max`, `alloc_factor` and the previous-free-was-high-order flag are v6.7's (PCP high
/// auto-tuning; docs/references/linux-6x.md#pcp-auto-tuning), and equal `high`, 0, false before.
#[derive(Debug, Clone, Default)]
pub struct PerCpuPages {
    pub count: u64,
    pub high: u64,
    pub batch: u64,
    pub free_factor: u32,
    /// v6.7: the bounds `pcp->high` is tuned between (both equal `high` when it is not tuned).
    pub high_min: u64,
    pub high_max: u64,
    /// v6.7 (c0a242394cb9): order-0 refills take `batch << alloc_factor`.
    pub alloc_factor: u32,
    /// `PCPF_PREV_FREE_HIGH_ORDER` (v6.7's free_high detection).
    pub prev_free_high_order: bool,
    pub lists: Vec<List>,
}

/// `fls()`: the 1-based index of the highest set bit (0 for 0).
pub fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// `rounddown_pow_of_two()`.
pub fn rounddown_pow_of_two(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        1 << (63 - x.leading_zeros())
    }
}

/// `int_sqrt()`.
pub fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// `get_order(size)`: the smallest order whose block holds `size` bytes.
pub fn get_order(size: u64) -> u8 {
    let pages = size.div_ceil(4096).max(1);
    (64 - (pages - 1).leading_zeros()) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untouched_mem_map_reads_as_boot_left_it_and_costs_nothing() {
        let block = 1u32 << (MAX_ORDER - 1);
        let mut m = MemMap::new(12 * block);
        assert_eq!(m.sections_allocated(), 0);
        let l = m.boot_list();
        assert_eq!((l.first, l.last, l.len), (0, 11 * block, 12));
        // Boot's free list, walked through the computed pages, in address order.
        let (mut i, mut n) = (l.first, 0);
        while i != NIL {
            let p = m.get(i);
            assert_eq!((p.state, p.order, p.mt), (PageState::Buddy, MAX_ORDER - 1, MigrateType::Movable));
            assert_eq!(i, n * block);
            i = p.next;
            n += 1;
        }
        assert_eq!(n, 12);
        assert_eq!(m.get(5 * block + 1).state, PageState::None);
        // Writing makes the section real with the same contents, and only that section.
        let before: Vec<_> = (4 * block..8 * block).map(|j| m.get(j)).collect();
        m.get_mut(5 * block).order = 3;
        assert_eq!(m.sections_allocated(), 1);
        for (k, j) in (4 * block..8 * block).enumerate() {
            let (a, b) = (before[k], m.get(j));
            let order = if j == 5 * block { 3 } else { a.order };
            assert_eq!((a.prev, a.next, order, a.state, a.mt), (b.prev, b.next, b.order, b.state, b.mt));
        }
    }

    #[test]
    fn lru_lists_and_page_meta_stay_small() {
        let mut l = LruList::default();
        for pfn in [5, 6, (1 << 32) - 1] {
            l.push_front(pfn, if pfn == 6 { 4 } else { 1 });
        }
        assert_eq!(l.pages(), 6);
        let nr = |p| if p == 6 { 4 } else { 1 };
        assert_eq!((l.pop_back(nr), l.pop_back(nr), l.len(), l.pages()), (Some(5), Some(6), 1, 1));
        assert!(std::panic::catch_unwind(|| LruList::default().push_front(1 << 32, 1)).is_err());
        assert_eq!(std::mem::size_of::<PageMeta>(), 11);
    }
}
