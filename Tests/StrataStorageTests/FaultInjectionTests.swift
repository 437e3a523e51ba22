// Failing I/O: a full disk at every write of a workload, a full disk that stays full, and
// a failed fdatasync. Each must give a clear error, lose nothing committed before, leave
// no trace of the failed transaction, and leave the store openable.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

final class FaultInjectionTests: XCTestCase {
    /// Runs `count` small transactions, keeping `model` to what committed. On the first
    /// error, returns it with the model the failed transaction would have produced.
    private func runWorkload(store: Store, count: Int, seed: UInt64, model: inout Model) -> (Error, Model)? {
        var rng = SplitMix64(seed: seed)
        for _ in 0 ..< count {
            var pending = model
            do {
                try store.write { txn in
                    for _ in 0 ..< Int(rng.next() % 3) + 1 {
                        let k = key(Int(rng.next() % 20)), v = value(rng.next(), length: Int(rng.next() % 3000))
                        try txn.put(table: 1, key: k, value: v)
                        pending[1, default: [:]][k] = v
                    }
                }
                model = pending
            } catch {
                return (error, pending)
            }
        }
        return nil
    }

    func testDiskFullAtEveryWriteLosesNothing() throws {
        // Count the writes of the workload once, then fail each one in turn.
        let probe = RecordingFileSystem()
        do {
            let dir = TemporaryDirectory("enospc-probe")
            let store = try Store(directory: dir.url, options: options(segmentSize: 8192, fileSystem: probe))
            var model: Model = [:]
            XCTAssertNil(runWorkload(store: store, count: 30, seed: 1, model: &model))
            try store.close()
        }
        let writes = probe.operations.filter { if case .write = $0 { return true } else { return false } }.count
        var failures = 0
        for index in 0 ..< writes {
            for persistent in [false, true] {
                let dir = TemporaryDirectory("enospc")
                let fs = RecordingFileSystem(plan: FaultPlan(target: .write, index: index, persistent: persistent, errno: ENOSPC))
                let context = "write #\(index), persistent \(persistent)"
                let store: Store
                do {
                    store = try Store(directory: dir.url, options: options(segmentSize: 8192, fileSystem: fs))
                } catch {
                    // The very first writes create the store; failing there must say disk full.
                    // (the first segment's header, or the manifest that names it)
                    XCTAssertTrue([StoreError.diskFull(dir.path + "/00000001.seg.tmp"), .diskFull(dir.path + "/MANIFEST.tmp")]
                        .contains(error as? StoreError), "\(error), \(context)")
                    continue
                }
                var model: Model = [:]
                if let (error, _) = runWorkload(store: store, count: 30, seed: 1, model: &model) {
                    failures += 1
                    guard case StoreError.diskFull = error else { XCTFail("\(error), \(context)"); continue }
                }
                // Readers see exactly the committed transactions.
                assertSame(try contents(of: store.snapshot()), model, context)
                if !persistent {
                    // Space is back: the store goes on.
                    fs.setPlan(nil)
                    XCTAssertNil(runWorkload(store: store, count: 5, seed: 2, model: &model)?.0, context)
                }
                try? store.close()
                let reopened = try Store(directory: dir.url)
                assertSame(try contents(of: reopened.snapshot()), model, "after reopen, \(context)")
                try reopened.close()
            }
        }
        XCTAssertGreaterThan(failures, writes, "the faults were injected")
        print("disk-full sweep: \(writes) write points × once/persistent, \(failures) transactions refused with diskFull")
    }

    /// A failed sync is a sync failure whatever its errno: ENOSPC from `fdatasync` too (it
    /// used to become a permanent `diskFull`, "free space and retry", that no retry could
    /// cure before a reopen, while the "failed" transaction could survive it).
    func testFailedSyncStopsWritesAndKeepsTheCommittedPrefix() throws {
        for code in [EIO, ENOSPC] { try failedSync(errno: code) }
    }

    private func failedSync(errno code: Int32) throws {
        var failures = 0
        defer { XCTAssertGreaterThan(failures, 8, "sync faults were injected and reported, errno \(code)") }
        for index in 0 ..< 16 {
            let dir = TemporaryDirectory("eio")
            let fs = RecordingFileSystem(plan: FaultPlan(target: .sync, index: index, persistent: false, errno: code))
            let context = "sync #\(index), errno \(code)"
            let store: Store
            do {
                store = try Store(directory: dir.url, options: options(segmentSize: 8192, fileSystem: fs))
            } catch {
                guard case StoreError.io(let op, _, let got) = error else { XCTFail("\(error), \(context)"); continue }
                XCTAssertEqual(got, code, context)
                XCTAssertTrue(op.contains("sync"), "\(op), \(context)")
                continue
            }
            var model: Model = [:]
            guard let (error, attempted) = runWorkload(store: store, count: 20, seed: 3, model: &model) else {
                // The failed sync was a hint file's (a cache): nothing to report, nothing lost.
                assertSame(try contents(of: store.snapshot()), model, "\(context) (hint)")
                try store.close()
                continue
            }
            guard case StoreError.io(let op, _, code) = error, op.contains("sync") else { XCTFail("\(error), \(context)"); continue }
            XCTAssertTrue("\(error)".contains("reopen it, and recovery decides whether the last commit survived"), "\(error)")
            failures += 1
            // The store refuses further writes rather than risk acknowledging lost data.
            XCTAssertThrowsError(try store.write { try $0.put(table: 1, key: bytes("x"), value: bytes("y")) }) {
                guard case StoreError.io = $0 else { return XCTFail("\($0), \(context)") }
            }
            assertSame(try contents(of: store.snapshot()), model, "readers keep the acknowledged state, \(context)")
            try? store.close()
            // On reopen the failed transaction may or may not be there (its bytes reached the
            // file), but it is all or nothing, and everything acknowledged is there.
            let reopened = try Store(directory: dir.url)
            let state = normalized(try contents(of: reopened.snapshot()))
            XCTAssertTrue(state == normalized(model) || state == normalized(attempted),
                          "\(context): state is neither the acknowledged commits nor those plus the failed one")
            try reopened.close()
        }
    }
}
