// PrimaryKeyValue: an object's identity that any thread, process or file can carry. The
// engine keys built from it are in Rows/KeyEncoding.swift.

import Foundation

/// The primary key of an object (or its hidden object id), as a value that crosses threads.
///
/// ```swift
/// let key = user.primaryKeyValue
/// DispatchQueue.global().async {
///     let realm = try! Realm(configuration: config)
///     let same = realm.object(ofType: User.self, forPrimaryKeyValue: key)
/// }
/// ```
public enum PrimaryKeyValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// An integer key (any width) or a hidden object id.
    case int(Int64)
    /// A string key.
    case string(String)
    /// A UUID key.
    case uuid(UUID)
    /// An ``ObjectId`` key.
    case objectId(ObjectId)
    /// The nil key of an optional primary key (`@Persisted(primaryKey: true) var id: Int?`):
    /// at most one object of a type has it.
    case null

    /// The key as a plain Swift value (`Int`, `String`, `UUID` or `ObjectId`).
    public var anyValue: any Sendable {
        switch self {
        case .int(let v): return Int(truncatingIfNeeded: v)
        case .string(let v): return v
        case .uuid(let v): return v
        case .objectId(let v): return v
        case .null: return String?.none
        }
    }

    /// The key as printed in errors and dumps.
    public var description: String {
        switch self {
        case .int(let v): return String(v)
        case .string(let v): return "'\(v)'"
        case .uuid(let v): return v.uuidString
        case .objectId(let v): return v.stringValue
        case .null: return "nil"
        }
    }

    /// The key stored in a primary-key field.
    init?(field: FieldValue) {
        switch field {
        case .int(let v): self = .int(v)
        case .string(let v): self = .string(v)
        case .uuid(let v): self = .uuid(v)
        case .objectId(let v): self = .objectId(v)
        default: return nil
        }
    }

    /// The value a primary-key field stores.
    var field: FieldValue {
        switch self {
        case .int(let v): return .int(v)
        case .string(let v): return .string(v)
        case .uuid(let v): return .uuid(v)
        case .objectId(let v): return .objectId(v)
        case .null: return .null
        }
    }

    /// The key a primary-key field stores, nil included when the key is optional; nil when
    /// the field holds no key (the key is missing).
    init?(keyField field: FieldValue, optional: Bool) {
        if field == .null {
            guard optional else { return nil }
            self = .null
            return
        }
        self.init(field: field)
    }

    /// The key a user passed (`Int`, any integer width, `String`, `UUID`, `ObjectId`, or a `PrimaryKeyValue`).
    @inline(__always)
    init?<T>(any value: T) {
        if T.self == Int.self { self = .int(Int64(unsafeBitCast(value, to: Int.self))); return }
        if T.self == String.self { self = .string(unsafeBitCast(value, to: String.self)); return }
        let any = value as Any
        switch any {
        case let v as PrimaryKeyValue: self = v
        case let v as Int: self = .int(Int64(v))
        case let v as Int64: self = .int(v)
        case let v as Int32: self = .int(Int64(v))
        case let v as Int16: self = .int(Int64(v))
        case let v as Int8: self = .int(Int64(v))
        case let v as String: self = .string(v)
        case let v as UUID: self = .uuid(v)
        case let v as ObjectId: self = .objectId(v)
        default:
            // nil (an optional key's `.none`): the key of an optional primary key.
            guard let optional = any as? any AnyOptional, optional.flattened == nil else { return nil }
            self = .null
        }
    }
}
