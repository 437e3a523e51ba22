// String queries on the query IR (issue 24, item 1: `#Predicate` and the string language
// compile to one expression tree, one planner). A string query whose condition translates
// (root properties against constants, AND/OR/NOT, IN, BETWEEN) is answered by the column
// scan; one that does not stays on the rows. Either way the answer is the string
// language's own: each query's closures, evaluated on every object's stored fields, are
// the oracle. Reproducible: STRATA_SEED.

import XCTest
import StrataTestSupport
@testable import Strata

final class TextQueryIRTests: RealmTestCase {
    /// (query, whether it translates to the IR)
    private let queries: [(String, Bool)] = [
        ("rank > 2", true),
        ("1 < rank", true),
        ("rank >= 2.5", false),           // an integer against a fraction: compared as Doubles, not in the IR
        ("rank == 2.0", false),
        ("score == 0", true),             // a double against an integer: the integer as a Double
        ("score < 3 AND score >= -1", true),
        ("score != score", false),        // two properties
        ("score BETWEEN {-2, 1.5}", true),
        ("lastName == 'éclair'", true),   // canonical equivalence, as Swift compares
        ("lastName < 'b'", true),
        ("lastName == nil", true),
        ("lastName BEGINSWITH 'a'", false),
        ("lastName ==[c] 'ANA'", false),
        ("joined == nil", true),
        ("joined != nil AND rank < 0", true),
        ("joined > $0", true),
        ("active == true", true),
        ("active != false OR rank == 1", true),
        ("rank IN {1, 2, 3}", true),
        ("rank == {1, 3}", true),
        ("rank != {1, 3}", true),
        ("NOT (score > 1) AND NOT (rank IN {0})", true),
        ("rank BETWEEN {-2, 2} OR lastName == 'zed'", true),
        ("TRUEPREDICATE", true),
        ("car.model == 'T'", false),      // through a link
        ("ANY tags == 'a'", false),
        ("tags.@count > 0", false),
    ]

    func testStringQueriesThatTranslateAreAnsweredByTheColumnScanAsTheLanguageDefinesThem() throws {
        let realm = try openRealm()
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 24))
        let names = ["ana", "Ana", "éclair", "e\u{301}clair", "zed", "b", ""]
        try realm.write {
            for id in 0 ..< 400 {
                let user = newUser("\(id)", rank: Int.random(in: -4 ... 4, using: &generator),
                                   city: "c", lastName: names.randomElement(using: &generator)!)
                user.score = [Double.nan, 0, -0.0, 1.5, -2, 7, 3][Int.random(in: 0 ..< 7, using: &generator)]
                user.joined = Bool.random(using: &generator) ? Date(timeIntervalSince1970: Double(Int.random(in: 0 ..< 4, using: &generator))) : nil
                user.active = Bool.random(using: &generator)
                if Int.random(in: 0 ..< 5, using: &generator) == 0 { user.tags.append("a") }
                try realm.add(user)
            }
        }
        let bound = try realm.boundType(for: User.self)
        let argument = Date(timeIntervalSince1970: 1)
        let everyone = Array(realm.objects(User.self))
        for (text, translates) in queries {
            let arguments: [Any?] = text.contains("$0") ? [argument] : []
            let compiled = try CompiledTextQuery.compile(text, arguments: arguments, root: bound, source: realm)
            XCTAssertEqual(compiled.expression != nil, translates, "\(text): translated to the IR")
            let expected = Set(everyone.filter { user in
                let fields = user._state!.allFields()!, key = user._state!.key
                return compiled.evaluate(realm, { $0 == RowAccess.ownKey ? .link(key) : ($0 < fields.count ? fields[$0] : .null) })
            }.map(\.objId))
            let results = try realm.objects(User.self).filter(query: text, arguments: arguments)
            let explained = results.explain()
            XCTAssertEqual(explained.contains("column scan"), translates, "\(text): \(explained)")
            XCTAssertEqual(Set(results.map(\.objId)), expected, text)
            XCTAssertEqual(results.count, expected.count, "\(text): count")
            // Beside a `#Predicate` filter, in both orders of the two.
            let both = try realm.objects(User.self).filter(#Predicate { $0.rank != 3 }).filter(query: text, arguments: arguments)
            XCTAssertEqual(Set(both.map(\.objId)), expected.subtracting(everyone.filter { $0.rank == 3 }.map(\.objId)), "\(text) with a predicate")
        }
    }

    /// A stored field of another kind than its property's (a damaged or hand-made row): the
    /// language compares any two numbers as `Double`s, the IR is false across kinds, so such
    /// a row is judged by the language's closures, through the rows and through the columns.
    func testARowHoldingANumberOfAnotherKindIsJudgedByTheLanguagesRules() throws {
        let realm = try openRealm()
        try realm.write { for id in 0 ..< 5 { try realm.add(makeUser("\(id)", rank: 3)) } }
        let schema = try XCTUnwrap(realm.schema["User"])
        let table = StoreLayout.objectTable(schema.tableNumber)
        let key = PrimaryKeyValue.string("1").keyBytes
        var fields = try RowFormat.fields(of: try XCTUnwrap(realm.store.get(table: table, key: key)))
        fields[try XCTUnwrap(schema.properties.firstIndex { $0.name == "rank" })] = .double(3.0)
        fields[try XCTUnwrap(schema.properties.firstIndex { $0.name == "score" })] = .int(0)
        try realm.store.write { try $0.put(table: table, key: key, value: RowFormat.encode(fields)) }
        realm.refresh()
        for text in ["rank == 3", "rank >= 3 AND rank < 4", "score == 0", "rank IN {3}"] {
            // The same condition with a term that keeps it off the IR: the language's answer.
            let untranslated = try realm.objects(User.self).filter(query: text + " OR car.model == 'none'").map(\.objId).sorted()
            XCTAssertEqual(untranslated, ["0", "1", "2", "3", "4"], text)
            XCTAssertEqual(try realm.objects(User.self).filter(query: text).map(\.objId).sorted(), untranslated, "\(text) through the planner")
            XCTAssertEqual(try realm.objects(User.self).filter(query: text).count, 5, "\(text): count")
        }
        realm.invalidate()
        let store = try Store(directory: directory, options: StoreOptions())
        defer { try? store.close() }
        let inspector = try XCTUnwrap(try StoreInspector(store: store))
        let page = try inspector.page(ofType: "User", matching: "rank == 3", offset: 0, limit: 10)
        XCTAssertEqual(page.matching, try inspector.objects(ofType: "User", matching: "rank == 3").count, "a page and the listing agree")
        XCTAssertEqual(page.matching, 5)
    }
}
