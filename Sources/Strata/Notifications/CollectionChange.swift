// Collection notifications: after each commit, the observer works out which positions of
// its results were deleted, inserted and modified from the commit's change set alone —
// binary searches in the ordered keys, never a re-scan — unless the change set is unknown
// or touches linked types, when it recomputes and diffs.

import Foundation
import Dispatch

extension NotificationToken {
    /// This token, for an observation made on `queue` by `register` in a realm of
    /// `configuration` opened there; `failure` gets an error opening it (or registering).
    /// Invalidating this token ends the inner observation on the queue.
    func observing(on queue: DispatchQueue, configuration: Realm.Configuration, failure: @escaping (any Error) -> Void,
                   _ register: @escaping (Realm) throws -> NotificationToken) -> NotificationToken {
        let callbacks = UncheckedSendable(value: (register, failure))
        let holder = Locked<(Realm, NotificationToken)?>(nil)
        onInvalidate {
            queue.async { holder.withLock { $0?.1.invalidate(); $0 = nil } }
        }
        queue.async { [self] in
            guard isValid else { return }
            do {
                let queueRealm = try Realm(configuration: configuration, queue: queue)
                let inner = try callbacks.value.0(queueRealm)
                holder.withLock { $0 = (queueRealm, inner) }
            } catch {
                callbacks.value.1(error)
            }
        }
        return self
    }
}

/// A change to a live collection, UITableView batch style: deletions in old indices,
/// insertions and modifications in new indices, each ascending.
public enum RealmCollectionChange<CollectionType> {
    /// The first callback, with the collection as it is.
    case initial(CollectionType)
    /// The collection after a commit, and what changed.
    case update(CollectionType, deletions: [Int], insertions: [Int], modifications: [Int])
    /// The observation failed and stops.
    case error(any Error)
}

/// A collection change as a `Sendable` value (for ``Results/changes``).
public struct CollectionChangeSet: Sendable, Hashable {
    /// True for the first value, which describes the collection as it is.
    public var isInitial: Bool
    /// The number of objects after the change.
    public var count: Int
    /// Positions removed, in the old collection, ascending.
    public var deletions: [Int]
    /// Positions added, in the new collection, ascending.
    public var insertions: [Int]
    /// Positions whose object changed, in the new collection, ascending.
    public var modifications: [Int]
}

extension Results {
    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the results. With a `queue`, the observation runs on its own realm confined to that
    /// serial queue, and `block` is called there.
    ///
    /// With `keyPaths` (Realm Swift's parameter: property names, `"dog.name"` through a
    /// link), a commit that only modifies objects in other properties is not reported;
    /// insertions and deletions always are. A path through a link counts any change of the
    /// linked object (a superset of Realm's rule); names that are no property are ignored.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void) -> NotificationToken {
        guard let queue else {
            managingRealm.verifyThread()
            precondition(managingRealm.writeState == nil, "Cannot register notification blocks from within write transactions.")
            let token = NotificationToken()
            let observer = CollectionObserver(token: token, query: query, realm: managingRealm,
                                              watched: keyPaths.map { WatchedProperties($0, schema: self.query.bound.schema) }, block: block)
            managingRealm.observers.add(observer)
            block(.initial(Results(realm: managingRealm, query: query, keys: observer.keys)))
            return token
        }
        let token = NotificationToken()
        if let base = query.base, !base.isPortable {
            block(.error(RealmError.invalidValue("results of \(base.name), a collection of an embedded object, can be observed only on their own realm's thread: observe without a queue")))
            return token
        }
        let query = UncheckedSendable(value: self.query)
        return token.observing(on: queue, configuration: managingRealm.configuration, failure: { block(.error($0)) }) { queueRealm in
            Results(realm: queueRealm, query: query.value).observe(keyPaths: keyPaths, block)
        }
    }

    /// Every change of these results as an asynchronous sequence, starting with the initial
    /// state. The observation runs on a private queue with its own realm.
    public var changes: AsyncStream<CollectionChangeSet> {
        AsyncStream { continuation in
            let queue = DispatchQueue(label: "strata.results.changes")
            let token = observe(on: queue) { change in
                switch change {
                case .initial(let results):
                    continuation.yield(CollectionChangeSet(isInitial: true, count: results.count, deletions: [], insertions: [], modifications: []))
                case .update(let results, let deletions, let insertions, let modifications):
                    continuation.yield(CollectionChangeSet(isInitial: false, count: results.count, deletions: deletions,
                                                           insertions: insertions, modifications: modifications))
                case .error:
                    continuation.finish()
                }
            }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }

    init(realm: Realm, query: ResultsQuery<Element>, keys: [[UInt8]]) {
        self.init(realm: realm, query: query)
        primeCache(keys)
    }
}

/// Keeps a query's ordered keys up to date and reports each commit's effect on them.
final class CollectionObserver<Element: Object>: RealmObserver {
    private(set) weak var token: NotificationToken?
    let query: ResultsQuery<Element>
    private(set) var keys: [[UInt8]]
    private let block: (RealmCollectionChange<Results<Element>>) -> Void
    /// Tables of the types this type links to: changes there may modify our objects.
    private let linkedTables: [Int: UInt32]
    /// The properties whose changes count as modifications (nil: all).
    private let watched: WatchedProperties?

    init(token: NotificationToken, query: ResultsQuery<Element>, realm: Realm, watched: WatchedProperties? = nil,
         block: @escaping (RealmCollectionChange<Results<Element>>) -> Void) {
        self.token = token
        self.query = query
        self.block = block
        self.watched = watched
        keys = query.evaluate(in: realm)
        var linked: [Int: UInt32] = [:]
        for (index, property) in query.bound.schema.properties.enumerated() where property.kind == .object {
            if let target = property.objectClassName.flatMap(realm.boundType(named:)) { linked[index] = target.table }
        }
        linkedTables = linked
    }

    func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?, silent: Bool) {
        let table = query.bound.table
        let result: (deletions: [Int], insertions: [Int], modifications: [Int])
        // A LIMIT needs the whole ordered result to know what falls in or out: recompute.
        // (A list's results follow the list, which is a field of another object: recompute.)
        if let changes, query.base == nil, query.limit == nil, query.distinct.isEmpty, !linkedTables.values.contains(where: { changes.tables[$0].map { !$0.isEmpty } ?? false }) {
            guard let own = changes.tables[table], !own.isEmpty else { return }
            result = incremental(realm, old: old, changes: own)
        } else {
            result = recompute(realm, old: old, changes: changes)
        }
        var modifications = result.modifications
        if let watched, let changes {
            let own = changes.tables[table]
            modifications.removeAll { position in
                // Modified through its own row: kept when a watched property changed.
                if let mask = own?.modified[ObjectKey(keys[position])] { return !watched.intersects(mask) }
                // Modified through a linked object: kept when a path through a link is watched.
                return !watched.followsLinks
            }
        }
        if silent || (result.deletions.isEmpty && result.insertions.isEmpty && modifications.isEmpty) { return }
        block(.update(Results(realm: realm, query: query, keys: keys), deletions: result.deletions,
                      insertions: result.insertions, modifications: modifications))
    }

    private func object(_ realm: Realm, _ key: [UInt8], pinned: Realm.SnapshotBox?) -> Element {
        realm.makeObject(bound: query.bound, key: key, row: nil, pinned: pinned) as! Element
    }

    /// The first position in `keys` not before `key` (objects read from `view`).
    private func lowerBound(_ keys: [[UInt8]], _ key: [UInt8], _ target: Element?, realm: Realm, view: Realm.SnapshotBox?) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) / 2
            let before: Bool
            if !query.isSorted {
                before = keys[mid].lexicographicallyPrecedes(key)
            } else {
                before = query.precedes(object(realm, keys[mid], pinned: view), keys[mid], target!, key)
            }
            if before { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func incremental(_ realm: Realm, old: Snapshot, changes: TableChanges) -> ([Int], [Int], [Int]) {
        let sorted = query.isSorted
        let old = Realm.SnapshotBox(old)
        func oldIndex(_ key: [UInt8]) -> (Int, Element?)? {
            let oldObject = sorted ? object(realm, key, pinned: old) : nil
            if sorted, oldObject?.isInvalidated ?? true { return nil }
            let index = lowerBound(keys, key, oldObject, realm: realm, view: old)
            return index < keys.count && keys[index] == key ? (index, oldObject) : nil
        }
        func current(_ key: [UInt8]) -> Element? {
            guard let object = realm.object(bound: query.bound, key: key) as? Element, query.matches(object) else { return nil }
            return object
        }
        var removals: [Int] = []
        var inserts: [([UInt8], Element)] = []
        var stayed: [([UInt8], Element)] = []
        for key in changes.deleted {
            if let (index, _) = oldIndex(key.bytes) { removals.append(index) }
        }
        // An object whose sort key changed but still sorts between the same unchanged
        // neighbours stays where it is: a modification, not a move.
        func staysBetweenNeighbours(_ index: Int, _ key: [UInt8], _ now: Element) -> Bool {
            for neighbour in [index - 1, index + 1] where neighbour >= 0 && neighbour < keys.count {
                let other = keys[neighbour]
                if changes.touches(other) { return false }
                let otherObject = object(realm, other, pinned: nil)
                let ordered = neighbour < index ? query.precedes(otherObject, other, now, key) : query.precedes(now, key, otherObject, other)
                if !ordered { return false }
            }
            return true
        }
        for objectKey in changes.modified.keys {
            let key = objectKey.bytes
            let now = current(key)
            if let (index, before) = oldIndex(key) {
                if let now, !sorted || query.sortsTheSame(before!, now) || staysBetweenNeighbours(index, key, now) {
                    stayed.append((key, now))
                } else {
                    removals.append(index)
                    if let now { inserts.append((key, now)) }
                }
            } else if let now {
                inserts.append((key, now))
            }
        }
        for key in changes.inserted {
            if let now = current(key.bytes) { inserts.append((key.bytes, now)) }
        }
        removals.sort()
        for index in removals.reversed() { keys.remove(at: index) }
        for (key, object) in inserts {
            keys.insert(key, at: lowerBound(keys, key, object, realm: realm, view: nil))
        }
        let insertions = inserts.map { lowerBound(keys, $0.0, $0.1, realm: realm, view: nil) }.sorted()
        let modifications = stayed.map { lowerBound(keys, $0.0, $0.1, realm: realm, view: nil) }.sorted()
        return (removals, insertions, modifications)
    }

    /// Re-evaluates and diffs by key; common keys that changed order become delete + insert.
    private func recompute(_ realm: Realm, old: Snapshot, changes: CommitChanges?) -> ([Int], [Int], [Int]) {
        let newKeys = query.evaluate(in: realm)
        if query.base != nil { return collectionDiff(realm, newKeys: newKeys, old: old, changes: changes) }
        let oldPositions = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        let newSet = Set(newKeys)
        var deletions = keys.indices.filter { !newSet.contains(keys[$0]) }
        // Common keys in new order, with their old positions; keep the longest increasing run.
        let common = newKeys.enumerated().compactMap { position, key in oldPositions[key].map { (position, $0) } }
        let kept = Set(Self.longestIncreasing(common.map(\.1)).map { common[$0].0 })
        var insertions: [Int] = []
        var modifications: [Int] = []
        var moved: [Int] = []
        for (position, key) in newKeys.enumerated() {
            guard let oldPosition = oldPositions[key] else { insertions.append(position); continue }
            if !kept.contains(position) {
                moved.append(oldPosition)
                insertions.append(position)
            } else if changed(key, realm: realm, old: old, changes: changes) {
                modifications.append(position)
            }
        }
        deletions = (deletions + moved).sorted()
        keys = newKeys
        return (deletions, insertions, modifications)
    }

    /// Whether the object or an object it links to changed.
    private func changed(_ key: [UInt8], realm: Realm, old: Snapshot, changes: CommitChanges?) -> Bool {
        guard let changes else {
            return (try? old.storedValue(table: query.bound.table, key: key)) != realm.storedRow(table: query.bound.table, key: key)
        }
        if changes.tables[query.bound.table]?.modified[ObjectKey(key)] != nil { return true }
        guard let row = realm.storedRow(table: query.bound.table, key: key) else { return false }
        for (index, table) in linkedTables {
            guard let tableChanges = changes.tables[table], !tableChanges.isEmpty,
                  let field = try? RowFormat.field(index, of: row) else { continue }
            let targets: [[UInt8]]
            switch field {
            case .link(let target): targets = [target]
            case .list(let items): targets = items.compactMap { if case .link(let target) = $0 { return target } else { return nil } }
            default: targets = []
            }
            if targets.contains(where: tableChanges.touches) {
                return true
            }
        }
        return false
    }

    /// The diff of a list's results, which may hold one object more than once: a
    /// sequence diff (Myers, through `CollectionDifference`) rather than one by key.
    private func collectionDiff(_ realm: Realm, newKeys: [[UInt8]], old: Snapshot, changes: CommitChanges?) -> ([Int], [Int], [Int]) {
        let difference = newKeys.difference(from: keys)
        var deletions: [Int] = [], insertions: [Int] = []
        for change in difference {
            switch change {
            case .remove(let offset, _, _): deletions.append(offset)
            case .insert(let offset, _, _): insertions.append(offset)
            }
        }
        let inserted = Set(insertions)
        let modifications = newKeys.indices.filter { !inserted.contains($0) && changed(newKeys[$0], realm: realm, old: old, changes: changes) }
        keys = newKeys
        return (deletions.sorted(), insertions.sorted(), modifications)
    }

    /// Indices of a longest strictly increasing subsequence of `values`.
    static func longestIncreasing(_ values: [Int]) -> [Int] {
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var result: [Int] = []
        var current = tails.last ?? -1
        while current >= 0 {
            result.append(current)
            current = previous[current]
        }
        return result.reversed()
    }
}

/// The properties an observation with `keyPaths` watches: each path's first property, and
/// whether any path goes on through a link.
struct WatchedProperties {
    private(set) var mask = PropertyMask()
    private(set) var followsLinks = false

    init(_ keyPaths: [String], schema: ObjectSchema) {
        for path in keyPaths {
            let components = path.split(separator: ".", maxSplits: 1)
            guard let first = components.first, let index = schema.index(of: String(first)) else { continue }
            mask.insert(index)
            if components.count > 1 { followsLinks = true }
        }
    }

    func intersects(_ changed: PropertyMask) -> Bool { !changed.isDisjoint(with: mask) }
}
