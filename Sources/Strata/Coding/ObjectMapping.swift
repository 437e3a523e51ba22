// ObjectMapping: the one description every JSON front end compiles to — which JSON key
// path feeds which property, through which transformer, and how related objects map.
// MappingEngine (decoding and encoding) only ever reads these.

import Foundation

/// How a JSON value becomes a property value and back (Realm+JSON's transformers,
/// EntityMapping's map/reverseMap).
public struct JSONValueTransformer: @unchecked Sendable {
    /// JSON → a value for the property (a Swift value of the property's type, a
    /// `JSONValue`, or nil for nil).
    public let forward: (JSONValue) throws -> Any?
    /// The property's value (a Swift value, nil for nil) → JSON.
    public let reverse: (Any?) throws -> JSONValue

    /// A transformer from two closures.
    public init(forward: @escaping (JSONValue) throws -> Any?, reverse: @escaping (Any?) throws -> JSONValue) {
        self.forward = forward
        self.reverse = reverse
    }
}

/// What happens to a relationship's current objects when JSON assigns new ones
/// (FastEasyMapping's assignment policies).
public enum AssignmentPolicy: Sendable, Hashable {
    /// Replace the link (to-many: the list) with the JSON's objects.
    case assign
    /// To-one: merge the JSON into the object already linked, if any.
    case objectMerge
    /// To-many: keep the current objects and add the JSON's ones not already there.
    case collectionMerge
    /// To-one: delete the object that was linked, then link the JSON's.
    case objectReplace
    /// To-many: delete the current objects that the JSON does not list, then assign.
    case collectionReplace
    /// Your own rule, as made by ``custom(_:)``.
    case customized(CustomAssignment)

    /// Your own rule (FastEasyMapping's custom `FEMAssignmentPolicy` block): given the objects
    /// related before (`old`), the ones the JSON maps to (`new`) and a context, return the
    /// objects to relate. To-one relationships pass and take zero or one object.
    ///
    /// ```swift
    /// phones.assignmentPolicy = .custom { old, new, context in
    ///     let kept = Set(new.map(\.primaryKeyValue))        // collectionReplace, by hand
    ///     for phone in old where !kept.contains(phone.primaryKeyValue) { try context.deleteRelationshipObject(phone) }
    ///     return new
    /// }
    /// ```
    ///
    /// The block runs inside the deserializer's write, once per object that the JSON gives
    /// this relationship (JSON null gives `new == []`), after the object's attributes are set.
    /// Returning an object this realm does not manage, of another type, or more than one
    /// object for a to-one relationship throws ``RealmError/invalidValue(_:)``.
    public static func custom(_ assign: @escaping CustomAssignment.Block) -> AssignmentPolicy {
        .customized(CustomAssignment(assign))
    }
}

/// A custom assignment rule (see ``AssignmentPolicy/custom(_:)``); equal only to itself.
public final class CustomAssignment: Hashable, Sendable {
    /// Old related objects, new ones, the context → the objects to relate.
    public typealias Block = @Sendable (_ old: [Object], _ new: [Object], _ context: RelationshipAssignmentContext) throws -> [Object]
    let block: Block

    init(_ block: @escaping Block) {
        self.block = block
    }

    /// The same rule.
    public static func == (a: CustomAssignment, b: CustomAssignment) -> Bool { a === b }
    /// Hashes the rule's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// What a custom assignment policy is given besides the old and new objects
/// (FastEasyMapping's `FEMRelationshipAssignmentContext`).
public final class RelationshipAssignmentContext {
    /// The realm being written (inside its write transaction).
    public let realm: Realm
    /// The object whose relationship is assigned, its attributes already set.
    public let destinationObject: Object
    /// The relationship's property name.
    public let property: String

    init(realm: Realm, destinationObject: Object, property: String) {
        self.realm = realm
        self.destinationObject = destinationObject
        self.property = property
    }

    /// Deletes a related object (an old one the new value drops), as FEM's
    /// `deleteRelationshipObject:` does.
    ///
    /// - Throws: ``RealmError`` when `object` is not managed by ``realm``.
    public func deleteRelationshipObject(_ object: Object) throws {
        guard object.realm === realm else {
            throw RealmError.invalidObject("RelationshipAssignmentContext.deleteRelationshipObject(_:) for \(destinationObject.objectSchema.className).\(property): the object is not managed by this realm")
        }
        try realm.delete(object)
    }
}

/// A compiled mapping of one object type.
final class ObjectMapping {
    enum Kind {
        case attribute(JSONValueTransformer?)
        /// A String property holding the JSON subtree as text.
        case rawJSON
        case relationship(ObjectMapping, policy: AssignmentPolicy, weak: Bool)
    }

    /// One property's rule (a class: walked for every object of a payload, never copied).
    final class Rule {
        /// The property's position and name in the type's schema.
        let index: Int
        let property: String
        /// JSON key path components; nil reads the representation itself (a relationship
        /// by primary key, or an attribute that is the value).
        let keyPath: [String]?
        var kind: Kind
        /// Written when encoding.
        var encoded = true
        /// How error messages name this rule's value: the dotted key path, or the property.
        let pathText: String

        init(index: Int, property: String, keyPath: [String]?, kind: Kind) {
            self.index = index
            self.property = property
            self.keyPath = keyPath
            self.kind = kind
            pathText = keyPath?.joined(separator: ".") ?? property
        }
    }

    let type: Object.Type
    let info: ObjectType
    var rules: [Rule] = []
    /// Rules used when encoding, when they differ from the decoding ones (Realm+JSON's
    /// outbound mapping); empty: `rules` serve both.
    var encodeRules: [Rule] = []
    /// Overrides the schema's primary key for uniqueness (EntityMapping's `primaryKey`).
    var primaryKeyProperty: String?
    /// Where the object or list sits in the JSON (envelopes, `rootPath`).
    var objectRoot: [String]?
    var listRoot: [String]?
    /// Called on the JSON object before mapping (Realm+JSON's `preprocessedJSON`).
    var preprocess: ((JSONValue) -> JSONValue)?

    init(type: Object.Type) {
        self.type = type
        info = ObjectType.info(for: type)
    }

    var className: String { info.schema.className }

    /// The schema position of the property used to find existing objects.
    var identityIndex: Int? {
        if let primaryKeyProperty { return info.schema.index(of: primaryKeyProperty) }
        return info.primaryKeyIndex
    }

    static func path(_ keyPath: String) -> [String] {
        keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }
}

extension JSONValue {
    /// How a value is named in error messages: `String "12"`, `Int 12`, `null`, `an object`.
    var shortDescription: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return "Bool \(b)"
        case .int(let i): return "Int \(i)"
        case .double(let d): return "Double \(d)"
        case .string(let s): return "String \"\(s.prefix(40))\""
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
