// DynamicObject: an object read by property name through the schema stored in the store —
// Realm Swift's `dynamicObjects`, for code that does not have (or does not know) the model
// class: tools, generic exporters, migrations of data whose class was deleted.

/// An object of a stored type, read and written by property name:
///
/// ```swift
/// for user in realm.dynamicObjects("User").filter("rank > 3") {
///     print(user["username"] as? String ?? "")
/// }
/// try realm.write { realm.dynamicObjects("User").first?["rank"] = 5 }
/// ```
///
/// Properties come from the stored schema (``Object/objectSchema``); links read as the
/// linked type's class when the realm's configuration lists it, else as `DynamicObject`s;
/// lists read as arrays. Only managed dynamic objects exist: they come from
/// ``Realm/dynamicObjects(_:)``.
public final class DynamicObject: Object {
    /// The stored type's name (`"User"`).
    public var typeName: String { _state?.bound.className ?? "DynamicObject" }

    /// `TypeName { name = value; … }`, from the stored schema.
    public override var description: String {
        guard let state = _state else { return "DynamicObject { unmanaged }" }
        if isInvalidated { return "\(typeName) { invalidated }" }
        let parts = state.bound.schema.properties.map { property -> String in
            switch self[property.name] {
            case nil: return "\(property.name) = nil"
            case let string as String: return "\(property.name) = \"\(string)\""
            case let object as Object: return "\(property.name) = \(object.objectSchema.className)(\(object._state.map { $0.primaryKey.description } ?? "unmanaged"))"
            case let some?: return "\(property.name) = \(some)"
            }
        }
        return "\(typeName) { " + parts.joined(separator: "; ") + " }"
    }
}

extension Realm {
    /// Every object of the stored type `className`, as ``DynamicObject``s, live like any
    /// ``Results`` (string queries, `sorted(byKeyPath:)`, notifications). The type need not
    /// be in the configuration's `objectTypes`: only in the store.
    ///
    /// Traps for a type the store does not hold (as `objects(_:)` does for an unknown
    /// class); ``dynamicObjects(ofType:)`` throws instead.
    public func dynamicObjects(_ className: String) -> Results<DynamicObject> {
        do {
            return try dynamicObjects(ofType: className)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// Every object of the stored type `className`, as ``DynamicObject``s.
    ///
    /// - Throws: ``RealmError/unknownType(_:)`` when the store holds no such type;
    ///   ``RealmError/incorrectThread``.
    public func dynamicObjects(ofType className: String) throws -> Results<DynamicObject> {
        try checkThread()
        return Results(realm: self, bound: try dynamicBoundType(className))
    }

    /// The object of the stored type `typeName` whose primary key is `primaryKey`, as a
    /// ``DynamicObject`` (Realm Swift's `dynamicObject(ofType:forPrimaryKey:)`); nil when
    /// there is none, or when `primaryKey` is not a value a primary key can hold.
    ///
    /// - Throws: ``RealmError/unknownType(_:)`` when the store holds no such type;
    ///   ``RealmError/incorrectThread``.
    public func dynamicObject(ofType typeName: String, forPrimaryKey primaryKey: Any) throws -> DynamicObject? {
        try checkThread()
        let bound = try dynamicBoundType(typeName)
        guard bound.primaryKeyIndex != nil, let value = PrimaryKeyValue(any: primaryKey) else { return nil }
        return object(bound: bound, key: value.keyBytes) as? DynamicObject
    }

    /// Creates (or with `update`, updates) an object of the stored type `typeName` from a
    /// value — a dictionary of property names to values, an array of values in property
    /// order, or another object — as ``create(_:value:update:)`` does for a class (Realm
    /// Swift's `dynamicCreate`). Properties the value leaves out of a new object get their
    /// type's zero value (nil when optional): a class's initial values are not known here.
    ///
    /// - Throws: ``RealmError/notInWriteTransaction``; ``RealmError/unknownType(_:)``;
    ///   ``RealmError/missingPrimaryKey(type:property:)`` when the type has a primary key and
    ///   the value gives none; ``RealmError/primaryKeyExists(type:key:)`` with `.error`;
    ///   ``RealmError/invalidValue(_:)`` for a value a property cannot hold.
    @discardableResult
    public func dynamicCreate(_ typeName: String, value: Any = [String: Any](), update: UpdatePolicy = .error) throws -> DynamicObject {
        let bound = try dynamicBoundType(typeName)
        let created = try create(bound: bound, value: value, update: update, initialFields: nil)
        guard let object = created as? DynamicObject else { throw RealmError.invalidated }
        return object
    }
}
