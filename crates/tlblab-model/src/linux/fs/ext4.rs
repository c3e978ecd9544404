//! ext4's part of creating a file (v4.9; fs/ext4/namei.c `ext4_create`, ialloc.c
//! `ext4_new_inode`, super.c `ext4_alloc_inode`, and jbd2's handle and journal heads), on a file
//! system of 4 KiB blocks, 256-byte inodes and `dir_index`, as mkfs.ext4 makes it.
//!
//! Per file, under the parent's `i_rwsem` (linux/fs/namei.rs):
//! - `ext4_journal_start` -> `jbd2__journal_start`: a handle from `jbd2_journal_handle`, freed
//!   by `ext4_journal_stop` at the end of the call (same CPU).
//! - `ext4_new_inode` -> `new_inode` -> `ext4_alloc_inode`: an `ext4_inode_info` from
//!   `ext4_inode_cache` (about 1 KiB: order-3 slabs as `calculate_order` gives, kernel/slab),
//!   kept. Inode numbers are handed out in order within the parent's group, so every
//!   `INODES_PER_BLOCK`-th inode starts a new inode table block: `__ext4_get_inode_loc` finds
//!   its buffer uncached and, every other inode of the block being free, zeroes it instead of
//!   reading it (`sb_getblk` -> a page of the block device's page cache, a `buffer_head`), and
//!   `ext4_journal_get_write_access` attaches a `journal_head`.
//! - `ext4_add_entry` -> `ext4_dx_add_entry`: the entry goes to the htree leaf its name's hash
//!   selects; a full leaf is split (`do_split`: a new block, half the entries move), which takes
//!   a metadata page the same way. fs_mark's names end in 24 random characters, so their hashes
//!   are uniform: the model draws each from a seeded stream and keeps the leaves' hash ranges.
//!
//! Not modelled: the block and inode bitmaps' and group descriptors' buffers (cached after the
//! first file), the extent status tree (a zero-size file has no extents), the journal commit
//! and checkpoint (every 5 s by default, outside a measured window: the journal heads stay),
//! the htree's index blocks, and the migratetype of the caches' slabs (`SLAB_RECLAIM_ACCOUNT`
//! makes dentry and inode slabs reclaimable in Linux; here every slab is unmovable, which
//! decides only the free list a page comes from).

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::Kernel;
use crate::rng::Rng;
use crate::time::Ps;

/// `ext4_inode_cache`: `sizeof(struct ext4_inode_info)` taken as 1072 bytes on v4.9 x86-64
/// [UNVERIFIED: no pahole of a 4.9 build at hand; slabinfo of 4.x kernels shows objects of
/// 1.0-1.1 KiB]; no `SLAB_HWCACHE_ALIGN`.
pub const EXT4_INODE_CACHE: (&str, u64) = ("ext4_inode_cache", 1072);
/// `jbd2_journal_handle`: `handle_t`, taken as 56 bytes (unverified).
pub const JBD2_HANDLE_CACHE: (&str, u64) = ("jbd2_journal_handle", 56);
/// `jbd2_journal_head`: `struct journal_head`, taken as 112 bytes (unverified).
pub const JOURNAL_HEAD_CACHE: (&str, u64) = ("jbd2_journal_head", 112);
/// `buffer_head`: `struct buffer_head`, 104 bytes on 64-bit.
pub const BUFFER_HEAD_CACHE: (&str, u64) = ("buffer_head", 104);
/// mkfs.ext4's defaults: 4 KiB blocks, 256-byte inodes.
pub const BLOCK_SIZE: u64 = 4096;
pub const INODE_SIZE: u64 = 256;
pub const INODES_PER_BLOCK: u64 = BLOCK_SIZE / INODE_SIZE;

/// `EXT4_DIR_REC_LEN(name_len)`: an 8-byte header and the name, 4-byte aligned.
pub fn dir_rec_len(name_len: u32) -> u64 {
    (name_len as u64 + 8 + 3) & !3
}

crate::linux::vmstat::counters! {
    /// ext4 and jbd2, counted.
    Counters {
        ext4_inodes,
        /// Inode table blocks a new inode started.
        ext4_itable_blocks,
        /// Directory leaf blocks added by htree splits.
        ext4_dir_splits,
        /// Metadata pages taken from the page allocator (inode table and directory blocks).
        ext4_metadata_pages,
    }
}

/// A directory's htree leaves: each covers the hashes from its start to the next one's, and
/// holds its entries' hashes.
#[derive(Debug, Clone, Default)]
pub struct DirIndex {
    /// (first hash, the entries' hashes), sorted by first hash; empty until the first entry.
    leaves: Vec<(u32, Vec<u32>)>,
}

impl DirIndex {
    /// Adds an entry with `hash` to a leaf holding at most `capacity` entries; returns whether
    /// the leaf was full and split first (a new block).
    pub fn insert(&mut self, hash: u32, capacity: u32) -> bool {
        if self.leaves.is_empty() {
            self.leaves.push((0, Vec::new()));
        }
        let mut i = self.leaves.partition_point(|l| l.0 <= hash) - 1;
        let mut split = false;
        if self.leaves[i].1.len() >= capacity as usize {
            // do_split (v4.9): sort the leaf's entries by hash and move the upper half, from
            // the median hash on, to a new block.
            let hashes = &mut self.leaves[i].1;
            hashes.sort_unstable();
            let upper = hashes.split_off(hashes.len() / 2);
            let median = upper[0];
            self.leaves.insert(i + 1, (median, upper));
            if hash >= median {
                i += 1;
            }
            split = true;
        }
        self.leaves[i].1.push(hash);
        split
    }

    pub fn blocks(&self) -> usize {
        self.leaves.len()
    }
}

/// The file system's allocation state.
#[derive(Debug, Clone)]
pub struct Ext4 {
    /// Inodes allocated so far (the next one's index in its group's table).
    pub inodes: u64,
    /// Metadata blocks taken so far (names the pages in the frame map).
    pub blocks: u64,
    /// The names' hashes (`ext4fs_dirhash` of fs_mark's random names: uniform).
    hashes: Rng,
}

impl Ext4 {
    pub fn new(seed: u64) -> Ext4 {
        Ext4 { inodes: 0, blocks: 0, hashes: Rng::stream(seed, "ext4 name hashes") }
    }
}

impl Kernel {
    /// `ext4_create()` of a name of `name_len` bytes in `dir`, on this CPU at `at` (under the
    /// parent's lock): the allocations of the module comment. Returns the time they took.
    pub(in crate::linux) fn ext4_create(&mut self, ctx: &mut Ctx, at: Ps, dir: u32, name_len: u32) -> Ps {
        let caches = self.fs.mount.as_ref().expect("fs booted").caches;
        let mut now = at;
        let (handle, d) = self.kmem_cache_alloc(ctx, now, caches.jbd2_handle, Bucket::Syscall);
        now += d;
        let (_inode, d) = self.kmem_cache_alloc(ctx, now, caches.ext4_inode, Bucket::Syscall);
        now += d;
        self.counters.ext4.ext4_inodes += 1;
        let fs = self.fs.mount.as_mut().expect("fs booted");
        let first_of_block = fs.ext4.inodes % INODES_PER_BLOCK == 0;
        fs.ext4.inodes += 1;
        if first_of_block {
            self.counters.ext4.ext4_itable_blocks += 1;
            now += self.ext4_metadata_block(ctx, now);
        }
        let fs = self.fs.mount.as_mut().expect("fs booted");
        let hash = fs.ext4.hashes.below(1 << 32) as u32;
        let capacity = (BLOCK_SIZE / dir_rec_len(name_len)) as u32;
        if fs.dirs[dir as usize].index.insert(hash, capacity) {
            self.counters.ext4.ext4_dir_splits += 1;
            now += self.ext4_metadata_block(ctx, now);
        }
        now += self.kfree(ctx, now, handle, Bucket::Syscall);
        now - at
    }

    /// A metadata block entering the cache and the running transaction: a page of the block
    /// device's page cache, its `buffer_head`, a `journal_head`. Returns the time taken.
    fn ext4_metadata_block(&mut self, ctx: &mut Ctx, at: Ps) -> Ps {
        let fs = self.fs.mount.as_mut().expect("fs booted");
        let block = fs.ext4.blocks;
        fs.ext4.blocks += 1;
        let caches = fs.caches;
        self.counters.ext4.ext4_metadata_pages += 1;
        let mut now = at;
        let (_pfn, d) = self.alloc_frame(ctx, now, Owner::Buffer { block }, Bucket::Syscall);
        now += d;
        let (_bh, d) = self.kmem_cache_alloc(ctx, now, caches.buffer_head, Bucket::Syscall);
        now += d;
        let (_jh, d) = self.kmem_cache_alloc(ctx, now, caches.journal_head, Bucket::Syscall);
        now += d;
        now - at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rec_len_and_capacity_follow_ext4() {
        assert_eq!(dir_rec_len(40), 48);
        assert_eq!(dir_rec_len(1), 12);
        assert_eq!(BLOCK_SIZE / dir_rec_len(40), 85);
    }

    #[test]
    fn leaves_split_when_full_and_fill_about_seventy_percent_under_uniform_hashes() {
        let mut d = DirIndex::default();
        let mut rng = Rng::stream(1, "t");
        let mut splits = 0;
        for _ in 0..100_000 {
            splits += d.insert(rng.below(1 << 32) as u32, 85) as usize;
        }
        assert_eq!(d.blocks(), splits + 1);
        let total: usize = d.leaves.iter().map(|l| l.1.len()).sum();
        assert_eq!(total, 100_000);
        // Random insertion into split-in-half nodes fills them to about ln 2 (Yao 1978).
        let fill = 100_000.0 / (d.blocks() as f64 * 85.0);
        assert!((0.6..0.8).contains(&fill), "fill {fill}");
    }
}
