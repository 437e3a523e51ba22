// Compaction: space comes back, data does not change, tombstones keep hiding what they
// hide, readers and writers go on, snapshots keep their view (and stats show what they
// pin), automatic compaction keeps an update-heavy store near its live size, and a full
// disk mid-compaction changes nothing.

import Foundation
import XCTest
import Synchronization
import StrataTestSupport
@testable import StrataStorage

final class CompactionTests: XCTestCase {
    private func segmentFiles(_ dir: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".seg") }
    }

    private func fileBytes(_ dir: TemporaryDirectory, suffix: String = ".seg") -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(suffix) }
            .map { (try? FileManager.default.attributesOfItem(atPath: dir.path + "/" + $0)[.size] as? Int) ?? 0 }.reduce(0, +)
    }

    /// Waits for any background compaction to finish.
    private func settle(_ store: Store) {
        store.compactionMonitor.lock()
        while store.compactionRunning || store.backgroundCompactionQueued { store.compactionMonitor.wait(seconds: 0.01) }
        store.compactionMonitor.unlock()
    }

    func testCompactionReclaimsSpaceAndKeepsEveryValue() throws {
        let dir = TemporaryDirectory("compact")
        var opts = options(segmentSize: 16 << 10)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        var model: Model = [:]
        for round in 0 ..< 12 {
            try store.write { txn in
                for k in 0 ..< 150 {
                    let v = value(UInt64(round * 1000 + k), length: 120, compressible: k % 2 == 0)
                    try txn.put(table: 1, key: key(k), value: v)
                    model[1, default: [:]][key(k)] = v
                }
                for k in stride(from: round, to: 150, by: 13) where round % 3 == 2 {
                    try txn.delete(table: 1, key: key(k))
                    model[1]?[key(k)] = nil
                }
            }
        }
        let before = store.stats
        XCTAssertGreaterThan(before.deadBytes, before.liveBytes, "the workload left most bytes dead")
        let estimate = store.compactionEstimate()
        XCTAssertGreaterThan(estimate.reclaimableBytes, 0)
        let report = try store.compact()
        XCTAssertGreaterThan(report.segmentsCompacted, 0)
        XCTAssertGreaterThan(report.reclaimedBytes, before.deadBytes / 2)
        XCTAssertEqual(report.recordsCopied, model[1]!.count)
        assertSame(try contents(of: store.snapshot()), model, "after compaction")
        let after = store.stats
        XCTAssertLessThanOrEqual(after.liveBytes + after.deadBytes, after.liveBytes * 12 / 10 + 4096,
                                 "space after compaction is the live bytes plus headers")
        XCTAssertEqual(after.liveBytes + after.deadBytes, fileBytes(dir), "stats match the files")
        XCTAssertTrue(after.segmentDetails.contains { $0.compacted })
        // Compacting an already compact store rewrites nothing.
        XCTAssertEqual(try store.compact().segmentsCompacted, 0)
        try store.close()
        let reopened = try Store(directory: dir.url, options: opts)
        assertSame(try contents(of: reopened.snapshot()), model, "after reopen")
        XCTAssertEqual(reopened.stats.liveBytes, after.liveBytes)
        // And it goes on taking writes that win over the compacted records.
        try reopened.write { try $0.put(table: 1, key: key(1), value: bytes("newest")) }
        try reopened.close()
        let again = try Store(directory: dir.url, options: opts)
        XCTAssertEqual(try again.get(table: 1, key: key(1)), bytes("newest"))
    }

    func testTombstonesKeepHidingOlderRecordsAfterAPartialCompaction() throws {
        let dir = TemporaryDirectory("tombstones")
        var opts = options(segmentSize: 4096)
        var policy = CompactionPolicy()
        policy.includeDeadFraction = 0.5
        policy.smallSegmentFraction = 0
        policy.minimumDeadBytes = 0
        opts.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: opts)
            // Segment A: the victim and keys that never change (A stays live, so it is not compacted).
            try store.write { txn in
                try txn.put(table: 1, key: bytes("victim"), value: value(1, length: 200))
                for k in 0 ..< 16 { try txn.put(table: 1, key: key(k), value: value(UInt64(k), length: 200)) }
            }
            // Segment B: the tombstone, and keys overwritten right after (B becomes mostly dead).
            try store.write { txn in
                try txn.delete(table: 1, key: bytes("victim"))
                for k in 100 ..< 116 { try txn.put(table: 1, key: key(k), value: value(UInt64(k), length: 200)) }
            }
            for round in 0 ..< 3 {
                try store.write { txn in
                    for k in 100 ..< 116 { try txn.put(table: 1, key: key(k), value: value(UInt64(k + round), length: 200)) }
                }
            }
            XCTAssertNil(try store.get(table: 1, key: bytes("victim")))
            try store.close()
        }
        opts.autoCompaction = .custom(policy)
        let store = try Store(directory: dir.url, options: opts)
        let report = try store.runCompaction(manual: false)
        XCTAssertGreaterThan(report.segmentsCompacted, 0)
        XCTAssertGreaterThan(report.tombstonesKept, 0, "the tombstone still hides the put in the older segment")
        XCTAssertNil(try store.get(table: 1, key: bytes("victim")))
        try store.close()
        let reopened = try Store(directory: dir.url, options: opts)
        XCTAssertNil(try reopened.get(table: 1, key: bytes("victim")), "the deleted key came back after compaction")
        XCTAssertEqual(reopened.snapshot().count(table: 1), 32)
        // A full compaction (every segment: nothing older remains) drops the tombstone.
        let full = try reopened.compact()
        XCTAssertEqual(full.tombstonesKept, 0)
        try reopened.close()
        XCTAssertNil(try Store(directory: dir.url, options: opts).get(table: 1, key: bytes("victim")))
    }

    func testReadersWritersAndSnapshotsDuringCompaction() throws {
        let dir = TemporaryDirectory("compact-concurrent")
        var opts = options(segmentSize: 32 << 10, durability: .none)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        let group = 8
        @Sendable func groupKey(_ i: Int) -> [UInt8] { Array("g\(i)".utf8) }
        for n in 0 ..< 200 {
            try store.write { txn in
                for i in 0 ..< group { try txn.put(table: 1, key: groupKey(i), value: Array("\(n)".utf8) + value(UInt64(n), length: 300)) }
            }
        }
        let pinnedView = store.snapshot()
        let expectedOld = try contents(of: pinnedView)
        let failures = Locked<[String]>([])
        let stop = Atomic<Bool>(false)
        let reports = Locked<[CompactionReport]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            switch worker {
            case 0: // writer
                for n in 200 ..< 600 {
                    do {
                        try store.write { txn in
                            for i in 0 ..< group { try txn.put(table: 1, key: groupKey(i), value: Array("\(n)".utf8) + value(UInt64(n), length: 300)) }
                        }
                    } catch { failures.withLock { $0.append("writer: \(error)") } }
                }
                stop.store(true, ordering: .releasing)
            case 1: // compactor
                while !stop.load(ordering: .acquiring) {
                    do { let r = try store.compact(); reports.withLock { $0.append(r) } } catch {
                        failures.withLock { $0.append("compact: \(error)") }
                    }
                }
            default: // readers
                while !stop.load(ordering: .acquiring) {
                    let snap = store.snapshot()
                    do {
                        var seen: Set<[UInt8]> = []
                        try snap.scan(table: 1) { _, v in seen.insert(v) }
                        if seen.count != 1 { failures.withLock { $0.append("snapshot \(snap.sequence) mixes commits") } }
                    } catch { failures.withLock { $0.append("reader: \(error)") } }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let done = reports.withLock { $0 }
        XCTAssertGreaterThan(done.count, 0)
        XCTAssertGreaterThan(done.reduce(0) { $0 + $1.segmentsCompacted }, 0)
        XCTAssertLessThan(done.map(\.longestWriterPause).max() ?? 0, 1.0, "writers are paused briefly, not for the whole compaction")
        // The old snapshot still reads its own commit, from deleted segments it pins.
        assertSame(try contents(of: pinnedView), expectedOld, "pinned snapshot")
        let stats = store.stats
        XCTAssertGreaterThan(stats.pinnedBytes, 0)
        XCTAssertEqual(stats.oldestSnapshotSequence, pinnedView.sequence)
        XCTAssertNotNil(stats.oldestSnapshotAge)
        withExtendedLifetime(pinnedView) {}
        try store.close()
    }

    func testSequencesNeverGoBackWhenCompactionDropsTheNewestTransactions() throws {
        // The newest transactions are deletes, which a full compaction drops entirely.
        for (label, cleanClose, keepSomething) in [("clean close", true, true), ("crash", false, true),
                                                   ("empty output", true, false)] {
            let dir = TemporaryDirectory("sequence-floor")
            var opts = options(segmentSize: 64 << 10)
            opts.autoCompaction = .disabled
            do {
                let store = try Store(directory: dir.url, options: opts)
                if keepSomething { try store.write { try $0.put(table: 1, key: bytes("a"), value: bytes("kept")) } }
                try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("gone")) }
                try store.write { try $0.delete(table: 1, key: bytes("k")) }
                let last = store.lastSequence
                try store.compact()
                XCTAssertEqual(store.lastSequence, last, label)
                if cleanClose { try store.close() } else { store.syncMonitor.withLock { store.closed = true }; store.fileLock.unlock() }
            }
            let reopened = try Store(directory: dir.url, options: opts)
            let expectedLast: UInt64 = keepSomething ? 3 : 2
            XCTAssertEqual(reopened.lastSequence, expectedLast, "the sequence did not go back (\(label))")
            XCTAssertNil(try reopened.get(table: 1, key: bytes("k")), label)
            XCTAssertEqual(try reopened.get(table: 1, key: bytes("a")), keepSomething ? bytes("kept") : nil, label)
            XCTAssertEqual(try reopened.write { try $0.put(table: 1, key: bytes("n"), value: bytes("next")) }, expectedLast + 1, label)
            try reopened.close()
            XCTAssertEqual(try Store(directory: dir.url, options: opts).lastSequence, expectedLast + 1, label)
        }
    }

    func testCompactOnOpenHookSeesTheSpaceAndDecides() throws {
        let dir = TemporaryDirectory("compact-on-open")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: opts)
            for n in 0 ..< 60 { try store.write { try $0.put(table: 1, key: key(n % 6), value: value(UInt64(n), length: 300)) } }
            try store.close()
        }
        let asked = Locked<(Int, Int)?>(nil)
        opts.shouldCompactOnOpen = { total, used in
            asked.withLock { $0 = (total, used) }
            return total > 2 * used
        }
        let store = try Store(directory: dir.url, options: opts)
        let (total, used) = try XCTUnwrap(asked.withLock { $0 })
        XCTAssertGreaterThan(total, 2 * used)
        let stats = store.stats
        XCTAssertLessThan(stats.liveBytes + stats.deadBytes, total / 2, "compacted before the open returned")
        XCTAssertEqual(stats.keys, 6)
        try store.close()
    }

    func testPinnedSpaceIsReleasedWithTheSnapshot() throws {
        let dir = TemporaryDirectory("pinned")
        var opts = options(segmentSize: 4096)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for n in 0 ..< 50 { try store.write { try $0.put(table: 1, key: key(n % 5), value: value(UInt64(n), length: 300)) } }
        var snapshot: Snapshot? = store.snapshot()
        try store.compact()
        XCTAssertGreaterThan(store.stats.pinnedBytes, 0)
        XCTAssertEqual(try snapshot!.get(table: 1, key: key(0)), value(45, length: 300))
        snapshot = nil
        XCTAssertEqual(store.stats.pinnedBytes, 0)
        XCTAssertNil(store.stats.oldestSnapshotSequence)
        try store.close()
    }

    /// A compacted segment is not unlinked whole: it is renamed aside (a `.tmp` name the
    /// next open deletes), kept while a snapshot maps it, then truncated from its end
    /// `Store.deletionStep` bytes at a time and unlinked. (One unlink of a 64 MB file on a
    /// file system mounted with `discard` discards all its blocks at once, and the commits
    /// syncing meanwhile waited 10-150 ms behind it.)
    func testRetiredSegmentsAreDeletedStepwiseOnceNoSnapshotMapsThem() throws {
        let dir = TemporaryDirectory("retired-stepwise")
        let fs = RecordingFileSystem()
        var opts = options(segmentSize: 3 * Store.deletionStep, durability: .none, fileSystem: fs)
        opts.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: opts)
        for round in 0 ..< 2 {
            for n in 0 ..< 60 { try store.write { try $0.put(table: 1, key: key(n), value: value(UInt64(round * 100 + n), length: 256 << 10)) } }
        }
        var snapshot: Snapshot? = store.snapshot()
        let before = Set(try fs.listDirectory(dir.path).filter { $0.hasSuffix(".seg") })
        try store.compact()
        let names = try fs.listDirectory(dir.path)
        let retired = names.filter { $0.hasSuffix(".tmp") && $0.contains(".seg.retired-") }
        XCTAssertFalse(retired.isEmpty, "segments a snapshot maps are kept aside: \(names)")
        XCTAssertTrue(before.isDisjoint(with: names.filter { $0.hasSuffix(".seg") }), "every compacted segment left its name")
        XCTAssertEqual(try snapshot!.get(table: 1, key: key(3)), value(103, length: 256 << 10), "the snapshot still reads them")
        XCTAssertFalse(fs.operations.contains { if case .remove(let path) = $0 { return path.contains(".seg.retired-") } else { return false } },
                       "nothing a snapshot maps is deleted")
        snapshot = nil
        try store.close()
        XCTAssertEqual(try fs.listDirectory(dir.path).filter { $0.hasSuffix(".tmp") }, [], "close deleted the retired files")
        // Each retired segment shrank step by step, then went.
        var inodes: [String: Int] = [:]
        var truncations: [Int: [Int]] = [:]     // since the file was retired
        var removedAfterTruncating = 0, longest = 0
        for operation in fs.operations {
            switch operation {
            case .create(let path, let inode): inodes[path] = inode
            case .rename(let from, let to):
                inodes[to] = inodes.removeValue(forKey: from)
                if to.contains(".seg.retired-"), let inode = inodes[to] { truncations[inode] = [] }
            case .truncate(let inode, let length): truncations[inode]?.append(length)
            case .remove(let path) where path.contains(".seg.retired-"):
                let lengths = try XCTUnwrap(inodes[path].flatMap { truncations[$0] }, path)
                XCTAssertEqual(lengths.last, 0, path)
                let steps = zip(lengths, lengths.dropFirst()).map { $0 - $1 }
                XCTAssertTrue(steps.dropLast().allSatisfy { $0 == Store.deletionStep }, "\(path): \(lengths)")
                XCTAssertLessThanOrEqual(steps.last ?? 0, Store.deletionStep, path)
                longest = max(longest, lengths.count)
                removedAfterTruncating += 1
            default: break
            }
        }
        XCTAssertEqual(removedAfterTruncating, retired.count)
        XCTAssertGreaterThan(longest, 2, "a segment of several steps was truncated several times")
    }

    func testUpdateHeavyStoreSettlesNearItsLiveSize() throws {
        let dir = TemporaryDirectory("settle")
        var opts = options(segmentSize: 64 << 10, durability: .none)
        opts.autoCompaction = .default
        let store = try Store(directory: dir.url, options: opts)
        let keys = 2000
        var rng = SplitMix64(seed: baseSeed &+ 77)
        for round in 0 ..< 12 {
            for batch in stride(from: 0, to: keys, by: 50) {
                try store.write { txn in
                    for k in batch ..< batch + 50 {
                        try txn.put(table: 1, key: key(k), value: value(rng.next(), length: 400 + round))
                    }
                }
            }
        }
        settle(store)
        let stats = store.stats
        let segmentBytes = stats.liveBytes + stats.deadBytes
        XCTAssertLessThanOrEqual(Double(segmentBytes), 1.2 * Double(stats.liveBytes),
                                 "disk \(segmentBytes) vs live \(stats.liveBytes) after each key was rewritten 12 times; segments: \(stats.segmentDetails.map { "\($0.id)\($0.compacted ? "c" : "")\($0.sealed ? "" : "*"):\($0.liveBytes / 1024)/\($0.diskBytes / 1024)K" })")
        XCTAssertEqual(stats.keys, keys)
        print(String(format: "settled: segment bytes %.2f × live after every key was rewritten 12 times", Double(segmentBytes) / Double(stats.liveBytes)))
        try store.close()
        let reopened = try Store(directory: dir.url)
        XCTAssertEqual(reopened.snapshot().count(table: 1), keys)
    }

    func testDiskFullDuringCompactionChangesNothing() throws {
        // Build the same store each time, then fail the Nth write of the compaction.
        func build(_ dir: TemporaryDirectory, _ fs: RecordingFileSystem) throws -> (Store, Model) {
            var opts = options(segmentSize: 8192, fileSystem: fs)
            opts.autoCompaction = .disabled
            let store = try Store(directory: dir.url, options: opts)
            var model: Model = [:]
            for n in 0 ..< 120 {
                let v = value(UInt64(n), length: 200 + n % 50)
                try store.write { try $0.put(table: 1, key: key(n % 30), value: v) }
                model[1, default: [:]][key(n % 30)] = v
            }
            return (store, model)
        }
        var index = 0, failures = 0
        while true {
            let dir = TemporaryDirectory("compact-enospc")
            let fs = RecordingFileSystem()
            let (store, model) = try build(dir, fs)
            fs.setPlan(FaultPlan(target: .write, index: index, persistent: index % 2 == 1, errno: ENOSPC))
            do {
                try store.compact()
                fs.setPlan(nil)
                try store.close()
                break   // past the compaction's last write
            } catch let error as StoreError {
                guard case .diskFull = error else { XCTFail("\(error) at write \(index)"); break }
                failures += 1
            }
            let context = "ENOSPC at compaction write #\(index)"
            assertSame(try contents(of: store.snapshot()), model, context)
            fs.setPlan(nil)
            XCTAssertNoThrow(try store.write { try $0.put(table: 2, key: bytes("after"), value: bytes("full disk")) }, context)
            try store.close()
            XCTAssertEqual(((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".tmp") }, [],
                           "partial output removed, \(context)")
            let reopened = try Store(directory: dir.url)
            var expected = model
            expected[2] = [bytes("after"): bytes("full disk")]
            assertSame(try contents(of: reopened.snapshot()), expected, "after reopen, \(context)")
            try reopened.close()
            index += 1
        }
        XCTAssertGreaterThan(failures, 3)
        print("compaction disk-full sweep: \(failures) write points refused with diskFull, nothing lost")
    }
}
