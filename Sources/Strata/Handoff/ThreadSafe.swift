// @ThreadSafe: Realm Swift's property wrapper for a managed object or results kept by a
// value that crosses threads (a class shared by tasks, a closure run on another queue).
// It keeps what a ThreadSafeReference keeps — the store, the commit, the object's type and
// key or the results' query — and reads the value again in the realm of whoever reads it.

import Foundation

/// A managed object or ``Results`` that may be read from any thread, task or actor: each
/// read resolves it in the realm of the same configuration open where the reader runs
/// (Realm Swift's `@ThreadSafe`). Nil once the object was deleted.
///
/// ```swift
/// final class Job: @unchecked Sendable {
///     @ThreadSafe var user: User?
/// }
/// job.user = user                                   // on the realm's thread
/// DispatchQueue.global().async { print(job.user?.name ?? "deleted") }
/// ```
///
/// Assigning an unmanaged object, or an object of an embedded type, traps (pass unmanaged
/// objects directly; reach embedded ones through their parent), as Realm raises.
@propertyWrapper
public final class ThreadSafe<T>: @unchecked Sendable {
    /// How to find the value again: in a realm of `configuration`, at least at `sequence`.
    private struct Reference {
        let configuration: Realm.Configuration
        let storeIdentity: String
        let sequence: UInt64
        let resolve: (Realm) -> T?
    }

    private let lock = NSLock()
    private var reference: Reference?

    /// Keeps `wrappedValue` (nil: nothing).
    public init(wrappedValue: T?) {
        reference = wrappedValue.map(Self.reference(to:))
    }

    /// Keeps nothing yet (`@ThreadSafe var user: User?` without a value).
    public convenience init() { self.init(wrappedValue: nil) }

    /// The value in the realm open where the caller runs (opened if none is); nil when it
    /// was deleted or no realm of its configuration can be opened here.
    public var wrappedValue: T? {
        get {
            guard let reference = lock.withLock({ self.reference }),
                  let realm = try? Realm(configuration: reference.configuration),
                  realm.shared.identity == reference.storeIdentity else { return nil }
            realm.catchUp(to: reference.sequence)
            return reference.resolve(realm)
        }
        set {
            let made = newValue.map(Self.reference(to:))
            lock.withLock { reference = made }
        }
    }

    private static func reference(to value: T) -> Reference {
        if let object = value as? Object {
            guard let state = object._state else {
                preconditionFailure("@ThreadSafe needs a managed object: an unmanaged \(type(of: object).className) can be passed across threads directly")
            }
            precondition(state.embedding == nil, "@ThreadSafe cannot hold an embedded object: hold the object that contains it")
            state.realm.verifyThread()
            let className = state.bound.className, key = state.primaryKey
            return Reference(configuration: state.realm.configuration, storeIdentity: state.realm.shared.identity,
                             sequence: state.realm.snapshot.sequence) { realm in
                guard let bound = realm.boundType(named: className) else { return nil }
                return realm.object(bound: bound, key: key.keyBytes) as? T
            }
        }
        if let results = value as? any ThreadSafeResults {
            let (realm, resolve) = results.threadSafeResolver()
            return Reference(configuration: realm.configuration, storeIdentity: realm.shared.identity,
                             sequence: realm.snapshot.sequence) { resolve($0) as? T }
        }
        preconditionFailure("@ThreadSafe holds managed objects and Results, not \(T.self)")
    }
}

/// Results, as `@ThreadSafe` keeps them: their realm and how to evaluate them in another.
protocol ThreadSafeResults {
    func threadSafeResolver() -> (Realm, (Realm) -> Any?)
}

extension Results: ThreadSafeResults {
    func threadSafeResolver() -> (Realm, (Realm) -> Any?) {
        managingRealm.verifyThread()
        let query = query
        return (managingRealm, { realm in
            guard query.base?.isPortable ?? true else { return nil }
            return Results(realm: realm, query: query.rebound(to: realm.boundType(named: query.bound.className) ?? query.bound))
        })
    }
}
