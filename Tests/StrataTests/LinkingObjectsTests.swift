// LinkingObjects: the live inverse of a to-one link and of a list, read through the
// origin property's hidden inverse index; in string queries; read-only.

import Foundation
import XCTest
@testable import Strata

final class Driver: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted(originProperty: "driver") var cars: LinkingObjects<Vehicle>
    @Persisted(originProperty: "members") var clubs: LinkingObjects<Club>
}

final class Vehicle: Object {
    @Persisted(primaryKey: true) var plate = ""
    @Persisted var model = ""
    @Persisted var driver: Driver?
}

final class Club: Object {
    @Persisted var title = ""
    @Persisted var members: List<Driver>
}

let linkingTypes: [Object.Type] = [Driver.self, Vehicle.self, Club.self]

final class LinkingObjectsTests: RealmTestCase {
    private func seed(_ realm: Realm) throws {
        try realm.write {
            let ann = Driver(), bob = Driver(), cid = Driver()
            ann.name = "ann"; bob.name = "bob"; cid.name = "cid"
            for (plate, model, driver) in [("A1", "T", ann), ("A2", "S", ann), ("B1", "T", bob), ("X0", "3", nil)] {
                let car = Vehicle()
                car.plate = plate; car.model = model; car.driver = driver
                try realm.add(car)
            }
            try realm.add(cid)
            let club = Club(); club.title = "racing"; club.members.append(objectsIn: [ann, bob, ann])
            let other = Club(); other.title = "touring"; other.members.append(ann)
            try realm.add([club, other])
        }
    }

    func testInverseOfLinksAndListsIsLiveAndPersists() throws {
        do {
            let realm = try openRealm(types: linkingTypes)
            try seed(realm)
            let ann = try XCTUnwrap(realm.object(ofType: Driver.self, forPrimaryKey: "ann"))
            XCTAssertEqual(ann.cars.map(\.plate), ["A1", "A2"])
            XCTAssertEqual(Set(ann.clubs.map(\.title)), ["racing", "touring"], "a list holding ann twice counts once")
            XCTAssertEqual(realm.object(ofType: Driver.self, forPrimaryKey: "cid")?.cars.count, 0)
            // Live inside a write, before the commit updates the index.
            try realm.write {
                realm.object(ofType: Vehicle.self, forPrimaryKey: "B1")!.driver = ann
                realm.object(ofType: Vehicle.self, forPrimaryKey: "A2")!.driver = nil
                XCTAssertEqual(ann.cars.map(\.plate), ["A1", "B1"])
                let fresh = Vehicle(); fresh.plate = "A3"; fresh.driver = ann
                try realm.add(fresh)
                XCTAssertEqual(ann.cars.map(\.plate), ["A1", "A3", "B1"])
                try realm.delete(realm.objects(Club.self).filter("title == 'touring'"))
            }
            XCTAssertEqual(ann.cars.map(\.plate), ["A1", "A3", "B1"])
            XCTAssertEqual(ann.clubs.map(\.title), ["racing"])
            XCTAssertEqual(realm.object(ofType: Driver.self, forPrimaryKey: "bob")?.cars.count, 0)
        }
        let realm = try openRealm(types: linkingTypes)
        let ann = try XCTUnwrap(realm.object(ofType: Driver.self, forPrimaryKey: "ann"))
        XCTAssertEqual(ann.cars.map(\.plate), ["A1", "A3", "B1"])
        XCTAssertEqual(ann.cars.index(of: realm.object(ofType: Vehicle.self, forPrimaryKey: "B1")!), 2)
        XCTAssertEqual(ann.clubs.first?.title, "racing")
        // The inverse index holds exactly the origin objects (a read is a look-up, not a scan).
        let bound = try realm.boundType(for: Vehicle.self)
        XCTAssertEqual(bound.maintainedIndexes.map(\.property), [bound.schema.index(of: "driver")!])
        let indexed = try SecondaryIndex.lookup(table: bound.indexTable(bound.schema.index(of: "driver")!),
                                                value: .link(ann._state!.key)) { try realm.snapshot.get(table: $0, key: $1) }
        XCTAssertEqual(Set(indexed.map { PrimaryKeyValue(keyBytes: $0)! }), [.string("A1"), .string("A3"), .string("B1")])
    }

    func testStringQueriesReachLinkingObjects() throws {
        let realm = try openRealm(types: linkingTypes)
        try seed(realm)
        let drivers = realm.objects(Driver.self)
        XCTAssertEqual(drivers.filter("ANY cars.model == 'T'").map(\.name), ["ann", "bob"])
        XCTAssertEqual(drivers.filter("cars.@count > 1").map(\.name), ["ann"])
        XCTAssertEqual(drivers.filter("cars.@count == 0").map(\.name), ["cid"])
        XCTAssertEqual(drivers.filter("clubs.@count == 2").map(\.name), ["ann"])
        XCTAssertEqual(drivers.filter("NONE clubs.title == 'racing'").map(\.name), ["cid"])
        XCTAssertEqual(drivers.filter("ALL cars.model == 'T' AND cars.@count > 0").map(\.name), ["bob"])
        // Inside a write, pending links count.
        try realm.write {
            realm.object(ofType: Vehicle.self, forPrimaryKey: "X0")!.driver = realm.object(ofType: Driver.self, forPrimaryKey: "cid")
            XCTAssertEqual(drivers.filter("ANY cars.model == '3'").map(\.name), ["cid"])
        }
        XCTAssertEqual(realm.dynamicObjects("Driver").filter("cars.@count == 1").map { $0["name"] as? String }, ["bob", "cid"])
        let dynamicCars = realm.dynamicObjects("Driver").first?["cars"] as? [Object]
        XCTAssertEqual(dynamicCars?.count, 2)
        // Through the stored schema only, as the tool reads it.
        realm.invalidate()
        let store = try Store(directory: directory, options: StoreOptions())
        defer { try? store.close() }
        let inspector = try XCTUnwrap(try StoreInspector(store: store))
        XCTAssertEqual(try inspector.objects(ofType: "Driver", matching: "ANY cars.model == 'T'").map { $0["name"] as? String }, ["ann", "bob"])
    }

    func testLinkingObjectsAreReadOnlyAndCheckedInTheSchema() throws {
        let realm = try openRealm(types: linkingTypes)
        XCTAssertThrowsError(try realm.write { try realm.create(Driver.self, value: ["name": "x", "cars": []]) }) { error in
            XCTAssertTrue("\(error)".contains("Driver.cars is linking objects, which are read-only"), "\(error)")
        }
        XCTAssertEqual(realm.objects(Driver.self).count, 0)
        // strata import (StoreImporter) given linking objects: an error at the JSON path, nothing written.
        let importer = try XCTUnwrap(try StoreImporter(store: realm.store))
        XCTAssertThrowsError(try importer.importObjects(ofType: "Driver", from: Data(#"[{"name": "dee", "cars": []}]"#.utf8))) {
            XCTAssertTrue("\($0)".contains("$[0].cars"), "\($0)")
            XCTAssertTrue("\($0)".contains("cars is linking objects"), "\($0)")
        }
        realm.refresh()
        XCTAssertEqual(realm.objects(Driver.self).count, 0)
        XCTAssertEqual(realm.schema["Driver"]?["cars"]?.typeDescription, "LinkingObjects<Vehicle>(driver)")
        let unmanaged = Driver()
        XCTAssertTrue(unmanaged.cars.isEmpty)
    }

    func testBadOriginPropertiesAreSchemaErrors() throws {
        final class Lost: Object {
            @Persisted var name = ""
            @Persisted(originProperty: "nothing") var cars: LinkingObjects<Vehicle>
        }
        final class WrongTarget: Object {
            @Persisted var name = ""
            @Persisted(originProperty: "model") var cars: LinkingObjects<Vehicle>
        }
        for (type, expected) in [(Lost.self as Object.Type, "Lost.cars: Vehicle.nothing is not a link, list or set of links to Lost"),
                                 (WrongTarget.self, "WrongTarget.cars: Vehicle.model is not a link, list or set of links to WrongTarget")] {
            XCTAssertThrowsError(try Realm(configuration: configuration(types: linkingTypes + [type]))) { error in
                XCTAssertEqual("\(error)", "invalid schema: \(expected)")
            }
        }
    }
}
