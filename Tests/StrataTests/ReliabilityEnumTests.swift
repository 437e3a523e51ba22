// Issue 13, finding 8: a stored enum raw value that is no longer a case (an app update
// removed it) must not trap the accessor. Optional properties read nil; non-optional ones
// read the property's declared initial value (the first case when declared without one);
// list elements with no case are skipped. docs/guide.md ("Enums") documents this.

import XCTest
@testable import Strata

enum BadgeState: Int, PersistableEnum { case open = 0, pending = 1, closed = 2 }
enum BadgeColor: String, PersistableEnum { case red, green }

final class Badge: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var status: BadgeState = .pending
    @Persisted var color: BadgeColor
    @Persisted var previous: BadgeState?
    @Persisted var history: List<BadgeState>
    @Persisted var maybeHistory: List<BadgeState?>
}

final class ReliabilityEnumTests: RealmTestCase {
    func testRawValuesWithNoCaseReadAsDocumentedInsteadOfTrapping() throws {
        let realm = try openRealm(types: [Badge.self])
        try realm.write {
            // Raw values an older or newer version of the app wrote.
            try realm.create(Badge.self, value: ["id": 1, "status": 9, "color": "blue", "previous": 7,
                                                  "history": [0, 9, 2], "maybeHistory": [9, nil, 1]])
        }
        let ticket = try XCTUnwrap(realm.object(ofType: Badge.self, forPrimaryKey: 1))
        XCTAssertEqual(ticket.status, .pending, "non-optional: the declared initial value")
        XCTAssertEqual(ticket.color, .red, "declared without an initial value: the first case")
        XCTAssertNil(ticket.previous, "optional: nil")
        XCTAssertEqual(Array(ticket.history), [.open, .closed], "list elements with no case are skipped")
        XCTAssertEqual(Array(ticket.maybeHistory), [nil, .pending])
        // The stored value is left alone until the app writes the property.
        XCTAssertEqual(ticket["status"] as? Int, 9)
        try realm.write { ticket.status = .closed }
        XCTAssertEqual(ticket.status, .closed)
        XCTAssertEqual(ticket["status"] as? Int, 2)
        // An unmanaged copy keeps the raw value and reads it the same way.
        let copy = ticket.shallowCopy()
        XCTAssertEqual(copy.color, .red)
        XCTAssertNil(copy.previous)
        // The checked dynamic read gives the raw value rather than an error.
        XCTAssertEqual(try ticket.value(forProperty: "color") as? String, "blue")
        XCTAssertEqual(try ticket.value(forProperty: "previous") as? Int, 7)
    }
}
