//! A tmpfs file's new page alone: what `shmem_write_begin` -> `shmem_get_folio_gfp` costs when
//! the page is not cached and `shmem_alloc_and_add_folio` makes it (mm/shmem.c, v6.18;
//! docs/references/machine-costs.md#shmem-new-folio), apart from any write.
//!
//! `fallocate(fd, 0, off, 4096)` of one page of a tmpfs file runs `shmem_fallocate` ->
//! `shmem_get_folio(SGP_FALLOC)`. For a hole that allocates the folio from the per-CPU or buddy
//! lists, charges it to the memory cgroup, inserts it in the mapping's `i_pages` and onto the
//! LRU, and accounts the inode's and the mount's blocks, as a write's new page does; it leaves
//! the folio unzeroed (`SGP_FALLOC` takes `SGP_WRITE`'s path for a new folio), so no byte of the
//! page is touched: no clear, no copy, no first touch a hypervisor sees. For a page written
//! before (uptodate) the same call finds the folio and returns: the lookup alone. Each block
//! times one call a page over [`pages`] written pages, then over as many holes (pages never
//! allocated, inside `i_size`: no size change either), alternating [`ROUND`] calls of each;
//! the difference per call is the new folio's path, the system call's entry and
//! `shmem_fallocate`'s fixed part cancelling.
//!
//! The holes are fresh in every block, as dd's pages are: nothing is freed until the end, so
//! the allocations come off the per-CPU lists refilled from the buddy lists, not back from a
//! free. Then the removal: `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)` of each page
//! one block allocated (`shmem_truncate_range`: off the page cache and the LRU, uncharged,
//! freed) against the same call over a range that holds no page.

use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use crate::stats::Summary;
use crate::sys::PAGE;

/// Per-call nanoseconds of the conditions, one figure a block (its median round of [`ROUND`]
/// calls in each condition, the conditions alternating round by round).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewFolio {
    /// The tmpfs mount the file was made on.
    pub mount: String,
    /// Pages (calls) a block times in each condition.
    pub pages: usize,
    /// `fallocate` of a hole: a new folio.
    pub new_ns: Summary,
    /// `fallocate` of a page written before: the lookup alone.
    pub cached_ns: Summary,
    /// Per block, `new_ns` less `cached_ns`: the new folio's path.
    pub extra_ns: Summary,
    /// `fallocate(PUNCH_HOLE)` of a page a block allocated: its removal.
    pub punch_ns: Summary,
    /// The same call over a range with no page.
    pub punch_empty_ns: Summary,
    /// Per block, `punch_ns` less `punch_empty_ns`: a page's removal.
    pub remove_extra_ns: Summary,
}

/// Pages a round times in each condition, alternating: short enough that a preemption spoils
/// one round of a block, not its median.
pub const ROUND: usize = 64;

/// Pages a block times in each condition: enough that a block takes several per-CPU list
/// refills (a batch is 63 pages and up).
pub fn pages(quick: bool) -> usize {
    if quick {
        256
    } else {
        1024
    }
}

fn err(what: &str) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// `blocks` blocks (after one untimed) of [`pages`] calls each, in a file made under `tmpfs` and
/// removed after, on a thread pinned to `cpu`.
pub fn new_folio_on(cpu: usize, tmpfs: &Path, blocks: usize, quick: bool) -> std::io::Result<NewFolio> {
    let tmpfs = tmpfs.to_path_buf();
    std::thread::spawn(move || {
        crate::sys::pin_to_cpu(cpu)?;
        let path = tmpfs.join(format!("tlblab-probe-shmem-{}", std::process::id()));
        let r = new_folio_in(&path, blocks, pages(quick));
        let _ = std::fs::remove_file(&path);
        r.map(|mut n| {
            n.mount = tmpfs.display().to_string();
            n
        })
    })
    .join()
    .map_err(|_| std::io::Error::other("the shmem probe thread panicked"))?
}

fn new_folio_in(path: &Path, blocks: usize, pages: usize) -> std::io::Result<NewFolio> {
    let p =
        CString::new(path.as_os_str().as_bytes()).map_err(|_| std::io::Error::other("a NUL in a path"))?;
    // The file: `pages` written pages, then a hole region a block at a time (the untimed block
    // first), then `pages` holes the removal's baseline punches.
    let fresh = (blocks + 1) * pages;
    let total = pages + fresh + pages;
    // SAFETY (every call below): a valid C path; the descriptor is ours and closed at the end;
    // `buf` holds a page.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC, 0o600) };
    if fd < 0 {
        return Err(err("open of the shmem probe file"));
    }
    let r = (|| {
        if unsafe { libc::ftruncate(fd, (total * PAGE) as libc::off_t) } != 0 {
            return Err(err("ftruncate of the shmem probe file"));
        }
        let buf = vec![0x5au8; PAGE];
        for k in 0..pages {
            if unsafe { libc::pwrite(fd, buf.as_ptr().cast(), PAGE, (k * PAGE) as libc::off_t) }
                != PAGE as isize
            {
                return Err(err("pwrite of a shmem probe page"));
            }
        }
        // Per call over `ROUND` pages from `first`.
        let calls = |mode: libc::c_int, first: usize| -> std::io::Result<f64> {
            let t = Instant::now();
            for k in first..first + ROUND {
                if unsafe { libc::fallocate(fd, mode, (k * PAGE) as libc::off_t, PAGE as libc::off_t) } != 0 {
                    return Err(err("fallocate of a tmpfs page"));
                }
            }
            Ok(t.elapsed().as_nanos() as f64 / ROUND as f64)
        };
        // One block: its rounds, each the baseline's `ROUND` pages from `base` then the measured
        // condition's next `ROUND` from `first`; the block's figures are its median rounds, so a
        // preemption spoils a round, not the block.
        let block = |mode: libc::c_int, base: usize, first: usize| -> std::io::Result<[f64; 3]> {
            let mut r: [Vec<f64>; 3] = Default::default();
            for k in 0..pages / ROUND {
                let b = calls(mode, base + (k * ROUND) % pages)?;
                let m = calls(mode, first + k * ROUND)?;
                r[0].push(m);
                r[1].push(b);
                r[2].push(m - b);
            }
            Ok(r.map(|v| Summary::of(&v).median))
        };
        let mut grow: [Vec<f64>; 3] = Default::default();
        for b in 0..=blocks {
            let f = block(0, 0, pages + b * pages)?;
            for (v, x) in grow.iter_mut().zip(f).filter(|_| b > 0) {
                v.push(x);
            }
        }
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        let mut shrink: [Vec<f64>; 3] = Default::default();
        for b in 0..=blocks {
            let f = block(punch, pages + fresh, pages + b * pages)?;
            for (v, x) in shrink.iter_mut().zip(f).filter(|_| b > 0) {
                v.push(x);
            }
        }
        let [new, cached, extra] = grow.map(|v| Summary::of(&v));
        let [gone, empty, remove] = shrink.map(|v| Summary::of(&v));
        Ok(NewFolio {
            mount: String::new(),
            pages,
            new_ns: new,
            cached_ns: cached,
            extra_ns: extra,
            punch_ns: gone,
            punch_empty_ns: empty,
            remove_extra_ns: remove,
        })
    })();
    unsafe { libc::close(fd) };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_page_and_its_removal_are_timed_on_tmpfs_and_the_file_is_removed() {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let Ok(tmpfs) = crate::probe::fs::find_tmpfs(&mounts) else {
            eprintln!("no writable tmpfs here: skipped");
            return;
        };
        let n = new_folio_on(crate::sys::allowed_cpus()[0], &tmpfs, 2, true).unwrap();
        for s in [&n.new_ns, &n.cached_ns, &n.punch_ns, &n.punch_empty_ns] {
            assert!(s.median > 0.0 && s.min <= s.median && s.median <= s.max && s.n == 2, "{s:?}");
        }
        assert_eq!((n.extra_ns.n, n.remove_extra_ns.n, n.pages), (2, 2, pages(true)));
        assert!(!tmpfs.join(format!("tlblab-probe-shmem-{}", std::process::id())).exists());
    }
}
