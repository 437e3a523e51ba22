// Several writers of one store, one transaction at a time (StoreOptions.multiProcessWriting):
// stores of this process (each its own open file description, so the writer lock excludes
// them from each other as it does processes), then real processes — two crash helpers and
// this test writing in turns, one helper killed mid-run.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage
@testable import strata_crash_helper

final class WritingInTurnsTests: XCTestCase {
    private func turns(segmentSize: Int = 64 << 20) -> StoreOptions {
        var o = options(segmentSize: segmentSize)
        o.multiProcessWriting = true
        o.lockWaitTimeout = 30
        return o
    }

    /// Each transaction starts from every commit before it, whichever store made it: a
    /// read-modify-write counter from four threads, each with its own store, loses no
    /// increment; each store's observer hears of every commit exactly once.
    func testStoresWritingInTurnsSerializeTheirTransactions() throws {
        let dir = TemporaryDirectory("turns-counter")
        let perWriter = 40
        let stores = try (0 ..< 4).map { _ in try Store(directory: dir.url, options: turns(segmentSize: 4096)) }
        for store in stores { XCTAssertTrue(store.isFollowingAWriter) }
        let heard = (0 ..< 4).map { _ in Locked<[UInt64]>([]) }
        for (store, log) in zip(stores, heard) { store.observeCommits { sequence, _ in log.withLock { $0.append(sequence) } } }
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { w in
            for i in 0 ..< perWriter {
                do {
                    try stores[w].write { txn in
                        let count = try txn.get(table: 1, key: bytes("count")).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                        try txn.put(table: 1, key: bytes("count"), value: bytes("\(count + 1)"))
                        try txn.put(table: 2, key: bytes("w\(w)-\(i)"), value: bytes("\(txn.sequence)"))
                    }
                } catch {
                    failures.withLock { $0.append("writer \(w), write \(i): \(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let total = 4 * perWriter
        for (n, store) in stores.enumerated() {
            try store.refresh()
            XCTAssertEqual(store.lastSequence, UInt64(total), "store \(n)")
            let snapshot = store.snapshot()
            XCTAssertEqual(try snapshot.get(table: 1, key: bytes("count")), bytes("\(total)"), "store \(n): an increment was lost")
            var rows = 0
            try snapshot.scan(table: 2) { _, _ in rows += 1 }
            XCTAssertEqual(rows, total, "store \(n)")
            XCTAssertEqual(heard[n].withLock { $0 }, Array(1 ... UInt64(total)), "store \(n): each commit heard once, in order")
        }
        for store in stores { try store.close() }
        // A plain writer opens it afterwards as any store.
        let plain = try Store(directory: dir.url)
        XCTAssertEqual(try plain.get(table: 1, key: bytes("count")), bytes("\(total)"))
        try plain.close()
    }

    /// `asyncWrite` takes its turn as a suspended task: tasks of two stores increment one
    /// counter without losing an increment.
    func testAsyncWritesTakeTurnsToo() async throws {
        let dir = TemporaryDirectory("turns-async")
        let a = try Store(directory: dir.url, options: turns())
        let b = try Store(directory: dir.url, options: turns())
        let tasks = 8, each = 10
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0 ..< tasks {
                let store = t % 2 == 0 ? a : b
                group.addTask {
                    for _ in 0 ..< each {
                        try await store.asyncWrite { txn in
                            let count = try txn.get(table: 1, key: bytes("count")).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                            try txn.put(table: 1, key: bytes("count"), value: bytes("\(count + 1)"))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try a.refresh()
        XCTAssertEqual(try a.get(table: 1, key: bytes("count")), bytes("\(tasks * each)"))
        XCTAssertEqual(a.lastSequence, UInt64(tasks * each))
        try a.close()
        try b.close()
    }

    /// Other processes see a turn's commit only once it is synced: while the turn's close
    /// syncs (slowly here), a follower refreshing sees the state before it. (Written with
    /// durability `.none`, the turn's writer published `HEAD` at commit, before its sync.)
    func testATurnsCommitReachesOthersOnlyOnceSynced() throws {
        let dir = TemporaryDirectory("turns-durable-head")
        let fs = RecordingFileSystem()
        var options = turns()
        options.fileSystem = fs
        let writer = try Store(directory: dir.url, options: options)
        defer { try? writer.close() }
        try writer.write { try $0.put(table: 1, key: bytes("k1"), value: bytes("v1")) }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let follower = try Store(directory: dir.url, options: readOnly)
        defer { try? follower.close() }
        fs.setSyncDelay(0.4)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? writer.write { try $0.put(table: 1, key: bytes("k2"), value: bytes("v2")) }
            done.signal()
        }
        usleep(150_000)   // the turn has committed and is syncing
        try follower.refresh()
        XCTAssertNil(try follower.get(table: 1, key: bytes("k2")), "a commit not yet synced reached another process")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        fs.setSyncDelay(0)
        try follower.refresh()
        XCTAssertEqual(try follower.get(table: 1, key: bytes("k2")), bytes("v2"))
    }

    /// A turn whose close fails to sync its commit takes the store out of service for
    /// writes, as a failed sync does any writer: a later turn's sync must not make the
    /// commit that failed count as durable.
    func testATurnWhoseSyncFailsStopsTheStoresWrites() throws {
        let dir = TemporaryDirectory("turns-failed-sync")
        let fs = RecordingFileSystem()
        var options = turns()
        options.fileSystem = fs
        let store = try Store(directory: dir.url, options: options)
        defer { try? store.close() }
        try store.write { try $0.put(table: 1, key: bytes("k1"), value: bytes("v1")) }
        fs.setPlan(FaultPlan(target: .sync, index: 0, persistent: false, errno: EIO))
        XCTAssertThrowsError(try store.write { try $0.put(table: 1, key: bytes("k2"), value: bytes("v2")) })
        XCTAssertThrowsError(try store.write { try $0.put(table: 1, key: bytes("k3"), value: bytes("v3")) },
                             "a write after a failed sync was taken")
        XCTAssertEqual(try store.get(table: 1, key: bytes("k1")), bytes("v1"), "reads go on")
    }

    /// An `asyncWrite` waiting for another process's writer lock does not hold the store's
    /// write gate while it sleeps: synchronous writes blocking every thread of the
    /// cooperative pool on that gate would otherwise never let it resume.
    func testAnAsyncTurnWaitsWithoutHoldingTheGate() throws {
        let dir = TemporaryDirectory("turns-async-wait")
        let store = try Store(directory: dir.url, options: turns())
        let holder = try Store(directory: dir.url)   // a writer holding the store from open to close
        let finished = DispatchGroup()
        let failures = Locked<[String]>([])
        finished.enter()
        Task {
            do { try await store.asyncWrite { try $0.put(table: 1, key: bytes("async"), value: bytes("1")) } } catch { failures.withLock { $0.append("\(error)") } }
            finished.leave()
        }
        usleep(50_000)   // it waits for the writer lock
        let blocking = ProcessInfo.processInfo.activeProcessorCount * 2
        for n in 0 ..< blocking {
            finished.enter()
            Task {
                do { try store.write { try $0.put(table: 1, key: bytes("sync\(n)"), value: bytes("1")) } } catch { failures.withLock { $0.append("\(error)") } }
                finished.leave()
            }
        }
        usleep(300_000)
        try holder.close()
        guard finished.wait(timeout: .now() + 20) == .success else {
            // Deadlocked: the store is kept alive, as closing it (or its deinit) would wait for ever.
            _ = Unmanaged.passRetained(store)
            return XCTFail("the writes deadlocked")
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        try store.refresh()
        XCTAssertEqual(try store.get(table: 1, key: bytes("async")), bytes("1"))
        try store.close()
    }

    /// A transaction rolled back, a transaction that wrote nothing and a compaction each
    /// end their turn: the writer lock is free again, and the stores agree.
    func testRollbacksEmptyTransactionsAndCompactionsEndTheirTurn() throws {
        let dir = TemporaryDirectory("turns-end")
        let a = try Store(directory: dir.url, options: turns(segmentSize: 4096))
        let b = try Store(directory: dir.url, options: turns(segmentSize: 4096))
        defer { try? a.close(); try? b.close() }
        for n in 0 ..< 30 { try a.write { try $0.put(table: 1, key: key(n % 5), value: value(UInt64(n), length: 400)) } }
        struct Refused: Error {}
        XCTAssertThrowsError(try b.write { txn in
            try txn.put(table: 1, key: bytes("never"), value: bytes("x"))
            throw Refused()
        })
        let empty = try b.write { _ in }
        XCTAssertEqual(empty, 30)
        let report = try b.compact()
        XCTAssertGreaterThan(report.segmentsCompacted, 0)
        try a.write { try $0.put(table: 1, key: bytes("after"), value: bytes("compaction")) }
        try b.refresh()
        let expected = try contents(of: a.snapshot())
        assertSame(try contents(of: b.snapshot()), expected, "b after a's write past b's compaction")
        XCTAssertNil(try b.get(table: 1, key: bytes("never")))
        XCTAssertEqual(try b.get(table: 1, key: bytes("after")), bytes("compaction"))
    }

    /// A read-only store opened between two turns (no writer holds the store then) follows
    /// the writers and never keeps them out: reader presence is not the writer lock.
    func testAStoreOpenedReadOnlyBetweenTurnsFollowsThem() throws {
        let dir = TemporaryDirectory("turns-follower")
        let writer = try Store(directory: dir.url, options: turns())
        defer { try? writer.close() }
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        try writer.write { try $0.put(table: 1, key: bytes("a"), value: bytes("1")) }
        let follower = try Store(directory: dir.url, options: readOnly)
        defer { try? follower.close() }
        try writer.write { try $0.put(table: 1, key: bytes("b"), value: bytes("2")) }
        try follower.refresh()
        XCTAssertEqual(try follower.get(table: 1, key: bytes("b")), bytes("2"))
        // The follower holds no writer lock: the writer's next turn does not wait for it.
        try writer.write { try $0.put(table: 1, key: bytes("c"), value: bytes("3")) }
    }

    /// Two crash helpers and this process write one store in turns; one helper is killed
    /// (SIGKILL) mid-run, perhaps holding the writer lock with a transaction half-written.
    /// The others go on (the lock went with the dead process; the next turn repairs its
    /// tail), every sequence is committed by exactly one process, and the store is always
    /// exactly the workload's state at its last sequence.
    func testTwoWriterProcessesAlternateAndOneKilledLosesNothing() throws {
        let dir = TemporaryDirectory("turns-processes")
        let me = try Store(directory: dir.url, options: turns(segmentSize: 4096))
        defer { try? me.close() }
        let a = try WriterProcess(dir, ["full", "4096", "turns"]), b = try WriterProcess(dir, ["full", "4096", "turns"])
        var mine: [UInt64] = []
        var checks = 0
        func writeAndCheck() throws {
            let sequence = try me.write { txn in
                for (table, key, value) in KillWorkload.operations(of: txn.sequence) {
                    if let value { try txn.put(table: table, key: key, value: value) } else { try txn.delete(table: table, key: key) }
                }
            }
            mine.append(sequence)
            if mine.count % 10 == 0 {
                assertSame(try contents(of: me.snapshot()), KillWorkload.model(upTo: me.lastSequence), "after my commit \(sequence)")
                checks += 1
            }
        }
        let deadline = Date().addingTimeInterval(1.5 * Double(TestEnvironment.fuzzScale))
        let giveUp = deadline.addingTimeInterval(30)
        while Date() < deadline || a.acks.withLock({ $0.count }) < 5 || b.acks.withLock({ $0.count }) < 5 {
            // Turns are fair: a process that writes without pause does not keep the others out.
            guard Date() < giveUp else { return XCTFail("a helper starved: \(a.acks.withLock { $0.count }) and \(b.acks.withLock { $0.count }) commits") }
            try writeAndCheck()
            XCTAssertTrue(a.isRunning && b.isRunning, "a writer helper exited")
            guard a.isRunning && b.isRunning else { return }
        }
        a.stop()
        let bAtKill = b.acks.withLock { $0.count }
        let myAtKill = mine.count
        while b.acks.withLock({ $0.count }) < bAtKill + 5 || mine.count < myAtKill + 5 {
            guard Date() < giveUp.addingTimeInterval(30) else { return XCTFail("the surviving helper starved") }
            try writeAndCheck()
            guard b.isRunning else { return XCTFail("the surviving helper exited") }
        }
        b.stop()
        try me.refresh()
        let ackedA = a.acks.withLock { $0 }, ackedB = b.acks.withLock { $0 }
        let all = ackedA + ackedB + mine
        XCTAssertEqual(Set(all).count, all.count, "a sequence acknowledged by two writers")
        XCTAssertGreaterThanOrEqual(me.lastSequence, all.max() ?? 0)
        XCTAssertLessThan(ackedA.min()!, ackedB.max()!, "the helpers took turns")
        XCTAssertLessThan(ackedB.min()!, ackedA.max()!, "the helpers took turns")
        assertSame(try contents(of: me.snapshot()), KillWorkload.model(upTo: me.lastSequence), "at the end")
        let last = me.lastSequence
        try me.close()
        let reopened = try Store(directory: dir.url)
        XCTAssertEqual(reopened.lastSequence, last)
        assertSame(try contents(of: reopened.snapshot()), KillWorkload.model(upTo: last), "reopened by a plain writer")
        try reopened.close()
        print("writing in turns: helpers \(ackedA.count) and \(ackedB.count) commits, this process \(mine.count), \(checks) checks, last \(last)")
    }
}
