// `strata query` and `strata export` as a user runs them: objects of a store written by the
// object layer, filtered by the string query language, as a table, JSON, NDJSON and CSV
// (RFC 4180), with one-line errors and exit codes for bad queries and types.

import Foundation
import XCTest
import Strata

/// A type with an indexed property, for the query plan.
final class ToolVisit: Object {
    override class var className: String { "Visit" }
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var city: String = ""
    @Persisted var nights: Int = 0
}

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

    /// An equality on the primary key or an indexed property reads that key or the index
    /// (`--explain` says which); the answer is the one a scan gives.
    func testQueryReadsTheIndexAndExplainsItsPlan() throws {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = [ToolVisit.self]
        let realm = try Realm(configuration: config)
        let cities = ["Porto", "Lyon", "Graz"]
        try realm.write {
            for i in 0 ..< 300 { try realm.create(ToolVisit.self, value: ["id": 1_000 - i * 3, "city": cities[i % 3], "nights": i % 9]) }
        }
        realm.invalidate()
        func ids(_ query: String) throws -> [Int] {
            let run = try strata("query", directory, "Visit", query, "--json")
            XCTAssertEqual(run.status, 0, run.stderr)
            let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
            return rows.compactMap { $0["id"] as? Int }
        }
        func plan(_ query: String) throws -> String {
            let run = try strata("query", directory, "Visit", query, "--explain")
            XCTAssertEqual(run.status, 0, run.stderr)
            return run.stdout
        }
        let byIndex = try plan("city == 'Porto' AND nights > 4"), byKey = try plan("id == 997")
        XCTAssertTrue(byIndex.hasPrefix(#"Visit: hash index on city == "Porto""#), byIndex)
        XCTAssertTrue(byKey.hasPrefix("Visit: primary key id == 997 (one look-up)"), byKey)
        let scan = try plan("nights > 4 SORT(nights DESC) LIMIT(3)")
        XCTAssertEqual(scan, "Visit: row scan of 300 objects\n  string query: nights > 4 SORT(nights DESC) LIMIT(3)\n  sort: nights descending\n  limit: 3\n")
        // The index's answer against a scan's (`==[c]` is no index term).
        let indexed = try ids("city == 'Porto' AND nights > 4")
        XCTAssertEqual(indexed, try ids("city ==[c] 'porto' AND nights > 4"))
        XCTAssertEqual(indexed.count, 33)   // i % 3 == 0 and i % 9 == 6
        XCTAssertEqual(indexed, indexed.sorted(), "primary-key order")
        XCTAssertEqual(try ids("id == 997"), [997])
        XCTAssertEqual(try ids("id == 998"), [])
        XCTAssertEqual(try ids("city == 'Lyon' SORT(nights DESC) LIMIT(2)"), try ids("city ==[c] 'LYON' SORT(nights DESC) LIMIT(2)"))
        let both = try strata("query", directory, "Visit", "--explain", "--json")
        XCTAssertEqual(both.status, 2)
    }

    func testQueryOnAStoreWithoutObjectsSaysSo() throws {
        _ = try makeStore()
        let run = try strata("query", directory, "Owner")
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stderr.contains("holds no objects"), run.stderr)
    }
}

extension ToolTests {
    func write(_ json: String, to name: String) throws -> String {
        let path = directory + "-" + name
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Upsert by primary key: a new object, a partial update (keys left out keep their
    /// values), a link by primary key; then the app's own realm reads them, indexes included.
    func testImportUpsertsByPrimaryKeyAndTheAppSeesIt() throws {
        try makeObjectStore()
        let file = try write(#"[{"name": "Zed"}, {"name": "Rex", "born": "1970-01-02T00:00:00.000Z"}]"#, to: "pets.json")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let pets = try strata("import", directory, "--type", "Pet", file)
        XCTAssertEqual(pets.status, 0, pets.stderr)
        XCTAssertEqual(pets.stdout, "Pet: 1 inserted, 1 updated, 0 unchanged\n")
        let owners = try write(#"[{"id": 2, "score": 9.5, "pet": "Zed"}, {"id": 9, "name": "New", "tags": ["x"]}]"#, to: "owners.json")
        defer { try? FileManager.default.removeItem(atPath: owners) }
        let run = try strata("import", directory, "--type", "Owner", owners)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stdout, "Owner: 1 inserted, 1 updated, 0 unchanged\n")
        // Importing the same again changes nothing.
        let again = try strata("import", directory, "--type", "Pet", file)
        XCTAssertEqual(again.stdout, "Pet: 0 inserted, 0 updated, 2 unchanged\n", again.stderr)

        var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        let realm = try Realm(configuration: config)
        let bo = try XCTUnwrap(realm.object(ofType: ToolOwner.self, forPrimaryKey: 2))
        XCTAssertEqual(bo.name, "Bo\nline two", "keys the JSON left out keep their values")
        XCTAssertEqual(bo.score, 9.5)
        XCTAssertEqual(bo.pet?.name, "Zed")
        XCTAssertEqual(realm.object(ofType: ToolOwner.self, forPrimaryKey: 9)?.tags.first, "x")
        XCTAssertEqual(realm.object(ofType: ToolPet.self, forPrimaryKey: "Rex")?.born, Date(timeIntervalSince1970: 86400))
        XCTAssertEqual(realm.objects(ToolOwner.self).count, 4)
        XCTAssertEqual(realm.objects(ToolOwner.self).filter("pet.name == 'Zed'").map(\.id), [2])
    }

    /// Export, then import into a fresh store with the same schema: the same objects.
    func testExportThenImportRoundTrips() throws {
        try makeObjectStore()
        let pets = try strata("query", directory, "Pet", "--json").stdout
        let owners = try strata("query", directory, "Owner", "--json").stdout
        let copy = directory + "-copy"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        var config = Realm.Configuration(directory: URL(fileURLWithPath: copy))
        config.objectTypes = [ToolOwner.self, ToolPet.self]
        _ = try Realm(configuration: config)   // the schema, no objects
        let petFile = try write(pets, to: "rt-pets.json"), ownerFile = try write(owners, to: "rt-owners.json")
        defer { try? FileManager.default.removeItem(atPath: petFile); try? FileManager.default.removeItem(atPath: ownerFile) }
        XCTAssertEqual(try strata("import", copy, "--type", "Pet", petFile).status, 0)
        let run = try strata("import", copy, "--type", "Owner", ownerFile)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try strata("query", copy, "Owner", "--json").stdout, owners)
        XCTAssertEqual(try strata("query", copy, "Pet", "--json").stdout, pets)
    }

    /// Any error writes nothing and names the JSON path (with --strict, a key that names no
    /// property is one).
    func testImportIsAtomicAndNamesThePath() throws {
        try makeObjectStore()
        let before = try strata("export", directory, "--format", "ndjson").stdout
        let cases: [(String, String)] = [
            (#"[{"id": 1, "name": "Ok"}, {"id": 5, "score": "high"}]"#, "$[1].score"),
            (#"[{"id": 1, "name": "Ok"}, {"id": 6, "pet": "Nobody"}]"#, "$[1].pet"),
            (#"[{"id": 1, "name": "Ok"}, {"name": "no key"}]"#, "$[1].id"),
            (#"[{"id": 1, "nope": 3}]"#, "$[0].nope"),
            (#"[{"id": 1, "tags": "not a list"}]"#, "$[0].tags"),
            (#"[{"id": 1,]"#, "byte"),
        ]
        for (index, (json, expected)) in cases.enumerated() {
            let file = try write(json, to: "bad\(index).json")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let run = try strata("import", directory, "--strict", "--type", "Owner", file)
            XCTAssertEqual(run.status, 1, json)
            XCTAssertTrue(run.stderr.contains(expected), "\(json): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains("nothing was imported"), run.stderr)
        }
        XCTAssertEqual(try strata("export", directory, "--format", "ndjson").stdout, before)
        let anyFile = try write("[]", to: "empty.json")
        defer { try? FileManager.default.removeItem(atPath: anyFile) }
        let unknown = try strata("import", directory, "--type", "Nope", anyFile)
        XCTAssertEqual(unknown.status, 2)
    }
}
