// The text forms of an inspector's objects, one implementation for every tool that writes
// them (`strata query`/`export`, Strata Studio), so they all write the same bytes.

import Foundation

extension StoreInspector {
    /// `objects` as pretty-printed JSON (keys sorted), ending in a newline.
    public static func json(_ objects: [[String: Any]]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]),
               as: UTF8.self) + "\n"
    }

    /// `object` as one line of JSON (keys sorted), without a newline: a line of NDJSON.
    public static func jsonLine(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }

    /// One value of an inspector's object as the text of a CSV field or table cell: nil
    /// empty, lists and JSON columns as JSON text.
    public static func text(of value: Any?) -> String {
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

    /// One CSV record (RFC 4180): a field is quoted when it holds a comma, a quote, CR or LF
    /// (quotes doubled); the record ends in CRLF.
    public static func csvRecord(_ fields: [String]) -> String {
        fields.map { field in
            guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return field }
            return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }.joined(separator: ",") + "\r\n"
    }

    /// The CSV record of `object`: its values in the order of `columns`.
    public static func csvRecord(_ object: [String: Any], columns: [String]) -> String {
        csvRecord(columns.map { text(of: object[$0]) })
    }
}
