// `strata recover` on healthy and damaged stores: every intact committed record comes back in
// a new store that opens; what was lost is named (file, offset, reason; missing sequences).

import Foundation
import XCTest
import Strata

extension ToolTests {
    /// The raw records of a store, through `dump` (table → key → value).
    private func rawContents(_ path: String) throws -> [String: String] {
        let run = try strata("dump", path, "--ndjson")
        XCTAssertEqual(run.status, 0, run.stderr)
        var contents: [String: String] = [:]
        for line in run.stdout.split(separator: "\n") {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            contents["\(object["table"]!)/\(object["key"]!)"] = object["value"] as? String
        }
        return contents
    }

    func testRecoverCopiesAHealthyStoreWhole() throws {
        _ = try makeStore()
        let copy = directory + "-recovered"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let run = try strata("recover", directory, copy)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("nothing was lost"), run.stdout)
        XCTAssertEqual(try rawContents(copy), try rawContents(directory))
        XCTAssertEqual(try strata("verify", copy).status, 0)
    }

    /// A damaged record in a sealed segment: the transaction holding it is lost, every other
    /// committed record is recovered, and the report names the file and offset.
    func testRecoverSalvagesAroundDamageAndSaysWhatWasLost() throws {
        let model = try makeStore()
        let before = try rawContents(directory)
        let victim = try segmentFiles()[1]
        let url = URL(fileURLWithPath: directory + "/" + victim)
        var bytes = try Data(contentsOf: url)
        bytes[48 + 40] ^= 0x55          // the first record's value
        try bytes.write(to: url)
        try? FileManager.default.removeItem(atPath: directory + "/" + victim.replacingOccurrences(of: ".seg", with: ".hint"))
        XCTAssertNotEqual(try strata("verify", directory).status, 0)
        let copy = directory + "-recovered"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let run = try strata("recover", directory, copy)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("lost: damaged \(victim) at 48"), run.stdout)
        XCTAssertEqual(try strata("verify", copy).status, 0, "the recovered store is healthy")
        let after = try rawContents(copy)
        // Only the damaged transaction (one round: 40 users and one table-2 key) is lost: its
        // users come back with the value of the round before, its table-2 key is gone.
        XCTAssertTrue(Set(after.keys).isSubset(of: Set(before.keys)))
        XCTAssertEqual(before.count - after.count, 1, "the lost round's own table-2 key")
        let older = after.filter { before[$0.key] != $0.value }
        XCTAssertLessThanOrEqual(older.count, 40, "only the damaged transaction's keys may be older")
        XCTAssertGreaterThan(model[1]?.count ?? 0, 0)
    }

    /// A deleted middle segment: its transactions are reported missing by sequence number.
    func testRecoverReportsMissingTransactionsOfALostSegment() throws {
        var options = StoreOptions()
        options.segmentSize = 4096
        options.autoCompaction = .disabled
        let store = try Store(path: directory, options: options)
        for round in 0 ..< 12 {
            try store.write { txn in
                for k in 0 ..< 20 { try txn.put(table: 1, key: Array("k\(round)-\(k)".utf8), value: [UInt8](repeating: UInt8(k), count: 40)) }
            }
        }
        try store.close()
        let segments = try segmentFiles()
        XCTAssertGreaterThan(segments.count, 2)
        try FileManager.default.removeItem(atPath: directory + "/" + segments[1])
        let copy = directory + "-recovered"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let run = try strata("recover", directory, copy, "--json")
        XCTAssertEqual(run.status, 0, run.stderr)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let missing = try XCTUnwrap(report["missingSequences"] as? [[Int]])
        XCTAssertFalse(missing.isEmpty, run.stdout)
        XCTAssertEqual(try strata("verify", copy).status, 0)
    }

    func testRecoverRefusesToOverwriteAndNeedsAStore() throws {
        _ = try makeStore()
        let occupied = try strata("recover", directory, directory)
        XCTAssertEqual(occupied.status, 1)
        XCTAssertTrue(occupied.stderr.contains("already holds files"), occupied.stderr)
        let missing = try strata("recover", directory + "-nope", directory + "-out")
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no store at"), missing.stderr)
    }

    /// A realm's store damaged: the app opens the recovered store and reads its objects.
    func testRecoveredObjectStoreOpensInTheApp() throws {
        try makeObjectStore()
        let copy = directory + "-recovered"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let run = try strata("recover", directory, copy)
        XCTAssertEqual(run.status, 0, run.stderr)
        var config = Realm.Configuration(directory: URL(fileURLWithPath: copy))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.objects(ToolOwner.self).count, 3)
        XCTAssertEqual(realm.object(ofType: ToolOwner.self, forPrimaryKey: 1)?.pet?.name, "Rex")
    }
}
