// The README's engine example ("The engine on its own"), as a user writes it against
// `import Strata`: if it stops compiling or behaving, this fails.

import Foundation
import Strata
import StrataTestSupport
import XCTest

final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExampleRuns() throws {
        let directory = TemporaryDirectory("readme", create: false)

        // --- from README.md ---
        var options = StoreOptions()
        options.durability = .full            // one fdatasync per commit, shared by concurrent committers
        let store = try Store(directory: directory.url, options: options)

        // One atomic, durable transaction: all of it or none of it survives any crash.
        let users: UInt32 = 1
        try store.write { txn in
            try txn.put(table: users, key: Array("42".utf8), value: Array(#"{"name":"Ada"}"#.utf8))
            try txn.put(table: users, key: Array("43".utf8), value: Array(#"{"name":"Grace"}"#.utf8))
            try txn.delete(table: users, key: Array("41".utf8))     // absent keys are a no-op
        }

        // Reads never wait for writers.
        let ada = try store.get(table: users, key: Array("42".utf8))

        // A snapshot is O(1), Sendable, and frozen at its commit while writes go on.
        let snapshot = store.snapshot()
        let scanned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? snapshot.scan(table: users) { key, value in print(key, value) }
            scanned.signal()
        }

        // Where the bytes are; compaction gives the dead ones back while readers and writers go on.
        print(store.stats.liveBytes, store.stats.deadBytes, store.stats.indexBytes)
        let report = try store.compact()          // also automatic: options.autoCompaction = .default
        print(report.reclaimedBytes)
        try store.close()
        // --- end of the README's example ---

        scanned.wait()
        XCTAssertEqual(ada, Array(#"{"name":"Ada"}"#.utf8))
        XCTAssertEqual(snapshot.count(table: users), 2)
        XCTAssertGreaterThan(report.segmentsCompacted, 0)
    }
}
