//! The engine's agenda: every CPU has at most one next event time (the end of its current step,
//! or the arrival of an interrupt, whichever is earlier), and the engine always advances the
//! CPU with the earliest one; equal times go to the lower CPU id (docs/design.md#engine).
//!
//! A tournament tree over the CPUs keeps the earliest at the root: changing one CPU's time
//! replays the log2(CPUs) matches above it, and nothing is allocated while a run goes on. With
//! one entry per CPU instead of one per event, a shootdown storm (tens of millions of IPIs per
//! simulated second on a 56-core machine) never grows the structure.

use std::cell::Cell;

use crate::hw::cpumask::NR_CPUS;
use crate::time::Ps;

const NEVER: Ps = Ps(u64::MAX);

#[derive(Debug, Clone)]
pub struct Agenda {
    /// Leaves start at `width`; a leaf beyond the last CPU never wins.
    width: usize,
    /// `nodes[i]`: the winner of the match at node `i` (node 1 is the root) and its time; the
    /// leaves are the CPUs' own times, in the same flat array. Sized for the largest machine, so
    /// an index masked to it needs no bounds check.
    nodes: Box<[(Ps, u32); NODES]>,
    /// Bumped by every [`Agenda::set`]: the agenda is unchanged while it is.
    version: u64,
    /// The last [`Agenda::first_excluding`] answer: `(version, cpu, answer)`. A handler asks it
    /// before each request it drains, and the agenda rarely changes between two requests.
    excluding: Cell<Excluding>,
}

/// Nodes of the largest tree: `2 * width` with `width` at most [`NR_CPUS`] (a power of two).
const NODES: usize = 2 * NR_CPUS;
const _: () = assert!(NR_CPUS.is_power_of_two());

/// A kept [`Agenda::first_excluding`] answer: the version it was computed at, the CPU, the answer.
type Excluding = (u64, u32, Option<(Ps, u32)>);

impl Agenda {
    pub fn new(cpus: u32) -> Agenda {
        let width = (cpus.max(1) as usize).next_power_of_two();
        assert!(width <= NR_CPUS, "{cpus} CPUs: at most {NR_CPUS}");
        let mut nodes = Box::new([(NEVER, 0u32); NODES]);
        for (i, n) in nodes[width..2 * width].iter_mut().enumerate() {
            n.1 = i as u32;
        }
        for i in (1..width).rev() {
            nodes[i] = nodes[2 * i];
        }
        Agenda { width, nodes, version: 0, excluding: Cell::new((u64::MAX, 0, None)) }
    }

    /// Sets `cpu`'s next event time (`None`: nothing to do until something wakes it).
    pub fn set(&mut self, cpu: u32, time: Option<Ps>) {
        self.version += 1;
        let mut i = (self.width + cpu as usize) % NODES;
        self.nodes[i].0 = time.unwrap_or(NEVER);
        while i > 1 {
            i /= 2;
            let (a, b) = (self.nodes[(2 * i) % NODES], self.nodes[(2 * i + 1) % NODES]);
            // On equal times the left (lower) CPU wins, so ties go by CPU id. One compare of
            // times, which compiles to conditional moves (the matches are coin flips to a
            // branch predictor).
            let w = if b.0 < a.0 { b } else { a };
            // A node that keeps its winner leaves every node above as it was.
            if std::mem::replace(&mut self.nodes[i], w) == w {
                break;
            }
        }
    }

    /// `cpu`'s next event time, if any.
    pub fn get(&self, cpu: u32) -> Option<Ps> {
        let t = self.nodes[(self.width + cpu as usize) % NODES].0;
        (t != NEVER).then_some(t)
    }

    /// The earliest `(time, cpu)` of every CPU but `cpu`: the best of the winners `cpu`'s path
    /// to the root meets (read-only, log2(CPUs) nodes).
    pub fn first_excluding(&self, cpu: u32) -> Option<(Ps, u32)> {
        let (version, of, known) = self.excluding.get();
        if version == self.version && of == cpu {
            return known;
        }
        let first = self.walk_excluding(cpu);
        self.excluding.set((self.version, cpu, first));
        first
    }

    /// [`Self::first_excluding`], computed.
    fn walk_excluding(&self, cpu: u32) -> Option<(Ps, u32)> {
        let mut i = (self.width + cpu as usize) % NODES;
        let mut best = (NEVER, u32::MAX);
        while i > 1 {
            let sib = self.nodes[i ^ 1];
            if sib.0 < best.0 || (sib.0 == best.0 && sib.1 < best.1) {
                best = sib;
            }
            i /= 2;
        }
        (best.0 != NEVER).then_some(best)
    }

    /// The earliest `(time, cpu)`, if any CPU has an event.
    pub fn first(&self) -> Option<(Ps, u32)> {
        let (t, w) = self.nodes[1];
        (t != NEVER).then_some((t, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drains the agenda, clearing each CPU as it is taken.
    fn order(a: &mut Agenda) -> Vec<(u64, u32)> {
        std::iter::from_fn(|| {
            let (t, c) = a.first()?;
            a.set(c, None);
            Some((t.0, c))
        })
        .collect()
    }

    #[test]
    fn earliest_first_ties_by_cpu_id() {
        let mut a = Agenda::new(5);
        a.set(3, Some(Ps(10)));
        a.set(4, Some(Ps(30)));
        a.set(1, Some(Ps(10)));
        a.set(0, Some(Ps(20)));
        assert_eq!(order(&mut a), [(10, 1), (10, 3), (20, 0), (30, 4)]);
        assert_eq!(a.first(), None);
    }

    #[test]
    fn moving_a_time_later_or_earlier_reorders() {
        let mut a = Agenda::new(3);
        a.set(0, Some(Ps(5)));
        a.set(1, Some(Ps(7)));
        a.set(2, Some(Ps(9)));
        a.set(0, Some(Ps(8)));
        assert_eq!(a.first(), Some((Ps(7), 1)));
        a.set(2, Some(Ps(1)));
        assert_eq!(a.first(), Some((Ps(1), 2)));
        assert_eq!(a.get(0), Some(Ps(8)));
        a.set(2, None);
        assert_eq!(a.get(2), None);
        assert_eq!(order(&mut a), [(7, 1), (8, 0)]);
    }

    /// The agenda against a linear scan of every CPU's time, for any CPU count (powers of two
    /// and not, one CPU, enough for a 3-level tree and more) and any schedule of updates: after
    /// each update `first`, `first_excluding` every CPU, and `get` agree with the scan, ties going
    /// to the lower CPU id. Times come from a small range so ties are common.
    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn schedule() -> impl Strategy<Value = (u32, Vec<(u32, Option<u64>)>)> {
            (1u32..300).prop_flat_map(|cpus| {
                let update = (0..cpus, proptest::option::weighted(0.8, 0u64..24));
                (Just(cpus), proptest::collection::vec(update, 0..600))
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

            #[test]
            fn agrees_with_a_linear_scan((cpus, updates) in schedule()) {
                let mut a = Agenda::new(cpus);
                let mut times = vec![None; cpus as usize];
                let scan = |times: &[Option<Ps>], skip: Option<u32>| {
                    (0..cpus).filter(|&c| Some(c) != skip).filter_map(|c| times[c as usize].map(|t| (t, c))).min()
                };
                prop_assert_eq!(a.first(), None);
                for (cpu, t) in updates {
                    let t = t.map(Ps);
                    a.set(cpu, t);
                    times[cpu as usize] = t;
                    prop_assert_eq!(a.first(), scan(&times, None));
                    prop_assert_eq!(a.get(cpu), t);
                    for ex in 0..cpus.min(40) {
                        prop_assert_eq!(a.first_excluding(ex), scan(&times, Some(ex)), "excluding {}", ex);
                        // Asked again with nothing changed: the kept answer.
                        prop_assert_eq!(a.first_excluding(ex), scan(&times, Some(ex)), "excluding {} again", ex);
                    }
                    prop_assert_eq!(a.first_excluding(cpus - 1), scan(&times, Some(cpus - 1)));
                }
                // Draining takes every CPU with a time exactly once, in (time, id) order.
                let mut want: Vec<(u64, u32)> =
                    (0..cpus).filter_map(|c| times[c as usize].map(|t| (t.0, c))).collect();
                want.sort();
                prop_assert_eq!(order(&mut a), want);
            }
        }
    }
}
