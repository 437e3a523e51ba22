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
}
