//! The MPC8xx MMU as Linux drives it on a uniprocessor (arch/ppc/mm of 2.4.0 and 2.6.12-rc2):
//! the machine state (the ITLB/DTLB pair, the 4 KB I- and D-caches, the 2-level page tables), the
//! kernel's text and data layouts, and every fetch, load and store a path makes: a TLB lookup,
//! on a miss the exception hw/walk.rs names and linux/arch/ppc/kernel/head_8xx.rs's handler run
//! against the same caches, then the access through the cache. `set_context` (a `tlbia` on every
//! switch in
//! 2.4.0's head_8xx.S, none in 2.6.12-rc2's, which tags entries with the context's ASID) is here
//! too, as are the boot-time pins (`CONFIG_PIN_TLB`) and the lost pin of seed 003.
//!
//! Cost of a path: each 16-byte line of text the layout gives a function is fetched (translated,
//! then read through the I-cache) and executes as four instructions of one issue clock each
//! (the scalar in-order core, `head_8xx.alu_cycles`); the I-cache stall of a missed line adds
//! its clocks. Data accesses (linux/arch/ppc/data_layout.rs) are word loads and stores (`clear_user` and
//! the copies of arch/ppc/lib/string.S are word loops on CONFIG_8xx) or `dcbz` per line, through
//! the DTLB and the D-cache with its write policy.

use std::sync::Arc;

use crate::hw::ppc8xx::cache::{Cache, WritePolicy};
use crate::hw::ppc8xx::tlb::{Mmu8xx, Side};
use crate::hw::tlb::AccessKind;
use crate::hw::walk::{MissException, OnMiss, Walker};
use crate::linux::arch::ppc::data_layout::{DataLayout, DataOp, Index};
use crate::linux::arch::ppc::kernel::head_8xx::{
    self, pte, Cpu8xx, Head8xxConfig, MissEvents, PageTables8xx, PinConfig, Version,
};
use crate::linux::arch::ppc::paths::Paths8xx;
use crate::linux::arch::ppc::system_map::TextLayout;
use crate::linux::arch::ppc::tlbmiss::Counters;
use crate::profile::MachineProfile;
use crate::time::Ps;

/// The 8xx kernel's knobs (the `[ppc8xx]` section of a kernel preset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ppc8xxKnobs {
    /// Which head_8xx.S the miss handlers follow, and which text/data layouts are loaded.
    pub version: Version,
    /// `CONFIG_PIN_TLB`: 8 MB ITLB/DTLB entries at KERNELBASE in the reserved slots.
    pub pin_tlb: bool,
    /// The 2.6 bug of seed 003: a `tlbie` inside the first 8 MB drops the pinned entries.
    pub lose_pinned: bool,
    /// `set_context` does a `tlbia` (2.4.0 head_8xx.S; 2.6.12-rc2 uses ASIDs instead).
    pub switch_tlbia: bool,
    /// Timer interrupts per second (`HZ`).
    pub hz: u32,
    /// Who writes dirty pages back: a `bdflush` kernel thread (2.4) or the writer itself in
    /// `balance_dirty_pages` (2.6).
    pub writeback: Writeback,
    /// Pages written per writeback round (2.4 bdflush `ndirty` in pages; 2.6 `ratelimit_pages`).
    pub writeback_batch: u32,
    /// Seed 003's linker question: the text in link order, or the hot paths' kernel functions
    /// packed together ([`TextLayout::hot_ordered`] over [`HOT_PATHS`]).
    #[serde(default, skip_serializing_if = "TextOrder::is_link")]
    pub text_order: TextOrder,
    /// BenH's remark in seed 003: `fget_light` out of line (2.6.12-rc2 fs/file_table.c) or its
    /// fast path inline in `sys_read`/`sys_write`, its text on their page.
    #[serde(default, skip_serializing_if = "FgetLight::is_call")]
    pub fget_light: FgetLight,
    /// Kernel linear-map misses load 8 MB entries without a table walk (`ITLBMissLinear` /
    /// `DTLBMissLinear` of v4.14 head_8xx.S) instead of 4 KB ones from `swapper_pg_dir`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub linear_8m: bool,
}

/// How the kernel text is ordered (seed 003: "bring the hotpath functions into the same pages").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextOrder {
    /// The version's link order (the shipped layouts).
    #[default]
    Link,
    /// The kernel functions of [`HOT_PATHS`] moved together, first use first, as a linker's
    /// hot-text section would place them.
    Hot,
}

impl TextOrder {
    pub fn is_link(&self) -> bool {
        *self == TextOrder::Link
    }
}

/// Where `fget_light`'s text lies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FgetLight {
    /// Out of line in fs/file_table.o (2.6.12-rc2), a page of its own on dd's paths.
    #[default]
    Call,
    /// Its single-task fast path inline in its callers (fs/read_write.o): modelled as its text
    /// moved onto `sys_write`'s page, size kept (the call and prologue it would save are
    /// ignored), one copy for both callers.
    Inline,
}

impl FgetLight {
    pub fn is_call(&self) -> bool {
        *self == FgetLight::Call
    }
}

/// The paths whose kernel functions `text_order = hot` packs together: dd's loop, its two
/// system calls, the writeback of a page and the timer tick (`tlblab layout`'s default).
pub const HOT_PATHS: [&str; 6] =
    ["dd_read_user", "sys_read", "dd_write_user", "sys_write", "writeback", "timer_tick"];

/// Who writes the dirty pages back. On this uniprocessor a kernel thread's time is real time but
/// not dd's user or sys time (`time` reports the task's own ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Writeback {
    /// 2.4.0 fs/buffer.c: `balance_dirty` wakes the `bdflush` thread over the soft limit; it runs
    /// in dd's borrowed mm, and the switch back to dd is a `set_context` (`tlbia` in 2.4.0).
    Bdflush,
    /// 2.6.12-rc2 mm/page-writeback.c: `balance_dirty_pages` (every `ratelimit_pages` dirtied
    /// pages) wakes a `pdflush` thread for `background_writeout` once the dirty pages exceed
    /// `dirty_background_ratio`; it writes them all (1024 a chunk) in its own context.
    Pdflush,
    /// The writer itself (2.6 `balance_dirty_pages` over `vm_dirty_ratio`: `writeback_inodes`
    /// of `write_chunk` pages in dd's context, its sys time).
    InContext,
}

/// Where a path's clocks go: the CPU's mode (tick accounting's user and sys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    User,
    Kernel,
    /// A kernel thread (bdflush, pdflush): real time, neither dd's user nor its sys time.
    KernelThread,
}

/// Clocks a step took, split as the report needs them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clocks {
    /// Executing the path: instructions and cache stalls of its own fetches and data.
    pub run: u64,
    /// In the miss handlers.
    pub handlers: u64,
}

impl Clocks {
    pub fn total(&self) -> u64 {
        self.run + self.handlers
    }
}

impl std::ops::AddAssign for Clocks {
    fn add_assign(&mut self, o: Clocks) {
        self.run += o.run;
        self.handlers += o.handlers;
    }
}

/// The shipped dd layouts of a version: text (linux/arch/ppc/system_map.rs) and data
/// (linux/arch/ppc/data_layout.rs), embedded from `layouts/`.
pub fn builtin_layouts(v: Version) -> (Arc<TextLayout>, Arc<DataLayout>) {
    let (tf, tt, df, dt) = match v {
        Version::V2_4 => (
            "layouts/linux-2.4-dd.toml",
            crate::builtin::layout("linux-2.4-dd"),
            "layouts/linux-2.4-dd-data.toml",
            crate::builtin::layout("linux-2.4-dd-data"),
        ),
        Version::V2_6 => (
            "layouts/linux-2.6-dd.toml",
            crate::builtin::layout("linux-2.6-dd"),
            "layouts/linux-2.6-dd-data.toml",
            crate::builtin::layout("linux-2.6-dd-data"),
        ),
    };
    let text = TextLayout::parse(tf, tt).unwrap_or_else(|e| panic!("{e}"));
    let data = DataLayout::parse(df, dt, &text).unwrap_or_else(|e| panic!("{e}"));
    (Arc::new(text), Arc::new(data))
}

/// Whether `text` can stand in for version `v`'s shipped text layout: it has the kernel's paths
/// and every function the shipped data layout names.
pub fn check_text(v: Version, text: &TextLayout) -> Result<(), String> {
    let (_, data) = builtin_layouts(v);
    kernel_paths(text, &data).map(|_| ())
}

/// The kernel paths the 8xx kernel runs, checked against the data layout's functions.
fn kernel_paths(text: &TextLayout, data: &DataLayout) -> Result<Paths8xx, String> {
    if let Some(f) = data.functions().find(|f| text.function(f).is_none()) {
        return Err(format!(
            "text layout {}: no function {f:?}, which data layout {} names",
            text.name, data.name
        ));
    }
    let path = |name: &str| {
        text.paths().iter().position(|p| p.name == name).ok_or_else(|| {
            format!(
                "text layout {}: no path {name:?} (the 8xx kernel runs sys_read, sys_write, writeback, timer_tick)",
                text.name
            )
        })
    };
    Ok(Paths8xx {
        sys_read: path("sys_read")?,
        sys_write: path("sys_write")?,
        writeback: path("writeback")?,
        timer_tick: path("timer_tick")?,
        // Optional: a tick taken in user mode (2.6 `account_user_time`); else `timer_tick`.
        timer_tick_user: text.paths().iter().position(|p| p.name == "timer_tick_user"),
        // Optional: once per writeback round (2.6's writeback_inodes descent).
        writeback_round: text.paths().iter().position(|p| p.name == "writeback_round"),
    })
}

/// Physical placement of what the kernel maps (an estimate: the seed gives no memory map).
/// Lowmem (`head_8xx::LOWMEM`) is mapped linearly at KERNELBASE by 4 KB kernel PTEs (2.6.12-rc2
/// `mapin_ram`); user pages sit above `USER_PHYS`.
const LOWMEM: u32 = head_8xx::LOWMEM;
const TABLES_PHYS: u32 = 0x0010_0000;
const USER_PHYS: u32 = 0x0180_0000;
/// `M_CASID` of dd's address space (2.6: its mm context; 2.4: every context is 0 after `tlbia`).
const DD_ASID: u8 = 1;

/// The uniprocessor 8xx machine with its kernel's layouts.
pub struct Machine8xx {
    mmu: Mmu8xx,
    icache: Cache,
    dcache: Cache,
    tables: PageTables8xx,
    swapper: u32,
    user_pgd: u32,
    next_user_frame: u32,
    pub cfg: Head8xxConfig,
    pub knobs: Ppc8xxKnobs,
    pub text: Arc<TextLayout>,
    pub data: Arc<DataLayout>,
    walker: Walker,
    alu: u64,
    pub counters: Counters,
    /// Pages dirtied and written back so far (the data layout's per-page objects advance with
    /// them).
    pub written: u64,
    pub written_back: u64,
    pub paths: Paths8xx,
    /// The next timer interrupt, and the period (1/HZ).
    pub next_tick: Ps,
    pub tick: Ps,
    pub mhz: u64,
    /// The mode of the last operation run: a tick that fell inside it interrupted that mode.
    pub last_mode: Mode,
}

impl Machine8xx {
    /// Boots the machine: tables for lowmem and dd's text, data and stack; the TLBs as
    /// `initial_mmu` and `start_here` leave them (pins, the lost pin).
    pub fn boot(
        p: &MachineProfile,
        knobs: Ppc8xxKnobs,
        text: Arc<TextLayout>,
        data: Arc<DataLayout>,
    ) -> Result<Machine8xx, String> {
        let text = match knobs.text_order {
            TextOrder::Link => text,
            TextOrder::Hot => Arc::new(text.hot_ordered(&HOT_PATHS).map_err(|e| e.to_string())?),
        };
        let text = match knobs.fget_light {
            FgetLight::Call => text,
            FgetLight::Inline => {
                Arc::new(text.moved_beside("fget_light", "sys_write").map_err(|e| e.to_string())?)
            }
        };
        let s =
            p.ppc8xx().ok_or("a software-loaded TLB needs the profile's [caches], [mmu8xx], [head_8xx]")?;
        let cfg = Head8xxConfig {
            version: knobs.version,
            cpu6: false,
            linear_8m: knobs.linear_8m,
            dcache_policy: s.dcache_write_policy(),
            costs: s.handler_costs()?,
        };
        let icache = Cache::new(s.icache()).map_err(|e| e.to_string())?;
        let dcache = Cache::new(s.dcache()).map_err(|e| e.to_string())?;
        let mut tables = PageTables8xx::new(TABLES_PHYS);
        let swapper = tables.new_pgd();
        let user_pgd = tables.new_pgd();
        tables.map_range(swapper, head_8xx::KERNELBASE, 0, LOWMEM, pte::KERNEL | pte::EXEC);
        let mut mmu = Mmu8xx::new();
        head_8xx::boot(
            &mut mmu,
            &PinConfig {
                pin_tlb: knobs.pin_tlb,
                lose_pinned: knobs.lose_pinned,
                // MT05 does not name the buggy call site: any page of the first 8 MB drops the pin.
                lost_at: 0x3000,
                // MPC8xx IMMR at 0xff000000 (the usual board setting; only the pinned entry uses it).
                immr: 0xff00_0000,
            },
        );
        mmu.casid = DD_ASID;
        let paths = kernel_paths(&text, &data)?;
        if knobs.hz == 0 || knobs.writeback_batch == 0 {
            return Err("ppc8xx knobs hz and writeback_batch must be >= 1".into());
        }
        let tick = Ps::from_ns(1e9 / knobs.hz as f64);
        let mut m = Machine8xx {
            paths,
            next_tick: tick,
            tick,
            mhz: p.clock_mhz(),
            mmu,
            icache,
            dcache,
            tables,
            swapper,
            user_pgd,
            next_user_frame: USER_PHYS,
            alu: cfg.costs.alu_cycles as u64,
            cfg,
            knobs,
            walker: Walker::from_profile(p, Default::default()),
            text,
            data,
            counters: Counters::default(),
            written: 0,
            written_back: 0,
            last_mode: Mode::User,
        };
        m.map_user_pages();
        Ok(m)
    }

    /// Another text layout for the same kernel (`tlblab layout`'s reordered one): its paths are
    /// resolved again and its user pages mapped. The data layout must name only its functions.
    pub fn set_text(&mut self, text: Arc<TextLayout>) -> Result<(), String> {
        self.paths = kernel_paths(&text, &self.data)?;
        self.text = text;
        self.map_user_pages();
        Ok(())
    }

    /// dd's text pages (read-only, executable) and its data objects (read-write, dirty: the
    /// untimed setup has touched them), each 4 KB page once.
    fn map_user_pages(&mut self) {
        let m = self;
        let user_text: Vec<u32> = m
            .text
            .functions()
            .iter()
            .filter(|f| !f.is_kernel())
            .flat_map(|f| ((f.addr & !0xfff)..f.end()).step_by(4096).map(|p| p as u32))
            .collect();
        for page in user_text {
            m.map_user(page, pte::USER_RX);
        }
        let user_data: Vec<u32> = m
            .data
            .objects()
            .iter()
            .filter(|o| !o.is_kernel())
            .flat_map(|o| ((o.addr & !0xfff)..o.addr + o.size.max(1)).step_by(4096).map(|p| p as u32))
            .collect();
        for page in user_data {
            m.map_user(page, pte::USER_RW | pte::DIRTY | pte::HWWRITE);
        }
    }

    fn map_user(&mut self, page: u32, flags: u32) {
        if self.tables.pte(self.user_pgd, page) & pte::PRESENT == 0 {
            let pa = self.next_user_frame;
            self.next_user_frame += 4096;
            self.tables.map(self.user_pgd, page, pa, flags);
        }
    }

    fn cpu(&mut self) -> Cpu8xx<'_> {
        Cpu8xx {
            mmu: &mut self.mmu,
            icache: &mut self.icache,
            dcache: &mut self.dcache,
            tables: &mut self.tables,
            user_pgd: self.user_pgd,
            swapper_pgd: self.swapper,
        }
    }

    /// Translate `ea` for one access; on a miss take the exception the walker names and run the
    /// handler. Returns the physical address and the handler clocks.
    fn translate(&mut self, side: Side, ea: u32, store: bool) -> (u32, u64) {
        let casid = self.mmu.casid;
        if let Some(pa) = self.mmu.tlb(side).hit(ea, casid, store && side == Side::Data) {
            return (pa, 0);
        }
        let kind = match (side, store) {
            (Side::Instruction, _) => AccessKind::Fetch,
            (Side::Data, false) => AccessKind::Load,
            (Side::Data, true) => AccessKind::Store,
        };
        let cfg = self.cfg;
        let ev = match head_8xx::translate(&cfg, &mut self.cpu(), side, ea, store) {
            Ok(ev) => ev,
            Err(e) => panic!("8xx reload at {ea:#010x}: {e}"),
        };
        let mut clocks = 0;
        if let Some(ev) = ev {
            debug_assert!(matches!(self.walker.on_miss(kind), OnMiss::Exception(_)) || store);
            clocks = self.count(side, &ev);
            if ev.result == head_8xx::Reload::PageFault {
                panic!("8xx page fault at {ea:#010x}: the dd model maps every page it touches");
            }
        }
        let casid = self.mmu.casid;
        let slot = self.mmu.tlb(side).probe(ea, casid).expect("loaded by the handler");
        let pa = self.mmu.tlb(side).slot(slot).expect("valid").translate(ea);
        (pa, clocks)
    }

    /// Counts one exception (and the error that may follow a store miss) by kind.
    fn count(&mut self, side: Side, ev: &MissEvents) -> u64 {
        let c = &mut self.counters;
        c.handler_cache_stall_clocks += ev.cache_stall_cycles;
        let kind = match (side, ev.handler) {
            (Side::Instruction, _) => MissException::InstructionTlbMiss,
            (_, head_8xx::Handler::DataTlbError) => MissException::DataTlbError,
            _ => MissException::DataTlbMiss,
        };
        match (kind, ev.kernel) {
            (MissException::InstructionTlbMiss, false) => {
                c.itlb_miss_user += 1;
                c.itlb_user_clocks += ev.cycles;
            }
            (MissException::InstructionTlbMiss, true) => {
                c.itlb_miss_kernel += 1;
                c.itlb_kernel_clocks += ev.cycles;
            }
            (MissException::DataTlbMiss, false) => {
                c.dtlb_miss_user += 1;
                c.dtlb_user_clocks += ev.cycles;
            }
            (MissException::DataTlbMiss, true) => {
                c.dtlb_miss_kernel += 1;
                c.dtlb_kernel_clocks += ev.cycles;
            }
            (MissException::DataTlbError, _) => {
                c.dtlb_error += 1;
                c.dtlb_error_clocks += ev.cycles;
            }
        }
        ev.cycles
    }

    /// Runs one text-layout path: every function's lines fetched and executed, then its data
    /// accesses. `mode` says whose time it is.
    pub fn run_path(&mut self, path: usize, mode: Mode) -> Clocks {
        let text = Arc::clone(&self.text);
        let mut c = Clocks::default();
        for name in &text.paths()[path].steps {
            let f = text.function(name).expect("validated");
            for line in (f.addr & !15..f.end()).step_by(16) {
                let (pa, h) = self.translate(Side::Instruction, line as u32, false);
                c.handlers += h;
                let a = self.icache.read(pa as u64);
                c.run += 4 * self.alu;
                self.counters.instructions += 4;
                if !a.hit {
                    self.counters.icache_misses += 1;
                    let stall = (a.cycles - self.icache.spec().hit_cycles) as u64;
                    self.counters.icache_stall_clocks += stall;
                    c.run += stall;
                }
            }
            let d = self.data_accesses(name);
            self.counters.data_clocks += d.run;
            c += d;
        }
        self.charge(mode, c);
        c
    }

    fn charge(&mut self, mode: Mode, c: Clocks) {
        match mode {
            Mode::User => self.counters.user_clocks += c.total(),
            Mode::Kernel => self.counters.sys_clocks += c.total(),
            Mode::KernelThread => self.counters.kthread_clocks += c.total(),
        }
    }

    /// The data accesses the data layout gives `function`.
    fn data_accesses(&mut self, function: &str) -> Clocks {
        let data = Arc::clone(&self.data);
        let mut c = Clocks::default();
        for a in data.accesses(function) {
            let obj = &data.objects()[a.object];
            let at = |idx: Index, s: &Machine8xx| match idx {
                Index::None => 0,
                Index::Written => s.written,
                Index::WrittenBack => s.written_back,
            };
            let base = obj.address(at(obj.index, self)) + a.offset;
            match a.op {
                DataOp::Load => {
                    for w in (base..base + a.bytes).step_by(4) {
                        c += self.load(w as u32);
                    }
                }
                DataOp::Store => {
                    for w in (base..base + a.bytes).step_by(4) {
                        c += self.store(w as u32);
                    }
                }
                DataOp::Zero => {
                    for l in (base & !15..base + a.bytes).step_by(16) {
                        c += self.dcbz(l as u32);
                    }
                }
                DataOp::Copy { from } => {
                    let src = &data.objects()[from];
                    let sbase = src.address(at(src.index, self)) + a.from_offset;
                    // __copy_tofrom_user / memcpy: a word load then a word store, line by line.
                    for off in (0..a.bytes).step_by(4) {
                        c += self.load((sbase + off) as u32);
                        c += self.store((base + off) as u32);
                    }
                }
            }
        }
        c
    }

    fn load(&mut self, ea: u32) -> Clocks {
        let (pa, h) = self.translate(Side::Data, ea, false);
        let a = self.dcache.read(pa as u64);
        if !a.hit {
            self.counters.dcache_misses += 1;
        }
        Clocks { run: a.cycles as u64, handlers: h }
    }

    fn store(&mut self, ea: u32) -> Clocks {
        let (pa, h) = self.translate(Side::Data, ea, true);
        let a = self.dcache.write(pa as u64, self.cfg.dcache_policy);
        if !a.hit && self.cfg.dcache_policy == WritePolicy::CopyBack {
            self.counters.dcache_misses += 1;
        }
        Clocks { run: a.cycles as u64, handlers: h }
    }

    fn dcbz(&mut self, ea: u32) -> Clocks {
        let (pa, h) = self.translate(Side::Data, ea, true);
        let a = self.dcache.zero_line(pa as u64, self.cfg.dcache_policy);
        Clocks { run: a.cycles as u64, handlers: h }
    }

    /// `switch_mm` -> `set_context` into dd's (or a kernel thread's borrowed) context: 2.4.0
    /// empties both TLBs (the reserved entries aside), 2.6.12-rc2 only loads `M_CASID`.
    pub fn set_context(&mut self) {
        if self.knobs.switch_tlbia {
            self.mmu.tlbia();
            self.counters.context_tlbia += 1;
        }
    }

    /// Index of a text path (the workload resolves its paths once).
    pub fn path_index(&self, name: &str) -> Option<usize> {
        self.text.paths().iter().position(|p| p.name == name)
    }
}
