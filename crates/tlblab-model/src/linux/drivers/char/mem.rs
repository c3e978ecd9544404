//! `/dev/zero` (drivers/char/mem.c, v5.10+; docs/references/linux-mm.md#tmpfs-write): `read(2)`
//! takes `zero_fops.read`, `read_zero`, which `clear_user`s the caller's buffer a page at a time
//! (`vfs_read` prefers `->read` to `->read_iter`, whose `iov_iter_zero` does the same stores).
//! Nothing else is done: no lock, no allocation, no file position.

use crate::attribution::Bucket;
use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::time::Ps;

impl Kernel {
    /// `read(fd, buf, 4096)` of `/dev/zero` into a user buffer in this CPU's cache: entry, the
    /// 4 KiB `clear_user` (a store stream at `memory.clear_page_mbps`, as a page clear), exit.
    /// The buffer's translation is the caller's (dd's loop touches it through the TLB).
    pub(in crate::linux) fn read_zero_page(&mut self, ctx: &mut Ctx) -> Ps {
        let half = self.costs.entry.syscall_half;
        let clear = self.costs.memory.clear_page;
        ctx.charge(Bucket::Syscall, half * 2 + clear);
        let now = ctx.now + half;
        let wait = self.bulk(ctx, now, crate::linux::include::linux::mm_types::PAGE_SIZE, clear);
        half * 2 + clear + wait
    }
}
