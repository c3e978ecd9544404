//! `dd if=/dev/zero of=FILE bs=4k count=N` (seed 003: a file on a RAM disk, MPC855T): each
//! block is dd's own loop and libc's `read` stub (the text layout's `dd_read_user`), `read(2)`
//! of /dev/zero into its buffer, the loop and `write` stub (`dd_write_user`), then `write(2)` of
//! the buffer to the file (linux/arch/ppc/paths.rs runs both calls and the writeback they cause).
//! The metric is what `time dd` prints first, the real time of the `count` blocks, from the
//! blocks done in the measured interval (dd is CPU-bound: real = user + sys); user and sys
//! time are the run's `user_clocks` and `sys_clocks` counters.
//!
//! Only bs=4k is modelled: the layouts describe the 4 KB read (`clear_user`, below
//! `read_zero_pagealigned`'s 4-page cutoff) and a one-page buffered write.

use std::sync::Arc;

use super::{Benchmark, MetricKind, Setup};
use crate::engine::sim::Simulation;
use crate::linux::arch::ppc::paths::Op8xx;
use crate::linux::arch::ppc::system_map::TextLayout;
use crate::linux::syscalls::{Op, Program};
use crate::profile::WalkKind;
use crate::time::Ps;

/// The seed's block count: `count=3840` (15 MiB).
pub const SEED_COUNT: u64 = 3840;
const DEFAULT_OF: &str = "file";

/// A parsed dd command line.
#[derive(Debug, Clone)]
pub struct Dd {
    pub of: String,
    pub count: u64,
    /// Run on this kernel text layout instead of the kernel version's shipped one (`tlblab
    /// layout` compares a reordered layout this way; not part of the command line).
    pub text: Option<Arc<TextLayout>>,
}

const OPTIONS: &str =
    "if=/dev/zero (only) of=FILE (on the RAM disk; default file) bs=4k (only) count=N (default 3840)";

impl Benchmark for Dd {
    fn parse(text: &str) -> Option<Result<Dd, String>> {
        let mut words = text.split_whitespace();
        if words.next()? != "dd" {
            return None;
        }
        let mut dd = Dd { of: DEFAULT_OF.into(), count: SEED_COUNT, text: None };
        for w in words {
            let bad = || Err(format!("dd: `{w}` is not allowed; options: {OPTIONS}"));
            let Some((k, v)) = w.split_once('=') else { return Some(bad()) };
            match k {
                "if" if v == "/dev/zero" => {}
                "of" if !v.is_empty() => dd.of = v.into(),
                "bs" if v == "4k" || v == "4096" => {}
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

    /// The paths it runs are the MPC8xx kernel's (linux/arch/ppc/paths.rs).
    fn walk(&self) -> WalkKind {
        WalkKind::Software
    }

    fn setup(&self, sim: &mut Simulation, _run: &Setup<'_>) {
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

    /// Seconds for `count` blocks at the measured rate.
    fn score(&self, iterations: u64, measured: Ps) -> f64 {
        measured.as_secs_f64() * self.count as f64 / iterations.max(1) as f64
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
