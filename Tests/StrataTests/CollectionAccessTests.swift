// Reading and growing managed collections, at scale (issue 15). Every `object.list` access
// makes a new `List`, and each used to convert the whole stored list again: a loop over a
// list's indices was quadratic (a 100k-element list: 100k conversions of 100k elements), and
// so were a set's `insert`/`contains` and a map's per-key set and read. The converted
// contents now live with the object and are shared; these tests count conversions, so they
// fail on the old behaviour at any size, not by running long.

import XCTest
@testable import Strata

final class CollectionAccessTests: RealmTestCase {
    private let count = 100_000

    func testALoopOverAListsIndicesConvertsItOnce() throws {
        let realm = try openRealm()
        let user = makeUser("1")
        try realm.write {
            try realm.add(user)
            user.tags.append(contentsOf: (0..<count).map { "t\($0)" })
        }
        let before = realm.collectionConversions
        var total = 0
        for position in 0..<user.tags.count where user.tags[position] == "t\(position)" { total += 1 }
        XCTAssertEqual(total, count)
        XCTAssertLessThanOrEqual(realm.collectionConversions - before, 1)

        // Another object for the same row shares nothing, but converts once as well; a
        // commit elsewhere in the realm moves the snapshot, so the next read converts again.
        let same = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "1"))
        XCTAssertEqual(same.tags[count - 1], "t\(count - 1)")
        try realm.write { try realm.add(makeUser("2")) }
        XCTAssertEqual(user.tags.last, "t\(count - 1)")
        XCTAssertEqual(realm.collectionConversions - before, 3)
    }

    func testAppendingAndReadingInOneWriteStaysLinear() throws {
        let (realm, user) = try oneUser()
        let before = realm.collectionConversions
        try realm.write {
            for position in 0..<count {
                user.tags.append("t\(position)")
                // What a loop that appends and checks does: the count, the last element.
                guard user.tags.count == position + 1, user.tags.last == "t\(position)" else {
                    return XCTFail("after \(position + 1) appends: \(user.tags.count) elements, last \(user.tags.last ?? "nil")")
                }
            }
            for _ in 0..<(count / 2) {
                user.tags.removeLast()
                _ = user.tags.last
            }
        }
        XCTAssertLessThanOrEqual(realm.collectionConversions - before, 1)
        XCTAssertEqual(user.tags.count, count / 2)
        XCTAssertEqual(user.tags.last, "t\(count / 2 - 1)")
    }

    /// Changing one property of the object (another list, a scalar) leaves what was kept of
    /// its other lists current: filling two lists side by side stays linear.
    func testFillingTwoListsOfOneObjectSideBySideStaysLinear() throws {
        let realm = try openRealm()
        let object = AllTypes()
        try realm.write { try realm.add(object) }
        let before = realm.collectionConversions
        try realm.write {
            for position in 0..<count {
                object.ints.append(position)
                object.optionalStrings.append(position % 3 == 0 ? nil : "s\(position)")
                object.int64 = Int64(position)
                guard object.ints.count == position + 1, object.optionalStrings.count == position + 1,
                      object.ints.last == position else {
                    return XCTFail("after \(position + 1) appends: \(object.ints.count) and \(object.optionalStrings.count) elements")
                }
            }
        }
        XCTAssertLessThanOrEqual(realm.collectionConversions - before, 2)
        XCTAssertEqual(object.optionalStrings[count - 2], "s\(count - 2)")
        XCTAssertNil(object.optionalStrings[0])
    }

    /// The shared elements follow every way the list can change: through another `List`
    /// value, another object for the same row, a whole-list assignment, a cancelled write.
    func testSharedElementsFollowEveryChange() throws {
        let (realm, user) = try oneUser()
        let held = user.tags
        let other = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "1"))
        try realm.write {
            user.tags.append("a")
            XCTAssertEqual(held.count, 1)
            XCTAssertEqual(Array(other.tags), ["a"])
            other.tags.append("b")
            XCTAssertEqual(Array(user.tags), ["a", "b"])
            user.tags.replaceAll(with: ["x"])
            XCTAssertEqual(Array(other.tags), ["x"])
            user.tags.insert("w", at: 0)
            XCTAssertEqual(Array(held), ["w", "x"])
        }
        XCTAssertEqual(Array(other.tags), ["w", "x"])
        try realm.beginWrite()
        user.tags.append("dropped")
        XCTAssertEqual(user.tags.count, 3)
        realm.cancelWrite()
        XCTAssertEqual(Array(user.tags), ["w", "x"])
        XCTAssertEqual(Array(held), ["w", "x"])
    }

    /// A list of objects depends on other rows: a deleted element disappears at once, also
    /// from elements converted before the deletion.
    func testAListOfObjectsFollowsDeletions() throws {
        let (realm, user) = try oneUser()
        let before = realm.collectionConversions
        try realm.write {
            for position in 0..<1_000 {
                let phone = Phone()
                phone.number = "\(position)"
                user.phones.append(phone)
                XCTAssertEqual(user.phones.count, position + 1)
            }
            XCTAssertEqual(user.phones.last?.number, "999")
            XCTAssertLessThanOrEqual(realm.collectionConversions - before, 1)
            try realm.delete(user.phones[500])
            XCTAssertEqual(user.phones.count, 999)
            XCTAssertEqual(user.phones[500].number, "501")
        }
        XCTAssertEqual(user.phones.count, 999)
        try realm.write { try realm.delete(user.phones.last!) }
        XCTAssertEqual(user.phones.last?.number, "998")
    }

    /// A realm holding one user, "1" (lists).
    private func oneUser() throws -> (Realm, User) {
        let realm = try openRealm()
        let user = makeUser("1")
        try realm.write { try realm.add(user) }
        return (realm, user)
    }

    /// A realm holding one `Tagged` object (sets and maps).
    private func oneTagged() throws -> (Realm, Tagged) {
        let realm = try openRealm(types: modelTypeTypes)
        let tagged = Tagged()
        try realm.write { try realm.add(tagged) }
        return (realm, tagged)
    }

    func testASetGrowsAndAnswersMembershipInConstantTime() throws {
        let (realm, tagged) = try oneTagged()
        let before = realm.collectionConversions
        try realm.write {
            for position in 0..<count {
                tagged.labels.insert("l\(position)")
                tagged.labels.insert("l\(position / 2)")          // already there
                guard tagged.labels.contains("l\(position)"), tagged.labels.count == position + 1 else {
                    return XCTFail("after \(position + 1) inserts: \(tagged.labels.count) elements")
                }
            }
        }
        XCTAssertLessThanOrEqual(realm.collectionConversions - before, 1)
        XCTAssertEqual(tagged.labels.count, count)
        XCTAssertTrue(tagged.labels.contains("l\(count - 1)"))
        XCTAssertFalse(tagged.labels.contains("l\(count)"))
        try realm.write { tagged.labels.remove("l0") }
        XCTAssertFalse(tagged.labels.contains("l0"))
        XCTAssertEqual(tagged.labels.first, "l1")
    }

    func testAMapSetsAndReadsKeysInConstantTime() throws {
        let (realm, tagged) = try oneTagged()
        let before = realm.collectionConversions
        try realm.write {
            for position in 0..<count {
                tagged.scores["k\(position)"] = position
                guard tagged.scores["k\(position)"] == position, tagged.scores.count == position + 1 else {
                    return XCTFail("after \(position + 1) keys set: \(tagged.scores.count) entries")
                }
            }
            for position in stride(from: 0, to: count, by: 2) { tagged.scores["k\(position)"] = nil }
            XCTAssertEqual(tagged.scores.count, count / 2)
        }
        XCTAssertLessThanOrEqual(realm.collectionConversions - before, 1)
        XCTAssertNil(tagged.scores["k0"])
        XCTAssertEqual(tagged.scores["k1"], 1)
        try realm.write { tagged.scores.removeAll() }
        XCTAssertTrue(tagged.scores.isEmpty)
    }

    /// The kept contents hold no objects: objects that list each other (and embedded objects,
    /// which hold their parent) would otherwise keep one another, and their realm, alive.
    func testKeptContentsDoNotKeepTheRealmAlive() throws {
        weak var released: Realm?
        do {
            let realm = try openRealm(types: allModelTypes + MV1.types)
            released = realm
            let a = Node(), b = Node()
            a.name = "a"; b.name = "b"
            let member = MV1.Member()
            try realm.write {
                try realm.add([a, b])
                a.children.append(b)
                b.children.append(a)
                try realm.add(member)
                member.history.append(MV1.Spot())
            }
            XCTAssertEqual(a.children[0].children[0].name, "a")
            XCTAssertEqual(b.children.first?.children.count, 1)
            XCTAssertEqual(member.history.count, 1)
            XCTAssertEqual(member.history[0].label, "")
        }
        XCTAssertNil(released, "the realm outlived every reference the test held")
    }
}

extension CollectionAccessTests {
    /// Issue 26, behaviour 4: `for x in list { list.append(x) }` never ended (the default
    /// iterator re-read the growing end); Realm iterates the elements present when the loop
    /// starts. A loop that removes stops at the end instead of trapping.
    func testIteratingAListWhileAppendingToItEnds() throws {
        let unmanaged = List<String>()
        unmanaged.append(objectsIn: ["a", "b"])
        var visited: [String] = []
        for tag in unmanaged {
            visited.append(tag)
            unmanaged.append(tag + "!")
        }
        XCTAssertEqual(visited, ["a", "b"])
        XCTAssertEqual(Array(unmanaged), ["a", "b", "a!", "b!"])

        let realm = try openRealm()
        let user = makeUser("1")
        user.tags.append(objectsIn: ["x", "y", "z"])
        try realm.write { try realm.add(user) }
        try realm.write {
            var seen = 0
            for tag in user.tags {
                seen += 1
                user.tags.append(tag)
            }
            XCTAssertEqual(seen, 3)
            seen = 0
            for _ in user.tags {
                seen += 1
                user.tags.removeLast()
            }
            XCTAssertEqual(seen, 3, "stops where the shortened list ends")
        }
        XCTAssertEqual(Array(user.tags), ["x", "y", "z"])
    }
}
