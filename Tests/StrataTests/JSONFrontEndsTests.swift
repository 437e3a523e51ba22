// The Realm+JSON and FastEasyMapping front ends (docs/API.md §3) on the seeds' examples: the
// Episode with dotted inbound/outbound mappings and an enum transformer; Person/Car/Phones
// with assignment policies; Website/Category by primary key with a weak relationship.

import XCTest
@testable import Strata

enum EpisodeType: Int, PersistableEnum { case free, paid }

final class Episode: Object {
    @Persisted(primaryKey: true) var episodeID: Int = 0
    @Persisted var episodeNumber: Int = 0
    @Persisted var episodeType: EpisodeType = .free
    @Persisted var title: String = ""
    @Persisted var subtitle: String = ""
    @Persisted var thumbnailURL: String = ""
    @Persisted var publishedDate: Date? = nil

    override class var jsonInboundMapping: [String: String] {
        ["episode.title": "title", "episode.description": "subtitle", "episode.id": "episodeID",
         "episode.episode_number": "episodeNumber", "episode.episode_type": "episodeType",
         "episode.thumbnail_url": "thumbnailURL", "episode.published_at": "publishedDate"]
    }
    override class var jsonOutboundMapping: [String: String] {
        ["title": "title", "subtitle": "episode.description", "episodeID": "id", "episodeNumber": "episode.number",
         "publishedDate": "published_at"]
    }
    override class func jsonTransformer(forProperty name: String) -> JSONValueTransformer? {
        switch name {
        case "episodeType": return .mapping(["free": EpisodeType.free, "paid": EpisodeType.paid])
        case "publishedDate": return .iso8601
        default: return nil
        }
    }
    override class func preprocessedJSON(_ json: [String: Any]) -> [String: Any] {
        // The server sometimes sends the episode at the top level.
        json["episode"] == nil ? ["episode": json] : json
    }
}

final class FEMCar: Object {
    @Persisted var model: String = ""
    @Persisted var year: String = ""
}

final class FEMPhone: Object {
    @Persisted var number: String = ""
    @Persisted var ddd: String = ""
    @Persisted var ddi: String = ""
}

final class FEMPerson: Object {
    @Persisted(primaryKey: true) var email: String = ""
    @Persisted var name: String = ""
    @Persisted var updated: Date? = nil
    @Persisted var car: FEMCar?
    @Persisted var phones: List<FEMPhone>
}

final class Category: Object {
    @Persisted(primaryKey: true) var identifier: Int = 0
    @Persisted var name: String = ""
}

final class Website: Object {
    @Persisted(primaryKey: true) var url: String = ""
    @Persisted var category: Category?
}

final class RecordingDelegate: DeserializerDelegate {
    var calls: [String] = []
    func deserializer(_ deserializer: Deserializer, willMapObjectFromRepresentation representation: JSONValue, mapping: EntityMapping) { calls.append("willObject") }
    func deserializer(_ deserializer: Deserializer, didMapObject object: Object, fromRepresentation representation: JSONValue, mapping: EntityMapping) { calls.append("didObject") }
    func deserializer(_ deserializer: Deserializer, willMapCollectionFromRepresentation representation: JSONValue, mapping: EntityMapping) { calls.append("willCollection") }
    func deserializer(_ deserializer: Deserializer, didMapCollection collection: [Object], fromRepresentation representation: JSONValue, mapping: EntityMapping) { calls.append("didCollection") }
}

final class JSONFrontEndsTests: RealmTestCase {
    let types: [Object.Type] = [Episode.self, FEMCar.self, FEMPhone.self, FEMPerson.self, Category.self, Website.self]

    func testEpisodeInboundOutboundTransformersAndPreprocessing() throws {
        let realm = try openRealm(types: types)
        let json = #"""
        [{"episode": {"id": 7, "title": "Pilot", "description": "It begins", "episode_number": 1, "episode_type": "paid",
                      "thumbnail_url": "http://x/1.png", "published_at": "2024-05-01T10:00:00Z"}},
         {"id": 8, "title": "Second", "episode_type": "free"}]
        """#
        let episodes = try Episode.createOrUpdate(in: realm, withJSONArray: Data(json.utf8))
        XCTAssertEqual(episodes.count, 2)
        let pilot = try XCTUnwrap(Episode.object(in: realm, withPrimaryKeyValue: 7))
        XCTAssertEqual(pilot.subtitle, "It begins")
        XCTAssertEqual(pilot.episodeType, .paid)
        XCTAssertEqual(pilot.thumbnailURL, "http://x/1.png")
        XCTAssertEqual(pilot.publishedDate, Date(timeIntervalSince1970: 1_714_557_600))
        XCTAssertEqual(Episode.object(in: realm, withPrimaryKeyValue: 8)?.title, "Second", "preprocessedJSON wrapped the bare object")
        // Outbound: dotted paths on the JSON side.
        let out = pilot.jsonDictionary()
        XCTAssertEqual(out["title"] as? String, "Pilot")
        XCTAssertEqual(out["id"] as? Int, 7)
        XCTAssertEqual((out["episode"] as? [String: Any])?["description"] as? String, "It begins")
        XCTAssertEqual((out["episode"] as? [String: Any])?["number"] as? Int, 1)
        XCTAssertEqual(out["published_at"] as? String, "2024-05-01T10:00:00.000Z")
        XCTAssertNil(out["thumbnailURL"], "only the outbound mapping's properties")
        // A dictionary update changes only what it carries; an unmanaged object from JSON.
        try realm.write { _ = try Episode.createOrUpdate(in: realm, withJSONDictionary: ["episode": ["id": 7, "title": "Pilot (remastered)"]]) }
        XCTAssertEqual(pilot.title, "Pilot (remastered)")
        XCTAssertEqual(pilot.subtitle, "It begins")
        let unmanaged = try Episode(jsonDictionary: ["episode": ["id": 9, "title": "Draft", "episode_type": "paid"]])
        XCTAssertNil(unmanaged.realm)
        XCTAssertEqual(unmanaged.episodeID, 9)
        XCTAssertEqual(unmanaged.episodeType, .paid)
        XCTAssertThrowsError(try Episode.createOrUpdate(in: realm, withJSONArray: Data(#"[{"id": 10, "episode_type": "premium"}]"#.utf8))) { error in
            XCTAssertEqual("\(error)", #"[0].episode.episode_type: expected one of ["free", "paid"], found String "premium""#)
        }
        XCTAssertNil(Episode.object(in: realm, withPrimaryKeyValue: 10), "atomic")
        // JSON text is read element by element; the whole text is still checked.
        XCTAssertThrowsError(try Episode.createOrUpdate(in: realm, withJSONArray: Data(#"{"episodes": []}"#.utf8))) { error in
            XCTAssertEqual("\(error)", "$: expected an array of Episode")
        }
        XCTAssertThrowsError(try Episode.createOrUpdate(in: realm, withJSONArray: Data(#"[{"id": 11}] ]"#.utf8))) { error in
            XCTAssertEqual("\(error)", "invalid JSON: unexpected data after the JSON value at byte 13")
        }
        XCTAssertNil(Episode.object(in: realm, withPrimaryKeyValue: 11), "nothing written")
    }

    func testPersonCarPhonesWithPoliciesAndSerializer() throws {
        let realm = try openRealm(types: types)
        let car = EntityMapping(for: FEMCar.self)
        car.addAttributes(fromArray: ["model", "year"])
        let phone = EntityMapping(for: FEMPhone.self)
        phone.addAttributes(fromArray: ["number", "ddd", "ddi"])
        let person = EntityMapping(for: FEMPerson.self)
        person.rootPath = "result"
        person.primaryKey = "email"
        person.addAttributes(fromArray: ["name"])
        person.addAttributes(fromDictionary: ["email": "user_email"])
        person.addAttribute(Attribute(property: "updated", keyPath: "timestamp",
                                      map: { json in if case .int(let t) = json { return Date(timeIntervalSince1970: Double(t)) } else { return nil } },
                                      reverseMap: { value in (value as? Date).map { .int(Int64($0.timeIntervalSince1970)) } ?? .null }))
        person.addRelationshipMapping(car, forProperty: "car", keyPath: "car")
        let phones = Relationship(property: "phones", keyPath: "phones", mapping: phone)
        phones.assignmentPolicy = .collectionReplace
        person.addRelationship(phones)

        let deserializer = Deserializer(realm: realm)
        let delegate = RecordingDelegate()
        deserializer.delegate = delegate
        let json: [String: Any] = ["result": [
            "name": "Lucas", "user_email": "lucas@example.com", "timestamp": 1_700_000_000,
            "car": ["model": "i30", "year": "2013"],
            "phones": [["ddi": "55", "ddd": "85", "number": "1111-1111"], ["ddi": "55", "ddd": "11", "number": "2222-2222"]],
        ]]
        let lucas = try XCTUnwrap(try deserializer.object(fromRepresentation: json, mapping: person) as? FEMPerson)
        // FEM's order, nested objects included: the car, then the phones collection.
        XCTAssertEqual(delegate.calls, ["willObject", "willObject", "didObject", "willCollection", "willObject", "didObject",
                                        "willObject", "didObject", "didCollection", "didObject"])
        XCTAssertEqual(lucas.name, "Lucas")
        XCTAssertEqual(lucas.updated, Date(timeIntervalSince1970: 1_700_000_000))
        XCTAssertEqual(lucas.car?.model, "i30")
        XCTAssertEqual(lucas.phones.map(\.number), ["1111-1111", "2222-2222"])
        // collectionReplace: phones the JSON no longer lists are deleted.
        let update: [String: Any] = ["result": ["user_email": "lucas@example.com", "phones": [["number": "3333-3333"]]]]
        try deserializer.object(fromRepresentation: update, mapping: person)
        XCTAssertEqual(lucas.phones.map(\.number), ["3333-3333"])
        XCTAssertEqual(realm.objects(FEMPhone.self).count, 1)
        XCTAssertEqual(lucas.name, "Lucas", "absent keys are left alone")
        XCTAssertEqual(realm.objects(FEMPerson.self).count, 1, "one person per primary key")
        // Serializer, with and without nulls.
        let out = try Serializer.serialize(object: lucas, mapping: person)
        XCTAssertEqual(out["result"]?["user_email"], .string("lucas@example.com"))
        XCTAssertEqual(out["result"]?["timestamp"], .int(1_700_000_000))
        XCTAssertEqual(out["result"]?["phones"]?[0]?["number"], .string("3333-3333"))
        try realm.write { lucas.car = nil }
        XCTAssertEqual(try Serializer.serialize(object: lucas, mapping: person)["result"]?["car"], .null)
        XCTAssertNil(try Serializer.serialize(object: lucas, mapping: person, includeNulls: false)["result"]?["car"])
        // A collection, with the delegate's order.
        delegate.calls = []
        let many = try deserializer.collection(fromRepresentation: ["result": [["user_email": "a@x"], ["user_email": "b@x"]]], mapping: person)
        XCTAssertEqual(many.count, 2)
        XCTAssertEqual(delegate.calls, ["willCollection", "willObject", "didObject", "willObject", "didObject", "didCollection"])
        XCTAssertEqual(try Serializer.serialize(collection: many, mapping: person)["result"]?[1]?["user_email"], .string("b@x"))
    }

    func testObjectMergeUpdatesTheLinkedObjectAndObjectReplaceDeletesIt() throws {
        let realm = try openRealm(types: types)
        let car = EntityMapping(for: FEMCar.self)
        car.addAttributes(fromArray: ["model", "year"])
        let person = EntityMapping(for: FEMPerson.self)
        person.addAttributes(fromArray: ["email", "name"])
        let link = Relationship(property: "car", keyPath: "car", mapping: car)
        link.assignmentPolicy = .objectMerge
        person.addRelationship(link)
        let deserializer = Deserializer(realm: realm)
        let ann = try deserializer.object(fromRepresentation: ["email": "ann@x", "car": ["model": "i30", "year": "2013"]], mapping: person) as! FEMPerson
        try deserializer.object(fromRepresentation: ["email": "ann@x", "car": ["year": "2014"]], mapping: person)
        XCTAssertEqual(realm.objects(FEMCar.self).count, 1, "merged into the linked car, not a new one")
        XCTAssertEqual(ann.car?.model, "i30")
        XCTAssertEqual(ann.car?.year, "2014")
        link.assignmentPolicy = .objectReplace
        try deserializer.object(fromRepresentation: ["email": "ann@x", "car": ["model": "Golf"]], mapping: person)
        XCTAssertEqual(realm.objects(FEMCar.self).map(\.model), ["Golf"], "the replaced car is deleted")
        XCTAssertEqual(ann.car?.model, "Golf")
    }

    func testWebsiteCategoryByPrimaryKeyWithAWeakRelationship() throws {
        let realm = try openRealm(types: types)
        try realm.write { try realm.create(Category.self, value: ["identifier": 4, "name": "news"]) }
        let categoryByKey = EntityMapping(for: Category.self)
        categoryByKey.primaryKey = "identifier"
        categoryByKey.addAttribute(Attribute(property: "identifier", keyPath: nil))
        let website = EntityMapping(for: Website.self)
        website.addAttributes(fromArray: ["url"])
        let relationship = Relationship(property: "category", keyPath: "category", mapping: categoryByKey)
        relationship.weak = true
        website.addRelationship(relationship)
        let deserializer = Deserializer(realm: realm)
        let sites = try deserializer.collection(fromRepresentation: Data(#"[{"url": "a.com", "category": 4}, {"url": "b.com", "category": 5}]"#.utf8),
                                                mapping: website) as! [Website]
        XCTAssertEqual(sites[0].category?.name, "news", "the JSON value itself is the key")
        XCTAssertNil(sites[1].category, "weak: category 5 does not exist, so nothing is bound")
        XCTAssertEqual(realm.objects(Category.self).count, 1, "a weak relationship creates nothing")
    }
}
