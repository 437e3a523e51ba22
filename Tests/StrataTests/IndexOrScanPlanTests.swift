// The planner's choice between a hash index and a column scan for an equality on an
// indexed property: a value shared by many rows is answered from the projected column once
// the index was seen answering many keys (or the column is projected anyway); a rare value,
// a unique-ish column or a write's pending rows keep the index. Either way the answer is
// the index's answer, checked here against Foundation on the same objects.

import XCTest
import Foundation
@testable import Strata
import StrataTestSupport

final class IndexOrScanPlanTests: RealmTestCase {
    private func user(_ i: Int, city: String) -> User {
        let user = User()
        user.objId = String(format: "u%05d", i)
        user.city = city
        user.rank = i
        return user
    }

    /// The two ways the planner knows a property is crowded must agree: the index having
    /// answered one key per 20 rows, and then the projected column's dictionary of 20
    /// values for 2,000 rows. (The dictionary rule compared distinct values × 512 with the
    /// row count, so once the column existed a table under 512 rows a value went back to
    /// the index, and a sorted list of 100 rows of 2,000 read 100 rows per query.)
    func testTheColumnStaysChosenOnceItIsProjected() throws {
        let realm = try openRealm()
        let cities = (0 ..< 20).map { "city\($0)" }
        try realm.write { try realm.add((0 ..< 2_000).map { user($0, city: cities[$0 % 20]) }) }
        let alone = realm.objects(User.self).filter(#Predicate { $0.city == "city3" })
        let sorted = alone.sorted(byKeyPath: "rank", ascending: false)
        XCTAssertTrue(sorted.explain().contains("hash index on city"), sorted.explain())
        XCTAssertEqual(Array(sorted.prefix(2)).map(\.rank), [1_983, 1_963])
        for round in 0 ..< 3 {
            XCTAssertTrue(sorted.explain().contains("column scan over city"), "round \(round): \(sorted.explain())")
            XCTAssertEqual(Array(sorted.prefix(2)).map(\.rank), [1_983, 1_963])
            XCTAssertTrue(alone.explain().contains("column scan over city"), "round \(round): \(alone.explain())")
            XCTAssertEqual(alone.count, 100)
        }
    }

    func testACrowdedIndexedEqualityMovesToTheColumnAndAnswersTheSame() throws {
        let realm = try openRealm()
        let cities = (0 ..< 4).map { "city\($0)" }
        try realm.write { try realm.add((0 ..< 4_000).map { user($0, city: cities[$0 % 4]) }) }
        var oracle = (0 ..< 4_000).map { (id: String(format: "u%05d", $0), city: cities[$0 % 4], rank: $0) }
        func check(_ city: String, _ context: String) {
            let results = realm.objects(User.self).filter(#Predicate { $0.city == city })
            let expected = oracle.filter { $0.city == city }.map(\.id).sorted()
            XCTAssertEqual(results.count, expected.count, context)
            XCTAssertEqual(results.map(\.objId), expected, context)
            XCTAssertEqual(Array(results.sorted(byKeyPath: "rank", ascending: false).prefix(3)).map(\.rank),
                           Array(oracle.filter { $0.city == city }.map(\.rank).sorted(by: >).prefix(3)), context)
        }
        let query = realm.objects(User.self).filter(#Predicate { $0.city == "city1" })
        XCTAssertTrue(query.explain().contains("hash index on city"), query.explain())
        check("city1", "first: the index")
        // 1,000 keys for 4,000 rows: crowded. The next equality on city scans the column.
        XCTAssertTrue(query.explain().contains("column scan over city"), query.explain())
        check("city1", "second: the column")
        check("city2", "another value, the column")
        check("nowhere", "a value no row holds")

        // Commits move the projection along; answers follow them.
        try realm.write {
            realm.object(ofType: User.self, forPrimaryKey: "u00001")!.city = "city2"
            try realm.delete(realm.object(ofType: User.self, forPrimaryKey: "u00005")!)
            try realm.add(user(9_999, city: "city1"))
        }
        oracle[1].city = "city2"
        oracle.remove(at: 5)
        oracle.append((id: "u09999", city: "city1", rank: 9_999))
        XCTAssertTrue(query.explain().contains("column scan"), query.explain())
        check("city1", "after a commit")
        check("city2", "after a commit, the changed object")

        // Inside a write with pending rows of the type: the index (and the pending rows).
        try realm.write {
            realm.object(ofType: User.self, forPrimaryKey: "u00002")!.city = "city1"
            XCTAssertTrue(query.explain().contains("hash index"), query.explain())
            XCTAssertEqual(query.count, oracle.filter { $0.city == "city1" }.count + 1)
            realm.cancelWrite()
        }
    }

    func testUniqueValuesKeepTheIndexEvenWhenTheColumnIsProjected() throws {
        let realm = try openRealm()
        try realm.write { try realm.add((0 ..< 2_000).map { user($0, city: "c\($0)") }) }
        // A range over the column projects it; 2,000 distinct values in 2,000 rows.
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.city >= "c1" }).count, 2_000 - 1)
        let query = realm.objects(User.self).filter(#Predicate { $0.city == "c42" })
        XCTAssertTrue(query.explain().contains("hash index on city"), query.explain())
        XCTAssertEqual(query.map(\.objId), ["u00042"])
    }
}

/// Equalities on a crowded string property read the projection's postings (each value's
/// ordinals in key order, built by the first equality, then carried across commits): checked
/// against a plain-Swift oracle over random commits that insert, delete and move objects
/// between values, with integer keys inserted out of order.
final class PostingEqualityTests: RealmTestCase {
    final class Ticket: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var status: String = ""
    }

    /// The same with string keys: the postings keep ordinals, ordered in the key arena.
    final class NamedTicket: Object {
        @Persisted(primaryKey: true) var id: String = ""
        @Persisted var status: String = ""
    }

    func testRepeatedEqualitiesAnswerAsTheOracleAcrossCommits() throws {
        try exercise(Ticket.self, key: { $0 }, id: \.id, setStatus: { $0.status = $1 }) { realm, value in
            realm.objects(Ticket.self).filter(#Predicate { $0.status == value })
        }
    }

    func testStringKeyedPostingsAnswerAsTheOracleAcrossCommits() throws {
        try exercise(NamedTicket.self, key: { String(format: "t%+07d", $0) }, id: \.id, setStatus: { $0.status = $1 }) { realm, value in
            realm.objects(NamedTicket.self).filter(#Predicate { $0.status == value })
        }
    }

    /// Random commits that insert, delete and move objects between values, keys inserted out
    /// of order; after each, every value queried three times against the oracle.
    private func exercise<T: Object, K: Comparable>(_ type: T.Type, key: @escaping (Int) -> K, id: KeyPath<T, K>,
                                                     setStatus: (T, String) -> Void, filtered: (Realm, String) -> Results<T>) throws {
        let realm = try openRealm(types: [T.self])
        let statuses = ["open", "closed", "é", "e\u{301}", "done"]  // "é" twice, canonically equal
        var random = SplitMix64(seed: TestEnvironment.seed(default: 7))
        var oracle: [Int: String] = [:]
        func put(_ number: Int, _ value: String) throws {
            if let existing = realm.object(ofType: T.self, forPrimaryKey: key(number)) {
                setStatus(existing, value)
            } else {
                let object = try realm.create(T.self, value: ["id": key(number)])
                setStatus(object, value)
            }
            oracle[number] = value
        }
        try realm.write {
            for _ in 0 ..< 3_000 {
                try put(Int(random.next() % 1_000_000) - 500_000, statuses[Int(random.next() % UInt64(statuses.count))])
            }
        }
        func check(_ context: String) {
            for value in statuses + ["nowhere"] {
                let expected = oracle.filter { $0.value == value }.keys.map(key).sorted()
                for round in 0 ..< 3 {  // (repeated: the same projection answers again)
                    let results = filtered(realm, value)
                    XCTAssertTrue(results.explain().contains("column scan"), results.explain())
                    XCTAssertEqual(results.count, expected.count, "\(context) \(value) round \(round)")
                    XCTAssertEqual(results.map(id), expected, "\(context) \(value) round \(round)")
                    XCTAssertEqual(results.first?[keyPath: id], expected.first, "\(context) \(value) round \(round)")
                }
                let limited = try! realm.objects(T.self).filter(query: "status == %@ LIMIT(3)", arguments: [value])
                XCTAssertEqual(limited.map { $0[keyPath: id] }, Array(expected.prefix(3)), "\(context) \(value) limit (a string query)")
            }
        }
        check("loaded")
        for commit in 0 ..< 12 {
            // Small commits move entries between the postings' lists; large ones (more moves
            // than a rebuild costs) leave them to be built again.
            try realm.write {
                for _ in 0 ..< (commit % 2 == 0 ? 3 : 40) {
                    switch random.next() % 3 {
                    case 0:
                        try put(Int(random.next() % 1_000_000) - 500_000, statuses[Int(random.next() % UInt64(statuses.count))])
                    case 1:
                        guard let some = oracle.keys.randomElement(using: &random) else { break }
                        oracle[some] = nil
                        try realm.delete(realm.object(ofType: T.self, forPrimaryKey: key(some))!)
                    default:
                        guard let some = oracle.keys.randomElement(using: &random) else { break }
                        try put(some, statuses[Int(random.next() % UInt64(statuses.count))])
                    }
                }
            }
            check("commit \(commit)")
        }
    }
}

/// An equality the index answers alone, on a table keyed by integers (its own primary key or
/// the hidden object ids), is answered with the integers read straight from the index's
/// postings: checked against a plain-Swift oracle, in key order (the postings hold keys in
/// hash order), before any projection exists (each check reopens the store), with a limit,
/// and inside a write whose pending rows the index does not know yet.
final class IndexIntegerKeyTests: RealmTestCase {
    final class Order: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted(indexed: true) var status: String = ""
    }

    final class Note: Object {
        @Persisted(indexed: true) var tag: String = ""
        @Persisted var number: Int = 0
    }

    func testIntegerKeysFromTheIndexAnswerAsTheOracleInKeyOrder() throws {
        let statuses = ["open", "closed", "held", "rare"]
        var random = SplitMix64(seed: TestEnvironment.seed(default: 5))
        var oracle: [Int: String] = [:]
        var realm: Realm? = try openRealm(types: [Order.self, Note.self])
        try realm!.write {
            for _ in 0 ..< 3_000 {
                let id = Int(random.next() % 2_000_000) - 1_000_000
                let status = oracle.count % 500 == 0 ? "rare" : statuses[Int(random.next() % 3)]
                if oracle[id] != nil { continue }
                oracle[id] = status
                try realm!.create(Order.self, value: ["id": id, "status": status])
                try realm!.create(Note.self, value: ["tag": status, "number": oracle.count])
            }
        }
        for value in statuses + ["nowhere"] {
            // Reopened: no projection and no note of a crowded index, so the index answers.
            realm!.invalidate()
            realm = nil
            realm = try openRealm(types: [Order.self, Note.self])
            let results = realm!.objects(Order.self).filter(#Predicate { $0.status == value })
            XCTAssertTrue(results.explain().contains("hash index on status"), results.explain())
            let expected = oracle.filter { $0.value == value }.keys.sorted()
            XCTAssertEqual(results.count, expected.count, value)
            XCTAssertEqual(results.map(\.id), expected, value)
            XCTAssertEqual(results.first?.id, expected.first, value)
            XCTAssertEqual(results.last?.status, expected.isEmpty ? nil : value, value)
            let limited = try realm!.objects(Order.self).filter(query: "status == %@ LIMIT(2)", arguments: [value])
            XCTAssertEqual(limited.map(\.id), Array(expected.prefix(2)), "\(value), limited")
            // Hidden object ids are integer keys too: insertion order.
            let notes = realm!.objects(Note.self).filter(#Predicate { $0.tag == value })
            let numbers = notes.map(\.number)
            XCTAssertEqual(numbers, numbers.sorted(), "\(value): notes in insertion order")
            XCTAssertEqual(numbers.count, expected.count, value)
        }
        // Inside a write, the pending rows count: the index's answer is not enough.
        try realm!.write {
            try realm!.create(Order.self, value: ["id": 2_000_000, "status": "rare"])
            let rare = realm!.objects(Order.self).filter(#Predicate { $0.status == "rare" })
            XCTAssertEqual(rare.map(\.id), oracle.filter { $0.value == "rare" }.keys.sorted() + [2_000_000])
        }
    }
}
