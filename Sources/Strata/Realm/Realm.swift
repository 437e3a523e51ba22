// Realm: a thread-confined view of a store through the object model. It reads one
// consistent snapshot, advances on refresh and at the start of each write, and turns
// each write into exactly one engine transaction (Realm+Write.swift).

import Foundation
import Dispatch

/// A realm: typed objects in a store, read from one consistent snapshot, written in
/// transactions. It belongs to where it was opened: a thread, a serial queue, a task
/// (valid across awaits, whichever thread the task resumes on) or an actor.
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

        /// The stored row of `key`, read through the box: `view.snapshot.storedValue(…)`
        /// copied the `Snapshot` (a retain and release of each reference in it) per read.
        func storedValue(table: UInt32, key: UnsafeRawBufferPointer) throws -> StoredValue? {
            try snapshot.storedValue(table: table, key: key)
        }
    }
    /// The last type looked up by class (most calls ask for the same one again).
    private var lastBound: (id: ObjectIdentifier, bound: BoundType)?
    /// Changes whenever the snapshot moves or a write ends: cached rows are re-read.
    private(set) var generation: UInt64 = 1
    /// Changes with every snapshot move and every change inside a write: results re-evaluate.
    private(set) var contentVersion: UInt64 = 1
    var writeState: WriteState?
    /// How many times a managed collection was converted from its stored values (tests
    /// check that reading a list by index converts it once, not once per index).
    var collectionConversions = 0
    /// Realm Swift's asynchronous writes queued on this realm (Realm+AsyncWrite.swift).
    let asyncWrites = AsyncWriteQueue()
    private var nextWriteID: UInt64 = 1
    private var typesByID: [ObjectIdentifier: BoundType] = [:]
    private var typesByName: [String: BoundType] = [:]
    private var typesByTable: [UInt32: BoundType] = [:]
    private var dynamicTypes: [String: BoundType] = [:]
    private(set) var isClosed = false
    let observers = ObserverRegistry()
    private(set) var listener: AutorefreshListener?
    /// Whether this realm is frozen: pinned to one commit, readable anywhere, never written.
    public let isFrozen: Bool
    /// The frozen realm of the current snapshot, made on first freeze (see Frozen.swift).
    var frozenCache: (sequence: UInt64, box: FrozenBox)?
    /// A frozen realm: the box whose lock its `Frozen` values read under (it owns us).
    weak var guardingBox: FrozenBox?

    /// Whether the realm advances by itself when another thread commits: a queue's realm on
    /// its queue, a main-thread realm on the main queue (served by the main run loop or
    /// `dispatchMain()`), an actor's on the actor. Other threads' and tasks' realms advance on
    /// ``refresh()`` and at the start of each write.
    public var autorefresh = true

    /// A new instance (the public initializers return the one already open where the
    /// caller runs, if any: `_RealmInitializers`).
    fileprivate init(configuration: Configuration, confinement: Confinement) throws {
        self.configuration = configuration
        self.confinement = confinement
        isFrozen = false
        let (shared, bound) = try SharedStore.open(configuration)
        self.shared = shared
        view = SnapshotBox(shared.store.snapshot())
        for type in bound {
            typesByID[ObjectIdentifier(type.info.type)] = type
            typesByName[type.className] = type
            typesByTable[type.table] = type
        }
        // A queue's realm advances on its queue; a main-thread realm on the main queue, which
        // the main run loop (or `dispatchMain()`) serves, as Realm's does on Apple platforms.
        let advancesOn = confinement.dispatchQueue
            ?? (Self.isThreadConfinement(confinement) && Thread.isMainThread ? DispatchQueue.main : nil)
        if let queue = advancesOn {
            let listener = AutorefreshListener(realm: self, target: .queue(queue))
            self.listener = listener
            shared.addListener(listener)
        }
    }

    private static func isThreadConfinement(_ confinement: Confinement) -> Bool {
        if case .thread = confinement { return true }
        return false
    }

    /// A frozen copy of `live`: the same store and types, pinned to `live`'s snapshot.
    init(freezing live: Realm) {
        configuration = live.configuration
        confinement = .frozen
        isFrozen = true
        shared = live.shared
        shared.retain()
        view = SnapshotBox(live.snapshot)
        typesByID = live.typesByID
        typesByName = live.typesByName
        typesByTable = live.typesByTable
        autorefresh = false
    }

    /// Makes an actor's realm advance by itself when others commit.
    fileprivate func listen(on actor: any Actor) {
        let listener = AutorefreshListener(realm: self, target: .actor(actor))
        self.listener = listener
        shared.addListener(listener)
    }

    deinit {
        writeState?.transaction.rollback()
        if let listener { shared.removeListener(listener) }
        if !isClosed { shared.release() }
    }

    // MARK: Confinement

    /// Traps when called from another thread, task or actor (property accessors cannot throw).
    func verifyThread() {
        if !confinement.isCurrent { preconditionFailure("Realm accessed from incorrect thread (it is confined to a \(confinement.description))") }
        if isClosed { preconditionFailure("Realm has been invalidated: its objects and results can no longer be read") }
    }

    /// Throws ``RealmError/incorrectThread`` when called from another thread, task or actor.
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

    /// The configured class of a stored type, else the type bound to ``DynamicObject``
    /// (links of dynamic objects, string queries through them).
    func boundTypeOrDynamic(named name: String) -> BoundType? { typesByName[name] ?? (try? dynamicBoundType(name)) }

    /// A stored type bound to ``DynamicObject`` (made once per realm and type).
    func dynamicBoundType(_ className: String) throws -> BoundType {
        if let known = dynamicTypes[className] { return known }
        guard let stored = shared.schema[className] else { throw RealmError.unknownType(className) }
        let bound = BoundType(info: ObjectType.info(for: DynamicObject.self), schema: stored, in: shared.schema)
        dynamicTypes[className] = bound
        typesByTable[bound.table] = typesByTable[bound.table] ?? bound
        return bound
    }
    func boundType(table: UInt32) -> BoundType? { typesByTable[table] }
    var boundTypes: [BoundType] { Array(typesByID.values) }

    // MARK: Reading rows and objects

    /// The stored row of `key` in the realm's snapshot (inside a write: the newest commit);
    /// nil — with the damage recorded in ``readErrors`` — when the record cannot be read.
    func storedRow(table: UInt32, key: [UInt8]) -> StoredValue? {
        do {
            return try view.snapshot.storedValue(table: table, key: key)
        } catch {
            noteDamage(table: table, key: key, error)
            return nil
        }
    }

    /// Damaged stored objects this realm met while reading (at most 100, oldest first).
    /// A read that cannot throw treats such an object as absent — `object(ofType:…)` gives
    /// nil, results skip it — or, for an object already in hand, reads its properties'
    /// zero values; throwing reads (`value(forProperty:)`) throw
    /// ``RealmError/damagedObject(type:key:reason:)``. Nothing traps. A read-only realm
    /// beside a writer in another process whose ``refresh()`` could not read the writer's
    /// log records ``RealmError/storage(_:)`` here and stays where it was.
    public var readErrors: [RealmError] { damage }
    private(set) var damage: [RealmError] = []

    /// Records a damaged object (once per object and reason).
    func noteDamage(table: UInt32, key: [UInt8], _ error: any Swift.Error) {
        let type = typesByTable[table]?.className ?? "table \(table)"
        let name = PrimaryKeyValue(keyBytes: key)?.description ?? key.map { String(format: "%02x", $0) }.joined()
        noteReadError(RealmError.damagedObject(type: type, key: name, reason: "\(error)"))
    }

    /// Records a read that failed where no error can be thrown (once per error).
    private func noteReadError(_ error: RealmError) {
        guard damage.count < 100, !damage.contains(error) else { return }
        damage.append(error)
    }

    /// Whether `key` exists now (pending writes included).
    func exists(_ bound: BoundType, key: [UInt8]) -> Bool {
        if let pending = writeState?.rows[RowKey(table: bound.table, key: key)] { return !pending.isDeleted }
        // A part of the index that is damaged beyond rebuilding answers "exists": reading
        // the row then fails with that damage, where "absent" would be a wrong answer.
        return (try? view.snapshot.contains(table: bound.table, key: key)) ?? true
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
            let view = self.view
            row = try primaryKey.withKeyBytes { try view.storedValue(table: bound.table, key: $0) }
        } catch {
            noteDamage(table: bound.table, key: primaryKey.keyBytes, error)
            return nil
        }
        guard let row else { return nil }
        let object = ObjectConstruction.makeManaged(bound.info.type)
        object._state = ObjectState(realm: self, bound: bound, primaryKey: primaryKey, row: row)
        return unsafeDowncast(object, to: T.self)
    }

    /// Every object of `type`, as live ``Results``.
    public func objects<T: Object>(_ type: T.Type) -> Results<T> {
        verifyThread()
        let bound = boundTypeOrTrap(type)
        precondition(!bound.schema.isEmbedded, "\(bound.className) is an embedded object type: query the objects that hold it (e.g. \"address.city == 'x'\")")
        return Results(realm: self, bound: bound)
    }

    // MARK: Advancing

    /// Moves to the newest commit and delivers notifications for what changed.
    /// Returns whether there was anything newer.
    @discardableResult
    public func refresh() -> Bool {
        verifyThread()
        guard !isClosed, !isFrozen, writeState == nil else { return false }
        if shared.store.hasFailed {
            let before = snapshot.sequence
            fallBackIfStoreFailed()
            return snapshot.sequence != before
        }
        // Beside a writer in another process: read what it has made durable since. A log
        // that does not read leaves the realm where it is (the next refresh tries again) and
        // is reported in `readErrors`.
        if shared.store.isFollowingAWriter {
            do {
                try shared.store.refresh()
            } catch {
                noteReadError((error as? StoreError).map(RealmError.storage) ?? .storage(.io(op: "refresh", path: shared.store.directory.path, errno: EIO)))
            }
        }
        return advance()
    }

    /// Moves the snapshot to the newest commit; notifies observers with what changed.
    @discardableResult
    func advance(to target: Snapshot? = nil) -> Bool {
        let newest = target ?? shared.store.snapshot()
        guard newest.sequence > snapshot.sequence else { return false }
        let old = snapshot
        view = SnapshotBox(newest)
        generation &+= 1
        contentVersion &+= 1
        // Merging the change sets of every commit passed over costs as much as the commits
        // themselves when many writers interleave: only observers need it.
        guard !observers.isEmpty else { return true }
        let changes = shared.log.changes(after: old.sequence, through: newest.sequence)
        observers.deliver(realm: self, old: old, changes: changes)
        return true
    }

    func bumpContentVersion() { contentVersion &+= 1 }

    /// After the store stopped on a failed sync, this realm may show a commit that never
    /// became durable (a write starts from commits still syncing, so as not to lose
    /// updates): it goes back to the last durable commit, which recovery keeps. Observers
    /// are told, with an unknown change set.
    func fallBackIfStoreFailed() {
        guard shared.store.hasFailed else { return }
        let durable = shared.store.snapshot()
        guard durable.sequence != snapshot.sequence else { return }
        let old = snapshot
        view = SnapshotBox(durable)
        generation &+= 1
        contentVersion &+= 1
        if !observers.isEmpty { observers.deliver(realm: self, old: old, changes: nil) }
    }

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

/// Brings a queue- or actor-confined realm up to date when others commit: at most one
/// advance is scheduled at a time, and it runs where the realm belongs.
final class AutorefreshListener: CommitListener, @unchecked Sendable {
    // @unchecked: `realm` is only touched on its queue or actor; `scheduled` is locked.
    enum Target {
        case queue(DispatchQueue)
        case actor(any Actor)
    }
    private weak var realm: Realm?
    private let queue: DispatchQueue?
    private weak var actor: (any Actor)?
    private let scheduled = Locked(false)

    init(realm: Realm, target: Target) {
        self.realm = realm
        switch target {
        case .queue(let queue): self.queue = queue
        case .actor(let actor):
            queue = nil
            self.actor = actor
        }
    }

    func storeDidCommit(sequence: UInt64) {
        let alreadyScheduled = scheduled.withLock { flag -> Bool in
            defer { flag = true }
            return flag
        }
        guard !alreadyScheduled else { return }
        if let queue {
            queue.async { [self] in advance() }
        } else if let actor {
            Task { await self.advance(on: actor) }
        } else {
            scheduled.withLock { $0 = false }
        }
    }

    private func advance(on actor: isolated any Actor) { advance() }

    private func advance() {
        scheduled.withLock { $0 = false }
        guard let realm, realm.autorefresh, !realm.isClosed, realm.writeState == nil else { return }
        realm.advance()
    }
}

extension Realm: Equatable {
    /// Whether two realms are the same instance (Realm Swift's `==`). Two opens of one
    /// configuration in one place are one instance (see ``init(configuration:isolation:)``);
    /// an object's `realm` is the instance that read it.
    public static func == (lhs: Realm, rhs: Realm) -> Bool { lhs === rhs }
}

/// Realm's initializers. They return the instance already open for the same configuration
/// where the caller runs (the thread, queue, task or actor), as Realm Swift's per-thread
/// cache does, or open a new one (`RealmInstances`). A protocol extension, because only
/// there may a class's initializer return an existing object.
public protocol _RealmInitializers {}

extension Realm: _RealmInitializers {}

extension _RealmInitializers where Self == Realm {
    /// Opens a realm confined to where it is called from, or returns the one already open
    /// there with the same configuration (Realm Swift's per-thread instance):
    ///
    /// - in code isolated to an actor: that actor (the main actor: the main thread);
    /// - in a task, outside any actor: that task. The realm, and the objects and results
    ///   read from it, stay valid across every `await`, whichever thread the task resumes
    ///   on; synchronous code the task calls may use them too;
    /// - anywhere else: the calling thread.
    ///
    /// Two calls in one place with the same configuration give one instance (`===`): a
    /// write begun through one is the write of the other, as in Realm. Opening is cheap
    /// once the store is open in the process (one realm per request is fine): the store is
    /// shared per directory.
    ///
    /// - Parameters:
    ///   - configuration: where the store is and what it holds.
    ///   - isolation: the caller's actor, filled in by the compiler; leave it out.
    /// - Throws: ``RealmError/schemaMismatch(_:)`` when the stored schema differs and
    ///   `schemaVersion` was not raised; ``RealmError/invalidSchema(_:)`` for a model class
    ///   that cannot be used; ``RealmError/storage(_:)`` for engine failures (locked, damaged…).
    public init(configuration: Realm.Configuration = .defaultConfiguration,
                isolation: isolated (any Actor)? = #isolation) throws {
        self = try RealmInstances.shared.instance(configuration, confinement: .current(isolation: isolation)) {
            try Realm(configuration: configuration, confinement: $0)
        }
    }

    /// Opens the realm stored at `fileURL` (Realm Swift's shape): the default configuration
    /// with its location replaced (see ``Realm/Configuration/fileURL``).
    ///
    /// - Throws: as ``init(configuration:isolation:)``.
    public init(fileURL: URL, isolation: isolated (any Actor)? = #isolation) throws {
        var configuration = Realm.Configuration.defaultConfiguration
        configuration.fileURL = fileURL
        configuration.inMemoryIdentifier = nil
        self = try RealmInstances.shared.instance(configuration, confinement: .current(isolation: isolation)) {
            try Realm(configuration: configuration, confinement: $0)
        }
    }

    /// Opens a realm isolated to `actor` (Realm Swift's shape), or returns the one already
    /// open for it: it may be used by any code isolated to the actor, across awaits, and it
    /// advances by itself when others commit, delivering notifications on the actor.
    ///
    /// ```swift
    /// actor Importer {
    ///     func run(_ data: Data) async throws {
    ///         let realm = try await Realm(configuration: config, actor: self)
    ///         try await realm.asyncWrite { _ = try RealmCoder(realm: realm).decodeArray(User.self, from: data) }
    ///     }
    /// }
    /// ```
    ///
    /// - Throws: as ``init(configuration:isolation:)``.
    public init<A: Actor>(configuration: Realm.Configuration = .defaultConfiguration, actor: isolated A) async throws {
        let confinement: Confinement = actor === MainActor.shared ? .thread(pthread_self()) : .actor(.init(actor))
        self = try RealmInstances.shared.instance(configuration, confinement: confinement) { confinement in
            let realm = try Realm(configuration: configuration, confinement: confinement)
            realm.listen(on: actor)
            return realm
        }
    }

    /// Opens a realm confined to `queue`, a serial queue, or returns the one already open
    /// there; call it on that queue. The realm advances and delivers notifications on the
    /// queue when other threads commit.
    ///
    /// - Throws: ``RealmError/incorrectThread`` when not called on `queue`; as ``init(configuration:isolation:)``.
    public init(configuration: Realm.Configuration = .defaultConfiguration, queue: DispatchQueue) throws {
        guard let confinement = Confinement.queue(queue) else { throw RealmError.incorrectThread }
        self = try RealmInstances.shared.instance(configuration, confinement: confinement) {
            try Realm(configuration: configuration, confinement: $0)
        }
    }
}
