//! `cpumask`: a fixed-size set of CPU ids (as Linux's `struct cpumask`), no allocation.

/// Largest machine the model supports.
pub const NR_CPUS: usize = 512;
const WORDS: usize = NR_CPUS / 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CpuMask([u64; WORDS]);

impl CpuMask {
    pub const fn new() -> CpuMask {
        CpuMask([0; WORDS])
    }

    pub fn single(cpu: u32) -> CpuMask {
        let mut m = CpuMask::new();
        m.set(cpu);
        m
    }

    pub fn set(&mut self, cpu: u32) {
        self.0[cpu as usize / 64] |= 1 << (cpu % 64);
    }

    pub fn clear(&mut self, cpu: u32) {
        self.0[cpu as usize / 64] &= !(1 << (cpu % 64));
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0[cpu as usize / 64] >> (cpu % 64) & 1 == 1
    }

    /// Sets word `w` (CPUs `64 * w ..`) to `bits`, for masks stored compactly elsewhere.
    pub fn set_word(&mut self, w: usize, bits: u64) {
        self.0[w] = bits;
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    pub fn weight(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// The lowest CPU id in the set (`cpumask_first`).
    pub fn first(&self) -> Option<u32> {
        self.0.iter().enumerate().find(|(_, &w)| w != 0).map(|(i, w)| i as u32 * 64 + w.trailing_zeros())
    }

    /// Any CPU other than `cpu` (`cpumask_any_but`).
    pub fn any_but(&self, cpu: u32) -> Option<u32> {
        self.iter().find(|&c| c != cpu)
    }

    /// How many of CPUs `lo..hi` are in the set, a word at a time.
    pub fn count_range(&self, lo: u32, hi: u32) -> u32 {
        let (mut c, mut n) = (lo, 0);
        while c < hi {
            let (w, b) = ((c / 64) as usize, c % 64);
            let k = (64 - b).min(hi - c);
            let bits = if k == 64 { u64::MAX } else { ((1u64 << k) - 1) << b };
            n += (self.0[w] & bits).count_ones();
            c += k;
        }
        n
    }

    /// Whether any of CPUs `lo..hi` is in the set, a word at a time (no count).
    pub fn any_range(&self, lo: u32, hi: u32) -> bool {
        let mut c = lo;
        while c < hi {
            let (w, b) = ((c / 64) as usize, c % 64);
            let k = (64 - b).min(hi - c);
            let bits = if k == 64 { u64::MAX } else { ((1u64 << k) - 1) << b };
            if self.0[w] & bits != 0 {
                return true;
            }
            c += k;
        }
        false
    }

    /// Sets CPUs `lo..hi`, a word at a time.
    pub fn set_range(&mut self, lo: u32, hi: u32) {
        let mut c = lo;
        while c < hi {
            let (w, b) = ((c / 64) as usize, c % 64);
            let n = (64 - b).min(hi - c);
            self.0[w] |= if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << b };
            c += n;
        }
    }

    /// CPUs in both.
    pub fn and(&self, o: &CpuMask) -> CpuMask {
        let mut m = *self;
        m.0.iter_mut().zip(o.0).for_each(|(a, b)| *a &= b);
        m
    }

    /// CPUs in `self` but not in `o`.
    pub fn and_not(&self, o: &CpuMask) -> CpuMask {
        let mut m = *self;
        m.0.iter_mut().zip(o.0).for_each(|(a, b)| *a &= !b);
        m
    }

    pub fn union(&self, o: &CpuMask) -> CpuMask {
        let mut m = *self;
        m.0.iter_mut().zip(o.0).for_each(|(a, b)| *a |= b);
        m
    }

    /// CPU ids in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_clear_iterate() {
        let mut m = CpuMask::new();
        for c in [3, 64, 511, 0] {
            m.set(c);
        }
        m.clear(3);
        assert_eq!(m.iter().collect::<Vec<_>>(), [0, 64, 511]);
        assert_eq!(m.weight(), 3);
        assert_eq!(m.any_but(0), Some(64));
        assert!(m.contains(511) && !m.contains(3));
        assert_eq!(CpuMask::single(7).union(&CpuMask::single(1)).iter().collect::<Vec<_>>(), [1, 7]);
        assert!(CpuMask::new().is_empty());
        let mut r = CpuMask::new();
        r.set_range(60, 200);
        assert_eq!(r.weight(), 140);
        assert!(r.contains(60) && r.contains(199) && !r.contains(200) && !r.contains(59));
        assert_eq!(r.and(&m).iter().collect::<Vec<_>>(), [64]);
        assert_eq!(m.and_not(&r).iter().collect::<Vec<_>>(), [0, 511]);
    }
}
