// `strata import`'s options for data that did not come from `strata export`: a new store
// with another store's schema (`--create --like`), and REST payloads as the app's RealmCoder
// reads them (`--keys snake_case`, keys the model lacks).

import Foundation
import XCTest
import Strata

extension ToolTests {
    /// `--create --like <store>` makes a new store with that store's schema and imports
    /// into it; a failed import leaves no store behind.
    func testImportCreatesAStoreWithTheSchemaOfAnother() throws {
        try makeEveryKindStore(at: directory)
        let exported = try write(try strataOK("export", directory), to: "like.json")
        defer { try? FileManager.default.removeItem(atPath: exported) }
        let copy = directory + "-created"
        defer { try? FileManager.default.removeItem(atPath: copy) }

        let missing = try strata("import", copy, exported)
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no store at \(copy)"), missing.stderr)

        XCTAssertEqual(try strataOK("import", copy, "--create", "--like", directory, exported),
                       "Event: 2 inserted, 0 updated, 0 unchanged\nNote: 2 inserted, 0 updated, 0 unchanged\nVenue: 2 inserted, 0 updated, 0 unchanged\n")
        XCTAssertEqual(try strataOK("export", copy), try strataOK("export", directory))
        // The app opens it as its own: same schema, same table numbers, indexes exact.
        let realm = try everyKindRealm(at: copy)
        XCTAssertEqual(realm.objects(ToolEvent.self).filter("type == 'PushEvent'").count, 1)
        XCTAssertEqual(realm.object(ofType: ToolVenue.self, forPrimaryKey: "hall")?.events.count, 1)
        try realm.write { try realm.create(ToolNote.self, value: ["text": "third"]) }
        XCTAssertEqual(realm.objects(ToolNote.self).count, 3, "hidden ids continue past the imported ones")

        // A store that exists is not created again; options that go together are checked.
        let again = try strata("import", copy, "--create", "--like", directory, exported)
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("already exists"), again.stderr)
        XCTAssertEqual(try strata("import", copy, "--like", directory, exported).status, 2)
        XCTAssertEqual(try strata("import", copy + "-x", "--create", exported).status, 2)

        // A failed import into a new store leaves nothing.
        let bad = try write(#"{"Venue": [{"code": "x", "capacity": "many"}]}"#, to: "like-bad.json")
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let failed = try strata("import", copy + "-failed", "--create", "--like", directory, bad)
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("$.Venue[0].capacity"), failed.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy + "-failed"), "no half-made store")
        let notAStore = try strata("import", copy + "-none", "--create", "--like", directory + "-nowhere", exported)
        XCTAssertEqual(notAStore.status, 1)
        XCTAssertTrue(notAStore.stderr.contains("no store at \(directory)-nowhere"), notAStore.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy + "-none"))
    }
}
