//! `read(2)` and `write(2)` as dd uses them on the MPC8xx (fs/read_write.c and what it reaches
//! in 2.4.0 and 2.6.12-rc2), the writeback of the dirtied pages and the timer tick, each run as
//! the text layout's path on linux/arch/ppc/mm/mmu_8xx.rs's machine (every fetch, load and store through
//! the TLBs and caches; the data layout gives the loads, stores and copies).
//!
//! - `read` of /dev/zero: `sys_read` -> `vfs_read` -> `read_zero` -> `clear_user` (a word-store
//!   loop in arch/ppc/lib/string.S of both versions, no `dcbz`; `read_zero_pagealigned` only
//!   from 4 pages up, drivers/char/mem.c of both versions).
//! - `write` to a file on a RAM disk: `sys_write` -> `generic_file_write`: page-cache page,
//!   ext2 block allocation, the user copy, `commit_write`, dirty accounting.
//! - Writeback (the knob `writeback`): 2.4.0's `balance_dirty` wakes the `bdflush` kernel thread
//!   over the soft limit (fs/buffer.c of 2.4.0), which writes `ndirty` buffers per round; 2.6.12-rc2's
//!   `balance_dirty_pages` (called every `ratelimit_pages` dirtied pages, mm/page-writeback.c)
//!   wakes `pdflush` for `background_writeout` over `dirty_background_ratio`, and makes the writer
//!   write `write_chunk` pages itself only over `vm_dirty_ratio` (`in-context`). A thread's
//!   writeback is real time but not dd's sys time. Switching to a kernel thread borrows the mm
//!   (no `switch_mm`); switching back to dd calls `switch_mm` -> `set_context`, a `tlbia` in
//!   2.4.0's head_8xx.S, an `M_CASID` load in 2.6.12-rc2's. The switch's own text (`schedule`,
//!   `switch_to`) is not in the layouts.
//! - Timer: a decrementer interrupt every 1/HZ s (HZ 100 on 2.4, 1000 in 2.6.12-rc2's
//!   include/asm-ppc/param.h), taken at the next operation boundary, in the mode of the operation
//!   it fell in: the layout's `timer_tick`, or `timer_tick_user` when it interrupted dd's user
//!   code (2.6 `update_process_times(user_mode(regs))` -> `account_user_time`).

use crate::attribution::Bucket;
use crate::linux::arch::ppc::mm::mmu_8xx::{Clocks, Mode, Writeback};
use crate::linux::ctx::Ctx;
use crate::linux::Kernel;
use crate::time::Ps;

/// The text paths the 8xx kernel runs, resolved once at boot.
#[derive(Debug, Clone, Copy)]
pub struct Paths8xx {
    pub sys_read: usize,
    pub sys_write: usize,
    pub writeback: usize,
    pub timer_tick: usize,
    pub timer_tick_user: Option<usize>,
    /// What runs once per writeback round before its pages (2.6: the `writeback_inodes` descent).
    pub writeback_round: Option<usize>,
}

/// What dd asks of the MPC8xx kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op8xx {
    /// User code: path `path` of the kernel's text layout (dd's loop and its libc stubs).
    UserText { path: u8 },
    /// `read(0, buf, 4096)` of /dev/zero into dd's buffer.
    ReadZero,
    /// `write(1, buf, 4096)` to a file on a RAM disk.
    WriteFile,
}

impl Kernel {
    /// One dd operation on the 8xx machine: user text, the read, or the write (with the
    /// writeback it triggers); timer interrupts due by now are taken first.
    pub(in crate::linux) fn op_8xx(&mut self, ctx: &mut Ctx, op: Op8xx) -> Ps {
        let m =
            self.arch.ppc8xx.as_mut().expect("run::run refuses 8xx operations on a hardware-walk machine");
        let paths = m.paths;
        let mut user = Clocks::default();
        let mut sys = Clocks::default();
        let mut thread = Clocks::default();
        while ctx.now >= m.next_tick {
            let tick = match (m.last_mode, paths.timer_tick_user) {
                (Mode::User, Some(p)) => p,
                _ => paths.timer_tick,
            };
            let c = m.run_path(tick, Mode::Kernel);
            sys += c;
            m.counters.tick_clocks += c.total();
            m.counters.timer_ticks += 1;
            m.next_tick += m.tick;
        }
        match op {
            Op8xx::UserText { path } => {
                user += m.run_path(path as usize, Mode::User);
                m.last_mode = Mode::User;
            }
            Op8xx::ReadZero => {
                sys += m.run_path(paths.sys_read, Mode::Kernel);
                m.last_mode = Mode::Kernel;
            }
            Op8xx::WriteFile => {
                sys += m.run_path(paths.sys_write, Mode::Kernel);
                m.last_mode = Mode::Kernel;
                m.written += 1;
                let batch = m.knobs.writeback_batch as u64;
                if m.written - m.written_back >= batch {
                    let (mode, thread_switch) = match m.knobs.writeback {
                        Writeback::InContext => (Mode::Kernel, false),
                        Writeback::Bdflush | Writeback::Pdflush => (Mode::KernelThread, true),
                    };
                    let mut run = |m: &mut crate::linux::arch::ppc::mm::mmu_8xx::Machine8xx, path: usize| {
                        let c = m.run_path(path, mode);
                        if mode == Mode::Kernel {
                            sys += c;
                        } else {
                            thread += c;
                        }
                    };
                    if let Some(p) = paths.writeback_round {
                        run(m, p);
                    }
                    for _ in 0..batch {
                        run(m, paths.writeback);
                        m.written_back += 1;
                        m.counters.pages_written_back += 1;
                    }
                    if thread_switch {
                        m.counters.kthread_switches += 1;
                        m.set_context();
                    }
                }
            }
        }
        let mhz = m.mhz;
        let ps = |c: u64| Ps::from_cycles(c as f64, mhz);
        let (u, k, h) =
            (ps(user.run), ps(sys.run + thread.run), ps(user.handlers + sys.handlers + thread.handlers));
        ctx.charge(Bucket::User, u);
        ctx.charge(Bucket::Syscall, k);
        ctx.charge(Bucket::Walk, h);
        u + k + h
    }
}
