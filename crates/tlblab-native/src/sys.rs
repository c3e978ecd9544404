//! The only place that talks to libc: mappings, madvise, CPU pinning, CPU-time clocks. Every
//! `unsafe` block of the crate is here or in `cpuid.rs` / `probe/clock.rs` (instructions).

use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

pub const PAGE: usize = 4096;
pub const HUGE_PAGE: usize = 2 << 20;

/// What backs a mapping.
#[derive(Debug, Clone, Copy)]
pub enum Backing<'a> {
    Anon,
    /// `MAP_SHARED | MAP_ANONYMOUS`: memory a process shares with the children it forks.
    SharedAnon,
    /// `MAP_PRIVATE` of a file: writes are copied on write.
    FilePrivate(&'a std::fs::File),
    /// `MAP_SHARED` of a file.
    FileShared(&'a std::fs::File),
}

/// An `mmap`ed, read-write region, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// The mapping is plain memory; threads that share it synchronise through their own atomics.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

fn last_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Mapping {
    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, ...)`.
    pub fn new(len: usize, backing: Backing) -> io::Result<Mapping> {
        let (flags, fd) = match backing {
            Backing::Anon => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
            Backing::SharedAnon => (libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1),
            Backing::FilePrivate(f) => (libc::MAP_PRIVATE, f.as_raw_fd()),
            Backing::FileShared(f) => (libc::MAP_SHARED, f.as_raw_fd()),
        };
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory is affected.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, fd, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(last_error(&format!("mmap of {len} bytes")));
        }
        Ok(Mapping { ptr: NonNull::new(p as *mut u8).expect("mmap never returns NULL"), len })
    }

    /// `mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0)`: a read-only shared file mapping
    /// (vm-scalability's `usemem -f FILE --readonly`). Only the `read_*` methods may touch it.
    pub fn shared_read_only(len: usize, file: &std::fs::File) -> io::Result<Mapping> {
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory is affected.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0)
        };
        if p == libc::MAP_FAILED {
            return Err(last_error(&format!("mmap of {len} bytes read-only")));
        }
        Ok(Mapping { ptr: NonNull::new(p as *mut u8).expect("mmap never returns NULL"), len })
    }

    /// Volatile loads of every 8-byte word of the page at `offset`, in order; their sum (so
    /// none can be elided).
    #[inline(always)]
    pub fn read_page_words(&self, offset: usize) -> u64 {
        assert!(offset % PAGE == 0 && offset + PAGE <= self.len);
        let base = self.ptr.as_ptr().wrapping_add(offset) as *const u64;
        (0..PAGE / 8).fold(0u64, |acc, i| {
            // SAFETY: word i of a page inside this live, readable mapping.
            acc.wrapping_add(unsafe { std::ptr::read_volatile(base.add(i)) })
        })
    }

    /// An anonymous mapping of at least `len` bytes whose start is aligned to `align` (a power
    /// of two), so transparent huge pages can back it from its first byte.
    pub fn aligned_anon(len: usize, align: usize) -> io::Result<Mapping> {
        let over = Mapping::new(len + align, Backing::Anon)?;
        let start = over.ptr.as_ptr() as usize;
        let aligned = (start + align - 1) & !(align - 1);
        let (head, tail) = (aligned - start, start + len + align - (aligned + len));
        let (base, total) = (over.ptr.as_ptr(), over.len);
        std::mem::forget(over);
        // SAFETY: both trimmed pieces lie inside the mapping just created and owned here.
        unsafe {
            if head > 0 {
                libc::munmap(base as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap(base.add(total - tail) as *mut libc::c_void, tail);
            }
        }
        Ok(Mapping { ptr: NonNull::new(aligned as *mut u8).unwrap(), len })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `madvise` on `[offset, offset + len)` of the mapping.
    pub fn madvise(&self, offset: usize, len: usize, advice: Advice) -> io::Result<()> {
        assert!(offset + len <= self.len, "madvise outside the mapping");
        // SAFETY: the range lies inside this mapping; the advices used here only drop or
        // re-hint pages of it, which the callers expect.
        let r =
            unsafe { libc::madvise(self.ptr.as_ptr().add(offset) as *mut libc::c_void, len, advice.raw()) };
        if r != 0 {
            return Err(last_error(&format!("madvise({advice:?})")));
        }
        Ok(())
    }

    /// A volatile one-byte store at `offset` (the compiler must not drop or merge it).
    #[inline(always)]
    pub fn write_byte(&self, offset: usize, v: u8) {
        assert!(offset < self.len);
        // SAFETY: in bounds of a live read-write mapping.
        unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(offset), v) }
    }

    /// A volatile one-byte load at `offset`.
    #[inline(always)]
    pub fn read_byte(&self, offset: usize) -> u8 {
        assert!(offset < self.len);
        // SAFETY: in bounds of a live read-write mapping.
        unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(offset)) }
    }

    /// The mapping as `u64` words (for pointer chains and record arrays).
    ///
    /// # Safety
    /// No other thread may write the mapping while the slice is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn words_mut(&self) -> &mut [u64] {
        std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut u64, self.len / 8)
    }

    /// The mapping as `u64` words, read-only.
    ///
    /// # Safety
    /// No thread may write the mapping while the slice is alive.
    pub unsafe fn words(&self) -> &[u64] {
        std::slice::from_raw_parts(self.ptr.as_ptr() as *const u64, self.len / 8)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region this value owns.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    DontNeed,
    HugePage,
    NoHugePage,
}

impl Advice {
    fn raw(self) -> libc::c_int {
        match self {
            Advice::DontNeed => libc::MADV_DONTNEED,
            Advice::HugePage => libc::MADV_HUGEPAGE,
            Advice::NoHugePage => libc::MADV_NOHUGEPAGE,
        }
    }
}

/// Follows a pointer chain `steps` times from `start` (word indices into `chain`, each word
/// holding the address of the next). Returns the last address so the loop cannot be elided.
#[inline(never)]
pub fn chase(start: *const u64, steps: u64) -> *const u64 {
    let mut p = start;
    for _ in 0..steps {
        // SAFETY: callers build closed chains of addresses inside a live mapping.
        p = unsafe { std::ptr::read_volatile(p) } as *const u64;
    }
    p
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity(0) affects only the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(last_error(&format!("sched_setaffinity to CPU {cpu}")));
        }
    }
    Ok(())
}

/// Makes the calling thread `SCHED_BATCH` (nice unchanged): CFS and EEVDF never let a batch
/// task preempt the running one when it wakes (check_preempt_wakeup_fair, Linux 6.18).
pub fn set_batch() -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread and `p` a valid sched_param for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &p) } != 0 {
        return Err(last_error("sched_setscheduler(SCHED_BATCH)"));
    }
    Ok(())
}

/// `setsockopt(fd, IPPROTO_TCP, TCP_CORK, on)`: while corked, every send appends to the write
/// queue's tail and the push stops where Nagle's would; uncorking transmits it.
pub fn set_tcp_cork(s: &std::net::TcpStream, on: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = on.into();
    // SAFETY: a valid socket descriptor and a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CORK,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(last_error("setsockopt(TCP_CORK)"));
    }
    Ok(())
}

/// The CPUs this process may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data filled in by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// CPU time (user + system) of the whole process, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// What `getrusage` reports: CPU time (user + system) in nanoseconds and context switches
/// (`ru_nvcsw`: the task blocked; `ru_nivcsw`: it was preempted while runnable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
}

impl Usage {
    /// What accrued since `before`.
    pub fn since(self, before: Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_sub(before.cpu_ns),
            voluntary: self.voluntary.saturating_sub(before.voluntary),
            involuntary: self.involuntary.saturating_sub(before.involuntary),
        }
    }
}

/// `getrusage` of this process, every thread (`children` false: `RUSAGE_SELF`), or of its
/// children that have been waited for, their own waited-for descendants included
/// (`RUSAGE_CHILDREN`). Zero where it fails.
pub fn usage(children: bool) -> Usage {
    let who = if children { libc::RUSAGE_CHILDREN } else { libc::RUSAGE_SELF };
    // SAFETY: getrusage fills one plain-data struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid for the kernel to fill.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Usage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Usage {
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
        voluntary: ru.ru_nvcsw as u64,
        involuntary: ru.ru_nivcsw as u64,
    }
}

/// CPU time of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes one timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `sysconf(_SC_CLK_TCK)`: the unit of `/proc/stat`.
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: a pure query.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// A null system call (`getppid`, never cached by libc), for the syscall round trip.
#[inline(never)]
pub fn null_syscall() -> i64 {
    // SAFETY: getppid has no arguments and no side effects.
    unsafe { libc::syscall(libc::SYS_getppid) }
}

/// `statfs(2)`'s `f_type` of the filesystem holding `dir` (e.g. [`TMPFS_MAGIC`]).
pub fn fs_magic(dir: &std::path::Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::other(format!("{}: a NUL in the path", dir.display())))?;
    // SAFETY: `c` is a valid C string and `st` plain data the kernel fills.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return Err(last_error(&format!("statfs {}", dir.display())));
        }
        Ok(st.f_type as i64)
    }
}

/// tmpfs's and ramfs's `f_type`: their pages can only be reclaimed to swap.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
pub const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// A shmem file of `len` bytes (`memfd_create`: tmpfs's pages without a mount), sparse.
pub fn memfd(name: &str, len: u64) -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::other("a NUL in the memfd name"))?;
    // SAFETY: `c` is a valid C string; on success the descriptor is ours alone.
    let f = unsafe {
        let fd = libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return Err(last_error("memfd_create"));
        }
        std::fs::File::from_raw_fd(fd)
    };
    f.set_len(len)?;
    Ok(f)
}

/// A sparse temporary file of `len` bytes in `dir`, already unlinked (will-it-scale's
/// `mkstemp` + `ftruncate` + `unlink`).
pub fn unlinked_temp_file(dir: &std::path::Path, len: u64) -> io::Result<std::fs::File> {
    for attempt in 0..1000u32 {
        let path = dir.join(format!("tlblab.{}.{}.{attempt}", std::process::id(), thread_cpu_ns()));
        match std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
            Ok(f) => {
                let r = f.set_len(len);
                let _ = std::fs::remove_file(&path);
                r.map_err(|e| io::Error::new(e.kind(), format!("ftruncate {}: {e}", path.display())))?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("create {}: {e}", path.display()))),
        }
    }
    Err(io::Error::other(format!("no free temporary file name in {}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_mappings_are_aligned_and_usable() {
        let m = Mapping::aligned_anon(3 * PAGE, HUGE_PAGE).unwrap();
        assert_eq!(m.as_ptr() as usize % HUGE_PAGE, 0);
        m.write_byte(2 * PAGE + 5, 7);
        assert_eq!(m.read_byte(2 * PAGE + 5), 7);
        m.madvise(2 * PAGE, PAGE, Advice::DontNeed).unwrap();
        assert_eq!(m.read_byte(2 * PAGE + 5), 0, "MADV_DONTNEED on anonymous memory refaults zeroes");
    }

    #[test]
    fn private_file_mappings_copy_on_write() {
        let f = unlinked_temp_file(&std::env::temp_dir(), 4 * PAGE as u64).unwrap();
        let m = Mapping::new(4 * PAGE, Backing::FilePrivate(&f)).unwrap();
        m.write_byte(PAGE, 1);
        m.madvise(PAGE, PAGE, Advice::DontNeed).unwrap();
        assert_eq!(m.read_byte(PAGE), 0, "the private copy is dropped, the file still reads 0");
        let s = Mapping::new(4 * PAGE, Backing::FileShared(&f)).unwrap();
        s.write_byte(PAGE, 1);
        s.madvise(PAGE, PAGE, Advice::DontNeed).unwrap();
        assert_eq!(s.read_byte(PAGE), 1, "a shared mapping's page survives in the page cache");
    }

    #[test]
    fn chains_are_followed() {
        let m = Mapping::new(PAGE, Backing::Anon).unwrap();
        let w = unsafe { m.words_mut() };
        let base = w.as_ptr() as u64;
        w[0] = base + 8 * 3;
        w[3] = base;
        assert_eq!(chase(base as *const u64, 3) as u64, base + 24);
    }
}

/// Restores `SIGPIPE`'s default action (the Rust runtime ignores it), so a command whose reader
/// went away (`tlblab list | head`) ends quietly by the signal, as `cat` does, instead of
/// panicking in `println!` on the broken pipe.
pub fn default_sigpipe() {
    // SAFETY: signal(2) with a valid signal number and SIG_DFL; called before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
