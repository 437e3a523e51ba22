// RealmResultsController: a sectioned, sorted, filtered and mapped view of a request that
// tells its delegate which sections and rows each commit inserted, deleted, updated or
// moved — from the commit's change set, with binary searches over each section's ordered
// keys, so the cost follows the number of changed objects, not the size of the results.
// A fetch answered from the projection's columns counts the sections and orders none: a
// section is ordered when it is first read or changed (a screen shows a few sections).

import Foundation

/// What happened to a section or a row.
public enum RealmResultsChangeType: String, Sendable {
    case insert = "Insert"
    case delete = "Delete"
    case update = "Update"
    case move = "Move"
}

/// One section: the section key's value as text, and its objects in order.
public struct RealmSection<U> {
    /// The section key path's value, as a `String` (`"nil"` for nil).
    public let keyPath: String
    /// The section's objects, in order.
    public let objects: [U]
}

/// Receives a results controller's changes, batch by batch, in an order a table view can
/// apply (see ``RealmResultsController``).
public protocol RealmResultsControllerDelegate: AnyObject {
    /// A batch of changes starts.
    func willChangeResults(controller: AnyObject)
    /// A row was inserted, deleted, updated or moved.
    func didChangeObject<U>(object: U, controller: AnyObject, oldIndexPath: IndexPath, newIndexPath: IndexPath, changeType: RealmResultsChangeType)
    /// A section was inserted or deleted.
    func didChangeSection<U>(section: RealmSection<U>, controller: AnyObject, index: Int, changeType: RealmResultsChangeType)
    /// The batch is complete.
    func didChangeResults(controller: AnyObject)
}

/// One batch of a results controller's changes, as a `Sendable` value (``RealmResultsController/changes``).
public struct ResultsControllerChanges: Sendable, Hashable {
    /// Deleted sections, old indices, descending.
    public var deletedSections: [Int] = []
    /// Inserted sections, new indices, ascending.
    public var insertedSections: [Int] = []
    /// Deleted rows, old index paths, descending.
    public var deletions: [IndexPath] = []
    /// Inserted rows, new index paths, ascending.
    public var insertions: [IndexPath] = []
    /// Moved rows (old, new).
    public var moves: [Move] = []
    /// Updated rows, new index paths, ascending.
    public var updates: [IndexPath] = []

    /// A row that moved.
    public struct Move: Sendable, Hashable {
        /// Where it was, before the batch.
        public var from: IndexPath
        /// Where it is, after the batch.
        public var to: IndexPath
    }

    /// Whether the batch changes nothing.
    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deletions.isEmpty && insertions.isEmpty && moves.isEmpty && updates.isEmpty
    }
}

/// A sectioned, sorted view of a ``RealmRequest`` with change callbacks, after
/// NSFetchedResultsController:
///
/// ```swift
/// let rrc = try RealmResultsController<TaskModel, Task>(request: request, sectionKeyPath: \.projectID,
///                                                       mapper: Task.init, filter: { $0.name.hasPrefix("A") })
/// rrc.delegate = self
/// try rrc.performFetch()
/// ```
///
/// Every commit the request's realm sees is seen, whoever made it, including changes to
/// objects the results link to. Callbacks arrive on the realm's thread (or queue), in this
/// order: `willChangeResults`; section deletes (old indices, descending); row deletes (old
/// index paths, descending); section inserts (new indices, ascending); row inserts and
/// moves (new index paths, ascending); updates (new index paths, ascending);
/// `didChangeResults`. Applying, per batch, the row deletes and the old sides of moves (old
/// paths, descending), then section deletes (descending), section inserts (ascending), row
/// inserts and new sides of moves (new paths, ascending), then updates at their new paths,
/// turns the previous sections into the new ones. For inserts and deletes `oldIndexPath ==
/// newIndexPath`. Rows of a deleted section are reported as deletes, those of an inserted
/// section as inserts.
///
/// The section key is put first in the order (ascending, or as the request sorts it). The
/// controller belongs to the realm's thread; `U` values are made there.
public final class RealmResultsController<T: Object, U> {
    /// The request the controller shows.
    public let request: RealmRequest<T>
    /// Receives the changes; held weakly.
    public weak var delegate: (any RealmResultsControllerDelegate)?

    private let realm: Realm
    private let bound: BoundType
    private let query: ResultsQuery<T>
    private let mapper: (T) -> U
    private var filter: ((T) -> Bool)?
    private let sectionProperty: Int?
    /// Stored-property sort keys after the section key, when the request's sort translates.
    private let sortKeys: [(index: Int, reverse: Bool)]?
    /// Direction of each ordering value: the section key first, then the sort keys (or the rank).
    private let directions: [Bool]
    /// Tables of the types `T` links to: their changes may change what the filter or mapper sees.
    private let linkedTables: Set<UInt32>

    /// The members, sections and orders.
    private var members: ControllerMembers
    /// Mapped values of the members read (or reported) since they last changed.
    private var mappedObjects: [ControllerMembers.Member: U] = [:]
    private var fetched = false
    private var observer: ControllerObserver?
    private var token: NotificationToken?
    private var continuations: [UUID: AsyncStream<ResultsControllerChanges>.Continuation] = [:]

    /// A controller that maps each object with `mapper` and keeps only those `filter` accepts.
    ///
    /// - Parameters:
    ///   - request: what to show: the type, predicate and order.
    ///   - sectionKeyPath: a stored property of `T` whose value names the section, or nil for
    ///     one section.
    ///   - mapper: turns each object into what the controller hands out.
    ///   - filter: a further test on each object, after the predicate (nil: none).
    /// - Throws: ``RealmError/invalidValue(_:)`` when `sectionKeyPath` is not a stored
    ///   property; ``RealmError/unknownType(_:)``; ``RealmError/incorrectThread``.
    public convenience init(request: RealmRequest<T>, sectionKeyPath: PartialKeyPath<T>?, mapper: @escaping (T) -> U,
                            filter: ((T) -> Bool)? = nil) throws {
        try self.init(request: request, section: sectionKeyPath.map { .keyPath($0) }, mapper: mapper, filter: filter)
    }

    /// A controller sectioned by a property named by a string (the seed's form:
    /// `sectionKeyPath: "projectID"`).
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` when `sectionKeyPath` does not name a
    ///   stored property; ``RealmError/invalidQuery(query:offset:reason:)`` for a request
    ///   whose string query or sort key paths do not fit `T`; as the other initializer.
    public convenience init(request: RealmRequest<T>, sectionKeyPath: String, mapper: @escaping (T) -> U,
                            filter: ((T) -> Bool)? = nil) throws {
        try self.init(request: request, section: .name(sectionKeyPath), mapper: mapper, filter: filter)
    }

    private enum Section {
        case keyPath(PartialKeyPath<T>)
        case name(String)
    }

    private init(request: RealmRequest<T>, section: Section?, mapper: @escaping (T) -> U, filter: ((T) -> Bool)?) throws {
        self.request = request
        realm = request.realm
        try realm.checkThread()
        bound = try realm.boundType(for: T.self)
        self.mapper = mapper
        self.filter = filter
        // The request's query: typed, or from strings (checked now).
        query = try request.results().query
        if query.limit != nil, let text = request.predicateFormat {
            // Sections and change sets cover every match; a limit would have to evict rows.
            let offset = text.range(of: "LIMIT", options: .caseInsensitive).map { text.distance(from: text.startIndex, to: $0.lowerBound) } ?? 0
            throw RealmError.invalidQuery(query: text, offset: offset,
                                          reason: "a results controller shows every match: LIMIT is for Results (filter(query:)), not for a RealmRequest")
        }
        if let section {
            let index: Int?
            switch section {
            case .keyPath(let keyPath): index = bound.info.propertyIndex(for: keyPath)
            case .name(let name): index = bound.schema.index(of: name)
            }
            guard let index, !bound.schema.properties[index].isList, bound.schema.properties[index].kind != .object else {
                throw RealmError.invalidValue("sectionKeyPath must be a stored property of \(bound.className) (not a link, list or computed property)")
            }
            sectionProperty = index
        } else {
            sectionProperty = nil
        }
        let translated = query.sortKeys
        sortKeys = translated
        var directions: [Bool] = []
        if let sectionProperty {
            directions.append(translated?.first(where: { $0.index == sectionProperty })?.reverse ?? false)
        }
        directions.append(contentsOf: translated.map { $0.map(\.reverse) } ?? [false])
        self.directions = directions
        members = ControllerMembers(rows: [], sectioned: section != nil, directions: directions)
        linkedTables = Set(bound.schema.properties.compactMap { property in
            property.kind == .object ? property.objectClassName.flatMap(request.realm.boundType(named:))?.table : nil
        })
    }

    /// A controller whose objects are unmanaged copies of the results (`deepCopy()`), free
    /// to use on any thread.
    public convenience init(request: RealmRequest<T>, sectionKeyPath: PartialKeyPath<T>?) throws where T == U {
        try self.init(request: request, sectionKeyPath: sectionKeyPath, mapper: { $0.deepCopy() }, filter: nil)
    }

    deinit {
        token?.invalidate()
        for continuation in continuations.values { continuation.finish() }
    }

    // MARK: Fetching

    /// Fetches the results and starts following the realm's commits.
    public func performFetch() throws {
        try realm.checkThread()
        members = build(in: realm)
        mappedObjects = [:]
        fetched = true
        if token == nil {
            let token = NotificationToken()
            let observer = ControllerObserver(token: token) { [weak self] realm, old, changes in
                self?.realmDidAdvance(realm, old: old, changes: changes)
            }
            realm.observers.add(observer)
            self.observer = observer
            self.token = token
        }
    }

    /// Replaces the filter and refetches.
    ///
    /// As the RealmResultsController seed says, the delegate is not told: reload the view
    /// after calling this (`tableView.reloadData()`). Pass `notifying: true` to receive the
    /// difference as an ordinary batch of delegate calls (and on ``changes``) instead.
    ///
    /// - Parameters:
    ///   - notifying: Whether the delegate (and ``changes``) receive the difference.
    ///   - newFilter: The new filter, applied after the request's predicate.
    public func updateFilter(notifying: Bool = false, _ newFilter: @escaping (T) -> Bool) {
        realm.verifyThread()
        filter = newFilter
        guard fetched else { return }
        if notifying {
            deliver(rebuild(old: nil, changes: CommitChanges()))
        } else {
            // Nobody hears the difference: refetch without computing it.
            members = build(in: realm)
            mappedObjects = [:]
        }
    }

    /// The sections and their (mapped) objects. Maps every object not read before: a
    /// screen that shows a part reads ``numberOfSections``, ``numberOfObjects(at:)`` and
    /// ``object(at:)``, which map only what they return.
    public var sections: [RealmSection<U>] {
        members.sections.indices.map(section(at:))
    }

    /// Section `index` with its (mapped) objects.
    private func section(at index: Int) -> RealmSection<U> {
        let objects = members.ordered(index).all.map { mapped($0) }
        return RealmSection(keyPath: Self.sectionName(members.sections[index].value), objects: objects)
    }

    /// The number of sections.
    public var numberOfSections: Int { members.sections.count }

    /// The number of objects in section `index`.
    public func numberOfObjects(at index: Int) -> Int { members.sections[index].count }

    /// The object at `indexPath` (section, item).
    public func object(at indexPath: IndexPath) -> U {
        precondition(indexPath.section < members.sections.count && indexPath.item < members.sections[indexPath.section].count,
                     "\(indexPath) is out of bounds")
        return mapped(members.ordered(indexPath.section)[indexPath.item])
    }

    /// The mapped value of member `id` (in the results), mapped now if it was not yet.
    private func mapped(_ id: ControllerMembers.Member) -> U {
        if let object = mappedObjects[id] { return object }
        // The members follow the content the controller last saw. Inside a write that
        // deleted the object (the controller hears of it at commit), it is mapped as last
        // committed; a row that cannot be read maps as an object reading zero values, as
        // results show it.
        let key = members.key(id)
        let object: Object
        if let current = realm.object(bound: bound, key: key) {
            object = current
        } else if let row = realm.storedRow(table: bound.table, key: key) {
            object = realm.makeObject(bound: bound, key: key, row: row, pinned: Realm.SnapshotBox(realm.snapshot))
        } else {
            object = realm.makeObject(bound: bound, key: key, row: nil)
        }
        let value = mapper(object as! T)
        mappedObjects[id] = value
        return value
    }

    /// The mapped value of a member that left the results: as mapped if it was, else the
    /// object as it was before the commit (`old`; the current content when nil).
    private func mappedBeforeChange(_ id: ControllerMembers.Member, old: Snapshot?) -> U {
        mappedObjects[id] ?? mappedBefore(ObjectKey(members.key(id)), old: old)
    }

    /// Every batch of changes from now on, as `Sendable` values.
    public var changes: AsyncStream<ResultsControllerChanges> {
        AsyncStream { continuation in
            let id = UUID()
            continuations[id] = continuation
        }
    }

    // MARK: Ordering

    private static func sectionName(_ value: FieldValue) -> String {
        switch value {
        case .null: return "nil"
        case .string(let s): return s
        default: return "\(value.anyValue ?? "nil")"
        }
    }

    /// The entry for `object` if it belongs in the results, ranked `rank` by the request's
    /// order.
    private func entry(for object: T, rank: Int?) -> ControllerMembers.Entry? {
        guard query.matches(object), filter?(object) ?? true, let fields = object._state?.allFields() else { return nil }
        func field(_ index: Int) -> FieldValue { index < fields.count ? fields[index] : .null }
        var values: [FieldValue] = []
        var section = FieldValue.null
        if let sectionProperty {
            section = field(sectionProperty)
            values.append(section)
        }
        if let sortKeys {
            values.append(contentsOf: sortKeys.map { field($0.index) })
        } else {
            values.append(.int(Int64(rank ?? 0)))
        }
        return ControllerMembers.Entry(values: values, section: section)
    }

    /// Everything, from scratch. Without a `filter` closure, with a translated sort and a
    /// query the projection answers, the sections are counted from columns and none is
    /// ordered (`ControllerMembers.ordered(_:)` orders one when it is read or changed).
    /// Otherwise every section is ordered now: the ordering values come from the stored
    /// fields (columns or rows) without building objects, or, with a filter, from each
    /// object built for it (nothing is mapped either way).
    private func build(in realm: Realm, lazily: Bool = true) -> ControllerMembers {
        let named = (sectionProperty.map { [$0] } ?? []) + (sortKeys?.map(\.index) ?? [])
        if lazily, filter == nil, sortKeys != nil, let (projection, ordinals, columns) = query.matchingOrdinals(in: realm, values: named),
           let members = ControllerMembers(projection: projection, ordinals: ordinals, columns: columns,
                                           sectioned: sectionProperty != nil, directions: directions) {
            return members
        }
        // Each row: its key and its ordering values (the section's, then the sort's or the rank).
        var rows: [(key: [UInt8], values: [FieldValue])] = []
        if filter == nil, sortKeys != nil, let fields = query.matchingFields(in: realm, values: named) {
            rows = fields
        } else {
            // With a translated sort the controller orders by stored values itself; otherwise
            // the request's order is kept as each object's rank.
            for (rank, key) in query.evaluate(in: realm, ordered: sortKeys == nil).enumerated() {
                guard let object = realm.object(bound: bound, key: key) as? T, let entry = entry(for: object, rank: rank) else { continue }
                rows.append((key, entry.values))
            }
        }
        return ControllerMembers(rows: rows, sectioned: sectionProperty != nil, directions: directions)
    }

    // MARK: Changes

    /// A batch, with the objects the delegate receives.
    private struct Batch {
        var changes = ResultsControllerChanges()
        var deletedSections: [(index: Int, value: FieldValue)] = []
        var insertedSections: [Int] = []
        var deleted: [(path: IndexPath, object: U)] = []
        var inserted: [(old: IndexPath?, new: IndexPath, object: U)] = []
        var updated: [(old: IndexPath, new: IndexPath, object: U)] = []
    }

    private func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?) {
        guard fetched else { return }
        let batch: Batch
        if let changes, sortKeys != nil, linkedTables.allSatisfy({ changes.tables[$0]?.isEmpty ?? true }) {
            guard let own = changes.tables[bound.table], !own.isEmpty else { return }
            batch = incremental(own, old: old)
        } else {
            batch = rebuild(old: old, changes: changes)
        }
        deliver(batch)
    }

    /// One changed key: its member id (nil when the controller never met it), its entry
    /// before the commit and after it (nil: not in the results).
    private struct Change {
        var key: ObjectKey
        var id: ControllerMembers.Member?
        var before: ControllerMembers.Entry?
        var now: ControllerMembers.Entry?
    }

    /// What one commit does to the controller's members: removed (with their old place),
    /// added (`moved`: removed first from elsewhere), or updated where they stand.
    private struct Classified {
        var removals: [(path: IndexPath, id: ControllerMembers.Member)] = []
        var additions: [(id: ControllerMembers.Member, entry: ControllerMembers.Entry, moved: Bool)] = []
        var stayed: [(id: ControllerMembers.Member, entry: ControllerMembers.Entry)] = []
    }

    /// One commit's changes to `T`, by binary search over the ordered sections (a section
    /// is ordered when a change first looks a place up in it: until then it is as fetched).
    private func incremental(_ changes: TableChanges, old: Snapshot) -> Batch {
        let keys = Array(changes.deleted) + Array(changes.modified.keys) + Array(changes.inserted)
        let changed = keys.map { key -> Change in
            let id = members.id(of: key.bytes)
            var now: ControllerMembers.Entry?
            if !changes.deleted.contains(key), let object = realm.object(bound: bound, key: key.bytes) as? T {
                now = entry(for: object, rank: nil)
            }
            return Change(key: key, id: id, before: id.flatMap(members.entry), now: now)
        }
        return applied(classify(changed, changes), old: old)
    }

    /// Step 1: each changed key's entry before and after the commit, compared.
    private func classify(_ changed: [Change], _ changes: TableChanges) -> Classified {
        var result = Classified()
        for change in changed {
            switch (change.before, change.now) {
            case (nil, nil):
                continue
            case (nil, let entry?):
                result.additions.append((members.assignID(to: change.key.bytes), entry, false))
            case (let entry?, nil):
                if let path = members.place(of: change.id!, entry) { result.removals.append((path, change.id!)) }
            case (let old?, let new?):
                let id = change.id!
                guard let path = members.place(of: id, old) else { continue }
                if staysInPlace(id, at: path, old: old, new: new, changes: changes) {
                    result.stayed.append((id, new))
                } else {
                    result.removals.append((path, id))
                    result.additions.append((id, new, true))
                }
            }
        }
        return result
    }

    /// Whether a modified member keeps its place: same sort values, or new ones that still
    /// fall between the same neighbours in the same section. Deleted neighbours are skipped
    /// (deletions do not reorder anything); a neighbour that itself changed makes it a move,
    /// which is always safe.
    private func staysInPlace(_ id: ControllerMembers.Member, at path: IndexPath, old: ControllerMembers.Entry,
                              new: ControllerMembers.Entry, changes: TableChanges) -> Bool {
        if zip(old.values, new.values).allSatisfy({ QueryCompiler.order($0, $1) == .orderedSame }) { return true }
        guard old.section == new.section else { return false }
        let order = members.ordered(path.section)
        let key = members.key(id)[...]
        return [-1, 1].allSatisfy { step in
            var neighbour = path.item + step
            while neighbour >= 0, neighbour < order.count, changes.deleted.contains(ObjectKey(members.key(order[neighbour]))) { neighbour += step }
            guard neighbour >= 0, neighbour < order.count else { return true }
            let other = order[neighbour], otherKey = ObjectKey(members.key(other))
            let touched = changes.modified[otherKey] != nil || changes.deleted.contains(otherKey) || changes.inserted.contains(otherKey)
            guard !touched, let values = members.entry(other)?.values else { return false }
            return step < 0 ? members.precedes(values, otherKey.bytes[...], new.values, key)
                            : members.precedes(new.values, key, values, otherKey.bytes[...])
        }
    }

    /// Step 2: the members and sections updated, and the batch that describes it (old
    /// paths for removals and moves, new paths for insertions and updates).
    private func applied(_ changes: Classified, old: Snapshot) -> Batch {
        var batch = Batch()
        let oldValues = members.sections.map(\.value)
        var oldPaths: [ControllerMembers.Member: IndexPath] = [:]
        for (path, id) in changes.removals { oldPaths[id] = path }
        for (id, _) in changes.stayed { oldPaths[id] = members.place(of: id, members.entry(id)!)! }
        // Remove, from the last place so earlier places (and section indices) stay valid.
        let movedIDs = Set(changes.additions.filter(\.moved).map(\.id))
        for (path, id) in changes.removals.sorted(by: { $0.path > $1.path }) {
            if !movedIDs.contains(id) {
                batch.deleted.append((path, mappedBeforeChange(id, old: old)))
            }
            members.remove(id, at: path)
            mappedObjects[id] = nil
        }
        for (id, entry) in changes.stayed {
            members.update(id, entry)
            mappedObjects[id] = nil
        }
        for (id, entry, _) in changes.additions {
            members.insert(id, entry)
            mappedObjects[id] = nil
        }
        // Sections that went away or appeared (both lists in section order: one merge).
        let newValues = members.sections.map(\.value)
        var i = 0, j = 0
        while i < oldValues.count || j < newValues.count {
            if j == newValues.count || (i < oldValues.count && members.sectionPrecedes(oldValues[i], newValues[j])) {
                batch.deletedSections.append((i, oldValues[i])); i += 1
            } else if i == oldValues.count || members.sectionPrecedes(newValues[j], oldValues[i]) {
                batch.insertedSections.append(j); j += 1
            } else {
                i += 1; j += 1
            }
        }
        for (id, entry, moved) in changes.additions {
            batch.inserted.append((moved ? oldPaths[id] : nil, members.place(of: id, entry)!, mapped(id)))
        }
        for (id, entry) in changes.stayed {
            batch.updated.append((oldPaths[id]!, members.place(of: id, entry)!, mapped(id)))
        }
        return batch
    }

    /// Checks the controller's state (tests call it after commits); see
    /// `ControllerMembers.checkInvariants()`. Returns the first violation, or nil.
    func checkInvariants() -> String? { members.checkInvariants() }

    /// The sections not ordered yet (tests check that a fetch from columns orders none).
    var unorderedSectionCount: Int { members.unorderedCount }

    /// Everything re-evaluated and compared by key (unknown changes, linked types, new filter).
    private func rebuild(old: Snapshot?, changes: CommitChanges?) -> Batch {
        let before = members.flattened().map { (key: ObjectKey(members.key($0.id)), id: $0.id, path: $0.path, section: members.entry($0.id)!.section) }
        let oldMapped = mappedObjects
        members = build(in: realm, lazily: false)
        mappedObjects = [:]
        let after = members.flattened().map { (key: ObjectKey(members.key($0.id)), id: $0.id, path: $0.path) }
        var batch = Batch()
        let oldPositions = Dictionary(uniqueKeysWithValues: before.enumerated().map { ($1.key, $0) })
        let newPositions = Dictionary(uniqueKeysWithValues: after.enumerated().map { ($1.key, $0) })
        for item in before where newPositions[item.key] == nil {
            batch.deleted.append((item.path, oldMapped[item.id] ?? mappedBefore(item.key, old: old)))
        }
        let common = after.enumerated().compactMap { position, item in oldPositions[item.key].map { (position, $0) } }
        let kept = Set(CollectionObserver<T>.longestIncreasing(common.map(\.1)).map { common[$0].0 })
        for (position, item) in after.enumerated() {
            guard let oldPosition = oldPositions[item.key] else {
                batch.inserted.append((nil, item.path, mapped(item.id)))
                continue
            }
            let oldPath = before[oldPosition].path
            let movedSection = before[oldPosition].section != members.entry(item.id)!.section
            if !kept.contains(position) || movedSection {
                batch.inserted.append((oldPath, item.path, mapped(item.id)))
            } else if changed(item.key, old: old, changes: changes) {
                batch.updated.append((oldPath, item.path, mapped(item.id)))
            } else if let value = oldMapped[before[oldPosition].id] {
                mappedObjects[item.id] = value
            }
        }
        let newValues = members.sections.map(\.value), oldValues = Set(before.map(\.section))
        let newSet = Set(newValues)
        var oldSections: [FieldValue] = []
        for item in before where oldSections.last != item.section { oldSections.append(item.section) }
        for (index, value) in oldSections.enumerated() where !newSet.contains(value) {
            batch.deletedSections.append((index, value))
        }
        for (index, value) in newValues.enumerated() where !oldValues.contains(value) {
            batch.insertedSections.append(index)
        }
        return batch
    }

    /// The object of `key` as it was before the commit (`old`; the current content when nil), mapped.
    private func mappedBefore(_ key: ObjectKey, old: Snapshot?) -> U {
        guard let old, let row = try? old.storedValue(table: bound.table, key: key.bytes) else {
            return mapper(realm.makeObject(bound: bound, key: key.bytes, row: nil) as! T)
        }
        return mapper(realm.makeObject(bound: bound, key: key.bytes, row: row, pinned: Realm.SnapshotBox(old)) as! T)
    }

    /// Whether the object, or an object it links to, changed in the commit(s).
    private func changed(_ key: ObjectKey, old: Snapshot?, changes: CommitChanges?) -> Bool {
        guard let changes else {
            guard let old else { return false }
            return (try? old.storedValue(table: bound.table, key: key.bytes)) != realm.storedRow(table: bound.table, key: key.bytes)
        }
        if changes.tables[bound.table]?.modified[key] != nil { return true }
        guard !linkedTables.isEmpty, let fields = realm.storedRow(table: bound.table, key: key.bytes).flatMap({ try? RowFormat.fields(of: $0) }) else {
            return false
        }
        for (index, property) in bound.schema.properties.enumerated() where property.kind == .object && index < fields.count {
            guard let table = property.objectClassName.flatMap(realm.boundType(named:))?.table,
                  let tableChanges = changes.tables[table], !tableChanges.isEmpty else { continue }
            switch fields[index] {
            case .link(let target): if tableChanges.touches(target) { return true }
            case .list(let items):
                for case .link(let target) in items where tableChanges.touches(target) { return true }
            default: break
            }
        }
        return false
    }

    /// Calls the delegate in the documented order and publishes the batch.
    private func deliver(_ batch: Batch) {
        var changes = ResultsControllerChanges()
        changes.deletedSections = batch.deletedSections.map(\.index).sorted(by: >)
        changes.insertedSections = batch.insertedSections.sorted()
        let deleted = batch.deleted.sorted { $0.path > $1.path }
        changes.deletions = deleted.map(\.path)
        let inserted = batch.inserted.sorted { $0.new < $1.new }
        changes.insertions = inserted.filter { $0.old == nil }.map(\.new)
        changes.moves = inserted.compactMap { item in item.old.map { ResultsControllerChanges.Move(from: $0, to: item.new) } }
        let updated = batch.updated.sorted { $0.new < $1.new }
        changes.updates = updated.map(\.new)
        guard !changes.isEmpty else { return }
        if let delegate {
            delegate.willChangeResults(controller: self)
            for (index, value) in batch.deletedSections.sorted(by: { $0.index > $1.index }) {
                delegate.didChangeSection(section: RealmSection<U>(keyPath: Self.sectionName(value), objects: []), controller: self,
                                          index: index, changeType: .delete)
            }
            for item in deleted {
                delegate.didChangeObject(object: item.object, controller: self, oldIndexPath: item.path, newIndexPath: item.path, changeType: .delete)
            }
            for index in changes.insertedSections {
                delegate.didChangeSection(section: section(at: index), controller: self, index: index, changeType: .insert)
            }
            for item in inserted {
                delegate.didChangeObject(object: item.object, controller: self, oldIndexPath: item.old ?? item.new, newIndexPath: item.new,
                                         changeType: item.old == nil ? .insert : .move)
            }
            for item in updated {
                delegate.didChangeObject(object: item.object, controller: self, oldIndexPath: item.old, newIndexPath: item.new, changeType: .update)
            }
            delegate.didChangeResults(controller: self)
        }
        for continuation in continuations.values { continuation.yield(changes) }
    }
}

/// Forwards a realm's advances to a results controller.
final class ControllerObserver: RealmObserver {
    private(set) weak var token: NotificationToken?
    private let handler: (Realm, Snapshot, CommitChanges?) -> Void

    init(token: NotificationToken, handler: @escaping (Realm, Snapshot, CommitChanges?) -> Void) {
        self.token = token
        self.handler = handler
    }

    func realmDidAdvance(_ realm: Realm, old: Snapshot, changes: CommitChanges?, silent: Bool) {
        handler(realm, old, changes)
    }
}
