//! fs_mark 3.3 (Ric Wheeler's file-creation benchmark) as mmtests' `fsmark-50m-zerofile-inode`
//! runs it (docs/references/seeds-001-003-004.md#benchmarks-2016): `fs_mark -d DIR -D SUBDIRS -s 0 -S0 -n
//! FILES -L ITER -t N`. Each of the N children (forked processes) loops over its files: `setup_file_name` (a
//! 40-byte name: 16 time-stamp characters then 24 random ones, and a `mkdir()` of the target directory
//! that returns `-EEXIST`), `open(O_CREAT | O_RDWR | O_TRUNC)`, `write(fd, buf, 0)` (its write
//! loop runs once even for a zero size), no fsync (`-S0`), `close()`. Each child reports files
//! per second over its loop; fs_mark adds the children's rates ("Files/sec"), higher is better.
//!
//! Directories, as fs_mark.c places them: threads beyond the `-d` count share directories
//! (child k works in `-d` directory k mod dirs); with `-D`, a child picks its subdirectory by the
//! time-hash policy (the start second modulo SUBDIRS, the next one every 180 s), so children
//! started together create in one subdirectory for the whole of any window the model runs, and
//! share its `i_rwsem` (linux/fs/namei.rs). The model's loop has no end and the window samples it:
//! `-n` and `-L` are accepted and do not change the rate.
//!
//! The file system: ext4 by default (seed 004's runs, linux/fs/ext4.rs); `--fs tmpfs` (tlblab's
//! option, not fs_mark's: fs_mark does not know what its `-d` directory is on) runs tmpfs's
//! create path instead (linux/mm/shmem.rs; docs/references/linux-mm.md#tmpfs-create), as
//! `tlblab validate` runs the real fs_mark in /dev/shm.
//!
//! Placement: fs_mark runs unbound; the model binds child k to CPU k mod CPUs, each in its own
//! address space (they are processes). `[fs]`'s `fsmark_user_cycles` is the children's own
//! work per file.

use super::{Benchmark, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::linux::fs::namei::FsKind;
use crate::linux::syscalls::{Op, Program};
use crate::profile::{MachineProfile, Section};
use crate::rng::Rng;
use crate::time::Ps;

/// fs_mark.h: `MAX_THREADS`, `DEFAULT_NAME_LEN`, `FILENAME_SIZE`, `MAX_FILES`.
pub const MAX_THREADS: u32 = 64;
pub const DEFAULT_NAME_LEN: u32 = 40;
pub const FILENAME_SIZE: u32 = 128;
pub const MAX_FILES: u64 = 1_000_000;

const OPTIONS: &str = "-d DIR (repeatable, at least one), -D SUBDIRS (>= 2), -s 0 (only zero-size \
                       files are modelled), -S 0 (only no-sync), -n FILES (1..=1000000), -L LOOPS, \
                       -p NAME_LEN (1..=128, default 40), -t THREADS (1..=64, a multiple of the -d count), \
                       --fs ext4|tmpfs (tlblab's: the -d directories' file system, default ext4)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fsmark {
    pub dirs: Vec<String>,
    pub subdirs: u32,
    pub files: u64,
    pub loops: u64,
    pub name_len: u32,
    /// `-t`, if given (else the run's task count).
    pub threads: Option<u32>,
    /// `--fs`: the file system the `-d` directories are on.
    pub fs: FsKind,
}

impl Benchmark for Fsmark {
    fn parse(text: &str) -> Option<Result<Fsmark, String>> {
        let mut words = text.split_whitespace();
        let first = words.next()?;
        if first != "fsmark" && first != "fs_mark" {
            return None;
        }
        Some(parse_args(&words.collect::<Vec<_>>()))
    }

    fn names() -> Vec<String> {
        vec!["fsmark -d /mnt/fsmark -D 64 -s 0 -S 0 -n 500000".into()]
    }

    fn options() -> &'static str {
        OPTIONS
    }

    fn name(&self) -> String {
        let mut s = String::from("fsmark");
        for d in &self.dirs {
            s.push_str(&format!(" -d {d}"));
        }
        if self.subdirs > 0 {
            s.push_str(&format!(" -D {}", self.subdirs));
        }
        s.push_str(&format!(" -s 0 -S 0 -n {}", self.files));
        if self.loops != 1 {
            s.push_str(&format!(" -L {}", self.loops));
        }
        if self.name_len != DEFAULT_NAME_LEN {
            s.push_str(&format!(" -p {}", self.name_len));
        }
        if let Some(t) = self.threads {
            s.push_str(&format!(" -t {t}"));
        }
        if self.fs == FsKind::Tmpfs {
            s.push_str(" --fs tmpfs");
        }
        s
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "Files/sec", unit: "files/s", higher_is_better: true }
    }

    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        self.threads
    }

    fn sections(&self) -> &'static [Section] {
        &[Section::Slab, Section::Fs]
    }

    fn check_run(&self, profile: &MachineProfile, threads: u32) -> Result<(), String> {
        let dirs = self.dirs.len() as u32;
        if threads > MAX_THREADS || threads % dirs != 0 {
            return Err(format!(
                "fsmark: {threads} threads with {dirs} -d directories: allowed a multiple of {dirs} \
                 in 1 ..= {MAX_THREADS} (fs_mark's rule)"
            ));
        }
        if threads > profile.topology.cpus() && profile.kernel.context_switch_ns.is_none() {
            return Err(format!(
                "fsmark: {threads} threads on {} CPUs: machine `{}` needs key `kernel.context_switch_ns`",
                profile.topology.cpus(),
                profile.name
            ));
        }
        Ok(())
    }

    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        let user = crate::linux::fs::namei::Costs::from_profile(run.profile)
            .expect("run::run checks [fs]")
            .fsmark_user;
        let cpus = run.profile.topology.cpus();
        if self.fs == FsKind::Tmpfs {
            sim.mount_tmpfs();
        }
        // The file system's root holds the -d directories; each -d directory holds the one
        // subdirectory its children share (see the module comment).
        let root = sim.add_dir();
        let places: Vec<(u32, u32)> = self
            .dirs
            .iter()
            .map(|_| {
                let top = sim.add_dir();
                if self.subdirs > 0 {
                    (top, sim.add_dir())
                } else {
                    (root, top)
                }
            })
            .collect();
        let mut jitter = Rng::stream(run.seed, "task start");
        for k in 0..run.tasks {
            let (parent, target) = places[(k as usize) % places.len()];
            let mm = sim.add_mm();
            let child = Child { user, parent, target, name_len: self.name_len };
            sim.add_task_at(Box::new(child), mm, k % cpus, Ps(jitter.below(Ps::US.0)));
        }
    }
}

/// One child's file loop: name, `mkdir` (EEXIST), create, empty write, close.
#[derive(Debug, Clone)]
struct Child {
    user: Ps,
    /// The target directory's parent (its `mkdir` locks it) and the target.
    parent: u32,
    target: u32,
    name_len: u32,
}

impl Program for Child {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.extend([
            Op::Compute(self.user),
            Op::FsMkdirExists { dir: self.parent },
            Op::FsCreate { dir: self.target, name_len: self.name_len },
            Op::FsWriteEmpty,
            Op::FsClose,
            Op::Iteration,
        ]);
    }
}

fn parse_args(words: &[&str]) -> Result<Fsmark, String> {
    let mut f = Fsmark {
        dirs: Vec::new(),
        subdirs: 0,
        files: 1000,
        loops: 1,
        name_len: DEFAULT_NAME_LEN,
        threads: None,
        fs: FsKind::Ext4,
    };
    let (mut size, mut sync) = (None, None);
    let mut i = 0;
    while i < words.len() {
        // Options take their value as the next word or glued on (`-S0`, as mmtests writes it).
        let w = words[i];
        let (flag, glued) =
            if w.len() > 2 && w.starts_with('-') && !w.starts_with("--") { w.split_at(2) } else { (w, "") };
        let value = if glued.is_empty() {
            i += 1;
            words
                .get(i)
                .copied()
                .ok_or_else(|| format!("fsmark: `{flag}` needs a value; options: {OPTIONS}"))?
        } else {
            glued
        };
        i += 1;
        let bad = || format!("fsmark: `{flag} {value}` is not allowed; options: {OPTIONS}");
        let num =
            |lo: u64, hi: u64| value.parse::<u64>().ok().filter(|n| (lo..=hi).contains(n)).ok_or_else(bad);
        match flag {
            "-d" => f.dirs.push(value.to_string()),
            "-D" => f.subdirs = num(2, 1 << 20)? as u32,
            "-s" => size = Some(num(0, 0)?),
            "-S" => sync = Some(num(0, 0)?),
            "-n" => f.files = num(1, MAX_FILES)?,
            "-L" => f.loops = num(1, 1 << 32)?,
            "-p" => f.name_len = num(1, FILENAME_SIZE as u64)? as u32,
            "-t" => f.threads = Some(num(1, MAX_THREADS as u64)? as u32),
            "--fs" => {
                f.fs = match value {
                    "ext4" => FsKind::Ext4,
                    "tmpfs" => FsKind::Tmpfs,
                    _ => return Err(bad()),
                }
            }
            _ => return Err(format!("fsmark: `{flag}` is not allowed; options: {OPTIONS}")),
        }
    }
    if f.dirs.is_empty() {
        return Err(format!("fsmark: at least one `-d DIR` is required; options: {OPTIONS}"));
    }
    if size.is_none() || sync.is_none() {
        return Err(format!(
            "fsmark: `-s 0` and `-S 0` are required (fs_mark's defaults, 50 KiB files \
                            and fsync per file, are not modelled); options: {OPTIONS}"
        ));
    }
    if let Some(t) = f.threads {
        if t % f.dirs.len() as u32 != 0 {
            return Err(format!(
                "fsmark: `-t {t}` must be a multiple of the {} -d directories",
                f.dirs.len()
            ));
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use crate::workload::Workload;

    #[test]
    fn mmtests_command_line_parses_and_round_trips() {
        let w = Workload::parse("fs_mark -d /tmp/fsmark-1/1 -D 64 -S0 -n 125000 -s 0 -L 100 -t 4").unwrap();
        assert_eq!(w.metric().name, "Files/sec");
        let again = Workload::parse(&w.name()).unwrap();
        assert_eq!(again.name(), w.name());
        assert_eq!(w.default_tasks(4), Some(4));
        // ext4 is the default and not written out; tmpfs round-trips.
        assert!(!w.name().contains("--fs"));
        let t = Workload::parse("fsmark -d /dev/shm/f -D 64 -s 0 -S 0 -n 5000 --fs tmpfs").unwrap();
        assert!(t.name().ends_with("--fs tmpfs"), "{}", t.name());
        assert_eq!(Workload::parse(&t.name()).unwrap().name(), t.name());
    }

    #[test]
    fn bad_options_name_the_flag_and_the_allowed_values() {
        for (text, needle) in [
            ("fsmark -d a -s 4096 -S 0", "-s 4096"),
            ("fsmark -d a -s 0 -S 1", "-S 1"),
            ("fsmark -s 0 -S 0", "-d DIR"),
            ("fsmark -d a -s 0 -S 0 -t 65", "-t 65"),
            ("fsmark -d a -d b -s 0 -S 0 -t 3", "multiple"),
            ("fsmark -d a -s 0 -S 0 -x 1", "-x"),
            ("fsmark -d a -D 1 -s 0 -S 0", "-D 1"),
            ("fsmark -d a -s 0", "-S 0"),
            ("fsmark -d a -s 0 -S 0 --fs xfs", "--fs xfs"),
            ("fsmark -d a -s 0 -S 0 --fs", "--fs"),
        ] {
            let e = Workload::parse(text).unwrap_err();
            assert!(e.contains(needle) && e.contains("fsmark"), "{text}: {e}");
        }
    }
}
