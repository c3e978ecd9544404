//! A small real result set for the export tests: two sweep columns × threads 1, 2 × seeds 1, 2.

use tlblab_model::linux::config::KernelConfig;
use tlblab_model::run::Workload;
use tlblab_model::time::Ps;
use tlblab_report::summary::{Cell, MetricInfo, ResultSet};

use crate::results::{run_cells, CellSpec, RunOptions};

pub fn set(workload: &str, labels: &[&str]) -> ResultSet {
    let profile = crate::machines::load("haswell-ep-2s").unwrap();
    let w = Workload::parse(workload).unwrap();
    let mut specs = Vec::new();
    for l in labels {
        let mut k = KernelConfig::preset("5.18.1").unwrap();
        if let Some(v) = l.strip_prefix("ceiling=") {
            k.set("ceiling", v).unwrap();
        }
        for t in [1, 2] {
            specs.push(CellSpec {
                label: l.to_string(),
                kernel: k.clone(),
                workload: w.clone(),
                tasks: t,
                row: t,
                seeds: vec![1, 2],
                warmup: Ps::US * 20,
                measure: Ps::US * 100,
            });
        }
    }
    let runs = run_cells(&profile, &specs, &RunOptions::default()).unwrap().runs;
    let m = &runs[0][0].metric;
    ResultSet {
        experiment: "test".into(),
        machine: profile.name.clone(),
        workload: w.name(),
        metric: MetricInfo {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
        },
        kernels: labels.iter().map(|s| s.to_string()).collect(),
        cells: specs
            .iter()
            .zip(runs)
            .map(|(c, runs)| Cell { kernel: c.label.clone(), threads: c.tasks, runs })
            .collect(),
    }
}
