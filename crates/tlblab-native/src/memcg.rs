//! A memory cgroup of our own for a measurement that needs reclaim on a machine with plenty of
//! memory: a child of the cgroup this process is in (so whatever limits the host set for us
//! still hold above it), with a memory limit (cgroup v2 `memory.max`, v1
//! `memory.limit_in_bytes`), this process moved into it for the measurement and back out after.
//! Page cache is charged to the memcg of the faulting mm's owner (mm/memcontrol.c
//! `get_mem_cgroup_from_mm`), so the whole process moves (`cgroup.procs`), not one thread.
//!
//! Where no memory controller is mounted writable, or the kernel refuses the child or its limit
//! (cgroup v2 gives a non-root cgroup with processes in it no controllers for children), the
//! error says which and why: the caller skips with it.

use std::path::{Path, PathBuf};

/// A memory controller hierarchy this process is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Where the hierarchy is mounted.
    pub mount: PathBuf,
    /// cgroup v2 (`memory.max`) or v1 (`memory.limit_in_bytes`).
    pub v2: bool,
    /// This process's cgroup in it, relative to the mount (`/` the root).
    pub own: String,
}

impl Hierarchy {
    fn limit_file(&self) -> &'static str {
        if self.v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        }
    }

    fn own_dir(&self) -> PathBuf {
        self.mount.join(self.own.trim_start_matches('/'))
    }
}

/// The memory hierarchies from `/proc/self/mounts` and `/proc/self/cgroup`: a v1 `cgroup` mount
/// whose options name `memory`, and a `cgroup2` mount (its `cgroup.controllers` must list
/// `memory`, which `controllers_of_v2` reads), each with this process's path in it.
pub fn hierarchies(
    mounts: &str,
    cgroup: &str,
    controllers_of_v2: &dyn Fn(&Path) -> String,
) -> Vec<Hierarchy> {
    let own_v1 = cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
        ctl.split(',').any(|c| c == "memory").then(|| path.to_string())
    });
    let own_v2 = cgroup.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string));
    let mut out = Vec::new();
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 || !f[3].split(',').any(|o| o == "rw") {
            continue;
        }
        let mount = PathBuf::from(f[1]);
        match f[2] {
            "cgroup" if f[3].split(',').any(|o| o == "memory") => {
                if let Some(own) = &own_v1 {
                    out.push(Hierarchy { mount, v2: false, own: own.clone() });
                }
            }
            "cgroup2" if controllers_of_v2(&mount).split_whitespace().any(|c| c == "memory") => {
                if let Some(own) = &own_v2 {
                    out.push(Hierarchy { mount, v2: true, own: own.clone() });
                }
            }
            _ => {}
        }
    }
    out
}

/// The page counters a charge in our child cgroup of `h` walks (mm/page_counter.c: the child's,
/// its ancestors' and the root's) and whether cgroup v1's swap accounting doubles them (a
/// `memsw` counter at each level: `memory.memsw.limit_in_bytes` exists), given whether that file
/// exists in this process's cgroup (docs/references/linux-mm.md#page-counter).
pub fn counters(h: &Hierarchy, memsw_file: bool) -> (usize, bool) {
    let ancestors = h.own.split('/').filter(|c| !c.is_empty()).count();
    (ancestors + 2, !h.v2 && memsw_file)
}

/// [`counters`] of the hierarchy [`MemCgroup::create`] tries first, if any.
pub fn host_counters() -> Option<(usize, bool)> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let found = hierarchies(&mounts, &cgroup, &|m| {
        std::fs::read_to_string(m.join("cgroup.controllers")).unwrap_or_default()
    });
    let h = found.first()?;
    Some(counters(h, h.own_dir().join("memory.memsw.limit_in_bytes").exists()))
}

/// Our child cgroup with its limit; dropping it moves this process back and removes it.
#[derive(Debug)]
pub struct MemCgroup {
    pub hierarchy: Hierarchy,
    pub dir: PathBuf,
    pub limit_bytes: u64,
    entered: bool,
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing `{value}` to {}: {e}", path.display()))
}

impl MemCgroup {
    /// A child of this process's cgroup in the first memory hierarchy that takes it, limited to
    /// `limit_bytes`. `Err` says, for each hierarchy tried, why not.
    pub fn create(limit_bytes: u64) -> Result<MemCgroup, String> {
        let mounts =
            std::fs::read_to_string("/proc/self/mounts").map_err(|e| format!("/proc/self/mounts: {e}"))?;
        let cgroup =
            std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
        let found = hierarchies(&mounts, &cgroup, &|m| {
            std::fs::read_to_string(m.join("cgroup.controllers")).unwrap_or_default()
        });
        if found.is_empty() {
            return Err("no memory cgroup controller is mounted read-write (cgroup v2 with `memory` in \
                        cgroup.controllers, or a v1 `memory` hierarchy)"
                .into());
        }
        let mut why = Vec::new();
        for h in found {
            match MemCgroup::create_in(&h, limit_bytes) {
                Ok(m) => return Ok(m),
                Err(e) => {
                    why.push(format!("{} ({}): {e}", h.mount.display(), if h.v2 { "v2" } else { "v1" }))
                }
            }
        }
        Err(why.join("; "))
    }

    fn create_in(h: &Hierarchy, limit_bytes: u64) -> Result<MemCgroup, String> {
        let parent = h.own_dir();
        if h.v2 {
            // The parent must hand the memory controller to its children.
            let sub = std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.split_whitespace().any(|c| c == "memory") {
                write(&parent.join("cgroup.subtree_control"), "+memory")?;
            }
        }
        let dir = parent.join(format!("tlblab-memcg-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let m = MemCgroup { hierarchy: h.clone(), dir, limit_bytes, entered: false };
        write(&m.dir.join(h.limit_file()), &limit_bytes.to_string())?;
        if h.v2 {
            // No swap: file pages are what reclaim takes, as on the seed's machine. Not every
            // kernel has the file (no swap accounting): then there is nothing to limit.
            let _ = std::fs::write(m.dir.join("memory.swap.max"), "0");
        }
        Ok(m)
    }

    /// Moves this process (every thread) into the cgroup.
    pub fn enter(&mut self) -> Result<(), String> {
        write(&self.dir.join("cgroup.procs"), &std::process::id().to_string())?;
        self.entered = true;
        Ok(())
    }

    /// Moves this process back to where it was.
    pub fn leave(&mut self) -> Result<(), String> {
        if self.entered {
            write(&self.hierarchy.own_dir().join("cgroup.procs"), &std::process::id().to_string())?;
            self.entered = false;
        }
        Ok(())
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        let _ = self.leave();
        // The pages still charged to it go to the parent when it is removed.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_hierarchies_are_found_with_our_path() {
        // A guest with the v1 memory controller and an empty unified hierarchy.
        let mounts = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
                      cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let cgroup = "4:memory:/jobs/a1\n1:cpu:/\n0::/\n";
        let none = |_: &Path| String::new();
        let h = hierarchies(mounts, cgroup, &none);
        assert_eq!(
            h,
            [Hierarchy { mount: "/sys/fs/cgroup/memory".into(), v2: false, own: "/jobs/a1".into() }]
        );
        assert_eq!(h[0].own_dir(), PathBuf::from("/sys/fs/cgroup/memory/jobs/a1"));
        assert_eq!(h[0].limit_file(), "memory.limit_in_bytes");
        // A pure v2 host: the memory controller is listed at the mount.
        let mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev 0 0\n";
        let h = hierarchies(mounts, "0::/user.slice/s-1.scope\n", &|_| "cpuset cpu io memory pids\n".into());
        assert_eq!(h.len(), 1);
        assert!(h[0].v2 && h[0].limit_file() == "memory.max");
        assert_eq!(h[0].own_dir(), PathBuf::from("/sys/fs/cgroup/user.slice/s-1.scope"));
        // Our child, two ancestors and the root; v2 has no memsw counters whatever the file.
        assert_eq!(counters(&h[0], true), (4, false));
        let v1 = Hierarchy { mount: "/m".into(), v2: false, own: "/jobs/a1".into() };
        assert_eq!((counters(&v1, true), counters(&v1, false)), ((4, true), (4, false)));
        let root = Hierarchy { mount: "/m".into(), v2: true, own: "/".into() };
        assert_eq!(counters(&root, false), (2, false));
        // Read-only, or v2 without the memory controller: nothing.
        assert!(
            hierarchies("cgroup2 /sys/fs/cgroup cgroup2 ro 0 0\n", "0::/\n", &|_| "memory".into()).is_empty()
        );
        assert!(
            hierarchies("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", "0::/\n", &|_| "cpu io".into()).is_empty()
        );
    }
}
