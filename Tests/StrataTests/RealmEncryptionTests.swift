// Realm.Configuration.encryptionKey (docs/API.md §9): a realm written with a key opens with that
// key alone, as Realm's does; a key that differs from the one an already open realm of the
// same files uses is refused too; a migration's scratch store (which holds the app's
// objects while the migration runs) is encrypted with the realm's key; in-memory realms
// take a key as well.

import Foundation
import XCTest
@testable import Strata
import StrataStorage

private let realmKey = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) })

enum EncryptedV1 {
    final class Note: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var text: String = ""
    }
}

enum EncryptedV2 {
    final class Note: Object {
        @Persisted(primaryKey: true) var id: Int = 0
        @Persisted var text: String = ""
        @Persisted var length: Int = 0
    }
}

private func car(_ vin: String, model: String = "") -> Car {
    let car = Car()
    car.vin = vin
    car.model = model
    return car
}

final class RealmEncryptionTests: RealmTestCase {
    private func encrypted(_ key: Data?, types: [Object.Type] = [Car.self], version: UInt64 = 0) -> Realm.Configuration {
        var config = configuration(types: types, version: version)
        config.encryptionKey = key
        return config
    }

    private func isWrongKey(_ error: any Error) -> Bool {
        if case RealmError.storage(.wrongKey) = error { return true }
        return false
    }

    func testAnEncryptedRealmOpensWithItsKeyAlone() throws {
        do {
            let realm = try Realm(configuration: encrypted(realmKey))
            try realm.write { try realm.add(car("SECRET-VIN-1", model: "Tesla")) }
        }
        let realm = try Realm(configuration: encrypted(realmKey))
        XCTAssertEqual(realm.object(ofType: Car.self, forPrimaryKey: "SECRET-VIN-1")?.model, "Tesla")
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name != "LOCK" {
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            XCTAssertNil(data.range(of: Data("SECRET-VIN".utf8)), "\(name) holds plaintext")
        }
        // While it is open, another key (or none) for the same files is refused as well.
        var other = realmKey
        other[5] ^= 0xFF
        XCTAssertThrowsError(try Realm(configuration: encrypted(other))) { XCTAssertTrue(isWrongKey($0), "\($0)") }
        XCTAssertThrowsError(try Realm(configuration: encrypted(nil))) { XCTAssertTrue(isWrongKey($0), "\($0)") }
        XCTAssertEqual(realm.objects(Car.self).count, 1)
    }

    func testAClosedEncryptedRealmRefusesAnotherKeyNoKeyAndAWrongSize() throws {
        do {
            let realm = try Realm(configuration: encrypted(realmKey))
            try realm.write { try realm.add(car("1")) }
        }
        var other = realmKey
        other[63] ^= 1
        XCTAssertThrowsError(try Realm(configuration: encrypted(other))) { XCTAssertTrue(isWrongKey($0), "\($0)") }
        XCTAssertThrowsError(try Realm(configuration: encrypted(nil))) { XCTAssertTrue(isWrongKey($0), "\($0)") }
        XCTAssertThrowsError(try Realm(configuration: encrypted(Data(count: 32)))) { error in
            guard case RealmError.storage(.invalidArgument) = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try Realm(configuration: encrypted(realmKey)).objects(Car.self).count, 1, "nothing was changed")
    }

    func testAMigrationsScratchStoreIsEncryptedWithTheRealmsKey() throws {
        let count = Migration.spillBatch + 500
        do {
            let realm = try Realm(configuration: encrypted(realmKey, types: [EncryptedV1.Note.self]))
            try realm.write {
                for id in 0 ..< count {
                    let note = EncryptedV1.Note()
                    note.id = id
                    note.text = "SCRATCH-SECRET \(id)"
                    try realm.add(note)
                }
            }
        }
        let scratch = directory.appendingPathComponent(Migration.scratchName)
        var config = encrypted(realmKey, types: [EncryptedV2.Note.self], version: 1)
        let checked = Locked(0)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "Note") { old, new in
                new!["length"] = (old!["text"] as! String).count
            }
            // More objects changed than one batch: some were spilled to the scratch store.
            let files = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []
            for name in files where name.hasSuffix(".seg") || name == "MANIFEST" {
                let data = (try? Data(contentsOf: scratch.appendingPathComponent(name))) ?? Data()
                XCTAssertEqual(data.prefix(8), Data("STRATAEN".utf8), "scratch file \(name) is not encrypted")
                XCTAssertNil(data.range(of: Data("SCRATCH-SECRET".utf8)), "scratch file \(name) holds plaintext")
                checked.withLock { $0 += 1 }
            }
        }
        let realm = try Realm(configuration: config)
        XCTAssertGreaterThan(checked.withLock { $0 }, 0, "the migration spilled to a scratch store")
        XCTAssertEqual(realm.object(ofType: EncryptedV2.Note.self, forPrimaryKey: 7)?.length, "SCRATCH-SECRET 7".count)
    }

    func testAnInMemoryRealmTakesAKey() throws {
        var config = Realm.Configuration(inMemoryIdentifier: "encrypted-\(UUID().uuidString)")
        config.objectTypes = [Car.self]
        config.encryptionKey = realmKey
        let realm = try Realm(configuration: config)
        try realm.write { try realm.add(car("m")) }
        XCTAssertEqual(realm.objects(Car.self).count, 1)
        config.encryptionKey = nil
        XCTAssertThrowsError(try Realm(configuration: config)) { XCTAssertTrue(isWrongKey($0), "\($0)") }
    }
}
