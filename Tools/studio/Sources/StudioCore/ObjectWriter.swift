// The export formats, copied from the `strata` tool (Tools/strata/QueryCommand.swift) so both
// write the same bytes: JSON as `strata query --json`, CSV per RFC 4180 — CRLF line ends, a
// field quoted (quotes doubled) when it holds a comma, a quote, CR or LF; nil an empty field;
// links the linked object's primary key; lists (and JSON columns) JSON text.

import Foundation

enum ObjectWriter {
    static func json(_ objects: [[String: Any]]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]), as: UTF8.self) + "\n"
    }

    /// A JSON-ready value as one CSV or table cell: nil empty, lists and objects as JSON.
    static func cell(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: return ""
        case let string as String: return string
        case let bool as Bool: return bool ? "true" : "false"
        case let int as Int64: return String(int)
        case let int as Int: return String(int)
        case let double as Double: return "\(double)"
        case let other?:
            if JSONSerialization.isValidJSONObject(other),
               let data = try? JSONSerialization.data(withJSONObject: other, options: [.sortedKeys, .withoutEscapingSlashes]) {
                return String(decoding: data, as: UTF8.self)
            }
            return "\(other)"
        }
    }

    /// RFC 4180: quoted when the field holds a comma, a quote, CR or LF; quotes doubled.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func csv(_ objects: [[String: Any]], columns: [String]) -> String {
        var out = columns.map(csvField).joined(separator: ",") + "\r\n"
        for object in objects {
            out += columns.map { csvField(cell(object[$0])) }.joined(separator: ",") + "\r\n"
        }
        return out
    }
}
