// SharedStore: the one engine Store behind every Realm of a process that opens the same
// directory (or in-memory identifier), with the stored schema and the change log the
// realms advance through. Opening it is where schema checks and migrations happen.

import Foundation
import Dispatch

/// A realm that wants to hear about commits made by others (queue-confined realms).
protocol CommitListener: AnyObject, Sendable {
    func storeDidCommit(sequence: UInt64)
}

final class SharedStore: @unchecked Sendable {
    let identity: String
    let store: Store
    let log: ChangeLog
    let readOnly: Bool
    /// The stored schema, including types no open configuration lists.
    private let schemaState: Locked<Schema>
    private let listeners = Locked<[ObjectIdentifier: WeakListener]>([:])
    /// Each class bound once: a stored type never changes while the store is open (schema
    /// changes happen at the first open), so later realms reuse the checked binding.
    /// Opening a realm per request costs a few microseconds because of this.
    private let boundCache = Locked<[ObjectIdentifier: BoundType]>([:])
    /// For in-memory realms: the directory to remove when the store closes.
    private let temporaryDirectory: URL?

    struct WeakListener { weak var listener: (any CommitListener)? }

    /// The open stores with the number of realms using each. Opens and closes happen under
    /// this lock, so a store is closed (its lock file released) before it can be reopened.
    private static let registry = Locked<[String: (store: SharedStore, realms: Int)]>([:])

    var schema: Schema { schemaState.withLock { $0 } }

    private init(identity: String, store: Store, schema: Schema, readOnly: Bool, temporaryDirectory: URL?) {
        self.identity = identity
        self.store = store
        self.readOnly = readOnly
        self.temporaryDirectory = temporaryDirectory
        schemaState = Locked(schema)
        log = ChangeLog(startingAt: store.lastSequence)
    }

    /// One more realm uses this store (a frozen realm made from an open one); balanced by
    /// ``release()``.
    func retain() {
        SharedStore.registry.withLock { registry in
            guard var entry = registry[identity], entry.store === self else { return }
            entry.realms += 1
            registry[identity] = entry
        }
    }

    /// Called once by every realm that `open` returned this store to; the last one closes it.
    func release() {
        SharedStore.registry.withLock { registry in
            guard var entry = registry[identity], entry.store === self else { return }
            entry.realms -= 1
            if entry.realms > 0 {
                registry[identity] = entry
                return
            }
            registry[identity] = nil
            try? store.close()
            if let temporaryDirectory { try? FileManager.default.removeItem(at: temporaryDirectory) }
        }
    }

    /// The shared store for `configuration`, opened (and migrated) if no realm has it open,
    /// with the configuration's types bound to it.
    static func open(_ configuration: Realm.Configuration) throws -> (SharedStore, [BoundType]) {
        guard let identity = configuration.storeIdentity else {
            throw RealmError.invalidValue("Realm.Configuration needs a directory or an inMemoryIdentifier")
        }
        let declared = try declaredSchema(configuration)
        return try registry.withLock { registry in
            if let existing = registry[identity] {
                // The store is open already: the key is checked against the one it was opened
                // with, as a fresh open would check it against the files.
                if existing.store.store.encryptionKey != configuration.encryptionKey {
                    throw RealmError.storage(.wrongKey(configuration.encryptionKey == nil
                        ? "the realm at \(identity) is open with an encryption key and none was given"
                        : "the realm at \(identity) is open with \(existing.store.store.encryptionKey == nil ? "no encryption key" : "another encryption key")"))
                }
                let bound = try existing.store.bind(declared, configuration: configuration)
                registry[identity] = (existing.store, existing.realms + 1)
                return (existing.store, bound)
            }
            var directory = configuration.directory
            var temporary: URL?
            if let name = configuration.inMemoryIdentifier {
                let base = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
                let safe = name.map { $0.isLetter || $0.isNumber ? $0 : "_" }
                temporary = base.appendingPathComponent("strata-memory-\(getpid())-\(String(safe))-\(UUID().uuidString)")
                directory = temporary
            }
            var options = configuration.storeOptions
            options.readOnly = configuration.readOnly
            if let compact = configuration.shouldCompactOnLaunch { options.shouldCompactOnOpen = compact }
            let store: Store
            do {
                store = try Store(directory: directory!, options: options)
            } catch {
                throw RealmError.wrap(error)
            }
            let schema: Schema
            do {
                let stored = try loadSchema(store)
                schema = try prepare(store: store, stored: stored, declared: declared, configuration: configuration)
            } catch {
                try? store.close()
                if let temporary { try? FileManager.default.removeItem(at: temporary) }
                throw error
            }
            let shared = SharedStore(identity: identity, store: store, schema: schema,
                                     readOnly: configuration.readOnly, temporaryDirectory: temporary)
            do {
                let bound = try shared.bind(declared, configuration: configuration)
                registry[identity] = (shared, 1)
                return (shared, bound)
            } catch {
                try? store.close()
                if let temporary { try? FileManager.default.removeItem(at: temporary) }
                throw error
            }
        }
    }

    /// The schema the configuration's classes declare (table numbers not yet assigned).
    static func declaredSchema(_ configuration: Realm.Configuration) throws -> [ObjectType] {
        var seen = Set<String>()
        var types: [ObjectType] = []
        for type in configuration.objectTypes {
            let info = try ObjectType.discover(type)
            guard seen.insert(info.schema.className).inserted else {
                throw RealmError.invalidSchema("two object types are named '\(info.schema.className)'")
            }
            types.append(info)
        }
        for info in types {
            for property in info.schema.properties where [.object, .embedded, .linkingObjects].contains(property.kind) {
                guard let target = property.objectClassName, seen.contains(target) else {
                    throw RealmError.invalidSchema("\(info.schema.className).\(property.name) links to '\(property.objectClassName ?? "?")', which is not in Configuration.objectTypes")
                }
            }
        }
        if let problem = Schema(objectSchemas: types.map(\.schema), version: 0).relationsProblem() {
            throw RealmError.invalidSchema(problem)
        }
        return types
    }

    static func loadSchema(_ store: Store) throws -> Schema? {
        do {
            guard let bytes = try store.get(table: StoreLayout.metadataTable, key: StoreLayout.schemaKey) else { return nil }
            return try JSONDecoder().decode(Schema.self, from: Data(bytes))
        } catch let error as StoreError {
            throw RealmError.storage(error)
        } catch {
            throw RealmError.invalidSchema("the schema stored in \(store.directory.path) cannot be read: \(error)")
        }
    }

    static func writeSchema(_ schema: Schema, in transaction: Transaction) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = try encoder.encode(schema)
        try transaction.put(table: StoreLayout.metadataTable, key: StoreLayout.schemaKey, value: Array(bytes))
    }

    /// Compares the stored and declared schemas; adds new types, migrates or refuses.
    private static func prepare(store: Store, stored: Schema?, declared: [ObjectType], configuration: Realm.Configuration) throws -> Schema {
        let version = configuration.schemaVersion
        guard let stored else {
            let schema = assignTableNumbers(declared.map(\.schema), existing: Schema(objectSchemas: [], version: version), version: version)
            if !configuration.readOnly {
                try perform(store) { try writeSchema(schema, in: $0) }
            }
            return schema
        }
        let target = assignTableNumbers(declared.map(\.schema), existing: stored, version: max(version, stored.version))
        let storedSubset = Schema(objectSchemas: stored.objectSchemas.filter { target[$0.className] != nil }, version: stored.version)
        let differences = target.differences(from: storedSubset).filter { !$0.hasPrefix("Class ") }
            + orderDifferences(declared: declared.map(\.schema), stored: stored)
        if version < stored.version {
            throw RealmError.invalidSchema("Provided schema version \(version) is less than last set version \(stored.version)")
        }
        if differences.isEmpty && version == stored.version {
            if target == stored { return stored }
            // Only new classes: no data moves.
            if !configuration.readOnly { try perform(store) { try writeSchema(target, in: $0) } }
            return target
        }
        if configuration.readOnly {
            throw differences.isEmpty ? RealmError.readOnly : RealmError.schemaMismatch(differences)
        }
        if configuration.deleteRealmIfMigrationNeeded && !differences.isEmpty {
            try perform(store) { transaction in
                let snapshot = store.snapshot()
                for table in snapshot.tables {
                    for key in snapshot.keys(table: table) { try transaction.delete(table: table, key: key) }
                }
                try writeSchema(Schema(objectSchemas: target.objectSchemas, version: version), in: transaction)
            }
            return Schema(objectSchemas: target.objectSchemas, version: version)
        }
        if version == stored.version {
            throw RealmError.schemaMismatch(differences)
        }
        let migrated = Schema(objectSchemas: target.objectSchemas, version: version)
        let migration = try Migration(store: store, oldSchema: stored, newSchema: migrated, declared: declared)
        if let block = configuration.migrationBlock {
            do {
                try block(migration, stored.version)
            } catch {
                throw RealmError.migrationFailed("the migration block threw: \(error)")
            }
        }
        try perform(store) { try migration.write(in: $0) }
        return migrated
    }

    /// The declared schemas with table numbers: kept for known classes, new ones for the rest;
    /// stored classes the declaration does not list are kept.
    private static func assignTableNumbers(_ declared: [ObjectSchema], existing: Schema, version: UInt64) -> Schema {
        var next = (existing.objectSchemas.map(\.tableNumber).max() ?? 0) + (existing.objectSchemas.isEmpty ? 0 : 1)
        var result: [ObjectSchema] = []
        for var schema in declared {
            if let known = existing[schema.className] {
                schema.tableNumber = known.tableNumber
            } else {
                schema.tableNumber = next
                next += 1
            }
            result.append(schema)
        }
        for schema in existing.objectSchemas where !declared.contains(where: { $0.className == schema.className }) {
            result.append(schema)
        }
        return Schema(objectSchemas: result, version: version)
    }

    /// Types whose properties are the same but declared in another order: their rows
    /// must be rewritten, which only a migration does.
    static func orderDifferences(declared: [ObjectSchema], stored: Schema) -> [String] {
        declared.compactMap { schema in
            guard let known = stored[schema.className],
                  Set(known.properties.map(\.name)) == Set(schema.properties.map(\.name)),
                  known.properties.map(\.name) != schema.properties.map(\.name) else { return nil }
            return "Properties of '\(schema.className)' are declared in a different order than stored; raise schemaVersion to reorder them."
        }
    }

    private static func perform(_ store: Store, _ body: (Transaction) throws -> Void) throws {
        do {
            try store.write(body)
        } catch {
            throw RealmError.wrap(error)
        }
    }

    /// Binds the declared types to this store's schema; a second configuration may add
    /// classes, but not change existing ones.
    private func bind(_ declared: [ObjectType], configuration: Realm.Configuration) throws -> [BoundType] {
        let cached = boundCache.withLock { cache in declared.compactMap { cache[ObjectIdentifier($0.type)] } }
        if cached.count == declared.count { return cached }
        let bound = try bindChecking(declared)
        boundCache.withLock { cache in
            for type in bound { cache[ObjectIdentifier(type.info.type)] = type }
        }
        return bound
    }

    private func bindChecking(_ declared: [ObjectType]) throws -> [BoundType] {
        try schemaState.withLock { schema in
            var current = schema
            let missing = declared.filter { current[$0.schema.className] == nil }
            if !missing.isEmpty {
                guard !readOnly else {
                    throw RealmError.schemaMismatch(missing.map { "Class '\($0.schema.className)' has been added." })
                }
                var next = (current.objectSchemas.map(\.tableNumber).max() ?? 0) + (current.objectSchemas.isEmpty ? 0 : 1)
                for info in missing {
                    var added = info.schema
                    added.tableNumber = next
                    next += 1
                    current.objectSchemas.append(added)
                }
                let updated = current
                do {
                    try store.write { try SharedStore.writeSchema(updated, in: $0) }
                    log.markUnknown(through: store.lastSequence)
                } catch {
                    throw RealmError.wrap(error)
                }
                schema = current
            }
            var differences: [String] = []
            var bound: [BoundType] = []
            for info in declared {
                let stored = current[info.schema.className]!
                let lines = Schema(objectSchemas: [info.schema], version: 0)
                    .differences(from: Schema(objectSchemas: [stored], version: 0))
                differences.append(contentsOf: lines)
                differences.append(contentsOf: SharedStore.orderDifferences(declared: [info.schema], stored: current))
                bound.append(BoundType(info: info, schema: stored, in: current))
            }
            if !differences.isEmpty { throw RealmError.schemaMismatch(differences) }
            return bound
        }
    }

    // MARK: Listeners

    func addListener(_ listener: any CommitListener) {
        listeners.withLock { $0[ObjectIdentifier(listener)] = WeakListener(listener: listener) }
    }

    func removeListener(_ listener: AnyObject) {
        listeners.withLock { $0[ObjectIdentifier(listener)] = nil }
    }

    /// Tells every listening realm (except the committer) that `sequence` is visible.
    func didCommit(sequence: UInt64, except committer: AnyObject?) {
        let targets = listeners.withLock { entries -> [any CommitListener] in
            entries = entries.filter { $0.value.listener != nil }
            return entries.values.compactMap(\.listener)
        }
        for target in targets where target !== committer {
            target.storeDidCommit(sequence: sequence)
        }
    }
}
