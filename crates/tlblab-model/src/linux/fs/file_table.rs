//! `struct file` allocation (fs/file_table.c, v4.9): `get_empty_filp` takes one from the `filp`
//! cache (`SLAB_HWCACHE_ALIGN`); `__fput` -> `file_free` gives it back through `call_rcu`. The
//! grace period is not modelled: the free happens at `close` on the closing CPU, where the RCU
//! callback would run it later (the same CPU, so the same SLUB paths).

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::mm::slub::Object;
use crate::linux::Kernel;
use crate::time::Ps;

/// `filp`: `sizeof(struct file)` on v4.9 x86-64 taken as 232 bytes [UNVERIFIED: no pahole of a
/// 4.9 build at hand; 256 after `SLAB_HWCACHE_ALIGN` either way for 193..256].
pub const FILP_CACHE: (&str, u64) = ("filp", 232);

impl Kernel {
    /// `get_empty_filp()` on this CPU at `at`.
    pub(in crate::linux) fn get_empty_filp(&mut self, ctx: &mut Ctx, at: Ps) -> (Object, Ps) {
        let cache = self.fs.mount.as_ref().expect("fs booted").caches.filp;
        self.kmem_cache_alloc(ctx, at, cache, Bucket::Syscall)
    }

    /// `file_free()`: the object back to `filp` (see the module comment for the RCU delay).
    pub(in crate::linux) fn file_free(&mut self, ctx: &mut Ctx, at: Ps, filp: Object) -> Ps {
        self.kfree(ctx, at, filp, Bucket::Syscall)
    }
}
