// The one seeded random generator of the test targets, so every random test replays from
// its seed (TestEnvironment.seed(default:)).

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same sequence.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state: the next output is a function of it alone.
    public var state: UInt64

    /// A generator that starts from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
