//! will-it-scale testcases (antonblanchard/will-it-scale, tests/*.c;
//! docs/references/linux-mm.md#will-it-scale), each task's loop as the real testcase writes it. `_threads`
//! variants share one mm, `_processes` variants get one each; the score is the sum over tasks of iterations
//! per second.

use super::{Benchmark, MappedPages, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::hw::tlb::AccessKind;
use crate::linux::syscalls::Program;
use crate::linux::syscalls::{Addr, MapKind, Op};
use crate::rng::Rng;
use crate::time::Ps;

const PAGE: u64 = 4096;
/// tlb_flush1/3: `#define FILESIZE (128 * 1024 * 1024)`.
const FILESIZE: u64 = 128 << 20;
/// tlb_flush2: `#define MEMSIZE (1 * 1024 * 1024)`.
const TLB_FLUSH2_MEMSIZE: u64 = 1 << 20;
/// page_fault1 / mmap1: `#define MEMSIZE (128 * 1024 * 1024)`.
const MEMSIZE: u64 = 128 << 20;

/// Register use: 0 = the mapping, 1 = the file, 2 = the text, 3 = the stack.
const MAP: usize = 0;
const FILE: usize = 1;
const TEXT: usize = 2;
const STACK: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Testcase {
    /// "TLB flush of separate file private mapping".
    TlbFlush1,
    /// "TLB flush of anonymous memory private mapping".
    TlbFlush2,
    /// "TLB flush of separate file shared mapping".
    TlbFlush3,
    /// Anonymous page faults: touch 128 MiB, munmap.
    PageFault1,
    /// mmap + munmap of 128 MiB, untouched.
    Mmap1,
}

impl Testcase {
    pub const ALL: [Testcase; 5] = [
        Testcase::TlbFlush1,
        Testcase::TlbFlush2,
        Testcase::TlbFlush3,
        Testcase::PageFault1,
        Testcase::Mmap1,
    ];

    /// The testcase's file name in will-it-scale's `tests/` (also the native workload's name).
    pub const fn name(self) -> &'static str {
        match self {
            Testcase::TlbFlush1 => "tlb_flush1",
            Testcase::TlbFlush2 => "tlb_flush2",
            Testcase::TlbFlush3 => "tlb_flush3",
            Testcase::PageFault1 => "page_fault1",
            Testcase::Mmap1 => "mmap1",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Threads,
    Processes,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Threads, Mode::Processes];

    /// The suffix of the harness's binaries (`tlb_flush1_threads`).
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Threads => "threads",
            Mode::Processes => "processes",
        }
    }
}

/// One will-it-scale benchmark: a testcase in a mode (`tlb_flush1_threads`). The score is
/// operations per second summed over tasks; `-t` (the task count) is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WillItScale {
    pub test: Testcase,
    pub mode: Mode,
}

impl Benchmark for WillItScale {
    fn parse(text: &str) -> Option<Result<WillItScale, String>> {
        let mut words = text.split_whitespace();
        let first = words.next()?;
        let w = Testcase::ALL
            .iter()
            .flat_map(|&test| Mode::ALL.map(|mode| WillItScale { test, mode }))
            .find(|w| w.name() == first)?;
        Some(match words.next() {
            Some(extra) => Err(format!("workload `{first}` takes no parameters (got `{extra}`)")),
            None => Ok(w),
        })
    }

    fn names() -> Vec<String> {
        Testcase::ALL
            .iter()
            .flat_map(|&test| Mode::ALL.map(|mode| WillItScale { test, mode }.name()))
            .collect()
    }

    fn name(&self) -> String {
        format!("{}_{}", self.test.name(), self.mode.name())
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "ops", unit: "ops/s", higher_is_better: true }
    }

    /// Each task maps its region, two text pages and a stack page; tlb_flush1/3 tasks create
    /// their own file.
    fn mapped_pages(&self, tasks: u32) -> MappedPages {
        let (len, _) = WisTask::new(self.test).region();
        let file =
            if matches!(self.test, Testcase::TlbFlush1 | Testcase::TlbFlush3) { FILESIZE / PAGE } else { 0 };
        MappedPages { mapped: tasks as u64 * (len / PAGE + 3), file: tasks as u64 * file }
    }

    /// The frames a task holds at once, which must fit the model's memory as the kernel sizes it
    /// (reclaim is not run in will-it-scale): tlb_flush1/3 keep their 128 MiB file in the page
    /// cache; page_fault1 faults its whole region in before the munmap; the tlb_flush loops free
    /// each page they write at once. Plus the two text pages and the stack page.
    fn footprint_pages(&self, tasks: u32) -> Option<u64> {
        let own = match self.test {
            Testcase::TlbFlush1 | Testcase::TlbFlush3 => FILESIZE / PAGE + 1,
            Testcase::TlbFlush2 => 1,
            Testcase::PageFault1 => MEMSIZE / PAGE,
            Testcase::Mmap1 => 0,
        };
        Some(tasks as u64 * (own + 3))
    }

    /// Task i is bound to CPU i, as the harness binds it: with the model's CPU numbering that is
    /// one task per core first, then per hardware thread; beyond the CPU count the affinity wraps
    /// around the CPU list and tasks are time-sliced. `_threads` tasks share one mm,
    /// `_processes` tasks get one each.
    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        let cpus = run.profile.topology.cpus();
        // Tasks start within a microsecond of each other, as threads released by the harness
        // do; this is the only thing the seed changes.
        let mut jitter = Rng::stream(run.seed, "task start");
        let shared = sim.add_mm();
        for i in 0..run.tasks {
            let mm = match self.mode {
                Mode::Threads => shared,
                Mode::Processes if i == 0 => shared,
                Mode::Processes => sim.add_mm(),
            };
            let start = Ps(jitter.below(Ps::US.0));
            sim.add_task_at(Box::new(WisTask::new(self.test)), mm, i % cpus, start);
        }
    }
}

/// One task's loop.
#[derive(Debug, Clone)]
pub struct WisTask {
    test: Testcase,
    started: bool,
    /// The next page of the current mapping.
    page: u64,
}

impl WisTask {
    pub fn new(test: Testcase) -> WisTask {
        WisTask { test, started: false, page: 0 }
    }

    fn region(&self) -> (u64, MapKind) {
        match self.test {
            Testcase::TlbFlush1 => (FILESIZE, MapKind::FilePrivate { file_reg: FILE }),
            Testcase::TlbFlush2 => (TLB_FLUSH2_MEMSIZE, MapKind::Anon),
            Testcase::TlbFlush3 => (FILESIZE, MapKind::FileShared { file_reg: FILE }),
            Testcase::PageFault1 | Testcase::Mmap1 => (MEMSIZE, MapKind::Anon),
        }
    }
}

impl Program for WisTask {
    fn next(&mut self, out: &mut Vec<Op>) {
        let (len, kind) = self.region();
        if !self.started {
            self.started = true;
            if matches!(self.test, Testcase::TlbFlush1 | Testcase::TlbFlush3) {
                // Each task creates its own temp file, ftruncates it to FILESIZE, unlinks it. The
                // harness measures after a 5 s warm-up, by when the loop has read every page of
                // the file into the page cache: start from that steady state. The file is on tmpfs,
                // as `validate` runs the real one (the model has no disk).
                out.push(Op::CreateFile { pages: FILESIZE / PAGE, reg: FILE, cached: true, tmpfs: true });
            }
            // The user side's own translations, which a full flush of the user PCID (or a CR3
            // reload after lazy mode) takes away as well: the testcase's loop and glibc's
            // system-call stub on two text pages, and the stack page the call to the stub writes
            // its return address to. Mapped and touched before the measured loop.
            out.push(Op::Mmap { len: 2 * PAGE, kind: MapKind::Anon, reg: TEXT });
            out.push(Op::Mmap { len: PAGE, kind: MapKind::Anon, reg: STACK });
            out.push(Op::Access { addr: Addr { reg: TEXT, offset: 0 }, kind: AccessKind::Store });
            out.push(Op::Access { addr: Addr { reg: TEXT, offset: PAGE }, kind: AccessKind::Store });
            out.push(Op::Mmap { len, kind, reg: MAP });
        }
        let at = Addr { reg: MAP, offset: self.page * PAGE };
        let loop_text = Op::Access { addr: Addr { reg: TEXT, offset: 0 }, kind: AccessKind::Fetch };
        // A system call: `call` into glibc's stub (a fetch there, the return address pushed).
        let syscall_stub = [
            Op::Access { addr: Addr { reg: TEXT, offset: PAGE }, kind: AccessKind::Fetch },
            Op::Access { addr: Addr { reg: STACK, offset: 0 }, kind: AccessKind::Store },
        ];
        out.push(loop_text);
        match self.test {
            Testcase::TlbFlush1 | Testcase::TlbFlush2 | Testcase::TlbFlush3 => {
                // c[i] = 1; madvise(&c[i], pgsize, MADV_DONTNEED); assert(c[i] ...); iterations++
                out.push(Op::Access { addr: at, kind: AccessKind::Store });
                out.extend(syscall_stub);
                out.push(Op::MadviseDontneed { addr: at, len: PAGE });
                out.push(Op::Access { addr: at, kind: AccessKind::Load });
                out.push(Op::Iteration);
            }
            Testcase::PageFault1 => {
                out.push(Op::Access { addr: at, kind: AccessKind::Store });
                out.push(Op::Iteration);
            }
            Testcase::Mmap1 => {
                out.extend(syscall_stub);
                out.push(Op::Munmap { addr: Addr { reg: MAP, offset: 0 }, len });
                out.push(Op::Iteration);
                out.extend(syscall_stub);
                out.push(Op::Mmap { len, kind, reg: MAP });
                return;
            }
        }
        self.page += 1;
        if self.page == len / PAGE {
            self.page = 0;
            out.extend(syscall_stub);
            out.push(Op::Munmap { addr: Addr { reg: MAP, offset: 0 }, len });
            out.extend(syscall_stub);
            out.push(Op::Mmap { len, kind, reg: MAP });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlb_flush2_loop_follows_the_testcase() {
        let mut t = WisTask::new(Testcase::TlbFlush2);
        let mut ops = Vec::new();
        t.next(&mut ops);
        // Text and stack first, then the testcase's mapping.
        assert_eq!(ops[0], Op::Mmap { len: 8192, kind: MapKind::Anon, reg: TEXT });
        assert_eq!(ops[1], Op::Mmap { len: 4096, kind: MapKind::Anon, reg: STACK });
        assert_eq!(ops[4], Op::Mmap { len: 1 << 20, kind: MapKind::Anon, reg: MAP });
        let body = &ops[5..];
        let fetch = |reg, offset| Op::Access { addr: Addr { reg, offset }, kind: AccessKind::Fetch };
        assert_eq!(body[0], fetch(TEXT, 0));
        assert!(matches!(body[1], Op::Access { kind: AccessKind::Store, addr: Addr { reg: MAP, .. } }));
        assert_eq!(body[2], fetch(TEXT, 4096));
        assert!(matches!(body[3], Op::Access { kind: AccessKind::Store, addr: Addr { reg: STACK, .. } }));
        assert!(matches!(body[4], Op::MadviseDontneed { len: 4096, .. }));
        assert!(matches!(body[5], Op::Access { kind: AccessKind::Load, .. }));
        assert_eq!(body[6], Op::Iteration);
        // 256 pages per mapping, then munmap and mmap again, each through the stub.
        for _ in 1..256 {
            ops.clear();
            t.next(&mut ops);
        }
        assert!(matches!(ops[ops.len() - 4], Op::Munmap { .. }));
        assert!(matches!(ops[ops.len() - 1], Op::Mmap { .. }));
    }

    #[test]
    fn file_tests_create_their_file_first() {
        let mut ops = Vec::new();
        WisTask::new(Testcase::TlbFlush1).next(&mut ops);
        assert_eq!(ops[0], Op::CreateFile { pages: 32768, reg: FILE, cached: true, tmpfs: true });
        assert_eq!(
            ops[5],
            Op::Mmap { len: 128 << 20, kind: MapKind::FilePrivate { file_reg: FILE }, reg: MAP }
        );
    }
}
