//! `/proc/interrupts`: per-CPU interrupt counts by row. The `TLB` row counts flush IPIs a CPU
//! *received* (`flush_tlb_func` increments `irq_tlb_count` on every remote run;
//! docs/references/linux-mm.md#flush_tlb_func step 1); `CAL` counts other function-call IPIs. Under a
//! hypervisor that offers a paravirtual remote flush (KVM PV TLB flush, Hyper-V) preempted targets are
//! flushed by the host instead and never count, so a zero `TLB` delta there means "not visible", not "none".

use serde::Serialize;

/// One row: `NAME:` then one count per CPU, then an optional description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub name: String,
    pub per_cpu: Vec<u64>,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interrupts {
    /// Column headings, e.g. `CPU0`, `CPU1`.
    pub cpus: Vec<String>,
    pub rows: Vec<Row>,
}

impl Interrupts {
    /// Parses the text of `/proc/interrupts`. Rows with fewer counts than CPUs (`ERR:`, `MIS:`)
    /// keep the counts they have.
    pub fn parse(text: &str) -> Result<Interrupts, String> {
        let mut lines = text.lines();
        let header = lines.next().ok_or("empty /proc/interrupts text")?;
        let cpus: Vec<String> = header.split_whitespace().map(str::to_string).collect();
        if cpus.is_empty() || !cpus.iter().all(|c| c.starts_with("CPU")) {
            return Err(format!("first line `{header}` is not a CPU header (CPU0 CPU1 ...)"));
        }
        let mut rows = Vec::new();
        for (n, line) in lines.enumerate() {
            let Some((name, rest)) = line.split_once(':') else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(format!("line {}: `{line}` has no `NAME:`", n + 2));
            };
            let mut per_cpu = Vec::new();
            let mut words = rest.split_whitespace().peekable();
            while per_cpu.len() < cpus.len() {
                match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                    Some(v) => {
                        per_cpu.push(v);
                        words.next();
                    }
                    None => break,
                }
            }
            rows.push(Row {
                name: name.trim().to_string(),
                per_cpu,
                description: words.collect::<Vec<_>>().join(" "),
            });
        }
        Ok(Interrupts { cpus, rows })
    }

    /// Reads and parses the live file.
    pub fn read() -> Result<Interrupts, String> {
        let text = std::fs::read_to_string("/proc/interrupts")
            .map_err(|e| format!("cannot read /proc/interrupts: {e}"))?;
        Interrupts::parse(&text).map_err(|e| format!("/proc/interrupts: {e}"))
    }

    pub fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The row's count summed over CPUs; `None` if the row does not exist.
    pub fn total(&self, name: &str) -> Option<u64> {
        self.row(name).map(|r| r.per_cpu.iter().sum())
    }

    /// `later - self` for one row, per CPU (counters only grow; a CPU that went away reads 0).
    pub fn delta(&self, later: &Interrupts, name: &str) -> Option<Vec<u64>> {
        let (a, b) = (self.row(name)?, later.row(name)?);
        Some(
            b.per_cpu
                .iter()
                .enumerate()
                .map(|(i, v)| v.saturating_sub(*a.per_cpu.get(i).unwrap_or(&0)))
                .collect(),
        )
    }
}

/// The interrupt rows a measurement reads, sampled before and after it.
#[derive(Debug, Clone)]
pub struct IpiCounter {
    start: Option<Interrupts>,
}

/// Flush and function-call IPIs received during a measurement, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IpiCounts {
    /// `None` when `/proc/interrupts` or its `TLB` row is missing.
    pub tlb: Option<u64>,
    pub cal: Option<u64>,
}

impl IpiCounter {
    pub fn start() -> IpiCounter {
        IpiCounter { start: Interrupts::read().ok() }
    }

    pub fn stop(&self) -> IpiCounts {
        let (Some(a), Ok(b)) = (&self.start, Interrupts::read()) else { return IpiCounts::default() };
        let sum = |name| a.delta(&b, name).map(|v| v.iter().sum());
        IpiCounts { tlb: sum("TLB"), cal: sum("CAL") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> String {
        std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn kvm_guest_sample() {
        let i = Interrupts::parse(&sample("proc-interrupts-kvm-2cpu.txt")).unwrap();
        assert_eq!(i.cpus, ["CPU0", "CPU1"]);
        let tlb = i.row("TLB").unwrap();
        assert_eq!(tlb.description, "TLB shootdowns");
        assert_eq!(tlb.per_cpu.len(), 2);
        assert_eq!(i.total("TLB"), Some(tlb.per_cpu[0] + tlb.per_cpu[1]));
        assert!(i.row("CAL").unwrap().description.contains("Function call"));
        // ERR: has one count and no description.
        assert_eq!(i.row("ERR").unwrap().per_cpu.len(), 1);
        // Device rows keep their chip and name in the description.
        assert!(i.rows.iter().any(|r| r.description.contains("virtio")));
    }

    #[test]
    fn deltas_per_cpu() {
        let a = Interrupts::parse("  CPU0 CPU1\nTLB: 5 7 TLB shootdowns\n").unwrap();
        let b = Interrupts::parse("  CPU0 CPU1\nTLB: 9 7 TLB shootdowns\n").unwrap();
        assert_eq!(a.delta(&b, "TLB"), Some(vec![4, 0]));
        assert_eq!(a.delta(&b, "CAL"), None);
    }

    #[test]
    fn errors_name_the_line() {
        assert!(Interrupts::parse("TLB: 1 2\n").unwrap_err().contains("CPU header"));
        let e = Interrupts::parse("CPU0\nTLB: 1\ngarbage\n").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
    }
}
