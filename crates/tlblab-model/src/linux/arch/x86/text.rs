//! The kernel's own translations: which pages of kernel code and data each path of the model
//! executes, so that a flush that drops kernel entries, or user pages that push them out, cost
//! the refills they cause (docs/design.md#hardware: a layout, not a fudge
//! factor).
//!
//! Whether kernel entries survive a full flush is the part that matters for the shootdown paths
//! (v4.15+ arch/x86/mm/pti.c and arch/x86/mm/init.c, unchanged through v6.18):
//! - without PTI every kernel mapping is global: a CR3 write leaves it cached;
//! - with PTI `__default_kernel_pte_mask` drops `_PAGE_GLOBAL`, so the direct map, vmalloc
//!   (kernel stacks) and module space are non-global, tagged with the kernel PCID, and each
//!   flushing CR3 write drops them;
//! - the kernel image (text, rodata) stays global under PTI only when
//!   `pti_kernel_image_global_ok()`, which is false on any CPU with PCID ("systems with PCIDs
//!   get little benefit from global kernel text").
//!
//! The layout: x86-64 maps the kernel image with 2 MiB pages and the direct map with 1 GiB pages
//! where the CPU has them (`direct_gbpages`); kernel stacks are vmalloc'ed 4 KiB pages
//! (`CONFIG_VMAP_STACK`, v4.9+). Function addresses come from [`LAYOUT`].

use crate::attribution::Bucket;
use crate::hw::tlb::{Access, AccessKind, L1Way, Lookup, PageSize, TlbPayload, Translation};
use crate::linux::ctx::Ctx;
use crate::linux::include::linux::mm_types::PAGE_SHIFT;
use crate::linux::Kernel;
use crate::time::Ps;

crate::linux::vmstat::counters! {
    /// The kernel's own translations, counted.
    Counters {
        /// Kernel code/data translations that missed every TLB level.
        kernel_tlb_misses,
    }
}

/// Function and section addresses of one kernel build, from its `/proc/kallsyms`.
pub struct Layout {
    pub name: &'static str,
    pub source: &'static str,
    pub symbols: &'static [(&'static str, u64)],
}

/// The only measured layout: the host this project was built on. v5.18 moved little of this
/// around (same link order: entry text first, then arch/, kernel/, mm/; the noinstr, sched and
/// locking sections at the end of .text), so it stands in for the v3.x-v5.18 kernels of the
/// seeds; a layout of each seed's own build would replace it.
pub const LAYOUT: Layout = Layout {
    name: "linux-6.18.44-x86_64-kvm",
    source: "/proc/kallsyms of Linux 6.18.44 (x86-64, KVM guest on AMD EPYC Zen 4), read 2026-11-22 \
             as root (kptr_restrict 0, no KASLR offset); _stext 0xffffffff81000000, _etext \
             0xffffffff8220bb08, __start_rodata 0xffffffff82400000; the tick path's symbols read from the \
             same kernel 2026-11-24",
    symbols: &[
        ("_stext", 0xffff_ffff_8100_0000),
        ("entry_SYSCALL_64", 0xffff_ffff_8100_0080),
        ("asm_exc_page_fault", 0xffff_ffff_8100_0c60),
        ("asm_sysvec_apic_timer_interrupt", 0xffff_ffff_8100_0df0),
        ("asm_sysvec_call_function", 0xffff_ffff_8100_0e90),
        ("__switch_to_asm", 0xffff_ffff_8124_8f60),
        ("__switch_to", 0xffff_ffff_812f_c910),
        ("__x64_sys_mmap", 0xffff_ffff_8130_5a70),
        ("__sysvec_call_function", 0xffff_ffff_8132_6f60),
        ("__sysvec_apic_timer_interrupt", 0xffff_ffff_8132_7fb0),
        ("switch_mm_irqs_off", 0xffff_ffff_8134_4020),
        ("flush_tlb_func", 0xffff_ffff_8134_44a0),
        ("native_flush_tlb_multi", 0xffff_ffff_8134_4b20),
        ("flush_tlb_mm_range", 0xffff_ffff_8134_4cb0),
        ("irq_exit_rcu", 0xffff_ffff_8136_2ce0),
        ("sched_tick", 0xffff_ffff_813a_9150),
        ("task_tick_fair", 0xffff_ffff_813b_3f40),
        ("account_process_tick", 0xffff_ffff_813c_8940),
        ("up_write", 0xffff_ffff_813d_f9d0),
        ("up_read", 0xffff_ffff_813d_fa30),
        ("rcu_sched_clock_irq", 0xffff_ffff_8140_9ac0),
        ("update_process_times", 0xffff_ffff_8141_dcc0),
        ("__hrtimer_run_queues", 0xffff_ffff_8141_eac0),
        ("hrtimer_interrupt", 0xffff_ffff_8141_f840),
        ("tick_nohz_handler", 0xffff_ffff_8143_32e0),
        ("smp_call_function_many_cond", 0xffff_ffff_8144_27c0),
        ("__flush_smp_call_function_queue", 0xffff_ffff_8144_2e60),
        ("filemap_map_pages", 0xffff_ffff_8158_e5e0),
        ("folios_put_refs", 0xffff_ffff_815a_30e0),
        ("vm_mmap_pgoff", 0xffff_ffff_815b_b910),
        ("lock_vma_under_rcu", 0xffff_ffff_815d_e790),
        ("free_pgtables", 0xffff_ffff_815e_2750),
        ("unmap_page_range", 0xffff_ffff_815e_31f0),
        ("zap_page_range_single", 0xffff_ffff_815e_4ab0),
        ("do_wp_page", 0xffff_ffff_815e_4f50),
        ("do_fault", 0xffff_ffff_815e_6b60),
        ("do_anonymous_page", 0xffff_ffff_815e_bb90),
        ("__handle_mm_fault", 0xffff_ffff_815e_da60),
        ("handle_mm_fault", 0xffff_ffff_815e_e9b0),
        ("ksys_mmap_pgoff", 0xffff_ffff_815f_2c00),
        ("do_mmap", 0xffff_ffff_815f_3870),
        ("__x64_sys_munmap", 0xffff_ffff_815f_4b80),
        ("tlb_gather_mmu", 0xffff_ffff_815f_65b0),
        ("tlb_finish_mmu", 0xffff_ffff_815f_67e0),
        ("unmap_region", 0xffff_ffff_8161_0870),
        ("do_vmi_munmap", 0xffff_ffff_8161_20d0),
        ("mmap_region", 0xffff_ffff_8161_36a0),
        ("__vm_munmap", 0xffff_ffff_8161_4170),
        ("free_unref_folios", 0xffff_ffff_8161_da60),
        ("get_page_from_freelist", 0xffff_ffff_8161_e9c0),
        ("__alloc_frozen_pages_noprof", 0xffff_ffff_8162_15e0),
        ("do_madvise", 0xffff_ffff_8163_e0c0),
        ("__x64_sys_madvise", 0xffff_ffff_8163_e210),
        ("free_pages_and_swap_cache", 0xffff_ffff_8164_05f0),
        ("alloc_pages_mpol", 0xffff_ffff_8165_ad50),
        ("vma_alloc_folio_noprof", 0xffff_ffff_8165_dcc0),
        ("clear_page_erms", 0xffff_ffff_821e_b0e0),
        ("copy_page", 0xffff_ffff_821e_b620),
        ("do_syscall_64", 0xffff_ffff_821e_f620),
        ("sysvec_apic_timer_interrupt", 0xffff_ffff_821f_24f0),
        ("sysvec_call_function", 0xffff_ffff_821f_4550),
        ("exc_page_fault", 0xffff_ffff_821f_5050),
        ("__schedule", 0xffff_ffff_821f_a6c0),
        ("down_read", 0xffff_ffff_821f_f4b0),
        ("rwsem_down_write_slowpath", 0xffff_ffff_821f_f760),
        ("down_write", 0xffff_ffff_821f_fe30),
        ("__start_rodata", 0xffff_ffff_8240_0000),
    ],
};

/// The direct map's base (`__PAGE_OFFSET_BASE_L4`, 4-level paging, no KASLR); every slab object
/// and per-CPU variable of the model lives in its first gigabyte.
const DIRECT_MAP: u64 = 0xffff_8880_0000_0000;
/// `VMALLOC_START` (4-level paging, no KASLR): the kernel stacks.
const VMALLOC: u64 = 0xffff_c900_0000_0000;
/// `THREAD_SIZE` on x86-64 (16 KiB) plus the guard page vmalloc leaves after each area.
const STACK_STRIDE: u64 = 5 << 12;

/// A path of kernel code the model runs, named after its entry point (v5.18 call chains).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// `entry_SYSCALL_64` -> `do_syscall_64` -> the syscall table.
    SyscallEntry,
    /// Back through `do_syscall_64`'s exit work and `entry_SYSCALL_64`'s return.
    SyscallExit,
    /// `madvise(MADV_DONTNEED)`: `do_madvise` -> `zap_page_range_single` -> `unmap_page_range`,
    /// inside `tlb_gather_mmu` / `tlb_finish_mmu`, under `down_read`.
    Madvise,
    /// `munmap`: `__vm_munmap` -> `do_vmi_munmap` -> `unmap_region` (`unmap_page_range`,
    /// `free_pgtables`), under `down_write`.
    Munmap,
    /// `mmap`: `ksys_mmap_pgoff` -> `vm_mmap_pgoff` -> `do_mmap` -> `mmap_region`.
    Mmap,
    /// `release_pages` of a gather: `free_pages_and_swap_cache` -> `folios_put_refs` ->
    /// `free_unref_folios`.
    FreePages,
    /// `asm_exc_page_fault` -> `exc_page_fault` -> `lock_vma_under_rcu` -> `handle_mm_fault` ->
    /// the fault kinds, the allocator and `clear_page` / `copy_page`, and back.
    Fault,
    /// `flush_tlb_mm_range` -> `native_flush_tlb_multi` -> `smp_call_function_many_cond`, and
    /// the local `flush_tlb_func`.
    FlushInitiator,
    /// `asm_sysvec_call_function` -> `sysvec_call_function` -> `__sysvec_call_function` ->
    /// `__flush_smp_call_function_queue`.
    IrqEntry,
    /// One request of the queue: `flush_tlb_func` on the sender's `flush_tlb_info`, then back
    /// in `__flush_smp_call_function_queue` for `csd_unlock`.
    FlushFunc,
    /// `irq_exit_rcu`, then back out through the entry code.
    IrqExit,
    /// `__schedule` -> `switch_mm_irqs_off` -> `__switch_to_asm` / `__switch_to`.
    ContextSwitch,
    /// The scheduler tick: `asm_sysvec_apic_timer_interrupt` -> `hrtimer_interrupt` ->
    /// `tick_nohz_handler` (v5.18: `tick_sched_timer`) -> `update_process_times` ->
    /// `sched_tick` (v5.18: `scheduler_tick`) and `rcu_sched_clock_irq`, then `irq_exit_rcu`.
    Tick,
}

pub const NR_PATHS: usize = 13;

impl Path {
    pub const ALL: [Path; NR_PATHS] = [
        Path::SyscallEntry,
        Path::SyscallExit,
        Path::Madvise,
        Path::Munmap,
        Path::Mmap,
        Path::FreePages,
        Path::Fault,
        Path::FlushInitiator,
        Path::IrqEntry,
        Path::FlushFunc,
        Path::IrqExit,
        Path::ContextSwitch,
        Path::Tick,
    ];

    /// The functions the path runs, in order, and the data it touches.
    fn steps(self) -> &'static [PathStep] {
        use PathStep::{Data, Rodata, Stack, Text};
        match self {
            Path::SyscallEntry => &[Text("entry_SYSCALL_64"), Stack, Text("do_syscall_64"), Rodata, Data],
            Path::SyscallExit => &[Text("do_syscall_64"), Stack, Text("entry_SYSCALL_64")],
            Path::Madvise => &[
                Text("__x64_sys_madvise"),
                Text("do_madvise"),
                Text("down_read"),
                Text("zap_page_range_single"),
                Text("tlb_gather_mmu"),
                Text("unmap_page_range"),
                Data,
                Text("tlb_finish_mmu"),
                Text("up_read"),
            ],
            Path::Munmap => &[
                Text("__x64_sys_munmap"),
                Text("__vm_munmap"),
                Text("down_write"),
                Text("do_vmi_munmap"),
                Text("unmap_region"),
                Text("unmap_page_range"),
                Text("free_pgtables"),
                Data,
                Text("tlb_finish_mmu"),
                Text("up_write"),
            ],
            Path::Mmap => &[
                Text("__x64_sys_mmap"),
                Text("ksys_mmap_pgoff"),
                Text("vm_mmap_pgoff"),
                Text("down_write"),
                Text("do_mmap"),
                Text("mmap_region"),
                Data,
                Text("up_write"),
            ],
            Path::FreePages => {
                &[Text("free_pages_and_swap_cache"), Text("folios_put_refs"), Text("free_unref_folios"), Data]
            }
            Path::Fault => &[
                Text("asm_exc_page_fault"),
                Stack,
                Text("exc_page_fault"),
                Text("lock_vma_under_rcu"),
                Data,
                Text("handle_mm_fault"),
                Text("__handle_mm_fault"),
                Text("do_anonymous_page"),
                Text("vma_alloc_folio_noprof"),
                Text("alloc_pages_mpol"),
                Text("get_page_from_freelist"),
                Text("clear_page_erms"),
                Text("asm_exc_page_fault"),
            ],
            Path::FlushInitiator => &[
                Text("flush_tlb_mm_range"),
                Data,
                Text("native_flush_tlb_multi"),
                Text("smp_call_function_many_cond"),
                Text("flush_tlb_func"),
            ],
            Path::IrqEntry => &[
                Text("asm_sysvec_call_function"),
                Stack,
                Text("sysvec_call_function"),
                Text("__sysvec_call_function"),
                Text("__flush_smp_call_function_queue"),
                Data,
            ],
            Path::FlushFunc => {
                &[Text("__flush_smp_call_function_queue"), Text("flush_tlb_func"), Data, Stack]
            }
            Path::IrqExit => {
                &[Text("irq_exit_rcu"), Text("sysvec_call_function"), Stack, Text("asm_sysvec_call_function")]
            }
            Path::ContextSwitch => &[
                Text("__schedule"),
                Stack,
                Text("switch_mm_irqs_off"),
                Data,
                Text("__switch_to_asm"),
                Text("__switch_to"),
            ],
            Path::Tick => &[
                Text("asm_sysvec_apic_timer_interrupt"),
                Stack,
                Text("sysvec_apic_timer_interrupt"),
                Text("__sysvec_apic_timer_interrupt"),
                Text("hrtimer_interrupt"),
                Text("__hrtimer_run_queues"),
                Text("tick_nohz_handler"),
                Text("update_process_times"),
                Text("account_process_tick"),
                Text("sched_tick"),
                Text("task_tick_fair"),
                Data,
                Text("rcu_sched_clock_irq"),
                Text("irq_exit_rcu"),
                Text("asm_sysvec_apic_timer_interrupt"),
            ],
        }
    }
}

/// One element of a path.
#[derive(Debug, Clone, Copy)]
enum PathStep {
    /// An instruction fetch in the named function.
    Text(&'static str),
    /// A read of the kernel image's read-only data (the syscall table).
    Rodata,
    /// Slab objects and per-CPU data in the direct map (task, mm, VMAs, `cpu_tlbstate`, csds).
    Data,
    /// The running task's kernel stack.
    Stack,
}

/// Where a touch goes: a fixed page, or the running task's stack page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Fixed(u64),
    Stack,
}

/// One translation a path needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    pub at: At,
    pub kind: AccessKind,
    pub size: PageSize,
    pub global: bool,
    /// A fixed page's [`L1Way::page_key`] (0 for the stack), which [`KTouchWay`] is checked against.
    pub page: u64,
}

/// How the kernel maps itself on one machine and kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// Page-table isolation is on.
    pub pti: bool,
    /// The CPU has PCIDs (and the kernel uses them).
    pub pcid: bool,
    /// The direct map uses 1 GiB pages (the CPU has them and a data TLB caches them).
    pub gbpages: bool,
}

impl Mapping {
    /// The kernel image's entries are global (v4.15+ `pti_kernel_image_global_ok`, pti=auto).
    pub fn image_global(self) -> bool {
        !self.pti || !self.pcid
    }

    /// Everything else the kernel maps is global only without PTI (`__default_kernel_pte_mask`).
    pub fn other_global(self) -> bool {
        !self.pti
    }
}

/// Every path's touches, each page once, in first-touch order.
#[derive(Debug, Clone)]
pub struct KernelText {
    paths: [Vec<Touch>; NR_PATHS],
    /// Per path, per touch: its index among the distinct touches of every path (several paths
    /// run on the same pages), where a CPU keeps its level-1 way ([`KTouchWay`]).
    ids: [Vec<u8>; NR_PATHS],
    /// Per path: no two of its touches are on the same page (address and size), so a touch
    /// never finds an entry an earlier touch of the same run of the path filled.
    distinct: [bool; NR_PATHS],
}

impl KernelText {
    pub fn new(layout: &Layout, map: Mapping) -> KernelText {
        let addr = |f: &str| {
            layout
                .symbols
                .iter()
                .find(|s| s.0 == f)
                .unwrap_or_else(|| panic!("{f} is not in kernel layout {}", layout.name))
                .1
        };
        let image = |va: u64, kind| Touch {
            at: At::Fixed(va & !((1 << 21) - 1)),
            kind,
            size: PageSize::Size2M,
            global: map.image_global(),
            page: L1Way::page_key(va, PageSize::Size2M),
        };
        let size = if map.gbpages { PageSize::Size1G } else { PageSize::Size2M };
        let data = Touch {
            at: At::Fixed(DIRECT_MAP),
            kind: AccessKind::Load,
            size,
            global: false,
            page: L1Way::page_key(DIRECT_MAP, size),
        };
        let data = Touch { global: map.other_global(), ..data };
        let stack = Touch {
            at: At::Stack,
            kind: AccessKind::Store,
            size: PageSize::Size4K,
            global: map.other_global(),
            page: 0,
        };
        let paths = Path::ALL.map(|p| {
            let mut v: Vec<Touch> = Vec::new();
            for s in p.steps() {
                let t = match *s {
                    PathStep::Text(f) => image(addr(f), AccessKind::Fetch),
                    PathStep::Rodata => image(addr("__start_rodata"), AccessKind::Load),
                    PathStep::Data => data,
                    PathStep::Stack => stack,
                };
                if !v.contains(&t) {
                    v.push(t);
                }
            }
            v
        });
        let mut distinct: Vec<Touch> = Vec::new();
        let ids = std::array::from_fn(|p| {
            paths[p]
                .iter()
                .map(|t| {
                    let i = distinct.iter().position(|d| d == t).unwrap_or_else(|| {
                        distinct.push(*t);
                        distinct.len() - 1
                    });
                    assert!(
                        i < MAX_TOUCHES,
                        "kernel layout {}: more than {MAX_TOUCHES} distinct touches",
                        layout.name
                    );
                    i as u8
                })
                .collect()
        });
        let distinct = std::array::from_fn(|p| {
            let v: &Vec<Touch> = &paths[p];
            v.iter().enumerate().all(|(i, t)| v[..i].iter().all(|u| (u.at, u.size) != (t.at, t.size)))
        });
        KernelText { paths, ids, distinct }
    }

    /// Whether `p`'s touches are on distinct pages (see [`KernelText::distinct`]).
    pub fn distinct_pages(&self, p: Path) -> bool {
        self.distinct[p as usize]
    }

    pub fn touches(&self, p: Path) -> &[Touch] {
        &self.paths[p as usize]
    }

    /// The distinct-touch index of each of `p`'s touches (see [`KernelText::ids`]).
    pub fn touch_ids(&self, p: Path) -> &[u8] {
        &self.ids[p as usize]
    }

    /// The top page of task `slot`'s kernel stack (where `pt_regs` and the shallow frames
    /// live); the idle task of CPU `c` uses slot `tasks + c`.
    pub fn stack_page(slot: usize) -> u64 {
        VMALLOC + slot as u64 * STACK_STRIDE + (3 << 12)
    }

    /// Whether `va` is a kernel address (the upper half).
    pub fn is_kernel(va: u64) -> bool {
        va >> 63 == 1
    }
}

/// The knob of the kernel's own translations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TextKnobs {
    /// The kernel's own code and data go through the TLB: its entries are refilled after
    /// flushes that drop them (PTI with PCID) and compete with user entries. Off: kernel
    /// translations are free (an ablation). Results saved before the knob existed had it on.
    #[serde(default = "on")]
    pub kernel_tlb: bool,
}

fn on() -> bool {
    true
}

/// Where one distinct touch's translation sat at level 1 on a CPU after its last lookup, by
/// whichever path made it ([`L1Way::NONE`] for none). While the way still holds it for the
/// loaded PCID ([`crate::hw::tlb::TlbHierarchy::replay_hit`]), a lookup of the touch would hit
/// exactly that way, and replaying the hit is its exact effect without the probes. Kept per
/// touch, not per path: after a full flush the first path refills the pages, and every later
/// path on the same pages replays instead of probing. The page it was for is the way's key's
/// ([`L1Way::is_page`]: a touch has one page size and no kernel page is at 0), so a touch is
/// 16 bytes and a CPU's touches sit in few host cache lines.
#[derive(Debug, Clone, Copy)]
pub struct KTouchWay {
    pub way: L1Way,
}

/// A CPU's [`KTouchWay`]s, line-aligned: the measured layout's 8 touches in two host lines.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct KTouches(pub [KTouchWay; MAX_TOUCHES]);

/// Distinct touches a layout may have over all paths (the measured one has 8).
pub const MAX_TOUCHES: usize = 32;
pub const NO_KTOUCH: KTouchWay = KTouchWay { way: L1Way::NONE };

impl Kernel {
    /// The kernel translations `path` needs on this CPU (linux/arch/x86/text.rs), in order: each a TLB
    /// lookup, and on a miss a walk and a fill (global or tagged with the loaded PCID, as the
    /// kernel maps it). Charged to page_walk; returns the walks' time.
    pub(in crate::linux) fn kernel_path(&mut self, ctx: &mut Ctx, path: Path) -> Ps {
        let cpu = ctx.cpu;
        let Some(text) = &self.arch.x86.text else { return Ps::ZERO };
        let c = &mut self.cpus[cpu as usize];
        let (pcid, lp) = (c.x86.st.pcid(), c.lp);
        let tlb = &mut self.tlbs[c.core];
        // The running task's stack, or the idle task's.
        let slot = c.task.unwrap_or(self.tasks.len() + cpu as usize);
        let mut d = Ps::ZERO;
        let mut looked = false;
        // The loaded PCID's key bits; a fill after a flush gives it new ones.
        let mut id = tlb.asid_key(lp, pcid);
        // Nothing of the PCID is cached (a flush dropped it) and no global entry exists: every
        // touch misses, as its page is none an earlier touch of this run filled.
        let fresh = !replay_off() && text.distinct_pages(path) && tlb.uncached(lp, pcid);
        for (t, &i) in text.touches(path).iter().zip(text.touch_ids(path)) {
            let (va, page) = match t.at {
                At::Fixed(va) => (va, t.page),
                At::Stack => {
                    let va = KernelText::stack_page(slot);
                    (va, L1Way::page_key(va, t.size))
                }
            };
            let known = &mut c.x86.ktouch.0[i as usize];
            if known.way.is_page(page) && !replay_off() && tlb.replay_hit(lp, &known.way, id, t.kind, true) {
                continue;
            }
            looked = true;
            let a = Access { va, kind: t.kind, asid: pcid, kernel: true };
            // The payload is never read back: no kernel page is ever freed.
            let payload = TlbPayload::new(va >> PAGE_SHIFT, false);
            let tr = Translation { size: t.size, payload, global: t.global };
            let missed = if fresh {
                tlb.miss_then_fill_sized(lp, a, tr);
                true
            } else {
                tlb.lookup_or_fill_sized(lp, a, tr) == Lookup::Miss
            };
            if missed {
                self.counters.text.kernel_tlb_misses += 1;
                d += self.costs.hw.miss(t.kind);
            }
            // Where the translation sits at level 1 after its lookup, for the next touch of it.
            *known = match tlb.l1_way(lp, a, t.size) {
                Some(way) => KTouchWay { way },
                None => NO_KTOUCH,
            };
            id = tlb.asid_key(lp, pcid);
        }
        if looked {
            ctx.charge(Bucket::Walk, d);
        }
        d
    }
}

// Tests compare a run against the same run with every touch looked up.
#[cfg(test)]
thread_local! {
    static REPLAY_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn replay_off() -> bool {
    REPLAY_OFF.with(|r| r.get())
}

#[cfg(not(test))]
#[inline(always)]
fn replay_off() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTI_PCID: Mapping = Mapping { pti: true, pcid: true, gbpages: true };

    #[test]
    fn every_symbol_a_path_names_is_in_the_layout() {
        // Building panics on a missing symbol.
        let k = KernelText::new(&LAYOUT, PTI_PCID);
        for p in Path::ALL {
            assert!(!k.touches(p).is_empty(), "{p:?}");
        }
    }

    #[test]
    fn the_shootdown_handler_runs_on_four_text_pages_of_the_measured_layout() {
        // asm_sysvec_call_function (page 0), __sysvec_call_function (1),
        // __flush_smp_call_function_queue (2), sysvec_call_function (8): distinct 2M pages.
        let k = KernelText::new(&LAYOUT, PTI_PCID);
        let text: Vec<_> = k
            .touches(Path::IrqEntry)
            .iter()
            .filter(|t| t.kind == AccessKind::Fetch)
            .map(|t| match t.at {
                At::Fixed(va) => (va - 0xffff_ffff_8100_0000) >> 21,
                At::Stack => unreachable!(),
            })
            .collect();
        assert_eq!(text, [0, 8, 1, 2]);
        // A request's flush_tlb_func shares page 1 with __sysvec_call_function: the path adds
        // no new text page, and pages repeat once only.
        let ff = k.touches(Path::FlushFunc);
        assert_eq!(ff.iter().filter(|t| t.kind == AccessKind::Fetch).count(), 2);
    }

    #[test]
    fn pti_with_pcid_makes_every_kernel_entry_non_global() {
        let on = KernelText::new(&LAYOUT, PTI_PCID);
        assert!(Path::ALL.iter().flat_map(|&p| on.touches(p)).all(|t| !t.global));
        let off = KernelText::new(&LAYOUT, Mapping { pti: false, ..PTI_PCID });
        assert!(Path::ALL.iter().flat_map(|&p| off.touches(p)).all(|t| t.global));
        // PTI without PCID keeps the image global, not the rest (pti_kernel_image_global_ok).
        let nopcid = KernelText::new(&LAYOUT, Mapping { pcid: false, ..PTI_PCID });
        for t in Path::ALL.iter().flat_map(|&p| nopcid.touches(p)) {
            assert_eq!(t.global, t.size == PageSize::Size2M, "{t:?}");
        }
    }

    #[test]
    fn the_direct_map_uses_gigabyte_pages_only_where_the_cpu_has_them() {
        let small = KernelText::new(&LAYOUT, Mapping { gbpages: false, ..PTI_PCID });
        let data: Vec<_> =
            small.touches(Path::FlushFunc).iter().filter(|t| t.kind == AccessKind::Load).collect();
        assert_eq!(data.len(), 1);
        assert_eq!(data[0].size, PageSize::Size2M);
        assert!(KernelText::is_kernel(KernelText::stack_page(3)) && !KernelText::is_kernel(0x7fff_0000_0000));
    }

    #[test]
    fn the_measured_layout_has_8_distinct_touches() {
        let k = KernelText::new(&LAYOUT, PTI_PCID);
        let n = Path::ALL.iter().flat_map(|&p| k.touch_ids(p)).max().map_or(0, |&i| i as usize + 1);
        // Text pages 0-3 and 8, rodata, the direct map and the stack.
        assert_eq!(n, 8);
        for p in Path::ALL {
            assert_eq!(k.touch_ids(p).len(), k.touches(p).len());
            assert!(k.distinct_pages(p), "{p:?}");
        }
    }

    #[test]
    fn a_path_fetching_and_loading_one_page_is_not_on_distinct_pages() {
        // Rodata moved into entry_SYSCALL_64's 2M page: the syscall entry fetches and loads it.
        let symbols: Vec<(&'static str, u64)> = LAYOUT
            .symbols
            .iter()
            .map(|&(n, a)| if n == "__start_rodata" { (n, 0xffff_ffff_8110_0000) } else { (n, a) })
            .collect();
        let layout = Layout { name: "test", source: "test", symbols: Box::leak(symbols.into_boxed_slice()) };
        let k = KernelText::new(&layout, PTI_PCID);
        assert!(!k.distinct_pages(Path::SyscallEntry));
        assert!(k.distinct_pages(Path::SyscallExit));
    }

    /// Replaying known level-1 ways, shared between paths, and skipping the probes of a path
    /// run on a flushed PCID, is exactly looking every touch up:
    /// the shootdown storm on the SMT Skylake under PTI with PCID (kernel entries refilled after
    /// every full flush, siblings sharing arrays, ticks and jitter on) gives the same counters,
    /// time buckets and operations either way.
    #[test]
    fn replaying_known_ways_is_looking_every_touch_up() {
        use crate::engine::sim::{RunStats, Simulation};
        use crate::linux::config::KernelConfig;
        use crate::workload::will_it_scale::{Testcase, WisTask};
        let run = |off: bool| -> RunStats {
            REPLAY_OFF.with(|r| r.set(off));
            let p = crate::profile::shipped("skylake-sp-2s");
            let mut sim = Simulation::new(&p, KernelConfig::preset("5.18.1").unwrap());
            sim.seed(3);
            let mm = sim.add_mm();
            for cpu in [0, 1, 2, 28, 56, 57] {
                sim.add_task(Box::new(WisTask::new(Testcase::TlbFlush1)), mm, cpu);
            }
            let s = sim.run(Ps::US * 100, Ps::US * 400);
            REPLAY_OFF.with(|r| r.set(false));
            s
        };
        let (on, off) = (run(false), run(true));
        assert!(on.counters.text.kernel_tlb_misses > 100, "{:?}", on.counters.text);
        assert!(on.counters.tlbflush.full_flushes > 10, "{:?}", on.counters.tlbflush);
        assert_eq!(on.iterations, off.iterations);
        assert_eq!(format!("{:?}", on.counters), format!("{:?}", off.counters));
        assert_eq!(on.attribution, off.attribution);
    }
}
