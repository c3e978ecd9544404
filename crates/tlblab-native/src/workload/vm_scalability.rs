//! vm-scalability's `case-lru-file-mmap-read`, natively, on a machine whose memory is far larger
//! than the files a short run can read: the run's memory is a memory cgroup's limit instead
//! (crate::memcg), so that the page cache of the files fills it and reclaim (memcg limit reclaim,
//! in the faulting task) unmaps the pages the other readers still map, with its batched flush
//! (docs/references/seeds-001-003-004.md#vm-scalability).
//!
//! As the case does: one reader process per CPU (forked, each its own mm, as vm-scalability
//! starts one `usemem` each), each over its own sparse file (`truncate -s`) of
//! `10 * limit / readers` bytes, `usemem -f FILE --readonly`: `mmap(PROT_READ, MAP_SHARED)` and
//! every 8-byte word read once, in order; a reader that reaches its file's end starts over (the
//! model's readers do the same: its first pages were reclaimed long before). The files are on
//! a disk filesystem: holes read as zero-filled page cache without I/O, and clean file pages
//! can be reclaimed without swap (tmpfs's could not).
//!
//! The metric is the model's: the case's elapsed time, the files' pages over the aggregate page
//! rate measured after the warm-up has filled the cgroup.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{background_rates, measure_after, result, NativeResult, Outcome};
use crate::memcg::MemCgroup;
use crate::sys::{self, Mapping, PAGE};

/// The files are this many times the memory (vm-scalability's `10 * mem`).
pub const FILES_X_MEM: u64 = 10;

pub const NAME: &str = "lru-file-mmap-read";

#[derive(Debug, Clone)]
pub struct LruSpec {
    /// The cgroup's memory limit in MiB: the simulated twin's `mem_mib`.
    pub mem_mib: u64,
    /// Readers (one per CPU in the case).
    pub readers: usize,
    pub warmup: Duration,
    pub measure: Duration,
    /// Where the sparse files go; must not be tmpfs.
    pub dir: PathBuf,
}

/// Each reader's file, in pages: `10 * mem / readers`.
pub fn file_pages(mem_mib: u64, readers: usize) -> u64 {
    FILES_X_MEM * (mem_mib << 8) / readers.max(1) as u64
}

/// The case's elapsed seconds: every file's pages at the aggregate rate (`pages` read in
/// `seconds`), as the model scores it.
pub fn elapsed(mem_mib: u64, pages: u64, seconds: f64) -> f64 {
    seconds * (FILES_X_MEM * (mem_mib << 8)) as f64 / pages.max(1) as f64
}

/// The simulated twin's workload text: the same cgroup limit on a machine four times its size,
/// so that, as on the host, only the limit reclaims (in the readers) and kswapd sleeps; with
/// `counters`, the page counters a charge walks on the host ([`crate::memcg::host_counters`]);
/// with `read_ahead_kb`, the readahead of the disk the files are on ([`read_ahead_kb`]).
pub fn sim_text(mem_mib: u64, counters: Option<(usize, bool)>, read_ahead_kb: Option<u64>) -> String {
    let mut t = format!("vm-scalability {NAME} mem_mib={} memcg_mib={mem_mib}", 4 * mem_mib);
    if let Some((depth, memsw)) = counters {
        t += &format!(" memcg_depth={}", depth.min(8));
        if memsw {
            t += " memcg_memsw=1";
        }
    }
    if let Some(kb) = read_ahead_kb {
        // The twin takes 0..=65536 KiB in 4-KiB pages.
        t += &format!(" read_ahead_kb={}", (kb / 4 * 4).min(65536));
    }
    t
}

/// The `read_ahead_kb` of the block device `dir` is on (its backing device's `ra_pages`, which
/// each file opened there starts its readahead with): the disk's queue setting, or for a
/// partition its disk's. None where `dir`'s device is no block device sysfs names (a btrfs or
/// overlay anonymous device, a network filesystem).
pub fn read_ahead_kb(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    // A partition's directory sits inside its disk's, which has the queue.
    [base.join("queue/read_ahead_kb"), base.join("../queue/read_ahead_kb")]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse().ok())
}

/// `/proc/kpageflags` bits of a page in a compound page (`KPF_COMPOUND_HEAD`, `KPF_COMPOUND_TAIL`,
/// include/uapi/linux/kernel-page-flags.h): a large folio's pages carry one of them.
const KPF_COMPOUND: u64 = (1 << 15) | (1 << 16);

/// Whether a page's `/proc/kpageflags` word puts it in a folio of more than one page.
fn in_large_folio(flags: u64) -> bool {
    flags & KPF_COMPOUND != 0
}

/// Pages of a sparse file read through a mapping in `dir` as the readers read theirs: how many
/// of them the page cache holds in large folios, and how many were looked at (`(in large folios,
/// pages)`). Linux reads regular files into large folios where the filesystem supports them
/// (xfs from v5.18, ext4 from v6.16), readahead growing the folios' order window by window; the
/// model's page cache holds single pages. None where `/proc/self/pagemap` gives no frame numbers
/// or `/proc/kpageflags` cannot be read (both need CAP_SYS_ADMIN), or the file cannot be made.
pub fn large_folio_pages(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::FileExt;
    /// 64 MiB: enough windows of the largest readahead for the folios' order to grow.
    const LEN: usize = 64 << 20;
    let file = sys::unlinked_temp_file(dir, LEN as u64).ok()?;
    let m = Mapping::shared_read_only(LEN, &file).ok()?;
    let pagemap = std::fs::File::open("/proc/self/pagemap").ok()?;
    let kpageflags = std::fs::File::open("/proc/kpageflags").ok()?;
    let (mut large, mut seen) = (0, 0);
    let mut word = [0u8; 8];
    for i in 0..LEN / PAGE {
        // SAFETY: inside the mapping, which lives until the end of this function.
        let addr = unsafe { m.as_ptr().add(i * PAGE) };
        // SAFETY: a read of a mapped byte (a hole reads as zero).
        unsafe { std::ptr::read_volatile(addr) };
        pagemap.read_exact_at(&mut word, (addr as u64 / PAGE as u64) * 8).ok()?;
        let entry = u64::from_le_bytes(word);
        // Bit 63: present; bits 0-54: the frame, zero without CAP_SYS_ADMIN.
        let pfn = entry & ((1 << 55) - 1);
        if entry >> 63 == 0 || pfn == 0 {
            continue;
        }
        kpageflags.read_exact_at(&mut word, pfn * 8).ok()?;
        seen += 1;
        large += in_large_folio(u64::from_le_bytes(word)) as u64;
    }
    (seen > 0).then_some((large, seen))
}

/// A directory for the sparse files: `dir` unless it is tmpfs or ramfs.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    match sys::fs_magic(dir) {
        Ok(sys::TMPFS_MAGIC | sys::RAMFS_MAGIC) => Err(format!(
            "{} is tmpfs/ramfs: its pages can only be reclaimed to swap; the files need a disk filesystem",
            dir.display()
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs `spec` once in a memory cgroup of its own. `Err` says why it could not (no writable
/// memory cgroup, a tmpfs directory).
pub fn run(spec: &LruSpec) -> Result<NativeResult, String> {
    if spec.readers == 0 || spec.mem_mib == 0 {
        return Err("lru-file-mmap-read: readers and mem_mib must be at least 1".into());
    }
    if spec.readers > MAX_READERS {
        return Err(format!("lru-file-mmap-read: at most {MAX_READERS} readers"));
    }
    check_dir(&spec.dir)?;
    let cpus = sys::allowed_cpus();
    let background = background_rates(200);
    let mut cg = MemCgroup::create(spec.mem_mib << 20).map_err(|e| format!("no memory cgroup: {e}"))?;
    let pages = file_pages(spec.mem_mib, spec.readers);
    let len = (pages as usize) * PAGE;
    let maps = (0..spec.readers)
        .map(|_| {
            let file = sys::unlinked_temp_file(&spec.dir, len as u64).map_err(|e| e.to_string())?;
            Mapping::shared_read_only(len, &file).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    let shared = Mapping::new(PAGE, sys::Backing::SharedAnon).map_err(|e| format!("{NAME}: {e}"))?;
    // SAFETY: the page is zeroed, page-aligned and lives until the children are reaped below;
    // `Shared` is atomics only, which any bit pattern of zeroes initialises.
    let sh = unsafe { &*(shared.as_ptr() as *const Shared) };
    cg.enter()?;
    let mut pids = Vec::with_capacity(spec.readers);
    let mut failed = None;
    for (i, m) in maps.iter().enumerate() {
        let cpu = cpus[i % cpus.len()];
        // Forked from a thread pinned to the reader's CPU, so the new process starts there and
        // its mm never runs on another CPU (a CPU it once ran on would stay in its mm_cpumask:
        // v6.14+ clears it lazily, and reclaim's batched flush, which names no mm, never does).
        let forked = std::thread::scope(|sc| {
            sc.spawn(|| -> Result<libc::pid_t, String> {
                sys::pin_to_cpu(cpu).map_err(|e| e.to_string())?;
                // SAFETY: the child only makes system calls, reads its mapping and stores to
                // the shared page, then leaves with _exit: nothing that allocates or takes a
                // lock another thread of this process may have held at the fork.
                match unsafe { libc::fork() } {
                    0 => unsafe { reader(m, sh, i) },
                    -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
                    pid => Ok(pid),
                }
            })
            .join()
            .unwrap_or_else(|_| Err("the forking thread panicked".into()))
        });
        match forked {
            Ok(pid) => pids.push(pid),
            Err(e) => {
                failed = Some(format!("{NAME}: {e}"));
                break;
            }
        }
    }
    let window = if failed.is_none() {
        let t = Instant::now();
        while (sh.ready.load(Ordering::Acquire) as usize) < pids.len()
            && t.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        sh.start.store(1, Ordering::Release);
        // This process's own usage leaves the children out: theirs comes from /proc.
        let read = || sh.counters[..pids.len()].iter().map(|c| c.load(Ordering::Relaxed)).collect();
        Some(measure_after(spec.warmup, spec.measure, read, || children_usage(&pids), || false))
    } else {
        None
    };
    sh.stop.store(1, Ordering::Release);
    for &pid in &pids {
        let mut status = 0;
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) && failed.is_none() {
            failed = Some(format!("{NAME}: a reader process ended with status {status:#x}"));
        }
    }
    cg.leave()?;
    drop(cg);
    if let Some(e) = failed {
        return Err(e);
    }
    let window = window.expect("measured when every reader started");
    let per_thread = window.per_task();
    let read_pages: u64 = per_thread.iter().sum();
    if read_pages == 0 {
        return Err(format!("{NAME}: no page read in {:.2} s", window.seconds));
    }
    let outcome = Outcome {
        workload: NAME.into(),
        cpus: (0..spec.readers).map(|i| cpus[i % cpus.len()]).collect(),
        metric: "elapsed".into(),
        unit: "seconds".into(),
        value: elapsed(spec.mem_mib, read_pages, window.seconds),
        operations: read_pages,
        per_thread,
    };
    Ok(result(outcome, &window, background))
}

/// Readers one page of shared counters holds.
const MAX_READERS: usize = 500;
const _: () = assert!(std::mem::size_of::<Shared>() <= PAGE);

/// The page the parent and its reader processes share: the start and stop flags, how many
/// readers are ready, and each reader's pages read.
#[repr(C)]
struct Shared {
    start: AtomicU32,
    stop: AtomicU32,
    ready: AtomicU32,
    counters: [AtomicU64; MAX_READERS],
}

/// One reader process (`usemem -f FILE --readonly`), pinned where it was forked (a child
/// inherits the forking thread's affinity): it reads every word of its file's mapping in order,
/// over and over, counting pages in `sh`, until told to stop. System calls, loads and atomic
/// stores only: it runs in a fork of a threaded process.
unsafe fn reader(m: &Mapping, sh: &Shared, i: usize) -> ! {
    sh.ready.fetch_add(1, Ordering::AcqRel);
    while sh.start.load(Ordering::Acquire) == 0 && sh.stop.load(Ordering::Acquire) == 0 {
        libc::sched_yield();
    }
    let (mut n, mut sum) = (0u64, 0u64);
    'pass: loop {
        let mut off = 0;
        while off < m.len() {
            if sh.stop.load(Ordering::Relaxed) != 0 {
                break 'pass;
            }
            sum = sum.wrapping_add(m.read_page_words(off));
            n += 1;
            sh.counters[i].store(n, Ordering::Relaxed);
            off += PAGE;
        }
    }
    // Holes read as zeroes; a non-zero sum is a failed run.
    libc::_exit(i32::from(sum != 0))
}

/// The processes' CPU time (user and system, `/proc/PID/stat`) and context switches
/// (`/proc/PID/status`), summed.
fn children_usage(pids: &[libc::pid_t]) -> sys::Usage {
    let hz = sys::clock_ticks_per_second().max(1);
    let mut u = sys::Usage::default();
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis: state is the first, utime the 12th.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<u64> = rest.split_whitespace().skip(11).take(2).filter_map(|v| v.parse().ok()).collect();
        u.cpu_ns += f.iter().sum::<u64>() * 1_000_000_000 / hz;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        for line in status.lines() {
            let v = |l: &str| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            if line.starts_with("voluntary_ctxt_switches:") {
                u.voluntary += v(line);
            } else if line.starts_with("nonvoluntary_ctxt_switches:") {
                u.involuntary += v(line);
            }
        }
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_elapsed_follow_the_case() {
        // 64 MiB over 2 readers: 640 MiB of files, 81920 pages each.
        assert_eq!(file_pages(64, 2), 81_920);
        // Reading all 163840 pages in 0.5 s: elapsed 0.5 s; half of them: 1 s.
        assert!((elapsed(64, 163_840, 0.5) - 0.5).abs() < 1e-12);
        assert!((elapsed(64, 81_920, 0.5) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_twin_parses_and_scores_the_same_way() {
        for (counters, ra) in [(None, None), (Some((2, false)), Some(128)), (Some((4, true)), Some(8192))] {
            let text = sim_text(64, counters, ra);
            let w = tlblab_model::workload::Workload::parse(&text).unwrap();
            assert_eq!(w.metric().name, "elapsed");
            assert_eq!(w.metric().unit, "seconds");
            // The name keeps what differs from the defaults (depth 2, no memsw).
            assert_eq!(w.name().contains("memcg_memsw=1"), counters.is_some_and(|c| c.1), "{text}");
            assert_eq!(w.name().contains("memcg_depth=4"), counters.is_some_and(|c| c.0 == 4), "{text}");
            // and the readahead where it is not the kernel's default 128 KiB.
            assert_eq!(w.name().contains("read_ahead_kb=8192"), ra == Some(8192), "{text}");
        }
    }

    #[test]
    fn the_disk_s_readahead_is_read_where_sysfs_has_it() {
        // /dev/shm is tmpfs, an anonymous device with no block queue.
        assert_eq!(read_ahead_kb(Path::new("/dev/shm")), None);
        assert!(sim_text(64, None, Some(8192)).ends_with(" read_ahead_kb=8192"));
        assert!(sim_text(64, None, Some(131_073)).ends_with(" read_ahead_kb=65536"));
        assert!(!sim_text(64, None, None).contains("read_ahead_kb"));
    }

    #[test]
    fn a_page_in_a_compound_page_is_in_a_large_folio() {
        assert!(!in_large_folio(0));
        assert!(!in_large_folio((1 << 5) | (1 << 14)), "LRU and its neighbour bit alone");
        assert!(in_large_folio(1 << 15) && in_large_folio(1 << 16));
        // Where the host lets us look, every page read is counted once.
        let dir = std::env::temp_dir();
        if check_dir(&dir).is_ok() {
            if let Some((large, seen)) = large_folio_pages(&dir) {
                assert!(large <= seen && seen <= (64 << 20) / PAGE as u64, "{large} of {seen}");
            }
        }
    }

    #[test]
    fn tmpfs_is_refused_with_the_reason() {
        if sys::fs_magic(Path::new("/dev/shm")).ok() == Some(sys::TMPFS_MAGIC) {
            assert!(check_dir(Path::new("/dev/shm")).unwrap_err().contains("tmpfs"));
        }
        assert!(check_dir(Path::new("/no/such/dir")).is_err());
    }
}
