// Reliability #6: a stored object that turns out damaged when read — a row that does not
// decode, or a record that fails its checksum — never traps the object layer and is never
// read as silent nulls: non-throwing reads treat it as absent (or read zero values for an
// object already in hand) and record it in `readErrors`; throwing reads throw
// `damagedObject` naming it.

import XCTest
@testable import Strata
@testable import StrataStorage

final class DamagedReadTests: RealmTestCase {
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
        // Flip one byte in the middle of a sealed segment's data (a value byte of some
        // record): the store opens from the hint, and the record fails its checksum when read.
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".seg") }.sorted()
        guard segments.count > 2 else { return XCTFail("expected several segments, got \(segments)") }
        let url = directory.appendingPathComponent(segments[segments.count - 2])
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 0x5A
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
    }
}
