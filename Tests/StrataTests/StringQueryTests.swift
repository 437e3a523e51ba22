// The string query language: what each construct means on real objects, that errors name
// their offset, that equalities use the index, and a differential test — thousands of
// random queries evaluated by Strata and by an independent oracle written here in plain
// Swift (Foundation's string comparison for [c]/[d]), on random data with NaN, -0.0, nils,
// case and diacritic variants.

import XCTest
import Foundation
import StrataTestSupport
@testable import Strata

final class StringQueryTests: RealmTestCase {
    private func seed(_ realm: Realm) throws {
        try realm.write {
            let car = Car()
            car.vin = "V1"
            car.model = "Model T"
            car.year = 1908
            let people: [(String, Int, String, String, [String], [String])] = [
                ("1", 5, "Bell", "Raleigh", ["a", "b"], ["1111", "2222"]),
                ("2", 2, "bennett", "Durham", ["a"], ["3333"]),
                ("3", 9, "Brown", "Raleigh", [], []),
                ("4", 4, "Ávila", "Cary", ["x", "y", "z"], ["1111"]),
                ("5", 7, "Chen", "Durham", ["b"], []),
            ]
            for (id, rank, last, city, tags, numbers) in people {
                let user = newUser(id, rank: rank, city: city, lastName: last)
                user.score = Double(rank) / 2
                user.active = rank > 4
                user.tags.append(contentsOf: tags)
                for number in numbers {
                    let phone = Phone()
                    phone.number = number
                    user.phones.append(phone)
                }
                if id == "1" || id == "3" { user.car = car }
                if id == "2" { user.joined = Date(timeIntervalSince1970: 1_000) }
                try realm.add(user)
            }
        }
    }

    private func ids(_ results: Results<User>) -> [String] { results.map(\.objId) }

    func testTheLanguageOnRealObjects() throws {
        let realm = try openRealm()
        try seed(realm)
        let users = realm.objects(User.self)
        XCTAssertEqual(ids(users.filter("rank > %@ AND lastName BEGINSWITH[c] %@", 3, "b")), ["1", "3"])
        XCTAssertEqual(ids(users.filter("ANY phones.number == '1111' AND tags.@count > 1")), ["1", "4"])
        XCTAssertEqual(ids(users.filter("phones.number == '3333'")), ["2"])              // implicit ANY
        XCTAssertEqual(ids(users.filter("ALL tags == 'a'")), ["2", "3"])                  // vacuously true for no tags
        XCTAssertEqual(ids(users.filter("NONE tags == 'a'")), ["3", "4", "5"])
        XCTAssertEqual(ids(users.filter("'b' IN tags")), ["1", "5"])
        XCTAssertEqual(ids(users.filter("car.model == 'Model T'")), ["1", "3"])
        XCTAssertEqual(ids(users.filter("car == nil")), ["2", "4", "5"])
        XCTAssertEqual(ids(users.filter("car.year BETWEEN {1900, 1910}")), ["1", "3"])
        XCTAssertEqual(ids(users.filter("rank BETWEEN {4, 7}")), ["1", "4", "5"])
        XCTAssertEqual(ids(users.filter("city IN {'Cary', 'Durham'}")), ["2", "4", "5"])
        XCTAssertEqual(ids(users.filter("city IN %@", ["Cary"])), ["4"])
        XCTAssertEqual(ids(users.filter("lastName LIKE 'B*n*'")), ["3"])
        XCTAssertEqual(ids(users.filter("lastName LIKE[c] 'b?ll'")), ["1"])
        XCTAssertEqual(ids(users.filter("lastName CONTAINS[cd] 'AVI'")), ["4"])
        XCTAssertEqual(ids(users.filter("lastName ENDSWITH 'n'")), ["3", "5"])
        XCTAssertEqual(ids(users.filter("NOT (rank < 5) && !(city == 'Durham')")), ["1", "3"])
        XCTAssertEqual(ids(users.filter("rank > 4.5 OR joined != nil")), ["1", "2", "3", "5"])
        XCTAssertEqual(ids(users.filter("joined < %@", Date(timeIntervalSince1970: 2_000))), ["2"])
        XCTAssertEqual(ids(users.filter("%K == %@", "city", "Cary")), ["4"])
        XCTAssertEqual(ids(users.filter("rank == $1 OR rank == $0", 2, 9)), ["2", "3"])
        XCTAssertEqual(ids(users.filter("active == TRUE AND score >= 2.5")), ["1", "3", "5"])
        XCTAssertEqual(ids(users.filter("phones.@count == 0")), ["3", "5"])
        XCTAssertEqual(ids(users.filter("phones.@max.number == '3333'")), ["2"])
        XCTAssertEqual(ids(users.filter("TRUEPREDICATE")).count, 5)
        XCTAssertEqual(ids(users.filter("FALSEPREDICATE")), [])
        XCTAssertEqual(ids(users.filter("car == %@", realm.object(ofType: Car.self, forPrimaryKey: "V1")!)), ["1", "3"])
        // SORT and LIMIT; sorted(byKeyPath:).
        XCTAssertEqual(ids(users.filter("rank > 0 SORT(rank DESC) LIMIT(3)")), ["3", "5", "1"])
        XCTAssertEqual(ids(users.filter("TRUEPREDICATE SORT(city ASC, rank DESC)")), ["4", "5", "2", "3", "1"])
        XCTAssertEqual(ids(users.sorted(byKeyPath: "rank", ascending: false)), ["3", "5", "1", "4", "2"])
        XCTAssertEqual(users.filter("rank > 0 LIMIT(2)").count, 2)
        // Filters combine with #Predicate filters and with each other.
        XCTAssertEqual(ids(users.filter(#Predicate { $0.rank > 3 }).filter("city == 'Raleigh'")), ["1", "3"])
        // Keywords are case-insensitive; = and <> work.
        XCTAssertEqual(ids(users.filter("rank = 5 or city <> 'Raleigh' and rank between {1, 2}")), ["1", "2"])
    }

    /// A nil (or deleted) to-one link on a key path makes the value nil, as NSPredicate and
    /// #Predicate read it: `car.model != 'T'` holds for a user without a car (it selected
    /// nobody before, so `!=` was not the negation of `==`), and `car.model == nil` holds.
    /// Found by the #Predicate/string differential test.
    func testANilLinkOnAKeyPathReadsAsNil() throws {
        let realm = try openRealm()
        try seed(realm)
        let users = realm.objects(User.self)
        let withoutCar = ["2", "4", "5"]
        XCTAssertEqual(ids(users.filter("car.model != 'Model T'")), withoutCar)
        XCTAssertEqual(ids(users.filter("car.model == nil")), withoutCar)
        XCTAssertEqual(ids(users.filter("NOT (car.model == 'Model T')")), ids(users.filter("car.model != 'Model T'")))
        XCTAssertEqual(ids(users.filter("car.year < 2000 OR car.year == nil")), ["1", "2", "3", "4", "5"])
        XCTAssertEqual(ids(users.filter("car.model != 'Model T'")), ids(users.filter(#Predicate { $0.car?.model != "Model T" })))
        XCTAssertEqual(ids(users.filter("car == nil")), withoutCar)
        // A link to a deleted object reads as nil too (as the object's accessor reads it: it
        // did not before), and a list skips it (@count counts what the list shows).
        try realm.write {
            try realm.delete(realm.objects(Car.self))
            try realm.delete(realm.objects(Phone.self).filter("number == '2222'"))
        }
        XCTAssertEqual(ids(users.filter("car == nil")), ["1", "2", "3", "4", "5"])
        XCTAssertEqual(ids(users.filter("car.model == nil")), ["1", "2", "3", "4", "5"])
        XCTAssertEqual(ids(users.filter("phones.@count == 1")), users.filter { $0.phones.count == 1 }.map(\.objId))
        XCTAssertEqual(ids(users.filter("phones.@count == 1")), ["1", "2", "4"])
        // Through a list, an empty list still means no values (ANY is false, NONE true).
        XCTAssertEqual(ids(users.filter("ANY phones.number == nil")), [])
        XCTAssertEqual(ids(users.filter("NONE phones.number == '1111'")), ["2", "3", "5"])
    }

    func testInAWriteThePendingChangesAreQueried() throws {
        let realm = try openRealm()
        try seed(realm)
        try realm.write {
            realm.object(ofType: User.self, forPrimaryKey: "2")!.rank = 100
            let car = realm.object(ofType: Car.self, forPrimaryKey: "V1")!
            car.model = "Model A"
            XCTAssertEqual(ids(realm.objects(User.self).filter("rank >= 100")), ["2"])
            XCTAssertEqual(ids(realm.objects(User.self).filter("car.model == 'Model A'")), ["1", "3"])
        }
    }

    func testEqualitiesOnIndexedPropertiesUseTheIndex() throws {
        let realm = try openRealm()
        try seed(realm)
        let byCity = realm.objects(User.self).filter("city == 'Durham' AND rank > 3")
        XCTAssertEqual(byCity.query.indexTerm?.propertyIndex, User.objectSchemaIndex("city"))
        XCTAssertEqual(ids(byCity), ["5"])
        let byKey = realm.objects(User.self).filter("objId == '4'")
        XCTAssertEqual(byKey.query.indexTerm?.propertyIndex, User.objectSchemaIndex("objId"))
        XCTAssertEqual(ids(byKey), ["4"])
        // Not an index look-up: case-insensitive, or under OR.
        XCTAssertNil(realm.objects(User.self).filter("city ==[c] 'durham'").query.indexTerm)
        XCTAssertNil(realm.objects(User.self).filter("city == 'Durham' OR rank > 3").query.indexTerm)
    }

    /// A key-path or SORT(…) sort after a #Predicate that is evaluated on objects (not
    /// translated to stored fields) still orders the results, and LIMIT keeps the first
    /// of that order (before, both came back in primary-key order).
    func testKeyPathSortsOrderResultsFilteredOnObjects() throws {
        let realm = try openRealm()
        try seed(realm)
        let long = realm.objects(User.self).filter(#Predicate { $0.lastName.count > 4 })   // not translated
        XCTAssertEqual(ids(long), ["2", "3", "4"])
        XCTAssertEqual(ids(long.sorted(byKeyPath: "rank")), ["2", "4", "3"])
        XCTAssertEqual(ids(long.sorted(byKeyPath: "rank", ascending: false)), ["3", "4", "2"])
        XCTAssertEqual(ids(try long.filter(query: "TRUEPREDICATE SORT(rank DESC) LIMIT(2)")), ["3", "4"])
    }

    /// Parse, compile and evaluation recurse once per level: a query nested deeper than the
    /// bound is an error at its offset, not a stack overflow (each of these crashed before).
    func testDeepNestingIsAnErrorNotACrash() throws {
        let realm = try openRealm()
        try seed(realm)
        let users = realm.objects(User.self)
        let deep = 100_000
        for query in [String(repeating: "(", count: deep) + "rank > 1" + String(repeating: ")", count: deep),
                      String(repeating: "NOT ", count: deep) + "rank > 1",
                      Array(repeating: "rank == 1", count: deep).joined(separator: " OR "),
                      "rank IN " + String(repeating: "{", count: deep)] {
            XCTAssertThrowsError(try users.filter(query: query)) { error in
                guard case RealmError.invalidQuery(_, let offset, let reason) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("more than 1000 conditions"), reason)
                XCTAssertGreaterThan(offset, 0)
            }
        }
        // Up to the bound, long alternatives still work.
        let alternatives = (1 ... 900).map { "rank == \($0)" }.joined(separator: " OR ")
        XCTAssertEqual(try users.filter(query: alternatives).count, 5)
    }

    func testErrorsNameTheOffsetAndWhatWasExpected() throws {
        let realm = try openRealm()
        let users = realm.objects(User.self)
        func failure(_ query: String, _ arguments: [Any?] = []) -> (Int, String)? {
            do {
                _ = try users.filter(query: query, arguments: arguments)
                return nil
            } catch let RealmError.invalidQuery(text, offset, reason) {
                XCTAssertEqual(text, query)
                return (offset, reason)
            } catch {
                XCTFail("\(error)")
                return nil
            }
        }
        // A list compared as one value is never true: an error, not an empty result.
        for query in ["rank < {1, 2}", "lastName BEGINSWITH {'a'}", "{1, 2} == rank", "rank > %@"] {
            let found = failure(query, [[1, 2]])
            XCTAssertNotNil(found, query)
            XCTAssertTrue(found?.1.contains("a list of values can only be") ?? false, "\(query): \(found?.1 ?? "")")
        }
        XCTAssertEqual(try users.filter(query: "rank == {1, 2} OR rank IN %@", arguments: [[3]]).count, 0)
        XCTAssertEqual(failure("rank > > 3")?.0, 7)
        XCTAssertTrue(failure("rank > > 3")?.1.contains("expected a property, a value or an argument") ?? false)
        XCTAssertEqual(failure("rank > 3 AND")?.0, 12)
        XCTAssertEqual(failure("nope == 3")?.0, 0)
        XCTAssertTrue(failure("nope == 3")?.1.contains("User has no property 'nope'") ?? false)
        XCTAssertTrue(failure("car.nope == 3")?.1.contains("Car has no property 'nope'") ?? false)
        XCTAssertTrue(failure("lastName > 3")?.1.contains("lastName holds string") ?? false)
        XCTAssertTrue(failure("rank BEGINSWITH 'a'")?.1.contains("needs strings") ?? false)
        XCTAssertTrue(failure("rank == %@")?.1.contains("needs argument 1") ?? false)
        XCTAssertEqual(failure("lastName == 'open")?.0, 12)
        XCTAssertTrue(failure("rank == 3 SORT(nope)")?.1.contains("no property 'nope' to sort by") ?? false)
        XCTAssertTrue(failure("ANY rank == 3")?.1.contains("need a key path through a list") ?? false)
        XCTAssertTrue(failure("rank.@count > 1")?.1.contains("needs a list") ?? false)
        XCTAssertTrue(failure("")?.1.contains("empty") ?? false)
        XCTAssertTrue(failure("rank == 3 LIMIT(-1)")?.1.contains("non-negative") ?? false)
        XCTAssertTrue(failure("rank == 3 junk")?.1.contains("expected AND, OR, SORT, LIMIT or the end") ?? false)
        XCTAssertTrue(failure("active < TRUE")?.1.contains("cannot be ordered") ?? false)
        XCTAssertTrue(failure("rank == %d", ["x"])?.1.contains("%d needs an integer") ?? false)
        // An argument of a type the property cannot be compared with: an error at its offset.
        XCTAssertEqual(failure("rank == %@", ["three"])?.0, 0, "the comparison's offset")
        XCTAssertTrue(failure("rank == %@", ["three"])?.1.contains("rank holds int; it cannot be compared with String three") ?? false,
                      "\(String(describing: failure("rank == %@", ["three"])))")
        XCTAssertTrue(failure("lastName == %@", [UUID()])?.1.contains("lastName holds string") ?? false)
        XCTAssertThrowsError(try users.sorted(byKeyPaths: [("tags", true)]))
    }

    // MARK: Differential test against an independent oracle

    /// One random condition, as query text and as an oracle over plain values.
    private struct Case {
        var text: String
        var arguments: [Any?]
        var oracle: (Person) -> Bool
    }

    /// A user's values, as the oracle sees them.
    private struct Person {
        var id: String
        var rank: Int
        var score: Double
        var lastName: String
        var active: Bool
        var joined: Date?
        var tags: [String]
    }

    private static let letters = ["a", "A", "á", "Á", "b", "B", "é", "e", "E", "ñ", "n", "ß"]

    private func randomString(_ rng: inout SplitMix64, maxLength: Int = 3) -> String {
        (0..<Int.random(in: 0...maxLength, using: &rng)).map { _ in Self.letters.randomElement(using: &rng)! }.joined()
    }

    private func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'" }

    private func foundationOptions(_ flags: String) -> String.CompareOptions {
        var options: String.CompareOptions = []
        if flags.contains("c") { options.insert(.caseInsensitive) }
        if flags.contains("d") { options.insert(.diacriticInsensitive) }
        return options
    }

    private func randomCase(_ rng: inout SplitMix64, depth: Int) -> Case {
        if depth > 0, Int.random(in: 0..<3, using: &rng) == 0 {
            let a = randomCase(&rng, depth: depth - 1), b = randomCase(&rng, depth: depth - 1)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: return Case(text: "(\(a.text)) AND (\(b.text))", arguments: a.arguments + b.arguments) { a.oracle($0) && b.oracle($0) }
            case 1: return Case(text: "(\(a.text)) OR (\(b.text))", arguments: a.arguments + b.arguments) { a.oracle($0) || b.oracle($0) }
            default: return Case(text: "NOT (\(a.text))", arguments: a.arguments) { !a.oracle($0) }
            }
        }
        let ops = ["==", "!=", "<", "<=", ">", ">="]
        func numeric<T: Comparable>(_ x: T, _ op: String, _ y: T) -> Bool {
            switch op {
            case "==": return x == y
            case "!=": return x != y
            case "<": return x < y
            case "<=": return x <= y
            case ">": return x > y
            default: return x >= y
            }
        }
        switch Int.random(in: 0..<9, using: &rng) {
        case 0:
            let op = ops.randomElement(using: &rng)!, value = Int.random(in: -2...12, using: &rng)
            return Case(text: "rank \(op) \(value)", arguments: []) { numeric($0.rank, op, value) }
        case 1:
            let op = ops.randomElement(using: &rng)!
            let value: Double = [0.0, -0.0, 1.5, 2, .nan, -3.25, 4].randomElement(using: &rng)!
            return Case(text: "score \(op) %@", arguments: [value]) { numeric($0.score, op, value) }
        case 2:
            let op = ["==", "!=", "<", ">"].randomElement(using: &rng)!
            let flags = ["", "c", "d", "cd"].randomElement(using: &rng)!
            let value = randomString(&rng)
            let options = foundationOptions(flags)
            return Case(text: "lastName \(op)\(flags.isEmpty ? "" : "[\(flags)]") \(quoted(value))", arguments: []) { person in
                let order = person.lastName.compare(value, options: options)
                switch op {
                case "==": return options.isEmpty ? person.lastName == value : order == .orderedSame
                case "!=": return options.isEmpty ? person.lastName != value : order != .orderedSame
                case "<": return options.isEmpty ? person.lastName < value : order == .orderedAscending
                default: return options.isEmpty ? person.lastName > value : order == .orderedDescending
                }
            }
        case 3:
            let op = ["BEGINSWITH", "ENDSWITH", "CONTAINS"].randomElement(using: &rng)!
            let flags = ["", "c", "d", "cd"].randomElement(using: &rng)!
            let value = randomString(&rng, maxLength: 2)
            var options = foundationOptions(flags)
            if op == "BEGINSWITH" { options.insert(.anchored) }
            if op == "ENDSWITH" { options.formUnion([.anchored, .backwards]) }
            return Case(text: "lastName \(op)\(flags.isEmpty ? "" : "[\(flags)]") %@", arguments: [value]) { person in
                value.isEmpty || person.lastName.range(of: value, options: options) != nil
            }
        case 4:
            let value = Bool.random(using: &rng)
            return Case(text: "active == \(value ? "TRUE" : "FALSE")", arguments: []) { $0.active == value }
        case 5:
            if Bool.random(using: &rng) {
                let isNil = Bool.random(using: &rng)
                return Case(text: "joined \(isNil ? "==" : "!=") nil", arguments: []) { ($0.joined == nil) == isNil }
            }
            let date = Date(timeIntervalSince1970: Double(Int.random(in: 0...4, using: &rng)) * 1000)
            let op = ["<", ">=", "=="].randomElement(using: &rng)!
            return Case(text: "joined \(op) %@", arguments: [date]) { person in person.joined.map { numeric($0, op, date) } ?? false }
        case 6:
            let value = Self.letters.randomElement(using: &rng)!
            let quantifier = ["ANY", "ALL", "NONE", ""].randomElement(using: &rng)!
            return Case(text: "\(quantifier) tags == \(quoted(value))", arguments: []) { person in
                switch quantifier {
                case "ALL": return person.tags.allSatisfy { $0 == value }
                case "NONE": return !person.tags.contains(value)
                default: return person.tags.contains(value)
                }
            }
        case 7:
            let op = ops.randomElement(using: &rng)!, value = Int.random(in: 0...3, using: &rng)
            return Case(text: "tags.@count \(op) \(value)", arguments: []) { numeric($0.tags.count, op, value) }
        default:
            let low = Int.random(in: 0...6, using: &rng), high = low + Int.random(in: 0...5, using: &rng)
            if Bool.random(using: &rng) {
                return Case(text: "rank BETWEEN {\(low), \(high)}", arguments: []) { $0.rank >= low && $0.rank <= high }
            }
            let values = (0..<3).map { _ in Int.random(in: 0...10, using: &rng) }
            return Case(text: "rank IN %@", arguments: [values]) { values.contains($0.rank) }
        }
    }

    func testRandomQueriesAgreeWithAnIndependentOracle() throws {
        let realm = try openRealm()
        var rng = SplitMix64(seed: 0x51_7E_4A)
        var people: [Person] = []
        try realm.write {
            for i in 0..<60 {
                let person = Person(
                    id: "p\(i)", rank: Int.random(in: 0...10, using: &rng),
                    score: [0.0, -0.0, 1.5, 2, .nan, -3.25, 4, 7.5].randomElement(using: &rng)!,
                    lastName: randomString(&rng), active: Bool.random(using: &rng),
                    joined: Bool.random(using: &rng) ? Date(timeIntervalSince1970: Double(Int.random(in: 0...4, using: &rng)) * 1000) : nil,
                    tags: (0..<Int.random(in: 0...3, using: &rng)).map { _ in Self.letters.randomElement(using: &rng)! })
                people.append(person)
                let user = newUser(person.id, rank: person.rank, lastName: person.lastName)
                user.score = person.score
                user.active = person.active
                user.joined = person.joined
                user.tags.append(contentsOf: person.tags)
                try realm.add(user)
            }
        }
        let users = realm.objects(User.self)
        let count = 5000 * TestEnvironment.fuzzScale
        var nonTrivial = 0
        for n in 0..<count {
            let testCase = randomCase(&rng, depth: 3)
            let expected = Set(people.filter(testCase.oracle).map(\.id))
            let found = Set(try users.filter(query: testCase.text, arguments: testCase.arguments).map(\.objId))
            if !expected.isEmpty && expected.count < people.count { nonTrivial += 1 }
            if found != expected {
                XCTFail("query #\(n) \(testCase.text) \(testCase.arguments): expected \(expected.sorted()), got \(found.sorted())")
                return
            }
        }
        XCTAssertGreaterThan(nonTrivial, count / 3, "most random queries select some but not all objects")
    }

    /// The same conditions as `#Predicate` and as text give the same objects.
    func testTextAndPredicateAgree() throws {
        let realm = try openRealm()
        try seed(realm)
        let users = realm.objects(User.self)
        func same(_ text: String, arguments: [Any?] = [], _ predicate: Predicate<User>) throws {
            XCTAssertEqual(ids(try users.filter(query: text, arguments: arguments)), ids(users.filter(predicate)), text)
        }
        try same("rank > 3", #Predicate { $0.rank > 3 })
        try same("rank >= 4 AND city == 'Durham'", #Predicate { $0.rank >= 4 && $0.city == "Durham" })
        try same("NOT (city == 'Raleigh') OR score < 2", #Predicate { !($0.city == "Raleigh") || $0.score < 2 })
        try same("lastName BEGINSWITH 'B'", #Predicate { $0.lastName.starts(with: "B") })
        try same("joined == nil", #Predicate { $0.joined == nil })
        try same("active == true AND rank != 9", #Predicate { $0.active == true && $0.rank != 9 })
        try same("score <= %@", arguments: [2.5], #Predicate { $0.score <= 2.5 })
    }
}

extension User {
    static func objectSchemaIndex(_ name: String) -> Int? { User().objectSchema.index(of: name) }
}

/// Aggregates read stored values without building objects, and agree with the objects.
final class AggregateTests: RealmTestCase {
    func testAggregatesFromStoredValuesAgreeWithTheObjects() throws {
        let realm = try openRealm()
        try realm.write {
            for i in 0..<200 {
                let user = newUser("\(i)", rank: i % 17, city: i % 3 == 0 ? "Raleigh" : "Cary")
                user.score = Double(i) / 4
                try realm.add(user)
            }
        }
        let all = realm.objects(User.self)
        for results in [all, all.filter(#Predicate { $0.city == "Raleigh" }), all.filter("rank > 5 SORT(score DESC)")] {
            let objects = Array(results)
            XCTAssertEqual(results.min(of: \.rank), objects.map(\.rank).min())
            XCTAssertEqual(results.max(of: \.score), objects.map(\.score).max())
            XCTAssertEqual(results.sum(of: \.rank), objects.map(\.rank).reduce(0, +))
            XCTAssertEqual(results.average(of: \.score), objects.map(\.score).reduce(0, +) / Double(objects.count))
            XCTAssertEqual(results.average(of: \.rank), Double(objects.map(\.rank).reduce(0, +)) / Double(objects.count))
            XCTAssertEqual(results.max(of: \.lastName), objects.map(\.lastName).max())
        }
        // Inside a write, pending changes count.
        try realm.write {
            realm.object(ofType: User.self, forPrimaryKey: "3")!.rank = 1000
            XCTAssertEqual(all.max(of: \.rank), 1000)
            XCTAssertNotNil(all.filter(#Predicate { $0.city == "Raleigh" }).query.storedValues(of: 4, in: realm))
        }
        // Strings compare as Swift does.
        XCTAssertEqual(all.filter("rank == 0").max(of: \.username), "user85")
    }
}
