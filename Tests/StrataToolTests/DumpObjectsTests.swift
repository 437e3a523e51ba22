// `strata dump` and `strata stats` on a store written by the object layer: typed JSON
// through the schema stored in the store, with no model classes in the tool.

import Foundation
import XCTest
import Strata

final class ToolPet: Object {
    override class var className: String { "Pet" }
    @Persisted(primaryKey: true) var name: String = ""
    @Persisted var born: Date = Date(timeIntervalSince1970: 0)
}

struct ToolSpot: ColumnJSONCodable, Equatable { var x: Int; var y: Int }

final class ToolOwner: Object {
    override class var className: String { "Owner" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var score: Double = 0
    @Persisted var avatar: Data? = nil
    @Persisted var pet: ToolPet?
    @Persisted var tags: List<String>
    @Persisted var spot: ToolSpot? = nil
}

extension ToolTests {
    func testDumpPrintsObjectsAsTypedJSON() throws {
        let tool = self
        var config = Realm.Configuration(directory: URL(fileURLWithPath: tool.directory))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                try realm.create(ToolOwner.self, value: [
                    "id": 1, "name": "Ann", "score": 2.5, "avatar": Data([1, 2]),
                    "pet": ["name": "Rex", "born": Date(timeIntervalSince1970: 86400)],
                    "tags": ["a", "b"], "spot": ToolSpot(x: 3, y: 4),
                ])
                try realm.create(ToolOwner.self, value: ["id": 2, "name": "Bo"])
            }
        }
        let run = try tool.strata("dump", tool.directory, "--type", "Owner")
        XCTAssertEqual(run.status, 0, run.stderr)
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.count, 2)
        let ann = rows[0]
        XCTAssertEqual(ann["_type"] as? String, "Owner")
        XCTAssertEqual(ann["id"] as? Int, 1)
        XCTAssertEqual(ann["name"] as? String, "Ann")
        XCTAssertEqual(ann["score"] as? Double, 2.5)
        XCTAssertEqual(ann["avatar"] as? String, Data([1, 2]).base64EncodedString())
        XCTAssertEqual(ann["pet"] as? String, "Rex", "links print the target's primary key")
        XCTAssertEqual(ann["tags"] as? [String], ["a", "b"])
        XCTAssertEqual(ann["spot"] as? [String: Int], ["x": 3, "y": 4], "JSON columns print as nested JSON")
        XCTAssertTrue(rows[1]["pet"] is NSNull)

        let all = try tool.strata("dump", tool.directory, "--ndjson")
        XCTAssertEqual(all.stdout.split(separator: "\n").count, 3)
        XCTAssertTrue(all.stdout.contains(#""born":"1970-01-02T00:00:00.000Z""#), all.stdout)

        let unknown = try tool.strata("dump", tool.directory, "--type", "Cat")
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("the store has no type 'Cat'; its types are Owner, Pet"), unknown.stderr)

        let stats = try tool.strata("stats", tool.directory)
        XCTAssertTrue(stats.stdout.contains("Owner: 2 objects"), stats.stdout)
        XCTAssertTrue(stats.stdout.contains("Pet: 1 objects"), stats.stdout)
    }
}

extension ToolTests {
    /// `stats` names each table of a store with a schema: the metadata, a type's objects,
    /// a secondary index, an inverse index (what linking objects read).
    func testStatsNamesTablesByTypeAndIndex() throws {
        try makeEveryKindStore(at: directory)
        let text = try strataOK("stats", directory)
        let tables = text.split(separator: "\n").filter { $0.hasPrefix("table ") }
        for name in ["table 1 (metadata): ", "table 256 (Event): 2 keys", "table 258 (Event.type index): ",
                     " (Event.venue inverse index): ", " (Venue): 2 keys", " (Note): 2 keys"] {
            XCTAssertTrue(tables.contains { $0.contains(name) }, "\(name) in\n\(text)")
        }
        XCTAssertNil(text.range(of: #"table \d+: "#, options: .regularExpression), text)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try strataOK("stats", directory, "--json").utf8)) as? [String: Any])
        let names = try XCTUnwrap(json["tableNames"] as? [String: String])
        XCTAssertEqual(names["256"], "Event")
        XCTAssertEqual(names["258"], "Event.type index")
        XCTAssertEqual(names["1"], "metadata")
        XCTAssertEqual(Set(names.keys), Set(try XCTUnwrap(json["keysPerTable"] as? [String: Int]).keys), "every table named")

        // A store without a schema keeps its numbers.
        let raw = directory + "-raw"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let store = try Store(path: raw)
        try store.write { try $0.put(table: 7, key: [1], value: [2]) }
        try store.close()
        XCTAssertTrue(try strataOK("stats", raw).contains("\ntable 7: 1 keys\n"))
    }
}
