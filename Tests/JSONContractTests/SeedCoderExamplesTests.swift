// The other three seed documents' examples, transcribed as closely as Swift allows, with
// the outcomes the seeds state asserted: RealmCoder's README (the simple User, the mapped
// User, envelopes, the combined example), Realm+JSON's (MCEpisode with key-path mappings
// and a value transformer, preprocessing, a per-object outbound mapping, primary-key
// handoff, copies merged back in a transaction) and WCDB's custom column types page. Only
// `import Strata`.
//
// Each seed declares a class named `User` (or `MCEpisode`…); the contract file's `User`
// takes that name here, so the seeds' classes are prefixed (`RC…`, `MC…`, `WC…`) and
// store under the seed's name through `className`.

import Foundation
import Strata
import XCTest

// MARK: RealmCoder

/// "This simple User class can be used with RealmCoder automatically."
final class RCSimpleUser: Object {
    override class var className: String { "User" }
    @Persisted var objId: String = ""
    @Persisted var rank: Int = -1
}

/// The combined example ("Create the model"), its primary key added: RealmCoder's partial
/// updates need one, as its README says.
final class RCUser: Object {
    override class var className: String { "User" }
    @Persisted(primaryKey: true) var objId: String = ""
    @Persisted var username: String = ""
    @Persisted var firstName: String = ""
    @Persisted var lastName: String = ""
    @Persisted var address: String = ""
    @Persisted var phone: String = ""
    @Persisted var configJson: String = ""

    // Declare the key name for the enclosing REST wrapper for a single object
    override class var realmObjectEnvelope: String? { "user" }
    // Declare the key name for the enclosing REST wrapper for a list of objects
    override class var realmListEnvelope: String? { "users" }
    // Define the translation from attribute names to JSON key names
    override class var realmCodableKeys: [String: String] {
        ["firstName": "first_name", "lastName": "last_name", "objId": "id", "configJson": "config_json"]
    }
    // Exclude these attributes when encoding data -- don't share the address or phone number
    override class var realmCodableIgnoredAttributes: [String] { ["address", "phone"] }
    // Don't parse the `configJson` subtree.
    override class var realmCodableRawJsonSubstrings: [String] { ["configJson"] }
}

// MARK: Realm+JSON

/// `typedef NS_ENUM(NSInteger, MCEpisodeType) { MCEpisodeTypeFree = 0, MCEpisodeTypePaid };`
enum MCEpisodeType: Int, PersistableEnum { case free = 0, paid }

final class MCEpisode: Object {
    @Persisted(primaryKey: true) var episodeID: Int = 0
    @Persisted var episodeNumber: Int = 0
    @Persisted var episodeType: MCEpisodeType = .free
    @Persisted var title: String = ""
    @Persisted var subtitle: String = ""
    @Persisted var thumbnailURL: String = ""
    @Persisted var publishedDate: Date? = nil

    override class var jsonInboundMapping: [String: String] {
        ["episode.title": "title",
         "episode.description": "subtitle",
         "episode.id": "episodeID",
         "episode.episode_number": "episodeNumber",
         "episode.episode_type": "episodeType",
         "episode.thumbnail_url": "thumbnailURL",
         "episode.published_at": "publishedDate"]
    }
    override class var jsonOutboundMapping: [String: String] {
        ["title": "title",
         "subtitle": "episode.description",
         "episodeID": "id",
         "episodeNumber": "episode.number",
         "publishedDate": "published_at"]
    }
    // + (NSValueTransformer *)episodeTypeJSONTransformer
    override class func jsonTransformer(forProperty name: String) -> JSONValueTransformer? {
        name == "episodeType" ? .mapping(["free": MCEpisodeType.free, "paid": MCEpisodeType.paid]) : nil
    }
}

/// "JSON preprocessing": `dict[@"releaseCount"] = @(0)`. No inbound mapping, so properties
/// map to their snake_case keys, and the preprocessed key is given in that form.
final class MCRelease: Object {
    @Persisted(primaryKey: true) var releaseID: Int = 0
    @Persisted var name: String = ""
    @Persisted var releaseCount: Int = -1

    override class func preprocessedJSON(_ dictionary: [String: Any]) -> [String: Any] {
        var dict = dictionary
        dict["release_count"] = 0
        return dict
    }
}

enum VehicleType: Int, PersistableEnum { case car, bike }

/// The per-object outbound mapping: `licensePlate` only for a car.
final class MCVehicle: Object {
    @Persisted(primaryKey: true) var vehicleID: Int = 0
    @Persisted var type: VehicleType = .car
    @Persisted var licensePlate: String = ""
    @Persisted var maxSpeed: Int = 0

    override func jsonOutboundMappingForInstance() -> [String: String] {
        var mapping = ["maxSpeed": "maxSpeed"]
        if type == .car { mapping["licensePlate"] = "licensePlate" }
        return mapping
    }
}

// MARK: WCDB

/// "class MyClass: ColumnJSONCodable { var a: String = ""; var b: String = "" }"
final class MyClass: ColumnJSONCodable, Equatable {
    var a: String = ""
    var b: String = ""
    static func == (lhs: MyClass, rhs: MyClass) -> Bool { lhs.a == rhs.a && lhs.b == rhs.b }
}

/// WCDB's `Sample: TableCodable` with its `myClass` field, as a Strata model.
final class WCSample: Object {
    override class var className: String { "Sample" }
    @Persisted(primaryKey: true) var identifier: Int = 0
    @Persisted var myClass: MyClass? = nil
}

final class SeedCoderExamplesTests: ContractTestCase {
    // MARK: RealmCoder

    func testRealmCoderSimpleUser() throws {
        let realm = try realm([RCSimpleUser.self])
        let coder = RealmCoder(realm: realm)
        let jsonData = Data(#"{"objId": "3", "rank": 7}"#.utf8)
        let user = try coder.decode(RCSimpleUser.self, from: jsonData)
        XCTAssertNotNil(user.realm, "the decode call returns an object already committed to the realm")
        XCTAssertEqual(user.objId, "3")
        XCTAssertEqual(user.rank, 7)
        let encoded = try JSONValue(data: try coder.encode(user))
        XCTAssertEqual(encoded, .object(["objId": .string("3"), "rank": .int(7)]))
        // "the object defines a property as Int, but the JSON value is String": an error.
        XCTAssertThrowsError(try coder.decode(RCSimpleUser.self, from: Data(#"{"objId": "4", "rank": "high"}"#.utf8))) { error in
            XCTAssertEqual("\(error)", #"rank: expected Int, found String "high""#)
        }
        XCTAssertEqual(realm.objects(RCSimpleUser.self).count, 1, "a failed decode writes nothing")
    }

    func testRealmCoderCombinedExample() throws {
        let realm = try realm([RCUser.self])
        // Create a RealmCoder
        let coder = RealmCoder(realm: realm)
        // The seed's enveloped User (its trailing commas removed: they are not JSON).
        let jsonData = Data("""
            {"user": {"email": "bats@superfriends.org", "first_name": "Bruce", "id": 3, "last_name": "Wayne",
                      "username": "bats", "address": "1007 Mountain Drive", "phone": "555-0100",
                      "config_json": {"theme": "dark", "widgets": [1, 2]}}}
            """.utf8)
        // Decode some data and commit it to the realm
        let user = try coder.decode(RCUser.self, from: jsonData)
        XCTAssertEqual("Decode User with name: \(user.firstName) \(user.lastName)", "Decode User with name: Bruce Wayne")
        XCTAssertEqual(user.objId, "3", #""id": 3 into objId: String, with default options"#)
        XCTAssertEqual(user.address, "1007 Mountain Drive", "ignored attributes are still decoded")
        XCTAssertEqual(try JSONValue(string: user.configJson), try JSONValue(string: #"{"theme": "dark", "widgets": [1, 2]}"#))

        // Make some modifications to the `user` object in the usual Realm ways.
        try realm.write { user.username = "batman" }
        // Encode the object to send to the server. Remember, the encoding excludes address and phone number
        let modifiedData = try coder.encode(user)
        let sent = try JSONValue(data: modifiedData)
        let body = sent["user"] ?? sent
        XCTAssertEqual(body["username"], .string("batman"))
        XCTAssertEqual(body["first_name"], .string("Bruce"))
        XCTAssertEqual(body["id"], .string("3"))
        XCTAssertNil(body["address"])
        XCTAssertNil(body["phone"])
        XCTAssertEqual(body["config_json"], try JSONValue(string: #"{"theme": "dark", "widgets": [1, 2]}"#), "the subtree goes back as JSON")

        // Partial data leaves the other properties as they are (the restaurant story).
        _ = try coder.decode(RCUser.self, from: Data(#"{"user": {"id": 3, "last_name": "Wayne Jr."}}"#.utf8))
        XCTAssertEqual(user.lastName, "Wayne Jr.")
        XCTAssertEqual(user.username, "batman")
        XCTAssertEqual(user.phone, "555-0100")

        // The list envelope.
        let list = Data("""
            {"users": [{"email": "bats@superfriends.org", "first_name": "Bruce", "id": 3, "last_name": "Wayne"},
                       {"email": "ww@superfriends.org", "first_name": "Diana", "id": 4},
                       {"email": "sups@superfriends.org", "first_name": "Clark", "id": 5}]}
            """.utf8)
        let users = try coder.decodeArray(RCUser.self, from: list)
        XCTAssertEqual(users.map(\.objId), ["3", "4", "5"])
        XCTAssertEqual(users.map(\.firstName), ["Bruce", "Diana", "Clark"])
        XCTAssertEqual(user.lastName, "Wayne", "the list updated the object decoded before")
        XCTAssertEqual(user.username, "batman", "and kept what the list does not carry")
        let sentList = try JSONValue(data: coder.encodeArray(users, useEnvelope: true))
        XCTAssertEqual(sentList["users"]?[2]?["first_name"], .string("Clark"))
    }

    // MARK: Realm+JSON

    func testRealmJSONEpisodes() throws {
        let realm = try realm([MCEpisode.self])
        let array: [Any] = [
            ["episode": ["id": 1, "title": "Pilot", "description": "The start", "episode_number": 1, "episode_type": "free",
                         "thumbnail_url": "https://example.com/1.png", "published_at": "2014-01-02T03:04:05Z"]],
            ["episode": ["id": 2, "title": "Paid", "episode_number": 2, "episode_type": "paid"]],
        ]
        let dictionary: [String: Any] = ["episode": ["id": 3, "title": "Three", "episode_type": "paid"]]
        // "You must wrap these methods in a write transaction."
        try realm.beginWrite()
        try MCEpisode.createOrUpdate(in: realm, withJSONArray: array)
        try MCEpisode.createOrUpdate(in: realm, withJSONDictionary: dictionary)
        try realm.commitWrite()

        let pilot = try XCTUnwrap(realm.object(ofType: MCEpisode.self, forPrimaryKey: 1))
        XCTAssertEqual(pilot.title, "Pilot")
        XCTAssertEqual(pilot.subtitle, "The start")
        XCTAssertEqual(pilot.episodeNumber, 1)
        XCTAssertEqual(pilot.episodeType, .free)
        XCTAssertEqual(pilot.thumbnailURL, "https://example.com/1.png")
        XCTAssertEqual(pilot.publishedDate, Date(timeIntervalSince1970: 1_388_631_845))
        XCTAssertEqual(realm.object(ofType: MCEpisode.self, forPrimaryKey: 2)?.episodeType, .paid, "the value transformer")
        XCTAssertEqual(realm.objects(MCEpisode.self).count, 3)

        // "Use the -JSONDictionary method to get a JSON-ready dictionary": the outbound mapping.
        let json = pilot.jsonDictionary()
        XCTAssertEqual(json["title"] as? String, "Pilot")
        XCTAssertEqual(json["id"] as? Int, 1)
        let nested = try XCTUnwrap(json["episode"] as? [String: Any])
        XCTAssertEqual(nested["description"] as? String, "The start")
        XCTAssertEqual(nested["number"] as? Int, 1)
        XCTAssertNotNil(json["published_at"])
        XCTAssertNil(json["thumbnailURL"], "properties the outbound mapping leaves out are not sent")
        XCTAssertNil(json["thumbnail_url"])
    }

    func testRealmJSONPreprocessingAndPerObjectOutboundMapping() throws {
        let realm = try realm([MCRelease.self, MCVehicle.self])
        try realm.write {
            let release = try MCRelease.createOrUpdate(in: realm, withJSONDictionary: ["release_id": 7, "name": "Seven", "release_count": 12])
            XCTAssertEqual(release.releaseCount, 0, "preprocessedJSON ran before mapping")
            XCTAssertEqual(release.name, "Seven", "no mapping: camelCase properties from snake_case keys")
        }
        try realm.write {
            try MCVehicle.createOrUpdate(in: realm, withJSONArray: [
                ["vehicle_id": 1, "type": 0, "license_plate": "ABC-123", "max_speed": 180],
                ["vehicle_id": 2, "type": 1, "license_plate": "", "max_speed": 40],
            ])
        }
        let car = try XCTUnwrap(realm.object(ofType: MCVehicle.self, forPrimaryKey: 1)).jsonDictionary()
        let bike = try XCTUnwrap(realm.object(ofType: MCVehicle.self, forPrimaryKey: 2)).jsonDictionary()
        XCTAssertEqual(car["licensePlate"] as? String, "ABC-123")
        XCTAssertEqual(car["maxSpeed"] as? Int, 180)
        XCTAssertEqual(Set(bike.keys), ["maxSpeed"], "a bike sends no licensePlate")
    }

    func testRealmJSONPrimaryKeyHandoffAndCopies() throws {
        let realm = try realm([MCEpisode.self])
        try realm.write {
            try MCEpisode.createOrUpdate(in: realm, withJSONDictionary: ["episode": ["id": 5, "title": "Old title"]])
        }
        let episode = try XCTUnwrap(MCEpisode.object(in: realm, withPrimaryKeyValue: 5))
        // id primaryKeyValue = [episode primaryKeyValue]; then on another thread:
        let primaryKeyValue = episode.primaryKeyValue
        let directory = self.directory
        let title = try DispatchQueue(label: "other thread").sync { () -> String? in
            var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
            config.objectTypes = [MCEpisode.self]
            let realm = try Realm(configuration: config)
            return MCEpisode.object(in: realm, withPrimaryKeyValue: primaryKeyValue)?.title
        }
        XCTAssertEqual(title, "Old title")

        // MCEpisode *anotherEpisode = [episode shallowCopy]; anotherEpisode.title = @"New title";
        let anotherEpisode = episode.shallowCopy()
        XCTAssertNil(anotherEpisode.realm)
        XCTAssertEqual(anotherEpisode.episodeID, 0, "shallowCopy no longer maintains an object's primary key")
        anotherEpisode.title = "New title"
        // [episode performInTransaction:^{ [episode mergePropertiesFromObject:anotherEpisode]; }];
        let error = episode.performInTransaction { episode.mergeProperties(from: anotherEpisode) }
        XCTAssertNil(error)
        XCTAssertEqual(episode.title, "New title")
        XCTAssertEqual(episode.episodeID, 5, "merging never changes the primary key")
        XCTAssertEqual(realm.objects(MCEpisode.self).count, 1)
        // "Unlike -shallowCopy, it maintains the object's primary key."
        XCTAssertEqual(episode.deepCopy().episodeID, 5)
    }

    // MARK: WCDB

    func testWCDBColumnJSONCodable() throws {
        let realm = try realm([WCSample.self])
        let value = MyClass()
        value.a = "variable1"
        value.b = "variable2"
        try realm.write {
            let sample = WCSample()
            sample.identifier = 1
            sample.myClass = value
            try realm.add(sample)
        }
        let stored = try XCTUnwrap(realm.object(ofType: WCSample.self, forPrimaryKey: 1))
        XCTAssertEqual(stored.myClass, value)
        XCTAssertEqual(MyClass.columnType, .BLOB, "JSON in a BLOB")
        XCTAssertEqual(value.archivedValue().stringValue, #"{"a":"variable1","b":"variable2"}"#)
        XCTAssertEqual(MyClass(with: value.archivedValue()), value)
        XCTAssertNil(MyClass(with: Value(Data())), "an empty value is no MyClass")
    }
}
