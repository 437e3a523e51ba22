// SectionedResults: Realm Swift's `results.sectioned(by:)` — sorted results split into
// sections by a key computed from each object, for list screens with headers. The sections
// are a view over one `Results`: they are recomputed from it when the realm's content
// changes (one pass over the section keys; a stored property's keys are read as a column),
// and observing them observes the results, turning its change set into index paths.
//
// Ordering, as realm-core's object store does it: sections in key order (descending when
// the first sort descriptor is), objects within a section in the results' order.

import Foundation

extension Results {
    /// The results sorted by `keyPath` and split into one section per distinct value of it
    /// (Realm Swift's `sectioned(by:ascending:)`):
    ///
    /// ```swift
    /// let byCity = realm.objects(User.self).sectioned(by: \.city)
    /// for section in byCity { print(section.key, section.count) }
    /// ```
    ///
    /// `keyPath` must be a stored property that is not a link (it traps otherwise, as
    /// Realm raises).
    public func sectioned<Key: _PersistableValue & Hashable>(by keyPath: KeyPath<Element, Key>,
                                                             ascending: Bool = true) -> SectionedResults<Key, Element> {
        let name = Self.storedPropertyName(keyPath, in: query.bound)
        let sorted = self.sorted(byKeyPath: name, ascending: ascending)
        return SectionedResults(results: sorted, descending: !ascending) { $0.map(keyPath) }
    }

    /// The results sorted by `sortDescriptors` and split into one section per distinct value
    /// of `keyPath` (Realm Swift's form). Sections are in key order, descending when the
    /// first descriptor is; `sortDescriptors` may not be empty (it traps, as Realm raises).
    public func sectioned<Key: _PersistableValue & Hashable>(by keyPath: KeyPath<Element, Key>,
                                                             sortDescriptors: [SortDescriptor<Element>]) -> SectionedResults<Key, Element> {
        _ = Self.storedPropertyName(keyPath, in: query.bound)
        precondition(!sortDescriptors.isEmpty, "There must be at least one SortDescriptor when using SectionedResults.")
        return SectionedResults(results: sorted(by: sortDescriptors), descending: sortDescriptors[0].order == .reverse) { $0.map(keyPath) }
    }

    /// The results sorted by `sortDescriptors` and split into one section per distinct value
    /// `block` returns for an object (Realm Swift's form):
    ///
    /// ```swift
    /// let byInitial = people.sectioned(by: { String($0.name.prefix(1)) },
    ///                                  sortDescriptors: [SortDescriptor(keyPath: "name")])
    /// ```
    ///
    /// Sections are in key order, descending when the first descriptor is; within a
    /// section, objects keep the results' order. `sortDescriptors` may not be empty (it
    /// traps, as Realm raises). The block runs for every object each time the sections are
    /// recomputed (after a change to the realm's content).
    public func sectioned<Key: _PersistableValue & Hashable>(by block: @escaping (Element) -> Key,
                                                             sortDescriptors: [SortDescriptor<Element>]) -> SectionedResults<Key, Element> {
        precondition(!sortDescriptors.isEmpty, "There must be at least one SortDescriptor when using SectionedResults.")
        return SectionedResults(results: sorted(by: sortDescriptors), descending: sortDescriptors[0].order == .reverse) { results in
            results.map(block)
        }
    }

    /// The name of the stored property `keyPath` reads; traps for anything else.
    private static func storedPropertyName(_ keyPath: PartialKeyPath<Element>, in bound: BoundType) -> String {
        guard let index = bound.info.propertyIndex(for: keyPath) else {
            preconditionFailure("A section key path must name a stored property of \(bound.className)")
        }
        let property = bound.schema.properties[index]
        precondition(property.kind != .object && property.kind != .embedded && !property.isList && !property.isMap,
                     "Links are not supported as section keys (\(bound.className).\(property.name))")
        return property.name
    }
}

/// Results split into sections by a key (Realm Swift's `SectionedResults`), made by
/// ``Results/sectioned(by:ascending:)`` and its siblings. A live, random-access collection of
/// ``ResultsSection``s, confined to the realm's thread like the results it is made from.
///
/// ```swift
/// let sections = realm.objects(Contact.self).sectioned(by: \.city)
/// sections.allKeys                  // ["Oslo", "Paris"]
/// sections[0].key, sections[0].count, sections[IndexPath(item: 2, section: 0)]
/// ```
public struct SectionedResults<Key: _PersistableValue & Hashable, Element: Object>: RandomAccessCollection {
    /// The sorted results the sections divide.
    let results: Results<Element>
    /// Whether sections are in descending key order.
    let descending: Bool
    /// The section key of every object of `results`, in order.
    let sectionKeys: (Results<Element>) -> [Key]
    private let cache = Cache()

    final class Cache {
        var layout: SectionLayout<Key>?
        var version: UInt64 = 0
    }

    init(results: Results<Element>, descending: Bool, sectionKeys: @escaping (Results<Element>) -> [Key]) {
        self.results = results
        self.descending = descending
        self.sectionKeys = sectionKeys
    }

    /// The sections as of the realm's current content (recomputed once per change).
    var layout: SectionLayout<Key> {
        let version = results.managingRealm.readVersion
        if let kept = cache.layout, cache.version == version, version != 0 { return kept }
        let layout = SectionLayout(keys: sectionKeys(results), objectKeys: results.keys, descending: descending)
        cache.layout = layout
        cache.version = version
        return layout
    }

    /// The first section's position (0).
    public var startIndex: Int { 0 }
    /// The number of sections.
    public var endIndex: Int { layout.sections.count }

    /// The section at `position`.
    public subscript(position: Int) -> ResultsSection<Key, Element> {
        let layout = self.layout
        precondition(layout.sections.indices.contains(position), "Index \(position) is out of bounds (\(layout.sections.count) sections)")
        return ResultsSection(parent: self, key: layout.sections[position].key)
    }

    /// The object at `indexPath` (`section`, then `item`).
    public subscript(indexPath: IndexPath) -> Element {
        self[indexPath.section][indexPath.item]
    }

    /// Every section's key, in section order.
    public var allKeys: [Key] { layout.sections.map(\.key) }

    /// The realm the sections read.
    public var realm: Realm? { results.realm }
    /// Whether the realm was invalidated.
    public var isInvalidated: Bool { results.isInvalidated }
    /// Whether the sections belong to a frozen realm.
    public var isFrozen: Bool { results.isFrozen }

    /// The sections pinned to the commit the realm reads now (Realm's `freeze()`).
    public func freeze() -> SectionedResults<Key, Element> {
        SectionedResults(results: results.freeze(), descending: descending, sectionKeys: sectionKeys)
    }

    /// The live sections of frozen ones, in a realm opened here; live sections return
    /// themselves; nil when no realm can be opened here.
    public func thaw() -> SectionedResults<Key, Element>? {
        results.thaw().map { SectionedResults(results: $0, descending: descending, sectionKeys: sectionKeys) }
    }

    /// Calls `block` with `.initial` now, then with `.update` after each commit that changes
    /// the sections: deletions as index paths of the sections before, insertions and
    /// modifications of the sections after, and the sections inserted and deleted (an
    /// object whose key changed moves: a deletion and an insertion). Without a queue,
    /// `block` runs on the realm's thread; with one, on its own realm confined to `queue`.
    /// `keyPaths` limits the modifications reported, as for ``Results/observe(keyPaths:on:_:)``.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmSectionedResultsChange<SectionedResults<Key, Element>>) -> Void) -> NotificationToken {
        observeChanges(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let sections):
                block(.initial(sections))
            case .update(let sections, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete):
                block(.update(sections, deletions: deletions, insertions: insertions, modifications: modifications,
                              sectionsToInsert: sectionsToInsert, sectionsToDelete: sectionsToDelete))
            }
        }
    }

    /// The observation both the sections and one section use.
    func observeChanges(keyPaths: [String]?, on queue: DispatchQueue?,
                        _ block: @escaping (RealmSectionedResultsChange<SectionedResults<Key, Element>>) -> Void) -> NotificationToken {
        let descending = self.descending, sectionKeys = self.sectionKeys
        // The layout the last call described: the old side of the next change.
        var previous: SectionLayout<Key>?
        return results.observe(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let results):
                let sections = SectionedResults(results: results, descending: descending, sectionKeys: sectionKeys)
                previous = sections.layout
                block(.initial(sections))
            case .update(let results, let deletions, let insertions, let modifications):
                let sections = SectionedResults(results: results, descending: descending, sectionKeys: sectionKeys)
                let new = sections.layout
                let old = previous ?? new
                previous = new
                let change = SectionLayout.change(from: old, to: new, deletions: deletions, insertions: insertions, modifications: modifications)
                block(.update(sections, deletions: change.deletions, insertions: change.insertions, modifications: change.modifications,
                              sectionsToInsert: change.sectionsToInsert, sectionsToDelete: change.sectionsToDelete))
            case .error:
                // Sectioned results have no error case in Realm; an observation that fails
                // (its realm could not be opened on the queue) delivers nothing more.
                break
            }
        }
    }
}

/// One section of ``SectionedResults`` (Realm Swift's `ResultsSection`): its key and its
/// objects, in the results' order. It reads the live sections: after a change, the section
/// of the same key (empty when there is none any more).
public struct ResultsSection<Key: _PersistableValue & Hashable, Element: Object>: RandomAccessCollection, Identifiable {
    let parent: SectionedResults<Key, Element>
    /// The key every object of the section has.
    public let key: Key
    /// The key (`Identifiable`, for SwiftUI's `ForEach`).
    public var id: Key { key }

    /// The positions of the section's objects in the parent's results.
    private var positions: [Int] {
        let layout = parent.layout
        guard let index = layout.sectionIndex[key] else { return [] }
        return layout.sections[index].positions
    }

    /// The first object's position (0).
    public var startIndex: Int { 0 }
    /// The number of objects in the section.
    public var endIndex: Int { positions.count }

    /// The object at `position` within the section.
    public subscript(position: Int) -> Element {
        let positions = self.positions
        precondition(positions.indices.contains(position), "Index \(position) is out of bounds (section of \(positions.count) objects)")
        return parent.results[positions[position]]
    }

    /// The realm the section reads.
    public var realm: Realm? { parent.realm }
    /// Whether the section belongs to a frozen realm.
    public var isFrozen: Bool { parent.isFrozen }
    /// Whether the realm was invalidated.
    public var isInvalidated: Bool { parent.isInvalidated }

    /// The section pinned to the commit the realm reads now.
    public func freeze() -> ResultsSection<Key, Element> { ResultsSection(parent: parent.freeze(), key: key) }

    /// The live section of a frozen one; nil when no realm can be opened here.
    public func thaw() -> ResultsSection<Key, Element>? { parent.thaw().map { ResultsSection(parent: $0, key: key) } }

    /// Calls `block` with `.initial` now, then with `.update` after each commit that
    /// changes this section: index paths whose `section` is this section's position, and
    /// the section in `sectionsToInsert`/`sectionsToDelete` when it appears or goes.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmSectionedResultsChange<ResultsSection<Key, Element>>) -> Void) -> NotificationToken {
        let key = self.key
        var oldIndex: Int?
        return parent.observeChanges(keyPaths: keyPaths, on: queue) { change in
            switch change {
            case .initial(let sections):
                oldIndex = sections.layout.sectionIndex[key]
                block(.initial(ResultsSection(parent: sections, key: key)))
            case .update(let sections, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete):
                let newIndex = sections.layout.sectionIndex[key]
                defer { oldIndex = newIndex }
                let deleted = deletions.filter { $0.section == oldIndex }
                let inserted = insertions.filter { $0.section == newIndex }
                let modified = modifications.filter { $0.section == newIndex }
                let added = newIndex.map { sectionsToInsert.contains($0) } ?? false
                let removed = oldIndex.map { sectionsToDelete.contains($0) } ?? false
                guard !deleted.isEmpty || !inserted.isEmpty || !modified.isEmpty || added || removed else { return }
                block(.update(ResultsSection(parent: sections, key: key), deletions: deleted, insertions: inserted, modifications: modified,
                              sectionsToInsert: added ? IndexSet(integer: newIndex!) : [],
                              sectionsToDelete: removed ? IndexSet(integer: oldIndex!) : []))
            }
        }
    }
}

/// A change of ``SectionedResults`` or of one ``ResultsSection`` (Realm Swift's
/// `RealmSectionedResultsChange`).
public enum RealmSectionedResultsChange<Collection> {
    /// The sections as they are when the observation starts.
    case initial(Collection)
    /// The sections after a commit: objects removed (index paths before the change),
    /// added and changed (index paths after it), and sections added (positions after) and
    /// removed (positions before).
    case update(Collection, deletions: [IndexPath], insertions: [IndexPath], modifications: [IndexPath],
                sectionsToInsert: IndexSet, sectionsToDelete: IndexSet)
}

/// Where each object of the results falls: sections in key order, each with the results'
/// positions of its objects in order.
struct SectionLayout<Key: _PersistableValue & Hashable> {
    struct Section {
        let key: Key
        var positions: [Int]
    }

    let sections: [Section]
    let sectionIndex: [Key: Int]
    /// Per results position: the section and the item within it.
    let placeOfPosition: [(section: Int, item: Int)]
    /// Per results position: the object's key.
    let objectKeys: [[UInt8]]

    init(keys: [Key], objectKeys: [[UInt8]], descending: Bool) {
        var sections: [Section] = []
        var index: [Key: Int] = [:]
        for (position, key) in keys.enumerated() {
            if let known = index[key] {
                sections[known].positions.append(position)
            } else {
                index[key] = sections.count
                sections.append(Section(key: key, positions: [position]))
            }
        }
        let fields = sections.map { section -> FieldValue in
            let field = (try? section.key._field(in: nil)) ?? .null
            if case .link = field { preconditionFailure("Links are not supported as section keys.") }
            return field
        }
        let order = sections.indices.sorted { a, b in
            let compared = FieldValue.compare(fields[a], fields[b])
            return descending ? compared > 0 : compared < 0
        }
        self.sections = order.map { sections[$0] }
        var sectionIndex: [Key: Int] = [:]
        var places = [(section: Int, item: Int)](repeating: (0, 0), count: keys.count)
        for (sectionNumber, section) in self.sections.enumerated() {
            sectionIndex[section.key] = sectionNumber
            for (item, position) in section.positions.enumerated() { places[position] = (sectionNumber, item) }
        }
        self.sectionIndex = sectionIndex
        placeOfPosition = places
        self.objectKeys = objectKeys
    }

    /// A results change (positions) as a sections change (index paths). An object that
    /// stayed in the results but whose section key changed is moved: deleted from its old
    /// section, inserted into its new one.
    static func change(from old: SectionLayout, to new: SectionLayout, deletions: [Int], insertions: [Int], modifications: [Int])
        -> (deletions: [IndexPath], insertions: [IndexPath], modifications: [IndexPath], sectionsToInsert: IndexSet, sectionsToDelete: IndexSet) {
        func path(_ layout: SectionLayout, _ position: Int) -> IndexPath {
            let place = layout.placeOfPosition[position]
            return IndexPath(item: place.item, section: place.section)
        }
        var deleted = deletions.filter { old.placeOfPosition.indices.contains($0) }.map { path(old, $0) }
        var inserted = insertions.filter { new.placeOfPosition.indices.contains($0) }.map { path(new, $0) }
        var modified: [IndexPath] = []
        var oldPositions: [[UInt8]: Int]?
        for position in modifications where new.placeOfPosition.indices.contains(position) {
            let newKey = new.sections[new.placeOfPosition[position].section].key
            oldPositions = oldPositions ?? Dictionary(old.objectKeys.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            if let oldPosition = oldPositions?[new.objectKeys[position]],
               old.sections[old.placeOfPosition[oldPosition].section].key != newKey {
                deleted.append(path(old, oldPosition))
                inserted.append(path(new, position))
            } else {
                modified.append(path(new, position))
            }
        }
        let sectionsToInsert = IndexSet(new.sections.indices.filter { old.sectionIndex[new.sections[$0].key] == nil })
        let sectionsToDelete = IndexSet(old.sections.indices.filter { new.sectionIndex[old.sections[$0].key] == nil })
        return (deleted.sorted(), inserted.sorted(), modified.sorted(), sectionsToInsert, sectionsToDelete)
    }
}
