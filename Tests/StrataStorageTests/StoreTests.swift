// The Store's public behaviour: reads, writes, transactions, snapshots, reopen, segments
// and hint files, locking, read-only opens, bad arguments and closed stores.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class StoreTests: XCTestCase {
    func testPutGetDeleteAcrossTables() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        let seq = try store.write { txn in
            try txn.put(table: 1, key: bytes("a"), value: bytes("apple"))
            try txn.put(table: 2, key: bytes("a"), value: bytes("avocado"))
        }
        XCTAssertEqual(seq, 1)
        XCTAssertEqual(try store.get(table: 1, key: bytes("a")), bytes("apple"))
        XCTAssertEqual(try store.get(table: 2, key: bytes("a")), bytes("avocado"))
        XCTAssertNil(try store.get(table: 3, key: bytes("a")))
        XCTAssertEqual(try store.write { try $0.delete(table: 1, key: bytes("a")) }, 2)
        XCTAssertNil(try store.get(table: 1, key: bytes("a")))
        XCTAssertEqual(try store.get(table: 2, key: bytes("a")), bytes("avocado"))
        // Deleting an absent key writes nothing.
        XCTAssertEqual(try store.write { try $0.delete(table: 1, key: bytes("nope")) }, 2)
        XCTAssertEqual(store.stats.lastSequence, 2)
        try store.close()
    }

    func testEmptyKeysValuesAndLargeCompressedValues() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        let big = value(3, length: 300_000, compressible: true)
        try store.write { txn in
            try txn.put(table: 0, key: [UInt8](), value: [UInt8]())
            try txn.put(table: 0, key: bytes("big"), value: big)
            try txn.put(table: 0, key: Data([1, 2, 3]), value: Data([4, 5]))
        }
        XCTAssertEqual(try store.get(table: 0, key: [UInt8]()), [])
        XCTAssertEqual(try store.get(table: 0, key: bytes("big")), big)
        XCTAssertEqual(try store.get(table: 0, key: [UInt8]([1, 2, 3])), [4, 5])
        XCTAssertGreaterThan(store.stats.compressionRatio, 10)
        XCTAssertLessThan(store.stats.diskBytes, 100_000)
        try store.close()
        let reopened = try Store(directory: dir.url)
        XCTAssertEqual(try reopened.get(table: 0, key: bytes("big")), big)
    }

    func testStoredValuesReadWithoutCopyingOutliveTheirSnapshotAndCompaction() throws {
        let dir = TemporaryDirectory()
        var options = StoreOptions()
        options.segmentSize = 4096
        options.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: options)
        let big = value(3, length: 20_000, compressible: true)
        let small = value(4, length: 100, compressible: false)
        try store.write { txn in
            try txn.put(table: 1, key: bytes("big"), value: big)
            try txn.put(table: 1, key: bytes("small"), value: small)
        }
        var stored: [StoredValue] = []
        do {
            let snapshot = store.snapshot()
            stored.append(try XCTUnwrap(try snapshot.storedValue(table: 1, key: bytes("big"))))
            stored.append(try XCTUnwrap(try snapshot.storedValue(table: 1, key: bytes("small"))))
            XCTAssertNil(try snapshot.storedValue(table: 1, key: bytes("none")))
            var scanned: [[UInt8]: [UInt8]] = [:]
            try snapshot.scanStored(table: 1) { key, value in scanned[key] = value.bytes }
            XCTAssertEqual(scanned, [bytes("big"): big, bytes("small"): small])
            var entries: [[UInt8]: [UInt8]] = [:]
            try snapshot.scanEntries(table: 1) { entry in entries[entry.key] = entry.value.bytes }
            XCTAssertEqual(entries, scanned)
        }
        // Overwrite, compact away the old segments, close: the values read stay valid.
        for round in 0 ..< 20 {
            try store.write { try $0.put(table: 1, key: bytes("small"), value: value(UInt64(round), length: 500, compressible: false)) }
        }
        _ = try store.compact()
        try store.close()
        XCTAssertEqual(stored[0].bytes, big)
        XCTAssertEqual(stored[1].bytes, small)
        XCTAssertEqual(stored[1].count, 100)
        XCTAssertEqual(stored[1], StoredValue(bytes: small))
    }

    func testThrowingWriteRollsBackEverything() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        try store.write { try $0.put(table: 1, key: bytes("keep"), value: bytes("1")) }
        let sizeBefore = store.stats.diskBytes
        struct Boom: Error {}
        XCTAssertThrowsError(try store.write { txn in
            try txn.put(table: 1, key: bytes("keep"), value: bytes("2"))
            try txn.put(table: 1, key: bytes("new"), value: value(1, length: 3 << 20))   // forces a flush to the file
            throw Boom()
        }) { XCTAssertTrue($0 is Boom) }
        XCTAssertEqual(try store.get(table: 1, key: bytes("keep")), bytes("1"))
        XCTAssertNil(try store.get(table: 1, key: bytes("new")))
        XCTAssertEqual(store.stats.diskBytes, sizeBefore, "the rolled-back bytes were truncated")
        // The store goes on normally, and reopens to the same state.
        XCTAssertEqual(try store.write { try $0.put(table: 1, key: bytes("after"), value: bytes("3")) }, 2)
        try store.close()
        let reopened = try Store(directory: dir.url)
        XCTAssertEqual(try reopened.get(table: 1, key: bytes("keep")), bytes("1"))
        XCTAssertNil(try reopened.get(table: 1, key: bytes("new")))
        XCTAssertEqual(try reopened.get(table: 1, key: bytes("after")), bytes("3"))
    }

    func testTransactionReadsItsOwnWrites() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        try store.write { try $0.put(table: 1, key: bytes("x"), value: bytes("old")) }
        let txn = try store.beginTransaction()
        try txn.put(table: 1, key: bytes("x"), value: bytes("new"))
        try txn.put(table: 1, key: bytes("y"), value: bytes("why"))
        try txn.delete(table: 1, key: bytes("y"))
        XCTAssertEqual(try txn.get(table: 1, key: bytes("x")), bytes("new"))
        XCTAssertNil(try txn.get(table: 1, key: bytes("y")))
        XCTAssertEqual(try store.get(table: 1, key: bytes("x")), bytes("old"), "readers do not see uncommitted data")
        try txn.commit()
        XCTAssertEqual(try store.get(table: 1, key: bytes("x")), bytes("new"))
        XCTAssertThrowsError(try txn.put(table: 1, key: bytes("z"), value: bytes("z"))) {
            guard case StoreError.invalidArgument = $0 else { return XCTFail("\($0)") }
        }
    }

    func testSnapshotIsolation() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        for i in 0 ..< 100 { try store.write { try $0.put(table: 1, key: key(i), value: bytes("v\(i)")) } }
        let snap = store.snapshot()
        XCTAssertEqual(snap.sequence, 100)
        try store.write { txn in
            for i in 0 ..< 50 { try txn.delete(table: 1, key: key(i)) }
            for i in 50 ..< 100 { try txn.put(table: 1, key: key(i), value: bytes("w\(i)")) }
            try txn.put(table: 2, key: bytes("t2"), value: bytes("x"))
        }
        XCTAssertEqual(snap.count(table: 1), 100)
        XCTAssertEqual(try snap.get(table: 1, key: key(7)), bytes("v7"))
        XCTAssertEqual(try snap.get(table: 1, key: key(70)), bytes("v70"))
        XCTAssertEqual(snap.tables, [1])
        let now = store.snapshot()
        XCTAssertEqual(now.count(table: 1), 50)
        XCTAssertEqual(try now.get(table: 1, key: key(70)), bytes("w70"))
        XCTAssertEqual(now.tables, [1, 2])
        var scanned = 0
        try snap.scan(table: 1) { k, v in
            scanned += 1
            XCTAssertEqual(v, bytes("v" + String(decoding: k.dropFirst(4), as: UTF8.self)))
        }
        XCTAssertEqual(scanned, 100)
        XCTAssertEqual(Set(try snap.keys(table: 1)), Set((0 ..< 100).map(key)))
        try store.close()
        XCTAssertEqual(try snap.get(table: 1, key: key(1)), bytes("v1"), "a snapshot outlives close")
    }

    func testSegmentsRollAndHintsRebuildTheIndex() throws {
        let dir = TemporaryDirectory()
        var opts = options(segmentSize: 8192)
        opts.autoCompaction = .disabled
        var expected: [[UInt8]: [UInt8]] = [:]
        do {
            let store = try Store(directory: dir.url, options: opts)
            for i in 0 ..< 300 {
                let v = value(UInt64(i), length: 100)
                try store.write { try $0.put(table: 1, key: key(i % 120), value: v) }
                expected[key(i % 120)] = v
            }
            XCTAssertGreaterThan(store.stats.segments, 3)
            try store.close()
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        let segments = names.filter { $0.hasSuffix(".seg") }.count
        let hints = names.filter { $0.hasSuffix(".hint") }.count
        XCTAssertEqual(hints, segments, "every sealed segment has a hint file, and close wrote the active one's")
        let store = try Store(directory: dir.url, options: opts)
        XCTAssertEqual(try contents(of: store.snapshot()), [1: expected])
        // Live accounting: exactly the records of the 120 live keys.
        let stats = store.stats
        XCTAssertEqual(stats.keys, 120)
        XCTAssertEqual(stats.liveBytes, 120 * align8(32 + 7 + 100) - 10 * (align8(32 + 7 + 100) - align8(32 + 6 + 100)))
        XCTAssertGreaterThan(stats.deadBytes, 0)
        // Damaged or missing hints fall back to scanning, with the same result.
        try store.close()
        // Without the index image close wrote, so that the open reads the hints.
        try FileManager.default.removeItem(atPath: dir.path + "/" + IndexImage.fileName)
        let hintFiles = names.filter { $0.hasSuffix(".hint") }.sorted()
        try FileManager.default.removeItem(atPath: dir.path + "/" + hintFiles[0])
        var damaged = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + hintFiles[1]))
        damaged[damaged.count / 2] ^= 0xFF
        try damaged.write(to: URL(fileURLWithPath: dir.path + "/" + hintFiles[1]))
        let again = try Store(directory: dir.url, options: opts)
        XCTAssertEqual(try contents(of: again.snapshot()), [1: expected])
        XCTAssertEqual(again.stats.liveBytes, stats.liveBytes)
        try again.close()
        // ... and the hints were rewritten.
        let after = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertEqual(after.filter { $0.hasSuffix(".hint") }.count, segments)
    }

    func testOrphanHintFilesAreRemovedAtOpen() throws {
        let dir = TemporaryDirectory()
        try Store(directory: dir.url).close()
        let orphan = dir.path + "/00000077.hint"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: orphan))
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        try Store(directory: dir.url, options: readOnly).close()
        XCTAssertTrue(FileManager.default.fileExists(atPath: orphan), "a read-only open changes nothing")
        try Store(directory: dir.url).close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: orphan))
    }

    func testSecondOpenerIsLockedOut() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url)
        var noWait = StoreOptions()
        noWait.lockWaitTimeout = 0
        XCTAssertThrowsError(try Store(directory: dir.url, options: noWait)) {
            guard case StoreError.locked(let path) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(path.hasSuffix("LOCK"))
        }
        // A read-only open is not locked out: it reads what the writer has made durable.
        try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let follower = try Store(directory: dir.url, options: readOnly)
        XCTAssertTrue(follower.isFollowingAWriter)
        XCTAssertEqual(try follower.snapshot().get(table: 1, key: bytes("k")), bytes("v"))
        XCTAssertThrowsError(try follower.write { try $0.put(table: 1, key: bytes("x"), value: bytes("y")) })
        try follower.close()
        try store.close()
        XCTAssertNoThrow(try Store(directory: dir.url).close())
    }

    func testReadOnlyOpenersShareAndCannotWrite() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        var opts = StoreOptions()
        opts.readOnly = true
        let a = try Store(directory: dir.url, options: opts)
        let b = try Store(directory: dir.url, options: opts)
        XCTAssertEqual(try a.get(table: 1, key: bytes("k")), bytes("v"))
        XCTAssertEqual(try b.get(table: 1, key: bytes("k")), bytes("v"))
        XCTAssertThrowsError(try a.write { _ in }) {
            guard case StoreError.invalidArgument(let why) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(why.contains("read-only"))
        }
        // Readers do not keep a writer out (issue 27, item 3): one opens beside them at once.
        var noWait = StoreOptions()
        noWait.lockWaitTimeout = 0
        try Store(directory: dir.url, options: noWait).close()
        try a.close()
        try b.close()
        let missing = URL(fileURLWithPath: dir.path + "/absent")
        XCTAssertThrowsError(try Store(directory: missing, options: opts)) {
            guard case StoreError.io(_, _, let code) = $0 else { return XCTFail("\($0)") }
            XCTAssertEqual(code, ENOENT)
        }
    }

    func testClosedStoreAndBadArguments() throws {
        let dir = TemporaryDirectory()
        var bad = StoreOptions()
        bad.segmentSize = 100
        XCTAssertThrowsError(try Store(directory: dir.url, options: bad)) {
            guard case StoreError.invalidArgument(let why) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(why.contains("segmentSize"))
        }
        let store = try Store(directory: dir.url)
        try store.write { txn in
            XCTAssertThrowsError(try txn.put(table: 1, key: [UInt8](repeating: 1, count: StoreOptions.maxKeySize + 1), value: [UInt8]())) {
                guard case StoreError.invalidArgument(let why) = $0 else { return XCTFail("\($0)") }
                XCTAssertTrue(why.contains("key"))
            }
            // The transaction stays usable after a rejected argument.
            try txn.put(table: 1, key: bytes("fine"), value: bytes("yes"))
        }
        XCTAssertEqual(try store.get(table: 1, key: bytes("fine")), bytes("yes"))
        // A nested write on the same thread is refused instead of deadlocking.
        try store.write { _ in
            XCTAssertThrowsError(try store.write { _ in }) {
                guard case StoreError.invalidArgument(let why) = $0 else { return XCTFail("\($0)") }
                XCTAssertTrue(why.contains("already open"))
            }
        }
        try store.close()
        try store.close()
        XCTAssertThrowsError(try store.get(table: 1, key: bytes("fine"))) { XCTAssertEqual($0 as? StoreError, .closed) }
        XCTAssertThrowsError(try store.write { _ in }) { XCTAssertEqual($0 as? StoreError, .closed) }
        XCTAssertTrue(StoreError.closed.description.contains("closed"))
    }

    func testASegmentOfAnotherFormatVersionIsRefusedByName() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        // Rewrite the header as a future version 3 would (with a valid checksum).
        let url = URL(fileURLWithPath: dir.path + "/00000001.seg")
        var data = try Data(contentsOf: url)
        data.replaceSubrange(8 ..< 12, with: [3, 0, 0, 0])
        let crc = Checksum.crc32c(Array(data[0 ..< 44]))
        data.replaceSubrange(44 ..< 48, with: withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        try data.write(to: url)
        XCTAssertThrowsError(try Store(directory: dir.url)) {
            XCTAssertEqual($0 as? StoreError, .formatVersion(found: 3, supported: 2))
            XCTAssertTrue("\($0)".contains("format version 3"))
        }
    }

    func testErrorsReadLikeSentences() {
        let e = StoreError.corrupted(segment: "00000003.seg", offset: 4096, reason: "record checksum mismatch")
        XCTAssertTrue(e.description.contains("00000003.seg at offset 4096"))
        XCTAssertTrue(StoreError.diskFull("/x/00000001.seg").description.contains("disk full"))
        XCTAssertTrue(StoreError.io(op: "fdatasync", path: "/x", errno: EIO).description.contains("Input/output error"))
    }

    func testDurabilityModesAllPersistAfterClose() throws {
        for durability in [Durability.full, .normal, .none] {
            let dir = TemporaryDirectory()
            var opts = options(durability: durability)
            opts.syncInterval = 0.01
            do {
                let store = try Store(directory: dir.url, options: opts)
                for i in 0 ..< 50 { try store.write { try $0.put(table: 1, key: key(i), value: bytes("\(i)")) } }
                try store.sync()
                if durability == .normal { Thread.sleep(forTimeInterval: 0.05) }
                try store.close()
            }
            let store = try Store(directory: dir.url, options: opts)
            XCTAssertEqual(store.snapshot().count(table: 1), 50, "\(durability)")
            try store.close()
        }
    }

    func testStatsAccountForEveryByte() throws {
        let dir = TemporaryDirectory()
        // No background compaction: it could delete a segment between the listing and the stat below.
        var storeOptions = options(segmentSize: 4096)
        storeOptions.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: storeOptions)
        for i in 0 ..< 200 { try store.write { try $0.put(table: 1, key: key(i % 10), value: value(UInt64(i), length: 50)) } }
        let stats = store.stats
        XCTAssertEqual(stats.keys, 10)
        XCTAssertEqual(stats.segments, stats.segmentDetails.count)
        XCTAssertEqual(stats.liveBytes + stats.deadBytes, stats.segmentDetails.reduce(0) { $0 + $1.diskBytes })
        XCTAssertEqual(stats.segmentDetails.filter { !$0.sealed }.count, 1)
        XCTAssertGreaterThan(stats.indexBytes, 0)
        XCTAssertEqual(stats.lastSequence, 200)
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }
            .map { try FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as! Int }.reduce(0, +)
        XCTAssertEqual(stats.liveBytes + stats.deadBytes, onDisk)
    }

    /// Sealing writes the hint from the entries the appends recorded, without reading the
    /// segment again: it must be byte for byte the hint a scan of the segment gives, also
    /// across rollbacks (their entries dropped) and a reopen in the middle of a segment (the
    /// entries so far rebuilt from the open's scan).
    func testTheHintWrittenAtSealIsTheOneAScanOfTheSegmentGives() throws {
        // 64 KiB segments keep every entry (16 KiB of them); 4 KiB segments (1 KiB) overflow
        // part of the time, and those seals scan instead.
        for segmentSize in [64 << 10, 4096] { try hintAtSeal(segmentSize: segmentSize) }
    }

    private func hintAtSeal(segmentSize: Int) throws {
        let dir = TemporaryDirectory("hint-at-seal")
        var opts = options(segmentSize: segmentSize)
        opts.autoCompaction = .disabled
        opts.compressionThreshold = 64
        var store = try Store(directory: dir.url, options: opts)
        var rng = SplitMix64(seed: baseSeed &+ 77)
        for round in 0 ..< (segmentSize > 4096 ? 900 : 120) {
            if round == 57 {
                try store.close()
                store = try Store(directory: dir.url, options: opts)
            }
            let txn = try store.beginTransaction()
            for _ in 0 ..< Int(rng.next() % 4) + 1 {
                let k = key(Int(rng.next() % 300))
                if rng.next() % 5 == 0 { try txn.delete(table: 1, key: k) } else {
                    try txn.put(table: UInt32(rng.next() % 2), key: k, value: value(rng.next(), length: Int(rng.next() % 300), compressible: rng.next() % 2 == 0))
                }
            }
            if round % 6 == 5 { txn.rollback() } else { try txn.commit() }
        }
        try store.close()
        var compared = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".hint") {
            let number = try XCTUnwrap(Store.parseSegmentNumber(name, suffix: ".hint"))
            let segment = try Data(contentsOf: dir.url.appendingPathComponent(segmentName(number)))
            let expected = segment.withUnsafeBytes { raw -> [UInt8] in
                var entries: [ScannedEntry] = []
                let outcome = SegmentScanner.scan(SegmentReader(raw, cipher: nil), segmentID: number, previousSequence: 0) { found, _ in
                    entries.append(contentsOf: found)
                }
                return HintFile.encode(segmentID: number, segmentLength: raw.count, entries: entries, lastSequence: outcome.lastSequence,
                                       rawValueBytes: outcome.rawValueBytes, storedValueBytes: outcome.storedValueBytes)
            }
            XCTAssertEqual(Array(try Data(contentsOf: dir.url.appendingPathComponent(name))), expected, name)
            compared += 1
        }
        XCTAssertGreaterThanOrEqual(compared, 3, "segments sealed with \(segmentSize)-byte segments")
    }

    /// `close()` writes the active segment's hint as it stands; the next open reads the
    /// entries it lists and scans only what was appended after it — also after a crash that
    /// left a torn tail behind those appends.
    func testTheActiveSegmentsHintCoversItsPrefixAndTheOpenScansTheRest() throws {
        let dir = TemporaryDirectory("prefix-hint")
        var opts = options(segmentSize: 1 << 20)
        opts.autoCompaction = .disabled
        var expected: [[UInt8]: [UInt8]] = [:]
        var store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 50 {
            try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 80)) }
            expected[key(i)] = value(UInt64(i), length: 80)
        }
        try store.close()
        let prefix = try Data(contentsOf: dir.url.appendingPathComponent(hintName(1)))
        XCTAssertEqual(prefix.withUnsafeBytes { HintFile.describedLength($0) },
                       try FileManager.default.attributesOfItem(atPath: dir.path + "/" + segmentName(1))[.size] as? Int)
        store = try Store(directory: dir.url, options: opts)
        XCTAssertEqual(try contents(of: store.snapshot()), [1: expected], "after a clean close, from the hint alone")
        for i in 30 ..< 80 {
            try store.write { txn in
                if i % 10 == 0 { try txn.delete(table: 1, key: key(i - 30)) } else { try txn.put(table: 1, key: key(i), value: value(UInt64(i + 1000), length: 80)) }
            }
            if i % 10 == 0 { expected[key(i - 30)] = nil } else { expected[key(i)] = value(UInt64(i + 1000), length: 80) }
        }
        // A crash now: the files as they are (every commit synced, no CLEAN), plus a torn write.
        let crashed = TemporaryDirectory("prefix-hint-crash")
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name != "LOCK" {
            try FileManager.default.copyItem(atPath: dir.path + "/" + name, toPath: crashed.path + "/" + name)
        }
        let handle = try FileHandle(forWritingTo: crashed.url.appendingPathComponent(segmentName(1)))
        handle.seekToEndOfFile()
        handle.write(Data(repeating: 0xA5, count: 100))
        try handle.close()
        let recovered = try Store(directory: crashed.url, options: opts)
        XCTAssertEqual(try contents(of: recovered.snapshot()), [1: expected], "the hint's prefix, then the scanned commits after it")
        XCTAssertTrue(try recovered.verify().isClean)
        try recovered.close()
        // The prefix is not read at open: a damaged record there (key 1's value, after key 0's
        // record of 120 bytes and its 48-byte commit) is found when read, and by verify.
        let segmentURL = crashed.url.appendingPathComponent(segmentName(1))
        var damaged = try Data(contentsOf: segmentURL)
        damaged[SegmentHeader.size + 120 + 48 + 40] ^= 0xFF
        try damaged.write(to: segmentURL)
        let reopened = try Store(directory: crashed.url, options: opts)
        XCTAssertThrowsError(try reopened.get(table: 1, key: key(1))) { error in
            guard case StoreError.corrupted(segmentName(1), SegmentHeader.size + 120 + 48, _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertFalse(try reopened.verify().isClean)
        try reopened.close()
        try store.close()
    }

    /// Issue 27, item 3: reader presence is not the writer lock. A read-only open of a store
    /// closed cleanly reads it as a follower, holding only `READERS`: a writer opens beside
    /// it at once, and it follows that writer. (Before, it held `LOCK` shared, and a writer
    /// waited for it — issue 23, item 4 — or failed.)
    func testAWriterOpensBesideAReadOnlyOpenerOfACleanStore() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let viewer = try Store(directory: dir.url, options: readOnly)
        defer { try? viewer.close() }
        XCTAssertTrue(viewer.isFollowingAWriter)
        var impatient = StoreOptions()
        impatient.lockWaitTimeout = 0
        let writer = try Store(directory: dir.url, options: impatient)
        try writer.write { try $0.put(table: 1, key: bytes("k2"), value: bytes("v2")) }
        XCTAssertTrue(try viewer.refresh())
        XCTAssertEqual(try viewer.get(table: 1, key: bytes("k2")), bytes("v2"))
        try writer.close()
    }

    /// Issue 23, item 4: a store a writer left without closing (a crash) is read as it lies,
    /// and its read-only opener holds the lock while it does (a writer's open would repair
    /// the tail under it). A writer starting meanwhile waits for it, up to
    /// `lockWaitTimeout`, instead of failing at once.
    func testAWriterWaitsForAReadOnlyOpenerOfACrashedStore() throws {
        let dir = TemporaryDirectory()
        let crashed = TemporaryDirectory("crashed")
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name != "LOCK" {
                try FileManager.default.copyItem(atPath: dir.path + "/" + name, toPath: crashed.path + "/" + name)
            }
            try store.close()
        }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let viewer = try Store(directory: crashed.url, options: readOnly)
        XCTAssertFalse(viewer.isFollowingAWriter)
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            try? viewer.close()
            closed.signal()
        }
        let writer = try Store(directory: crashed.url)   // waits for the viewer to close
        XCTAssertEqual(closed.wait(timeout: .now()), .success, "the writer opened while the viewer held the lock")
        try writer.write { try $0.put(table: 1, key: bytes("k2"), value: bytes("v2")) }
        try writer.close()

        // Bounded: a viewer that stays is still an error, named as before.
        let again = TemporaryDirectory("crashed-again")
        do {
            let store = try Store(directory: again.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        try FileManager.default.removeItem(atPath: again.path + "/CLEAN")
        let stays = try Store(directory: again.url, options: readOnly)
        XCTAssertFalse(stays.isFollowingAWriter)
        var impatient = StoreOptions()
        impatient.lockWaitTimeout = 0.1
        XCTAssertThrowsError(try Store(directory: again.url, options: impatient)) {
            guard case StoreError.locked(let path) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(path.hasSuffix("LOCK"))
        }
        try stays.close()
    }

    /// `Snapshot.writeCopy`: every record into a new store, which opens with the same
    /// contents; a copy that meets a damaged record stops and leaves no files behind.
    func testWriteCopyCopiesEverythingOrLeavesNothing() throws {
        let dir = TemporaryDirectory("write-copy")
        var expected: [[UInt8]: [UInt8]] = [:]
        do {
            let store = try Store(directory: dir.url, options: StoreOptions())
            try store.write { txn in
                for i in 0 ..< 40 {
                    try txn.put(table: 1, key: key(i), value: value(UInt64(i), length: 120))
                    expected[key(i)] = value(UInt64(i), length: 120)
                }
            }
            try store.write { try $0.delete(table: 1, key: key(3)) }
            expected[key(3)] = nil
            let copyDir = TemporaryDirectory("write-copy-good")
            XCTAssertEqual(try store.snapshot().writeCopy(into: copyDir.url), 39)
            let copy = try Store(directory: copyDir.url, options: StoreOptions())
            XCTAssertEqual(try contents(of: copy.snapshot()), [1: expected])
            try copy.close()
            XCTAssertThrowsError(try store.snapshot().writeCopy(into: copyDir.url)) { error in
                guard case StoreError.invalidArgument(let reason) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("already holds files"), reason)
            }
            try store.close()
        }
        // Damage the first record's value; the hint lets the store open without reading it.
        let segmentURL = dir.url.appendingPathComponent(segmentName(1))
        var damaged = try Data(contentsOf: segmentURL)
        damaged[SegmentHeader.size + 60] ^= 0xFF
        try damaged.write(to: segmentURL)
        let store = try Store(directory: dir.url, options: StoreOptions())
        defer { try? store.close() }
        let target = TemporaryDirectory("write-copy-bad")
        let destination = target.url.appendingPathComponent("copy")
        XCTAssertThrowsError(try store.snapshot().writeCopy(into: destination)) { error in
            guard case StoreError.corrupted(segmentName(1), _, _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path), "a copy that stopped leaves nothing")
    }
}
