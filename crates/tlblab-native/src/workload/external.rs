//! The seed workloads whose real benchmark a Linux host can run as its distribution ships it:
//! rt-tests' `hackbench` (pipes and sockets, process mode), `sockperf` throughput over loopback
//! (UDP and TCP), `fs_mark` creating zero-size files on tmpfs, and coreutils' `dd if=/dev/zero
//! bs=4k` writing a tmpfs file (one process per task, each its own file). Each runs as a child process;
//! its own summary line is the metric, and the `TLB`/`CAL` rows of `/proc/interrupts` are read
//! around it. A tool that is not installed is a skip with its reason, never a failure: the test
//! script installs them (Debian's `rt-tests`, `sockperf`, `fsmark`).
//!
//! The simulated twin of each is the model's workload text for the same arguments
//! ([`External::sim_text`]), so the two run the same loop.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{NativeResult, Switches};
use crate::host::Interference;
use crate::interrupts::IpiCounter;
use crate::sys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum External {
    HackbenchPipes,
    HackbenchSockets,
    SockperfUdp,
    SockperfTcp,
    Fsmark,
    Dd,
}

/// How hard a run works: the short form for `--quick`.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    pub quick: bool,
}

impl Effort {
    /// hackbench's loops per sender and receiver (its default is 100): enough that the real
    /// Time (~0.3 s quick on a 2-CPU guest) is the steady state more than the fork and start-up
    /// that the model's window leaves out.
    fn hackbench_loops(self) -> u64 {
        if self.quick {
            1000
        } else {
            5000
        }
    }

    fn sockperf_seconds(self) -> u64 {
        if self.quick {
            1
        } else {
            3
        }
    }

    /// dd's blocks per process: 256 MiB (64 MiB quick) of tmpfs, ~0.1 s at this host's rate.
    fn dd_count(self) -> u64 {
        if self.quick {
            16_384
        } else {
            65_536
        }
    }

    fn fsmark_files(self) -> u64 {
        if self.quick {
            5_000
        } else {
            50_000
        }
    }
}

/// fs_mark's subdirectories, as mmtests' `fsmark-50m-zerofile-inode` on the 1-socket machine.
const FSMARK_SUBDIRS: u32 = 64;

impl External {
    pub const ALL: [External; 6] = [
        External::HackbenchPipes,
        External::HackbenchSockets,
        External::SockperfUdp,
        External::SockperfTcp,
        External::Fsmark,
        External::Dd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            External::HackbenchPipes => "hackbench-pipes",
            External::HackbenchSockets => "hackbench-sockets",
            External::SockperfUdp => "sockperf-udp",
            External::SockperfTcp => "sockperf-tcp",
            External::Fsmark => "fsmark",
            External::Dd => "dd",
        }
    }

    pub fn parse(name: &str) -> Option<External> {
        External::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The seed experiment whose simulated warm-up and window the twin runs with (each chosen
    /// there by the convergence rule: hackbench's start-up transient lasts ~400 ms). None for dd:
    /// seed 003's window is sized for a 48 MHz MPC855T, and its 3 s would write gigabytes here.
    pub fn experiment(self) -> Option<&'static str> {
        Some(match self {
            External::HackbenchPipes => "seed-004-hackbench-pipes",
            External::HackbenchSockets => "seed-004-hackbench-sockets",
            External::SockperfUdp => "seed-004-sockperf-udp",
            External::SockperfTcp => "seed-004-sockperf-tcp",
            External::Fsmark => "seed-004-fsmark-1s",
            External::Dd => return None,
        })
    }

    /// The program and the Debian package that ships it.
    pub fn tool(self) -> (&'static str, &'static str) {
        match self {
            External::HackbenchPipes | External::HackbenchSockets => ("hackbench", "rt-tests"),
            External::SockperfUdp | External::SockperfTcp => ("sockperf", "sockperf"),
            External::Fsmark => ("fs_mark", "fsmark"),
            External::Dd => ("dd", "coreutils"),
        }
    }

    /// The cells a host runs: hackbench's groups, fs_mark's threads and dd's processes 1 and 2 (when the host
    /// has 2 CPUs), sockperf's message sizes (two of the seed's five: one client and one server).
    pub fn points(self, cpus: usize) -> Vec<u64> {
        match self {
            External::SockperfUdp | External::SockperfTcp => vec![14, 500],
            _ => (1..=cpus.clamp(1, 2) as u64).collect(),
        }
    }

    /// What a point is, in words (the validate table's column).
    pub fn point_name(self) -> &'static str {
        match self {
            External::HackbenchPipes | External::HackbenchSockets => "groups",
            External::SockperfUdp | External::SockperfTcp => "msg bytes",
            External::Fsmark => "threads",
            External::Dd => "processes",
        }
    }

    /// The model's workload text for the same run in `dir`, and its task count. fs_mark's twin
    /// creates on tmpfs (`--fs tmpfs`) when `dir` is on tmpfs, else on the model's ext4.
    pub fn sim_text(self, point: u64, effort: Effort, dir: &Path) -> (String, u32) {
        match self {
            External::HackbenchPipes => {
                (format!("hackbench -pipe process {}", effort.hackbench_loops()), point as u32)
            }
            External::HackbenchSockets => {
                (format!("hackbench process {}", effort.hackbench_loops()), point as u32)
            }
            External::SockperfUdp => (format!("sockperf throughput --mps max --msg-size {point}"), 2),
            External::SockperfTcp => (format!("sockperf throughput --tcp --mps max --msg-size {point}"), 2),
            External::Dd => (
                format!("dd if=/dev/zero of={}/tlblab-dd bs=4k count={}", dir.display(), effort.dd_count()),
                point as u32,
            ),
            External::Fsmark => {
                let tmpfs = sys::fs_magic(dir).ok() == Some(sys::TMPFS_MAGIC);
                let fs = if tmpfs { " --fs tmpfs" } else { "" };
                (
                    format!(
                        "fsmark -d {}/fsmark -D {FSMARK_SUBDIRS} -s 0 -S 0 -n {}{fs}",
                        dir.display(),
                        effort.fsmark_files()
                    ),
                    point as u32,
                )
            }
        }
    }

    /// Runs the real benchmark at `point` (files under `dir` for fs_mark). `Err` says why it
    /// could not run (the tool missing, or what it printed).
    pub fn run(self, point: u64, effort: Effort, dir: &Path) -> Result<NativeResult, String> {
        let (prog, package) = self.tool();
        let path = find_program(prog)
            .ok_or_else(|| format!("`{prog}` is not installed (Debian package `{package}`)"))?;
        let cpus = sys::allowed_cpus();
        let ipis = IpiCounter::start();
        let interference = Interference::start();
        // The benchmark's processes are our children, waited for before the end (the sockperf
        // server killed and reaped): their CPU time is what the workload got.
        let children0 = sys::usage(true);
        let t = Instant::now();
        // The interval the workload wanted the CPUs for, when it is not the whole wall time.
        let mut busy_interval: Option<f64> = None;
        let (value, operations, metric, unit) = match self {
            External::HackbenchPipes | External::HackbenchSockets => {
                let loops = effort.hackbench_loops();
                let mut args =
                    vec!["-g".to_string(), point.to_string(), "-l".into(), loops.to_string(), "-P".into()];
                if self == External::HackbenchPipes {
                    args.insert(0, "-p".into());
                }
                let out = run_capture(&path, &args, &std::env::temp_dir(), Duration::from_secs(300))?;
                let time = field_after(&out, "Time:")
                    .ok_or_else(|| format!("hackbench printed no `Time:`: {out}"))?;
                // Every sender writes `loops` messages to each of the 20 receivers of its group.
                (time, point * 20 * 20 * loops, "Time", "s")
            }
            External::SockperfUdp | External::SockperfTcp => {
                let port = 11_000 + (std::process::id() % 20_000) as u16;
                let tcp = self == External::SockperfTcp;
                let proto: Vec<String> = if tcp { vec!["--tcp".into()] } else { vec![] };
                let addr = ["-i".to_string(), "127.0.0.1".into(), "-p".into(), port.to_string()];
                let server_args: Vec<String> =
                    ["server".to_string()].into_iter().chain(proto.clone()).chain(addr.clone()).collect();
                let mut server = Command::new(&path)
                    .args(&server_args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("starting `sockperf server`: {e}"))?;
                std::thread::sleep(Duration::from_millis(300));
                let secs = effort.sockperf_seconds();
                let client_args: Vec<String> = ["throughput".to_string()]
                    .into_iter()
                    .chain(proto)
                    .chain(addr)
                    .chain([
                        "--mps=max".to_string(),
                        "-m".into(),
                        point.to_string(),
                        "-t".into(),
                        secs.to_string(),
                    ])
                    .collect();
                let out =
                    run_capture(&path, &client_args, &std::env::temp_dir(), Duration::from_secs(secs + 30));
                let _ = server.kill();
                let _ = server.wait();
                let out = out?;
                // "Summary: BandWidth is X MBps (Y Mbps)" and "Message Rate is N [msg/sec]".
                let mbps = out
                    .lines()
                    .find(|l| l.contains("BandWidth is"))
                    .and_then(|l| l.split('(').nth(1))
                    .and_then(|s| s.split_whitespace().next())
                    .and_then(|s| s.parse::<f64>().ok())
                    .ok_or_else(|| format!("sockperf printed no `BandWidth is`: {out}"))?;
                let rate = out
                    .lines()
                    .find(|l| l.contains("Message Rate is"))
                    .and_then(|l| field_after(l, "Message Rate is"))
                    .unwrap_or(0.0);
                // sockperf 3.7's client idles about 2 s around its `-t` interval (3.2 s of wall
                // time, 0.4 s of CPU for `-t 1` on a loaded 2-vCPU guest), the server waits for
                // it: the CPU time is spent in the interval.
                busy_interval = Some(secs as f64);
                (mbps, (rate * secs as f64) as u64, "bandwidth", "Mbps")
            }
            External::Dd => {
                let count = effort.dd_count();
                let files: Vec<PathBuf> =
                    (0..point).map(|k| dir.join(format!("tlblab-dd-{}-{k}", std::process::id()))).collect();
                let argss: Vec<Vec<String>> = files
                    .iter()
                    .map(|f| {
                        ["if=/dev/zero".to_string(), format!("of={}", f.display()), "bs=4k".into()]
                            .into_iter()
                            .chain([format!("count={count}")])
                            .collect()
                    })
                    .collect();
                let outs = run_all(&path, &argss, dir, Duration::from_secs(300));
                // Removing the files is our work, not dd's.
                busy_interval = Some(t.elapsed().as_secs_f64());
                for f in &files {
                    let _ = std::fs::remove_file(f);
                }
                // "N bytes (...) copied, S s, R GB/s": each process's time for its blocks.
                let times = outs?
                    .iter()
                    .map(|o| field_after(o, "copied,").ok_or_else(|| format!("dd printed no `copied,`: {o}")))
                    .collect::<Result<Vec<f64>, String>>()?;
                // The model's metric: `count` blocks at the processes' mean block rate, so the
                // harmonic mean of their times.
                let mean_rate = times.iter().map(|t| 1.0 / t).sum::<f64>() / times.len() as f64;
                (1.0 / mean_rate, point * count, "real", "seconds")
            }
            External::Fsmark => {
                let files = effort.fsmark_files();
                let base = dir.join(format!("tlblab-fsmark-{}", std::process::id()));
                std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
                let args: Vec<String> = [
                    "-d",
                    &base.display().to_string(),
                    "-D",
                    &FSMARK_SUBDIRS.to_string(),
                    "-s",
                    "0",
                    "-S",
                    "0",
                    "-n",
                    &(files / point).to_string(),
                    "-t",
                    &point.to_string(),
                    "-L",
                    "1",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                // In its own tree: fs_mark writes fs_log.txt into its working directory.
                let out = run_capture(&path, &args, &base, Duration::from_secs(300));
                // fs_mark leaves its files here (as run with these options): removing them is our
                // work, not the benchmark's, so the wall time its CPU time is set against ends here.
                busy_interval = Some(t.elapsed().as_secs_f64());
                let _ = std::fs::remove_dir_all(&base);
                let out = out?;
                let rate = fsmark_files_per_sec(&out)
                    .ok_or_else(|| format!("fs_mark printed no result row: {out}"))?;
                (rate, files, "Files/sec", "files/s")
            }
        };
        let seconds = busy_interval.unwrap_or_else(|| t.elapsed().as_secs_f64());
        let used = sys::usage(true).since(children0);
        let cpu_seconds = used.cpu_ns as f64 / 1e9;
        let ipis = ipis.stop();
        let per_op = |n: Option<u64>| n.filter(|_| operations > 0).map(|n| n as f64 / operations as f64);
        Ok(NativeResult {
            workload: self.name().into(),
            threads: point as usize,
            cpus,
            metric: metric.into(),
            unit: unit.into(),
            value,
            operations,
            per_thread: vec![],
            seconds,
            ipis,
            ipis_per_op: per_op(ipis.tlb),
            ipis_per_op_net: None,
            cal_per_op: per_op(ipis.cal),
            cal_per_op_net: None,
            background_tlb_per_s: None,
            background_cal_per_s: None,
            interference: interference.stop(sys::allowed_cpus().len()),
            cpu_seconds: Some(cpu_seconds),
            switches: Some(Switches::of(used)),
        })
    }
}

/// `prog` on `PATH`, or in the system directories a root PATH may lack.
pub fn find_program(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/bin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// Runs `path args` in `cwd`, returns stdout and stderr together; an error on a failed exit or
/// after `limit` (the child is killed).
fn run_capture(path: &Path, args: &[String], cwd: &Path, limit: Duration) -> Result<String, String> {
    Ok(run_all(path, &[args.to_vec()], cwd, limit)?.remove(0))
}

/// Runs `path` once per argument list in `argss`, all at once, in `cwd` (where the tool writes
/// its own files: fs_mark's `fs_log.txt`), with the C locale (so numbers print with a point);
/// returns each one's stdout and stderr together, in order; an error on a failed exit or after
/// `limit` (every child still running is killed).
fn run_all(path: &Path, argss: &[Vec<String>], cwd: &Path, limit: Duration) -> Result<Vec<String>, String> {
    let mut children = Vec::new();
    for args in argss {
        let child = Command::new(path)
            .args(args)
            .current_dir(cwd)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        match child {
            Ok(c) => children.push(c),
            Err(e) => {
                for mut c in children {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                return Err(format!("running {}: {e}", path.display()));
            }
        }
    }
    let t = Instant::now();
    loop {
        let mut running = false;
        for c in &mut children {
            running |= c.try_wait().map_err(|e| e.to_string())?.is_none();
        }
        if !running {
            break;
        }
        if t.elapsed() > limit {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            return Err(format!(
                "{} {} ran past {} s: killed",
                path.display(),
                argss[0].join(" "),
                limit.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    children
        .into_iter()
        .zip(argss)
        .map(|(c, args)| {
            let out = c.wait_with_output().map_err(|e| e.to_string())?;
            let text =
                format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            if !out.status.success() {
                return Err(format!(
                    "{} {} failed ({}): {}",
                    path.display(),
                    args.join(" "),
                    out.status,
                    text.trim()
                ));
            }
            Ok(text)
        })
        .collect()
}

/// The number after `key` on the first line holding it.
fn field_after(text: &str, key: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.trim_matches(|c: char| !c.is_ascii_digit() && c != '.').parse().ok()
}

/// fs_mark's result row: `FSUse% Count Size Files/sec App Overhead`, the fourth column of the
/// first line of numbers after that heading.
fn fsmark_files_per_sec(out: &str) -> Option<f64> {
    let mut lines = out.lines().skip_while(|l| !l.contains("Files/sec"));
    lines.next()?;
    lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() >= 4 && w.iter().all(|x| x.parse::<f64>().is_ok()))
        .and_then(|w| w[3].parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_summary_lines_parse() {
        // rt-tests 2.4 hackbench.
        let hb = "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)\n\
                  Each sender will pass 100 messages of 100 bytes\nTime: 0.052\n";
        assert_eq!(field_after(hb, "Time:"), Some(0.052));
        // sockperf 3.7 throughput client.
        let sp = "sockperf: Summary: Message Rate is 283116 [msg/sec]\n\
                  sockperf: Summary: BandWidth is 3.780 MBps (30.240 Mbps)\n";
        assert_eq!(field_after(sp, "Message Rate is"), Some(283116.0));
        let mbps = sp.lines().find(|l| l.contains("BandWidth is")).and_then(|l| l.split('(').nth(1));
        assert_eq!(mbps.and_then(|s| s.split_whitespace().next()), Some("30.240"));
        // fs_mark 3.3.
        let fm = "#  fs_mark  -d /dev/shm/x -D 64 -s 0 -S 0 -n 2500 -t 2\n\
                  FSUse%        Count         Size    Files/sec     App Overhead\n\
                  \u{20}    0         5000            0      58743.5            40519\n";
        assert_eq!(fsmark_files_per_sec(fm), Some(58743.5));
        assert_eq!(fsmark_files_per_sec("no table"), None);
        // coreutils 9.1 dd (C locale).
        let dd = "65536+0 records in\n65536+0 records out\n\
                  268435456 bytes (268 MB, 256 MiB) copied, 0.0804651 s, 3.3 GB/s\n";
        assert_eq!(field_after(dd, "copied,"), Some(0.0804651));
    }

    #[test]
    fn every_external_workload_has_a_simulated_twin_the_model_parses() {
        for e in External::ALL {
            assert_eq!(External::parse(e.name()), Some(e));
            for p in e.points(2) {
                let (text, tasks) = e.sim_text(p, Effort { quick: true }, Path::new("/dev/shm"));
                let w = tlblab_model::workload::Workload::parse(&text)
                    .unwrap_or_else(|err| panic!("{text}: {err}"));
                assert!(tasks >= 1, "{}", w.name());
            }
        }
    }

    /// fs_mark's twin runs tmpfs's create path where the real one runs on tmpfs, ext4's
    /// elsewhere (the model has no other file system).
    #[test]
    fn fsmark_twin_follows_the_directorys_file_system() {
        let shm = Path::new("/dev/shm");
        if sys::fs_magic(shm).ok() == Some(sys::TMPFS_MAGIC) {
            let (text, _) = External::Fsmark.sim_text(1, Effort { quick: true }, shm);
            assert!(text.ends_with("--fs tmpfs") && text.contains("-d /dev/shm/fsmark"), "{text}");
        }
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        if sys::fs_magic(here).ok() != Some(sys::TMPFS_MAGIC) {
            let (text, _) = External::Fsmark.sim_text(1, Effort { quick: true }, here);
            assert!(!text.contains("--fs"), "{text}");
        }
    }

    #[test]
    fn a_missing_tool_is_a_reason_not_a_failure() {
        assert!(find_program("tlblab-no-such-benchmark").is_none());
        assert!(find_program("sh").is_some());
    }
}
