// Converting plain Swift values (from `create(value:)`, dynamic subscripts and migrations)
// into the field a property stores, with an error naming the property when they do not fit.

import Foundation

extension FieldValue {
    /// The field `property` stores for `value`. Links are resolved by the caller.
    /// With `lenient` (migrations changing a property's type), numbers and text also convert
    /// into each other through their decimal representation.
    static func converting(_ value: Any?, to property: PropertySchema, context: String, lenient: Bool = false) throws -> FieldValue {
        if property.isMap { return try convertingMap(value, to: property, context: context, lenient: lenient) }
        if property.kind == .linkingObjects {
            throw RealmError.invalidValue("\(context) is linking objects, which are read-only: they list the objects that link here")
        }
        if property.isList { return try convertingList(value, to: property, context: context, lenient: lenient) }
        guard let value = unwrap(value) else {
            if property.isOptional || property.kind == .object || property.kind == .mixed { return .null }
            throw RealmError.typeMismatch(property: context, expected: property.typeDescription, found: "nil")
        }
        if let field = value as? FieldValue { return field }
        if property.kind != .object, let persistable = value as? any _PersistableValue,
           type(of: persistable)._propertyKind == property.kind || (property.kind == .column && type(of: persistable)._typeName == property.objectClassName) {
            return try persistable._field(in: nil)
        }
        if let field = try convertingScalar(value, to: property, context: context, lenient: lenient) { return field }
        throw RealmError.typeMismatch(property: context, expected: property.typeDescription,
                                      found: "\(type(of: value)) \(String(describing: value).prefix(60))")
    }

    /// A map property's value from a dictionary, a `Map` or a map field (nil: empty).
    private static func convertingMap(_ value: Any?, to property: PropertySchema, context: String, lenient: Bool) throws -> FieldValue {
        guard let value = unwrap(value) else { return .map([:]) }
        if let field = value as? FieldValue, case .map = field { return field }
        let items = try entries(of: value, context: context)
        var element = property
        element.isMap = false
        var entries: [String: FieldValue] = [:]
        for (key, item) in items {
            try MapKeyRule.check(key, context: context)
            entries[key] = try converting(item, to: element, context: "\(context)[\(key)]", lenient: lenient)
        }
        return .map(entries)
    }

    /// A list or set property's value from an array, a `List`/`MutableSet` or a list field
    /// (nil: empty). A set keeps the first of each group of equal elements.
    private static func convertingList(_ value: Any?, to property: PropertySchema, context: String, lenient: Bool) throws -> FieldValue {
        guard let value = unwrap(value) else { return .list([]) }
        if let field = value as? FieldValue, case .list(let items) = field { return .list(property.isSet ? items.distinctSetMembers() : items) }
        let items = try items(of: value, context: "\(context) is a list")
        var element = property
        element.isList = false
        element.isSet = false
        let converted = try items.enumerated().map { try converting($1, to: element, context: "\(context)[\($0)]", lenient: lenient) }
        return .list(property.isSet ? converted.distinctSetMembers() : converted)
    }

    /// One plain Swift value of a scalar property; nil if its type does not convert.
    private static func convertingScalar(_ value: Any, to property: PropertySchema, context: String, lenient: Bool) throws -> FieldValue? {
        switch property.kind {
        case .mixed:
            // Objects are resolved by the realm (Realm.field(for:property:context:)).
            guard let mixed = AnyRealmValue(plain: value), mixed.object(Object.self) == nil else { return nil }
            return try mixed._field(in: nil)
        case .bool:
            return (value as? Bool).map(FieldValue.bool)
        case .int, .int8, .int16, .int32, .int64:
            return try convertingInteger(value, to: property, context: context)
        case .double:
            switch value {
            case let v as Double: return .double(v)
            case let v as Float: return .double(Double(v))
            case let v as any BinaryInteger: return .double(Double(v))
            case let v as Decimal: return .double(NSDecimalNumber(decimal: v).doubleValue)
            case let v as String where lenient: return Double(v).map(FieldValue.double)
            default: return nil
            }
        case .float:
            switch value {
            case let v as Float: return .float(v)
            case let v as Double: return .float(Float(v))
            case let v as any BinaryInteger: return .float(Float(v))
            default: return nil
            }
        case .string:
            return convertingText(value, lenient: lenient)
        case .data:
            switch value {
            case let v as Data: return .data(v)
            case let v as [UInt8]: return .data(Data(v))
            default: return nil
            }
        case .date:
            return (value as? Date).map(FieldValue.date)
        case .uuid:
            if let v = value as? UUID { return .uuid(v) }
            return (value as? String).flatMap(UUID.init(uuidString:)).map(FieldValue.uuid)
        case .objectId:
            if let v = value as? ObjectId { return .objectId(v) }
            if let v = value as? String { return .objectId(try ObjectId(string: v)) }
            return nil
        case .decimal:
            return try convertingDecimal(value, context: context)
        case .column:
            return (value as? Value).map(FieldValue.init(columnValue:))
        case .object:
            return (value as? [UInt8]).map(FieldValue.link)
        case .embedded, .linkingObjects:
            return nil
        }
    }

    /// An integer of any width, an exact double, a numeric string or an integer-backed enum;
    /// nil if `value` is none of these, an error if it does not fit the property's width.
    private static func convertingInteger(_ value: Any, to property: PropertySchema, context: String) throws -> FieldValue? {
        let wide: Int64?
        switch value {
        case let v as any BinaryInteger: wide = Int64(exactly: v)
        case let v as Double: wide = Int64(exactly: v)
        case let v as Float: wide = Int64(exactly: v)
        case let v as String: wide = Int64(v)
        case let v as any RawRepresentable: wide = (v.rawValue as? any BinaryInteger).flatMap { Int64(exactly: $0) }
        default: wide = nil
        }
        guard let wide else { return nil }
        guard property.kind.fits(wide) else {
            throw RealmError.typeMismatch(property: context, expected: property.typeDescription, found: "\(wide), out of range")
        }
        return .int(wide)
    }

    /// Text, a string-backed enum, or (lenient) a number or Bool as its decimal text.
    private static func convertingText(_ value: Any, lenient: Bool) -> FieldValue? {
        switch value {
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as any RawRepresentable: return (v.rawValue as? String).map(FieldValue.string)
        case let v as any BinaryInteger where lenient: return .string(String(describing: v))
        case let v as Double where lenient: return .string(String(v))
        case let v as Decimal where lenient: return .string(v.description)
        case let v as Bool where lenient: return .string(String(v))
        default: return nil
        }
    }

    /// A Decimal or Decimal128, an integer, a Double inside Decimal's range, or a numeric
    /// string.
    private static func convertingDecimal(_ value: Any, context: String) throws -> FieldValue? {
        switch value {
        case let v as Decimal: return .decimal(v)
        case let v as Decimal128: return .decimal(v.decimalValue)
        case let v as any BinaryInteger: return Int64(exactly: v).map { .decimal(Decimal($0)) }
        case let v as Double:
            guard let d = Decimal(converting: v) else {
                throw RealmError.invalidValue("\(context): the Double \(v) cannot be a Decimal (\(Decimal.conversionRange))")
            }
            return .decimal(d)
        case let v as String:
            guard let d = Decimal(string: v, locale: nil), !d.isNaN else { return nil }
            return .decimal(d)
        default: return nil
        }
    }

    /// The elements of a plain collection value (an array, or a `List`/`MutableSet`), or an
    /// error saying `context` and what was given instead.
    static func items(of value: Any, context: @autoclosure () -> String) throws -> [Any?] {
        if let list = value as? _ListBase { return list._anyElements }
        if let array = value as? [Any?] { return array }
        if let array = value as? [Any] { return array.map { $0 } }
        throw RealmError.invalidValue("\(context()); got \(type(of: value))")
    }

    /// The entries of a plain map value (a dictionary, or a `Map`), or an error saying
    /// `context` is a map and what was given instead.
    static func entries(of value: Any, context: @autoclosure () -> String) throws -> [String: Any?] {
        if let map = value as? _ListBase, let plain = map._anyValue as? [String: Any?] { return plain }
        if let dictionary = value as? [String: Any?] { return dictionary }
        if let dictionary = value as? [String: Any] { return dictionary.mapValues { $0 } }
        throw RealmError.invalidValue("\(context()) is a map; got \(type(of: value))")
    }

    /// nil for nil, `Optional.none` inside `Any`, and NSNull.
    static func unwrap(_ value: Any?) -> Any? {
        guard let value else { return nil }
        if value is NSNull { return nil }
        if let optional = value as? any AnyOptional { return unwrap(optional.flattened) }
        return value
    }
}

extension Decimal {
    /// What ``init(converting:)`` accepts, for error messages.
    static let conversionRange = "a Decimal takes only finite Doubles of magnitude below about 1e146"

    /// `value` as a Decimal, or nil when it has none: NaN, ±infinity, and magnitudes beyond
    /// what Foundation's `Decimal(Double)` handles (about 1e146; it gives NaN there, and traps
    /// on infinities). Magnitudes below Decimal's smallest (1e-128) become 0.
    init?(converting value: Double) {
        guard value.isFinite else { return nil }
        let direct = Decimal(value)
        if !direct.isNaN {
            self = direct
            return
        }
        // Decimal(Double) also gives NaN below about 1e-108, where Decimal still has room:
        // build it from the shortest decimal text instead ("1.5e-120" → 15 × 10^-121).
        let text = "\(value)"
        let parts = text.split(separator: "e", maxSplits: 1)
        guard let significand = Decimal(string: String(parts[0]), locale: nil), !significand.isNaN,
              let exponent = parts.count > 1 ? Int(parts[1]) : 0 else { return nil }
        guard exponent < 0 else { return nil }
        let scaled = Decimal(sign: significand.sign, exponent: exponent, significand: significand.magnitude)
        self = scaled.isNaN ? 0 : scaled
    }
}

/// Lets `Any` that holds an `Optional` be looked into without reflection.
protocol AnyOptional { var flattened: Any? { get } }
extension Optional: AnyOptional {
    var flattened: Any? {
        switch self {
        case .some(let wrapped): return wrapped
        case .none: return nil
        }
    }
}

extension FieldValue {
    /// The value a new non-optional property holds when nothing gives it one (a migration
    /// adding it, an import that leaves it out): zero, empty, false, the reference date, the
    /// nil UUID; nil for links and custom columns.
    static func zero(_ kind: PropertyKind) -> FieldValue {
        switch kind {
        case .bool: return .bool(false)
        case .int, .int8, .int16, .int32, .int64: return .int(0)
        case .double: return .double(0)
        case .float: return .float(0)
        case .string: return .string("")
        case .data: return .data(Data())
        case .date: return .date(Date(timeIntervalSinceReferenceDate: 0))
        case .uuid: return .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .decimal: return .decimal(0)
        case .objectId: return .objectId(ObjectId())
        case .object, .column, .embedded, .linkingObjects, .mixed: return .null
        }
    }

    /// The value a new property holds when nothing gives it one: an empty collection, nil
    /// where allowed, else the kind's ``zero(_:)``.
    static func zero(_ property: PropertySchema) -> FieldValue {
        if property.isMap { return .map([:]) }
        if property.isList { return .list([]) }
        if property.isOptional { return .null }
        return zero(property.kind)
    }
}

extension Array where Element == FieldValue {
    /// The elements without repeats by set membership (see `SetMembership`), first kept.
    func distinctSetMembers() -> [FieldValue] {
        var present = Set<[UInt8]>()
        return filter { present.insert(SetMembership.key($0)).inserted }
    }
}
