//! zram, the compressed RAM block device swap writes to (drivers/block/zram/zram_drv.c, v6.6;
//! docs/references/linux-6x.md#zram), as far as a swapped-out page needs it: one table entry per
//! swap slot, and `page_same_filled`'s shortcut.
//!
//! - `zram_write_page`: `page_same_filled` compares the page's words with its first; a page whose
//!   words are all equal is stored as that word in the slot's table entry (`ZRAM_SAME`), with no
//!   compression and no zsmalloc object. Other pages are compressed (LZO-RLE by default, LZ4 on
//!   many Android kernels) into a zsmalloc object.
//! - `zram_read_page` of a `ZRAM_SAME` slot: `zram_fill_page`, the page filled with the word
//!   (`memset_l`), no decompression.
//! - `zram_slot_free_notify` (from `swap_free`): the slot's entry is cleared.
//!
//! The modelled pages are same-filled (madv-pageout's region is one `memset` of 0x88): the
//! compression path is not modelled and a page of other content is refused.

/// A swapped-out page's content as zram stores it: the word every word of a same-filled page
/// equals.
pub type SameWord = u64;

/// The device's table (`zram->table`), indexed by swap offset, and the free offsets the swap
/// allocator hands out.
#[derive(Debug, Default)]
pub struct Zram {
    table: Vec<Option<SameWord>>,
    /// Free offsets, the lowest on top: `scan_swap_map_slots` hands out the lowest free offset
    /// of the cluster it scans (one task, one cluster: the lowest free one).
    free: Vec<u32>,
}

impl Zram {
    /// `get_swap_pages` for one page: a free swap offset.
    pub fn alloc_slot(&mut self) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        self.table.push(None);
        (self.table.len() - 1) as u32
    }

    /// `zram_write_page` of a page whose words all equal `word` (`page_same_filled`): stored in
    /// the slot's entry.
    pub fn write_same(&mut self, slot: u32, word: SameWord) {
        let e = &mut self.table[slot as usize];
        assert!(e.is_none(), "zram slot {slot} written twice");
        *e = Some(word);
    }

    /// `zram_read_page` of a `ZRAM_SAME` slot: the word `zram_fill_page` fills the page with.
    pub fn read_same(&self, slot: u32) -> SameWord {
        self.table[slot as usize].unwrap_or_else(|| panic!("zram slot {slot} read before a write"))
    }

    /// `zram_slot_free_notify` (`swap_free`): the slot is free again.
    pub fn free_slot(&mut self, slot: u32) {
        self.table[slot as usize] = None;
        // Keep the lowest free offset on top.
        let at = self.free.partition_point(|&s| s > slot);
        self.free.insert(at, slot);
    }

    /// Slots holding a page.
    pub fn used(&self) -> usize {
        self.table.iter().filter(|e| e.is_some()).count()
    }
}

/// `page_same_filled` over a page of 512 words: whether every word equals the first, and it.
pub fn page_same_filled(words: &[u64]) -> Option<SameWord> {
    let first = *words.first()?;
    words.iter().all(|&w| w == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memset_page_is_same_filled_and_a_page_with_one_other_word_is_not() {
        let mut page = vec![0x8888_8888_8888_8888u64; 512];
        assert_eq!(page_same_filled(&page), Some(0x8888_8888_8888_8888));
        page[511] = 0;
        assert_eq!(page_same_filled(&page), None);
    }

    #[test]
    fn slots_are_reused_lowest_first_and_read_back_what_was_written() {
        let mut z = Zram::default();
        let (a, b, c) = (z.alloc_slot(), z.alloc_slot(), z.alloc_slot());
        assert_eq!((a, b, c), (0, 1, 2));
        z.write_same(b, 7);
        assert_eq!(z.read_same(b), 7);
        z.free_slot(c);
        z.free_slot(a);
        assert_eq!(z.alloc_slot(), 0);
        assert_eq!(z.alloc_slot(), 2);
        assert_eq!(z.used(), 1);
    }
}
