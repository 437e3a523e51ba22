// Realm Swift's custom persistable types: a type stored as one of the stored types (a URL
// as its string, a measurement as its Double). Unlike ColumnCodable, the stored value *is*
// the persisted type's: queries, sorts, indexes and JSON see a String or a Double, and a
// store written with the persisted type reads back through the custom one.

/// A type stored as another persistable type it converts to and from without failing
/// (Realm Swift's `CustomPersistable`):
///
/// ```swift
/// struct Celsius: CustomPersistable {
///     var degrees: Double
///     init(persistedValue: Double) { degrees = persistedValue }
///     var persistableValue: Double { degrees }
/// }
/// final class Reading: Object {
///     @Persisted var temperature: Celsius       // stored, queried and sorted as a Double
///     @Persisted var history: List<Celsius>
/// }
/// ```
///
/// A property declared without an initial value holds `init(persistedValue:)` of the
/// persisted type's zero value.
public protocol CustomPersistable: _PersistableValue, _PersistedProperty {
    /// The stored type.
    associatedtype PersistedType: _PersistableValue
    /// The value a stored value stands for.
    init(persistedValue: PersistedType)
    /// The value to store.
    var persistableValue: PersistedType { get }
}

/// A type stored as another persistable type, whose conversion from a stored value may fail
/// (Realm Swift's `FailableCustomPersistable`):
///
/// ```swift
/// extension URL: FailableCustomPersistable {
///     public init?(persistedValue: String) { self.init(string: persistedValue) }
///     public var persistableValue: String { absoluteString }
/// }
/// ```
///
/// A stored value the type refuses reads as nil in an optional property; in a non-optional
/// one it reads as the property's initial value and the object is listed in
/// ``Realm/readErrors`` (the damage is reported, never trapped on). Declare a non-optional
/// property with an initial value unless the persisted type's zero value converts: one
/// that does not cannot be declared without one (opening a realm with it traps, naming
/// the type).
public protocol FailableCustomPersistable: _PersistableValue, _PersistedProperty {
    /// The stored type.
    associatedtype PersistedType: _PersistableValue
    /// The value a stored value stands for, or nil when it stands for none.
    init?(persistedValue: PersistedType)
    /// The value to store.
    var persistableValue: PersistedType { get }
}

extension CustomPersistable {
    public static var _propertyKind: PropertyKind { PersistedType._propertyKind }
    public static var _typeName: String? { PersistedType._typeName }
    public static var _defaultValue: Self { Self(persistedValue: PersistedType._defaultValue) }
    @inlinable
    public static func _fromField(_ field: FieldValue, in realm: Realm?) -> Self? {
        PersistedType._fromField(field, in: realm).map(Self.init(persistedValue:))
    }
    @inlinable
    public func _field(in realm: Realm?) throws -> FieldValue { try persistableValue._field(in: realm) }
}

extension FailableCustomPersistable {
    public static var _propertyKind: PropertyKind { PersistedType._propertyKind }
    public static var _typeName: String? { PersistedType._typeName }
    public static var _defaultValue: Self {
        guard let value = Self(persistedValue: PersistedType._defaultValue) else {
            preconditionFailure("\(Self.self) has no value for \(PersistedType.self)'s zero value: declare the property with an initial value, or as optional")
        }
        return value
    }
    @inlinable
    public static func _fromField(_ field: FieldValue, in realm: Realm?) -> Self? {
        PersistedType._fromField(field, in: realm).flatMap(Self.init(persistedValue:))
    }
    @inlinable
    public func _field(in realm: Realm?) throws -> FieldValue { try persistableValue._field(in: realm) }
}
