// Realm's model types through copies (shallowCopy, deepCopy, mergeProperties), frozen
// values and dynamic objects.

import Foundation
import XCTest
@testable import Strata

final class ModelTypesCopyTests: RealmTestCase {
    private func seed(_ realm: Realm) throws -> Venue {
        try realm.write {
            let venue = Venue()
            venue.name = "Hall"
            let location = makeAddress("1 Main"); location.tags.append("t")
            venue.location = location
            venue.entrances.append(objectsIn: [makeAddress("A"), makeAddress("B")])
            venue.labels.insert(objectsIn: ["x", "y"])
            venue.ratings["food"] = 4
            let owner = Contact(); owner.name = "own"
            venue.owner = owner
            try realm.add(venue)
            return venue
        }
    }

    func testCopiesCarryEmbeddedObjectsSetsAndMapsAsValues() throws {
        let realm = try openRealm(types: venueTypes)
        let venue = try seed(realm)
        let shallow = venue.shallowCopy()
        XCTAssertNil(shallow.realm)
        XCTAssertNotEqual(shallow._id, venue._id, "shallowCopy leaves the primary key out")
        XCTAssertEqual(shallow.location?.street, "1 Main")
        XCTAssertNil(shallow.location?.realm, "embedded objects are copied, unmanaged")
        XCTAssertEqual(shallow.entrances.map(\.street), ["A", "B"])
        XCTAssertEqual(shallow.labels.toArray(), ["x", "y"])
        XCTAssertEqual(shallow.ratings["food"], 4)
        XCTAssertNil(shallow.owner, "links are left out of a shallow copy")
        let deep = venue.deepCopy()
        XCTAssertEqual(deep._id, venue._id)
        XCTAssertEqual(deep.owner?.name, "own")
        XCTAssertEqual(deep.location?.tags.toArray(), ["t"])
        // The copy can be added as a new object: its embedded objects are its own.
        try realm.write { try realm.add(shallow) }
        try realm.write { shallow.location?.street = "2 Main" }
        XCTAssertEqual(venue.location?.street, "1 Main")
        // mergeProperties copies embedded objects as values, from a managed object too.
        try realm.write { venue.mergeProperties(from: shallow) }
        XCTAssertEqual(venue.location?.street, "2 Main")
        XCTAssertEqual(shallow.location?.street, "2 Main")
        XCTAssertEqual(venue.ratings["food"], 4)
    }

    func testFrozenValuesAndDynamicObjectsReadTheseKinds() throws {
        let realm = try openRealm(types: venueTypes + [Driver.self, Vehicle.self, Club.self])
        let venue = try seed(realm)
        let frozen = venue.frozen()
        try realm.write { venue.location?.street = "changed"; venue.ratings["food"] = 1; venue.labels.insert("z") }
        XCTAssertEqual(frozen.location?.street, "1 Main")
        XCTAssertEqual(frozen.entrances.map { $0.street }, ["A", "B"])
        XCTAssertEqual(frozen.labels, ["x", "y"])
        XCTAssertEqual(frozen.ratings, ["food": 4])
        let frozenAddress = try XCTUnwrap(venue.location?.freeze())
        try realm.write { venue.location?.street = "again" }
        XCTAssertEqual(frozenAddress.street, "changed")
        XCTAssertEqual(realm.thaw(frozenAddress)?.street, "again")

        let dynamic = try XCTUnwrap(realm.dynamicObjects("Venue").first)
        XCTAssertEqual((dynamic["location"] as? Object)?["street"] as? String, "again")
        XCTAssertEqual((dynamic["entrances"] as? [Object])?.compactMap { $0["street"] as? String }, ["A", "B"])
        XCTAssertEqual(dynamic["labels"] as? [String], ["x", "y", "z"])
        XCTAssertEqual(dynamic["ratings"] as? [String: Int], ["food": 1])
        XCTAssertEqual(dynamic["_id"] as? ObjectId, venue._id)
        try realm.write { dynamic["ratings"] = ["food": 2, "sound": 3] }
        XCTAssertEqual(venue.ratings.count, 2)
    }
}
