//! The event queue: a binary min-heap ordered by (time, cpu, sequence number), so two events at
//! the same instant always pop in the same order whatever else is queued (DESIGN.md rule 3).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::time::Ps;

/// A queued event's position in the total order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub time: Ps,
    pub cpu: u32,
    pub seq: u64,
}

#[derive(Debug)]
struct Item<E> {
    key: Key,
    event: E,
}

impl<E> PartialEq for Item<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Item<E> {}
impl<E> PartialOrd for Item<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Item<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// Events of type `E`, each aimed at a CPU and a time.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Item<E>>>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue { heap: BinaryHeap::new(), next_seq: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `event` for `cpu` at `time`; returns its key.
    pub fn push(&mut self, time: Ps, cpu: u32, event: E) -> Key {
        let key = Key { time, cpu, seq: self.next_seq };
        self.next_seq += 1;
        self.heap.push(Reverse(Item { key, event }));
        key
    }

    /// The earliest event's key, without removing it.
    pub fn peek(&self) -> Option<Key> {
        self.heap.peek().map(|r| r.0.key)
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Key, E)> {
        self.heap.pop().map(|Reverse(i)| (i.key, i.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_cpu_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Ps(30), 0, "late");
        q.push(Ps(10), 2, "cpu2");
        q.push(Ps(10), 1, "cpu1-first");
        q.push(Ps(10), 1, "cpu1-second");
        q.push(Ps(20), 0, "mid");
        let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["cpu1-first", "cpu1-second", "cpu2", "mid", "late"]);
    }

    #[test]
    fn peek_matches_pop() {
        let mut q = EventQueue::new();
        q.push(Ps(5), 3, ());
        q.push(Ps(4), 9, ());
        assert_eq!(q.peek().map(|k| (k.time, k.cpu)), Some((Ps(4), 9)));
        assert_eq!(q.pop().map(|(k, _)| k.cpu), Some(9));
        assert_eq!(q.len(), 1);
    }
}
