//! The kernel model: mechanisms and kernel state, laid out as Linux's tree so that a path reads
//! as Linux's (`arch/x86/mm/tlb.rs` follows `arch/x86/mm/tlb.c`), each file naming the Linux file
//! and the kernel version it follows.
//!
//! - [`arch`]: `arch/x86` (the TLB-flush protocol of [`arch::x86::mm::tlb`], the kernel's own
//!   translations) and the MPC8xx of 2.4.0 and 2.6.12-rc2 (`arch/ppc`: the software TLB reload,
//!   the MMU as Linux drives it, dd's paths, the layouts, `/proc/tlbmiss`).
//! - [`mm`]: faults ([`mm::memory`]), the system calls on an address space ([`mm::mmap`]), the
//!   gather, the page cache and readahead, rmap, reclaim, the page allocator and SLUB.
//! - [`kernel`]: the call-function interrupt ([`kernel::smp`]), CFS and wait queues
//!   ([`kernel::sched`]), `mmap_lock`, the tick.
//! - [`fs`], [`net`], [`lib`]: pipes and file creation; loopback and AF_UNIX sockets; user copies.
//! - [`mod@include`]: the headers several subsystems share (`gfp.h`, `mmzone.h`, `mm_types.h`).
//! - At the top, the model's own files: the seam to the engine ([`ctx`]), boot-time resolution
//!   ([`boot`]), knobs and presets ([`config`], [`preset`]), per-CPU state ([`cpu`]), the frame
//!   ownership map ([`frames`]) and the safety [`oracle`] that watches it, the counters'
//!   [`vmstat`], and what a task asks of the kernel ([`syscalls`]).
//!
//! [`Kernel`] holds the state as Linux's globals do, grouped by the folder that owns it: per-CPU
//! state and TLBs, the tasks, `smp` (call queues, shootdowns in flight), `mm`
//! ([`mm::Memory`]: address spaces, the page cache, frames, the allocators, reclaim), `fs`
//! ([`fs::Fs`]), `net` ([`net::Net`]), `arch` (what only x86 or the MPC8xx keeps), the oracle
//! and the counters; each group is visible only inside `linux/`. Its methods live in the file
//! named after the Linux code they follow; they reach the engine only through [`ctx::Ctx`]. The
//! ties between subsystem folders go through `Kernel` and the root's types, as Linux's go through
//! its headers.
//!
//! A system call or fault runs as a sequence of [`Continuation`]s, continuations the engine queues per
//! CPU and hands back to the subsystem that queued them, so that other CPUs' events (IPIs above
//! all) interleave with a call's phases.

pub mod arch;
pub mod boot;
pub mod config;
pub mod cpu;
pub mod ctx;
pub mod drivers;
pub mod frames;
pub mod fs;
pub mod include;
pub mod kernel;
pub mod lib;
pub mod mm;
pub mod net;
pub mod oracle;
pub mod preset;
pub mod syscalls;
pub mod vmstat;

use config::KernelConfig;
use cpu::Cpu;
use ctx::Ctx;
use frames::Owner;
use include::linux::mm_types::{Backing, Mm, MmId, Pte, PAGE_SHIFT, PAGE_SIZE};
use kernel::sched::core::Task;
use syscalls::Op;

use crate::attribution::Bucket;
use crate::hw::tlb::TlbHierarchy;
use crate::hw::topology::Topology;
use crate::time::Ps;
use oracle::Oracle;

/// The subsystems' registration: per subsystem, its counters group (`Option` where only some
/// machines boot it; `= read` where the group is read from the subsystem's own state rather
/// than counted into the `counters` field), the `Continuation` arm it handles (`=> Arm(Step) by
/// method`) and the unit costs boot converts from the profile for it (`costs Type`, any type with
/// [`boot::FromProfile`]). Defines [`Counters`], [`Continuation`], [`Kernel::step`],
/// [`Kernel::counters()`] and [`Costs`].
macro_rules! subsystems {
    ($($(#[$doc:meta])* $f:ident: $t:ty $(= $read:path)? $(=> $arm:ident($step:ty) by $m:ident)? $(, costs $ct:ty)?;)*) => {
        /// Event counters of a run, by the kernel file that counts them.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Counters {
            $($(#[$doc])* pub $f: $t,)*
        }

        impl Counters {
            /// The window's difference; an optional group only where both ends have it.
            pub fn minus(&self, o: &Counters) -> Counters {
                Counters { $($f: vmstat::Group::minus(&self.$f, &o.$f)),* }
            }

            /// Every group's `(name, value)` pairs, subsystem by subsystem (none for an absent one).
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                let mut all = Vec::new();
                $(all.extend(vmstat::Group::fields(&self.$f));)*
                all
            }

            /// Every group (its field name here, one per subsystem) with its counters' names, the
            /// optional groups' too: reports show a zero counter only beside the others of its
            /// subsystem.
            pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
                vec![$((stringify!($f), <$t as vmstat::Group>::names())),*]
            }

            /// Every counter's name, the optional groups' too: what a report may ask for.
            pub fn names() -> Vec<&'static str> {
                let mut all = Vec::new();
                $(all.extend(<$t as vmstat::Group>::names());)*
                all
            }
        }

        /// A kernel continuation queued on a CPU, by the subsystem that handles it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Continuation {
            /// An operation of the task's program (a user access, compute, or a system call).
            User(Op),
            $($(
                #[doc = concat!("Handled by `Kernel::", stringify!($m), "` (counters: `", stringify!($f), "`).")]
                $arm($step),
            )?)*
        }

        /// Unit costs in picoseconds, converted once from the profile at boot: the hardware's,
        /// a system call's entry and exit, and each registered subsystem's (defined in its file).
        #[derive(Debug, Clone)]
        pub struct Costs {
            pub hw: boot::HwCosts,
            pub entry: syscalls::Costs,
            $($(pub $f: $ct,)?)*
        }

        impl Costs {
            /// Every registered subsystem's costs from `p`, beside the machine's `hw` and `entry`.
            fn with_subsystems(hw: boot::HwCosts, entry: syscalls::Costs, p: &crate::profile::MachineProfile) -> Costs {
                Costs { hw, entry, $($($f: <$ct as boot::FromProfile>::from_profile(p),)?)* }
            }
        }

        impl Kernel {
            /// Runs a queued continuation of task `t` in the subsystem that queued it.
            pub fn step(&mut self, ctx: &mut Ctx, t: usize, s: Continuation) -> Ps {
                match s {
                    Continuation::User(op) => self.op(ctx, t, op),
                    $($(Continuation::$arm(s) => self.$m(ctx, t, s),)?)*
                }
            }

            /// Every subsystem's counters now: what the engine reads at the window's edges.
            pub fn counters(&self) -> Counters {
                let mut c = self.counters;
                $($(c.$f = $read(self);)?)*
                c
            }
        }
    };
}

subsystems! {
    /// `flush_tlb_mm_range` and the flush handler (linux/arch/x86/mm/tlb.rs); a queued flush runs
    /// through the architecture's dispatch (linux/arch/mod.rs `flush_step`).
    tlbflush: arch::x86::mm::tlb::Counters => Flush(arch::x86::mm::tlb::Step) by flush_step,
        costs arch::x86::mm::tlb::Costs;
    /// Cross-CPU calls; continues a send loop after an interrupt (linux/kernel/smp.rs).
    smp: kernel::smp::Counters => Smp(kernel::smp::Step) by smp_step;
    /// Faults and their retries (linux/mm/memory.rs).
    memory: mm::memory::Counters => Mm(mm::memory::Step) by mm_step, costs mm::memory::Costs;
    /// The rest of a zap: forced flush, free, `tlb_finish_mmu` (linux/mm/mmu_gather.rs).
    mmu_gather: mm::mmu_gather::Counters => Gather(mm::mmu_gather::Step) by gather_step;
    /// System-call entry/exit and `mmap_lock` (linux/mm/mmap.rs).
    mmap: mm::mmap::Counters => Sys(mm::mmap::Step) by sys_step;
    sched: kernel::sched::core::Counters, costs kernel::sched::core::Costs;
    tick_sched: kernel::time::tick_sched::Counters, costs kernel::time::tick_sched::Costs;
    text: arch::x86::text::Counters;
    oracle: oracle::Counters = Kernel::oracle_counters;
    /// Page reclaim: kswapd or a direct reclaimer (linux/mm/vmscan.rs, rmap.rs).
    vmscan: mm::vmscan::Counters => Reclaim(mm::vmscan::Step) by reclaim_step;
    filemap: mm::filemap::Counters;
    /// A pipe read or write after its task slept (linux/fs/pipe.rs).
    /// Costed where the profile has `[ipc]`.
    pipe: fs::pipe::Counters => Pipe(fs::pipe::Step) by pipe_step, costs Option<fs::pipe::Costs>;
    /// An AF_UNIX send or receive after its task slept (linux/net/unix/af_unix.rs).
    /// Costed where the profile has `[ipc]`.
    af_unix: net::unix::af_unix::Counters => Unix(net::unix::af_unix::Step) by unix_step,
        costs Option<net::unix::af_unix::Costs>;
    /// The part of a file creation under its directory's lock (linux/fs/namei.rs).
    namei: fs::namei::Counters => Fs(fs::namei::Step) by fs_step;
    dcache: fs::dcache::Counters;
    ext4: fs::ext4::Counters;
    /// The page allocator (linux/mm/page_alloc.rs); not on the MPC8xx.
    page_alloc: Option<mm::page_alloc::Counters> = Kernel::page_alloc_counters;
    /// Per-VMA lock faults (linux/mm/memory.rs), where the kernel has them (v6.4+).
    vma_lock: Option<mm::memory::VmaLockCounters> = Kernel::vma_lock_counters;
    /// SLUB (linux/mm/slub.rs), where the profile has `[slab]`.
    slab: Option<mm::slub::Counters> = Kernel::slab_counters;
    /// A socket call's body and the loopback delivery (linux/net/socket.rs), where booted.
    net: Option<net::socket::Counters> = Kernel::socket_counters => Net(net::socket::Step) by socket_step;
    /// `mm_cpumask` upkeep (linux/arch/x86/mm/tlb.rs), where the kernel models v6.14's lazy mask
    /// or the mask's line.
    cpumask: Option<arch::x86::mm::tlb::MaskCounters> = Kernel::cpumask_counters;
    /// EEVDF's delayed dequeue (linux/kernel/sched/fair/delay.rs), where the kernel has it (v6.12+).
    sched_delay: Option<kernel::sched::fair::delay::Counters> = Kernel::delay_counters;
    /// Swap to zram (linux/mm/shmem.rs), where a workload maps shmem; costed where the profile
    /// has `[swap]`.
    swap: Option<mm::shmem::Counters> = Kernel::swap_counters, costs Option<mm::shmem::Costs>;
    /// Whole-page writes to tmpfs (linux/mm/shmem.rs), where a workload made a tmpfs file to
    /// write; costed where the profile has `fs.tmpfs_write_cycles`.
    shmem_write: Option<mm::shmem::WriteCounters> = Kernel::shmem_write_counters,
        costs Option<mm::shmem::WriteCosts>;
    /// Page migration (linux/mm/migrate.rs), where a workload moves pages.
    migrate: Option<mm::migrate::Counters> = Kernel::migrate_counters => Migrate(mm::migrate::Step) by migrate_step;
    /// Broadcast TLBIs, DSBs and ASIDs (linux/arch/arm64), on an arm64 kernel.
    arm64: Option<arch::arm64::Counters> = Kernel::arm64_counters;
    /// The MPC8xx's `/proc/tlbmiss` (linux/arch/ppc/tlbmiss.rs), on a software-loaded TLB.
    tlbmiss: Option<arch::ppc::tlbmiss::Counters> = Kernel::tlbmiss;
}

/// The kernel: its state, its costs (resolved from the machine profile at boot) and counters.
pub struct Kernel {
    // The machine as the kernel sees it, and its configuration.
    pub(in crate::linux) topo: Topology,
    /// The sockets' LLC capacity and DRAM bandwidth (hw/uncore.rs), where the profile has an
    /// `[uncore]` section.
    pub(in crate::linux) uncore: Option<crate::hw::uncore::Uncore>,
    costs: Costs,
    pub(in crate::linux) config: KernelConfig,
    pub(crate) cpus: Vec<Cpu>,
    /// Per core, its TLBs (hw/tlb: the SMT siblings' per-core structures are shared arrays);
    /// `cpus[c].core` and `cpus[c].lp` say whose and which logical processor.
    pub(in crate::linux) tlbs: Vec<TlbHierarchy>,
    // kernel/: cross-CPU calls and the scheduler's tasks.
    /// The call queues and the shootdowns in flight (linux/kernel/smp.rs).
    pub(in crate::linux) smp: kernel::smp::Smp,
    pub(crate) tasks: Vec<Task>,
    /// `jiffies` (linux/kernel/time/jiffies.rs).
    pub(in crate::linux) jiffies: kernel::time::jiffies::Jiffies,
    /// mm/: address spaces, the page cache, frames, the allocators and reclaim.
    pub(in crate::linux) mm: mm::Memory,
    /// fs/: file creation and pipes.
    pub(in crate::linux) fs: fs::Fs,
    /// net/: loopback and AF_UNIX sockets.
    pub(in crate::linux) net: net::Net,
    // arch/: what only one architecture's kernel keeps.
    pub(in crate::linux) arch: arch::Arch,
    // The model's own: the safety oracle and the counters.
    pub(in crate::linux) oracle: Oracle,
    /// The counters subsystems count into as events happen; the groups read from a subsystem's
    /// own state are filled in by [`Kernel::counters()`].
    pub(in crate::linux) counters: Counters,
}

impl Kernel {
    pub fn nr_cpus(&self) -> u32 {
        self.topo.cpus()
    }

    /// A new, empty address space.
    pub fn add_mm(&mut self) -> MmId {
        let id = self.mm.mms.len() as MmId;
        let mut m = Mm::new(id, self.mm.next_ctx_id);
        // mm_init -> init_new_context (v6.14): the first trim a second after creation; the
        // workloads create their address spaces at time zero.
        m.next_trim_cpumask = self.jiffies.at(Ps::ZERO) + self.jiffies.hz;
        self.mm.mms.push(m);
        self.mm.next_ctx_id += 1;
        id
    }

    /// Maps `len` bytes of anonymous memory in `mm`, every page present and written, at no
    /// simulated time: what a benchmark's untimed setup leaves behind (ebizzy's main thread fills
    /// its chunks before it lets the workers go). Returns the start address.
    pub fn map_populated(&mut self, mm: MmId, len: u64) -> u64 {
        let start = self.mm.mms[mm as usize].mmap(len, Backing::Anon, true);
        // The faults that filled it gave it its anon_vma.
        self.mm.mms[mm as usize].anon_vma_prepare(start);
        let mut a = start;
        while a < start + len {
            let pfn = self.alloc_frame_untimed(0, Ps::ZERO, Owner::Anon { mm, vpn: a >> PAGE_SHIFT });
            self.mm.mms[mm as usize].set_pte(a, Pte { pfn, present: true, writable: true, dirty: true });
            a += PAGE_SIZE;
        }
        start
    }

    /// Runs `f` outside simulated time: a workload's setup building the steady state its run
    /// starts from through the kernel's own paths. What `f` changes stays; the clocks of the
    /// locks those paths take (`zone->lock` and its data line, SLUB's `list_lock`s, pipe mutexes,
    /// AF_UNIX state locks) are put back, so the run finds them free as if no time had passed.
    pub fn untimed<R>(&mut self, f: impl FnOnce(&mut Kernel) -> R) -> R {
        let zones = self.mm.page_alloc.as_ref().map(|a| a.timings());
        let slab = self.mm.slab.as_ref().map(|s| s.lock_timings());
        let pipes: Vec<_> = self.fs.pipes.iter().map(|p| p.mutex.timing()).collect();
        let unix: Vec<_> = self.net.unix.iter().map(|u| u.lock.timing()).collect();
        let r = f(self);
        if let (Some(a), Some(t)) = (self.mm.page_alloc.as_mut(), zones) {
            a.rewind(t);
        }
        if let (Some(s), Some(t)) = (self.mm.slab.as_mut(), slab) {
            s.rewind_locks(t);
        }
        for (p, t) in self.fs.pipes.iter_mut().zip(pipes) {
            p.mutex.rewind(t);
        }
        for (u, t) in self.net.unix.iter_mut().zip(unix) {
            u.lock.rewind(t);
        }
        r
    }

    /// Whether `cpu` runs a task.
    pub fn has_task(&self, cpu: u32) -> bool {
        self.cpus[cpu as usize].task.is_some()
    }

    /// Whether `cpu` spins for shootdown acknowledgements (its idle time is IPI wait).
    pub fn waiting(&self, cpu: u32) -> bool {
        self.cpus[cpu as usize].waiting.is_some()
    }

    /// Whether `cpu`, its step over, keeps spinning until an acknowledgement or an interrupt
    /// wakes it: it waits on a shootdown with acknowledgements pending, outside the handler.
    pub fn spinning(&self, cpu: u32) -> bool {
        let c = &self.cpus[cpu as usize];
        c.waiting.is_some_and(|sd| self.smp.shootdowns[sd].pending > 0) && !c.in_irq
    }

    /// Records `d` of `cpu`'s current step as a memory stall (a cache-line transfer, or a wait
    /// for one to land) and returns it: time the step charges to an execution bucket but that an
    /// SMT sibling does not stretch (hw/smt.rs, docs/references/machine-costs.md#smt-sharing).
    pub(crate) fn stall(&mut self, cpu: u32, d: Ps) -> Ps {
        self.cpus[cpu as usize].stall += d;
        d
    }

    /// A wait on memory inside a system call on this CPU: charged to the call and recorded as a
    /// stall ([`Kernel::stall`]). Returns it.
    pub(in crate::linux) fn call_stall(&mut self, ctx: &mut Ctx, d: Ps) -> Ps {
        ctx.charge(Bucket::Syscall, d);
        self.stall(ctx.cpu, d)
    }

    /// The memory stalls `cpu` recorded since the last call ([`Kernel::stall`]).
    pub fn take_stall(&mut self, cpu: u32) -> Ps {
        std::mem::take(&mut self.cpus[cpu as usize].stall)
    }

    /// Inside the call-function interrupt handler.
    pub fn in_irq(&self, cpu: u32) -> bool {
        self.cpus[cpu as usize].in_irq
    }

    fn reg_addr(&self, t: usize, a: syscalls::Addr) -> u64 {
        self.tasks[t].regs[a.reg] + a.offset
    }

    /// An operation of task `t`'s program (not `Iteration`, which the engine counts): a user
    /// access or compute, or a system call. Returns its duration.
    pub fn op(&mut self, ctx: &mut Ctx, t: usize, op: Op) -> Ps {
        match op {
            Op::Access { addr, kind } => {
                let va = self.reg_addr(t, addr);
                self.access(ctx, t, va, kind)
            }
            Op::Compute(d) => {
                ctx.irqs_on();
                ctx.charge(Bucket::User, d);
                d
            }
            Op::Stream { core, bytes, src, src_len, dst, dst_len } => {
                ctx.irqs_on();
                ctx.charge(Bucket::User, core);
                if self.uncore.is_some() {
                    let mm = (self.tasks[t].user_mm() as u64) << 48;
                    let region =
                        |a, len| crate::hw::uncore::Region { key: mm ^ self.reg_addr(t, a), bytes: len };
                    let (s, d) = (region(src, src_len), region(dst, dst_len));
                    let (cpu, socket) = (ctx.cpu, self.topo.socket_of(ctx.cpu));
                    let u = self.uncore.as_mut().unwrap();
                    u.hold(cpu, socket, crate::hw::uncore::SRC, Some(s));
                    u.hold(cpu, socket, crate::hw::uncore::DST, Some(d));
                }
                core + self.bulk(ctx, ctx.now, bytes, core)
            }
            Op::CreateFile { pages, reg, cached, tmpfs } => {
                self.create_file(ctx, t, pages, reg, (cached, tmpfs))
            }
            Op::Mmap { .. }
            | Op::Munmap { .. }
            | Op::MadviseDontneed { .. }
            | Op::MadvisePageout { .. }
            | Op::MovePages { .. } => self.syscall(ctx, t, op),
            Op::Ppc8xx(op) => self.op_8xx(ctx, op),
            Op::Kswapd => self.kswapd(ctx, t),
            Op::PipeWrite { pipe, len } => self.pipe_write(ctx, t, pipe, len),
            Op::PipeRead { pipe, len } => self.pipe_read(ctx, t, pipe, len),
            Op::UnixSend { pair, len } => self.unix_send(ctx, t, pair, len),
            Op::UnixRecv { pair, len } => self.unix_recv(ctx, t, pair, len),
            Op::Send { .. } | Op::Recv { .. } => self.socket_call(ctx, op),
            Op::FsCreate { dir, name_len } => self.fs_create(ctx, t, dir, name_len),
            Op::FsMkdirExists { dir } => self.fs_mkdir_exists(ctx, t, dir),
            Op::FsWriteEmpty => self.fs_write_empty(ctx),
            Op::FsClose => self.fs_close(ctx, t),
            Op::ReadZero => self.read_zero_page(ctx),
            Op::TmpfsWrite { file, index } => self.shmem_write_page(ctx, file, index),
            Op::Iteration => unreachable!("counted by the engine"),
        }
    }

    /// A bulk transfer of `bytes` (reads plus writes) from `at` that takes `core` on this CPU
    /// alone: the time it waits beyond `core` for the socket's DRAM (hw/uncore.rs), charged to
    /// [`Bucket::MemWait`]. Without an `[uncore]` section, none.
    pub(in crate::linux) fn bulk(&mut self, ctx: &mut Ctx, at: Ps, bytes: u64, core: Ps) -> Ps {
        let Some(u) = self.uncore.as_mut() else { return Ps::ZERO };
        let w = u.transfer(self.topo.socket_of(ctx.cpu), at, bytes, core);
        if w > Ps::ZERO {
            ctx.charge(Bucket::MemWait, w);
        }
        w
    }

    /// As [`Kernel::bulk`] for a transfer whose bytes all go to DRAM (a page fresh from the
    /// buddy lists: hw/uncore.rs `transfer_dram`).
    pub(in crate::linux) fn bulk_dram(&mut self, ctx: &mut Ctx, at: Ps, bytes: u64, core: Ps) -> Ps {
        let Some(u) = self.uncore.as_mut() else { return Ps::ZERO };
        let w = u.transfer_dram(self.topo.socket_of(ctx.cpu), at, bytes, core);
        if w > Ps::ZERO {
            ctx.charge(Bucket::MemWait, w);
        }
        w
    }

    /// What `cpu` does at an operation boundary before its next continuation or operation:
    /// finish waiting on a shootdown, schedule, preempt, flush the user PCID on the way out.
    pub fn boundary(&mut self, ctx: &mut Ctx) -> Boundary {
        if let Some(wait) = self.csd_wait(ctx) {
            return wait;
        }
        let cpu = ctx.cpu;
        let Some(t) = self.cpus[cpu as usize].task else {
            // Still on its way out of idle after a wake-up's interrupt: nothing runs yet.
            let exit = self.cpus[cpu as usize].out_of_idle;
            if ctx.now < exit {
                return Boundary::At(exit);
            }
            return match self.pick_next(cpu, ctx.now) {
                Some(next) => Boundary::Ran(self.switch_to(ctx, next, ctx.now)),
                None => Boundary::Idle,
            };
        };
        if ctx.in_user() {
            if let Some(d) = self.preempt(ctx, t) {
                return Boundary::Ran(d);
            }
            if let Some(d) = self.return_to_user(ctx) {
                return Boundary::Ran(d);
            }
        }
        Boundary::Task(t)
    }

    /// The address spaces, by id.
    pub fn mms(&self) -> &[Mm] {
        &self.mm.mms
    }

    /// Who owns each page frame.
    pub fn frames(&self) -> &frames::Frames {
        &self.mm.frames
    }

    /// The pipes, by id.
    pub fn pipes(&self) -> &[fs::pipe::Pipe] {
        &self.fs.pipes
    }

    /// The AF_UNIX stream pairs, by id.
    pub fn unix_pairs(&self) -> &[net::unix::af_unix::UnixPair] {
        &self.net.unix
    }

    /// The page allocator, where booted: what a workload sizes its memory from.
    pub fn page_alloc(&self) -> Option<&mm::page_alloc::PageAlloc> {
        self.mm.page_alloc.as_ref()
    }

    /// The flush knobs in force, with a table-derived shift resolved for this machine.
    pub fn effective_knobs(&self) -> config::Knobs {
        let mut k = self.config.knobs();
        k.flush.policy = self.arch.x86.policy;
        k
    }

    /// The page allocator's counters for reports.
    pub fn vma_lock_counters(&self) -> Option<mm::memory::VmaLockCounters> {
        self.config.mm.fault_lock.per_vma().then_some(self.mm.vma_lock)
    }

    pub fn page_alloc_counters(&self) -> Option<mm::page_alloc::Counters> {
        self.mm.page_alloc.as_ref().map(|a| {
            let mut c = a.stats.counters();
            c.slab_pages = self.mm.slab.as_ref().map_or(0, |s| s.counters().slab_pages_allocated);
            c
        })
    }

    /// The `mm_cpumask` counters, where the configuration models the mask beyond v6.13's eager
    /// bits (so results of the kernels before it keep their counters as they were).
    pub fn cpumask_counters(&self) -> Option<arch::x86::mm::tlb::MaskCounters> {
        let f = &self.config.flush;
        (!f.cpumask.is_eager() || f.cpumask_line).then_some(self.arch.x86.mask)
    }

    /// SLUB's counters for reports, on a machine that boots it.
    pub fn slab_counters(&self) -> Option<mm::slub::Counters> {
        self.mm.slab.as_ref().map(|s| s.counters())
    }

    /// The oracle's findings as counters.
    pub fn oracle_counters(&self) -> oracle::Counters {
        oracle::Counters { oracle_violations: self.oracle.violations }
    }

    /// Violations found and the first few, described.
    pub fn oracle_report(&self) -> (u64, Vec<String>) {
        (self.oracle.violations, self.oracle.examples.clone())
    }

    /// The MPC8xx machine, on a software-loaded-TLB profile: dd's setup installs its text layout.
    pub fn ppc8xx_mut(&mut self) -> Option<&mut arch::ppc::mm::mmu_8xx::Machine8xx> {
        self.arch.ppc8xx.as_deref_mut()
    }

    /// The MPC8xx TLB-miss counters (linux/arch/ppc/tlbmiss.rs), on a software-loaded-TLB machine.
    pub fn tlbmiss(&self) -> Option<arch::ppc::tlbmiss::Counters> {
        self.arch.ppc8xx.as_ref().map(|m| m.counters)
    }
}

/// What a CPU does at an operation boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// Spins for acknowledgements: nothing until one (or an interrupt) wakes it.
    Spin,
    /// Waits until the given time (its own flush or the last acknowledgement lands then).
    At(Ps),
    /// Nothing to run.
    Idle,
    /// Did kernel work (a context switch, a deferred flush) that took this long.
    Ran(Ps),
    /// Task `t` goes on: its next continuation, or its program's next operation.
    Task(usize),
}
