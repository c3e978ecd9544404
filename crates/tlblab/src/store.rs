//! The results store's file primitive: every file tlblab writes into a results directory goes
//! through `write_atomic` (a temporary file in the same directory, then a rename), so readers and
//! an interrupted run only ever see whole files.
//!
//! Several processes may write into one directory at once (`--shard I/N` job arrays, possibly on
//! several hosts sharing it over NFS): a temporary file's name carries the host, the process id
//! and a per-process counter, so no two writers share one, and `remove_stale_temps` deletes only
//! temporary files whose writer is certainly gone.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// A temporary file of another host whose writer we cannot ask is removed after this long.
pub const FOREIGN_TEMP_AGE: Duration = Duration::from_secs(24 * 3600);

/// This host's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`), made file-name safe.
fn host() -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let h: String =
        h.trim().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if h.is_empty() {
        "localhost".into()
    } else {
        h
    }
}

/// `.NAME.tmp-HOST-PID-N`.
fn temp_name(file: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(".{file}.tmp-{}-{}-{}", host(), std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The host and process id of a temporary file's writer, from its name.
fn temp_owner(name: &str) -> Option<(String, u32)> {
    let rest = &name[name.rfind(".tmp-")? + 5..];
    let mut parts = rest.rsplitn(3, '-');
    let _counter: u64 = parts.next()?.parse().ok()?;
    let pid: u32 = parts.next()?.parse().ok()?;
    Some((parts.next()?.to_string(), pid))
}

/// Writes `path` atomically: a temporary file in the same directory, then a rename over `path`.
/// No fsync: it cost ~10 ms a file here (a 200-cell shard took 2.3 s instead of 1.3), and a
/// cell file a power cut leaves damaged is not reused but run again (`results::reusable`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(temp_name(&path.file_name().unwrap().to_string_lossy()));
    may_die();
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        may_die();
        // Two writes, so a test can stop the writer with half a file written (as a kill during
        // a large write does).
        let (head, tail) = bytes.split_at(bytes.len() / 2);
        f.write_all(head)?;
        may_die();
        f.write_all(tail)
    })();
    if let Err(e) = written {
        std::fs::remove_file(&tmp).ok();
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    may_die();
    std::fs::rename(&tmp, path)
        .map_err(|e| {
            std::fs::remove_file(&tmp).ok();
            e
        })
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
    may_die();
    Ok(())
}

/// Whether `name` may name a directory entry: not empty, not `.` or `..`, no path separator,
/// no NUL or other control character (so never an absolute path or one that climbs out).
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    let bad = |why: &str| Err(format!("`{}` {why}", name.escape_debug()));
    if name.is_empty() {
        return bad("is empty; a name becomes a directory");
    }
    if name == "." || name == ".." {
        return bad("is not allowed; a name becomes a directory inside the output");
    }
    if name.contains(['/', '\\']) || name.chars().any(char::is_control) {
        return bad("holds a path separator or control character; allowed: a plain file name");
    }
    Ok(())
}

/// `dir/name` for a name from a user or a file (an experiment's `name`, an mmtests run name):
/// the only way such a name becomes a path, so nothing is written outside `dir`. Refuses what
/// [`check_name`] refuses, and an existing symbolic link at `dir/name` (it may lead anywhere).
pub fn child(dir: &Path, name: &str) -> Result<PathBuf> {
    check_name(name).map_err(|e| anyhow!("{e}"))?;
    let p = dir.join(name);
    if p.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
        bail!("{}: is a symbolic link; tlblab writes only inside {}", p.display(), dir.display());
    }
    Ok(p)
}

/// Checks an output directory before anything runs: `flag` (e.g. `--out`) must name a
/// directory or a path one can be created at (its nearest existing ancestor a directory).
pub fn check_out_dir(dir: &Path, flag: &str) -> Result<()> {
    let mut p = dir;
    loop {
        if let Ok(m) = std::fs::metadata(p) {
            if m.is_dir() {
                return Ok(());
            }
            if p == dir {
                bail!("{flag} {}: is a file; give a directory", dir.display());
            }
            bail!("{flag} {}: {} is a file; give a directory", dir.display(), p.display());
        }
        match p.parent() {
            Some(up) if !up.as_os_str().is_empty() => p = up,
            _ => return Ok(()),
        }
    }
}

/// A point where a killed writer may stop. Nothing outside test builds; in a test build, the
/// process exits there at once if the test that started it asked so (`tests::may_die`).
#[inline(always)]
fn may_die() {
    #[cfg(test)]
    tests::may_die();
}

/// Whether a process with this id runs on this host (Linux: `/proc/PID`; elsewhere we cannot
/// tell and assume it does).
fn alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Whether a temporary file was left by a writer that is gone: this host's and its process has
/// exited, or another host's (or unparsable) and older than `FOREIGN_TEMP_AGE`.
fn stale(name: &str, path: &Path) -> bool {
    let old = || {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > FOREIGN_TEMP_AGE)
    };
    match temp_owner(name) {
        Some((h, pid)) if h == host() => pid != std::process::id() && !alive(pid),
        _ => old(),
    }
}

/// Removes the temporary files (`.NAME.tmp-…`, see `write_atomic`) that a killed run left in
/// `dir`, its `plots/` and every `cells/*/`, and only those (see `stale`): a live writer's
/// temporary file is never touched.
pub fn remove_stale_temps(dir: &Path) {
    let mut dirs = vec![dir.to_path_buf(), dir.join("plots")];
    if let Ok(rd) = std::fs::read_dir(dir.join("cells")) {
        dirs.extend(rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()));
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".tmp-") && stale(&name, &e.path()) {
                std::fs::remove_file(e.path()).ok();
            }
        }
    }
}

#[cfg(test)]
mod tests;
