//! One task pinned to one CPU that loops over a region it maps (madv-pageout, move-pages): the
//! parameters both take (`size_kib=`, `loops=`, `cpu=`), parsed, named and checked in one place.

use crate::profile::MachineProfile;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionLoop {
    /// KiB the task maps and works over each loop.
    pub size_kib: u64,
    /// Loops the elapsed time is for.
    pub loops: u64,
    /// The CPU the task is pinned to.
    pub cpu: u32,
}

impl Default for RegionLoop {
    fn default() -> Self {
        RegionLoop { size_kib: 1024, loops: 10_000, cpu: 0 }
    }
}

impl RegionLoop {
    /// `text` as workload `name`'s parameters, or `None` if it names another workload. `params`
    /// holds the help of `size_kib`, `loops` and `cpu`, in that order; `max_kib` is the largest
    /// region.
    pub fn parse(
        name: &str,
        params: &[(&str, &str)],
        max_kib: u64,
        text: &str,
    ) -> Option<Result<RegionLoop, String>> {
        let mut words = text.split_whitespace();
        if words.next()? != name {
            return None;
        }
        let mut w = RegionLoop::default();
        for kv in words {
            let bad =
                |i: usize| Some(Err(format!("{name}: `{kv}`: allowed {} = {}", params[i].0, params[i].1)));
            match kv.split_once('=') {
                Some(("size_kib", v)) => match v.parse::<u64>() {
                    Ok(n) if (4..=max_kib).contains(&n) && n % 4 == 0 => w.size_kib = n,
                    _ => return bad(0),
                },
                Some(("loops", v)) => match v.parse::<u64>() {
                    Ok(n) if (1..=1_000_000).contains(&n) => w.loops = n,
                    _ => return bad(1),
                },
                Some(("cpu", v)) => match v.parse::<u32>() {
                    Ok(n) if n < 4096 => w.cpu = n,
                    _ => return bad(2),
                },
                _ => {
                    let keys: Vec<_> = params.iter().map(|p| p.0).collect();
                    return Some(Err(format!(
                        "{name}: unknown parameter `{kv}`; parameters: {}",
                        keys.join(", ")
                    )));
                }
            }
        }
        Some(Ok(w))
    }

    /// `name` with every parameter that differs from its default.
    pub fn name(&self, name: &str) -> String {
        let d = RegionLoop::default();
        let mut n = name.to_string();
        if self.size_kib != d.size_kib {
            n += &format!(" size_kib={}", self.size_kib);
        }
        if self.loops != d.loops {
            n += &format!(" loops={}", self.loops);
        }
        if self.cpu != d.cpu {
            n += &format!(" cpu={}", self.cpu);
        }
        n
    }

    /// The pinned CPU must be one of `profile`'s.
    pub fn check_cpu(&self, name: &str, profile: &MachineProfile) -> Result<(), String> {
        let cpus = profile.topology.cpus();
        if self.cpu >= cpus {
            return Err(format!(
                "{name}: `cpu={}` is not a CPU of {}; allowed 0..={}",
                self.cpu,
                profile.name,
                cpus - 1
            ));
        }
        Ok(())
    }

    /// Elapsed seconds of `loops` loops at the measured rate (`iterations` loops in `measured`).
    pub fn elapsed(&self, iterations: u64, measured: crate::time::Ps) -> f64 {
        measured.as_secs_f64() * self.loops as f64 / iterations.max(1) as f64
    }
}
