//! Seeded, named random streams (docs/design.md#randomness): each purpose draws from its own stream,
//! derived from the run seed and the stream's name, so adding a stream never perturbs another.
//! SplitMix64: tiny, fast, and the same on every platform.

/// FNV-1a of the name: a fixed hash (no per-process random state), so streams are reproducible.
const fn fnv1a(name: &str) -> u64 {
    let b = name.as_bytes();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The stream `name` of run `seed`.
    pub fn stream(seed: u64, name: &str) -> Rng {
        let mut r = Rng { state: seed ^ fnv1a(name).rotate_left(17) };
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the tiny bias is irrelevant here and the
    /// result is the same on every platform).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(1, "a");
                move |_| r.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(1, "a");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(1, "b");
                move |_| r.next_u64()
            })
            .collect();
        let a_seed2: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::stream(2, "a");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert_ne!(a, a_seed2);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::stream(7, "t");
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let x = r.below(10);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..100).collect();
        Rng::stream(3, "s").shuffle(&mut v);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        v.sort();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
    }
}
