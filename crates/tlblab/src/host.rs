//! The host's memory against a run's estimate (docs/limits.md): the fixed caps keep every run
//! within what the model can hold, but a small host (a VM, a container under a cgroup limit)
//! may hold less. Before a run allocates anything, its estimate
//! ([`tlblab_model::host_memory`]), times the runs that go at once, is checked against what the
//! host has left: `MemAvailable` in /proc/meminfo, and the cgroup v2 limit less usage of this
//! process's cgroup and each of its ancestors, whichever is smaller. Where neither can be read
//! the check is skipped.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use tlblab_model::host_memory::{HostBytes, Sizer};
use tlblab_model::profile::MachineProfile;
use tlblab_model::run::RunSpec;

/// What the host has left for a run, and where that figure was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Available {
    pub bytes: u64,
    pub source: String,
}

/// `MemAvailable` of /proc/meminfo's text, in bytes.
pub fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Room left under a cgroup v2 limit: `memory.max` less `memory.current` (their texts); `None`
/// without a limit (`max`) or if either does not parse.
pub fn parse_cgroup_room(max: &str, current: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// The cgroup v2 directory under `root` of a process whose /proc/PID/cgroup is `text` (its
/// `0::/path` line).
fn own_cgroup(root: &Path, text: &str) -> PathBuf {
    let rel = text.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/");
    root.join(rel.trim().trim_start_matches('/'))
}

/// The tightest cgroup v2 limit over this process's cgroup and its ancestors up to `root`.
fn cgroup_room(root: &Path, proc_cgroup: &str) -> Option<Available> {
    let mut dir = own_cgroup(root, proc_cgroup);
    let mut best: Option<Available> = None;
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        if let (Some(max), Some(cur)) = (read("memory.max"), read("memory.current")) {
            if let Some(room) = parse_cgroup_room(&max, &cur) {
                if best.as_ref().map_or(true, |b| room < b.bytes) {
                    let source = format!("memory.max less memory.current in {}", dir.display());
                    best = Some(Available { bytes: room, source });
                }
            }
        }
        if dir == root || !dir.pop() || !dir.starts_with(root) {
            return best;
        }
    }
}

/// What the host has left: the smaller of `MemAvailable` and the cgroup room; `None` if
/// neither can be read.
pub fn available() -> Option<Available> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| parse_meminfo(&t))
        .map(|bytes| Available { bytes, source: "MemAvailable in /proc/meminfo".into() });
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let cgroup = cgroup_room(Path::new("/sys/fs/cgroup"), &own);
    [meminfo, cgroup].into_iter().flatten().min_by_key(|a| a.bytes)
}

/// `bytes` as a person reads it: GiB with one decimal, or MiB below 1 GiB.
pub fn show(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

/// The decision: refuses `need` bytes for `runs` runs at once beyond `avail`, with one line
/// naming `what` sized them and both figures. No figure (`None`): allowed.
pub fn check(need: u64, runs: u64, what: &str, avail: Option<&Available>) -> Result<()> {
    let who = if runs > 1 {
        format!("{runs} runs at once (--jobs, by default one per host core) need")
    } else {
        "the run needs".into()
    };
    match avail {
        Some(a) if need > a.bytes => bail!(
            "{what}: {who} about {} of host memory; {} is available ({})",
            show(need),
            show(a.bytes),
            a.source
        ),
        _ => Ok(()),
    }
}

/// The input that sized the largest part of `h`, as the flag that gives it.
pub fn sized_by(h: &HostBytes, profile: &MachineProfile, spec: &RunSpec) -> String {
    let nodes = |n: u32| if n == 1 { "1 socket".to_string() } else { format!("{n} sockets") };
    match h.largest() {
        Sizer::Memory if spec.workload.memory_pages().is_some() => {
            format!("--workload `{}` on {}", spec.workload.name(), nodes(h.nodes))
        }
        Sizer::Memory => format!("--set node_mib={} on {}", h.node_pages >> 8, nodes(h.nodes)),
        Sizer::Mapped => format!(
            "--workload `{}` with --threads {} ({} MiB mapped)",
            spec.workload.name(),
            spec.tasks,
            h.mapped_pages >> 8
        ),
        Sizer::Tlbs => format!(
            "--machine {} ({} TLB entries per CPU on {} CPUs)",
            profile.name, h.tlb_entries, h.nr_cpus
        ),
        Sizer::Tasks => format!("--threads {} ({} tasks)", spec.tasks, h.nr_tasks),
        Sizer::Cpus => format!("--machine {} ({} CPUs)", profile.name, h.nr_cpus),
    }
}

/// Refuses `spec` on `profile` if `at_once` such runs (concurrent cells) would not fit the
/// host's memory as it is now.
pub fn check_run(profile: &MachineProfile, spec: &RunSpec, at_once: u64) -> Result<()> {
    let h = spec.host_bytes(profile);
    let need = h.total().saturating_mul(at_once.max(1));
    let Some(avail) = available() else { return Ok(()) };
    if need <= avail.bytes {
        return Ok(());
    }
    check(need, at_once, &sized_by(&h, profile, spec), Some(&avail))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       24684000 kB\nMemFree:        19366912 kB\n\
                           MemAvailable:    1258292 kB\nBuffers:          123 kB\n";

    #[test]
    fn meminfo_gives_mem_available_in_bytes() {
        assert_eq!(parse_meminfo(MEMINFO), Some(1258292 * 1024));
        assert_eq!(parse_meminfo("MemTotal: 100 kB\n"), None, "no MemAvailable (Linux before 3.14)");
        assert_eq!(parse_meminfo("MemAvailable: lots kB\n"), None);
    }

    #[test]
    fn a_cgroup_limit_leaves_its_room_and_max_is_no_limit() {
        assert_eq!(parse_cgroup_room("2147483648\n", "1073741824\n"), Some(1 << 30));
        assert_eq!(parse_cgroup_room("max\n", "1073741824\n"), None);
        // Usage over the limit (reclaim lags): no room, not a wrap-around.
        assert_eq!(parse_cgroup_room("1000\n", "4096\n"), Some(0));
        assert_eq!(parse_cgroup_room("", "0"), None);
    }

    #[test]
    fn the_tightest_limit_of_the_cgroup_and_its_ancestors_counts() {
        let root = std::env::temp_dir().join(format!("tlblab-cgroup-{}", std::process::id()));
        let leaf = root.join("ci.slice/job.scope");
        std::fs::create_dir_all(&leaf).unwrap();
        let put = |d: &Path, max: &str, cur: &str| {
            std::fs::write(d.join("memory.max"), max).unwrap();
            std::fs::write(d.join("memory.current"), cur).unwrap();
        };
        put(&root, "max\n", "999\n");
        put(&leaf, "max\n", "5\n");
        let proc = "0::/ci.slice/job.scope\n";
        assert_eq!(cgroup_room(&root, proc), None, "no limit anywhere");
        // The parent's 2 GiB limit with 1.5 GiB used binds its child.
        put(&root.join("ci.slice"), "2147483648\n", "1610612736\n");
        let a = cgroup_room(&root, proc).unwrap();
        assert_eq!(a.bytes, 512 << 20);
        assert!(a.source.contains("ci.slice") && !a.source.contains("job.scope"), "{}", a.source);
        put(&leaf, "104857600\n", "0\n");
        assert_eq!(cgroup_room(&root, proc).unwrap().bytes, 100 << 20);
        // A process at the root (a container's own namespace): the root's files only.
        put(&root, "1073741824\n", "0\n");
        assert_eq!(cgroup_room(&root, "0::/\n").unwrap().bytes, 1 << 30);
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn a_run_beyond_what_is_available_is_refused_naming_its_input() {
        let avail = Available { bytes: 1258292 * 1024, source: "MemAvailable in /proc/meminfo".into() };
        let e = check(3 << 30, 1, "--set node_mib=4096 on 2 sockets", Some(&avail)).unwrap_err().to_string();
        assert_eq!(
            e,
            "--set node_mib=4096 on 2 sockets: the run needs about 3.0 GiB of host memory; 1.2 GiB is \
             available (MemAvailable in /proc/meminfo)"
        );
        let e = check(3 << 30, 4, "x", Some(&avail)).unwrap_err().to_string();
        assert!(
            e.starts_with("x: 4 runs at once (--jobs, by default one per host core) need about 3.0 GiB"),
            "{e}"
        );
        assert!(check(1 << 30, 1, "x", Some(&avail)).is_ok());
        assert!(check(avail.bytes, 1, "x", Some(&avail)).is_ok(), "exactly what is available");
        assert!(check(u64::MAX, 1, "x", None).is_ok(), "nothing read: no check");
        assert_eq!(show(5 << 20), "5 MiB");
    }

    #[test]
    fn the_input_named_is_the_one_that_sized_the_run() {
        let profile = crate::machines::load("skylake-sp-2s").unwrap();
        let spec = |w: &str, tasks: u32, node_mib: &str| {
            let mut s = crate::spec::Spec::new("skylake-sp-2s", w);
            s.set = vec![format!("node_mib={node_mib}")];
            s.resolve(Some(tasks), 1).unwrap().1
        };
        let s = spec("tlb_flush2_threads", 4, "4096");
        assert_eq!(sized_by(&s.host_bytes(&profile), &profile, &s), "--set node_mib=4096 on 2 sockets");
        let s = spec("page_fault1_processes", 65536, "16");
        assert!(
            sized_by(&s.host_bytes(&profile), &profile, &s).starts_with("--workload `page_fault1_processes`")
        );
    }
}
