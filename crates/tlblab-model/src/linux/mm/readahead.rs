//! Readahead's window rules (mm/readahead.c and the mmap entry points of mm/filemap.c, v4.2, as
//! read in a v4.2.8 tree), pure: the fault path (linux/mm/filemap.rs) asks them which pages to read
//! and which one to mark `PG_readahead`.
//!
//! A mapped file is read in two ways (v4.2):
//! - a fault on a page that is not cached: `do_sync_mmap_readahead` reads around it, `ra_pages`
//!   pages from `offset - ra_pages / 2`, and marks the page `ra_pages / 4` before the window's end
//!   (`async_size`); it counts the miss in `mmap_miss` and gives up reading around after
//!   `MMAP_LOTSAMISS` more misses than hits;
//! - a fault on a cached page: `do_async_mmap_readahead` counts a hit, and if the page carries
//!   the marker, `page_cache_async_readahead` clears it and `ondemand_readahead` pushes the
//!   window forward (`hit_readahead_marker`): the next window starts where the last ended, with
//!   the marker on its first page, so a sequential reader finds each window read one window
//!   ahead of it.
//!
//! `filemap_map_pages` (fault-around) decrements `mmap_miss` for each page it maps and skips a
//! marked page, so the marker is met by a real fault.
//!
//! A file with large folios (`file_folios = large`: ext4 from v6.16) follows v6.18's
//! `page_cache_async_ra` at a marker instead ([`RaState::async_mmap_folios`]): each window moves
//! on whole, two folio orders up from the last (docs/references/linux-6x.md#large-folios); the
//! read-around stays single pages.

/// `VM_MAX_READAHEAD` (128 KiB; `VM_READAHEAD_PAGES` in 6.x) in pages: a block device's
/// default `ra_pages` (its `read_ahead_kb`), unless its driver or the administrator set another.
pub const RA_PAGES: u64 = 32;
/// `MMAP_LOTSAMISS` (v4.2 mm/filemap.c).
const MMAP_LOTSAMISS: u32 = 100;
/// `MAX_PAGECACHE_ORDER` on x86-64 and arm64 with 4 KiB pages (v6.18: the PMD order, 2 MiB):
/// ext4's `mapping_max_folio_order`.
pub const MAX_PAGECACHE_ORDER: u8 = 9;

/// `struct file_ra_state` (v4.2), as far as mmap reads use it: the current window `[start,
/// start + size)`, of which the last `async_size` pages are read ahead asynchronously,
/// `mmap_miss`, and `ra_pages`, the most a read reads ahead (`file_ra_state_init` copies the
/// device's `read_ahead_kb` / 4 at open; 0: no readahead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaState {
    pub win: Window,
    pub mmap_miss: u32,
    pub ra_pages: u64,
    /// `ra->order` (v6.16): the folio order of the last window, for a file with large folios.
    pub order: u8,
}

impl Default for RaState {
    /// A file on a device with the default `read_ahead_kb`.
    fn default() -> RaState {
        RaState::new(RA_PAGES)
    }
}

/// A read to submit (`ra_submit` -> `__do_page_cache_readahead`): pages `[start, start + size)`
/// not yet cached are read in, and the one at `start + size - async_size` is marked
/// `PG_readahead` if this read brings it in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// The folio order `page_cache_ra_order` reads the window in (0: single pages).
    pub order: u8,
}

impl Window {
    /// The index `__do_page_cache_readahead` marks (`page_idx == nr_to_read - lookahead_size`).
    pub fn marker(&self) -> u64 {
        self.start + self.size - self.async_size
    }
}

/// `get_init_ra_size` (v4.2).
fn init_ra_size(size: u64, max: u64) -> u64 {
    let n = size.next_power_of_two();
    if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    }
}

/// `get_next_ra_size` (v4.2): the window ramps up by 4 while small, else by 2, up to `max`.
fn next_ra_size(cur: u64, max: u64) -> u64 {
    let n = if cur < max / 16 { 4 * cur } else { 2 * cur };
    n.min(max)
}

impl RaState {
    /// A file opened on a device whose `read_ahead_kb` is `ra_pages * 4`.
    pub fn new(ra_pages: u64) -> RaState {
        RaState { win: Window::default(), mmap_miss: 0, ra_pages, order: 0 }
    }

    /// `do_sync_mmap_readahead` (v4.2) for a fault at `offset` whose page is not cached (a VMA
    /// with neither `VM_SEQ_READ` nor `VM_RAND_READ`): count the miss; read around unless the
    /// file misses much more than it hits; none with readahead off (`!ra->ra_pages`).
    pub fn sync_mmap(&mut self, offset: u64) -> Option<Window> {
        if self.ra_pages == 0 {
            return None;
        }
        if self.mmap_miss < MMAP_LOTSAMISS * 10 {
            self.mmap_miss += 1;
        }
        if self.mmap_miss > MMAP_LOTSAMISS {
            return None;
        }
        let ra = self.ra_pages;
        // v6.16: the read-around is read in single pages (`ra->order = 0`).
        self.order = 0;
        self.win = Window { start: offset.saturating_sub(ra / 2), size: ra, async_size: ra / 4, order: 0 };
        Some(self.win)
    }

    /// `do_async_mmap_readahead` (v4.2) for a fault at `offset` that found its page cached,
    /// `marked` if it carries `PG_readahead` (the caller clears it): count the hit; on the
    /// marker, `ondemand_readahead` with `hit_readahead_marker` and `req_size = ra_pages`.
    /// `next_hole(index, max)` is `page_cache_next_hole`: the first index from `index` not
    /// cached, scanning at most `max` (`index + max` if all are).
    pub fn async_mmap(
        &mut self,
        offset: u64,
        marked: bool,
        next_hole: impl Fn(u64, u64) -> u64,
    ) -> Option<Window> {
        self.mmap_miss = self.mmap_miss.saturating_sub(1);
        if !marked || self.ra_pages == 0 {
            return None;
        }
        self.ondemand(offset, self.ra_pages, next_hole)
    }

    /// `do_async_mmap_readahead` -> `page_cache_async_ra` (v6.18) for a file with large folios:
    /// a fault at `offset` on a cached folio of `folio_nr` pages, `marked` if it carries
    /// `PG_readahead` (the caller clears it). At the expected marker (the window's marked index
    /// rounded down to the folio) the window moves on and ramps up; a marker met otherwise
    /// sizes the window from the cached run after it. Either way the order grows by 2 (up to
    /// PMD order and the window's `ilog2`, `page_cache_ra_order`), and the window's end is
    /// trimmed to a multiple of the new folio size (capped at `ra_pages`' alignment).
    pub fn async_mmap_folios(
        &mut self,
        offset: u64,
        marked: bool,
        folio_nr: u64,
        next_hole: impl Fn(u64, u64) -> u64,
    ) -> Option<Window> {
        self.mmap_miss = self.mmap_miss.saturating_sub(1);
        if !marked || self.ra_pages == 0 {
            return None;
        }
        let max = self.ra_pages;
        let w = &mut self.win;
        let expected = (w.start + w.size - w.async_size) & !(folio_nr - 1);
        if offset == expected {
            w.start += w.size;
            w.size = w.size.max(next_ra_size(w.size, max));
        } else {
            let start = next_hole(offset + 1, max);
            if start == 0 || start - offset > max {
                return None;
            }
            w.start = start;
            w.size = next_ra_size(start - offset + max, max);
        }
        // readit: the order ramps; the end is aligned to it (`1 << min(order, ffs(max) - 1)`).
        self.order = self.order.saturating_add(2);
        let align = 1u64 << (self.order as u32).min(max.trailing_zeros());
        let end = w.start + w.size;
        let aligned_end = end & !(align - 1);
        if aligned_end > w.start {
            w.size -= end - aligned_end;
        }
        w.async_size = w.size;
        // page_cache_ra_order: the order the window is read in, kept as `ra->order`.
        let order = self.order.min(MAX_PAGECACHE_ORDER).min(w.size.ilog2() as u8);
        self.order = order;
        w.order = order;
        Some(*w)
    }

    /// `filemap_map_pages` (v4.2) mapped a page: one hit.
    pub fn mapped_around(&mut self) {
        self.mmap_miss = self.mmap_miss.saturating_sub(1);
    }

    /// `ondemand_readahead` (v4.2) with `hit_readahead_marker` set (its only mmap caller).
    fn ondemand(&mut self, offset: u64, req: u64, next_hole: impl Fn(u64, u64) -> u64) -> Option<Window> {
        let max = self.ra_pages;
        let w = &mut self.win;
        if offset == 0 {
            // Start of file: initial_readahead.
            w.start = 0;
            w.size = init_ra_size(req, max);
            w.async_size = if w.size > req { w.size - req } else { w.size };
        } else if offset == w.marker() || offset == w.start + w.size {
            // The expected marker: a sequential reader; push the window forward.
            w.start += w.size;
            w.size = next_ra_size(w.size, max);
            w.async_size = w.size;
        } else {
            // A marker without valid readahead state: size the window from the cached run.
            let start = next_hole(offset + 1, max);
            if start == 0 || start - offset > max {
                return None;
            }
            w.start = start;
            w.size = next_ra_size(start - offset + req, max);
            w.async_size = w.size;
        }
        // readit: a read that would hit its own marker at once takes the next window too.
        if offset == w.start && w.size == w.async_size {
            w.async_size = next_ra_size(w.size, max);
            w.size += w.async_size;
        }
        Some(self.win)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sequential reader of a file of which nothing is cached, faulting where v4.2 faults
    /// (`filemap_map_pages` maps each 16-page block once its pages are cached, but never a
    /// marked page): each window is read one window ahead of the reader.
    #[test]
    fn a_sequential_mmap_reader_reads_each_window_one_window_ahead() {
        let mut ra = RaState::default();
        let none = |i: u64, _| i;
        // The first fault reads around page 0 and marks page 24.
        let w = ra.sync_mmap(0).unwrap();
        assert_eq!((w, w.marker()), (Window { start: 0, size: 32, async_size: 8, order: 0 }, 24));
        // The fault on page 24 (marked) reads 32..64, marked at 32.
        let w = ra.async_mmap(24, true, none).unwrap();
        assert_eq!((w, w.marker()), (Window { start: 32, size: 32, async_size: 32, order: 0 }, 32));
        // Then every 32 pages, the next 32.
        let w = ra.async_mmap(32, true, none).unwrap();
        assert_eq!((w.start, w.size, w.marker()), (64, 32, 64));
        // A fault on an unmarked cached page reads nothing and counts a hit.
        assert_eq!(ra.async_mmap(48, false, none), None);
        assert_eq!(ra.mmap_miss, 0);
        // A marker met out of sequence sizes the window from the cached run after it.
        let mut lost = RaState::default();
        let w = lost.async_mmap(100, true, |_, _| 110).unwrap();
        assert_eq!((w.start, w.size), (110, 32));
        assert_eq!(lost.async_mmap(100, true, |i, max| i + max), None, "cached beyond ra_pages");
    }

    #[test]
    fn the_disk_s_read_ahead_kb_sizes_the_windows() {
        // 8 MiB (2048 pages): the read-around reaches 1024 pages back, marked 512 before its end.
        let mut ra = RaState::new(2048);
        let w = ra.sync_mmap(5000).unwrap();
        assert_eq!((w, w.marker()), (Window { start: 3976, size: 2048, async_size: 512, order: 0 }, 5512));
        let w = ra.async_mmap(5512, true, |i, _| i).unwrap();
        assert_eq!((w.start, w.size), (6024, 2048));
        // 0: no readahead at all; the fault reads its own page.
        let mut off = RaState::new(0);
        assert_eq!(off.sync_mmap(5000), None);
        assert_eq!(off.async_mmap(5000, true, |i, _| i), None);
        assert_eq!(RaState::default().ra_pages, RA_PAGES);
    }

    /// v6.18 with large folios: the read-around is single pages; each window pushed forward
    /// at its marker is read in folios two orders larger, up to PMD order (and the window's
    /// `ilog2`), the marker on its first folio.
    #[test]
    fn a_large_folio_window_ramps_its_order_by_two_up_to_pmd_order() {
        let mut ra = RaState::new(2048);
        let none = |i: u64, _| i;
        let w = ra.sync_mmap(0).unwrap();
        assert_eq!((w.start, w.size, w.marker(), w.order), (0, 2048, 1536, 0));
        let mut at = (1536, 1);
        let mut orders = Vec::new();
        for k in 1..=6u64 {
            let w = ra.async_mmap_folios(at.0, true, at.1, none).unwrap();
            assert_eq!((w.start, w.size, w.marker()), (2048 * k, 2048, 2048 * k));
            orders.push(w.order);
            at = (w.start, 1 << w.order);
        }
        assert_eq!(orders, [2, 4, 6, 8, 9, 9]);
        // An unmarked folio reads nothing; a 128 KiB window caps the order at its ilog2 (5).
        assert_eq!(ra.async_mmap_folios(5000, false, 4, none), None);
        let mut small = RaState::default();
        small.sync_mmap(0);
        let mut at = (24, 1);
        let mut orders = Vec::new();
        for _ in 0..4 {
            let w = small.async_mmap_folios(at.0, true, at.1, none).unwrap();
            orders.push(w.order);
            at = (w.start, 1 << w.order);
        }
        assert_eq!(orders, [2, 4, 5, 5]);
    }

    #[test]
    fn read_around_stops_after_lots_of_misses() {
        let mut ra = RaState::default();
        for i in 0..MMAP_LOTSAMISS {
            assert!(ra.sync_mmap(1000 * i as u64).is_some());
        }
        assert_eq!(ra.sync_mmap(7), None);
        ra.mapped_around();
        ra.mapped_around();
        assert!(ra.sync_mmap(7).is_some());
    }
}
