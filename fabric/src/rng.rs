//! The one random number generator of weft: SplitMix64 (Steele, Lea, Flood, "Fast
//! splittable pseudorandom number generators", OOPSLA 2014). Small, fast, the same sequence
//! on every platform, and seeded, so a seed names its results: the metrics draw their random
//! bisections from it (the same seed gives byte-identical reports), and the test kits
//! generate their fabrics and corruptions from it.

/// A SplitMix64 generator; the `u64` is its whole state (the seed, at first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` from the next 64 bits by Lemire's multiply-shift (the high word of
    /// `bits × n`: no division, bias below `n / 2^64`); `0` when `n` is 0. One draw per call.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Shuffles `items` in place (Fisher–Yates from the last item down, one [`below`] draw
    /// per item after the first): the one shuffle of weft, so a seed gives the same order
    /// wherever it is used.
    ///
    /// [`below`]: SplitMix64::below
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // The first outputs for seed 0, as the reference implementation publishes them.
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn shuffle_is_fisher_yates_from_the_top() {
        // The same draws as the loop it replaced in metrics and traffic: item i swaps with
        // below(i + 1), i from the last down.
        let mut a: Vec<u32> = (0..50).collect();
        SplitMix64(42).shuffle(&mut a);
        let mut b: Vec<u32> = (0..50).collect();
        let mut r = SplitMix64(42);
        for i in (1..b.len()).rev() {
            let j = r.below(i as u64 + 1) as usize;
            b.swap(i, j);
        }
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<u32>>());
        assert_ne!(a, sorted, "a shuffle of 50 items left them in order");
        let mut one = [7u8];
        SplitMix64(1).shuffle(&mut one);
        assert_eq!(one, [7]);
    }

    #[test]
    fn below_stays_below_and_is_the_high_word() {
        let mut r = SplitMix64(7);
        for n in [1u64, 2, 3, 10, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
        // The high word of bits × n: a value near the top of the range maps near the top.
        let mut a = SplitMix64(11);
        let bits = SplitMix64(11).next_u64();
        assert_eq!(a.below(1 << 8), bits >> 56);
    }
}
