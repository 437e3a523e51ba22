// Derived data (`Store.writeDerivedData` / `derivedData(named:for:)`): bytes kept beside the
// store for exactly one stored state. A file is read back only for a snapshot of the state
// it was written for; a later commit, a compaction, a damaged or cut file, or a bad name
// never yields bytes that do not belong to the snapshot.

import XCTest
import Foundation
import StrataTestSupport
@testable import StrataStorage

final class DerivedDataTests: XCTestCase {
    private func filePath(_ dir: TemporaryDirectory, _ name: String) -> String { dir.path + "/" + name + ".derived" }

    func testDerivedDataIsReadBackOnlyForTheStateItWasWrittenFor() throws {
        let dir = TemporaryDirectory()
        var store: Store? = try Store(directory: dir.url)
        try store!.write { try $0.put(table: 1, key: Array("a".utf8), value: Array("1".utf8)) }
        let written = store!.snapshot()
        let payload = (0 ..< 10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try store!.writeDerivedData(payload, named: "table-1", for: written)
        XCTAssertTrue(store!.derivedData(named: "table-1", for: written).map { Array($0) } == payload)
        XCTAssertNil(store!.derivedData(named: "table-2", for: written)?.count, "no file of that name")

        // Closed and opened again, nothing written in between: the same state.
        try store!.close()
        store = try Store(directory: dir.url)
        XCTAssertTrue(store!.derivedData(named: "table-1", for: store!.snapshot()).map { Array($0) } == payload, "after a clean reopen")

        // A commit makes it stale for newer snapshots.
        try store!.write { try $0.put(table: 1, key: Array("a".utf8), value: Array("2".utf8)) }
        XCTAssertNil(store!.derivedData(named: "table-1", for: store!.snapshot())?.count, "after a commit")
        XCTAssertFalse(FileManager.default.fileExists(atPath: filePath(dir, "table-1")), "a stale file is removed")

        // Written again for the new state, then `compact()`, which seals the active segment
        // first (a roll): stale again.
        try store!.writeDerivedData(payload, named: "table-1", for: store!.snapshot())
        XCTAssertTrue(store!.derivedData(named: "table-1", for: store!.snapshot()).map { Array($0) } == payload)
        _ = try store!.compact()
        XCTAssertNil(store!.derivedData(named: "table-1", for: store!.snapshot())?.count, "after a roll")
        try store!.close()
    }

    /// The background compaction rewrites sealed segments without changing any key's value
    /// and leaves the active segment where the last commit lies: data written before it
    /// still describes the store, and is read back.
    func testABackgroundCompactionLeavesDerivedDataValid() throws {
        let dir = TemporaryDirectory()
        var small = options(segmentSize: 4096)
        small.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: small)
        defer { try? store.close() }
        for round in 0 ..< 40 {
            try store.write { t in for key in 0 ..< 8 { try t.put(table: 1, key: [UInt8(key)], value: [UInt8](repeating: UInt8(round), count: 100)) } }
        }
        let before = store.snapshot()
        try store.writeDerivedData([1, 2, 3], named: "d", for: before)
        let report = try store.runCompaction(manual: false)
        XCTAssertGreaterThan(report.segmentsCompacted, 0, "the sealed segments were rewritten")
        let after = store.snapshot()
        XCTAssertEqual(after.sequence, before.sequence)
        for key in 0 ..< 8 { XCTAssertEqual(try after.get(table: 1, key: [UInt8(key)]), [UInt8](repeating: 39, count: 100)) }
        XCTAssertEqual(store.derivedData(named: "d", for: after).map { Array($0) }, [1, 2, 3], "read back after the compaction")
    }

    /// Data written for commits a crash could still take back would describe a state that
    /// later commits can rebuild over other data (same sequence, same segment end): the
    /// commits it reflects are synced before the file is written.
    func testDerivedDataIsWrittenOnlyOnceTheCommitsItReflectsAreDurable() throws {
        let dir = TemporaryDirectory()
        let fs = RecordingFileSystem()
        let store = try Store(directory: dir.url, options: options(durability: .none, fileSystem: fs))
        defer { try? store.close() }
        try store.write { try $0.put(table: 1, key: [1], value: [2]) }
        try store.writeDerivedData([9], named: "n", for: store.snapshot())
        let operations = fs.operations
        let segments = Set(operations.compactMap { operation -> Int? in
            if case .create(let path, let inode) = operation, path.hasSuffix(".seg") || path.hasSuffix(".seg.tmp") { return inode }
            return nil
        })
        guard let renamed = operations.firstIndex(where: { if case .rename(_, let to) = $0 { return to.hasSuffix("n.derived") } else { return false } }) else {
            return XCTFail("no derived data written: \(operations.count) operations")
        }
        let lastWrite = operations.lastIndex { if case .write(let inode, _, _) = $0 { return segments.contains(inode) } else { return false } }
        let syncAfterWrite = operations.indices.contains { index in
            guard index < renamed, let lastWrite, index > lastWrite, case .sync(let inode) = operations[index] else { return false }
            return segments.contains(inode)
        }
        XCTAssertTrue(syncAfterWrite, "the segment is synced after the commit's write and before the file is renamed into place")
    }

    /// Crash sweep: a crash at any point of writing derived data (and of the close after
    /// it) leaves a store that opens, whose derived data is either absent or exactly the
    /// payload, and then only beside the commits it was written for.
    func testACrashAtAnyPointLeavesTheDataWholeAndOnlyForItsState() throws {
        let dir = TemporaryDirectory()
        let fs = RecordingFileSystem()
        let store = try Store(directory: dir.url, options: options(durability: .none, fileSystem: fs))
        for round in 0 ..< 20 {
            try store.write { try $0.put(table: 1, key: [UInt8(round)], value: [UInt8](repeating: UInt8(round), count: 50)) }
        }
        let payload = (0 ..< 3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let first = fs.operationCount
        try store.writeDerivedData(payload, named: "p", for: store.snapshot())
        try store.close()
        let operations = fs.operations
        var rng = SplitMix64(seed: baseSeed &+ 2718)
        var readBack = 0
        for prefix in first ... operations.count {
            for variant in 0 ..< 12 {
                let scratch = TemporaryDirectory("derived-crash")
                try CrashSimulator(operations: operations).materialize(prefix: prefix, into: scratch.path, rng: &rng)
                let reopened = try Store(directory: scratch.url)
                defer { try? reopened.close() }
                guard let found = reopened.derivedData(named: "p", for: reopened.snapshot()) else { continue }
                XCTAssertEqual(Array(found), payload, "prefix \(prefix), variant \(variant): whole or absent")
                for round in 0 ..< 20 {
                    XCTAssertEqual(try reopened.get(table: 1, key: [UInt8(round)]), [UInt8](repeating: UInt8(round), count: 50),
                                   "prefix \(prefix), variant \(variant): read back beside a store missing commit \(round)")
                }
                readBack += 1
            }
        }
        XCTAssertGreaterThan(readBack, 0, "some crash points keep the file")
    }

    func testADamagedOrCutFileIsRefusedAndRemoved() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        defer { try? store.close() }
        try store.write { try $0.put(table: 1, key: Array("a".utf8), value: Array("1".utf8)) }
        let snapshot = store.snapshot()
        let payload = [UInt8](repeating: 7, count: 4096)
        let path = filePath(dir, "p")
        for damage in ["flip", "cut", "empty"] {
            try store.writeDerivedData(payload, named: "p", for: snapshot)
            var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            switch damage {
            case "flip": bytes[bytes.count / 2] ^= 0x10
            case "cut": bytes.removeLast(100)
            default: bytes = []
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            XCTAssertNil(store.derivedData(named: "p", for: snapshot)?.count, damage)
            XCTAssertFalse(FileManager.default.fileExists(atPath: path), "\(damage): a damaged file is removed")
        }
    }

    func testBadNamesAreRefusedAndAReadOnlyStoreWritesNothing() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: [1], value: [2]) }
            let snapshot = store.snapshot()
            for name in ["", "A", "../escape", "a/b", "a.b", String(repeating: "x", count: 65)] {
                XCTAssertThrowsError(try store.writeDerivedData([1], named: name, for: snapshot), name) { error in
                    guard case StoreError.invalidArgument(let message) = error else { return XCTFail("\(name): \(error)") }
                    XCTAssertTrue(message.contains("derived data name"), message)
                }
                XCTAssertNil(store.derivedData(named: name, for: snapshot)?.count)
            }
            try store.close()
        }
        var options = StoreOptions()
        options.readOnly = true
        let reader = try Store(directory: dir.url, options: options)
        defer { try? reader.close() }
        try reader.writeDerivedData([1, 2, 3], named: "r", for: reader.snapshot())
        XCTAssertFalse(FileManager.default.fileExists(atPath: filePath(dir, "r")))
    }

    func testAnEncryptedStoresDerivedDataIsSealedWithItsKey() throws {
        let dir = TemporaryDirectory()
        var options = StoreOptions()
        options.encryptionKey = Data((0 ..< 64).map { UInt8($0) })
        let store = try Store(directory: dir.url, options: options)
        defer { try? store.close() }
        try store.write { try $0.put(table: 1, key: [1], value: [2]) }
        let snapshot = store.snapshot()
        let payload = Array("a secret value in clear".utf8)
        try store.writeDerivedData(payload, named: "s", for: snapshot)
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: filePath(dir, "s")))
        XCTAssertNil(onDisk.range(of: Data(payload)), "the payload is not on disk in clear")
        XCTAssertTrue(store.derivedData(named: "s", for: snapshot).map { Array($0) } == payload)
    }
}
