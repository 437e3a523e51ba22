// docs/guide.md §4's strings in `#Predicate`, as written there: Foundation on Linux has no
// `hasPrefix` in a predicate (it does not compile), so a prefix is `starts(with:)` and a
// substring `contains(_:)`; each matches the objects its string query matches.

import XCTest
@testable import Strata

final class GuideStringPredicateTests: RealmTestCase {
    func testPrefixAndSubstringPredicatesMatchAsTheirStringQueries() throws {
        let realm = try openRealm()
        try realm.write {
            for (id, lastName) in [("1", "Baker"), ("2", "barton"), ("3", "Abbott"), ("4", "Brandt")] {
                try realm.add(makeUser(id, lastName: lastName))
            }
        }
        let all = realm.objects(User.self)
        let prefix = all.filter(#Predicate<User> { $0.lastName.starts(with: "B") })
        let substring = all.filter(#Predicate<User> { $0.lastName.contains("ar") })
        XCTAssertEqual(prefix.map(\.objId), ["1", "4"])
        XCTAssertEqual(substring.map(\.objId), ["2"])
        XCTAssertEqual(Array(all.filter("lastName BEGINSWITH 'B'").map(\.objId)), prefix.map(\.objId))
        XCTAssertEqual(Array(all.filter("lastName CONTAINS 'ar'").map(\.objId)), substring.map(\.objId))
        // Case-insensitive: only the string query language has it.
        XCTAssertEqual(Array(all.filter("lastName BEGINSWITH[c] 'b'").map(\.objId)), ["1", "2", "4"])
    }
}
