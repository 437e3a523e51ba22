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

    /// One object of the results: its ordering values, its section, and its mapped value
    /// once read (the fetch maps nothing: a row is mapped when it is first read, or when a
    /// change reports it).
    private struct Entry {
        var values: [FieldValue]
        var object: U?
        var section: FieldValue
    }

    /// One section: its value, its size, and its keys in order once it was read or
    /// changed; before that, its members as ordinals of the fetch's projection.
    private struct SectionInfo {
        var value: FieldValue
        var count: Int
        var order: ChunkedOrder?
        var members: ArraySlice<Int32> = []
    }

    /// What a fetch from columns read, for ordering its sections later: unordered sections
    /// have not changed since (a change orders the sections it touches first).
    private struct FetchedColumns {
        let projection: TableProjection
        /// The section property's column (if any), then the sort keys'.
        let columns: [ProjectedColumn]
        /// Per ordinal of the projection: its section at the fetch (an index into
        /// `sectionValues`), or -1 when it was not in the results.
        let sectionOf: [Int32]
        let sectionValues: [FieldValue]
    }

    /// Entries of the ordered sections' keys.
    private var entries: [ObjectKey: Entry] = [:]
    private var sectionList: [SectionInfo] = []
    private var fetchedColumns: FetchedColumns?
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
        install(build(in: realm))
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
            install(build(in: realm))
        }
    }

    /// The sections and their (mapped) objects. Maps every object not read before: a
    /// screen that shows a part reads ``numberOfSections``, ``numberOfObjects(at:)`` and
    /// ``object(at:)``, which map only what they return.
    public var sections: [RealmSection<U>] {
        sectionList.indices.map(section(at:))
    }

    /// Section `index` with its (mapped) objects.
    private func section(at index: Int) -> RealmSection<U> {
        let objects = ordered(index).all.map { mapped($0) }
        return RealmSection(keyPath: Self.sectionName(sectionList[index].value), objects: objects)
    }

    /// The number of sections.
    public var numberOfSections: Int { sectionList.count }

    /// The number of objects in section `index`.
    public func numberOfObjects(at index: Int) -> Int { sectionList[index].count }

    /// The object at `indexPath` (section, item).
    public func object(at indexPath: IndexPath) -> U {
        precondition(indexPath.section < sectionList.count && indexPath.item < sectionList[indexPath.section].count,
                     "\(indexPath) is out of bounds")
        return mapped(ordered(indexPath.section)[indexPath.item])
    }

    /// The mapped value of `key` (an entry of the results), mapped now if it was not yet.
    private func mapped(_ key: ObjectKey) -> U {
        if let object = entries[key]?.object { return object }
        // The entries follow the content the controller last saw. Inside a write that deleted
        // the object (the controller hears of it at commit), it is mapped as last committed;
        // a row that cannot be read maps as an object reading zero values, as results show it.
        let object: Object
        if let current = realm.object(bound: bound, key: key.bytes) {
            object = current
        } else if let row = realm.storedRow(table: bound.table, key: key.bytes) {
            object = realm.makeObject(bound: bound, key: key.bytes, row: row, pinned: Realm.SnapshotBox(realm.snapshot))
        } else {
            object = realm.makeObject(bound: bound, key: key.bytes, row: nil)
        }
        let value = mapper(object as! T)
        entries[key]?.object = value
        return value
    }

    /// The mapped value of an entry that left the results: as mapped if it was, else the
    /// object as it was before the commit (`old`; the current content when nil).
    private func mappedBeforeChange(_ key: ObjectKey, _ entry: Entry, old: Snapshot?) -> U {
        if let object = entry.object { return object }
        guard let old, let row = try? old.storedValue(table: bound.table, key: key.bytes) else {
            return mapper(realm.makeObject(bound: bound, key: key.bytes, row: nil) as! T)
        }
        return mapper(realm.makeObject(bound: bound, key: key.bytes, row: row, pinned: Realm.SnapshotBox(old)) as! T)
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

    /// Whether values `a` (of key `aKey`) come before `b`.
    private func precedes(_ a: [FieldValue], _ aKey: ObjectKey, _ b: [FieldValue], _ bKey: ObjectKey) -> Bool {
        Self.precedes(a, aKey, b, bKey, directions)
    }

    /// Whether (a, aKey) comes before (b, bKey) with sort `directions` (true: descending).
    private static func precedes(_ a: [FieldValue], _ aKey: ObjectKey, _ b: [FieldValue], _ bKey: ObjectKey,
                                 _ directions: [Bool]) -> Bool {
        for position in directions.indices {
            let reverse = directions[position]
            switch QueryCompiler.order(a[position], b[position]) {
            case .orderedAscending: return !reverse
            case .orderedDescending: return reverse
            case .orderedSame: continue
            }
        }
        return aKey.bytes.lexicographicallyPrecedes(bKey.bytes)
    }

    private func sectionPrecedes(_ a: FieldValue, _ b: FieldValue) -> Bool {
        let order = QueryCompiler.order(a, b)
        return sectionProperty != nil && directions[0] ? order == .orderedDescending : order == .orderedAscending
    }

    /// The first position in `order` whose entry does not come before (values, key).
    private func lowerBound(_ values: [FieldValue], _ key: ObjectKey, in order: ChunkedOrder) -> Int {
        order.lowerBound { precedes(entries[$0]!.values, $0, values, key) }
    }

    /// The entry for `object` if it belongs in the results, ranked `rank` by the request's
    /// order; mapped now unless `mapping` is false.
    private func entry(for object: T, rank: Int?, mapping: Bool = true) -> Entry? {
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
        return Entry(values: values, object: mapping ? mapper(object) : nil, section: section)
    }

    /// The state a fetch installs.
    private struct Built {
        var sections: [SectionInfo]
        var entries: [ObjectKey: Entry]
        var fetched: FetchedColumns?
    }

    private func install(_ built: Built) {
        (sectionList, entries, fetchedColumns) = (built.sections, built.entries, built.fetched)
    }

    /// Everything, from scratch. Without a `filter` closure, with a translated sort and a
    /// query the projection answers, the sections are counted from columns and none is
    /// ordered (`ordered(_:)` orders one when it is read or changed). Otherwise every
    /// section is ordered now: the ordering values come from the stored fields (columns or
    /// rows) without building objects, or, with a filter, from each object built for it
    /// (nothing is mapped either way).
    private func build(in realm: Realm, lazily: Bool = true) -> Built {
        let named = (sectionProperty.map { [$0] } ?? []) + (sortKeys?.map(\.index) ?? [])
        if lazily, filter == nil, sortKeys != nil, let (projection, ordinals, columns) = query.matchingOrdinals(in: realm, values: named),
           let built = sectioned(projection, ordinals, columns) {
            return built
        }
        // Each row: its key and its ordering values (the section's, then the sort's or the rank).
        var rows: [(key: [UInt8], values: [FieldValue])] = []
        if filter == nil, sortKeys != nil, let fields = query.matchingFields(in: realm, values: named) {
            rows = fields
        } else {
            // With a translated sort the controller orders by stored values itself; otherwise
            // the request's order is kept as each object's rank.
            for (rank, key) in query.evaluate(in: realm, ordered: sortKeys == nil).enumerated() {
                guard let object = realm.object(bound: bound, key: key) as? T, let entry = entry(for: object, rank: rank, mapping: false) else { continue }
                rows.append((key, entry.values))
            }
        }
        var entries: [ObjectKey: Entry] = [:]
        entries.reserveCapacity(rows.count)
        var sections: [SectionInfo] = []
        var keys: [ObjectKey] = []
        func close() {
            if !keys.isEmpty { sections[sections.count - 1].order = ChunkedOrder(keys) }
            keys.removeAll(keepingCapacity: true)
        }
        for position in sortedPositions(rows) {
            let (bytes, values) = rows[position]
            let key = ObjectKey(bytes), section = sectionProperty == nil ? FieldValue.null : values[0]
            entries[key] = Entry(values: values, object: nil, section: section)
            if let last = sections.last, last.value == section {
                sections[sections.count - 1].count += 1
            } else {
                close()
                sections.append(SectionInfo(value: section, count: 1, order: nil))
            }
            keys.append(key)
        }
        close()
        return Built(sections: sections, entries: entries, fetched: nil)
    }

    /// Positions of `rows` in the controller's order. Sorted as positions over one flat
    /// array of values: sorting the rows (or reading a row holding a generic `U` in the
    /// comparator) retained and released every array and reference in them twice per
    /// comparison.
    private func sortedPositions(_ rows: [(key: [UInt8], values: [FieldValue])]) -> [Int] {
        ResultsQuery<T>.sortedPositions(rows, sortKeys: directions.enumerated().map { (index: $0.offset, reverse: $0.element) })
    }

    /// The fetch from columns: `ordinals` grouped by their section value (one pass to count,
    /// one to place), the sections in order, none ordered inside. Nil for a section column
    /// whose values do not group exactly (NaN, or kinds kept as decoded values).
    private func sectioned(_ projection: TableProjection, _ ordinals: [Int32], _ columns: [ProjectedColumn]) -> Built? {
        // Each ordinal's group, and each group's value.
        var groupOf = [Int32](repeating: -1, count: projection.count)
        var groupValues: [FieldValue] = []
        if sectionProperty == nil {
            if !ordinals.isEmpty { groupValues = [.null] }
            for ordinal in ordinals { groupOf[Int(ordinal)] = 0 }
        } else {
            func grouped<V: Hashable>(_ value: (Int) -> V?, _ field: (V) -> FieldValue) {
                var groups: [V: Int32] = [:]
                var nullGroup: Int32?
                for ordinal in ordinals {
                    let o = Int(ordinal)
                    if let v = value(o) {
                        if let g = groups[v] { groupOf[o] = g; continue }
                        groups[v] = Int32(groupValues.count)
                        groupOf[o] = Int32(groupValues.count)
                        groupValues.append(field(v))
                    } else {
                        if nullGroup == nil { nullGroup = Int32(groupValues.count); groupValues.append(.null) }
                        groupOf[o] = nullGroup!
                    }
                }
            }
            switch columns[0] {
            case .string(let codes, let dictionary):
                grouped({ codes[$0] < 0 ? nil : codes[$0] }, { .string(dictionary[Int($0)]) })
            case .int(let values, let nulls):
                grouped({ nulls?[$0] == true ? nil : values[$0] }, { .int($0) })
            case .double(let values, let nulls):
                guard !ordinals.contains(where: { values[Int($0)].isNaN && nulls?[Int($0)] != true }) else { return nil }
                grouped({ nulls?[$0] == true ? nil : values[$0] }, { .double($0) })
            case .date(let values, let nulls):
                guard !ordinals.contains(where: { values[Int($0)].isNaN && nulls?[Int($0)] != true }) else { return nil }
                grouped({ nulls?[$0] == true ? nil : values[$0] }, { .date(Date(timeIntervalSinceReferenceDate: $0)) })
            case .values:
                return nil
            }
        }
        // Groups in section order; groups of equal values (one string under two codes) merge.
        let byValue = groupValues.indices.sorted { sectionPrecedes(groupValues[$0], groupValues[$1]) }
        var sectionOfGroup = [Int32](repeating: 0, count: groupValues.count)
        var sectionValues: [FieldValue] = []
        for group in byValue {
            if sectionValues.last != groupValues[group] { sectionValues.append(groupValues[group]) }
            sectionOfGroup[group] = Int32(sectionValues.count - 1)
        }
        // Members placed section by section: counted, then each put at its section's next slot.
        var counts = [Int](repeating: 0, count: sectionValues.count)
        var sectionOf = [Int32](repeating: -1, count: projection.count)
        for ordinal in ordinals {
            let section = sectionOfGroup[Int(groupOf[Int(ordinal)])]
            sectionOf[Int(ordinal)] = section
            counts[Int(section)] += 1
        }
        var starts = [Int](repeating: 0, count: sectionValues.count)
        for index in counts.indices.dropFirst() { starts[index] = starts[index - 1] + counts[index - 1] }
        var next = starts
        var members = [Int32](repeating: 0, count: ordinals.count)
        for ordinal in ordinals {
            let section = Int(sectionOf[Int(ordinal)])
            members[next[section]] = ordinal
            next[section] += 1
        }
        let sections = sectionValues.indices.map { index in
            SectionInfo(value: sectionValues[index], count: counts[index], order: nil, members: members[starts[index] ..< starts[index] + counts[index]])
        }
        return Built(sections: sections, entries: [:],
                     fetched: FetchedColumns(projection: projection, columns: columns, sectionOf: sectionOf, sectionValues: sectionValues))
    }

    /// Section `index`'s keys in order, ordering it now from the fetch's columns if it was
    /// not yet (its members have not changed since the fetch).
    @discardableResult
    private func ordered(_ index: Int) -> ChunkedOrder {
        if let order = sectionList[index].order { return order }
        guard let fetched = fetchedColumns else {
            preconditionFailure("results controller: section \(index) is neither ordered nor fetched from columns")
        }
        let rows = sectionList[index].members.map { ordinal in
            (key: fetched.projection.key(Int(ordinal)), values: fetched.columns.map { $0.value(at: Int(ordinal)) })
        }
        let section = sectionList[index].value
        var keys: [ObjectKey] = []
        keys.reserveCapacity(rows.count)
        for position in sortedPositions(rows) {
            let key = ObjectKey(rows[position].key)
            entries[key] = Entry(values: rows[position].values, object: nil, section: section)
            keys.append(key)
        }
        let order = ChunkedOrder(keys)
        sectionList[index].order = order
        sectionList[index].members = []
        return order
    }

    /// Orders every section (before a comparison of the whole results).
    private func orderAll() {
        for index in sectionList.indices { ordered(index) }
    }

    /// Orders the section holding `value`, if there is one.
    private func orderSection(of value: FieldValue) {
        let (index, found) = sectionIndex(of: value)
        if found { ordered(index) }
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

    private func sectionIndex(of value: FieldValue) -> (index: Int, found: Bool) {
        var low = 0, high = sectionList.count
        while low < high {
            let mid = (low + high) / 2
            if sectionPrecedes(sectionList[mid].value, value) { low = mid + 1 } else { high = mid }
        }
        return (low, low < sectionList.count && sectionList[low].value == value)
    }

    /// What one commit does to the controller's keys: removed (with their old place),
    /// added (`moved`: removed first from elsewhere), or updated where they stand.
    private struct Classified {
        var removals: [(path: IndexPath, key: ObjectKey)] = []
        var additions: [(key: ObjectKey, entry: Entry, moved: Bool)] = []
        var stayed: [(key: ObjectKey, entry: Entry)] = []
    }

    /// One commit's changes to `T`, by binary search over the ordered keys.
    private func incremental(_ changes: TableChanges, old: Snapshot) -> Batch {
        let keys = Array(changes.deleted) + Array(changes.modified.keys) + Array(changes.inserted)
        // Each changed key's entry now (nil: not in the results).
        let now = keys.map { key -> Entry? in
            guard !changes.deleted.contains(key), let object = realm.object(bound: bound, key: key.bytes) as? T else { return nil }
            return entry(for: object, rank: nil)
        }
        orderSections(touchedBy: zip(keys, now))
        return applied(classify(zip(keys, now), changes), old: old)
    }

    /// Orders the sections a commit changes: each changed key's section before the commit
    /// (an ordered section's entry, else the fetch's) and after it.
    private func orderSections(touchedBy changed: some Sequence<(ObjectKey, Entry?)>) {
        guard let fetched = fetchedColumns, sectionList.contains(where: { $0.order == nil }) else { return }
        for (key, now) in changed {
            if entries[key] == nil, let ordinal = fetched.projection.ordinal(of: key.bytes), fetched.sectionOf[ordinal] >= 0 {
                orderSection(of: fetched.sectionValues[Int(fetched.sectionOf[ordinal])])
            }
            if let now { orderSection(of: now.section) }
        }
    }

    /// The place of `key` in its section, found by its entry's values.
    private func position(of key: ObjectKey, _ entry: Entry) -> IndexPath? {
        let (section, found) = sectionIndex(of: entry.section)
        guard found else { return nil }
        let order = ordered(section)
        let item = lowerBound(entry.values, key, in: order)
        return item < order.count && order[item] == key ? IndexPath(item: item, section: section) : nil
    }

    /// Step 1: each changed key's entry before and after the commit, compared.
    private func classify(_ changed: some Sequence<(ObjectKey, Entry?)>, _ changes: TableChanges) -> Classified {
        var result = Classified()
        for (key, now) in changed {
            switch (entries[key], now) {
            case (nil, nil):
                continue
            case (nil, let entry?):
                result.additions.append((key, entry, false))
            case (let entry?, nil):
                if let path = position(of: key, entry) { result.removals.append((path, key)) }
            case (let old?, let new?):
                guard let path = position(of: key, old) else { continue }
                if staysInPlace(key, at: path, old: old, new: new, changes: changes) {
                    result.stayed.append((key, new))
                } else {
                    result.removals.append((path, key))
                    result.additions.append((key, new, true))
                }
            }
        }
        return result
    }

    /// Whether a modified key keeps its place: same sort values, or new ones that still
    /// fall between the same neighbours in the same section. Deleted neighbours are skipped
    /// (deletions do not reorder anything); a neighbour that itself changed makes it a move,
    /// which is always safe.
    private func staysInPlace(_ key: ObjectKey, at path: IndexPath, old: Entry, new: Entry, changes: TableChanges) -> Bool {
        if zip(old.values, new.values).allSatisfy({ QueryCompiler.order($0, $1) == .orderedSame }) { return true }
        guard old.section == new.section else { return false }
        let order = ordered(path.section)
        return [-1, 1].allSatisfy { step in
            var neighbour = path.item + step
            while neighbour >= 0, neighbour < order.count, changes.deleted.contains(order[neighbour]) { neighbour += step }
            guard neighbour >= 0, neighbour < order.count else { return true }
            let other = order[neighbour]
            let touched = changes.modified[other] != nil || changes.deleted.contains(other) || changes.inserted.contains(other)
            guard !touched, let values = entries[other]?.values else { return false }
            return step < 0 ? precedes(values, other, new.values, key) : precedes(new.values, key, values, other)
        }
    }

    /// Step 2: the orders, entries and sections updated, and the batch that describes it
    /// (old paths for removals and moves, new paths for insertions and updates).
    private func applied(_ changes: Classified, old: Snapshot) -> Batch {
        var batch = Batch()
        let oldValues = sectionList.map(\.value)
        var oldPaths: [ObjectKey: IndexPath] = [:]
        for (path, key) in changes.removals { oldPaths[key] = path }
        for (key, _) in changes.stayed { oldPaths[key] = position(of: key, entries[key]!)! }
        // Remove, from the last place so earlier places (and section indices) stay valid.
        let movedKeys = Set(changes.additions.filter(\.moved).map(\.key))
        for (path, key) in changes.removals.sorted(by: { $0.path > $1.path }) {
            let entry = entries[key]!
            sectionList[path.section].order!.remove(at: path.item)
            sectionList[path.section].count -= 1
            if sectionList[path.section].count == 0 { sectionList.remove(at: path.section) }
            if !movedKeys.contains(key) {
                batch.deleted.append((path, mappedBeforeChange(key, entry, old: old)))
            }
            entries[key] = nil
        }
        for (key, entry) in changes.stayed { entries[key] = entry }
        for (key, entry, _) in changes.additions {
            let (section, found) = sectionIndex(of: entry.section)
            if found {
                ordered(section)
            } else {
                sectionList.insert(SectionInfo(value: entry.section, count: 0, order: ChunkedOrder()), at: section)
            }
            entries[key] = entry
            sectionList[section].order!.insert(key, at: lowerBound(entry.values, key, in: sectionList[section].order!))
            sectionList[section].count += 1
        }
        // Sections that went away or appeared (both lists in section order: one merge).
        let newValues = sectionList.map(\.value)
        var i = 0, j = 0
        while i < oldValues.count || j < newValues.count {
            if j == newValues.count || (i < oldValues.count && sectionPrecedes(oldValues[i], newValues[j])) {
                batch.deletedSections.append((i, oldValues[i])); i += 1
            } else if i == oldValues.count || sectionPrecedes(newValues[j], oldValues[i]) {
                batch.insertedSections.append(j); j += 1
            } else {
                i += 1; j += 1
            }
        }
        for (key, entry, moved) in changes.additions {
            batch.inserted.append((moved ? oldPaths[key] : nil, position(of: key, entry)!, mapped(key)))
        }
        for (key, entry) in changes.stayed {
            batch.updated.append((oldPaths[key]!, position(of: key, entry)!, mapped(key)))
        }
        return batch
    }

    /// Checks the controller's state (tests call it after commits): one entry per ordered
    /// key, each section's keys in sort order and of its value, unordered sections holding
    /// the fetch's members, and the sections ascending, distinct and counting their keys.
    /// Returns the first violation, or nil.
    func checkInvariants() -> String? {
        var orderedKeys = 0
        for (index, section) in sectionList.enumerated() {
            if index > 0, !sectionPrecedes(sectionList[index - 1].value, section.value) {
                return "sections \(index - 1) and \(index) are out of order or equal"
            }
            if section.count == 0 { return "section \(index) is empty" }
            guard let order = section.order else {
                if section.members.count != section.count { return "unordered section \(index) counts \(section.count) but holds \(section.members.count)" }
                guard let fetched = fetchedColumns else { return "unordered section \(index) without fetched columns" }
                if let wrong = section.members.first(where: { fetched.sectionValues[Int(fetched.sectionOf[Int($0)])] != section.value }) {
                    return "unordered section \(index) holds ordinal \(wrong) of another section"
                }
                continue
            }
            if let problem = order.checkInvariants() { return "section \(index): \(problem)" }
            if order.count != section.count { return "section \(index) counts \(section.count) but orders \(order.count) keys" }
            let keys = order.all
            orderedKeys += keys.count
            for (position, key) in keys.enumerated() {
                guard let entry = entries[key] else { return "key at \(index).\(position) has no entry" }
                if entry.section != section.value { return "key at \(index).\(position) belongs to section \(entry.section)" }
                if position > 0, !precedes(entries[keys[position - 1]]!.values, keys[position - 1], entry.values, key) {
                    return "keys at \(index).\(position - 1) and \(index).\(position) are out of order"
                }
            }
        }
        return orderedKeys == entries.count ? nil : "\(orderedKeys) ordered keys but \(entries.count) entries"
    }

    /// The sections not ordered yet (tests check that a fetch from columns orders none).
    var unorderedSectionCount: Int { sectionList.count { $0.order == nil } }

    /// Every key in order, with its place.
    private func flattened() -> [(key: ObjectKey, path: IndexPath)] {
        var result: [(key: ObjectKey, path: IndexPath)] = []
        for index in sectionList.indices {
            for (item, key) in ordered(index).all.enumerated() { result.append((key, IndexPath(item: item, section: index))) }
        }
        return result
    }

    /// Everything re-evaluated and compared by key (unknown changes, linked types, new filter).
    private func rebuild(old: Snapshot?, changes: CommitChanges?) -> Batch {
        orderAll()
        let oldOrder = flattened(), oldEntries = entries, oldValues = sectionList.map(\.value)
        install(build(in: realm, lazily: false))
        let newOrder = flattened()
        var batch = Batch()
        let oldPositions = Dictionary(uniqueKeysWithValues: oldOrder.enumerated().map { ($1.key, $0) })
        let newPositions = Dictionary(uniqueKeysWithValues: newOrder.enumerated().map { ($1.key, $0) })
        for (key, path) in oldOrder where newPositions[key] == nil {
            batch.deleted.append((path, mappedBeforeChange(key, oldEntries[key]!, old: old)))
        }
        let common = newOrder.enumerated().compactMap { position, item in oldPositions[item.key].map { (position, $0) } }
        let kept = Set(CollectionObserver<T>.longestIncreasing(common.map(\.1)).map { common[$0].0 })
        for (position, (key, newPath)) in newOrder.enumerated() {
            guard let oldPosition = oldPositions[key] else {
                batch.inserted.append((nil, newPath, mapped(key)))
                continue
            }
            let oldPath = oldOrder[oldPosition].path
            let movedSection = oldEntries[key]!.section != entries[key]!.section
            if !kept.contains(position) || movedSection {
                batch.inserted.append((oldPath, newPath, mapped(key)))
            } else if changed(key, old: old, changes: changes) {
                batch.updated.append((oldPath, newPath, mapped(key)))
            }
        }
        let newValues = sectionList.map(\.value)
        for (index, value) in oldValues.enumerated() where !newValues.contains(value) {
            batch.deletedSections.append((index, value))
        }
        for (index, value) in newValues.enumerated() where !oldValues.contains(value) {
            batch.insertedSections.append(index)
        }
        return batch
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
