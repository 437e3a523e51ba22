// Issue 13, finding 17: a stored schema is validated before any table is named from it.
// Table numbers past the layout's room wrapped (or trapped on +1), more than 254 properties
// bled into the next table's numbers, and a hostile store crashed `strata dump`. Now every
// reader (a realm, StoreInspector, the tool) gets `invalidSchema` saying what is wrong.

import Foundation
import XCTest
@testable import Strata

final class ReliabilitySchemaTests: RealmTestCase {
    /// A store whose schema record is `json`.
    private func storeWithSchema(_ json: String) throws {
        let store = try Store(directory: directory)
        try store.write { try $0.put(table: StoreLayout.metadataTable, key: StoreLayout.schemaKey, value: Array(json.utf8)) }
        try store.close()
    }

    private func property(_ name: String, _ kind: String = "int", primaryKey: Bool = false, indexed: Bool = false,
                          list: Bool = false, optional: Bool = false, className: String? = nil, extra: String = "") -> String {
        #"{"isIndexed":\#(indexed),"isList":\#(list),"isOptional":\#(optional),"isPrimaryKey":\#(primaryKey),"kind":"\#(kind)","name":"\#(name)""#
            + (className.map { #","objectClassName":"\#($0)""# } ?? "") + extra + "}"
    }

    private func schema(_ types: [(name: String, table: String, properties: [String])], embedded: Set<String> = []) -> String {
        #"{"objectSchemas":["# + types.map {
            #"{"className":"\#($0.name)","properties":[\#($0.properties.joined(separator: ","))],"tableNumber":\#($0.table)"#
                + (embedded.contains($0.name) ? #","isEmbedded":true}"# : "}")
        }.joined(separator: ",") + #"],"version":0}"#
    }

    /// Stored schemas whose sets, maps, embedded objects, linking objects and raw JSON
    /// properties break a rule.
    func testHostileSchemasOfRealmsModelTypesAreRefused() throws {
        let key = property("id", primaryKey: true)
        let cases: [(String, String)] = [
            (schema([("A", "0", [key, property("s", "embedded", className: "A")])]), "A.s holds an embedded 'A', which is not an embedded object type"),
            (schema([("A", "0", [key, property("e", "embedded", optional: true, className: "E")]), ("E", "1", [property("x")])]),
             "A.e holds an embedded 'E', which is not an embedded object type"),
            (schema([("A", "0", [key, property("l", "object", optional: true, className: "E")]), ("E", "1", [property("x")])], embedded: ["E"]),
             "A.l links to E, an embedded object type"),
            (schema([("A", "0", [key]), ("E", "1", [property("id", primaryKey: true)])], embedded: ["E"]), "E.id: an embedded object type cannot have a primary key"),
            (schema([("A", "0", [key]), ("E", "1", [property("me", "embedded", optional: true, className: "F")]),
                     ("F", "2", [property("back", "embedded", optional: true, className: "E")])], embedded: ["E", "F"]), "contains itself"),
            (schema([("A", "0", [key, property("t", extra: #","isSet":true"#)])]), "A.t is a set that is not stored as a list"),
            (schema([("A", "0", [key, property("t", list: true, extra: #","isMap":true"#)])]), "A.t cannot be both a map and a list"),
            (schema([("A", "0", [key, property("t", "embedded", list: true, className: "E", extra: #","isSet":true"#)]), ("E", "1", [property("x")])], embedded: ["E"]),
             "A.t cannot be a set of embedded objects"),
            (schema([("A", "0", [key, property("b", "linkingObjects", className: "B")]), ("B", "1", [property("a", "object", optional: true, className: "A")])]),
             "A.b is linking objects without an origin property"),
            (schema([("A", "0", [key, property("b", "linkingObjects", className: "B", extra: #","originProperty":"x""#)]), ("B", "1", [property("x")])]),
             "A.b: B.x is not a link, list or set of links to A"),
            (schema([("A", "0", [key, property("b", "linkingObjects", className: "Z", extra: #","originProperty":"x""#)])]),
             "A.b reads links from 'Z', which is not a top-level type"),
            (schema([("A", "0", [key, property("x", extra: #","originProperty":"y""#)])]), "A.x names an origin property but is not linking objects"),
            (schema([("A", "0", [property("id", "objectId", primaryKey: true), property("m", "int", indexed: true, extra: #","isMap":true"#)])]), "A.m cannot be indexed"),
            (schema([("A", "0", [key, property("n", extra: #","isRawJSON":true"#)])]), "A.n holds raw JSON but is int, not a String"),
        ]
        for (json, reason) in cases {
            try? FileManager.default.removeItem(at: directory)
            try storeWithSchema(json)
            XCTAssertThrowsError(try Realm(configuration: configuration(types: [Node.self]))) { error in
                guard case .invalidSchema(let message) = error as? RealmError else { return XCTFail("\(reason): \(error)") }
                XCTAssertTrue(message.contains(reason), "\(message) — expected: \(reason)")
            }
            let store = try Store(directory: directory)
            XCTAssertThrowsError(try StoreInspector(store: store)) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
            try store.close()
        }
    }

    /// Rows that nest deeper than the format allows, or repeat a map key, are damage: read
    /// as an error naming the object, never a stack overflow or a silent merge.
    func testHostileNestedRowsAreDamageNotACrash() throws {
        do {
            let realm = try openRealm(types: modelTypeTypes)
            try realm.write { let object = Tagged(); object.name = "ok"; try realm.add(object) }
        }
        let store = try Store(directory: directory)
        let table = try XCTUnwrap(StoreInspector(store: store)?.schema["Tagged"]).tableNumber
        // 100,000 lists, each the only element of the one outside it: a recursive decoder
        // without a depth limit overflowed the stack here.
        let levels = 100_000, innermost = 9
        var deep: [UInt8] = []
        deep.reserveCapacity(levels * 9 + innermost)
        for level in 0 ..< levels {
            // Each list: its tag, the length of its count and element, the count (1).
            let length = UInt32(4 + (levels - level - 1) * 9 + innermost)
            deep.append(RowFormat.Tag.list.rawValue)
            withUnsafeBytes(of: length.littleEndian) { deep.append(contentsOf: $0) }
            withUnsafeBytes(of: UInt32(1).littleEndian) { deep.append(contentsOf: $0) }
        }
        deep += [RowFormat.Tag.int.rawValue] + Array(repeating: 0, count: 8)
        func row(_ field: [UInt8]) -> [UInt8] {
            [RowFormat.version, 0, 1, 0] + withUnsafeBytes(of: UInt32(field.count).littleEndian) { Array($0) } + field
        }
        // A map holding "k" twice.
        let entry: [UInt8] = [1, 0, 0, 0, UInt8(ascii: "k"), RowFormat.Tag.null.rawValue]
        let mapBody: [UInt8] = [2, 0, 0, 0] + entry + entry
        let twice = [RowFormat.Tag.map.rawValue] + withUnsafeBytes(of: UInt32(mapBody.count).littleEndian) { Array($0) } + mapBody
        try store.write { transaction in
            try transaction.put(table: StoreLayout.objectTable(table), key: PrimaryKeyValue.objectId(ObjectId()).keyBytes, value: row(deep))
            try transaction.put(table: StoreLayout.objectTable(table), key: PrimaryKeyValue.objectId(try ObjectId(string: "ffffffffffffffffffffffff")).keyBytes, value: row(twice))
        }
        XCTAssertThrowsError(try RowFormat.fields(of: row(deep))) { error in
            XCTAssertTrue("\(error)".contains("nested more than 100 deep"), "\(error)")
        }
        XCTAssertThrowsError(try RowFormat.fields(of: row(twice))) { error in
            XCTAssertTrue("\(error)".contains("map holds the key 'k' twice"), "\(error)")
        }
        let inspector = try XCTUnwrap(try StoreInspector(store: store))
        // The first damaged row the scan meets (scan order is the engine's) is the error.
        XCTAssertThrowsError(try inspector.objects(ofType: "Tagged")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("nested more than 100 deep") || text.contains("map holds the key 'k' twice"), text)
        }
        try store.close()
        let realm = try openRealm(types: modelTypeTypes)
        XCTAssertEqual(realm.objects(Tagged.self).filter("name == 'ok'").count, 1)
        for object in realm.objects(Tagged.self) { _ = object._id }
        XCTAssertEqual(realm.readErrors.count, 2, "\(realm.readErrors)")
    }

    func testHostileStoredSchemasAreRefusedWithTheReason() throws {
        let many = (0 ..< 300).map { property("p\($0)") }
        let cases: [(String, String)] = [
            (schema([("Node", "4294967295", [property("name", "string", primaryKey: true)])]), "Node has table number 4294967295"),
            (schema([("Node", "16777216", [property("name", "string", primaryKey: true)])]), "Node has table number 16777216"),
            (schema([("Wide", "0", many)]), "Wide has 300 properties; at most 254"),
            (schema([("A", "3", [property("x")]), ("B", "3", [property("y")])]), "A and B share table number 3"),
            (schema([("A", "0", [property("x")]), ("A", "1", [property("y")])]), "two classes are named 'A'"),
            (schema([("", "0", [property("x")])]), "a class has an empty name"),
            (schema([("A", "0", [property("x"), property("x", "string")])]), "A has two properties named 'x'"),
            (schema([("A", "0", [property("x", primaryKey: true), property("y", "string", primaryKey: true)])]), "A has more than one primary key"),
            (schema([("A", "0", [property("x", "double", primaryKey: true)])]), "A.x cannot be a primary key"),
            (schema([("A", "0", [property("x", "object", optional: true)])]), "A.x has no objectClassName"),
            (schema([("A", "0", [property("x", "int", indexed: true, list: true)])]), "A.x cannot be indexed"),
        ]
        for (json, reason) in cases {
            try? FileManager.default.removeItem(at: directory)
            try storeWithSchema(json)
            // The object layer.
            XCTAssertThrowsError(try Realm(configuration: configuration(types: [Node.self]))) { error in
                guard case .invalidSchema(let message) = error as? RealmError else { return XCTFail("\(reason): \(error)") }
                XCTAssertTrue(message.contains(reason), "\(message) — expected: \(reason)")
                XCTAssertTrue(message.contains(directory.path), message)
            }
            // What `strata dump` and `stats` use.
            let store = try Store(directory: directory)
            XCTAssertThrowsError(try StoreInspector(store: store)) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
            try store.close()
        }
    }

    func testSchemasTheLayerWritesStillRead() throws {
        do {
            let realm = try openRealm()
            try realm.write { try realm.add(newUser("1")) }
        }
        let store = try Store(directory: directory)
        let inspector = try XCTUnwrap(try StoreInspector(store: store))
        XCTAssertEqual(inspector.count(ofType: "User"), 1)
        try store.close()
        // The limits themselves are accepted: 254 properties, the largest table number.
        try FileManager.default.removeItem(at: directory)
        try storeWithSchema(schema([("Wide", "\(StoreLayout.maxStoredTableNumber)", (0 ..< 254).map { property("p\($0)") })]))
        let wide = try Store(directory: directory)
        XCTAssertEqual(try StoreInspector(store: wide)?.schema.objectSchemas.first?.properties.count, 254)
        try wide.close()
    }
}
