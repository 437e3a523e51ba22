// Notifications (docs/API.md §2): realm, collection and object observers, the `changes` async
// sequence, and delivery of other threads' commits to queue-confined realms.

import XCTest
import Dispatch
import StrataTestSupport
@testable import Strata

final class NotificationTests: RealmTestCase {
    typealias Update = (deletions: [Int], insertions: [Int], modifications: [Int])

    private func record(_ results: Results<User>) -> (NotificationToken, () -> [Update], () -> Int) {
        final class Box { var updates: [Update] = []; var initial = 0 }
        let box = Box()
        let token = results.observe { change in
            switch change {
            case .initial: box.initial += 1
            case .update(_, let deletions, let insertions, let modifications): box.updates.append((deletions, insertions, modifications))
            case .error(let error): XCTFail("\(error)")
            }
        }
        return (token, { box.updates }, { box.initial })
    }

    func testRealmObserverSeesOwnAndOtherCommits() throws {
        let realm = try openRealm()
        // (On the main thread a realm advances from the main queue while `wait` runs it:
        // this test holds the snapshot to see the commit arrive at `refresh()`.)
        realm.autorefresh = false
        var count = 0
        let token = realm.observe { notification, _ in
            if case .didChange = notification { count += 1 }
        }
        try realm.write { try realm.add(makeUser("1")) }
        XCTAssertEqual(count, 1)
        // A commit from another thread is seen at refresh.
        let config = configuration()
        let done = expectation(description: "other thread")
        DispatchQueue.global().async {
            let other = try! Realm(configuration: config)
            try! other.write { try other.add(newUser("2")) }
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(realm.objects(User.self).count, 1, "a thread-confined realm reads its snapshot until it refreshes")
        XCTAssertTrue(realm.refresh())
        XCTAssertEqual(realm.objects(User.self).count, 2)
        XCTAssertEqual(count, 2)
        token.invalidate()
        try realm.write { try realm.add(makeUser("3")) }
        XCTAssertEqual(count, 2)
    }

    func testCollectionChangesForInsertDeleteModifyAndMove() throws {
        let realm = try openRealm()
        try realm.write {
            for i in 0 ..< 10 { try realm.add(makeUser(String(format: "%02d", i), rank: i * 10)) }
        }
        let results = realm.objects(User.self).filter(#Predicate { $0.rank >= 20 }).sorted(by: [SortDescriptor(\User.rank)])
        let (token, updates, initial) = record(results)
        XCTAssertEqual(initial(), 1)
        // Modify in place: rank 50 → 55 keeps its position.
        try realm.write { realm.object(ofType: User.self, forPrimaryKey: "05")!.rank = 55 }
        XCTAssertEqual(updates().last?.modifications, [3])
        XCTAssertEqual(updates().last?.insertions, [])
        // A property the sort does not read: a modification.
        try realm.write { realm.object(ofType: User.self, forPrimaryKey: "05")!.username = "renamed" }
        XCTAssertEqual(updates().last?.modifications, [3])
        // Move: rank 90 → 25 goes from the end to position 1.
        try realm.write { realm.object(ofType: User.self, forPrimaryKey: "09")!.rank = 25 }
        XCTAssertEqual(updates().last?.deletions, [7])
        XCTAssertEqual(updates().last?.insertions, [1])
        // Leave and enter the filter, insert, delete, all in one write.
        try realm.write {
            realm.object(ofType: User.self, forPrimaryKey: "02")!.rank = 0      // leaves (was position 0)
            realm.object(ofType: User.self, forPrimaryKey: "01")!.rank = 100    // enters at the end
            try realm.add(makeUser("10", rank: 45))                               // new
            try realm.delete(realm.object(ofType: User.self, forPrimaryKey: "08")!) // was position 6
        }
        let last = try XCTUnwrap(updates().last)
        XCTAssertEqual(last.deletions, [0, 7])
        XCTAssertEqual(results.map(\.objId), ["09", "03", "04", "10", "05", "06", "07", "01"])
        XCTAssertEqual(last.insertions, [3, 7])
        // Unrelated commits deliver nothing.
        let before = updates().count
        try realm.write { try realm.add(makeUser("11", rank: 1)) }
        XCTAssertEqual(updates().count, before)
        token.invalidate()
    }

    func testReplayingChangesRebuildsTheResults() throws {
        // Apply each update to a copy of the previous keys; it must equal the new results.
        let realm = try openRealm()
        var generator = SplitMix64(seed: 7)
        try realm.write {
            for i in 0 ..< 60 { try realm.add(makeUser("\(i)", rank: Int.random(in: 0 ..< 30, using: &generator))) }
        }
        let results = realm.objects(User.self).filter(#Predicate { $0.rank % 3 != 0 })
            .sorted(by: [SortDescriptor(\User.rank, order: .reverse)])
        var shadow = results.map(\.objId)
        let token = results.observe { change in
            guard case .update(let now, let deletions, let insertions, _) = change else { return }
            for index in deletions.reversed() { shadow.remove(at: index) }
            let ids = now.map(\.objId)
            for index in insertions { shadow.insert(ids[index], at: index) }
            XCTAssertEqual(shadow, ids)
        }
        for _ in 0 ..< 150 {
            try realm.write {
                for _ in 0 ..< Int.random(in: 1 ... 5, using: &generator) {
                    let id = "\(Int.random(in: 0 ..< 80, using: &generator))"
                    switch Int.random(in: 0 ..< 3, using: &generator) {
                    case 0: try realm.add(makeUser(id, rank: Int.random(in: 0 ..< 30, using: &generator)), update: .modified)
                    case 1: if let user = realm.object(ofType: User.self, forPrimaryKey: id) { try realm.delete(user) }
                    default: realm.object(ofType: User.self, forPrimaryKey: id)?.rank = Int.random(in: 0 ..< 30, using: &generator)
                    }
                }
            }
        }
        XCTAssertEqual(shadow, results.map(\.objId))
        token.invalidate()
    }

    func testObjectObserverReportsPropertyChangesAndDeletion() throws {
        let realm = try openRealm()
        let user = makeUser("1", rank: 1)
        try realm.write { try realm.add(user) }
        var changes: [[String]] = []
        var values: [(Any?, Any?)] = []
        var deleted = false
        let token = user.observe { (change: ObjectChange<User>) in
            switch change {
            case .change(_, let properties):
                changes.append(properties.map(\.name))
                values.append(contentsOf: properties.map { ($0.oldValue, $0.newValue) })
            case .deleted: deleted = true
            case .error(let error): XCTFail("\(error)")
            }
        }
        try realm.write { user.rank = 2; user.city = "Durham" }
        XCTAssertEqual(changes, [["rank", "city"]])
        XCTAssertEqual(values.first?.0 as? Int, 1)
        XCTAssertEqual(values.first?.1 as? Int, 2)
        try realm.write { user.rank = 2 }   // same value: not a change
        XCTAssertEqual(changes.count, 1)
        try realm.write { try realm.add(makeUser("1", rank: 2, city: "Durham"), update: .all) }
        XCTAssertEqual(changes.count, 2, ".all reports every property")
        try realm.write { try realm.delete(user) }
        XCTAssertTrue(deleted)
        token.invalidate()
    }

    func testQueueObserverSeesOtherThreadsCommits() throws {
        let config = configuration()
        let realm = try openRealm()
        let queue = DispatchQueue(label: "observer")
        let received = expectation(description: "update")
        let initial = expectation(description: "initial")
        let token = realm.objects(User.self).observe(on: queue) { change in
            switch change {
            case .initial(let results): XCTAssertEqual(results.count, 0); initial.fulfill()
            case .update(let results, _, let insertions, _):
                if results.count == 1 { XCTAssertEqual(insertions, [0]); received.fulfill() }
            case .error(let error): XCTFail("\(error)")
            }
        }
        wait(for: [initial], timeout: 10)
        DispatchQueue.global().async {
            let writer = try! Realm(configuration: config)
            try! writer.write { try writer.add(newUser("1")) }
        }
        wait(for: [received], timeout: 10)
        token.invalidate()
    }

    func testChangesAsyncSequence() async throws {
        let config = configuration()
        let stream = try await MainActorFree.changes(config)
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        XCTAssertEqual(first?.isInitial, true)
        let writer = try Realm(configuration: config)
        try writer.write { try writer.add(makeUser("1")) }
        let second = await iterator.next()
        XCTAssertEqual(second, CollectionChangeSet(isInitial: false, count: 1, deletions: [], insertions: [0], modifications: []))
    }

    func testWithoutNotifyingSkipsTheGivenObserver() throws {
        let realm = try openRealm()
        var calls = 0
        let token = realm.objects(User.self).observe { change in
            if case .update = change { calls += 1 }
        }
        try realm.write(withoutNotifying: [token]) { try realm.add(makeUser("1")) }
        XCTAssertEqual(calls, 0)
        try realm.write { try realm.add(makeUser("2")) }
        XCTAssertEqual(calls, 1)
        token.invalidate()
    }
}

/// Opens a realm off the test's executor and returns its change stream.
enum MainActorFree {
    static func changes(_ config: Realm.Configuration) async throws -> AsyncStream<CollectionChangeSet> {
        let realm = try Realm(configuration: config)
        return realm.objects(User.self).changes
    }
}
