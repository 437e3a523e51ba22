// The write gate and the locks around it (issue 23, items 1, 2 and 5): opening a realm
// never waits for a write that waits for that open; a commit made through any API is seen
// by observers without a wait; a write belongs to its task, not to the thread it began on.

import XCTest
import Foundation
import StrataStorage
@testable import Strata

/// (`Task` alone names the results-controller tests' model here.)
private typealias AsyncTask = _Concurrency.Task

final class WriteGateTests: RealmTestCase {
    /// Runs `body` on a thread of its own; false if it has not finished within `seconds`
    /// (a deadlock: the thread is left blocked, the test fails instead of hanging).
    private func finishes(within seconds: Double, _ body: @escaping @Sendable () throws -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do { try body() } catch { XCTFail("\(error)") }
            done.signal()
        }
        return done.wait(timeout: .now() + seconds) == .success
    }

    /// A store's configuration, the same with one more class, and another store's.
    private func threeConfigurations() -> (first: Realm.Configuration, adding: Realm.Configuration, other: Realm.Configuration) {
        let first = configuration(types: [Car.self])
        var adding = first
        adding.objectTypes = [Car.self, Phone.self]
        var other = Realm.Configuration(directory: newDirectory())
        other.objectTypes = [Car.self]
        other.storeOptions.durability = .none
        return (first, adding, other)
    }

    /// Item 1: thread A writes; thread B opens the same store with a configuration that
    /// adds a class, so its open waits for A's write. Inside its write, A reads the schema,
    /// opens a realm of another store and lets a realm of its own store go. Before the fix
    /// B held the process-wide registry lock and the schema lock while waiting for the gate,
    /// and A waited for those: a deadlock.
    func testAWriteThatOpensAndReleasesRealmsNeverWaitsForAnOpenWaitingForIt() throws {
        let (first, adding, other) = threeConfigurations()
        _ = try Realm(configuration: first)  // create the store
        let bWaiting = DispatchSemaphore(value: 0)
        let bOpened = DispatchSemaphore(value: 0)
        let writerDone = finishes(within: 20) {
            let realm = try Realm(configuration: first)
            try realm.write {
                Thread.detachNewThread {
                    bWaiting.signal()
                    do { _ = try Realm(configuration: adding) } catch { XCTFail("\(error)") }
                    bOpened.signal()
                }
                bWaiting.wait()
                Thread.sleep(forTimeInterval: 0.2)  // B is now waiting for this write
                XCTAssertNotNil(realm.schema["Car"])
                let elsewhere = try Realm(configuration: other)
                XCTAssertEqual(elsewhere.objects(Car.self).count, 0)
                do { _ = try Realm(configuration: first) }  // opened and released inside the write
                try realm.create(Car.self, value: ["vin": "Saab"])
            }
        }
        XCTAssertTrue(writerDone, "the write deadlocked with an open of its store")
        XCTAssertEqual(bOpened.wait(timeout: .now() + 20), .success, "the open adding a class never finished")
        let realm = try Realm(configuration: adding)
        XCTAssertNotNil(realm.schema["Phone"])
        XCTAssertEqual(realm.objects(Car.self).count, 1)
    }

    /// Item 1: an open waiting for one store's write gate does not hold up opens of another.
    func testAnOpenWaitingForOneStoreDoesNotBlockOpensOfAnother() throws {
        let (first, adding, other) = threeConfigurations()
        let realm = try Realm(configuration: first)
        try realm.beginWrite()
        let bOpened = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do { _ = try Realm(configuration: adding) } catch { XCTFail("\(error)") }
            bOpened.signal()
        }
        Thread.sleep(forTimeInterval: 0.2)
        let opened = finishes(within: 10) {
            let elsewhere = try Realm(configuration: other)
            try elsewhere.write { try elsewhere.create(Car.self, value: ["vin": "Volvo"]) }
        }
        XCTAssertTrue(opened, "an open of another store waited for this store's write")
        try realm.commitWrite()
        XCTAssertEqual(bOpened.wait(timeout: .now() + 20), .success)
    }

    /// Item 2: a commit made through the engine API (`realm.store`) is recorded for the
    /// realms' change log before it is visible. Before the fix the next realm advancing past
    /// it waited 2 s for a record that never came (with the write gate held, from `beginWrite`).
    func testACommitThroughTheEngineAPIIsSeenByObserversWithoutAWait() throws {
        let realm = try openRealm(types: [Car.self])
        try realm.write { try realm.create(Car.self, value: ["vin": "Saab"]) }
        var notified = 0
        let token = realm.objects(Car.self).observe { _ in notified += 1 }
        defer { token.invalidate() }
        let engineSequence = try realm.store.write { transaction in
            try transaction.put(table: 60_000, key: [1], value: [2])
        }
        let start = Date()
        realm.refresh()
        try realm.write { try realm.create(Car.self, value: ["vin": "Volvo"]) }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(realm.snapshotSequence, engineSequence)
        // The defect was a 2-second timed wait; a refresh and a small write take milliseconds.
        XCTAssertLessThan(elapsed, 1.0, "advancing past an engine commit waited \(elapsed) s")
        XCTAssertEqual(realm.objects(Car.self).count, 2)
        XCTAssertGreaterThanOrEqual(notified, 2)
    }

    /// Item 5: task A begins a write on thread X and suspends inside it; the other thread is
    /// kept busy, so task B runs on X and begins a write of its own. Before the fix the
    /// gate belonged to thread X, and B got a spurious "already open on this thread"; now B
    /// waits for A's write, which resumes on the other thread and commits.
    func testAnotherTaskOnTheThreadAWriteBeganOnWaitsForItInsteadOfFailing() throws {
        let config = configuration(types: [Car.self])
        let executor = ThreadPoolExecutor(threads: 2)
        defer { executor.shutdown() }
        let shared = Handoff()
        let suspended = DispatchSemaphore(value: 0), parked = DispatchSemaphore(value: 0)
        let unpark = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        AsyncTask(executorPreference: executor) {
            let realm = try Realm(configuration: config)
            try realm.beginWrite()
            try realm.create(Car.self, value: ["vin": "A"])
            shared.set(thread: pthread_self())
            await withCheckedContinuation { continuation in
                shared.set(continuation: continuation)
                suspended.signal()
            }
            try realm.commitWrite()
            finished.signal()
        }
        XCTAssertEqual(suspended.wait(timeout: .now() + 10), .success)
        // Occupy the thread A did not begin on, so the next task can only run on A's.
        AsyncTask(executorPreference: executor) {
            while pthread_equal(pthread_self(), shared.thread) != 0 { await AsyncTask.yield() }
            parked.signal()
            Handoff.block(on: unpark)
        }
        XCTAssertEqual(parked.wait(timeout: .now() + 10), .success)
        AsyncTask(executorPreference: executor) {
            do {
                let realm = try Realm(configuration: config)
                try realm.write { try realm.create(Car.self, value: ["vin": "B"]) }
            } catch {
                shared.set(failure: "\(error)")
            }
            finished.signal()
        }
        Thread.sleep(forTimeInterval: 0.2)  // B is on A's thread now, waiting (or failed)
        unpark.signal()
        shared.resumeA()
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
        XCTAssertNil(shared.failure, "B's write failed while A's was suspended")
        XCTAssertEqual(try Realm(configuration: config).objects(Car.self).count, 2)
    }

    /// Item 5: eight tasks on a two-thread executor await inside `beginWriteAsync()` …
    /// `commitWriteAsync()`: waiting writers are suspended, not blocked, so the holder can
    /// always resume and nothing deadlocks.
    func testEightTasksAwaitingInsideAsyncWritesOnTwoThreads() async throws {
        let config = { () -> Realm.Configuration in
            var config = configuration(types: [Car.self])
            config.storeOptions.durability = .full
            return config
        }()
        let executor = ThreadPoolExecutor(threads: 2)
        defer { executor.shutdown() }
        try await withTaskExecutorPreference(executor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        let realm = try Realm(configuration: config)
                        for round in 0..<10 {
                            try await realm.beginWriteAsync()
                            try realm.create(Car.self, value: ["vin": "t\(task)r\(round)"])
                            try await AsyncTask.sleep(for: .microseconds(100))
                            await AsyncTask.yield()
                            try await realm.commitWriteAsync()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.objects(Car.self).count, 80)
    }

    /// Item 5: a nested synchronous write in the same task is still refused (it would wait
    /// for itself), across an await that moved the task to another thread.
    func testANestedWriteInTheSameTaskIsRefusedAfterAnAwait() async throws {
        let config = configuration(types: [Car.self])
        let executor = ThreadPoolExecutor(threads: 2)
        defer { executor.shutdown() }
        try await withTaskExecutorPreference(executor) {
            let realm = try Realm(configuration: config)
            try realm.beginWrite()
            try await AsyncTask.sleep(for: .milliseconds(1))
            XCTAssertThrowsError(try realm.store.write { _ in }) { error in
                XCTAssertTrue("\(error)".contains("already open"), "\(error)")
            }
            realm.cancelWrite()
        }
    }
}

/// What the tasks of the thread-placement test share.
private final class Handoff: @unchecked Sendable {
    private let lock = NSLock()
    private var _thread: pthread_t = pthread_self()
    private var continuation: CheckedContinuation<Void, Never>?
    private var _failure: String?

    var thread: pthread_t { lock.withLock { _thread } }
    var failure: String? { lock.withLock { _failure } }
    func set(thread: pthread_t) { lock.withLock { _thread = thread } }
    func set(continuation: CheckedContinuation<Void, Never>) { lock.withLock { self.continuation = continuation } }
    func set(failure: String) { lock.withLock { _failure = failure } }
    func resumeA() { lock.withLock { continuation.take() }?.resume() }
    /// Blocks the calling thread (of the executor) until `semaphore` is signalled.
    static func block(on semaphore: DispatchSemaphore) { semaphore.wait() }
}

/// A task executor of a fixed number of threads sharing one queue of jobs: a job runs on
/// whichever thread is free, as on the cooperative pool of a small machine.
final class ThreadPoolExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init(threads: Int) {
        for _ in 0..<threads {
            Thread.detachNewThread { [self] in run() }
        }
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    func shutdown() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }
}
