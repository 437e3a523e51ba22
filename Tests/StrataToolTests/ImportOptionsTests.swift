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

/// A REST payload's object, as an app maps it with RealmCoder and `.convertFromSnakeCase`.
final class ToolPush: Object {
    override class var className: String { "Push" }
    @Persisted(primaryKey: true) var id: String = ""
    @Persisted var type: String = ""
    @Persisted var createdAt: Date?
    @Persisted var distinctSize: Int = 0
    @Persisted var headSHA: String = ""
    @Persisted var repoURLs: List<String>
    @Persisted var labels: Map<String, String>
    @Persisted var author: ToolAuthor?
    @Persisted var payload: String = ""
    override class var realmCodableRawJsonSubstrings: [String] { ["payload"] }
}

final class ToolAuthor: EmbeddedObject {
    override class var className: String { "Author" }
    @Persisted var displayName: String = ""
    @Persisted var emailAddress: String?
}

extension ToolTests {
    /// GitHub's events, trimmed: snake_case keys, and keys the model does not have.
    static let restPayload = #"""
        [{"id": "1652857722", "type": "PushEvent", "created_at": "2013-01-10T07:58:30Z", "public": true,
          "actor": {"id": 138052, "login": "jathanism"}, "distinct_size": 1, "head_sha": "05570a3",
          "repo_ur_ls": ["https://api.github.com/repos/jathanism/trigger"], "labels": {"first_seen": "yes"},
          "author": {"display_name": "jathanism", "email_address": "j@example.com", "avatar_url": "https://…"},
          "payload": {"before": "7460e15", "size": 1}},
         {"id": "1652857723", "type": "CreateEvent", "created_at": "2013-01-10T07:58:29Z", "public": false}]
        """#

    /// `--keys snake_case` reads a REST payload as the app's RealmCoder with
    /// `.convertFromSnakeCase` does — the same objects — and keys the model lacks are
    /// ignored, as RealmCoder ignores them (named on stderr), or refused with `--strict`.
    func testImportReadsARESTPayloadAsRealmCoderDoes() throws {
        let app = directory
        var config = Realm.Configuration(directory: URL(fileURLWithPath: app))
        config.objectTypes = [ToolPush.self, ToolAuthor.self]
        do {
            let realm = try Realm(configuration: config)
            _ = try RealmCoder(realm: realm, keyStrategy: .convertFromSnakeCase).decodeArray(ToolPush.self, from: Data(Self.restPayload.utf8))
        }
        let file = try write(Self.restPayload, to: "rest.json")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let copy = directory + "-rest"
        defer { try? FileManager.default.removeItem(atPath: copy) }

        let run = try strata("import", copy, "--create", "--like", app, "--keys", "snake_case", "--type", "Push", file)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stdout, "Push: 2 inserted, 0 updated, 0 unchanged\n")
        XCTAssertEqual(run.stderr, "strata: keys that name no property were ignored (--strict refuses them): Author: avatar_url; Push: actor, public\n")
        XCTAssertEqual(try strataOK("export", copy), try strataOK("export", app), "the objects RealmCoder made")

        // Without the key mapping, the snake_case keys name no property: ignored, as RealmCoder
        // ignores them; --strict refuses the first one, naming its path, and writes nothing.
        let plainCopy = directory + "-rest-plain"
        defer { try? FileManager.default.removeItem(atPath: plainCopy) }
        let plain = try strata("import", plainCopy, "--create", "--like", app, "--type", "Push", file)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(plain.stdout, "Push: 2 inserted, 0 updated, 0 unchanged\n")
        XCTAssertTrue(plain.stderr.hasSuffix("Author: avatar_url, display_name, email_address; Push: actor, created_at, distinct_size, head_sha, public, repo_ur_ls\n"), plain.stderr)
        let strict = try strata("import", copy, "--strict", "--keys", "snake_case", "--type", "Push", file)
        XCTAssertEqual(strict.status, 1)
        XCTAssertTrue(strict.stderr.contains("$[0].actor: expected a key naming a property of Push"), strict.stderr)
        XCTAssertTrue(strict.stderr.contains("created_at"), "the keys it takes, mapped: \(strict.stderr)")
        XCTAssertEqual(try strataOK("export", copy), try strataOK("export", app))
        XCTAssertEqual(try strata("import", copy, "--keys", "camel", file).status, 2)
    }
}
