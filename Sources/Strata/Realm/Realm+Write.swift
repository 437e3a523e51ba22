// Writes: one realm write is one engine transaction. Changes collect in pending rows
// (WriteState) and reach the engine at commit, with their index updates, in a single
// atomic commit; the change set goes to the shared log for every realm's notifications.

import Foundation

/// What happens when an added object's primary key already exists.
public enum UpdatePolicy: Sendable {
    /// Throw ``RealmError/primaryKeyExists(type:key:)``.
    case error
    /// Update the existing object; only properties whose values differ count as modified.
    case modified
    /// Update the existing object and report every property as modified.
    case all
}

/// The state of a realm's open write transaction.
final class WriteState {
    let id: UInt64
    let transaction: Transaction
    /// The rows this write changed (`PendingRows.swift`).
    let rows = PendingRows()
    var nextIDs: [UInt32: Int64] = [:]

    init(id: UInt64, transaction: Transaction) {
        self.id = id
        self.transaction = transaction
    }

    /// A property of a pending row changed (results re-evaluate).
    func noteChange(bound: BoundType, key: [UInt8]) {
        changeCounter &+= 1
    }
    var changeCounter: UInt64 = 0
    /// Counts deletions in this write (lists of objects skip deleted ones: their cached
    /// elements compare it).
    private(set) var deletions: UInt64 = 0
    func noteDeletion() { deletions &+= 1 }

    /// The update policy of the `add` in progress, for the unmanaged objects it links to.
    var addPolicy: UpdatePolicy?

    // An add or create that fails must leave nothing behind, even if the caller catches the
    // error and commits: while one runs, the first change to each row saves its old state.
    // Rows saved (or created) by the current one carry its mark, so each is saved once.
    private var undo: [(key: RowKey, row: PendingRow?, content: PendingRows.Content, forced: PropertyMask)]?
    private var nextAtomicID: UInt64 = 1
    /// The mark of the add or create in progress (0: none).
    private(set) var atomicID: UInt64 = 0

    /// Starts recording (returns false when an enclosing add already records).
    func beginAtomic() -> Bool {
        guard undo == nil else { return false }
        undo = []
        atomicID = nextAtomicID
        nextAtomicID += 1
        return true
    }

    /// Saves the state of `key` before its first change in the current add or create;
    /// `row` is the pending row already looked up, if the caller has it.
    func willChange(_ key: RowKey, row known: PendingRow?? = nil) {
        guard undo != nil else { return }
        let row = known ?? rows[key]
        if let row {
            guard row.atomicMark != atomicID else { return }
            row.atomicMark = atomicID
        }
        undo!.append((key, row, row?.content ?? .deleted, row?.forced ?? PropertyMask()))
    }

    /// Ends recording; with `failed`, puts every saved row back.
    func endAtomic(failed: Bool) {
        if failed, let undo {
            for entry in undo.reversed() {
                if let row = entry.row {
                    row.restore(entry.content)
                    row.forced = entry.forced
                } else {
                    rows.remove(entry.key)
                }
            }
        }
        if failed {                      // what readers cached from the undone rows is stale
            changeCounter &+= 1
            deletions &+= 1
        }
        undo = nil
        atomicID = 0
    }

    /// A fresh hidden object id for a type without a primary key.
    func nextHiddenID(_ bound: BoundType) throws -> Int64 {
        let number = bound.schema.tableNumber
        let next = try nextIDs[number] ?? Migration.nextHiddenID(schema: bound.schema, transaction: transaction)
        guard next < .max else { throw RealmError.invalidValue("\(bound.className) has used every hidden object id") }
        nextIDs[number] = next + 1
        return next
    }
}

extension Realm {
    /// Whether a write transaction is open.
    public var isInWriteTransaction: Bool { writeState != nil }

    /// Whether the realm holds no objects of any type (Realm Swift's `isEmpty`), counting
    /// the open write's changes.
    public var isEmpty: Bool {
        verifyThread()
        for type in shared.schema.objectSchemas where !type.isEmbedded {
            guard let objects = try? dynamicObjects(ofType: type.className) else { continue }
            if !objects.isEmpty { return false }
        }
        return true
    }

    /// Runs `block` in a write transaction and commits it. If `block` throws, everything it
    /// did is rolled back and the error rethrown. Returns what `block` returns.
    ///
    /// - Throws: what `block` throws; ``RealmError/incorrectThread``,
    ///   ``RealmError/alreadyInWriteTransaction``, ``RealmError/readOnly``,
    ///   ``RealmError/storage(_:)`` (disk full: nothing of the write is kept).
    @discardableResult
    public func write<Result>(withoutNotifying tokens: [NotificationToken] = [], _ block: () throws -> Result) throws -> Result {
        try beginWrite()
        let result: Result
        do {
            result = try block()
        } catch {
            if isInWriteTransaction { cancelWrite() }
            throw error
        }
        if isInWriteTransaction { try commitWrite(withoutNotifying: tokens) }
        return result
    }

    /// Begins a write transaction: waits for other writers, moves to the newest commit
    /// (delivering notifications for what others committed), then takes writes.
    ///
    /// The write belongs to this realm's task (or thread), not to a thread: a task may
    /// `await` before ``commitWrite(withoutNotifying:)`` and resume on another thread. While
    /// it waits for another writer, though, `beginWrite()` blocks its thread; in async code
    /// use ``beginWriteAsync(isolation:)`` or ``asyncWrite(withoutNotifying:_:isolation:)``,
    /// which wait as suspended tasks.
    public func beginWrite() throws {
        try checkCanBeginWrite()
        let transaction: Transaction
        do {
            transaction = try shared.store.beginTransaction()
        } catch {
            fallBackIfStoreFailed()
            throw RealmError.wrap(error)
        }
        start(transaction)
    }

    /// Begins a write transaction like ``beginWrite()``, waiting for other writers as a
    /// suspended task instead of a blocked thread. The task may `await` before it commits
    /// (with ``commitWriteAsync(withoutNotifying:isolation:)`` or ``commitWrite(withoutNotifying:)``)
    /// or cancels; other writers of the store wait for it meanwhile, so keep the write short.
    ///
    /// ```swift
    /// try await realm.beginWriteAsync()
    /// let user = try realm.create(User.self, value: ["id": 1])
    /// user.profile = try await fetchProfile()
    /// try await realm.commitWriteAsync()
    /// ```
    ///
    /// - Throws: `CancellationError` if the task is cancelled while it waits (nothing is
    ///   begun); as ``beginWrite()``.
    public func beginWriteAsync(isolation: isolated (any Actor)? = #isolation) async throws {
        try checkCanBeginWrite()
        let transaction: Transaction
        do {
            transaction = try await shared.store.beginTransactionAsync()
        } catch let error as CancellationError {
            throw error
        } catch {
            fallBackIfStoreFailed()
            throw RealmError.wrap(error)
        }
        // Other code of this task's actor may have begun a write while this one waited.
        guard writeState == nil, !isClosed else {
            transaction.rollback()
            try checkThread()
            throw RealmError.alreadyInWriteTransaction
        }
        start(transaction)
    }

    /// Commits the open write like ``commitWrite(withoutNotifying:)``, waiting for its sync
    /// (`.full` durability, shared with concurrent committers) as a suspended task.
    ///
    /// - Throws: as ``commitWrite(withoutNotifying:)``. A task cancelled while it waits for
    ///   the sync still commits; the call then returns when the commit is durable.
    public func commitWriteAsync(withoutNotifying tokens: [NotificationToken] = [],
                                 isolation: isolated (any Actor)? = #isolation) async throws {
        try checkThread()
        guard let write = writeState else { throw RealmError.notInWriteTransaction }
        let appended = try append(write)
        if let sequence = appended.sequence, appended.mustSync {
            do {
                try await shared.store.waitDurableAsync(sequence)
            } catch {
                throw failedSync(error)
            }
        }
        published(appended.sequence, silencing: tokens)
    }

    private func checkCanBeginWrite() throws {
        try checkThread()
        guard writeState == nil else { throw RealmError.alreadyInWriteTransaction }
        guard !isFrozen else { throw RealmError.frozenRealm }
        guard !readOnly else { throw RealmError.readOnly }
    }

    private func start(_ transaction: Transaction) {
        // The base, not store.snapshot(): a `.full` commit just before this one may still
        // be syncing, and a write must start from it.
        advance(to: transaction.baseSnapshot)
        writeState = beginWriteState(transaction)
        bumpContentVersion()
    }

    /// Commits the open write: all of it or (on error) none of it; durable per the store's
    /// durability when it returns. Observers of this realm are notified before it returns,
    /// except those whose tokens are listed.
    public func commitWrite(withoutNotifying tokens: [NotificationToken] = []) throws {
        try checkThread()
        guard let write = writeState else { throw RealmError.notInWriteTransaction }
        let appended = try append(write)
        if let sequence = appended.sequence, appended.mustSync {
            do {
                try shared.store.waitDurable(sequence)
            } catch {
                throw failedSync(error)
            }
        }
        published(appended.sequence, silencing: tokens)
    }

    /// Runs `block` in a write transaction, like ``write(withoutNotifying:_:)``, without
    /// ever blocking a thread of the cooperative pool: the task waits for other writers
    /// and for the `fdatasync` of its commit (with `.full` durability, shared with
    /// concurrent committers) while suspended. `block` itself runs synchronously, where
    /// the realm belongs. Returns once the commit is durable per the store's durability.
    ///
    /// ```swift
    /// let realm = try Realm(configuration: config)
    /// try await realm.asyncWrite { try realm.add(item, update: .modified) }
    /// ```
    ///
    /// Cancellation: if the calling task is cancelled before the commit starts (while
    /// waiting for other writers, or by the time `block` returns), everything is rolled
    /// back and `CancellationError` is thrown. Once the commit has started it completes;
    /// the call then returns when it is durable.
    ///
    /// - Parameters:
    ///   - tokens: observers of this realm not to notify of this write.
    ///   - block: the changes, run synchronously inside the write; what it returns is returned.
    ///   - isolation: the caller's actor, filled in by the compiler; leave it out.
    /// - Throws: `CancellationError`; what `block` throws (nothing is written);
    ///   ``RealmError/incorrectThread``, ``RealmError/alreadyInWriteTransaction``,
    ///   ``RealmError/readOnly``, ``RealmError/frozenRealm``, ``RealmError/storage(_:)``.
    @discardableResult
    public func asyncWrite<Result>(withoutNotifying tokens: [NotificationToken] = [],
                                   _ block: () throws -> Result,
                                   isolation: isolated (any Actor)? = #isolation) async throws -> Result {
        try await beginWriteAsync()
        guard let transaction = writeState?.transaction else { throw RealmError.notInWriteTransaction }
        let result: Result
        do {
            result = try block()
            try Task.checkCancellation()
        } catch {
            if isInWriteTransaction { cancelWrite() }
            throw error
        }
        // `block` may have committed or cancelled the write itself.
        guard let write = writeState, write.transaction === transaction else { return result }
        try await commitWriteAsync(withoutNotifying: tokens)
        return result
    }

    /// Commit, first half: puts the pending rows into the transaction and appends it with
    /// its change set (recorded in the change log before the gate is released). `mustSync`: the caller waits for
    /// the sync before calling `published`.
    private func append(_ write: WriteState) throws -> (sequence: UInt64?, mustSync: Bool) {
        let changes: CommitChanges
        let appended: (sequence: UInt64?, mustSync: Bool)
        do {
            changes = try flush(write)
            if changes.isEmpty {
                write.transaction.rollback()
                appended = (nil, false)
            } else {
                write.transaction.commitNote = changes
                let (sequence, mustSync) = try write.transaction.commitWithoutWaiting()
                appended = (sequence, mustSync)
            }
        } catch {
            write.transaction.rollback()
            endWrite()
            shared.log.markUnknown(through: shared.store.lastSequence)
            fallBackIfStoreFailed()
            throw RealmError.wrap(error)
        }
        endWrite()
        return appended
    }

    /// Commit, second half: the commit is visible; this realm moves to it and notifies.
    private func published(_ sequence: UInt64?, silencing tokens: [NotificationToken]) {
        observers.skipping(tokens) { _ = advance() }
        if let sequence { shared.didCommit(sequence: sequence, except: listener) }
    }

    /// The sync of an appended commit failed: the store takes no more writes, and whether
    /// the commit survives is decided by recovery at the next open.
    private func failedSync(_ error: any Swift.Error) -> any Swift.Error {
        shared.log.markUnknown(through: shared.store.lastSequence)
        fallBackIfStoreFailed()
        if error is CancellationError { return error }
        return RealmError.wrap(error)
    }

    /// Discards everything done since ``beginWrite()``; objects added meanwhile are invalidated.
    public func cancelWrite() {
        verifyThread()
        guard let write = writeState else { return }
        write.transaction.rollback()
        endWrite()
    }

    /// Puts every pending row into the engine transaction; returns the change set.
    private func flush(_ write: WriteState) throws -> CommitChanges {
        var deltas: [UInt32: SecondaryIndex.Delta] = [:]
        let transaction = write.transaction
        // Per table touched (a handful): its type and its changes, found by a linear search
        // rather than three hashed look-ups per row.
        var touched: [(table: UInt32, bound: BoundType, changes: TableChanges)] = []
        // The table of the rows in hand and its changes, kept in locals while its rows come
        // one after another (a write mostly touches one table): looked up, and written back
        // to `touched`, only when the table changes.
        var current = -1
        var changes = TableChanges()
        func switchTo(_ table: UInt32) -> Bool {
            if current >= 0 { touched[current].changes = changes }
            if let index = touched.firstIndex(where: { $0.table == table }) {
                current = index
            } else {
                guard let bound = boundType(table: table) else { current = -1; return false }
                touched.append((table, bound, TableChanges()))
                current = touched.count - 1
            }
            changes = touched[current].changes
            touched[current].changes = TableChanges()    // so `changes` holds the only copy
            return true
        }
        var bound: BoundType?
        var maintained: [(property: Int, backlink: Bool)] = []
        var propertyCount = 0
        // Only a realm that met a damaged record can be writing over one it could not read.
        let sawDamage = !damage.isEmpty
        try write.rows.forEach { rowKey, pending in
            if current < 0 || touched[current].table != rowKey.table {
                guard switchTo(rowKey.table) else { return }
                bound = touched[current].bound
                maintained = bound!.maintainedIndexes
                propertyCount = bound!.schema.properties.count
            }
            let bound = bound!    // set with `current`
            let key = rowKey.key
            switch (pending.originalRow, pending.isDeleted) {
            case (nil, true):
                return
            case (nil, false):
                try pending.withEncodedRow { row in try transaction.put(table: bound.table, key: key, value: row) }
                // Sized for the write on first use (not before: most writes only insert or only update).
                if changes.inserted.isEmpty { changes.inserted.reserveCapacity(write.rows.count) }
                changes.inserted.insert(ObjectKey(key))
                // A key the store holds in a record that could not be read (noted as damage)
                // comes here as new: its old index entries cannot be named.
                let overUnreadable = sawDamage && (try? snapshot.contains(table: bound.table, key: key)) != false
                for (index, backlink) in maintained {
                    if overUnreadable { deltas[bound.indexTable(index), default: SecondaryIndex.Delta()].recordUnreadableOldValue() }
                    deltas[bound.indexTable(index), default: SecondaryIndex.Delta()].record(key, old: nil, new: pending.field(index)!, backlink: backlink)
                }
            case (let originalRow?, true):
                try transaction.delete(table: bound.table, key: key)
                changes.deleted.insert(ObjectKey(key))
                for (index, backlink) in maintained {
                    // A damaged stored row's old index entries cannot be named (the delta
                    // says so: see `recordUnreadableOldValue`).
                    guard let old = try? RowFormat.field(index, of: originalRow) else {
                        deltas[bound.indexTable(index), default: SecondaryIndex.Delta()].recordUnreadableOldValue()
                        continue
                    }
                    deltas[bound.indexTable(index), default: SecondaryIndex.Delta()].record(key, old: old, new: nil, backlink: backlink)
                }
            case (let originalRow?, false):
                let written = try pending.withEncodedRow { row -> PropertyMask? in
                    var modified = RowFormat.modifiedFields(from: originalRow, to: row, propertyCount: propertyCount)
                    modified.formUnion(pending.forced)
                    guard !modified.isEmpty else { return nil }
                    try transaction.put(table: bound.table, key: key, value: row)
                    return modified
                }
                guard let modified = written ?? nil else { return }
                if changes.modified.isEmpty { changes.modified.reserveCapacity(write.rows.count) }
                changes.modified[ObjectKey(key)] = modified
                for (index, backlink) in maintained where modified.contains(index) {
                    let old = try? RowFormat.field(index, of: originalRow)
                    if old == nil { deltas[bound.indexTable(index), default: SecondaryIndex.Delta()].recordUnreadableOldValue() }
                    deltas[bound.indexTable(index), default: SecondaryIndex.Delta()]
                        .record(key, old: old, new: pending.field(index)!, backlink: backlink)
                }
            }
        }
        if current >= 0 { touched[current].changes = changes }
        try flushIndexesAndCounters(deltas, write: write)
        var commitChanges = CommitChanges()
        for entry in touched {
            commitChanges.propertyCounts[entry.table] = entry.bound.schema.properties.count
            commitChanges.tables[entry.table] = entry.changes
        }
        return commitChanges
    }

    /// The index changes the rows made, and the hidden-id counters the write advanced, into
    /// the engine transaction.
    private func flushIndexesAndCounters(_ deltas: [UInt32: SecondaryIndex.Delta], write: WriteState) throws {
        for (table, delta) in deltas { try delta.apply(table: table, transaction: write.transaction) }
        for (number, next) in write.nextIDs {
            try write.transaction.put(table: StoreLayout.metadataTable, key: StoreLayout.nextIDKey(number),
                                      value: withUnsafeBytes(of: UInt64(bitPattern: next).littleEndian) { Array($0) })
        }
    }

    private func requireWrite() throws -> WriteState {
        try checkThread()
        guard let write = writeState else { throw RealmError.notInWriteTransaction }
        return write
    }

    // MARK: Adding

    /// Adds an unmanaged object (and the unmanaged objects it links to) to the realm; the
    /// object becomes managed. Adding an object this realm already manages does nothing.
    ///
    /// - Parameters:
    ///   - object: an unmanaged object, or one this realm manages.
    ///   - update: what to do when the primary key exists (default `.error`).
    /// - Throws: ``RealmError/primaryKeyExists(type:key:)``, ``RealmError/notInWriteTransaction``,
    ///   ``RealmError/invalidObject(_:)`` for an object of another realm or a deleted one.
    public func add(_ object: Object, update: UpdatePolicy = .error) throws {
        let write = try requireWrite()
        try atomically(write) { _ = try add(object, update: update, write: write) }
    }

    /// Adds each object of `objects`; see ``add(_:update:)``. If one fails, none is added.
    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) throws where S.Element: Object {
        let write = try requireWrite()
        write.rows.reserveCapacity(write.rows.count + objects.underestimatedCount)
        try atomically(write) {
            for object in objects { _ = try add(object, update: update, write: write) }
        }
    }

    /// Runs `body`; if it throws, the pending rows it changed are put back (add, create and
    /// the JSON front ends' imports: a failure leaves nothing of itself in the caller's write).
    func atomically<R>(_ write: WriteState, _ body: () throws -> R) throws -> R {
        let started = write.beginAtomic()
        do {
            let result = try body()
            if started { write.endAtomic(failed: false) }
            return result
        } catch {
            if started {
                write.endAtomic(failed: true)
                bumpContentVersion()
            }
            throw error
        }
    }

    /// Adds `object` and returns its key.
    private func add(_ object: Object, update: UpdatePolicy, write: WriteState) throws -> [UInt8] {
        if let state = object._state { return try keyOfManaged(state, object: object) }
        let bound = try boundType(for: type(of: object))
        if bound.schema.isEmbedded { throw Self.embeddedAlone(bound.className) }
        guard object._slots.count == bound.schema.properties.count else {
            throw Self.misregistered(bound.className, values: object._slots.count, properties: bound.schema.properties.count)
        }
        let key = try newKey(of: object, bound: bound, write: write)
        let rowKey = RowKey(table: bound.table, key: key)
        let existing = write.rows[rowKey]
        let stored = existing == nil ? storedRow(table: bound.table, key: key) : nil
        if existing.map({ !$0.isDeleted }) ?? false || stored != nil, update == .error {
            throw RealmError.primaryKeyExists(type: bound.className, key: PrimaryKeyValue(keyBytes: key)?.description ?? "?")
        }
        // Become managed before converting links, so cycles find this object's key.
        let slots = object._slots
        write.willChange(rowKey, row: .some(existing))
        // Every property is about to be overwritten from the object: the previous values are
        // never decoded (commit compares the stored bytes).
        let pending: PendingRow
        if let existing {
            pending = existing
            if pending.isDeleted { pending.setRow(bound.nullRow) }
        } else {
            pending = write.rows.put(rowKey, row: bound.nullRow, original: stored, atomicMark: write.atomicID)
        }
        object._state = ObjectState(realm: self, bound: bound, key: key, row: nil)
        let outerPolicy = write.addPolicy
        write.addPolicy = update
        defer { write.addPolicy = outerPolicy }
        do {
            // Encoded now: the pending row holds bytes, not a values array per object.
            pending.setRow(try RowFormat.encodeChecked(fields(of: slots, bound: bound, update: update, write: write),
                                                       of: "the \(bound.className) row"))
        } catch {
            object._state = nil
            throw error
        }
        if let state = object._state { adoptEmbeddedChildren(slots, parent: state) }
        if update == .all { pending.forced.formUnion(PropertyMask(all: bound.schema.properties.count)) }
        write.noteChange(bound: bound, key: key)
        bumpContentVersion()
        return key
    }

    /// An object already managed adds as itself, if it is this realm's and not deleted.
    private func keyOfManaged(_ state: ObjectState, object: Object) throws -> [UInt8] {
        guard state.realm === self else {
            throw RealmError.invalidObject("\(type(of: object).className) is managed by another Realm; find it here with object(ofType:forPrimaryKeyValue:)")
        }
        guard !state.isInvalidated else { throw RealmError.invalidObject("\(state.bound.className) was deleted") }
        return state.key
    }

    /// An unmanaged object's engine key: its primary key, or a new hidden id.
    private func newKey(of object: Object, bound: BoundType, write: WriteState) throws -> [UInt8] {
        guard let index = bound.primaryKeyIndex else { return PrimaryKeyValue.int(try write.nextHiddenID(bound)).keyBytes }
        guard case .value(let field) = object._slots[index],
              let value = PrimaryKeyValue(keyField: field, optional: bound.schema.properties[index].isOptional) else {
            throw RealmError.missingPrimaryKey(type: bound.className, property: bound.schema.properties[index].name)
        }
        return value.keyBytes
    }

    /// The row of an unmanaged object's values: linked unmanaged objects added under the
    /// same policy, embedded objects stored inline (a managed one is another's: refused).
    private func fields(of slots: [_Slot], bound: BoundType, update: UpdatePolicy, write: WriteState) throws -> [FieldValue] {
        var fields = bound.nullFields
        for (index, slot) in slots.enumerated() {
            switch slot {
            case .value(let field): fields[index] = field
            case .object(let target as EmbeddedObject):
                if target._state != nil { throw Self.embeddedOwned("\(bound.className).\(bound.schema.properties[index].name)") }
                fields[index] = try target.embeddedField(in: self)
            case .object(let target) where bound.schema.properties[index].kind == .mixed:
                fields[index] = try target.map { try AnyRealmValue.object($0)._field(in: self) } ?? .null
            case .object(let target): fields[index] = try target.map { .link(try add($0, update: update, write: write)) } ?? .null
            case .list(let list):
                if bound.schema.properties[index].kind == .embedded, list._anyElements.contains(where: { ($0 as? Object)?._state != nil }) {
                    throw Self.embeddedOwned("\(bound.className).\(bound.schema.properties[index].name)")
                }
                fields[index] = try list._field(in: self)
            }
        }
        return fields
    }

    /// The error for an unmanaged object whose values are not in schema order: Swift builds
    /// a property's wrapper twice when an initializer assigns it before super.init() (its
    /// slots then end with a marker: see ObjectConstruction).
    static func misregistered(_ className: String, values: Int, properties: Int) -> RealmError {
        .invalidObject("\(className) has \(values) property values for \(properties) properties: an initializer assigns a @Persisted property before super.init(), which registers it twice; assign it after super.init()")
    }

    /// The error for an embedded object added (or created) without a parent.
    static func embeddedAlone(_ className: String) -> RealmError {
        .invalidObject("\(className) is an embedded object type: it cannot be added on its own; assign it to a property of its parent (an Object)")
    }

    /// The error for a managed embedded object stored in a second place.
    static func embeddedOwned(_ property: String) -> RealmError {
        .invalidObject("\(property): Cannot set a link to an existing managed embedded object; an embedded object has one parent (store a copy, such as its deepCopy())")
    }

    /// The key a link to `object` stores, adding the object if it is unmanaged.
    func linkKey(for object: Object) throws -> [UInt8] {
        if let state = object._state {
            guard state.realm === self else {
                throw RealmError.invalidObject("cannot link to a \(state.bound.className) managed by another Realm")
            }
            return state.key
        }
        guard let write = writeState else { throw RealmError.notInWriteTransaction }
        return try add(object, update: write.addPolicy ?? .error, write: write)
    }

    /// Creates (or with `update`, updates) an object from a value: a dictionary of property
    /// names to values, an array of values in property order, or another object. With
    /// `.modified` or `.all`, properties the value does not mention are left as they are.
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) throws -> T {
        let bound = try boundType(for: type)
        // The bound type was found for T itself, so the object is a T.
        let object = try create(bound: bound, value: value, update: update) { type.init()._slots.map(\.unlinkedField) }
        return unsafeDowncast(object, to: T.self)
    }

    /// `create` for a bound type (a class's, or a stored type's for ``dynamicCreate(_:value:update:)``).
    /// `initialFields` gives a new object's fields before the value is applied (a class's
    /// initial values); without it a new object starts from the properties' zero values
    /// and its primary key must be given.
    func create(bound: BoundType, value: Any, update: UpdatePolicy,
                initialFields: (() -> [FieldValue])?) throws -> Object {
        let write = try requireWrite()
        return try atomically(write) {
            if bound.schema.isEmbedded { throw Self.embeddedAlone(bound.className) }
            let values = try bound.schema.namedValues(value)
            // Computed once: a class's initial values come from a new instance.
            var initial: [FieldValue]?
            func initialValues() -> [FieldValue] {
                if let initial { return initial }
                let fields = initialFields?() ?? bound.schema.properties.map(FieldValue.zero)
                initial = fields
                return fields
            }
            // A stored type's zero value is no key: without a class, the key must be given.
            let key = try createdKey(values, bound: bound, write: write) { index in
                initialFields == nil ? nil : initialValues()[index]
            }
            let rowKey = RowKey(table: bound.table, key: key)
            let exists = self.exists(bound, key: key)
            if exists, update == .error {
                throw RealmError.primaryKeyExists(type: bound.className, key: PrimaryKeyValue(keyBytes: key)?.description ?? "?")
            }
            if !exists {
                var fields = initialValues()
                if let index = bound.primaryKeyIndex, let primaryKey = PrimaryKeyValue(keyBytes: key) {
                    fields[index] = primaryKey.field
                }
                write.willChange(rowKey)
                if let original = write.rows[rowKey] {
                    original.fields = fields
                } else {
                    write.rows.put(rowKey, fields: fields, original: nil, atomicMark: write.atomicID)
                }
            }
            let object = makeObject(bound: bound, key: key, row: nil)
            guard let state = object._state else { throw RealmError.invalidated }
            for (name, item) in values {
                let index = bound.schema.index(of: name)!
                if index == bound.primaryKeyIndex { continue }
                try state.setDynamicValue(item, index: index)
            }
            if update == .all, let pending = write.rows[rowKey] {
                for index in values.keys.compactMap({ bound.schema.index(of: $0) }) { pending.forced.insert(index) }
            }
            bumpContentVersion()
            return object
        }
    }

    /// The key of the object `create` makes or updates: the given primary key, or a new
    /// hidden id for a type without one.
    private func createdKey(_ values: [String: Any?], bound: BoundType, write: WriteState,
                            initialKey: (Int) -> FieldValue?) throws -> [UInt8] {
        guard let index = bound.primaryKeyIndex else { return PrimaryKeyValue.int(try write.nextHiddenID(bound)).keyBytes }
        let property = bound.schema.properties[index]
        let field: FieldValue
        if let given = values[property.name] {
            if FieldValue.unwrap(given) == nil {
                // nil is a key only of an optional primary key.
                guard property.isOptional else { throw RealmError.missingPrimaryKey(type: bound.className, property: property.name) }
                field = .null
            } else {
                field = try FieldValue.converting(given, to: property, context: "\(bound.className).\(property.name)")
            }
        } else {
            // Not given: the property's initial value in a new object, as Realm does (a
            // fresh ObjectId for an ObjectId key declared without one).
            guard let initial = initialKey(index) else {
                throw RealmError.missingPrimaryKey(type: bound.className, property: property.name)
            }
            field = initial
        }
        guard let primaryKey = PrimaryKeyValue(keyField: field, optional: property.isOptional) else {
            throw RealmError.missingPrimaryKey(type: bound.className, property: property.name)
        }
        return primaryKey.keyBytes
    }

    /// The field for a plain value given for `property`, resolving links (objects,
    /// dictionaries, primary keys) in this realm.
    func field(for value: Any?, property: PropertySchema, context: String) throws -> FieldValue {
        if property.kind == .embedded { return try embeddedField(for: value, property: property, context: context) }
        if property.kind == .mixed { return try mixedField(for: value, property: property, context: context) }
        guard property.kind == .object else { return try FieldValue.converting(value, to: property, context: context) }
        guard let target = property.objectClassName.flatMap(boundType(named:)) else {
            throw RealmError.unknownType(property.objectClassName ?? "?")
        }
        if property.isList {
            guard let value = FieldValue.unwrap(value) else { return .list([]) }
            let items = try FieldValue.items(of: value, context: "\(context) is a list of \(target.className)")
            return .list(try items.map { item in .link(try self.linkTarget(item, target: target, context: context)) })
        }
        guard let value = FieldValue.unwrap(value) else { return .null }
        return .link(try linkTarget(value, target: target, context: context))
    }

    /// The field of an `AnyRealmValue` property (or a list, set or map of them): objects
    /// held become links naming their table (added if unmanaged), the rest their own kind.
    private func mixedField(for value: Any?, property: PropertySchema, context: String) throws -> FieldValue {
        func one(_ item: Any?, _ context: String) throws -> FieldValue {
            guard let mixed = AnyRealmValue(plain: item) else {
                throw RealmError.typeMismatch(property: context, expected: property.typeDescription,
                                              found: "\(Swift.type(of: item ?? "nil")) \(String(describing: item ?? "nil").prefix(60))")
            }
            return try mixed._field(in: self)
        }
        if property.isMap {
            guard let value = FieldValue.unwrap(value) else { return .map([:]) }
            let entries = try FieldValue.entries(of: value, context: context)
            var fields: [String: FieldValue] = [:]
            for (key, item) in entries {
                try MapKeyRule.check(key, context: context)
                fields[key] = try one(item, "\(context)[\(key)]")
            }
            return .map(fields)
        }
        if property.isList {
            guard let value = FieldValue.unwrap(value) else { return .list([]) }
            let items = try FieldValue.items(of: value, context: "\(context) is a list")
            let fields = try items.enumerated().map { try one($1, "\(context)[\($0)]") }
            return .list(property.isSet ? fields.distinctSetMembers() : fields)
        }
        return try one(value, context)
    }

    /// The field of an embedded property (or a list of them) for a plain value: an
    /// unmanaged embedded object, or a dictionary of its property values (the rest keep the
    /// class's initial values); nil for none.
    private func embeddedField(for value: Any?, property: PropertySchema, context: String) throws -> FieldValue {
        guard let target = property.objectClassName.flatMap(boundTypeOrDynamic(named:)) else {
            throw RealmError.unknownType(property.objectClassName ?? "?")
        }
        func one(_ item: Any?, _ context: String) throws -> FieldValue {
            switch FieldValue.unwrap(item) {
            case nil:
                guard !property.isList else { throw RealmError.invalidValue("\(context): nil in a list of \(target.className)") }
                return .null
            case let object as Object:
                guard type(of: object).className == target.className else {
                    throw RealmError.invalidValue("\(context) holds an embedded \(target.className), not a \(type(of: object).className)")
                }
                if object._state != nil { throw Self.embeddedOwned(context) }
                return try object.embeddedField(in: self)
            case let values as [String: Any]:
                return try embedded(values.mapValues { $0 }, context)
            case let values as [Any?]:
                // Realm's array form: the values in property order.
                return try embedded(target.schema.namedValues(values), context)
            case let item?:
                throw RealmError.invalidValue("\(context) holds an embedded \(target.className): give an unmanaged one, a dictionary or an array of its values, not \(type(of: item))")
            }
        }
        func embedded(_ values: [String: Any?], _ context: String) throws -> FieldValue {
            var fields = target.constantInitialFields ?? BoundType.initialFields(of: target.info.type)
            for (name, item) in values {
                guard let index = target.schema.index(of: name) else {
                    throw RealmError.unknownProperty(type: target.className, property: name)
                }
                fields[index] = try field(for: item, property: target.schema.properties[index], context: "\(context).\(name)")
            }
            return .embedded(fields)
        }
        guard property.isList else { return try one(value, context) }
        guard let value = FieldValue.unwrap(value) else { return .list([]) }
        let items = try FieldValue.items(of: value, context: "\(context) is a list of \(target.className)")
        return .list(try items.enumerated().map { try one($1, "\(context)[\($0)]") })
    }

    /// The key of the object `value` designates: an object, a dictionary or an array of its
    /// values in property order (created or updated), or a primary key of an existing object.
    private func linkTarget(_ value: Any?, target: BoundType, context: String) throws -> [UInt8] {
        switch FieldValue.unwrap(value) {
        case let object as Object:
            return try linkKey(for: object)
        case let dictionary as [String: Any]:
            let created = try create(target.info.type, value: dictionary, update: target.primaryKeyIndex == nil ? .error : .modified)
            return created._state!.key
        case let values as [Any?]:
            let created = try create(target.info.type, value: values, update: target.primaryKeyIndex == nil ? .error : .modified)
            return created._state!.key
        case let key?:
            if let primaryKey = PrimaryKeyValue(any: key), exists(target, key: primaryKey.keyBytes) { return primaryKey.keyBytes }
            throw RealmError.invalidValue("\(context): \(key) is not a \(target.className) or the key of one")
        case nil:
            throw RealmError.invalidValue("\(context): nil in a list of \(target.className)")
        }
    }

    /// An object for a dynamic list element (see `List`).
    func objectFromValue(_ type: Object.Type, _ value: Any?) throws -> Object? {
        let bound = try boundType(for: type)
        return object(bound: bound, key: try linkTarget(value, target: bound, context: "\(bound.className)"))
    }

    // MARK: Deleting

    /// Deletes a managed object; it becomes invalidated. Links to it read as nil.
    public func delete(_ object: Object) throws {
        let write = try requireWrite()
        try delete(object, write: write)
    }

    /// Deletes every object of `objects` (an array, a `List` or ``Results``).
    public func delete<S: Sequence>(_ objects: S) throws where S.Element: Object {
        let write = try requireWrite()
        for object in Array(objects) { try delete(object, write: write) }
    }

    private func delete(_ object: Object, write: WriteState) throws {
        guard let state = object._state, state.realm === self else {
            throw RealmError.invalidObject("can only delete an object managed by this Realm")
        }
        if state.embedding != nil {
            // An embedded object is deleted from its parent: the property becomes nil, or
            // the list loses the element.
            guard !state.isInvalidated else { return }
            state.removeFromParent()
            bumpContentVersion()
            return
        }
        let rowKey = RowKey(table: state.bound.table, key: state.key)
        write.willChange(rowKey)   // inside an add, create or JSON import: undone if it fails
        if let pending = write.rows[rowKey] {
            guard !pending.isDeleted else { return }
            pending.fields = nil
        } else {
            guard let row = storedRow(table: state.bound.table, key: state.key) else { return }
            write.rows.put(rowKey, fields: nil, original: row)
        }
        write.noteChange(bound: state.bound, key: state.key)
        write.noteDeletion()
        bumpContentVersion()
    }

    /// Deletes every object of every type this realm manages.
    public func deleteAll() throws {
        let write = try requireWrite()
        for bound in boundTypes {
            for object in Array(Results<Object>(realm: self, bound: bound)) { try delete(object, write: write) }
        }
    }
}
