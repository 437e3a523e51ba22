// ThreadSafeReference: hands a managed object or a Results to another thread, where a
// realm of the same store resolves it.

/// A `Sendable` reference to a managed object or a ``Results``, resolved on another
/// thread with `Realm.resolve(_:)` (one overload for objects, one for results).
///
/// ```swift
/// let ref = ThreadSafeReference(to: user)
/// DispatchQueue.global().async {
///     let realm = try! Realm(configuration: config)
///     let user = realm.resolve(ref)      // nil if it was deleted meanwhile
/// }
/// ```
public struct ThreadSafeReference<Confined>: @unchecked Sendable {
    enum Payload {
        case object(className: String, key: PrimaryKeyValue)
        case results(query: AnyObject)
        /// A list, set, map or linking objects: its owner and the property's name.
        case collection(className: String, key: PrimaryKeyValue, property: String)
    }

    let payload: Payload
    /// The commit the source realm was reading; the resolving realm reads at least this.
    let sequence: UInt64
    /// The store it comes from: a realm of another store resolves nothing.
    let storeIdentity: String
    /// Set by the first resolve; shared by every copy of the reference.
    let resolved = Locked<Bool>(false)

    /// Whether the reference was resolved (Realm Swift's name). Realm resolves a reference
    /// once and then calls it invalidated; Strata lets it be resolved again (each resolve
    /// reads the object or results afresh), and this says whether one has happened.
    public var isInvalidated: Bool { resolved.withLock { $0 } }

    /// A reference to a managed object.
    public init(to object: Confined) where Confined: Object {
        guard let state = object._state else {
            preconditionFailure("Cannot construct a reference to an unmanaged object, which can be passed across threads directly")
        }
        state.realm.verifyThread()
        payload = .object(className: state.bound.className, key: state.primaryKey)
        sequence = state.realm.snapshot.sequence
        storeIdentity = state.realm.shared.identity
    }

    /// A reference to a managed list (Realm Swift's form): resolved, the same property of
    /// the same object in the resolving realm.
    public init<Element>(to list: List<Element>) where Confined == List<Element> {
        (payload, sequence, storeIdentity) = Self.collectionReference(list)
    }

    /// A reference to a managed set.
    public init<Element>(to set: MutableSet<Element>) where Confined == MutableSet<Element> {
        (payload, sequence, storeIdentity) = Self.collectionReference(set)
    }

    /// A reference to a managed map.
    public init<Key, Value>(to map: Map<Key, Value>) where Confined == Map<Key, Value> {
        (payload, sequence, storeIdentity) = Self.collectionReference(map)
    }

    /// A reference to linking objects.
    public init<Element>(to linkingObjects: LinkingObjects<Element>) where Confined == LinkingObjects<Element> {
        (payload, sequence, storeIdentity) = Self.collectionReference(linkingObjects)
    }

    private static func collectionReference(_ collection: some FreezableCollection) -> (Payload, UInt64, String) {
        guard let owner = collection.ownerAndIndex.owner else {
            preconditionFailure("Cannot construct a reference to an unmanaged collection, which can be passed across threads directly")
        }
        precondition(owner.embedding == nil, "Cannot construct a reference to a collection of an embedded object: hand over the object that holds it")
        owner.realm.verifyThread()
        let property = owner.bound.schema.properties[collection.ownerAndIndex.index].name
        return (.collection(className: owner.bound.className, key: owner.primaryKey, property: property),
                owner.realm.snapshot.sequence, owner.realm.shared.identity)
    }

    /// A reference to a results collection (its query; it re-evaluates where it is resolved).
    public init<Element>(to results: Results<Element>) where Confined == Results<Element> {
        results.managingRealm.verifyThread()
        payload = .results(query: results.query)
        sequence = results.managingRealm.snapshot.sequence
        storeIdentity = results.managingRealm.shared.identity
    }
}

extension Realm {
    func catchUp(to sequence: UInt64) {
        if snapshot.sequence < sequence, writeState == nil { advance() }
    }

    /// The object `reference` points to in this realm, or nil if it was deleted (or the
    /// reference comes from another store).
    public func resolve<T: Object>(_ reference: ThreadSafeReference<T>) -> T? {
        verifyThread()
        reference.resolved.withLock { $0 = true }
        guard reference.storeIdentity == shared.identity else { return nil }
        catchUp(to: reference.sequence)
        guard case .object(let className, let key) = reference.payload, let bound = boundType(named: className) else { return nil }
        return object(bound: bound, key: key.keyBytes) as? T
    }

    /// The results `reference` points to, evaluated in this realm.
    public func resolve<Element: Object>(_ reference: ThreadSafeReference<Results<Element>>) -> Results<Element>? {
        verifyThread()
        reference.resolved.withLock { $0 = true }
        guard reference.storeIdentity == shared.identity else { return nil }
        catchUp(to: reference.sequence)
        guard case .results(let query) = reference.payload, let typed = query as? ResultsQuery<Element>,
              typed.base?.isPortable ?? true else { return nil }
        return Results(realm: self, query: typed)
    }

    /// The list `reference` points to in this realm, or nil if its owner was deleted.
    public func resolve<Element>(_ reference: ThreadSafeReference<List<Element>>) -> List<Element>? { resolveCollection(reference) }
    /// The set `reference` points to in this realm, or nil if its owner was deleted.
    public func resolve<Element>(_ reference: ThreadSafeReference<MutableSet<Element>>) -> MutableSet<Element>? { resolveCollection(reference) }
    /// The map `reference` points to in this realm, or nil if its owner was deleted.
    public func resolve<Key, Value>(_ reference: ThreadSafeReference<Map<Key, Value>>) -> Map<Key, Value>? { resolveCollection(reference) }
    /// The linking objects `reference` points to in this realm, or nil if their owner was deleted.
    public func resolve<Element>(_ reference: ThreadSafeReference<LinkingObjects<Element>>) -> LinkingObjects<Element>? { resolveCollection(reference) }

    private func resolveCollection<C: FreezableCollection>(_ reference: ThreadSafeReference<C>) -> C? {
        verifyThread()
        reference.resolved.withLock { $0 = true }
        guard reference.storeIdentity == shared.identity else { return nil }
        catchUp(to: reference.sequence)
        guard case .collection(let className, let key, let property) = reference.payload, let bound = boundType(named: className),
              let index = bound.schema.index(of: property), let owner = object(bound: bound, key: key.keyBytes)?._state else { return nil }
        return C.make(owner: owner, index: index)
    }
}
