// Realm Swift's dynamicObjects: a stored type read and written by property name, with or
// without its class in the configuration.

import XCTest
@testable import Strata

final class DynamicObjectTests: RealmTestCase {
    func testDynamicObjectsReadQueryAndWriteByName() throws {
        do {
            let realm = try openRealm()
            try realm.write {
                let user = makeUser("1", rank: 5, city: "Raleigh", lastName: "Bell")
                let car = Car()
                car.vin = "V1"
                car.model = "T"
                user.car = car
                user.tags.append(contentsOf: ["a", "b"])
                try realm.add(user)
                try realm.add(makeUser("2", rank: 2, city: "Cary"))
            }
        }
        // A realm whose configuration lists only Car: User is known from the store alone.
        let realm = try Realm(configuration: configuration(types: [Car.self]))
        let users = realm.dynamicObjects("User")
        XCTAssertEqual(users.count, 2)
        let bell = try XCTUnwrap(users.filter("lastName == 'Bell' AND car.model == 'T'").first)
        XCTAssertEqual(bell.typeName, "User")
        XCTAssertEqual(bell["rank"] as? Int, 5)
        XCTAssertEqual(bell["tags"] as? [String], ["a", "b"])
        XCTAssertEqual((bell["car"] as? Car)?.model, "T", "a configured class reads as itself")
        XCTAssertEqual(bell.objectSchema.className, "User")
        XCTAssertTrue(bell.description.hasPrefix("User { objId = \"1\""), bell.description)
        XCTAssertEqual(users.sorted(byKeyPath: "rank").map { $0["objId"] as? String }, ["2", "1"])
        XCTAssertNil(bell["nope"])
        // The checked read works through the stored schema too (it threw for every name).
        XCTAssertEqual(try bell.value(forProperty: "rank") as? Int, 5)
        XCTAssertEqual(try bell.value(forProperty: "lastName") as? String, "Bell")
        XCTAssertThrowsError(try bell.value(forProperty: "nope")) {
            XCTAssertEqual($0 as? RealmError, .unknownProperty(type: "User", property: "nope"))
        }
        // Writes by name, indexes kept: the indexed city moves.
        try realm.write { bell["city"] = "Durham" }
        XCTAssertEqual(realm.dynamicObjects("User").filter("city == 'Durham'").count, 1)
        XCTAssertNotNil(realm.dynamicObjects("User").filter("city == 'Durham'").query.indexTerm)
        XCTAssertEqual(realm.dynamicObjects("User").filter("city == 'Raleigh'").count, 0)
        try realm.write { try realm.delete(realm.dynamicObjects("User").filter("objId == '2'")) }
        XCTAssertEqual(realm.dynamicObjects("User").count, 1)
        XCTAssertThrowsError(try realm.dynamicObjects(ofType: "Nope")) { XCTAssertEqual($0 as? RealmError, .unknownType("Nope")) }
        // The typed view agrees.
        let typed = try Realm(configuration: configuration())
        XCTAssertEqual(typed.object(ofType: User.self, forPrimaryKey: "1")?.city, "Durham")
    }
}
