// Migration: moves every object from the stored schema to the declared one when
// `schemaVersion` is raised. It streams, so its memory does not grow with the store: old
// objects are read from a snapshot as they are enumerated, and the new objects the block
// changes are spilled, a batch at a time, to a scratch store (`migration-scratch` in the
// store's directory, removed afterwards). The rewrite then streams every object into one
// engine transaction: a failed migration leaves the store as it was.

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
    /// For an object the migration created, its number (its identity is 0xFF and the number).
    fileprivate let createdNumber: UInt64?
    fileprivate var isDeleted = false

    fileprivate init(className: String, values: [String: FieldValue], schema: ObjectSchema, isOld: Bool, migration: Migration,
                     identity: [UInt8], createdNumber: UInt64? = nil) {
        self.className = className
        self.values = values
        self.schema = schema
        self.isOld = isOld
        self.migration = migration
        self.identity = identity
        self.createdNumber = createdNumber
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
                migration.markChanged(self)
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
///
/// A migration streams: it does not hold every object in memory. Objects are read as they
/// are enumerated, and the new objects the block changes are kept in memory only until a
/// batch of them is spilled to a scratch store in the store's directory. Keep a
/// `MigrationObject` only as long as you need it. The rewrite is one engine transaction,
/// so the migrated types must fit in one (see the guide, "Migrations").
public final class Migration {
    /// The schema the store had.
    public let oldSchema: Schema
    /// The schema it will have.
    public let newSchema: Schema

    /// The store as it was: old objects (and new ones nobody changed) are read from it.
    private let snapshot: Snapshot
    private let declared: [ObjectType]
    private var defaultValues: [String: [String: FieldValue]] = [:]
    /// Types whose stored objects are removed before the migrated ones are written.
    private var clearedTypes: Set<String> = []
    private var createdCount: UInt64 = 0
    /// The numbers of the objects created per type, in creation order.
    private var created: [String: [UInt64]] = [:]
    /// Per type, `createdCount` when `deleteData(forType:)` last ran: every stored object
    /// and every object created up to that number is deleted.
    private var dataDeletedThrough: [String: UInt64] = [:]

    /// New objects changed since the last spill (held until spilled).
    private var changed: [MigrationKey: MigrationObject] = [:]
    /// New objects someone may still hold, so that one record is always one instance.
    private var live: [MigrationKey: WeakMigrationObject] = [:]
    private var liveSweepThreshold = 2 * Migration.spillBatch
    /// A failure found where the API cannot throw (enumeration, property access, spilling);
    /// `write(in:)` throws it, so the open fails with it.
    private var failure: RealmError?

    /// The scratch store that holds spilled new objects and the rewrite's key map.
    private let scratchDirectory: URL
    /// The store's key and file mode, which the scratch store takes too.
    private let encryptionKey: Data?
    private let fileMode: UInt16
    private var scratch: Store?
    private var scratchSnapshot: Snapshot?
    /// Scratch table numbers per type name.
    private let scratchTypeNumbers: [String: UInt32]

    /// New objects changed before a batch is spilled to the scratch store.
    static let spillBatch = 4096
    /// Objects written before their index changes are applied to the transaction.
    static let indexBatch = 65_536
    /// The scratch store's directory, inside the store's.
    static let scratchName = "migration-scratch"

    init(store: Store, oldSchema: Schema, newSchema: Schema, declared: [ObjectType]) throws {
        self.oldSchema = oldSchema
        self.newSchema = newSchema
        self.declared = declared
        snapshot = store.snapshot()
        let names = Set(oldSchema.objectSchemas.map(\.className) + newSchema.objectSchemas.map(\.className)).sorted()
        scratchTypeNumbers = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, UInt32($0.offset + 1)) })
        for old in oldSchema.objectSchemas where newSchema[old.className] != nil {
            clearedTypes.insert(old.className)
        }
        scratchDirectory = store.directory.appendingPathComponent(Migration.scratchName, isDirectory: true)
        encryptionKey = store.encryptionKey
        fileMode = store.fileMode
        // Left by a migration a crash interrupted; never part of the store's state.
        if FileManager.default.fileExists(atPath: scratchDirectory.path) {
            do {
                try FileManager.default.removeItem(at: scratchDirectory)
            } catch {
                throw RealmError.migrationFailed("cannot remove the scratch directory \(scratchDirectory.path) a crashed migration left: \(error)")
            }
        }
    }

    deinit { closeScratch() }

    private static func defaults(_ info: ObjectType) -> [String: FieldValue] {
        let prototype = info.type.init()
        var values: [String: FieldValue] = [:]
        for (index, property) in info.schema.properties.enumerated() {
            values[property.name] = prototype._slots[index].unlinkedField
        }
        return values
    }

    /// Calls `block` with each stored object of `typeName` as it was and as it will be.
    /// Types the configuration no longer lists stay in the store, so `new` is nil only for
    /// objects created during the migration's enumeration of another type.
    public func enumerateObjects(ofType typeName: String, _ block: (_ oldObject: MigrationObject?, _ newObject: MigrationObject?) throws -> Void) rethrows {
        if let old = oldSchema[typeName] {
            let keys = recording({ try storedKeys(old) }) ?? PackedKeys()
            for position in 0 ..< keys.count {
                guard failure == nil else { return }
                guard let (oldObject, newObject) = recording({ try pair(typeName, old, keys[position]) }) ?? nil else { continue }
                if newObject?.isDeleted ?? false { continue }
                try block(oldObject, newObject)
            }
        }
        for number in created[typeName] ?? [] {
            guard failure == nil else { return }
            guard let object = recording({ try loadNew(typeName, Migration.createdIdentity(number)) }) ?? nil,
                  !object.isDeleted else { continue }
            try block(nil, object)
        }
    }

    /// Copies the old values of `oldName` into `newName` for every object of `typeName`.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        guard let property = newSchema[typeName]?[newName], let oldType = oldSchema[typeName] else { return }
        let keys = recording({ try storedKeys(oldType) }) ?? PackedKeys()
        for position in 0 ..< keys.count {
            guard failure == nil else { return }
            guard let (old, new) = recording({ try pair(typeName, oldType, keys[position]) }) ?? nil,
                  let new, let value = old.values[oldName] else { continue }
            if old.schema[oldName]?.sameType(as: property) == true {
                new.values[newName] = value
            } else if let converted = try? FieldValue.converting(value.anyValue, to: property, context: "", lenient: true) {
                new.values[newName] = converted
            } else {
                continue
            }
            markChanged(new)
        }
    }

    /// Creates an object of `typeName` in the new schema from a dictionary of property values.
    @discardableResult
    public func create(_ typeName: String, value: [String: Any] = [:]) -> MigrationObject {
        guard let schema = newSchema[typeName] else { preconditionFailure("'\(typeName)' is not in the new schema") }
        precondition(!schema.isEmbedded, "'\(typeName)' is an embedded object type: set it as a dictionary on the object that holds it")
        createdCount += 1
        let object = MigrationObject(className: typeName, values: [:], schema: schema, isOld: false, migration: self,
                                     identity: Migration.createdIdentity(createdCount), createdNumber: createdCount)
        for property in schema.properties {
            object.values[property.name] = FieldValue.zero(property)
        }
        created[typeName, default: []].append(createdCount)
        clearedTypes.insert(typeName)
        remember(object)
        markChanged(object)
        for (key, item) in value { object[key] = item }
        return object
    }

    /// Deletes a new object.
    public func delete(_ object: MigrationObject) {
        object.isDeleted = true
        markChanged(object)
    }

    /// Removes every object of `typeName`; returns whether there were any.
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        let stored = oldSchema[typeName].map { snapshot.count(table: StoreLayout.objectTable($0.tableNumber)) > 0 } ?? false
        let had = stored || !(created[typeName]?.isEmpty ?? true)
        dataDeletedThrough[typeName] = createdCount
        // Objects in memory are marked; the others are deleted as they are read back.
        let held = live.compactMap { $0.key.type == typeName ? $0.value.object : nil }
        for object in held where !object.isDeleted {
            object.isDeleted = true
            markChanged(object)
        }
        if oldSchema[typeName] != nil { clearedTypes.insert(typeName) }
        return had
    }

    // MARK: Values

    fileprivate func plainValue(_ field: FieldValue, property: PropertySchema, old: Bool) -> Any? {
        if property.kind == .embedded {
            // Embedded objects read as dictionaries of their values (lists: arrays of them).
            guard let type = property.objectClassName.flatMap({ (old ? oldSchema : newSchema)[$0] }) else { return nil }
            func dictionary(_ fields: [FieldValue]) -> [String: Any?] {
                var values: [String: Any?] = [:]
                for (index, nested) in type.properties.enumerated() where index < fields.count {
                    values[nested.name] = plainValue(fields[index], property: nested, old: old)
                }
                return values
            }
            switch field {
            case .embedded(let fields): return dictionary(fields)
            case .list(let items): return items.compactMap { if case .embedded(let fields) = $0 { return dictionary(fields) } else { return nil } }
            default: return nil
            }
        }
        if property.kind == .object, let target = property.objectClassName {
            func object(_ key: [UInt8]) -> MigrationObject? {
                recording { old ? try loadOld(target, key) : try loadNew(target, key) } ?? nil
            }
            switch field {
            case .link(let key): return object(key)
            case .list(let items): return items.compactMap { if case .link(let key) = $0 { return object(key) } else { return nil } }
            default: return nil
            }
        }
        return field.anyValue
    }

    fileprivate func field(for value: Any?, property: PropertySchema, context: String) throws -> FieldValue {
        if property.kind == .embedded {
            guard let type = property.objectClassName.flatMap({ newSchema[$0] }) else { throw RealmError.unknownType(property.objectClassName ?? "?") }
            func embedded(_ item: Any?, _ context: String) throws -> FieldValue {
                guard let item = FieldValue.unwrap(item) else { return .null }
                guard let values = item as? [String: Any?] ?? (item as? [String: Any])?.mapValues({ $0 }) else {
                    throw RealmError.invalidValue("\(context) holds an embedded \(type.className); assign a dictionary of its values")
                }
                var fields = type.properties.map(FieldValue.zero)
                for (name, nested) in values {
                    guard let index = type.index(of: name) else { throw RealmError.unknownProperty(type: type.className, property: name) }
                    fields[index] = try field(for: nested, property: type.properties[index], context: "\(context).\(name)")
                }
                return .embedded(fields)
            }
            guard property.isList else { return try embedded(value, context) }
            guard let items = FieldValue.unwrap(value) as? [Any?] ?? (FieldValue.unwrap(value) as? [Any])?.map({ $0 }) else { return .list([]) }
            return .list(try items.enumerated().map { try embedded($1, "\(context)[\($0)]") })
        }
        if property.kind == .object {
            if let object = value as? MigrationObject { return property.isList ? .list([.link(object.identity)]) : .link(object.identity) }
            if let objects = value as? [MigrationObject] { return .list(objects.map { .link($0.identity) }) }
            if FieldValue.unwrap(value) == nil { return property.isList ? .list([]) : .null }
            throw RealmError.invalidValue("\(context) links to \(property.objectClassName ?? "?"); assign a MigrationObject")
        }
        return try FieldValue.converting(value, to: property, context: context)
    }

    // MARK: Reading objects

    private static func createdIdentity(_ number: UInt64) -> [UInt8] {
        var identity: [UInt8] = [0xFF]
        withUnsafeBytes(of: number.bigEndian) { identity.append(contentsOf: $0) }
        return identity
    }

    /// Runs `body`; a failure is kept for `write(in:)` to throw, and gives nil.
    private func recording<T>(_ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch {
            if failure == nil { failure = error as? RealmError ?? .migrationFailed("\(error)") }
            return nil
        }
    }

    /// The keys of the stored objects of `type`, packed into one buffer (a few bytes each).
    private func storedKeys(_ type: ObjectSchema) throws -> PackedKeys {
        var keys = PackedKeys()
        try snapshot.forEachKey(table: StoreLayout.objectTable(type.tableNumber)) { keys.append($0) }
        return keys
    }

    private func oldValues(_ type: ObjectSchema, identity: [UInt8]) throws -> [String: FieldValue]? {
        do {
            guard let row = try snapshot.get(table: StoreLayout.objectTable(type.tableNumber), key: identity) else { return nil }
            let fields = try RowFormat.fields(of: row)
            var values: [String: FieldValue] = [:]
            for (index, property) in type.properties.enumerated() where index < fields.count {
                values[property.name] = fields[index]
            }
            return values
        } catch {
            throw RealmError.migrationFailed("cannot read the stored \(type.className) objects: \(error)")
        }
    }

    private func loadOld(_ typeName: String, _ identity: [UInt8]) throws -> MigrationObject? {
        guard let type = oldSchema[typeName], let values = try oldValues(type, identity: identity) else { return nil }
        return MigrationObject(className: typeName, values: values, schema: type, isOld: true, migration: self, identity: identity)
    }

    /// A stored object as it was and as it will be.
    private func pair(_ typeName: String, _ type: ObjectSchema, _ identity: [UInt8]) throws -> (MigrationObject, MigrationObject?)? {
        guard let values = try oldValues(type, identity: identity) else { return nil }
        let old = MigrationObject(className: typeName, values: values, schema: type, isOld: true, migration: self, identity: identity)
        return (old, try loadNew(typeName, identity, oldValues: values))
    }

    /// The new object of `identity`: the one in memory, else the spilled one, else one made
    /// from the stored object (`oldValues`, or read). Nil if there is none.
    private func loadNew(_ typeName: String, _ identity: [UInt8], oldValues given: [String: FieldValue]? = nil,
                         register: Bool = true) throws -> MigrationObject? {
        guard let schema = newSchema[typeName] else { return nil }
        let key = MigrationKey(type: typeName, identity: identity)
        if let object = changed[key] ?? live[key]?.object { return object }
        let object: MigrationObject
        if let scratchSnapshot, let table = scratchTypeNumbers[typeName],
           let bytes = try scratchSnapshot.get(table: Migration.spilledTable(table), key: identity), let flags = bytes.first {
            let fields = try RowFormat.fields(of: Array(bytes[1...]))
            var values: [String: FieldValue] = [:]
            for (index, property) in schema.properties.enumerated() where index < fields.count {
                values[property.name] = fields[index]
            }
            let number: UInt64? = flags & 2 != 0 ? identity.dropFirst().reduce(0) { $0 << 8 | UInt64($1) } : nil
            object = MigrationObject(className: typeName, values: values, schema: schema, isOld: false, migration: self,
                                     identity: identity, createdNumber: number)
            object.isDeleted = flags & 1 != 0
        } else if let old = oldSchema[typeName], let oldValues = try given ?? oldValues(old, identity: identity) {
            object = MigrationObject(className: typeName, values: newValues(typeName, old: old, new: schema, oldValues: oldValues),
                                     schema: schema, isOld: false, migration: self, identity: identity)
        } else {
            return nil
        }
        if let through = dataDeletedThrough[typeName], object.createdNumber.map({ $0 <= through }) ?? true {
            object.isDeleted = true
        }
        if register { remember(object) }
        return object
    }

    /// Adds `object` to the map of new objects someone may hold, dropping entries of
    /// objects no longer held whenever the map has doubled since the last sweep.
    private func remember(_ object: MigrationObject) {
        live[MigrationKey(object)] = WeakMigrationObject(object: object)
        if live.count >= liveSweepThreshold {
            live = live.filter { $0.value.object != nil }
            liveSweepThreshold = max(2 * Migration.spillBatch, 2 * live.count)
        }
    }

    /// A new object's starting values: the old value of each property whose name is kept
    /// (converted if its type changed), the class's initial value for the rest.
    private func newValues(_ typeName: String, old: ObjectSchema, new: ObjectSchema, oldValues: [String: FieldValue]) -> [String: FieldValue] {
        if defaultValues[typeName] == nil {
            defaultValues[typeName] = declared.first { $0.schema.className == typeName }.map(Migration.defaults) ?? [:]
        }
        var values = defaultValues[typeName]!
        for property in new.properties {
            guard let previous = old[property.name], let value = oldValues[property.name] else { continue }
            if property.kind == .embedded, previous.kind == .embedded, previous.isList == property.isList {
                values[property.name] = migratedEmbedded(value, from: previous, to: property)
            } else if previous.sameType(as: property) {
                values[property.name] = value
            } else if let converted = try? FieldValue.converting(value.anyValue, to: property, context: "", lenient: true) {
                values[property.name] = converted
            }
        }
        return values
    }

    /// Embedded objects (one, or a list) laid out for their type in the new schema: each
    /// property whose name is kept moves to its new position (converted, recursively, as
    /// top-level properties are), the others take the class's initial value.
    private func migratedEmbedded(_ value: FieldValue, from previous: PropertySchema, to property: PropertySchema) -> FieldValue {
        guard let oldType = previous.objectClassName.flatMap({ oldSchema[$0] }),
              let newType = property.objectClassName.flatMap({ newSchema[$0] }) else { return .null }
        func one(_ field: FieldValue) -> FieldValue {
            guard case .embedded(let fields) = field else { return field }
            var oldValues: [String: FieldValue] = [:]
            for (index, nested) in oldType.properties.enumerated() where index < fields.count { oldValues[nested.name] = fields[index] }
            let values = newValues(newType.className, old: oldType, new: newType, oldValues: oldValues)
            return .embedded(newType.properties.map { values[$0.name] ?? FieldValue.zero($0) })
        }
        if case .list(let items) = value { return .list(items.map(one)) }
        return one(value)
    }

    /// Calls `body` with every new object of `typeName` that is not deleted: the stored
    /// ones, then the created ones (read one at a time, not kept).
    private func forEachNewObject(_ typeName: String, _ body: (MigrationObject) throws -> Void) throws {
        if let old = oldSchema[typeName] {
            let keys = recording({ try storedKeys(old) }) ?? PackedKeys()
            for position in 0 ..< keys.count {
                guard let object = try loadNew(typeName, keys[position], register: false), !object.isDeleted else { continue }
                try body(object)
            }
        }
        for number in created[typeName] ?? [] {
            guard let object = try loadNew(typeName, Migration.createdIdentity(number), register: false), !object.isDeleted else { continue }
            try body(object)
        }
    }

    // MARK: Spilling

    private static func spilledTable(_ typeNumber: UInt32) -> UInt32 { typeNumber << 4 }
    private static func keyMapTable(_ typeNumber: UInt32) -> UInt32 { typeNumber << 4 | 1 }

    /// Notes that `object` (a new one) changed; spills a full batch.
    fileprivate func markChanged(_ object: MigrationObject) {
        guard !object.isOld else { return }
        changed[MigrationKey(object)] = object
        if changed.count >= Migration.spillBatch { spill() }
    }

    private func openScratch() throws -> Store {
        if let scratch { return scratch }
        var options = StoreOptions()
        options.durability = .none
        options.autoCompaction = .disabled
        // It holds the app's objects: as protected as the store it serves.
        options.encryptionKey = encryptionKey
        options.fileMode = fileMode
        let opened = try Store(directory: scratchDirectory, options: options)
        scratch = opened
        return opened
    }

    /// Writes `entries` to the scratch store in one of its transactions.
    private func writeScratch(_ entries: [(table: UInt32, key: [UInt8], value: [UInt8])]) throws {
        guard !entries.isEmpty else { return }
        let scratch = try openScratch()
        try scratch.write { transaction in
            for entry in entries { try transaction.put(table: entry.table, key: entry.key, value: entry.value) }
        }
        scratchSnapshot = scratch.snapshot()
    }

    /// Moves the changed objects to the scratch store: flags (1 deleted, 2 created), then the row.
    private func spill() {
        guard failure == nil, !changed.isEmpty else { return }
        do {
            var entries: [(table: UInt32, key: [UInt8], value: [UInt8])] = []
            entries.reserveCapacity(changed.count)
            for (key, object) in changed {
                let fields = object.schema.properties.map { object.values[$0.name] ?? .null }
                let flags: UInt8 = (object.isDeleted ? 1 : 0) | (object.createdNumber != nil ? 2 : 0)
                let row = try RowFormat.encodeChecked(fields, of: "a migrated \(key.type) row")
                entries.append((Migration.spilledTable(scratchTypeNumbers[key.type]!), object.identity, [flags] + row))
            }
            try writeScratch(entries)
            changed.removeAll(keepingCapacity: true)
        } catch {
            failure = .migrationFailed("cannot spill migrated objects to \(scratchDirectory.path): \(error)")
        }
    }

    private func closeScratch() {
        scratchSnapshot = nil
        if let scratch {
            try? scratch.close()
            self.scratch = nil
        }
        try? FileManager.default.removeItem(at: scratchDirectory)
    }

    // MARK: Writing

    /// Replaces the stored objects of every migrated type and writes the new schema.
    func write(in transaction: Transaction) throws {
        defer { closeScratch() }
        if let failure { throw failure }
        do {
            try rewrite(in: transaction)
        } catch StoreError.invalidArgument(let reason) where reason.contains("4 GiB") {
            throw Migration.tooLarge(reason, from: oldSchema.version, to: newSchema.version)
        }
    }

    /// The error of a migration whose rewrite does not fit in one transaction.
    static func tooLarge(_ reason: String, from oldVersion: UInt64, to newVersion: UInt64) -> RealmError {
        .migrationFailed("the migration from schema version \(oldVersion) to \(newVersion) does not fit in one transaction: "
            + "it rewrites every object of the migrated types, with their indexes, in one engine transaction, and \(reason) "
            + "(a transaction may not exceed 4 GiB in one segment); the store is unchanged")
    }

    private func rewrite(in transaction: Transaction) throws {
        let rewritten = clearedTypes.sorted()
        // Each type's first free hidden id, read before anything is written.
        var firstIDs: [String: Int64] = [:]
        for typeName in rewritten {
            guard let schema = newSchema[typeName] else { continue }
            firstIDs[typeName] = try Migration.nextHiddenID(schema: schema, transaction: transaction)
        }
        try mapChangedKeys(of: rewritten, firstIDs: firstIDs)
        try removeOldRows(of: rewritten, in: transaction)
        for typeName in rewritten {
            guard let schema = newSchema[typeName] else { continue }
            try writeNewRows(of: schema, firstID: firstIDs[typeName]!, in: transaction)
        }
        try SharedStore.writeSchema(newSchema, in: transaction)
    }

    /// Step 1: the new keys of the objects some rewritten row may link to, where they
    /// differ from the object's identity, into the scratch key map (links are rewritten
    /// through it). The other types' keys are computed as their rows are written.
    private func mapChangedKeys(of rewritten: [String], firstIDs: [String: Int64]) throws {
        let linkedTypes = Set(rewritten.compactMap { newSchema[$0] }.flatMap { $0.properties.compactMap(\.objectClassName) })
        var keyMap: [(table: UInt32, key: [UInt8], value: [UInt8])] = []
        for typeName in rewritten where linkedTypes.contains(typeName) {
            guard let schema = newSchema[typeName] else { continue }
            let table = Migration.keyMapTable(scratchTypeNumbers[typeName]!)
            var nextID = firstIDs[typeName]!
            try forEachNewObject(typeName) { object in
                let key = try newKey(of: object, schema: schema, nextID: &nextID)
                if key != object.identity {
                    keyMap.append((table, object.identity, key))
                    if keyMap.count >= Migration.indexBatch {
                        try writeScratch(keyMap)
                        keyMap.removeAll(keepingCapacity: true)
                    }
                }
            }
        }
        try writeScratch(keyMap)
    }

    /// Step 2: the old rows and index entries of every rewritten type, removed.
    private func removeOldRows(of rewritten: [String], in transaction: Transaction) throws {
        for typeName in rewritten {
            guard let old = oldSchema[typeName] else { continue }
            for (property, _) in oldSchema.maintainedIndexes(of: old) {
                let table = StoreLayout.indexTable(old.tableNumber, property: property)
                for key in try snapshot.keys(table: table) { try transaction.delete(table: table, key: key) }
            }
            let table = StoreLayout.objectTable(old.tableNumber)
            let keys = recording({ try storedKeys(old) }) ?? PackedKeys()
            for position in 0 ..< keys.count { try transaction.delete(table: table, key: keys[position]) }
        }
    }

    /// Step 3: one type's rows written with links remapped, and their indexes, a batch at a
    /// time; then the type's id counter. The same walk as step 1 (one snapshot, the same
    /// order), so the same keys.
    private func writeNewRows(of schema: ObjectSchema, firstID: Int64, in transaction: Transaction) throws {
        let typeName = schema.className
        let table = StoreLayout.objectTable(schema.tableNumber)
        let maintained = newSchema.maintainedIndexes(of: schema)
        var deltas: [Int: SecondaryIndex.Delta] = [:]
        var pending = 0
        var nextID = firstID
        // Each ordered index starts empty (step 2 removed the old records) and takes the rows
        // batch by batch with the hash postings, rather than being rebuilt after the rewrite.
        for (index, backlink) in maintained where !backlink && OrderedValueKey.isOrderable(schema.properties[index]) {
            try transaction.put(table: StoreLayout.indexTable(schema.tableNumber, property: index),
                                key: OrderedIndex.rootKey, value: OrderedIndex.Root().bytes)
        }
        try forEachNewObject(typeName) { object in
            let key = try newKey(of: object, schema: schema, nextID: &nextID)
            if try transaction.get(table: table, key: key) != nil {
                let name = schema.primaryKeyProperty?.name ?? "?"
                let value = object.values[name].flatMap(PrimaryKeyValue.init(field:)).map { "\($0)" } ?? "?"
                throw RealmError.migrationFailed("Primary key property '\(typeName).\(name)' has duplicate values after migration: \(value)")
            }
            var fields: [FieldValue] = []
            fields.reserveCapacity(schema.properties.count)
            for property in schema.properties {
                fields.append(try relinked(object.values[property.name] ?? .null, property: property))
            }
            try transaction.put(table: table, key: key, value: RowFormat.encodeChecked(fields, of: "a migrated \(schema.className) row"))
            for (index, backlink) in maintained {
                deltas[index, default: SecondaryIndex.Delta()].record(key, old: nil, new: fields[index], backlink: backlink)
            }
            pending += 1
            if pending >= Migration.indexBatch {
                try applyIndexChanges(deltas, schema: schema, transaction: transaction)
                deltas = [:]
                pending = 0
            }
        }
        try applyIndexChanges(deltas, schema: schema, transaction: transaction)
        try transaction.put(table: StoreLayout.metadataTable, key: StoreLayout.nextIDKey(schema.tableNumber),
                            value: withUnsafeBytes(of: UInt64(nextID).littleEndian) { Array($0) })
    }

    /// A new object's key: its (possibly new) primary key; its old hidden id when the type
    /// had no primary key and still has none; otherwise the next fresh id.
    private func newKey(of object: MigrationObject, schema: ObjectSchema, nextID: inout Int64) throws -> [UInt8] {
        if let primaryKey = schema.primaryKeyProperty {
            guard let value = object.values[primaryKey.name].flatMap(PrimaryKeyValue.init(field:)) else {
                throw RealmError.migrationFailed("\(schema.className).\(primaryKey.name) has no valid primary key value for \(object)")
            }
            return value.keyBytes
        }
        if object.createdNumber == nil, oldSchema[schema.className]?.primaryKeyProperty == nil {
            return object.identity
        }
        defer { nextID += 1 }
        return PrimaryKeyValue.int(nextID).keyBytes
    }

    private func applyIndexChanges(_ deltas: [Int: SecondaryIndex.Delta], schema: ObjectSchema, transaction: Transaction) throws {
        for (index, delta) in deltas {
            try delta.apply(table: StoreLayout.indexTable(schema.tableNumber, property: index), transaction: transaction)
        }
    }

    /// A property's value after the rewrite: links to rewritten types get their targets'
    /// new keys (none: the link is cut, and a list or map loses it), inside embedded
    /// objects too.
    private func relinked(_ value: FieldValue, property: PropertySchema) throws -> FieldValue {
        switch property.kind {
        case .object:
            guard let target = property.objectClassName, clearedTypes.contains(target) else { return value }
            switch value {
            case .list(let items): return .list(try items.map { try relink($0, target: target) }.filter { $0 != .null })
            case .map(let entries): return .map(try entries.mapValues { try relink($0, target: target) }.filter { $0.value != .null })
            default: return try relink(value, target: target)
            }
        case .embedded:
            guard let type = property.objectClassName.flatMap({ newSchema[$0] }) else { return value }
            func nested(_ field: FieldValue) throws -> FieldValue {
                guard case .embedded(let fields) = field else { return field }
                return .embedded(try fields.enumerated().map { index, inner in
                    index < type.properties.count ? try relinked(inner, property: type.properties[index]) : inner
                })
            }
            if case .list(let items) = value { return .list(try items.map(nested)) }
            return try nested(value)
        default:
            return value
        }
    }

    /// A link to `target` after the rewrite: the target's new key, or null if it is gone.
    private func relink(_ field: FieldValue, target: String) throws -> FieldValue {
        guard case .link(let identity) = field else { return field }
        if let table = scratchTypeNumbers[target], let key = try scratchSnapshot?.get(table: Migration.keyMapTable(table), key: identity) {
            return .link(key)
        }
        guard let object = try loadNew(target, identity, register: false), !object.isDeleted else { return .null }
        return .link(identity)
    }

    static func nextHiddenID(schema: ObjectSchema, transaction: Transaction) throws -> Int64 {
        guard let bytes = try transaction.get(table: StoreLayout.metadataTable, key: StoreLayout.nextIDKey(schema.tableNumber)),
              bytes.count == 8 else { return 1 }
        let next = Int64(bitPattern: bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) })
        // Read from disk: a damaged counter is an error, never an overflow when incremented.
        guard next >= 1, next < .max else {
            throw RealmError.damagedObject(type: schema.className, key: "(the next hidden object id)", reason: "the stored counter is \(next), not from 1 to \(Int64.max - 1)")
        }
        return next
    }
}

/// One record of one type, as the migration's maps key it.
private struct MigrationKey: Hashable {
    let type: String
    let identity: [UInt8]

    init(type: String, identity: [UInt8]) {
        self.type = type
        self.identity = identity
    }

    init(_ object: MigrationObject) {
        self.init(type: object.className, identity: object.identity)
    }
}

private struct WeakMigrationObject {
    weak var object: MigrationObject?
}

/// Keys packed into one buffer: a few bytes each instead of an array apiece.
private struct PackedKeys {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    var count: Int { ends.count }

    mutating func append(_ key: [UInt8]) {
        bytes.append(contentsOf: key)
        ends.append(bytes.count)
    }

    subscript(position: Int) -> [UInt8] {
        Array(bytes[(position == 0 ? 0 : ends[position - 1]) ..< ends[position]])
    }
}
