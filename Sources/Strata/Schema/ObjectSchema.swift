// The schema: what a model class declares, and what a store remembers. It is stored in
// the store as JSON (table 1, key "schema"), so the `strata` tool and migrations can read
// rows without the app's classes.

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
