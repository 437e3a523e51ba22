// Issue 14: random conditions built three ways — as a `#Predicate` tree made at run time
// from `PredicateExpressions` values, as the string query language, and as an oracle in
// plain Swift — must select the same objects, on random data with NaN, -0.0, nils, and
// case and diacritic variants of strings (an indexed property among them, so index look-ups
// are compared with scans). The `#Predicate` trees are the types the `#Predicate` macro
// writes, so Strata translates them to field predicates where it can and evaluates the
// rest on objects, as it does for predicates written in code.
//
// `[c]`/`[d]` string options have no `#Predicate` form on Linux (swift-foundation's
// caseInsensitiveCompare and localizedStandardContains are Darwin-only), so those are
// checked against the oracle alone here and in StringQueryTests.

import Foundation
import XCTest
import StrataTestSupport
@testable import Strata

final class PredicateDifferentialTests: RealmTestCase {
    typealias Expression = any StandardPredicateExpression<Bool>
    typealias Root = PredicateExpressions.Variable<User>

    /// One condition in its three forms.
    struct Condition {
        var text: String
        var arguments: [Any?]
        var oracle: (Person) -> Bool
        /// The `#Predicate` expression over a given variable (rebuilt per variable).
        var expression: (Root) -> Expression
        /// Whether Strata runs it on stored fields (else on objects), for coverage counts.
        var translatable: Bool
    }

    struct Person {
        var id: String
        var rank: Int
        var score: Double
        var lastName: String
        var city: String
        var active: Bool
        var joined: Date?
        var tags: [String]
        /// The model of the user's car (nil: no car).
        var carModel: String?
    }

    static let letters = ["a", "A", "á", "Á", "b", "é", "e", "E", "ß"]
    static let cities = ["Ana", "ana", "Ána", "éclair", "eclair", "e\u{301}clair"]
    static let scores: [Double] = [0.0, -0.0, 1.5, 2, .nan, -3.25, 4]
    static let ops = ["==", "!=", "<", "<=", ">", ">="]
    static let carModels = ["T", "t", "S"]

    // MARK: Building expressions (existentials opened into the macro's generic types)

    static func key<V>(_ root: Root, _ keyPath: KeyPath<User, V> & Sendable) -> PredicateExpressions.KeyPath<Root, V> {
        PredicateExpressions.KeyPath(root: root, keyPath: keyPath)
    }

    static func compare<L: StandardPredicateExpression, V: Comparable & Codable & Sendable>(_ lhs: L, _ op: String, _ value: V) -> Expression
    where L.Output == V {
        let rhs = PredicateExpressions.Value(value)
        switch op {
        case "==": return PredicateExpressions.Equal(lhs: lhs, rhs: rhs)
        case "!=": return PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs)
        case "<": return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThan)
        case "<=": return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThanOrEqual)
        case ">": return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThan)
        default: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThanOrEqual)
        }
    }

    static func and(_ a: Expression, _ b: Expression) -> Expression {
        func open<A: StandardPredicateExpression<Bool>, B: StandardPredicateExpression<Bool>>(_ a: A, _ b: B) -> Expression {
            PredicateExpressions.Conjunction(lhs: a, rhs: b)
        }
        return open(a, b)
    }

    static func or(_ a: Expression, _ b: Expression) -> Expression {
        func open<A: StandardPredicateExpression<Bool>, B: StandardPredicateExpression<Bool>>(_ a: A, _ b: B) -> Expression {
            PredicateExpressions.Disjunction(lhs: a, rhs: b)
        }
        return open(a, b)
    }

    static func not(_ a: Expression) -> Expression {
        func open<A: StandardPredicateExpression<Bool>>(_ a: A) -> Expression { PredicateExpressions.Negation(a) }
        return open(a)
    }

    /// The `Predicate<User>` of a condition: the expression's concrete type comes from a
    /// sample built over a throwaway variable; the predicate's own variable builds the real one.
    static func predicate(_ condition: Condition) -> Predicate<User> {
        func make<E: StandardPredicateExpression<Bool>>(_ sample: E) -> Predicate<User> {
            Predicate<User> { root in condition.expression(root) as! E }
        }
        return make(condition.expression(Root()))
    }

    static func numeric<T: Comparable>(_ x: T, _ op: String, _ y: T) -> Bool {
        switch op {
        case "==": return x == y
        case "!=": return x != y
        case "<": return x < y
        case "<=": return x <= y
        case ">": return x > y
        default: return x >= y
        }
    }

    static func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "\\'") + "'" }

    static func randomString(_ rng: inout SplitMix64) -> String {
        (0 ..< Int.random(in: 0 ... 3, using: &rng)).map { _ in letters.randomElement(using: &rng)! }.joined()
    }

    // MARK: Random conditions

    static func randomCondition(_ rng: inout SplitMix64, depth: Int) -> Condition {
        if depth > 0, Int.random(in: 0 ..< 3, using: &rng) == 0 {
            let a = randomCondition(&rng, depth: depth - 1), b = randomCondition(&rng, depth: depth - 1)
            switch Int.random(in: 0 ..< 3, using: &rng) {
            case 0:
                return Condition(text: "(\(a.text)) AND (\(b.text))", arguments: a.arguments + b.arguments, oracle: { a.oracle($0) && b.oracle($0) },
                                 expression: { and(a.expression($0), b.expression($0)) }, translatable: a.translatable && b.translatable)
            case 1:
                return Condition(text: "(\(a.text)) OR (\(b.text))", arguments: a.arguments + b.arguments, oracle: { a.oracle($0) || b.oracle($0) },
                                 expression: { or(a.expression($0), b.expression($0)) }, translatable: a.translatable && b.translatable)
            default:
                return Condition(text: "NOT (\(a.text))", arguments: a.arguments, oracle: { !a.oracle($0) },
                                 expression: { not(a.expression($0)) }, translatable: a.translatable)
            }
        }
        let op = ops.randomElement(using: &rng)!
        switch Int.random(in: 0 ..< 10, using: &rng) {
        case 0:
            let value = Int.random(in: -2 ... 12, using: &rng)
            return Condition(text: "rank \(op) \(value)", arguments: [], oracle: { numeric($0.rank, op, value) },
                             expression: { compare(key($0, \User.rank), op, value) }, translatable: true)
        case 1:
            let value = scores.randomElement(using: &rng)!
            return Condition(text: "score \(op) %@", arguments: [value], oracle: { numeric($0.score, op, value) },
                             expression: { compare(key($0, \User.score), op, value) }, translatable: true)
        case 2:
            let value = randomString(&rng)
            return Condition(text: "lastName \(op) \(quoted(value))", arguments: [], oracle: { numeric($0.lastName, op, value) },
                             expression: { compare(key($0, \User.lastName), op, value) }, translatable: true)
        case 3:
            // An indexed property: `==` reads the index in both forms.
            let value = cities.randomElement(using: &rng)!
            let equality = Bool.random(using: &rng) ? "==" : "!="
            return Condition(text: "city \(equality) %@", arguments: [value], oracle: { numeric($0.city, equality, value) },
                             expression: { compare(key($0, \User.city), equality, value) }, translatable: true)
        case 4:
            let value = Bool.random(using: &rng)
            return Condition(text: "active == \(value ? "TRUE" : "FALSE")", arguments: [], oracle: { $0.active == value },
                             expression: { equalBool(key($0, \User.active), value) }, translatable: true)
        case 5:
            let date: Date? = Bool.random(using: &rng) ? nil : Date(timeIntervalSince1970: Double(Int.random(in: 0 ... 4, using: &rng)) * 1000)
            let equality = Bool.random(using: &rng) ? "==" : "!="
            return Condition(text: "joined \(equality) %@", arguments: [date as Any?], oracle: { ($0.joined == date) == (equality == "==") },
                             expression: { optionalDate(key($0, \User.joined), equality, date) }, translatable: true)
        case 6:
            let value = randomString(&rng)
            return Condition(text: "lastName BEGINSWITH %@", arguments: [value], oracle: { $0.lastName.hasPrefix(value) },
                             expression: { startsWith(key($0, \User.lastName), value) }, translatable: false)
        case 7:
            let value = letters.randomElement(using: &rng)!
            switch Int.random(in: 0 ..< 3, using: &rng) {
            case 0:
                return Condition(text: "ANY tags == %@", arguments: [value], oracle: { $0.tags.contains(value) },
                                 expression: { tagsContain($0, value) }, translatable: false)
            case 1:
                return Condition(text: "NONE tags == %@", arguments: [value], oracle: { !$0.tags.contains(value) },
                                 expression: { not(tagsContain($0, value)) }, translatable: false)
            default:
                return Condition(text: "ALL tags == %@", arguments: [value], oracle: { $0.tags.allSatisfy { $0 == value } },
                                 expression: { tagsAll($0, value) }, translatable: false)
            }
        case 8:
            // Through a to-one link that may be nil: nil then compares as nil.
            let value = carModels.randomElement(using: &rng)!
            let equality = Bool.random(using: &rng) ? "==" : "!="
            return Condition(text: "car.model \(equality) %@", arguments: [value], oracle: { ($0.carModel == value) == (equality == "==") },
                             expression: { carModel($0, equality, value) }, translatable: false)
        default:
            let values = (0 ..< Int.random(in: 1 ... 3, using: &rng)).map { _ in Int.random(in: 0 ... 10, using: &rng) }
            return Condition(text: "rank IN %@", arguments: [values], oracle: { values.contains($0.rank) },
                             expression: { rankIn($0, values) }, translatable: false)
        }
    }

    static func carModel(_ root: Root, _ equality: String, _ value: String) -> Expression {
        let model = PredicateExpressions.build_flatMap(PredicateExpressions.KeyPath(root: root, keyPath: \User.car)) { car in
            PredicateExpressions.KeyPath(root: car, keyPath: \Car.model)
        }
        let rhs = PredicateExpressions.Value(String?.some(value))
        return equality == "==" ? PredicateExpressions.Equal(lhs: model, rhs: rhs) : PredicateExpressions.NotEqual(lhs: model, rhs: rhs)
    }

    static func equalBool(_ lhs: PredicateExpressions.KeyPath<Root, Bool>, _ value: Bool) -> Expression {
        PredicateExpressions.Equal(lhs: lhs, rhs: PredicateExpressions.Value(value))
    }

    static func optionalDate(_ lhs: PredicateExpressions.KeyPath<Root, Date?>, _ equality: String, _ date: Date?) -> Expression {
        let rhs = PredicateExpressions.Value(date)
        return equality == "==" ? PredicateExpressions.Equal(lhs: lhs, rhs: rhs) : PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs)
    }

    static func startsWith(_ lhs: PredicateExpressions.KeyPath<Root, String>, _ prefix: String) -> Expression {
        PredicateExpressions.build_starts(lhs, with: PredicateExpressions.Value(prefix))
    }

    static func tagsContain(_ root: Root, _ value: String) -> Expression {
        PredicateExpressions.build_contains(PredicateExpressions.KeyPath(root: root, keyPath: \User.tagArray), PredicateExpressions.Value(value))
    }

    static func tagsAll(_ root: Root, _ value: String) -> Expression {
        PredicateExpressions.build_allSatisfy(PredicateExpressions.KeyPath(root: root, keyPath: \User.tagArray)) { tag in
            PredicateExpressions.Equal(lhs: tag, rhs: PredicateExpressions.Value(value))
        }
    }

    static func rankIn(_ root: Root, _ values: [Int]) -> Expression {
        PredicateExpressions.build_contains(PredicateExpressions.Value(values), key(root, \User.rank))
    }

    // MARK: The test

    func testRandomPredicatesStringsAndTheOracleAgree() throws {
        let realm = try openRealm()
        var rng = SplitMix64(seed: TestEnvironment.seed(default: 0x14_D1FF))
        var people: [Person] = []
        try realm.write {
            let cars = Self.carModels.enumerated().map { position, model in
                let car = Car(); car.vin = "V\(position)"; car.model = model
                return car
            }
            for i in 0 ..< 60 {
                var person = Person(
                    id: "p\(i)", rank: Int.random(in: 0 ... 10, using: &rng), score: Self.scores.randomElement(using: &rng)!,
                    lastName: Self.randomString(&rng), city: Self.cities.randomElement(using: &rng)!, active: Bool.random(using: &rng),
                    joined: Bool.random(using: &rng) ? Date(timeIntervalSince1970: Double(Int.random(in: 0 ... 4, using: &rng)) * 1000) : nil,
                    tags: (0 ..< Int.random(in: 0 ... 3, using: &rng)).map { _ in Self.letters.randomElement(using: &rng)! },
                    carModel: nil)
                let car = Bool.random(using: &rng) ? cars.randomElement(using: &rng) : nil
                person.carModel = car?.model
                people.append(person)
                let user = newUser(person.id, rank: person.rank, city: person.city, lastName: person.lastName)
                user.score = person.score
                user.active = person.active
                user.joined = person.joined
                user.tags.append(contentsOf: person.tags)
                user.car = car
                try realm.add(user)
            }
        }
        let users = realm.objects(User.self)
        let objects = people.map { realm.object(ofType: User.self, forPrimaryKey: $0.id)! }
        let count = 5000 * TestEnvironment.fuzzScale
        var translated = 0, nonTrivial = 0
        for n in 0 ..< count {
            let condition = Self.randomCondition(&rng, depth: 3)
            let expected = Set(people.filter(condition.oracle).map(\.id))
            let byText = Set(try users.filter(query: condition.text, arguments: condition.arguments).map(\.objId))
            let predicate = Self.predicate(condition)
            let byPredicate = Set(users.filter(predicate).map(\.objId))
            let onObjects = Set(objects.filter { (try? predicate.evaluate($0)) == true }.map(\.objId))
            if condition.translatable { translated += 1 }
            if !expected.isEmpty && expected.count < people.count { nonTrivial += 1 }
            guard byText == expected, byPredicate == expected, onObjects == expected else {
                XCTFail("condition #\(n) \(condition.text) \(condition.arguments): oracle \(expected.sorted()), text \(byText.sorted()), "
                    + "#Predicate \(byPredicate.sorted()), Foundation on objects \(onObjects.sorted())")
                return
            }
        }
        XCTAssertGreaterThan(nonTrivial, count / 3, "most random conditions select some but not all objects")
        XCTAssertGreaterThan(translated, count / 4, "a good part run on stored fields")
    }
}

extension User {
    /// The tags as an array, for `PredicateExpressions` (a `List` is a class, and key paths
    /// in a predicate read values).
    var tagArray: [String] { Array(tags) }
}
