//! The page-fault handler and the user access that leads to it (mm/memory.c, v5.18): a TLB
//! lookup, a page walk on a miss, and the fault paths the workloads take: anonymous and
//! zero-page faults, file reads with fault-around, COW of private file pages and of the zero
//! page, shared-file write notify. With the `per-vma` fault lock, v6.4's
//! `lock_vma_under_rcu` first (docs/references/linux-6x.md#per-vma-locks).

use super::filemap::FaultPage;
use crate::attribution::Bucket;
use crate::hw::tlb::{Access, AccessKind, Lookup, PageSize, TlbPayload, Translation};
use crate::linux::arch::x86::text::Path;
use crate::linux::ctx::Ctx;
use crate::linux::frames::Owner;
use crate::linux::include::linux::mm_types::{
    Backing, FaultAround, MmId, Pte, VmaLockAbort, PAGE_SHIFT, PAGE_SIZE,
};
use crate::linux::{arch::x86::mm::tlb, mm::mmap, mm::pgtable_generic, Continuation, Kernel};
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// Accesses and faults, counted (page-cache fills count their zeroing here too).
    Counters {
        tlb_misses,
        /// Misses on a translation a flush had removed from this CPU's TLB (not a fault's retry).
        tlb_misses_after_flush,
        page_faults,
        cow_flushes,
        pages_zeroed,
        /// Of them, pages that came from the buddy lists, cleared at the profile's DRAM rate.
        pages_zeroed_cold,
        pages_copied,
        /// Stores through a clean writable TLB entry: the CPU walked again to set the PTE's
        /// dirty bit (no fault).
        dirty_bit_walks,
        /// Takings of a page table's split lock that cost more than a cache hit: it was held
        /// by another CPU, or its word's line was in another CPU's cache.
        pte_lock_waits,
    }
}

crate::linux::vmstat::counters! {
    /// Per-VMA lock faults (v6.4, `CONFIG_PER_VMA_LOCK_STATS`' names), present only where the
    /// kernel has them (`fault_lock = "per-vma"` or `"per-vma-file"`).
    VmaLockCounters {
        /// Faults handled under the VMA lock alone.
        vma_lock_success,
        /// Faults `lock_vma_under_rcu` gave back to `mmap_lock`.
        vma_lock_abort,
        /// Of those: the VMA had no `anon_vma` yet (its first write fault).
        vma_lock_abort_no_anon_vma,
        /// Of those: write-locked by a writer's `vma_start_write`, or its `vm_lock` held or
        /// wanted for write.
        vma_lock_abort_locked,
        /// `vma_start_write` calls that slept until the VMA's fault readers left.
        vma_start_write_sleeps,
    }
}

/// The TLB entry a walk of `p` fills: a clean writable PTE gives an entry a store must walk
/// again for (it sets the dirty bit first).
fn tlb_payload(p: Pte) -> TlbPayload {
    match (p.writable, p.dirty) {
        (true, false) => TlbPayload::clean(p.pfn),
        (w, _) => TlbPayload::new(p.pfn, w),
    }
}

/// `fault_around_bytes` default (mm/memory.c): 64 KiB = 16 pages.
const FAULT_AROUND_PAGES: u64 = 16;

/// A fault's continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A user access at an absolute address (a retry after a fault).
    Access {
        va: u64,
        kind: AccessKind,
    },
    Fault {
        addr: u64,
        write: bool,
    },
    /// A PTE installed after the flush that had to precede it (a COW's `ptep_clear_flush`).
    SetPte {
        addr: u64,
        pte: Pte,
    },
    /// One page of a fault's readahead, then the rest of its window (linux/mm/filemap.rs).
    ReadAhead {
        file: u32,
        index: u64,
        end: u64,
        marker: u64,
        /// This page's allocation already reclaimed directly once.
        reclaimed: bool,
        /// The folio order `page_cache_ra_order` reads the window in (0: single pages, the
        /// pages not cached from `index` on).
        order: u8,
    },
    /// The end of a read fault whose page its readahead read in: `do_set_pte` (young,
    /// read-only) if the page is still cached and the PTE still none.
    MapPage {
        addr: u64,
        file: u32,
        index: u64,
    },
    /// v6.4 `do_user_addr_fault`: `lock_vma_under_rcu`, then the fault under the VMA lock, or
    /// under `mmap_lock` for read if that failed.
    LockVma {
        addr: u64,
        write: bool,
    },
    /// `vma_end_read` after a fault handled under the VMA lock.
    VmaEndRead {
        addr: u64,
    },
}

/// What the fault and page paths cost (mm/memory.c, mm/page_alloc.c, release_pages).
#[derive(Debug, Clone)]
pub struct Costs {
    pub fault: Ps,
    pub fault_around_page: Ps,
    pub page_alloc: Ps,
    /// Of `page_alloc`, the part a fault spends under the PTE lock
    /// ([`pgtable_generic::NEW_PAGE_LOCKED_SHARE`]).
    pub page_alloc_locked: Ps,
    pub page_free: Ps,
    pub zap_pte: Ps,
    /// madvise's fixed path, once per madvise or munmap (`kernel.madvise_call_cycles`, zero
    /// where absent: docs/references/machine-costs.md#madvise-fixed-path).
    pub madvise_call: Ps,
    pub clear_page: Ps,
    /// Clearing a page fresh from the buddy lists (`memory.clear_dram_mbps`), where the
    /// profile has the rate.
    pub clear_page_cold: Option<Ps>,
    pub copy_page: Ps,
    /// A guest's first touch of a page fresh from the buddy lists, which its host may have
    /// taken back (`memory.second_level_fault_ns`; zero where absent).
    pub second_level: Ps,
}

impl crate::linux::boot::FromProfile for Costs {
    fn from_profile(p: &crate::profile::MachineProfile) -> Costs {
        let mhz = p.clock_mhz();
        let page_time = |mbps: f64| Ps::from_ns(PAGE_SIZE as f64 * 1000.0 / mbps);
        Costs {
            fault: Ps::from_ns(p.kernel.fault_ns.value),
            fault_around_page: Ps::from_cycles(p.kernel.fault_around_page_cycles.value, mhz),
            page_alloc: Ps::from_cycles(p.kernel.page_alloc_cycles.value, mhz),
            page_alloc_locked: {
                let (num, den) = pgtable_generic::NEW_PAGE_LOCKED_SHARE;
                Ps(Ps::from_cycles(p.kernel.page_alloc_cycles.value, mhz).0 * num / den)
            },
            page_free: Ps::from_cycles(p.kernel.page_free_cycles.value, mhz),
            zap_pte: Ps::from_cycles(p.kernel.zap_pte_cycles.value, mhz),
            madvise_call: p
                .kernel
                .madvise_call_cycles
                .as_ref()
                .map_or(Ps::ZERO, |c| Ps::from_cycles(c.value, mhz)),
            clear_page: page_time(p.memory.clear_page_mbps.value),
            clear_page_cold: p.memory.clear_dram_mbps.as_ref().map(|c| page_time(c.value)),
            copy_page: page_time(p.memory.memcpy_mbps.value),
            second_level: p.memory.second_level_fault_ns.as_ref().map_or(Ps::ZERO, |f| Ps::from_ns(f.value)),
        }
    }
}

impl Kernel {
    /// `clear_page` (or a fill that writes the whole page) of `pfn`, just allocated, from `at`;
    /// charged to [`Bucket::Zeroing`]. A page warm off this CPU's per-CPU list clears at the
    /// cache-resident rate and draws on DRAM only as far as the LLC misses the CPU's streams;
    /// one the allocator took from the buddy lists was last written long ago, so its lines
    /// come from DRAM: it clears at the one-core DRAM rate and all its bytes queue on the
    /// socket's DRAM (docs/references/machine-costs.md#cold-page-clear). In a guest whose host
    /// takes free pages back, a page from the buddy lists first takes the host's second-level
    /// fault (`second_level`, charged as fault time before the clear). Returns the time.
    pub(in crate::linux) fn clear_new_page(&mut self, ctx: &mut Ctx, at: Ps, pfn: u64) -> Ps {
        let warm = self.mm.page_alloc.as_ref().is_some_and(|a| a.warm(pfn));
        self.counters.memory.pages_zeroed += 1;
        let host = self.second_level_fault(ctx, warm, Bucket::Fault);
        let at = at + host;
        host + match self.costs.memory.clear_page_cold.filter(|_| !warm) {
            Some(c) => {
                self.counters.memory.pages_zeroed_cold += 1;
                ctx.charge(Bucket::Zeroing, c);
                c + self.bulk_dram(ctx, at, PAGE_SIZE, c)
            }
            None => {
                let c = self.costs.memory.clear_page;
                ctx.charge(Bucket::Zeroing, c);
                c + self.bulk(ctx, at, PAGE_SIZE, c)
            }
        }
    }

    /// The host's share of a guest's first touch of a page just allocated: a page the buddy
    /// lists handed out (not `warm` off this CPU's per-CPU list) may be one free page reporting
    /// gave the host, which discarded it, so the touch takes a second-level fault that backs it
    /// again (docs/references/machine-costs.md#second-level-faults; mm/page_reporting.c,
    /// v5.7+). Charged to `bucket` on the task's CPU; zero for a warm page or where the
    /// profile has no `memory.second_level_fault_ns` (bare metal, the built-in machines).
    pub(in crate::linux) fn second_level_fault(&mut self, ctx: &mut Ctx, warm: bool, bucket: Bucket) -> Ps {
        let c = self.costs.memory.second_level;
        if warm || c == Ps::ZERO {
            return Ps::ZERO;
        }
        ctx.charge(bucket, c);
        c
    }

    pub(in crate::linux) fn mm_step(&mut self, ctx: &mut Ctx, t: usize, s: Step) -> Ps {
        let mm = self.tasks[t].user_mm();
        match s {
            Step::Access { va, kind } => self.access(ctx, t, va, kind),
            Step::Fault { addr, write } => self.fault(ctx, mm, addr, write),
            Step::SetPte { addr, pte } => {
                self.mm.mms[mm as usize].set_pte(addr, pte);
                Ps::ZERO
            }
            Step::ReadAhead { .. } => self.readahead_page(ctx, s),
            Step::MapPage { addr, file, index } => {
                let Some(pfn) = self.mm.files[file as usize].get(index) else { return Ps::ZERO };
                let v = self.mm.mms[mm as usize].vma(addr).expect("readahead maps inside its VMA");
                let writable = self.vm_page_prot_writable(v.backing, v.writable);
                self.map_file_page(mm, addr, pfn, writable);
                self.finish_fault_folio(ctx, mm, file, addr, writable)
            }
            Step::LockVma { addr, write } => self.lock_vma_fault(ctx, mm, addr, write),
            Step::VmaEndRead { addr } => self.vma_end_read(ctx, mm, addr),
        }
    }

    /// v6.4 `do_user_addr_fault`'s first try: `lock_vma_under_rcu` (the `mm_lock_seq` read and,
    /// once the VMA qualifies, the `down_read_trylock` RMW on its `vm_lock` line), then the
    /// fault under the VMA lock; on failure the fault under `mmap_lock` for read.
    fn lock_vma_fault(&mut self, ctx: &mut Ctx, mm: MmId, addr: u64, write: bool) -> Ps {
        let (topo, lines, cpu, now) = (self.topo, self.costs.hw.lines, ctx.cpu, ctx.now);
        let m = &mut self.mm.mms[mm as usize];
        let got = m.lock_vma_under_rcu(addr, self.config.mm.fault_lock, write).map(|v| v.start);
        // The sequence is read once the VMA qualifies (then `vma_start_read` may still fail).
        let qualifies =
            !matches!(got, Err(VmaLockAbort::NoVma | VmaLockAbort::NotAnonymous | VmaLockAbort::NoAnonVma));
        let mut d = if qualifies { m.mm_lock_seq_line.read(cpu, now, &topo, &lines) } else { Ps::ZERO };
        if matches!(got, Ok(_) | Err(VmaLockAbort::Contended)) {
            let v = m.vma_mut(addr).unwrap();
            d += v.vm_lock.line.write(cpu, now + d, &topo, &lines);
        }
        ctx.lock_wait("vm_lock", d);
        let stats = &mut self.mm.vma_lock;
        match got {
            Ok(_) => {
                stats.vma_lock_success += 1;
                ctx.then_all([
                    Continuation::Mm(Step::Fault { addr, write }),
                    Continuation::Mm(Step::VmaEndRead { addr }),
                ]);
            }
            Err(e) => {
                stats.vma_lock_abort += 1;
                stats.vma_lock_abort_no_anon_vma += (e == VmaLockAbort::NoAnonVma) as u64;
                stats.vma_lock_abort_locked +=
                    matches!(e, VmaLockAbort::WriteLocked | VmaLockAbort::Contended) as u64;
                ctx.then_all([
                    Continuation::Sys(mmap::Step::Lock { write: false }),
                    Continuation::Mm(Step::Fault { addr, write }),
                    Continuation::Sys(mmap::Step::Unlock { write: false }),
                ]);
            }
        }
        d
    }

    /// `vma_end_read` (v6.4): `up_read` of the VMA's `vm_lock`, handing it to a writer that
    /// waits in `vma_start_write`. The VMA is still there: its removal write-locks it first.
    fn vma_end_read(&mut self, ctx: &mut Ctx, mm: MmId, addr: u64) -> Ps {
        let (topo, lines) = (self.topo, self.costs.hw.lines);
        let v = self.mm.mms[mm as usize].vma_mut(addr).expect("vma_end_read: the VMA went while read-locked");
        let d = v.vm_lock.line.write(ctx.cpu, ctx.now, &topo, &lines);
        let mut woken = std::mem::take(&mut self.mm.woken);
        v.vm_lock.release(usize::MAX, false, &mut woken);
        for &w in &woken {
            self.wake(ctx, w, ctx.now + d);
        }
        woken.clear();
        self.mm.woken = woken;
        ctx.lock_wait("vm_lock", d);
        d
    }

    /// A user access: TLB lookup, page walk on a miss, fault if the PTE does not allow it.
    pub(in crate::linux) fn access(&mut self, ctx: &mut Ctx, t: usize, va: u64, kind: AccessKind) -> Ps {
        let (cpu, mm) = (ctx.cpu, self.tasks[t].user_mm());
        let write = kind == AccessKind::Store;
        let c = &mut self.cpus[cpu as usize];
        let (pcid, lp) = (c.x86.st.pcid(), c.lp);
        let tlb = &mut self.tlbs[c.core];
        // Every user translation of the engine is a 4K page: the kernel's 2M and 1G entries
        // need not be probed for.
        let a = Access { va, kind, asid: pcid, kernel: false };
        match tlb.lookup_sized(lp, a, PageSize::Size4K) {
            Lookup::Hit { level, payload, .. } => {
                let (pfn, writable) = (payload.pfn(), payload.writable());
                self.oracle.check_access(pfn, mm, va, &self.mm.frames);
                let mut d =
                    self.costs.hw.level_hit[kind as usize][level as usize - 1] + self.costs.hw.user_access;
                if write && !writable {
                    // The CPU drops the entry; a clean writable one is walked again to set the
                    // PTE's dirty bit, a read-only one (or one whose PTE changed) faults.
                    tlb.invlpg(lp, va, pcid);
                    match self.mm.mms[mm as usize].pte(va) {
                        Some(p) if payload.is_clean() && p.present && p.writable => {
                            d += self.set_dirty_walk(ctx, cpu, mm, va, a, p);
                        }
                        _ => self.push_fault(ctx, va, kind, write),
                    }
                }
                ctx.charge(Bucket::User, d);
                d
            }
            Lookup::Miss => {
                self.counters.memory.tlb_misses += 1;
                let walk = self.costs.hw.miss(kind);
                ctx.charge(Bucket::Walk, walk);
                match self.mm.mms[mm as usize].pte(va) {
                    Some(mut p) if p.present && (p.writable || !write) => {
                        let c = &mut self.cpus[cpu as usize];
                        if c.take_flushed(va >> PAGE_SHIFT) {
                            self.counters.memory.tlb_misses_after_flush += 1;
                        }
                        // The walk sets the PTE's accessed bit, and for a store its dirty bit.
                        self.mm.vmscan.mark_young(p.pfn);
                        if write && !p.dirty {
                            p.dirty = true;
                            self.mm.mms[mm as usize].set_pte(va, p);
                        }
                        let payload = tlb_payload(p);
                        self.tlbs[c.core].fill(
                            lp,
                            a,
                            Translation { size: PageSize::Size4K, payload, global: false },
                        );
                        c.note_filled(pcid, va >> PAGE_SHIFT);
                        self.oracle.note_fill(cpu, p.pfn);
                        ctx.charge(Bucket::User, self.costs.hw.user_access);
                        walk + self.costs.hw.user_access
                    }
                    Some(_) => {
                        // The fault installs a new translation: a miss on it is not the flush's.
                        self.cpus[cpu as usize].take_flushed(va >> PAGE_SHIFT);
                        self.push_fault(ctx, va, kind, write);
                        walk
                    }
                    None => {
                        panic!("task {t} touched unmapped address {va:#x} (SIGSEGV in the workload model)")
                    }
                }
            }
        }
    }

    /// A store through a clean writable entry: the CPU walks the page table again and sets the
    /// PTE's dirty bit (an assist, not a fault), then refills the entry writable and dirty.
    fn set_dirty_walk(&mut self, ctx: &mut Ctx, cpu: u32, mm: MmId, va: u64, a: Access, mut p: Pte) -> Ps {
        self.counters.memory.dirty_bit_walks += 1;
        let walk = self.costs.hw.miss(a.kind);
        ctx.charge(Bucket::Walk, walk);
        p.dirty = true;
        self.mm.mms[mm as usize].set_pte(va, p);
        let c = &mut self.cpus[cpu as usize];
        let t = Translation { size: PageSize::Size4K, payload: tlb_payload(p), global: false };
        self.tlbs[c.core].fill(c.lp, a, t);
        // Recorded as any fill is, for the flush accounting and the safety oracle.
        c.note_filled(a.asid, va >> PAGE_SHIFT);
        self.oracle.note_fill(cpu, p.pfn);
        walk
    }

    /// Queues the fault, then the access again (the faulting instruction restarts).
    /// The handler runs under `mmap_read_lock` (v5.18), or from v6.4 under the VMA's lock if
    /// `lock_vma_under_rcu` succeeds.
    fn push_fault(&mut self, ctx: &mut Ctx, va: u64, kind: AccessKind, write: bool) {
        let lock = self.config.mm.mmap_lock;
        if lock && self.config.mm.fault_lock.per_vma() {
            ctx.then_all([
                Continuation::Mm(Step::LockVma { addr: va, write }),
                Continuation::Mm(Step::Access { va, kind }),
            ]);
            return;
        }
        let (lock, unlock) = match lock {
            true => (Some(mmap::Step::Lock { write: false }), Some(mmap::Step::Unlock { write: false })),
            false => (None, None),
        };
        ctx.then_all(
            lock.map(Continuation::Sys)
                .into_iter()
                .chain([Continuation::Mm(Step::Fault { addr: va, write })])
                .chain(unlock.map(Continuation::Sys))
                .chain([Continuation::Mm(Step::Access { va, kind })]),
        );
    }

    /// The page-fault handler (mm/memory.c, v5.18): anonymous, zero page, file read with
    /// fault-around, COW of private file pages, shared-file write notify. Every path that
    /// looks at or installs the PTE does so under its page table's split lock
    /// (linux/mm/pgtable_generic.rs), for the part of the work that runs under it.
    pub fn fault(&mut self, ctx: &mut Ctx, mm: MmId, va: u64, write: bool) -> Ps {
        let (d, locked) = self.handle_fault(ctx, mm, va, write);
        match locked {
            // The section is the last `hold` of the work already charged.
            Some(hold) => d + self.pte_lock(ctx, mm, va, ctx.now + d - hold, hold),
            None => d,
        }
    }

    /// The handler's work: its time, and how much of its end ran under the PTE lock (`None`:
    /// the PTE is set by a later step, a page its readahead reads in).
    fn handle_fault(&mut self, ctx: &mut Ctx, mm: MmId, va: u64, write: bool) -> (Ps, Option<Ps>) {
        // exc_page_fault re-enables interrupts once CR2 is read (v5.18 do_user_addr_fault):
        // an IPI is taken inside the handler, not after it.
        ctx.irqs_on();
        self.counters.memory.page_faults += 1;
        let addr = va & !(PAGE_SIZE - 1);
        let vpn = addr >> PAGE_SHIFT;
        let (backing, index, vstart, vend, prot_w) = {
            let v = self.mm.mms[mm as usize].vma(addr).expect("fault outside a VMA");
            (v.backing, v.file_index(addr), v.start, v.end, self.vm_page_prot_writable(v.backing, v.writable))
        };
        let pte = self.mm.mms[mm as usize].pte(addr).unwrap();
        let mut d = self.costs.memory.fault + self.kernel_path(ctx, Path::Fault);
        ctx.charge(Bucket::Fault, self.costs.memory.fault);
        // A new anonymous page: allocated, charged and LRU-added (fault time), then zeroed or
        // copied (zero_copy time).
        let zero_pfn = self.mm.frames.zero_pfn;
        // `at`: the fault's time so far (its charges are in the buckets, not in `ctx.now`).
        let anon_page = |s: &mut Kernel, ctx: &mut Ctx, at: Ps, copy: bool| {
            // anon_vma_prepare: the VMA has its anon_vma from its first anonymous page on.
            s.mm.mms[mm as usize].anon_vma_prepare(addr);
            let (pfn, a) = s.alloc_frame(ctx, at, Owner::Anon { mm, vpn }, Bucket::Fault);
            // What remains of the profile's page_alloc_cycles once the allocator is simulated:
            // memcg charge, rmap and LRU add.
            ctx.charge(Bucket::Fault, s.costs.memory.page_alloc);
            let at = at + a + s.costs.memory.page_alloc;
            let c = if copy {
                s.counters.memory.pages_copied += 1;
                let c = s.costs.memory.copy_page;
                ctx.charge(Bucket::Zeroing, c);
                // The copy draws on the socket's DRAM as far as the LLC misses it.
                c + s.bulk(ctx, at, 2 * PAGE_SIZE, c)
            } else {
                s.clear_new_page(ctx, at, pfn)
            };
            (pfn, a + s.costs.memory.page_alloc + c)
        };
        // Of the work below, what ends under the PTE lock: a new page's rmap and LRU add, or
        // the pages fault-around maps; else only the PTE's store.
        let mut hold = Ps::ZERO;
        let new_pte = match (backing, pte.present, write) {
            // A write fault on a PTE that already allows it: another CPU upgraded it in place
            // while this one held the old read-only entry (handle_pte_fault's spurious-fault
            // path; flush_tlb_fix_spurious_fault is a no-op on x86). The retry refills.
            (_, true, true) if pte.writable => return (d, Some(Ps::ZERO)),
            // Permission upgrade of a present PTE.
            (Backing::FileShared(_), true, true) => {
                // do_wp_page -> wp_page_shared: page_mkwrite, make writable and dirty; no flush
                // on x86.
                Pte { writable: true, dirty: true, ..pte }
            }
            (_, true, true) => {
                // wp_page_copy: new page, then ptep_clear_flush of the old PTE, then install.
                let (pfn, c) = anon_page(self, ctx, ctx.now + d, pte.pfn != zero_pfn);
                d += c;
                self.mm.mms[mm as usize].set_pte(addr, Pte::default());
                self.counters.memory.cow_flushes += 1;
                ctx.then_all([
                    Continuation::Flush(tlb::Step {
                        start: addr,
                        end: addr + PAGE_SIZE,
                        freed_tables: false,
                    }),
                    Continuation::Mm(Step::SetPte {
                        addr,
                        pte: Pte { pfn, present: true, writable: true, dirty: true },
                    }),
                ]);
                return (d, Some(Ps::ZERO));
            }
            (_, true, false) => return (d, Some(Ps::ZERO)), // raced with another fault: nothing to do
            (Backing::FileShared(f), false, _) if self.mm.shmem.is_shmem(f) => {
                // shmem (v6.6, linux/mm/shmem.rs): a read fault tries fault-around first
                // (filemap_map_pages maps cached pages; swap entries are skipped), then
                // shmem_fault -> shmem_get_folio_gfp, which reads a swapped-out page back.
                if !write {
                    let (around, mapped) = self.do_fault_around(ctx, mm, f, addr, (vstart, vend), prot_w);
                    d += around;
                    if mapped {
                        return (d, Some(around));
                    }
                }
                let (pfn, c) = self.shmem_get_folio(ctx, ctx.now + d, f, index);
                d += c;
                self.mm.vmscan.mark_young(pfn);
                Pte { pfn, present: true, writable: write || prot_w, dirty: write }
            }
            (Backing::Anon, false, false) => {
                Pte { pfn: zero_pfn, present: true, writable: false, dirty: false }
            }
            (Backing::Anon, false, true) => {
                let (pfn, c) = anon_page(self, ctx, ctx.now + d, false);
                d += c;
                hold = self.costs.memory.page_alloc_locked;
                Pte { pfn, present: true, writable: true, dirty: true }
            }
            (Backing::FilePrivate(f), false, true) => {
                // do_cow_fault: read the file page, copy it into a new anonymous page.
                let (_, c0) = self.page_cache_page(ctx, ctx.now + d, f, index);
                let (pfn, c) = anon_page(self, ctx, ctx.now + d + c0, true);
                d += c0 + c;
                hold = self.costs.memory.page_alloc_locked;
                Pte { pfn, present: true, writable: true, dirty: true }
            }
            (Backing::FileShared(f), false, true) => {
                let (pfn, c) = self.page_cache_page(ctx, ctx.now + d, f, index);
                d += c;
                Pte { pfn, present: true, writable: true, dirty: true }
            }
            (Backing::FilePrivate(f) | Backing::FileShared(f), false, false)
                if self.mm.vmscan.costs.is_some() =>
            {
                // With reclaim, v4.2 do_read_fault: do_fault_around first; if it did not map
                // the faulting page (not cached, or marked PG_readahead), __do_fault ->
                // filemap_fault with readahead (linux/mm/filemap.rs), then do_set_pte (young).
                let (around, mapped) = self.do_fault_around(ctx, mm, f, addr, (vstart, vend), prot_w);
                d += around;
                if mapped {
                    return (d, Some(around));
                }
                let (page, c) = self.filemap_fault(ctx, ctx.now + d, f, index, addr);
                d += c;
                let FaultPage::Cached(pfn) = page else { return (d, None) };
                self.map_file_page(mm, addr, pfn, prot_w);
                d += self.finish_fault_folio(ctx, mm, f, addr, prot_w);
                Pte { pfn, present: true, writable: prot_w, dirty: false }
            }
            (Backing::FilePrivate(f) | Backing::FileShared(f), false, false) => {
                // do_read_fault: do_fault_around first (filemap_map_pages visits every cached
                // page of the 16-page aligned window, mapping those whose PTE is none); a
                // faulting page that was not cached is then read in by __do_fault.
                let was_cached = self.mm.files[f as usize].get(index).is_some();
                let (pfn, c) = self.page_cache_page(ctx, ctx.now + d, f, index);
                d += c;
                // v4.2 installs young PTEs (do_set_pte); the accessed bit reclaim ages by.
                self.mm.vmscan.mark_young(pfn);
                let visited = was_cached as u64 + self.map_pages(mm, f, addr, (vstart, vend), false, prot_w);
                let around = self.costs.memory.fault_around_page * visited;
                ctx.charge(Bucket::Fault, around);
                d += around;
                hold = around;
                Pte { pfn, present: true, writable: prot_w, dirty: false }
            }
        };
        self.mm.mms[mm as usize].set_pte(addr, new_pte);
        (d, Some(hold))
    }

    /// `do_fault_around` (v4.2; v6.6's shmem read fault too) at `addr` in a VMA `[vstart, vend)`
    /// of `file` whose PTEs are `writable` ([`Kernel::vm_page_prot_writable`]): `map_pages` over
    /// the window, charged per cached page visited. Returns the time taken and whether the
    /// faulting page is now mapped.
    fn do_fault_around(
        &mut self,
        ctx: &mut Ctx,
        mm: MmId,
        file: u32,
        addr: u64,
        vma: (u64, u64),
        writable: bool,
    ) -> (Ps, bool) {
        let visited = self.map_pages(mm, file, addr, vma, true, writable);
        let around = self.costs.memory.fault_around_page * visited;
        ctx.charge(Bucket::Fault, around);
        (around, self.mm.mms[mm as usize].pte(addr).is_some_and(|p| p.present))
    }

    /// `filemap_map_pages` (v4.2, the same rule in v5.18) for `do_fault_around` at `addr` in a
    /// VMA `[vstart, vend)` of `file`: over the `FAULT_AROUND_PAGES`-aligned window, maps clean,
    /// young (v4.2 `do_set_pte`) and `writable` each cached page whose PTE is none, but not a
    /// page marked `PG_readahead`, which is left to a fault (linux/mm/readahead.rs); `faulting`:
    /// the faulting page too (else the caller maps it). Each page mapped is a hit for the
    /// file's `mmap_miss`. Returns the cached pages visited.
    fn map_pages(
        &mut self,
        mm: MmId,
        file: u32,
        addr: u64,
        (vstart, vend): (u64, u64),
        faulting: bool,
        writable: bool,
    ) -> u64 {
        let win = FAULT_AROUND_PAGES * PAGE_SIZE;
        let (ws, we) = ((addr & !(win - 1)).max(vstart), ((addr & !(win - 1)) + win).min(vend));
        // The file page at vstart: vm_pgoff (not 0 for the upper part of a split VMA).
        let pgoff = self.mm.mms[mm as usize].vma(addr).map_or(0, |v| v.pgoff);
        let mut visited = 0;
        let mut a = ws;
        let whole = self.config.mm.fault_around == FaultAround::Folio;
        while a < we {
            let i = pgoff + ((a - vstart) >> PAGE_SHIFT);
            let folio = whole.then(|| self.mm.files[file as usize].folio(i)).flatten();
            if let Some((first, head, order)) = folio.filter(|&(_, _, o)| o > 0) {
                // v6.18: the whole folio, inside the VMA and the page table, unless marked.
                let nr = 1u64 << order;
                if !self.mm.vmscan.readahead_marked(head) {
                    let vma = (vstart, vend, pgoff);
                    visited += self.map_folio_range(mm, file, (first, head, nr), vma, a, writable);
                }
                a = vstart + ((first + nr - pgoff) << PAGE_SHIFT);
                continue;
            }
            if a != addr || faulting {
                if let Some(cached) = self.mm.files[file as usize].get(i) {
                    visited += 1;
                    if !self.mm.vmscan.readahead_marked(cached) && self.map_file_page(mm, a, cached, writable)
                    {
                        self.mm.files[file as usize].ra.mapped_around();
                    }
                }
            }
            a += PAGE_SIZE;
        }
        visited
    }

    /// Maps the pages of `file`'s folio `(first index, first frame, pages)` that lie inside the
    /// VMA `(vstart, vend, pgoff)` (mapped from `vstart` at file page `pgoff`) and the page table
    /// (2 MiB) holding `addr`, each whose PTE is none, each a hit for `mmap_miss`. Returns the
    /// pages visited.
    fn map_folio_range(
        &mut self,
        mm: MmId,
        file: u32,
        (first, head, nr): (u64, u64, u64),
        (vstart, vend, pgoff): (u64, u64, u64),
        addr: u64,
        writable: bool,
    ) -> u64 {
        const PMD_SIZE: u64 = 1 << 21;
        let table = addr & !(PMD_SIZE - 1);
        // Where the folio's first page would be mapped (before vstart if the VMA starts inside
        // the folio).
        let fstart = match first.checked_sub(pgoff) {
            Some(p) => vstart + (p << PAGE_SHIFT),
            None => vstart.saturating_sub((pgoff - first) << PAGE_SHIFT),
        };
        let lo = fstart.max(vstart).max(table);
        let hi = (fstart + (nr << PAGE_SHIFT)).min(vend).min(table + PMD_SIZE);
        let mut visited = 0;
        let mut a = lo;
        while a < hi {
            visited += 1;
            if self.map_file_page(mm, a, head + ((a - fstart) >> PAGE_SHIFT), writable) {
                self.mm.files[file as usize].ra.mapped_around();
            }
            a += PAGE_SIZE;
        }
        visited
    }

    /// v6.18 `finish_fault` after a read fault mapped its page at `addr` of `file`: the rest of
    /// its large folio inside the VMA and the page table (19773df031bc), charged as fault-around
    /// per page. Nothing in `window` mode or for a single page. Returns the time taken.
    fn finish_fault_folio(&mut self, ctx: &mut Ctx, mm: MmId, file: u32, addr: u64, writable: bool) -> Ps {
        if self.config.mm.fault_around != FaultAround::Folio {
            return Ps::ZERO;
        }
        let Some(v) = self.mm.mms[mm as usize].vma(addr) else { return Ps::ZERO };
        let (vstart, vend, pgoff) = (v.start, v.end, v.pgoff);
        let index = pgoff + ((addr - vstart) >> PAGE_SHIFT);
        let Some((first, head, order)) = self.mm.files[file as usize].folio(index) else { return Ps::ZERO };
        if order == 0 {
            return Ps::ZERO;
        }
        let visited =
            self.map_folio_range(mm, file, (first, head, 1 << order), (vstart, vend, pgoff), addr, writable);
        let d = self.costs.memory.fault_around_page * visited.saturating_sub(1);
        ctx.charge(Bucket::Fault, d);
        d
    }

    /// `do_set_pte` (v4.2) of a read fault on a file page: young, clean, `writable` as the VMA's
    /// `vm_page_prot` says ([`Kernel::vm_page_prot_writable`]), if the PTE at `addr` is still
    /// none. Returns whether it mapped.
    fn map_file_page(&mut self, mm: MmId, addr: u64, pfn: u64, writable: bool) -> bool {
        let m = &mut self.mm.mms[mm as usize];
        if m.pte(addr).unwrap().present {
            return false;
        }
        m.set_pte(addr, Pte { pfn, present: true, writable, dirty: false });
        self.mm.vmscan.mark_young(pfn);
        true
    }

    /// Whether a VMA of `backing` (`writable`: mapped with `PROT_WRITE`) keeps write permission
    /// in the PTEs a read fault installs:
    /// `vma_set_page_prot` leaves `VM_WRITE` in `vm_page_prot` for a shared writable mapping
    /// unless `vma_wants_writenotify` (a filesystem with `page_mkwrite` or dirty accounting). So
    /// on tmpfs and shmem a read fault, or fault-around, maps the page writable and clean, and
    /// the first store only sets the dirty bit; on a disk filesystem the store is a
    /// write-protect fault (mm/mmap.c, the same rule from v2.6.x to v6.18;
    /// docs/references/linux-mm.md#write-notify).
    fn vm_page_prot_writable(&self, backing: Backing, writable: bool) -> bool {
        match backing {
            Backing::FileShared(f) => writable && !self.mm.files[f as usize].writenotify,
            _ => false,
        }
    }
}
