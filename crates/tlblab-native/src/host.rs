//! What the host is: kernel, CPUs and topology, virtualisation, THP and the flush ceiling, and
//! how busy everything else was while we measured (interference).

use serde::{Deserialize, Serialize};

use crate::cpuid::CpuidDump;
use crate::sys;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostInfo {
    pub kernel: String,
    pub vendor: String,
    pub model_name: String,
    pub family: u32,
    pub model: u32,
    /// CPUs this process may use.
    pub cpus: Vec<usize>,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// The hypervisor's CPUID signature when the host is a guest.
    pub hypervisor: Option<String>,
    /// KVM paravirtual remote TLB flush offered (preempted vCPUs get no IPI).
    pub kvm_pv_tlb_flush: bool,
    pub pcid: bool,
    pub invpcid: bool,
    pub invlpgb: bool,
    /// Pages per INVLPGB (CPUID 0x8000_0008 EDX\[15:0\] + 1; 1 where there is no INVLPGB, and in
    /// reports recorded before it was read).
    #[serde(default = "one")]
    pub invlpgb_count_max: u32,
    /// `/sys/devices/system/cpu/vulnerabilities/meltdown` says PTI is on.
    pub pti: bool,
    /// The `[selected]` mode of `/sys/kernel/mm/transparent_hugepage/enabled`, if THP exists.
    pub thp: Option<String>,
    /// `tlb_single_page_flush_ceiling` from debugfs, when readable.
    pub flush_ceiling: Option<u64>,
    /// `/proc/cpuinfo` "cpu MHz" of the first CPU (the TSC/nominal rate in most guests).
    pub cpuinfo_mhz: Option<f64>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// `[madvise]` out of `always [madvise] never`.
pub fn selected_mode(text: &str) -> Option<String> {
    let s = text.find('[')?;
    let e = text[s..].find(']')?;
    Some(text[s + 1..s + e].to_string())
}

impl HostInfo {
    pub fn detect(cpuid: &CpuidDump) -> HostInfo {
        let cpus = sys::allowed_cpus();
        let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_default();
        // Topology from sysfs: distinct packages, and SMT siblings of the first CPU.
        let pkg = |c: usize| read(&format!("/sys/devices/system/cpu/cpu{c}/topology/physical_package_id"));
        let mut packages: Vec<String> = cpus.iter().filter_map(|&c| pkg(c)).collect();
        packages.sort();
        packages.dedup();
        let sockets = packages.len().max(1) as u32;
        let siblings = cpus
            .first()
            .and_then(|c| read(&format!("/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list")))
            .map_or(1, |s| count_cpu_list(&s).max(1)) as u32;
        let total = cpus.len().max(1) as u32;
        let threads_per_core = siblings.min(total);
        let cores_per_socket = (total / threads_per_core / sockets).max(1);
        let meltdown = read("/sys/devices/system/cpu/vulnerabilities/meltdown").unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let field = |k: &str| {
            cpuinfo.lines().find(|l| l.starts_with(k)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim())
        };
        let (family, model) = cpuid.family_model();
        let brand = cpuid.brand();
        HostInfo {
            kernel,
            vendor: match cpuid.vendor().as_str() {
                "GenuineIntel" => "intel".into(),
                "AuthenticAMD" | "HygonGenuine" => "amd".into(),
                v => v.to_lowercase(),
            },
            model_name: if brand.is_empty() {
                field("model name").unwrap_or("unknown").into()
            } else {
                brand
            },
            family,
            model,
            cpus,
            sockets,
            cores_per_socket,
            threads_per_core,
            hypervisor: cpuid.hypervisor_vendor().or_else(|| {
                field("flags").filter(|f| f.split(' ').any(|x| x == "hypervisor")).map(|_| "unknown".into())
            }),
            kvm_pv_tlb_flush: cpuid.kvm_pv_tlb_flush(),
            pcid: cpuid.pcid(),
            invpcid: cpuid.invpcid(),
            invlpgb: cpuid.invlpgb(),
            invlpgb_count_max: cpuid.invlpgb_count_max(),
            pti: meltdown.contains("PTI"),
            thp: read("/sys/kernel/mm/transparent_hugepage/enabled").and_then(|t| selected_mode(&t)),
            flush_ceiling: read("/sys/kernel/debug/x86/tlb_single_page_flush_ceiling")
                .and_then(|s| s.parse().ok()),
            cpuinfo_mhz: field("cpu MHz").and_then(|v| v.parse().ok()),
        }
    }

    pub fn is_vm(&self) -> bool {
        self.hypervisor.is_some()
    }

    /// THP can back an `madvise(MADV_HUGEPAGE)` region.
    pub fn thp_usable(&self) -> bool {
        matches!(self.thp.as_deref(), Some("always") | Some("madvise"))
    }
}

/// Number of CPUs in a sysfs list such as `0-3,8,10-11`.
pub fn count_cpu_list(s: &str) -> usize {
    s.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap_or(0).saturating_sub(a.parse().unwrap_or(0)) + 1,
            None => 1,
        })
        .sum()
}

/// CPU time the rest of the machine used while we measured, from `/proc/stat` (all CPUs'
/// busy time, steal included) minus this process's own CPU time.
#[derive(Debug, Clone)]
pub struct Interference {
    start: Option<(u64, u64)>,
    own_start: u64,
    wall: std::time::Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InterferenceReport {
    /// Others' CPU time divided by (wall time x CPUs): 0 = we had the machine to ourselves.
    pub others_share: f64,
    /// Steal time (the hypervisor ran someone else) as a share of wall time x CPUs.
    pub steal_share: f64,
    /// Wall time of the measurement.
    #[serde(default)]
    pub seconds: f64,
}

/// (busy, steal) in clock ticks, summed over CPUs.
fn proc_stat_busy() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_proc_stat(&text)
}

/// The aggregate `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq steal.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 8 {
        return None;
    }
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    Some((busy, v[7]))
}

impl Interference {
    pub fn start() -> Interference {
        Interference {
            start: proc_stat_busy(),
            own_start: sys::process_cpu_ns(),
            wall: std::time::Instant::now(),
        }
    }

    pub fn stop(&self, cpus: usize) -> Option<InterferenceReport> {
        let (b0, s0) = self.start?;
        let (b1, s1) = proc_stat_busy()?;
        let wall = self.wall.elapsed().as_secs_f64();
        let hz = sys::clock_ticks_per_second() as f64;
        let own = (sys::process_cpu_ns() - self.own_start) as f64 / 1e9;
        let busy = (b1 - b0) as f64 / hz;
        let cap = wall * cpus.max(1) as f64;
        if cap <= 0.0 {
            return None;
        }
        // /proc/stat has tick resolution: clamp the difference at zero.
        Some(InterferenceReport {
            others_share: ((busy - own) / cap).clamp(0.0, 1.0),
            steal_share: ((s1 - s0) as f64 / hz / cap).clamp(0.0, 1.0),
            seconds: wall,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_thp_modes() {
        assert_eq!(count_cpu_list("0-3,8,10-11\n"), 7);
        assert_eq!(count_cpu_list("1"), 1);
        assert_eq!(selected_mode("always [madvise] never").as_deref(), Some("madvise"));
        assert_eq!(selected_mode("never"), None);
    }

    #[test]
    fn proc_stat_busy_sums_the_busy_columns() {
        let t = "cpu  10 1 5 1000 3 2 4 7 0 0\ncpu0 5 0 2 500 1 1 2 3 0 0\n";
        assert_eq!(parse_proc_stat(t), Some((10 + 1 + 5 + 2 + 4 + 7, 7)));
    }
}

/// DAMON monitors running on the host (`/sys/kernel/mm/damon/admin`, Linux 5.18+), as
/// `kdamond N: <operations>, schemes <actions>`. A `paddr` monitor with a `pageout` scheme (the
/// DAMON_RECLAIM set-up some microVM hosts run to hand cold memory back) samples and clears
/// accessed bits and pages out memory it finds cold, huge pages included: the probe's buffers,
/// idle between blocks, may come back as fresh faults or 4 KiB pages.
pub fn damon_monitors() -> Vec<String> {
    let root = std::path::Path::new("/sys/kernel/mm/damon/admin/kdamonds");
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let n: usize = read(root.join("nr_kdamonds")).and_then(|s| s.parse().ok()).unwrap_or(0);
    (0..n)
        .filter_map(|k| {
            let kd = root.join(k.to_string());
            if read(kd.join("state"))? != "on" {
                return None;
            }
            let ctx = kd.join("contexts/0");
            let ops = read(ctx.join("operations")).unwrap_or_else(|| "?".into());
            let schemes: usize =
                read(ctx.join("schemes/nr_schemes")).and_then(|s| s.parse().ok()).unwrap_or(0);
            let actions: Vec<String> =
                (0..schemes).filter_map(|i| read(ctx.join(format!("schemes/{i}/action")))).collect();
            Some(format!("kdamond {k}: {ops}, schemes [{}]", actions.join(", ")))
        })
        .collect()
}

/// `CONFIG_HZ` of the running kernel: from `/proc/config.gz` (`CONFIG_IKCONFIG_PROC`), else
/// `/boot/config-<release>`; `None` when neither is readable.
pub fn config_hz() -> Option<f64> {
    use std::io::Read;
    let text = std::fs::File::open("/proc/config.gz")
        .ok()
        .and_then(|f| {
            let mut s = String::new();
            flate2::read::GzDecoder::new(f).read_to_string(&mut s).ok().map(|_| s)
        })
        .or_else(|| {
            let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
            std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()
        })?;
    text.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=")).and_then(|v| v.trim().parse().ok())
}

/// The serde default of [`HostInfo::invlpgb_count_max`].
fn one() -> u32 {
    1
}
