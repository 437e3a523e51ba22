// Issue 13, finding 1: a lost, truncated or replaced segment must never open silently.
// Each case used to open to an older state (values gone back, deleted keys back) with
// `verify()` clean; the MANIFEST (docs/FORMAT.md) now names every segment and, for a sealed
// one, its exact length, so each gives `corrupted` naming the file.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class ReliabilityLostSegmentTests: XCTestCase {
    /// A store of several sealed log segments (hints beside them) and an active one. Key
    /// `k<i>` is written in transaction i; every tenth transaction also deletes an earlier key.
    private func buildStore(_ dir: TemporaryDirectory, compactAt: Int? = nil, transactions: Int = 60) throws {
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< transactions {
            if i == compactAt { try store.compact() }
            try store.write { txn in
                try txn.put(table: 1, key: bytes("k\(i)"), value: value(UInt64(i), length: 300))
                try txn.put(table: 1, key: bytes("counter"), value: bytes("\(i)"))
                if i % 10 == 9 { try txn.delete(table: 1, key: bytes("k\(i - 5)")) }
            }
        }
        try store.close()
    }

    private func segmentFiles(_ dir: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }.sorted()
    }

    private func kind(_ dir: TemporaryDirectory, _ name: String) throws -> SegmentKind? {
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name))
        return SegmentKind(rawValue: data[16])
    }

    private func assertCorrupted(_ dir: TemporaryDirectory, naming name: String, _ context: String,
                                 file: StaticString = #filePath, line: UInt = #line) {
        for readOnly in [true, false] {
            var opts = StoreOptions()
            opts.readOnly = readOnly
            do {
                let store = try Store(directory: dir.url, options: opts)
                let counter = (try? store.get(table: 1, key: bytes("counter"))).flatMap { $0 }.map { "\($0.count) bytes" }
                let clean = (try? store.verify().isClean) ?? false
                try? store.close()
                XCTFail("\(context): opened (readOnly \(readOnly)) with counter \(counter ?? "nil"), verify clean \(clean)", file: file, line: line)
            } catch let StoreError.corrupted(segment, _, reason) {
                XCTAssertEqual(segment, name, "\(context): \(reason)", file: file, line: line)
            } catch {
                XCTFail("\(context): \(error)", file: file, line: line)
            }
        }
    }

    func testDeletedMiddleLogSegmentIsCorruption() throws {
        let dir = TemporaryDirectory("lost-middle")
        try buildStore(dir)
        let segments = try segmentFiles(dir)
        XCTAssertGreaterThanOrEqual(segments.count, 4)
        let victim = segments[segments.count / 2]
        try FileManager.default.removeItem(atPath: dir.path + "/" + victim)
        try? FileManager.default.removeItem(atPath: dir.path + "/" + victim.replacingOccurrences(of: ".seg", with: ".hint"))
        assertCorrupted(dir, naming: victim, "deleted \(victim)")
    }

    func testSealedSegmentTruncatedAtACommitBoundaryIsCorruption() throws {
        for keepHint in [true, false] {
            let dir = TemporaryDirectory("lost-truncated")
            try buildStore(dir)
            let segments = try segmentFiles(dir)
            let victim = segments[segments.count - 2]   // the newest sealed segment
            let url = URL(fileURLWithPath: dir.path + "/" + victim)
            let data = try Data(contentsOf: url)
            // The end of its first transaction: a perfectly valid, shorter segment.
            var ends: [Int] = []
            data.withUnsafeBytes { raw in
                _ = SegmentScanner.scan(SegmentReader(raw, cipher: nil), segmentID: Store.parseSegmentName(victim)!, previousSequence: 0) { entries, _ in
                    let last = entries.last!.location
                    ends.append(Int(last.offset + last.size) + RecordFormat.commitRecordSize)
                }
            }
            XCTAssertGreaterThan(ends.count, 1)
            try data.prefix(ends[0]).write(to: url)
            if !keepHint { try? FileManager.default.removeItem(atPath: dir.path + "/" + victim.replacingOccurrences(of: ".seg", with: ".hint")) }
            assertCorrupted(dir, naming: victim, "\(victim) truncated to \(ends[0]), hint kept \(keepHint)")
        }
    }

    func testSealedSegmentReplacedByAnOlderCopyIsCorruption() throws {
        let dir = TemporaryDirectory("lost-replaced")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        var older: (name: String, data: Data)?
        do {
            let store = try Store(directory: dir.url, options: opts)
            for i in 0 ..< 40 {
                try store.write { try $0.put(table: 1, key: bytes("counter"), value: value(UInt64(i), length: 500)) }
                if i == 3 {
                    let name = try segmentFiles(dir).last!
                    older = (name, try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name)))
                }
            }
            try store.close()
        }
        let (name, data) = try XCTUnwrap(older)
        XCTAssertNotEqual(try segmentFiles(dir).last, name, "the copied segment was sealed since")
        try data.write(to: URL(fileURLWithPath: dir.path + "/" + name))
        try? FileManager.default.removeItem(atPath: dir.path + "/" + name.replacingOccurrences(of: ".seg", with: ".hint"))
        assertCorrupted(dir, naming: name, "\(name) replaced by an older copy")
    }

    func testDeletedCompactedOutputIsCorruption() throws {
        let dir = TemporaryDirectory("lost-compacted")
        try buildStore(dir, compactAt: 40)
        let compacted = try segmentFiles(dir).filter { try kind(dir, $0) == .compacted }
        let victim = try XCTUnwrap(compacted.first)
        try FileManager.default.removeItem(atPath: dir.path + "/" + victim)
        try? FileManager.default.removeItem(atPath: dir.path + "/" + victim.replacingOccurrences(of: ".seg", with: ".hint"))
        assertCorrupted(dir, naming: victim, "deleted compacted \(victim)")
    }

    func testDeletedActiveSegmentWithoutCleanMarkerIsCorruption() throws {
        let dir = TemporaryDirectory("lost-active")
        try buildStore(dir)
        let victim = try segmentFiles(dir).last!
        try FileManager.default.removeItem(atPath: dir.path + "/" + victim)
        try FileManager.default.removeItem(atPath: dir.path + "/" + CleanShutdown.fileName)
        assertCorrupted(dir, naming: victim, "deleted active \(victim) and CLEAN")
    }
}

/// The choices around the manifest: old stores open and gain one; a deleted or damaged
/// manifest is corruption; leftovers of an interrupted switch are removed.
final class ManifestTests: XCTestCase {
    private func rewriteHeaderVersion(_ path: String, to version: UInt8) throws {
        let url = URL(fileURLWithPath: path)
        var data = try Data(contentsOf: url)
        data[8] = version
        let crc = Checksum.crc32c(Array(data[0 ..< 44]))
        data.replaceSubrange(44 ..< 48, with: withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        try data.write(to: url)
    }

    func testAStoreWrittenBeforeManifestsOpensAndIsUpgraded() throws {
        let dir = TemporaryDirectory("manifest-legacy")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: opts)
            for i in 0 ..< 30 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 300)) } }
            try store.close()
        }
        // As version 1 wrote it: no MANIFEST, version 1 headers.
        try FileManager.default.removeItem(atPath: dir.path + "/" + Manifest.fileName)
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }.sorted()
        for name in segments { try rewriteHeaderVersion(dir.path + "/" + name, to: 1) }
        var readOnly = opts
        readOnly.readOnly = true
        do {
            let store = try Store(directory: dir.url, options: readOnly)
            XCTAssertEqual(try store.get(table: 1, key: key(29)), value(29, length: 300))
            try store.close()
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir.path + "/" + Manifest.fileName), "a read-only open writes nothing")
        }
        do {
            let store = try Store(directory: dir.url, options: opts)
            XCTAssertEqual(try store.get(table: 1, key: key(0)), value(0, length: 300))
            try store.close()
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.path + "/" + Manifest.fileName))
        let active = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + segments.last!))
        XCTAssertEqual(active[8], 2, "the active segment is marked version 2, so older builds refuse the store")
        // From now on the manifest protects it.
        try FileManager.default.removeItem(atPath: dir.path + "/" + segments[1])
        XCTAssertThrowsError(try Store(directory: dir.url, options: opts)) {
            guard case StoreError.corrupted(let segment, _, _) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(segment, segments[1])
        }
    }

    func testDeletedOrDamagedManifestIsCorruption() throws {
        let dir = TemporaryDirectory("manifest-gone")
        do {
            let store = try Store(directory: dir.url, options: options(segmentSize: 4096))
            for i in 0 ..< 30 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 300)) } }
            try store.close()
        }
        let url = URL(fileURLWithPath: dir.path + "/" + Manifest.fileName)
        let original = try Data(contentsOf: url)
        var damaged = original
        damaged[20] ^= 1
        try damaged.write(to: url)
        XCTAssertThrowsError(try Store(directory: dir.url)) {
            XCTAssertEqual(($0 as? StoreError).flatMap { if case .corrupted(let s, _, _) = $0 { s } else { nil } }, Manifest.fileName, "\($0)")
        }
        try FileManager.default.removeItem(at: url)
        XCTAssertThrowsError(try Store(directory: dir.url)) {
            XCTAssertEqual(($0 as? StoreError).flatMap { if case .corrupted(let s, _, _) = $0 { s } else { nil } }, Manifest.fileName, "\($0)")
            XCTAssertTrue("\($0)".contains("missing"), "\($0)")
        }
        try original.write(to: url)
        let store = try Store(directory: dir.url)
        XCTAssertEqual(try store.get(table: 1, key: key(29)), value(29, length: 300))
        try store.close()
    }

    /// Each way a manifest entry can be wrong has its own reason, at the entry's offset
    /// (before, five checks shared "entry i is malformed" at offset 0).
    func testAMalformedManifestEntrySaysWhatAndWhere() {
        var manifest = Manifest()
        manifest.entries[1] = Manifest.Entry(kind: .log, sealedLength: 4096)
        manifest.entries[2] = Manifest.Entry(kind: .log, sealedLength: nil)
        let good = manifest.encode()
        guard case .success = Manifest.decode(good) else { return XCTFail("the encoded manifest does not decode") }
        let second = Manifest.headerSize + Manifest.entrySize   // entry 1, file 2
        let cases: [(Int, UInt8, String)] = [
            (second + 4, 9, "unknown segment kind 9"),
            (second + 5, 2, "state byte 2"),
            (second + 6, 1, "reserved bytes are not zero"),
            (second, 1, "the number is listed twice"),
            (second, 0, "file number 0"),
        ]
        for (at, byte, reason) in cases {
            var bytes = good
            bytes[at] = byte
            bytes.removeLast(4)
            bytes.appendLE32(Checksum.crc32c(bytes))
            guard case .failure(let problem) = Manifest.decode(bytes) else { XCTFail(reason); continue }
            XCTAssertTrue(problem.reason.contains("manifest entry 1"), problem.reason)
            XCTAssertTrue(problem.reason.contains(reason), problem.reason)
            XCTAssertEqual(problem.offset, second, reason)
        }
        var flipped = good
        flipped[second + 9] ^= 1
        guard case .failure(let checksum) = Manifest.decode(flipped) else { return XCTFail("a flipped bit decodes") }
        XCTAssertEqual(checksum.offset, good.count - 4)
    }

    func testLeftoversOfAnInterruptedSwitchAreRemoved() throws {
        let dir = TemporaryDirectory("manifest-leftover")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        let before: Data
        var manifest = Manifest()
        do {
            let store = try Store(directory: dir.url, options: opts)
            for i in 0 ..< 30 { try store.write { try $0.put(table: 1, key: key(i % 5), value: value(UInt64(i), length: 300)) } }
            before = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + Manifest.fileName))
            try store.compact()
            manifest = store.manifestLock.withLock { $0 }
            try store.close()
        }
        // The manifest plus an unlisted, empty log segment above the active one (a roll
        // interrupted before its manifest write) is the same store; the leftover goes.
        XCTAssertNotEqual(before, try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + Manifest.fileName)))
        let extra = manifest.activeNumber! + 7
        try Data(SegmentHeader.encode(number: extra)).write(to: URL(fileURLWithPath: dir.path + "/" + segmentName(extra)))
        let store = try Store(directory: dir.url, options: opts)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.path + "/" + segmentName(extra)))
        for i in 25 ..< 30 { XCTAssertEqual(try store.get(table: 1, key: key(i % 5)), value(UInt64(i), length: 300)) }
        XCTAssertTrue(try store.verify().isClean)
        try store.close()
        // An unlisted log segment above the active one that holds data cannot come from a crash.
        var data = Data(SegmentHeader.encode(number: extra))
        data.append(Data(count: 64))
        try data.write(to: URL(fileURLWithPath: dir.path + "/" + segmentName(extra)))
        XCTAssertThrowsError(try Store(directory: dir.url, options: opts)) {
            XCTAssertEqual(($0 as? StoreError).flatMap { if case .corrupted(let s, _, _) = $0 { s } else { nil } }, segmentName(extra), "\($0)")
        }
    }
}
