// `strata query` and `strata export` as a user runs them: objects of a store written by the
// object layer, filtered by the string query language, as a table, JSON, NDJSON and CSV
// (RFC 4180), with one-line errors and exit codes for bad queries and types.

import Foundation
import XCTest
import Strata

extension ToolTests {
    /// Owners with awkward text (commas, quotes, line breaks), links and lists.
    func makeObjectStore() throws {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        let realm = try Realm(configuration: config)
        try realm.write {
            try realm.create(ToolOwner.self, value: ["id": 1, "name": "Ann, \"the\" first", "score": 2.5,
                                                     "pet": ["name": "Rex"], "tags": ["a", "b"]])
            try realm.create(ToolOwner.self, value: ["id": 2, "name": "Bo\nline two", "score": 7])
            try realm.create(ToolOwner.self, value: ["id": 3, "name": "Cy", "score": 4, "pet": ["name": "Tom"]])
        }
    }

    func testQueryFiltersSortsAndLimitsAsTheLanguageSays() throws {
        try makeObjectStore()
        let json = try strata("query", directory, "Owner", "score > 3 SORT(score DESC)", "--json")
        XCTAssertEqual(json.status, 0, json.stderr)
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["id"] as? Int }, [2, 3])
        let linked = try strata("query", directory, "Owner", "pet.name BEGINSWITH[c] 'r' OR tags.@count > 1", "--json")
        let linkedRows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(linked.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(linkedRows.map { $0["id"] as? Int }, [1])
        XCTAssertEqual(linkedRows.first?["pet"] as? String, "Rex", "links print the target's primary key")

        let table = try strata("query", directory, "Owner", "TRUEPREDICATE LIMIT(2)")
        XCTAssertEqual(table.status, 0, table.stderr)
        let lines = table.stdout.split(separator: "\n")
        XCTAssertTrue(lines[0].hasPrefix("id  name"), table.stdout)
        XCTAssertEqual(lines.count, 4, "header, rule, two rows")
        XCTAssertTrue(table.stderr.contains("2 Owner objects"), table.stderr)
    }

    func testCSVFollowsRFC4180() throws {
        try makeObjectStore()
        let run = try strata("query", directory, "Owner", "--csv")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stdout, "id,name,score,avatar,pet,tags,spot\r\n"
            + "1,\"Ann, \"\"the\"\" first\",2.5,,Rex,\"[\"\"a\"\",\"\"b\"\"]\",\r\n"
            + "2,\"Bo\nline two\",7.0,,,[],\r\n"
            + "3,Cy,4.0,,Tom,[],\r\n")
    }

    func testExportWritesJSONNDJSONAndCSVFiles() throws {
        try makeObjectStore()
        let file = directory + "-export.json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let json = try strata("export", directory, "--output", file)
        XCTAssertEqual(json.status, 0, json.stderr)
        let all = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: [[String: Any]]])
        XCTAssertEqual(all["Owner"]?.count, 3)
        XCTAssertEqual(all["Pet"]?.map { $0["name"] as? String }, ["Rex", "Tom"])

        let ndjson = try strata("export", directory, "--format", "ndjson")
        XCTAssertEqual(ndjson.stdout.split(separator: "\n").count, 5)
        XCTAssertTrue(ndjson.stdout.contains(#""_type":"Pet""#))

        let csv = try strata("export", directory, "--type", "Pet", "--format", "csv", "--output", file)
        XCTAssertEqual(csv.status, 0, csv.stderr)
        XCTAssertEqual(try String(contentsOfFile: file, encoding: .utf8), "name,born\r\nRex,1970-01-01T00:00:00.000Z\r\nTom,1970-01-01T00:00:00.000Z\r\n")
    }

    func testBadQueriesAndTypesAreOneLineErrorsThatChangeNothing() throws {
        try makeObjectStore()
        let before = try strata("export", directory, "--format", "ndjson").stdout
        let malformed = try strata("query", directory, "Owner", "score > > 3")
        XCTAssertEqual(malformed.status, 2)
        XCTAssertTrue(malformed.stderr.contains("invalid query at offset 8"), malformed.stderr)
        let unknownProperty = try strata("query", directory, "Owner", "nope == 1")
        XCTAssertEqual(unknownProperty.status, 2)
        XCTAssertTrue(unknownProperty.stderr.contains("Owner has no property 'nope'"), unknownProperty.stderr)
        let unknownType = try strata("query", directory, "Nope")
        XCTAssertEqual(unknownType.status, 2)
        XCTAssertTrue(unknownType.stderr.contains("its types are Owner, Pet"), unknownType.stderr)
        let both = try strata("query", directory, "Owner", "--json", "--csv")
        XCTAssertEqual(both.status, 2)
        let csvWithoutType = try strata("export", directory, "--format", "csv")
        XCTAssertEqual(csvWithoutType.status, 2)
        XCTAssertTrue(csvWithoutType.stderr.contains("needs --type"), csvWithoutType.stderr)
        XCTAssertEqual(try strata("export", directory, "--format", "ndjson").stdout, before)
    }

    func testQueryOnAStoreWithoutObjectsSaysSo() throws {
        _ = try makeStore()
        let run = try strata("query", directory, "Owner")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("holds no objects"), run.stderr)
    }
}
