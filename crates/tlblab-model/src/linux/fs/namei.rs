//! File creation (fs/namei.c, v4.9), as fsmark's zero-size files run it: `open(O_CREAT)` and
//! `mkdir()` of a directory that already exists, with the pieces of fs/open.c and fs/read_write.c
//! they need (`close`, a zero-length `write`).
//!
//! `do_sys_open` -> `getname` (a `names_cache` object: `PATH_MAX` bytes, order-3 slabs) ->
//! `path_openat`: `get_empty_filp` (linux/fs/file_table.rs), the walk of the path's components,
//! then `do_last`, which for `O_CREAT` takes the parent directory's `i_rwsem` exclusively
//! (`inode_lock`, v4.9) around `lookup_open`: the dcache miss, `d_alloc` (linux/fs/dcache.rs),
//! `ext4_lookup`, and `vfs_create` -> `ext4_create` (linux/fs/ext4.rs). After the unlock, the open
//! finishes (`do_dentry_open`, `fd_install`) and `putname` frees the name. fs_mark's per-file
//! `mkdir()` of its target directory (`filename_create`) takes the same kind of lock on that
//! directory's parent, finds the entry and returns `-EEXIST`.
//!
//! So per file the allocations that stay are a dentry, an inode and, now and then, metadata
//! pages and their buffer and journal heads; the name and the `struct file` are freed on the
//! same CPU (the file at close: `file_free` goes through `call_rcu`, whose grace period is not
//! modelled, so the free happens at close). Nothing the run keeps is freed.
//!
//! On tmpfs (fsmark's `--fs tmpfs`, [`FsKind::Tmpfs`]) the walk, the parent's exclusive
//! `i_rwsem` around `lookup_open` and the `d_alloc` are the same, and `vfs_create` is
//! `shmem_create` -> `shmem_mknod` (linux/mm/shmem.rs): an inode from `shmem_inode_cache` and
//! nothing else the model allocates; no journal, no inode table, no directory blocks
//! (docs/references/linux-mm.md#tmpfs-create).
//!
//! `i_rwsem` is modelled as a FIFO lock on its line (hw/lock.rs) held for the locked section, as
//! `pipe->mutex` is: a v4.9 rwsem writer spins while the owner runs (`rwsem_optimistic_spin`)
//! and no holder sleeps here (no I/O: the inode table block of a fresh group is zeroed, not
//! read; no journal commit in a millisecond window). The section runs as its own continuation
//! so that it asks for the lock at the time it reaches it (requests in time order).

use super::dcache;
use super::ext4::{DirIndex, Ext4};
use crate::attribution::Bucket;
use crate::hw::lock::SpinLock;
use crate::linux::ctx::Ctx;
use crate::linux::mm::slub::{CacheId, Object, Slab};
use crate::linux::{Continuation, Kernel};
use crate::profile::{MachineProfile, ProfileError};
use crate::time::Ps;

/// `names_cache`: `PATH_MAX` bytes, `SLAB_HWCACHE_ALIGN` (fs/dcache.c `vfs_caches_init`, v4.9).
pub const NAMES_CACHE: (&str, u64) = ("names_cache", 4096);

crate::linux::vmstat::counters! {
    /// File creation, counted.
    Counters {
        /// `open(O_CREAT)` calls that created a file.
        fs_creates,
        /// `mkdir()` calls that found the directory (`-EEXIST`).
        fs_mkdir_exists,
        /// Zero-length `write()` calls.
        fs_empty_writes,
        fs_closes,
        /// Directory `i_rwsem` acquisitions that found it held.
        fs_dir_lock_contended,
    }
}

/// What the paths cost besides entry/exit, SLUB and the page allocator, and the lock (`[fs]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    pub open_walk: Ps,
    pub create_locked: Ps,
    pub mkdir_walk: Ps,
    pub mkdir_lookup: Ps,
    pub write_empty: Ps,
    pub close: Ps,
    /// fs_mark's user-space work per file (the workload charges it as user time).
    pub fsmark_user: Ps,
}

impl Costs {
    pub fn from_profile(p: &MachineProfile) -> Result<Costs, ProfileError> {
        let f = p.fs()?;
        let mhz = p.clock_mhz();
        let c = |s: &crate::profile::Sourced| Ps::from_cycles(s.value, mhz);
        Ok(Costs {
            open_walk: c(&f.open_walk_cycles),
            create_locked: c(&f.create_locked_cycles),
            mkdir_walk: c(&f.mkdir_walk_cycles),
            mkdir_lookup: c(&f.mkdir_lookup_cycles),
            write_empty: c(&f.write_empty_cycles),
            close: c(&f.close_cycles),
            fsmark_user: c(&f.fsmark_user_cycles),
        })
    }
}

/// A directory: its `i_rwsem` and, for ext4, its htree's leaf blocks.
#[derive(Debug, Clone, Default)]
pub struct Dir {
    pub lock: SpinLock,
    pub index: DirIndex,
}

/// Which file system the directories are on: what `vfs_create` allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsKind {
    /// ext4 as mkfs.ext4 makes it (linux/fs/ext4.rs): seed 004's fsmark.
    #[default]
    Ext4,
    /// tmpfs (linux/mm/shmem.rs): a dcache-only directory, an inode per file.
    Tmpfs,
}

/// The slab caches the paths allocate from, created at boot.
#[derive(Debug, Clone, Copy)]
pub struct FsCaches {
    pub names: CacheId,
    pub filp: CacheId,
    pub dentry: CacheId,
    pub ext4_inode: CacheId,
    pub jbd2_handle: CacheId,
    pub journal_head: CacheId,
    pub buffer_head: CacheId,
    /// `shmem_inode_cache`, created when tmpfs is mounted ([`Kernel::mount_tmpfs`]).
    pub shmem_inode: Option<CacheId>,
}

/// The mounted file system: its directories, each task's open file and pending name, ext4's
/// journal and inode state.
#[derive(Debug, Clone)]
pub struct Mount {
    pub costs: Costs,
    pub caches: FsCaches,
    pub dirs: Vec<Dir>,
    /// Per task: the `struct file` of its open file (fs_mark has one at a time).
    open: Vec<Option<Object>>,
    /// Per task: the `names_cache` object of the call in progress.
    name: Vec<Option<Object>>,
    pub ext4: Ext4,
    pub kind: FsKind,
}

impl Mount {
    /// Boot: the caches in `slab` and an empty file system.
    pub fn new(costs: Costs, slab: &mut Slab, seed: u64) -> Mount {
        let caches = FsCaches {
            names: slab.create(NAMES_CACHE.0, NAMES_CACHE.1, true),
            filp: slab.create(super::file_table::FILP_CACHE.0, super::file_table::FILP_CACHE.1, true),
            dentry: slab.create(dcache::DENTRY_CACHE.0, dcache::DENTRY_CACHE.1, false),
            ext4_inode: slab.create(super::ext4::EXT4_INODE_CACHE.0, super::ext4::EXT4_INODE_CACHE.1, false),
            jbd2_handle: slab.create(
                super::ext4::JBD2_HANDLE_CACHE.0,
                super::ext4::JBD2_HANDLE_CACHE.1,
                false,
            ),
            journal_head: slab.create(
                super::ext4::JOURNAL_HEAD_CACHE.0,
                super::ext4::JOURNAL_HEAD_CACHE.1,
                false,
            ),
            buffer_head: slab.create(
                super::ext4::BUFFER_HEAD_CACHE.0,
                super::ext4::BUFFER_HEAD_CACHE.1,
                false,
            ),
            shmem_inode: None,
        };
        Mount {
            costs,
            caches,
            dirs: Vec::new(),
            open: Vec::new(),
            name: Vec::new(),
            ext4: Ext4::new(seed),
            kind: FsKind::Ext4,
        }
    }

    fn slot(v: &mut Vec<Option<Object>>, t: usize) -> &mut Option<Object> {
        if v.len() <= t {
            v.resize(t + 1, None);
        }
        &mut v[t]
    }
}

/// A call's continuation: the section under the directory's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `lookup_open` .. `ext4_create` in `dir` for a name of `name_len` bytes.
    Create { dir: u32, name_len: u32 },
    /// `filename_create`'s lookup in `dir` that finds the entry.
    MkdirExists { dir: u32 },
}

const NO_FS: &str = "file creation needs the profile's [fs] and [slab] sections (run::run checks them)";

impl Kernel {
    /// An empty directory (a workload's untimed setup: fs_mark's `mkdir`s before its loop);
    /// returns its id.
    pub fn add_dir(&mut self) -> u32 {
        let fs = self.fs.mount.as_mut().expect(NO_FS);
        fs.dirs.push(Dir::default());
        (fs.dirs.len() - 1) as u32
    }

    /// Puts the directories on tmpfs (before the first `add_dir`): `shmem_inode_cache` is
    /// created then, so an ext4 run's caches stay as they were.
    pub fn mount_tmpfs(&mut self) {
        let slab = self.mm.slab.as_mut().expect(NO_FS);
        let fs = self.fs.mount.as_mut().expect(NO_FS);
        if fs.caches.shmem_inode.is_none() {
            let (name, size) = crate::linux::mm::shmem::SHMEM_INODE_CACHE;
            fs.caches.shmem_inode = Some(slab.create(name, size, false));
        }
        fs.kind = FsKind::Tmpfs;
    }

    /// Seeds the file system's own stream (the names' hashes) from the run's seed.
    pub fn seed_fs(&mut self, seed: u64) {
        if let Some(fs) = self.fs.mount.as_mut() {
            fs.ext4 = Ext4::new(seed);
        }
    }

    fn fs_costs(&self) -> Costs {
        self.fs.mount.as_ref().expect(NO_FS).costs
    }

    /// `getname()`: a `names_cache` object for the path, kept until `putname`.
    fn getname(&mut self, ctx: &mut Ctx, t: usize, at: Ps) -> Ps {
        let cache = self.fs.mount.as_ref().expect(NO_FS).caches.names;
        let (obj, d) = self.kmem_cache_alloc(ctx, at, cache, Bucket::Syscall);
        *Mount::slot(&mut self.fs.mount.as_mut().expect(NO_FS).name, t) = Some(obj);
        d
    }

    /// `putname()`: the name goes back to `names_cache` on this CPU.
    fn putname(&mut self, ctx: &mut Ctx, t: usize, at: Ps) -> Ps {
        let obj = Mount::slot(&mut self.fs.mount.as_mut().expect(NO_FS).name, t).take().expect("getname ran");
        self.kfree(ctx, at, obj, Bucket::Syscall)
    }

    /// Takes `dir`'s `i_rwsem` for writing at `at`; returns when it is held.
    fn dir_lock(&mut self, ctx: &mut Ctx, dir: u32, at: Ps) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let lock = &mut self.fs.mount.as_mut().expect(NO_FS).dirs[dir as usize].lock;
        let before = lock.stats.contended;
        let got = lock.acquire(ctx.cpu, at, Ps::ZERO, &topo, &lines);
        self.counters.namei.fs_dir_lock_contended += lock.stats.contended - before;
        ctx.lock_wait("i_rwsem", got - at);
        got
    }

    fn dir_unlock(&mut self, dir: u32, at: Ps) {
        self.fs.mount.as_mut().expect(NO_FS).dirs[dir as usize].lock.release_at(at);
    }

    /// `open(path, O_CREAT | O_RDWR | O_TRUNC)` of a new file of `name_len` bytes in `dir`,
    /// from task `t`: entry, `getname`, `get_empty_filp`, the walk; the locked part follows.
    pub(in crate::linux) fn fs_create(&mut self, ctx: &mut Ctx, t: usize, dir: u32, name_len: u32) -> Ps {
        let c = self.fs_costs();
        let entry = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, entry);
        let mut now = ctx.now + entry;
        now += self.getname(ctx, t, now);
        let (filp, d) = self.get_empty_filp(ctx, now);
        now += d;
        *Mount::slot(&mut self.fs.mount.as_mut().expect(NO_FS).open, t) = Some(filp);
        ctx.charge(Bucket::Syscall, c.open_walk);
        now += c.open_walk;
        ctx.then(Continuation::Fs(Step::Create { dir, name_len }));
        now - ctx.now
    }

    /// `mkdir(path)` of `dir`'s existing child, from task `t`: entry, `getname`, the walk.
    pub(in crate::linux) fn fs_mkdir_exists(&mut self, ctx: &mut Ctx, t: usize, dir: u32) -> Ps {
        let c = self.fs_costs();
        let entry = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, entry);
        let mut now = ctx.now + entry;
        now += self.getname(ctx, t, now);
        ctx.charge(Bucket::Syscall, c.mkdir_walk);
        now += c.mkdir_walk;
        ctx.then(Continuation::Fs(Step::MkdirExists { dir }));
        now - ctx.now
    }

    /// The locked sections, then `putname` and the exit.
    pub(in crate::linux) fn fs_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        let c = self.fs_costs();
        let start = ctx.now;
        let (dir, work) = match s {
            Step::Create { dir, .. } => (dir, c.create_locked),
            Step::MkdirExists { dir } => (dir, c.mkdir_lookup),
        };
        let mut now = self.dir_lock(ctx, dir, start);
        ctx.charge(Bucket::Syscall, work);
        now += work;
        match s {
            Step::Create { dir, name_len } => {
                now += self.d_alloc(ctx, now, name_len);
                now += match self.fs.mount.as_ref().expect(NO_FS).kind {
                    FsKind::Ext4 => self.ext4_create(ctx, now, dir, name_len),
                    FsKind::Tmpfs => self.shmem_mknod(ctx, now),
                };
                self.counters.namei.fs_creates += 1;
            }
            Step::MkdirExists { .. } => self.counters.namei.fs_mkdir_exists += 1,
        }
        self.dir_unlock(dir, now);
        now += self.putname(ctx, t, now);
        let exit = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, exit);
        now + exit - start
    }

    /// `write(fd, buf, 0)` (fs/read_write.c, v4.9): nothing to write, nothing allocated.
    pub(in crate::linux) fn fs_write_empty(&mut self, ctx: &mut Ctx) -> Ps {
        let d = self.costs.entry.syscall_half * 2 + self.fs_costs().write_empty;
        ctx.charge(Bucket::Syscall, d);
        self.counters.namei.fs_empty_writes += 1;
        d
    }

    /// `close(fd)` of task `t`'s open file (fs/open.c, v4.9): `__fput` frees the `struct file`.
    pub(in crate::linux) fn fs_close(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let c = self.fs_costs();
        let half = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, half + c.close);
        let mut now = ctx.now + half + c.close;
        let filp = Mount::slot(&mut self.fs.mount.as_mut().expect(NO_FS).open, t).take();
        if let Some(filp) = filp {
            now += self.file_free(ctx, now, filp);
        }
        self.counters.namei.fs_closes += 1;
        ctx.charge(Bucket::Syscall, half);
        now + half - ctx.now
    }
}
