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
    /// The newest projection of each table (built by queries; a snapshot never changes, so
    /// every realm reading the same commit shares it).
    private let projections = Locked<[UInt32: TableProjection]>([:])
    /// Projections built from a scan (not advanced from an older one), for tests.
    let projectionBuilds = Locked(0)
    /// Projections read from their persisted files, for tests.
    let projectionReads = Locked(0)
    /// Each class bound once: a stored type never changes while the store is open (schema
    /// changes happen at the first open), so later realms reuse the checked binding.
    /// Opening a realm per request costs a few microseconds because of this.
    private let boundCache = Locked<[ObjectIdentifier: BoundType]>([:])
    /// For in-memory realms: the directory to remove when the store closes.
    private let temporaryDirectory: URL?

    struct WeakListener { weak var listener: (any CommitListener)? }

    /// One store's place in the registry. Its lock serializes the opening and closing of
    /// that store only: a slow recovery or migration of one store never holds up the opens
    /// and closes of another, and no lock is held while waiting for a write gate.
    final class Slot: @unchecked Sendable {
        // Guarded by `lock`.
        let lock = NSLock()
        var shared: SharedStore?
        var realms = 0
        /// Taken out of the registry (closed, or its first open failed): an opener that
        /// finds it retired starts again with a new slot.
        var retired = false
    }

    /// The open stores, by identity. Held only to find or add a slot, never while opening.
    private static let registry = Locked<[String: Slot]>([:])

    /// The store open in this process under `identity`, if any.
    static func open(identity: String) -> SharedStore? {
        guard let slot = registry.withLock({ $0[identity] }) else { return nil }
        return slot.lock.withLock { slot.retired ? nil : slot.shared }
    }
    /// This store's slot.
    private let slot: Slot

    var schema: Schema { schemaState.withLock { $0 } }

    private init(identity: String, store: Store, schema: Schema, readOnly: Bool, temporaryDirectory: URL?, slot: Slot) {
        self.identity = identity
        self.store = store
        self.readOnly = readOnly
        self.temporaryDirectory = temporaryDirectory
        self.slot = slot
        schemaState = Locked(schema)
        let log = ChangeLog(startingAt: store.lastSequence)
        self.log = log
        // Every commit, through a realm or through the engine API, is recorded before the
        // committer releases the gate: a realm advancing to it never waits for its record.
        store.observeCommits { [schemaState] sequence, note in
            if let tailed = note as? TailedCommit {
                log.record(sequence, CommitChanges(tailed: tailed, schema: schemaState.withLock { $0 }))
            } else {
                log.record(sequence, note as? CommitChanges)
            }
        }
        // Read-only beside a writer in another process: its commits are read as it makes
        // them durable, and the realms that advance by themselves are told, as of a commit
        // made here.
        store.watchWriter { [weak self] sequence in self?.didCommit(sequence: sequence, except: nil) }
    }

    /// One more realm uses this store (a frozen realm made from an open one); balanced by
    /// ``release()``.
    func retain() {
        slot.lock.withLock {
            guard slot.shared === self else { return }
            slot.realms += 1
        }
    }

    /// Called once by every realm that `open` returned this store to; the last one closes
    /// it, before returning (its lock file is released when this returns).
    func release() {
        slot.lock.lock()
        defer { slot.lock.unlock() }
        guard slot.shared === self else { return }
        slot.realms -= 1
        guard slot.realms == 0 else { return }
        // Still listed (its lock held): an open of the same store in this process waits for
        // the projections to be written instead of finding no store and racing the close.
        persistProjections()
        slot.shared = nil
        SharedStore.retire(slot, identity: identity)
        try? store.close()
        if let temporaryDirectory { try? FileManager.default.removeItem(at: temporaryDirectory) }
    }

    /// Takes `slot` out of the registry (its lock held).
    private static func retire(_ slot: Slot, identity: String) {
        slot.retired = true
        registry.withLock { if $0[identity] === slot { $0[identity] = nil } }
    }

    /// The shared store for `configuration`, opened (and migrated) if no realm has it open,
    /// with the configuration's types bound to it.
    static func open(_ configuration: Realm.Configuration) throws -> (SharedStore, [BoundType]) {
        guard let identity = configuration.storeIdentity else {
            throw RealmError.invalidValue("Realm.Configuration needs a directory or an inMemoryIdentifier (for Realm(), set Realm.Configuration.defaultConfiguration first)")
        }
        let declared = try declaredSchema(configuration)
        while true {
            let slot = registry.withLock { registry -> Slot in
                if let slot = registry[identity] { return slot }
                let slot = Slot()
                registry[identity] = slot
                return slot
            }
            slot.lock.lock()
            if slot.retired {
                slot.lock.unlock()
                continue
            }
            let shared: SharedStore
            do {
                if let existing = slot.shared {
                    try existing.checkKey(configuration)
                    shared = existing
                } else {
                    shared = try openFirst(configuration, identity: identity, declared: declared, slot: slot)
                    slot.shared = shared
                }
                slot.realms += 1
                slot.lock.unlock()
            } catch {
                if slot.shared == nil { retire(slot, identity: identity) }
                slot.lock.unlock()
                throw error
            }
            // Outside the slot's lock: binding may write the schema, which waits for the gate.
            do {
                return (shared, try shared.bind(declared, configuration: configuration))
            } catch {
                shared.release()
                throw error
            }
        }
    }

    /// The key is checked against the one the open store was opened with, as a fresh open
    /// would check it against the files.
    private func checkKey(_ configuration: Realm.Configuration) throws {
        guard store.encryptionKey != configuration.encryptionKey else { return }
        throw RealmError.storage(.wrongKey(configuration.encryptionKey == nil
            ? "the realm at \(identity) is open with an encryption key and none was given"
            : "the realm at \(identity) is open with \(store.encryptionKey == nil ? "no encryption key" : "another encryption key")"))
    }

    /// Opens the engine store (recovering it), checks or migrates its schema; the slot's
    /// lock is held.
    private static func openFirst(_ configuration: Realm.Configuration, identity: String,
                                  declared: [ObjectType], slot: Slot) throws -> SharedStore {
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
        do {
            let stored = try loadSchema(store)
            let schema = try prepare(store: store, stored: stored, declared: declared, configuration: configuration)
            if !configuration.readOnly {
                // Ordered indexes without a tree (a store written before them, a tree dropped as
                // damaged): built now. A failure (a full disk) leaves them missing — queries
                // then scan — rather than refusing the realm for a derived structure.
                do {
                    try OrderedIndex.buildMissing(store: store, schema: schema)
                } catch {
                    configuration.logger?.warning("the ordered indexes could not be built (\(error)); range queries scan until an open builds them",
                                                  metadata: ["store": "\(directory?.path ?? identity)"])
                }
            }
            return SharedStore(identity: identity, store: store, schema: schema,
                               readOnly: configuration.readOnly, temporaryDirectory: temporary, slot: slot)
        } catch {
            try? store.close()
            if let temporary { try? FileManager.default.removeItem(at: temporary) }
            throw error
        }
    }

    /// The schema the configuration's classes declare (table numbers not yet assigned).
    static func declaredSchema(_ configuration: Realm.Configuration) throws -> [ObjectType] {
        // Checked once per list of types: a service opens a realm per request, and checking
        // the relations again each time was half the cost of an open.
        let typeList = configuration.objectTypes.map { ObjectIdentifier($0) }
        if let known = declaredSchemas.withLock({ $0[typeList] }) { return known }
        let types = try checkedDeclaredSchema(configuration)
        declaredSchemas.withLock { cache in
            if cache.count >= 256 { cache.removeAll() }   // bounded, for code that makes many configurations
            cache[typeList] = types
        }
        return types
    }

    /// The declared types of each list of classes a configuration named, once checked.
    private static let declaredSchemas = Locked<[[ObjectIdentifier]: [ObjectType]]>([:])

    private static func checkedDeclaredSchema(_ configuration: Realm.Configuration) throws -> [ObjectType] {
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
                    for key in try snapshot.keys(table: table) { try transaction.delete(table: table, key: key) }
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
        if declared.contains(where: { info in schema[info.schema.className] == nil }) {
            try addClasses(declared)
        }
        let current = schema
        var differences: [String] = []
        var bound: [BoundType] = []
        for info in declared {
            guard let stored = current[info.schema.className] else {
                throw RealmError.invalidSchema("'\(info.schema.className)' is not in the stored schema")
            }
            let lines = Schema(objectSchemas: [info.schema], version: 0)
                .differences(from: Schema(objectSchemas: [stored], version: 0))
            differences.append(contentsOf: lines)
            differences.append(contentsOf: SharedStore.orderDifferences(declared: [info.schema], stored: current))
            bound.append(BoundType(info: info, schema: stored, in: current))
        }
        if !differences.isEmpty { throw RealmError.schemaMismatch(differences) }
        return bound
    }

    /// Adds the declared classes the stored schema lacks, in one commit. The write gate is
    /// taken first and the schema's lock only briefly inside it, so a writer reading the
    /// schema never waits for an open that waits for that writer.
    private func addClasses(_ declared: [ObjectType]) throws {
        guard !readOnly else {
            let missing = declared.filter { schema[$0.schema.className] == nil }
            throw RealmError.schemaMismatch(missing.map { "Class '\($0.schema.className)' has been added." })
        }
        var published: (old: Schema, new: Schema)?
        do {
            try store.write { transaction in
                // Under the gate: another open may have added some of them meanwhile.
                var current = schema
                let old = current
                let missing = declared.filter { current[$0.schema.className] == nil }
                guard !missing.isEmpty else { return }
                var next = (current.objectSchemas.map(\.tableNumber).max() ?? 0) + (current.objectSchemas.isEmpty ? 0 : 1)
                for info in missing {
                    var added = info.schema
                    added.tableNumber = next
                    next += 1
                    current.objectSchemas.append(added)
                }
                try SharedStore.writeSchema(current, in: transaction)
                // No object changed: realms advance through this commit without a reload.
                transaction.commitNote = CommitChanges()
                // Published while the gate is held, so the next schema writer starts from
                // it; taken back below if the commit fails.
                schemaState.withLock { $0 = current }
                published = (old, current)
            }
        } catch {
            if let published { schemaState.withLock { if $0 == published.new { $0 = published.old } } }
            throw RealmError.wrap(error)
        }
    }

    // MARK: Projections

    /// The newest projection kept for `table`, if one was made (never makes one).
    func keptProjection(table: UInt32) -> TableProjection? {
        projections.withLock { $0[table] }
    }

    /// Rows a column scan reads in the time a hash-index answer spends on one key (measured
    /// on this machine class: ~0.3 ns a code compared, ~340 ns a key fetched, decoded and
    /// ordered: `strata-bench --profile-equality`).
    static let scanRowsPerIndexHit = 512

    /// The same, when each key the index answers is then read as a row anyway (the query
    /// sorts, or has other filters): a row read (~0.7 µs: the key's record found, checked,
    /// decoded) costs what a scan spends on ~2,000 codes, and the scan's matches are sorted
    /// and filtered on columns without reading a row. (Measured on the service benchmark's
    /// city list, 200 of 10k users sorted by rank: reading the 200 rows was most of a
    /// request's query time.)
    static let scanRowsPerReadIndexHit = 2048

    /// An indexed property of a table.
    private struct IndexedProperty: Hashable {
        let table: UInt32
        let property: Int
    }

    /// One range of one ordered index, at one commit.
    private struct OrderedRange: Hashable {
        let table: UInt32
        let property: Int
        let lower: [UInt8], lowerInclusive: Bool
        let upper: [UInt8], upperInclusive: Bool
    }

    /// The counts ordered indexes gave for ranges at commit `sequence` (nil: the tree did
    /// not read). Every `Results` plans on its own, and a request handler makes a new one for
    /// each request: the count of its range is read from the tree once per commit, not once
    /// per query. Cleared when a newer commit asks; at most `orderedCountLimit` ranges.
    private let orderedCounts = Locked<(sequence: UInt64, counts: [OrderedRange: Int?])>((0, [:]))
    private static let orderedCountLimit = 1024

    /// The count of `range` in the ordered index of `property` of `table` at commit
    /// `sequence`: kept, or made by `count` and kept.
    func orderedCount(table: UInt32, property: Int, range: OrderedIndex.Range, sequence: UInt64, _ count: () -> Int?) -> Int? {
        let key = OrderedRange(table: table, property: property, lower: range.lower.bytes, lowerInclusive: range.lower.inclusive,
                               upper: range.upper.bytes, upperInclusive: range.upper.inclusive)
        if let known = orderedCounts.withLock({ $0.sequence == sequence ? $0.counts[key] : nil }) { return known }
        let counted = count()
        orderedCounts.withLock { kept in
            if kept.sequence != sequence {
                // Only a newer commit replaces the kept ones (a reader behind keeps its own result).
                guard sequence > kept.sequence else { return }
                kept = (sequence, [:])
            }
            if kept.counts.count >= Self.orderedCountLimit { kept.counts.removeAll() }
            kept.counts[key] = .some(counted)
        }
        return counted
    }

    /// Indexed properties whose index answered with more than one key per
    /// `scanRowsPerReadIndexHit` rows, with the fewest rows per key seen: the next equality
    /// on one that a scan would answer faster projects its column.
    private let crowdedIndexes = Locked<[IndexedProperty: Int]>([:])

    /// Whether an equality on the indexed `property` of `table` is better answered by
    /// scanning its projected column than by the hash index: the column is projected (or
    /// the index was found crowded) and holds strings with few distinct values, so a value
    /// matches more than one row per `scanRowsPerIndexHit` on average — or per
    /// `scanRowsPerReadIndexHit` when the query reads each match's row after the index
    /// (`readsRows`: a sort, another filter).
    func scanBeatsIndex(table: UInt32, property: Int, readsRows: Bool) -> Bool {
        let rowsPerHit = readsRows ? Self.scanRowsPerReadIndexHit : Self.scanRowsPerIndexHit
        if let kept = keptProjection(table: table), let column = kept.projectedColumn(property) {
            guard case .string(_, let dictionary) = column else { return false }
            return Self.isCrowded(distinctValues: dictionary.count, rowsPerHit: rowsPerHit)
        }
        return crowdedIndexes.withLock { $0[IndexedProperty(table: table, property: property)].map { $0 <= rowsPerHit } ?? false }
    }

    /// Whether a column of `distinctValues` values holds, on average, a match per
    /// `rowsPerHit` rows or more: a value matches rows / distinct rows, one per `distinct`
    /// rows — the same measure as an index answer's rows per key (`noteIndexAnswer`).
    static func isCrowded(distinctValues: Int, rowsPerHit: Int) -> Bool {
        distinctValues <= rowsPerHit
    }

    /// Notes that the index on `property` of `table` answered `hits` keys of `rows`.
    func noteIndexAnswer(table: UInt32, property: Int, hits: Int, rows: Int) {
        guard hits > 64, hits * Self.scanRowsPerReadIndexHit >= rows else { return }
        let rowsPerHit = (rows + hits - 1) / hits
        crowdedIndexes.withLock { known in
            let property = IndexedProperty(table: table, property: property)
            known[property] = min(known[property] ?? .max, rowsPerHit)
        }
    }

    /// The projection of `table` at `snapshot`, with `properties` projected: the kept one
    /// if it is of that commit; else the kept one advanced by the change log's changes in
    /// between, when they are known; else a new one from a scan. The newest is kept.
    func projection(table: UInt32, snapshot: Snapshot, properties: [Int],
                    damaged: (_ key: [UInt8], _ error: any Error) -> Void) -> TableProjection {
        let kept = projections.withLock { $0[table] }
        if let kept, kept.sequence == snapshot.sequence { return kept }
        var made: TableProjection?
        if let kept, kept.sequence < snapshot.sequence,
           let changes = log.changes(after: kept.sequence, through: snapshot.sequence) {
            made = kept.advanced(to: snapshot, changes: changes.tables[table] ?? TableChanges(), damaged: damaged)
        }
        if made == nil, kept == nil, let read = persistedProjection(table: table, snapshot: snapshot) {
            projectionReads.withLock { $0 += 1 }
            made = read
        }
        if made == nil { projectionBuilds.withLock { $0 += 1 } }
        let projection = made ?? TableProjection.build(table: table, snapshot: snapshot, properties: properties, damaged: damaged)
        projections.withLock { kept in
            if (kept[table]?.sequence ?? 0) <= projection.sequence { kept[table] = projection }
        }
        return projection
    }

    /// `table`'s projection at `snapshot` from the file a close left, if one was written
    /// for exactly the state `snapshot` reads and reads back whole (`TableProjection+File`).
    private func persistedProjection(table: UInt32, snapshot: Snapshot) -> TableProjection? {
        guard temporaryDirectory == nil,
              let bytes = store.derivedData(named: TableProjection.fileName(table: table), for: snapshot) else { return nil }
        return TableProjection.read(bytes, table: table, snapshot: snapshot)
    }

    /// Writes each table's newest projection beside the store, when its file does not
    /// already hold it, so the next open's first query reads it instead of scanning the
    /// table. A projection behind the last commit is first advanced to it when the commits
    /// since changed at most a quarter of its objects (the change log knows them; more, and
    /// the next open's scan costs no more than bringing it forward would). Called by the
    /// last release, before the store closes: never on a commit's path. A failure leaves the
    /// file as it was (a cache). Any commit makes every table's file stale (a file is for one
    /// state of the whole store), so each table kept projected is written again.
    private func persistProjections() {
        // (A store written in turns is a follower between its transactions: it writes none.)
        guard temporaryDirectory == nil, !readOnly, !store.isFollowingAWriter else { return }
        let snapshot = store.snapshot()
        let last = snapshot.sequence
        for kept in projections.withLock({ Array($0.values) }) {
            guard kept.count >= TableProjection.persistedMinimumCount, kept.persistableColumns != nil else { continue }
            var projection = kept
            if kept.sequence < last {
                guard let changed = log.changedCount(table: kept.table, after: kept.sequence, through: last),
                      changed * 4 <= kept.count,
                      let changes = log.changes(after: kept.sequence, through: last),
                      let advanced = kept.advanced(to: snapshot, changes: changes.tables[kept.table] ?? TableChanges(),
                                                   damaged: { _, _ in }) else { continue }
                projection = advanced
            }
            guard projection.sequence == last else { continue }
            if let persisted = projection.persistedColumns, let columns = projection.persistableColumns,
               Set(columns.keys).isSubset(of: persisted) { continue }
            guard let bytes = projection.fileBytes() else { continue }
            try? store.writeDerivedData(bytes, named: TableProjection.fileName(table: projection.table), for: projection.snapshot)
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
