// FieldValue: one property's value as the object layer moves it between a model, a row
// and a query. Rows store these (RowFormat.swift); keys are built from them (KeyEncoding.swift).

import Foundation

/// One stored property value, typed.
public enum FieldValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case float(Float)
    case string(String)
    case data(Data)
    case date(Date)
    case uuid(UUID)
    case decimal(Decimal)
    /// A link: the encoded primary key of the target object.
    case link([UInt8])
    /// The elements of a list (or of a set: a list whose elements are distinct).
    case list([FieldValue])
    /// An ``ObjectId``.
    case objectId(ObjectId)
    /// An embedded object: its fields in its schema's order, stored inside its parent's row.
    case embedded([FieldValue])
    /// A map's values by key.
    case map([String: FieldValue])

    /// The column value a ``ColumnDecodable`` type reads.
    @usableFromInline
    var columnValue: Value {
        switch self {
        case .null: return .null
        case .bool(let b): return Value(Int64(b ? 1 : 0))
        case .int(let i): return Value(i)
        case .double(let d): return Value(d)
        case .float(let f): return Value(f)
        case .string(let s): return Value(s)
        case .data(let d): return Value(d)
        case .date(let d): return Value(d.timeIntervalSinceReferenceDate)
        case .uuid(let u): return Value(u.uuidString)
        case .decimal(let d): return Value(d.description)
        case .link(let k): return Value(k)
        case .objectId(let id): return Value(id.stringValue)
        case .list, .embedded, .map: return .null
        }
    }

    /// The field a ``ColumnEncodable`` value is stored as.
    @usableFromInline
    init(columnValue value: Value) {
        switch value.storage {
        case .integer(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .text(let s): self = .string(s)
        case .data(let d): self = .data(d)
        case .null: self = .null
        }
    }

    /// A plain Swift value for dynamic access (`migration` objects, `ObjectChange` values).
    var anyValue: Any? {
        switch self {
        case .null: return nil
        case .bool(let v): return v
        case .int(let v): return Int(truncatingIfNeeded: v)
        case .double(let v): return v
        case .float(let v): return v
        case .string(let v): return v
        case .data(let v): return v
        case .date(let v): return v
        case .uuid(let v): return v
        case .decimal(let v): return v
        case .link(let v): return v
        case .list(let v): return v.map(\.anyValue)
        case .objectId(let v): return v
        case .embedded(let v): return v.map(\.anyValue)
        case .map(let v): return v.mapValues(\.anyValue)
        }
    }

    /// Orders two values of one property (nil first); values of different kinds order by kind.
    static func compare(_ a: FieldValue, _ b: FieldValue) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case let (.bool(x), .bool(y)): return x == y ? 0 : (x ? 1 : -1)
        case let (.int(x), .int(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.double(x), .double(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.float(x), .float(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.string(x), .string(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.date(x), .date(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.decimal(x), .decimal(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.uuid(x), .uuid(y)): return x.uuidString == y.uuidString ? 0 : (x.uuidString < y.uuidString ? -1 : 1)
        case let (.data(x), .data(y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case let (.link(x), .link(y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case let (.objectId(x), .objectId(y)): return x == y ? 0 : (x < y ? -1 : 1)
        default: return a.kindOrder < b.kindOrder ? -1 : (a.kindOrder == b.kindOrder ? 0 : 1)
        }
    }

    /// What kind of value this is, for messages ("a string", "a list").
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a Bool"
        case .int: "an integer"
        case .double: "a Double"
        case .float: "a Float"
        case .string: "a string"
        case .data: "data"
        case .date: "a date"
        case .uuid: "a UUID"
        case .decimal: "a Decimal"
        case .link: "a link"
        case .list: "a list"
        case .objectId: "an ObjectId"
        case .embedded: "an embedded object"
        case .map: "a map"
        }
    }

    private var kindOrder: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int: 2
        case .double: 3
        case .float: 4
        case .string: 5
        case .data: 6
        case .date: 7
        case .uuid: 8
        case .decimal: 9
        case .link: 10
        case .list: 11
        case .objectId: 12
        case .embedded: 13
        case .map: 14
        }
    }
}
