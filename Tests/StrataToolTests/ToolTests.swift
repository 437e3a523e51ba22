// The `strata` tool as a user runs it: a process on real stores, healthy and damaged,
// checked for its output, its one-line errors and its exit codes (0 ok, 1 damaged or
// failed, 2 bad usage).

import Foundation
import StrataTestSupport
import XCTest
import StrataStorage

final class ToolTests: XCTestCase {
    static let toolPath = ChildProcess.executablePath(named: "strata")

    func strata(_ arguments: String...) throws -> ProcessOutput {
        try strata(arguments)
    }

    func strata(_ arguments: [String]) throws -> ProcessOutput {
        try ChildProcess.run(executable: ToolTests.toolPath, arguments: arguments)
    }

    /// The test's store directory (not made yet: the store or the tool makes it), removed at
    /// tear-down.
    private var temporaryDirectory: TemporaryDirectory?
    var directory: String { temporaryDirectory?.path ?? "" }

    override func setUpWithError() throws {
        temporaryDirectory = TemporaryDirectory("strata-tool", create: false)
    }

    override func tearDown() {
        temporaryDirectory = nil
    }

    /// A store with several sealed segments (with hints), dead bytes, two tables.
    func makeStore() throws -> [UInt32: [[UInt8]: [UInt8]]] {
        var options = StoreOptions()
        options.segmentSize = 8192
        options.autoCompaction = .disabled
        let store = try Store(path: directory, options: options)
        var model: [UInt32: [[UInt8]: [UInt8]]] = [:]
        for round in 0 ..< 6 {
            try store.write { txn in
                for k in 0 ..< 40 {
                    let value = Array(#"{"id":\#(k),"round":\#(round)}"#.utf8)
                    try txn.put(table: 1, key: Array("user-\(k)".utf8), value: value)
                    model[1, default: [:]][Array("user-\(k)".utf8)] = value
                }
                try txn.put(table: 2, key: [UInt8(round)], value: [0xFF, 0x00, UInt8(round)])
                model[2, default: [:]][[UInt8(round)]] = [0xFF, 0x00, UInt8(round)]
            }
        }
        try store.close()
        return model
    }

    func segmentFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }.sorted()
    }

    func testCompactReportsAndReclaims() throws {
        let model = try makeStore()
        let dry = try strata("compact", "--dry-run", directory)
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertTrue(dry.stdout.contains("would rewrite"), dry.stdout)
        let filesBefore = try segmentFiles()
        XCTAssertEqual(try segmentFiles(), filesBefore, "--dry-run changes nothing")
        let run = try strata("compact", directory)
        XCTAssertEqual(run.status, 0, run.stderr)
        for label in ["before:", "after:", "reclaimed:", "seconds:"] { XCTAssertTrue(run.stdout.contains(label), run.stdout) }
        let reclaimed = run.stdout.split(separator: "\n").first { $0.hasPrefix("reclaimed:") }!
        XCTAssertFalse(reclaimed.contains("(0 bytes)"), "compaction reclaimed space: \(run.stdout)")
        // Same data afterwards.
        let store = try Store(path: directory)
        let snapshot = store.snapshot()
        for (table, rows) in model { for (k, v) in rows { XCTAssertEqual(try snapshot.get(table: table, key: k), v) } }
        try store.close()
    }

    func testVerifyPassesAHealthyStore() throws {
        _ = try makeStore()
        let run = try strata("verify", directory)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.hasPrefix("ok: "), run.stdout)
        XCTAssertEqual(run.stderr, "", "no progress noise when stderr is not a terminal")
    }

    func testVerifyNamesTheDamagedSegmentAndOffset() throws {
        _ = try makeStore()
        // Damage a value byte inside the first sealed segment: its hint file still lets the
        // store open, so only reading every record finds it.
        let victim = try segmentFiles()[0]
        let url = URL(fileURLWithPath: directory + "/" + victim)
        var bytes = try Data(contentsOf: url)
        let recordStart = 48   // the segment header is 48 bytes; the first record starts here
        bytes[recordStart + 40] ^= 0x55
        try bytes.write(to: url)
        let run = try strata("verify", directory)
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stdout.contains("damaged: \(victim) at offset \(recordStart): record checksum mismatch"), run.stdout)
    }

    func testVerifyReportsAStoreTooDamagedToOpen() throws {
        _ = try makeStore()
        // Cut a sealed segment: its hint no longer matches, the scan finds the cut.
        let victim = try segmentFiles()[1]
        let url = URL(fileURLWithPath: directory + "/" + victim)
        let bytes = try Data(contentsOf: url)
        try bytes.prefix(bytes.count - 100).write(to: url)
        let run = try strata("verify", directory)
        XCTAssertEqual(run.status, 1)
        let lines = run.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one line: \(run.stderr)")
        XCTAssertTrue(run.stderr.contains(victim) && run.stderr.contains("offset"), run.stderr)
    }

    func testStatsTextAndJSON() throws {
        _ = try makeStore()
        let text = try strata("stats", directory)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("keys:         46"), text.stdout)
        XCTAssertTrue(text.stdout.contains("table 1: 40 keys"), text.stdout)
        let json = try strata("stats", "--json", directory)
        XCTAssertEqual(json.status, 0, json.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["keys"] as? Int, 46)
        XCTAssertEqual((object["keysPerTable"] as? [String: Int])?["2"], 6)
        XCTAssertGreaterThan(object["deadBytes"] as? Int ?? 0, 0)
        XCTAssertEqual((object["segmentDetails"] as? [Any])?.count, object["segments"] as? Int)
    }

    func testDumpGivesBackEveryRecord() throws {
        let model = try makeStore()
        let run = try strata("dump", directory, "--ndjson")
        XCTAssertEqual(run.status, 0, run.stderr)
        var seen: [UInt32: [[UInt8]: [UInt8]]] = [:]
        for line in run.stdout.split(separator: "\n") {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let table = UInt32(object["table"] as! Int)
            let hex = object["key"] as! String
            let key = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(hex[hex.index(hex.startIndex, offsetBy: $0) ..< hex.index(hex.startIndex, offsetBy: $0 + 2)], radix: 16)!
            }
            seen[table, default: [:]][key] = Array(Data(base64Encoded: object["value"] as! String)!)
        }
        XCTAssertEqual(seen, model)
        let array = try strata("dump", directory, "--type", "2")
        XCTAssertEqual(array.status, 0)
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(array.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.count, 6)
        XCTAssertTrue(rows.allSatisfy { $0["table"] as? Int == 2 && $0["keyText"] == nil })
    }

    func testTheDemoTourRunsAndShowsEveryStep() throws {
        let run = try strata("demo", directory)
        XCTAssertEqual(run.status, 0, run.stderr)
        for line in ["committed as sequence 1", "snapshot 1: user 42 lives in Osaka, user 43 exists",
                     "latest   2: user 42 lives in Lagos, user 43 is gone", "user 1 is still Lisbon-based, sequence still 2",
                     "5000 users, sequence 42", "readers and writers never stopped", "verify: ok",
                     "phone +1-919-832-4477 (the list does not carry phones; the cached one survived)",
                     #"a bad payload is refused whole: restaurants[1].rating: expected Double, found String "five stars"; still 3 restaurants"#,
                     #"{"restaurant":{"city":"Raleigh","id":1,"name":"Poole's","phone":"+1-919-832-4477","rating":4.7}}"#,
                     #"Insert section "Tokyo" at 2"#, "Insert Sushi Kanesaka at Tokyo #0", "Move   Tasca from Lisbon #0 to Porto #0", "sections now: Porto (1), Raleigh (2), Tokyo (1)",
                     "the other thread found Poole's, rated 4.7", "after compaction", "verify: ok; stats:",
                     "8 statuses, 7 users; first id 505874924095815681 (64 bits, exact), by @ayuu0123",
                     #"entities kept as raw JSON: {"hashtags":[]"#] {
            XCTAssertTrue(run.stdout.contains(line), "missing \"\(line)\" in:\n\(run.stdout)")
        }
        // The store it leaves behind is a healthy one.
        XCTAssertEqual(try strata("verify", directory).status, 0)
    }

    func testBadUsageAndFailuresHaveTheirExitCodes() throws {
        _ = try makeStore()
        XCTAssertEqual(try strata("frobnicate").status, 2)
        XCTAssertEqual(try strata("verify").status, 2, "missing store argument")
        XCTAssertEqual(try strata("dump", directory, "--type", "users").status, 2)
        let missing = try strata("stats", directory + "/nope")
        XCTAssertEqual(missing.status, 1)
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1)
        // A store held by a writer: commands that read read beside it (what it made durable);
        // one that writes is refused in one clear line (after the lock wait, 5 s).
        let writer = try Store(path: directory)
        let live = try strata("stats", directory)
        XCTAssertEqual(live.status, 0, live.stderr)
        let locked = try strata("compact", directory)
        XCTAssertEqual(locked.status, 1)
        XCTAssertTrue(locked.stderr.contains("locked"), locked.stderr)
        XCTAssertEqual(locked.stderr.split(separator: "\n").count, 1, locked.stderr)
        try writer.close()
        XCTAssertEqual(try strata("--help").status, 0)
    }
}
