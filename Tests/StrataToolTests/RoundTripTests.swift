// `strata export` → `strata import`: every format export writes is read back by import, for
// a model with every kind of property the object layer stores, and gives back the same
// objects (the same export, and the same values in the app's own classes).

import Foundation
import XCTest
import Strata

/// A custom column stored as text (not JSON).
struct ToolGrade: ColumnCodable, Equatable {
    var letter: String
    static var columnType: ColumnType { .text }
    func archivedValue() -> Value { Value(letter) }
    init(letter: String) { self.letter = letter }
    init?(with value: Value) {
        guard value.type == .text else { return nil }
        letter = value.stringValue
    }
}

enum ToolLevel: String, PersistableEnum { case low, high }

final class ToolPlace: EmbeddedObject {
    override class var className: String { "Place" }
    @Persisted var name: String = ""
    @Persisted var lat: Double = 0
    @Persisted var note: String?
    @Persisted var venue: ToolVenue?
}

final class ToolVenue: Object {
    override class var className: String { "Venue" }
    @Persisted(primaryKey: true) var code: String = ""
    @Persisted var capacity: Int = 0
    @Persisted(originProperty: "venue") var events: LinkingObjects<ToolEvent>
}

/// A type without a primary key: its objects travel with their hidden `_id`.
final class ToolNote: Object {
    override class var className: String { "Note" }
    @Persisted var text: String = ""
    @Persisted var event: ToolEvent?
}

/// One property of every kind: scalars, optionals, Decimal, ObjectId, UUID, Data, dates,
/// an enum, links, lists, sets, maps, embedded objects, custom columns and raw JSON.
final class ToolEvent: Object {
    override class var className: String { "Event" }
    @Persisted(primaryKey: true) var id: ObjectId
    @Persisted(indexed: true) var type: String = ""
    @Persisted var bool: Bool = false
    @Persisted var int: Int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var double: Double = 0
    @Persisted var float: Float = 0
    @Persisted var data: Data = Data()
    @Persisted var date: Date = Date(timeIntervalSince1970: 0)
    @Persisted var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Persisted var decimal: Decimal = 0
    @Persisted var objectId: ObjectId
    @Persisted var level: ToolLevel = .low
    @Persisted var optBool: Bool?
    @Persisted var optInt: Int?
    @Persisted var optDouble: Double?
    @Persisted var optFloat: Float?
    @Persisted var optString: String?
    @Persisted var optData: Data?
    @Persisted var optDate: Date?
    @Persisted var optUUID: UUID?
    @Persisted var optDecimal: Decimal?
    @Persisted var optObjectId: ObjectId?
    @Persisted var venue: ToolVenue?
    @Persisted var venues: List<ToolVenue>
    @Persisted var place: ToolPlace?
    @Persisted var places: List<ToolPlace>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var optionalInts: List<Int?>
    @Persisted var dates: List<Date>
    @Persisted var spot: ToolSpot?
    @Persisted var grade: ToolGrade?
    @Persisted var payload: String = ""
    override class var realmCodableRawJsonSubstrings: [String] { ["payload"] }
}

extension ToolTests {
    static let everyKindTypes: [Object.Type] = [ToolEvent.self, ToolVenue.self, ToolPlace.self, ToolNote.self]

    func everyKindRealm(at path: String) throws -> Realm {
        var config = Realm.Configuration(directory: URL(fileURLWithPath: path))
        config.objectTypes = Self.everyKindTypes
        return try Realm(configuration: config)
    }

    /// Two events (one with every property set, one at its defaults), two venues, two notes.
    /// `payload` is set as the app sets it: decoded by RealmCoder from a REST payload.
    func makeEveryKindStore(at path: String, date: Date = Date(timeIntervalSince1970: 1_700_000_000.25)) throws {
        let realm = try everyKindRealm(at: path)
        try realm.write {
            let hall = try realm.create(ToolVenue.self, value: ["code": "hall", "capacity": 300])
            let yard = try realm.create(ToolVenue.self, value: ["code": "yard", "capacity": 40])
            let full = try realm.create(ToolEvent.self, value: [
                "id": "65f0c0ffee0000000000abcd", "type": "PushEvent", "bool": true, "int": -42,
                "int8": Int8.min, "int16": Int16.max, "int32": Int32.min, "int64": Int64.max,
                "double": 0.1, "float": Float(1.5), "data": Data([0, 1, 254, 255]), "date": date,
                "uuid": UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!, "decimal": Decimal(string: "12345678901234567890.125")!,
                "objectId": "65f0c0ffee0000000000beef", "level": "high",
                "optBool": false, "optInt": 7, "optDouble": -2.5, "optFloat": Float(0.25), "optString": "a \"quoted\", line\nbreak",
                "optData": Data("hi".utf8), "optDate": date.addingTimeInterval(-86_400.000_123), "optUUID": UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
                "optDecimal": Decimal(string: "-0.5")!, "optObjectId": "65f0c0ffee0000000000f00d",
                "venue": hall, "venues": [yard, hall],
                "place": ["name": "Stage", "lat": 41.15, "note": "front", "venue": yard],
                "places": [["name": "Bar", "lat": 1.0], ["name": "Door", "lat": -1.0, "venue": hall]],
                "tags": ["live", "jazz"], "scores": ["a": 1, "b": -2], "optionalInts": [1, nil, 3],
                "dates": [date, Date(timeIntervalSince1970: 0)],
                "spot": ToolSpot(x: 3, y: 4), "grade": ToolGrade(letter: "B+"),
            ])
            _ = try realm.create(ToolEvent.self, value: ["id": "65f0c0ffee0000000000abce"])
            _ = try realm.create(ToolNote.self, value: ["text": "first", "event": full])
            _ = try realm.create(ToolNote.self, value: ["text": "second"])
        }
        let coder = RealmCoder(realm: realm)
        _ = try coder.decode(ToolEvent.self, from: Data(#"{"id": "65f0c0ffee0000000000abcd", "payload": {"before": "7460e15", "size": 1, "commits": [{"distinct": true}]}}"#.utf8))
    }

    /// Runs the tool, failing the test unless it exits 0; returns its standard output.
    @discardableResult
    func strataOK(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let run = try strata(arguments)
        XCTAssertEqual(run.status, 0, "strata \(arguments.joined(separator: " ")): \(run.stderr)", file: file, line: line)
        return run.stdout
    }

    /// Each format `export` writes — JSON of every type, JSON of one type (its envelope),
    /// NDJSON, and `query --json`'s bare array — imports into a store of the same schema and
    /// gives back the same export.
    func testEveryExportFormatImportsBackWithEveryPropertyKind() throws {
        try makeEveryKindStore(at: directory)
        let original = try strataOK("export", directory)
        let originalNDJSON = try strataOK("export", directory, "--format", "ndjson")
        XCTAssertTrue(original.contains("\"Event\""), original)

        func freshCopy(_ name: String) throws -> String {
            let copy = directory + "-" + name
            _ = try everyKindRealm(at: copy)   // the schema, no objects
            return copy
        }
        func file(_ text: String, _ name: String) throws -> String {
            let path = try write(text, to: name)
            addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
            return path
        }
        var copies: [String] = []
        defer { for copy in copies { try? FileManager.default.removeItem(atPath: copy) } }

        // JSON of every type, imported whole (no --type).
        let whole = try freshCopy("whole")
        copies.append(whole)
        let report = try strataOK("import", whole, try file(original, "all.json"))
        XCTAssertEqual(report, "Event: 2 inserted, 0 updated, 0 unchanged\nNote: 2 inserted, 0 updated, 0 unchanged\nVenue: 2 inserted, 0 updated, 0 unchanged\n")

        // NDJSON of every type.
        let lines = try freshCopy("ndjson")
        copies.append(lines)
        try strataOK("import", lines, try file(originalNDJSON, "all.ndjson"))

        // JSON of one type at a time (`{"Venue": [...]}`), imported with --type; and the
        // whole export imported one type at a time (linked types first).
        let typed = try freshCopy("typed")
        copies.append(typed)
        for type in ["Venue", "Event", "Note"] {
            try strataOK("import", typed, "--type", type, try file(try strataOK("export", directory, "--type", type), "\(type).json"))
        }
        let picked = try freshCopy("picked")
        copies.append(picked)
        let allFile = try file(original, "picked.json")
        for type in ["Venue", "Event", "Note"] {
            XCTAssertEqual(try strataOK("import", picked, "--type", type, allFile), "\(type): 2 inserted, 0 updated, 0 unchanged\n")
        }

        // `query --json`: a bare array of one type.
        let bare = try freshCopy("bare")
        copies.append(bare)
        for type in ["Venue", "Event", "Note"] {
            try strataOK("import", bare, "--type", type, try file(try strataOK("query", directory, type, "--json"), "\(type)-bare.json"))
        }

        for copy in copies {
            XCTAssertEqual(try strataOK("export", copy), original, copy)
            XCTAssertEqual(try strataOK("export", copy, "--format", "ndjson"), originalNDJSON, copy)
        }

        // The app reads the same objects from a copy, inverse and secondary indexes included.
        let realm = try everyKindRealm(at: whole)
        let source = try everyKindRealm(at: directory)
        let event = try XCTUnwrap(realm.object(ofType: ToolEvent.self, forPrimaryKey: try ObjectId(string: "65f0c0ffee0000000000abcd")))
        let expected = try XCTUnwrap(source.object(ofType: ToolEvent.self, forPrimaryKey: try ObjectId(string: "65f0c0ffee0000000000abcd")))
        for property in ["type", "bool", "int", "int8", "int16", "int32", "int64", "double", "float", "data", "uuid", "decimal",
                         "objectId", "optBool", "optInt", "optDouble", "optFloat", "optString", "optData", "optUUID", "optDecimal",
                         "optObjectId", "payload"] {
            XCTAssertEqual("\(event[property] ?? "nil")", "\(expected[property] ?? "nil")", property)
        }
        XCTAssertEqual(event.level, .high)
        XCTAssertEqual(event.venue?.code, "hall")
        XCTAssertEqual(event.venues.map(\.code), ["yard", "hall"])
        XCTAssertEqual(event.place?.venue?.code, "yard")
        XCTAssertEqual(event.places.map(\.name), ["Bar", "Door"])
        XCTAssertEqual(Set(event.tags), ["live", "jazz"])
        XCTAssertEqual(event.scores["b"], -2)
        XCTAssertEqual(Array(event.optionalInts), [1, nil, 3])
        XCTAssertEqual(event.spot, ToolSpot(x: 3, y: 4))
        XCTAssertEqual(event.grade, ToolGrade(letter: "B+"))
        XCTAssertEqual(realm.objects(ToolEvent.self).filter("type == 'PushEvent'").count, 1)
        XCTAssertEqual(realm.object(ofType: ToolVenue.self, forPrimaryKey: "hall")?.events.count, 1)
        XCTAssertEqual(realm.objects(ToolNote.self).filter("event.type == 'PushEvent'").map(\.text), ["first"])
    }
}

extension ToolTests {
    /// A file of several types names the line (NDJSON) or path of its first problem, and
    /// writes nothing; objects without a type need --type.
    func testImportOfSeveralTypesNamesTheLineOrPathAndWritesNothing() throws {
        try makeObjectStore()
        let before = try strataOK("export", directory, "--format", "ndjson")
        let cases: [(String, String)] = [
            ("{\"_type\":\"Pet\",\"name\":\"A\"}\n{\"_type\":\"Owner\",\"id\":1,\"score\":\"high\"}\n", "line 2: $.score: expected double, found String \"high\""),
            ("{\"_type\":\"Pet\",\"name\":\"A\"}\n{\"_type\":\"Owner\",\n", "line 2: expected one JSON object a line (NDJSON): "),
            ("{\"_type\":\"Nope\"}\n{\"_type\":\"Pet\",\"name\":\"B\"}\n", "line 1: $: expected an object of a type the store has (Owner, Pet); it has no type 'Nope'"),
            (#"[{"name": "A"}]"#, #"$[0]: expected an object with its "_type" (or give the type: --type)"#),
            (#"{"Pet": [{"name": "A"}], "Nope": []}"#, "$.Nope: expected the objects of a type the store has"),
            (#"{"Owner": [{"id": 8, "pet": "Nobody"}], "Pet": [{"name": "A"}]}"#, "$.Owner[0].pet: expected the primary key of an existing Pet; there is no Pet 'Nobody'"),
        ]
        for (index, (text, expected)) in cases.enumerated() {
            let file = try write(text, to: "several\(index).json")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let run = try strata("import", directory, file)
            XCTAssertEqual(run.status, 1, text)
            XCTAssertTrue(run.stderr.contains(expected), "\(text): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains("nothing was imported"), run.stderr)
        }
        XCTAssertEqual(try strataOK("export", directory, "--format", "ndjson"), before)
        // A link may name an object further on in the file; --type picks one type's objects.
        let forward = try write(#"{"Owner": [{"id": 8, "pet": "Later"}], "Pet": [{"name": "Later"}]}"#, to: "forward.json")
        defer { try? FileManager.default.removeItem(atPath: forward) }
        XCTAssertEqual(try strataOK("import", directory, forward), "Owner: 1 inserted, 0 updated, 0 unchanged\nPet: 1 inserted, 0 updated, 0 unchanged\n")
        XCTAssertEqual(try strataOK("import", directory, "--type", "Pet", forward), "Pet: 0 inserted, 0 updated, 1 unchanged\n")
    }
}

extension ToolTests {
    /// A `realmCodableRawJsonSubstrings` property is written as the JSON it holds, as
    /// RealmCoder encodes it, and read back from that JSON by import.
    func testRawJSONPropertiesExportAsTheJSONTheyHold() throws {
        try makeEveryKindStore(at: directory)
        let expected = try JSONValue(string: #"{"before": "7460e15", "size": 1, "commits": [{"distinct": true}]}"#)
        let id = try ObjectId(string: "65f0c0ffee0000000000abcd")
        let payload: String
        do {
            let realm = try everyKindRealm(at: directory)   // closed at the end of the block: the tool needs the store
            let event = try XCTUnwrap(realm.object(ofType: ToolEvent.self, forPrimaryKey: id))
            XCTAssertEqual(try RealmCoder(realm: realm).encodeValue(event)["payload"], expected, "what RealmCoder writes")
            payload = event.payload
        }

        let exported = try JSONValue(string: try strataOK("export", directory, "--type", "Event"))
        XCTAssertEqual(exported["Event"]?[0]?["payload"], expected, "export nests it as RealmCoder does")
        XCTAssertEqual(exported["Event"]?[1]?["payload"], .string(""), "a raw JSON property holding no JSON stays a string")
        let line = try XCTUnwrap(try strataOK("export", directory, "--format", "ndjson").split(separator: "\n").first { $0.contains("abcd") })
        XCTAssertTrue(line.contains(#""payload":{"before":"7460e15","commits":[{"distinct":true}],"size":1}"#), String(line))
        let dump = try strataOK("dump", directory, "--type", "Event", "--ndjson")
        XCTAssertTrue(dump.contains(#""payload":{"before""#), dump)

        // Imported back into its own store it changes nothing; into a copy, the app reads the same text.
        let file = try write(try strataOK("export", directory), to: "raw.json")
        defer { try? FileManager.default.removeItem(atPath: file) }
        XCTAssertEqual(try strataOK("import", directory, "--type", "Event", file), "Event: 0 inserted, 0 updated, 2 unchanged\n")
        let copy = directory + "-raw"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        _ = try everyKindRealm(at: copy)
        try strataOK("import", copy, file)
        let copied = try XCTUnwrap(try everyKindRealm(at: copy).object(ofType: ToolEvent.self, forPrimaryKey: id))
        XCTAssertEqual(copied.payload, payload)
        XCTAssertEqual(try JSONValue(string: copied.payload), expected)
    }
}
