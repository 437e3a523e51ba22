// Numbers read from disk at their limits: segment file numbers and salvaged sequence
// numbers near the top of their range are errors or bounded work, never an overflow trap
// or a loop as long as the range.

import XCTest
import StrataTestSupport
@testable import StrataStorage

final class NumberLimitTests: XCTestCase {
    /// With no segment file number left, compaction and a roll throw and the store goes on
    /// serving what it has (before, taking the last number trapped on the increment).
    func testRunningOutOfFileNumbersIsAnError() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url, options: options(segmentSize: 1 << 20, durability: .normal))
        try store.write { try $0.put(table: 1, key: key(1), value: value(1, length: 100)) }
        try store.write { try $0.put(table: 1, key: key(1), value: value(2, length: 100)) }
        store.fileNumbers.withLock { $0 = .max }
        XCTAssertThrowsError(try store.compact()) {
            guard case StoreError.invalidArgument(let reason) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(reason.contains("no segment file number is left"), reason)
        }
        XCTAssertEqual(try store.get(table: 1, key: key(1)), value(2, length: 100))
        try store.close()
    }

    /// Salvage reports the sequences missing between those found; a crafted record whose
    /// sequence is near 2^64 costs no more than any other (before, the gap report walked
    /// every number up to it).
    func testMissingSequencesAreTheGapsBetweenThoseFound() {
        XCTAssertEqual(Store.missingRanges([1, 2, 5, 6, 9], through: 9), [3 ... 4, 7 ... 8])
        XCTAssertEqual(Store.missingRanges([], through: 3), [1 ... 3])
        XCTAssertEqual(Store.missingRanges([3, 3, 1], through: 3), [2 ... 2])
        XCTAssertEqual(Store.missingRanges([1, .max], through: .max), [2 ... (.max - 1)])
        XCTAssertEqual(Store.missingRanges([0, 2], through: 2), [1 ... 1])
        // Against a walk over every number, on small random inputs.
        var rng = SplitMix64(seed: 7)
        for _ in 0 ..< 500 {
            let last = UInt64.random(in: 0 ... 40, using: &rng)
            let found = (0 ..< Int.random(in: 0 ... 20, using: &rng)).map { _ in UInt64.random(in: 0 ... last, using: &rng) }
            var expected: [ClosedRange<UInt64>] = []
            var start: UInt64?
            for sequence in 1 ..< last + 1 {
                if found.contains(sequence) {
                    if let s = start { expected.append(s ... sequence - 1); start = nil }
                } else if start == nil { start = sequence }
            }
            if let s = start { expected.append(s ... last) }
            XCTAssertEqual(Store.missingRanges(found, through: last), expected, "\(found) through \(last)")
        }
    }
}
