//! The one explorer the three checkers share (the shootdown protocol in `check.rs`, the page
//! allocator in `page_alloc.rs`, reclaim's unmap flush in `reclaim.rs`): from a system's initial
//! state, apply every enabled action of every reachable state once, dedupe the states by key,
//! check each new one, and stop at the first broken property with the steps that reach it.
//!
//! What each checker says of its system is [`Model`]; the order ([`Order`]) is the checker's:
//! breadth first gives a shortest counterexample, depth first keeps only the current path's
//! states beside the seen keys.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};

use super::{Counterexample, Report};

/// A system to explore.
pub(super) trait Model {
    type State: Clone;
    /// What two states that behave alike share (the state itself, or a wide hash of it).
    type Key: Hash + Eq;
    type Action: Copy;

    fn initial(&self) -> Self::State;
    fn key(&self, s: &Self::State) -> Self::Key;
    /// The actions enabled in `s`, into `out` (cleared by the caller).
    fn successors(&self, s: &Self::State, out: &mut Vec<Self::Action>);
    /// Applies `a` to `s`: the step's trace label, and the property the step itself broke, if
    /// any (a check on the transition, made before the new state is deduped).
    fn apply(&self, s: &mut Self::State, a: Self::Action) -> (String, Option<String>);
    /// The property a newly reached state breaks, if any.
    fn violation(&self, _s: &Self::State) -> Option<String> {
        None
    }
}

/// Which state the explorer expands next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// The oldest unexpanded state, its actions in the order `successors` gives them.
    BreadthFirst,
    /// The newest state, its actions last first.
    DepthFirst,
}

/// A state waiting to be expanded, or being expanded: its id (index into the parents) and the
/// actions still to try (computed when it is first expanded).
struct Frame<S, A> {
    state: S,
    id: u32,
    todo: Option<Vec<A>>,
}

/// Explores `m` in `order`, `max_states` states at most (then the report is incomplete).
pub(super) fn explore<M: Model>(m: &M, order: Order, max_states: usize, variant: String) -> Report {
    let init = m.initial();
    let mut seen: HashSet<M::Key, BuildHasherDefault<Fx>> = HashSet::default();
    seen.insert(m.key(&init));
    // Per state: its parent and the action that reached it (the trace is replayed from them).
    let mut parents: Vec<(u32, Option<M::Action>)> = vec![(0, None)];
    let mut frames = VecDeque::from([Frame { state: init, id: 0, todo: None }]);
    let (mut transitions, mut counterexample, mut complete) = (0u64, None, true);
    loop {
        let frame = match order {
            Order::BreadthFirst => frames.front_mut(),
            Order::DepthFirst => frames.back_mut(),
        };
        let Some(Frame { state, id, todo }) = frame else { break };
        let todo = todo.get_or_insert_with(|| {
            let mut out = Vec::new();
            m.successors(state, &mut out);
            if order == Order::BreadthFirst {
                out.reverse();
            }
            out
        });
        let Some(a) = todo.pop() else {
            match order {
                Order::BreadthFirst => frames.pop_front(),
                Order::DepthFirst => frames.pop_back(),
            };
            continue;
        };
        let from = *id;
        transitions += 1;
        let mut n = state.clone();
        let (label, broken) = m.apply(&mut n, a);
        if let Some(property) = broken {
            let mut trace = replay(m, &parents, from);
            trace.push(label);
            counterexample = Some(Counterexample { property, trace });
            break;
        }
        if !seen.insert(m.key(&n)) {
            continue;
        }
        let nid = parents.len() as u32;
        parents.push((from, Some(a)));
        if let Some(property) = m.violation(&n) {
            counterexample = Some(Counterexample { property, trace: replay(m, &parents, nid) });
            break;
        }
        if seen.len() >= max_states {
            complete = false;
            break;
        }
        frames.push_back(Frame { state: n, id: nid, todo: None });
    }
    Report { variant, states: seen.len() as u64, transitions, counterexample, complete }
}

/// Two independent 64-bit hashes of `v` (std's SipHash and [`Fx`]) as one 128-bit key: a
/// checker that keeps only keys of its visited states collides among a few million of them
/// with odds ~2^-88.
pub(super) fn digest128<T: Hash + ?Sized>(v: &T) -> u128 {
    let mut a = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut a);
    let mut b = Fx::default();
    v.hash(&mut b);
    (a.finish() as u128) << 64 | b.finish() as u128
}

/// The labels of the actions that reach state `id` from the initial state, replayed.
fn replay<M: Model>(m: &M, parents: &[(u32, Option<M::Action>)], mut id: u32) -> Vec<String> {
    let mut path = Vec::new();
    while let (p, Some(a)) = parents[id as usize] {
        path.push(a);
        id = p;
    }
    let mut s = m.initial();
    path.iter().rev().map(|&a| m.apply(&mut s, a).0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two counters that each step increments by one, up to `max`; `bad` is broken when the
    /// sum reaches it (a state property) and `bad_step` when a step from a sum of it is taken
    /// (a transition property).
    struct Counters {
        max: u8,
        bad: Option<u8>,
        bad_step: Option<u8>,
    }

    impl Model for Counters {
        type State = [u8; 2];
        type Key = [u8; 2];
        type Action = usize;

        fn initial(&self) -> [u8; 2] {
            [0, 0]
        }
        fn key(&self, s: &[u8; 2]) -> [u8; 2] {
            *s
        }
        fn successors(&self, s: &[u8; 2], out: &mut Vec<usize>) {
            out.extend((0..2).filter(|&i| s[i] < self.max));
        }
        fn apply(&self, s: &mut [u8; 2], a: usize) -> (String, Option<String>) {
            let broken = (Some(s[0] + s[1]) == self.bad_step).then(|| "step".to_string());
            s[a] += 1;
            (format!("inc {a}"), broken)
        }
        fn violation(&self, s: &[u8; 2]) -> Option<String> {
            (Some(s[0] + s[1]) == self.bad).then(|| "sum".to_string())
        }
    }

    #[test]
    fn every_state_and_transition_is_counted_in_either_order() {
        let m = Counters { max: 3, bad: None, bad_step: None };
        for order in [Order::BreadthFirst, Order::DepthFirst] {
            let r = explore(&m, order, 1000, "c".into());
            // 4 x 4 states; every state but (3, 3) has one or two actions: 2 * 3 * 4 of them.
            assert_eq!((r.states, r.transitions, r.complete), (16, 24, true), "{order:?}");
            assert!(r.counterexample.is_none());
        }
    }

    #[test]
    fn breadth_first_finds_a_shortest_trace_and_depth_first_the_path_it_took() {
        let m = Counters { max: 3, bad: Some(2), bad_step: None };
        let bfs = explore(&m, Order::BreadthFirst, 1000, "c".into()).counterexample.unwrap();
        assert_eq!((bfs.property.as_str(), bfs.trace), ("sum", vec!["inc 0".into(), "inc 0".into()]));
        let dfs = explore(&m, Order::DepthFirst, 1000, "c".into()).counterexample.unwrap();
        assert_eq!(dfs.trace, ["inc 1", "inc 1"]);
    }

    #[test]
    fn a_broken_step_is_reported_before_its_state_is_counted_and_the_cap_stops_it() {
        let m = Counters { max: 3, bad: None, bad_step: Some(1) };
        let r = explore(&m, Order::DepthFirst, 1000, "c".into());
        let c = r.counterexample.unwrap();
        assert_eq!((c.property.as_str(), c.trace), ("step", vec!["inc 1".into(), "inc 1".into()]));
        // The initial state and the one after the first step; the broken step's is not counted.
        assert_eq!((r.states, r.transitions), (2, 2));
        let capped =
            explore(&Counters { max: 3, bad: None, bad_step: None }, Order::BreadthFirst, 5, "c".into());
        assert_eq!((capped.states, capped.complete), (5, false));
    }
}

/// The Firefox/rustc multiply-rotate hash: the states are hashed millions of times, and need no
/// protection against chosen collisions.
#[derive(Default)]
pub(super) struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64)
    }
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64)
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i)
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64)
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
