// StoreImporter (what `strata import` uses): objects written through the stored schema keep
// the secondary indexes exact, so the app's indexed queries find them.

import XCTest
@testable import Strata

final class StoreImporterTests: RealmTestCase {
    func testImportedObjectsAreFoundThroughTheIndex() throws {
        let config = configuration()
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.add(makeUser("1", city: "Raleigh")) }
        }
        do {
            let store = try Store(directory: directory)
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            let json = #"[{"objId": "1", "city": "Durham"}, {"objId": "2", "city": "Durham", "rank": 4}, {"objId": "3", "city": "Cary"}]"#
            let report = try importer.importObjects(ofType: "User", from: Data(json.utf8))
            XCTAssertEqual(report, StoreImporter.Report(inserted: 2, updated: 1, unchanged: 0))
            XCTAssertThrowsError(try importer.importObjects(ofType: "User", from: Data(#"[{"objId": "4", "city": 7}]"#.utf8))) {
                XCTAssertTrue("\($0)".contains("$[0].city"), "\($0)")
            }
        }
        let realm = try Realm(configuration: config)
        let durham = realm.objects(User.self).filter(#Predicate { $0.city == "Durham" })
        XCTAssertNotNil(durham.query.indexTerm)
        XCTAssertEqual(durham.map(\.objId).sorted(), ["1", "2"])
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.city == "Raleigh" }).count, 0)
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "4"))
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "2")?.rank, 4)
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "1")?.username, "user1", "left out: kept")
    }
}

extension StoreImporterTests {
    /// Values the type cannot hold are errors naming the JSON path, and nothing is written
    /// (before, null went into lists that hold no nil and huge decimals were stored as NaN);
    /// an imported hidden `_id` moves the id counter past it, so the app's next new object
    /// does not replace it (before, it took id 2 and overwrote the imported object).
    func testImportRefusesWhatTheTypeCannotHoldAndKeepsHiddenIDsUnique() throws {
        let config = configuration()
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.create(LogEntry.self, value: ["message": "first"]) }   // hidden id 1
        }
        do {
            let store = try Store(directory: directory)
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            let refused: [(String, String, String)] = [
                ("AllTypes", #"[{"key": 1, "ints": [1, null]}]"#, "$[0].ints[1]"),
                ("Node", #"[{"name": "a", "children": [null]}]"#, "$[0].children[0]"),
                ("AllTypes", #"[{"key": 2, "decimal": 1e300}]"#, "$[0].decimal"),
                ("AllTypes", #"[{"key": 3, "decimal": "NaN"}]"#, "$[0].decimal"),
                ("LogEntry", #"[{"_id": 0, "message": "zero"}]"#, "$[0]._id"),
                ("LogEntry", #"[{"_id": 9223372036854775807, "message": "max"}]"#, "$[0]._id"),
            ]
            for (type, json, path) in refused {
                XCTAssertThrowsError(try importer.importObjects(ofType: type, from: Data(json.utf8)), json) {
                    XCTAssertTrue("\($0)".contains(path), "\(json): \($0)")
                }
            }
            let allowed = #"[{"key": 4, "optionalStrings": ["a", null], "decimal": "12.5"}]"#
            XCTAssertEqual(try importer.importObjects(ofType: "AllTypes", from: Data(allowed.utf8)).inserted, 1)
            let hidden = #"[{"_id": 2, "message": "imported"}]"#
            XCTAssertEqual(try importer.importObjects(ofType: "LogEntry", from: Data(hidden.utf8)).inserted, 1)
        }
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.objects(AllTypes.self).map(\.key), [4])
        XCTAssertEqual(Array(realm.objects(AllTypes.self)[0].optionalStrings), ["a", nil])
        XCTAssertEqual(realm.objects(Node.self).count, 0)
        try realm.write { try realm.create(LogEntry.self, value: ["message": "later"]) }
        XCTAssertEqual(realm.objects(LogEntry.self).map(\.message).sorted(), ["first", "imported", "later"])
    }
}

extension StoreImporterTests {
    /// Issue 23, item 6: `strata import` and the realm agree on what changed (the stored
    /// bytes). Before, the importer compared values with `==`: -0.0 over a stored 0.0 was
    /// "unchanged" and the sign was lost, and a row holding NaN was rewritten by every
    /// import (NaN != NaN), though the realm's commit counts neither so.
    func testImportCountsAChangeAsTheRealmDoes() throws {
        let config = configuration()
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                try realm.add(makeUser("zero"))
                let nan = makeUser("nan")
                nan.score = .nan
                try realm.add(nan)
            }
        }
        do {
            let store = try Store(directory: directory)
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            let negativeZero = try importer.importObjects(ofType: "User", from: Data(#"[{"objId": "zero", "score": -0.0}]"#.utf8))
            XCTAssertEqual(negativeZero, StoreImporter.Report(inserted: 0, updated: 1, unchanged: 0))
            let sameAgain = try importer.importObjects(ofType: "User", from: Data(#"[{"objId": "nan", "rank": 0}]"#.utf8))
            XCTAssertEqual(sameAgain, StoreImporter.Report(inserted: 0, updated: 0, unchanged: 1))
        }
        let realm = try Realm(configuration: config)
        let score = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "zero")?.score)
        XCTAssertEqual(score.sign, .minus, "the imported -0.0 was kept")
        // The realm's commit agrees: setting the same values again changes nothing.
        var notified = 0
        let token = realm.objects(User.self).observe { _ in notified += 1 }
        defer { token.invalidate() }
        try realm.write {
            realm.object(ofType: User.self, forPrimaryKey: "nan")?.score = .nan
            realm.object(ofType: User.self, forPrimaryKey: "zero")?.score = -0.0
        }
        XCTAssertEqual(notified, 1, "only the initial notification: nothing changed")
    }
}

extension StoreImporterTests {
    /// The stored schema remembers which properties hold raw JSON (so the tool, without the
    /// class, writes them as JSON); a store written before it learns it at the next open,
    /// with no migration.
    func testTheStoredSchemaRemembersRawJSONProperties() throws {
        func stored() throws -> PropertySchema? {
            let store = try Store(directory: directory)
            defer { try? store.close() }
            return try XCTUnwrap(try StoreImporter(store: store)).schema["User"]?["configJson"]
        }
        _ = try openRealm(types: [CoderUser.self])
        XCTAssertEqual(try stored()?.isRawJSON, true)
        XCTAssertEqual(try stored()?.kind, .string)
        // As a store written before the flag existed.
        do {
            let store = try Store(directory: directory)
            var schema = try XCTUnwrap(try SharedStore.loadSchema(store))
            let type = try XCTUnwrap(schema.objectSchemas.firstIndex { $0.className == "User" })
            let property = try XCTUnwrap(schema.objectSchemas[type].index(of: "configJson"))
            schema.objectSchemas[type].properties[property].isRawJSON = false
            try store.write { try SharedStore.writeSchema(schema, in: $0) }
            try store.close()
        }
        XCTAssertEqual(try stored()?.isRawJSON, false)
        _ = try openRealm(types: [CoderUser.self])
        XCTAssertEqual(try stored()?.isRawJSON, true)
    }
}
