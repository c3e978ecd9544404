//! `tlblab list`: what this build knows about.

use anyhow::Result;
use tlblab_report::table::Table;

use crate::machines;

pub fn run() -> Result<()> {
    let mut t = Table::new(["machine", "cpu", "cpus", "MHz", "TLB structures"]);
    for name in machines::builtin_names() {
        let p = machines::load(name)?;
        let tlbs = p
            .tlb
            .structures
            .iter()
            .map(|s| format!("{} {}x{}", s.name, s.sets(), s.ways))
            .collect::<Vec<_>>()
            .join(", ");
        t.row([
            p.name.clone(),
            p.cpu.model_name.clone(),
            p.topology.cpus().to_string(),
            p.clock_mhz().to_string(),
            tlbs,
        ]);
    }
    print!("machines (profiles/*.toml; --machine also takes a file):\n{}", t.render());
    println!("\ntrace formats: raw64, lackey, hex");
    println!("\nworkloads: {}", tlblab_model::run::Workload::names().join(", "));
    for suite in tlblab_model::workload::SUITES {
        let params = (suite.params)();
        if !params.is_empty() {
            let mut t =
                Table::new([format!("{} parameter (--param KEY=VALUE)", suite.name), "values".into()]);
            for (n, d) in params {
                t.row([n.to_string(), d.to_string()]);
            }
            print!("\n{}", t.render());
        }
        let options = (suite.options)();
        if !options.is_empty() {
            println!("{} options: {options}", suite.name);
        }
    }
    let mut t = Table::new(["kernel preset (kernels/*.toml; --kernel also takes a file)", "what it models"]);
    for (n, d) in tlblab_model::linux::preset::presets() {
        t.row([n, d.as_str()]);
    }
    print!("\n{}", t.render());
    let mut t = Table::new(["knob (--set KNOB=VALUE)", "preset section", "values", "what it models"]);
    for k in tlblab_model::linux::config::knobs() {
        t.row([k.name, k.section, k.allowed, k.doc]);
    }
    print!("\n{}", t.render());
    let layout = &tlblab_model::linux::arch::x86::text::LAYOUT;
    println!("\nkernel text layout (kernel_tlb): {}, from {}", layout.name, layout.source);
    Ok(())
}
