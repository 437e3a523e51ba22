// Every property type of docs/API.md §2 and §5 round-trips through a store, plain and optional.

import XCTest
@testable import Strata

/// Stored as "lat,lng" text; refuses anything else (for the decoding-failure test).
struct StrictPoint: ColumnCodable, Equatable {
    var x: Int
    var y: Int
    static var columnType: ColumnType { .text }
    func archivedValue() -> Value { Value("\(x),\(y)") }
    init(x: Int, y: Int) { self.x = x; self.y = y }
    init?(with value: Value) {
        let parts = value.stringValue.split(separator: ",")
        guard parts.count == 2, let x = Int(parts[0]), let y = Int(parts[1]) else { return nil }
        self.init(x: x, y: y)
    }
}

final class Shape: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var point: StrictPoint? = nil
    @Persisted var label: String = ""
}

final class UUIDKeyed: Object {
    @Persisted(primaryKey: true) var id: UUID = UUID()
    @Persisted var value: Int8 = 0
}

final class TwoKeys: Object {
    @Persisted(primaryKey: true) var a: Int = 0
    @Persisted(primaryKey: true) var b: Int = 0
}

final class DoubleKey: Object {
    @Persisted(primaryKey: true) var a: Double = 0
}

final class PropertyTypesTests: RealmTestCase {
    func testEveryTypeRoundTrips() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let uuid = UUID()
        do {
            let realm = try openRealm()
            let object = AllTypes()
            object.key = 42
            object.bool = true
            object.int8 = -8
            object.int16 = 1600
            object.int32 = -320_000
            object.int64 = .max
            object.double = .pi
            object.float = 1.5
            object.string = "héllo 🌍"
            object.data = Data([0, 1, 2, 255])
            object.date = date
            object.uuid = uuid
            object.decimal = Decimal(string: "12345.6789")!
            object.optBool = false
            object.optInt = nil
            object.optDouble = 2.5
            object.optString = "x"
            object.optDate = date
            object.optUUID = uuid
            object.optDecimal = Decimal(7)
            object.ints.append(contentsOf: [3, 1, 2])
            object.optionalStrings.append(contentsOf: ["a", nil, "c"])
            object.dates.append(date)
            object.kind = .enterprise
            try realm.write { try realm.add(object) }
        }
        let realm = try openRealm()
        let object = try XCTUnwrap(realm.object(ofType: AllTypes.self, forPrimaryKey: 42))
        XCTAssertEqual(object.bool, true)
        XCTAssertEqual(object.int8, -8)
        XCTAssertEqual(object.int16, 1600)
        XCTAssertEqual(object.int32, -320_000)
        XCTAssertEqual(object.int64, .max)
        XCTAssertEqual(object.double, .pi)
        XCTAssertEqual(object.float, 1.5)
        XCTAssertEqual(object.string, "héllo 🌍")
        XCTAssertEqual(object.data, Data([0, 1, 2, 255]))
        XCTAssertEqual(object.date, date)
        XCTAssertEqual(object.uuid, uuid)
        XCTAssertEqual(object.decimal, Decimal(string: "12345.6789")!)
        XCTAssertEqual(object.optBool, false)
        XCTAssertNil(object.optInt)
        XCTAssertEqual(object.optDouble, 2.5)
        XCTAssertEqual(object.optString, "x")
        XCTAssertEqual(object.optDate, date)
        XCTAssertEqual(object.optUUID, uuid)
        XCTAssertEqual(object.optDecimal, Decimal(7))
        XCTAssertEqual(Array(object.ints), [3, 1, 2])
        XCTAssertEqual(Array(object.optionalStrings), ["a", nil, "c"])
        XCTAssertEqual(Array(object.dates), [date])
        XCTAssertEqual(object.kind, .enterprise)
        // Lists edit in place inside a write.
        try realm.write {
            object.ints.remove(at: 0)
            object.ints.insert(9, at: 0)
            object.ints.move(from: 0, to: 2)
            object.optInt = 5
        }
        XCTAssertEqual(Array(object.ints), [1, 2, 9])
        XCTAssertEqual(object.optInt, 5)
    }

    func testSchemaIsDiscoveredFromTheDeclaration() throws {
        let schema = ObjectType.info(for: User.self).schema
        XCTAssertEqual(schema.className, "User")
        XCTAssertEqual(schema.properties.map(\.name), ["objId", "username", "firstName", "lastName", "rank", "score", "active",
                                                       "joined", "avatar", "id", "city", "tags", "car", "phones", "kind", "location"])
        XCTAssertEqual(schema.primaryKeyProperty?.name, "objId")
        XCTAssertTrue(schema["city"]!.isIndexed)
        XCTAssertEqual(schema["tags"]!.typeDescription, "List<string>")
        XCTAssertEqual(schema["car"]!.typeDescription, "Car?")
        XCTAssertEqual(schema["phones"]!.typeDescription, "List<Phone>")
        XCTAssertEqual(schema["kind"]!.kind, .int)
        XCTAssertEqual(schema["location"]!.kind, .column)
        XCTAssertEqual(schema["joined"]!.typeDescription, "date?")
    }

    func testUUIDPrimaryKeyAndHiddenIDs() throws {
        let realm = try openRealm(types: allModelTypes + [UUIDKeyed.self])
        let id = UUID()
        try realm.write {
            let object = UUIDKeyed()
            object.id = id
            object.value = 3
            try realm.add(object)
            for i in 0 ..< 5 {
                let entry = LogEntry()
                entry.message = "m\(i)"
                try realm.add(entry)
            }
        }
        XCTAssertEqual(realm.object(ofType: UUIDKeyed.self, forPrimaryKey: id)?.value, 3)
        let entries = realm.objects(LogEntry.self)
        XCTAssertEqual(entries.map(\.message), ["m0", "m1", "m2", "m3", "m4"], "hidden ids keep insertion order")
        let key = entries[2].primaryKeyValue
        XCTAssertEqual(realm.object(ofType: LogEntry.self, forPrimaryKeyValue: key)?.message, "m2")
        // Ids continue after a reopen.
        let again = try openRealm(types: allModelTypes + [UUIDKeyed.self])
        try again.write { let entry = LogEntry(); entry.message = "m5"; try again.add(entry) }
        XCTAssertEqual(again.objects(LogEntry.self).map(\.message).last, "m5")
    }

    func testInvalidDeclarationsAreRejected() throws {
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [TwoKeys.self]))) { error in
            XCTAssertEqual("\(error)", "invalid schema: TwoKeys declares more than one primary key: a, b")
        }
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [DoubleKey.self]))) { error in
            XCTAssertTrue("\(error)".contains("a primary key must be Int, Int8/16/32/64, String, UUID or ObjectId, not double"), "\(error)")
        }
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [User.self]))) { error in
            XCTAssertTrue("\(error)".contains("User.car links to 'Car', which is not in Configuration.objectTypes"), "\(error)")
        }
    }

    func testColumnDecodingFailureIsReportedNotNil() throws {
        let realm = try openRealm(types: [Shape.self])
        try realm.write {
            try realm.create(Shape.self, value: ["id": 1, "point": StrictPoint(x: 1, y: 2)])
            // A value this type cannot read back, stored through the dynamic API.
            try realm.create(Shape.self, value: ["id": 2, "point": Value("not a point")])
        }
        XCTAssertEqual(realm.object(ofType: Shape.self, forPrimaryKey: 1)?.point, StrictPoint(x: 1, y: 2))
        let broken = try XCTUnwrap(realm.object(ofType: Shape.self, forPrimaryKey: 2))
        XCTAssertThrowsError(try broken.value(forProperty: "point")) { error in
            XCTAssertEqual(error as? RealmError, .columnDecodingFailed(type: "StrictPoint", object: "Shape(2)", property: "point"))
            XCTAssertEqual("\(error)", "StrictPoint could not be decoded from the value stored in Shape(2).point")
        }
    }

    func testCreateRejectsValuesThatDoNotFit() throws {
        let realm = try openRealm()
        try realm.write {
            XCTAssertThrowsError(try realm.create(AllTypes.self, value: ["key": 1, "int8": 300])) { error in
                XCTAssertEqual(error as? RealmError, .typeMismatch(property: "AllTypes.int8", expected: "int8", found: "300, out of range"))
                XCTAssertEqual("\(error)", "invalid value: AllTypes.int8 expects int8; got 300, out of range")
            }
            XCTAssertThrowsError(try realm.create(AllTypes.self, value: ["key": 2, "string": 5])) { error in
                XCTAssertEqual(error as? RealmError, .typeMismatch(property: "AllTypes.string", expected: "string", found: "Int 5"))
                XCTAssertEqual("\(error)", "invalid value: AllTypes.string expects string; got Int 5")
            }
            XCTAssertThrowsError(try realm.create(AllTypes.self, value: ["key": 3, "nope": 5])) { error in
                XCTAssertEqual(error as? RealmError, .unknownProperty(type: "AllTypes", property: "nope"))
                XCTAssertEqual("\(error)", "invalid value: AllTypes has no property 'nope'")
            }
            // Without the key: the property's initial value (0), as Realm does; so a second
            // one finds it taken. A key given as nil is missing.
            XCTAssertEqual(try realm.create(AllTypes.self, value: ["string": "x"]).key, 0)
            XCTAssertThrowsError(try realm.create(AllTypes.self, value: ["string": "y"])) { error in
                XCTAssertEqual(error as? RealmError, .primaryKeyExists(type: "AllTypes", key: "0"))
            }
            XCTAssertThrowsError(try realm.create(AllTypes.self, value: ["key": nil, "string": "x"] as [String: Any?])) { error in
                XCTAssertEqual(error as? RealmError, .missingPrimaryKey(type: "AllTypes", property: "key"))
                XCTAssertEqual("\(error)", "invalid value: AllTypes needs its primary key 'key'")
            }
        }
    }
}
