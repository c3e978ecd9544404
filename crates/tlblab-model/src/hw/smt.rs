//! SMT: the hardware threads of one core share its execution resources, so a thread runs slower
//! while its siblings run too.
//!
//! The profile's `topology.smt_throughput` is what a core delivers with every thread busy,
//! against one thread alone (1.3: 30% more work per core, each thread at 0.65 of its lone
//! speed). With `n` of the core's threads busy the core delivers `T(n) = 1 + (n - 1) x
//! (smt_throughput - 1)` (every shipped profile has 2 threads per core, where `T(2)` is the
//! profile's figure; the line beyond it is an assumption), shared evenly: a step that starts
//! while `n - 1` siblings are inside a step of their own takes `n / T(n)` as long.
//!
//! What is stretched is execution: a CPU spinning for acknowledgements or a lock (`PAUSE` in the
//! loop hands the core to the sibling) or idle neither slows its siblings nor is slowed (the
//! engine checks what the sibling is doing at the step's start; engine/sim.rs). One factor for
//! every kind of work is a simplification: latency-bound kernel paths gain more from a sibling
//! than dense compute does.

use crate::hw::topology::Topology;

/// Parts per million, as engine/noise.rs scales steps.
const PPM: i64 = 1_000_000;

/// A machine's SMT sharing rule.
#[derive(Debug, Clone)]
pub struct Smt {
    /// Per CPU, its core's other threads.
    siblings: Vec<Vec<u32>>,
    /// `[n - 1]`: a step's length, in ppm of its lone length, with `n` threads of the core busy.
    stretch_ppm: Vec<i64>,
}

impl Smt {
    /// `None` without SMT (one thread per core): nothing to share.
    pub fn new(topo: Topology, smt_throughput: f64) -> Option<Smt> {
        let n = topo.threads_per_core;
        if n < 2 {
            return None;
        }
        let stretch_ppm = (1..=n)
            .map(|busy| {
                let t = 1.0 + f64::from(busy - 1) * (smt_throughput - 1.0);
                (f64::from(busy) / t * PPM as f64).round() as i64
            })
            .collect();
        let siblings = (0..topo.cpus())
            .map(|cpu| {
                (0..n).map(|t| t * topo.cores() + topo.core_of(cpu)).filter(|&sib| sib != cpu).collect()
            })
            .collect();
        Some(Smt { siblings, stretch_ppm })
    }

    /// How much longer a step of `cpu` takes, in ppm (`PPM`: not at all), when `busy(sibling)`
    /// says which of its siblings are inside a step.
    pub fn stretch_ppm(&self, cpu: u32, busy: impl Fn(u32) -> bool) -> i64 {
        let n = self.siblings[cpu as usize].iter().filter(|&&sib| busy(sib)).count();
        self.stretch_ppm[n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Topology = Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 2 };

    #[test]
    fn a_step_stretches_only_while_its_sibling_is_busy() {
        let s = Smt::new(T, 1.3).unwrap();
        // CPU 1's sibling is CPU 5 (first threads 0-3, then their siblings).
        assert_eq!(s.stretch_ppm(1, |c| c == 5), 1_538_462); // 2 / 1.3
        assert_eq!(s.stretch_ppm(5, |c| c == 1), 1_538_462);
        assert_eq!(s.stretch_ppm(1, |c| c != 5), PPM, "busy CPUs on other cores do not count");
        // No gain from SMT: each of two busy threads at half speed; full gain: no slowdown.
        assert_eq!(Smt::new(T, 1.0).unwrap().stretch_ppm(0, |_| true), 2 * PPM);
        assert_eq!(Smt::new(T, 2.0).unwrap().stretch_ppm(0, |_| true), PPM);
        let one = Topology { threads_per_core: 1, ..T };
        assert!(Smt::new(one, 1.3).is_none());
    }

    #[test]
    fn four_way_smt_follows_the_line_through_the_two_way_figure() {
        let s = Smt::new(Topology { threads_per_core: 4, ..T }, 1.3).unwrap();
        // All four busy: T(4) = 1.9, each at 1.9 / 4 of its lone speed.
        assert_eq!(s.stretch_ppm(2, |_| true), (4.0 / 1.9 * 1e6_f64).round() as i64);
        assert_eq!(s.stretch_ppm(2, |c| c == 6), 1_538_462);
    }
}
