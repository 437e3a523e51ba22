// Frozen values: objects and results pinned to one commit, safe to hand to any task,
// actor or thread. Freezing makes a frozen realm (same store, the live realm's snapshot,
// never advances, never written); `Frozen` and `FrozenResults` are Sendable wrappers that
// read it under one lock per frozen realm, since a realm's caches are not thread-safe.

import Foundation

/// One frozen realm and the lock every read of it takes.
final class FrozenBox: @unchecked Sendable {
    // @unchecked: `realm` and every object read from it are touched only inside `read`.
    let realm: Realm?
    private let lock = NSLock()

    /// `realm` nil: the box of an unmanaged object's private copy.
    init(realm: Realm?) { self.realm = realm }

    func read<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// A read-only object pinned to the commit it was frozen at, that any task, actor or
/// thread may read — the way to hand an object across isolation domains:
///
/// ```swift
/// let frozen: Frozen<User> = user.frozen()
/// Task.detached { print(frozen.username, frozen.car?.model ?? "-") }
/// let live: User? = realm.thaw(frozen)          // the live object in another realm
/// ```
///
/// Properties read through dynamic member lookup: `Sendable` values as they are, links as
/// `Frozen` objects, lists of objects as arrays of `Frozen` objects, lists of values as
/// arrays. Reads of one frozen realm are serialized by a lock; values never change.
@dynamicMemberLookup
public struct Frozen<T: Object>: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: `object` belongs to the frozen realm of `box` and is only read under its lock.
    let box: FrozenBox
    private let object: T

    init(box: FrozenBox, object: T) {
        self.box = box
        self.object = object
    }

    /// A property value.
    public subscript<Value: Sendable>(dynamicMember keyPath: KeyPath<T, Value>) -> Value {
        box.read { object[keyPath: keyPath] }
    }

    /// A to-one link, frozen at the same commit.
    public subscript<Target: Object>(dynamicMember keyPath: KeyPath<T, Target?>) -> Frozen<Target>? {
        box.read { object[keyPath: keyPath].map { Frozen<Target>(box: box, object: $0) } }
    }

    /// A list of objects, frozen at the same commit.
    public subscript<Target: Object>(dynamicMember keyPath: KeyPath<T, List<Target>>) -> [Frozen<Target>] {
        box.read { object[keyPath: keyPath].map { Frozen<Target>(box: box, object: $0) } }
    }

    /// Linking objects, frozen at the same commit.
    public subscript<Target: Object>(dynamicMember keyPath: KeyPath<T, LinkingObjects<Target>>) -> [Frozen<Target>] {
        box.read { object[keyPath: keyPath].map { Frozen<Target>(box: box, object: $0) } }
    }

    /// A set of values, as an array in the set's order.
    public subscript<Element: Sendable>(dynamicMember keyPath: KeyPath<T, MutableSet<Element>>) -> [Element] {
        box.read { object[keyPath: keyPath].toArray() }
    }

    /// A set of objects, frozen at the same commit.
    public subscript<Target: Object>(dynamicMember keyPath: KeyPath<T, MutableSet<Target>>) -> [Frozen<Target>] {
        box.read { object[keyPath: keyPath].map { Frozen<Target>(box: box, object: $0) } }
    }

    /// A map of values, as a dictionary.
    public subscript<Key: _MapKey, Value: Sendable>(dynamicMember keyPath: KeyPath<T, Map<Key, Value>>) -> [Key: Value] {
        box.read { Dictionary(uniqueKeysWithValues: object[keyPath: keyPath].map { ($0.key, $0.value) }) }
    }

    /// A list of values, as an array.
    public subscript<Element: Sendable>(dynamicMember keyPath: KeyPath<T, List<Element>>) -> [Element] {
        box.read { Array(object[keyPath: keyPath]) }
    }

    /// Reads anything from the frozen object (computed properties, several at once) under
    /// the frozen realm's lock. `body` must not keep the object.
    public func read<R: Sendable>(_ body: (T) throws -> R) rethrows -> R {
        try box.read { try body(object) }
    }

    /// The object's primary key (or hidden object id), to find it in a live realm.
    public var primaryKeyValue: PrimaryKeyValue { box.read { object.primaryKeyValue } }

    /// The sequence number of the commit the object was frozen at (nil: frozen from an
    /// unmanaged object).
    public var snapshotSequence: UInt64? { box.realm?.snapshotSequence }

    /// The object's description.
    public var description: String { box.read { "Frozen(\(object.description))" } }

    /// The frozen object itself, for the thaw in `realm` (under the lock, by the caller).
    fileprivate func withObject<R>(_ body: (T) throws -> R) rethrows -> R { try box.read { try body(object) } }
}

/// Query results pinned to the commit they were frozen at: a `Sendable`, read-only
/// `RandomAccessCollection` of ``Frozen`` objects.
///
/// ```swift
/// let page: FrozenResults<User> = realm.objects(User.self).sorted(by: [SortDescriptor(\.rank)]).frozen()
/// Task.detached { for user in page.prefix(10) { print(user.username) } }
/// ```
public struct FrozenResults<T: Object>: @unchecked Sendable, RandomAccessCollection {
    // @unchecked: `results` belong to the frozen realm of `box` and are only read under its lock.
    let box: FrozenBox
    private let results: Results<T>
    /// The number of objects.
    public let count: Int

    init(box: FrozenBox, results: Results<T>) {
        self.box = box
        self.results = results
        count = box.read { results.count }
    }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of objects.
    public var endIndex: Int { count }

    /// The frozen object at `position`.
    public subscript(position: Int) -> Frozen<T> {
        precondition(position >= 0 && position < count, "Index \(position) is out of bounds (must be less than \(count))")
        return box.read { Frozen(box: box, object: results[position]) }
    }

    /// The sequence number of the commit the results were frozen at.
    public var snapshotSequence: UInt64 { box.realm?.snapshotSequence ?? 0 }

    /// The frozen results, for the thaw in `realm` (under the lock, by the caller).
    fileprivate func withResults<R>(_ body: (Results<T>) throws -> R) rethrows -> R { try box.read { try body(results) } }
}

// MARK: Freezing

/// What Realm Swift calls thread-confined values: objects and results that belong to one
/// realm, and can be frozen to cross to other threads, tasks and actors.
public protocol ThreadConfined: AnyObject {
    /// Whether the value is frozen (pinned to one commit, readable anywhere, never changes).
    var isFrozen: Bool { get }
    /// The value pinned to the commit its realm reads now.
    func freeze() -> Self
    /// The live value in a realm opened here with the frozen realm's configuration, or nil
    /// if it was deleted since (or cannot be opened here).
    func thaw() -> Self?
}

extension Object: ThreadConfined {
    /// Whether the object is frozen.
    public var isFrozen: Bool { _state?.realm.isFrozen ?? false }

    /// This object pinned to the commit its realm reads now (Realm's `freeze()`): it never
    /// changes and may be read on any thread, one thread at a time. To share it between
    /// tasks under strict concurrency checking, use ``frozen()``, which is `Sendable`.
    ///
    /// Traps for an unmanaged, deleted or invalidated object, or inside a write
    /// transaction (as Realm does).
    public func freeze() -> Self {
        guard let state = _state else { preconditionFailure("Unmanaged objects cannot be frozen; use frozen(), which copies them") }
        if state.realm.isFrozen { return self }
        guard let object = state.frozen() else {
            preconditionFailure("Cannot freeze an object that has been deleted or invalidated: \(state.bound.className)")
        }
        return unsafeDowncast(object, to: Self.self)
    }

    /// The live version of a frozen object, in a realm opened here (Realm's `thaw()`); nil
    /// if it was deleted since. A live object returns itself.
    public func thaw() -> Self? {
        guard let state = _state, state.realm.isFrozen else { return self }
        return state.thawed().map { unsafeDowncast($0, to: Self.self) }
    }
}

extension ObjectState {
    /// This live state's object in a frozen copy of its realm; nil when it was deleted.
    /// Traps inside a write transaction, as freezing does.
    func frozen() -> Object? {
        let box = realm.frozenBox()
        return box.read { box.realm!.object(matching: self) }
    }

    /// This frozen state's object in a live realm of its configuration opened here; nil
    /// when it was deleted since (or the realm cannot be opened).
    func thawed() -> Object? {
        guard let live = try? Realm(configuration: realm.configuration) else { return nil }
        return live.object(matching: self)
    }
}

/// Realm Swift's freezing of a managed collection property (`List`, `MutableSet`, `Map`):
/// the same property of the owning object, frozen or thawed.
protocol FreezableCollection: AnyObject {
    /// The owning object's state and the property's position; nil owner: unmanaged.
    var ownerAndIndex: (owner: ObjectState?, index: Int) { get }
    /// The collection of property `index` of `owner`.
    static func make(owner: ObjectState, index: Int) -> Self
}

extension FreezableCollection {
    func freezeCollection() -> Self {
        let (owner, index) = ownerAndIndex
        guard let owner else { preconditionFailure("Unmanaged collections cannot be frozen; copy their elements instead") }
        if owner.realm.isFrozen { return self }
        guard let state = owner.frozen()?._state else {
            preconditionFailure("Cannot freeze a collection whose object has been deleted or invalidated: \(owner.bound.className)")
        }
        return Self.make(owner: state, index: index)
    }

    func thawCollection() -> Self? {
        let (owner, index) = ownerAndIndex
        guard let owner, owner.realm.isFrozen else { return self }
        return owner.thawed()?._state.map { Self.make(owner: $0, index: index) }
    }
}

extension ThreadConfined where Self: Object {
    /// A `Sendable` read-only view of this object as of now, for other tasks, actors and
    /// threads. An unmanaged object is copied (``Object/deepCopy()``), so later changes to it do
    /// not show.
    ///
    /// Traps for a deleted or invalidated object, or inside a write transaction.
    public func frozen() -> Frozen<Self> {
        guard let state = _state else { return Frozen(box: FrozenBox(realm: nil), object: deepCopy()) }
        let frozenObject = freeze()
        return Frozen(box: state.realm.isFrozen ? state.realm.frozenBoxOfFrozenRealm() : state.realm.frozenBox(), object: frozenObject)
    }
}

extension Results {
    /// Whether the results belong to a frozen realm.
    public var isFrozen: Bool { managingRealm.isFrozen }

    /// Whether the realm was invalidated (Realm Swift's `isInvalidated` on results).
    public var isInvalidated: Bool { managingRealm.isClosed }

    /// These results pinned to the commit the realm reads now (Realm's `freeze()`).
    /// Traps inside a write transaction.
    public func freeze() -> Results<Element> {
        if managingRealm.isFrozen { return self }
        managingRealm.verifyThread()
        let box = managingRealm.frozenBox()
        return Results(realm: box.realm!, query: query)
    }

    /// The live version of frozen results (Realm's `thaw()`): the same query in a realm of
    /// the same configuration opened here, over the newest content. Live results return
    /// themselves; nil when no realm can be opened here.
    public func thaw() -> Results<Element>? {
        guard managingRealm.isFrozen else { return self }
        guard let live = try? Realm(configuration: managingRealm.configuration),
              let bound = live.boundType(named: query.bound.className) else { return nil }
        return Results(realm: live, query: query.rebound(to: bound))
    }

    /// A `Sendable` collection of these results as of now, for other tasks, actors and
    /// threads. Traps inside a write transaction.
    public func frozen() -> FrozenResults<Element> {
        managingRealm.verifyThread()
        let box = managingRealm.isFrozen ? managingRealm.frozenBoxOfFrozenRealm() : managingRealm.frozenBox()
        return FrozenResults(box: box, results: Results(realm: box.realm!, query: query))
    }
}

extension Realm {
    /// A frozen copy of this realm, pinned to the commit it reads now: readable on any
    /// thread (one at a time), never advancing, never written (writes throw
    /// ``RealmError/frozenRealm``). Traps inside a write transaction.
    public func freeze() -> Realm {
        if isFrozen { return self }
        return frozenBox().realm!
    }

    /// The live object, in this realm, of a frozen (or another realm's) object; nil if it
    /// was deleted since.
    public func thaw<T: Object>(_ object: T) -> T? {
        verifyThread()
        guard let state = object._state else { return nil }
        if state.realm === self { return object }
        return self.object(matching: state).map { unsafeDowncast($0, to: T.self) }
    }

    /// This realm's object for another realm's (same store): found by key, an embedded
    /// object through its parent. Nil if it is gone here.
    func object(matching state: ObjectState) -> Object? {
        if let embedding = state.embedding {
            guard let parent = object(matching: embedding.parent)?._state else { return nil }
            return parent.embeddedObject(embedding.index, position: embedding.position)
        }
        let bound = boundType(named: state.bound.className) ?? state.bound
        return object(bound: bound, key: state.key)
    }

    /// The live object, in this realm, of a frozen object; nil if it was deleted since.
    public func thaw<T: Object>(_ frozen: Frozen<T>) -> T? {
        verifyThread()
        let found = frozen.withObject { $0._state }
        if let state = found {
            return frozen.withObject { _ in object(matching: state) }.map { unsafeDowncast($0, to: T.self) }
        }
        // Frozen from an unmanaged object: look it up by primary key.
        let key = frozen.primaryKeyValue
        return object(ofType: T.self, forPrimaryKeyValue: key)
    }

    /// Live results, in this realm, of frozen results (the same query, evaluated now).
    public func thaw<T: Object>(_ frozen: FrozenResults<T>) -> Results<T> {
        verifyThread()
        let query = frozen.withResults { $0.query }
        return Results(realm: self, query: query)
    }

    /// The frozen realm of the current snapshot, made once per snapshot.
    func frozenBox() -> FrozenBox {
        verifyThread()
        precondition(writeState == nil, "Cannot freeze inside a write transaction: freeze after the write commits")
        precondition(!isClosed, "Cannot freeze an invalidated Realm")
        if let cached = frozenCache, cached.sequence == snapshot.sequence { return cached.box }
        let frozen = Realm(freezing: self)
        let box = FrozenBox(realm: frozen)
        frozen.guardingBox = box
        frozenCache = (snapshot.sequence, box)
        return box
    }

    /// The box whose lock guards this frozen realm (made if the realm came from `freeze()`).
    func frozenBoxOfFrozenRealm() -> FrozenBox {
        if let box = guardingBox { return box }
        let box = FrozenBox(realm: self)
        guardingBox = box
        return box
    }
}
