// Swift concurrency: task-confined realms that stay valid across awaits, actor-isolated
// realms, asyncWrite (durable, cancellable, never blocking the cooperative pool), frozen
// values read on other threads, and wrong-task use still refused.

import XCTest
import Foundation
@testable import Strata

final class Item: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var group: String = ""
    @Persisted var value: Int = 0
    @Persisted var owner: Car?
    @Persisted var tags: List<String>
}

/// (`Task` alone names the results-controller tests' model here.)
private typealias AsyncTask = _Concurrency.Task

/// Carries a non-Sendable value to another task on purpose (to test refusal).
private struct Smuggled<Value>: @unchecked Sendable { let value: Value }

/// The `RealmError` a write to `realm` throws in a detached task (nil when none).
private func writeErrorFromAnotherTask(_ realm: Smuggled<Realm>) async -> RealmError? {
    await AsyncTask.detached { () -> RealmError? in
        do {
            try realm.value.write {}
            return nil
        } catch let error as RealmError {
            return error
        } catch {
            return nil
        }
    }.value
}

final class ConcurrencyTests: RealmTestCase {
    private func itemConfiguration(durability: Durability = .none) -> Realm.Configuration {
        var config = configuration(types: [Item.self, Car.self])
        config.storeOptions.durability = durability
        return config
    }

    /// The issue's program: 64 handlers in a task group, each opening a realm, writing,
    /// sleeping (resuming on any thread) and reading again. It trapped before task confinement.
    func testSixtyFourHandlersInATaskGroupKeepTheirRealmsAcrossAwaits() async throws {
        let config = itemConfiguration()
        @Sendable func handle(_ i: Int) async throws -> Int {
            let realm = try Realm(configuration: config)
            try realm.write {
                let item = Item()
                item.id = i
                item.group = "g\(i % 4)"
                try realm.add(item, update: .modified)
            }
            try await AsyncTask.sleep(for: .milliseconds(2))
            XCTAssertEqual(realm.object(ofType: Item.self, forPrimaryKey: i)?.id, i)
            try await AsyncTask.sleep(for: .milliseconds(1))
            realm.refresh()
            return realm.objects(Item.self).count
        }
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<64 { group.addTask { try await handle(i) } }
            var counts: [Int] = []
            for try await count in group { counts.append(count) }
            return counts
        }
        XCTAssertEqual(counts.count, 64)
        // Each handler saw at least its own object, and none saw more than exist.
        XCTAssertTrue(counts.allSatisfy { (1...64).contains($0) })
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.objects(Item.self).count, 64)
    }

    func testTaskConfinedObjectsResultsAndListsSurviveAwaits() async throws {
        let config = itemConfiguration()
        let realm = try Realm(configuration: config)
        try realm.write {
            let item = Item()
            item.id = 1
            item.tags.append(contentsOf: ["a", "b"])
            try realm.add(item)
        }
        let item = try XCTUnwrap(realm.object(ofType: Item.self, forPrimaryKey: 1))
        let results = realm.objects(Item.self)
        for _ in 0..<20 {
            try await AsyncTask.sleep(for: .milliseconds(1))
            await AsyncTask.yield()
            XCTAssertEqual(item.tags.count, 2)
            XCTAssertEqual(results.count, 1)
            XCTAssertEqual(results[0].id, 1)
        }
    }

    /// A realm handed to another task (the compiler would refuse; smuggled here) is refused
    /// by throwing APIs, as before for threads.
    func testWrongTaskStillThrowsIncorrectThread() async throws {
        let config = itemConfiguration()
        let realm = Smuggled(value: try Realm(configuration: config))
        let error = await writeErrorFromAnotherTask(realm)
        XCTAssertEqual(error, .incorrectThread)
        // Still usable by its own task.
        try realm.value.write {}
    }

    /// A realm opened in a task outside any actor is confined to that task: another task
    /// is refused even on the same pool, the owner is not, across its suspension points.
    func testATaskConfinedRealmRefusesOtherTasks() async throws {
        let config = itemConfiguration()
        let other = try await AsyncTask.detached { () -> RealmError? in
            let realm = try Realm(configuration: config)
            try realm.write {}
            let other = await writeErrorFromAnotherTask(Smuggled(value: realm))
            await AsyncTask.yield()
            try realm.write {}   // (the owner, after a suspension: throws if refused)
            return other
        }.value
        XCTAssertEqual(other, .incorrectThread)
    }


    /// A realm opened on a thread (outside any task) stays confined to it.
    func testThreadConfinedRealmIsRefusedInATask() async throws {
        let config = itemConfiguration()
        let realm = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Smuggled<Realm>, any Error>) in
            Thread.detachNewThread {
                do {
                    continuation.resume(returning: Smuggled(value: try Realm(configuration: config)))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        XCTAssertThrowsError(try realm.value.write {}) { XCTAssertEqual($0 as? RealmError, .incorrectThread) }
    }

    // MARK: asyncWrite

    /// 100 tasks commit at `.full`: every acknowledged write is in the store after reopen.
    func testAsyncWriteFromAHundredTasksAtFullDurabilityLosesNothing() async throws {
        let config = itemConfiguration(durability: .full)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<100 {
                group.addTask {
                    let realm = try Realm(configuration: config)
                    try await realm.asyncWrite {
                        let item = Item()
                        item.id = i
                        item.value = i * 10
                        try realm.add(item)
                    }
                    // Durable and visible once asyncWrite returns.
                    XCTAssertEqual(realm.object(ofType: Item.self, forPrimaryKey: i)?.value, i * 10)
                }
            }
            try await group.waitForAll()
        }
        // No realm is open now: the store closed; reopen it.
        let reopened = try Realm(configuration: config)
        XCTAssertEqual(reopened.objects(Item.self).count, 100)
        for i in 0..<100 { XCTAssertEqual(reopened.object(ofType: Item.self, forPrimaryKey: i)?.value, i * 10) }
    }

    /// Synchronous writes in tasks and asyncWrite at once, more writers than pool threads:
    /// a waiting task is never handed the gate while it cannot run, so nothing deadlocks,
    /// and every increment counts.
    func testSyncAndAsyncWritersMixedOnTheCooperativePool() async throws {
        let config = itemConfiguration(durability: .full)
        let seed = try Realm(configuration: config)
        try seed.write { try seed.add({ let item = Item(); item.id = 0; return item }()) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<48 {
                group.addTask {
                    let realm = try Realm(configuration: config)
                    for _ in 0..<5 {
                        if i % 2 == 0 {
                            try await realm.asyncWrite { realm.object(ofType: Item.self, forPrimaryKey: 0)!.value += 1 }
                        } else {
                            try realm.write { realm.object(ofType: Item.self, forPrimaryKey: 0)!.value += 1 }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        seed.refresh()
        XCTAssertEqual(seed.object(ofType: Item.self, forPrimaryKey: 0)?.value, 240)
    }

    func testAsyncWriteReturnsTheBlockResultAndRollsBackWhenItThrows() async throws {
        struct Refused: Error {}
        let realm = try Realm(configuration: itemConfiguration())
        let id = try await realm.asyncWrite { () -> Int in
            let item = Item()
            item.id = 7
            try realm.add(item)
            return item.id
        }
        XCTAssertEqual(id, 7)
        do {
            try await realm.asyncWrite {
                realm.object(ofType: Item.self, forPrimaryKey: 7)!.value = 99
                throw Refused()
            }
            XCTFail("expected the block's error")
        } catch is Refused {}
        XCTAssertFalse(realm.isInWriteTransaction)
        XCTAssertEqual(realm.object(ofType: Item.self, forPrimaryKey: 7)?.value, 0)
    }

    /// A task cancelled while it waits for the write gate gives up with CancellationError
    /// and writes nothing; one cancelled by the time its block returns rolls back.
    func testCancellationBeforeTheCommitRollsBack() async throws {
        let config = itemConfiguration()
        let holder = try Realm(configuration: config)
        try holder.beginWrite()     // holds the gate: the task below must wait for it
        let started = AsyncStream<Void>.makeStream()
        let waiting = AsyncTask {
            let realm = try Realm(configuration: config)
            started.continuation.yield()
            try await realm.asyncWrite {
                let item = Item()
                item.id = 1
                try realm.add(item)
            }
        }
        var iterator = started.stream.makeAsyncIterator()
        await iterator.next()
        try await AsyncTask.sleep(for: .milliseconds(20))
        waiting.cancel()
        do {
            try await waiting.value
            XCTFail("expected CancellationError")
        } catch is CancellationError {}
        holder.cancelWrite()

        // Cancelled during the block: rolled back, nothing committed.
        let cancelledInBlock = AsyncTask {
            let realm = try Realm(configuration: config)
            try await realm.asyncWrite {
                let item = Item()
                item.id = 2
                try realm.add(item)
                withUnsafeCurrentTask { $0?.cancel() }
            }
        }
        do {
            try await cancelledInBlock.value
            XCTFail("expected CancellationError")
        } catch is CancellationError {}

        holder.refresh()
        XCTAssertEqual(holder.objects(Item.self).count, 0)
        // The gate was given back each time.
        try holder.write { try holder.add({ let item = Item(); item.id = 3; return item }()) }
        XCTAssertEqual(holder.objects(Item.self).count, 1)
    }

    func testAsyncWriteOnAFrozenOrReadOnlyRealmThrows() async throws {
        let realm = try Realm(configuration: itemConfiguration())
        let frozen = realm.freeze()
        do {
            try await frozen.asyncWrite {}
            XCTFail("expected frozenRealm")
        } catch let error as RealmError {
            XCTAssertEqual(error, .frozenRealm)
        }
        XCTAssertThrowsError(try frozen.write {}) { XCTAssertEqual($0 as? RealmError, .frozenRealm) }
    }

    // MARK: Actors

    actor Importer {
        let config: Realm.Configuration
        init(config: Realm.Configuration) { self.config = config }

        func run(from first: Int, count: Int) async throws -> Int {
            let realm = try await Realm(configuration: config, actor: self)
            for i in first..<(first + count) {
                try await realm.asyncWrite {
                    let item = Item()
                    item.id = i
                    item.group = "imported"
                    try realm.add(item, update: .modified)
                }
                await AsyncTask.yield()
            }
            return realm.objects(Item.self).filter(#Predicate { $0.group == "imported" }).count
        }

        /// A realm opened with the plain initializer inside an actor belongs to the actor.
        func plainOpen() async throws -> Int {
            let realm = try Realm(configuration: config)
            try await AsyncTask.sleep(for: .milliseconds(1))
            return realm.objects(Item.self).count
        }
    }

    @MainActor
    private static func readOnMainActor(_ config: Realm.Configuration, until total: Int) async throws -> [Int] {
        let realm = try await Realm(configuration: config, actor: MainActor.shared)
        var seen: [Int] = []
        for _ in 0..<2000 {
            realm.refresh()
            let count = realm.objects(Item.self).count
            if seen.last != count { seen.append(count) }
            if count >= total { break }
            try await AsyncTask.sleep(for: .milliseconds(1))
        }
        return seen
    }

    func testActorImporterAndMainActorReaderTogether() async throws {
        let config = itemConfiguration()
        let importer = Importer(config: config)
        async let imported = importer.run(from: 0, count: 200)
        async let seen = Self.readOnMainActor(config, until: 200)
        let (count, counts) = try await (imported, seen)
        XCTAssertEqual(count, 200)
        XCTAssertEqual(counts.last, 200)
        XCTAssertEqual(counts, counts.sorted())
        let plain = try await importer.plainOpen()
        XCTAssertEqual(plain, 200)
    }

    actor Watcher {
        var realm: Realm?
        let observed = Locked<[Int]>([])
        var token: NotificationToken?

        func start(_ config: Realm.Configuration) async throws {
            let realm = try await Realm(configuration: config, actor: self)
            self.realm = realm
            let observed = self.observed
            token = realm.objects(Item.self).observe { [unowned self] change in
                // Delivered on the actor (this traps if not).
                self.preconditionIsolated()
                if case .update(let results, _, _, _) = change { observed.withLock { $0.append(results.count) } }
            }
        }

        func counts() -> [Int] { observed.withLock { $0 } }
    }

    /// A realm opened with `Realm(configuration:actor:)` advances by itself when others
    /// commit and delivers notifications on the actor.
    func testActorRealmReceivesOtherWritersNotificationsOnTheActor() async throws {
        let config = itemConfiguration()
        let watcher = Watcher()
        try await watcher.start(config)
        let writer = try Realm(configuration: config)
        for i in 0..<3 {
            try await writer.asyncWrite { try writer.add({ let item = Item(); item.id = i; return item }()) }
        }
        var counts: [Int] = []
        for _ in 0..<500 {
            counts = await watcher.counts()
            if counts.last == 3 { break }
            try await AsyncTask.sleep(for: .milliseconds(2))
        }
        XCTAssertEqual(counts.last, 3)
    }

    /// An actor-confined realm used from outside the actor is refused.
    func testActorRealmUsedOutsideTheActorThrows() async throws {
        actor Holder {
            var realm: Realm?
            func open(_ config: Realm.Configuration) async throws { realm = try await Realm(configuration: config, actor: self) }
            func smuggle() -> Smuggled<Realm> { Smuggled(value: realm!) }
        }
        let holder = Holder()
        try await holder.open(itemConfiguration())
        let realm = await holder.smuggle()
        XCTAssertThrowsError(try realm.value.write {}) { XCTAssertEqual($0 as? RealmError, .incorrectThread) }
        XCTAssertFalse(realm.value.confinement.isCurrent)
    }

    // MARK: Frozen values

    func testFrozenValuesAreReadOnOtherThreadsWhileWritesGoOn() async throws {
        let config = itemConfiguration()
        let realm = try Realm(configuration: config)
        try realm.write {
            let car = Car()
            car.vin = "V1"
            car.model = "Model T"
            for i in 0..<50 {
                let item = Item()
                item.id = i
                item.value = i
                item.owner = car
                item.tags.append(contentsOf: ["x\(i)"])
                try realm.add(item, update: .modified)
            }
        }
        let frozenItem: Frozen<Item> = try XCTUnwrap(realm.object(ofType: Item.self, forPrimaryKey: 3)).frozen()
        let page: FrozenResults<Item> = realm.objects(Item.self).sorted(by: [SortDescriptor(\Item.value, order: .reverse)]).frozen()
        XCTAssertEqual(page.count, 50)

        let writer = AsyncTask {
            let realm = try Realm(configuration: config)
            for round in 0..<30 {
                try await realm.asyncWrite {
                    for item in realm.objects(Item.self) { item.value += 1000 }
                    let extra = Item()
                    extra.id = 1000 + round
                    try realm.add(extra)
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<200 {
                        XCTAssertEqual(frozenItem.value, 3)
                        XCTAssertEqual(frozenItem.owner?.model, "Model T")
                        XCTAssertEqual(frozenItem.tags, ["x3"])
                        XCTAssertEqual(page.count, 50)
                        XCTAssertEqual(page[0].value, 49)
                        XCTAssertEqual(page.map(\.id).prefix(3), [49, 48, 47])
                    }
                }
            }
            try await group.waitForAll()
        }
        try await writer.value
        realm.refresh()
        XCTAssertEqual(realm.objects(Item.self).count, 80)
        // Thawed: the live object, with the writes since.
        let live = try XCTUnwrap(realm.thaw(frozenItem))
        XCTAssertEqual(live.value, 3 + 30_000)
        XCTAssertEqual(realm.thaw(page).count, 80)
        XCTAssertTrue(frozenItem.read { $0.isFrozen })
        XCTAssertEqual(frozenItem.value, 3)
    }

    func testRealmFreezeNames() throws {
        let realm = try Realm(configuration: itemConfiguration())
        try realm.write { try realm.add({ let item = Item(); item.id = 1; item.value = 5; return item }()) }
        let item = try XCTUnwrap(realm.object(ofType: Item.self, forPrimaryKey: 1))
        XCTAssertFalse(item.isFrozen)
        let frozen = item.freeze()
        XCTAssertTrue(frozen.isFrozen)
        XCTAssertTrue(frozen.realm?.isFrozen ?? false)
        let frozenResults = realm.objects(Item.self).freeze()
        XCTAssertTrue(frozenResults.isFrozen)
        try realm.write { item.value = 6 }
        XCTAssertEqual(frozen.value, 5)
        XCTAssertEqual(frozenResults[0].value, 5)
        XCTAssertEqual(frozen.thaw()?.value, 6)
        XCTAssertEqual(realm.thaw(frozen)?.value, 6)
        // An unmanaged object is copied: later edits do not show.
        let unmanaged = Item()
        unmanaged.id = 9
        let copy = unmanaged.frozen()
        unmanaged.value = 42
        XCTAssertEqual(copy.value, 0)
        XCTAssertNil(copy.snapshotSequence)
    }

    // MARK: object.changes

    func testObjectChangesIsAnAsyncSequenceOfSendableChanges() async throws {
        let config = itemConfiguration()
        let realm = try Realm(configuration: config)
        try realm.write { try realm.add({ let item = Item(); item.id = 1; return item }()) }
        let item = try XCTUnwrap(realm.object(ofType: Item.self, forPrimaryKey: 1))
        // Commits may be coalesced (as Realm's are): read each change before the next write.
        var changes = item.changes.makeAsyncIterator()
        func describe(_ change: ObjectChangeSet<Item>?) -> String {
            switch change {
            case .change(let object, let properties)?: return "\(object.value):\(properties.joined(separator: ","))"
            case .deleted?: return "deleted"
            case .error(let error)?: return "error \(error)"
            case nil: return "end"
            }
        }
        try await realm.asyncWrite { item.value = 1 }
        let next1 = describe(await changes.next())
        XCTAssertEqual(next1, "1:value")
        try await realm.asyncWrite { item.group = "b"; item.value = 2 }
        let next2 = describe(await changes.next())
        XCTAssertEqual(next2, "2:group,value")
        try await realm.asyncWrite { try realm.delete(item) }
        let next3 = describe(await changes.next())
        XCTAssertEqual(next3, "deleted")
        let next4 = describe(await changes.next())
        XCTAssertEqual(next4, "end")
    }
}
