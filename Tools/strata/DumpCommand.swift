// `strata dump <store> [--type T] [--ndjson]`: the store's records as JSON. Until the
// object layer stores its schema in the store, tables are dumped raw: each key as hex
// (and as text when it is UTF-8), each value as base64 (and as text when it is UTF-8).

import ArgumentParser
import Foundation
import Strata

struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print the store's records as JSON.")

    @OptionGroup var target: StoreArgument
    @Option(help: "Only this table (its number).")
    var type: String?
    @Flag(help: "One JSON object per line instead of one array.")
    var ndjson = false

    func validate() throws {
        if let type, UInt32(type) == nil {
            throw ValidationError("--type takes a table number (type names arrive with the object layer's stored schema), got '\(type)'")
        }
    }

    func run() throws {
        let store = try target.open(readOnly: true)
        defer { try? store.close() }
        let snapshot = store.snapshot()
        let tables = type.flatMap(UInt32.init).map { [$0] } ?? snapshot.tables
        var first = true
        if !ndjson { print("[") }
        for table in tables {
            var rows: [([UInt8], [UInt8])] = []
            try snapshot.scan(table: table) { rows.append(($0, $1)) }
            rows.sort { $0.0.lexicographicallyPrecedes($1.0) }
            for (key, value) in rows {
                var object: [String: Any] = ["table": Int(table), "key": key.map { String(format: "%02x", $0) }.joined(),
                                             "value": Data(value).base64EncodedString()]
                if let text = String(validating: key, as: UTF8.self), !text.isEmpty,
                   text.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control }) { object["keyText"] = text }
                if let text = String(validating: value, as: UTF8.self) { object["valueText"] = text }
                let line = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
                if ndjson {
                    print(line)
                } else {
                    print((first ? "  " : ", ") + line)
                }
                first = false
            }
        }
        if !ndjson { print("]") }
    }
}
