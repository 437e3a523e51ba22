// Notifications for one object's collection property (Realm Swift's `list.observe`,
// `set.observe`, `map.observe`, `linkingObjects.observe`). A list, set or map is one field
// of its owner's row: after each commit that touches the owner (or, for links, the linked
// type), the observer reads the field again and diffs it against what it reported last —
// a sequence diff for lists and sets, a diff by key for maps. Linking objects are not in
// the owner's row: they are observed as results built on them.

import Dispatch

/// What happened to an observed ``Map``, by key (Realm Swift's `RealmMapChange`).
public enum RealmMapChange<Collection> {
    /// The first callback, with the map as it is.
    case initial(Collection)
    /// The map after a commit: the keys removed, added, and whose value changed.
    case update(Collection, deletions: [String], insertions: [String], modifications: [String])
    /// The observation failed and stops.
    case error(any Error)
}

/// The elements of a collection field as the collection shows them: links to objects that
/// no longer exist are left out (as `List` leaves them out), maps by key.
enum ObservedContents: Equatable {
    case sequence([FieldValue])
    case map([String: FieldValue])

    static func read(_ field: FieldValue?, linkTarget: BoundType?, in realm: Realm) -> ObservedContents {
        switch field {
        case .map(let entries)?:
            return .map(entries)
        case .list(let elements)?:
            guard let linkTarget else { return .sequence(elements) }
            return .sequence(elements.filter { element in
                if case .link(let key) = element { return realm.object(bound: linkTarget, key: key) != nil }
                return true
            })
        default:
            return .sequence([])
        }
    }
}

/// Watches property `index` of one top-level object and reports each change of it.
final class CollectionPropertyObserver: RealmObserver {
    private(set) weak var token: NotificationToken?
    private let bound: BoundType
    private let key: [UInt8]
    private let index: Int
    /// The type the elements link to (lists, sets and maps of objects).
    private let linkTarget: BoundType?
    private var reported: ObservedContents
    /// The linked objects' properties whose changes count (nil: all).
    private let watched: WatchedProperties?
    /// Called with the changes (positions for lists and sets; keys for maps, as strings).
    private let report: (_ realm: Realm, _ owner: ObjectState?, _ change: Change) -> Void

    enum Change {
        case positions(deletions: [Int], insertions: [Int], modifications: [Int])
        case keys(deletions: [String], insertions: [String], modifications: [String])
    }

    init(token: NotificationToken, owner: ObjectState, index: Int, keyPaths: [String]? = nil,
         report: @escaping (_ realm: Realm, _ owner: ObjectState?, _ change: Change) -> Void) {
        self.token = token
        bound = owner.bound
        key = owner.key
        self.index = index
        let property = owner.bound.schema.properties[index]
        linkTarget = property.kind == .object ? property.objectClassName.flatMap(owner.realm.boundTypeOrDynamic(named:)) : nil
        watched = linkTarget.flatMap { target in keyPaths.map { WatchedProperties($0, schema: target.schema) } }
        reported = ObservedContents.read(owner.field(index), linkTarget: linkTarget, in: owner.realm)
        self.report = report
    }

    func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?, silent: Bool) {
        let targetChanges = linkTarget.flatMap { changes?.tables[$0.table] }
        if let changes, !(changes.tables[bound.table]?.touches(key) ?? false), targetChanges?.isEmpty ?? true { return }
        guard let owner = realm.object(bound: bound, key: key)?._state else {
            // The owner was deleted: everything it held is gone, and nothing follows.
            token?.invalidate()
            if !silent { report(realm, nil, removingEverything()) }
            return
        }
        let now = ObservedContents.read(owner.field(index), linkTarget: linkTarget, in: realm)
        let change = diff(from: reported, to: now, targetChanges: targetChanges)
        reported = now
        if silent || change.isEmpty { return }
        report(realm, owner, change)
    }

    private func removingEverything() -> Change {
        switch reported {
        case .sequence(let elements): return .positions(deletions: Array(elements.indices), insertions: [], modifications: [])
        case .map(let entries): return .keys(deletions: entries.keys.sorted(), insertions: [], modifications: [])
        }
    }

    /// Whether the object `element` links to was changed by the commit (in a watched
    /// property, when `keyPaths` were given).
    private func linkedObjectChanged(_ element: FieldValue?, _ targetChanges: TableChanges?) -> Bool {
        guard let targetChanges, case .link(let target)? = element,
              let changed = targetChanges.modified[ObjectKey(target)] else { return false }
        return watched?.intersects(changed) ?? true
    }

    private func diff(from old: ObservedContents, to new: ObservedContents, targetChanges: TableChanges?) -> Change {
        switch (old, new) {
        case (.map(let before), .map(let after)):
            let deletions = before.keys.filter { after[$0] == nil }.sorted()
            let insertions = after.keys.filter { before[$0] == nil }.sorted()
            let modifications = after.keys.filter { key in
                guard let previous = before[key] else { return false }
                return previous != after[key] || linkedObjectChanged(after[key], targetChanges)
            }.sorted()
            return .keys(deletions: deletions, insertions: insertions, modifications: modifications)
        case (.sequence(let before), .sequence(let after)):
            var deletions: [Int] = [], insertions: [Int] = []
            for step in after.difference(from: before) {
                switch step {
                case .remove(let offset, _, _): deletions.append(offset)
                case .insert(let offset, _, _): insertions.append(offset)
                }
            }
            deletions.sort()
            insertions.sort()
            // An element replaced in place (removed and inserted at one position, with as many
            // removals as insertions before it) is a modification, as Realm reports `list[i] = x`.
            var replaced = Set<Int>()
            var deletionsBefore = 0
            let removedSet = Set(deletions)
            for (insertionsBefore, position) in insertions.enumerated() {
                while deletionsBefore < deletions.count, deletions[deletionsBefore] < position { deletionsBefore += 1 }
                if removedSet.contains(position), deletionsBefore == insertionsBefore { replaced.insert(position) }
            }
            let kept = Set(insertions)
            var modifications = replaced
            for position in after.indices where !kept.contains(position) && linkedObjectChanged(after[position], targetChanges) {
                modifications.insert(position)
            }
            return .positions(deletions: deletions.filter { !replaced.contains($0) }, insertions: insertions.filter { !replaced.contains($0) },
                              modifications: modifications.sorted())
        default:
            return .positions(deletions: [], insertions: [], modifications: [])
        }
    }
}

extension CollectionPropertyObserver.Change {
    var isEmpty: Bool {
        switch self {
        case .positions(let d, let i, let m): return d.isEmpty && i.isEmpty && m.isEmpty
        case .keys(let d, let i, let m): return d.isEmpty && i.isEmpty && m.isEmpty
        }
    }
}

extension FreezableCollection {
    /// Registers `observer(owner, index, token)` for this managed collection: here, or on
    /// `queue` in a realm of the same configuration opened there (the owner found again by
    /// key). Traps for an unmanaged collection or inside a write, as Realm raises.
    func registerObserver(on queue: DispatchQueue?, failure: @escaping (any Error) -> Void,
                          _ observe: @escaping (_ collection: Self, _ owner: ObjectState, _ index: Int) -> NotificationToken) -> NotificationToken {
        let (owner, index) = ownerAndIndex
        guard let owner else { preconditionFailure("Only managed collections can be observed; add the object that holds it to a realm first") }
        guard owner.embedding == nil else {
            // (An embedded object has no key of its own to watch: its parent's row is.)
            failure(RealmError.invalidValue("a collection of an embedded object cannot be observed: observe the object that holds it"))
            return NotificationToken()
        }
        guard let queue else {
            owner.realm.verifyThread()
            precondition(owner.realm.writeState == nil, "Cannot register notification blocks from within write transactions.")
            return observe(self, owner, index)
        }
        let table = owner.bound.table, key = UncheckedSendable(value: owner.key)
        let observe = UncheckedSendable(value: observe)
        return NotificationToken().observing(on: queue, configuration: owner.realm.configuration, failure: failure) { queueRealm in
            guard let bound = queueRealm.boundType(table: table), let state = queueRealm.object(bound: bound, key: key.value)?._state else {
                throw RealmError.invalidated
            }
            return observe.value(Self.make(owner: state, index: index), state, index)
        }
    }

    /// Observes the collection as a field of its owner: `deliver` gets the collection in the
    /// observing realm and the change.
    func observeField(keyPaths: [String]?, on queue: DispatchQueue?, failure: @escaping (any Error) -> Void,
                      initial: @escaping (Self) -> Void,
                      update: @escaping (Self?, CollectionPropertyObserver.Change) -> Void) -> NotificationToken {
        registerObserver(on: queue, failure: failure) { collection, owner, index in
            let token = NotificationToken()
            owner.realm.observers.add(CollectionPropertyObserver(token: token, owner: owner, index: index, keyPaths: keyPaths) { _, state, change in
                update(state.map { Self.make(owner: $0, index: index) }, change)
            })
            initial(collection)
            return token
        }
    }
}

extension FreezableCollection {
    /// `observeField` for a list or a set: changes by position.
    func observePositions(keyPaths: [String]?, on queue: DispatchQueue?, empty: Self, _ block: @escaping (RealmCollectionChange<Self>) -> Void) -> NotificationToken {
        observeField(keyPaths: keyPaths, on: queue, failure: { block(.error($0)) }, initial: { block(.initial($0)) }) { collection, change in
            guard case .positions(let deletions, let insertions, let modifications) = change else { return }
            block(.update(collection ?? empty, deletions: deletions, insertions: insertions, modifications: modifications))
        }
    }
}

extension List {
    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the list: positions removed (old), added and modified (new), as Realm Swift reports
    /// them — a replaced element is a modification, as is a linked object that changed. With
    /// a `queue`, the observation runs on a realm confined to it. When the owning object is
    /// deleted, every element is reported removed and the observation ends. `keyPaths`
    /// (Realm Swift's parameter) limits the linked objects' changes that count to those
    /// properties; insertions, removals and replacements always count.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<List<Element>>) -> Void) -> NotificationToken {
        observePositions(keyPaths: keyPaths, on: queue, empty: List(), block)
    }
}

extension MutableSet {
    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the set, by position (see ``List/observe(keyPaths:on:_:)``).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<MutableSet<Element>>) -> Void) -> NotificationToken {
        observePositions(keyPaths: keyPaths, on: queue, empty: MutableSet(), block)
    }
}

extension Map {
    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the map: the keys removed, added, and whose value changed (Realm Swift's
    /// `RealmMapChange`). With a `queue`, the observation runs on a realm confined to it;
    /// `keyPaths` as for ``List/observe(keyPaths:on:_:)``.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmMapChange<Map<Key, Value>>) -> Void) -> NotificationToken {
        let empty = Map<Key, Value>()
        return observeField(keyPaths: keyPaths, on: queue, failure: { block(.error($0)) }, initial: { block(.initial($0)) }) { map, change in
            guard case .keys(let deletions, let insertions, let modifications) = change else { return }
            block(.update(map ?? empty, deletions: deletions, insertions: insertions, modifications: modifications))
        }
    }
}

extension LinkingObjects {
    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// which objects link here, or one of them (the changes of ``Results/observe(keyPaths:on:_:)``,
    /// `keyPaths` included).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<LinkingObjects<Element>>) -> Void) -> NotificationToken {
        registerObserver(on: queue, failure: { block(.error($0)) }) { links, _, _ in
            guard let results = links._asResults(Element.self) else {
                preconditionFailure("Only managed linking objects can be observed")
            }
            return results.observe(keyPaths: keyPaths) { change in
                switch change {
                case .initial: block(.initial(links))
                case .update(_, let deletions, let insertions, let modifications):
                    block(.update(links, deletions: deletions, insertions: insertions, modifications: modifications))
                case .error(let error): block(.error(error))
                }
            }
        }
    }
}
