//! `tlblab layout`: seed 003's own question, "bring the hotpath functions into the same pages".
//! Takes an MPC8xx kernel's text layout and the paths a workload runs, moves the hot kernel
//! functions together (`TextLayout::hot_ordered`), and reports the distinct text pages and what
//! the simulation predicts (I-TLB misses, handler time, dd's real time) before and after, by
//! running dd on both layouts.

use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use tlblab_model::linux::arch::ppc::mm::mmu_8xx;
use tlblab_model::linux::arch::ppc::system_map::TextLayout;
use tlblab_model::run::{self, RunResult, RunSpec, Workload};
use tlblab_model::workload::dd::Dd;
use tlblab_report::table::Table;

use crate::machines;
use crate::spec::{kernel_config, parse_duration};

#[derive(Debug, clap::Args)]
pub struct LayoutArgs {
    /// An MPC8xx machine (walk.kind = "software").
    #[arg(long, default_value = "mpc855t")]
    pub machine: String,
    /// An MPC8xx kernel preset (2.4-8xx, 2.6-8xx) or preset file.
    #[arg(long, default_value = "2.6-8xx")]
    pub kernel: String,
    /// Knob overrides, KNOB=VALUE (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// A text layout file (default: the kernel version's shipped layouts/linux-*-dd.toml).
    #[arg(long)]
    pub layout: Option<String>,
    /// The paths whose kernel functions are hot, comma separated, in the order they run
    /// (default: the kernel's `text_order = hot` paths, dd_read_user,sys_read,dd_write_user,
    /// sys_write,writeback,timer_tick).
    #[arg(long)]
    pub paths: Option<String>,
    #[arg(long, default_value = "150ms", value_parser = parse_duration)]
    pub warmup: tlblab_model::time::Ps,
    #[arg(long, default_value = "300ms", value_parser = parse_duration)]
    pub duration: tlblab_model::time::Ps,
}

pub fn run(args: LayoutArgs) -> Result<()> {
    let profile = machines::load(&args.machine)?;
    let kernel = kernel_config(&args.kernel, &args.set)?;
    let Some(knobs) = kernel.ppc8xx else {
        bail!(
            "--kernel {}: not an MPC8xx kernel (no [ppc8xx] section); allowed: 2.4-8xx, 2.6-8xx",
            args.kernel
        );
    };
    let (warmup, measure) = (args.warmup, args.duration);
    let before = match &args.layout {
        Some(f) => {
            let text = crate::input::read_text(std::path::Path::new(f), "layout", crate::input::TEXT_LIMIT)
                .map_err(|e| anyhow!("--layout: {e:#}"))?;
            let l = TextLayout::parse(f, &text).map_err(|e| anyhow!("--layout {e}"))?;
            mmu_8xx::check_text(knobs.version, &l).map_err(|e| anyhow!("--layout {f}: {e}"))?;
            l
        }
        None => (*mmu_8xx::builtin_layouts(knobs.version).0).clone(),
    };
    let paths: Vec<&str> = match &args.paths {
        Some(p) => p.split(',').map(str::trim).filter(|p| !p.is_empty()).collect(),
        None => mmu_8xx::HOT_PATHS.to_vec(),
    };
    let after = before.hot_ordered(&paths).map_err(|e| anyhow!("--paths: {e}"))?;
    let simulate = |l: &TextLayout| -> Result<RunResult> {
        let dd = Dd {
            of: "file".into(),
            count: tlblab_model::workload::dd::SEED_COUNT,
            notrunc: false,
            text: Some(Arc::new(l.clone())),
        };
        let spec = RunSpec {
            kernel: kernel.clone(),
            workload: Workload::from(dd),
            tasks: 1,
            seed: 1,
            warmup,
            measure,
        };
        run::check(&profile, &spec).map_err(|e| anyhow!(e))?;
        crate::host::check_run(&profile, &spec, 1)?;
        run::run(&profile, &spec).map_err(|e| anyhow!(e))
    };
    let (rb, ra) = (simulate(&before)?, simulate(&after)?);
    let fp = |l: &TextLayout| l.footprint(paths.iter().copied()).expect("paths checked");
    let (fb, fa) = (fp(&before), fp(&after));
    println!(
        "{} on {} ({}): hot kernel functions of {} moved together\n",
        kernel.name,
        profile.name,
        before.name,
        paths.join(", ")
    );
    let mut t = Table::new(["", "before", "after"].map(String::from));
    let row = |t: &mut Table, k: &str, b: String, a: String| t.row(vec![k.to_string(), b, a]);
    row(
        &mut t,
        "kernel text pages of the paths",
        fb.kernel_pages.len().to_string(),
        fa.kernel_pages.len().to_string(),
    );
    row(&mut t, "user text pages", fb.user_pages.len().to_string(), fa.user_pages.len().to_string());
    for (k, n) in [
        ("I-TLB misses per block, user", "itlb_miss_user"),
        ("I-TLB misses per block, kernel", "itlb_miss_kernel"),
        ("D-TLB misses per block", "dtlb_miss_kernel"),
        ("ITLB handler clocks per block", "itlb_kernel_clocks"),
        ("sys clocks per block", "sys_clocks"),
    ] {
        row(&mut t, k, format!("{:.2}", rb.per_op(n)), format!("{:.2}", ra.per_op(n)));
    }
    row(
        &mut t,
        "dd real time (s, 3840 blocks)",
        format!("{:.3}", rb.metric.value),
        format!("{:.3}", ra.metric.value),
    );
    println!("{}", t.render());
    Ok(())
}
