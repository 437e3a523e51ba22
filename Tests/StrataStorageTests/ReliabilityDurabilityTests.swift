// Issue 13, findings 3 and 4: what reaches the disk and what a failed sync means.
// 3. `mkdir` of the store (and of missing parents) must be followed by an fsync of each
//    parent, or a crash can lose the whole directory with commits already acknowledged.
//    The crash simulator models it: a directory is durable once its parent is synced.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class ReliabilityDurabilityTests: XCTestCase {
    func testANewStoreDirectorySurvivesACrashAfterTheFirstCommit() throws {
        let base = TemporaryDirectory("mkdir")
        let fs = RecordingFileSystem()
        let storeURL = URL(fileURLWithPath: base.path + "/parent/store")
        let store = try Store(directory: storeURL, options: options(fileSystem: fs))
        try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("acknowledged")) }
        let acknowledgedAt = fs.operationCount
        try store.close()
        XCTAssertEqual(fs.operations.filter { if case .createDirectory = $0 { true } else { false } }.count, 2)
        var rng = SplitMix64(seed: baseSeed &+ 900)
        for variant in 0 ..< 16 {
            let scratch = TemporaryDirectory("mkdir-crash")
            try CrashSimulator(operations: fs.operations).materialize(prefix: acknowledgedAt, into: scratch.path, rng: &rng)
            let reopened = try Store(directory: scratch.url)
            XCTAssertEqual(try reopened.get(table: 1, key: bytes("k")), bytes("acknowledged"),
                           "variant \(variant): the commit was acknowledged, then the crash lost the store's directory")
            try reopened.close()
        }
    }
}
