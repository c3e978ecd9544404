//! The buddy lists of one zone (mm/page_alloc.c, v4.9): `__rmqueue_smallest` + `expand`,
//! `__rmqueue_fallback` with pageblock stealing, `__free_one_page`, and the watermark test. Every
//! `struct page` a call touches is counted in its [`Section`], which prices the `zone->lock`
//! hold.

use super::{PageAllocStats, Zone};
use crate::linux::include::linux::mmzone::*;

/// Work done inside one `zone->lock` section, priced at the end.
#[derive(Debug, Default)]
pub(super) struct Section {
    pub(super) blocks: u32,
    pub(super) touches: u32,
    pub(super) splits: u32,
    pub(super) merges: u32,
    recent: [u32; 8],
    next: usize,
}

impl Section {
    pub(super) fn new() -> Section {
        Section { recent: [NIL; 8], ..Default::default() }
    }

    /// One `struct page` line touched; a line touched again soon after is still cached.
    pub(super) fn touch(&mut self, i: u32) {
        if self.recent.contains(&i) {
            return;
        }
        self.recent[self.next] = i;
        self.next = (self.next + 1) % self.recent.len();
        self.touches += 1;
    }

    pub(super) fn touch_all(&mut self, it: impl IntoIterator<Item = Option<u32>>) {
        for i in it.into_iter().flatten() {
            self.touch(i);
        }
    }
}

impl Zone {
    pub(super) fn mt_of(&self, i: u32) -> MigrateType {
        self.pageblock_mt[(i >> PAGEBLOCK_ORDER) as usize]
    }

    /// `page_is_buddy()`: free (PageBuddy) at exactly `order`.
    pub fn is_buddy(&self, i: u32, order: u8) -> bool {
        let p = self.pages.get(i);
        p.state == PageState::Buddy && p.order == order
    }

    pub(super) fn list_add(&mut self, i: u32, order: u8, mt: MigrateType, tail: bool, s: &mut Section) {
        let p = self.pages.get_mut(i);
        p.order = order;
        p.state = PageState::Buddy;
        p.mt = mt;
        s.touch(i);
        let list = &mut self.free_area[order as usize].free_list[mt as usize];
        let n = if tail { list.push_back(&mut self.pages, i) } else { list.push_front(&mut self.pages, i) };
        s.touch_all([n]);
        self.free_area[order as usize].nr_free += 1;
        s.blocks += 1;
    }

    pub(super) fn list_del(&mut self, i: u32, order: u8, mt: MigrateType, s: &mut Section) {
        s.touch(i);
        let n = self.free_area[order as usize].free_list[mt as usize].remove(&mut self.pages, i);
        s.touch_all(n);
        self.free_area[order as usize].nr_free -= 1;
        self.pages.get_mut(i).state = PageState::None;
        s.blocks += 1;
    }

    /// Which free list a buddy block is on (the kernel's `list_del` needs no list head; ours
    /// keeps it in the page).
    pub(super) fn buddy_list_of(&self, i: u32) -> MigrateType {
        self.pages.get(i).mt
    }

    /// `expand()`: split a block of `high` down to `low`, the upper halves going to the free
    /// lists of `mt` (at the head).
    pub(super) fn expand(&mut self, i: u32, low: u8, mut high: u8, mt: MigrateType, s: &mut Section) {
        while high > low {
            high -= 1;
            self.list_add(i + (1 << high), high, mt, false, s);
            s.splits += 1;
        }
    }

    /// `__rmqueue_smallest()`.
    pub(super) fn rmqueue_smallest(&mut self, order: u8, mt: MigrateType, s: &mut Section) -> Option<u32> {
        for cur in order..MAX_ORDER {
            let i = self.free_area[cur as usize].free_list[mt as usize].first;
            if i == NIL {
                continue;
            }
            self.list_del(i, cur, mt, s);
            self.expand(i, order, cur, mt, s);
            self.pages.get_mut(i).mt = mt;
            return Some(i);
        }
        None
    }

    /// `move_freepages_block()`: every free block inside `i`'s pageblock moves to `mt`'s lists.
    /// Walks the pageblock's `struct page`s as the kernel does. Returns base pages moved.
    pub(super) fn move_freepages_block(&mut self, i: u32, mt: MigrateType, s: &mut Section) -> u64 {
        let start = i & !((1 << PAGEBLOCK_ORDER) - 1);
        let end = start + (1 << PAGEBLOCK_ORDER);
        let (mut j, mut moved) = (start, 0);
        while j < end {
            s.touch(j);
            if self.pages.get(j).state != PageState::Buddy {
                j += 1;
                continue;
            }
            let order = self.pages.get(j).order;
            let from = self.buddy_list_of(j);
            self.list_del(j, order, from, s);
            self.list_add(j, order, mt, false, s);
            moved += 1 << order;
            j += 1 << order;
        }
        moved
    }

    /// `__rmqueue_fallback()` (v4.9): the largest block of a fallback migratetype; steal its
    /// pageblock when `can_steal_fallback()` says so (orders >= pageblock_order / 2, or an
    /// unmovable / reclaimable request), claiming it when over half of it was free.
    pub(super) fn rmqueue_fallback(
        &mut self,
        order: u8,
        mt: MigrateType,
        st: &mut PageAllocStats,
        s: &mut Section,
    ) -> Option<u32> {
        for cur in (order..MAX_ORDER).rev() {
            let Some(&fb) = mt
                .fallbacks()
                .iter()
                .find(|&&f| !self.free_area[cur as usize].free_list[f as usize].is_empty())
            else {
                continue;
            };
            let i = self.free_area[cur as usize].free_list[fb as usize].first;
            let can_steal = cur >= PAGEBLOCK_ORDER / 2 || mt != MigrateType::Movable;
            if can_steal {
                if cur >= PAGEBLOCK_ORDER {
                    // change_pageblock_range(): the whole block is ours.
                    let first = (i >> PAGEBLOCK_ORDER) as usize;
                    for b in first..first + (1 << (cur - PAGEBLOCK_ORDER)) {
                        self.pageblock_mt[b] = mt;
                    }
                    st.pageblocks_stolen += 1 << (cur - PAGEBLOCK_ORDER);
                } else {
                    let moved = self.move_freepages_block(i, mt, s);
                    if moved >= 1 << (PAGEBLOCK_ORDER - 1) {
                        self.pageblock_mt[(i >> PAGEBLOCK_ORDER) as usize] = mt;
                        st.pageblocks_stolen += 1;
                    }
                }
            }
            st.fallbacks += 1;
            let list = self.buddy_list_of(i);
            self.list_del(i, cur, list, s);
            self.expand(i, order, cur, mt, s);
            self.pages.get_mut(i).mt = mt;
            return Some(i);
        }
        None
    }

    /// `__rmqueue()`.
    pub(super) fn rmqueue(
        &mut self,
        order: u8,
        mt: MigrateType,
        st: &mut PageAllocStats,
        s: &mut Section,
    ) -> Option<u32> {
        let i = self.rmqueue_smallest(order, mt, s).or_else(|| self.rmqueue_fallback(order, mt, st, s))?;
        self.nr_free -= 1 << order;
        Some(i)
    }

    /// `free_pcppages_bulk()`'s freeing half: blocks picked off a CPU's lists back to the buddy
    /// lists under the caller's `zone->lock` section, each at its own migratetype.
    pub(super) fn free_picked(&mut self, picked: &[(u32, u8)], s: &mut Section) {
        for &(j, o) in picked {
            self.pages.get_mut(j).state = PageState::None;
            let pmt = self.pages.get(j).mt;
            self.free_one_page(j, o, pmt, s);
        }
    }

    /// `__free_one_page()` (v4.9): merge with the buddy while it is free at the same order,
    /// then add at the head, or at the tail when the next-order buddy is free too.
    pub(super) fn free_one_page(&mut self, mut i: u32, mut order: u8, mt: MigrateType, s: &mut Section) {
        // Back on the buddy lists: what a refill takes from here is cold.
        self.set_warm(i, false);
        self.nr_free += 1 << order;
        s.touch(i);
        while order < MAX_ORDER - 1 {
            let buddy = i ^ (1 << order);
            if buddy as usize >= self.pages.len() {
                break;
            }
            s.touch(buddy);
            if !self.is_buddy(buddy, order) {
                break;
            }
            let from = self.buddy_list_of(buddy);
            self.list_del(buddy, order, from, s);
            s.merges += 1;
            self.pages.get_mut(i).state = PageState::None;
            i &= buddy;
            order += 1;
        }
        let mut tail = false;
        if order < MAX_ORDER - 2 {
            let higher = (i & !(1 << order)) ^ (1 << (order + 1));
            if (higher as usize) < self.pages.len() {
                s.touch(higher);
                tail = self.is_buddy(higher, order + 1);
            }
        }
        self.list_add(i, order, mt, tail, s);
    }

    /// `zone_watermark_ok()` (v4.9 `__zone_watermark_ok` without reserves): enough free pages
    /// above `mark`, and for order > 0 a free block of at least that order.
    pub fn watermark_ok(&self, order: u8, mark: u64) -> bool {
        let free = self.nr_free as i64 - (1i64 << order) + 1;
        if free <= mark as i64 {
            return false;
        }
        order == 0
            || (order..MAX_ORDER).any(|o| {
                self.free_area[o as usize].free_list[..MIGRATE_PCPTYPES].iter().any(|l| !l.is_empty())
            })
    }
}
