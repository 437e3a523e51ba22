// Realm's model types through migrations (properties of these kinds added, removed and
// changed in type; an embedded type gaining a property; linking objects added, their
// inverse index built) and through the tool's export → import round trip.

import Foundation
import XCTest
@testable import Strata

enum MV1 {
    final class Member: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var code = ""
        @Persisted var tags: List<String>
        @Persisted var team: Team?
        @Persisted var place: Spot?
        @Persisted var history: List<Spot>
        @Persisted var retired = ""
    }
    final class Team: Object {
        @Persisted(primaryKey: true) var name = ""
    }
    final class Spot: EmbeddedObject {
        @Persisted var label = ""
        @Persisted var team: Team?
    }
    static let types: [Object.Type] = [Member.self, Team.self, Spot.self]
}

enum MV2 {
    /// code String → ObjectId?, tags List → MutableSet, scores (Map) added, retired removed.
    final class Member: Object {
        @Persisted(primaryKey: true) var id = 0
        @Persisted var code: ObjectId?
        @Persisted var tags: MutableSet<String>
        @Persisted var team: Team?
        @Persisted var place: Spot?
        @Persisted var history: List<Spot>
        @Persisted var scores: Map<String, Int>
    }
    /// Gains linking objects.
    final class Team: Object {
        @Persisted(primaryKey: true) var name = ""
        @Persisted(originProperty: "team") var members: LinkingObjects<Member>
    }
    /// Gains a property, keeps the others (one moves).
    final class Spot: EmbeddedObject {
        @Persisted var floor = 3
        @Persisted var label = ""
        @Persisted var team: Team?
    }
    static let types: [Object.Type] = [Member.self, Team.self, Spot.self]
}

final class ModelTypesMigrationTests: RealmTestCase {
    let validCode = "65f0c0ffee0000000000abcd"

    private func seedV1() throws {
        let realm = try Realm(configuration: configuration(types: MV1.types, version: 1))
        try realm.write {
            let red = MV1.Team(); red.name = "red"
            let blue = MV1.Team(); blue.name = "blue"
            for id in 1 ... 3 {
                let member = MV1.Member()
                member.id = id
                member.code = id == 1 ? validCode : "not-an-object-id"
                member.tags.append(objectsIn: ["a", "b", "a"])
                member.team = id == 3 ? blue : red
                let spot = MV1.Spot(); spot.label = "desk \(id)"; spot.team = blue
                member.place = spot
                let old = MV1.Spot(); old.label = "old \(id)"
                member.history.append(old)
                member.retired = "x"
                try realm.add(member)
            }
        }
    }

    func testMigrationChangesTheseKindsAndBuildsTheInverseIndex() throws {
        try seedV1()
        XCTAssertThrowsError(try Realm(configuration: configuration(types: MV2.types, version: 1))) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("Property 'Member.code' has been changed from 'string' to 'ObjectId?'"), text)
            XCTAssertTrue(text.contains("Property 'Member.tags' has been changed from 'List<string>' to 'MutableSet<string>'"), text)
            XCTAssertTrue(text.contains("Property 'Member.scores' has been added"), text)
            XCTAssertTrue(text.contains("Property 'Team.members' has been added"), text)
            XCTAssertTrue(text.contains("Property 'Spot.floor' has been added"), text)
        }
        var config = configuration(types: MV2.types, version: 2)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "Member") { old, new in
                XCTAssertEqual((old?["place"] as? [String: Any?])?["label"] as? String, "desk \(old?["id"] as? Int ?? 0)")
                if (old?["id"] as? Int) == 2 {
                    new?["scores"] = ["level1": 10]
                    new?["history"] = [["label": "from the block", "floor": 9]]
                }
            }
        }
        do {
            let realm = try Realm(configuration: config)
            let members = realm.objects(MV2.Member.self)
            XCTAssertEqual(members.map(\.code), [try ObjectId(string: validCode), nil, nil], "text that is no ObjectId becomes nil")
            XCTAssertEqual(members.first?.tags.toArray(), ["a", "b"], "a list becomes a set of its distinct elements")
            XCTAssertEqual(members[1].scores["level1"], 10)
            XCTAssertTrue(members[0].scores.isEmpty)
            // Embedded objects are laid out for the new type: kept values move, new ones
            // take the class's initial value; links inside them survive.
            XCTAssertEqual(members[0].place?.label, "desk 1")
            XCTAssertEqual(members[0].place?.floor, 3)
            XCTAssertEqual(members[0].place?.team?.name, "blue")
            XCTAssertEqual(members[0].history.map(\.label), ["old 1"])
            XCTAssertEqual(members[1].history.map(\.floor), [9])
            let red = try XCTUnwrap(realm.object(ofType: MV2.Team.self, forPrimaryKey: "red"))
            XCTAssertEqual(red.members.map(\.id), [1, 2])
            XCTAssertEqual(realm.objects(MV2.Team.self).filter("members.@count == 0").count, 0)
            XCTAssertEqual(realm.objects(MV2.Team.self).filter("ANY members.id == 3").map(\.name), ["blue"])
            try realm.write { members[2].team = red }
            XCTAssertEqual(red.members.map(\.id), [1, 2, 3])
        }
        // Removing the linking objects again drops the inverse index with the migration.
        enum MV3 {
            final class Team: Object { @Persisted(primaryKey: true) var name = "" }
        }
        let v3Types: [Object.Type] = [MV2.Member.self, MV3.Team.self, MV2.Spot.self]
        let realm = try Realm(configuration: configuration(types: v3Types, version: 3))
        let bound = try realm.boundType(for: MV2.Member.self)
        XCTAssertTrue(bound.maintainedIndexes.isEmpty)
        XCTAssertEqual(realm.snapshot.count(table: bound.indexTable(bound.schema.index(of: "team")!)), 0)
    }

    func testExportThenImportRoundTripsEveryKind() throws {
        let types: [Object.Type] = [Venue.self, Contact.self, Address.self, GeoPoint.self]
        let id = ObjectId.generate()
        do {
            let realm = try Realm(configuration: configuration(types: types))
            try realm.write {
                let owner = Contact(); owner.name = "own"
                let venue = Venue()
                venue._id = id
                venue.name = "Hall"
                let location = makeAddress("1 Main"); location.geo = GeoPoint(); location.geo?.lat = 1.5; location.tags.append("x")
                venue.location = location
                venue.entrances.append(objectsIn: [makeAddress("A"), makeAddress("B", city: "Cary")])
                venue.labels.insert(objectsIn: ["a", "b"])
                venue.ratings["food"] = 4
                venue.owner = owner
                try realm.add(venue)
            }
        }
        // Export through the stored schema only.
        let exported: Data
        let ownerExport: Data
        do {
            let store = try Store(directory: directory, options: StoreOptions())
            defer { try? store.close() }
            let inspector = try XCTUnwrap(try StoreInspector(store: store))
            let venues = try inspector.objects(ofType: "Venue")
            XCTAssertEqual(venues.first?["_id"] as? String, id.stringValue)
            XCTAssertEqual((venues.first?["location"] as? [String: Any])?["street"] as? String, "1 Main")
            XCTAssertEqual(try inspector.columns(ofType: "Venue"), ["_id", "name", "location", "entrances", "labels", "ratings", "owner"])
            exported = try JSONSerialization.data(withJSONObject: venues)
            ownerExport = try JSONSerialization.data(withJSONObject: try inspector.objects(ofType: "Contact"))
        }
        // Import into a fresh store of the same schema.
        directory = newDirectory("strata-import")
        do { _ = try Realm(configuration: configuration(types: types)) }
        do {
            let store = try Store(directory: directory, options: StoreOptions())
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            XCTAssertEqual(try importer.importObjects(ofType: "Contact", from: ownerExport).inserted, 1)
            XCTAssertEqual(try importer.importObjects(ofType: "Venue", from: exported).inserted, 1)
            XCTAssertEqual(try importer.importObjects(ofType: "Venue", from: exported).unchanged, 1)
            XCTAssertThrowsError(try importer.importObjects(ofType: "Venue", from: Data(#"[{"_id": "zz", "name": "x"}]"#.utf8))) { error in
                XCTAssertEqual("\(error)", "$[0]._id: expected an ObjectId (24 hexadecimal digits), found String \"zz\"")
            }
            XCTAssertThrowsError(try importer.importObjects(ofType: "Venue", from: Data(#"[{"_id": "\#(id.stringValue)", "ratings": {"$x": 1}}]"#.utf8))) { error in
                XCTAssertTrue("\(error)".contains("$[0].ratings.$x"), "\(error)")
            }
        }
        let realm = try Realm(configuration: configuration(types: types))
        let venue = try XCTUnwrap(realm.object(ofType: Venue.self, forPrimaryKey: id))
        XCTAssertEqual(venue.location?.geo?.lat, 1.5)
        XCTAssertEqual(venue.location?.tags.toArray(), ["x"])
        XCTAssertEqual(venue.entrances.map(\.city), ["Raleigh", "Cary"])
        XCTAssertEqual(venue.labels.toArray(), ["a", "b"])
        XCTAssertEqual(venue.ratings["food"], 4)
        XCTAssertEqual(venue.owner?.name, "own")
    }
}
