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
