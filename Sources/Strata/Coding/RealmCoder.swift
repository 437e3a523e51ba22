// RealmCoder: JSON in and out through each model's class variables (realmCodableKeys,
// ignored attributes, raw JSON substrings, envelopes) — a front end of MappingEngine.

import Foundation

/// How JSON keys relate to property names for properties `realmCodableKeys` does not list.
public enum JSONKeyStrategy: Sendable {
    /// The key is the property name.
    case useDefaultKeys
    /// The key is the snake_case form of the name (`first_name` ↔ `firstName`).
    case convertFromSnakeCase

    func key(for property: String) -> String {
        switch self {
        case .useDefaultKeys: return property
        case .convertFromSnakeCase: return Self.snakeCase(property)
        }
    }

    /// `firstName` → `first_name`, `userID` → `user_id`.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        let characters = Array(name)
        for (index, character) in characters.enumerated() {
            if character.isUppercase {
                let previousIsLower = index > 0 && !characters[index - 1].isUppercase && characters[index - 1] != "_"
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if index > 0 && (previousIsLower || (nextIsLower && characters[index - 1].isUppercase)) { result.append("_") }
                result.append(contentsOf: character.lowercased())
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// Decodes REST JSON into objects committed to a realm, and encodes objects back:
///
/// ```swift
/// let coder = RealmCoder(realm: realm)
/// let user  = try coder.decode(User.self, from: jsonData)          // committed to the realm
/// let users = try coder.decodeArray(User.self, from: jsonData)     // one transaction for all
/// let data  = try coder.encode(user)
/// ```
///
/// Decoding an object whose primary key exists changes only the properties present in the
/// JSON (an incremental update). Decoding is atomic: on any error nothing is written.
public final class RealmCoder {
    /// The realm objects are decoded into.
    public let realm: Realm
    /// Parses and prints date properties; nil: ISO 8601.
    public let dateFormatter: DateFormatter?
    /// Keys of properties that `realmCodableKeys` does not list.
    public let keyStrategy: JSONKeyStrategy
    /// What JSON null does to a non-optional property.
    public let nullPolicy: NullPolicy
    /// What a value of the wrong type does.
    public let typeMismatchPolicy: TypeMismatchPolicy

    private var mappings: [ObjectIdentifier: ObjectMapping] = [:]

    /// A coder for `realm`; every option has a default.
    public init(realm: Realm, dateFormatter: DateFormatter? = nil, keyStrategy: JSONKeyStrategy = .useDefaultKeys,
                nullPolicy: NullPolicy = .error, typeMismatchPolicy: TypeMismatchPolicy = .error) {
        self.realm = realm
        self.dateFormatter = dateFormatter
        self.keyStrategy = keyStrategy
        self.nullPolicy = nullPolicy
        self.typeMismatchPolicy = typeMismatchPolicy
    }

    private var options: MappingOptions {
        MappingOptions(dateFormatter: dateFormatter, nullPolicy: nullPolicy, typeMismatchPolicy: typeMismatchPolicy)
    }

    /// The mapping the class variables of `type` describe.
    func mapping(for type: Object.Type) -> ObjectMapping {
        if let known = mappings[ObjectIdentifier(type)] { return known }
        let mapping = ObjectMapping(type: type)
        mappings[ObjectIdentifier(type)] = mapping
        let keys = type.realmCodableKeys
        let ignored = Set(type.realmCodableIgnoredAttributes)
        let raw = Set(type.realmCodableRawJsonSubstrings)
        for (index, property) in mapping.info.schema.properties.enumerated() where property.kind != .linkingObjects {
            let key = keys[property.name] ?? keyStrategy.key(for: property.name)
            let rule = ObjectMapping.Rule(index: index, property: property.name, keyPath: ObjectMapping.path(key), kind: .attribute(nil))
            if raw.contains(property.name) {
                rule.kind = .rawJSON
            } else if property.kind == .object || property.kind == .embedded, let target = property.objectClassName,
                      let targetType = realm.boundType(named: target)?.info.type {
                rule.kind = .relationship(self.mapping(for: targetType), policy: .assign, weak: false)
            }
            rule.encoded = !ignored.contains(property.name)
            mapping.rules.append(rule)
        }
        mapping.objectRoot = type.realmObjectEnvelope.map { [$0] }
        mapping.listRoot = type.realmListEnvelope.map { [$0] }
        return mapping
    }

    private func parse(_ data: Data) throws -> JSONValue {
        do {
            return try JSONValue(data: data)
        } catch let error as JSONError {
            throw JSONMappingError.invalidJSON(error)
        }
    }

    /// Runs `body` in the realm's open write, or in a new one it commits.
    private func inWrite<R>(_ body: () throws -> R) throws -> R {
        if realm.isInWriteTransaction { return try body() }
        return try realm.write(body)
    }

    /// Decodes one object (with or without its `realmObjectEnvelope`) and commits it.
    ///
    /// - Throws: ``JSONMappingError`` naming the path of the first problem (nothing is
    ///   written); ``RealmError``.
    public func decode<T: Object>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, from: try parse(data))
    }

    /// Decodes one object from a parsed value.
    public func decode<T: Object>(_ type: T.Type, from json: JSONValue) throws -> T {
        try realm.checkThread()
        let mapping = mapping(for: type)
        var body = json
        if let envelope = mapping.objectRoot, let inner = MappingEngine.value(in: json, at: envelope) { body = inner }
        guard case .object = body else { throw JSONMappingError.unexpectedShape(path: "$", expected: "an object of \(mapping.className)") }
        var engine = MappingEngine(realm: realm, options: options)
        let draft = try engine.collect(body, mapping: mapping, at: .root())
        return try inWrite {
            try engine.apply()
            return engine.object(for: draft) as! T
        }
    }

    /// Decodes an array (bare, or inside the `realmListEnvelope`) in one transaction.
    public func decodeArray<T: Object>(_ type: T.Type, from data: Data) throws -> [T] {
        try realm.checkThread()
        let mapping = mapping(for: type)
        guard (mapping.listRoot?.count ?? 1) == 1 else {
            // A dotted envelope: read the whole document, released once read into drafts.
            var (engine, drafts) = try collectArray(type, from: try parse(data))
            return try write(&engine, drafts, as: type)
        }
        // Each element is read into drafts as soon as it is parsed, then dropped: the whole
        // document never exists in memory. Nothing is written until all of it is read.
        var engine = MappingEngine(realm: realm, options: options)
        guard let drafts = try engine.collectList(from: data, envelope: mapping.listRoot?.first, mapping: mapping,
                                                  prefix: mapping.listRoot?.first ?? "", objectsOnly: true) else {
            throw Self.notAnArray(mapping)
        }
        return try write(&engine, drafts, as: type)
    }

    /// Decodes an array from a parsed value.
    public func decodeArray<T: Object>(_ type: T.Type, from json: JSONValue) throws -> [T] {
        try realm.checkThread()
        var (engine, drafts) = try collectArray(type, from: json)
        return try write(&engine, drafts, as: type)
    }

    private static func notAnArray(_ mapping: ObjectMapping) -> JSONMappingError {
        .unexpectedShape(path: "$", expected: "an array of \(mapping.className)" + (mapping.listRoot.map { " or an object with \"\($0[0])\"" } ?? ""))
    }

    private func collectArray<T: Object>(_ type: T.Type, from json: JSONValue) throws -> (MappingEngine, [Draft]) {
        let mapping = mapping(for: type)
        var body = json
        if let envelope = mapping.listRoot, let inner = MappingEngine.value(in: json, at: envelope) { body = inner }
        guard case .array(let elements) = body else { throw Self.notAnArray(mapping) }
        var engine = MappingEngine(realm: realm, options: options)
        let prefix = mapping.listRoot?.first ?? ""
        var drafts: [Draft] = []
        drafts.reserveCapacity(elements.count)
        engine.expectedCount = elements.count
        for (index, element) in elements.enumerated() {
            guard case .object = element else { throw JSONMappingError.unexpectedShape(path: "\(prefix)[\(index)]", expected: "an object") }
            drafts.append(try engine.collect(element, mapping: mapping, at: .root(prefix, position: index)))
        }
        return (engine, drafts)
    }

    private func write<T: Object>(_ engine: inout MappingEngine, _ drafts: [Draft], as type: T.Type) throws -> [T] {
        try inWrite {
            try engine.apply()
            return drafts.map { engine.object(for: $0) as! T }
        }
    }

    /// The JSON of one object (in its `realmObjectEnvelope` when `useEnvelope`).
    public func encode(_ object: Object, useEnvelope: Bool = false) throws -> Data {
        try encodeValue(object, useEnvelope: useEnvelope).data()
    }

    /// The JSON of one object, as a value.
    public func encodeValue(_ object: Object, useEnvelope: Bool = false) throws -> JSONValue {
        let mapping = mapping(for: type(of: object))
        let engine = MappingEngine(realm: realm, options: options)
        var visiting = Set<MappingEngine.Visit>()
        let json = try engine.encode(object, mapping: mapping, visiting: &visiting)
        if useEnvelope, let envelope = mapping.objectRoot { return .object([envelope[0]: json]) }
        return json
    }

    /// The JSON array of `objects` (inside the `realmListEnvelope` when `useEnvelope`).
    public func encodeArray<T: Object>(_ objects: some Sequence<T>, useEnvelope: Bool = false) throws -> Data {
        let mapping = mapping(for: T.self)
        let engine = MappingEngine(realm: realm, options: options)
        if !useEnvelope || mapping.listRoot == nil, let order = MappingEngine.flatEncodeOrder(mapping) {
            // Written object by object, member by member: no `JSONValue` tree, no dictionary.
            var writer = JSONWriter(pretty: false)
            try writer.writeArray(objects, depth: 0) { writer, object in
                var visiting = Set<MappingEngine.Visit>()
                try engine.write(object, order: order, mapping: mapping, to: &writer, depth: 1, visiting: &visiting)
            }
            return Data(writer.bytes)
        }
        var array: [JSONValue] = []
        for object in objects {
            var visiting = Set<MappingEngine.Visit>()
            array.append(try engine.encode(object, mapping: mapping, visiting: &visiting))
        }
        if useEnvelope, let envelope = mapping.listRoot { return try JSONValue.object([envelope[0]: .array(array)]).data() }
        return try JSONValue.array(array).data()
    }
}
