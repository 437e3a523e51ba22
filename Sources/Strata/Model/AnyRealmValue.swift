// AnyRealmValue: Realm Swift's mixed type — a property (or list, set or map element) whose
// every value carries its own type. Stored as the value's own field (the row format is
// self-describing), a link as its table and key together (FORMAT.md, "Mixed values"), so
// an object of any class can be held.

import Foundation

/// A value of any stored type (Realm Swift's `AnyRealmValue`):
///
/// ```swift
/// final class Setting: Object {
///     @Persisted(primaryKey: true) var name = ""
///     @Persisted var value: AnyRealmValue            // .none until set
///     @Persisted var history: List<AnyRealmValue>
/// }
/// setting.value = .int(3)
/// setting.value = .string("dark")
/// setting.value = .object(profile)                 // a link to an object of any class
/// if let n = setting.value.intValue { … }
/// ```
public enum AnyRealmValue: Hashable, CustomStringConvertible {
    /// No value (nil).
    case none
    /// An integer.
    case int(Int)
    /// A Boolean.
    case bool(Bool)
    /// A `Float`.
    case float(Float)
    /// A `Double`.
    case double(Double)
    /// A string.
    case string(String)
    /// Bytes.
    case data(Data)
    /// A date.
    case date(Date)
    /// A link to an object of any class in the realm (adding the value adds it).
    case object(Object)
    /// An ``ObjectId``.
    case objectId(ObjectId)
    /// A ``Decimal128``.
    case decimal128(Decimal128)
    /// A UUID.
    case uuid(UUID)

    /// The integer, if the value is one.
    public var intValue: Int? { if case .int(let v) = self { return v } else { return nil } }
    /// The Boolean, if the value is one.
    public var boolValue: Bool? { if case .bool(let v) = self { return v } else { return nil } }
    /// The `Float`, if the value is one.
    public var floatValue: Float? { if case .float(let v) = self { return v } else { return nil } }
    /// The `Double`, if the value is one.
    public var doubleValue: Double? { if case .double(let v) = self { return v } else { return nil } }
    /// The string, if the value is one.
    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    /// The bytes, if the value is `Data`.
    public var dataValue: Data? { if case .data(let v) = self { return v } else { return nil } }
    /// The date, if the value is one.
    public var dateValue: Date? { if case .date(let v) = self { return v } else { return nil } }
    /// The ObjectId, if the value is one.
    public var objectIdValue: ObjectId? { if case .objectId(let v) = self { return v } else { return nil } }
    /// The decimal, if the value is one.
    public var decimal128Value: Decimal128? { if case .decimal128(let v) = self { return v } else { return nil } }
    /// The UUID, if the value is one.
    public var uuidValue: UUID? { if case .uuid(let v) = self { return v } else { return nil } }
    /// The object, if the value is one of class `type`.
    public func object<T: Object>(_ type: T.Type) -> T? { if case .object(let v) = self { return v as? T } else { return nil } }
    /// The object, if the value is one, read by property name.
    public var dynamicObject: DynamicObject? {
        guard case .object(let object) = self else { return nil }
        if let dynamic = object as? DynamicObject { return dynamic }
        guard let state = object._state, let bound = try? state.realm.dynamicBoundType(state.bound.className) else { return nil }
        return state.realm.object(bound: bound, key: state.key) as? DynamicObject
    }

    /// The value with its case (`int(3)`, `string("a")`, `none`).
    public var description: String {
        switch self {
        case .none: return "none"
        case .int(let v): return "int(\(v))"
        case .bool(let v): return "bool(\(v))"
        case .float(let v): return "float(\(v))"
        case .double(let v): return "double(\(v))"
        case .string(let v): return "string(\(String(reflecting: v)))"
        case .data(let v): return "data(\(v.count) bytes)"
        case .date(let v): return "date(\(v))"
        case .object(let v): return "object(\(type(of: v).className))"
        case .objectId(let v): return "objectId(\(v))"
        case .decimal128(let v): return "decimal128(\(v))"
        case .uuid(let v): return "uuid(\(v))"
        }
    }

    /// The value of a plain Swift value given where an `AnyRealmValue` is expected (by
    /// `create(value:)`, dynamic setters, JSON): nil for a type no case holds.
    init?(plain value: Any?) {
        switch FieldValue.unwrap(value) {
        case nil: self = .none
        case let v as AnyRealmValue: self = v
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .int(v)
        case let v as any BinaryInteger:
            guard let exact = Int(exactly: v) else { return nil }
            self = .int(exact)
        case let v as Double: self = .double(v)
        case let v as Float: self = .float(v)
        case let v as String: self = .string(v)
        case let v as Data: self = .data(v)
        case let v as Date: self = .date(v)
        case let v as Object: self = .object(v)
        case let v as ObjectId: self = .objectId(v)
        case let v as Decimal128: self = .decimal128(v)
        case let v as Decimal: self = .decimal128(Decimal128(v))
        case let v as UUID: self = .uuid(v)
        default: return nil
        }
    }

    /// The value a stored field holds; links are resolved in `realm` (nil: `.none`).
    static func value(of field: FieldValue, in realm: Realm?) -> AnyRealmValue? {
        switch field {
        case .null: return AnyRealmValue.none
        case .int(let v): return .int(Int(truncatingIfNeeded: v))
        case .bool(let v): return .bool(v)
        case .float(let v): return .float(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .data(let v): return .data(v)
        case .date(let v): return .date(v)
        case .objectId(let v): return .objectId(v)
        case .decimal(let v): return .decimal128(Decimal128(v))
        case .uuid(let v): return .uuid(v)
        case .link(let bytes): return realm?.mixedObject(bytes).map(AnyRealmValue.object) ?? AnyRealmValue.none
        case .list, .embedded, .map: return nil
        }
    }
}

extension AnyRealmValue: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .mixed }
    public static var _defaultValue: AnyRealmValue { .none }
    public static func _fromField(_ field: FieldValue, in realm: Realm?) -> AnyRealmValue? { value(of: field, in: realm) }
    /// An object is stored as a link naming its table, added to `realm` if unmanaged.
    public func _field(in realm: Realm?) throws -> FieldValue {
        switch self {
        case .none: return .null
        case .int(let v): return .int(Int64(v))
        case .bool(let v): return .bool(v)
        case .float(let v): return .float(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .data(let v): return .data(v)
        case .date(let v): return .date(v)
        case .objectId(let v): return .objectId(v)
        case .decimal128(let v): return .decimal(v.decimalValue)
        case .uuid(let v): return .uuid(v)
        case .object(let object):
            guard let realm else { throw RealmError.invalidValue("an AnyRealmValue object is stored only in a realm") }
            return try realm.mixedLink(to: object)
        }
    }
    /// An unmanaged object keeps a held object as the object (added with it).
    public func _slot() -> _Slot {
        if case .object(let object) = self { return .object(object) }
        return .value((try? _field(in: nil)) ?? .null)
    }
    public static func _fromSlot(_ slot: _Slot) -> AnyRealmValue? {
        switch slot {
        case .value(let field): return value(of: field, in: nil)
        case .object(let object): return object.map(AnyRealmValue.object) ?? AnyRealmValue.none
        case .list: return nil
        }
    }
}

/// A link held in an `AnyRealmValue`: the target type's table number (the schema's `n`, 4
/// bytes, big-endian), then its object key.
enum MixedLink {
    static func encode(table: UInt32, key: [UInt8]) -> [UInt8] {
        [UInt8(truncatingIfNeeded: table >> 24), UInt8(truncatingIfNeeded: table >> 16),
         UInt8(truncatingIfNeeded: table >> 8), UInt8(truncatingIfNeeded: table)] + key
    }

    static func decode(_ bytes: [UInt8]) -> (table: UInt32, key: [UInt8])? {
        guard bytes.count > 4 else { return nil }
        let table = bytes[0 ..< 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return (table, Array(bytes[4...]))
    }
}

extension Realm {
    /// The field of `object` held in an `AnyRealmValue`: a link naming its table, the
    /// object added first if it is unmanaged (inside a write).
    func mixedLink(to object: Object) throws -> FieldValue {
        if object is EmbeddedObject {
            throw RealmError.invalidValue("an AnyRealmValue cannot hold an embedded object (\(type(of: object).className)): it has no key of its own")
        }
        let key = try linkKey(for: object)
        guard let tableNumber = object._state?.bound.schema.tableNumber else { throw RealmError.invalidated }
        return .link(MixedLink.encode(table: tableNumber, key: key))
    }

    /// The object a mixed link points to, or nil when it is gone or its type is unknown here.
    func mixedObject(_ bytes: [UInt8]) -> Object? {
        // The table number comes from the row: looked up among the schema's, never computed with.
        guard let (tableNumber, key) = MixedLink.decode(bytes),
              let type = shared.schema.objectSchemas.first(where: { $0.tableNumber == tableNumber && !$0.isEmbedded }),
              let bound = boundType(named: type.className) ?? (try? dynamicBoundType(type.className)) else { return nil }
        return object(bound: bound, key: key)
    }
}
