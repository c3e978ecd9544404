//! A node's partial list as the kernel keeps it: `kmem_cache_node->partial` threads its slabs
//! through `page->lru` (include/linux/list.h; mm/slub.c v4.9 `add_partial`/`remove_partial`),
//! links kept in each slab, so taking the head, adding at the tail and unlinking a slab from the
//! middle (an empty slab discarded) are O(1). A `Vec` made the last two O(n) on the lists of
//! thousands of slabs that hackbench builds while its sockets fill.

use super::SlabPage;

const NIL: u32 = u32::MAX;

/// A slab's links on the list it is on (`page->lru`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    prev: u32,
    next: u32,
}

impl Default for Link {
    fn default() -> Link {
        Link { prev: NIL, next: NIL }
    }
}

/// A list of slabs by id, head first (`n->partial` and `n->nr_partial`).
#[derive(Debug, Clone)]
pub(super) struct SlabList {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for SlabList {
    fn default() -> SlabList {
        SlabList { head: NIL, tail: NIL, len: 0 }
    }
}

impl SlabList {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `list_add_tail`.
    pub(super) fn push_back(&mut self, slabs: &mut [SlabPage], id: u32) {
        slabs[id as usize].lru = Link { prev: self.tail, next: NIL };
        match self.tail {
            NIL => self.head = id,
            t => slabs[t as usize].lru.next = id,
        }
        self.tail = id;
        self.len += 1;
    }

    /// Takes the head.
    pub(super) fn pop_front(&mut self, slabs: &mut [SlabPage]) -> Option<u32> {
        let id = self.head;
        (id != NIL).then(|| {
            self.remove(slabs, id);
            id
        })
    }

    /// `list_del` of slab `id`, which is on this list.
    pub(super) fn remove(&mut self, slabs: &mut [SlabPage], id: u32) {
        let Link { prev, next } = std::mem::take(&mut slabs[id as usize].lru);
        match prev {
            NIL => self.head = next,
            p => slabs[p as usize].lru.next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => slabs[n as usize].lru.prev = prev,
        }
        self.len -= 1;
    }

    /// The ids, head first.
    pub(super) fn iter<'a>(&self, slabs: &'a [SlabPage]) -> impl Iterator<Item = u32> + 'a {
        std::iter::successors((self.head != NIL).then_some(self.head), move |&id| {
            let n = slabs[id as usize].lru.next;
            (n != NIL).then_some(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::Place;
    use super::*;

    fn slabs(n: usize) -> Vec<SlabPage> {
        let page = SlabPage {
            cache: 0,
            pfn: 0,
            order: 0,
            node: 0,
            free: Vec::new(),
            cpu_free: Vec::new(),
            allocated: Vec::new(),
            place: Place::Full,
            lru: Link::default(),
            line: Default::default(),
        };
        vec![page; n]
    }

    proptest! {
        /// Against a `Vec` (what the list was): add at the tail, take the head, unlink any.
        #[test]
        fn the_list_keeps_a_vecs_order(ops in proptest::collection::vec((0u8..3, 0usize..16), 1..200)) {
            let mut s = slabs(16);
            let (mut list, mut model) = (SlabList::default(), Vec::<u32>::new());
            for (op, x) in ops {
                match op {
                    0 => {
                        let id = x as u32;
                        if !model.contains(&id) {
                            list.push_back(&mut s, id);
                            model.push(id);
                        }
                    }
                    1 => {
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(list.pop_front(&mut s), want);
                    }
                    _ => {
                        if !model.is_empty() {
                            let id = model.remove(x % model.len());
                            list.remove(&mut s, id);
                        }
                    }
                }
                prop_assert_eq!(list.iter(&s).collect::<Vec<_>>(), model.clone());
                prop_assert_eq!((list.len(), list.is_empty()), (model.len(), model.is_empty()));
            }
        }
    }
}
