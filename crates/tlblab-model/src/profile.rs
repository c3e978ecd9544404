//! Machine profiles: the data that describes one simulated machine.
//!
//! A profile is plain data (TOML on disk; this crate only sees the parsed value). Every number a
//! profile carries is a [`Sourced`] value: the number, where it comes from and how far it can be
//! trusted, so a reader can always ask "says who?". TLB structures carry one source per row, as a
//! CPUID descriptor describes a whole structure at once.
//!
//! Units are in the key names (`_cycles` at the profile's clock, `_ns`, `_mbps` = MB/s).
//! [`MachineProfile::validate`] checks ranges and cross-field rules and names the offending key.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::hw::ipi::ApicMode;

use crate::hw::tlb::{Inclusion, PageSize, Replacement, Serves};

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// How far a number can be trusted; the tags of `docs/references/machine-costs.md`, plus
/// `measured` for numbers `tlblab probe` measured on the host itself, and `calibrated` for a
/// per-operation base cost fitted to a published *single-task* figure of that machine (never a
/// multi-task or patched one: those are what the model predicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    MeasuredInSource,
    VendorDoc,
    ThirdParty,
    Estimate,
    Measured,
    Calibrated,
}

/// A number with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced {
    pub value: f64,
    pub source: String,
    pub confidence: Confidence,
}

/// CPU identity and the features the kernel model branches on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// `intel`, `amd`, `powerpc` or `arm` (AArch64).
    pub vendor: String,
    /// Free-form model name, e.g. "Core i7-3770".
    pub model_name: String,
    /// x86 family / model (what Linux keys `tlb_flushall_shift` on); 0 for non-x86.
    pub family: u32,
    pub model: u32,
    pub clock_mhz: Sourced,
    pub features: Features,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Features {
    pub pcid: bool,
    pub invpcid: bool,
    /// Kernel page-table isolation on by default (Meltdown-affected parts).
    pub pti: bool,
    /// AMD's broadcast invalidation (INVLPGB/TLBSYNC, CPUID 0x8000_0008 EBX\[3\]; used by Linux
    /// from v6.15).
    pub invlpgb: bool,
    /// The most pages one INVLPGB may name (CPUID 0x8000_0008 EDX\[15:0\] + 1): needed with
    /// `invlpgb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invlpgb_count_max: Option<u32>,
    pub source: String,
    pub confidence: Confidence,
}

/// Whether a structure's entries belong to one hardware thread or are shared by SMT siblings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    PerThread,
    PerCore,
}

/// The most entries of one profile TLB structure: 16 times the largest real one (4096).
pub const MAX_STRUCTURE_ENTRIES: u32 = 65_536;
/// The most TLB entries of a whole machine (every CPU's structures): 24 bytes each, 384 MiB.
pub const MAX_TLB_ENTRIES: u64 = 1 << 24;

/// One TLB structure (a row of a CPUID TLB table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbStructure {
    /// Short name used in reports, e.g. `L1 DTLB 4K`, `STLB`.
    pub name: String,
    /// 1 = first level, 2 = second level (STLB / L2 TLB).
    pub level: u8,
    pub serves: Serves,
    pub page_sizes: Vec<PageSize>,
    pub entries: u32,
    /// Associativity; `ways == entries` is fully associative.
    pub ways: u32,
    pub sharing: Sharing,
    pub source: String,
    pub confidence: Confidence,
    /// Latency of a hit in this structure that missed the level above (0 for L1: hidden in the
    /// load-to-use latency).
    pub hit_cycles: Sourced,
}

impl TlbStructure {
    pub fn sets(&self) -> u32 {
        self.entries / self.ways
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tlb {
    pub replacement: Replacement,
    pub inclusion: Inclusion,
    /// Where the replacement and inclusion choices come from (vendors rarely document them).
    pub policy_source: String,
    pub policy_confidence: Confidence,
    /// Number of address-space identifiers the TLB tags with (x86 PCID: 4096; 1 without PCID).
    pub asids: Sourced,
    #[serde(rename = "structure")]
    pub structures: Vec<TlbStructure>,
}

/// How a TLB miss is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WalkKind {
    /// A hardware page walker (x86).
    Hardware,
    /// A miss exception and a software reload handler (PowerPC 8xx).
    Software,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Walk {
    pub kind: WalkKind,
    /// Cost of a walk (or miss handler) whose page-table entries hit in the data cache. No
    /// mechanism here decides where a PTE line comes from or overlaps walks, so a DRAM share
    /// and a walker count are not keys (profiles/README.md, "Keys no mechanism reads").
    pub cycles: Sourced,
}

/// Memory-hierarchy latencies and bandwidths that kernel paths pay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub l1d_hit_cycles: Sourced,
    pub l2_hit_cycles: Sourced,
    pub llc_hit_ns: Sourced,
    /// Bandwidth of `clear_page` on one core (cache-resident target).
    pub clear_page_mbps: Sourced,
    /// memcpy bandwidth of one core, DRAM to DRAM.
    pub memcpy_mbps: Sourced,
    /// One core clearing pages past the LLC: a page fresh from the buddy lists (absent: such a
    /// page clears at `clear_page_mbps`, like a warm one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_dram_mbps: Option<Sourced>,
    /// One core reading a cache-resident 4 KiB page a 64-bit word at a time into a running
    /// sum: independent loads at the core's load throughput (absent: a program's word reads are
    /// charged at `l1d_hit_cycles` each, a chain of dependent loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_page_mbps: Option<Sourced>,
    /// A guest's first touch of a page its host took back (free page reporting), per 4 KiB
    /// page the buddy lists hand out: the host's second-level (NPT/EPT) fault and the host page
    /// it allocates and clears, amortised (docs/references/machine-costs.md#second-level-faults).
    /// Absent on bare metal and on the built-in machines: no such cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_level_fault_ns: Option<Sourced>,
}

/// How the local APIC fans an IPI out to a set of targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ipi {
    pub apic_mode: ApicMode,
    pub apic_source: String,
    pub apic_confidence: Confidence,
    /// Cost to the sender of one ICR write.
    pub send_ns: Sourced,
    /// From the ICR write to the target taking the interrupt.
    pub delivery_ns: Sourced,
    /// Interrupt entry plus the call-function dispatch on the target.
    pub handler_entry_ns: Sourced,
    /// Interrupt exit on the target.
    pub handler_exit_ns: Sourced,
}

/// Unit costs of the kernel paths the model charges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// One INVLPG (or `tlbie`), instruction cost only.
    pub invlpg_cycles: Sourced,
    /// A flushing CR3 write (or `tlbia`), instruction cost only: the refills are simulated.
    pub full_flush_cycles: Sourced,
    /// A null system call round trip (entry + exit), with the profile's default mitigations.
    pub syscall_ns: Sourced,
    /// A minor page fault's kernel path excluding zeroing, the TLB work and the per-page costs
    /// below (page allocation, fault-around): exception entry/exit (with PTI where it is on) and
    /// `handle_mm_fault` down to the PTE.
    pub fault_ns: Sourced,
    /// Fault-around (`filemap_map_pages`, mm/filemap.c v5.18), per page-cache page it visits in
    /// the window: xarray step, reference, trylock, checks, and mapping it (rmap, counter,
    /// `set_pte`) when its PTE is none; visited pages already mapped cost the same lookups.
    pub fault_around_page_cycles: Sourced,
    /// One new page for a fault: the order-0 per-CPU-list allocation, the memcg charge, the
    /// rmap and the LRU add (`alloc_page_vma` .. `lru_cache_add`), without zeroing or copying.
    pub page_alloc_cycles: Sourced,
    /// Freeing one anonymous page the `mmu_gather` collected, after the flush
    /// (`release_pages`: LRU removal, memcg uncharge, per-CPU-list free).
    pub page_free_cycles: Sourced,
    /// Clearing one present PTE in `zap_pte_range` (get-and-clear, rmap removal, RSS counter,
    /// gathering the page).
    pub zap_pte_cycles: Sourced,
    /// `flush_tlb_mm_range`'s own overhead per call, beyond the INVLPGs / CR3 write and the
    /// `mm->tlb_gen` line the model charges separately.
    pub flush_call_cycles: Sourced,
    /// madvise's own fixed path per call, beyond the system call round trip, the zap of each
    /// PTE and any flush: `mmap_lock`, the VMA lookup, `lru_add_drain`, `tlb_gather_mmu` /
    /// `tlb_finish_mmu` and the walk's set-up (docs/references/machine-costs.md#madvise-fixed-path).
    /// Charged once per madvise (and munmap, whose path holds the same steps); zero where
    /// absent, where `flush_call_cycles` holds it as measured from madvise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub madvise_call_cycles: Option<Sourced>,
    /// A context switch between two threads (`schedule()` and `switch_to`, without the simulated
    /// TLB work). Needed only when tasks outnumber CPUs or sleep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switch_ns: Option<Sourced>,
    /// `try_to_wake_up` on the waker: the task's and the target runqueue's locks, the enqueue
    /// and the preemption check (zero where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttwu_cycles: Option<Sourced>,
    /// `try_to_wake_up` onto the waker's own CPU: the same path with no interrupt to send
    /// (absent: a wake-up costs `ttwu_cycles` wherever the task wakes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttwu_local_cycles: Option<Sourced>,
    /// An idle CPU's way out of idle on a wake-up, beyond the IPI and the switch (zero where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_exit_ns: Option<Sourced>,
    /// One rwsem slow-path section under `wait_lock` (queueing a waiter, or `rwsem_wake`'s
    /// bookkeeping), besides the lock word and the wake-ups (zero where absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwsem_section_cycles: Option<Sourced>,
    /// INVPCID of one address in one PCID (type 0), instruction cost: what page-table isolation
    /// adds to every single-page user flush for the user PCID. Needed when `cpu.features` has
    /// both `pti` and `invpcid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invpcid_single_cycles: Option<Sourced>,
    /// What page-table isolation adds to one kernel entry and exit (the CR3 switches and the
    /// entry stack), on top of `syscall_ns` and `fault_ns`, which are without PTI. Needed when
    /// `cpu.features.pti`; charged only when the kernel runs with PTI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pti_entry_exit_ns: Option<Sourced>,
    /// Issuing one INVLPGB (posted and weakly ordered: the initiator does not wait for it).
    /// Needed with `cpu.features.invlpgb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invlpgb_cycles: Option<Sourced>,
    /// TLBSYNC: the wait until every INVLPGB this CPU issued has completed on every CPU. Needed
    /// with `cpu.features.invlpgb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlbsync_ns: Option<Sourced>,
}

/// A whole machine profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineProfile {
    pub schema_version: u32,
    /// Short name used on the command line, e.g. `ivybridge-4c8t`.
    pub name: String,
    pub description: String,
    pub cpu: Cpu,
    pub topology: Topology,
    pub tlb: Tlb,
    pub walk: Walk,
    pub memory: Memory,
    pub kernel: KernelCosts,
    /// Absent on uniprocessors (no other CPU to share a line with).
    pub coherence: Option<Coherence>,
    /// Absent on uniprocessors (no IPIs).
    pub ipi: Option<Ipi>,
    /// Unit costs of the page allocator (linux/mm/page_alloc.rs); needed only by runs that use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_alloc: Option<PageAllocProfile>,
    /// Unit costs of SLUB (linux/mm/slub.rs); needed only by runs that use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slab: Option<SlabProfile>,
    /// Unit costs of pipes and AF_UNIX sockets (linux/fs/pipe.rs); needed only by hackbench.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<IpcProfile>,
    /// Unit costs of the loopback socket paths (linux/net/socket.rs); needed only by the network
    /// workloads (netperf, sockperf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetProfile>,
    /// Unit costs of the file-creation paths (linux/fs/namei.rs); needed only by fsmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<FsProfile>,
    /// AArch64: broadcast TLB maintenance (profile/arm64.rs). Required with `cpu.vendor = "arm"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlbi: Option<arm64::Tlbi>,
    /// MPC8xx: the I and D caches a miss handler runs through (profile/ppc8xx.rs). Required with
    /// `walk.kind = "software"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches: Option<ppc8xx::Caches>,
    /// MPC8xx: the TLB rules (counter replacement, reserved entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmu8xx: Option<ppc8xx::Mmu8xxSpec>,
    /// MPC8xx: the reload handler's instruction-class costs (linux/arch/ppc/kernel/head_8xx.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_8xx: Option<ppc8xx::HeadCosts>,
    /// Unit costs of page reclaim and the page-cache fill (linux/mm/vmscan.rs, linux/mm/rmap.rs,
    /// linux/mm/filemap.rs); needed only by runs that reclaim (vm-scalability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim: Option<ReclaimProfile>,
    /// Swap to zram (linux/mm/shmem.rs, linux/drivers/block/zram.rs): madv-pageout only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<SwapProfile>,
    /// What keeps a real machine out of lockstep: the scheduler tick and per-step cost jitter.
    /// Absent: a noiseless machine (deterministic lockstep regimes; docs/design.md#noise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseProfile>,
    /// The socket's LLC capacity and DRAM bandwidth (hw/uncore.rs). Absent: bulk transfers run at
    /// their per-core rates alone (the 8xx and host profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncore: Option<UncoreProfile>,
}

/// A validation failure: the dotted key that is wrong and what is allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileError {
    pub key: String,
    pub message: String,
    /// For a number out of its range, the range (min, max): what a probe that derived the
    /// number falls back into.
    pub allowed: Option<(f64, f64)>,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key `{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for ProfileError {}

fn err(key: impl Into<String>, message: impl Into<String>) -> ProfileError {
    ProfileError { key: key.into(), message: message.into(), allowed: None }
}

fn check_sourced(key: &str, s: &Sourced, min: f64, max: f64) -> Result<(), ProfileError> {
    if !s.value.is_finite() || s.value < min || s.value > max {
        return Err(ProfileError {
            allowed: Some((min, max)),
            ..err(format!("{key}.value"), format!("{} is out of range; allowed {min} ..= {max}", s.value))
        });
    }
    if s.source.trim().is_empty() {
        return Err(err(format!("{key}.source"), "must name where the number comes from"));
    }
    Ok(())
}

fn check_source(key: &str, source: &str) -> Result<(), ProfileError> {
    if source.trim().is_empty() {
        return Err(err(key, "must name where the facts come from"));
    }
    Ok(())
}

impl MachineProfile {
    /// The MPC8xx sections, when the profile has all three.
    pub fn ppc8xx(&self) -> Option<ppc8xx::Ppc8xxSections> {
        Some(ppc8xx::Ppc8xxSections {
            caches: self.caches.clone()?,
            mmu8xx: self.mmu8xx.clone()?,
            head_8xx: self.head_8xx.clone()?,
            tlb_replacement: self.tlb.replacement,
        })
    }

    /// A software-loaded TLB needs the caches, TLB rules and handler costs its miss handler
    /// runs on; a hardware walker has no use for them.
    fn validate_ppc8xx(&self) -> Result<(), ProfileError> {
        let present = [
            ("caches", self.caches.is_some()),
            ("mmu8xx", self.mmu8xx.is_some()),
            ("head_8xx", self.head_8xx.is_some()),
        ];
        let software = self.walk.kind == WalkKind::Software;
        if let Some((k, _)) = present.iter().find(|(_, p)| *p != software) {
            return Err(err(
                *k,
                if software {
                    "is required with walk.kind = \"software\" (the miss handler runs on it)"
                } else {
                    "is allowed only with walk.kind = \"software\""
                },
            ));
        }
        if let Some(s) = self.ppc8xx() {
            s.validate().map_err(|m| {
                let key = m.split([' ', ':']).next().unwrap_or("caches").to_string();
                err(key, m)
            })?;
        }
        Ok(())
    }

    /// Checks every range and cross-field rule; the error names the first offending key.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(err(
                "schema_version",
                format!("is {}; this tlblab reads {SCHEMA_VERSION}", self.schema_version),
            ));
        }
        if self.name.is_empty()
            || !self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(err("name", "must be non-empty and use only a-z, 0-9, '-' and '_'"));
        }
        let cpu = &self.cpu;
        if !["intel", "amd", "powerpc", "arm"].contains(&cpu.vendor.as_str()) {
            return Err(err(
                "cpu.vendor",
                format!("`{}` is not one of: intel, amd, powerpc, arm", cpu.vendor),
            ));
        }
        check_sourced("cpu.clock_mhz", &cpu.clock_mhz, 1.0, 10_000.0)?;
        check_source("cpu.features.source", &cpu.features.source)?;
        self.topology.validate()?;
        self.validate_tlb()?;
        let w = &self.walk;
        check_sourced("walk.cycles", &w.cycles, 0.0, 100_000.0)?;
        self.validate_ppc8xx()?;
        self.validate_arm64()?;
        let m = &self.memory;
        check_sourced("memory.l1d_hit_cycles", &m.l1d_hit_cycles, 0.0, 1000.0)?;
        check_sourced("memory.l2_hit_cycles", &m.l2_hit_cycles, 0.0, 1000.0)?;
        check_sourced("memory.llc_hit_ns", &m.llc_hit_ns, 0.0, 10_000.0)?;
        check_sourced("memory.clear_page_mbps", &m.clear_page_mbps, 1.0, 1_000_000.0)?;
        check_sourced("memory.memcpy_mbps", &m.memcpy_mbps, 1.0, 1_000_000.0)?;
        if let Some(c) = &m.clear_dram_mbps {
            check_sourced("memory.clear_dram_mbps", c, 1.0, 1_000_000.0)?;
        }
        if let Some(r) = &m.read_page_mbps {
            check_sourced("memory.read_page_mbps", r, 1.0, 1_000_000.0)?;
        }
        if let Some(f) = &m.second_level_fault_ns {
            check_sourced("memory.second_level_fault_ns", f, 0.0, 1_000_000.0)?;
        }
        let k = &self.kernel;
        check_sourced("kernel.invlpg_cycles", &k.invlpg_cycles, 0.0, 100_000.0)?;
        check_sourced("kernel.full_flush_cycles", &k.full_flush_cycles, 0.0, 100_000.0)?;
        check_sourced("kernel.syscall_ns", &k.syscall_ns, 0.0, 1_000_000.0)?;
        check_sourced("kernel.fault_ns", &k.fault_ns, 0.0, 10_000_000.0)?;
        for (key, v) in [
            ("kernel.fault_around_page_cycles", &k.fault_around_page_cycles),
            ("kernel.page_alloc_cycles", &k.page_alloc_cycles),
            ("kernel.page_free_cycles", &k.page_free_cycles),
            ("kernel.zap_pte_cycles", &k.zap_pte_cycles),
            ("kernel.flush_call_cycles", &k.flush_call_cycles),
        ] {
            check_sourced(key, v, 0.0, 1_000_000.0)?;
        }
        for (key, v) in [
            ("kernel.context_switch_ns", &k.context_switch_ns),
            ("kernel.ttwu_cycles", &k.ttwu_cycles),
            ("kernel.ttwu_local_cycles", &k.ttwu_local_cycles),
            ("kernel.rwsem_section_cycles", &k.rwsem_section_cycles),
            ("kernel.idle_exit_ns", &k.idle_exit_ns),
            ("kernel.madvise_call_cycles", &k.madvise_call_cycles),
        ] {
            if let Some(v) = v {
                check_sourced(key, v, 0.0, 1_000_000.0)?;
            }
        }
        match (&k.invpcid_single_cycles, cpu.features.pti && cpu.features.invpcid) {
            (Some(c), _) => check_sourced("kernel.invpcid_single_cycles", c, 0.0, 100_000.0)?,
            (None, true) => {
                return Err(err(
                    "kernel.invpcid_single_cycles",
                    "is required when cpu.features has pti and invpcid (PTI flushes each user page \
                     from the user PCID with INVPCID)",
                ))
            }
            (None, false) => {}
        }
        let invlpgb = cpu.features.invlpgb;
        for (key, v, max) in [
            ("kernel.invlpgb_cycles", &k.invlpgb_cycles, 100_000.0),
            ("kernel.tlbsync_ns", &k.tlbsync_ns, 1_000_000.0),
        ] {
            match (v, invlpgb) {
                (Some(c), _) => check_sourced(key, c, 0.0, max)?,
                (None, true) => return Err(err(key, "is required when cpu.features.invlpgb is true")),
                (None, false) => {}
            }
        }
        match (cpu.features.invlpgb_count_max, invlpgb) {
            (Some(n), _) if !(1..=65_536).contains(&n) => {
                return Err(err(
                    "cpu.features.invlpgb_count_max",
                    format!("{n} is out of range; allowed 1 ..= 65536"),
                ))
            }
            (None, true) => {
                return Err(err(
                    "cpu.features.invlpgb_count_max",
                    "is required when cpu.features.invlpgb is true (CPUID 0x8000_0008 EDX[15:0] + 1)",
                ))
            }
            _ => {}
        }
        match (&k.pti_entry_exit_ns, cpu.features.pti) {
            (Some(c), _) => check_sourced("kernel.pti_entry_exit_ns", c, 0.0, 100_000.0)?,
            (None, true) => {
                return Err(err(
                    "kernel.pti_entry_exit_ns",
                    "is required when cpu.features has pti (syscall_ns and fault_ns are without PTI;                      this is what PTI adds to each kernel entry and exit)",
                ))
            }
            (None, false) => {}
        }
        let smp = self.topology.cpus() > 1;
        match (&self.coherence, smp) {
            (None, true) => {
                return Err(err("coherence", "is required when the machine has more than one CPU"))
            }
            (Some(c), _) => {
                check_sourced("coherence.smt_sibling_ns", &c.smt_sibling_ns, 0.0, 100_000.0)?;
                check_sourced("coherence.same_socket_ns", &c.same_socket_ns, 0.0, 100_000.0)?;
                check_sourced("coherence.cross_socket_ns", &c.cross_socket_ns, 0.0, 100_000.0)?;
                if let Some(h) = &c.home_ns {
                    check_sourced("coherence.home_ns", h, 0.0, 100_000.0)?;
                }
            }
            (None, false) => {}
        }
        match (&self.ipi, smp) {
            (None, true) => return Err(err("ipi", "is required when the machine has more than one CPU")),
            (Some(i), _) => {
                check_source("ipi.apic_source", &i.apic_source)?;
                check_sourced("ipi.send_ns", &i.send_ns, 0.0, 1_000_000.0)?;
                check_sourced("ipi.delivery_ns", &i.delivery_ns, 0.0, 1_000_000.0)?;
                check_sourced("ipi.handler_entry_ns", &i.handler_entry_ns, 0.0, 1_000_000.0)?;
                check_sourced("ipi.handler_exit_ns", &i.handler_exit_ns, 0.0, 1_000_000.0)?;
            }
            (None, false) => {}
        }
        if let Some(n) = &self.noise {
            check_sourced("noise.hz", &n.hz, 0.0, 10_000.0)?;
            check_sourced("noise.tick_cycles", &n.tick_cycles, 0.0, 10_000_000.0)?;
            let q = &n.step_quantiles;
            check_source("noise.step_quantiles.source", &q.source)?;
            let ok = q.value.len() == STEP_PERCENTILES.len()
                && q.value.iter().all(|v| v.is_finite() && STEP_FACTORS.contains(v))
                && q.value.windows(2).all(|w| w[0] <= w[1]);
            if !ok {
                return Err(err(
                    "noise.step_quantiles.value",
                    format!(
                        "{:?} is not {} non-decreasing factors in 0.1 ..= 10 (at percentiles {:?})",
                        q.value,
                        STEP_PERCENTILES.len(),
                        STEP_PERCENTILES
                    ),
                ));
            }
        }
        if let Some(pa) = &self.page_alloc {
            for (key, v, max) in [
                ("page_alloc.pcp_alloc_cycles", &pa.pcp_alloc_cycles, 100_000.0),
                ("page_alloc.pcp_free_cycles", &pa.pcp_free_cycles, 100_000.0),
                ("page_alloc.zone_lock_section_cycles", &pa.zone_lock_section_cycles, 100_000.0),
                ("page_alloc.buddy_block_cycles", &pa.buddy_block_cycles, 100_000.0),
                ("page_alloc.struct_page_miss_ns", &pa.struct_page_miss_ns, 10_000.0),
            ] {
                check_sourced(key, v, 0.0, max)?;
            }
        }
        if let Some(r) = &self.reclaim {
            r.check()?;
        }
        if let Some(w) = &self.swap {
            check_sourced("swap.swap_out_cycles", &w.swap_out_cycles, 0.0, 100_000.0)?;
            check_sourced("swap.swap_in_cycles", &w.swap_in_cycles, 0.0, 100_000.0)?;
            check_sourced("swap.same_filled_scan_cycles", &w.same_filled_scan_cycles, 0.0, 100_000.0)?;
        }
        if let Some(u) = &self.uncore {
            check_sourced("uncore.llc_mib", &u.llc_mib, 0.25, 4096.0)?;
            check_sourced("uncore.dram_peak_mbps", &u.dram_peak_mbps, 100.0, 10_000_000.0)?;
            check_sourced("uncore.dram_sustained_fraction", &u.dram_sustained_fraction, 0.05, 1.0)?;
        }
        if let Some(n) = &self.net {
            n.check()?;
        }
        if let Some(sl) = &self.slab {
            for (key, v) in [
                ("slab.alloc_fastpath_cycles", &sl.alloc_fastpath_cycles),
                ("slab.free_fastpath_cycles", &sl.free_fastpath_cycles),
                ("slab.alloc_slowpath_cycles", &sl.alloc_slowpath_cycles),
                ("slab.free_slowpath_cycles", &sl.free_slowpath_cycles),
                ("slab.new_slab_object_cycles", &sl.new_slab_object_cycles),
            ] {
                check_sourced(key, v, 0.0, 100_000.0)?;
            }
        }
        for (key, v) in self.fs.iter().flat_map(|f| f.fields()) {
            check_sourced(key, v, 0.0, 1_000_000.0)?;
        }
        if let Some(ipc) = &self.ipc {
            for (key, v) in [
                ("ipc.pipe_write_cycles", &ipc.pipe_write_cycles),
                ("ipc.pipe_read_cycles", &ipc.pipe_read_cycles),
                ("ipc.unix_send_cycles", &ipc.unix_send_cycles),
                ("ipc.unix_recv_cycles", &ipc.unix_recv_cycles),
            ] {
                check_sourced(key, v, 0.0, 100_000.0)?;
            }
        }
        Ok(())
    }

    /// The clock in MHz as an integer, for the integer-time engine.
    pub fn clock_mhz(&self) -> u64 {
        self.cpu.clock_mhz.value.round() as u64
    }
}

pub mod arm64;
mod hw_costs;
pub mod ppc8xx;
mod tlb;
mod topology;
pub use topology::Topology;

mod sections;
pub use sections::*;
mod sourced;
pub use sourced::*;

#[cfg(test)]
mod tests;

/// A profile of `profiles/` by name, validated (for tests).
#[cfg(test)]
pub(crate) fn shipped(name: &str) -> MachineProfile {
    let p: MachineProfile = toml::from_str(crate::builtin::profile(name)).unwrap();
    p.validate().unwrap();
    p
}
