// `--key-file` (docs/API.md §10): every command that opens a store reads an encrypted one with
// its key — given as the 64 bytes themselves or as 128 hex digits — and refuses it without
// (exit 1, "wrong encryption key"); a key file that holds anything else is bad usage
// (exit 2, naming the file); `strata recover` writes an encrypted store's records into a
// new store encrypted with the same key.

import Foundation
import XCTest
import Strata

extension ToolTests {
    private static let toolKey = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: 200 &- $0 &* 3) })

    /// An encrypted realm store with three owners; returns the paths of its key file in
    /// raw and in hex form.
    private func makeEncryptedObjectStore() throws -> (raw: String, hex: String) {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        config.encryptionKey = Self.toolKey
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for id in 1 ... 3 { try realm.create(ToolOwner.self, value: ["id": id, "name": "owner \(id)", "score": Double(id)]) }
            }
        }
        let raw = directory + "-key.bin", hex = directory + "-key.hex"
        try Self.toolKey.write(to: URL(fileURLWithPath: raw))
        try Data(("  " + Self.toolKey.map { String(format: "%02X", $0) }.joined() + "\n").utf8).write(to: URL(fileURLWithPath: hex))
        addTeardownBlock {
            for path in [raw, hex] { try? FileManager.default.removeItem(atPath: path) }
        }
        return (raw, hex)
    }

    func testEveryCommandReadsAnEncryptedStoreWithItsKeyFile() throws {
        let keys = try makeEncryptedObjectStore()
        for key in [keys.raw, keys.hex] {
            let stats = try strata("stats", directory, "--key-file", key)
            XCTAssertEqual(stats.status, 0, stats.stderr)
            let verify = try strata("verify", directory, "--key-file", key)
            XCTAssertEqual(verify.status, 0, verify.stderr + verify.stdout)
            let query = try strata("query", directory, "Owner", "score >= 2", "--json", "--key-file", key)
            XCTAssertEqual(query.status, 0, query.stderr)
            let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(query.stdout.utf8)) as? [[String: Any]])
            XCTAssertEqual(rows.compactMap { $0["id"] as? Int }, [2, 3])
            let dump = try strata("dump", directory, "--key-file", key)
            XCTAssertEqual(dump.status, 0, dump.stderr)
            XCTAssertTrue(dump.stdout.contains("owner 2"), dump.stdout)
        }
        let export = try strata("export", directory, "--type", "Owner", "--format", "ndjson", "--key-file", keys.hex)
        XCTAssertEqual(export.stdout.split(separator: "\n").count, 3, export.stderr)
        let compact = try strata("compact", directory, "--key-file", keys.raw)
        XCTAssertEqual(compact.status, 0, compact.stderr)
    }

    func testAnEncryptedStoreWithoutItsKeyOrWithAnotherIsRefused() throws {
        let keys = try makeEncryptedObjectStore()
        let without = try strata("stats", directory)
        XCTAssertEqual(without.status, 1)
        XCTAssertTrue(without.stderr.contains("wrong encryption key") && without.stderr.contains("no encryption key was given"), without.stderr)
        var other = Self.toolKey
        other[0] ^= 1
        let otherFile = directory + "-other.bin"
        defer { try? FileManager.default.removeItem(atPath: otherFile) }
        try other.write(to: URL(fileURLWithPath: otherFile))
        let wrong = try strata("query", directory, "Owner", "--key-file", otherFile)
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stderr.contains("another key"), wrong.stderr)
        // A file that is not a key: bad usage, naming the file.
        let bad = directory + "-bad.key"
        defer { try? FileManager.default.removeItem(atPath: bad) }
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: bad))
        for command in [["stats", directory], ["recover", directory, directory + "-new"]] {
            let run = try strata(command + ["--key-file", bad])
            XCTAssertEqual(run.status, 2, "\(command): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(bad) && run.stderr.contains("128 hexadecimal digits"), run.stderr)
        }
        let missing = try strata("stats", directory, "--key-file", directory + "-absent")
        XCTAssertEqual(missing.status, 2, missing.stderr)
        XCTAssertEqual(try strata("stats", directory, "--key-file", keys.raw).status, 0, "nothing was changed")
    }

    func testRecoverWritesAnEncryptedStoreIntoOneWithTheSameKey() throws {
        let keys = try makeEncryptedObjectStore()
        let destination = directory + "-recovered"
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let run = try strata("recover", directory, destination, "--key-file", keys.raw)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("nothing was lost"), run.stdout)
        var config = Realm.Configuration(directory: URL(fileURLWithPath: destination))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        config.encryptionKey = Self.toolKey
        XCTAssertEqual(try Realm(configuration: config).objects(ToolOwner.self).count, 3)
        XCTAssertEqual(try strata("stats", destination).status, 1, "the recovered store is encrypted")
    }
}
