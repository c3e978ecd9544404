//! Not a Linux file: a per-frame array whose memory is allocated a section at a time, on the
//! first write into it (as SPARSEMEM allocates `mem_map` per present section).
//!
//! The model's nodes have 2^20 frames each, and a run touches a few percent of them: the
//! per-frame records the oracle and the ownership map keep cost host memory
//! only for the sections a run wrote. A read of an unwritten index gives the default value.

/// Indices per section: 4096 frames (16 MiB of simulated memory).
const SECTION_SHIFT: u32 = 12;
const SECTION: usize = 1 << SECTION_SHIFT;

#[derive(Debug, Clone)]
pub struct SectionVec<T: Copy> {
    sections: Vec<Option<Box<[T]>>>,
    default: T,
    len: usize,
}

impl<T: Copy + PartialEq> SectionVec<T> {
    /// `len` entries, every one `default`, none allocated.
    pub fn new(len: usize, default: T) -> SectionVec<T> {
        SectionVec { sections: vec![None; len.div_ceil(SECTION)], default, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entry at `i` (the default if its section was never written, or `i` is out of range).
    #[inline]
    pub fn get(&self, i: usize) -> T {
        match self.sections.get(i >> SECTION_SHIFT) {
            Some(Some(s)) => s[i & (SECTION - 1)],
            _ => self.default,
        }
    }

    /// The entry at `i`, its section allocated if needed. Panics if `i >= len`.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len, "index {i} out of a {}-entry section array", self.len);
        let d = self.default;
        let s = self.sections[i >> SECTION_SHIFT].get_or_insert_with(|| vec![d; SECTION].into_boxed_slice());
        &mut s[i & (SECTION - 1)]
    }

    /// Writes `v` at `i`; writing the default into an unallocated section allocates nothing.
    #[inline]
    pub fn set(&mut self, i: usize, v: T) {
        if v == self.default && self.sections.get(i >> SECTION_SHIFT).is_some_and(|s| s.is_none()) {
            assert!(i < self.len, "index {i} out of a {}-entry section array", self.len);
            return;
        }
        *self.get_mut(i) = v;
    }

    /// Sections allocated (for tests and memory accounting).
    pub fn sections_allocated(&self) -> usize {
        self.sections.iter().filter(|s| s.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_default_until_written_and_allocates_only_written_sections() {
        let mut v = SectionVec::new(3 * SECTION + 5, 7u16);
        assert_eq!(v.get(0), 7);
        assert_eq!(v.get(10 * SECTION), 7, "out of range reads the default");
        assert_eq!(v.sections_allocated(), 0);
        v.set(SECTION + 3, 7);
        assert_eq!(v.sections_allocated(), 0, "the default written allocates nothing");
        v.set(SECTION + 3, 9);
        *v.get_mut(3 * SECTION + 4) += 1;
        assert_eq!((v.get(SECTION + 3), v.get(SECTION + 2), v.get(3 * SECTION + 4)), (9, 7, 8));
        assert_eq!(v.sections_allocated(), 2);
        v.set(SECTION + 3, 7);
        assert_eq!(v.get(SECTION + 3), 7);
    }

    #[test]
    #[should_panic(expected = "out of a")]
    fn a_write_past_the_end_panics() {
        let mut v = SectionVec::new(SECTION + 1, 0u8);
        v.set(SECTION + 1, 1);
    }
}
