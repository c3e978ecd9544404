//! SMT: the hardware threads of one core share its execution resources, so a thread runs slower
//! while its siblings issue too.
//!
//! The profile's `topology.smt_throughput` is what a core delivers with every thread busy,
//! against one thread alone (1.3: 30% more work per core, each thread at 0.65 of its lone
//! speed). With `n` of the core's threads busy the core delivers `T(n) = 1 + (n - 1) x
//! (smt_throughput - 1)` (every shipped profile has 2 threads per core, where `T(2)` is the
//! profile's figure; the line beyond it is an assumption), shared evenly: the execution part of
//! a step that starts while `n - 1` siblings issue takes `n / T(n)` as long.
//!
//! What is stretched is execution, not latency (docs/references/machine-costs.md#smt-sharing):
//! - a CPU spinning for acknowledgements or a lock (`PAUSE` in the loop hands the core to the
//!   sibling) or idle neither slows its siblings nor is slowed (the engine checks what the
//!   sibling is doing at the step's start; engine/sim.rs);
//! - a memory stall inside a step (a cache-line transfer on the flush paths, a store-buffer
//!   drain: `Kernel::stall`) takes as long beside a busy sibling as alone, and a sibling counts
//!   only for the share of its own step it issues (mean-field: where in the step the stalls
//!   fall is not modelled).
//!
//! One factor for all execution is a simplification: latency-bound kernel paths gain more from
//! a sibling than dense compute does.

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

    /// How much longer the execution buckets of a step of `cpu` take, in ppm (`PPM`: not at
    /// all), when `issuing(sibling)` says how much of the time (ppm) each of its siblings issues
    /// (0 outside a step), and `stall_ppm` of those buckets' time is this step's memory stalls.
    ///
    /// The siblings' shares add up to a busy-thread count between whole numbers, between whose
    /// stretches the factor goes linearly (a sibling issuing half the time takes half the share
    /// of one issuing all the time). Only the execution part stretches: a stall takes as long
    /// beside a busy sibling as alone.
    ///
    /// `stall_ppm` is asked only if it matters: with no sibling issuing the factor is `PPM`
    /// whatever the stalls (computing the share, a division, on every step was a hot spot).
    pub fn stretch_ppm(
        &self,
        cpu: u32,
        issuing: impl Fn(u32) -> i64,
        stall_ppm: impl FnOnce() -> i64,
    ) -> i64 {
        let busy: i64 = self.siblings[cpu as usize].iter().map(|&sib| issuing(sib).clamp(0, PPM)).sum();
        let (n, frac) = ((busy / PPM) as usize, busy % PPM);
        let lo = self.stretch_ppm[n];
        let hi = self.stretch_ppm.get(n + 1).copied().unwrap_or(lo);
        let exec = lo + (hi - lo) * frac / PPM;
        if exec == PPM {
            return PPM; // what the line below gives for any stall share
        }
        PPM + (exec - PPM) * (PPM - stall_ppm().clamp(0, PPM)) / PPM
    }
}

/// `part` of `whole`, in ppm (0 of nothing).
pub fn ppm_of(part: u64, whole: u64) -> i64 {
    if whole == 0 {
        return 0;
    }
    // In 64 bits when the product fits (every step's shares: the 128-bit division was a hot
    // spot); the same quotient either way.
    let part = part.min(whole);
    match part.checked_mul(PPM as u64) {
        Some(p) => (p / whole) as i64,
        None => (u128::from(part) * PPM as u128 / u128::from(whole)) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Topology = Topology { sockets: 1, cores_per_socket: 4, threads_per_core: 2 };

    #[test]
    fn a_step_stretches_only_while_its_sibling_is_busy() {
        let s = Smt::new(T, 1.3).unwrap();
        let on = |b: bool| if b { PPM } else { 0 };
        // CPU 1's sibling is CPU 5 (first threads 0-3, then their siblings).
        assert_eq!(s.stretch_ppm(1, |c| on(c == 5), || 0), 1_538_462); // 2 / 1.3
        assert_eq!(s.stretch_ppm(5, |c| on(c == 1), || 0), 1_538_462);
        assert_eq!(s.stretch_ppm(1, |c| on(c != 5), || 0), PPM, "busy CPUs on other cores do not count");
        // No gain from SMT: each of two busy threads at half speed; full gain: no slowdown.
        assert_eq!(Smt::new(T, 1.0).unwrap().stretch_ppm(0, |_| PPM, || 0), 2 * PPM);
        assert_eq!(Smt::new(T, 2.0).unwrap().stretch_ppm(0, |_| PPM, || 0), PPM);
        let one = Topology { threads_per_core: 1, ..T };
        assert!(Smt::new(one, 1.3).is_none());
    }

    #[test]
    fn four_way_smt_follows_the_line_through_the_two_way_figure() {
        let s = Smt::new(Topology { threads_per_core: 4, ..T }, 1.3).unwrap();
        // All four busy: T(4) = 1.9, each at 1.9 / 4 of its lone speed.
        assert_eq!(s.stretch_ppm(2, |_| PPM, || 0), (4.0 / 1.9 * 1e6_f64).round() as i64);
        assert_eq!(s.stretch_ppm(2, |c| if c == 6 { PPM } else { 0 }, || 0), 1_538_462);
        // Two siblings each issuing half the time weigh as one issuing all of it.
        assert_eq!(s.stretch_ppm(2, |c| if c == 6 || c == 10 { PPM / 2 } else { 0 }, || 0), 1_538_462);
    }

    #[test]
    fn a_memory_stall_is_not_stretched_and_a_stalled_sibling_takes_no_share() {
        let s = Smt::new(T, 1.3).unwrap();
        let busy = |c: u32| if c == 5 { PPM } else { 0 };
        // A step all stall (a cross-socket line transfer) takes as long beside a busy sibling.
        assert_eq!(s.stretch_ppm(1, busy, || PPM), PPM);
        // Half stall: half the execution-only stretch.
        assert_eq!(s.stretch_ppm(1, busy, || PPM / 2), PPM + (1_538_462 - PPM) / 2);
        // A sibling stalled half its step takes half the share of the core.
        assert_eq!(s.stretch_ppm(1, |c| if c == 5 { PPM / 2 } else { 0 }, || 0), PPM + (1_538_462 - PPM) / 2);
        assert_eq!(s.stretch_ppm(1, |_| 0, || 0), PPM, "a stalled sibling does not slow the core");
        assert_eq!(ppm_of(3, 4), 750_000);
        assert_eq!(ppm_of(5, 0), 0);
        // Past 64 bits the quotient is the 128-bit one.
        let big = u64::MAX / 3;
        assert_eq!(ppm_of(big - 7, big), (u128::from(big - 7) * 1_000_000 / u128::from(big)) as i64);
        assert_eq!(ppm_of(u64::MAX, u64::MAX), 1_000_000);
    }

    /// The stall share is computed only where it changes the factor, and the factor is the
    /// same as with it given: a core whose siblings do not issue, or one gaining nothing from a
    /// busy sibling (`smt_throughput` 2), never asks it.
    #[test]
    fn the_stall_share_is_asked_only_when_it_matters() {
        let asked = std::cell::Cell::new(0);
        let stall = |p: i64| {
            let asked = &asked;
            move || {
                asked.set(asked.get() + 1);
                p
            }
        };
        let s = Smt::new(T, 1.3).unwrap();
        for p in [0, PPM / 3, PPM] {
            assert_eq!(s.stretch_ppm(1, |_| 0, stall(p)), PPM);
            assert_eq!(Smt::new(T, 2.0).unwrap().stretch_ppm(1, |_| PPM, stall(p)), PPM);
        }
        assert_eq!(asked.get(), 0);
        assert_eq!(
            s.stretch_ppm(1, |c| if c == 5 { PPM } else { 0 }, stall(PPM / 2)),
            PPM + (1_538_462 - PPM) / 2
        );
        assert_eq!(asked.get(), 1);
    }
}
