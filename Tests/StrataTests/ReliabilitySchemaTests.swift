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
                          list: Bool = false, optional: Bool = false, className: String? = nil) -> String {
        #"{"isIndexed":\#(indexed),"isList":\#(list),"isOptional":\#(optional),"isPrimaryKey":\#(primaryKey),"kind":"\#(kind)","name":"\#(name)""#
            + (className.map { #","objectClassName":"\#($0)""# } ?? "") + "}"
    }

    private func schema(_ types: [(name: String, table: String, properties: [String])]) -> String {
        #"{"objectSchemas":["# + types.map { #"{"className":"\#($0.name)","properties":[\#($0.properties.joined(separator: ","))],"tableNumber":\#($0.table)}"# }
            .joined(separator: ",") + #"],"version":0}"#
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
