// Realm Swift's AnyRealmValue, as ported code uses it: a property, list and map whose
// values carry their own type, links to objects of any class, plain values in create.

import Foundation
import Strata
import XCTest

final class Setting: Object {
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var value: AnyRealmValue
    @Persisted var history: List<AnyRealmValue>
    @Persisted var byKey: Map<String, AnyRealmValue>
}

final class PortingAnyRealmValueContractTests: PortingStoreTestCase {
    private func settingsRealm(_ name: String) throws -> (Realm, Realm.Configuration) {
        let (realm, config) = try contractRealm(name, types: [Setting.self, Contact.self, Phone.self, Spot.self, Shelf.self])
        directories.append(config.directory!)
        return (realm, config)
    }

    func testEveryKindRoundTripsThroughTheStore() throws {
        let (realm, config) = try settingsRealm("mixed-kinds")
        XCTAssertEqual(Setting.sharedSchema()?["value"]?.kind, .mixed)
        XCTAssertEqual(Setting().value, .none)
        let id = ObjectId.generate(), uuid = UUID(), date = Date(timeIntervalSince1970: 1_700_000_000)
        let values: [AnyRealmValue] = [.none, .int(-7), .bool(true), .float(1.5), .double(2.25), .string("dark"),
                                       .data(Data([1, 2, 3])), .date(date), .objectId(id), .decimal128(try Decimal128(string: "19.99")),
                                       .uuid(uuid)]
        try realm.write {
            for (i, value) in values.enumerated() {
                let setting = Setting()
                setting.name = "s\(i)"
                setting.value = value
                try realm.add(setting)
            }
        }
        for (i, value) in values.enumerated() {
            XCTAssertEqual(realm.object(ofType: Setting.self, forPrimaryKey: "s\(i)")?.value, value, "s\(i)")
        }
        realm.invalidate()
        let reopened = try Realm(configuration: config)
        XCTAssertEqual(reopened.object(ofType: Setting.self, forPrimaryKey: "s5")?.value.stringValue, "dark")
        XCTAssertEqual(reopened.object(ofType: Setting.self, forPrimaryKey: "s9")?.value.decimal128Value, try Decimal128(string: "19.99"))
        XCTAssertEqual(reopened.object(ofType: Setting.self, forPrimaryKey: "s1")?.value.intValue, -7)
        XCTAssertNil(reopened.object(ofType: Setting.self, forPrimaryKey: "s1")?.value.stringValue)
    }

    func testObjectsOfAnyClassAreLinkedAndAddedWithTheValue() throws {
        let (realm, _) = try settingsRealm("mixed-objects")
        let phone = Phone()
        phone.number = "555"
        let setting = Setting()
        setting.name = "owner"
        setting.value = .object(phone)                          // unmanaged: added with the setting
        setting.history.append(objectsIn: [.int(1), .string("a"), .none])
        setting.byKey["n"] = .double(0.5)
        try realm.write { try realm.add(setting) }
        XCTAssertEqual(realm.objects(Phone.self).count, 1)
        let stored = try XCTUnwrap(realm.object(ofType: Setting.self, forPrimaryKey: "owner"))
        XCTAssertEqual(stored.value.object(Phone.self)?.number, "555")
        XCTAssertNil(stored.value.object(Contact.self), "another class")
        XCTAssertEqual(stored.value.dynamicObject?["number"] as? String, "555")
        XCTAssertEqual(Array(stored.history), [.int(1), .string("a"), .none])
        XCTAssertEqual(stored.byKey["n"], .double(0.5))

        try realm.write {
            let contact = try realm.create(Contact.self, value: ["name": "Ann", "age": 3])
            stored.value = .object(contact)
            stored.history.append(.object(contact))
        }
        XCTAssertEqual(stored.value.object(Contact.self)?.age, 3)
        XCTAssertEqual(stored.history.last?.object(Contact.self)?.name, "Ann")

        try realm.write { try realm.delete(realm.objects(Contact.self)) }
        XCTAssertEqual(stored.value, .none, "a deleted object reads as none")

        let spot = Spot()
        XCTAssertThrowsError(try realm.write { try realm.create(Setting.self, value: ["name": "bad", "value": spot]) }) { error in
            XCTAssertTrue("\(error)".contains("embedded"), "\(error)")
        }
        XCTAssertNil(realm.object(ofType: Setting.self, forPrimaryKey: "bad"))
    }

    func testPlainValuesInCreateAndDynamicAccess() throws {
        let (realm, _) = try settingsRealm("mixed-create")
        try realm.write {
            try realm.create(Setting.self, value: ["name": "a", "value": 5, "history": [1, "two", 3.5, nil], "byKey": ["x": true]] as [String: Any])
            try realm.create(Setting.self, value: ["name": "b", "value": "five"] as [String: Any])
            try realm.create(Setting.self, value: ["name": "c"] as [String: Any])
            XCTAssertThrowsError(try realm.create(Setting.self, value: ["name": "d", "value": [1, 2]] as [String: Any])) { error in
                guard case RealmError.typeMismatch(let property, _, _) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(property, "Setting.value")
            }
        }
        let a = try XCTUnwrap(realm.object(ofType: Setting.self, forPrimaryKey: "a"))
        XCTAssertEqual(a.value, .int(5))
        XCTAssertEqual(Array(a.history), [.int(1), .string("two"), .double(3.5), .none])
        XCTAssertEqual(a.byKey["x"], .bool(true))
        XCTAssertEqual(realm.object(ofType: Setting.self, forPrimaryKey: "b")?.value, .string("five"))
        XCTAssertEqual(realm.object(ofType: Setting.self, forPrimaryKey: "c")?.value, AnyRealmValue.none)
        let dynamic = try XCTUnwrap(realm.dynamicObject(ofType: "Setting", forPrimaryKey: "a"))
        XCTAssertEqual(dynamic["value"] as? Int, 5)
    }

    func testQueriesCompareValuesOfTheirOwnKind() throws {
        let (realm, _) = try settingsRealm("mixed-query")
        try realm.write {
            for (name, value) in [("i", AnyRealmValue.int(5)), ("s", .string("5")), ("d", .double(7.5)), ("n", .none)] {
                try realm.create(Setting.self, value: ["name": name, "value": value] as [String: Any])
            }
        }
        let settings = realm.objects(Setting.self)
        XCTAssertEqual(settings.filter("value == 5").map(\.name), ["i"])
        XCTAssertEqual(settings.filter("value == '5'").map(\.name), ["s"])
        XCTAssertEqual(settings.filter("value > 6").map(\.name), ["d"])
        XCTAssertEqual(settings.filter("value == nil").map(\.name), ["n"])
    }

    func testJSONCodingReadsAndWritesScalars() throws {
        let (realm, _) = try settingsRealm("mixed-json")
        let coder = RealmCoder(realm: realm)
        let json = Data(#"[{"name": "a", "value": 5, "history": [1, "two", 2.5, null, true]}, {"name": "b", "value": "x"}, {"name": "c", "value": null}]"#.utf8)
        let decoded = try coder.decodeArray(Setting.self, from: json)
        XCTAssertEqual(decoded.map(\.value), [.int(5), .string("x"), .none])
        XCTAssertEqual(Array(decoded[0].history), [.int(1), .string("two"), .double(2.5), .none, .bool(true)])
        XCTAssertThrowsError(try coder.decode(Setting.self, from: Data(#"{"name": "d", "value": {"nested": 1}}"#.utf8))) { error in
            XCTAssertTrue("\(error)".contains("value"), "\(error)")
        }
        let encoded = try JSONValue(data: coder.encode(try XCTUnwrap(realm.object(ofType: Setting.self, forPrimaryKey: "a"))))
        XCTAssertEqual(encoded["value"], .int(5))
        XCTAssertEqual(encoded["history"], .array([.int(1), .string("two"), .double(2.5), .null, .bool(true)]))
        try realm.write { realm.object(ofType: Setting.self, forPrimaryKey: "b")!.value = .object(try realm.create(Contact.self, value: ["name": "Ann"])) }
        let linked = try JSONValue(data: coder.encode(try XCTUnwrap(realm.object(ofType: Setting.self, forPrimaryKey: "b"))))
        XCTAssertEqual(linked["value"], .string("Ann"), "an object held: its primary key")
    }

    final class IndexedMixed: Object {
        @Persisted(indexed: true) var value: AnyRealmValue
    }

    func testAnIndexedAnyRealmValueIsRefused() throws {
        XCTAssertThrowsError(try contractRealm("mixed-indexed", types: [IndexedMixed.self])) { error in
            XCTAssertTrue("\(error)".contains("IndexedMixed.value: AnyRealmValue cannot be indexed"), "\(error)")
        }
    }

    func testExportAndImportKeepEveryValue() throws {
        let (realm, config) = try settingsRealm("mixed-export")
        try realm.write {
            let ann = try realm.create(Contact.self, value: ["name": "Ann", "age": 3] as [String: Any])
            try realm.create(Setting.self, value: ["name": "a", "value": 5, "history": [1, "two", nil], "byKey": ["k": 2.5]] as [String: Any])
            try realm.create(Setting.self, value: ["name": "b", "value": ann] as [String: Any])
        }
        realm.invalidate()
        let exported: Data, contacts: Data
        do {
            let store = try Store(directory: config.directory!, options: StoreOptions())
            defer { try? store.close() }
            let inspector = try XCTUnwrap(try StoreInspector(store: store))
            let settings = try inspector.objects(ofType: "Setting")
            let b = try XCTUnwrap(settings.first { $0["name"] as? String == "b" })
            XCTAssertEqual((b["value"] as? [String: Any])?["$class"] as? String, "Contact")
            XCTAssertEqual((b["value"] as? [String: Any])?["$key"] as? String, "Ann")
            exported = try JSONSerialization.data(withJSONObject: settings)
            contacts = try JSONSerialization.data(withJSONObject: try inspector.objects(ofType: "Contact"))
        }
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("strata-contract-mixed-import-\(UUID().uuidString)")
        directories.append(copy)
        var copyConfig = config
        copyConfig.directory = copy
        do { _ = try Realm(configuration: copyConfig) }
        do {
            let store = try Store(directory: copy, options: StoreOptions())
            defer { try? store.close() }
            let importer = try XCTUnwrap(try StoreImporter(store: store))
            XCTAssertEqual(try importer.importObjects(ofType: "Contact", from: contacts).inserted, 1)
            XCTAssertEqual(try importer.importObjects(ofType: "Setting", from: exported).inserted, 2)
            XCTAssertThrowsError(try importer.importObjects(ofType: "Setting", from: Data(#"[{"name": "x", "value": [1]}]"#.utf8))) { error in
                XCTAssertTrue("\(error)".contains("$[0].value"), "\(error)")
            }
        }
        let imported = try Realm(configuration: copyConfig)
        XCTAssertEqual(imported.object(ofType: Setting.self, forPrimaryKey: "a")?.value, .int(5))
        XCTAssertEqual(imported.object(ofType: Setting.self, forPrimaryKey: "a").map { Array($0.history) }, [.int(1), .string("two"), .none])
        XCTAssertEqual(imported.object(ofType: Setting.self, forPrimaryKey: "a")?.byKey["k"], .double(2.5))
        XCTAssertEqual(imported.object(ofType: Setting.self, forPrimaryKey: "b")?.value.object(Contact.self)?.age, 3)
    }
}
