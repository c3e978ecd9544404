//! The page allocator's data structures (include/linux/mmzone.h): migratetypes, zones with their
//! buddy free areas, per-CPU page lists, watermarks, and the `struct page` fields the allocator
//! reads (`PageBuddy` + order, the migratetype cached for per-CPU lists).
//!
//! Lists are intrusive, as in the kernel: every page frame has one link pair, a block is on at
//! most one list (a buddy free list or a per-CPU list), and list operations touch the neighbours'
//! `struct page`s, which is what `zone->lock` hold times are made of (Aaron Lu, 2018: cache
//! misses on `struct page` dominate). Constants are x86-64's, the same in v4.9 and v5.14.

use serde::{Deserialize, Serialize};

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

/// The `struct page` fields the allocator uses.
#[derive(Debug, Clone, Copy)]
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
    pub fn push_front(&mut self, pages: &mut [PageMeta], i: u32) -> Option<u32> {
        let old = self.first;
        pages[i as usize].prev = NIL;
        pages[i as usize].next = old;
        if old == NIL {
            self.last = i;
        } else {
            pages[old as usize].prev = i;
        }
        self.first = i;
        self.len += 1;
        (old != NIL).then_some(old)
    }

    /// `list_add_tail`. Returns the old last page, if any.
    pub fn push_back(&mut self, pages: &mut [PageMeta], i: u32) -> Option<u32> {
        let old = self.last;
        pages[i as usize].next = NIL;
        pages[i as usize].prev = old;
        if old == NIL {
            self.first = i;
        } else {
            pages[old as usize].next = i;
        }
        self.last = i;
        self.len += 1;
        (old != NIL).then_some(old)
    }

    /// `list_del`. Returns the neighbours written (up to two).
    pub fn remove(&mut self, pages: &mut [PageMeta], i: u32) -> [Option<u32>; 2] {
        let PageMeta { prev, next, .. } = pages[i as usize];
        if prev == NIL {
            self.first = next;
        } else {
            pages[prev as usize].next = next;
        }
        if next == NIL {
            self.last = prev;
        } else {
            pages[next as usize].prev = prev;
        }
        pages[i as usize].prev = NIL;
        pages[i as usize].next = NIL;
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
/// which orders they hold is the era's; see `PcpLists`). `free_factor` is v5.13+.
#[derive(Debug, Clone, Default)]
pub struct PerCpuPages {
    pub count: u64,
    pub high: u64,
    pub batch: u64,
    pub free_factor: u32,
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
