// The environment variables every random, crash and fuzz test reads: STRATA_SEED replays a
// run, STRATA_FUZZ_SCALE makes it longer (`STRATA_FUZZ_SCALE=10 make test`).

import Foundation

/// The test run's settings from the environment.
public enum TestEnvironment {
    /// `STRATA_FUZZ_SCALE` if it is a positive integer, else 1: multiplies the number of cases of
    /// random, crash and fuzz sweeps.
    public static let fuzzScale: Int = {
        if let raw = ProcessInfo.processInfo.environment["STRATA_FUZZ_SCALE"], let n = Int(raw), n > 0 { return n }
        return 1
    }()

    /// `STRATA_SEED` if it is an unsigned integer, else `defaultSeed`: a failing random test is
    /// replayed by setting the seed it printed.
    public static func seed(default defaultSeed: UInt64) -> UInt64 {
        if let raw = ProcessInfo.processInfo.environment["STRATA_SEED"], let n = UInt64(raw) { return n }
        return defaultSeed
    }
}
