//! `tlblab probe`: measures the host (tlblab-native's probe) and prints a table, JSON, or a
//! host machine profile built from the measurements alone.

use anyhow::{anyhow, Context, Result};
use std::path::PathBuf;
use tlblab_native::host_profile::spread::{self, End};
use tlblab_native::probe::{self, ProbeOptions, ProbeReport};
use tlblab_native::stats::{BlockEstimate, Summary};
use tlblab_report::table::Table;

use crate::store::write_atomic;

/// `--repeat N`: the probe N times and each key's spread.
pub mod repeat;

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// A few seconds in all (fewer runs, smaller sweeps); the full probe takes about a minute.
    #[arg(long)]
    pub quick: bool,
    /// Print the measurements as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write a machine profile of this host, every number citing its measurement; beside FILE
    /// the host at the slow and fast quartile of every measurement (FILE-slow.toml,
    /// FILE-fast.toml), which `validate --machine FILE` simulates too, and the probe's report
    /// (FILE-probe.json), from which it builds the host again as its primitives measure around
    /// each cell.
    #[arg(long, value_name = "FILE")]
    pub write_profile: Option<PathBuf>,
    /// The profile's `name` (what `--machine` shows in results).
    #[arg(long, default_value = "host")]
    pub name: String,
    /// Seed of the pointer-chase orders.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only print the raw CPUID leaves the probe decodes (the format of tests/data/cpuid-*.txt).
    #[arg(long)]
    pub dump_cpuid: bool,
    /// Run the whole probe N times and report, per profile key, the spread across the runs
    /// (warning where a key moved by more than 10% or the host was busy). With
    /// --write-profile FILE, FILE gets the run nearest every key's median and FILE-runI.toml
    /// each run's own profile.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
}

/// Runs the probe with progress on stderr.
pub fn measure(quick: bool, seed: u64) -> Result<ProbeReport> {
    probe::run(ProbeOptions { quick, seed }, |part| eprintln!("probe: {part} ..."))
        .map_err(|e| anyhow!("probe failed: {e}"))
}

pub fn run(a: ProbeArgs) -> Result<()> {
    if a.dump_cpuid {
        print!("{}", tlblab_native::cpuid::CpuidDump::read_host().to_text());
        return Ok(());
    }
    if a.repeat > 1 {
        return run_repeated(&a);
    }
    let r = measure(a.quick, a.seed)?;
    // Print the measurements first: a profile that cannot be built must not lose them.
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).context("serialising the probe report")?);
    } else {
        print!("{}", render(&r));
    }
    if let Some(path) = &a.write_profile {
        write_profile_and_report(&r, &a.name, path)?;
        eprintln!("probe: wrote {} and its report {}", path.display(), report_beside(path).display());
        // The host at the slow and fast quartile of every measurement beside it (`host-slow.toml`,
        // `host-fast.toml`): `validate --machine host.toml` simulates on them too.
        let stem = path.file_stem().map_or("host".into(), |s| s.to_string_lossy().into_owned());
        remove_spread(path, SpreadKind::Runs)?;
        for end in [End::Slow, End::Fast] {
            let side = format!("{end:?}").to_lowercase();
            let p = path.with_file_name(format!("{stem}-{side}.toml"));
            match spread::at_end(&r, end).map_err(|e| anyhow!(e)).and_then(|e| write_profile(&e, &a.name, &p))
            {
                Ok(()) => {}
                Err(e) => eprintln!(
                    "probe: warning: no {side} end of the spread ({e:#}); {} not written",
                    p.display()
                ),
            }
        }
    }
    Ok(())
}

/// The probe's report written beside the host profile `path` (`host.toml` -> `host-probe.json`):
/// `validate --machine` builds the host from it again as the primitives measure around each cell.
pub fn report_beside(path: &std::path::Path) -> PathBuf {
    let stem = path.file_stem().map_or("host".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-probe.json"))
}

/// Writes the profile built from `r` to `path` and `r` itself beside it ([`report_beside`]).
fn write_profile_and_report(r: &ProbeReport, name: &str, path: &std::path::Path) -> Result<()> {
    write_profile(r, name, path)?;
    let text = serde_json::to_string_pretty(r).context("serialising the probe report")?;
    write_atomic(&report_beside(path), text.as_bytes())
}

/// Which spread files a probe of the profile `path` (`host.toml`) writes beside it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SpreadKind {
    /// One probe's quartile ends: `host-slow.toml`, `host-fast.toml`.
    Ends,
    /// Each run of `probe --repeat`: `host-run1.toml`, `host-run2.toml`, ...
    Runs,
}

/// The spread files of `kind` beside `path` that exist, in order.
pub fn spread_files(path: &std::path::Path, kind: SpreadKind) -> Vec<PathBuf> {
    let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let mut found: Vec<(u64, PathBuf)> = match kind {
        SpreadKind::Ends => ["slow", "fast"]
            .iter()
            .enumerate()
            .map(|(i, s)| (i as u64, path.with_file_name(format!("{stem}-{s}.toml"))))
            .filter(|(_, p)| p.is_file())
            .collect(),
        SpreadKind::Runs => {
            let dir =
                path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            let prefix = format!("{stem}-run");
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n = name.strip_prefix(&prefix)?.strip_suffix(".toml")?;
                    let i = n.parse::<u64>().ok().filter(|_| n.bytes().all(|b| b.is_ascii_digit()))?;
                    Some((i, path.with_file_name(name)))
                })
                .filter(|(_, p)| p.is_file())
                .collect()
        }
    };
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// The profiles of the probe's spread written beside the host profile `path` (`host.toml`):
/// `host-slow.toml` and `host-fast.toml` (one probe's quartile ends), or `host-run1.toml`, ...
/// (each run of `probe --repeat`); a note says which were found. None for a built-in name.
pub fn spread_beside(
    path: &std::path::Path,
) -> Result<(Vec<tlblab_model::profile::MachineProfile>, Option<String>)> {
    if !path.is_file() {
        return Ok((Vec::new(), None));
    }
    let mut files = spread_files(path, SpreadKind::Ends);
    if files.is_empty() {
        files = spread_files(path, SpreadKind::Runs);
    }
    if files.is_empty() {
        return Ok((Vec::new(), None));
    }
    let ends =
        files.iter().map(|f| crate::machines::load(&f.display().to_string())).collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let note = format!(
        "the simulated range includes seed 1 on the probe's spread beside the profile: {}",
        names.join(", ")
    );
    Ok((ends, Some(note)))
}

/// Removes the spread files of `kind` an earlier probe of the same profile left beside `path`,
/// so `validate --machine` never takes an older probe's spread for this one's.
fn remove_spread(path: &std::path::Path, kind: SpreadKind) -> Result<()> {
    for p in spread_files(path, kind) {
        std::fs::remove_file(&p)
            .with_context(|| format!("removing the older spread file {}", p.display()))?;
        eprintln!("probe: removed {} (an earlier probe's spread)", p.display());
    }
    Ok(())
}

/// `--repeat N`: N whole probes, then the per-key spread.
fn run_repeated(a: &ProbeArgs) -> Result<()> {
    use self::repeat as rep;
    let n = a.repeat as usize;
    let (mut reports, mut profiles, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        eprintln!("probe: run {} of {n}", i + 1);
        let r = measure(a.quick, a.seed)?;
        match tlblab_native::host_profile::build(&r, &a.name) {
            Ok(b) => profiles.push(Some(b.profile)),
            Err(e) => {
                failed.push((i, e));
                profiles.push(None);
            }
        }
        reports.push(r);
    }
    let keys = rep::key_spreads(&profiles);
    let warn = rep::warnings(&reports, &keys, &failed);
    let central = rep::most_central(&profiles, &keys);
    if a.json {
        #[derive(serde::Serialize)]
        struct Repeated<'a> {
            keys: &'a [rep::KeySpread],
            warnings: &'a [String],
            most_central_run: Option<usize>,
            runs: &'a [ProbeReport],
        }
        let v = Repeated {
            keys: &keys,
            warnings: &warn,
            most_central_run: central.map(|i| i + 1),
            runs: &reports,
        };
        println!("{}", serde_json::to_string_pretty(&v).context("serialising the repeated probe")?);
    } else {
        print!("{}", rep::render(&reports, &keys, &warn));
    }
    if let Some(path) = &a.write_profile {
        let i = central.ok_or_else(|| anyhow!("no run of the probe gave a profile: nothing to write"))?;
        write_profile_and_report(&reports[i], &a.name, path)?;
        eprintln!(
            "probe: wrote {} and its report {} (run {}, the nearest every key's median)",
            path.display(),
            report_beside(path).display(),
            i + 1
        );
        // Every run's own profile beside it (`host-run1.toml`, ...), to validate on each.
        let stem = path.file_stem().map_or("host".into(), |s| s.to_string_lossy().into_owned());
        remove_spread(path, SpreadKind::Ends)?;
        remove_spread(path, SpreadKind::Runs)?;
        for (j, r) in reports.iter().enumerate().filter(|(j, _)| profiles[*j].is_some()) {
            let p = path.with_file_name(format!("{stem}-run{}.toml", j + 1));
            write_profile(r, &a.name, &p)?;
        }
    }
    Ok(())
}

/// Writes the host profile built from `r` (atomically).
pub fn write_profile(r: &ProbeReport, name: &str, path: &std::path::Path) -> Result<()> {
    let b = tlblab_native::host_profile::build(r, name).map_err(|e| anyhow!("{e}"))?;
    for w in &b.warnings {
        eprintln!("probe: warning: {w}");
    }
    let body = toml::to_string(&b.profile).context("serialising the host profile")?;
    let text = format!(
        "# Host profile written by `tlblab probe{} --write-profile` on {}.\n# Every number comes from the \
         probe's measurements on this host (or says what was assumed); no workload result feeds it.\n\n{body}",
        if r.quick { " --quick" } else { "" },
        r.date
    );
    write_atomic(path, text.as_bytes())
}

fn s(x: &Summary, digits: usize) -> String {
    format!("{:.*}", digits, x.median)
}

fn pct(x: &Summary) -> String {
    format!("{:.0}%", 100.0 * x.rel_iqr)
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}

pub fn render(r: &ProbeReport) -> String {
    let h = &r.host;
    let mut out = format!(
        "tlblab probe, {}{}: {} (family {} model {}), {} CPUs {:?}, Linux {}\n",
        r.date,
        if r.quick { " (quick)" } else { "" },
        h.model_name,
        h.family,
        h.model,
        h.cpus.len(),
        h.cpus,
        h.kernel
    );
    out += &format!(
        "virtualisation: {}{}; THP: {}; flush ceiling (debugfs): {}; PCID {} INVPCID {} INVLPGB {} PTI {}\n",
        h.hypervisor
            .as_ref()
            .map_or("none (bare metal)".into(), |v| format!("guest of `{v}` (IPIs are virtualised)")),
        if h.kvm_pv_tlb_flush { ", KVM PV TLB flush offered" } else { "" },
        h.thp.as_deref().unwrap_or("unavailable"),
        h.flush_ceiling.map_or("not readable".into(), |c| c.to_string()),
        h.pcid,
        h.invpcid,
        h.invlpgb,
        h.pti
    );
    out += &format!(
        "every figure: median over blocks (spread = interquartile range / median); chases {} blocks, shootdown {} \
         blocks\n\n",
        r.runs, r.raw.shootdown.runs
    );

    let mut t = Table::new(["TLB (CPUID)", "level", "serves", "page sizes", "entries", "ways", "source"]);
    for e in &r.cpuid_tlb.entries {
        t.row([
            format!("L{}", e.level),
            e.level.to_string(),
            format!("{:?}", e.serves).to_lowercase(),
            e.page_sizes.join("+"),
            e.entries.to_string(),
            if e.ways == e.entries { "full".into() } else { e.ways.to_string() },
            e.source.clone(),
        ]);
    }
    out += &t.render();
    for n in &r.cpuid_tlb.notes {
        out += &format!("  note: {n}\n");
    }

    out += &format!(
        "\ncore clock: {:.0} MHz{} (add chain {} MHz, spread {}; multiply chain {})\n  {}\n\n",
        r.clock.mhz,
        if r.clock.measured { "" } else { " (fallback)" },
        s(&r.raw.clock_mhz, 0),
        pct(&r.raw.clock_mhz),
        r.raw.clock_imul_mhz.map_or("-".into(), |m| format!("{} MHz, spread {}", s(&m, 0), pct(&m))),
        r.clock.source
    );
    let mut t = Table::new(["cache level", "working set", "ns", "cycles", "spread"]);
    for c in &r.raw.cache {
        t.row([
            c.name.clone(),
            format!("{} KiB", c.working_set >> 10),
            s(&c.ns, 2),
            format!("{:.1}", c.ns.median * r.clock.mhz / 1000.0),
            pct(&c.ns),
        ]);
    }
    out += &t.render();

    out += "\nTLB reach: one line per page, random cyclic order; ns per access\n";
    let mut t = Table::new(["pages", "4K", "spread", "THP", "spread", "penalty"]);
    for p in &r.raw.reach.points {
        t.row([
            p.pages.to_string(),
            s(&p.ns_4k, 2),
            pct(&p.ns_4k),
            p.ns_thp.map_or("-".into(), |x| s(&x, 2)),
            p.ns_thp.map_or("-".into(), |x| pct(&x)),
            opt(p.penalty(), 2),
        ]);
    }
    out += &t.render();
    if let Some(th) = r.raw.reach.thp_backed {
        out += &format!("  THP region backed by huge pages: {:.0}%\n", 100.0 * th);
    }
    match &r.reach_analysis {
        Some(a) => {
            out += &format!("  reading: {}\n", a.reading);
            out += &format!(
                "  L1 DTLB reach: {} pages (penalty from {}); L2 TLB reach: {} pages (walks from {})\n",
                a.l1_pages.map_or("not visible".into(), |n| n.to_string()),
                a.l1_next.map_or("-".into(), |n| n.to_string()),
                a.l2_pages.map_or("-".into(), |n| n.to_string()),
                a.l2_next.map_or("-".into(), |n| n.to_string()),
            );
            out += &format!(
                "  median curve: L2-TLB hit {} ns; page walk (PTEs cached, incl. L2 lookup) {} ns; at the largest size \
                 {:.2} ns\n",
                opt(a.l2_hit_ns, 2),
                opt(a.miss_ns, 2),
                a.max_ns
            );
        }
        None => out += "  no reach figures (see notes)\n",
    }

    out += &format!(
        "\nShootdown: madvise(MADV_DONTNEED) of N pages on CPU {}, sibling of the same mm busy on CPU {}; ns per call, \
         TLB interrupts per call\n",
        r.raw.shootdown.cpus.0,
        r.raw.shootdown.cpus.1.map_or("-".into(), |c| c.to_string())
    );
    let mut t = Table::new([
        "pages",
        "alone",
        "sibling",
        "sib-alone",
        "IPIs alone",
        "IPIs sibling",
        "sibling ran",
        "none PTEs",
    ]);
    for p in &r.raw.shootdown.points {
        t.row([
            p.pages.to_string(),
            s(&p.alone_ns, 0),
            p.sibling_ns.map_or("-".into(), |x| s(&x, 0)),
            opt(p.sibling_ns.map(|x| x.median - p.alone_ns.median), 0),
            opt(p.alone_ipis, 2),
            opt(p.sibling_ipis, 2),
            p.sibling_running.map_or("-".into(), |x| format!("{:.0}%", 100.0 * x)),
            p.empty_ns.map_or("-".into(), |x| s(&x, 0)),
        ]);
    }
    out += &t.render();
    if let Some(c) = &r.shootdown_costs {
        out += &format!(
            "  kink: between {} and {} pages (ceiling used: {}); IPIs per call while the sibling ran {}\n",
            c.kink_after,
            c.kink_before,
            c.ceiling,
            opt(c.ipis_per_call, 2)
        );
        if c.intercept_empty_ns.is_some() {
            out += &format!(
                "  none PTEs: the pages written and zapped before the block (no flush); TLB interrupts per 1-page \
                 call over them while the sibling ran {}\n",
                opt(c.empty_ipis_per_call, 2)
            );
        }
        let mut t =
            Table::new(["derived (per block, then over blocks)", "median", "min", "max", "resolved", "how"]);
        let mut add = |name: &str, e: Option<&BlockEstimate>| {
            if let Some(e) = e {
                t.row([
                    name.to_string(),
                    format!("{:.1}", e.value),
                    format!("{:.1}", e.blocks.min),
                    format!("{:.1}", e.blocks.max),
                    if e.resolved { "yes".into() } else { "below resolution".into() },
                    e.how.clone(),
                ]);
            }
        };
        add("slope below ns/page", Some(&c.slope_below_ns));
        add("slope above ns/page", Some(&c.slope_above_ns));
        add("INVLPG ns", Some(&c.invlpg_ns));
        add("full flush ns", Some(&c.full_flush_ns));
        add("intercept below ns", Some(&c.intercept_below_ns));
        add("intercept over none PTEs ns", c.intercept_empty_ns.as_ref());
        add("flush call ns", c.flush_call_ns.as_ref());
        add("IPI round trip ns (1 page)", c.ipi_round_trip_ns.as_ref());
        add("IPI round trip ns (full)", c.ipi_round_trip_full_ns.as_ref());
        add("target interrupted ns", c.target_cost_ns.as_ref());
        if let Some(a) = &r.reach_analysis {
            add("L2-TLB hit ns", a.l2_hit.as_ref());
            add("page walk ns", a.walk.as_ref());
        }
        out += &t.render();
    }
    if let Some(c) = &r.raw.c2c_ns {
        out += &format!(
            "\ncache-line transfer (one way): best {:.1} ns, median {} ns over {} runs (spread {})\n",
            c.min,
            s(c, 1),
            c.n,
            pct(c)
        );
    }
    let mut t =
        Table::new(["page faults", "fault+zero ns/page", "spread", "unmap+free ns/page", "IPIs per munmap"]);
    for f in &r.raw.faults {
        t.row([
            format!("{} thread(s)", f.threads),
            s(&f.fault_ns, 0),
            pct(&f.fault_ns),
            s(&f.unmap_ns, 1),
            opt(f.ipis_per_unmap, 2),
        ]);
    }
    out += &format!("\n{}", t.render());
    if let Some(w) = &r.raw.fault_warm_ns {
        out += &format!("fault+zero on a warm page (recycled): {} ns/page (spread {})\n", s(w, 0), pct(w));
    }
    if let Some(f) = &r.raw.fault_around {
        out += &format!(
            "shmem read fault mapping 16 pages: {} ns, mapping 1: {} ns ({:.1} ns a page fault-around maps)\n",
            s(&f.dense_ns, 0),
            s(&f.sparse_ns, 0),
            f.per_page_ns()
        );
    }
    if let Some(c) = &r.raw.clear_dram_mbps {
        out += &format!("clear_page past the LLC: {} MB/s\n", s(c, 0));
    }
    if let Some(l) = &r.raw.second_level {
        out += &format!(
            "first writes to fresh pages after a pause: {} ns/page, slow ones {} ns/page ({} a 2 MiB block); \
             recycled pages' slow ones {} ns/page\n",
            s(&l.fresh_ns, 0),
            s(&l.fresh_slow_ns, 0),
            s(&l.fresh_slow_per_2m, 1),
            s(&l.recycled_slow_ns, 0)
        );
    }
    if let Some(c) = &r.raw.read_page_mbps {
        out += &format!("reading a cache-resident page a word at a time: {} MB/s\n", s(c, 0));
    }
    if let Some(w) = &r.raw.ttwu_ns {
        out += &format!(
            "waking a thread asleep on another CPU: {} ns on the waker (spread {})\n",
            s(w, 0),
            pct(w)
        );
    }
    if let Some(w) = &r.raw.wake_latency_ns {
        out += &format!("  until the woken thread has run: {} ns (spread {})\n", s(w, 0), pct(w));
    }
    if let Some(points) = &r.raw.wake_latency_by_idle {
        let p: Vec<String> =
            points.iter().map(|p| format!("{} us idle {} ns", p.idle_us, s(&p.latency_ns, 0))).collect();
        out += &format!("  the same latency by the time its CPU idled: {}\n", p.join(", "));
    }
    if let Some(c) = &r.raw.core_sharing {
        out += &format!(
            "one CPU with the other busy: a store-bound loop {:.3} -> {:.3} ns an iteration (x{:.2}), a multiply \
             chain {:.3} -> {:.3} (x{:.2}): {}\n",
            c.store_alone_ns.median,
            c.store_busy_ns.median,
            c.store_slowdown(),
            c.chain_alone_ns.median,
            c.chain_busy_ns.median,
            c.chain_slowdown(),
            if c.shared() {
                "they share a core's issue slots (not in the profile: docs/validate.md#shared-core)"
            } else {
                "separate cores"
            }
        );
    }
    out += &format!(
        "null syscall {} ns; context switch {} ns; clear_page {} MB/s; memcpy {} MB/s\n",
        s(&r.raw.syscall_ns, 0),
        s(&r.raw.context_switch_ns, 0),
        s(&r.raw.clear_page_mbps, 0),
        s(&r.raw.memcpy_mbps, 0)
    );
    if let Some(f) = &r.raw.fs {
        out += &format!(
            "tmpfs calls under {} ({} files): create {} ns, open of an existing file {} ns, the walk to \
             -EISDIR {} ns, mkdir -EEXIST {} ns, \
             empty write {} ns, close {} ns; fs_mark's user work {} ns a file ({} ns over an array touched \
             first); pwrite of a cached 4 KiB page {} ns\n",
            f.mount,
            f.files,
            s(&f.create_ns, 0),
            s(&f.open_existing_ns, 0),
            s(&f.walk_ns, 0),
            s(&f.mkdir_exists_ns, 0),
            s(&f.write_empty_ns, 0),
            s(&f.close_ns, 0),
            s(&f.user_ns, 0),
            f.user_touched_ns.as_ref().map_or("-".into(), |t| s(t, 0)),
            f.pwrite_page_ns.as_ref().map_or("-".into(), |t| s(t, 0))
        );
    }
    let mut t = Table::new(["part", "seconds", "others' CPU share", "steal"]);
    for (name, i) in &r.interference {
        t.row([
            name.clone(),
            i.map_or("-".into(), |i| format!("{:.1}", i.seconds)),
            i.map_or("-".into(), |i| format!("{:.1}%", 100.0 * i.others_share)),
            i.map_or("-".into(), |i| format!("{:.1}%", 100.0 * i.steal_share)),
        ]);
    }
    out += &format!("\ninterference (CPU time of other processes during each part):\n{}", t.render());
    if !r.notes.is_empty() {
        out += "\nnotes:\n";
        for n in &r.notes {
            out += &format!("  - {n}\n");
        }
    }
    out
}
