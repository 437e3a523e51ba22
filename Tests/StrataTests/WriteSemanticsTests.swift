// Write semantics that are easy to get wrong: failed adds leave nothing, nested objects
// follow the add's update policy, concurrent durable writers never lose an update,
// predicates on computed properties never use an index, released tokens stop delivery.

import XCTest
import Dispatch
import StrataTestSupport
@testable import Strata

final class Counter: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var value: Int = 0
}

extension User {
    /// A computed property that reads one stored property.
    var lowerCity: String { city.lowercased() }
}

final class WriteSemanticsTests: RealmTestCase {
    func testAFailedAddLeavesNothingEvenIfTheWriteCommits() throws {
        let realm = try openRealm()
        try realm.write { try realm.add(makeUser("taken")) }
        try realm.write {
            let user = makeUser("new")
            user.car = Car()
            user.car!.vin = "V1"
            let clash = makeUser("taken")
            XCTAssertThrowsError(try realm.add([user, clash])) { error in
                XCTAssertEqual(error as? RealmError, .primaryKeyExists(type: "User", key: "'taken'"))
            }
            XCTAssertThrowsError(try realm.create(AllTypes.self, value: ["key": 1, "int8": 1000]))
        }
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "new"), "the first object of the failed add is not kept")
        XCTAssertNil(realm.object(ofType: Car.self, forPrimaryKey: "V1"), "nor the object it linked to")
        XCTAssertNil(realm.object(ofType: AllTypes.self, forPrimaryKey: 1))
        XCTAssertEqual(realm.objects(User.self).count, 1)
    }

    func testLinkedObjectsInListsFollowTheUpdatePolicy() throws {
        let realm = try openRealm()
        try realm.write { try realm.create(Node.self, value: ["name": "child"]) }
        let parent = Node()
        parent.name = "parent"
        let child = Node()
        child.name = "child"
        parent.children.append(child)
        try realm.write { try realm.add(parent, update: .modified) }
        XCTAssertEqual(realm.object(ofType: Node.self, forPrimaryKey: "parent")?.children.first?.name, "child")
        XCTAssertEqual(realm.objects(Node.self).count, 2)
    }

    func testConcurrentDurableWritersNeverLoseAnUpdate() throws {
        var config = configuration(types: [Counter.self])
        config.storeOptions.durability = .full
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.create(Counter.self, value: ["id": 0]) }
        }
        let threads = 4, increments = 40
        let shared = config
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            let realm = try! Realm(configuration: shared)
            for _ in 0 ..< increments {
                try! realm.write { realm.object(ofType: Counter.self, forPrimaryKey: 0)!.value += 1 }
            }
        }
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.object(ofType: Counter.self, forPrimaryKey: 0)?.value, threads * increments)
    }

    func testComputedPropertiesInPredicatesAreNotMistakenForTheirStoredProperty() throws {
        let realm = try openRealm()
        try realm.write { try realm.add(makeUser("1", city: "Raleigh")) }
        let users = realm.objects(User.self)
        XCTAssertEqual(users.filter(#Predicate { $0.lowerCity == "raleigh" }).count, 1)
        XCTAssertEqual(users.filter(#Predicate { $0.city == "Raleigh" }).count, 1)
        XCTAssertEqual(ObjectType.info(for: User.self).propertyIndex(for: \User.city), 10)
        XCTAssertNil(ObjectType.info(for: User.self).propertyIndex(for: \User.lowerCity))
    }

    func testReleasingTheTokenStopsNotifications() throws {
        let realm = try openRealm()
        var calls = 0
        var token: NotificationToken? = realm.objects(User.self).observe { change in
            if case .update = change { calls += 1 }
        }
        try realm.write { try realm.add(makeUser("1")) }
        XCTAssertEqual(calls, 1)
        XCTAssertNotNil(token)
        token = nil
        try realm.write { try realm.add(makeUser("2")) }
        XCTAssertEqual(calls, 1)
    }

    func testSecondaryIndexGrowsIntoBucketsAndShrinksBack() throws {
        var realm = try openRealm()
        var model: [Int64: Int] = [:]    // hidden id → level
        var generator = SplitMix64(seed: 3)
        func check(_ step: String) {
            for level in 0 ..< 3 {
                let indexed = realm.objects(LogEntry.self).filter(#Predicate { $0.level == level })
                XCTAssertEqual(indexed.count, model.values.filter { $0 == level }.count, "level \(level) after \(step)")
                XCTAssertTrue(indexed.allSatisfy { $0.level == level })
            }
        }
        // 700 objects of level 1 (split), 5 of level 2 (one list), in several writes.
        for batch in 0 ..< 7 {
            try realm.write {
                for i in 0 ..< 100 {
                    let entry = LogEntry()
                    entry.message = "\(batch)-\(i)"
                    entry.level = 1
                    try realm.add(entry)
                    if case .int(let id) = entry.primaryKeyValue { model[id] = 1 }
                }
            }
        }
        try realm.write {
            for i in 0 ..< 5 { try realm.create(LogEntry.self, value: ["message": "two \(i)", "level": 2]) }
        }
        model = Dictionary(uniqueKeysWithValues: realm.objects(LogEntry.self).map { entry -> (Int64, Int) in
            guard case .int(let id) = entry.primaryKeyValue else { return (0, 0) }
            return (id, entry.level)
        })
        check("growing")
        // Move most of them to level 0, delete others: level 1 shrinks to nothing.
        while model.values.contains(1) {
            try realm.write {
                for entry in Array(realm.objects(LogEntry.self).filter(#Predicate { $0.level == 1 })).prefix(Int.random(in: 50 ... 150, using: &generator)) {
                    guard case .int(let id) = entry.primaryKeyValue else { continue }
                    if Bool.random(using: &generator) {
                        entry.level = 0
                        model[id] = 0
                    } else {
                        try realm.delete(entry)
                        model[id] = nil
                    }
                }
            }
            check("shrinking")
        }
        realm.invalidate()
        realm = try openRealm()
        check("reopening")
        XCTAssertEqual(realm.objects(LogEntry.self).filter(#Predicate { $0.level == 1 }).count, 0)
    }

    func testReferencesResolveOnlyInTheirOwnStore() throws {
        let realm = try openRealm()
        try realm.write { try realm.add(makeUser("1")) }
        let reference = ThreadSafeReference(to: realm.object(ofType: User.self, forPrimaryKey: "1")!)
        var other = Realm.Configuration(inMemoryIdentifier: "other-\(UUID().uuidString)")
        other.objectTypes = allModelTypes
        let elsewhere = try Realm(configuration: other)
        try elsewhere.write { try elsewhere.add(makeUser("1")) }
        XCTAssertNil(elsewhere.resolve(reference))
        XCTAssertNotNil(realm.resolve(reference))
    }
}
