// docs/API.md §3 (the JSON coding layer) as a user writes it: only `import Strata`
// (no @testable), so this file fails to compile if the public API drifts. It has its own
// target because its models reuse §2's names (`User`, `Car`, `Phone`, ...).

import Strata
import XCTest

final class User: Object {
    @Persisted(primaryKey: true) var objId: String = ""
    @Persisted var username: String = ""
    @Persisted var firstName: String = ""
    @Persisted var address: String = ""
    @Persisted var phone: String = ""
    @Persisted var configJson: String = ""
    @Persisted var rank: Int = 0

    override class var realmCodableKeys: [String: String] { ["firstName": "first_name", "objId": "id"] }
    override class var realmCodableIgnoredAttributes: [String] { ["address", "phone"] }   // skipped when encoding
    override class var realmCodableRawJsonSubstrings: [String] { ["configJson"] }       // subtree kept as a JSON String
    override class var realmObjectEnvelope: String? { "user" }
    override class var realmListEnvelope: String? { "users" }
}

enum Kind: Int, PersistableEnum { case free, paid }

final class Episode: Object {
    @Persisted(primaryKey: true) var episodeID: Int = 0
    @Persisted var title: String = ""
    @Persisted var subtitle: String = ""
    @Persisted var kind: Kind = .free
    @Persisted var category: Category?

    override class var jsonInboundMapping: [String: String] { ["episode.title": "title", "episode.id": "episodeID",
                                                              "episode.kind": "kind", "episode.category": "category"] } // JSON key path → property
    override class var jsonOutboundMapping: [String: String] { ["title": "title", "subtitle": "episode.description"] } // property → JSON key path
    override func jsonOutboundMappingForInstance() -> [String: String] {   // per-object outbound mapping (default: the class one)
        var mapping = Self.jsonOutboundMapping
        mapping["episodeID"] = "id"
        return mapping
    }
    override class func preprocessedJSON(_ json: [String: Any]) -> [String: Any] { json["episode"] == nil ? ["episode": json] : json }
    override class func jsonTransformer(forProperty name: String) -> JSONValueTransformer? {
        switch name {
        case "kind": return .mapping(["free": Kind.free, "paid": Kind.paid])
        case "category": return .primaryKey(Category.self)
        default: return nil
        }
    }
}

final class Car: Object {
    @Persisted var model: String = ""
    @Persisted var year: String = ""
}

final class Phone: Object {
    @Persisted var number: String = ""
    @Persisted var ddd: String = ""
    @Persisted var ddi: String = ""
}

final class Category: Object {
    @Persisted(primaryKey: true) var identifier: Int = 0
    @Persisted var name: String = ""
}

final class Person: Object {
    @Persisted(primaryKey: true) var email: String = ""
    @Persisted var name: String = ""
    @Persisted var updated: Date? = nil
    @Persisted var car: Car?
    @Persisted var phones: List<Phone>
    @Persisted var category: Category?
}

final class JSONContractTests: ContractTestCase {
    private func openRealm() throws -> Realm {
        try realm([User.self, Episode.self, Car.self, Phone.self, Category.self, Person.self])
    }

    func testRealmCoder() throws {
        let realm = try openRealm()
        let twitterDates = DateFormatter()
        twitterDates.locale = Locale(identifier: "en_US_POSIX")
        twitterDates.dateFormat = "EEE MMM dd HH:mm:ss Z yyyy"
        let jsonData = Data(#"{"user": {"id": 1, "username": "ada", "first_name": "Ada", "address": "x", "configJson": {"a": [1]}}}"#.utf8)

        let coder = RealmCoder(realm: realm)
        // every option defaulted: RealmCoder(realm:dateFormatter:keyStrategy:nullPolicy:typeMismatchPolicy:)
        let twitter = RealmCoder(realm: realm, dateFormatter: twitterDates, keyStrategy: .convertFromSnakeCase)
        let user  = try coder.decode(User.self, from: jsonData)          // committed to the realm
        let users = try coder.decodeArray(User.self, from: Data(#"{"users": [{"id": 2, "rank": 3}, {"id": 1, "rank": 4}]}"#.utf8))   // one transaction for all
        let data  = try coder.encode(user)                               // Data
        let data2 = try coder.encodeArray(users, useEnvelope: true)
        _ = RealmCoder(realm: realm, dateFormatter: nil, keyStrategy: .useDefaultKeys, nullPolicy: .skip, typeMismatchPolicy: .coerce)

        XCTAssertEqual(user.firstName, "Ada")
        XCTAssertEqual(user.rank, 4, "the list updated the object decoded first")
        XCTAssertEqual(user.username, "ada", "absent keys keep their values")
        XCTAssertEqual(try JSONValue(string: user.configJson), .object(["a": .array([.int(1)])]))
        let encoded = try JSONValue(data: data)
        XCTAssertNil(encoded["address"], "ignored when encoding")
        XCTAssertEqual(encoded["first_name"], .string("Ada"))
        XCTAssertEqual(user.objId, "1", #"RealmCoder's own example: "id": 1 into objId: String with default options"#)
        XCTAssertEqual(try JSONValue(data: data2)["users"]?[0]?["id"], .string("2"))
        XCTAssertThrowsError(try twitter.decode(User.self, from: Data(#"{"id": 5, "rank": "12"}"#.utf8))) {
            XCTAssertEqual("\($0)", #"rank: expected Int, found String "12""#)
        }
    }

    func testRealmJSONStyle() throws {
        let realm = try openRealm()
        let array: [Any] = [["id": 1, "title": "Pilot", "kind": "paid"], ["episode": ["id": 2, "title": "Two"]]]
        let dict: [String: Any] = ["episode": ["id": 3, "title": "Three", "category": 7]]
        try realm.write { _ = try realm.create(Category.self, value: ["identifier": 7, "name": "Drama"]) }
        try realm.write {
            let eps = try Episode.createOrUpdate(in: realm, withJSONArray: array)       // array: Data or [Any]
            let ep  = try Episode.createOrUpdate(in: realm, withJSONDictionary: dict)   // dict: Data or [String: Any]
            XCTAssertEqual(eps.count, 2)
            XCTAssertEqual(ep.category?.name, "Drama")
        }
        let key = 1
        let episode = try XCTUnwrap(Episode.object(in: realm, withPrimaryKeyValue: key))
        try realm.write { episode.subtitle = "The beginning" }
        let json: [String: Any] = episode.jsonDictionary()
        let unmanaged = try Episode(jsonDictionary: ["episode": ["id": 9, "title": "Loose"]])
        let ep2 = Episode.object(in: realm, withPrimaryKeyValue: key)

        XCTAssertEqual(episode.kind, .paid)
        XCTAssertEqual(json["title"] as? String, "Pilot")
        XCTAssertEqual((json["episode"] as? [String: Any])?["description"] as? String, "The beginning")
        XCTAssertEqual(json["id"] as? Int, 1, "the per-instance outbound mapping")
        XCTAssertNil(unmanaged.realm)
        XCTAssertEqual(unmanaged.title, "Loose")
        XCTAssertEqual(ep2?.title, "Pilot")
        // Ready transformers, by name.
        _ = [JSONValueTransformer.date(format: "yyyy-MM-dd"), .iso8601, .epochSeconds, .epochMilliseconds, .nonNullString]
    }

    func testExplicitMappings() throws {
        let realm = try openRealm()
        try realm.write { _ = try realm.create(Category.self, value: ["identifier": 4, "name": "Pets"]) }
        let json = Data(#"{"result": {"user_email": "ada@example.com", "name": "Ada", "timestamp": 1700000000, "car": {"model": "T", "year": "1925"}, "phones": [{"number": "1"}, {"number": "2"}], "category": 4}}"#.utf8)

        let car = EntityMapping(for: Car.self)
        car.addAttributes(fromArray: ["model", "year"])

        let phone = EntityMapping(for: Phone.self)
        phone.addAttributes(fromArray: ["number", "ddd", "ddi"])

        let categoryByKey = EntityMapping(for: Category.self)
        categoryByKey.primaryKey = "identifier"
        categoryByKey.addAttribute(Attribute(property: "identifier", keyPath: nil))   // the JSON value itself (4) is the key

        let person = EntityMapping(for: Person.self)
        person.rootPath = "result"
        person.primaryKey = "email"
        person.addAttributes(fromArray: ["name"])
        person.addAttributes(fromDictionary: ["email": "user_email"])               // property: keyPath
        person.addAttribute(Attribute(property: "updated", keyPath: "timestamp",
                                      map: { (json: JSONValue) in
                                          if case .int(let seconds) = json { return Date(timeIntervalSince1970: Double(seconds)) }
                                          return nil
                                      },                                             // JSONValue → property value
                                      reverseMap: { value in
                                          (value as? Date).map { .int(Int64($0.timeIntervalSince1970)) } ?? .null
                                      }))                                            // property value → JSONValue
        person.addRelationshipMapping(car, forProperty: "car", keyPath: "car")
        person.addToManyRelationshipMapping(phone, forProperty: "phones", keyPath: "phones")
        let rel = Relationship(property: "category", keyPath: "category", mapping: categoryByKey)
        rel.weak = true                            // bind only to objects that already exist
        rel.assignmentPolicy = .assign             // .assign (default) .objectMerge .collectionMerge .objectReplace .collectionReplace
        person.addRelationship(rel)
        let phonesReplaced = Relationship(property: "phones", keyPath: "phones", mapping: phone)
        phonesReplaced.assignmentPolicy = .collectionReplace
        _ = Attribute(property: "name", keyPath: "name")

        let deserializer = Deserializer(realm: realm)        // delegate: DeserializerDelegate (will/did map object/collection)
        let p  = try deserializer.object(fromRepresentation: json, mapping: person)      // json: Data or JSONValue or Any
        let ps = try deserializer.collection(fromRepresentation: Data(#"{"result": [{"user_email": "b@example.com"}]}"#.utf8), mapping: person)
        try realm.write {
            try deserializer.fill(object: p, fromRepresentation: JSONValue.object(["name": .string("Ada L.")]), mapping: person)
        }
        let out: JSONValue = try Serializer.serialize(object: p, mapping: person)          // includeNulls: Bool option
        let outs: JSONValue = try Serializer.serialize(collection: ps, mapping: person)
        _ = try Serializer.serialize(object: p, mapping: person, includeNulls: false)

        let ada = try XCTUnwrap(p as? Person)
        XCTAssertEqual(ada.name, "Ada L.")
        XCTAssertEqual(ada.car?.year, "1925")
        XCTAssertEqual(ada.phones.map(\.number), ["1", "2"])
        XCTAssertEqual(ada.category?.name, "Pets", "bound by primary key to the existing object")
        XCTAssertEqual(ada.updated, Date(timeIntervalSince1970: 1_700_000_000))
        // Serialized under the mapping's rootPath, as FastEasyMapping does.
        XCTAssertEqual(out[keyPath: "result.user_email"], .string("ada@example.com"), "\(out)")
        XCTAssertEqual(out[keyPath: "result.timestamp"], .int(1_700_000_000))
        XCTAssertEqual(outs[keyPath: "result.0.user_email"], .string("b@example.com"), "\(outs)")
    }

    func testJSONValue() throws {
        let bytes = Data(#"{"id": 505874924095815681, "ok": true, "xs": [1.5, null, "s"]}"#.utf8)
        let v = try JSONValue(data: bytes)          // our reader; throws JSONError with the byte offset
        let out: Data = try v.data()                // our writer; v.data(prettyPrinted: true)
        let any: Any = v.anyValue; let w = try JSONValue(any: any)    // JSONSerialization bridge

        XCTAssertEqual(v["id"], .int(505_874_924_095_815_681))
        XCTAssertEqual(try JSONValue(data: out), v)
        XCTAssertEqual(try JSONValue(data: v.data(prettyPrinted: true)), v)
        XCTAssertEqual(w, v)
        let cases: [JSONValue] = [.null, .bool(true), .int(1), .double(1.5), .string("s"), .array([]), .object([:])]
        XCTAssertEqual(cases.count, 7)
        XCTAssertThrowsError(try JSONValue(data: Data("[1,]".utf8))) { XCTAssertEqual(($0 as? JSONError)?.offset, 3) }
        let sendable: any Sendable = v
        _ = sendable
    }
}
