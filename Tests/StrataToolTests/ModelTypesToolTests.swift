// `strata dump`, `query`, `export` and `import` on a store holding Realm's model types
// (ObjectId keys, embedded objects, sets, maps, linking objects), through the stored schema.

import Foundation
import XCTest
import Strata

final class ToolStop: EmbeddedObject {
    override class var className: String { "Stop" }
    @Persisted var name: String = ""
    @Persisted var minutes: Int = 0
}

final class ToolLine: Object {
    override class var className: String { "Line" }
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name: String = ""
    @Persisted var first: ToolStop?
    @Persisted var stops: List<ToolStop>
    @Persisted var tags: MutableSet<String>
    @Persisted var fares: Map<String, Double>
    @Persisted var depot: ToolDepot?
}

final class ToolDepot: Object {
    override class var className: String { "Depot" }
    @Persisted(primaryKey: true) var code: String = ""
    @Persisted(originProperty: "depot") var lines: LinkingObjects<ToolLine>
}

extension ToolTests {
    private var modelTypes: [Object.Type] { [ToolLine.self, ToolStop.self, ToolDepot.self] }

    private func makeModelTypesStore(at path: String) throws {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: path))
        config.objectTypes = modelTypes
        let realm = try Realm(configuration: config)
        try realm.write {
            let depot = try realm.create(ToolDepot.self, value: ["code": "N"])
            try realm.create(ToolLine.self, value: [
                "_id": "65f0c0ffee0000000000abcd", "name": "Red", "first": ["name": "Hub", "minutes": 0],
                "stops": [["name": "Park", "minutes": 4], ["name": "Pier", "minutes": 9]],
                "tags": ["night", "express", "night"], "fares": ["adult": 2.5, "child": 1.0], "depot": depot])
            try realm.create(ToolLine.self, value: ["_id": "65f0c0ffee0000000000abce", "name": "Blue", "depot": depot])
        }
    }

    func testModelTypesQueryExportAndImportThroughTheStoredSchema() throws {
        try makeModelTypesStore(at: directory)
        let dump = try strata("dump", directory)
        XCTAssertEqual(dump.status, 0, dump.stderr)
        XCTAssertTrue(dump.stdout.contains("65f0c0ffee0000000000abcd"), dump.stdout)

        let lines = try strata("query", directory, "Line", "ANY stops.minutes > 5 AND first.name == 'Hub' AND tags.@count == 2", "--json")
        XCTAssertEqual(lines.status, 0, lines.stderr)
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["name"] as? String }, ["Red"])
        XCTAssertEqual((rows.first?["first"] as? [String: Any])?["name"] as? String, "Hub")
        XCTAssertEqual(rows.first?["fares"] as? [String: Double], ["adult": 2.5, "child": 1.0])
        XCTAssertEqual(rows.first?["tags"] as? [String], ["night", "express"])
        let depots = try strata("query", directory, "Depot", "lines.@count == 2", "--json")
        XCTAssertEqual(depots.status, 0, depots.stderr)
        XCTAssertTrue(depots.stdout.contains("\"code\" : \"N\""), depots.stdout)
        XCTAssertFalse(depots.stdout.contains("\"lines\""), "linking objects are computed, not exported")

        // Export every type, import into a fresh store of the same schema: the same bytes back.
        let exported = try ["Depot", "Line"].map { try strata("query", directory, $0, "--json").stdout }
        let copy = directory + "-models-copy"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        var config = Realm.Configuration(directory: URL(fileURLWithPath: copy))
        config.objectTypes = modelTypes
        _ = try Realm(configuration: config)
        for (type, json) in zip(["Depot", "Line"], exported) {
            let file = try write(json, to: "models-\(type).json")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let run = try strata("import", copy, "--type", type, file)
            XCTAssertEqual(run.status, 0, run.stderr)
        }
        XCTAssertEqual(try ["Depot", "Line"].map { try strata("query", copy, $0, "--json").stdout }, exported)
        XCTAssertEqual(try strata("query", copy, "Depot", "lines.@count == 2", "--json").stdout, depots.stdout, "the inverse index is built by the import")

        // Bad input names its JSON path and writes nothing (a key no property has, with --strict).
        let bad = try write(#"[{"_id": "65f0c0ffee0000000000abcf", "name": "Green", "first": {"name": "X", "nope": 1}}]"#, to: "models-bad.json")
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let refused = try strata("import", copy, "--strict", "--type", "Line", bad)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("$[0].first.nope"), refused.stderr)
        XCTAssertEqual(try strata("query", copy, "Line", "name == 'Green'", "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines), "[\n\n]")
    }
}
