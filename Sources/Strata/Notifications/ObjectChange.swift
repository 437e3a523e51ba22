// Object notifications: which properties of one object a commit changed, with their old
// and new values.

import Dispatch

/// One changed property of an observed object.
public struct PropertyChange {
    /// The property's name.
    public let name: String
    /// The value before the commit (links as objects of the old version are not kept: nil).
    public let oldValue: Any?
    /// The value after the commit.
    public let newValue: Any?
}

/// What happened to an observed object.
public enum ObjectChange<T> {
    /// Properties of the object changed.
    case change(T, [PropertyChange])
    /// The object was deleted; no more notifications follow.
    case deleted
    /// The observation failed and stops.
    case error(any Error)
}

extension Object {
    /// Calls `block` after each commit that changes or deletes this managed object
    /// (optionally only for the named properties).
    public func observe<T: Object>(keyPaths: [String]? = nil, _ block: @escaping (ObjectChange<T>) -> Void) -> NotificationToken {
        guard let state = _state else {
            preconditionFailure("Only managed objects can be observed; add \(Self.className) to a realm first")
        }
        state.realm.verifyThread()
        precondition(state.realm.writeState == nil, "Cannot register notification blocks from within write transactions.")
        let token = NotificationToken()
        state.realm.observers.add(ObjectObserver<T>(token: token, state: state, keyPaths: keyPaths, block: block))
        return token
    }
}

final class ObjectObserver<T: Object>: RealmObserver {
    private(set) weak var token: NotificationToken?
    private let bound: BoundType
    private let key: [UInt8]
    private let watched: Set<Int>?
    private let block: (ObjectChange<T>) -> Void

    init(token: NotificationToken, state: ObjectState, keyPaths: [String]?, block: @escaping (ObjectChange<T>) -> Void) {
        self.token = token
        bound = state.bound
        key = state.key
        watched = keyPaths.map { Set($0.compactMap(state.bound.schema.index(of:))) }
        self.block = block
    }

    func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?, silent: Bool) {
        // A known change set that does not touch this object costs nothing more.
        if let changes, !(changes.tables[bound.table]?.touches(key) ?? false) { return }
        let before = try? old.storedValue(table: bound.table, key: key)
        let after = realm.storedRow(table: bound.table, key: key)
        guard let before else { return }
        guard let after else {
            token?.invalidate()
            if !silent { block(.deleted) }
            return
        }
        var properties: Set<Int>
        if let tableChanges = changes?.tables[bound.table] {
            properties = Set(tableChanges.modified[ObjectKey(key)]?.indices ?? [])
        } else if changes != nil {
            return
        } else {
            guard before != after else { return }
            properties = Set(bound.schema.properties.indices)
        }
        if let watched { properties.formIntersection(watched) }
        guard !properties.isEmpty else { return }
        let oldObject = realm.makeObject(bound: bound, key: key, row: before, pinned: Realm.SnapshotBox(old))
        let newObject = realm.makeObject(bound: bound, key: key, row: after)
        let list = properties.sorted().compactMap { index -> PropertyChange? in
            let property = bound.schema.properties[index]
            let oldValue = property.kind == .object ? nil : oldObject._state!.dynamicValue(index)
            let newValue = newObject._state!.dynamicValue(index)
            if property.kind != .object, (oldObject._state!.allFields()?[index]) == (newObject._state!.allFields()?[index]), changes == nil {
                return nil
            }
            return PropertyChange(name: property.name, oldValue: oldValue, newValue: newValue)
        }
        if silent || list.isEmpty { return }
        block(.change(newObject as! T, list))
    }
}

/// What happened to an observed object, as a `Sendable` value (for `changes`): the
/// counterpart of ``ObjectChange`` that can cross tasks and actors.
public enum ObjectChangeSet<T: Object>: Sendable {
    /// Properties of the object changed: the object after the commit, frozen, and the
    /// names of the changed properties in schema order.
    case change(Frozen<T>, properties: [String])
    /// The object was deleted; the sequence ends.
    case deleted
    /// The observation failed; the sequence ends.
    case error(any Error)
}

extension ThreadConfined where Self: Object {
    /// Every later change of this managed object as an asynchronous sequence, ending when
    /// the object is deleted. The observation runs on a private queue with its own realm,
    /// registered before this returns, so every commit after the call is seen; it stops
    /// when the consuming task stops iterating.
    ///
    /// ```swift
    /// for await change in user.changes {
    ///     if case .change(let user, let properties) = change { print(user.username, properties) }
    /// }
    /// ```
    public var changes: AsyncStream<ObjectChangeSet<Self>> {
        guard let state = _state else {
            preconditionFailure("Only managed objects can be observed; add \(Self.className) to a realm first")
        }
        state.realm.verifyThread()
        let configuration = state.realm.configuration
        let key = state.primaryKey
        return AsyncStream { continuation in
            let queue = DispatchQueue(label: "strata.object.changes")
            let holder = Locked<(Realm, NotificationToken)?>(nil)
            queue.sync {
                do {
                    let realm = try Realm(configuration: configuration, queue: queue)
                    guard let object = realm.object(ofType: Self.self, forPrimaryKeyValue: key) else {
                        continuation.yield(.deleted)
                        continuation.finish()
                        return
                    }
                    let token = object.observe { (change: ObjectChange<Self>) in
                        switch change {
                        case .change(let object, let properties):
                            continuation.yield(.change(object.frozen(), properties: properties.map(\.name)))
                        case .deleted:
                            continuation.yield(.deleted)
                            continuation.finish()
                        case .error(let error):
                            continuation.yield(.error(error))
                            continuation.finish()
                        }
                    }
                    holder.withLock { $0 = (realm, token) }
                } catch {
                    continuation.yield(.error(error))
                    continuation.finish()
                }
            }
            continuation.onTermination = { _ in
                queue.async { holder.withLock { $0?.1.invalidate(); $0 = nil } }
            }
        }
    }
}
