// Realm: a thread-confined view of a store through the object model. It reads one
// consistent snapshot, advances on refresh and at the start of each write, and turns
// each write into exactly one engine transaction (Realm+Write.swift).

import Foundation
import Dispatch

/// A realm: typed objects in a store, read from one consistent snapshot, written in
/// transactions. It belongs to the thread (or serial queue) that opened it.
///
/// ```swift
/// var config = Realm.Configuration(directory: url)
/// config.objectTypes = [User.self, Car.self]
/// let realm = try Realm(configuration: config)
/// try realm.write { try realm.add(user) }
/// let top = realm.objects(User.self).filter(#Predicate { $0.rank > 3 })
/// ```
public final class Realm {
    /// The configuration this realm was opened with.
    public let configuration: Configuration
    let shared: SharedStore
    let confinement: Confinement
    /// The snapshot this realm reads, boxed: reading through a class's `let` borrows the
    /// snapshot instead of copying (and retaining) every reference inside it.
    private var view: SnapshotBox
    var snapshot: Snapshot { view.snapshot }

    final class SnapshotBox {
        let snapshot: Snapshot
        init(_ snapshot: Snapshot) { self.snapshot = snapshot }
    }
    /// The last type looked up by class (most calls ask for the same one again).
    private var lastBound: (id: ObjectIdentifier, bound: BoundType)?
    /// Changes whenever the snapshot moves or a write ends: cached rows are re-read.
    private(set) var generation: UInt64 = 1
    /// Changes with every snapshot move and every change inside a write: results re-evaluate.
    private(set) var contentVersion: UInt64 = 1
    var writeState: WriteState?
    private var nextWriteID: UInt64 = 1
    private var typesByID: [ObjectIdentifier: BoundType] = [:]
    private var typesByName: [String: BoundType] = [:]
    private var typesByTable: [UInt32: BoundType] = [:]
    private(set) var isClosed = false
    let observers = ObserverRegistry()
    private(set) var listener: QueueListener?

    /// Whether a queue-confined realm advances by itself when another thread commits
    /// (thread-confined realms advance on ``refresh()`` and at the start of each write).
    public var autorefresh = true

    /// Opens a realm confined to the calling thread.
    ///
    /// - Throws: ``RealmError/schemaMismatch(_:)`` when the stored schema differs and
    ///   `schemaVersion` was not raised; ``RealmError/invalidSchema(_:)`` for a model class
    ///   that cannot be used; ``RealmError/storage(_:)`` for engine failures (locked, damaged…).
    public convenience init(configuration: Configuration = Configuration()) throws {
        try self.init(configuration: configuration, confinement: .current())
    }

    /// Opens a realm confined to `queue`, a serial queue; call it on that queue. The realm
    /// advances and delivers notifications on the queue when other threads commit.
    ///
    /// - Throws: ``RealmError/incorrectThread`` when not called on `queue`; as ``init(configuration:)``.
    public convenience init(configuration: Configuration = Configuration(), queue: DispatchQueue) throws {
        guard let confinement = Confinement.queue(queue) else { throw RealmError.incorrectThread }
        try self.init(configuration: configuration, confinement: confinement)
    }

    private init(configuration: Configuration, confinement: Confinement) throws {
        self.configuration = configuration
        self.confinement = confinement
        let (shared, bound) = try SharedStore.open(configuration)
        self.shared = shared
        view = SnapshotBox(shared.store.snapshot())
        for type in bound {
            typesByID[ObjectIdentifier(type.info.type)] = type
            typesByName[type.className] = type
            typesByTable[type.table] = type
        }
        if let queue = confinement.dispatchQueue {
            let listener = QueueListener(realm: self, queue: queue)
            self.listener = listener
            shared.addListener(listener)
        }
    }

    deinit {
        writeState?.transaction.rollback()
        if let listener { shared.removeListener(listener) }
        if !isClosed { shared.release() }
    }

    // MARK: Confinement

    /// Traps when called from another thread (property accessors cannot throw).
    func verifyThread() {
        if !confinement.isCurrent { preconditionFailure("Realm accessed from incorrect thread") }
        if isClosed { preconditionFailure("Realm has been invalidated: its objects and results can no longer be read") }
    }

    /// Throws ``RealmError/incorrectThread`` when called from another thread.
    func checkThread() throws {
        guard confinement.isCurrent else { throw RealmError.incorrectThread }
        guard !isClosed else { throw RealmError.invalidated }
    }

    // MARK: State

    /// The name of an in-memory realm, or nil.
    public var inMemoryIdentifier: String? { configuration.inMemoryIdentifier }

    /// Whether the realm was opened read-only.
    public var readOnly: Bool { configuration.readOnly }

    /// The schema of the store (every stored type, including ones this realm does not use).
    public var schema: Schema { shared.schema }

    /// The engine store underneath, for statistics, compaction and verification.
    public var store: Store { shared.store }

    /// The sequence number of the commit this realm reads.
    public var snapshotSequence: UInt64 { snapshot.sequence }

    /// Closes this realm: its objects and results are invalidated. The store closes when
    /// its last realm goes away.
    public func invalidate() {
        if let write = writeState {
            write.transaction.rollback()
            writeState = nil
        }
        guard !isClosed else { return }
        isClosed = true
        shared.release()
        observers.removeAll()
        if let listener { shared.removeListener(listener) }
        generation &+= 1
        contentVersion &+= 1
    }

    // MARK: Types

    func boundType(for type: Object.Type) throws -> BoundType {
        let id = ObjectIdentifier(type)
        if let last = lastBound, last.id == id { return last.bound }
        if let bound = typesByID[id] {
            lastBound = (id, bound)
            return bound
        }
        throw RealmError.unknownType(type.className)
    }

    func boundTypeOrTrap(_ type: Object.Type) -> BoundType {
        do { return try boundType(for: type) } catch { preconditionFailure("\(error)") }
    }

    func boundType(named name: String) -> BoundType? { typesByName[name] }
    func boundType(table: UInt32) -> BoundType? { typesByTable[table] }
    var boundTypes: [BoundType] { Array(typesByID.values) }

    // MARK: Reading rows and objects

    /// The stored row of `key` in the realm's snapshot (inside a write: the newest commit).
    func storedRow(table: UInt32, key: [UInt8]) -> StoredValue? {
        do {
            return try view.snapshot.storedValue(table: table, key: key)
        } catch {
            preconditionFailure("reading \(typesByTable[table]?.className ?? "table \(table)"): \(error)")
        }
    }

    /// Whether `key` exists now (pending writes included).
    func exists(_ bound: BoundType, key: [UInt8]) -> Bool {
        if let pending = writeState?.rows[RowKey(table: bound.table, key: key)] { return !pending.isDeleted }
        return view.snapshot.contains(table: bound.table, key: key)
    }

    /// The managed object for `key`, or nil if there is none.
    func object(bound: BoundType, key: [UInt8]) -> Object? {
        if let pending = writeState?.rows[RowKey(table: bound.table, key: key)] {
            return pending.isDeleted ? nil : makeObject(bound: bound, key: key, row: nil)
        }
        // One look-up: the row read now is the one the object shows until the realm moves.
        guard let row = storedRow(table: bound.table, key: key) else { return nil }
        return makeObject(bound: bound, key: key, row: row)
    }

    func makeObject(bound: BoundType, key: [UInt8], row: StoredValue?, pinned: SnapshotBox? = nil) -> Object {
        let object = ObjectConstruction.makeManaged(bound.info.type)
        object._state = ObjectState(realm: self, bound: bound, key: key, row: row, pinned: pinned)
        return object
    }

    /// The object a link points to (nil if it was deleted).
    func linkedObject<T: Object>(_ type: T.Type, key: [UInt8]) -> T? {
        guard let bound = typesByName[type.className] else { return nil }
        return object(bound: bound, key: key) as? T
    }

    /// The object with primary key `primaryKey`, or nil.
    ///
    /// `primaryKey` is an `Int` (or another integer width), `String` or `UUID` matching the
    /// type's primary key. Traps on the wrong thread or for a type not in the schema.
    public func object<T: Object, KeyType>(ofType type: T.Type, forPrimaryKey primaryKey: KeyType) -> T? {
        verifyThread()
        guard let value = PrimaryKeyValue(any: primaryKey) else { return nil }
        return object(ofType: type, forPrimaryKeyValue: value)
    }

    /// The object with this primary key (or hidden object id), or nil — the way to find an
    /// object handed over from another thread.
    public func object<T: Object>(ofType type: T.Type, forPrimaryKeyValue primaryKey: PrimaryKeyValue) -> T? {
        verifyThread()
        let bound = boundTypeOrTrap(type)
        // The bound type was found for T itself, so the object is a T.
        guard writeState == nil else {
            return object(bound: bound, key: primaryKey.keyBytes).map { unsafeDowncast($0, to: T.self) }
        }
        let row: StoredValue?
        do {
            row = try primaryKey.withKeyBytes { try view.snapshot.storedValue(table: bound.table, key: $0) }
        } catch {
            preconditionFailure("reading \(bound.className) \(primaryKey): \(error)")
        }
        guard let row else { return nil }
        let object = ObjectConstruction.makeManaged(bound.info.type)
        object._state = ObjectState(realm: self, bound: bound, primaryKey: primaryKey, row: row)
        return unsafeDowncast(object, to: T.self)
    }

    /// Every object of `type`, as live ``Results``.
    public func objects<T: Object>(_ type: T.Type) -> Results<T> {
        verifyThread()
        return Results(realm: self, bound: boundTypeOrTrap(type))
    }

    // MARK: Advancing

    /// Moves to the newest commit and delivers notifications for what changed.
    /// Returns whether there was anything newer.
    @discardableResult
    public func refresh() -> Bool {
        verifyThread()
        guard !isClosed, writeState == nil else { return false }
        return advance()
    }

    /// Moves the snapshot to the newest commit; notifies observers with what changed.
    @discardableResult
    func advance(to target: Snapshot? = nil) -> Bool {
        let newest = target ?? shared.store.snapshot()
        guard newest.sequence > snapshot.sequence else { return false }
        let old = snapshot
        let changes = shared.log.changes(after: old.sequence, through: newest.sequence)
        view = SnapshotBox(newest)
        generation &+= 1
        contentVersion &+= 1
        observers.deliver(realm: self, old: old, changes: changes)
        return true
    }

    func bumpContentVersion() { contentVersion &+= 1 }

    /// Changes whenever anything this realm reads may have changed (caches compare it).
    var readVersion: UInt64 { contentVersion &+ (writeState?.changeCounter ?? 0) << 32 }

    func beginWriteState(_ transaction: Transaction) -> WriteState {
        let state = WriteState(id: nextWriteID, transaction: transaction)
        nextWriteID += 1
        return state
    }

    func endWrite() {
        writeState = nil
        generation &+= 1
        contentVersion &+= 1
    }
}

/// Delivers other threads' commits to a queue-confined realm.
final class QueueListener: CommitListener, @unchecked Sendable {
    private weak var realm: Realm?
    private let queue: DispatchQueue
    private let scheduled = Locked(false)

    init(realm: Realm, queue: DispatchQueue) {
        self.realm = realm
        self.queue = queue
    }

    func storeDidCommit(sequence: UInt64) {
        let alreadyScheduled = scheduled.withLock { flag -> Bool in
            defer { flag = true }
            return flag
        }
        guard !alreadyScheduled else { return }
        queue.async { [self] in
            scheduled.withLock { $0 = false }
            guard let realm, realm.autorefresh, !realm.isClosed, realm.writeState == nil else { return }
            realm.advance()
        }
    }
}
