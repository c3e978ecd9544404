//! A kernel configuration: knobs by subsystem, each knob defined once in its section's table (`config/<section>.rs`, see [`knobs`]) (name, the
//! subsystem it belongs to, allowed values, what it models, how it applies), and presets as TOML
//! files (`kernels/*.toml`, see [`super::preset`]) that set knobs by subsystem section:
//!
//! ```toml
//! description = "v5.18.1 + 'x86/mm/tlb: avoid reading mm_tlb_gen when possible' (v6.0)"
//! inherits = "5.18.1"          # optional: start from a built-in preset
//! merged_in = "6.0"            # optional: the mainline release that merged the change
//! [flush]
//! early_return = true
//! read_tlb_gen = "when-needed"
//! ```
//!
//! A preset without `inherits` must set every knob that applies (no hidden defaults). Knobs apply
//! in [`knobs`] order whatever the file's order (the range policy before its parameters).

use crate::linux::arch::arm64::Arm64Knobs;
use crate::linux::arch::ppc::kernel::head_8xx::Version;
use crate::linux::arch::ppc::mm::mmu_8xx::{FgetLight, Ppc8xxKnobs, TextOrder, Writeback};
use crate::linux::arch::x86::mm::tlb::{
    CoalesceIpis, CpumaskUpdate, FlushKnobs, LazyIpis, LazyTest, RangePolicy, ReadTlbGen, RemoteDrain,
};
use crate::linux::arch::x86::text::TextKnobs;
use crate::linux::fs::pipe::FsKnobs;
use crate::linux::include::linux::mm_types::{FaultAround, FaultLock, MmKnobs, RwsemSlowpath};
use crate::linux::kernel::sched::SchedKnobs;
use crate::linux::mm::page_alloc::{PageAllocConfig, PcpDrain, PcpHigh, PcpLists, PcpRefill, ZoneRules};
use crate::linux::mm::vmscan::{FileFolios, MemcgStats, ReclaimKnobs, UnmapFlush, Workingset};
use crate::linux::net::ipv4::tcp::NetKnobs;

/// A named kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    pub name: String,
    /// What the preset models (its file's `description`).
    pub description: String,
    /// The mainline release that merged the change a patched preset adds (its file's
    /// `merged_in`, e.g. "6.0"); not inherited.
    pub merged_in: Option<String>,
    pub flush: FlushKnobs,
    pub mm: MmKnobs,
    pub text: TextKnobs,
    /// An MPC8xx kernel (its `[ppc8xx]` section); `None` for the x86 kernels.
    pub ppc8xx: Option<Ppc8xxKnobs>,
    /// An arm64 kernel (its `[arm64]` section); `None` for the x86 and MPC8xx kernels.
    pub arm64: Option<Arm64Knobs>,
    /// The page allocator's era: which orders the per-CPU lists hold, batch, high, refill and
    /// drain (linux/mm/page_alloc.rs).
    pub page_alloc: PageAllocConfig,
    /// Page reclaim (linux/mm/vmscan.rs, linux/mm/rmap.rs): how `try_to_unmap` flushes, and
    /// `SWAP_CLUSTER_MAX`.
    pub reclaim: ReclaimKnobs,
    /// Networking (linux/net/ipv4/tcp.rs): TCP autocorking.
    pub net: NetKnobs,
    /// The scheduler's policy (linux/kernel/sched/fair.rs): CFS or EEVDF.
    pub sched: SchedKnobs,
    /// File systems (linux/fs/pipe.rs): how pipe sleepers are woken.
    pub fs: FsKnobs,
    /// Page frames per NUMA node (`node_mib` in `[page_alloc]`): `None` is linux/include/linux/gfp.rs's
    /// `PAGES_PER_NODE`. A reclaim workload scales memory down with it.
    pub node_pages: Option<u64>,
    /// The unscaled machine's pages per node when `node_pages` scales it down (a reclaim
    /// workload's `ram_mib`): boot sizes the watermarks and per-CPU lists for it and reclaim's
    /// scan targets keep its proportion to `SWAP_CLUSTER_MAX` (linux/mm/vmscan.rs).
    pub ram_pages: Option<u64>,
    /// How a node's several zones are used (`zones` in `[page_alloc]`): `None` for a kernel
    /// modelled with one zone per node, which refuses a named machine's zone split (`ram_pages`).
    pub zones: Option<ZoneRules>,
    /// The range policy is derived from the machine for `flushall_shift` presets: `None` means
    /// "use the per-family shift table" (`post_fix` chooses the table).
    pub shift_from_table: Option<bool>,
}

/// Every knob's value by subsystem, as a run records the configuration it ran (result schema 2:
/// the groups of [`KernelConfig`]; schema 1 wrote the flush, mm and text knobs flat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Knobs {
    pub flush: FlushKnobs,
    pub mm: MmKnobs,
    pub text: TextKnobs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppc8xx: Option<Ppc8xxKnobs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm64: Option<Arm64Knobs>,
    pub page_alloc: PageAllocConfig,
    /// `None` for an MPC8xx kernel, which models no reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim: Option<ReclaimKnobs>,
    /// `[net]`; absent from results written before it (read as off).
    #[serde(default)]
    pub net: NetKnobs,
    /// `[sched]`; absent from results written before it and where every knob is blank.
    #[serde(default, skip_serializing_if = "SchedKnobs::is_blank")]
    pub sched: SchedKnobs,
    /// `[fs]`; absent from results written before it and where every knob is blank (v4.9's pipes).
    #[serde(default, skip_serializing_if = "FsKnobs::is_blank")]
    pub fs: FsKnobs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pages: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ram_pages: Option<u64>,
    /// `None` for a kernel with one zone per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<ZoneRules>,
}

/// A knob's value is not among the allowed ones (`None`), or is wrong for another reason.
type Refusal = Option<String>;

/// One knob: its name (as `--set NAME=VALUE` and in a preset's `[section]`), the subsystem
/// section it belongs to, its allowed values, what it models, and how a value applies.
pub struct Knob {
    pub name: &'static str,
    pub section: &'static str,
    pub allowed: &'static str,
    pub doc: &'static str,
    needed: Needed,
    apply: fn(&mut KernelConfig, &str) -> Result<(), Refusal>,
}

/// Whether a preset without `inherits` must set a knob.
#[derive(Clone, Copy)]
enum Needed {
    Always,
    /// Only with `range_policy = "ceiling"`.
    WithCeiling,
    /// Only with `range_policy = "flushall-shift"`.
    WithFlushallShift,
    /// Never: it refines a knob that sets it (`era` sets every allocator rule).
    Refines,
    /// Never: newer than the complete presets, which keep its blank value (the behaviour
    /// before it); the presets that model it set it.
    Newer,
}

/// serde's `skip_serializing_if` for a knob that is 0 when absent from older results.
pub(crate) fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn on_off(v: &str) -> Result<bool, Refusal> {
    match v {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(None),
    }
}

mod arm64;
mod flush;
mod fs;
mod mm;
mod net;
mod page_alloc;
mod ppc8xx;
mod reclaim;
mod sched;
mod text;

/// Every knob, by subsystem section, in the order presets apply them (within a section, the
/// range policy before its parameters, the allocator's era before the rules it refines).
const TABLES: [&[Knob]; 10] = [
    flush::KNOBS,
    mm::KNOBS,
    text::KNOBS,
    ppc8xx::KNOBS,
    arm64::KNOBS,
    page_alloc::KNOBS,
    reclaim::KNOBS,
    net::KNOBS,
    sched::KNOBS,
    fs::KNOBS,
];

/// Every knob, in the order presets apply them.
pub fn knobs() -> impl Iterator<Item = &'static Knob> {
    TABLES.iter().flat_map(|t| t.iter())
}

/// The subsystem sections a preset file may have.
pub const SECTIONS: &[&str] =
    &["flush", "mm", "text", "ppc8xx", "page_alloc", "reclaim", "arm64", "net", "sched", "fs"];

/// The 8xx knobs, created blank by the first one set (a complete preset sets them all).
fn ppc(k: &mut KernelConfig) -> &mut Ppc8xxKnobs {
    k.ppc8xx.get_or_insert(Ppc8xxKnobs {
        version: Version::V2_6,
        pin_tlb: false,
        lose_pinned: false,
        switch_tlbia: false,
        hz: 100,
        writeback: Writeback::InContext,
        writeback_batch: 1,
        text_order: Default::default(),
        fget_light: Default::default(),
        linear_8m: false,
    })
}

fn knob_names(section: Option<&str>) -> String {
    knobs().filter(|k| section.is_none_or(|s| k.section == s)).map(|k| k.name).collect::<Vec<_>>().join(", ")
}

impl KernelConfig {
    /// Every knob's value (what a run records).
    pub fn knobs(&self) -> Knobs {
        Knobs {
            flush: self.flush,
            mm: self.mm,
            text: self.text,
            ppc8xx: self.ppc8xx,
            arm64: self.arm64,
            page_alloc: self.page_alloc,
            reclaim: self.ppc8xx.is_none().then_some(self.reclaim),
            net: self.net,
            sched: self.sched,
            fs: self.fs,
            node_pages: self.node_pages,
            ram_pages: self.ram_pages,
            zones: self.zones,
        }
    }

    /// Sets one knob from `KEY=VALUE` text.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let Some(knob) = knobs().find(|k| k.name == key) else {
            return Err(format!("unknown knob `{key}`; knobs: {}", knob_names(None)));
        };
        (knob.apply)(self, value).map_err(|r| match r {
            None => format!("knob `{key}`: `{value}` is not allowed; allowed: {}", knob.allowed),
            Some(why) => format!("knob `{key}` {why}"),
        })
    }

    /// A preset from its TOML text. `origin` names the file in errors; `base` resolves
    /// `inherits` (the built-in presets).
    pub fn from_toml(
        name: &str,
        origin: &str,
        text: &str,
        base: impl Fn(&str) -> Result<KernelConfig, String>,
    ) -> Result<KernelConfig, String> {
        Self::from_toml_table(name, origin, text, base).map_err(crate::toml_error::one_line)
    }

    fn from_toml_table(
        name: &str,
        origin: &str,
        text: &str,
        base: impl Fn(&str) -> Result<KernelConfig, String>,
    ) -> Result<KernelConfig, String> {
        let table: toml::Table =
            text.parse().map_err(|e: toml::de::Error| crate::toml_error::describe(origin, text, &e))?;
        let string = |key: &str| -> Result<Option<String>, String> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(format!("{origin}: key `{key}` must be a string")),
            }
        };
        for key in table.keys() {
            let known = ["description", "inherits", "merged_in"].contains(&key.as_str())
                || SECTIONS.contains(&key.as_str());
            if !known {
                return Err(format!(
                    "{origin}: unknown key `{key}`; allowed: description, inherits, merged_in, {}",
                    SECTIONS.join(", ")
                ));
            }
        }
        let inherits = string("inherits")?;
        let mut k = match &inherits {
            Some(b) => base(b).map_err(|e| format!("{origin}: key `inherits`: {e}"))?,
            // Every value is overwritten: completeness is checked below.
            None => blank(),
        };
        k.name = name.to_string();
        k.description = string("description")?.unwrap_or_default();
        k.merged_in = string("merged_in")?;
        if let Some(v) = k.merged_in.as_deref().filter(|v| v.split('.').any(|x| x.parse::<u32>().is_err())) {
            return Err(format!("{origin}: key `merged_in` = \"{v}\": expected a release such as \"6.0\""));
        }
        let mut set = Vec::new();
        for section in SECTIONS {
            let Some(v) = table.get(*section) else { continue };
            let toml::Value::Table(t) = v else {
                return Err(format!("{origin}: key `{section}` must be a table of knobs"));
            };
            if let Some(bad) = t.keys().find(|key| !knobs().any(|k| k.section == *section && k.name == *key))
            {
                return Err(format!(
                    "{origin}: unknown key `{section}.{bad}`; knobs of [{section}]: {}",
                    knob_names(Some(section))
                ));
            }
        }
        for knob in knobs() {
            let Some(v) = table.get(knob.section).and_then(|s| s.get(knob.name)) else { continue };
            let key = format!("{}.{}", knob.section, knob.name);
            let value = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
                _ => {
                    return Err(format!(
                        "{origin}: key `{key}`: a string, integer or boolean; allowed: {}",
                        knob.allowed
                    ))
                }
            };
            (knob.apply)(&mut k, &value).map_err(|r| match r {
                None => format!("{origin}: key `{key}`: `{value}` is not allowed; allowed: {}", knob.allowed),
                Some(why) => format!("{origin}: key `{key}` {why}"),
            })?;
            set.push(knob.name);
        }
        if inherits.is_none() {
            let needed = required(&k);
            if let Some(missing) = knobs().find(|n| needed(n) && !set.contains(&n.name)) {
                return Err(format!(
                    "{origin}: key `{}.{}` is missing; a preset without `inherits` sets every knob that applies ({})",
                    missing.section,
                    missing.name,
                    missing.allowed
                ));
            }
        }
        Ok(k)
    }
}

/// Which knobs a complete preset must set: an MPC8xx kernel its own section only (the x86
/// flush, mm and text knobs do not apply to it), an x86 one the rest as each knob's `needed`.
fn required(k: &KernelConfig) -> impl Fn(&Knob) -> bool {
    let policy = k.flush.policy;
    let ppc = k.ppc8xx.is_some();
    move |knob| match (knob.section, knob.needed) {
        ("ppc8xx", Needed::Newer) => false,
        ("ppc8xx", _) => ppc,
        _ if ppc => false,
        (_, Needed::Always) => true,
        (_, Needed::WithCeiling) => matches!(policy, RangePolicy::Ceiling(_)),
        (_, Needed::WithFlushallShift) => matches!(policy, RangePolicy::FlushallShift { .. }),
        (_, Needed::Refines | Needed::Newer) => false,
    }
}

/// A configuration every knob of which a complete preset overwrites.
fn blank() -> KernelConfig {
    KernelConfig {
        name: String::new(),
        description: String::new(),
        merged_in: None,
        flush: FlushKnobs {
            policy: RangePolicy::AlwaysFull,
            generations: false,
            early_return: false,
            read_tlb_gen: ReadTlbGen::Never,
            concurrent_local: false,
            coalesce_ipis: CoalesceIpis::Off,
            lazy_ipis: LazyIpis::Send,
            pti: false,
            invlpgb: false,
            cpumask: CpumaskUpdate::Eager,
            cpumask_line: false,
            lazy_test: LazyTest::BeforeQueue,
            remote_drain: RemoteDrain::PerEntry,
            range_cpus: false,
        },
        mm: MmKnobs {
            mmap_lock: false,
            free_before_flush: false,
            fault_lock: FaultLock::MmapLock,
            munmap_downgrade: false,
            rwsem_slowpath: RwsemSlowpath::Off,
            fault_around: FaultAround::Window,
        },
        text: TextKnobs { kernel_tlb: false },
        ppc8xx: None,
        arm64: None,
        page_alloc: PageAllocConfig::v4_9(),
        reclaim: ReclaimKnobs::V4_3,
        net: NetKnobs::default(),
        sched: SchedKnobs::default(),
        fs: FsKnobs::default(),
        node_pages: None,
        ram_pages: None,
        zones: None,
        shift_from_table: None,
    }
}
