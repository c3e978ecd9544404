//! `tlblab trace`: drive an address stream through one CPU's TLB hierarchy.

use anyhow::{bail, Context, Result};
use std::io::BufRead;
use std::path::PathBuf;
use tlblab_model::hw::tlb::{
    Geometry, Inclusion, PageSize, Replacement, Serves, StructureSpec, TlbHierarchy,
};
use tlblab_model::trace::{TraceDriver, TraceReport};
use tlblab_report::table::Table;

use crate::machines;
use crate::trace::reader::{self, Format};

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// A built-in machine (see `tlblab list`) or a profile file: its TLB hierarchy.
    #[arg(long, conflicts_with = "tlb")]
    pub machine: Option<String>,
    /// An explicit unified level, SETSxWAYS (e.g. 16x4); repeat for more levels, first = L1.
    #[arg(long, value_parser = parse_geometry)]
    pub tlb: Vec<Geometry>,
    /// Page size of the identity mapping the trace runs on.
    #[arg(long, default_value = "4k", value_parser = parse_page_size)]
    pub page_size: PageSize,
    /// Replacement policy (default: the profile's, or lru for --tlb).
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Inclusion between levels (default: the profile's, or non-inclusive for --tlb).
    #[arg(long, value_enum)]
    pub inclusion: Option<InclusionArg>,
    /// Input format.
    #[arg(long, value_enum, default_value = "raw64")]
    pub format: Format,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Trace file (`-` = standard input; gzip is detected).
    pub file: PathBuf,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Policy {
    Lru,
    Plru,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum InclusionArg {
    NonInclusive,
    Inclusive,
    Exclusive,
}

fn parse_geometry(s: &str) -> Result<Geometry, String> {
    let (sets, ways) =
        s.split_once(['x', 'X']).ok_or_else(|| format!("`{s}`: expected SETSxWAYS, e.g. 16x4"))?;
    let n = |t: &str| {
        t.trim().parse::<u32>().map_err(|_| format!("`{s}`: `{t}` is not a number; expected SETSxWAYS"))
    };
    Geometry::new(n(sets)?, n(ways)?).map_err(|e| format!("`{s}`: {e}"))
}

fn parse_page_size(s: &str) -> Result<PageSize, String> {
    PageSize::parse(s).ok_or_else(|| format!("`{s}`: allowed 4k, 512k, 2m, 8m, 1g"))
}

/// Builds the hierarchy the arguments describe.
pub fn build_hierarchy(args: &TraceArgs) -> Result<(TlbHierarchy, String)> {
    let replacement = args.policy.map(|p| match p {
        Policy::Lru => Replacement::Lru,
        Policy::Plru => Replacement::Plru,
    });
    let inclusion = args.inclusion.map(|i| match i {
        InclusionArg::NonInclusive => Inclusion::NonInclusive,
        InclusionArg::Inclusive => Inclusion::Inclusive,
        InclusionArg::Exclusive => Inclusion::Exclusive,
    });
    if let Some(m) = &args.machine {
        let p = machines::load(m)?;
        if !p.tlb.structures.iter().any(|s| s.level == 1 && s.page_sizes.contains(&args.page_size)) {
            bail!("machine `{}` has no first-level TLB for {} pages", p.name, args.page_size.name());
        }
        let specs = p.tlb_specs();
        let replacement = replacement.unwrap_or(p.tlb.replacement);
        if replacement == Replacement::Plru {
            if let Some(s) =
                specs.iter().find(|s| !s.geometry.ways().is_power_of_two() || s.geometry.ways() > 64)
            {
                bail!(
                    "--policy plru: structure `{}` has {} ways; tree-PLRU needs a power of two <= 64",
                    s.name,
                    s.geometry.ways()
                );
            }
        }
        check_host(&specs, replacement, &format!("--machine {}", p.name))?;
        let tlb = TlbHierarchy::new(&specs, replacement, inclusion.unwrap_or(p.tlb.inclusion))
            .map_err(anyhow::Error::msg)?;
        return Ok((tlb, p.name));
    }
    if args.tlb.is_empty() {
        bail!("give a TLB: --machine NAME|FILE, or --tlb SETSxWAYS (repeat for more levels)");
    }
    let replacement = replacement.unwrap_or(Replacement::Lru);
    let specs: Vec<StructureSpec> = args
        .tlb
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            if replacement == Replacement::Plru && (!g.ways().is_power_of_two() || g.ways() > 64) {
                bail!("--tlb {}x{}: tree-PLRU needs a power-of-two number of ways <= 64", g.sets(), g.ways());
            }
            if i >= 8 {
                bail!("at most 8 --tlb levels");
            }
            Ok(StructureSpec {
                name: format!("L{}", i + 1),
                level: i as u8 + 1,
                serves: Serves::Unified,
                page_sizes: vec![args.page_size],
                geometry: g,
            })
        })
        .collect::<Result<_>>()?;
    let desc = args.tlb.iter().map(|g| format!("{}x{}", g.sets(), g.ways())).collect::<Vec<_>>().join("+");
    check_host(&specs, replacement, &format!("--tlb {desc}"))?;
    let tlb = TlbHierarchy::new(&specs, replacement, inclusion.unwrap_or(Inclusion::NonInclusive))
        .map_err(anyhow::Error::msg)?;
    Ok((tlb, desc))
}

/// Refuses a TLB the host's memory cannot hold (docs/limits.md), before it is built.
fn check_host(specs: &[StructureSpec], replacement: Replacement, what: &str) -> Result<()> {
    let need = tlblab_model::host_memory::tlb_host_bytes(specs, replacement);
    crate::host::check(need, 1, what, crate::host::available().as_ref())
}

pub fn run(args: TraceArgs) -> Result<()> {
    let (tlb, desc) = build_hierarchy(&args)?;
    let mut driver = TraceDriver::new(tlb, args.page_size);
    let name = args.file.display().to_string();
    let mut input = reader::open(&args.file)?;
    drive(&mut *input, args.format, &name, &mut driver)?;
    let report = driver.report();
    if args.json {
        println!("{}", serde_json::to_string(&report).context("serialising the report")?);
    } else {
        print!("{}", render(&report, &desc));
    }
    Ok(())
}

/// Every access of `input` through `driver`.
pub fn drive(input: &mut dyn BufRead, format: Format, name: &str, driver: &mut TraceDriver) -> Result<()> {
    // A non-canonical address has no translation (the CPU raises #GP): refuse it rather than
    // alias it onto a canonical page. 57-bit (LA57) canonical form covers 48-bit user and kernel
    // addresses alike.
    let mut bad: Option<(u64, u64)> = None;
    let mut n = 0u64;
    reader::for_each_access(input, format, name, |a| {
        n += 1;
        if ((a.addr as i64) << 7 >> 7) as u64 != a.addr {
            bad.get_or_insert((n, a.addr));
            return;
        }
        driver.access(a.addr, a.size, a.kind)
    })?;
    if let Some((i, addr)) = bad {
        bail!("{name}: access {i} has non-canonical address {addr:#x} (bits 63..56 must all equal bit 56)");
    }
    Ok(())
}

fn ratio(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.4}", part as f64 / whole as f64)
    }
}

pub fn render(r: &TraceReport, desc: &str) -> String {
    let mut t = Table::new(["level", "lookups", "hits", "misses", "miss ratio"]);
    for l in &r.levels {
        let n = l.hits + l.misses;
        t.row([l.name.clone(), n.to_string(), l.hits.to_string(), l.misses.to_string(), ratio(l.misses, n)]);
    }
    t.row([
        "page walks".to_string(),
        "-".into(),
        "-".into(),
        r.walks.to_string(),
        ratio(r.walks, r.accesses),
    ]);
    format!("TLB {desc}, {} pages, {} accesses\n{}", r.page_size, r.accesses, t.render())
}
