//! The file-creation primitives `[fs]` holds, timed alone on tmpfs as crate::probe::ipc times
//! the pipe: one thread, in a directory the probe makes (and removes) under a writable tmpfs,
//! times bursts of each system call fs_mark makes per file, every call of a burst alike, and
//! keeps the per-call median over bursts. Never fs_mark itself, and nothing is taken from
//! `validate`'s fs_mark runs.
//!
//! Per burst of [`BURST`] new names in the subdirectory `D/00` (fs_mark's `-d D -D N` layout):
//! - `create`: `open(D/00/NAME, O_CREAT | O_RDWR | O_TRUNC, 0666)` of each new name: the walk,
//!   the parent's `i_rwsem` and `shmem_mknod` (docs/references/linux-mm.md#tmpfs-create);
//! - `write`: `write(fd, buf, 0)` on each;
//! - `close`: `close(fd)` of each;
//! - `mkdir`: `mkdir(D/00)`, which exists: the walk to `D`, `D`'s lock and `-EEXIST`;
//! - `walk`: `open(D/00, O_CREAT | O_RDWR | O_TRUNC)` of that existing directory: the same walk
//!   as a create, the last component found in the dcache without the lock (v6.12+), then
//!   `-EISDIR`: the walk alone;
//! - `open`: `open(D/00/NAME, O_RDWR)` of each file just made (closed again untimed): the walk,
//!   the dcache hit, `do_dentry_open` and `fd_install`, no lock: a create's work outside the
//!   parent's lock, so the create less it is the locked section.
//!
//! - `pwrite`: `pwrite(fd, buf, 4096, 0)` over the first page of a tmpfs file that page is
//!   already cached in (written once untimed): `shmem_file_write_iter` -> `generic_perform_write`
//!   with no allocation, the 4 KiB copy from a buffer in cache into a page in cache
//!   (`fs.tmpfs_write_cycles` is this less the system call and the copy;
//!   docs/references/linux-mm.md#tmpfs-write).
//!
//! Nothing is unlinked between bursts: the directory grows by a burst at a time, from
//! [`BASE_FILES`] made untimed first, as fs_mark's subdirectory grows over its run (every child
//! creates in one subdirectory for 180 s). Everything is removed at the end.
//!
//! And fs_mark's own per-file work in user space ([`user_ns`]): its `setup_file_name` (a
//! `gettimeofday`, the subdirectory and path `sprintf`s, 24 random name characters drawn with
//! `random()` until each is an upper-case letter or a digit, the `strncat`s) and `do_run`'s two
//! path `sprintf`s and three timed calls' `gettimeofday` pairs, written into a fresh
//! `calloc`ed array of fs_mark's 2128-byte `struct name_entry`, one entry a file, as fs_mark
//! fills its `names` array: the first touch of each entry's pages is in the figure, as it is
//! in fs_mark's loop. A native re-creation of that user code, not the benchmark. The loop runs
//! once more over an array touched first, so the faults' share is known.

use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::stats::Summary;

/// fs_mark's default name: 16 sequential (time-stamp) characters and 24 random ones.
pub const NAME_LEN: usize = 40;
const SEQ_LEN: usize = 16;
const RAND_LEN: usize = 24;
/// Files per burst: each call is timed over this many.
pub const BURST: usize = 50;
/// Files made untimed before the first burst.
pub const BASE_FILES: usize = 500;
/// fs_mark.h's `FILENAME_SIZE` and `MAX_NAME_PATH`: `struct name_entry` is
/// `f_name[128]`, `write_dir[1000]`, `target_dir[1000]`.
const FILENAME_SIZE: usize = 128;
const MAX_NAME_PATH: usize = 1000;

// glibc's random(3), which fs_mark draws its name characters from (the libc crate lacks it).
extern "C" {
    fn random() -> libc::c_long;
    fn srandom(seed: libc::c_uint);
}

#[repr(C)]
struct NameEntry {
    f_name: [u8; FILENAME_SIZE],
    write_dir: [u8; MAX_NAME_PATH],
    target_dir: [u8; MAX_NAME_PATH],
}

/// Per-call nanoseconds of each primitive over bursts, and where they were measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FsCalls {
    /// The tmpfs mount the probe's directory was made under.
    pub mount: String,
    pub create_ns: Summary,
    pub walk_ns: Summary,
    /// `open(O_RDWR)` of a file that exists: the walk, the dcache hit, `do_dentry_open` and
    /// `fd_install`, no lock: what a create does outside the parent's lock.
    pub open_existing_ns: Summary,
    pub mkdir_exists_ns: Summary,
    pub write_empty_ns: Summary,
    pub close_ns: Summary,
    /// fs_mark's user-space work per file ([`user_ns`]).
    pub user_ns: Summary,
    /// The same over an array whose pages were touched first: the difference is the first
    /// touches' faults (absent from reports recorded before it was measured).
    #[serde(default)]
    pub user_touched_ns: Option<Summary>,
    /// Files in the subdirectory after the last burst.
    pub files: usize,
    /// `pwrite(fd, buf, 4096, 0)` of a page already cached (absent from reports recorded before
    /// it was measured).
    #[serde(default)]
    pub pwrite_page_ns: Option<Summary>,
}

/// The bytes of one `pwrite` of [`pwrite_page_ns`](FsCalls::pwrite_page_ns): one page.
pub const PWRITE_BYTES: usize = 4096;

/// Per-call nanoseconds of `pwrite(fd, buf, 4096, 0)` in `dir`, bursts of [`BURST`] after an
/// untimed one, on a file whose first page an untimed write allocated first.
fn pwrite_page_ns(dir: &Path, bursts: usize) -> std::io::Result<Vec<f64>> {
    let p = cstring(&dir.join("pwrite"))?;
    let buf = vec![0x5au8; PWRITE_BYTES];
    // SAFETY: a valid C path; the descriptor is ours and closed below; `buf` holds 4096 bytes.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC, 0o666) };
    if fd < 0 {
        return Err(err("open of the pwrite file"));
    }
    let mut out = Vec::with_capacity(bursts);
    let mut bad = 0;
    for b in 0..=bursts + 1 {
        let t = Instant::now();
        for _ in 0..BURST {
            let n = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), PWRITE_BYTES, 0) };
            bad += (n != PWRITE_BYTES as isize) as usize;
        }
        // The first burst allocates the page, the second warms up: neither counts.
        if b > 1 {
            out.push(t.elapsed().as_nanos() as f64 / BURST as f64);
        }
    }
    unsafe { libc::close(fd) };
    if bad > 0 {
        return Err(err("pwrite of a 4 KiB page"));
    }
    Ok(out)
}

/// A writable tmpfs to work under: /dev/shm if it is one, else the first read-write tmpfs in
/// `/proc/mounts` (`mounts`) where a directory can be made. `Err` says why there is none.
pub fn find_tmpfs(mounts: &str) -> Result<PathBuf, String> {
    let mut candidates = vec![PathBuf::from("/dev/shm")];
    candidates.extend(tmpfs_mounts(mounts).into_iter().map(PathBuf::from));
    let mut tried = Vec::new();
    for c in candidates {
        if tried.contains(&c) {
            continue;
        }
        tried.push(c.clone());
        if crate::sys::fs_magic(&c).ok() != Some(crate::sys::TMPFS_MAGIC) {
            continue;
        }
        let probe = c.join(format!("tlblab-probe-fs-test-{}", std::process::id()));
        if std::fs::create_dir(&probe).is_ok() {
            let _ = std::fs::remove_dir(&probe);
            return Ok(c);
        }
    }
    Err(format!(
        "no writable tmpfs (tried {}): the [fs] calls are not measured",
        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

/// Mount points of the read-write tmpfs mounts in a `/proc/mounts` text (escaped names skipped).
pub fn tmpfs_mounts(mounts: &str) -> Vec<String> {
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let rw = f.get(3).is_some_and(|o| o.split(',').any(|x| x == "rw"));
            (f.len() >= 4 && f[2] == "tmpfs" && rw && !f[1].contains('\\')).then(|| f[1].to_string())
        })
        .collect()
}

fn cstring(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::Error::other("a NUL in a path"))
}

/// fs_mark-style names: the 16 sequential characters (the hex time stamp, `~`-padded) and 24
/// upper-case letters or digits from a seeded stream.
fn names(n: usize, seed: u64) -> Vec<String> {
    let mut x = seed | 1;
    let stamp = format!("{:x}", 0x6934_0000u64 + seed % 0x1_0000);
    (0..n)
        .map(|_| {
            let mut s = format!("{stamp:~<SEQ_LEN$}");
            while s.len() < NAME_LEN {
                // xorshift64: any stream of uniform characters will do.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let c = (x % 36) as u8;
                s.push(if c < 10 { (b'0' + c) as char } else { (b'A' + c - 10) as char });
            }
            s
        })
        .collect()
}

fn err(what: &str) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Measures the five calls, `bursts` bursts each (one untimed burst first), and fs_mark's
/// user work, in a directory made under `tmpfs` and removed after, on a thread pinned to `cpu`.
pub fn fs_calls_on(cpu: usize, tmpfs: &Path, bursts: usize, seed: u64) -> std::io::Result<FsCalls> {
    let tmpfs = tmpfs.to_path_buf();
    std::thread::spawn(move || {
        crate::sys::pin_to_cpu(cpu)?;
        let top = tmpfs.join(format!("tlblab-probe-fs-{}", std::process::id()));
        let r = fs_calls_in(&top, bursts, seed);
        let _ = std::fs::remove_dir_all(&top);
        r.map(|mut c| {
            c.mount = tmpfs.display().to_string();
            c
        })
    })
    .join()
    .map_err(|_| std::io::Error::other("the fs probe thread panicked"))?
}

fn fs_calls_in(top: &Path, bursts: usize, seed: u64) -> std::io::Result<FsCalls> {
    let sub = top.join("00");
    std::fs::create_dir_all(&sub)?;
    let csub = cstring(&sub)?;
    let all = names(BASE_FILES + (bursts + 1) * BURST, seed);
    let paths: Vec<CString> = all.iter().map(|n| cstring(&sub.join(n))).collect::<Result<_, _>>()?;
    let flags = libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC;
    // SAFETY (every block below): the paths are valid C strings, the descriptors ours.
    for p in &paths[..BASE_FILES] {
        let fd = unsafe { libc::open(p.as_ptr(), flags, 0o666) };
        if fd < 0 || unsafe { libc::close(fd) } != 0 {
            return Err(err("creating the base files"));
        }
    }
    let buf = [0u8; 1];
    let mut fds = [0i32; BURST];
    let per = |t: Instant| t.elapsed().as_nanos() as f64 / BURST as f64;
    let mut s: [Vec<f64>; 6] = Default::default();
    for b in 0..=bursts {
        let burst = &paths[BASE_FILES + b * BURST..BASE_FILES + (b + 1) * BURST];
        let t = Instant::now();
        for (fd, p) in fds.iter_mut().zip(burst) {
            *fd = unsafe { libc::open(p.as_ptr(), flags, 0o666) };
        }
        let create = per(t);
        if fds.iter().any(|&fd| fd < 0) {
            return Err(err("open(O_CREAT) of a new name"));
        }
        let t = Instant::now();
        let mut bad = 0;
        for &fd in &fds {
            bad += (unsafe { libc::write(fd, buf.as_ptr().cast(), 0) } != 0) as usize;
        }
        let write = per(t);
        let t = Instant::now();
        for &fd in &fds {
            bad += (unsafe { libc::close(fd) } != 0) as usize;
        }
        let close = per(t);
        if bad > 0 {
            return Err(err("write(fd, buf, 0) or close"));
        }
        let t = Instant::now();
        let mut eexist = 0;
        for _ in 0..BURST {
            let r = unsafe { libc::mkdir(csub.as_ptr(), 0o777) };
            eexist +=
                (r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST)) as usize;
        }
        let mkdir = per(t);
        let t = Instant::now();
        let mut eisdir = 0;
        for _ in 0..BURST {
            let r = unsafe { libc::open(csub.as_ptr(), flags, 0o666) };
            eisdir +=
                (r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EISDIR)) as usize;
        }
        let walk = per(t);
        // The files just made, opened again without O_CREAT: a create's work outside the lock.
        let t = Instant::now();
        for (fd, p) in fds.iter_mut().zip(burst) {
            *fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR) };
        }
        let open = per(t);
        for &fd in &fds {
            bad += (fd < 0 || unsafe { libc::close(fd) } != 0) as usize;
        }
        if bad > 0 {
            return Err(err("open(O_RDWR) of an existing file"));
        }
        if eexist != BURST || eisdir != BURST {
            return Err(std::io::Error::other(format!(
                "mkdir of an existing directory gave EEXIST {eexist} times and open(O_CREAT) of it \
                 EISDIR {eisdir} times of {BURST}"
            )));
        }
        if b > 0 {
            for (v, x) in s.iter_mut().zip([create, write, close, mkdir, walk, open]) {
                v.push(x);
            }
        }
    }
    let user = user_ns(bursts, &top.display().to_string(), false)?;
    let touched = user_ns(bursts, &top.display().to_string(), true)?;
    let pwrite = pwrite_page_ns(top, bursts)?;
    let [create, write, close, mkdir, walk, open] = s;
    Ok(FsCalls {
        mount: String::new(),
        create_ns: Summary::of(&create),
        walk_ns: Summary::of(&walk),
        open_existing_ns: Summary::of(&open),
        mkdir_exists_ns: Summary::of(&mkdir),
        write_empty_ns: Summary::of(&write),
        close_ns: Summary::of(&close),
        user_ns: Summary::of(&user),
        user_touched_ns: Some(Summary::of(&touched)),
        files: BASE_FILES + (bursts + 1) * BURST,
        pwrite_page_ns: Some(Summary::of(&pwrite)),
    })
}

/// fs_mark's `start()` / `stop()` (lib_timing.c): a `gettimeofday` each, microseconds between.
fn now_us() -> u64 {
    // SAFETY: `tv` is plain data gettimeofday fills.
    unsafe {
        let mut tv: libc::timeval = std::mem::zeroed();
        libc::gettimeofday(&mut tv, std::ptr::null_mut());
        tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64
    }
}

/// Per-file nanoseconds of fs_mark's user-space work (see the module comment) for `dir` as
/// its `-d` directory, over `bursts` bursts of [`BURST`] files after an untimed one; with
/// `touched`, the array's pages are written once first (no first-touch fault in the loop).
pub fn user_ns(bursts: usize, dir: &str, touched: bool) -> std::io::Result<Vec<f64>> {
    let n = (bursts + 1) * BURST;
    let size = std::mem::size_of::<NameEntry>();
    // SAFETY: calloc'd zeroed memory of n entries, freed below; every write stays inside an
    // entry's arrays (snprintf is bounded, the name is 40 bytes of 128).
    let names = unsafe { libc::calloc(n, size) } as *mut NameEntry;
    if names.is_null() {
        return Err(std::io::Error::other("calloc of the names array"));
    }
    if touched {
        // SAFETY: inside the n * size bytes just allocated; a zero over a zero.
        for off in (0..n * size).step_by(crate::sys::PAGE) {
            unsafe { names.cast::<u8>().add(off).write_volatile(0) };
        }
    }
    let my_dir = CString::new(dir).map_err(|_| std::io::Error::other("a NUL in the directory"))?;
    let mut out = Vec::with_capacity(bursts);
    let (mut seq_name, mut rand_name, mut subdir) = ([0u8; FILENAME_SIZE], [0u8; FILENAME_SIZE], [0u8; 16]);
    let (mut write_name, mut target_name) = ([0u8; 1200], [0u8; 1200]);
    let (mut min_us, mut max_us, mut total_us) = (0u64, 0u64, 0u64);
    // SAFETY: as above; the format strings are NUL-terminated literals with matching arguments.
    unsafe {
        srandom(now_us() as u32);
        for b in 0..=bursts {
            let t = Instant::now();
            for k in b * BURST..(b + 1) * BURST {
                let e = &mut *names.add(k);
                // setup_file_name: the time, the subdirectory (time-hash policy), the paths.
                let sec = now_us() / 1_000_000;
                libc::snprintf(subdir.as_mut_ptr().cast(), subdir.len(), c"%02x".as_ptr(), 0u32);
                libc::snprintf(
                    e.target_dir.as_mut_ptr().cast(),
                    MAX_NAME_PATH,
                    c"%s/%s".as_ptr(),
                    my_dir.as_ptr(),
                    subdir.as_ptr(),
                );
                libc::snprintf(
                    e.write_dir.as_mut_ptr().cast(),
                    MAX_NAME_PATH,
                    c"%s".as_ptr(),
                    e.target_dir.as_ptr(),
                );
                libc::snprintf(
                    seq_name.as_mut_ptr().cast(),
                    FILENAME_SIZE,
                    c"%lx".as_ptr(),
                    sec as libc::c_ulong,
                );
                for c in rand_name.iter_mut().take(RAND_LEN) {
                    loop {
                        let v = random();
                        *c = b'0'.wrapping_add((v & 0x7f) as u8);
                        if libc::isupper(*c as libc::c_int) != 0 || libc::isdigit(*c as libc::c_int) != 0 {
                            break;
                        }
                    }
                }
                rand_name[RAND_LEN] = 0;
                let seq_len = libc::strlen(seq_name.as_ptr().cast());
                let skip = seq_len.saturating_sub(SEQ_LEN);
                libc::strncat(e.f_name.as_mut_ptr().cast(), seq_name.as_ptr().add(skip).cast(), SEQ_LEN);
                for _ in seq_len..SEQ_LEN {
                    libc::strcat(e.f_name.as_mut_ptr().cast(), c"~".as_ptr());
                }
                libc::strncat(e.f_name.as_mut_ptr().cast(), rand_name.as_ptr().cast(), RAND_LEN);
                // do_run: the two full paths, then start()/stop() around open, write and close.
                libc::snprintf(
                    write_name.as_mut_ptr().cast(),
                    write_name.len(),
                    c"%s/%s".as_ptr(),
                    e.write_dir.as_ptr(),
                    e.f_name.as_ptr(),
                );
                libc::snprintf(
                    target_name.as_mut_ptr().cast(),
                    target_name.len(),
                    c"%s/%s".as_ptr(),
                    e.target_dir.as_ptr(),
                    e.f_name.as_ptr(),
                );
                for _ in 0..3 {
                    let d = now_us().wrapping_neg().wrapping_add(now_us());
                    total_us = total_us.wrapping_add(d);
                    max_us = max_us.max(d);
                    if min_us == 0 || d < min_us {
                        min_us = d;
                    }
                }
            }
            let per = t.elapsed().as_nanos() as f64 / BURST as f64;
            if b > 0 {
                out.push(per);
            }
        }
        // Keep the work observable.
        std::hint::black_box((total_us, min_us, max_us, &write_name, &target_name));
        let last = CStr::from_ptr((*names.add(n - 1)).f_name.as_ptr().cast()).to_bytes().len();
        libc::free(names.cast());
        if last != NAME_LEN {
            return Err(std::io::Error::other(format!("fs_mark-style name of {last} bytes, not {NAME_LEN}")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_mounts_are_the_read_write_ones() {
        let m = "tmpfs /dev/shm tmpfs rw,relatime,size=24731408k 0 0\n\
                 proc /proc proc rw,nosuid 0 0\n\
                 x /mnt/ro tmpfs ro,nosuid,size=4k 0 0\n\
                 tmpfs /run/a\\040b tmpfs rw 0 0\n\
                 tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n";
        assert_eq!(tmpfs_mounts(m), vec!["/dev/shm", "/sys/fs/cgroup"]);
    }

    #[test]
    fn names_are_fs_marks_shape() {
        let n = names(3, 7);
        assert!(n.iter().all(|s| s.len() == NAME_LEN));
        assert!(n[0][SEQ_LEN..].bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
        assert_ne!(n[0], n[1]);
    }

    #[test]
    fn every_call_is_timed_on_tmpfs_and_the_directory_is_removed() {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let Ok(tmpfs) = find_tmpfs(&mounts) else {
            eprintln!("no writable tmpfs here: skipped");
            return;
        };
        let c = fs_calls_on(crate::sys::allowed_cpus()[0], &tmpfs, 2, 1).unwrap();
        let touched = c.user_touched_ns.as_ref().unwrap();
        for s in [
            &c.create_ns,
            &c.walk_ns,
            &c.open_existing_ns,
            &c.mkdir_exists_ns,
            &c.write_empty_ns,
            &c.close_ns,
            &c.user_ns,
            touched,
            c.pwrite_page_ns.as_ref().unwrap(),
        ] {
            assert!(s.median > 0.0 && s.min <= s.median && s.median <= s.max && s.n == 2, "{s:?}");
        }
        assert_eq!(c.files, BASE_FILES + 3 * BURST);
        assert!(!tmpfs.join(format!("tlblab-probe-fs-{}", std::process::id())).exists());
    }
}
