// Crash-point sweep (SQLite's method): run a workload on a recording file layer, then for
// every operation boundary build the files a crash there could leave (synced bytes kept;
// unsynced writes kept, dropped or torn; unsynced truncates and namespace changes kept or
// not), reopen, and check: every commit acknowledged before the crash is there, nothing
// of a transaction that was not committed is visible, and the store takes writes again.
// Some points also crash again in the middle of the recovery that follows.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class CrashSweepTests: XCTestCase {
    /// Crash states whose open used an index image (close and rolls write them, unsynced:
    /// the sweep tears and drops them like any unsynced write).
    private var imageOpens = 0

    struct Workload {
        var operations: [FileOperation]
        /// State after each committed sequence.
        var models: [UInt64: Model]
        /// (sequence, number of file operations recorded when its commit returned).
        var acknowledged: [(UInt64, Int)]
    }

    /// A deterministic workload: small segments (so sealing and hint files happen), values
    /// that compress and that do not, deletes, rollbacks, and a close/reopen half-way.
    func recordWorkload(seed: UInt64, transactions: Int, durability: Durability, compactEvery: Int? = nil,
                        encryptionKey: Data? = nil) throws -> Workload {
        var rng = SplitMix64(seed: seed)
        let dir = TemporaryDirectory("crash-src")
        let fs = RecordingFileSystem()
        var opts = options(segmentSize: 4096, durability: durability, fileSystem: fs)
        opts.compressionThreshold = 128
        opts.encryptionKey = encryptionKey
        var policy = CompactionPolicy()
        policy.minimumDeadBytes = 0
        opts.autoCompaction = compactEvery == nil ? .disabled : .custom(policy)
        var store = try Store(directory: dir.url, options: opts)
        var model: Model = [:]
        var models: [UInt64: Model] = [0: [:]]
        var acknowledged: [(UInt64, Int)] = []
        for i in 0 ..< transactions {
            if i == transactions / 2 {
                try store.close()
                store = try Store(directory: dir.url, options: opts)
            }
            if let compactEvery, i % compactEvery == compactEvery - 1 {
                // A full compaction, or the policy's partial one (tombstones kept).
                if (i / compactEvery) % 2 == 0 { try store.compact() } else { _ = try store.runCompaction(manual: false) }
            }
            let txn = try store.beginTransaction()
            var pending = model
            for _ in 0 ..< Int(rng.next() % 6) + 1 {
                let table = UInt32(rng.next() % 2), k = key(Int(rng.next() % 25))
                if rng.next() % 5 == 0 {
                    try txn.delete(table: table, key: k)
                    pending[table]?[k] = nil
                } else {
                    let v = value(rng.next(), length: Int(rng.next() % 1500), compressible: rng.next() % 2 == 0)
                    try txn.put(table: table, key: k, value: v)
                    pending[table, default: [:]][k] = v
                }
            }
            if i % 9 == 4 {
                txn.rollback()
                continue
            }
            let sequence = try txn.commit()
            model = pending
            models[sequence] = model
            acknowledged.append((sequence, fs.operationCount))
        }
        try store.close()
        return Workload(operations: fs.operations, models: models, acknowledged: acknowledged)
    }

    /// Opens the crashed directory and checks it against the workload; returns the
    /// recovered sequence.
    @discardableResult
    func check(directory: String, workload: Workload, crashPoint: Int, durability: Durability,
               encryptionKey: Data? = nil, context: String) throws -> UInt64? {
        var opts = StoreOptions()
        opts.encryptionKey = encryptionKey
        let store: Store
        do {
            store = try Store(directory: URL(fileURLWithPath: directory), options: opts)
        } catch {
            XCTFail("open failed after a crash: \(error), \(context)")
            return nil
        }
        let recovered = store.lastSequence
        if store.openedImageCoverage != nil { imageOpens += 1 }
        guard let expected = workload.models[recovered] else {
            XCTFail("recovered sequence \(recovered) was never committed, \(context)")
            return nil
        }
        if durability == .full {
            let mustHave = workload.acknowledged.last { $0.1 <= crashPoint }?.0 ?? 0
            XCTAssertGreaterThanOrEqual(recovered, mustHave, "an acknowledged commit was lost, \(context)")
        }
        assertSame(try contents(of: store.snapshot()), expected,
                       "recovered state is not exactly commit \(recovered), \(context)")
        // The store must take writes again, and keep them.
        let next = try store.write { try $0.put(table: 7, key: bytes("after-crash"), value: bytes("ok")) }
        XCTAssertEqual(next, recovered + 1, context)
        try store.close()
        let reopened = try Store(directory: URL(fileURLWithPath: directory), options: opts)
        XCTAssertEqual(try reopened.get(table: 7, key: bytes("after-crash")), bytes("ok"), context)
        try reopened.close()
        return recovered
    }

    func testEveryCrashPointKeepsAcknowledgedCommitsAndNoPartialOnes() throws {
        try sweep(label: "", configurations: [(Durability.full, nil), (.none, nil)])
    }

    func testEveryCrashPointDuringCompactionLosesNothing() throws {
        try sweep(label: "with compaction ", configurations: [(Durability.full, 7)])
    }

    /// An encrypted store (every record sealed in a frame; hints, MANIFEST and CLEAN whole),
    /// with compaction, so every kind of file is written, torn and recovered.
    func testEveryCrashPointOnAnEncryptedStoreLosesNothing() throws {
        try sweep(label: "encrypted, with compaction ", configurations: [(Durability.full, 7)], encryptionKey: testEncryptionKey)
    }

    private func sweep(label: String, configurations: [(Durability, Int?)], encryptionKey: Data? = nil) throws {
        for (index, (durability, compactEvery)) in configurations.enumerated() {
            let seed = baseSeed &+ 100 &+ UInt64(index) &+ (compactEvery == nil ? 0 : 50) &+ (encryptionKey == nil ? 0 : 20)
            let workload = try recordWorkload(seed: seed, transactions: 40 * TestEnvironment.fuzzScale, durability: durability,
                                              compactEvery: compactEvery, encryptionKey: encryptionKey)
            var rng = SplitMix64(seed: seed)
            let variants = 2
            var points = 0, recoveryCrashes = 0
            imageOpens = 0
            let scratch = TemporaryDirectory("crash")
            for crashPoint in 0 ... workload.operations.count {
                for variant in 0 ..< variants {
                    let context = "\(durability), seed \(seed), crash point \(crashPoint)/\(workload.operations.count), variant \(variant)"
                    let dir = scratch.sub("p\(crashPoint)-\(variant)")
                    try CrashSimulator(operations: workload.operations).materialize(prefix: crashPoint, into: dir, rng: &rng)
                    points += 1
                    if variant == 1 && crashPoint % 3 == 0 {
                        // Crash again, somewhere inside the recovery of this crash.
                        let fs = RecordingFileSystem(existingDirectory: dir)
                        var opts = StoreOptions()
                        opts.fileSystem = fs
                        opts.encryptionKey = encryptionKey
                        if let store = try? Store(directory: URL(fileURLWithPath: dir), options: opts) {
                            try? store.close()
                        }
                        let second = scratch.sub("p\(crashPoint)-\(variant)-again")
                        let ops = fs.operations
                        let cut = Int(rng.next() % UInt64(ops.count + 1))
                        try CrashSimulator(operations: ops).materialize(prefix: cut, into: second, rng: &rng)
                        try check(directory: second, workload: workload, crashPoint: crashPoint, durability: durability,
                                  encryptionKey: encryptionKey, context: context + ", then crash \(cut)/\(ops.count) in recovery")
                        recoveryCrashes += 1
                    } else {
                        try check(directory: dir, workload: workload, crashPoint: crashPoint, durability: durability,
                                  encryptionKey: encryptionKey, context: context)
                    }
                    try? FileManager.default.removeItem(atPath: dir)
                }
            }
            print("crash sweep \(label)\(durability): \(points) crash states checked (\(recoveryCrashes) with a second crash during recovery, \(imageOpens) opened from an index image) over \(workload.operations.count) file operations")
            if encryptionKey == nil {
                XCTAssertGreaterThan(imageOpens, 0, "no crash state was opened from an index image: the sweep does not cover them")
            }
        }
    }
}
