// Issue 13, finding 19: -0.0 dates share the index key of 0.0.

import XCTest
@testable import Strata

final class Event: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var at: Date = Date(timeIntervalSinceReferenceDate: 1)
}

final class ReliabilityDateKeyTests: RealmTestCase {
    /// Finding 19: -0.0 == 0.0, so a date stored as -0.0 seconds and one stored as 0.0 are
    /// equal and one index query finds both.
    func testNegativeZeroDatesShareTheIndexKeyOfZero() throws {
        XCTAssertEqual(IndexValueKey.bytes(for: .date(Date(timeIntervalSinceReferenceDate: -0.0))),
                       IndexValueKey.bytes(for: .date(Date(timeIntervalSinceReferenceDate: 0.0))))
        let realm = try openRealm(types: [Event.self])
        try realm.write {
            try realm.create(Event.self, value: ["id": 1, "at": Date(timeIntervalSinceReferenceDate: -0.0)])
            try realm.create(Event.self, value: ["id": 2, "at": Date(timeIntervalSinceReferenceDate: 0.0)])
            try realm.create(Event.self, value: ["id": 3, "at": Date(timeIntervalSinceReferenceDate: 1)])
        }
        for probe in [Date(timeIntervalSinceReferenceDate: 0.0), Date(timeIntervalSinceReferenceDate: -0.0)] {
            let found = realm.objects(Event.self).filter(#Predicate { $0.at == probe })
            XCTAssertEqual(Set(found.map(\.id)), [1, 2], "probe \(probe.timeIntervalSinceReferenceDate.sign)")
        }
        // Moving an object off the value removes it under the same folded key.
        try realm.write { realm.object(ofType: Event.self, forPrimaryKey: 1)!.at = Date(timeIntervalSinceReferenceDate: 5) }
        let zero = Date(timeIntervalSinceReferenceDate: 0)
        XCTAssertEqual(Array(realm.objects(Event.self).filter(#Predicate { $0.at == zero }).map(\.id)), [2])
    }
}
