// The schema: what a model class declares, and what a store remembers. It is stored in
// the store as JSON (table 1, key "schema"), so the `strata` tool and migrations can read
// rows without the app's classes.

/// A schema that breaks a rule of ``Schema/validate()``: the reason names the class,
/// property or table number.
public struct SchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, such as `Node has table number 4294967295; at most 1048575`.
    public let reason: String

    init(_ reason: String) { self.reason = reason }

    /// The reason.
    public var description: String { reason }
}

/// The kind of value a property holds, before optionality and lists.
public enum PropertyKind: String, Codable, Sendable, Hashable {
    case bool, int, int8, int16, int32, int64, double, float, string, data, date, uuid, decimal
    /// ``AnyRealmValue``: each value carries its own type.
    case mixed
    /// A link to an object of ``PropertySchema/objectClassName``.
    case object
    /// A ``ColumnCodable`` type, stored as its ``Value``.
    case column
    /// An ``ObjectId``.
    case objectId
    /// An ``EmbeddedObject`` of ``PropertySchema/objectClassName``, stored inside the row.
    case embedded
    /// ``LinkingObjects``: the objects of ``PropertySchema/objectClassName`` whose
    /// ``PropertySchema/originProperty`` links here. Computed, never stored (its field is null).
    case linkingObjects
}

extension PropertyKind {
    /// Whether `value` fits the integer width this kind stores (any value for the other
    /// kinds): the one range rule of conversions from JSON and from Swift values.
    func fits(_ value: Int64) -> Bool {
        switch self {
        case .int8: Int8(exactly: value) != nil
        case .int16: Int16(exactly: value) != nil
        case .int32: Int32(exactly: value) != nil
        default: true
        }
    }
}

/// One property of an object type.
public struct PropertySchema: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The property's name as declared (without the wrapper's underscore).
    public var name: String
    /// The kind of value.
    public var kind: PropertyKind
    /// Whether nil is allowed (for links, always true).
    public var isOptional: Bool
    /// Whether this is a `List` (or a `MutableSet`, which is stored as a list of distinct
    /// elements: ``isSet`` is then true too).
    public var isList: Bool
    /// Whether this is a `MutableSet` (``isList`` is true as well).
    public var isSet: Bool
    /// Whether this is a `Map<String, …>`.
    public var isMap: Bool
    /// For ``PropertyKind/linkingObjects``, the property of ``objectClassName`` that links here.
    public var originProperty: String?
    /// For links and lists of objects, the linked type's name; for column types, the Swift type name.
    public var objectClassName: String?
    /// Whether this is the primary key.
    public var isPrimaryKey: Bool
    /// Whether equality queries on this property use a secondary index.
    public var isIndexed: Bool
    /// Whether this `String` property holds JSON text (the class lists it in
    /// `realmCodableRawJsonSubstrings`): stored so that tools without the class (`strata
    /// export`, `import`) write and read it as the JSON it holds, as RealmCoder does.
    public var isRawJSON: Bool

    /// Creates a property description.
    public init(name: String, kind: PropertyKind, isOptional: Bool = false, isList: Bool = false,
                objectClassName: String? = nil, isPrimaryKey: Bool = false, isIndexed: Bool = false,
                isSet: Bool = false, isMap: Bool = false, originProperty: String? = nil, isRawJSON: Bool = false) {
        self.name = name
        self.kind = kind
        self.isOptional = isOptional
        self.isList = isList || isSet
        self.isSet = isSet
        self.isMap = isMap
        self.originProperty = originProperty
        self.objectClassName = objectClassName
        self.isPrimaryKey = isPrimaryKey
        self.isIndexed = isIndexed
        self.isRawJSON = isRawJSON
    }

    private enum CodingKeys: String, CodingKey {
        case name, kind, isOptional, isList, isSet, isMap, originProperty, objectClassName, isPrimaryKey, isIndexed, isRawJSON
    }

    /// Decodes a stored description; the keys added with sets, maps, linking objects and
    /// raw JSON may be absent (schemas written before them).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        kind = try container.decode(PropertyKind.self, forKey: .kind)
        isOptional = try container.decode(Bool.self, forKey: .isOptional)
        isList = try container.decode(Bool.self, forKey: .isList)
        isSet = try container.decodeIfPresent(Bool.self, forKey: .isSet) ?? false
        isMap = try container.decodeIfPresent(Bool.self, forKey: .isMap) ?? false
        originProperty = try container.decodeIfPresent(String.self, forKey: .originProperty)
        objectClassName = try container.decodeIfPresent(String.self, forKey: .objectClassName)
        isPrimaryKey = try container.decode(Bool.self, forKey: .isPrimaryKey)
        isIndexed = try container.decode(Bool.self, forKey: .isIndexed)
        isRawJSON = try container.decodeIfPresent(Bool.self, forKey: .isRawJSON) ?? false
    }

    /// Encodes the description; the newer keys only when set, so schemas without sets,
    /// maps, linking objects or raw JSON are stored exactly as before.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(kind, forKey: .kind)
        try container.encode(isOptional, forKey: .isOptional)
        try container.encode(isList, forKey: .isList)
        if isSet { try container.encode(isSet, forKey: .isSet) }
        if isMap { try container.encode(isMap, forKey: .isMap) }
        try container.encodeIfPresent(originProperty, forKey: .originProperty)
        try container.encodeIfPresent(objectClassName, forKey: .objectClassName)
        try container.encode(isPrimaryKey, forKey: .isPrimaryKey)
        try container.encode(isIndexed, forKey: .isIndexed)
        if isRawJSON { try container.encode(isRawJSON, forKey: .isRawJSON) }
    }

    /// What is wrong with the combination of kind and flags, or nil: a class name where the
    /// kind needs one; a set is a list; a map is no list; linking objects are neither
    /// optional nor a collection and name their origin property; sets hold neither
    /// embedded objects nor custom columns (set membership compares stored values).
    func shapeProblem() -> String? {
        if namesClass, (objectClassName ?? "").isEmpty { return "has no objectClassName (a \(kind.rawValue) needs one)" }
        if isSet && !isList { return "is a set that is not stored as a list (isSet needs isList)" }
        if isRawJSON, kind != .string || isList || isMap { return "holds raw JSON but is \(typeDescription), not a String" }
        if isMap && isList { return "cannot be both a map and a list" }
        if isMap, kind == .embedded { return "cannot be a map of embedded objects (not supported yet: use a List of them, or a map of links)" }
        if isSet, kind == .embedded || kind == .column {
            return "cannot be a set of \(kind == .embedded ? "embedded objects" : "a custom column type"): a set compares its elements by their stored values"
        }
        if kind == .linkingObjects {
            if isList || isMap || isOptional { return "is linking objects, which cannot be optional, a list, a set or a map" }
            if (originProperty ?? "").isEmpty { return "is linking objects without an origin property" }
        } else if originProperty != nil {
            return "names an origin property but is not linking objects"
        }
        return nil
    }

    /// Whether the property's value names another class (links, embedded objects, linking
    /// objects) or a custom column type.
    var namesClass: Bool { [.object, .column, .embedded, .linkingObjects].contains(kind) }

    /// The type as a person reads it, such as `List<String>`, `Map<String, Int?>` or `Date?`.
    public var typeDescription: String {
        var base = namesClass ? (objectClassName ?? kind.rawValue) : (kind == .objectId ? "ObjectId" : kind == .mixed ? "AnyRealmValue" : kind.rawValue)
        let element = base + (isOptional ? "?" : "")
        if kind == .linkingObjects {
            base = "LinkingObjects<\(base)>" + (originProperty.map { "(\($0))" } ?? "")
        } else if isSet {
            base = "MutableSet<\(element)>"
        } else if isList {
            base = "List<\(element)>"
        } else if isMap {
            base = "Map<String, \(element)>"
        } else if isOptional {
            base += "?"
        }
        return base
    }

    /// The stored kind (Realm Swift's name for ``kind``).
    public var type: PropertyKind { kind }
    /// Whether this is the primary key (Realm Swift's name for ``isPrimaryKey``).
    public var isPrimary: Bool { isPrimaryKey }

    /// `name: type` plus its flags.
    public var description: String {
        var text = "\(name): \(typeDescription)"
        if isPrimaryKey { text += " (primary key)" }
        if isIndexed { text += " (indexed)" }
        return text
    }

    /// Whether two descriptions store the same thing (the name aside).
    func sameType(as other: PropertySchema) -> Bool {
        kind == other.kind && isOptional == other.isOptional && isList == other.isList
            && isSet == other.isSet && isMap == other.isMap
            && objectClassName == other.objectClassName && originProperty == other.originProperty
    }
}

/// One object type: its name, properties in storage order, and primary key.
public struct ObjectSchema: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The class name (unqualified).
    public var className: String
    /// The properties, in the order their values are stored in a row.
    public var properties: [PropertySchema]
    /// The number that names this type's tables in the store; stable across migrations.
    public var tableNumber: UInt32
    /// Whether this is an ``EmbeddedObject`` type: its objects live inside their parent's
    /// row, with no key and no table of their own.
    public var isEmbedded: Bool

    /// Creates an object schema.
    public init(className: String, properties: [PropertySchema], tableNumber: UInt32 = 0, isEmbedded: Bool = false) {
        self.className = className
        self.properties = properties
        self.tableNumber = tableNumber
        self.isEmbedded = isEmbedded
    }

    private enum CodingKeys: String, CodingKey {
        case className, properties, tableNumber, isEmbedded
    }

    /// Decodes a stored type (`isEmbedded` may be absent: schemas written before it).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        className = try container.decode(String.self, forKey: .className)
        properties = try container.decode([PropertySchema].self, forKey: .properties)
        tableNumber = try container.decode(UInt32.self, forKey: .tableNumber)
        isEmbedded = try container.decodeIfPresent(Bool.self, forKey: .isEmbedded) ?? false
    }

    /// Encodes the type; `isEmbedded` only when true, so other types are stored as before.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(className, forKey: .className)
        try container.encode(properties, forKey: .properties)
        try container.encode(tableNumber, forKey: .tableNumber)
        if isEmbedded { try container.encode(isEmbedded, forKey: .isEmbedded) }
    }

    /// The primary-key property, if the type declares one (otherwise objects get a hidden id).
    public var primaryKeyProperty: PropertySchema? { properties.first(where: \.isPrimaryKey) }

    /// The position of the property called `name`.
    public func index(of name: String) -> Int? { properties.firstIndex(where: { $0.name == name }) }

    /// The property called `name`.
    public subscript(name: String) -> PropertySchema? { index(of: name).map { properties[$0] } }

    /// `ClassName { properties }`.
    public var description: String {
        "\(className) { " + properties.map(\.description).joined(separator: ", ") + " }"
    }

    /// What is wrong with this type's own properties, or nil (see ``Schema/validate()``).
    func propertiesProblem() -> String? {
        let name = className
        guard properties.count <= StoreLayout.maxProperties else {
            return "\(name) has \(properties.count) properties; at most \(StoreLayout.maxProperties)"
        }
        var names = Set<String>()
        var keys = 0
        for property in properties {
            let path = "\(name).\(property.name)"
            guard !property.name.isEmpty else { return "\(name) has a property with an empty name" }
            guard names.insert(property.name).inserted else { return "\(name) has two properties named '\(property.name)'" }
            if let problem = property.shapeProblem() { return "\(path) \(problem)" }
            if property.isPrimaryKey {
                keys += 1
                guard keys == 1 else { return "\(name) has more than one primary key" }
                guard !property.isList, !property.isMap, Schema.primaryKeyKinds.contains(property.kind) else {
                    return "\(path) cannot be a primary key: \(property.typeDescription)"
                }
            }
            if property.isIndexed, property.isList || property.isMap || [.object, .embedded, .linkingObjects, .mixed].contains(property.kind) {
                return "\(path) cannot be indexed: \(property.typeDescription)"
            }
        }
        return nil
    }
}

/// Every object type of a store, with the version the app gave it.
public struct Schema: Codable, Sendable, Hashable {
    /// The object types, by class name.
    public var objectSchemas: [ObjectSchema]
    /// `Realm.Configuration.schemaVersion` when this schema was written.
    public var version: UInt64

    /// The object types (Realm Swift's name for ``objectSchemas``).
    public var objectSchema: [ObjectSchema] { objectSchemas }

    /// Creates a schema.
    public init(objectSchemas: [ObjectSchema], version: UInt64) {
        self.objectSchemas = objectSchemas
        self.version = version
    }

    private enum CodingKeys: String, CodingKey {
        case objectSchemas, version
    }

    /// Decodes a schema, as stored in a store, and checks it with ``validate()``: a stored
    /// schema names tables and rows, so a damaged or hostile one is refused whole.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        objectSchemas = try container.decode([ObjectSchema].self, forKey: .objectSchemas)
        version = try container.decode(UInt64.self, forKey: .version)
        try validate()
    }

    /// What every stored schema must satisfy before its table numbers and property
    /// positions are used: unique, non-empty class names; unique table numbers up to
    /// 1,048,575; at most 254 properties with unique, non-empty names; at most one primary
    /// key, of a kind a key can have; no index on a collection, a link or an embedded
    /// object; a class name on every link, embedded object, linking objects and custom
    /// column. Between types: links name top-level types of the schema and embedded
    /// properties embedded types; embedded types have no primary key, declare no linking
    /// objects and do not contain themselves; linking objects read a link, list or set of
    /// links to their type.
    ///
    /// - Throws: ``SchemaError`` naming the class, property or number at fault.
    public func validate() throws {
        var classes = Set<String>()
        var tables: [UInt32: String] = [:]
        for type in objectSchemas {
            let name = type.className
            guard !name.isEmpty else { throw SchemaError("a class has an empty name") }
            guard classes.insert(name).inserted else { throw SchemaError("two classes are named '\(name)'") }
            guard type.tableNumber <= StoreLayout.maxStoredTableNumber else {
                throw SchemaError("\(name) has table number \(type.tableNumber); at most \(StoreLayout.maxStoredTableNumber)")
            }
            if let other = tables.updateValue(name, forKey: type.tableNumber) {
                throw SchemaError("\(other) and \(name) share table number \(type.tableNumber)")
            }
            if let problem = type.propertiesProblem() { throw SchemaError(problem) }
        }
        if let problem = relationsProblem() { throw SchemaError(problem) }
    }

    /// The kinds a primary key can have.
    static let primaryKeyKinds: Set<PropertyKind> = [.int, .int8, .int16, .int32, .int64, .string, .uuid, .objectId]

    /// What is wrong between the types, or nil: every link names a top-level class of the
    /// schema, every embedded property an embedded class; linking objects name a top-level
    /// class whose origin property is a link (or a list or set of links) to the declaring
    /// type, and are not declared on embedded types; embedded types have no primary key
    /// and do not contain themselves (a row nests them, so they are a tree).
    func relationsProblem() -> String? {
        let types = Dictionary(objectSchemas.map { ($0.className, $0) }, uniquingKeysWith: { first, _ in first })
        for type in objectSchemas {
            if type.isEmbedded, let key = type.primaryKeyProperty {
                return "\(type.className).\(key.name): an embedded object type cannot have a primary key"
            }
            for property in type.properties {
                let path = "\(type.className).\(property.name)"
                switch property.kind {
                case .object:
                    guard let target = property.objectClassName.flatMap({ types[$0] }) else {
                        return "\(path) links to '\(property.objectClassName ?? "")', which is not in the schema"
                    }
                    if target.isEmbedded { return "\(path) links to \(target.className), an embedded object type: declare it as an embedded property" }
                case .embedded:
                    guard let target = property.objectClassName.flatMap({ types[$0] }), target.isEmbedded else {
                        return "\(path) holds an embedded '\(property.objectClassName ?? "")', which is not an embedded object type of the schema"
                    }
                case .linkingObjects where type.isEmbedded:
                    // An embedded object is linked only by the property that holds it: its parent.
                    guard let origin = property.objectClassName.flatMap({ types[$0] }),
                          let holder = property.originProperty.flatMap({ origin[$0] }),
                          holder.kind == .embedded, holder.objectClassName == type.className else {
                        return "\(path): \(property.objectClassName ?? "")\(property.originProperty.map { "." + $0 } ?? "") is not a property holding \(type.className) (an embedded object's linking objects are its parent)"
                    }
                case .linkingObjects:
                    guard let origin = property.objectClassName.flatMap({ types[$0] }), !origin.isEmbedded else {
                        return "\(path) reads links from '\(property.objectClassName ?? "")', which is not a top-level type of the schema"
                    }
                    guard let link = property.originProperty.flatMap({ origin[$0] }), link.kind == .object, !link.isMap,
                          link.objectClassName == type.className else {
                        return "\(path): \(origin.className).\(property.originProperty ?? "") is not a link, list or set of links to \(type.className)"
                    }
                default:
                    continue
                }
            }
        }
        // An embedded type reachable from itself would nest without end.
        for type in objectSchemas where type.isEmbedded {
            var seen: Set<String> = [], queue = [type.className]
            while let next = queue.popLast() {
                for property in types[next]?.properties ?? [] where property.kind == .embedded {
                    guard let target = property.objectClassName else { continue }
                    if target == type.className { return "\(type.className) contains itself (through \(next).\(property.name)); embedded objects form a tree" }
                    if seen.insert(target).inserted { queue.append(target) }
                }
            }
        }
        return nil
    }

    /// The type called `className`.
    public subscript(className: String) -> ObjectSchema? {
        objectSchemas.first(where: { $0.className == className })
    }

    /// What changed from `old` to `self`, one line per difference, in a stable order. Types
    /// only in `old` are not differences: a store may hold types an app does not use.
    public func differences(from old: Schema) -> [String] {
        var lines: [String] = []
        for type in objectSchemas.sorted(by: { $0.className < $1.className }) {
            guard let before = old[type.className] else {
                lines.append("Class '\(type.className)' has been added.")
                continue
            }
            for property in type.properties {
                guard let previous = before[property.name] else {
                    lines.append("Property '\(type.className).\(property.name)' has been added.")
                    continue
                }
                if !property.sameType(as: previous) {
                    lines.append("Property '\(type.className).\(property.name)' has been changed from '\(previous.typeDescription)' to '\(property.typeDescription)'.")
                }
                if property.isPrimaryKey != previous.isPrimaryKey {
                    lines.append(property.isPrimaryKey
                        ? "Primary key property '\(type.className).\(property.name)' has been added."
                        : "Primary key property '\(type.className).\(property.name)' has been removed.")
                }
                if property.isIndexed != previous.isIndexed {
                    lines.append(property.isIndexed
                        ? "Property '\(type.className).\(property.name)' has been made indexed."
                        : "Property '\(type.className).\(property.name)' has been made unindexed.")
                }
            }
            for property in before.properties where type[property.name] == nil {
                lines.append("Property '\(type.className).\(property.name)' has been removed.")
            }
        }
        return lines
    }
}

extension ObjectSchema {
    /// A value given for a whole object (`create(_:value:)`, `Object(value:)`) as values by
    /// property name: a dictionary, an array in declaration order, or an object; every name
    /// checked against the schema.
    func namedValues(_ value: Any) throws -> [String: Any?] {
        var values: [String: Any?] = [:]
        switch value {
        case let dictionary as [String: Any?]: values = dictionary
        case let dictionary as [String: Any]: values = dictionary.mapValues { $0 }
        case let array as [Any?]:
            guard array.count <= properties.count else {
                throw RealmError.invalidValue("\(className) has \(properties.count) properties; the array has \(array.count) values")
            }
            for (index, item) in array.enumerated() { values[properties[index].name] = item }
        case let object as Object:
            for property in properties { values[property.name] = object[property.name] }
        default:
            throw RealmError.invalidValue("\(className): expected a dictionary, an array or an object, got \(Swift.type(of: value))")
        }
        for name in values.keys where index(of: name) == nil {
            throw RealmError.unknownProperty(type: className, property: name)
        }
        return values
    }
}
