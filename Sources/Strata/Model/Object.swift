// Object: the base class of every model. An object is unmanaged (its values in `_slots`)
// until it is added to a realm; a managed object reads and writes through `_state`.

import Foundation

/// The base class of model types. Declare properties with ``Persisted``:
///
/// ```swift
/// final class Car: Object {
///     @Persisted(primaryKey: true) var vin: String = ""
///     @Persisted var model: String = ""
/// }
/// ```
///
/// An object is *unmanaged* until it is added to a ``Realm``; it is then *managed*: it
/// reads the realm's current snapshot, may be changed only inside a write, and belongs to
/// the realm's thread.
open class Object: CustomStringConvertible {
    /// Values of an unmanaged object, by property position.
    @usableFromInline final var _slots: [_Slot]
    /// The managed state; nil while unmanaged.
    public final var _state: ObjectState?
    /// Records property reads during key-path analysis (schema discovery only).
    @usableFromInline final var _probe: PropertyProbe?

    /// The position this object's first property was registered at (see
    /// `ObjectConstruction`); 0 unless an initial value of another object made this one.
    @usableFromInline final var _slotBase: Int

    /// Creates an unmanaged object with every property at its initial value.
    public required init() {
        _slots = []
        _slotBase = 0
        (_slots, _slotBase) = ObjectConstruction.take(for: self)
    }

    /// The class name as stored in the schema; override to store a type under another name.
    open class var className: String { String(describing: self) }

    // MARK: JSON coding (RealmCoder), all optional

    /// Property name → JSON key, for properties whose key differs (RealmCoder).
    open class var realmCodableKeys: [String: String] { [:] }
    /// Properties left out when encoding (RealmCoder).
    open class var realmCodableIgnoredAttributes: [String] { [] }
    /// String properties that hold a JSON subtree as JSON text (RealmCoder). The stored
    /// schema remembers them, so `strata export` and `import` write and read them as JSON too.
    open class var realmCodableRawJsonSubstrings: [String] { [] }
    /// The key wrapping one object (`{"user": {...}}`), if the server uses one (RealmCoder).
    open class var realmObjectEnvelope: String? { nil }
    /// The key wrapping a list of objects (`{"users": [...]}`), if the server uses one (RealmCoder).
    open class var realmListEnvelope: String? { nil }

    // MARK: JSON coding (Realm+JSON style), all optional

    /// JSON key path → property name for decoding; empty: every property from its
    /// snake_case key.
    open class var jsonInboundMapping: [String: String] { [:] }
    /// Property name → JSON key path for encoding; empty: every property to its snake_case key.
    open class var jsonOutboundMapping: [String: String] { [:] }
    /// The outbound mapping for this object (default: the class's).
    open func jsonOutboundMappingForInstance() -> [String: String] { Self.jsonOutboundMapping }
    /// The JSON object as it arrives, to adjust before mapping (default: unchanged).
    open class func preprocessedJSON(_ json: [String: Any]) -> [String: Any] { json }
    /// How the JSON of a property converts (default: none).
    open class func jsonTransformer(forProperty name: String) -> JSONValueTransformer? { nil }

    /// The realm that manages this object, or nil while unmanaged.
    public var realm: Realm? { _state?.realm }

    /// An unmanaged object filled from `value` (Realm Swift's `init(value:)`): a dictionary
    /// of property names to values, an array of values in declaration order, or another
    /// object (its properties read by name). Linked objects and lists of them may be given
    /// as objects or, nested, as dictionaries or arrays; properties not given keep their
    /// initial values.
    ///
    /// ```swift
    /// let dog = Dog(value: ["name": "Rex", "owner": ["name": "Ann"], "toys": [["kind": "ball"]]])
    /// ```
    ///
    /// Traps, as Realm raises, for a value that does not fit (an unknown property, a value
    /// of the wrong type); ``Object/make(value:)`` throws the same error instead.
    public convenience init(value: Any) {
        self.init()
        do {
            try fill(from: value)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// An unmanaged object filled from `value`, as ``init(value:)`` fills it.
    ///
    /// - Throws: ``RealmError/unknownProperty(type:property:)`` for a name the type does not
    ///   have; ``RealmError/invalidValue(_:)`` for a value that does not fit its property
    ///   (the message names the property).
    public static func make(value: Any) throws -> Self {
        let object = Self()
        try object.fill(from: value)
        return object
    }

    /// Sets the properties `value` names (unmanaged only).
    private func fill(from value: Any) throws {
        let info = ObjectType.info(for: type(of: self))
        for (name, item) in try info.schema.namedValues(value) {
            guard let index = info.schema.index(of: name) else { continue }
            let property = info.schema.properties[index]
            if property.kind == .linkingObjects { continue }
            if case .object = _slots[index], let target = info.objectTypes[index], let made = try Self.unmanaged(target, from: item) {
                _slots[index] = .object(made)
            } else {
                try setDynamicValue(item, index: index)
            }
        }
    }

    /// A new unmanaged `type` from a nested dictionary or array, or nil when `value` is not
    /// one (an object, nil or NSNull: the caller takes it as it is).
    static func unmanaged(_ type: Object.Type, from value: Any?) throws -> Object? {
        guard let value = FieldValue.unwrap(value), value is [String: Any] || value is [String: Any?] || value is [Any?] || value is [Any] else { return nil }
        let object = type.init()
        try object.fill(from: value)
        return object
    }

    /// Whether `object` is this same stored object (Realm Swift's `isSameObject(as:)`): both
    /// managed in the same store and naming the same object, whatever realm or thread read
    /// them. An unmanaged object is the same only as itself; nil is never the same.
    public func isSameObject(as object: Object?) -> Bool {
        guard let object else { return false }
        return self == object
    }

    /// Whether the object was deleted from its realm (or its realm was invalidated).
    /// Unmanaged objects are never invalidated.
    public var isInvalidated: Bool { _state?.isInvalidated ?? false }

    /// The schema of this class as declared (Realm Swift's name): its class name,
    /// properties and primary key, or nil when the declaration cannot be used as a model
    /// (opening a realm with it says why). ``DynamicObject`` has none: its schema is the
    /// stored type's.
    public class func sharedSchema() -> ObjectSchema? {
        guard self != DynamicObject.self else { return nil }
        return try? ObjectType.discover(self).schema
    }

    /// The schema of this object's type.
    public var objectSchema: ObjectSchema { _state?.bound.schema ?? ObjectType.info(for: type(of: self)).schema }

    /// The object's identity that can cross threads: its primary key, or its hidden object
    /// id. Unmanaged objects without a primary key have none (the call traps).
    public var primaryKeyValue: PrimaryKeyValue {
        if let state = _state { return state.primaryKey }
        let info = ObjectType.info(for: type(of: self))
        guard let index = info.primaryKeyIndex, let value = unmanagedField(index).flatMap(PrimaryKeyValue.init(field:)) else {
            preconditionFailure("\(Self.className) has no primary key, and an unmanaged object has no object id yet")
        }
        return value
    }

    /// A property's value by name, as a plain Swift value (`nil` for nil or an unknown name);
    /// links read as objects, lists as arrays.
    public subscript(key: String) -> Any? {
        get {
            // Managed: the stored schema (a DynamicObject has no declared properties).
            if let state = _state {
                guard let index = state.bound.schema.index(of: key) else { return nil }
                return state.dynamicValue(index)
            }
            let info = ObjectType.info(for: type(of: self))
            guard let index = info.schema.index(of: key) else { return nil }
            switch _slots[index] {
            case .value(let field): return field.anyValue
            case .object(let object): return object
            case .list(let list): return list._anyValue
            }
        }
        set {
            guard let index = _state?.bound.schema.index(of: key) ?? ObjectType.info(for: type(of: self)).schema.index(of: key) else {
                preconditionFailure("\(_state?.bound.className ?? Self.className) has no property '\(key)'")
            }
            do {
                try setDynamicValue(newValue, index: index)
            } catch {
                preconditionFailure("\(error)")
            }
        }
    }

    /// A property's value by name, checked: throws ``RealmError/columnDecodingFailed(type:object:property:)``
    /// when a custom column type cannot read what is stored (where the property accessor traps).
    public func value(forProperty name: String) throws -> Any? {
        let info = ObjectType.info(for: type(of: self))
        guard let state = _state else {
            guard info.schema.index(of: name) != nil else { throw RealmError.unknownProperty(type: Self.className, property: name) }
            return self[name]
        }
        // A managed object reads through the schema it is bound to (a DynamicObject's is the
        // stored one; its class declares no properties).
        let className = state.bound.className
        guard let index = state.bound.schema.index(of: name) else { throw RealmError.unknownProperty(type: className, property: name) }
        try state.realm.checkThread()
        guard !state.isInvalidated else { throw RealmError.invalidObject("\(className) was deleted") }
        let field = try state.checkedField(index)
        // A model class checks the field against its property's Swift type; a dynamic object
        // has none and reads whatever is stored.
        if info.schema.index(of: name) == index, index < info.readers.count, !info.readers[index](field) {
            let property = info.schema.properties[index]
            if property.kind == .column {
                throw RealmError.columnDecodingFailed(type: property.objectClassName ?? "?", object: "\(className)(\(state.primaryKey))", property: name)
            }
            throw RealmError.damagedObject(type: className, key: state.primaryKey.description,
                                           reason: "\(name) holds \(field.kindName), which is not a \(property.typeDescription)")
        }
        return state.dynamicValue(index)
    }

    /// Sets a property from a plain Swift value; throws when the value does not fit.
    func setDynamicValue(_ value: Any?, index: Int) throws {
        if let state = _state {
            try state.setDynamicValue(value, index: index)
            return
        }
        let info = ObjectType.info(for: type(of: self))
        let property = info.schema.properties[index]
        switch _slots[index] {
        case .object:
            guard value == nil || value is Object else {
                throw RealmError.invalidValue("\(Self.className).\(property.name) links to \(property.objectClassName ?? "?"), not \(type(of: value!))")
            }
            _slots[index] = .object(value as? Object)
        case .list(let list):
            try list._replaceAll(withAny: value, property: "\(Self.className).\(property.name)")
        case .value:
            _slots[index] = .value(try FieldValue.converting(value, to: property, context: "\(Self.className).\(property.name)"))
        }
    }

    /// The field of an unmanaged object (nil for links and lists).
    final func unmanagedField(_ index: Int) -> FieldValue? {
        if case .value(let field) = _slots[index] { return field }
        return nil
    }

    /// `ClassName { name = value; … }`.
    open var description: String {
        if isInvalidated { return "\(Self.className) { invalidated }" }
        let info = ObjectType.info(for: type(of: self))
        let parts = info.schema.properties.map { property -> String in
            let value = self[property.name]
            let text: String
            switch value {
            case nil: text = "nil"
            case let object as EmbeddedObject: text = object.description
            case let object as Object: text = "\(type(of: object).className)(\(object._state.map { $0.primaryKey.description } ?? "unmanaged"))"
            case let string as String: text = "\"\(string)\""
            case let some?: text = "\(some)"
            }
            return "\(property.name) = \(text)"
        }
        return "\(Self.className) { " + parts.joined(separator: "; ") + " }"
    }
}

/// Links: an `Object?` property or a `List` of objects.
extension Object: _PersistableValue {
    public static var _propertyKind: PropertyKind { Self.self is EmbeddedObject.Type ? .embedded : .object }
    public static var _typeName: String? { className }
    public static var _defaultValue: Self { Self() }
    public static func _fromField(_ field: FieldValue, in realm: Realm?) -> Self? {
        guard case .link(let key) = field, let realm else { return nil }
        return realm.linkedObject(Self.self, key: key)
    }
    public func _field(in realm: Realm?) throws -> FieldValue {
        if self is EmbeddedObject { return try embeddedField(in: realm) }
        guard let realm else { throw RealmError.invalidValue("a link to \(Self.className) needs a realm") }
        return .link(try realm.linkKey(for: self))
    }
    public func _slot() -> _Slot { .object(self) }
    public static func _fromSlot(_ slot: _Slot) -> Self? {
        if case .object(let object) = slot { return object as? Self }
        return nil
    }
    public static var _nilSlot: _Slot { .object(nil) }
}

/// Records which property a key path reads (see ``ObjectType/propertyIndex(for:)``).
@usableFromInline
final class PropertyProbe {
    var reads: [(index: Int, keyPath: AnyKeyPath)] = []
    /// Records a read of property `index` through the property's own key path.
    @usableFromInline func record(_ index: Int, _ keyPath: AnyKeyPath) { reads.append((index, keyPath)) }
}
