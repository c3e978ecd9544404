//! `dd if=/dev/zero of=FILE bs=4k count=N`, on either kernel the model has a path for:
//!
//! - MPC8xx (seed 003: a file on a RAM disk, MPC855T): each block is dd's own loop and libc's
//!   `read` stub (the text layout's `dd_read_user`), `read(2)` of /dev/zero into its buffer, the
//!   loop and `write` stub (`dd_write_user`), then `write(2)` of the buffer to the file
//!   (linux/arch/ppc/paths.rs runs both calls and the writeback they cause). One process.
//! - x86 (FILE on tmpfs, as /dev/shm: the model has no disk): `-t T` dd processes, each its own
//!   address space, 4 KiB buffer (populated, anonymous) and file. Each block is a store and a
//!   load through the buffer's translation (the kernel's `clear_user` and copy reach it through
//!   the TLB; the model charges those translations as user accesses), `read(2)` of /dev/zero
//!   (linux/drivers/char/mem.rs) and `write(2)` of the page at the file's end
//!   (linux/mm/shmem.rs: a new page each block, not zeroed). The file holds `count` pages;
//!   a process that has written them starts over at offset 0 of the same file, as a
//!   `conv=notrunc` run would (the default measured interval is well short of that for the
//!   seed's count). `conv=notrunc` starts there: every page already cached, each block an
//!   overwrite (no allocation). dd's own user code between the calls is not modelled.
//!
//! The metric is what `time dd` prints first, the real time of the `count` blocks (dd is
//! CPU-bound: real = user + sys), from the blocks done in the measured interval: with T
//! processes, `count` over the processes' mean block rate, i.e. measured time x count x T /
//! the blocks of all T processes (the harmonic mean of the processes' real times). On the
//! MPC8xx, user and sys time are the run's `user_clocks` and `sys_clocks` counters.
//!
//! Only bs=4k is modelled: the MPC8xx layouts describe the 4 KB read (`clear_user`, below
//! `read_zero_pagealigned`'s 4-page cutoff) and a one-page buffered write; x86's paths are
//! one page a call.

use std::sync::Arc;

use super::{Benchmark, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::hw::tlb::AccessKind;
use crate::linux::arch::ppc::paths::Op8xx;
use crate::linux::arch::ppc::system_map::TextLayout;
use crate::linux::syscalls::{Addr, Op, Program};
use crate::profile::{MachineProfile, WalkKind};
use crate::time::Ps;

/// The seed's block count: `count=3840` (15 MiB).
pub const SEED_COUNT: u64 = 3840;
const DEFAULT_OF: &str = "file";

/// A parsed dd command line.
#[derive(Debug, Clone)]
pub struct Dd {
    pub of: String,
    pub count: u64,
    /// `conv=notrunc` (x86 only): the file exists whole, each block overwrites a cached page.
    pub notrunc: bool,
    /// Run on this kernel text layout instead of the kernel version's shipped one (`tlblab
    /// layout` compares a reordered layout this way; not part of the command line).
    pub text: Option<Arc<TextLayout>>,
}

const OPTIONS: &str = "if=/dev/zero (only) of=FILE (on the RAM disk, x86: tmpfs; default file) bs=4k (only) \
     count=N (default 3840) conv=notrunc (x86 only: overwrite a file that holds count pages)";

impl Benchmark for Dd {
    fn parse(text: &str) -> Option<Result<Dd, String>> {
        let mut words = text.split_whitespace();
        if words.next()? != "dd" {
            return None;
        }
        let mut dd = Dd { of: DEFAULT_OF.into(), count: SEED_COUNT, notrunc: false, text: None };
        for w in words {
            let bad = || Err(format!("dd: `{w}` is not allowed; options: {OPTIONS}"));
            let Some((k, v)) = w.split_once('=') else { return Some(bad()) };
            match k {
                "if" if v == "/dev/zero" => {}
                "of" if !v.is_empty() => dd.of = v.into(),
                "bs" if v == "4k" || v == "4096" => {}
                "conv" if v == "notrunc" => dd.notrunc = true,
                "count" => match v.parse::<u64>() {
                    Ok(n) if n > 0 => dd.count = n,
                    _ => return Some(bad()),
                },
                _ => return Some(bad()),
            }
        }
        Some(Ok(dd))
    }

    fn names() -> Vec<String> {
        vec!["dd".into()]
    }

    fn options() -> &'static str {
        OPTIONS
    }

    fn name(&self) -> String {
        let mut s = String::from("dd");
        if self.of != DEFAULT_OF {
            s += &format!(" of={}", self.of);
        }
        if self.count != SEED_COUNT {
            s += &format!(" count={}", self.count);
        }
        if self.notrunc {
            s += " conv=notrunc";
        }
        if let Some(t) = &self.text {
            s += &format!(" (text layout {})", t.name);
        }
        s
    }

    fn metric(&self) -> MetricKind {
        MetricKind { name: "real", unit: "seconds", higher_is_better: false }
    }

    fn default_tasks(&self, _cpus: u32) -> Option<u32> {
        Some(1)
    }

    /// The MPC8xx kernel's paths (linux/arch/ppc/paths.rs).
    fn walk(&self) -> WalkKind {
        WalkKind::Software
    }

    /// ... and x86's (linux/drivers/char/mem.rs, linux/mm/shmem.rs).
    fn runs_on(&self, _kind: WalkKind) -> bool {
        true
    }

    fn check_run(&self, profile: &MachineProfile, tasks: u32) -> Result<(), String> {
        if profile.walk.kind == WalkKind::Software {
            if self.notrunc {
                return Err("dd: `conv=notrunc` runs on x86 machines only (the MPC8xx layouts write a new \
                            block each call)"
                    .into());
            }
            if tasks != 1 {
                return Err(format!("dd: {tasks} processes on the MPC8xx: allowed -t 1 (seed 003 runs one)"));
            }
            return Ok(());
        }
        profile.tmpfs_write_cycles().map(|_| ()).map_err(|e| format!("dd: {e}"))
    }

    /// Each process's file (`count` pages at most) and buffer page.
    fn footprint_pages(&self, tasks: u32) -> Option<u64> {
        Some(tasks as u64 * (self.count + 1))
    }

    fn mapped_pages(&self, tasks: u32) -> super::MappedPages {
        super::MappedPages { mapped: tasks as u64, file: tasks as u64 * self.count }
    }

    fn setup(&self, sim: &mut Simulation, run: &Setup<'_>) {
        if run.profile.walk.kind == WalkKind::Hardware {
            for k in 0..run.tasks {
                let mm = sim.add_mm();
                let buf = sim.map_populated(mm, PAGE);
                let file = sim.add_tmpfs_file(self.count, self.notrunc);
                let program = TmpfsLoop { buf, file, count: self.count, next: 0 };
                let cpu = k % sim.cpus();
                sim.add_task(Box::new(program), mm, cpu);
            }
            return;
        }
        let m = sim.kernel.ppc8xx_mut().expect("run::run checked the machine and kernel");
        if let Some(t) = &self.text {
            m.set_text(Arc::clone(t)).unwrap_or_else(|e| panic!("{e}"));
        }
        let path = |n: &str| {
            m.path_index(n).unwrap_or_else(|| panic!("text layout {} has no path {n}", m.text.name)) as u8
        };
        let program = DdLoop { read_user: path("dd_read_user"), write_user: path("dd_write_user") };
        let mm = sim.add_mm();
        sim.add_task(Box::new(program), mm, 0);
    }

    /// Seconds for `count` blocks at the processes' mean rate (see the module comment).
    fn score_for(&self, iterations: u64, measured: Ps, tasks: u32) -> f64 {
        measured.as_secs_f64() * self.count as f64 * tasks as f64 / iterations.max(1) as f64
    }
}

/// The block size, one page.
const PAGE: u64 = 4096;
/// A register never written: `Addr { reg: ABS, offset: va }` is the absolute address `va`.
const ABS: usize = 0;

/// An x86 dd process's copy loop, one block per iteration: the page at `next` of its file.
struct TmpfsLoop {
    buf: u64,
    file: u32,
    count: u64,
    next: u64,
}

impl Program for TmpfsLoop {
    fn next(&mut self, out: &mut Vec<Op>) {
        let buf = Addr { reg: ABS, offset: self.buf };
        out.extend([
            Op::Access { addr: buf, kind: AccessKind::Store },
            Op::ReadZero,
            Op::Access { addr: buf, kind: AccessKind::Load },
            Op::TmpfsWrite { file: self.file, index: self.next },
            Op::Iteration,
        ]);
        self.next = (self.next + 1) % self.count;
    }
}

/// dd's copy loop, one block per iteration.
struct DdLoop {
    read_user: u8,
    write_user: u8,
}

impl Program for DdLoop {
    fn next(&mut self, out: &mut Vec<Op>) {
        out.extend([
            Op::Ppc8xx(Op8xx::UserText { path: self.read_user }),
            Op::Ppc8xx(Op8xx::ReadZero),
            Op::Ppc8xx(Op8xx::UserText { path: self.write_user }),
            Op::Ppc8xx(Op8xx::WriteFile),
            Op::Iteration,
        ]);
    }
}

#[cfg(test)]
mod tests;
