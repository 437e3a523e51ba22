// Thread confinement, primary-key handoff, ThreadSafeReference, and unmanaged copies (docs/API.md §2).

import XCTest
import Dispatch
@testable import Strata

final class HandoffAndCopyTests: RealmTestCase {
    func testWrongThreadThrowsFromThrowingAPIs() throws {
        let realm = try openRealm()
        let box = UncheckedSendable(value: realm)
        let done = expectation(description: "other thread")
        DispatchQueue.global().async {
            Self.useFromOtherThread(box.value)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
    }

    private static func useFromOtherThread(_ realm: Realm) {
        do {
            try realm.write {}
            XCTFail("a write from another thread must throw")
        } catch {
            XCTAssertEqual(error as? RealmError, .incorrectThread)
            XCTAssertEqual("\(error)", "Realm accessed from incorrect thread")
        }
        XCTAssertThrowsError(try realm.beginWrite()) { error in XCTAssertEqual(error as? RealmError, .incorrectThread) }
    }

    func testQueueConfinedRealmMustBeOpenedOnItsQueue() throws {
        let queue = DispatchQueue(label: "confined")
        XCTAssertThrowsError(try Realm(configuration: configuration(), queue: queue)) {
            XCTAssertEqual($0 as? RealmError, .incorrectThread)
        }
        let config = configuration()
        let opened = queue.sync { () -> Bool in
            guard let realm = try? Realm(configuration: config, queue: queue) else { return false }
            return (try? realm.write { try realm.add(newUser("q")) }) != nil
        }
        XCTAssertTrue(opened)
    }

    func testWriteOutsideTransactionThrows() throws {
        let realm = try openRealm()
        XCTAssertThrowsError(try realm.add(makeUser("1"))) { XCTAssertEqual($0 as? RealmError, .notInWriteTransaction) }
        XCTAssertThrowsError(try realm.commitWrite()) { XCTAssertEqual($0 as? RealmError, .notInWriteTransaction) }
        try realm.beginWrite()
        XCTAssertThrowsError(try realm.beginWrite()) { XCTAssertEqual($0 as? RealmError, .alreadyInWriteTransaction) }
        realm.cancelWrite()
    }

    func testPrimaryKeyHandoffAndThreadSafeReference() throws {
        let realm = try openRealm()
        let user = makeUser("1", rank: 4)
        try realm.write { try realm.add(user); try realm.add(makeUser("2", rank: 9)) }
        let key = user.primaryKeyValue
        XCTAssertEqual(key, .string("1"))
        let encoded = try JSONEncoder().encode(key)
        XCTAssertEqual(try JSONDecoder().decode(PrimaryKeyValue.self, from: encoded), key)
        realm.autorefresh = false  // (held at its snapshot while `wait` runs the main queue)
        let objectRef = ThreadSafeReference(to: user)
        let resultsRef = ThreadSafeReference(to: realm.objects(User.self).filter(#Predicate { $0.rank > 5 }))
        let config = configuration()
        let done = expectation(description: "handoff")
        DispatchQueue.global().async {
            let other = try! Realm(configuration: config)
            XCTAssertEqual(other.object(ofType: User.self, forPrimaryKeyValue: key)?.rank, 4)
            XCTAssertEqual(other.resolve(objectRef)?.objId, "1")
            XCTAssertEqual(other.resolve(resultsRef)?.map(\.objId), ["2"])
            try! other.write { try other.delete(other.resolve(objectRef)!) }
            XCTAssertNil(other.resolve(objectRef), "nil once deleted")
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertFalse(user.isInvalidated, "still readable in the old snapshot")
        realm.refresh()
        XCTAssertTrue(user.isInvalidated)
    }

    func testShallowCopyDeepCopyAndMerge() throws {
        let realm = try openRealm()
        let user = makeUser("1", rank: 3)
        user.firstName = "Bruce"
        user.tags.append("a")
        user.car = Car()
        user.car!.vin = "V"
        let phone = Phone()
        phone.number = "1"
        user.phones.append(phone)
        try realm.write { try realm.add(user) }

        let copy = user.shallowCopy()
        XCTAssertNil(copy.realm)
        XCTAssertEqual(copy.objId, "", "a shallow copy leaves the primary key out (Realm+JSON's seed)")
        XCTAssertEqual(copy.firstName, "Bruce")
        XCTAssertEqual(Array(copy.tags), ["a"])
        XCTAssertNil(copy.car, "a shallow copy leaves links out")
        XCTAssertEqual(copy.phones.count, 0)
        copy.firstName = "Wayne"     // free to edit outside a write
        copy.rank = 10

        let deep = user.deepCopy()
        XCTAssertEqual(deep.car?.vin, "V")
        XCTAssertNil(deep.car?.realm)
        XCTAssertEqual(deep.phones.first?.number, "1")

        try realm.write { user.mergeProperties(from: copy) }
        XCTAssertEqual(user.firstName, "Wayne")
        XCTAssertEqual(user.rank, 10)
        XCTAssertEqual(user.car?.vin, "V", "merge leaves links alone")
    }

    func testDeepCopyPreservesCycles() throws {
        let realm = try openRealm()
        let a = Node(), b = Node()
        a.name = "a"; b.name = "b"
        a.next = b; b.next = a
        a.children.append(b)
        try realm.write { try realm.add(a) }
        let managed = try XCTUnwrap(realm.object(ofType: Node.self, forPrimaryKey: "a"))
        XCTAssertEqual(managed.next?.next?.name, "a")
        let copy = managed.deepCopy()
        XCTAssertTrue(copy.next?.next === copy, "the cycle closes on the copy itself")
        XCTAssertTrue(copy.children.first === copy.next)
    }

    func testManyThreadsEachWithItsOwnRealm() throws {
        let config = configuration()
        let threads = 4, perThread = 50
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let realm = try! Realm(configuration: config)
            for i in 0 ..< perThread {
                try! realm.write {
                    try realm.add(newUser("t\(thread)-\(i)", rank: i))
                }
                if i % 10 == 0 {
                    let count = realm.objects(User.self).count
                    XCTAssertGreaterThanOrEqual(count, i + 1)
                }
            }
        }
        let realm = try openRealm()
        XCTAssertEqual(realm.objects(User.self).count, threads * perThread)
    }

    func testInMemoryRealmLeavesNoFilesAndIsShared() throws {
        var config = Realm.Configuration(inMemoryIdentifier: "test-\(UUID().uuidString)")
        config.objectTypes = allModelTypes
        let realm = try Realm(configuration: config)
        XCTAssertNotNil(realm.inMemoryIdentifier)
        try realm.write { try realm.add(makeUser("1")) }
        let second = try Realm(configuration: config)
        XCTAssertEqual(second.objects(User.self).count, 1)
        let directory = realm.store.directory
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.path))
        realm.invalidate()
        second.invalidate()
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path), "gone when the last realm closes")
    }

    func testReadOnlyRealm() throws {
        do {
            let realm = try openRealm()
            try realm.write { try realm.add(makeUser("1")) }
        }
        var config = configuration()
        config.readOnly = true
        let realm = try Realm(configuration: config)
        XCTAssertTrue(realm.readOnly)
        XCTAssertEqual(realm.objects(User.self).count, 1)
        XCTAssertThrowsError(try realm.write {}) { XCTAssertEqual($0 as? RealmError, .readOnly) }
    }
}
