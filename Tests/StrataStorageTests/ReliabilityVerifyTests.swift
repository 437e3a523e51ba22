// Issue 13, findings 20 and 10: what `verify()` and open check beyond each record's checksum.
// 20. A hint file with a valid checksum that disagrees with its segment (an entry left out)
//     drops a key from the index at open; `verify()` now replays every segment and compares
//     the result with the index, naming the segment.
// 10. A segment another process truncates while the store has it mapped: reading a page past
//     the new end is SIGBUS. `verify()` checks each file's size against what the store maps
//     before it reads a byte, reports it, and does not touch the missing pages.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class ReliabilityVerifyTests: XCTestCase {
    private func makeStore(_ dir: TemporaryDirectory) throws {
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 30 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 300)) } }
        try store.close()
    }

    func testVerifyFindsAKeyAValidHintLeftOut() throws {
        let dir = TemporaryDirectory("hint-drop")
        try makeStore(dir)
        let victim = segmentName(1)
        let hintURL = URL(fileURLWithPath: dir.path + "/" + hintName(1))
        let segment = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + victim))
        let hint = try [UInt8](Data(contentsOf: hintURL))
        // The same hint with its first entry left out, checksummed afresh.
        let rewritten: [UInt8] = try hint.withUnsafeBytes { raw in
            let contents = try XCTUnwrap(HintFile.decode(raw, segmentID: 1, segmentLength: segment.count, previousSequence: 0))
            return HintFile.encode(segmentID: 1, segmentLength: segment.count, entries: Array(contents.entries.dropFirst()),
                                   lastSequence: contents.lastSequence, rawValueBytes: contents.rawValueBytes,
                                   storedValueBytes: contents.storedValueBytes)
        }
        try Data(rewritten).write(to: hintURL)
        // Without the index image close wrote, so that the open reads the hints.
        try FileManager.default.removeItem(atPath: dir.path + "/" + IndexImage.fileName)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let store = try Store(directory: dir.url, options: readOnly)
        XCTAssertNil(try store.get(table: 1, key: key(0)), "the hint dropped key-0 from the index")
        let report = try store.verify()
        XCTAssertFalse(report.isClean, "verify said clean with key-0 missing from the index")
        XCTAssertTrue(report.problems.contains { $0.segment == victim && $0.reason.contains("missing from the index") },
                      "\(report.problems)")
        try store.close()
    }

    func testVerifyOfAHealthyStoreWithCompactionIsClean() throws {
        let dir = TemporaryDirectory("verify-healthy")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 60 {
            if i == 30 { try store.compact() }
            try store.write { txn in
                try txn.put(table: 1, key: key(i % 17), value: value(UInt64(i), length: 300))
                if i % 7 == 0 { try txn.delete(table: 1, key: key((i + 3) % 17)) }
            }
        }
        let report = try store.verify()
        XCTAssertTrue(report.isClean, "\(report.problems)")
        try store.close()
    }

    /// Truncated far below the mapping (whole pages gone): verify must report it, not crash.
    /// (Before: SIGBUS in the middle of verify's scan.)
    func testVerifyReportsASegmentTruncatedUnderneathWithoutTouchingIt() throws {
        let dir = TemporaryDirectory("verify-truncated")
        var opts = options(segmentSize: 16384)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 30 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 2000)) } }
        let victim = segmentName(1)
        XCTAssertNotNil(store.stats.segmentDetails.first { $0.id == 1 && $0.sealed && $0.diskBytes > 3 * 4096 })
        XCTAssertEqual(truncate(dir.path + "/" + victim, 100), 0)
        let report = try store.verify()
        XCTAssertTrue(report.problems.contains { $0.segment == victim && $0.reason.contains("shorter than") }, "\(report.problems)")
        try store.close()
    }

    /// Truncated inside its last page (no SIGBUS: the rest of the page reads as zeros): the
    /// size check names the cause, not just the zeros it would find.
    func testVerifyNamesATruncationInsideTheLastPage() throws {
        let dir = TemporaryDirectory("verify-truncated-page")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 10 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 1000)) } }
        let victim = segmentName(2)
        let size = try XCTUnwrap(store.stats.segmentDetails.first { $0.id == 2 && $0.sealed }?.diskBytes)
        XCTAssertLessThan(size, 8192)
        XCTAssertGreaterThan(size - 200, 4096, "the cut stays inside the segment's last page")
        XCTAssertEqual(truncate(dir.path + "/" + victim, off_t(size - 200)), 0)
        let report = try store.verify()
        XCTAssertTrue(report.problems.contains { $0.segment == victim && $0.reason.contains("shorter than") }, "\(report.problems)")
        try store.close()
    }
}
