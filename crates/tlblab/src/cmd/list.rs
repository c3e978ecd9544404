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
    let mut t = Table::new(["ebizzy parameter (--param KEY=VALUE)", "values"]);
    for (n, d) in tlblab_model::workload::ebizzy::PARAMS {
        t.row([*n, *d]);
    }
    print!("\n{}", t.render());
    println!(
        "ebizzy options: -m (mmap/munmap each buffer) -M (never mmap) -n CHUNKS -s BYTES -T (touch only) \
         -R (random size) -l (byte memcpy) -z (linear search) -t THREADS (default 2 x CPUs; at most the \
         machine's CPUs) -S SECONDS"
    );
    let mut t = Table::new(["kernel preset (kernels/*.toml; --kernel also takes a file)", "what it models"]);
    for (n, d) in tlblab_model::kernel::preset::presets() {
        t.row([n, d.as_str()]);
    }
    print!("\n{}", t.render());
    let mut t = Table::new(["knob (--set KNOB=VALUE)", "preset section", "values", "what it models"]);
    for k in tlblab_model::kernel::config::KNOBS {
        t.row([k.name, k.section, k.allowed, k.doc]);
    }
    print!("\n{}", t.render());
    let layout = &tlblab_model::kernel::text::LAYOUT;
    println!("\nkernel text layout (kernel_tlb): {}, from {}", layout.name, layout.source);
    Ok(())
}
