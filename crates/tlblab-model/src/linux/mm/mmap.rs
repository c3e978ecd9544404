//! The system calls the workloads make on their address space (mm/mmap.c, mm/madvise.c,
//! v5.18): `mmap`, `munmap` and `madvise(MADV_DONTNEED)` under `mmap_lock`, with their entry and
//! exit. The zap's flush-then-free is mmu_gather.rs's. From v4.20 munmap may downgrade
//! `mmap_lock` to read for the zap (`munmap_downgrade`); from v6.4 (`fault_lock = "per-vma"`)
//! munmap write-locks the VMA it removes and each write section's end releases every VMA it
//! write-locked (docs/references/linux-6x.md#per-vma-locks). mmap merges a new mapping into a
//! compatible neighbour and munmap splits the VMAs an end falls inside (linux/mm/vma.rs); from
//! v6.4 both write-lock the VMAs they change first (docs/references/linux-mm.md#vma-merging).

use super::vma::Merge;
use crate::attribution::Bucket;
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::{zap_vma, Backing, RwsemSlowpath, PAGE_SIZE};
use crate::linux::syscalls::{MapKind, Op};
use crate::linux::{Continuation, Kernel};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// `mmap_lock`, counted.
    Counters {
        /// Tasks that slept on `mmap_lock`.
        mmap_lock_sleeps,
        /// mmaps that expanded a neighbouring VMA instead of inserting one (`vma_expand`).
        vma_merges,
        /// `__split_vma` calls of munmap.
        vma_splits,
    }
}

/// A system call's continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `mmap_read_lock` / `mmap_write_lock`: may put the task to sleep.
    Lock {
        write: bool,
    },
    Unlock {
        write: bool,
    },
    /// v3.10+ (`rwsem_slowpath = "steal"`): a writer woken without the lock, running again,
    /// tries to take it under `wait_lock`; it sleeps again if another writer stole it.
    WriteRetry,
    /// `vma_start_write` (v6.4) on the VMA starting at `start`: `down_write` of its `vm_lock`,
    /// which sleeps while faults hold it for read.
    VmaStartWrite {
        start: u64,
    },
    /// The rest of `vma_start_write` once `vm_lock` is held: `vm_lock_seq = mm_lock_seq`, then
    /// `up_write`.
    VmaWriteLocked {
        start: u64,
    },
    /// A system call's body, once `mmap_lock` is held.
    Locked(Op),
    /// madvise(MADV_DONTNEED)'s gather and zap of `[start, end)`, after the call's fixed path.
    DontneedZap {
        start: u64,
        end: u64,
    },
    /// The return to user space.
    Exit,
}

impl Kernel {
    /// `mmap`, `munmap` or `madvise(MADV_DONTNEED)` from task `t`. They change the address space
    /// under mmap_lock (v5.18): mmap and munmap for write, madvise(MADV_DONTNEED) for read.
    pub(in crate::linux) fn syscall(&mut self, ctx: &mut Ctx, t: usize, op: Op) -> Ps {
        if self.config.mm.mmap_lock {
            let write =
                !matches!(op, Op::MadviseDontneed { .. } | Op::MadvisePageout { .. } | Op::MovePages { .. });
            ctx.then_all([Continuation::Sys(Step::Lock { write }), Continuation::Sys(Step::Locked(op))]);
            return Ps::ZERO;
        }
        self.syscall_body(ctx, t, op)
    }

    pub(in crate::linux) fn sys_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        match s {
            Step::Lock { write } => self.mmap_lock(ctx, t, write),
            Step::Unlock { write } => self.mmap_unlock(ctx, t, write),
            Step::WriteRetry => self.mmap_write_retry(ctx, t),
            Step::VmaStartWrite { start } => self.vma_start_write(ctx, t, start),
            Step::VmaWriteLocked { start } => self.vma_write_locked(ctx, t, start),
            Step::Locked(op) => self.syscall_body(ctx, t, op),
            Step::DontneedZap { start, end } => self.dontneed_zap(ctx, t, start, end),
            Step::Exit => {
                ctx.charge(Bucket::Syscall, self.costs.entry.syscall_half);
                self.costs.entry.syscall_half + self.kernel_path(ctx, Path::SyscallExit)
            }
        }
    }

    /// Takes task `t`'s `mmap_lock`, or puts the task to sleep until a release hands it over.
    /// With `rwsem_slowpath` (v3.x), a task that finds waiters or a holder it must wait for goes
    /// to `rwsem_down_{read,write}_failed`: it queues under `wait_lock` (the count's adjustment
    /// and, in v3.10+, a writer's steal are made there) before it sleeps.
    fn mmap_lock(&mut self, ctx: &mut Ctx, t: usize, write: bool) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mode = self.config.mm.rwsem_slowpath;
        let sem = &mut self.mm.mms[self.tasks[t].user_mm() as usize].mmap_lock;
        sem.steal = mode == RwsemSlowpath::Steal;
        let mut d = sem.line.write(ctx.cpu, ctx.now, &topo, &lines);
        // The fast path fails on a count that shows waiters or a conflicting holder.
        let slow = mode != RwsemSlowpath::Off
            && (sem.waiting() > 0 || sem.writer().is_some() || write && sem.readers() > 0);
        let got = sem.acquire(t, write);
        if slow {
            d += self.rwsem_section(ctx, t, ctx.now + d);
        }
        ctx.lock_wait("mmap_lock", d);
        if got {
            return d;
        }
        self.counters.mmap.mmap_lock_sleeps += 1;
        if write && mode == RwsemSlowpath::Steal {
            // Woken without the lock, the writer tries again when it runs.
            ctx.then(Continuation::Sys(Step::WriteRetry));
        }
        d + self.deschedule(ctx, false, ctx.now + d)
    }

    /// One section of task `t`'s `mmap_lock` under its `wait_lock` at `at`: the spin for it,
    /// the lock word, the section (kernel.rwsem_section_cycles). Returns the time to its end.
    fn rwsem_section(&mut self, ctx: &mut Ctx, t: usize, at: Ps) -> Ps {
        let (topo, lines, hold) = (self.topo, self.costs.hw.lines, self.costs.sched.rwsem_section);
        let sem = &mut self.mm.mms[self.tasks[t].user_mm() as usize].mmap_lock;
        let start = sem.wait_lock.acquire(ctx.cpu, at, hold, &topo, &lines);
        start + hold - at
    }

    /// `rwsem_down_write_failed`'s loop (v3.10+) for the woken writer `t`: under `wait_lock`,
    /// take the lock if nobody holds it (the cmpxchg on the count), else sleep again.
    fn mmap_write_retry(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mut d = self.rwsem_section(ctx, t, ctx.now);
        let sem = &mut self.mm.mms[self.tasks[t].user_mm() as usize].mmap_lock;
        d += sem.line.write(ctx.cpu, ctx.now + d, &topo, &lines);
        let got = sem.retry_write(t);
        ctx.lock_wait("mmap_lock", d);
        if got {
            return d;
        }
        self.counters.mmap.mmap_lock_sleeps += 1;
        ctx.then(Continuation::Sys(Step::WriteRetry));
        d + self.deschedule(ctx, false, ctx.now + d)
    }

    /// Wakes the tasks a release of task `t`'s `mmap_lock` handed it to (or, v3.10+, the head
    /// writer it only woke), from `at`. With `rwsem_slowpath`, `rwsem_wake` runs under
    /// `wait_lock` and pays `try_to_wake_up` for each task in turn, each woken when its call
    /// ends. Returns the time the waker spends from `at`.
    fn rwsem_wake(&mut self, ctx: &mut Ctx, t: usize, at: Ps, waiters: bool) -> Ps {
        let mut woken = std::mem::take(&mut self.mm.woken);
        let mut d = Ps::ZERO;
        if self.config.mm.rwsem_slowpath == RwsemSlowpath::Off {
            for &w in &woken {
                self.wake(ctx, w, at);
            }
        } else if waiters {
            let ttwu = self.costs.sched.ttwu;
            d = self.rwsem_section(ctx, t, at);
            for &w in &woken {
                d += ttwu;
                self.wake(ctx, w, at + d);
            }
            // The wake-ups run inside the section: wait_lock is held until the last one ends.
            let sem = &mut self.mm.mms[self.tasks[t].user_mm() as usize].mmap_lock;
            sem.wait_lock.release_at(at + d);
        }
        woken.clear();
        self.mm.woken = woken;
        d
    }

    /// What an mmap of `kind` by task `t` maps.
    fn map_backing(&self, t: usize, kind: MapKind) -> Backing {
        match kind {
            MapKind::Anon => Backing::Anon,
            MapKind::FilePrivate { file_reg } => Backing::FilePrivate(self.tasks[t].regs[file_reg] as u32),
            MapKind::FileShared { file_reg } => Backing::FileShared(self.tasks[t].regs[file_reg] as u32),
        }
    }

    /// The first VMA `op`'s body will change that is not yet write-locked in this section, in
    /// the order the kernel locks them: mmap's `vma_expand` the VMA it expands, then the one it
    /// removes (v6.12 mm/vma.c; v6.4's `vma_merge` the same ones); munmap's
    /// `vms_gather_munmap_vmas` the first VMA (split or not), then each one in the range. A new
    /// VMA is not reachable before it is inserted; madvise(MADV_DONTNEED) changes no VMA. The
    /// state they are chosen from cannot change under the body: this task holds `mmap_lock`
    /// for write.
    fn vma_write_pending(&self, t: usize, op: Op) -> Option<u64> {
        let m = &self.mm.mms[self.tasks[t].user_mm() as usize];
        let starts = match op {
            Op::Mmap { len, kind, .. } => {
                let len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
                let start = m.get_unmapped_area(len);
                m.merge_new_range(start, start + len, self.map_backing(t, kind), true).write_locks()
            }
            Op::Munmap { addr, len } => {
                let start = self.reg_addr(t, addr);
                m.vmas_overlapping(start, start + len)
            }
            _ => return None,
        };
        starts.into_iter().find(|&s| m.vma(s).unwrap().vm_lock_seq != Some(m.mm_lock_seq))
    }

    /// `vma_start_write` (v6.4 include/linux/mm.h) by task `t`, which holds `mmap_lock` for
    /// write: nothing if the VMA is write-locked in this section already, else `down_write` of
    /// its `vm_lock` (sleeping until the faults that hold it for read leave).
    fn vma_start_write(&mut self, ctx: &mut Ctx, t: usize, start: u64) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let m = &mut self.mm.mms[self.tasks[t].user_mm() as usize];
        let seq = m.mm_lock_seq;
        let v = m.vma_mut(start).expect("vma_start_write of an unmapped address");
        if v.vm_lock_seq == Some(seq) {
            return Ps::ZERO;
        }
        let d = v.vm_lock.line.write(ctx.cpu, ctx.now, &topo, &lines);
        let got = v.vm_lock.acquire(t, true);
        ctx.lock_wait("vm_lock", d);
        ctx.then(Continuation::Sys(Step::VmaWriteLocked { start }));
        if got {
            return d;
        }
        self.mm.vma_lock.vma_start_write_sleeps += 1;
        d + self.deschedule(ctx, false, ctx.now + d)
    }

    /// `vma_start_write` with `vm_lock` held: marks the VMA write-locked in this section of
    /// `mmap_lock` and drops `vm_lock` (the mark stays until the section ends).
    fn vma_write_locked(&mut self, ctx: &mut Ctx, t: usize, start: u64) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let m = &mut self.mm.mms[self.tasks[t].user_mm() as usize];
        let seq = m.mm_lock_seq;
        let v = m.vma_mut(start).expect("vma_start_write of an unmapped address");
        v.vm_lock_seq = Some(seq);
        let d = v.vm_lock.line.write(ctx.cpu, ctx.now, &topo, &lines);
        let mut woken = Vec::new();
        v.vm_lock.release(t, true, &mut woken);
        // Fault readers only trylock, and mmap_lock admits one writer: nobody waits.
        debug_assert!(woken.is_empty());
        ctx.lock_wait("vm_lock", d);
        d
    }

    /// `vma_end_write_all` (v6.4) at the end of a write section: `mm_lock_seq` moves on, which
    /// releases every VMA write-locked in it; a write of the line every per-VMA fault reads.
    fn vma_end_write_all(&mut self, ctx: &mut Ctx, mm: usize, at: Ps) -> Ps {
        if !self.config.mm.fault_lock.per_vma() {
            return Ps::ZERO;
        }
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let m = &mut self.mm.mms[mm];
        m.vma_end_write_all();
        let d = m.mm_lock_seq_line.write(ctx.cpu, at, &topo, &lines);
        ctx.lock_wait("mm_lock_seq", d);
        d
    }

    /// `mmap_write_downgrade` by munmap once the VMA is detached (v4.20+): task `t` keeps
    /// `mmap_lock` for read, and the readers queued at its head get it too.
    fn mmap_write_downgrade(&mut self, ctx: &mut Ctx, t: usize) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mm = self.tasks[t].user_mm() as usize;
        let d = self.vma_end_write_all(ctx, mm, ctx.now);
        let sem = &mut self.mm.mms[mm].mmap_lock;
        let d = d + sem.line.write(ctx.cpu, ctx.now + d, &topo, &lines);
        let waiters = sem.waiting() > 0;
        let mut woken = std::mem::take(&mut self.mm.woken);
        sem.downgrade(t, &mut woken);
        self.mm.woken = woken;
        let d = d + self.rwsem_wake(ctx, t, ctx.now + d, waiters);
        ctx.lock_wait("mmap_lock", d);
        d
    }

    /// Releases task `t`'s `mmap_lock`, waking the tasks it hands the lock to.
    fn mmap_unlock(&mut self, ctx: &mut Ctx, t: usize, write: bool) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let mm = self.tasks[t].user_mm() as usize;
        let seq = if write { self.vma_end_write_all(ctx, mm, ctx.now) } else { Ps::ZERO };
        let sem = &mut self.mm.mms[mm].mmap_lock;
        let d = seq + sem.line.write(ctx.cpu, ctx.now + seq, &topo, &lines);
        let mut woken = std::mem::take(&mut self.mm.woken);
        sem.release(t, write, &mut woken);
        // up_read / up_write call rwsem_wake when the count shows waiters and no active holder.
        let free = sem.readers() == 0 && sem.writer().is_none();
        let waiters = !woken.is_empty() || sem.waiting() > 0 && free;
        self.mm.woken = woken;
        let d = d + self.rwsem_wake(ctx, t, ctx.now + d, waiters);
        ctx.lock_wait("mmap_lock", d);
        d
    }

    /// madvise(MADV_DONTNEED)'s `tlb_gather_mmu` and zap of `[start, end)`, with interrupts
    /// enabled (the page-table lock is a plain spinlock), then the flush and free queued.
    fn dontneed_zap(&mut self, ctx: &mut Ctx, t: usize, start: u64, end: u64) -> Ps {
        ctx.irqs_on();
        let mm = self.tasks[t].user_mm();
        let m = &mut self.mm.mms[mm as usize];
        let zapped = m.zap_range(start, end);
        let dirty = zapped
            .iter()
            .any(|&(a, p)| p.dirty && m.vma(a).is_some_and(|v| matches!(v.backing, Backing::FileShared(_))));
        m.tlb_flush_pending += 1;
        self.gather(t, mm, &zapped);
        self.queue_zap_flush(ctx, start, end, !zapped.is_empty(), false, dirty);
        let zap = self.costs.memory.zap_pte;
        let d = zap * zapped.len() as u64;
        ctx.charge(Bucket::Syscall, d);
        d + self.zap_pte_locks(ctx, mm, zapped.iter().map(|z| z.0), ctx.now, zap)
    }

    fn syscall_body(&mut self, ctx: &mut Ctx, t: usize, op: Op) -> Ps {
        // v6.4: munmap write-locks each VMA before splitting or detaching it, so that no fault
        // under the VMA lock can install a PTE in it, and mmap the neighbour it expands; the
        // body runs again once each is locked.
        if self.config.mm.mmap_lock && self.config.mm.fault_lock.per_vma() {
            if let Some(start) = self.vma_write_pending(t, op) {
                ctx.then(Continuation::Sys(Step::Locked(op)));
                return self.vma_start_write(ctx, t, start);
            }
        }
        // System calls run with interrupts enabled.
        ctx.irqs_on();
        let mm = self.tasks[t].user_mm();
        match op {
            Op::Mmap { len, kind, reg } => {
                let backing = self.map_backing(t, kind);
                let len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
                let m = &mut self.mm.mms[mm as usize];
                let start = m.get_unmapped_area(len);
                let merge = m.mmap_region(start, len, backing, true);
                self.counters.mmap.vma_merges += (merge != Merge::None) as u64;
                self.tasks[t].regs[reg] = start;
                if self.config.mm.mmap_lock {
                    ctx.then(Continuation::Sys(Step::Unlock { write: true }));
                }
                let d = self.costs.entry.syscall_half * 2;
                ctx.charge(Bucket::Syscall, d);
                d + self.kernel_path(ctx, Path::SyscallEntry)
                    + self.kernel_path(ctx, Path::Mmap)
                    + self.kernel_path(ctx, Path::SyscallExit)
            }
            Op::Munmap { addr, len } => {
                let start = self.reg_addr(t, addr);
                let end = start + len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
                let unmapped = self.mm.mms[mm as usize].munmap(start, len);
                assert!(!unmapped.vmas.is_empty(), "munmap of an unmapped address");
                self.counters.mmap.vma_splits += unmapped.splits as u64;
                // The VMAs are detached: the zap, flush and free need mmap_lock only for read.
                let downgrade = if self.config.mm.mmap_lock && self.config.mm.munmap_downgrade {
                    self.mmap_write_downgrade(ctx, t)
                } else {
                    Ps::ZERO
                };
                let mut zapped = Vec::new();
                let mut dirty = false;
                for vma in &unmapped.vmas {
                    let z = zap_vma(vma);
                    dirty |= matches!(vma.backing, Backing::FileShared(_)) && z.iter().any(|z| z.1.dirty);
                    zapped.extend(z);
                }
                self.gather(t, mm, &zapped);
                self.mm.mms[mm as usize].tlb_flush_pending += 1;
                // Page tables existed only if something was mapped: then free_pgtables sets
                // freed_tables and the flush must reach lazy CPUs too.
                self.queue_zap_flush(ctx, start, end, !zapped.is_empty(), true, dirty);
                // v6.x unmap_region / vms_clear_ptes take the steps madvise's fixed path measures
                // (lock, VMA lookup, lru_add_drain, the mmu_gather bracket) and more: a lower bound.
                let fixed = self.costs.entry.syscall_half + self.costs.memory.madvise_call;
                let zap = self.costs.memory.zap_pte;
                let d = fixed + zap * zapped.len() as u64;
                ctx.charge(Bucket::Syscall, d);
                let at = ctx.now + downgrade + fixed;
                let waited = self.zap_pte_locks(ctx, mm, zapped.iter().map(|z| z.0), at, zap);
                downgrade
                    + d
                    + waited
                    + self.kernel_path(ctx, Path::SyscallEntry)
                    + self.kernel_path(ctx, Path::Munmap)
            }
            Op::MadviseDontneed { addr, len } => {
                // The call's fixed path (entry, the VMA's lookup and lock) runs before
                // `tlb_gather_mmu` raises `tlb_flush_pending` (v5.18 zap_page_range; v6.16+
                // madvise_init_tlb after madvise_lock): an interrupt taken there finds no gather
                // of this call in flight. The gather and zap are the next step.
                let start = self.reg_addr(t, addr);
                ctx.then(Continuation::Sys(Step::DontneedZap { start, end: start + len }));
                let d = self.costs.entry.syscall_half + self.costs.memory.madvise_call;
                ctx.charge(Bucket::Syscall, d);
                d + self.kernel_path(ctx, Path::SyscallEntry) + self.kernel_path(ctx, Path::Madvise)
            }
            Op::MadvisePageout { addr, len } => {
                let start = self.reg_addr(t, addr);
                self.madvise_pageout(ctx, t, start, len)
            }
            Op::MovePages { addr, len, node } => {
                let start = self.reg_addr(t, addr);
                self.move_pages(ctx, t, start, len, node)
            }
            _ => unreachable!("not a system call on the address space: {op:?}"),
        }
    }
}
