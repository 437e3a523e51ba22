// Encryption at rest (StoreOptions.encryptionKey; docs/FORMAT.md, "Encryption at rest"):
// what an encrypted store keeps (everything, across rolls, hints, compaction, reopen,
// read-only opens, salvage), what it never writes (a plaintext byte of a key or value),
// who may open it (its key alone: wrongKey otherwise, with nothing changed), and that its
// nonces never repeat under a file key, also after a crash truncated a tail and the
// same offsets were written again. The crash sweep, SIGKILL rounds and corruption fuzz
// run on encrypted stores in their own test files.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class EncryptionTests: XCTestCase {
    /// A store with every kind of file: sealed log segments with hints, compacted segments,
    /// an active segment, MANIFEST and (after close) CLEAN. Values carry `marker`.
    private func fill(_ dir: TemporaryDirectory, key: Data?, marker: String, transactions: Int = 60) throws -> Model {
        var opts = options(segmentSize: 4096)
        opts.encryptionKey = key
        opts.autoCompaction = .disabled
        opts.compressionThreshold = 64
        let store = try Store(directory: dir.url, options: opts)
        var model: Model = [:]
        var rng = SplitMix64(seed: baseSeed &+ 900)
        for round in 0 ..< transactions {
            if round == transactions / 2 { try store.compact() }
            try store.write { txn in
                for _ in 0 ..< 3 {
                    let k = Array("\(marker)-key-\(rng.next() % 40)".utf8)
                    if rng.next() % 7 == 0 {
                        try txn.delete(table: 1, key: k)
                        model[1]?[k] = nil
                    } else {
                        // Half compressible (so LZ4 runs before encryption), half not.
                        let v = Array("\(marker)-value-".utf8) + value(rng.next(), length: Int(rng.next() % 600), compressible: rng.next() % 2 == 0)
                        try txn.put(table: 1, key: k, value: v)
                        model[1, default: [:]][k] = v
                    }
                }
            }
        }
        XCTAssertTrue(try store.verify().isClean)
        try store.close()
        return model
    }

    private func open(_ dir: TemporaryDirectory, key: Data?, readOnly: Bool = false) throws -> Store {
        var opts = StoreOptions()
        opts.encryptionKey = key
        opts.readOnly = readOnly
        return try Store(directory: dir.url, options: opts)
    }

    /// Every sealed file of the store (not the empty lock files `LOCK` and `READERS`).
    private func files(_ dir: TemporaryDirectory) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name != "LOCK" && name != Beacon.readersFileName {
            files[name] = try Data(contentsOf: dir.url.appendingPathComponent(name))
        }
        return files
    }

    func testAnEncryptedStoreKeepsEverythingAcrossRollsHintsCompactionAndReopen() throws {
        let dir = TemporaryDirectory("enc")
        let model = try fill(dir, key: testEncryptionKey, marker: "m")
        let names = try files(dir).keys
        XCTAssertGreaterThan(names.filter { $0.hasSuffix(".hint") }.count, 1, "sealed segments have hints")
        XCTAssertTrue(names.contains(CleanShutdown.fileName))
        let store = try open(dir, key: testEncryptionKey)
        assertSame(try contents(of: store.snapshot()), model, "encrypted store after reopen")
        // Stored values come back owned (they cannot point into an encrypted mapping).
        for (k, v) in model[1] ?? [:] {
            XCTAssertEqual(try store.snapshot().storedValue(table: 1, key: k)?.bytes, v)
        }
        XCTAssertEqual(store.stats.segmentDetails.filter(\.compacted).count > 0, true, "the store holds compacted segments")
        let report = try store.verify()
        XCTAssertTrue(report.isClean, "\(report.problems)")
        // Writes after reopen (a new writer on the reopened active segment), then read-only.
        try store.write { try $0.put(table: 2, key: bytes("after"), value: bytes("reopen")) }
        try store.close()
        let readOnly = try open(dir, key: testEncryptionKey, readOnly: true)
        XCTAssertEqual(try readOnly.get(table: 2, key: bytes("after")), bytes("reopen"))
        assertSame(try contents(of: readOnly.snapshot()).filter { $0.key == 1 }, model, "read-only open")
        try readOnly.close()
    }

    func testNoPlaintextByteOfAKeyOrValueReachesTheDisk() throws {
        let dir = TemporaryDirectory("enc-plain")
        let marker = "PLAINTEXT-MARKER-7f3a"
        _ = try fill(dir, key: testEncryptionKey, marker: marker)
        for (name, data) in try files(dir) {
            XCTAssertNil(data.range(of: Data(marker.utf8)), "\(name) holds plaintext")
            XCTAssertNil(data.range(of: Data("STRATA".utf8), in: 8 ..< data.count), "\(name) holds a plain format magic")
            XCTAssertEqual(data.prefix(8), Data("STRATAEN".utf8), "\(name) starts with the encrypted preamble")
        }
        // The same workload without a key does write the marker: the check above can fail.
        let plainDir = TemporaryDirectory("enc-control")
        _ = try fill(plainDir, key: nil, marker: marker)
        XCTAssertTrue(try files(plainDir).values.contains { $0.range(of: Data(marker.utf8)) != nil })
    }

    func testTheWrongKeyNoKeyOrAKeyForAPlainStoreIsWrongKeyAndChangesNothing() throws {
        let dir = TemporaryDirectory("enc-wrong")
        _ = try fill(dir, key: testEncryptionKey, marker: "w", transactions: 20)
        let before = try files(dir)
        var other = testEncryptionKey
        other[0] ^= 1
        for (key, label) in [(other, "another key"), (nil, "no key")] as [(Data?, String)] {
            for readOnly in [false, true] {
                XCTAssertThrowsError(try open(dir, key: key, readOnly: readOnly), label) { error in
                    guard case StoreError.wrongKey(let why) = error else { return XCTFail("\(label): \(error)") }
                    XCTAssertTrue(why.contains(dir.path), "names the store: \(why)")
                }
            }
        }
        XCTAssertEqual(try files(dir), before, "a refused open changed nothing")
        let plain = TemporaryDirectory("enc-plain-store")
        _ = try fill(plain, key: nil, marker: "p", transactions: 5)
        XCTAssertThrowsError(try open(plain, key: testEncryptionKey)) { error in
            guard case StoreError.wrongKey(let why) = error, why.contains("not encrypted") else { return XCTFail("\(error)") }
        }
        // Salvage with the wrong key finds nothing it may read and says why.
        XCTAssertThrowsError(try { var o = StoreOptions(); o.encryptionKey = other
            _ = try Store.salvage(from: dir.url, into: TemporaryDirectory("enc-salvage-wrong").url.appendingPathComponent("new"), options: o) }()) { error in
            guard case StoreError.wrongKey = error else { return XCTFail("\(error)") }
        }
    }

    func testAKeyOfAnyOtherSizeIsRefused() throws {
        for size in [0, 16, 32, 63, 65] {
            var opts = StoreOptions()
            opts.encryptionKey = Data(count: size)
            XCTAssertThrowsError(try Store(directory: TemporaryDirectory("enc-size").url, options: opts)) { error in
                guard case StoreError.invalidArgument(let why) = error, why.contains("64") else { return XCTFail("\(error)") }
            }
        }
    }

    /// Every frame of an encrypted segment, as (offset, nonce).
    private func frames(of data: Data) -> [(offset: Int, nonce: Data)] {
        var found: [(Int, Data)] = []
        data.withUnsafeBytes { raw in
            var offset = EncryptedFile.preambleSize
            while let length = Frame.plainLength(raw, at: offset), offset + length + Frame.overhead <= raw.count {
                found.append((offset, Data(raw[offset + 4 ..< offset + 16])))
                offset += length + Frame.overhead
            }
        }
        return found
    }

    func testNoncesNeverRepeatUnderAFileKeyEvenWhenACrashMakesOffsetsBeWrittenAgain() throws {
        let dir = TemporaryDirectory("enc-nonce")
        var opts = options(segmentSize: 1 << 20)
        opts.encryptionKey = testEncryptionKey
        var store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 20 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 100)) } }
        try store.close()
        let segment = dir.path + "/" + segmentName(1)
        let before = try Data(contentsOf: URL(fileURLWithPath: segment))
        // A crash that lost the last commits: the tail is cut (no CLEAN), and the next writer
        // writes new records at the very offsets the lost ones had.
        let cut = frames(of: before)[frames(of: before).count - 10].offset
        try FileManager.default.removeItem(atPath: dir.path + "/" + CleanShutdown.fileName)
        try before.prefix(cut).write(to: URL(fileURLWithPath: segment))
        store = try Store(directory: dir.url, options: opts)
        for i in 20 ..< 40 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 100)) } }
        try store.close()
        let after = try Data(contentsOf: URL(fileURLWithPath: segment))
        let lost = frames(of: before).filter { $0.offset >= cut }
        let rewritten = frames(of: after).filter { frame in lost.contains { $0.offset == frame.offset } }
        XCTAssertFalse(rewritten.isEmpty, "the new writer wrote at the lost frames' offsets")
        let all = frames(of: before).map(\.nonce) + frames(of: after).filter { $0.offset >= cut }.map(\.nonce)
        XCTAssertEqual(Set(all).count, all.count, "a nonce was used twice under the segment's key")
        // Both writers' frames are in the file, and they use different nonce prefixes.
        XCTAssertNotEqual(frames(of: after).first!.nonce.prefix(8), frames(of: after).last!.nonce.prefix(8))
    }

    func testCompactionReencryptsUnderTheOutputsOwnKeys() throws {
        let dir = TemporaryDirectory("enc-compact")
        _ = try fill(dir, key: testEncryptionKey, marker: "c")
        var salts: [String: Data] = [:]
        for (name, data) in try files(dir) { salts[name] = data[16 ..< 48] }
        XCTAssertEqual(Set(salts.values).count, salts.count, "every file has its own salt, so its own key")
    }

    func testDamageOrAMovedRecordInAnEncryptedStoreIsCorruptedNeverData() throws {
        let dir = TemporaryDirectory("enc-damage")
        var opts = options(segmentSize: 1 << 20)
        opts.encryptionKey = testEncryptionKey
        opts.compression = .none
        let store = try Store(directory: dir.url, options: opts)
        for i in 0 ..< 4 { try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 64)) } }
        try store.close()
        let segment = URL(fileURLWithPath: dir.path + "/" + segmentName(1))
        let pristine = try Data(contentsOf: segment)
        let found = frames(of: pristine)
        // frames: header, then (put, commit) per transaction; swap the first two puts (same size).
        let first = found[1].offset, second = found[3].offset, size = found[2].offset - found[1].offset
        var swapped = pristine
        swapped.replaceSubrange(first ..< first + size, with: pristine[second ..< second + size])
        swapped.replaceSubrange(second ..< second + size, with: pristine[first ..< first + size])
        try swapped.write(to: segment)
        let hint = URL(fileURLWithPath: dir.path + "/" + hintName(1))
        let prefixHint = try Data(contentsOf: hint)
        /// The damage at `offset` is reported, naming the segment and the byte: when the open
        /// scans the active segment (its hint removed), by the open; when the hint `close()`
        /// wrote lets the open skip the scan, by the read of the damaged record and by verify.
        func expectDamage(at offset: Int, reason: String) throws {
            try FileManager.default.removeItem(at: hint)
            XCTAssertThrowsError(try open(dir, key: testEncryptionKey)) { error in
                guard case StoreError.corrupted(segmentName(1), offset, let why) = error, why.contains(reason) else { return XCTFail("\(error)") }
            }
            try prefixHint.write(to: hint)
            let store = try open(dir, key: testEncryptionKey, readOnly: true)
            XCTAssertThrowsError(try store.get(table: 1, key: key(0))) { error in
                guard case StoreError.corrupted(segmentName(1), offset, let why) = error, why.contains(reason) else { return XCTFail("\(error)") }
            }
            XCTAssertTrue(try store.verify().problems.contains { $0.segment == segmentName(1) && $0.offset == offset })
            try store.close()
        }
        try expectDamage(at: first, reason: "authentication")
        // A flipped ciphertext bit: the same.
        var flipped = pristine
        flipped[found[1].offset + 20] ^= 0x10
        try flipped.write(to: segment)
        try expectDamage(at: found[1].offset, reason: "authentication")
        // A damaged MANIFEST names itself.
        try pristine.write(to: segment)
        let manifest = URL(fileURLWithPath: dir.path + "/MANIFEST")
        var damaged = try Data(contentsOf: manifest)
        damaged[damaged.count - 3] ^= 1
        try damaged.write(to: manifest)
        XCTAssertThrowsError(try open(dir, key: testEncryptionKey)) { error in
            guard case StoreError.corrupted("MANIFEST", _, _) = error else { return XCTFail("\(error)") }
        }
    }

    func testSalvageReadsAnEncryptedStoreIntoAnEncryptedStore() throws {
        let dir = TemporaryDirectory("enc-salvage")
        let model = try fill(dir, key: testEncryptionKey, marker: "s")
        var opts = StoreOptions()
        opts.encryptionKey = testEncryptionKey
        let target = TemporaryDirectory("enc-salvage-out").url.appendingPathComponent("new")
        let report = try Store.salvage(from: dir.url, into: target, options: opts)
        XCTAssertFalse(report.lostSomething, "\(report)")
        let recovered = try Store(directory: target, options: opts)
        assertSame(try contents(of: recovered.snapshot()), model, "salvaged")
        try recovered.close()
        XCTAssertThrowsError(try Store(directory: target)) { error in
            guard case StoreError.wrongKey = error else { return XCTFail("the salvaged store is not encrypted: \(error)") }
        }
    }

    /// Readers open frames in parallel (each takes a cipher context from the key's pool)
    /// while a writer seals new ones and rolls segments; every read is a committed value.
    /// Run under ThreadSanitizer by `make tsan`.
    func testConcurrentReadersAndAWriterOnAnEncryptedStore() throws {
        let dir = TemporaryDirectory("enc-concurrent")
        var opts = options(segmentSize: 16 << 10, durability: .none)
        opts.encryptionKey = testEncryptionKey
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        let keys = 200
        try store.write { txn in
            for i in 0 ..< keys { try txn.put(table: 1, key: key(i), value: value(UInt64(i), length: 120)) }
        }
        // Every value each key may hold: the first write's, or a rewrite's.
        let written: [Set<[UInt8]>] = (0 ..< keys).map { i in
            Set((0 ... 60).filter { $0 == 0 || i % 7 == $0 % 7 }.map { value(UInt64($0 * keys + i), length: 120) })
        }
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            do {
                if worker == 0 {
                    // The writer: rewrites values (each round's value derives from its round).
                    for round in 1 ... 60 {
                        try store.write { txn in
                            for i in stride(from: round % 7, to: keys, by: 7) {
                                try txn.put(table: 1, key: key(i), value: value(UInt64(round * keys + i), length: 120))
                            }
                        }
                    }
                } else {
                    var rng = SplitMix64(seed: UInt64(worker))
                    for _ in 0 ..< 3000 {
                        let i = Int(rng.next() % UInt64(keys))
                        let got = try store.get(table: 1, key: key(i))
                        if got.map({ !written[i].contains($0) }) ?? true { failures.withLock { $0.append("key \(i) read a value never written") } }
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertTrue(try store.verify().isClean)
        try store.close()
    }
}
