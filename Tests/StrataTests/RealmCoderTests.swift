// RealmCoder (docs/API.md §3): the seed's examples (the User with envelopes, ignored fields and a
// raw JSON subtree; the restaurant list then detail then list again, which must not wipe
// the detail), errors with paths, policies, atomicity, and Twitter's real search results.

import XCTest
@testable import Strata

final class CoderUser: Object {
    override class var className: String { "User" }
    @Persisted(primaryKey: true) var objId: Int = 0
    @Persisted var username: String = ""
    @Persisted var firstName: String = ""
    @Persisted var lastName: String = ""
    @Persisted var address: String = ""
    @Persisted var phone: String = ""
    @Persisted var configJson: String = ""
    @Persisted var rank: Int = -1

    override class var realmObjectEnvelope: String? { "user" }
    override class var realmListEnvelope: String? { "users" }
    override class var realmCodableKeys: [String: String] {
        ["firstName": "first_name", "lastName": "last_name", "objId": "id", "configJson": "config_json"]
    }
    override class var realmCodableIgnoredAttributes: [String] { ["address", "phone"] }
    override class var realmCodableRawJsonSubstrings: [String] { ["configJson"] }
}

/// The seed's User as its README declares it: a `String` primary key fed JSON integers.
final class StringKeyedUser: Object {
    @Persisted(primaryKey: true) var objId: String = ""
    @Persisted var firstName: String = ""

    override class var realmObjectEnvelope: String? { "user" }
    override class var realmCodableKeys: [String: String] { ["firstName": "first_name", "objId": "id"] }
}

final class Restaurant: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var phone: String = ""
    @Persisted var rating: Double = 0
    @Persisted var tags: List<String>
}

final class TwitterUser: Object {
    @Persisted(primaryKey: true) var id: Int64 = 0
    @Persisted var screenName: String = ""
    @Persisted var followersCount: Int = 0
}

final class Status: Object {
    @Persisted(primaryKey: true) var id: Int64 = 0
    @Persisted var text: String = ""
    @Persisted var createdAt: Date? = nil
    @Persisted var user: TwitterUser?
    @Persisted var entities: String = ""
    @Persisted var retweetCount: Int = 0

    override class var realmListEnvelope: String? { "statuses" }
    override class var realmCodableRawJsonSubstrings: [String] { ["entities"] }
}

/// A type whose initial values are computed per instance (the importer must run the
/// initializer for each new object, not reuse one set of values).
final class Ticket: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var token: String = UUID().uuidString
    @Persisted var seats: Int = 2
}

final class RealmCoderTests: RealmTestCase {
    let types: [Object.Type] = [CoderUser.self, Restaurant.self, TwitterUser.self, Status.self, Ticket.self]

    func testAbsentPropertiesTakeEachNewObjectsOwnInitialValues() throws {
        let realm = try openRealm(types: types)
        let tickets = try RealmCoder(realm: realm).decodeArray(Ticket.self, from: Data(#"[{"id": 1}, {"id": 2, "seats": 4}]"#.utf8))
        XCTAssertEqual(tickets.map(\.seats), [2, 4])
        XCTAssertEqual(Set(tickets.map(\.token)).count, 2, "each new object runs the initializer")
        let restaurants = try RealmCoder(realm: realm).decodeArray(Restaurant.self, from: Data(#"[{"id": 1}, {"id": 2}]"#.utf8))
        XCTAssertEqual(restaurants.map(\.rating), [0, 0])
        XCTAssertEqual(restaurants.map { Array($0.tags) }, [[], []])
    }

    func testTheSeedUserWithEnvelopesIgnoredAndRawAttributes() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        let json = #"{"user": {"email": "bats@superfriends.org", "first_name": "Bruce", "id": 3, "last_name": "Wayne", "username": "bats", "address": "Wayne Manor", "config_json": {"theme": ["dark", 1]}}}"#
        let user = try coder.decode(CoderUser.self, from: Data(json.utf8))
        XCTAssertNotNil(user.realm, "committed to the realm")
        XCTAssertEqual(user.objId, 3)
        XCTAssertEqual(user.firstName, "Bruce")
        XCTAssertEqual(user.address, "Wayne Manor")
        XCTAssertEqual(try JSONValue(string: user.configJson), try JSONValue(string: #"{"theme":["dark",1]}"#), "the subtree, kept as JSON text")
        let encoded = try JSONValue(data: coder.encode(user, useEnvelope: true))
        XCTAssertEqual(encoded["user"]?["first_name"], .string("Bruce"))
        XCTAssertEqual(encoded["user"]?["id"], .int(3))
        XCTAssertNil(encoded["user"]?["address"], "ignored attributes are not sent")
        XCTAssertNil(encoded["user"]?["phone"])
        XCTAssertEqual(encoded["user"]?["config_json"], try JSONValue(string: #"{"theme":["dark",1]}"#), "raw JSON goes back as JSON")
        // The list envelope, and a bare object without its envelope.
        let users = try coder.decodeArray(CoderUser.self, from: Data(#"{"users": [{"id": 4, "first_name": "Diana"}, {"id": 5}]}"#.utf8))
        XCTAssertEqual(users.map(\.objId), [4, 5])
        XCTAssertEqual(try coder.decode(CoderUser.self, from: Data(#"{"id": 6, "username": "kal"}"#.utf8)).username, "kal")
        let list = try JSONValue(data: coder.encodeArray(users, useEnvelope: true))
        XCTAssertEqual(list["users"]?[0]?["first_name"], .string("Diana"))
    }

    /// A raw subtree that is a scalar goes back out as the same JSON type. Before, a string
    /// subtree was stored without its quotes, so `"42"` came back out as the number 42 and
    /// `"null"` as null.
    func testRawJSONSubtreesThatAreScalarsKeepTheirJSONType() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        let cases: [(String, JSONValue)] = [
            (#""42""#, .string("42")), ("42", .int(42)), (#""null""#, .string("null")), (#""plain""#, .string("plain")),
            ("true", .bool(true)), ("1.5", .double(1.5)), (#"[1, "a"]"#, .array([.int(1), .string("a")])),
        ]
        for (text, expected) in cases {
            let user = try coder.decode(CoderUser.self, from: Data(#"{"id": 7, "config_json": \#(text)}"#.utf8))
            XCTAssertEqual(try JSONValue(string: user.configJson), expected, "stored as the subtree's JSON text: \(text)")
            let encoded = try JSONValue(data: coder.encode(user, useEnvelope: true))
            XCTAssertEqual(encoded["user"]?["config_json"], expected, "encoded back as the same JSON: \(text)")
        }
    }

    /// RealmCoder's own combined example: `"id": 3` into `objId: String` with default options
    /// (it threw a type mismatch before). Conversions that can lose information still do.
    func testAnIntegerIntoAStringPropertyIsItsDecimalText() throws {
        let realm = try openRealm(types: [StringKeyedUser.self])
        let coder = RealmCoder(realm: realm)
        let user = try coder.decode(StringKeyedUser.self, from: Data(#"{"user": {"id": 3, "first_name": "Bruce"}}"#.utf8))
        XCTAssertEqual(user.objId, "3")
        XCTAssertEqual(try coder.decode(StringKeyedUser.self, from: Data(#"{"id": -9007199254740993}"#.utf8)).objId, "-9007199254740993")
        XCTAssertThrowsError(try coder.decode(StringKeyedUser.self, from: Data(#"{"id": 1.5}"#.utf8))) {
            XCTAssertEqual("\($0)", "id: expected String, found Double 1.5")
        }
        XCTAssertThrowsError(try coder.decode(StringKeyedUser.self, from: Data(#"{"id": true}"#.utf8)))
    }

    func testTheRestaurantListThenDetailThenListKeepsTheDetail() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        let list = #"[{"id": 1, "name": "Poole's", "rating": 4.5}, {"id": 2, "name": "Beasley's"}]"#
        let detail = #"{"id": 1, "name": "Poole's Diner", "phone": "919-832-4477", "tags": ["diner", "mac and cheese"]}"#
        _ = try coder.decodeArray(Restaurant.self, from: Data(list.utf8))
        _ = try coder.decode(Restaurant.self, from: Data(detail.utf8))
        _ = try coder.decodeArray(Restaurant.self, from: Data(list.utf8))
        let poole = try XCTUnwrap(realm.object(ofType: Restaurant.self, forPrimaryKey: 1))
        XCTAssertEqual(poole.name, "Poole's", "the list's summary fields are updated")
        XCTAssertEqual(poole.phone, "919-832-4477", "the detail the list does not carry survives")
        XCTAssertEqual(Array(poole.tags), ["diner", "mac and cheese"])
        XCTAssertEqual(poole.rating, 4.5)
    }

    /// `decodeArray(from: Data)` reads the list one element at a time; it must answer exactly
    /// as reading the whole document would.
    func testArraysAreReadElementByElementWithTheWholeDocumentsSemantics() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        func names(_ json: String) throws -> [String] { try coder.decodeArray(CoderUser.self, from: Data(json.utf8)).map(\.username) }
        // The envelope after other members, which are checked and dropped.
        XCTAssertEqual(try names(#"{"meta": {"next": [1, {"x": null}]}, "users": [{"id": 1, "username": "a"}], "count": 1}"#), ["a"])
        // A bare array, even though the type declares an envelope.
        XCTAssertEqual(try names(#"[{"id": 2, "username": "b"}, {"id": 3, "username": "c"}]"#), ["b", "c"])
        // The envelope twice: the last one wins, as in a parsed document.
        XCTAssertEqual(try names(#"{"users": [{"id": 4, "username": "d"}], "users": [{"id": 5, "username": "e"}]}"#), ["e"])
        XCTAssertNil(realm.object(ofType: CoderUser.self, forPrimaryKey: 4), "the first envelope's objects are not written")
        XCTAssertEqual(try names("[]"), [])
        let before = realm.objects(CoderUser.self).count
        // Malformed JSON after the list, no list, a list that is not one, a bad element.
        for (json, message) in [(#"{"users": [{"id": 6, "username": "f"}], "more": tru}"#, "invalid JSON: unexpected '}' at byte 51"),
                                (#"{"people": []}"#, #"$: expected an array of User or an object with "users""#),
                                (#"{"users": [], "users": {"id": 7}}"#, #"$: expected an array of User or an object with "users""#),
                                (#"{"users": [{"id": 8}, 3]}"#, "users[1]: expected an object"),
                                (#"[{"id": 9}] x"#, "invalid JSON: unexpected data after the JSON value at byte 12")] {
            XCTAssertThrowsError(try coder.decodeArray(CoderUser.self, from: Data(json.utf8)), json) { XCTAssertEqual("\($0)", message, json) }
        }
        XCTAssertEqual(realm.objects(CoderUser.self).count, before, "a failed decode writes nothing")
    }

    func testErrorsNamePathsAndWriteNothing() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm)
        let bad = #"{"users": [{"id": 1, "rank": 1}, {"id": 2}, {"id": 3}, {"id": 4, "rank": "12"}]}"#
        XCTAssertThrowsError(try coder.decodeArray(CoderUser.self, from: Data(bad.utf8))) { error in
            XCTAssertEqual("\(error)", #"users[3].rank: expected Int, found String "12""#)
        }
        XCTAssertEqual(realm.objects(CoderUser.self).count, 0, "a failed decode writes nothing")
        let coercing = RealmCoder(realm: realm, typeMismatchPolicy: .coerce)
        XCTAssertEqual(try coercing.decodeArray(CoderUser.self, from: Data(bad.utf8)).last?.rank, 12)
        XCTAssertThrowsError(try coder.decode(CoderUser.self, from: Data(#"{"id": 9, "username": null}"#.utf8))) { error in
            XCTAssertEqual("\(error)", "username: null for non-optional property 'username'")
        }
        let skipping = RealmCoder(realm: realm, nullPolicy: .skip)
        XCTAssertEqual(try skipping.decode(CoderUser.self, from: Data(#"{"id": 9, "username": null}"#.utf8)).username, "")
        XCTAssertThrowsError(try coder.decode(CoderUser.self, from: Data(#"{"username": "x"}"#.utf8))) { error in
            XCTAssertEqual("\(error)", "$: User needs its primary key 'objId'")
        }
        XCTAssertThrowsError(try coder.decode(CoderUser.self, from: Data(#"{"id": 1,"#.utf8))) { error in
            XCTAssertEqual("\(error)", "invalid JSON: JSON ends unexpectedly at byte 9")
        }
        XCTAssertThrowsError(try coder.decode(CoderUser.self, from: Data("[1]".utf8))) { error in
            XCTAssertEqual("\(error)", "$: expected an object of User")
        }
    }

    func testSnakeCaseKeysDuplicatesAndNestedObjectsByPrimaryKey() throws {
        let realm = try openRealm(types: types)
        let coder = RealmCoder(realm: realm, keyStrategy: .convertFromSnakeCase)
        let json = #"""
        {"statuses": [
          {"id": 9223372036854775807, "text": "first", "retweet_count": 2, "user": {"id": 10, "screen_name": "ann", "followers_count": 5}},
          {"id": 2, "text": "second", "user": {"id": 10, "screen_name": "ann2"}},
          {"id": 2, "text": "second, again"}
        ]}
        """#
        let statuses = try coder.decodeArray(Status.self, from: Data(json.utf8))
        XCTAssertEqual(statuses.count, 3)
        XCTAssertEqual(realm.objects(Status.self).count, 2, "duplicates in one payload are one object")
        XCTAssertEqual(realm.object(ofType: Status.self, forPrimaryKey: Int64.max)?.retweetCount, 2, "64-bit ids stay exact")
        XCTAssertEqual(realm.object(ofType: Status.self, forPrimaryKey: 2)?.text, "second, again")
        XCTAssertEqual(realm.objects(TwitterUser.self).count, 1, "nested users upsert by primary key")
        let ann = try XCTUnwrap(realm.object(ofType: TwitterUser.self, forPrimaryKey: 10))
        XCTAssertEqual(ann.screenName, "ann2")
        XCTAssertEqual(ann.followersCount, 5, "absent keys are left alone")
        // A duplicate that brings a link to an object first seen after the draft it merges into.
        let later = #"{"statuses": [{"id": 30, "text": "a"}, {"id": 31, "text": "b"}, {"id": 30, "user": {"id": 77, "screen_name": "late"}}]}"#
        _ = try coder.decodeArray(Status.self, from: Data(later.utf8))
        XCTAssertEqual(realm.object(ofType: Status.self, forPrimaryKey: 30)?.user?.screenName, "late")
        XCTAssertEqual(JSONKeyStrategy.snakeCase("userID"), "user_id")
        XCTAssertEqual(JSONKeyStrategy.snakeCase("followersCount"), "followers_count")
    }

    func testTwitterSearchResults() throws {
        let data = try Data(contentsOf: JSONReaderTests.payloads.appendingPathComponent("twitter.json"))
        let realm = try openRealm(types: types)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE MMM dd HH:mm:ss Z yyyy"
        let coder = RealmCoder(realm: realm, dateFormatter: formatter, keyStrategy: .convertFromSnakeCase)
        let statuses = try coder.decodeArray(Status.self, from: data)
        let source = try JSONValue(data: data)
        guard case .array(let raw)? = source["statuses"] else { return XCTFail("no statuses") }
        XCTAssertEqual(statuses.count, raw.count)
        for (status, json) in zip(statuses, raw) {
            XCTAssertEqual(.int(status.id), json["id"])
            XCTAssertEqual(.string(status.text), json["text"])
            XCTAssertEqual(status.user.map { JSONValue.int($0.id) }, json["user"]?["id"])
            XCTAssertEqual(try JSONValue(string: status.entities), json["entities"], "entities kept as raw JSON")
            XCTAssertNotNil(status.createdAt)
            // And back: the fields we store come out as they came in.
            let encoded = try coder.encodeValue(status)
            XCTAssertEqual(encoded["id"], json["id"])
            XCTAssertEqual(encoded["created_at"], json["created_at"])
            XCTAssertEqual(encoded["entities"], json["entities"])
            XCTAssertEqual(encoded["user"]?["screen_name"], json["user"]?["screen_name"])
        }
        // An array of objects whose keys are all top-level is written member by member,
        // without a `JSONValue` tree: the bytes are those of the tree's encoding.
        let tree = try JSONValue.array(statuses.map { try coder.encodeValue($0) }).data()
        XCTAssertEqual(String(decoding: try coder.encodeArray(statuses), as: UTF8.self), String(decoding: tree, as: UTF8.self))
        let users = realm.objects(TwitterUser.self).sorted(byKeyPath: "id")
        XCTAssertEqual(try coder.encodeArray(users), try JSONValue.array(users.map { try coder.encodeValue($0) }).data())
        XCTAssertEqual(try coder.encodeArray([Status]()), Data("[]".utf8))
    }
}
