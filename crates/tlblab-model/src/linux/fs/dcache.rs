//! Dentry allocation (fs/dcache.c, v4.9): `d_alloc` -> `__d_alloc` takes a `struct dentry` from
//! `dentry_cache` and, for a name longer than `DNAME_INLINE_LEN - 1` bytes, `kmalloc`s an
//! `external_name` for it. fs_mark's 40-byte names take that path: a kmalloc-64 object per file
//! besides the dentry. The dentry and its name stay (the file exists); nothing here is freed
//! during an fsmark run. Hashing (`d_add`) and the LRU are part of the path cost in `[fs]`.

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::time::Ps;

/// `dentry_cache`: `KMEM_CACHE(dentry, SLAB_RECLAIM_ACCOUNT | ...)`, no `SLAB_HWCACHE_ALIGN`;
/// `struct dentry` is 192 bytes on 64-bit (three cache lines by design, v4.9).
pub const DENTRY_CACHE: (&str, u64) = ("dentry", 192);
/// `DNAME_INLINE_LEN` on 64-bit (include/linux/dcache.h, v4.9).
pub const DNAME_INLINE_LEN: u32 = 32;
/// `offsetof(struct external_name, name[1])`: the union with an `rcu_head` (16 bytes) + 1.
pub const EXTERNAL_NAME_HEADER: u64 = 17;

crate::linux::vmstat::counters! {
    /// The dentry cache, counted.
    Counters {
        d_allocs,
        /// Names too long to sit inline in the dentry.
        d_external_names,
    }
}

impl Kernel {
    /// `d_alloc(parent, name)` of a name of `name_len` bytes on this CPU at `at`.
    pub(in crate::linux) fn d_alloc(&mut self, ctx: &mut Ctx, at: Ps, name_len: u32) -> Ps {
        let cache = self.fs.mount.as_ref().expect("fs booted").caches.dentry;
        let (_dentry, mut d) = self.kmem_cache_alloc(ctx, at, cache, Bucket::Syscall);
        self.counters.dcache.d_allocs += 1;
        if name_len > DNAME_INLINE_LEN - 1 {
            let (_name, e) =
                self.kmalloc(ctx, at + d, EXTERNAL_NAME_HEADER + name_len as u64, Bucket::Syscall);
            d += e;
            self.counters.dcache.d_external_names += 1;
        }
        d
    }
}
