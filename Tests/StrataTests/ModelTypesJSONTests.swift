// Realm's model types in the three JSON front ends (RealmCoder, Realm+JSON style,
// EntityMapping): nested JSON maps to embedded objects without identity (realm-swift
// #6552), maps to and from JSON objects, sets to arrays, ObjectIds to their hex strings.

import Foundation
import XCTest
@testable import Strata

final class Venue: Object {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name = ""
    @Persisted var location: Address?
    @Persisted var entrances: List<Address>
    @Persisted var labels: MutableSet<String>
    @Persisted var ratings: Map<String, Int>
    @Persisted var owner: Contact?
}

let venueTypes: [Object.Type] = [Venue.self, Contact.self, Address.self, GeoPoint.self]

final class ModelTypesJSONTests: RealmTestCase {
    let id = try! ObjectId(string: "65f0c0ffee0000000000abcd")

    private func payload(name: String = "Hall") -> [String: Any] {
        ["_id": id.stringValue, "name": name,
         "location": ["street": "1 Main", "city": "Raleigh", "geo": ["lat": 35.5, "lng": -78.5], "tags": ["front"]],
         "entrances": [["street": "A", "city": "Raleigh"], ["street": "B", "city": "Cary"]],
         "labels": ["music", "indoor", "music"],
         "ratings": ["food": 4, "sound": 5]]
    }

    private func check(_ venue: Venue?, name: String = "Hall", file: StaticString = #filePath, line: UInt = #line) {
        guard let venue else { return XCTFail("no venue", file: file, line: line) }
        XCTAssertEqual(venue._id, id, file: file, line: line)
        XCTAssertEqual(venue.name, name, file: file, line: line)
        XCTAssertEqual(venue.location?.street, "1 Main", file: file, line: line)
        XCTAssertEqual(venue.location?.geo?.lng, -78.5, file: file, line: line)
        XCTAssertEqual(venue.location?.tags.toArray(), ["front"], file: file, line: line)
        XCTAssertEqual(venue.entrances.map(\.city), ["Raleigh", "Cary"], file: file, line: line)
        XCTAssertEqual(venue.labels.toArray(), ["music", "indoor"], file: file, line: line)
        XCTAssertEqual(venue.ratings["sound"], 5, file: file, line: line)
        XCTAssertEqual(venue.ratings.count, 2, file: file, line: line)
    }

    private func data(_ json: Any) throws -> Data { try JSONSerialization.data(withJSONObject: json) }

    func testRealmCoderRoundTrip() throws {
        let realm = try openRealm(types: venueTypes)
        let coder = RealmCoder(realm: realm)
        let venue = try coder.decode(Venue.self, from: data(payload()))
        check(venue)
        // Decoding again replaces the embedded objects (they have no identity to merge into).
        _ = try coder.decode(Venue.self, from: data(payload(name: "Hall 2")))
        check(realm.objects(Venue.self).first, name: "Hall 2")
        XCTAssertEqual(realm.objects(Venue.self).count, 1)
        let encodedData = try coder.encode(venue)
        let encoded = try JSONValue(data: encodedData)
        guard case .object(let members) = encoded else { return XCTFail("\(encoded)") }
        XCTAssertEqual(members["_id"], .string(id.stringValue))
        XCTAssertEqual(members["ratings"], .object(["food": .int(4), "sound": .int(5)]))
        XCTAssertEqual(members["labels"], .array([.string("music"), .string("indoor")]))
        guard case .object(let location)? = members["location"] else { return XCTFail("\(members)") }
        XCTAssertEqual(location["city"], .string("Raleigh"))
        XCTAssertEqual(location["geo"], .object(["lat": .double(35.5), "lng": .double(-78.5)]))
        // The encoded JSON decodes to the same object.
        try realm.write { try realm.deleteAll() }
        check(try coder.decode(Venue.self, from: encodedData), name: "Hall 2")
    }

    func testRealmJSONStyleRoundTrip() throws {
        let realm = try openRealm(types: venueTypes)
        let venues = try realm.write { try Venue.createOrUpdate(in: realm, withJSONArray: data([payload()])) }
        check(venues.first as? Venue)
        let out = (venues.first as! Venue).jsonDictionary()
        XCTAssertEqual(out["_id"] as? String, id.stringValue)
        XCTAssertEqual((out["location"] as? [String: Any])?["street"] as? String, "1 Main")
        XCTAssertEqual((out["entrances"] as? [[String: Any]])?.count, 2)
        XCTAssertEqual(out["ratings"] as? [String: Int], ["food": 4, "sound": 5])
        // The unmanaged form (jsonDictionary init) holds unmanaged embedded objects.
        let unmanaged = try Venue(jsonDictionary: payload())
        XCTAssertNil(unmanaged.realm)
        XCTAssertEqual(unmanaged.location?.geo?.lat, 35.5)
        XCTAssertEqual(unmanaged.entrances.count, 2)
    }

    func testEntityMappingRoundTrip() throws {
        let realm = try openRealm(types: venueTypes)
        let geo = EntityMapping(for: GeoPoint.self)
        geo.addAttributes(fromArray: ["lat", "lng"])
        let address = EntityMapping(for: Address.self)
        address.addAttributes(fromArray: ["street", "city", "tags"])
        address.addRelationshipMapping(geo, forProperty: "geo", keyPath: "geo")
        let venue = EntityMapping(for: Venue.self)
        venue.addAttributes(fromArray: ["_id", "name", "labels", "ratings"])
        venue.addRelationshipMapping(address, forProperty: "location", keyPath: "location")
        let entrances = Relationship(property: "entrances", keyPath: "entrances", mapping: address)
        entrances.toMany = true
        venue.addRelationship(entrances)
        let deserializer = Deserializer(realm: realm)
        let mapped: Venue = try deserializer.object(fromRepresentation: payload(), mapping: venue)
        check(mapped)
        let json = try Serializer.serialize(object: mapped, mapping: venue)
        guard case .object(let members) = json, case .array(let doors)? = members["entrances"] else { return XCTFail("\(json)") }
        XCTAssertEqual(doors.count, 2)
        XCTAssertEqual(members["_id"], .string(id.stringValue))
        try realm.write { try realm.deleteAll() }
        let again: Venue = try deserializer.object(fromRepresentation: json.anyValue as Any, mapping: venue)
        check(again)
    }

    func testBadValuesNameTheirJSONPathAndWriteNothing() throws {
        let realm = try openRealm(types: venueTypes)
        let coder = RealmCoder(realm: realm)
        var badKey = payload()
        badKey["ratings"] = ["ok": 1, "a.b": 2]
        XCTAssertThrowsError(try coder.decode(Venue.self, from: data(badKey))) { error in
            XCTAssertTrue("\(error)".contains("ratings.a.b"), "\(error)")
            XCTAssertTrue("\(error)".contains("contains '.'"), "\(error)")
        }
        var badId = payload()
        badId["_id"] = "12345"
        XCTAssertThrowsError(try coder.decode(Venue.self, from: data(badId))) { error in
            XCTAssertTrue("\(error)".contains("_id: expected an ObjectId (24 hexadecimal digits)"), "\(error)")
        }
        XCTAssertEqual(realm.objects(Venue.self).count, 0)
    }
}
