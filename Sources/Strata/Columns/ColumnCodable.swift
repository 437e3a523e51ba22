// Custom column types, WCDB Swift style (docs/API.md §5): any type can be a property of a
// model if it says how it becomes a stored Value and back. ColumnJSONCodable gives any
// Codable type that for free, as JSON in a BLOB.

import Foundation

/// What every custom column type declares: how it is stored.
public protocol ColumnCodableBase {
    /// The representation its ``ColumnEncodable/archivedValue()`` produces.
    static var columnType: ColumnType { get }
}

/// A type that can be stored in a column: it turns itself into a ``Value``.
public protocol ColumnEncodable: Encodable, ColumnCodableBase {
    /// The value to store.
    func archivedValue() -> Value
}

/// A type that can be read from a column: it builds itself from a ``Value``, or returns nil
/// when the value is not one of its own (the object layer then reports an error naming
/// the type, the object and the property — never a silent nil).
public protocol ColumnDecodable: Decodable, ColumnCodableBase, _PersistableValue, _PersistedProperty {
    /// Builds the value from what was stored, or nil if it cannot.
    init?(with value: Value)
}

/// A type stored in, and read from, a column.
public typealias ColumnCodable = ColumnEncodable & ColumnDecodable

/// A `Codable` type stored as JSON in a BLOB, with nothing to write but the conformance:
///
/// ```swift
/// struct Location: ColumnJSONCodable { var lat: Double; var lng: Double }
/// ```
///
/// The JSON coding layer writes such a property as a nested JSON value, not a string.
public protocol ColumnJSONCodable: ColumnCodable {}

extension ColumnJSONCodable {
    /// JSON is stored as bytes.
    public static var columnType: ColumnType { .BLOB }

    /// The value encoded as JSON (keys sorted, so equal values store equal bytes); null if
    /// it cannot be encoded.
    public func archivedValue() -> Value {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return .null }
        return Value(data)
    }

    /// Decodes the stored JSON; nil if the bytes are not this type's JSON.
    public init?(with value: Value) {
        guard value.type == .BLOB || value.type == .text,
              let decoded = try? JSONDecoder().decode(Self.self, from: value.dataValue) else { return nil }
        self = decoded
    }
}
