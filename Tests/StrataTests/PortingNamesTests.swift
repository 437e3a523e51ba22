// Realm Swift's and the Realm+JSON seed's names and behaviours that ported code relies on
// (docs/API.md §8): List's names, shallowCopy without the primary key, performInTransaction,
// and managed lists that grow in amortized O(1) per append.

import XCTest
@testable import Strata

final class PortingNamesTests: RealmTestCase {
    func testRealmSwiftListNames() throws {
        let realm = try openRealm()
        let user = makeUser("1")
        try realm.write { try realm.add(user) }
        let a = Phone(), b = Phone(), c = Phone()
        (a.number, b.number, c.number) = ("a", "b", "c")
        try realm.write {
            user.phones.append(objectsIn: [a, b])
            user.phones.insert(c, at: 0)
            user.tags.append(objectsIn: ["x", "y", "z"])
        }
        XCTAssertEqual(user.phones.map(\.number), ["c", "a", "b"])
        XCTAssertEqual(user.phones.index(of: a), 1)
        XCTAssertEqual(user.tags.index(of: "z"), 2)
        XCTAssertNil(user.tags.index(of: "nope"))
        try realm.write {
            user.phones.move(from: 0, to: 2)
            user.phones.swapAt(0, 1)
            user.tags.replace(index: 0, object: "w")
            user.tags.insert(contentsOf: ["u", "v"], at: 1)
            user.tags.removeLast()
        }
        XCTAssertEqual(user.phones.map(\.number), ["b", "a", "c"])
        XCTAssertEqual(Array(user.tags), ["w", "u", "v", "y"])
        try realm.write { user.tags.removeAll() }
        XCTAssertTrue(user.tags.isEmpty)
    }

    /// Realm+JSON's seed: "shallowCopy no longer maintains an object's primary key";
    /// deepCopy does. Failed before (the copy kept "7").
    func testShallowCopyLeavesThePrimaryKeyOutAndDeepCopyKeepsIt() throws {
        let realm = try openRealm()
        let user = makeUser("7", rank: 3)
        try realm.write { try realm.add(user) }
        let shallow = user.shallowCopy()
        XCTAssertEqual(shallow.objId, "")
        XCTAssertEqual(shallow.rank, 3)
        XCTAssertEqual(user.deepCopy().objId, "7")
        // The seed's example: edit a copy, merge it back in a transaction.
        shallow.firstName = "New first name"
        let failure = user.performInTransaction { user.mergeProperties(from: shallow) }
        XCTAssertNil(failure)
        XCTAssertEqual(user.firstName, "New first name")
        XCTAssertEqual(user.objId, "7")
    }

    func testPerformInTransactionReportsWhatWentWrongAndKeepsNothing() throws {
        struct Refused: Error {}
        let realm = try openRealm()
        let user = makeUser("1")
        try realm.write { try realm.add(user) }
        let failure = user.performInTransaction {
            user.rank = 99
            throw Refused()
        }
        XCTAssertTrue(failure is Refused)
        XCTAssertEqual(user.rank, 0)
        // Inside an open write it joins it; on an unmanaged object it just runs.
        try realm.write { XCTAssertNil(user.performInTransaction { user.rank = 5 }) }
        XCTAssertEqual(user.rank, 5)
        let loose = User()
        XCTAssertNil(loose.performInTransaction { loose.rank = 1 })
        XCTAssertEqual(loose.rank, 1)
    }

    /// Appending to a managed list was O(n) per append (the whole list decoded and
    /// re-encoded): 16,000 appends took 17 s. Now each is amortized O(1); 100,000 appends in
    /// one write, then read back (this would take many minutes if quadratic).
    func testAHundredThousandAppendsToAManagedList() throws {
        let realm = try openRealm()
        let user = makeUser("1")
        try realm.write { try realm.add(user) }
        let count = 100_000
        try realm.write {
            for i in 0..<count { user.tags.append("t\(i)") }
        }
        let tags = user.tags
        XCTAssertEqual(tags.count, count)
        XCTAssertEqual(tags[0], "t0")
        XCTAssertEqual(tags[count - 1], "t\(count - 1)")
        try realm.write {
            for _ in 0..<(count / 2) { user.tags.removeLast() }
        }
        XCTAssertEqual(user.tags.count, count / 2)
        XCTAssertEqual(user.tags.last, "t\(count / 2 - 1)")
        // Appends inside an add's undo scope and after a cancelled write stay exact.
        try realm.write {
            user.tags.append("after")
            realm.cancelWrite()
        }
        XCTAssertEqual(user.tags.count, count / 2)
    }
}
