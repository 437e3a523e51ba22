// The types a @Persisted property can have, and how each moves between a model object,
// an unmanaged slot and a stored FieldValue. The underscored protocols are public only
// because generic signatures need them; applications use the types, not the protocols.

import Foundation

/// Where an unmanaged object keeps a property's value.
public enum _Slot {
    case value(FieldValue)
    case object(Object?)
    case list(_ListBase)
}

extension _Slot {
    /// The slot as a stored field, links left out (an unmanaged object's link is written
    /// separately, as its target's key): a value as is, a link as null, a list as empty.
    var unlinkedField: FieldValue {
        switch self {
        case .value(let field): return field
        case .object: return .null
        case .list(let collection): return collection._emptyField
        }
    }
}

/// A type that can be one value of a property, an element of a `List`, or wrapped in an
/// `Optional`: the primitives, `Object` subclasses (links), `PersistableEnum` and
/// `ColumnCodable` types.
public protocol _PersistableValue {
    /// The stored kind.
    static var _propertyKind: PropertyKind { get }
    /// The linked class or column type name, for the schema.
    static var _typeName: String? { get }
    /// The value a default-initialized property holds.
    static var _defaultValue: Self { get }
    /// The value stored as `field`, or nil when `field` is not one (links: the object is gone).
    static func _fromField(_ field: FieldValue, in realm: Realm?) -> Self?
    /// The field that stores this value; links need the realm that will hold them.
    func _field(in realm: Realm?) throws -> FieldValue
    /// How an unmanaged object keeps the value.
    func _slot() -> _Slot
    /// The value an unmanaged object keeps in `slot`.
    static func _fromSlot(_ slot: _Slot) -> Self?
    /// How an unmanaged object keeps nil of this type.
    static var _nilSlot: _Slot { get }
}

extension _PersistableValue {
    public static var _typeName: String? { nil }
    @inlinable
    public func _slot() -> _Slot { .value((try? _field(in: nil)) ?? .null) }
    @inlinable
    public static func _fromSlot(_ slot: _Slot) -> Self? {
        if case .value(let field) = slot { return _fromField(field, in: nil) }
        return nil
    }
    @inlinable
    public static var _nilSlot: _Slot { .value(.null) }
}

/// A type that can be the declared type of a `@Persisted` property.
public protocol _PersistedProperty {
    /// The schema of a property of this type (name and flags are filled in by the caller).
    static var _schemaTemplate: PropertySchema { get }
    /// The value of a property declared without an initial value.
    static var _defaultPropertyValue: Self { get }
    /// How an unmanaged object keeps the value.
    func _propertySlot() -> _Slot
    /// The value an unmanaged object keeps in `slot`.
    static func _fromPropertySlot(_ slot: _Slot) -> Self
    /// Reads the property of a managed object.
    static func _managedGet(_ state: ObjectState, _ index: Int) -> Self
    /// Writes the property of a managed object (inside a write).
    static func _managedSet(_ value: Self, _ state: ObjectState, _ index: Int)
    /// Whether a stored field can be read as this type (links are not followed).
    static func _canRead(_ field: FieldValue) -> Bool
}

// MARK: Plain values

/// Non-optional values.
extension _PersistedProperty where Self: _PersistableValue {
    public static var _schemaTemplate: PropertySchema {
        PropertySchema(name: "", kind: _propertyKind, isOptional: _propertyKind == .object || _propertyKind == .embedded, objectClassName: _typeName)
    }
    @inlinable
    public static var _defaultPropertyValue: Self { _defaultValue }
    @inlinable
    public func _propertySlot() -> _Slot { _slot() }
    @inlinable
    public static func _fromPropertySlot(_ slot: _Slot) -> Self { _fromSlot(slot) ?? _defaultValue }
    @inlinable
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> Self {
        let field = state.field(index)
        if let value = _fromField(field, in: state.realm) { return value }
        return _fromField(state.unreadableValue(field, index: index, type: Self.self), in: state.realm) ?? _defaultValue
    }
    @inlinable
    public static func _managedSet(_ value: Self, _ state: ObjectState, _ index: Int) {
        state.setField(index, state.fieldForAssignment { try value._field(in: state.realm) })
    }
    public static func _canRead(_ field: FieldValue) -> Bool { _fromField(field, in: nil) != nil }
}

extension Optional: _PersistedProperty where Wrapped: _PersistableValue {
    public static var _schemaTemplate: PropertySchema {
        PropertySchema(name: "", kind: Wrapped._propertyKind, isOptional: true, objectClassName: Wrapped._typeName)
    }
    @inlinable
    public static var _defaultPropertyValue: Self { nil }
    @inlinable
    public func _propertySlot() -> _Slot { self.map { $0._slot() } ?? Wrapped._nilSlot }
    @inlinable
    public static func _fromPropertySlot(_ slot: _Slot) -> Self { Wrapped._fromSlot(slot) }
    @inlinable
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> Self {
        if Wrapped._propertyKind == .embedded { return state.embeddedObject(index, position: nil) as? Wrapped }
        let field = state.field(index)
        if field == .null { return nil }
        if let value = Wrapped._fromField(field, in: state.realm) { return value }
        if case .link = field { return nil }  // the linked object was deleted
        // A raw value that is no case of the enum (another version of the app wrote it).
        if let enumType = Wrapped.self as? any PersistableEnum.Type, enumType._canReadRawValue(field) { return nil }
        return Wrapped._fromField(state.unreadableValue(field, index: index, type: Self.self), in: state.realm)
    }
    @inlinable
    public static func _managedSet(_ value: Self, _ state: ObjectState, _ index: Int) {
        if Wrapped._propertyKind == .embedded {
            state.setEmbedded(value as? Object, index: index)
            return
        }
        state.setField(index, state.fieldForAssignment { try value?._field(in: state.realm) ?? .null })
    }
    public static func _canRead(_ field: FieldValue) -> Bool {
        if field == .null { return true }
        if case .link = field { return Wrapped._propertyKind == .object }
        if case .embedded = field { return Wrapped._propertyKind == .embedded }
        if let enumType = Wrapped.self as? any PersistableEnum.Type { return enumType._canReadRawValue(field) }
        return Wrapped._fromField(field, in: nil) != nil
    }
}

/// Optional values inside lists (`List<String?>`).
extension Optional: _PersistableValue where Wrapped: _PersistableValue {
    public static var _propertyKind: PropertyKind { Wrapped._propertyKind }
    public static var _typeName: String? { Wrapped._typeName }
    public static var _defaultValue: Self { nil }
    @inlinable
    public static func _fromField(_ field: FieldValue, in realm: Realm?) -> Self? {
        field == .null ? .some(nil) : Wrapped._fromField(field, in: realm).map { .some($0) }
    }
    public func _field(in realm: Realm?) throws -> FieldValue { try self?._field(in: realm) ?? .null }
    @inlinable
    public func _slot() -> _Slot { self.map { $0._slot() } ?? Wrapped._nilSlot }
    @inlinable
    public static func _fromSlot(_ slot: _Slot) -> Self? { .some(Wrapped._fromSlot(slot)) }
}

// MARK: Primitives

extension Bool: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .bool }
    public static var _defaultValue: Bool { false }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Bool? {
        if case .bool(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .bool(self) }
}

/// Integers of every width are stored as 64-bit integers.
public protocol _PersistableInteger: FixedWidthInteger, _PersistableValue, _PersistedProperty {}
extension _PersistableInteger {
    public static var _defaultValue: Self { 0 }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Self? {
        if case .int(let v) = field { return Self(truncatingIfNeeded: v) }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .int(Int64(truncatingIfNeeded: self)) }
}
extension Int: _PersistableInteger { public static var _propertyKind: PropertyKind { .int } }
extension Int8: _PersistableInteger { public static var _propertyKind: PropertyKind { .int8 } }
extension Int16: _PersistableInteger { public static var _propertyKind: PropertyKind { .int16 } }
extension Int32: _PersistableInteger { public static var _propertyKind: PropertyKind { .int32 } }
extension Int64: _PersistableInteger { public static var _propertyKind: PropertyKind { .int64 } }

extension Double: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .double }
    public static var _defaultValue: Double { 0 }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Double? {
        if case .double(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .double(self) }
}

extension Float: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .float }
    public static var _defaultValue: Float { 0 }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Float? {
        if case .float(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .float(self) }
}

extension String: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .string }
    public static var _defaultValue: String { "" }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> String? {
        if case .string(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .string(self) }
}

extension Data: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .data }
    public static var _defaultValue: Data { Data() }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Data? {
        if case .data(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .data(self) }
}

extension Date: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .date }
    public static var _defaultValue: Date { Date(timeIntervalSinceReferenceDate: 0) }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Date? {
        if case .date(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .date(self) }
}

extension UUID: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .uuid }
    public static var _defaultValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> UUID? {
        if case .uuid(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .uuid(self) }
}

extension Decimal: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .decimal }
    public static var _defaultValue: Decimal { 0 }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Decimal? {
        if case .decimal(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .decimal(self) }
}

// MARK: Enums and custom column types

/// An enum stored as its raw value:
///
/// ```swift
/// enum Kind: Int, PersistableEnum { case free, pro }
/// @Persisted var kind: Kind = .free
/// ```
///
/// A stored raw value that is no case (another version of the app wrote it, or a case was
/// removed) never traps: an optional property reads `nil`; a non-optional one reads the
/// property's declared initial value, or the first case when it has none or that is not a
/// case either; in a list, such elements are skipped. The stored value is left as it is
/// until the property is written.
public protocol PersistableEnum: _PersistableValue, _PersistedProperty, RawRepresentable, CaseIterable
where RawValue: _PersistableValue {}

extension PersistableEnum {
    public static var _propertyKind: PropertyKind { RawValue._propertyKind }
    public static var _defaultValue: Self { allCases.first! }
    /// Reads the property of a managed object; a raw value that is no case reads as the
    /// property's declared initial value (or the first case).
    public static func _managedGet(_ state: ObjectState, _ index: Int) -> Self {
        let field = state.field(index)
        if let value = _fromField(field, in: state.realm) { return value }
        guard _canReadRawValue(field) else {
            return _fromField(state.unreadableValue(field, index: index, type: Self.self), in: state.realm) ?? _defaultValue
        }
        return _fromField(state.initialField(index), in: nil) ?? _defaultValue
    }
    /// Whether the property can read `field`: any value of the raw type, a case or not.
    public static func _canRead(_ field: FieldValue) -> Bool { _canReadRawValue(field) }
    /// Whether `field` holds a value of the raw type (a case or not).
    @usableFromInline
    static func _canReadRawValue(_ field: FieldValue) -> Bool { RawValue._fromField(field, in: nil) != nil }
    @inlinable
    public static func _fromField(_ field: FieldValue, in realm: Realm?) -> Self? {
        RawValue._fromField(field, in: realm).flatMap(Self.init(rawValue:))
    }
    public func _field(in realm: Realm?) throws -> FieldValue { try rawValue._field(in: realm) }
}

/// Custom column types (``ColumnCodable``) are stored as their ``Value``.
extension ColumnDecodable {
    public static var _propertyKind: PropertyKind { .column }
    public static var _typeName: String? { String(describing: Self.self) }
    public static var _defaultValue: Self {
        guard let value = Self(with: .null) else {
            fatalError("\(Self.self) has no value for null: declare properties of this type Optional or give them an initial value")
        }
        return value
    }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Self? {
        Self(with: field.columnValue)
    }
    @inlinable
    public func _field(in _: Realm?) throws -> FieldValue {
        guard let encodable = self as? any ColumnEncodable else {
            throw RealmError.invalidValue("\(Self.self) is ColumnDecodable but not ColumnEncodable, so it cannot be stored")
        }
        return FieldValue(columnValue: encodable.archivedValue())
    }
}

// MARK: Realm Swift's names for the value protocols

/// Realm Swift's name for the types a collection may hold (`List<T: RealmCollectionValue>`).
public typealias RealmCollectionValue = _PersistableValue
/// Realm Swift's name for the types a property may have.
public typealias RealmPropertyType = _PersistableValue
/// Realm Swift's name for the types `min` and `max` compare.
public typealias MinMaxType = _PersistableValue & Comparable
/// Realm Swift's name for the types results and collections sort by.
public typealias SortableType = _PersistableValue & Comparable
/// Realm Swift's name for the types `sum` and `average` add.
public typealias AddableType = _PersistableValue & AdditiveArithmetic
