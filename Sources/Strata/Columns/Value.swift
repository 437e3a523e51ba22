// Value: one stored column value, as WCDB Swift's custom column types see it. A
// ColumnEncodable type turns itself into a Value; a ColumnDecodable builds itself from one.

import Foundation

/// The storage class of a custom column type (WCDB Swift's `ColumnType`).
public enum ColumnType: Sendable, Hashable {
    /// A 32-bit integer, stored as a 64-bit one.
    case integer32
    /// A 64-bit integer.
    case integer64
    /// A double-precision float.
    case float
    /// UTF-8 text.
    case text
    /// Raw bytes.
    case BLOB
    /// No value.
    case null
}

/// One column value: an `Int64`, a `Double`, a `String`, `Data`, or null.
///
/// The accessors convert between representations the way SQLite and WCDB do: numbers read
/// as text print themselves, text reads as a number when it parses as one (otherwise 0),
/// text and bytes convert through UTF-8, and null reads as 0, "" or empty data.
public struct Value: Sendable, Hashable, CustomStringConvertible {
    enum Storage: Sendable, Hashable {
        case integer(Int64)
        case double(Double)
        case text(String)
        case data(Data)
        case null
    }

    let storage: Storage

    /// An integer value.
    public init(_ value: Int64) { storage = .integer(value) }
    /// An integer value (any width).
    public init(_ value: some BinaryInteger) { storage = .integer(Int64(truncatingIfNeeded: value)) }
    /// A floating-point value.
    public init(_ value: Double) { storage = .double(value) }
    /// A floating-point value.
    public init(_ value: Float) { storage = .double(Double(value)) }
    /// A text value.
    public init(_ value: String) { storage = .text(value) }
    /// A bytes value.
    public init(_ value: Data) { storage = .data(value) }
    /// A bytes value.
    public init(_ value: [UInt8]) { storage = .data(Data(value)) }
    /// The wrapped value, or null: `Value(nil)` is null, as in WCDB.
    public init(_ value: Value?) { storage = value?.storage ?? .null }
    /// Null.
    public static let null = Value(Optional<Value>.none)

    /// The representation this value is stored as.
    public var type: ColumnType {
        switch storage {
        case .integer: return .integer64
        case .double: return .float
        case .text: return .text
        case .data: return .BLOB
        case .null: return .null
        }
    }

    /// Whether this is null.
    public var isNull: Bool { storage == .null }

    /// The value as an integer (doubles truncate; text parses, else 0; null and bytes 0 unless they hold digits).
    public var int64Value: Int64 {
        switch storage {
        case .integer(let v): return v
        case .double(let v): return v.isFinite ? Int64(exactly: v.rounded(.towardZero)) ?? (v < 0 ? .min : .max) : 0
        case .text(let s): return Value.parseInteger(s)
        case .data(let d): return Value.parseInteger(String(decoding: d, as: UTF8.self))
        case .null: return 0
        }
    }

    /// The value as a 32-bit integer (truncating).
    public var int32Value: Int32 { Int32(truncatingIfNeeded: int64Value) }

    /// The value as a double (text parses, else 0; null 0).
    public var doubleValue: Double {
        switch storage {
        case .integer(let v): return Double(v)
        case .double(let v): return v
        case .text(let s): return Double(Value.trimmed(s)) ?? 0
        case .data(let d): return Double(String(decoding: d, as: UTF8.self)) ?? 0
        case .null: return 0
        }
    }

    /// The value as text (numbers print themselves; bytes decode as UTF-8; null is "").
    public var stringValue: String {
        switch storage {
        case .integer(let v): return String(v)
        case .double(let v): return String(v)
        case .text(let s): return s
        case .data(let d): return String(decoding: d, as: UTF8.self)
        case .null: return ""
        }
    }

    /// The value as bytes (text as UTF-8; numbers as their text; null is empty).
    public var dataValue: Data {
        switch storage {
        case .data(let d): return d
        case .text(let s): return Data(s.utf8)
        case .null: return Data()
        default: return Data(stringValue.utf8)
        }
    }

    /// The value for logs: numbers as they are, text quoted, bytes as a count, or `null`.
    public var description: String {
        switch storage {
        case .integer(let v): return "\(v)"
        case .double(let v): return "\(v)"
        case .text(let s): return "\"\(s)\""
        case .data(let d): return "<\(d.count) bytes>"
        case .null: return "null"
        }
    }

    private static func trimmed(_ text: String) -> String {
        var sub = Substring(text)
        while sub.first?.isWhitespace == true { sub.removeFirst() }
        while sub.last?.isWhitespace == true { sub.removeLast() }
        return String(sub)
    }

    private static func parseInteger(_ text: String) -> Int64 {
        let trimmed = Value.trimmed(text)
        if let v = Int64(trimmed) { return v }
        if let d = Double(trimmed), d.isFinite { return Int64(exactly: d.rounded(.towardZero)) ?? (d < 0 ? .min : .max) }
        return 0
    }
}
