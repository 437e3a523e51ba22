// Migration: moves every object from the stored schema to the declared one when
// `schemaVersion` is raised. Objects are loaded, handed to the migration block as
// old/new pairs, and written back in one engine transaction: a failed migration leaves
// the store as it was.

import Foundation

/// One object during a migration: read and write its properties by name.
///
/// Old objects are read-only; new objects start with the old values of properties whose
/// name and type did not change, and the declared initial value for the rest.
public final class MigrationObject: CustomStringConvertible {
    /// The object's type name.
    public let className: String
    fileprivate var values: [String: FieldValue]
    fileprivate let schema: ObjectSchema
    fileprivate let isOld: Bool
    fileprivate unowned let migration: Migration
    /// Stable identity of the record: the old key, or a fresh one for created objects.
    fileprivate let identity: [UInt8]
    fileprivate var isDeleted = false

    fileprivate init(className: String, values: [String: FieldValue], schema: ObjectSchema, isOld: Bool, migration: Migration, identity: [UInt8]) {
        self.className = className
        self.values = values
        self.schema = schema
        self.isOld = isOld
        self.migration = migration
        self.identity = identity
    }

    /// The property's value as a plain Swift value; links read as `MigrationObject`, lists as arrays.
    public subscript(key: String) -> Any? {
        get {
            guard let field = values[key], let property = schema[key] else { return nil }
            return migration.plainValue(field, property: property, old: isOld)
        }
        set {
            precondition(!isOld, "The old object of a migration is read-only")
            guard let property = schema[key] else {
                preconditionFailure("\(className) has no property '\(key)' in the new schema")
            }
            do {
                values[key] = try migration.field(for: newValue, property: property, context: "\(className).\(key)")
            } catch {
                preconditionFailure("\(error)")
            }
        }
    }

    /// `ClassName { property = value; … }`.
    public var description: String {
        "\(className) { " + schema.properties.map { "\($0.name) = \(values[$0.name].map { "\($0)" } ?? "nil")" }.joined(separator: "; ") + " }"
    }
}

/// What a migration block receives: the old and new schemas and the operations that move data.
///
/// ```swift
/// config.migrationBlock = { migration, oldSchemaVersion in
///     migration.enumerateObjects(ofType: "User") { old, new in new?["rank"] = 0 }
///     migration.renameProperty(onType: "User", from: "name", to: "username")
/// }
/// ```
public final class Migration {
    /// The schema the store had.
    public let oldSchema: Schema
    /// The schema it will have.
    public let newSchema: Schema

    private let store: Store
    private var records: [String: [(old: MigrationObject?, new: MigrationObject?)]] = [:]
    /// Types whose stored objects are removed before the migrated ones are written.
    private var clearedTypes: Set<String> = []
    private var createdCount: UInt64 = 0

    init(store: Store, oldSchema: Schema, newSchema: Schema, declared: [ObjectType]) throws {
        self.store = store
        self.oldSchema = oldSchema
        self.newSchema = newSchema
        let snapshot = store.snapshot()
        for old in oldSchema.objectSchemas {
            let new = newSchema[old.className]
            var pairs: [(old: MigrationObject?, new: MigrationObject?)] = []
            let defaults = new.flatMap { schema in declared.first { $0.schema.className == schema.className } }.map(Migration.defaults) ?? [:]
            do {
                try snapshot.scan(table: StoreLayout.objectTable(old.tableNumber)) { key, row in
                    let fields = try RowFormat.fields(of: row)
                    var oldValues: [String: FieldValue] = [:]
                    for (index, property) in old.properties.enumerated() where index < fields.count {
                        oldValues[property.name] = fields[index]
                    }
                    let oldObject = MigrationObject(className: old.className, values: oldValues, schema: old, isOld: true, migration: self, identity: key)
                    var newObject: MigrationObject?
                    if let new {
                        var values = defaults
                        for property in new.properties {
                            guard let previous = old[property.name], let value = oldValues[property.name] else { continue }
                            if previous.sameType(as: property) {
                                values[property.name] = value
                            } else if let converted = try? FieldValue.converting(value.anyValue, to: property, context: "", lenient: true) {
                                values[property.name] = converted
                            }
                        }
                        newObject = MigrationObject(className: new.className, values: values, schema: new, isOld: false, migration: self, identity: key)
                    }
                    pairs.append((oldObject, newObject))
                }
            } catch {
                throw RealmError.migrationFailed("cannot read the stored \(old.className) objects: \(error)")
            }
            records[old.className] = pairs
            if new != nil { clearedTypes.insert(old.className) }
        }
    }

    private static func defaults(_ info: ObjectType) -> [String: FieldValue] {
        let prototype = info.type.init()
        var values: [String: FieldValue] = [:]
        for (index, property) in info.schema.properties.enumerated() {
            switch prototype._slots[index] {
            case .value(let field): values[property.name] = field
            case .object: values[property.name] = .null
            case .list: values[property.name] = .list([])
            }
        }
        return values
    }

    /// Calls `block` with each stored object of `typeName` as it was and as it will be.
    /// Types the configuration no longer lists stay in the store, so `new` is nil only for
    /// objects created during the migration's enumeration of another type.
    public func enumerateObjects(ofType typeName: String, _ block: (_ oldObject: MigrationObject?, _ newObject: MigrationObject?) throws -> Void) rethrows {
        for pair in records[typeName] ?? [] where !(pair.new?.isDeleted ?? false) {
            try block(pair.old, pair.new)
        }
    }

    /// Copies the old values of `oldName` into `newName` for every object of `typeName`.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        guard let property = newSchema[typeName]?[newName] else { return }
        for pair in records[typeName] ?? [] {
            guard let old = pair.old, let new = pair.new, let value = old.values[oldName] else { continue }
            if old.schema[oldName]?.sameType(as: property) == true {
                new.values[newName] = value
            } else if let converted = try? FieldValue.converting(value.anyValue, to: property, context: "", lenient: true) {
                new.values[newName] = converted
            }
        }
    }

    /// Creates an object of `typeName` in the new schema from a dictionary of property values.
    @discardableResult
    public func create(_ typeName: String, value: [String: Any] = [:]) -> MigrationObject {
        guard let schema = newSchema[typeName] else { preconditionFailure("'\(typeName)' is not in the new schema") }
        createdCount += 1
        var identity: [UInt8] = [0xFF]
        withUnsafeBytes(of: createdCount.bigEndian) { identity.append(contentsOf: $0) }
        let object = MigrationObject(className: typeName, values: [:], schema: schema, isOld: false, migration: self, identity: identity)
        for property in schema.properties {
            object.values[property.name] = property.isList ? .list([]) : (property.isOptional || property.kind == .object ? .null : Migration.zero(property.kind))
        }
        for (key, item) in value { object[key] = item }
        records[typeName, default: []].append((nil, object))
        clearedTypes.insert(typeName)
        return object
    }

    /// Deletes a new object.
    public func delete(_ object: MigrationObject) {
        object.isDeleted = true
    }

    /// Removes every object of `typeName`; returns whether there were any.
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        let had = !(records[typeName]?.isEmpty ?? true)
        for pair in records[typeName] ?? [] { pair.new?.isDeleted = true }
        if oldSchema[typeName] != nil { clearedTypes.insert(typeName) }
        return had
    }

    private static func zero(_ kind: PropertyKind) -> FieldValue {
        switch kind {
        case .bool: return .bool(false)
        case .int, .int8, .int16, .int32, .int64: return .int(0)
        case .double: return .double(0)
        case .float: return .float(0)
        case .string: return .string("")
        case .data: return .data(Data())
        case .date: return .date(Date(timeIntervalSinceReferenceDate: 0))
        case .uuid: return .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .decimal: return .decimal(0)
        case .object, .column: return .null
        }
    }

    // MARK: Values

    fileprivate func plainValue(_ field: FieldValue, property: PropertySchema, old: Bool) -> Any? {
        if property.kind == .object, let target = property.objectClassName {
            func object(_ key: [UInt8]) -> MigrationObject? {
                guard let position = identityIndex(of: target)[key] else { return nil }
                let pair = records[target]![position]
                return old ? pair.old : pair.new
            }
            switch field {
            case .link(let key): return object(key)
            case .list(let items): return items.compactMap { if case .link(let key) = $0 { return object(key) } else { return nil } }
            default: return nil
            }
        }
        return field.anyValue
    }

    /// Record positions by identity, per type (built on first use, extended as objects are created).
    private var identityIndexes: [String: (count: Int, index: [[UInt8]: Int])] = [:]

    private func identityIndex(of typeName: String) -> [[UInt8]: Int] {
        let pairs = records[typeName] ?? []
        var entry = identityIndexes[typeName] ?? (0, [:])
        if entry.count < pairs.count {
            for position in entry.count ..< pairs.count {
                if let identity = pairs[position].old?.identity ?? pairs[position].new?.identity { entry.index[identity] = position }
            }
            entry.count = pairs.count
            identityIndexes[typeName] = entry
        }
        return entry.index
    }

    fileprivate func field(for value: Any?, property: PropertySchema, context: String) throws -> FieldValue {
        if property.kind == .object {
            if let object = value as? MigrationObject { return property.isList ? .list([.link(object.identity)]) : .link(object.identity) }
            if let objects = value as? [MigrationObject] { return .list(objects.map { .link($0.identity) }) }
            if FieldValue.unwrap(value) == nil { return property.isList ? .list([]) : .null }
            throw RealmError.invalidValue("\(context) links to \(property.objectClassName ?? "?"); assign a MigrationObject")
        }
        return try FieldValue.converting(value, to: property, context: context)
    }

    // MARK: Writing

    /// Replaces the stored objects of every migrated type and writes the new schema.
    func write(in transaction: Transaction) throws {
        let snapshot = store.snapshot()
        // 1. Remove the old rows and index entries of every type that is rewritten.
        for typeName in clearedTypes {
            guard let old = oldSchema[typeName] else { continue }
            for property in 0 ..< old.properties.count where old.properties[property].isIndexed {
                let table = StoreLayout.indexTable(old.tableNumber, property: property)
                for key in snapshot.keys(table: table) { try transaction.delete(table: table, key: key) }
            }
            let table = StoreLayout.objectTable(old.tableNumber)
            for key in snapshot.keys(table: table) { try transaction.delete(table: table, key: key) }
        }
        // 2. New keys: from the (possibly new) primary key, or kept / allocated hidden ids.
        var remap: [String: [[UInt8]: [UInt8]]] = [:]
        var rows: [String: [(key: [UInt8], object: MigrationObject)]] = [:]
        for typeName in clearedTypes {
            guard let schema = newSchema[typeName] else { continue }
            let primaryKey = schema.primaryKeyProperty
            var nextID = try Migration.nextHiddenID(schema: schema, transaction: transaction)
            var seen: [[UInt8]: MigrationObject] = [:]
            for pair in records[typeName] ?? [] {
                guard let object = pair.new, !object.isDeleted else { continue }
                let key: [UInt8]
                if let primaryKey {
                    guard let value = object.values[primaryKey.name].flatMap(PrimaryKeyValue.init(field:)) else {
                        throw RealmError.migrationFailed("\(typeName).\(primaryKey.name) has no valid primary key value for \(object)")
                    }
                    key = value.keyBytes
                    if seen[key] != nil {
                        throw RealmError.migrationFailed("Primary key property '\(typeName).\(primaryKey.name)' has duplicate values after migration: \(value)")
                    }
                } else if pair.old != nil, oldSchema[typeName]?.primaryKeyProperty == nil {
                    key = object.identity
                } else {
                    key = PrimaryKeyValue.int(nextID).keyBytes
                    nextID += 1
                }
                seen[key] = object
                remap[typeName, default: [:]][object.identity] = key
                rows[typeName, default: []].append((key, object))
            }
            try transaction.put(table: StoreLayout.metadataTable, key: StoreLayout.nextIDKey(schema.tableNumber),
                                value: withUnsafeBytes(of: UInt64(nextID).littleEndian) { Array($0) })
        }
        // 3. Write the rows in declared order with links remapped, and their indexes.
        for (typeName, entries) in rows {
            let schema = newSchema[typeName]!
            var deltas: [Int: SecondaryIndex.Delta] = [:]
            for (key, object) in entries {
                let fields = schema.properties.map { property -> FieldValue in
                    let value = object.values[property.name] ?? .null
                    guard property.kind == .object, let target = property.objectClassName else { return value }
                    // Targets of a rewritten type get their new keys (none: the link is cut).
                    let map = clearedTypes.contains(target) ? remap[target, default: [:]] : nil
                    func relink(_ field: FieldValue) -> FieldValue {
                        guard case .link(let old) = field else { return field }
                        if let map { return map[old].map(FieldValue.link) ?? .null }
                        return field
                    }
                    if case .list(let items) = value { return .list(items.map(relink).filter { $0 != .null }) }
                    return relink(value)
                }
                try transaction.put(table: StoreLayout.objectTable(schema.tableNumber), key: key, value: RowFormat.encodeChecked(fields, of: "a migrated \(schema.className) row"))
                for (index, property) in schema.properties.enumerated() where property.isIndexed {
                    deltas[index, default: SecondaryIndex.Delta()].add(key, value: fields[index])
                }
            }
            for (index, delta) in deltas {
                try delta.apply(table: StoreLayout.indexTable(schema.tableNumber, property: index), transaction: transaction)
            }
        }
        try SharedStore.writeSchema(newSchema, in: transaction)
    }

    static func nextHiddenID(schema: ObjectSchema, transaction: Transaction) throws -> Int64 {
        guard let bytes = try transaction.get(table: StoreLayout.metadataTable, key: StoreLayout.nextIDKey(schema.tableNumber)),
              bytes.count == 8 else { return 1 }
        return Int64(bitPattern: bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) })
    }
}
