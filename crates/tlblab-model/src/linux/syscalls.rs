//! What a task asks the simulated machine to do: user accesses and compute, the system calls
//! the workloads make, and the loop-iteration marker the score counts. The kernel expands each
//! system call and fault into its own steps (`linux/mod.rs`: [`super::Continuation`]).

use super::ctx::Ctx;
use super::Kernel;
use crate::attribution::Bucket;
use crate::hw::tlb::AccessKind;
use crate::time::Ps;

/// Registers a task keeps results in (an mmap'd address, a file id), so later operations can
/// use them.
pub const NR_REGS: usize = 4;

/// Where an mmap's pages come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    Anon,
    /// `MAP_PRIVATE` of the file whose id is in register `reg`.
    FilePrivate {
        file_reg: usize,
    },
    /// `MAP_SHARED` of the file whose id is in register `reg`.
    FileShared {
        file_reg: usize,
    },
}

/// An address, absolute or relative to a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr {
    pub reg: usize,
    pub offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A user load, store or instruction fetch.
    Access { addr: Addr, kind: AccessKind },
    /// Pure user computation.
    Compute(Ps),
    /// A user bulk copy (memcpy) that takes `core` on its CPU alone and moves `bytes` (reads plus
    /// writes) between the source region of `src_len` bytes at `src` and the destination region
    /// of `dst_len` bytes at `dst`: the regions are the CPU's streaming footprint in the LLC
    /// (hw/uncore.rs), the bytes that miss draw on the socket's DRAM bandwidth.
    Stream { core: Ps, bytes: u64, src: Addr, src_len: u64, dst: Addr, dst_len: u64 },
    /// A sparse file of `pages` pages (`open` + `ftruncate` + `unlink`); its id goes to `reg`.
    /// `cached`: every page is already in the page cache, as it is in the real benchmark's
    /// measured interval once the warm-up has read the whole file. `tmpfs`: the file is on tmpfs
    /// (no `page_mkwrite`, no writeback: shared mappings of it are writable from the first
    /// fault); else on a disk filesystem.
    CreateFile { pages: u64, reg: usize, cached: bool, tmpfs: bool },
    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, ...)`; the address goes to `reg`.
    Mmap { len: u64, kind: MapKind, reg: usize },
    /// `munmap(addr, len)`: splits the VMAs an end falls inside (linux/mm/vma.rs).
    Munmap { addr: Addr, len: u64 },
    /// `madvise(addr, len, MADV_DONTNEED)`.
    MadviseDontneed { addr: Addr, len: u64 },
    /// `madvise(addr, len, MADV_PAGEOUT)` (linux/mm/madvise.rs).
    MadvisePageout { addr: Addr, len: u64 },
    /// `move_pages(2)` of every page of `[addr, addr + len)` to node `node` (linux/mm/migrate.rs).
    MovePages { addr: Addr, len: u64, node: u32 },
    /// One benchmark loop iteration completed (`(*iterations)++`).
    Iteration,
    /// What dd asks of the MPC8xx kernel (linux/arch/ppc/paths.rs).
    Ppc8xx(crate::linux::arch::ppc::paths::Op8xx),
    /// kswapd's loop body (linux/mm/vmscan.rs): balance the node or sleep.
    Kswapd,
    /// `write(fd, buf, len)` to pipe `pipe` (linux/fs/pipe.rs).
    PipeWrite { pipe: u32, len: u32 },
    /// `read(fd, buf, len)` from pipe `pipe`: returns once `len` bytes were read.
    PipeRead { pipe: u32, len: u32 },
    /// `write(fd, buf, len)` on the sending end of AF_UNIX stream pair `pair` (linux/net/unix/af_unix.rs).
    UnixSend { pair: u32, len: u32 },
    /// `read(fd, buf, len)` on its receiving end: returns once `len` bytes were read.
    UnixRecv { pair: u32, len: u32 },
    /// `send(fd, buf, len, 0)` on loopback socket pair `sock` (linux/net/socket.rs).
    Send { sock: u16, len: u32 },
    /// `recv(fd, buf, len, 0)` from pair `sock`: one datagram (UDP); TCP, up to `len` bytes
    /// across the queued segments, or with `len` 0 the front segment whole (a reader whose buffer
    /// is larger than any segment, as the model takes sockperf's).
    Recv { sock: u16, len: u32 },
    /// `open(path, O_CREAT | O_RDWR | O_TRUNC, 0666)` of a new file whose name has `name_len`
    /// bytes in directory `dir` (linux/fs/namei.rs); the task holds it open until `FsClose`.
    FsCreate { dir: u32, name_len: u32 },
    /// `mkdir(path)` of an existing child of directory `dir`: `-EEXIST`.
    FsMkdirExists { dir: u32 },
    /// `write(fd, buf, 0)` on the open file.
    FsWriteEmpty,
    /// `close(fd)` of the open file.
    FsClose,
    /// `read(fd, buf, 4096)` of `/dev/zero` (linux/drivers/char/mem.rs).
    ReadZero,
    /// `write(fd, buf, 4096)` at page `index` of tmpfs file `file` (linux/mm/shmem.rs).
    TmpfsWrite { file: u32, index: u64 },
}

/// A task's operation stream (its user space): called whenever the task has nothing queued.
pub trait Program: Send {
    /// Appends the next operations (one loop iteration, or a setup step).
    fn next(&mut self, out: &mut Vec<Op>);
}

/// What a system call's entry and exit cost (without PTI; boot adds its CR3 switches).
#[derive(Debug, Clone)]
pub struct Costs {
    /// Half a null system call: the entry, or the exit.
    pub syscall_half: Ps,
}

impl Costs {
    pub fn from_profile(p: &crate::profile::MachineProfile) -> Costs {
        Costs { syscall_half: Ps::from_ns(p.kernel.syscall_ns.value / 2.0) }
    }
}

impl Kernel {
    /// A system call's entry (charged as system-call time), then `body` from the time it
    /// reaches; returns the whole. `body` charges its own time, and the exit where it returns.
    pub(in crate::linux) fn enter_syscall(
        &mut self,
        ctx: &mut Ctx,
        body: impl FnOnce(&mut Kernel, &mut Ctx, Ps) -> Ps,
    ) -> Ps {
        let entry = self.costs.entry.syscall_half;
        ctx.charge(Bucket::Syscall, entry);
        let at = ctx.now + entry;
        entry + body(self, ctx, at)
    }
}
