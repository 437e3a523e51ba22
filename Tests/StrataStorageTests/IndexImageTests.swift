// The index image (issue 27): the key index written at close and mapped by the next open
// instead of rebuilt. The image must hold exactly the index it was written from, survive
// the writes made on top of it without changing on disk, be refused whole on any damaged
// byte, and be used only while it fits the segments (otherwise the open rebuilds).

import XCTest
import Foundation
import StrataTestSupport
import CStrataSupport
@testable import StrataStorage

final class IndexImageTests: XCTestCase {
    private func makeKey(_ n: Int) -> IndexKey {
        n % 3 == 0 ? IndexKey(Array("a-long-key-kept-in-the-image-\(n)".utf8)) : IndexKey(Array("k\(n)".utf8))
    }

    private func location(_ n: Int, _ version: Int) -> Location {
        Location(segment: UInt32(version), offset: UInt32(n), size: UInt32(n &+ version))
    }

    private func contents(_ index: HashIndex) throws -> [IndexKey: Location] {
        var seen: [IndexKey: Location] = [:]
        try index.forEach { seen[$0] = $1 }
        return seen
    }

    private func coverage() -> IndexImage.Coverage {
        .init(segments: [.init(id: 1, wasActive: false, length: 4096, rawValueBytes: 10, storedValueBytes: 9, liveBytes: 8),
                         .init(id: 2, wasActive: true, length: 100, rawValueBytes: 1, storedValueBytes: 1, liveBytes: -3)],
              sequence: 77)
    }

    /// The store's files as a crash now would leave them (the store stays open): every file
    /// but the lock and unfinished `.tmp` files (a crash leaves those to the next open, which
    /// removes them; one may be renamed away while it is copied).
    private func copyAsIfCrashed(_ source: TemporaryDirectory, to target: TemporaryDirectory) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: source.url.path) where name != "LOCK" && !name.hasSuffix(".tmp") {
            try FileManager.default.copyItem(at: source.url.appendingPathComponent(name), to: target.url.appendingPathComponent(name))
        }
    }

    /// Flips a bit every `stride` bytes of the pages section of the store's image (the
    /// header and directory stay intact: the image is used, its pages fail their checks).
    private func damagePages(in dir: TemporaryDirectory, every stride: Int) throws {
        let imagePath = dir.url.appendingPathComponent("INDEX").path
        var image = try Data(contentsOf: URL(fileURLWithPath: imagePath))
        let keysStart = Int(image[40]) | Int(image[41]) << 8 | Int(image[42]) << 16
        for offset in Swift.stride(from: IndexImage.headerSize + 3, to: keysStart, by: stride) { image[offset] ^= 0x04 }
        try image.write(to: URL(fileURLWithPath: imagePath))
    }

    /// Writes `bytes` to a file and maps it, as an open does.
    private func mapped(_ bytes: [UInt8], in dir: TemporaryDirectory, name: String = "INDEX") throws -> MappedRegion {
        let path = dir.url.appendingPathComponent(name).path
        let fs = PosixFileSystem()
        let file = try fs.openFile(path, create: true, readOnly: false)
        try file.truncate(to: 0)
        try file.write(bytes, at: 0)
        defer { file.close() }
        return try file.mapCopyOnWrite(length: bytes.count)
    }

    /// Tables of inline and long keys, one big enough for branches under the root, with
    /// deletes: loaded back, the same keys at the same locations, the same structure, and
    /// changes to the loaded index (copy on write out of the mapping) leave the file as it was.
    func testAnImageLoadsBackTheIndexAndTakesWritesWithoutChangingOnDisk() throws {
        let dir = TemporaryDirectory("index-image-roundtrip")
        var rng = SplitMix64(seed: baseSeed &+ 27)
        let seed = rng.next()
        var tables: [UInt32: HashIndex] = [:]
        for (table, keys) in [(UInt32(1), 3), (2, 2_000), (7, 300_000)] {
            var index = HashIndex(seed: seed)
            for n in 0 ..< keys { index.update(makeKey(n), to: location(n, 1)) }
            for n in stride(from: 0, to: keys, by: 5) { index.remove(makeKey(n)) }
            tables[table] = index
        }
        let bytes = try IndexImage.encode(tables: tables, seed: seed, coverage: coverage())
        let loaded = try IndexImage.load(try mapped(bytes, in: dir))
        XCTAssertEqual(loaded.seed, seed)
        XCTAssertEqual(loaded.coverage, coverage())
        XCTAssertEqual(Set(loaded.tables.keys), Set(tables.keys))
        for (table, index) in tables {
            let image = loaded.tables[table]!
            XCTAssertNil(image.checkInvariants(), "table \(table)")
            XCTAssertEqual(image.count, index.count)
            XCTAssertEqual(try contents(image), try contents(index), "table \(table)")
        }
        // Writes on the loaded index: a model says what it must hold.
        var index = loaded.tables[7]!
        var model = try contents(index)
        for step in 0 ..< 20_000 {
            let n = Int(rng.next() % 320_000), key = makeKey(n)
            if rng.next() % 3 == 0 {
                XCTAssertEqual(index.remove(key), model.removeValue(forKey: key), "remove at step \(step)")
            } else {
                XCTAssertEqual(index.update(key, to: location(n, step)), model.updateValue(location(n, step), forKey: key))
            }
        }
        XCTAssertNil(index.checkInvariants())
        XCTAssertEqual(try contents(index), model)
        // The image in memory and on disk is unchanged: the loaded copy still reads as written.
        XCTAssertEqual(try contents(loaded.tables[7]!), try contents(tables[7]!))
        let again = try IndexImage.load(try mapped(bytes, in: dir, name: "INDEX2"))
        XCTAssertEqual(try contents(again.tables[7]!), try contents(tables[7]!))
        // An image written from an index read partly in place holds the same again.
        let rewritten = try IndexImage.encode(tables: [7: index], seed: seed, coverage: coverage())
        XCTAssertEqual(try contents(try IndexImage.load(try mapped(rewritten, in: dir, name: "INDEX3")).tables[7]!), model)
    }

    /// Every byte of an image is under a checksum: a flipped bit anywhere makes the image
    /// refused at load (header, directory) or its page fail the check made when the page is
    /// first touched — never an entry answered wrong. Truncations are refused at load.
    func testADamagedImageIsRefusedOrItsPageFailsItsCheck() throws {
        let dir = TemporaryDirectory("index-image-damage")
        var rng = SplitMix64(seed: baseSeed &+ 28)
        var index = HashIndex(seed: 5)
        for n in 0 ..< 300 { index.update(makeKey(n), to: location(n, 1)) }
        let original = try contents(index)
        let bytes = try IndexImage.encode(tables: [3: index], seed: 5, coverage: coverage())
        let positions = bytes.count <= 4_000 * TestEnvironment.fuzzScale
            ? Array(0 ..< bytes.count)
            : (0 ..< 4_000 * TestEnvironment.fuzzScale).map { _ in Int(rng.next() % UInt64(bytes.count)) }
        var refused = 0, failedPages = 0
        for (i, position) in positions.enumerated() {
            var damaged = bytes
            damaged[position] ^= UInt8(1) << (rng.next() % 8)
            guard let loaded = try? IndexImage.load(try mapped(damaged, in: dir, name: "D\(i % 8)")) else {
                refused += 1
                continue
            }
            // No covered log is given: a page that fails is damaged, and says so.
            var damage = 0
            var seen: [IndexKey: Location] = [:]
            loaded.tables[3]?.forEach(damaged: { _ in damage += 1 }) { seen[$0] = $1 }
            XCTAssertGreaterThan(damage, 0, "byte \(position): a damaged page passed its check")
            for (key, location) in seen { XCTAssertEqual(original[key], location, "byte \(position): a wrong entry") }
            XCTAssertTrue(loaded.image.isDamaged)
            failedPages += 1
        }
        XCTAssertGreaterThan(refused, 0)
        XCTAssertGreaterThan(failedPages, 0)
        for length in [0, 10, 63, 64, bytes.count / 2, bytes.count - 1] {
            XCTAssertThrowsError(try IndexImage.load(try mapped(Array(bytes.prefix(length)), in: dir, name: "T")), "length \(length)")
        }
    }

    /// The rules for using an image: each covered segment present and as long, the one
    /// active then at least as long, every other segment a newer log segment.
    func testAnImageIsUsedOnlyWhileItFitsTheSegments() {
        let cover = coverage()   // 1 sealed at 4096, 2 active at 100
        XCTAssertNil(IndexImage.mismatch(cover, found: [(1, 4096, .log), (2, 100, .log)]))
        XCTAssertNil(IndexImage.mismatch(cover, found: [(1, 4096, .log), (2, 900, .log)]), "the active segment grew")
        XCTAssertNil(IndexImage.mismatch(cover, found: [(1, 4096, .log), (2, 900, .log), (3, 64, .log)]), "a roll since")
        XCTAssertNotNil(IndexImage.mismatch(cover, found: [(2, 100, .log)]), "a covered segment is gone")
        XCTAssertNotNil(IndexImage.mismatch(cover, found: [(1, 4000, .log), (2, 100, .log)]), "a sealed segment changed")
        XCTAssertNotNil(IndexImage.mismatch(cover, found: [(1, 4096, .log), (2, 99, .log)]), "the active one is shorter")
        XCTAssertNotNil(IndexImage.mismatch(cover, found: [(1, 4096, .log), (2, 100, .log), (3, 64, .compacted)]),
                        "a compaction output since")
        XCTAssertNotNil(IndexImage.mismatch(cover, found: [(0, 64, .log), (1, 4096, .log), (2, 100, .log)]),
                        "an older segment it does not cover")
        XCTAssertNotNil(IndexImage.mismatch(cover, found: [(2, 100, .log), (1, 4096, .log)]), "a sealed one now active")
        // What an open would replay after it: what the active one grew by, and later segments.
        XCTAssertEqual(IndexImage.replayBytes(cover, found: [(1, 4096, .log), (2, 900, .log), (3, 64, .log)]).covered, 4196)
        XCTAssertEqual(IndexImage.replayBytes(cover, found: [(1, 4096, .log), (2, 900, .log), (3, 64, .log)]).after, 864)
    }

    /// A store that is never closed still gets images: a roll writes one (off the commit
    /// path) once twice the image's size in log was sealed since the last, so an open after
    /// a crash replays only the log since then, and the replay is checked by the same answers.
    func testRollsWriteImagesSoACrashReplaysOnlyTheLogSinceTheLast() throws {
        let dir = TemporaryDirectory("index-image-roll")
        var small = options(segmentSize: 16 << 10)
        small.autoCompaction = .disabled
        var expected: [String: String] = [:]
        let crashed = TemporaryDirectory("index-image-roll-crashed")
        do {
            let store = try Store(directory: dir.url, options: small)
            // ~1 MB of log over 2,000 keys: an image is due every ~190 KB.
            for round in 0 ..< 7 { try fill(store, from: 0, count: 2_000, tag: "r\(round)") }
            try fill(store, from: 1_000, count: 100, tag: "b")
            model(0 ..< 2_000, tag: "r6", into: &expected)
            model(1_000 ..< 1_100, tag: "b", into: &expected)
            store.waitForSealedHints()
            XCTAssertTrue(FileManager.default.fileExists(atPath: dir.url.appendingPathComponent(IndexImage.fileName).path),
                          "no roll wrote an image")
            try copyAsIfCrashed(dir, to: crashed)
            try store.close()
        }
        let store = try Store(directory: crashed.url, options: small)
        let coverage = try XCTUnwrap(store.openedImageCoverage, "the open after the crash did not use the roll's image")
        XCTAssertGreaterThan(coverage.sequence, 0)
        XCTAssertLessThan(coverage.sequence, store.lastSequence, "the image covered everything: nothing was replayed")
        try expect(store, expected)
    }

    // MARK: Through the store

    private func fill(_ store: Store, from: Int, count: Int, table: UInt32 = 1, tag: String) throws {
        var n = from
        while n < from + count {
            try store.write { tx in
                for i in n ..< min(from + count, n + 500) {
                    try tx.put(table: table, key: bytes("key-\(i)" + (i % 4 == 0 ? "-with-a-longer-tail" : "")),
                               value: bytes("\(tag)-\(i)"))
                }
            }
            n += 500
        }
    }

    private func expect(_ store: Store, _ model: [String: String], table: UInt32 = 1, file: StaticString = #filePath, line: UInt = #line) throws {
        let snapshot = store.snapshot()
        XCTAssertEqual(snapshot.count(table: table), model.count, file: file, line: line)
        for (key, value) in model {
            XCTAssertEqual(try snapshot.get(table: table, key: bytes(key)).map { String(decoding: $0, as: UTF8.self) }, value,
                           file: file, line: line)
        }
        XCTAssertNil(store.checkInvariants(), file: file, line: line)
    }

    private func model(_ range: Range<Int>, tag: String, into model: inout [String: String]) {
        for i in range { model["key-\(i)" + (i % 4 == 0 ? "-with-a-longer-tail" : "")] = "\(tag)-\(i)" }
    }

    /// Close writes the image; the next open maps it (and reads no hint), answers every
    /// key, keeps the space accounting exact, writes on top of it, and a crash after those
    /// writes (the directory copied while the store is open) replays only the log since.
    func testAStoreOpensFromItsImageAndReplaysTheLogAfterIt() throws {
        let dir = TemporaryDirectory("index-image-store")
        var expected: [String: String] = [:]
        // No compaction: one would retire the segments the image covers (the next test).
        var small = options(segmentSize: 64 << 10)
        small.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 0, count: 6_000, tag: "a")
            try fill(store, from: 0, count: 1_000, tag: "b")   // overwrites: dead bytes in old segments
            try store.write { tx in for i in stride(from: 2_000, to: 2_100, by: 1) { try tx.delete(table: 1, key: bytes("key-\(i)" + (i % 4 == 0 ? "-with-a-longer-tail" : ""))) } }
            try store.close()
        }
        model(0 ..< 6_000, tag: "a", into: &expected)
        model(0 ..< 1_000, tag: "b", into: &expected)
        for i in 2_000 ..< 2_100 { expected["key-\(i)" + (i % 4 == 0 ? "-with-a-longer-tail" : "")] = nil }
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("INDEX").path))

        let crashed = TemporaryDirectory("index-image-store-crashed")
        do {
            let store = try Store(directory: dir.url, options: small)
            XCTAssertNotNil(store.openedImageCoverage, "the open did not use the image")
            try expect(store, expected)
            // Writes on top of the image: overwrites, deletes, new keys, several segment rolls.
            try fill(store, from: 5_000, count: 3_000, tag: "c")
            try store.write { tx in for i in 0 ..< 50 { try tx.delete(table: 1, key: bytes("key-\(i * 3 + 1)")) } }
            try fill(store, from: 100, count: 10, table: 9, tag: "t")
            // A crash now: the files as they are, with no close.
            try copyAsIfCrashed(dir, to: crashed)
            try store.close()
        }
        model(5_000 ..< 8_000, tag: "c", into: &expected)
        for i in 0 ..< 50 { expected["key-\(i * 3 + 1)"] = nil }
        var tableNine: [String: String] = [:]
        model(100 ..< 110, tag: "t", into: &tableNine)
        for directory in [crashed, dir] {
            let store = try Store(directory: directory.url, options: small)
            XCTAssertNotNil(store.openedImageCoverage, "\(directory.url.lastPathComponent): the open did not use the image")
            try expect(store, expected)
            try expect(store, tableNine, table: 9)
            try store.close()
        }
    }

    /// An image that no longer fits (a compaction since, or damaged) is not used: the open
    /// rebuilds from the hints, answers as before, and the next close writes a fitting one.
    func testAnImageThatNoLongerFitsIsRebuiltFromTheHints() throws {
        let dir = TemporaryDirectory("index-image-stale")
        var expected: [String: String] = [:]
        var small = options(segmentSize: 64 << 10)
        small.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 0, count: 4_000, tag: "a")
            try fill(store, from: 0, count: 3_000, tag: "b")
            try store.close()
        }
        model(0 ..< 4_000, tag: "a", into: &expected)
        model(0 ..< 3_000, tag: "b", into: &expected)
        let imagePath = dir.url.appendingPathComponent("INDEX").path
        let written = try Data(contentsOf: URL(fileURLWithPath: imagePath))
        // Compacted while the image of before stays on disk (as after a crash before close).
        do {
            let store = try Store(directory: dir.url, options: small)
            XCTAssertGreaterThan(try store.compact().segmentsCompacted, 0)
            try expect(store, expected)
            try store.close()
        }
        try written.write(to: URL(fileURLWithPath: imagePath))
        do {
            let store = try Store(directory: dir.url, options: small)
            XCTAssertNil(store.openedImageCoverage, "a stale image was used")
            try expect(store, expected)
            try store.close()
        }
        // Damaged: one byte of a page. The image is used; the page fails its check when
        // first touched and is rebuilt from the log the image covers; close replaces the file.
        var damaged = try Data(contentsOf: URL(fileURLWithPath: imagePath))
        damaged[IndexImage.headerSize + 40] ^= 0x10
        try damaged.write(to: URL(fileURLWithPath: imagePath))
        do {
            let store = try Store(directory: dir.url, options: small)
            XCTAssertNotNil(store.openedImageCoverage, "the image's directory is intact: it is used")
            try expect(store, expected)
            try store.close()
        }
        let replaced = try Data(contentsOf: URL(fileURLWithPath: imagePath))
        XCTAssertNotEqual(replaced, damaged, "close did not replace the damaged image")
        let reloaded = try IndexImage.load(try mapped(Array(replaced), in: dir, name: "REPLACED"))
        reloaded.image.checkAll()
        XCTAssertFalse(reloaded.image.hadFailures)
        let store = try Store(directory: dir.url, options: small)
        XCTAssertNotNil(store.openedImageCoverage, "close did not write a fitting image again")
        try expect(store, expected)
    }

    /// A damaged page is rebuilt from the log the image covers, not from the current one:
    /// a snapshot taken before later commits still reads the page as the image held it.
    func testARebuiltPageKeepsEachSnapshotsView() throws {
        let dir = TemporaryDirectory("index-image-rebuild-mvcc")
        var small = options(segmentSize: 64 << 10)
        small.autoCompaction = .disabled
        var before: [String: String] = [:], after: [String: String] = [:]
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 0, count: 3_000, tag: "a")
            try store.close()
        }
        model(0 ..< 3_000, tag: "a", into: &before)
        model(0 ..< 3_000, tag: "b", into: &after)
        // Every page damaged: each is rebuilt by whoever touches it first.
        try damagePages(in: dir, every: 97)
        let store = try Store(directory: dir.url, options: small)
        XCTAssertNotNil(store.openedImageCoverage)
        let old = store.snapshot()
        try fill(store, from: 0, count: 3_000, tag: "b")
        XCTAssertTrue(store.writerDirectory.image?.hadFailures ?? false, "no page was found damaged")
        XCTAssertFalse(store.writerDirectory.image?.isDamaged ?? true, "a page was not rebuilt")
        XCTAssertEqual(store.writerDirectory.image?.coveredLogReads, 1, "the covered log was read again for another page")
        for (key, value) in before {
            XCTAssertEqual(try old.get(table: 1, key: bytes(key)).map { String(decoding: $0, as: UTF8.self) }, value)
        }
        try expect(store, after)
        try store.close()
    }

    /// A fuzz of the image file on a store deep enough that pages lie below second-level
    /// branches: random bytes flipped, the store opened, every key read. Each round either
    /// refuses the image (the open rebuilds from the hints) or rebuilds the pages that fail
    /// their check from the covered log — every answer right, whatever was damaged.
    func testRandomDamageToTheImageNeverGivesAWrongAnswer() throws {
        let dir = TemporaryDirectory("index-image-fuzz")
        var settings = options(segmentSize: 1 << 20, durability: .none)
        settings.autoCompaction = .disabled
        // A root part's page splits at 896 entries once over 7/8 full: at 1,458 slots, 1,276.
        // Over 256 × 1,276 keys, most root parts are branches with pages below them.
        let keys = 400_000
        func key(_ i: Int) -> [UInt8] { bytes(i % 5 == 0 ? "item-\(i)-with-a-long-name" : "k\(i)") }
        do {
            let store = try Store(directory: dir.url, options: settings)
            var i = 0
            while i < keys {
                try store.write { tx in
                    for n in i ..< min(keys, i + 20_000) { try tx.put(table: 2, key: key(n), value: withUnsafeBytes(of: UInt32(n)) { Array($0) }) }
                }
                i += 20_000
            }
            try store.close()
        }
        var rng = SplitMix64(seed: baseSeed &+ 41)
        var rebuilt = 0, refused = 0
        for round in 0 ..< 3 * TestEnvironment.fuzzScale {
            let copy = TemporaryDirectory("index-image-fuzz-\(round)")
            try copyAsIfCrashed(dir, to: copy)
            let imagePath = copy.url.appendingPathComponent("INDEX").path
            var image = try Data(contentsOf: URL(fileURLWithPath: imagePath))
            for _ in 0 ..< 1 + Int(rng.next() % 6) {
                // Mostly the pages (most of the file), sometimes anywhere.
                let position = rng.next() % 4 == 0 ? Int(rng.next() % UInt64(image.count))
                    : IndexImage.headerSize + Int(rng.next() % UInt64(image.count / 2))
                image[position] ^= UInt8(1) << (rng.next() % 8)
            }
            try image.write(to: URL(fileURLWithPath: imagePath))
            let store = try Store(directory: copy.url, options: settings)
            let snapshot = store.snapshot()
            XCTAssertEqual(snapshot.count(table: 2), keys)
            for n in 0 ..< keys {
                let value = try snapshot.get(table: 2, key: key(n))
                if value != withUnsafeBytes(of: UInt32(n), { Array($0) }) { XCTFail("round \(round): key \(n) read \(String(describing: value))"); break }
            }
            XCTAssertEqual(try snapshot.keys(table: 2).count, keys)
            if store.openedImageCoverage == nil {
                refused += 1
            } else if store.writerDirectory.image?.hadFailures ?? false {
                XCTAssertFalse(store.writerDirectory.image!.isDamaged)
                rebuilt += 1
            }
            XCTAssertNil(store.checkInvariants())
            try store.close()
        }
        XCTAssertGreaterThan(rebuilt, 0, "no round rebuilt a page (refused: \(refused))")
        let opened = try Store(directory: dir.url, options: settings)
        XCTAssertGreaterThan(opened.writerDirectory.tables[2]!.root!.children.compactMap { $0 }.filter { !$0.isLeaf }.count, 128,
                             "the trie is not deep enough to test pages below branches")
        try opened.close()
    }

    /// When the log the image covers cannot rebuild a damaged page either (its hints gone,
    /// its records damaged), nothing is answered from that page: its keys' reads and
    /// `contains` throw `corrupted` naming the image, listing keys throws, writes are
    /// refused — and every other key still reads right.
    func testAPageTheLogCannotRebuildFailsItsReadsAndRefusesWrites() throws {
        let dir = TemporaryDirectory("index-image-double-fault")
        var small = options(segmentSize: 64 << 10)
        small.autoCompaction = .disabled
        var expected: [String: String] = [:]
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 0, count: 3_000, tag: "a")
            try store.close()
        }
        model(0 ..< 3_000, tag: "a", into: &expected)
        let imagePath = dir.url.appendingPathComponent("INDEX").path
        var image = try Data(contentsOf: URL(fileURLWithPath: imagePath))
        image[IndexImage.headerSize + 40] ^= 0x10
        try image.write(to: URL(fileURLWithPath: imagePath))
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        for name in names where name.hasSuffix(".hint") { try FileManager.default.removeItem(at: dir.url.appendingPathComponent(name)) }
        // A record early in the first segment: every page's rebuild replays through it.
        let first = dir.url.appendingPathComponent(names.filter { $0.hasSuffix(".seg") }.sorted()[0])
        var segment = try Data(contentsOf: first)
        segment[200] ^= 0x01
        try segment.write(to: first)

        let store = try Store(directory: dir.url, options: small)
        XCTAssertNotNil(store.openedImageCoverage)
        let snapshot = store.snapshot()
        var failedOnTheImage = 0
        for (key, value) in expected {
            do {
                let read = try snapshot.get(table: 1, key: bytes(key))
                XCTAssertEqual(read.map { String(decoding: $0, as: UTF8.self) }, value, "a wrong answer for \(key)")
            } catch let StoreError.corrupted(segment, _, reason) {
                if segment == "INDEX" {
                    failedOnTheImage += 1
                    XCTAssertTrue(reason.contains("could not rebuild it"), reason)
                    XCTAssertThrowsError(try snapshot.contains(table: 1, key: bytes(key)))
                }
            }
        }
        XCTAssertGreaterThan(failedOnTheImage, 0)
        XCTAssertThrowsError(try snapshot.keys(table: 1))
        XCTAssertThrowsError(try store.write { try $0.put(table: 1, key: bytes("new"), value: bytes("v")) }) { error in
            guard case let StoreError.corrupted(segment, _, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(segment, "INDEX")
        }
        // Nothing of the refused write is readable. (The index's seed is random per store, so
        // "new" may route to the damaged page itself: then its read fails on the image, as
        // every key of that page does — it is not there either.)
        do {
            let read = try store.snapshot().get(table: 1, key: bytes("new"))
            XCTAssertNil(read, "a refused write left a trace")
        } catch let StoreError.corrupted(segment, _, reason) {
            XCTAssertEqual(segment, "INDEX")
            XCTAssertTrue(reason.contains("could not rebuild it"), reason)
        }
        try store.close()
    }

    /// An image that passes every check yet disagrees with the segments (a key left out,
    /// checksummed afresh) changes what the open answers; `verify()` replays the segments
    /// and names the key, as it does for such a hint.
    func testVerifyFindsAKeyAValidImageLeftOut() throws {
        let dir = TemporaryDirectory("index-image-verify")
        var small = options(segmentSize: 4096)
        small.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: small)
            for i in 0 ..< 30 { try store.write { try $0.put(table: 1, key: bytes("key-\(i)"), value: bytes("value-\(i)")) } }
            try store.close()
        }
        let imageURL = dir.url.appendingPathComponent(IndexImage.fileName)
        let written = [UInt8](try Data(contentsOf: imageURL))
        var loaded = try IndexImage.load(try mapped(written, in: dir, name: "copy"))
        XCTAssertNotNil(loaded.tables[1]!.remove(IndexKey(bytes("key-0"))))
        try Data(IndexImage.encode(tables: loaded.tables, seed: loaded.seed, coverage: loaded.coverage)).write(to: imageURL)
        try FileManager.default.removeItem(at: dir.url.appendingPathComponent("copy"))
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let store = try Store(directory: dir.url, options: readOnly)
        XCTAssertNotNil(store.openedImageCoverage)
        XCTAssertNil(try store.get(table: 1, key: bytes("key-0")), "the image left key-0 out")
        let report = try store.verify()
        XCTAssertFalse(report.isClean, "verify said clean with key-0 missing from the index")
        XCTAssertTrue(report.problems.contains { $0.reason.contains("missing from the index") }, "\(report.problems)")
    }

    /// A store opened from its image holds no hint entries for the active segment's records
    /// before the image; closing it must not write a prefix hint claiming there were none
    /// (it did: an open without the image then lost every key of the active segment).
    func testClosingAStoreOpenedFromItsImageKeepsTheHintsTrue() throws {
        let dir = TemporaryDirectory("index-image-hints")
        var expected: [String: String] = [:]
        var small = options(segmentSize: 64 << 10)
        small.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 0, count: 3_000, tag: "a")
            try store.close()
        }
        model(0 ..< 3_000, tag: "a", into: &expected)
        for round in 0 ..< 2 {
            let store = try Store(directory: dir.url, options: small)
            XCTAssertNotNil(store.openedImageCoverage)
            if round == 1 {
                try fill(store, from: 3_000, count: 10, tag: "b")
                model(3_000 ..< 3_010, tag: "b", into: &expected)
            }
            try store.close()
            try FileManager.default.removeItem(at: dir.url.appendingPathComponent(IndexImage.fileName))
            let rebuilt = try Store(directory: dir.url, options: small)
            XCTAssertNil(rebuilt.openedImageCoverage)
            try expect(rebuilt, expected)
            try rebuilt.close()
        }
    }

    /// The slot check an open runs over every page (behind its checksum, for an image made
    /// to pass that): a boxed key's pointer, a key outside the keys section, a length that
    /// would be inline, or an unknown marker refuses the page; inline and in-bounds keys pass.
    func testThePageSlotCheckRefusesEverySlotItCouldNotReadSafely() {
        func slot(k0: UInt64, k1: UInt64, tag: UInt32) -> [UInt8] {
            var value = IndexSlot(k0: k0, k1: k1, segment: 1, offset: 8, size: 40, tag: tag)
            return withUnsafeBytes(of: &value) { Array($0) }
        }
        func scan(_ slots: [[UInt8]]) -> Int? {
            let bytes = slots.flatMap { $0 }
            var used = 0
            let ok = bytes.withUnsafeBytes { strata_index_page_scan($0.baseAddress, slots.count, 1000, 2000, &used) }
            return ok == 1 ? used : nil
        }
        let empty = slot(k0: 0, k1: 0, tag: 0)
        let inline = slot(k0: 7, k1: 3 << 56, tag: 5)
        let long = slot(k0: 1500, k1: IndexSlot.mappedMarker | 100, tag: 9)
        XCTAssertEqual(scan([empty, inline, long, empty]), 2)
        XCTAssertEqual(scan([slot(k0: 1900, k1: IndexSlot.mappedMarker | 100, tag: 9)]), 1)
        XCTAssertNil(scan([empty, slot(k0: 1950, k1: IndexSlot.mappedMarker | 100, tag: 9)]), "runs past the keys")
        XCTAssertNil(scan([slot(k0: 900, k1: IndexSlot.mappedMarker | 20, tag: 9)]), "starts before the keys")
        XCTAssertNil(scan([slot(k0: 1500, k1: IndexSlot.mappedMarker | 15, tag: 9)]), "a length that is inline")
        XCTAssertNil(scan([slot(k0: 0xDEAD_BEEF, k1: IndexSlot.boxedMarker | 20, tag: 9)]), "a box pointer")
        XCTAssertNil(scan([slot(k0: 1500, k1: IndexSlot.mappedMarker | (1 << 40) | 20, tag: 9)]), "bits above the length")
        XCTAssertNil(scan([slot(k0: 1, k1: 16 << 56, tag: 9)]), "an unknown marker")
        XCTAssertEqual(scan([slot(k0: 0xDEAD_BEEF, k1: IndexSlot.boxedMarker | 20, tag: 0)]), 0, "an empty slot's bytes are not read")
    }

    /// Close writes no new image while the newest still fits and little log follows it (the
    /// next open replays that little); after more, it writes one.
    func testCloseRewritesTheImageOnlyWhenMuchLogFollowsIt() throws {
        let dir = TemporaryDirectory("index-image-close")
        var small = options(segmentSize: 64 << 10)
        small.autoCompaction = .disabled
        var expected: [String: String] = [:]
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 0, count: 3_000, tag: "a")
            try store.close()
        }
        model(0 ..< 3_000, tag: "a", into: &expected)
        let imagePath = dir.url.appendingPathComponent(IndexImage.fileName).path
        func inode() throws -> Int { try XCTUnwrap(FileManager.default.attributesOfItem(atPath: imagePath)[.systemFileNumber] as? Int) }
        let first = try inode()
        do {
            let store = try Store(directory: dir.url, options: small)
            try fill(store, from: 100, count: 5, tag: "b")   // a few hundred bytes of log
            try store.close()
        }
        model(100 ..< 105, tag: "b", into: &expected)
        XCTAssertEqual(try inode(), first, "close rewrote the image for a few records")
        do {
            let store = try Store(directory: dir.url, options: small)
            XCTAssertNotNil(store.openedImageCoverage)
            try expect(store, expected)
            // Over 1 MiB of log: the next close writes a new image.
            for round in 0 ..< 8 { try fill(store, from: 0, count: 3_000, tag: "c\(round)") }
            try store.close()
        }
        model(0 ..< 3_000, tag: "c7", into: &expected)
        XCTAssertNotEqual(try inode(), first, "close kept an image with over 1 MiB of log after it")
        let store = try Store(directory: dir.url, options: small)
        XCTAssertNotNil(store.openedImageCoverage)
        try expect(store, expected)
    }

    /// Readers on snapshots of an index read in place from its image while a writer changes
    /// it (copying pages out of the mapping) and rolls segments (images written in the
    /// background from a copy of the index): every snapshot sees one commit whole. Run
    /// under TSan by `make tsan`.
    func testReadersAndAWriterOnAnIndexOpenedFromItsImage() throws {
        try readersAndAWriter(damagingPages: false)
    }

    /// The same with most pages of the image damaged: readers, the writer's copies and the
    /// open's background pass meet pages that fail their check, each rebuilt once while
    /// the others wait for it (run under ThreadSanitizer by `make tsan`).
    func testReadersAndAWriterMeetDamagedPagesRebuiltOnce() throws {
        try readersAndAWriter(damagingPages: true)
    }

    private func readersAndAWriter(damagingPages: Bool) throws {
        let dir = TemporaryDirectory("index-image-concurrent")
        var small = options(segmentSize: 16 << 10, durability: .none)
        small.autoCompaction = .disabled
        let keys = 400
        do {
            let store = try Store(directory: dir.url, options: small)
            try store.write { tx in for i in 0 ..< keys { try tx.put(table: 1, key: bytes("key-\(i)-of-the-group"), value: bytes("0")) } }
            try store.close()
        }
        if damagingPages { try damagePages(in: dir, every: 61) }
        let store = try Store(directory: dir.url, options: small)
        XCTAssertNotNil(store.openedImageCoverage)
        let done = Locked(false), failures = Locked<[String]>([])
        let readers = (0 ..< 2).map { reader in
            Thread {
                var rng = SplitMix64(seed: baseSeed &+ UInt64(reader))
                while !done.withLock({ $0 }) {
                    let snapshot = store.snapshot()
                    var seen: Set<[UInt8]> = []
                    for _ in 0 ..< 20 {
                        let i = Int(rng.next() % UInt64(keys))
                        guard let value = try? snapshot.get(table: 1, key: bytes("key-\(i)-of-the-group")) else {
                            failures.withLock { $0.append("key-\(i) missing at \(snapshot.sequence)") }
                            continue
                        }
                        seen.insert(value)
                    }
                    if seen.count > 1 { failures.withLock { $0.append("snapshot \(snapshot.sequence) mixes commits") } }
                }
            }
        }
        readers.forEach { $0.start() }
        for round in 1 ... 60 {
            try store.write { tx in for i in 0 ..< keys { try tx.put(table: 1, key: bytes("key-\(i)-of-the-group"), value: bytes("\(round)")) } }
        }
        done.withLock { $0 = true }
        while readers.contains(where: { !$0.isFinished }) { usleep(1_000) }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertNil(store.checkInvariants())
        if damagingPages {
            XCTAssertTrue(store.writerDirectory.image?.hadFailures ?? false)
            XCTAssertFalse(store.writerDirectory.image?.isDamaged ?? true)
        }
    }

    /// A compaction retires the segments the image names; it writes a new image at its end
    /// (its commits durable), so an open after a crash right then maps that instead of
    /// rebuilding. With `.none` durability the tail need not be durable: no image then.
    func testACompactionLeavesAnImageOfItsResult() throws {
        for durability in [Durability.full, .none] {
            let dir = TemporaryDirectory("index-image-compaction")
            var small = options(segmentSize: 64 << 10, durability: durability)
            small.autoCompaction = .disabled
            var expected: [String: String] = [:]
            let crashed = TemporaryDirectory("index-image-compaction-crashed")
            do {
                let store = try Store(directory: dir.url, options: small)
                try fill(store, from: 0, count: 4_000, tag: "a")
                try fill(store, from: 0, count: 3_000, tag: "b")
                model(0 ..< 4_000, tag: "a", into: &expected)
                model(0 ..< 3_000, tag: "b", into: &expected)
                XCTAssertGreaterThan(try store.compact().segmentsCompacted, 0)
                store.waitForSealedHints()
                try copyAsIfCrashed(dir, to: crashed)
                try store.close()
            }
            let store = try Store(directory: crashed.url, options: small)
            if durability == .full {
                XCTAssertNotNil(store.openedImageCoverage, "the open after the compaction rebuilt the index")
            }
            try expect(store, expected)
        }
    }

    /// Keys an attacker chooses must not collide under every seed: a long key holding the
    /// hash's public multiplier constant in a word zeroed the product, and with it the seed
    /// and every byte before (all such keys of one length then shared one hash).
    func testKeysHoldingTheHashConstantsDoNotCollide() {
        var rng = SplitMix64(seed: baseSeed &+ 29)
        let seed = rng.next()
        let constant = withUnsafeBytes(of: UInt64(0xE703_7ED1_A0B4_28DB).littleEndian) { Array($0) }
        for layout in 0 ..< 3 {
            var hashes: Set<UInt64> = []
            for _ in 0 ..< 200 {
                let varying = (0 ..< 8).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                let key: [UInt8]
                switch layout {
                case 0: key = constant + varying + [UInt8](repeating: 7, count: 16)   // a full block
                case 1: key = varying + [UInt8](repeating: 7, count: 8) + constant + [1, 2]   // the tail
                default: key = Array(varying.prefix(7)) + constant   // 15 bytes: inline
                }
                hashes.insert(IndexHash.hash(IndexKey(key), seed: seed))
            }
            XCTAssertEqual(hashes.count, 200, "layout \(layout): keys holding the constant collide")
        }
    }
}
