// Corruption fuzzing: random byte flips, truncations, zeroed ranges and appended garbage in
// segments, hint files, the manifest and the clean-shutdown marker; and whole files deleted,
// duplicated under another name, replaced by an older copy, or truncated on a record
// boundary. Opening, reading and scanning must throw a StoreError or return exactly the
// committed data: never trap, never a wrong value.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class CorruptionFuzzTests: XCTestCase {
    /// Set by the encrypted variants: the stores are built and opened with this key.
    private var encryptionKey: Data?

    private var storeOptions: StoreOptions {
        var opts = StoreOptions()
        opts.encryptionKey = encryptionKey
        return opts
    }

    /// The kind of the segment file `name` holds (nil if its header does not read).
    private func kind(of name: String, _ data: Data) -> SegmentKind? {
        guard let number = Store.parseSegmentName(name) else { return nil }
        return data.withUnsafeBytes { raw in
            try? SegmentHeader.read(file: raw, number: number, cipher: storeOptions.cipher).get().info.kind
        }
    }

    struct Pristine {
        var files: [String: Data]
        var models: [UInt64: Model]
        var last: UInt64
        /// The files as they were (store open, everything synced) before the compaction.
        var older: [String: Data]
    }

    private func buildPristine(in dir: TemporaryDirectory) throws -> Pristine {
        var rng = SplitMix64(seed: baseSeed &+ 300)
        var opts = options(segmentSize: 8192)
        opts.compressionThreshold = 100
        opts.autoCompaction = .disabled
        opts.encryptionKey = encryptionKey
        let store = try Store(directory: dir.url, options: opts)
        var model: Model = [:]
        var models: [UInt64: Model] = [0: [:]]
        var older: [String: Data] = [:]
        for round in 0 ..< 120 {
            if round == 50 {
                try store.sync()
                for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name != "LOCK" {
                    older[name] = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name))
                }
            }
            // Half-way, a compaction: the store then holds compacted segments, sealed log
            // segments with hint files, and an active segment.
            if round == 60 { try store.compact() }
            let seq = try store.write { txn in
                for _ in 0 ..< Int(rng.next() % 4) + 1 {
                    let t = UInt32(rng.next() % 2), k = key(Int(rng.next() % 60))
                    if rng.next() % 6 == 0 {
                        try txn.delete(table: t, key: k)
                        model[t]?[k] = nil
                    } else {
                        let v = value(rng.next(), length: Int(rng.next() % 400), compressible: rng.next() % 2 == 0)
                        try txn.put(table: t, key: k, value: v)
                        model[t, default: [:]][k] = v
                    }
                }
            }
            models[seq] = model
        }
        let last = store.lastSequence
        try store.close()
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name != "LOCK" {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name))
        }
        XCTAssertGreaterThanOrEqual(files.keys.filter { $0.hasSuffix(".hint") }.count, 2)
        XCTAssertTrue(files.keys.contains { kind(of: $0, files[$0]!) == .compacted },
                      "the pristine store includes compacted segments")
        return Pristine(files: files, models: models, last: last, older: older)
    }

    private func mutate(_ data: inout Data, rng: inout SplitMix64) -> String {
        guard !data.isEmpty else { return "empty" }
        switch rng.next() % 5 {
        case 0:
            let flips = Int(rng.next() % 8) + 1
            for _ in 0 ..< flips { data[Int(rng.next() % UInt64(data.count))] ^= UInt8(1 << (rng.next() % 8)) }
            return "\(flips) bit flips"
        case 1:
            let at = Int(rng.next() % UInt64(data.count))
            data.removeSubrange(at...)
            return "truncated to \(at)"
        case 2:
            let start = Int(rng.next() % UInt64(data.count)), length = Int(rng.next() % 600) + 1
            let end = min(data.count, start + length)
            data.replaceSubrange(start ..< end, with: Data(count: end - start))
            return "zeroed \(start)..<\(end)"
        case 3:
            let extra = (0 ..< Int(rng.next() % 200) + 1).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            data.append(contentsOf: extra)
            return "appended \(extra.count) garbage bytes"
        default:
            let at = Int(rng.next() % UInt64(data.count))
            data[at] = UInt8(truncatingIfNeeded: rng.next())
            return "byte \(at) replaced"
        }
    }

    func testDamagedFilesNeverTrapOrLie() throws {
        try damagedFiles(seed: baseSeed &+ 301)
    }

    func testDamagedFilesOfAnEncryptedStoreNeverTrapOrLie() throws {
        encryptionKey = testEncryptionKey
        try damagedFiles(seed: baseSeed &+ 311)
    }

    private func damagedFiles(seed: UInt64) throws {
        let source = TemporaryDirectory("fuzz-src")
        let pristine = try buildPristine(in: source)
        var rng = SplitMix64(seed: seed)
        let cases = 400 * TestEnvironment.fuzzScale
        var outcomes = ["open refused": 0, "read refused": 0, "all data intact": 0, "committed prefix (no clean marker)": 0]
        let names = pristine.files.keys.sorted()
        for n in 0 ..< cases {
            let dir = TemporaryDirectory("fuzz")
            // Half the cases keep the clean-shutdown marker (every damage must be detected); the
            // other half remove it, as after a crash (damage at the tail may read as a torn write).
            let clean = n % 2 == 0
            for (name, data) in pristine.files where clean || name != CleanShutdown.fileName {
                try data.write(to: URL(fileURLWithPath: dir.path + "/" + name))
            }
            let victim = names.filter { clean || $0 != CleanShutdown.fileName }.randomElement(using: &rng)!
            var data = pristine.files[victim]!
            let what = mutate(&data, rng: &rng)
            try data.write(to: URL(fileURLWithPath: dir.path + "/" + victim))
            let context = "case \(n): \(victim) \(what), clean marker \(clean)"

            check(dir: dir, pristine: pristine, complete: clean, context: context, outcomes: &outcomes)
        }
        print("corruption fuzz\(encryptionKey == nil ? "" : ", encrypted"): \(cases) damaged stores: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
    }

    /// Opens the damaged store in `dir`: it must be refused with `corrupted` naming a file, or
    /// hold exactly the data of one committed sequence (the last one when `complete`), every
    /// read returning that data or refusing with `corrupted`.
    private func check(dir: TemporaryDirectory, pristine: Pristine, complete: Bool, context: String,
                       outcomes: inout [String: Int]) {
        let store: Store
        do {
            store = try Store(directory: dir.url, options: storeOptions)
        } catch let error as StoreError {
            outcomes["open refused", default: 0] += 1
            if case .corrupted(let segment, _, _) = error {
                XCTAssertFalse(segment.isEmpty, context)
            } else {
                XCTFail("unexpected error \(error), \(context)")
            }
            return
        } catch {
            XCTFail("unexpected error \(error), \(context)")
            return
        }
        let recovered = store.lastSequence
        guard let expected = pristine.models[recovered] else {
            XCTFail("recovered sequence \(recovered) was never committed, \(context)")
            return
        }
        if complete { XCTAssertEqual(recovered, pristine.last, "opened a damaged store short of its data, \(context)") }
        var refused = false
        let snap = store.snapshot()
        for table in UInt32(0) ..< 2 {
            XCTAssertEqual(snap.count(table: table), expected[table]?.count ?? 0, context)
            for (k, v) in expected[table] ?? [:] {
                do {
                    let got = try store.get(table: table, key: k)
                    XCTAssertEqual(got, v, "wrong value for \(String(decoding: k, as: UTF8.self)), \(context)")
                } catch let error as StoreError {
                    guard case .corrupted = error else { XCTFail("\(error), \(context)"); continue }
                    refused = true
                } catch {
                    XCTFail("\(error), \(context)")
                }
            }
            do {
                var rows: [[UInt8]: [UInt8]] = [:]
                try snap.scan(table: table) { k, v in rows[k] = v }
                XCTAssertEqual(rows, expected[table] ?? [:], "scan, \(context)")
            } catch {
                refused = true
            }
        }
        if refused {
            outcomes["read refused", default: 0] += 1
        } else if recovered == pristine.last {
            outcomes["all data intact", default: 0] += 1
        } else {
            outcomes["committed prefix (no clean marker)", default: 0] += 1
        }
        try? store.close()
    }

    /// Whole files: deleted, copied under another segment's (or a new) name, replaced by an
    /// older copy, or a segment truncated at a record boundary. Only the active segment of a
    /// store closed without `CLEAN` may lose data (as a crash would); anything else must open
    /// complete or be refused.
    func testWholeFileDamageNeverTrapsOrLies() throws {
        try wholeFileDamage(seed: baseSeed &+ 302)
    }

    func testWholeFileDamageToAnEncryptedStoreNeverTrapsOrLies() throws {
        encryptionKey = testEncryptionKey
        try wholeFileDamage(seed: baseSeed &+ 312)
    }

    private func wholeFileDamage(seed: UInt64) throws {
        let source = TemporaryDirectory("fuzz-files-src")
        let pristine = try buildPristine(in: source)
        var rng = SplitMix64(seed: seed)
        let cases = 200 * TestEnvironment.fuzzScale
        var outcomes: [String: Int] = [:]
        let names = pristine.files.keys.sorted()
        let segments = names.filter { $0.hasSuffix(".seg") }
        let active = segments.filter { kind(of: $0, pristine.files[$0]!) == .log }.max()!
        for n in 0 ..< cases {
            let dir = TemporaryDirectory("fuzz-files")
            let clean = n % 2 == 0
            var files = pristine.files
            if !clean { files[CleanShutdown.fileName] = nil }
            let what: String
            var mayLoseData = false
            switch rng.next() % 4 {
            case 0:
                let victim = files.keys.sorted().randomElement(using: &rng)!
                files[victim] = nil
                what = "deleted \(victim)"
            case 1:
                let from = files.keys.sorted().randomElement(using: &rng)!
                let to: String
                if rng.next() % 2 == 0 {
                    to = files.keys.sorted().randomElement(using: &rng)!
                } else {
                    let number = UInt32(rng.next() % 40) + 1
                    to = rng.next() % 2 == 0 ? segmentName(number) : hintName(number)
                }
                files[to] = files[from]
                what = "\(from) copied over \(to)"
            case 2:
                let victim = pristine.older.keys.sorted().randomElement(using: &rng)!
                files[victim] = pristine.older[victim]
                // An older copy of the active segment is a crash's loss only without CLEAN.
                mayLoseData = victim == active
                what = "\(victim) replaced by its older copy"
            default:
                let victim = segments.randomElement(using: &rng)!
                let data = pristine.files[victim]!
                var boundaries: [Int] = []
                data.withUnsafeBytes { raw in
                    let reader = SegmentReader(raw, cipher: try? SegmentHeader.read(file: raw, number: Store.parseSegmentName(victim)!,
                                                                                       cipher: storeOptions.cipher).get().cipher)
                    var offset = reader.dataStart
                    boundaries.append(offset)
                    while offset < raw.count, case .success(let record) = reader.record(at: offset) {
                        offset += record.size
                        boundaries.append(offset)
                    }
                }
                let cut = boundaries.randomElement(using: &rng)!
                files[victim] = data.prefix(cut)
                mayLoseData = victim == active
                what = "\(victim) truncated at record boundary \(cut) of \(data.count)"
            }
            for (name, data) in files { try data.write(to: URL(fileURLWithPath: dir.path + "/" + name)) }
            let context = "case \(n): \(what), clean marker \(clean)"
            check(dir: dir, pristine: pristine, complete: clean || !mayLoseData, context: context, outcomes: &outcomes)
        }
        print("whole-file fuzz\(encryptionKey == nil ? "" : ", encrypted"): \(cases) damaged stores: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
    }
}
