// `strata dump <store> [--type T] [--ndjson]`: the store's objects as JSON, read through
// the schema stored in the store. A store without an object-layer schema (written with
// StrataStorage alone) is dumped raw: each key as hex (and as text when it is UTF-8),
// each value as base64 (and as text when it is UTF-8).

import ArgumentParser
import Foundation
import Strata

struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print the store's objects (or raw records) as JSON.")

    @OptionGroup var target: StoreArgument
    @Option(help: "Only this object type (its class name), or for raw stores this table number.")
    var type: String?
    @Flag(help: "One JSON object per line instead of one array.")
    var ndjson = false

    func run() throws {
        let store = try target.open(readOnly: true)
        defer { try? store.close() }
        let printer = Printer(ndjson: ndjson)
        if let inspector = try StoreInspector(store: store) {
            let names = inspector.schema.objectSchemas.map(\.className)
            if let type, !names.contains(type) {
                throw ValidationError("the store has no type '\(type)'; its types are \(names.sorted().joined(separator: ", "))")
            }
            for name in type.map({ [$0] }) ?? names.sorted() {
                for var object in try inspector.objects(ofType: name) {
                    object["_type"] = name
                    try printer.print(object)
                }
            }
        } else {
            if let type, UInt32(type) == nil {
                throw ValidationError("this store has no object schema, so --type takes a table number, got '\(type)'")
            }
            let snapshot = store.snapshot()
            for table in type.flatMap(UInt32.init).map({ [$0] }) ?? snapshot.tables {
                var rows: [([UInt8], [UInt8])] = []
                try snapshot.scan(table: table) { rows.append(($0, $1)) }
                rows.sort { $0.0.lexicographicallyPrecedes($1.0) }
                for (key, value) in rows {
                    var object: [String: Any] = ["table": Int(table), "key": key.map { String(format: "%02x", $0) }.joined(),
                                                 "value": Data(value).base64EncodedString()]
                    if let text = String(validating: key, as: UTF8.self), !text.isEmpty,
                       text.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control }) { object["keyText"] = text }
                    if let text = String(validating: value, as: UTF8.self) { object["valueText"] = text }
                    try printer.print(object)
                }
            }
        }
        printer.finish()
    }

    /// Prints a JSON array (or one object per line) as objects arrive.
    final class Printer {
        let ndjson: Bool
        var first = true

        init(ndjson: Bool) {
            self.ndjson = ndjson
            if !ndjson { Swift.print("[") }
        }

        func print(_ object: [String: Any]) throws {
            let line = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
            Swift.print(ndjson ? line : (first ? "  " : ", ") + line)
            first = false
        }

        func finish() {
            if !ndjson { Swift.print("]") }
        }
    }
}
