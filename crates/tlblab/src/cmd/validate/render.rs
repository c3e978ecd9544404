//! `validate`'s text report: the table of cells, the count of consistent ones, and under it each
//! miss with the rates that tell where the two sides part (switches, interrupts, busy CPUs).

use tlblab_native::stats::Summary;
use tlblab_report::table::Table;

use super::{Case, Spread, Validation, CONSISTENT};

/// The moved keys a miss line names (validate/phase.rs lists them all in the JSON).
const MOVED_SHOWN: usize = 4;

/// Three significant figures.
fn sig(x: f64) -> String {
    let d = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.d$}")
}

pub fn render(v: &Validation) -> String {
    let h = &v.host;
    let mut out = format!(
        "validate: this host (Linux {}, {} CPUs) vs the simulation on machine `{}`, kernel {} ({})\n\
         (each side min / median / max over its runs; 'real per CPU got': each real run rescaled to the CPUs the \
         simulated run kept busy, by the CPU time the workload's own threads or processes got (a rate times sim / real \
         busy CPUs, a time the inverse); the verdict is on it for a CPU-bound workload, on the raw figure for one that \
         blocks; the simulated range also covers seed 1 on the host at the slow \
         and the fast quartile of the probe's measurements, and on the host as its cheap primitives measured just \
         before and just after the real runs, where the probe's report is at hand; error = (sim - real) / real of the medians; consistent = within \
         {:.0}% or the ranges overlap; TLB/op and CAL/op: flush and function-call interrupts per operation, the real \
         ones net of the idle background where measured)\n\n",
        h.uname,
        h.cpus,
        h.machine,
        h.kernel,
        h.kernel_reason,
        100.0 * CONSISTENT
    );
    let range = |s: &Spread| {
        let d = if s.median.abs() >= 100.0 { 0 } else { 3 };
        format!("{:.d$} [{:.d$}..{:.d$}]", s.median, s.min, s.max)
    };
    let f3 = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
    let mut t = Table::new([
        "workload",
        "point",
        "real (median [min..max])",
        "real per CPU got",
        "sim (median [min..max])",
        "unit",
        "error",
        "error per CPU",
        "verdict",
        "real TLB/op",
        "sim TLB/op",
        "real CAL/op",
        "sim CAL/op",
        "others' CPU",
    ]);
    for c in &v.cases {
        t.row([
            c.workload.clone(),
            format!("{} {}", c.tasks, c.point),
            range(&c.real),
            c.real_per_cpu.as_ref().map_or("-".into(), |n| {
                format!("{}{}", range(n), if c.cpu_bound { "" } else { " (blocks: not judged)" })
            }),
            range(&c.sim),
            c.unit.clone(),
            format!("{:+.1}%", 100.0 * c.error),
            c.error_per_cpu.map_or("-".into(), |e| format!("{:+.1}%", 100.0 * e)),
            c.verdict.clone(),
            f3(c.ipis_per_op.real),
            f3(c.ipis_per_op.sim),
            f3(c.cal_per_op.real),
            f3(c.cal_per_op.sim),
            c.others_share.map_or("-".into(), |i| format!("{:.0}%", 100.0 * i)),
        ]);
    }
    out += &t.render();
    out += &misses(&v.cases);
    let consistent = v.cases.iter().filter(|c| c.verdict == "consistent").count();
    out += &format!(
        "{consistent} of {} cells consistent; tools: {}\n",
        v.cases.len(),
        h.tools
            .iter()
            .map(|(t, p)| format!("{t} {}", p.as_deref().unwrap_or("(not installed)")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for n in &v.notes {
        out += &format!("note: {n}\n");
    }
    out
}

/// One line per cell that is not consistent: its context switches a operation (sleeps and
/// preemptions) and busy CPUs on both sides, and the interrupts where either side has some.
fn misses(cases: &[Case]) -> String {
    let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.4}"));
    let mut out = String::new();
    for c in cases.iter().filter(|c| c.verdict != "consistent") {
        let busy: Vec<f64> = c.real_runs.iter().map(|r| r.busy_cpus).collect();
        let real_busy = (!busy.is_empty()).then(|| Summary::of(&busy).median);
        let mut line = format!(
            "{} {} {} {}: a operation, real / sim: sleeps (voluntary switches) {} / {}, preemptions \
             (involuntary) {} / {}; busy CPUs {} / {}",
            c.verdict,
            c.workload,
            c.tasks,
            c.point,
            f(c.voluntary_switches_per_op.real),
            f(c.voluntary_switches_per_op.sim),
            f(c.involuntary_switches_per_op.real),
            f(c.involuntary_switches_per_op.sim),
            real_busy.map_or("-".into(), |b| format!("{b:.2}")),
            c.sim_busy_cpus.map_or("-".into(), |b| format!("{b:.2}")),
        );
        if c.ipis_per_op.real.unwrap_or(0.0) > 0.01 || c.ipis_per_op.sim.unwrap_or(0.0) > 0.01 {
            line += &format!("; TLB IPIs {} / {}", f(c.ipis_per_op.real), f(c.ipis_per_op.sim));
        }
        if let Some(m) = &c.phase {
            // The keys that moved most, before and after the runs, against the probe's.
            let mut keys: Vec<&str> = Vec::new();
            for s in &m.samples {
                for k in s.moved.iter().take(MOVED_SHOWN) {
                    if !keys.contains(&k.key.as_str()) {
                        keys.push(&k.key);
                    }
                }
            }
            let seen = |key: &str| {
                let v: Vec<String> = m
                    .samples
                    .iter()
                    .map(|s| s.moved.iter().find(|k| k.key == key).map_or("~".into(), |k| sig(k.sampled)))
                    .collect();
                let probe =
                    m.samples.iter().flat_map(|s| &s.moved).find(|k| k.key == key).map_or(0.0, |k| k.probe);
                format!("{key} {} ({})", v.join(", "), sig(probe))
            };
            if !keys.is_empty() {
                line += &format!(
                    "; host primitives moved before, after the runs (probe): {}",
                    keys.iter().take(MOVED_SHOWN).map(|k| seen(k)).collect::<Vec<_>>().join(", ")
                );
            }
        }
        out += &format!("miss: {line}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Pair, Spread};
    use super::*;

    #[test]
    fn each_miss_gets_a_line_with_both_sides_switches_and_only_misses_do() {
        let spread = |m: f64| Spread { median: m, min: m, max: m, runs: 1 };
        let pair = |r: f64, s: f64| Pair { real: Some(r), sim: Some(s) };
        let case = |verdict: &str, ipis: Pair| Case {
            workload: "hackbench-pipes".into(),
            tasks: 1,
            point: "groups".into(),
            metric: "Time".into(),
            unit: "s".into(),
            real: spread(0.9),
            real_per_cpu: None,
            real_runs: vec![],
            sim_busy_cpus: Some(1.98),
            cpu_bound: true,
            sim: spread(0.5),
            error: -0.44,
            error_per_cpu: None,
            verdict: verdict.into(),
            verdict_raw: verdict.into(),
            ipis_per_op: ipis,
            cal_per_op: pair(0.0, 0.0),
            voluntary_switches_per_op: pair(0.157, 0.06),
            involuntary_switches_per_op: pair(0.03, 0.002),
            sim_mmap_lock_sleeps_per_op: 0.0,
            sim_vma_start_write_sleeps_per_op: 0.0,
            others_share: None,
            phase: None,
        };
        let text = misses(&[case("consistent", pair(0.0, 0.0)), case("model low", pair(0.0, 0.0))]);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.starts_with("miss: model low hackbench-pipes 1 groups"), "{text}");
        assert!(text.contains("sleeps (voluntary switches) 0.1570 / 0.0600"), "{text}");
        assert!(text.contains("preemptions (involuntary) 0.0300 / 0.0020"), "{text}");
        assert!(text.contains("busy CPUs - / 1.98") && !text.contains("TLB"), "{text}");
        let text = misses(&[case("model high", pair(1.7, 1.9))]);
        assert!(text.contains("TLB IPIs 1.7000 / 1.9000"), "{text}");
        let mut c = case("model low", pair(0.0, 0.0));
        let moved = |key: &str, probe: f64, sampled: f64| super::super::phase::Moved {
            key: key.into(),
            probe,
            sampled,
        };
        let sample = |when, moved| super::super::phase::Sample { when, at_s: 1.0, moved };
        c.phase = Some(super::super::phase::Around {
            samples: vec![
                sample("before", vec![moved("kernel.syscall_ns", 150.0, 210.0)]),
                sample(
                    "after",
                    vec![
                        moved("memory.memcpy_mbps", 15000.0, 9000.0),
                        moved("kernel.syscall_ns", 150.0, 190.0),
                    ],
                ),
            ],
        });
        let text = misses(&[c]);
        assert!(
            text.contains("(probe): kernel.syscall_ns 210, 190 (150), memory.memcpy_mbps ~, 9000 (15000)"),
            "{text}"
        );
    }
}
