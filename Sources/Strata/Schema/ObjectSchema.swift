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
    /// A link to an object of ``PropertySchema/objectClassName``.
    case object
    /// A ``ColumnCodable`` type, stored as its ``Value``.
    case column
}

/// One property of an object type.
public struct PropertySchema: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The property's name as declared (without the wrapper's underscore).
    public var name: String
    /// The kind of value.
    public var kind: PropertyKind
    /// Whether nil is allowed (for links, always true).
    public var isOptional: Bool
    /// Whether this is a `List`.
    public var isList: Bool
    /// For links and lists of objects, the linked type's name; for column types, the Swift type name.
    public var objectClassName: String?
    /// Whether this is the primary key.
    public var isPrimaryKey: Bool
    /// Whether equality queries on this property use a secondary index.
    public var isIndexed: Bool

    /// Creates a property description.
    public init(name: String, kind: PropertyKind, isOptional: Bool = false, isList: Bool = false,
                objectClassName: String? = nil, isPrimaryKey: Bool = false, isIndexed: Bool = false) {
        self.name = name
        self.kind = kind
        self.isOptional = isOptional
        self.isList = isList
        self.objectClassName = objectClassName
        self.isPrimaryKey = isPrimaryKey
        self.isIndexed = isIndexed
    }

    /// The type as a person reads it, such as `List<String>` or `Date?`.
    public var typeDescription: String {
        var base = kind == .object || kind == .column ? (objectClassName ?? kind.rawValue) : kind.rawValue
        if isList { base = "List<\(base)\(isOptional ? "?" : "")>" } else if isOptional { base += "?" }
        return base
    }

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
            && objectClassName == other.objectClassName
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

    /// Creates an object schema.
    public init(className: String, properties: [PropertySchema], tableNumber: UInt32 = 0) {
        self.className = className
        self.properties = properties
        self.tableNumber = tableNumber
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
}

/// Every object type of a store, with the version the app gave it.
public struct Schema: Codable, Sendable, Hashable {
    /// The object types, by class name.
    public var objectSchemas: [ObjectSchema]
    /// `Realm.Configuration.schemaVersion` when this schema was written.
    public var version: UInt64

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
    /// key, of a kind a key can have; no index on a list or a link; a class name on every
    /// link and custom column.
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
            guard type.properties.count <= StoreLayout.maxProperties else {
                throw SchemaError("\(name) has \(type.properties.count) properties; at most \(StoreLayout.maxProperties)")
            }
            var names = Set<String>()
            var keys = 0
            for property in type.properties {
                let path = "\(name).\(property.name)"
                guard !property.name.isEmpty else { throw SchemaError("\(name) has a property with an empty name") }
                guard names.insert(property.name).inserted else { throw SchemaError("\(name) has two properties named '\(property.name)'") }
                if property.isPrimaryKey {
                    keys += 1
                    guard keys == 1 else { throw SchemaError("\(name) has more than one primary key") }
                    guard !property.isList, !property.isOptional,
                          [.int, .int8, .int16, .int32, .int64, .string, .uuid].contains(property.kind) else {
                        throw SchemaError("\(path) cannot be a primary key: \(property.typeDescription)")
                    }
                }
                if property.isIndexed, property.isList || property.kind == .object {
                    throw SchemaError("\(path) cannot be indexed: \(property.typeDescription)")
                }
                if property.kind == .object || property.kind == .column, (property.objectClassName ?? "").isEmpty {
                    throw SchemaError("\(path) has no objectClassName (a \(property.kind.rawValue) needs one)")
                }
            }
        }
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
