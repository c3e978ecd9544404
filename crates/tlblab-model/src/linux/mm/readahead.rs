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

/// `VM_MAX_READAHEAD` (128 KiB; `VM_READAHEAD_PAGES` in 6.x) in pages: a block device's
/// default `ra_pages` (its `read_ahead_kb`), unless its driver or the administrator set another.
pub const RA_PAGES: u64 = 32;
/// `MMAP_LOTSAMISS` (v4.2 mm/filemap.c).
const MMAP_LOTSAMISS: u32 = 100;

/// `struct file_ra_state` (v4.2), as far as mmap reads use it: the current window `[start,
/// start + size)`, of which the last `async_size` pages are read ahead asynchronously,
/// `mmap_miss`, and `ra_pages`, the most a read reads ahead (`file_ra_state_init` copies the
/// device's `read_ahead_kb` / 4 at open; 0: no readahead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaState {
    pub win: Window,
    pub mmap_miss: u32,
    pub ra_pages: u64,
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
        RaState { win: Window::default(), mmap_miss: 0, ra_pages }
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
        self.win = Window { start: offset.saturating_sub(ra / 2), size: ra, async_size: ra / 4 };
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
        assert_eq!((w, w.marker()), (Window { start: 0, size: 32, async_size: 8 }, 24));
        // The fault on page 24 (marked) reads 32..64, marked at 32.
        let w = ra.async_mmap(24, true, none).unwrap();
        assert_eq!((w, w.marker()), (Window { start: 32, size: 32, async_size: 32 }, 32));
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
        assert_eq!((w, w.marker()), (Window { start: 3976, size: 2048, async_size: 512 }, 5512));
        let w = ra.async_mmap(5512, true, |i, _| i).unwrap();
        assert_eq!((w.start, w.size), (6024, 2048));
        // 0: no readahead at all; the fault reads its own page.
        let mut off = RaState::new(0);
        assert_eq!(off.sync_mmap(5000), None);
        assert_eq!(off.async_mmap(5000, true, |i, _| i), None);
        assert_eq!(RaState::default().ra_pages, RA_PAGES);
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
