//! `read(2)` and `write(2)` as dd uses them on the MPC8xx (fs/read_write.c and what it reaches
//! in 2.4.0 and 2.6.12-rc2), the writeback of the dirtied pages and the timer tick, each run as
//! the text layout's path on kernel/mmu_8xx.rs's machine (every fetch, load and store through
//! the TLBs and caches; the data layout gives the loads, stores and copies).
//!
//! - `read` of /dev/zero: `sys_read` -> `vfs_read` -> `read_zero` -> `clear_user` (a `dcbz` per
//!   line; `read_zero_pagealigned` only from 4 pages up, drivers/char/mem.c of both versions).
//! - `write` to a file on a RAM disk: `sys_write` -> `generic_file_write`: page-cache page,
//!   ext2 block allocation, the user copy, `commit_write`, dirty accounting.
//! - Writeback: 2.6 writes back in the writer's context (`balance_dirty_pages_ratelimited`
//!   calls `balance_dirty_pages` every `ratelimit_pages`, 2.6.12-rc2 mm/page-writeback.c), so
//!   it is dd's system time; 2.4's `balance_dirty` wakes the `bdflush` kernel thread (fs/buffer.c
//!   of 2.4.0), which writes `ndirty` buffers per round. Switching to a kernel thread borrows
//!   the mm (2.4.0 `schedule`: no `switch_mm`), switching back to dd calls `switch_mm` ->
//!   `set_context`, which in 2.4.0's head_8xx.S is a `tlbia`.
//! - Timer: a decrementer interrupt every 1/HZ s (HZ 100 on 2.4, 1000 on 2.6.12-rc2's ppc
//!   param.h), taken at the next operation boundary; its path is the layout's `timer_tick`.

use super::ctx::Ctx;
use super::mmu_8xx::{Clocks, Mode, Writeback};
use super::syscalls::Op;
use super::Kernel;
use crate::attribution::Bucket;
use crate::time::Ps;

/// The text paths the 8xx kernel runs, resolved once at boot.
#[derive(Debug, Clone, Copy)]
pub struct Paths8xx {
    pub sys_read: usize,
    pub sys_write: usize,
    pub writeback: usize,
    pub timer_tick: usize,
}

impl Kernel {
    /// One dd operation on the 8xx machine: user text, the read, or the write (with the
    /// writeback it triggers); timer interrupts due by now are taken first.
    pub(super) fn op_8xx(&mut self, ctx: &mut Ctx, op: Op) -> Ps {
        let m = self.m8xx.as_mut().expect("run::run refuses 8xx operations on a hardware-walk machine");
        let paths = m.paths;
        let mut user = Clocks::default();
        let mut sys = Clocks::default();
        while ctx.now >= m.next_tick {
            sys += m.run_path(paths.timer_tick, Mode::Kernel);
            m.counters.timer_ticks += 1;
            m.next_tick += m.tick;
        }
        match op {
            Op::UserText { path } => user += m.run_path(path as usize, Mode::User),
            Op::ReadZero => sys += m.run_path(paths.sys_read, Mode::Kernel),
            Op::WriteFile => {
                sys += m.run_path(paths.sys_write, Mode::Kernel);
                m.written += 1;
                let batch = m.knobs.writeback_batch as u64;
                if m.written - m.written_back >= batch {
                    // 2.4: bdflush runs in its own (borrowed) context; 2.6: dd itself.
                    for _ in 0..batch {
                        sys += m.run_path(paths.writeback, Mode::Kernel);
                        m.written_back += 1;
                        m.counters.pages_written_back += 1;
                    }
                    if m.knobs.writeback == Writeback::Bdflush {
                        m.set_context();
                    }
                }
            }
            _ => unreachable!("not an 8xx operation: {op:?}"),
        }
        let mhz = m.mhz;
        let ps = |c: u64| Ps::from_cycles(c as f64, mhz);
        let (u, k, h) = (ps(user.run), ps(sys.run), ps(user.handlers + sys.handlers));
        ctx.charge(Bucket::User, u);
        ctx.charge(Bucket::Syscall, k);
        ctx.charge(Bucket::Walk, h);
        u + k + h
    }
}
