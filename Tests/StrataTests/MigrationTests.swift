// Schema checks and migrations (docs/API.md §2): every kind of schema change, with and without
// a migration block.

import XCTest
@testable import Strata

enum V1 {
    final class Person: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var name: String = ""
        @Persisted var age: Int = 0
        @Persisted var nickname: String = ""
        @Persisted var email: String = ""
        @Persisted var pet: Pet?
    }
    final class Pet: Object {
        @Persisted(primaryKey: true) var tag: Int = 0
        @Persisted var species: String = ""
    }
}

enum V2 {
    /// name → username (renamed), age Int → String (type change), nickname removed,
    /// rank added, email becomes the primary key.
    final class Person: Object {
        @Persisted var id: Int = 0
        @Persisted var username: String = ""
        @Persisted var age: String = ""
        @Persisted(primaryKey: true) var email: String = ""
        @Persisted var rank: Int = 7
        @Persisted var pet: Pet?
    }
    final class Pet: Object {
        @Persisted(primaryKey: true) var tag: Int = 0
        @Persisted var species: String = ""
    }
}

enum V1Reordered {
    final class Person: Object {
        @Persisted var name: String = ""
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var age: Int = 0
        @Persisted var nickname: String = ""
        @Persisted var email: String = ""
        @Persisted var pet: V1.Pet?
    }
}

final class MigrationTests: RealmTestCase {
    private func seedV1() throws {
        let realm = try Realm(configuration: configuration(types: [V1.Person.self, V1.Pet.self], version: 1))
        try realm.write {
            for i in 1 ... 3 {
                let person = V1.Person()
                person.id = i
                person.name = "name\(i)"
                person.age = 20 + i
                person.nickname = "nick\(i)"
                person.email = "p\(i)@example.com"
                let pet = V1.Pet()
                pet.tag = i
                pet.species = "cat"
                person.pet = pet
                try realm.add(person)
            }
        }
    }

    func testChangedSchemaWithoutNewVersionListsEveryDifference() throws {
        try seedV1()
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [V2.Person.self, V2.Pet.self], version: 1))) { error in
            guard case .schemaMismatch(let lines) = error as? RealmError else { return XCTFail("\(error)") }
            XCTAssertEqual(lines, [
                "Primary key property 'Person.id' has been removed.",
                "Property 'Person.username' has been added.",
                "Property 'Person.age' has been changed from 'int' to 'string'.",
                "Primary key property 'Person.email' has been added.",
                "Property 'Person.rank' has been added.",
                "Property 'Person.name' has been removed.",
                "Property 'Person.nickname' has been removed.",
            ])
            XCTAssertTrue("\(error)".hasPrefix("Migration is required due to the following errors:\n- "))
        }
    }

    func testMigrationRenamesConvertsAddsRemovesAndChangesPrimaryKey() throws {
        try seedV1()
        var config = configuration(types: [V2.Person.self, V2.Pet.self], version: 2)
        config.migrationBlock = { migration, oldVersion in
            XCTAssertEqual(oldVersion, 1)
            migration.renameProperty(onType: "Person", from: "name", to: "username")
            migration.enumerateObjects(ofType: "Person") { old, new in
                XCTAssertEqual(old?["nickname"] as? String, "nick\(old!["id"] as! Int)")
                new?["rank"] = (old!["id"] as! Int) * 10
            }
        }
        let realm = try Realm(configuration: config)
        let person = try XCTUnwrap(realm.object(ofType: V2.Person.self, forPrimaryKey: "p2@example.com"))
        XCTAssertEqual(person.username, "name2")
        XCTAssertEqual(person.age, "22", "Int converted to String")
        XCTAssertEqual(person.rank, 20)
        XCTAssertEqual(person.id, 2)
        XCTAssertEqual(person.pet?.species, "cat", "links survive")
        XCTAssertEqual(realm.objects(V2.Person.self).count, 3)
        XCTAssertEqual(realm.schema.version, 2)
        // Reopening with the same version needs nothing.
        realm.invalidate()
        XCTAssertNoThrow(try Realm(configuration: configuration(types: [V2.Person.self, V2.Pet.self], version: 2)))
    }

    func testMigrationWithoutBlockKeepsWhatMatches() throws {
        try seedV1()
        let config = configuration(types: [V2.Person.self, V2.Pet.self], version: 2)
        let realm = try Realm(configuration: config)
        let person = try XCTUnwrap(realm.object(ofType: V2.Person.self, forPrimaryKey: "p1@example.com"))
        XCTAssertEqual(person.username, "", "no rename without a block")
        XCTAssertEqual(person.rank, 7, "new properties take the declared initial value")
    }

    func testDuplicatePrimaryKeyAfterMigrationFailsAndKeepsTheStore() throws {
        try seedV1()
        var config = configuration(types: [V2.Person.self, V2.Pet.self], version: 2)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "Person") { _, new in new?["email"] = "same@example.com" }
        }
        XCTAssertThrowsError(try Realm(configuration: config)) { error in
            XCTAssertEqual("\(error)", "migration failed: Primary key property 'Person.email' has duplicate values after migration: 'same@example.com'")
        }
        let old = try Realm(configuration: configuration(types: [V1.Person.self, V1.Pet.self], version: 1))
        XCTAssertEqual(old.objects(V1.Person.self).count, 3, "a failed migration writes nothing")
    }

    func testCreateDeleteAndDeleteData() throws {
        try seedV1()
        var config = configuration(types: [V1.Person.self, V1.Pet.self], version: 3)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "Person") { _, new in
                if new?["id"] as? Int == 1 { migration.delete(new!) }
            }
            migration.create("Person", value: ["id": 9, "name": "new", "email": "n@example.com"])
            XCTAssertTrue(migration.deleteData(forType: "Pet"))
        }
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.objects(V1.Person.self).map(\.id), [2, 3, 9])
        XCTAssertEqual(realm.objects(V1.Pet.self).count, 0)
        XCTAssertNil(realm.object(ofType: V1.Person.self, forPrimaryKey: 2)?.pet, "links to deleted objects read as nil")
    }

    func testDeleteRealmIfMigrationNeeded() throws {
        try seedV1()
        var config = configuration(types: [V2.Person.self, V2.Pet.self], version: 1)
        config.deleteRealmIfMigrationNeeded = true
        let realm = try Realm(configuration: config)
        XCTAssertEqual(realm.objects(V2.Person.self).count, 0)
    }

    func testReorderedPropertiesNeedAVersionAndThenMigrate() throws {
        try seedV1()
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [V1Reordered.Person.self, V1.Pet.self], version: 1))) { error in
            XCTAssertEqual(error as? RealmError, .schemaMismatch(["Properties of 'Person' are declared in a different order than stored; raise schemaVersion to reorder them."]))
        }
        let realm = try Realm(configuration: configuration(types: [V1Reordered.Person.self, V1.Pet.self], version: 2))
        XCTAssertEqual(realm.object(ofType: V1Reordered.Person.self, forPrimaryKey: 3)?.name, "name3")
    }

    func testNewClassNeedsNoMigrationAndLowerVersionIsRefused() throws {
        try seedV1()
        let realm = try Realm(configuration: configuration(types: [V1.Person.self, V1.Pet.self, Car.self], version: 1))
        try realm.write { try realm.create(Car.self, value: ["vin": "1"]) }
        realm.invalidate()
        XCTAssertThrowsError(try Realm(configuration: configuration(types: [V1.Person.self, V1.Pet.self], version: 0))) { error in
            XCTAssertEqual("\(error)", "invalid schema: Provided schema version 0 is less than last set version 1")
        }
    }
}
