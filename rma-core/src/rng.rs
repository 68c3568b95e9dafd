//! A small deterministic random generator for test data, the examples and the
//! conformance soak: the same seed gives the same numbers on every rank, process and
//! platform, so a rank can recompute what any other rank generated.
//!
//! Not for anything that must be unpredictable (names of shared-memory segments, for
//! one, take real randomness).

/// splitmix64's increment: the 64-bit golden ratio, odd.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
/// The multiplier that spreads a stream number over the seed in
/// [`SplitMix64::stream`].
const STREAM: u64 = 0xD1B5_4A32_D192_ED03;

/// The splitmix64 generator (Steele, Lea and Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014, with the finalizer of Vigna's public-domain
/// version): 64 bits of state advanced by a constant, each step's state scrambled into
/// the output. Every seed, 0 included, gives a full-period sequence.
///
/// ```
/// use rma_core::rng::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The generator seeded with `seed`.
    pub const fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The generator for stream `stream` of `seed` (a rank's own data, say): streams of
    /// one seed start far apart.
    pub const fn stream(seed: u64, stream: u64) -> SplitMix64 {
        SplitMix64::new(seed ^ stream.wrapping_mul(STREAM))
    }

    /// Folds `value` into the state and steps once: a generator seeded by several
    /// numbers (a seed, then an epoch, then an origin) is `new(seed)` absorbing each.
    pub fn absorb(&mut self, value: u64) {
        self.state ^= value.wrapping_mul(GAMMA);
        self.next_u64();
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`, by reduction modulo `n` (its bias, under `n / 2^64`, does not
    /// matter for test data).
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "SplitMix64::below(0): the range 0..0 is empty");
        self.next_u64() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference sequence of splitmix64 from seed 0 (as in Vigna's C version and
    /// every port of it).
    #[test]
    fn matches_the_reference_sequence() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn streams_and_absorbed_values_change_the_sequence() {
        let first = |mut r: SplitMix64| r.next_u64();
        assert_ne!(
            first(SplitMix64::stream(1, 0)),
            first(SplitMix64::stream(1, 1))
        );
        assert_eq!(SplitMix64::stream(1, 0), SplitMix64::new(1));
        let (mut a, mut b) = (SplitMix64::new(1), SplitMix64::new(1));
        a.absorb(2);
        b.absorb(3);
        assert_ne!(first(a), first(b));
    }

    #[test]
    fn below_stays_below() {
        let mut r = SplitMix64::new(42);
        for n in 1..100 {
            assert!(r.below(n) < n);
        }
    }
}
