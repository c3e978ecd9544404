//! vm-scalability's `case-lru-file-mmap-read`, natively, on a machine whose memory is far larger
//! than the files a short run can read: the run's memory is a memory cgroup's limit instead
//! (crate::memcg), so that the page cache of the files fills it and reclaim (memcg limit reclaim,
//! in the faulting task) unmaps the pages the other readers still map, with its batched flush
//! (docs/references/seeds-001-003-004.md#vm-scalability).
//!
//! As the case does: one reader per CPU, each over its own sparse file (`truncate -s`) of
//! `10 * limit / readers` bytes, `usemem -f FILE --readonly`: `mmap(PROT_READ, MAP_SHARED)` and
//! every 8-byte word read once, in order; a reader that reaches its file's end starts over (the
//! model's readers do the same: its first pages were reclaimed long before). The files are on
//! a disk filesystem: holes read as zero-filled page cache without I/O, and clean file pages
//! can be reclaimed without swap (tmpfs's could not).
//!
//! The metric is the model's: the case's elapsed time, the files' pages over the aggregate page
//! rate measured after the warm-up has filled the cgroup.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::{
    background_rates, measure_window, pin_and_wait, read_counters, result, Counter, NativeResult, Outcome,
};
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
/// `counters`, the page counters a charge walks on the host ([`crate::memcg::host_counters`]).
pub fn sim_text(mem_mib: u64, counters: Option<(usize, bool)>) -> String {
    let mut t = format!("vm-scalability {NAME} mem_mib={} memcg_mib={mem_mib}", 4 * mem_mib);
    if let Some((depth, memsw)) = counters {
        t += &format!(" memcg_depth={}", depth.min(8));
        if memsw {
            t += " memcg_memsw=1";
        }
    }
    t
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
    check_dir(&spec.dir)?;
    let cpus = sys::allowed_cpus();
    let background = background_rates(200);
    let mut cg = MemCgroup::create(spec.mem_mib << 20).map_err(|e| format!("no memory cgroup: {e}"))?;
    let pages = file_pages(spec.mem_mib, spec.readers);
    let len = (pages as usize) * PAGE;
    let files = (0..spec.readers)
        .map(|_| sys::unlinked_temp_file(&spec.dir, len as u64).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, String>>()?;
    cg.enter()?;
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Arc<Vec<Counter>> = Arc::new((0..spec.readers).map(|_| Counter::default()).collect());
    let start = Arc::new(Barrier::new(spec.readers + 1));
    let handles: Vec<_> = files
        .into_iter()
        .enumerate()
        .map(|(i, file)| {
            let (stop, counters, start, cpu) =
                (stop.clone(), counters.clone(), start.clone(), cpus[i % cpus.len()]);
            std::thread::spawn(move || -> Result<u64, String> {
                let m = Mapping::shared_read_only(len, &file).map_err(|e| e.to_string());
                pin_and_wait(cpu, &start)?;
                let m = m?;
                let (mut n, mut sum) = (0u64, 0u64);
                'pass: loop {
                    for off in (0..len).step_by(PAGE) {
                        if stop.load(Ordering::Relaxed) {
                            break 'pass;
                        }
                        sum = sum.wrapping_add(m.read_page_words(off));
                        n += 1;
                        counters[i].0.store(n, Ordering::Relaxed);
                    }
                }
                Ok(sum)
            })
        })
        .collect();
    let window = measure_window(&start, spec.warmup, spec.measure, &handles, || read_counters(&counters));
    stop.store(true, Ordering::Relaxed);
    let mut failed = None;
    for h in handles {
        match h.join() {
            Ok(Ok(sum)) => debug_assert_eq!(sum, 0, "holes read as zeroes"),
            Ok(Err(e)) => failed = Some(e),
            Err(_) => failed = Some("a reader panicked".into()),
        }
    }
    cg.leave()?;
    drop(cg);
    if let Some(e) = failed {
        return Err(format!("{NAME}: {e}"));
    }
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
        for counters in [None, Some((2, false)), Some((4, true))] {
            let text = sim_text(64, counters);
            let w = tlblab_model::workload::Workload::parse(&text).unwrap();
            assert_eq!(w.metric().name, "elapsed");
            assert_eq!(w.metric().unit, "seconds");
            // The name keeps what differs from the defaults (depth 2, no memsw).
            assert_eq!(w.name().contains("memcg_memsw=1"), counters.is_some_and(|c| c.1), "{text}");
            assert_eq!(w.name().contains("memcg_depth=4"), counters.is_some_and(|c| c.0 == 4), "{text}");
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
