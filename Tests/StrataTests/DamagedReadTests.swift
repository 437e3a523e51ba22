// Reliability #6: a stored object that turns out damaged when read — a row that does not
// decode, or a record that fails its checksum — never traps the object layer and is never
// read as silent nulls: non-throwing reads treat it as absent (or read zero values for an
// object already in hand) and record it in `readErrors`; throwing reads throw
// `damagedObject` naming it.

import XCTest
@testable import Strata
@testable import StrataStorage

/// An `AnyRealmValue` property, for a mixed link naming a table no type has.
final class MixedHolder: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var value: AnyRealmValue
}

final class DamagedReadTests: RealmTestCase {
    /// A link held in an AnyRealmValue names its target's table number, read from the row:
    /// a number no type has (the largest, which would overflow the table arithmetic) reads
    /// as `.none`, as a deleted target does.
    /// A read-only realm beside a writer whose newly published log does not read back (a
    /// flipped byte in the writer's last commit) stays where it was, reports the damage in
    /// `readErrors` instead of trapping or swallowing it, and still reads what it had.
    func testARefreshThatCannotReadTheWritersLogIsReportedAndLosesNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-tail-damage-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = [MixedHolder.self]
        do {
            let realm = try Realm(configuration: config)
            try realm.write { try realm.add(MixedHolder(value: ["id": 1])) }
            realm.invalidate()
        }
        let writer = try Store(directory: directory)
        defer { try? writer.close() }
        var readConfig = config
        readConfig.readOnly = true
        let realm = try Realm(configuration: readConfig)
        defer { realm.invalidate() }
        XCTAssertTrue(realm.store.isFollowingAWriter)
        // Refreshed here only (the watch thread would read the commit before it is damaged).
        realm.store.writerWatch.withLock { watch in
            watch?.stop()
            watch = nil
        }
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".seg") }.sorted()
        let active = directory.appendingPathComponent(try XCTUnwrap(segments.last)).path
        let end = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: active)[.size] as? Int)
        try writer.write { try $0.put(table: 9_999, key: Array("k".utf8), value: [UInt8](repeating: 7, count: 100)) }
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: active))
        try handle.seek(toOffset: UInt64(end + 60))
        try handle.write(contentsOf: [0xEE])
        try handle.close()
        XCTAssertFalse(realm.refresh())
        guard case .storage(.corrupted)? = realm.readErrors.first else {
            return XCTFail("the damage is reported: \(realm.readErrors)")
        }
        XCTAssertEqual(realm.objects(MixedHolder.self).count, 1, "what the realm read stays readable")
    }

    func testAMixedLinkToATableNumberNoTypeHasReadsAsNone() throws {
        let realm = try openRealm(types: [MixedHolder.self])
        try realm.write { try realm.add({ let h = MixedHolder(); h.id = 1; h.value = .int(3); return h }()) }
        let table = StoreLayout.objectTable(try XCTUnwrap(realm.schema["MixedHolder"]).tableNumber)
        for tableNumber in [UInt32.max, 4_000] {
            let row = RowFormat.encode([.int(1), .link(MixedLink.encode(table: tableNumber, key: PrimaryKeyValue.int(1).keyBytes))])
            try realm.store.write { try $0.put(table: table, key: PrimaryKeyValue.int(1).keyBytes, value: row) }
            realm.refresh()
            XCTAssertEqual(realm.object(ofType: MixedHolder.self, forPrimaryKey: 1)?.value, AnyRealmValue.none, "table \(tableNumber)")
        }
    }

    /// A row that does not decode (its record's checksum is fine): written as raw garbage
    /// through the engine, as a buggy or hostile writer could.
    func testARowThatDoesNotDecodeIsReportedNotTrapped() throws {
        let realm = try openRealm()
        try realm.write {
            try realm.add(makeUser("1", rank: 3))
            try realm.add(makeUser("2", rank: 4))
        }
        let user = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "2"))
        let table = StoreLayout.objectTable(try XCTUnwrap(realm.schema["User"]).tableNumber)
        try realm.store.write { try $0.put(table: table, key: PrimaryKeyValue.string("2").keyBytes, value: [0xFF, 0x00, 0x13, 0x37]) }
        realm.refresh()

        // The object already in hand reads zero values instead of trapping; the damage is recorded.
        XCTAssertEqual(user.rank, 0)
        XCTAssertEqual(user.username, "")
        XCTAssertTrue(realm.readErrors.contains { if case .damagedObject("User", let key, _) = $0 { return key.contains("2") } else { return false } }, "\(realm.readErrors)")
        // The checked read throws, naming the object.
        XCTAssertThrowsError(try user.value(forProperty: "rank")) { error in
            guard case RealmError.damagedObject(let type, let key, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(type, "User")
            XCTAssertTrue(key.contains("2"), key)
        }
        // Queries skip it, on fields and on objects alike; the healthy object is untouched.
        XCTAssertEqual(realm.objects(User.self).filter(#Predicate { $0.rank >= 0 }).map(\.objId), ["1"])
        XCTAssertEqual(realm.objects(User.self).filter("rank >= 0").map(\.objId), ["1"])
        // Unfiltered, it stays in (so count and positions agree), its key known, values zero.
        XCTAssertEqual(realm.objects(User.self).sorted(by: \.rank).map(\.objId), ["2", "1"])
        XCTAssertEqual(realm.objects(User.self).count, 2)
        XCTAssertEqual(realm.objects(User.self).max(of: \.rank), 3)
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "1")?.rank, 3)
        // Writing a fresh value over it repairs it.
        try realm.write { try realm.add(makeUser("2", rank: 9), update: .all) }
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "2")?.rank, 9)
    }

    /// A record that fails its checksum (a flipped byte in the segment, found at read time):
    /// the object reads as absent, scans skip it, and the error names it.
    func testARecordThatFailsItsChecksumIsSkippedAndNamed() throws {
        var config = configuration()
        config.storeOptions.autoCompaction = .disabled
        config.storeOptions.segmentSize = 4096      // records land in sealed segments, opened from hints
        do {
            let realm = try Realm(configuration: config)
            for i in 0..<20 { try realm.write { try realm.add(makeUser("u\(i)", rank: i)) } }
        }
        // Flip one byte of a user's row in a sealed segment (its username's first byte: a
        // value byte, not an index record's): the store opens from the hint, and the record
        // fails its checksum when read.
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".seg") }.sorted()
        guard segments.count > 2 else { return XCTFail("expected several segments, got \(segments)") }
        let url = directory.appendingPathComponent(segments[segments.count - 2])
        var bytes = try Data(contentsOf: url)
        let row = try XCTUnwrap(bytes.range(of: Data("useru".utf8)), "a user's row in \(segments[segments.count - 2])")
        bytes[row.lowerBound] ^= 0x5A
        try bytes.write(to: url)

        let realm = try Realm(configuration: config)
        let all = realm.objects(User.self).filter("rank >= 0").sorted(byKeyPath: "rank").map(\.objId)
        XCTAssertLessThan(all.count, 20, "a filter leaves the damaged record out")
        XCTAssertFalse(realm.readErrors.isEmpty)
        // Unfiltered, it is counted and readable without a trap (zero values).
        let everything = realm.objects(User.self).sorted(by: \.rank)
        XCTAssertEqual(everything.count, 20)
        XCTAssertEqual(everything.map(\.objId).count, 20)
        let missing = (0..<20).map { "u\($0)" }.filter { !all.contains($0) }
        for id in missing {
            XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: id))
        }
        // The column scan (a projection built by reading every record) leaves it out too.
        let scanned = realm.objects(User.self).filter(#Predicate { $0.rank >= 0 })
        XCTAssertTrue(scanned.explain().contains("column scan"), scanned.explain())
        XCTAssertEqual(scanned.sorted(by: \.rank).map(\.objId), all)
    }

    /// Issue 23, item 3: a stored row whose offsets are sound but one field does not decode
    /// (past the record's checksum). A JSON import updating other properties used to copy
    /// that field's bytes into the pending row unchecked, and reading it later in the same
    /// write trapped ("pending row: …"). Now the import throws `damagedObject` naming the
    /// object, and nothing of the write is kept.
    func testAJSONImportOverARowWithADamagedFieldThrowsDamagedObjectInsteadOfTrapping() throws {
        let realm = try openRealm()
        try realm.write { try realm.add(makeUser("2", rank: 4, city: "Durham", lastName: "Lee")) }
        let schema = try XCTUnwrap(realm.schema["User"])
        let table = StoreLayout.objectTable(schema.tableNumber)
        let key = PrimaryKeyValue.string("2").keyBytes
        var row = try XCTUnwrap(try realm.store.get(table: table, key: key))
        // The lastName field's tag becomes one no value has.
        let lastName = try XCTUnwrap(schema.properties.firstIndex { $0.name == "lastName" })
        let count = try RowFormat.fieldCount(row)
        let start = lastName == 0 ? 0 : row.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: 4 + 4 * (lastName - 1), as: UInt32.self).littleEndian) }
        row[4 + 4 * count + start] = 0xEE
        try realm.store.write { try $0.put(table: table, key: key, value: row) }
        realm.refresh()

        XCTAssertThrowsError(try realm.write {
            _ = try RealmCoder(realm: realm).decode(User.self, from: Data(#"{"objId": "2", "rank": 7}"#.utf8))
            // Reading the damaged field inside the same write trapped before the fix.
            _ = realm.object(ofType: User.self, forPrimaryKey: "2")?.lastName
        }) { error in
            guard case RealmError.damagedObject(let type, let name, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(type, "User")
            XCTAssertTrue(name.contains("2"), name)
            XCTAssertTrue(reason.contains("tag"), reason)
        }
        XCTAssertTrue(realm.readErrors.contains { if case .damagedObject("User", _, _) = $0 { return true } else { return false } })
        // Nothing of the failed write is kept: the stored row is the damaged one, untouched.
        XCTAssertEqual(try realm.store.get(table: table, key: key), row)
        // A replacing write repairs it, as for every other damaged object.
        try realm.write { try realm.add(makeUser("2", rank: 9), update: .all) }
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "2")?.rank, 9)
    }
}

/// A row that decodes but holds a field of another kind than its property's type (a hostile
/// or damaged store: Strata never writes one). The accessors trapped on it before ("holds …,
/// which is not a …"); now each reads its declared initial value and the damage is named.
final class MismatchedFieldTests: RealmTestCase {
    func testAFieldOfAnotherKindReadsTheInitialValueAndIsReported() throws {
        let realm = try openRealm()
        try realm.write { try realm.add(makeUser("1", rank: 3)) }
        let user = try XCTUnwrap(realm.object(ofType: User.self, forPrimaryKey: "1"))
        let schema = try XCTUnwrap(realm.schema["User"])
        let table = StoreLayout.objectTable(schema.tableNumber)
        var fields = try RowFormat.fields(of: try XCTUnwrap(realm.store.get(table: table, key: PrimaryKeyValue.string("1").keyBytes)))
        func set(_ name: String, _ value: FieldValue) throws {
            fields[try XCTUnwrap(schema.properties.firstIndex { $0.name == name })] = value
        }
        try set("rank", .string("three"))          // Int
        try set("joined", .string("yesterday"))    // Date?
        try set("kind", .data(Data([1])))          // an enum over Int
        try set("id", .int(7))                     // UUID
        try realm.store.write { try $0.put(table: table, key: PrimaryKeyValue.string("1").keyBytes, value: RowFormat.encode(fields)) }
        realm.refresh()

        XCTAssertEqual(user.rank, -1, "the declared initial value")
        XCTAssertNil(user.joined)
        XCTAssertEqual(user.kind, .free)
        _ = user.id
        XCTAssertEqual(user.username, "user1", "readable properties are untouched")
        let reasons = realm.readErrors.compactMap { error -> String? in
            if case .damagedObject("User", _, let reason) = error { return reason } else { return nil }
        }
        XCTAssertTrue(reasons.contains("rank holds a string, which is not a Int"), "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("joined holds a string") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("kind holds data") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("id holds an integer") }, "\(reasons)")
    }

    /// A damaged row read through a non-optional custom column type that has no value for
    /// null: the property reads its declared initial value (a null would trap in the type).
    func testADamagedRowReadsANonOptionalColumnTypeAsItsInitialValue() throws {
        let realm = try openRealm(types: [Placed.self])
        try realm.write { try realm.create(Placed.self, value: ["id": 1, "point": StrictPoint(x: 4, y: 5)]) }
        let placed = try XCTUnwrap(realm.object(ofType: Placed.self, forPrimaryKey: 1))
        let table = StoreLayout.objectTable(try XCTUnwrap(realm.schema["Placed"]).tableNumber)
        try realm.store.write { try $0.put(table: table, key: PrimaryKeyValue.int(1).keyBytes, value: [0xFF, 0x00, 0x13, 0x37]) }
        realm.refresh()
        XCTAssertEqual(placed.point, StrictPoint(x: 1, y: 1))
        XCTAssertFalse(realm.readErrors.isEmpty)
    }
}

/// A non-optional custom column type whose `init?(with:)` refuses null.
final class Placed: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var point: StrictPoint = StrictPoint(x: 1, y: 1)
}
