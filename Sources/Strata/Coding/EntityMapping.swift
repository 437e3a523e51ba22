// The FastEasyMapping front end: explicit EntityMapping objects with attributes,
// relationships, assignment policies and a root path, used by Deserializer and
// Serializer — compiled to the same ObjectMapping as the other two front ends.

import Foundation

/// One property fed from a JSON key path, optionally through `map`/`reverseMap`.
public final class Attribute {
    /// The property's name.
    public let property: String
    /// The JSON key path (dotted); nil: the representation itself.
    public let keyPath: String?
    /// JSON → the property's value (nil for nil).
    public let map: ((JSONValue) throws -> Any?)?
    /// The property's value → JSON. As in FastEasyMapping it is only called for a non-nil
    /// value: nil is written as JSON null (left out with `includeNulls: false`). Return
    /// `.null` for null.
    public let reverseMap: ((Any?) throws -> JSONValue)?

    /// An attribute; `map` and `reverseMap` default to the plain conversion. `map` is called
    /// for every value the JSON has at `keyPath`, `.null` included, never for a missing key.
    public init(property: String, keyPath: String?, map: ((JSONValue) throws -> Any?)? = nil,
                reverseMap: ((Any?) throws -> JSONValue)? = nil) {
        self.property = property
        self.keyPath = keyPath
        self.map = map
        self.reverseMap = reverseMap
    }

    /// FEM's `mappingOfProperty:`: the JSON key is the property name.
    public static func mapping(ofProperty property: String) -> Attribute {
        Attribute(property: property, keyPath: property)
    }

    /// FEM's `mappingOfProperty:toKeyPath:map:reverseMap:` (and its shorter forms): `property`
    /// fed from `keyPath` (nil: the representation itself), through `map` and `reverseMap`
    /// when given.
    ///
    /// ```swift
    /// person.addAttribute(Attribute.mapping(ofProperty: "updated", toKeyPath: "timestamp", map: { json in
    ///     if case .int(let seconds) = json { return Date(timeIntervalSince1970: Double(seconds)) }
    ///     return nil
    /// }))
    /// ```
    public static func mapping(ofProperty property: String, toKeyPath keyPath: String?,
                               map: ((JSONValue) throws -> Any?)? = nil,
                               reverseMap: ((Any?) throws -> JSONValue)? = nil) -> Attribute {
        Attribute(property: property, keyPath: keyPath, map: map, reverseMap: reverseMap)
    }
}

/// A link or list property fed from a JSON key path through another mapping.
public final class Relationship {
    /// The link or list property.
    public let property: String
    /// The JSON key path; nil: the representation itself (a relationship by primary key).
    public let keyPath: String?
    /// How the related objects map.
    public let mapping: EntityMapping
    /// Bind only to objects that already exist; unknown ones are skipped.
    public var weak = false
    /// What happens to the objects related before.
    public var assignmentPolicy: AssignmentPolicy = .assign
    /// FEM's `toMany` flag. The schema decides how a property maps (a `List` property is
    /// always to-many), so this only has to agree with it: `true` on a to-one link makes
    /// the mapping throw ``RealmError/invalidValue(_:)`` when it is used.
    public var toMany = false
    /// The same flag under FEM's getter name (`isToMany`).
    public var isToMany: Bool {
        get { toMany }
        set { toMany = newValue }
    }

    /// A relationship.
    public init(property: String, keyPath: String?, mapping: EntityMapping) {
        self.property = property
        self.keyPath = keyPath
        self.mapping = mapping
    }
}

/// An explicit mapping of one object type, FastEasyMapping style:
///
/// ```swift
/// let person = EntityMapping(for: Person.self)
/// person.primaryKey = "email"
/// person.addAttributes(fromArray: ["name"])
/// person.addAttributes(fromDictionary: ["email": "user_email"])
/// person.addToManyRelationshipMapping(phone, forProperty: "phones", keyPath: "phones")
/// ```
public final class EntityMapping {
    /// The mapped type.
    public let type: Object.Type
    /// Where the object (or array) sits in the JSON, as a dotted key path.
    public var rootPath: String?
    /// The property that identifies objects (default: the type's primary key).
    public var primaryKey: String?
    private(set) var attributes: [Attribute] = []
    private(set) var relationships: [Relationship] = []

    /// A mapping for `type`.
    public init(for type: Object.Type) {
        self.type = type
    }

    /// FEM's `initWithObjectClass:`: a mapping for `objectClass`.
    public convenience init(objectClass: Object.Type) {
        self.init(for: objectClass)
    }

    /// Attributes whose JSON key is the property name.
    public func addAttributes(fromArray properties: [String]) {
        attributes.append(contentsOf: properties.map { Attribute(property: $0, keyPath: $0) })
    }

    /// Attributes from property → JSON key path pairs.
    public func addAttributes(fromDictionary pairs: [String: String]) {
        attributes.append(contentsOf: pairs.sorted { $0.key < $1.key }.map { Attribute(property: $0.key, keyPath: $0.value) })
    }

    /// One attribute.
    public func addAttribute(_ attribute: Attribute) {
        attributes.append(attribute)
    }

    /// FEM's `addAttributeWithProperty:keyPath:`: `property` fed from `keyPath` (nil: the
    /// representation itself).
    public func addAttribute(withProperty property: String, keyPath: String?) {
        attributes.append(Attribute(property: property, keyPath: keyPath))
    }

    /// A to-one relationship.
    public func addRelationshipMapping(_ mapping: EntityMapping, forProperty property: String, keyPath: String?) {
        relationships.append(Relationship(property: property, keyPath: keyPath, mapping: mapping))
    }

    /// A to-one relationship (FEM's `addRelationshipMapping:property:keyPath:` spelling).
    public func addRelationshipMapping(_ mapping: EntityMapping, property: String, keyPath: String?) {
        addRelationshipMapping(mapping, forProperty: property, keyPath: keyPath)
    }

    /// A to-many relationship.
    public func addToManyRelationshipMapping(_ mapping: EntityMapping, forProperty property: String, keyPath: String?) {
        let relationship = Relationship(property: property, keyPath: keyPath, mapping: mapping)
        relationship.toMany = true
        relationships.append(relationship)
    }

    /// A to-many relationship (FEM's `addToManyRelationshipMapping:property:keyPath:` spelling).
    public func addToManyRelationshipMapping(_ mapping: EntityMapping, property: String, keyPath: String?) {
        addToManyRelationshipMapping(mapping, forProperty: property, keyPath: keyPath)
    }

    /// A relationship with its options.
    public func addRelationship(_ relationship: Relationship) {
        relationships.append(relationship)
    }

    /// The engine's form of this mapping (cycles share one compiled mapping).
    func compiled(_ done: inout [ObjectIdentifier: ObjectMapping]) throws -> ObjectMapping {
        if let known = done[ObjectIdentifier(self)] { return known }
        let mapping = ObjectMapping(type: type)
        done[ObjectIdentifier(self)] = mapping
        let schema = mapping.info.schema
        mapping.primaryKeyProperty = primaryKey
        mapping.objectRoot = rootPath.map(ObjectMapping.path)
        mapping.listRoot = mapping.objectRoot
        if let primaryKey, schema.index(of: primaryKey) == nil {
            throw RealmError.invalidValue("EntityMapping(\(schema.className)).primaryKey: no property '\(primaryKey)'")
        }
        for attribute in attributes {
            guard let index = schema.index(of: attribute.property) else {
                throw RealmError.invalidValue("EntityMapping(\(schema.className)): no property '\(attribute.property)'")
            }
            var transformer: JSONValueTransformer?
            if attribute.map != nil || attribute.reverseMap != nil {
                let map = attribute.map, reverse = attribute.reverseMap
                transformer = JSONValueTransformer(forward: { json in try map.map { try $0(json) } ?? json },
                                                   reverse: { value in
                                                       // FEM: reverseMap only sees non-nil values; nil is null.
                                                       guard let value else { return .null }
                                                       return try reverse.map { try $0(value) } ?? (try JSONValue(any: value))
                                                   })
            }
            mapping.rules.append(ObjectMapping.Rule(index: index, property: attribute.property,
                                                    keyPath: attribute.keyPath.map(ObjectMapping.path), kind: .attribute(transformer)))
        }
        for relationship in relationships {
            guard let index = schema.index(of: relationship.property), [.object, .embedded].contains(schema.properties[index].kind) else {
                throw RealmError.invalidValue("EntityMapping(\(schema.className)): '\(relationship.property)' is not a link or list of objects")
            }
            if relationship.toMany, !schema.properties[index].isList {
                throw RealmError.invalidValue("EntityMapping(\(schema.className)): relationship '\(relationship.property)' is toMany, but \(schema.className).\(relationship.property) is a to-one link")
            }
            mapping.rules.append(ObjectMapping.Rule(
                index: index, property: relationship.property, keyPath: relationship.keyPath.map(ObjectMapping.path),
                kind: .relationship(try relationship.mapping.compiled(&done), policy: relationship.assignmentPolicy, weak: relationship.weak)))
        }
        return mapping
    }
}

/// Hears about a deserializer's work, in FastEasyMapping's order, for nested objects and
/// collections too: `willMapCollection`, then for each object `willMapObject`, the objects
/// and collections of its relationships (in the order they were added to the mapping),
/// `didMapObject`; then `didMapCollection`. For a Person with a car and two phones:
/// willObject(Person), willObject(Car), didObject(Car), willCollection(phones),
/// willObject(Phone), didObject(Phone), willObject(Phone), didObject(Phone),
/// didCollection(phones), didObject(Person).
///
/// A payload is read whole and written in one transaction, so the events are delivered
/// inside that write transaction once every object is written: `didMapObject` hands over
/// the managed object, which the delegate may still change (the change is part of the same
/// commit). Objects a weak relationship names that do not exist get no events (FEM does
/// not map them either). If the mapping fails, nothing is written and no event is delivered.
public protocol DeserializerDelegate: AnyObject {
    /// An object's representation is about to be mapped.
    func deserializer(_ deserializer: Deserializer, willMapObjectFromRepresentation representation: JSONValue, mapping: EntityMapping)
    /// An object was mapped (its relationships included).
    func deserializer(_ deserializer: Deserializer, didMapObject object: Object, fromRepresentation representation: JSONValue, mapping: EntityMapping)
    /// An array of representations is about to be mapped.
    func deserializer(_ deserializer: Deserializer, willMapCollectionFromRepresentation representation: JSONValue, mapping: EntityMapping)
    /// An array of representations was mapped.
    func deserializer(_ deserializer: Deserializer, didMapCollection collection: [Object], fromRepresentation representation: JSONValue, mapping: EntityMapping)
}

/// Every callback is optional: the defaults do nothing.
extension DeserializerDelegate {
    /// Does nothing.
    public func deserializer(_ deserializer: Deserializer, willMapObjectFromRepresentation representation: JSONValue, mapping: EntityMapping) {}
    /// Does nothing.
    public func deserializer(_ deserializer: Deserializer, didMapObject object: Object, fromRepresentation representation: JSONValue, mapping: EntityMapping) {}
    /// Does nothing.
    public func deserializer(_ deserializer: Deserializer, willMapCollectionFromRepresentation representation: JSONValue, mapping: EntityMapping) {}
    /// Does nothing.
    public func deserializer(_ deserializer: Deserializer, didMapCollection collection: [Object], fromRepresentation representation: JSONValue, mapping: EntityMapping) {}
}

/// Maps JSON into a realm's objects through an ``EntityMapping``; each call is one atomic write.
public final class Deserializer {
    /// The realm written to.
    public let realm: Realm
    /// Hears about each object and collection, nested ones included (see ``DeserializerDelegate``).
    public weak var delegate: (any DeserializerDelegate)?

    /// A deserializer for `realm`.
    public init(realm: Realm) {
        self.realm = realm
    }

    private func json(_ representation: Any) throws -> JSONValue {
        if let value = representation as? JSONValue { return value }
        if let data = representation as? Data {
            do { return try JSONValue(data: data) } catch let error as JSONError { throw JSONMappingError.invalidJSON(error) }
        }
        return try JSONValue(any: representation)
    }

    private func inWrite<R>(_ body: () throws -> R) throws -> R {
        realm.isInWriteTransaction ? try body() : try realm.write(body)
    }

    /// The engine's form of `mapping`, and each compiled mapping's ``EntityMapping`` (for the delegate).
    private func compile(_ mapping: EntityMapping) throws -> (ObjectMapping, [ObjectIdentifier: EntityMapping]) {
        var done: [ObjectIdentifier: ObjectMapping] = [:]
        let compiled = try mapping.compiled(&done)
        var origins: [ObjectIdentifier: EntityMapping] = [:]
        var pending = [mapping]
        while let next = pending.popLast() {
            guard let target = done[ObjectIdentifier(next)], origins[ObjectIdentifier(target)] == nil else { continue }
            origins[ObjectIdentifier(target)] = next
            pending.append(contentsOf: next.relationships.map(\.mapping))
        }
        return (compiled, origins)
    }

    /// An engine that records delegate events when there is a delegate to hear them.
    private func engine() -> MappingEngine {
        var engine = MappingEngine(realm: realm, options: MappingOptions())
        if delegate != nil { engine.events = [] }
        return engine
    }

    /// Hands the recorded events to the delegate (inside the write, everything written).
    private func deliver(_ engine: MappingEngine, _ origins: [ObjectIdentifier: EntityMapping]) {
        guard let delegate, let events = engine.events else { return }
        var objects: [ObjectIdentifier: Object] = [:]
        func object(_ draft: Draft) -> Object? {
            if let known = objects[ObjectIdentifier(draft)] { return known }
            let made = engine.object(for: draft)
            objects[ObjectIdentifier(draft)] = made
            return made
        }
        for event in events {
            switch event {
            case .willObject(let json, let mapping, let draft):
                guard let draft, object(draft) != nil, let origin = origins[ObjectIdentifier(mapping)] else { continue }
                delegate.deserializer(self, willMapObjectFromRepresentation: json, mapping: origin)
            case .didObject(let json, let mapping, let draft):
                guard let made = object(draft), let origin = origins[ObjectIdentifier(mapping)] else { continue }
                delegate.deserializer(self, didMapObject: made, fromRepresentation: json, mapping: origin)
            case .willCollection(let json, let mapping):
                guard let origin = origins[ObjectIdentifier(mapping)] else { continue }
                delegate.deserializer(self, willMapCollectionFromRepresentation: json, mapping: origin)
            case .didCollection(let json, let mapping, let drafts):
                guard let origin = origins[ObjectIdentifier(mapping)] else { continue }
                delegate.deserializer(self, didMapCollection: drafts.compactMap(object), fromRepresentation: json, mapping: origin)
            }
        }
    }

    /// The object `representation` (`Data`, `JSONValue` or JSONSerialization's `Any`) maps to.
    @discardableResult
    public func object(fromRepresentation representation: Any, mapping: EntityMapping) throws -> Object {
        let (compiled, origins) = try compile(mapping)
        var json = try json(representation)
        if let root = compiled.objectRoot {
            guard let inner = MappingEngine.value(in: json, at: root) else {
                throw JSONMappingError.unexpectedShape(path: "$", expected: "an object at \(root.joined(separator: "."))")
            }
            json = inner
        }
        var engine = engine()
        let draft = try engine.collect(json, mapping: compiled, at: .root())
        return try inWrite { () throws -> Object in
            try engine.apply()
            guard let object = engine.object(for: draft) else {
                throw JSONMappingError.unexpectedShape(path: "$", expected: "an object that exists (a weak mapping names one that does not)")
            }
            deliver(engine, origins)
            return object
        }
    }

    /// The object `representation` maps to, as the mapping's type: `let p: Person = try
    /// deserializer.object(fromRepresentation: json, mapping: person)`, no cast.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` (before anything is written) when the mapping
    ///   maps another type than `T`; what ``object(fromRepresentation:mapping:)`` throws.
    @discardableResult
    public func object<T: Object>(fromRepresentation representation: Any, mapping: EntityMapping) throws -> T {
        guard mapping.type is T.Type else {
            throw RealmError.invalidValue("Deserializer.object(fromRepresentation:mapping:) as \(T.self): the mapping maps \(mapping.type.className)")
        }
        let made: Object = try object(fromRepresentation: representation, mapping: mapping)
        return made as! T   // the mapping's type is T (checked above)
    }

    /// The objects an array representation maps to, in one write.
    @discardableResult
    public func collection(fromRepresentation representation: Any, mapping: EntityMapping) throws -> [Object] {
        let (compiled, origins) = try compile(mapping)
        var json = try json(representation)
        if let root = compiled.listRoot, let inner = MappingEngine.value(in: json, at: root) { json = inner }
        guard case .array(let elements) = json else { throw JSONMappingError.unexpectedShape(path: "$", expected: "an array") }
        var engine = engine()
        engine.events?.append(.willCollection(json, compiled))
        var drafts: [Draft] = []
        for (index, element) in elements.enumerated() {
            drafts.append(try engine.collect(element, mapping: compiled, at: .root(position: index)))
        }
        engine.events?.append(.didCollection(json, compiled, drafts))
        return try inWrite {
            try engine.apply()
            deliver(engine, origins)
            return drafts.compactMap { engine.object(for: $0) }
        }
    }

    /// The objects an array representation maps to, as the mapping's type (no cast).
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` (before anything is written) when the mapping
    ///   maps another type than `T`; what ``collection(fromRepresentation:mapping:)`` throws.
    @discardableResult
    public func collection<T: Object>(fromRepresentation representation: Any, mapping: EntityMapping) throws -> [T] {
        guard mapping.type is T.Type else {
            throw RealmError.invalidValue("Deserializer.collection(fromRepresentation:mapping:) as [\(T.self)]: the mapping maps \(mapping.type.className)")
        }
        let made: [Object] = try collection(fromRepresentation: representation, mapping: mapping)
        return made.map { $0 as! T }   // the mapping's type is T (checked above)
    }

    /// Updates a managed object from a representation (its identity is kept). The delegate
    /// hears about the object itself and its nested objects, as in FEM.
    public func fill(object: Object, fromRepresentation representation: Any, mapping: EntityMapping) throws {
        guard let state = object._state, state.realm === realm else {
            throw RealmError.invalidObject("fill(object:) needs an object managed by this deserializer's realm")
        }
        let (compiled, origins) = try compile(mapping)
        var json = try json(representation)
        if let root = compiled.objectRoot, let inner = MappingEngine.value(in: json, at: root) { json = inner }
        // The object's own identity decides which row is filled.
        if case .object(var members) = json, let index = compiled.identityIndex,
           let rule = compiled.rules.first(where: { $0.index == index }), let keyPath = rule.keyPath, keyPath.count == 1 {
            members[keyPath[0]] = try MappingEngine(realm: realm, options: MappingOptions())
                .jsonValue(state.field(index), property: compiled.info.schema.properties[index])
            json = .object(members)
        }
        var engine = engine()
        _ = try engine.collect(json, mapping: compiled, at: .root())
        _ = try inWrite {
            try engine.apply()
            deliver(engine, origins)
        }
    }

    // FEM's class methods (`+[FEMDeserializer objectFromRepresentation:mapping:context:]`),
    // with the realm as the context.

    /// FEM's `objectFromRepresentation:mapping:context:`, the realm as the context.
    @discardableResult
    public static func object(fromRepresentation representation: Any, mapping: EntityMapping, context realm: Realm) throws -> Object {
        try Deserializer(realm: realm).object(fromRepresentation: representation, mapping: mapping)
    }

    /// FEM's `objectFromRepresentation:mapping:context:`, typed (no cast).
    @discardableResult
    public static func object<T: Object>(fromRepresentation representation: Any, mapping: EntityMapping, context realm: Realm) throws -> T {
        try Deserializer(realm: realm).object(fromRepresentation: representation, mapping: mapping)
    }

    /// FEM's `collectionFromRepresentation:mapping:context:`, the realm as the context.
    @discardableResult
    public static func collection(fromRepresentation representation: Any, mapping: EntityMapping, context realm: Realm) throws -> [Object] {
        try Deserializer(realm: realm).collection(fromRepresentation: representation, mapping: mapping)
    }

    /// FEM's `fillObject:fromRepresentation:mapping:`: the object's own realm is written.
    ///
    /// - Throws: ``RealmError/invalidObject(_:)`` for an unmanaged object.
    public static func fill(object: Object, fromRepresentation representation: Any, mapping: EntityMapping) throws {
        guard let realm = object.realm else {
            throw RealmError.invalidObject("Deserializer.fill(object:fromRepresentation:mapping:) needs a managed object; \(type(of: object).className) is unmanaged")
        }
        try Deserializer(realm: realm).fill(object: object, fromRepresentation: representation, mapping: mapping)
    }
}

/// Turns objects into JSON through an ``EntityMapping``.
public enum Serializer {
    /// The JSON of one object (nested at the mapping's `rootPath`).
    public static func serialize(object: Object, mapping: EntityMapping, includeNulls: Bool = true) throws -> JSONValue {
        var compiledMappings: [ObjectIdentifier: ObjectMapping] = [:]
        let compiled = try mapping.compiled(&compiledMappings)
        let engine = MappingEngine(realm: object.realm, options: MappingOptions())
        var visiting = Set<MappingEngine.Visit>()
        let json = try engine.encode(object, mapping: compiled, visiting: &visiting, includeNulls: includeNulls)
        return compiled.objectRoot.map { MappingEngine.setting(json, at: $0[...], in: .object([:])) } ?? json
    }

    /// The JSON array of `collection`.
    public static func serialize(collection: some Sequence<Object>, mapping: EntityMapping, includeNulls: Bool = true) throws -> JSONValue {
        var compiledMappings: [ObjectIdentifier: ObjectMapping] = [:]
        let compiled = try mapping.compiled(&compiledMappings)
        var array: [JSONValue] = []
        for object in collection {
            let engine = MappingEngine(realm: object.realm, options: MappingOptions())
            var visiting = Set<MappingEngine.Visit>()
            array.append(try engine.encode(object, mapping: compiled, visiting: &visiting, includeNulls: includeNulls))
        }
        return compiled.listRoot.map { MappingEngine.setting(.array(array), at: $0[...], in: .object([:])) } ?? .array(array)
    }
}
