// The Realm+JSON front end: mapping dictionaries with dotted key paths on the model,
// transformers, and createOrUpdate / jsonDictionary — compiled to the same ObjectMapping
// as RealmCoder and EntityMapping.

import Foundation

extension JSONValueTransformer {
    /// JSON strings to values and back: `.mapping(["free": Kind.free, "paid": .paid])`.
    public static func mapping(_ table: [String: Any]) -> JSONValueTransformer {
        JSONValueTransformer(forward: { json in
            guard case .string(let key) = json else { return json == .null ? nil : json }
            guard let value = table[key] else {
                throw JSONMappingError.typeMismatch(path: "", expected: "one of \(table.keys.sorted())", found: json.shortDescription)
            }
            return value
        }, reverse: { value in
            guard let value else { return .null }
            let field = (value as? any _PersistableValue).flatMap { try? $0._field(in: nil) }
            for (key, candidate) in table {
                let candidateField = (candidate as? any _PersistableValue).flatMap { try? $0._field(in: nil) }
                if let field, field == candidateField { return .string(key) }
                if "\(candidate)" == "\(value)" { return .string(key) }
            }
            return .null
        })
    }

    /// Dates as text in `format` (POSIX locale, UTC unless the format has a zone).
    public static func date(format: String) -> JSONValueTransformer {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.dateFormat = format
        return JSONValueTransformer(forward: { json in
            guard case .string(let text) = json else { return json == .null ? nil : json }
            guard let date = formatter.date(from: text) else {
                throw JSONMappingError.typeMismatch(path: "", expected: "a date like \(format)", found: json.shortDescription)
            }
            return date
        }, reverse: { value in
            (value as? Date).map { .string(formatter.string(from: $0)) } ?? .null
        })
    }

    /// ISO 8601 dates (fractional seconds optional).
    public static let iso8601 = JSONValueTransformer(forward: { json in
        guard case .string(let text) = json else { return json == .null ? nil : json }
        guard let date = MappingEngine.iso8601(text) else {
            throw JSONMappingError.typeMismatch(path: "", expected: "an ISO 8601 date", found: json.shortDescription)
        }
        return date
    }, reverse: { value in
        (value as? Date).map { .string(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format($0)) } ?? .null
    })

    /// Dates as seconds since 1970.
    public static let epochSeconds = JSONValueTransformer(forward: { json in
        switch json {
        case .int(let i): return Date(timeIntervalSince1970: Double(i))
        case .double(let d): return Date(timeIntervalSince1970: d)
        default: return json == .null ? nil : json
        }
    }, reverse: { value in
        (value as? Date).map { .double($0.timeIntervalSince1970) } ?? .null
    })

    /// Dates as milliseconds since 1970.
    public static let epochMilliseconds = JSONValueTransformer(forward: { json in
        switch json {
        case .int(let i): return Date(timeIntervalSince1970: Double(i) / 1000)
        case .double(let d): return Date(timeIntervalSince1970: d / 1000)
        default: return json == .null ? nil : json
        }
    }, reverse: { value in
        (value as? Date).map { .int(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null
    })

    /// JSON null becomes "" (for non-optional strings).
    public static let nonNullString = JSONValueTransformer(forward: { json in
        json == .null ? "" : json
    }, reverse: { value in
        (value as? String).map(JSONValue.string) ?? .null
    })

    /// A primary key in the JSON becomes a link to that existing object of `type`.
    public static func primaryKey(_ type: Object.Type) -> JSONValueTransformer {
        let keyKind = ObjectType.info(for: type).schema.primaryKeyProperty?.kind
        return JSONValueTransformer(forward: { json in
            switch json {
            case .int(let i): return PrimaryKeyValue.int(i)
            case .string(let s) where keyKind == .objectId: return (try? ObjectId(string: s)).map(PrimaryKeyValue.objectId) ?? json
            case .string(let s) where keyKind == .uuid: return UUID(uuidString: s).map(PrimaryKeyValue.uuid) ?? json
            case .string(let s): return PrimaryKeyValue.string(s)
            case .null: return nil
            default: return json
            }
        }, reverse: { value in
            guard let object = value as? Object, object._state != nil else { return .null }
            switch object.primaryKeyValue {
            case .int(let i): return .int(i)
            case .string(let s): return .string(s)
            case .uuid(let u): return .string(u.uuidString)
            case .objectId(let id): return .string(id.stringValue)
            case .null: return .null
            }
        })
    }
}

extension Object {
    /// The Realm+JSON mapping of `type` (inbound and outbound rules, transformers).
    static func realmJSONMapping(_ type: Object.Type, outbound: [String: String]? = nil, realm: Realm?,
                                 visited: inout [ObjectIdentifier: ObjectMapping]) -> ObjectMapping {
        if outbound == nil, let known = visited[ObjectIdentifier(type)] { return known }
        let mapping = ObjectMapping(type: type)
        if outbound == nil { visited[ObjectIdentifier(type)] = mapping }
        let schema = mapping.info.schema
        let inbound = type.jsonInboundMapping
        let outboundMap = outbound ?? type.jsonOutboundMapping
        // Property → inbound key path, and property → outbound key path.
        var inPaths: [String: String] = [:]
        if inbound.isEmpty {
            for property in schema.properties { inPaths[property.name] = JSONKeyStrategy.snakeCase(property.name) }
        } else {
            for (path, property) in inbound { inPaths[property] = path }
        }
        var outPaths: [String: String] = [:]
        if outboundMap.isEmpty {
            for property in schema.properties { outPaths[property.name] = JSONKeyStrategy.snakeCase(property.name) }
        } else {
            outPaths = outboundMap
        }
        for (index, property) in schema.properties.enumerated() where property.kind != .linkingObjects {
            let inPath = inPaths[property.name], outPath = outPaths[property.name]
            guard inPath != nil || outPath != nil else { continue }
            let transformer = type.jsonTransformer(forProperty: property.name)
            var kind: ObjectMapping.Kind = .attribute(transformer)
            if transformer == nil, property.kind == .object || property.kind == .embedded, let target = property.objectClassName,
               let targetType = realm?.boundType(named: target)?.info.type ?? mapping.info.objectTypes[index] {
                kind = .relationship(realmJSONMapping(targetType, realm: realm, visited: &visited), policy: .assign, weak: false)
            }
            // Decoding reads the inbound path; encoding writes the outbound one. A property in
            // only one mapping gets a rule for that direction only.
            if let inPath {
                let rule = ObjectMapping.Rule(index: index, property: property.name, keyPath: ObjectMapping.path(inPath), kind: kind)
                rule.encoded = false
                mapping.rules.append(rule)
            }
            if let outPath {
                mapping.encodeRules.append(ObjectMapping.Rule(index: index, property: property.name, keyPath: ObjectMapping.path(outPath), kind: kind))
            }
        }
        mapping.preprocess = { json in
            guard case .object = json, let dictionary = json.anyValue as? [String: Any],
                  let processed = try? JSONValue(any: type.preprocessedJSON(dictionary)) else { return json }
            return processed
        }
        return mapping
    }

    private static func jsonValue(from representation: Any) throws -> JSONValue {
        if let data = representation as? Data {
            do { return try JSONValue(data: data) } catch let error as JSONError { throw JSONMappingError.invalidJSON(error) }
        }
        return try JSONValue(any: representation)
    }

    /// Creates or updates (by primary key) the objects of a JSON array (`Data` or `[Any]`),
    /// inside the realm's open write (or a write of its own). Atomic: on error nothing is kept.
    @discardableResult
    public static func createOrUpdate(in realm: Realm, withJSONArray array: Any) throws -> [Object] {
        var visited: [ObjectIdentifier: ObjectMapping] = [:]
        let mapping = realmJSONMapping(self, realm: realm, visited: &visited)
        var engine = MappingEngine(realm: realm, options: MappingOptions())
        let notAnArray = JSONMappingError.unexpectedShape(path: "$", expected: "an array of \(className)")
        var drafts: [Draft] = []
        if let data = array as? Data {
            // JSON text: read element by element, as RealmCoder does.
            guard let roots = try engine.collectList(from: data, envelope: nil, mapping: mapping, prefix: "", objectsOnly: false) else {
                throw notAnArray
            }
            drafts = roots
        } else {
            guard case .array(let elements) = try jsonValue(from: array) else { throw notAnArray }
            for (index, element) in elements.enumerated() {
                drafts.append(try engine.collect(element, mapping: mapping, at: .root(position: index)))
            }
        }
        let apply = { () throws -> [Object] in
            try engine.apply()
            return drafts.compactMap { engine.object(for: $0) }
        }
        return realm.isInWriteTransaction ? try apply() : try realm.write(apply)
    }

    /// Creates or updates (by primary key) the object of a JSON dictionary (`Data` or `[String: Any]`).
    @discardableResult
    public static func createOrUpdate(in realm: Realm, withJSONDictionary dictionary: Any) throws -> Self {
        let json = try jsonValue(from: dictionary)
        guard case .object = json else { throw JSONMappingError.unexpectedShape(path: "$", expected: "an object of \(className)") }
        var visited: [ObjectIdentifier: ObjectMapping] = [:]
        let mapping = realmJSONMapping(self, realm: realm, visited: &visited)
        var engine = MappingEngine(realm: realm, options: MappingOptions())
        let draft = try engine.collect(json, mapping: mapping, at: .root())
        let apply = { () throws -> Self in
            try engine.apply()
            return engine.object(for: draft) as! Self
        }
        return realm.isInWriteTransaction ? try apply() : try realm.write(apply)
    }

    /// The object with this primary key in `realm`, or nil.
    public static func object(in realm: Realm, withPrimaryKeyValue key: Any) -> Self? {
        guard let value = PrimaryKeyValue(any: key) else { return nil }
        return realm.object(ofType: self, forPrimaryKeyValue: value)
    }

    /// The object as a JSON dictionary, through `jsonOutboundMappingForInstance()`.
    public func jsonDictionary() -> [String: Any] {
        var visited: [ObjectIdentifier: ObjectMapping] = [:]
        let mapping = Self.realmJSONMapping(type(of: self), outbound: jsonOutboundMappingForInstance(), realm: realm, visited: &visited)
        mapping.rules = mapping.encodeRules
        let engine = MappingEngine(realm: realm, options: MappingOptions())
        var visiting = Set<MappingEngine.Visit>()
        let json = (try? engine.encode(self, mapping: mapping, visiting: &visiting)) ?? .object([:])
        return json.anyValue as? [String: Any] ?? [:]
    }

    /// An unmanaged object from a JSON dictionary (`Data` or `[String: Any]`); links are
    /// built as unmanaged objects too.
    public convenience init(jsonDictionary: Any) throws {
        self.init()
        let json = try Self.jsonValue(from: jsonDictionary)
        var visited: [ObjectIdentifier: ObjectMapping] = [:]
        let mapping = Self.realmJSONMapping(type(of: self), realm: nil, visited: &visited)
        try fill(from: json, mapping: mapping, path: "")
    }

    /// Sets this unmanaged object's properties from JSON under `mapping`.
    func fill(from json: JSONValue, mapping: ObjectMapping, path: String) throws {
        let json = mapping.preprocess?(json) ?? json
        for rule in mapping.rules {
            let value: JSONValue
            if let keyPath = rule.keyPath {
                guard let found = MappingEngine.value(in: json, at: keyPath) else { continue }
                value = found
            } else {
                value = json
            }
            let property = mapping.info.schema.properties[rule.index]
            let location = path.isEmpty ? rule.property : path + "." + rule.property
            switch rule.kind {
            case .attribute(let transformer):
                var converted: Any? = value.anyValue
                if let transformer { converted = try transformer.forward(value) }
                if converted is NSNull { converted = nil }
                if let json = converted as? JSONValue { converted = json.anyValue }
                if property.kind == .date, let text = converted as? String { converted = MappingEngine.iso8601(text) }
                do {
                    try setDynamicValue(converted, index: rule.index)
                } catch {
                    throw JSONMappingError.typeMismatch(path: location, expected: MappingEngine.expectedName(property), found: value.shortDescription)
                }
            case .rawJSON:
                try setDynamicValue(try MappingEngine.rawJSONText(value), index: rule.index)
            case .relationship(let child, _, _):
                func make(_ element: JSONValue, _ at: String) throws -> Object {
                    let object = child.type.init()
                    try object.fill(from: element, mapping: child, path: at)
                    return object
                }
                if property.isList, case .array(let elements) = value {
                    try setDynamicValue(try elements.enumerated().map { try make($1, "\(location)[\($0)]") }, index: rule.index)
                } else if case .object = value {
                    try setDynamicValue(try make(value, location), index: rule.index)
                }
            }
        }
    }
}

extension Object {
    /// Runs `block` in a write transaction of the object's realm (Realm+JSON's
    /// `performInTransaction:`), or inside the write already open; for an unmanaged object,
    /// just runs it.
    ///
    /// ```swift
    /// let edited = episode.shallowCopy()
    /// edited.title = "New title"
    /// episode.performInTransaction { episode.mergeProperties(from: edited) }
    /// ```
    ///
    /// - Returns: nil when the block ran and its write committed; otherwise the error
    ///   (thrown by `block`, or the realm's: nothing of the write is kept). Ported code
    ///   that ignores the result keeps compiling.
    @discardableResult
    public func performInTransaction(_ block: () throws -> Void) -> (any Error)? {
        do {
            guard let realm = _state?.realm, !realm.isInWriteTransaction else {
                try block()
                return nil
            }
            try realm.write(block)
            return nil
        } catch {
            return error
        }
    }
}
