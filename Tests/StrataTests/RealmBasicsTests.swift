// The Realm API of docs/API.md §2: writes, reads, queries, on real stores.

import XCTest
@testable import Strata

final class RealmBasicsTests: RealmTestCase {
    func testAddReadAndReopen() throws {
        do {
            let realm = try openRealm()
            let user = makeUser("1", rank: 5)
            user.tags.append("swift")
            user.tags.append("linux")
            user.car = Car()
            user.car!.vin = "VIN1"
            user.car!.model = "Beetle"
            let phone = Phone()
            phone.number = "555"
            user.phones.append(phone)
            user.kind = .pro
            user.location = Location(lat: 1.5, lng: -2)
            user.joined = Date(timeIntervalSince1970: 1000)
            try realm.write { try realm.add(user) }
            XCTAssertNotNil(user.realm)
            XCTAssertEqual(user.rank, 5)
            XCTAssertEqual(Array(user.tags), ["swift", "linux"])
        }
        let realm = try openRealm()
        let user = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "1"))
        XCTAssertEqual(user.username, "user1")
        XCTAssertEqual(user.rank, 5)
        XCTAssertEqual(Array(user.tags), ["swift", "linux"])
        XCTAssertEqual(user.car?.model, "Beetle")
        XCTAssertEqual(user.phones.count, 1)
        XCTAssertEqual(user.phones.first?.number, "555")
        XCTAssertEqual(user.kind, .pro)
        XCTAssertEqual(user.location, Location(lat: 1.5, lng: -2))
        XCTAssertEqual(user.joined, Date(timeIntervalSince1970: 1000))
        XCTAssertNil(user.avatar)
        XCTAssertEqual(realm.objects(Car.self).count, 1)
        XCTAssertEqual(realm.objects(Phone.self).count, 1)
    }

    func testQueriesSortAndAggregates() throws {
        let realm = try openRealm()
        try realm.write {
            for i in 0 ..< 50 {
                let user = makeUser("\(i)", rank: i % 10, city: i % 2 == 0 ? "Raleigh" : "Durham", lastName: "L\(i % 5)")
                user.score = Double(i)
                try realm.add(user)
            }
        }
        let all = realm.objects(User.self)
        XCTAssertEqual(all.count, 50)
        let top = all.filter(#Predicate<User> { $0.rank > 3 && $0.city == "Raleigh" })
            .sorted(by: [SortDescriptor(\User.lastName), SortDescriptor(\User.rank, order: .reverse)])
        let expected = (0 ..< 50).filter { $0 % 10 > 3 && $0 % 2 == 0 }
        XCTAssertEqual(top.count, expected.count)
        let pairs = top.map { ($0.lastName, $0.rank) }
        for (a, b) in zip(pairs, pairs.dropFirst()) {
            XCTAssertTrue(a.0 < b.0 || (a.0 == b.0 && a.1 >= b.1), "\(a) before \(b)")
        }
        XCTAssertEqual(top.max(of: \.rank), 8)
        XCTAssertEqual(top.min(of: \.rank), 4)
        XCTAssertEqual(all.sum(of: \.score), Double((0 ..< 50).reduce(0, +)))
        XCTAssertEqual(all.filter(#Predicate<User> { $0.objId == "7" }).first?.rank, 7)
        XCTAssertEqual(all.filter(#Predicate<User> { $0.city == "Durham" }).count, 25)
    }

    func testUpdatePoliciesAndDelete() throws {
        let realm = try openRealm()
        try realm.write { try realm.add(makeUser("1", rank: 1)) }
        XCTAssertThrowsError(try realm.write { try realm.add(makeUser("1", rank: 2)) }) { error in
            XCTAssertEqual(error as? RealmError, .primaryKeyExists(type: "User", key: "'1'"))
        }
        try realm.write { try realm.add(makeUser("1", rank: 3), update: .modified) }
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "1")?.rank, 3)
        let created = try realm.write { try realm.create(User.self, value: ["objId": "1", "rank": 9], update: .modified) }
        XCTAssertEqual(created.rank, 9)
        XCTAssertEqual(created.username, "user1", "a partial update leaves other properties alone")
        let user = realm.object(ofType: User.self, forPrimaryKey: "1")!
        try realm.write { user.rank = 7 }
        XCTAssertEqual(user.rank, 7)
        try realm.write { try realm.delete(user) }
        XCTAssertTrue(user.isInvalidated)
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "1"))
        try realm.write {
            for i in 0 ..< 10 { try realm.add(makeUser("\(i)", rank: i - 5)) }
        }
        try realm.write { try realm.delete(realm.objects(User.self).filter(#Predicate { $0.rank < 0 })) }
        XCTAssertEqual(realm.objects(User.self).count, 5)
        try realm.write { try realm.deleteAll() }
        XCTAssertEqual(realm.objects(User.self).count, 0)
    }

    func testThrowingWriteRollsBack() throws {
        struct Failure: Error {}
        let realm = try openRealm()
        XCTAssertThrowsError(try realm.write {
            try realm.add(makeUser("1"))
            throw Failure()
        })
        XCTAssertFalse(realm.isInWriteTransaction)
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "1"))
    }
}
