// Store.asyncWrite: the write gate and the durable wait as suspended tasks. Every
// acknowledged commit survives a reopen; synchronous and async writers share the gate
// without deadlocking the cooperative pool; cancellation before the commit writes nothing;
// close and sync failures resume every waiting task.

import XCTest
import Foundation
import StrataTestSupport
@testable import StrataStorage

final class AsyncWriteTests: XCTestCase {
    /// Many tasks at `.full`, more than the pool has threads, half of them writing
    /// synchronously: all acknowledged, all on disk after reopen.
    func testConcurrentAsyncAndSyncCommittersAtFullDurability() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url, options: options(durability: .full))
        let tasks = 64, perTask = 10
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<tasks {
                group.addTask {
                    for n in 0..<perTask {
                        let k = key(t * perTask + n), v = value(UInt64(t * perTask + n), length: 40)
                        if t % 4 == 3 {
                            try store.write { try $0.put(table: 1, key: k, value: v) }
                        } else {
                            let sequence = try await store.asyncWrite { try $0.put(table: 1, key: k, value: v) }
                            // Returned only once durable, hence visible to readers.
                            XCTAssertGreaterThanOrEqual(store.lastSequence, sequence)
                            XCTAssertEqual(try store.get(table: 1, key: k), v)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try store.close()
        let reopened = try Store(directory: dir.url, options: options(durability: .full))
        for i in 0..<(tasks * perTask) {
            XCTAssertEqual(try reopened.get(table: 1, key: key(i)), value(UInt64(i), length: 40), "key \(i)")
        }
        XCTAssertEqual(reopened.lastSequence, UInt64(tasks * perTask))
        try reopened.close()
    }

    func testCancelledWhileWaitingForTheGateWritesNothing() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url, options: options(durability: .normal))
        let holder = try store.beginTransaction()     // the gate is busy
        let waiter = Task { try await store.asyncWrite { try $0.put(table: 1, key: key(1), value: [1]) } }
        try await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        do {
            _ = try await waiter.value
            XCTFail("expected CancellationError")
        } catch is CancellationError {}
        holder.rollback()
        // The gate is free again and nothing was written.
        try store.write { try $0.put(table: 1, key: key(2), value: [2]) }
        XCTAssertNil(try store.get(table: 1, key: key(1)))
        XCTAssertEqual(try store.get(table: 1, key: key(2)), [2])
        try store.close()
    }

    func testABodyThatThrowsRollsBackAndReleasesTheGate() async throws {
        struct Refused: Error {}
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url, options: options(durability: .full))
        do {
            try await store.asyncWrite { try $0.put(table: 1, key: key(1), value: [1]); throw Refused() }
            XCTFail("expected Refused")
        } catch is Refused {}
        XCTAssertNil(try store.get(table: 1, key: key(1)))
        try await store.asyncWrite { try $0.put(table: 1, key: key(1), value: [9]) }
        XCTAssertEqual(try store.get(table: 1, key: key(1)), [9])
        try store.close()
    }

    /// A failed `fdatasync` resumes the waiting task with the error (it never hangs), and
    /// the store takes no more writes.
    func testAFailedSyncResumesTheWaitingTaskWithTheError() async throws {
        let dir = TemporaryDirectory()
        let faults = RecordingFileSystem()
        let store = try Store(directory: dir.url, options: options(durability: .full, fileSystem: faults))
        try await store.asyncWrite { try $0.put(table: 1, key: key(1), value: [1]) }
        // Every fdatasync from now on fails.
        faults.setPlan(FaultPlan(target: .sync, index: 0, persistent: true, errno: EIO))
        do {
            try await store.asyncWrite { try $0.put(table: 1, key: key(2), value: [2]) }
            XCTFail("expected the sync failure")
        } catch let error as StoreError {
            XCTAssertTrue(error.isSyncFailure, "\(error)")
        }
        do {
            try await store.asyncWrite { try $0.put(table: 1, key: key(3), value: [3]) }
            XCTFail("the store should refuse writes after a failed sync")
        } catch is StoreError {}
        try? store.close()
    }

    /// A waiter woken for a free gate but cancelled before it runs passes the wake-up on:
    /// the tasks queued behind it still get the gate (before, they waited forever).
    func testACancelledWokenWaiterPassesTheGateOn() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directory: dir.url, options: options(durability: .normal))
        let importer = GateTestActor()
        func waiting() -> Int { store.gateMonitor.withLock { store.gateWaiters.count } }
        let holder = try store.beginTransaction()     // the gate is busy
        let first = Task { try await importer.write(store, 1) }
        while waiting() < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let second = Task { try await store.asyncWrite { try $0.put(table: 1, key: key(2), value: [2]) } }
        while waiting() < 2 { try await Task.sleep(for: .milliseconds(1)) }
        // Hold the importer's executor, so `first` cannot run once woken.
        let release = DispatchSemaphore(value: 0)
        let busy = Task { await importer.hold(release) }
        try await Task.sleep(for: .milliseconds(50))
        holder.rollback()       // wakes `first` …
        first.cancel()          // … which is cancelled before it runs
        release.signal()
        await busy.value
        do {
            _ = try await first.value
            XCTFail("expected CancellationError")
        } catch is CancellationError {}
        let secondDone = await withTaskGroup(of: Bool.self) { group -> Bool in
            group.addTask { (try? await second.value) != nil }
            group.addTask { try? await Task.sleep(for: .seconds(5)); return false }
            let done = await group.next() ?? false
            if !done { _ = try? store.write { _ in } }   // frees the stranded waiter, so the test ends
            group.cancelAll()
            return done
        }
        XCTAssertTrue(secondDone, "the task queued behind the cancelled one never got the gate")
        XCTAssertNil(try store.get(table: 1, key: key(1)))
        XCTAssertEqual(try store.get(table: 1, key: key(2)), [2])
        try store.close()
    }
}

/// An actor whose executor a test can keep busy, to choose when a task isolated to it resumes.
private actor GateTestActor {
    func write(_ store: Store, _ n: Int) async throws -> UInt64 {
        try await store.asyncWrite { try $0.put(table: 1, key: key(n), value: [UInt8(n)]) }
    }
    func hold(_ release: DispatchSemaphore) { release.wait() }
}
