// `strata query <store> <Type> ["<query> SORT(…) LIMIT(n)"] [--json | --csv]` and
// `strata export <store> [--type T] [--format json|ndjson|csv] [--output F]`: objects read
// through the stored schema (no model classes), filtered by the string query language.
// CSV follows RFC 4180: CRLF line ends, a field quoted (quotes doubled) when it holds a
// comma, a quote, CR or LF; links are the linked object's primary key, lists JSON arrays.

import ArgumentParser
import Foundation
import Strata

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Print the objects of a type that match a string query.",
        discussion: """
            The query is Strata's string query language (as Results.filter): comparisons, \
            BEGINSWITH/CONTAINS/LIKE with [c]/[d], AND/OR/NOT, key paths through links, \
            ANY/ALL/NONE, @count, SORT(name ASC) and LIMIT(n). Without a query, every object.
            An equality on the primary key or an indexed property (at the top level, or joined \
            by AND) reads that key or the index instead of every row; --explain prints the plan.
            Example: strata query ./store User "rank > 3 AND city == 'Raleigh' SORT(rank DESC) LIMIT(10)" --csv
            """)

    @OptionGroup var target: StoreArgument
    @Argument(help: "The object type (its class name).")
    var type: String
    @Argument(help: "The string query (omit for every object).")
    var query: String?
    @Flag(help: "A JSON array instead of a table.")
    var json = false
    @Flag(help: "CSV (RFC 4180) instead of a table.")
    var csv = false
    @Flag(help: "Print how the query finds its objects (a primary-key look-up, an index, or a scan of every row) instead of them.")
    var explain = false

    func validate() throws {
        if json && csv { throw ValidationError("choose one of --json and --csv") }
        if explain && (json || csv) { throw ValidationError("--explain prints the plan, not objects: leave out --json and --csv") }
    }

    func run() throws {
        let store = try target.open(readOnly: true)
        defer { try? store.close() }
        let inspector = try ObjectReader.inspector(store)
        try ObjectReader.check(type, in: inspector)
        if explain {
            print(try inspector.explain(ofType: type, matching: query))
            return
        }
        let objects = try inspector.objects(ofType: type, matching: query)
        let columns = try inspector.columns(ofType: type)
        var output = StandardOutput()
        if json {
            try ObjectWriter.json(objects, to: &output)
        } else if csv {
            ObjectWriter.csv(objects, columns: columns, to: &output)
        } else {
            ObjectWriter.table(objects, columns: columns, to: &output)
            FileHandle.standardError.write(Data("\(objects.count) \(type) object\(objects.count == 1 ? "" : "s")\n".utf8))
        }
    }
}

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the store's objects as JSON, NDJSON or CSV.",
        discussion: "JSON: one object mapping each type to its objects. NDJSON: one object per line with its \"_type\". CSV: one type (--type) with a header row.")

    enum Format: String, ExpressibleByArgument, CaseIterable { case json, ndjson, csv }

    @OptionGroup var target: StoreArgument
    @Option(help: "Only this object type (required for csv).")
    var type: String?
    @Option(help: "json, ndjson or csv.")
    var format: Format = .json
    @Option(help: "Write to this file instead of standard output (replaced if it exists).")
    var output: String?

    func validate() throws {
        if format == .csv && type == nil { throw ValidationError("--format csv needs --type: a CSV file holds one type") }
    }

    func run() throws {
        let store = try target.open(readOnly: true)
        defer { try? store.close() }
        let inspector = try ObjectReader.inspector(store)
        if let type { try ObjectReader.check(type, in: inspector) }
        let types = type.map { [$0] } ?? inspector.schema.objectSchemas.map(\.className).sorted()
        var sink: any TextSink = StandardOutput()
        var file: FileOutput?
        if let output {
            file = try FileOutput(path: output)
            sink = file!
        }
        let progress = Progress(label: "exporting")
        switch format {
        case .csv:
            let name = types[0]
            ObjectWriter.csv(try inspector.objects(ofType: name), columns: try inspector.columns(ofType: name), to: &sink)
        case .ndjson:
            for (done, name) in types.enumerated() {
                progress.update(done, types.count)
                for var object in try inspector.objects(ofType: name) {
                    object["_type"] = name
                    sink.write(try StoreInspector.jsonLine(object) + "\n")
                }
            }
        case .json:
            var all: [String: Any] = [:]
            for (done, name) in types.enumerated() {
                progress.update(done, types.count)
                all[name] = try inspector.objects(ofType: name)
            }
            sink.write(String(decoding: try JSONSerialization.data(withJSONObject: all, options: [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]), as: UTF8.self) + "\n")
        }
        progress.finish()
        try file?.close()
    }
}

/// Opening a store's objects for reading, with the tool's errors.
enum ObjectReader {
    static func inspector(_ store: Store) throws -> StoreInspector {
        guard let inspector = try StoreInspector(store: store) else {
            throw CommandFailure(message: "this store holds no objects (it was written with StrataStorage alone); use `strata dump`")
        }
        return inspector
    }

    static func check(_ type: String, in inspector: StoreInspector) throws {
        let names = inspector.schema.objectSchemas.map(\.className)
        guard names.contains(type) else {
            throw ValidationError("the store has no type '\(type)'; its types are \(names.sorted().joined(separator: ", "))")
        }
    }
}

/// Where text goes.
protocol TextSink {
    mutating func write(_ text: String)
}

struct StandardOutput: TextSink {
    mutating func write(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
}

/// A file written through a temporary name and renamed into place when complete, so an
/// export that fails never leaves half a file under the requested name.
final class FileOutput: TextSink {
    private let path: String
    private let temporary: String
    private let handle: FileHandle

    init(path: String) throws {
        self.path = path
        temporary = path + ".partial-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
              let handle = FileHandle(forWritingAtPath: temporary) else {
            throw CommandFailure(message: "cannot write \(path)")
        }
        self.handle = handle
    }

    func write(_ text: String) { handle.write(Data(text.utf8)) }

    func close() throws {
        try handle.close()
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        try FileManager.default.moveItem(atPath: temporary, toPath: path)
    }

    deinit { try? FileManager.default.removeItem(atPath: temporary) }
}

/// The output formats: JSON and CSV are the library's (`StoreInspector`), shared with the studio.
enum ObjectWriter {
    static func json(_ objects: [[String: Any]], to sink: inout some TextSink) throws {
        sink.write(try StoreInspector.json(objects))
    }

    static func csv(_ objects: [[String: Any]], columns: [String], to sink: inout some TextSink) {
        sink.write(StoreInspector.csvRecord(columns))
        for object in objects { sink.write(StoreInspector.csvRecord(object, columns: columns)) }
    }

    /// An aligned text table (cells cut at 40 characters) for a terminal.
    static func table(_ objects: [[String: Any]], columns: [String], to sink: inout some TextSink) {
        func clip(_ s: String) -> String {
            let flat = s.replacingOccurrences(of: "\n", with: " ")
            return flat.count > 40 ? String(flat.prefix(39)) + "…" : flat
        }
        let rows = objects.map { object in columns.map { clip(StoreInspector.text(of: object[$0])) } }
        var widths = columns.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func render(_ cells: [String]) -> String {
            zip(cells, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
        sink.write(render(columns) + "\n")
        sink.write(render(widths.map { String(repeating: "-", count: $0) }) + "\n")
        for row in rows { sink.write(render(row) + "\n") }
    }
}

struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Upsert JSON objects into the store, by its stored schema.",
        discussion: """
            The file is in any form `strata export` writes: its JSON ({"Type": [objects], …}), \
            NDJSON (one object a line, with "_type"), or an array of objects (or one object) of the \
            --type given. Values as export writes them: dates ISO 8601, data base64, decimals as text, \
            links as the linked object's primary key. Objects are upserted by primary key (keys an \
            object leaves out keep their stored values; a new object's missing properties take their \
            type's zero). All or nothing: an error names the JSON path and writes nothing.
            Example: strata import ./copy --create --like ./store export.json
            """)

    @OptionGroup var target: StoreArgument
    @Option(help: "The object type (its class name): the type of objects without \"_type\"; only its objects are imported.")
    var type: String?
    @Flag(help: "Make a new store at <store> (absent, or an empty directory) with the schema of the --like store.")
    var create = false
    @Option(help: ArgumentHelp("With --create: the store whose schema the new store takes (only read; opened with --key-file).", valueName: "store"))
    var like: String?
    @Option(help: "The JSON keys of properties, as RealmCoder's keyStrategy: names (the property names) or snake_case (created_at for createdAt).")
    var keys: KeyStyle = .names
    @Flag(help: "Refuse keys that name no property (by default they are ignored, as RealmCoder ignores them, and listed on stderr).")
    var strict = false
    @Argument(help: "The JSON or NDJSON file.")
    var file: String

    func validate() throws {
        if create && like == nil { throw ValidationError("--create needs --like <store>: the store whose schema the new store takes") }
        if like != nil && !create { throw ValidationError("--like goes with --create: it names the store whose schema a new store takes") }
    }

    func run() throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandFailure(message: "cannot read \(file)")
        }
        if let like { return try importIntoNewStore(data, like: like) }
        let store = try target.open(readOnly: false, hint: "; to make one with another store's schema, add --create --like <store>")
        defer { try? store.close() }
        guard let importer = try StoreImporter(store: store) else {
            throw CommandFailure(message: "this store holds no objects (it was written with StrataStorage alone)")
        }
        try importAndReport(data, into: importer)
    }

    /// `--create --like`: the schema of `like`, a new store with it, the import; a store
    /// that fails to import is removed (the directory left as it was found).
    private func importIntoNewStore(_ data: Data, like: String) throws {
        let path = target.store
        var isDirectory: ObjCBool = false
        let existed = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if existed {
            guard isDirectory.boolValue, (try? FileManager.default.contentsOfDirectory(atPath: path))?.isEmpty == true else {
                throw CommandFailure(message: "\(path) already exists and is not an empty directory; --create makes a new store (leave it out to import into an existing one)")
            }
        }
        let schema: Schema
        do {
            let source = try StoreArgument.open(like, key: target.key, readOnly: true)
            defer { try? source.close() }
            guard let inspector = try StoreInspector(store: source) else {
                throw CommandFailure(message: "\(like) holds no objects, so no schema to take (it was written with StrataStorage alone)")
            }
            schema = inspector.schema
        }
        do {
            let store = try StoreArgument.open(path, key: target.key, readOnly: false, creating: true)
            defer { try? store.close() }
            try importAndReport(data, into: try StoreImporter(newStore: store, schema: schema))
        } catch {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            if existed {
                for name in files { try? FileManager.default.removeItem(atPath: path + "/" + name) }
            } else {
                try? FileManager.default.removeItem(atPath: path)
            }
            throw error
        }
    }

    /// `--keys`: RealmCoder's key strategies by name.
    enum KeyStyle: String, ExpressibleByArgument, CaseIterable {
        case names
        case snakeCase = "snake_case"

        var strategy: JSONKeyStrategy { self == .names ? .useDefaultKeys : .convertFromSnakeCase }
    }

    /// Imports `data`, printing one line per type (or --type's only), and on stderr the keys
    /// that were ignored.
    private func importAndReport(_ data: Data, into importer: StoreImporter) throws {
        let names = importer.schema.objectSchemas.map(\.className)
        if let type, !names.contains(type) {
            throw ValidationError("the store has no type '\(type)'; its types are \(names.sorted().joined(separator: ", "))")
        }
        let options = StoreImporter.Options(keyStrategy: keys.strategy, refusesUnknownKeys: strict)
        do {
            let reports = try type.map { [$0: try importer.importObjects(ofType: $0, from: data, options: options)] }
                ?? importer.importObjects(from: data, options: options)
            for (name, report) in reports.sorted(by: { $0.key < $1.key }) {
                print("\(name): \(report.inserted) inserted, \(report.updated) updated, \(report.unchanged) unchanged")
            }
            let ignored = reports.values.reduce(into: [String: Set<String>]()) { all, report in
                all.merge(report.ignoredKeys) { $0.union($1) }
            }
            if !ignored.isEmpty {
                let list = ignored.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.sorted().joined(separator: ", "))" }
                FileHandle.standardError.write(Data("strata: keys that name no property were ignored (--strict refuses them): \(list.joined(separator: "; "))\n".utf8))
            }
        } catch let error as JSONMappingError {
            throw CommandFailure(message: "\(file): \(error) — nothing was imported")
        }
    }
}
