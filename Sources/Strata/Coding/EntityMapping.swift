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
    /// The property's value → JSON.
    public let reverseMap: ((Any?) throws -> JSONValue)?

    /// An attribute; `map` and `reverseMap` default to the plain conversion.
    public init(property: String, keyPath: String?, map: ((JSONValue) throws -> Any?)? = nil,
                reverseMap: ((Any?) throws -> JSONValue)? = nil) {
        self.property = property
        self.keyPath = keyPath
        self.map = map
        self.reverseMap = reverseMap
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

    /// A to-one relationship.
    public func addRelationshipMapping(_ mapping: EntityMapping, forProperty property: String, keyPath: String?) {
        relationships.append(Relationship(property: property, keyPath: keyPath, mapping: mapping))
    }

    /// A to-many relationship.
    public func addToManyRelationshipMapping(_ mapping: EntityMapping, forProperty property: String, keyPath: String?) {
        relationships.append(Relationship(property: property, keyPath: keyPath, mapping: mapping))
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
                                                   reverse: { value in try reverse.map { try $0(value) } ?? (try JSONValue(any: value ?? NSNull())) })
            }
            mapping.rules.append(ObjectMapping.Rule(index: index, property: attribute.property,
                                                    keyPath: attribute.keyPath.map(ObjectMapping.path), kind: .attribute(transformer)))
        }
        for relationship in relationships {
            guard let index = schema.index(of: relationship.property), schema.properties[index].kind == .object else {
                throw RealmError.invalidValue("EntityMapping(\(schema.className)): '\(relationship.property)' is not a link or list of objects")
            }
            mapping.rules.append(ObjectMapping.Rule(
                index: index, property: relationship.property, keyPath: relationship.keyPath.map(ObjectMapping.path),
                kind: .relationship(try relationship.mapping.compiled(&done), policy: relationship.assignmentPolicy, weak: relationship.weak)))
        }
        return mapping
    }
}

/// Hears about a deserializer's work, in FastEasyMapping's order: `willMapCollection`,
/// then `willMapObject` for each object as it is read, then `didMapObject` for each as it
/// is written, then `didMapCollection`.
public protocol DeserializerDelegate: AnyObject {
    func deserializer(_ deserializer: Deserializer, willMapObjectFromRepresentation representation: JSONValue, mapping: EntityMapping)
    func deserializer(_ deserializer: Deserializer, didMapObject object: Object, fromRepresentation representation: JSONValue, mapping: EntityMapping)
    func deserializer(_ deserializer: Deserializer, willMapCollectionFromRepresentation representation: JSONValue, mapping: EntityMapping)
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
    /// Hears about each object and collection.
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

    /// The object `representation` (`Data`, `JSONValue` or JSONSerialization's `Any`) maps to.
    @discardableResult
    public func object(fromRepresentation representation: Any, mapping: EntityMapping) throws -> Object {
        var compiledMappings: [ObjectIdentifier: ObjectMapping] = [:]
        let compiled = try mapping.compiled(&compiledMappings)
        var json = try json(representation)
        if let root = compiled.objectRoot {
            guard let inner = MappingEngine.value(in: json, at: root) else {
                throw JSONMappingError.unexpectedShape(path: "$", expected: "an object at \(root.joined(separator: "."))")
            }
            json = inner
        }
        delegate?.deserializer(self, willMapObjectFromRepresentation: json, mapping: mapping)
        var engine = MappingEngine(realm: realm, options: MappingOptions())
        let draft = try engine.collect(json, mapping: compiled, at: .root())
        let object = try inWrite { () throws -> Object in
            try engine.apply()
            guard let object = engine.object(for: draft) else {
                throw JSONMappingError.unexpectedShape(path: "$", expected: "an object that exists (a weak mapping names one that does not)")
            }
            return object
        }
        delegate?.deserializer(self, didMapObject: object, fromRepresentation: json, mapping: mapping)
        return object
    }

    /// The objects an array representation maps to, in one write.
    @discardableResult
    public func collection(fromRepresentation representation: Any, mapping: EntityMapping) throws -> [Object] {
        var compiledMappings: [ObjectIdentifier: ObjectMapping] = [:]
        let compiled = try mapping.compiled(&compiledMappings)
        var json = try json(representation)
        if let root = compiled.listRoot, let inner = MappingEngine.value(in: json, at: root) { json = inner }
        guard case .array(let elements) = json else { throw JSONMappingError.unexpectedShape(path: "$", expected: "an array") }
        delegate?.deserializer(self, willMapCollectionFromRepresentation: json, mapping: mapping)
        var engine = MappingEngine(realm: realm, options: MappingOptions())
        var drafts: [Draft] = []
        for (index, element) in elements.enumerated() {
            delegate?.deserializer(self, willMapObjectFromRepresentation: element, mapping: mapping)
            drafts.append(try engine.collect(element, mapping: compiled, at: .root(position: index)))
        }
        let objects = try inWrite {
            try engine.apply()
            return drafts.compactMap { engine.object(for: $0) }
        }
        for (object, element) in zip(objects, elements) {
            delegate?.deserializer(self, didMapObject: object, fromRepresentation: element, mapping: mapping)
        }
        delegate?.deserializer(self, didMapCollection: objects, fromRepresentation: json, mapping: mapping)
        return objects
    }

    /// Updates a managed object from a representation (its identity is kept).
    public func fill(object: Object, fromRepresentation representation: Any, mapping: EntityMapping) throws {
        guard let state = object._state, state.realm === realm else {
            throw RealmError.invalidObject("fill(object:) needs an object managed by this deserializer's realm")
        }
        var compiledMappings: [ObjectIdentifier: ObjectMapping] = [:]
        let compiled = try mapping.compiled(&compiledMappings)
        var json = try json(representation)
        if let root = compiled.objectRoot, let inner = MappingEngine.value(in: json, at: root) { json = inner }
        // The object's own identity decides which row is filled.
        if case .object(var members) = json, let index = compiled.identityIndex,
           let rule = compiled.rules.first(where: { $0.index == index }), let keyPath = rule.keyPath, keyPath.count == 1 {
            members[keyPath[0]] = try MappingEngine(realm: realm, options: MappingOptions())
                .jsonValue(state.field(index), property: compiled.info.schema.properties[index])
            json = .object(members)
        }
        var engine = MappingEngine(realm: realm, options: MappingOptions())
        _ = try engine.collect(json, mapping: compiled, at: .root())
        _ = try inWrite { try engine.apply() }
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
