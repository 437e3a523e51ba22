// Concurrency: readers with snapshots while several writers commit (group commit), and
// close racing with readers. Each transaction sets every key of a small group to the same
// value, so any read view that mixes two commits is caught. Run under ThreadSanitizer
// with `make tsan`.

import Foundation
import XCTest
import Synchronization
import StrataTestSupport
@testable import StrataStorage

private let groupSize = 8
private func groupKey(_ i: Int) -> [UInt8] { Array("group-\(i)".utf8) }

final class ConcurrencyTests: XCTestCase {

    func testSnapshotsNeverSeeHalfATransaction() throws {
        let dir = TemporaryDirectory("concurrency")
        let fs = RecordingFileSystem()
        let store = try Store(directory: dir.url, options: options(segmentSize: 64 << 10, durability: .full, fileSystem: fs))
        try store.write { txn in
            for i in 0 ..< groupSize { try txn.put(table: 1, key: groupKey(i), value: Array("0".utf8)) }
        }
        let writers = 4, commitsPerWriter = 150 * TestEnvironment.fuzzScale, readers = 3
        let failures = Locked<[String]>([])
        let done = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: writers + readers) { worker in
            func fail(_ message: String) { failures.withLock { $0.append(message) } }
            if worker < writers {
                do {
                    for n in 0 ..< commitsPerWriter {
                        let marker = Array("\(worker)-\(n)".utf8)
                        try store.write { txn in
                            for i in 0 ..< groupSize { try txn.put(table: 1, key: groupKey(i), value: marker) }
                            try txn.put(table: 2, key: Array("writer-\(worker)".utf8), value: marker)
                        }
                    }
                } catch {
                    fail("writer \(worker): \(error)")
                }
                done.add(1, ordering: .releasing)
            } else {
                var lastSequence: UInt64 = 0
                var reads = 0
                while done.load(ordering: .acquiring) < writers || reads < 50 {
                    reads += 1
                    let snap = store.snapshot()
                    if snap.sequence < lastSequence { fail("snapshot went back from \(lastSequence) to \(snap.sequence)") }
                    lastSequence = snap.sequence
                    do {
                        let values = try (0 ..< groupSize).map { try snap.get(table: 1, key: groupKey($0)) }
                        if Set(values.map { $0 ?? [] }).count != 1 { fail("snapshot \(snap.sequence) mixes commits") }
                        var scanned: Set<[UInt8]> = []
                        try snap.scan(table: 1) { _, v in scanned.insert(v) }
                        if scanned.count != 1 { fail("scan of snapshot \(snap.sequence) mixes commits") }
                        _ = try store.get(table: 2, key: Array("writer-0".utf8))
                        _ = store.stats
                    } catch {
                        fail("reader: \(error)")
                    }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let total = UInt64(writers * commitsPerWriter + 1)
        XCTAssertEqual(store.lastSequence, total)
        let syncs = fs.operations.filter { if case .sync = $0 { return true } else { return false } }.count
        print("concurrency: \(total) commits from \(writers) writers with \(syncs) syncs (group commit), \(readers) readers")
        try store.close()
        let reopened = try Store(directory: dir.url)
        XCTAssertEqual(reopened.lastSequence, total)
        let snap = reopened.snapshot()
        for w in 0 ..< writers {
            XCTAssertEqual(try snap.get(table: 2, key: Array("writer-\(w)".utf8)), Array("\(w)-\(commitsPerWriter - 1)".utf8))
        }
        try reopened.close()
    }

    func testNormalDurabilityBackgroundSyncerAndCloseRace() throws {
        for round in 0 ..< 5 {
            let dir = TemporaryDirectory("close-race")
            var opts = options(durability: .normal)
            opts.syncInterval = 0.001
            let store = try Store(directory: dir.url, options: opts)
            let stop = Atomic<Bool>(false)
            let group = DispatchGroup()
            for reader in 0 ..< 2 {
                DispatchQueue.global().async(group: group) {
                    while !stop.load(ordering: .acquiring) {
                        let snap = store.snapshot()
                        _ = try? snap.get(table: 1, key: Array("k\(reader)".utf8))
                        _ = try? store.get(table: 1, key: Array("k\(reader)".utf8))
                    }
                }
            }
            for i in 0 ..< 200 { try store.write { try $0.put(table: 1, key: Array("k\(i % 3)".utf8), value: Array("\(i)".utf8)) } }
            try store.close()
            stop.store(true, ordering: .releasing)
            group.wait()
            let reopened = try Store(directory: dir.url, options: opts)
            XCTAssertEqual(reopened.lastSequence, 200, "round \(round)")
            try reopened.close()
        }
    }
}
