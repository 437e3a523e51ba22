// Result sets: a column scan's answer kept as ordinals and ordered only as far as it is
// read. These tests read positions in orders a list screen does (the first screen, a
// jump, then everything) and hold every answer to an oracle sorted here with plain Swift
// comparisons, so a lazy order that kept the wrong k, or lost one, fails.

import XCTest
import StrataTestSupport
@testable import Strata

final class ResultSetTests: RealmTestCase {
    /// The users of a seeded random store: ranks with many ties, scores without.
    private func seeded(_ realm: Realm, count: Int, seed: UInt64) throws -> [User] {
        var generator = SplitMix64(seed: seed)
        try realm.write {
            for i in 0 ..< count {
                let user = newUser("u\(i)", rank: Int.random(in: 0 ..< 7, using: &generator),
                                   lastName: ["b", "a", "c"].randomElement(using: &generator)!)
                user.score = Double(generator.next() >> 11) * 0x1p-53
                try realm.add(user)
            }
        }
        return Array(realm.objects(User.self))
    }

    /// Engine-key order of string primary keys (what every sort ends with).
    private func keyPrecedes(_ a: User, _ b: User) -> Bool {
        PrimaryKeyValue.string(a.objId).keyBytes.lexicographicallyPrecedes(PrimaryKeyValue.string(b.objId).keyBytes)
    }

    func testALazilyOrderedResultReadsAsTheWholeSortAtEveryPosition() throws {
        let realm = try openRealm()
        let all = try seeded(realm, count: 2_000, seed: 24)
        let inRange = all.filter { $0.score >= 0.1 && $0.score < 0.9 }
        let byScore = inRange.sorted { $0.score != $1.score ? $0.score > $1.score : keyPrecedes($0, $1) }.map(\.objId)
        let byRank = inRange.sorted {
            if $0.rank != $1.rank { return $0.rank < $1.rank }
            if $0.lastName != $1.lastName { return $0.lastName > $1.lastName }
            return keyPrecedes($0, $1)
        }.map(\.objId)
        let cases: [([SortDescriptor<User>], [String])] = [
            ([SortDescriptor(\User.score, order: .reverse)], byScore),
            ([SortDescriptor(\User.rank), SortDescriptor(\User.lastName, order: .reverse)], byRank),
        ]
        for (number, (sort, expected)) in cases.enumerated() {
            // Read as a screen does: the first rows, a jump further down, one back, then all.
            let results = realm.objects(User.self).filter(#Predicate { $0.score >= 0.1 && $0.score < 0.9 }).sorted(by: sort)
            XCTAssertTrue(results.explain().contains("column scan"), results.explain())
            XCTAssertEqual(results.count, expected.count, "case \(number): counted before anything is ordered")
            XCTAssertEqual(Array(results.prefix(20)).map(\.objId), Array(expected.prefix(20)), "case \(number): first screen")
            XCTAssertEqual(results[700].objId, expected[700], "case \(number): a jump")
            XCTAssertEqual(results[65].objId, expected[65], "case \(number): back past the first k")
            XCTAssertEqual(results.map(\.objId), expected, "case \(number): everything")
            // A fresh evaluation read at the end first sorts the rest whole: the same order.
            let fresh = realm.objects(User.self).filter(#Predicate { $0.score >= 0.1 && $0.score < 0.9 }).sorted(by: sort)
            XCTAssertEqual(fresh[expected.count - 1].objId, expected.last)
            XCTAssertEqual(fresh.map(\.objId), expected)
        }
        // LIMIT keeps the first n of the same order.
        let limited = try realm.objects(User.self).filter(query: "score >= 0.1 AND score < 0.9 SORT(score DESC) LIMIT(30)")
        XCTAssertEqual(limited.count, 30)
        XCTAssertEqual(limited.map(\.objId), Array(byScore.prefix(30)))
    }

    /// A sort column with NaN is no strict order (NaN equals every number under the row
    /// rule), so the whole sort decides, as it did before result sets were lazy: the first
    /// positions read first (where a bounded heap would pick them) must be those a set read
    /// from its end first (sorted whole) shows. Double and Float columns (a Float column is
    /// kept as plain values).
    func testASortColumnWithNaNIsOrderedWhole() throws {
        let realm = try openRealm()
        let all = try seeded(realm, count: 600, seed: 7)
        try realm.write { for user in all where user.rank == 3 { user.score = .nan } }
        func sorted() -> Results<User> { realm.objects(User.self).filter(#Predicate { $0.rank >= 0 }).sorted(by: \.score, ascending: false) }
        let fromTheEnd = sorted()
        _ = fromTheEnd[fromTheEnd.count - 1]
        XCTAssertEqual(Array(sorted().prefix(10)).map(\.objId), Array(fromTheEnd.prefix(10)).map(\.objId))
        XCTAssertEqual(fromTheEnd.count, 600)

        try realm.write {
            for i in 0 ..< 600 {
                let row = AllTypes()
                row.key = i
                row.int64 = Int64(i)
                row.float = i % 5 == 0 ? .nan : Float(i % 37)
                try realm.add(row)
            }
        }
        func floats() -> Results<AllTypes> { realm.objects(AllTypes.self).filter(#Predicate { $0.int64 >= 0 }).sorted(by: \.float) }
        let floatsFromTheEnd = floats()
        _ = floatsFromTheEnd[599]
        XCTAssertEqual(Array(floats().prefix(10)).map(\.key), Array(floatsFromTheEnd.prefix(10)).map(\.key))
    }

    /// A string column's dictionary keeps one spelling of canonically equivalent strings;
    /// `map(\.property)` must give each object's own spelling, as reading the object does.
    func testMappingAStringKeepsEachRowsOwnSpelling() throws {
        let realm = try openRealm()
        try realm.write {
            try realm.add(newUser("a", lastName: "caf\u{E9}"))
            try realm.add(newUser("b", lastName: "cafe\u{301}"))
        }
        let results = realm.objects(User.self).filter(#Predicate { $0.lastName != "zzz" })
        XCTAssertTrue(results.explain().contains("column scan"), results.explain())
        XCTAssertEqual(results.map(\.lastName).map { Array($0.unicodeScalars) }, results.map { Array($0.lastName.unicodeScalars) })
    }

    /// `map(\.property)` reads stored values without building objects; it must answer what
    /// reading the objects answers, in order, for every kind of plan and inside a write.
    func testMappingAKeyPathAgreesWithReadingTheObjects() throws {
        let realm = try openRealm()
        _ = try seeded(realm, count: 300, seed: 3)
        try realm.write { realm.objects(User.self).filter(#Predicate { $0.rank == 2 }).forEach { $0.joined = Date(timeIntervalSince1970: 9) } }
        let queries: [Results<User>] = [
            realm.objects(User.self),
            realm.objects(User.self).filter(#Predicate { $0.rank > 2 }),
            realm.objects(User.self).filter(#Predicate { $0.rank > 2 }).sorted(by: \.score),
            realm.objects(User.self).filter(#Predicate { $0.city == "Raleigh" }),   // the hash index
            realm.objects(User.self).filter(#Predicate { $0.objId == "u7" }),       // the primary key
            realm.objects(User.self).filter(#Predicate { $0.username.count >= 0 }), // not translated: objects
        ]
        for (number, results) in queries.enumerated() {
            XCTAssertEqual(results.map(\.objId), results.map { $0.objId }, "query \(number)")
            XCTAssertEqual(results.map(\.rank), results.map { $0.rank }, "query \(number)")
            XCTAssertEqual(results.map(\.score), results.map { $0.score }, "query \(number)")
            XCTAssertEqual(results.map(\.joined), results.map { $0.joined }, "query \(number)")
        }
        // Integer primary keys are read back from the engine keys (negative ones too).
        try realm.write {
            for i in 0 ..< 50 {
                let row = AllTypes()
                row.key = i * 7 - 100
                row.int64 = Int64(i)
                try realm.add(row)
            }
        }
        let rows = realm.objects(AllTypes.self).filter(#Predicate { $0.int64 >= 10 })
        XCTAssertEqual(rows.map(\.key), rows.map { $0.key })
        XCTAssertEqual(rows.map(\.key), (10 ..< 50).map { $0 * 7 - 100 })
        // Inside a write, pending changes are what the objects read.
        try realm.write {
            let first = try XCTUnwrap(realm.objects(User.self).first)
            first.rank = 99
            let results = realm.objects(User.self).filter(#Predicate { $0.rank > 2 })
            XCTAssertEqual(results.map(\.rank), results.map { $0.rank })
            XCTAssertTrue(results.map(\.rank).contains(99))
        }
    }
}

final class ProjectionStatisticsTests: RealmTestCase {
    /// The figures are the projection's own arrays, counted: 8 bytes a double, 4 a string
    /// code plus each distinct string's bytes and 4 for where it ends, the keys' bytes plus
    /// where each ends.
    func testProjectionMemoryIsStatedPerProjectedProperty() throws {
        let realm = try openRealm()
        XCTAssertNil(realm.projectionStatistics(for: User.self), "no query has projected anything")
        let cities = ["Raleigh", "Durham", "Cary"]
        try realm.write {
            for i in 0 ..< 90 {
                let user = newUser("u\(i)", rank: i, city: cities[i % 3])
                user.score = Double(i)
                try realm.add(user)
            }
        }
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.score >= 10 && $0.city != "Cary" }).count, 53)
        let stats = try XCTUnwrap(realm.projectionStatistics(for: User.self))
        XCTAssertEqual(stats.sequence, realm.snapshotSequence)
        XCTAssertEqual(stats.ordinals, 90)
        let keyBytes = (0 ..< 90).reduce(0) { $0 + PrimaryKeyValue.string("u\($1)").keyBytes.count }
        XCTAssertEqual(stats.keyBytes, keyBytes + 90 * 8)
        XCTAssertEqual(stats.columnBytes["score"], 90 * 8)
        XCTAssertEqual(stats.columnBytes["city"], 90 * 4 + cities.reduce(0) { $0 + $1.utf8.count + 4 })
        XCTAssertNil(stats.columnBytes["rank"], "a property no query named is not projected")
        XCTAssertEqual(stats.bytesPerObject["score"], 8)
    }
}

final class KeyOrderTests: XCTestCase {
    /// The key order's radix sort against the standard library's stable sort: sizes around
    /// its threshold, values differing in some bytes only, duplicates, already ordered input.
    func testTheRadixKeySortIsTheStableSort() {
        var random = SplitMix64(seed: TestEnvironment.seed(default: 0x5A_D1C5))
        for round in 0 ..< 300 {
            let count = [0, 1, 2, 255, 256, 257, 1_000, 5_000][round % 8]
            let mask: UInt64 = [0xFF, 0xFFFF_FF, 0xFF00_0000_00FF_0000, .max][round % 4]
            var pairs = (0 ..< count).map { i in (value: UInt64.random(in: 0 ... .max, using: &random) & mask, index: Int32(i)) }
            if round % 5 == 0 { pairs.sort { $0.value < $1.value } }
            var sorted = pairs
            KeyOrder.sortByValue(&sorted)
            let expected = pairs.enumerated().sorted { ($0.element.value, $0.offset) < ($1.element.value, $1.offset) }.map(\.element)
            XCTAssertTrue(sorted.elementsEqual(expected) { $0.value == $1.value && $0.index == $1.index }, "round \(round), \(count) pairs")
        }
    }
}

final class OrdinalSetTests: XCTestCase {
    /// The SIMD equality over string codes against a plain loop: lengths around a word.
    func testTheCodeEqualityLoopMatchesThePlainOne() {
        var random = SplitMix64(seed: TestEnvironment.seed(default: 0xC0DE5))
        for count in [0, 1, 7, 8, 63, 64, 65, 127, 128, 1_000, 4_099] {
            let codes = (0 ..< count).map { _ in Int32.random(in: -1 ... 5, using: &random) }
            for code in Int32(-1) ... 6 {
                let set = OrdinalSet.equal(codes, code)
                XCTAssertEqual(set.ordinals, codes.indices.filter { codes[$0] == code }.map(Int32.init), "\(count) codes, code \(code)")
                XCTAssertEqual(set.count, count)
            }
        }
    }
}
