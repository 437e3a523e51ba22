// Queries read stored fields when a predicate or sort translates; these tests check, on
// random data, that every translated query answers exactly what Foundation's own
// evaluation and sorting answer on the objects.

import XCTest
import StrataTestSupport
@testable import Strata

final class QueryEquivalenceTests: RealmTestCase {
    func testTranslatedQueriesAgreeWithFoundation() throws {
        let realm = try openRealm()
        var generator = SplitMix64(seed: 11)
        let names = ["ana", "Ana", "éclair", "e\u{301}clair", "zed", "", "10", "9"]
        try realm.write {
            for i in 0 ..< 300 {
                let user = newUser("\(i)", rank: Int.random(in: -5 ... 5, using: &generator),
                                   city: names.randomElement(using: &generator)!, lastName: names.randomElement(using: &generator)!)
                user.score = [Double.nan, 0, -0.0, 1.5, -2, .infinity][Int.random(in: 0 ..< 6, using: &generator)]
                user.active = Bool.random(using: &generator)
                user.kind = Kind(rawValue: Int.random(in: 0 ..< 3, using: &generator))!
                user.joined = Bool.random(using: &generator) ? Date(timeIntervalSince1970: Double(Int.random(in: 0 ..< 5, using: &generator))) : nil
                try realm.add(user)
            }
        }
        let all = Array(realm.objects(User.self))
        let date = Date(timeIntervalSince1970: 2)
        let pro = Kind.pro
        let predicates: [Predicate<User>] = [
            #Predicate { $0.rank > 0 },
            #Predicate { $0.rank <= -2 || $0.rank == 3 },
            #Predicate { !($0.rank >= 1) && $0.active },
            #Predicate { $0.city == "éclair" },
            #Predicate { $0.city != "Ana" },
            #Predicate { $0.lastName < "b" },
            #Predicate { $0.score > 0 },
            #Predicate { $0.score == 0 },
            #Predicate { $0.score != $0.score },
            #Predicate { $0.kind == pro },
            #Predicate { $0.joined == nil },
            #Predicate { $0.joined == date },
            #Predicate { $0.active == true && $0.city == "ana" },
            #Predicate { $0.username.count > 6 },          // not translated: falls back
        ]
        var columnScans = 0
        for (number, predicate) in predicates.enumerated() {
            let expected = all.filter { (try? predicate.evaluate($0)) == true }.map(\.objId).sorted { PrimaryKeyValue.string($0).keyBytes.lexicographicallyPrecedes(PrimaryKeyValue.string($1).keyBytes) }
            let results = realm.objects(User.self).filter(predicate)
            // The column evaluator (outside a write, the plan for translated filters without
            // an indexed equality)…
            if results.explain().contains("column scan") { columnScans += 1 }
            XCTAssertEqual(realm.objects(User.self).filter(predicate).count, expected.count, "predicate \(number), counted")
            XCTAssertEqual(results.map(\.objId), expected, "predicate \(number)")
            // …and the row evaluator (a pending row of the type makes the plan a row scan).
            try realm.beginWrite()
            all[0].rank = all[0].rank
            let rowPath = realm.objects(User.self).filter(predicate)
            XCTAssertFalse(rowPath.explain().contains("column scan"), rowPath.explain())
            XCTAssertEqual(rowPath.map(\.objId), expected, "predicate \(number), row evaluator")
            realm.cancelWrite()
        }
        XCTAssertGreaterThanOrEqual(columnScans, 8, "most translated filters ran on columns")
        let sorts: [[SortDescriptor<User>]] = [
            [SortDescriptor(\User.lastName)],
            [SortDescriptor(\User.city, order: .reverse), SortDescriptor(\User.rank)],
            [SortDescriptor(\User.score)],
            [SortDescriptor(\User.joined, order: .reverse), SortDescriptor(\User.rank, order: .reverse)],
        ]
        for (number, sort) in sorts.enumerated() {
            let sorted = realm.objects(User.self).sorted(by: sort)
            // Sorted on the columns of a column scan (every object matches): the same order.
            let onColumns = realm.objects(User.self).filter(#Predicate { $0.rank > -10 }).sorted(by: sort)
            XCTAssertTrue(onColumns.explain().contains("column scan"), onColumns.explain())
            XCTAssertEqual(onColumns.map(\.objId), sorted.map(\.objId), "sort \(number) on columns")
            XCTAssertEqual(Array(onColumns.prefix(5)).map(\.objId), Array(sorted.prefix(5)).map(\.objId))
            let values = sorted.map { user in sort.map { descriptor -> String in "\(user[keyPath: descriptor.keyPath!])" } }
            XCTAssertEqual(sorted.count, all.count)
            assertNoNeighboursReversed(sorted, by: sort, "sort \(number) (\(values.prefix(3)))")
        }
    }

    /// Each `#Predicate` node kind the compiler translates reaches the query IR (a column
    /// scan outside a write), and a key path whose root is a value rather than the
    /// predicate's object is not taken for a property: it falls back to evaluating the
    /// predicate, with the same answer.
    func testEachTranslatedNodeKindReachesTheIR() throws {
        let realm = try openRealm()
        try realm.write {
            for i in 0 ..< 40 {
                let user = newUser("\(i)", rank: i % 7 - 3, city: i % 2 == 0 ? "Ana" : "zed")
                user.active = i % 3 == 0
                user.joined = i % 4 == 0 ? nil : Date(timeIntervalSince1970: Double(i))
                try realm.add(user)
            }
        }
        let all = Array(realm.objects(User.self))
        let someDate: Date? = Date(timeIntervalSince1970: 6), word = "abc"
        let translated: [(String, Predicate<User>)] = [
            ("==", #Predicate { $0.rank == 1 }),
            ("!=", #Predicate { $0.rank != 1 }),
            ("<", #Predicate { $0.rank < 0 }),
            ("unary minus", #Predicate { $0.rank == -3 }),
            ("nil literal", #Predicate { $0.joined == nil }),
            ("Bool property alone", #Predicate { $0.active }),
            ("&&", #Predicate { $0.active && $0.rank > 0 }),
            ("||", #Predicate { $0.rank == 1 || $0.city == "Ana" }),
            ("!", #Predicate { !($0.rank == 1) }),
            ("an optional constant", #Predicate { $0.joined == someDate }),
        ]
        for (name, predicate) in translated {
            let results = realm.objects(User.self).filter(predicate)
            XCTAssertTrue(results.explain().contains("column scan"), "\(name): \(results.explain())")
            XCTAssertEqual(Set(results.map(\.objId)), Set(all.filter { (try? predicate.evaluate($0)) == true }.map(\.objId)), name)
        }
        // `word.count` is a key path over a value: not a stored property of the object.
        let overAValue = #Predicate<User> { $0.rank == word.count }
        let results = realm.objects(User.self).filter(overAValue)
        XCTAssertFalse(results.explain().contains("column scan"), results.explain())
        XCTAssertEqual(Set(results.map(\.objId)), Set(all.filter { $0.rank == 3 }.map(\.objId)))
        XCTAssertFalse(results.isEmpty)
    }
}
