// Backlinks: the hidden inverse index behind LinkingObjects. A link, list or set property
// that some type's linking objects read (its *origin property*) has an index table like a
// secondary index's (`StoreLayout.indexTable`), keyed by `.link(target key)`: for each
// target, the keys of the objects whose property links to it. Commits, imports and
// migrations keep it current together with the rows, in the same transaction. Which
// properties have one follows from the stored schema alone (`Schema.backlinkedProperties`),
// so a store needs no other record of it.

extension Schema {
    /// The positions of `type`'s properties that linking objects somewhere in the schema
    /// read, ascending.
    func backlinkedProperties(of type: ObjectSchema) -> [Int] {
        var positions = Set<Int>()
        for other in objectSchemas {
            for property in other.properties where property.kind == .linkingObjects && property.objectClassName == type.className {
                if let position = property.originProperty.flatMap(type.index(of:)), type.properties[position].kind == .object {
                    positions.insert(position)
                }
            }
        }
        return positions.sorted()
    }

    /// Every property with an index table: indexed properties and origin properties.
    func maintainedIndexes(of type: ObjectSchema) -> [(property: Int, backlink: Bool)] {
        type.properties.indices.filter { type.properties[$0].isIndexed }.map { ($0, false) }
            + backlinkedProperties(of: type).map { ($0, true) }
    }
}

extension SecondaryIndex {
    /// The values under which a property's field is indexed: the field itself for a
    /// secondary index; each distinct link target for an inverse index.
    static func entries(_ field: FieldValue, backlink: Bool) -> [FieldValue] {
        guard backlink else { return [field] }
        switch field {
        case .link: return [field]
        case .list(let items):
            var seen = Set<ObjectKey>()
            return items.filter { item in
                guard case .link(let key) = item else { return false }
                return seen.insert(ObjectKey(key)).inserted
            }
        default: return []
        }
    }
}

extension SecondaryIndex.Delta {
    /// Records that an object's old value of the property could not be read (its stored row
    /// is damaged): its entries cannot be named for removal. Hash postings tolerate a stale
    /// entry (lookups re-check each candidate's row); the ordered index is dropped.
    mutating func recordUnreadableOldValue() {
        ordered.dropsTree = true
    }

    /// Records one object's property changing from `old` to `new` (nil: the object did not
    /// exist, or no longer does) in an index.
    mutating func record(_ key: [UInt8], old: FieldValue?, new: FieldValue?, backlink: Bool) {
        let before = old.map { SecondaryIndex.entries($0, backlink: backlink) } ?? []
        let after = new.map { SecondaryIndex.entries($0, backlink: backlink) } ?? []
        if !backlink {
            // One value each: unchanged bytes were filtered by the caller.
            for value in before { remove(key, value: value) }
            for value in after { add(key, value: value) }
            return
        }
        let oldKeys = Set(before.map { IndexValueKey.bytes(for: $0) }), newKeys = Set(after.map { IndexValueKey.bytes(for: $0) })
        for value in before where !newKeys.contains(IndexValueKey.bytes(for: value)) { remove(key, value: value) }
        for value in after where !oldKeys.contains(IndexValueKey.bytes(for: value)) { add(key, value: value) }
    }
}

extension Realm {
    /// The keys of the objects whose `property`'s origin property links to `owner` now
    /// (the open write's changes included), ascending, with the origin type; nil when the
    /// property is not linking objects of a type this realm can read.
    func linkingKeys(to owner: ObjectState, property: PropertySchema) -> (origin: BoundType, keys: [[UInt8]])? {
        guard property.kind == .linkingObjects, let originName = property.objectClassName,
              let origin = boundTypeOrDynamic(named: originName),
              let originIndex = property.originProperty.flatMap(origin.schema.index(of:)) else { return nil }
        return (origin, backlinkKeys(origin: origin, property: originIndex, target: owner.key))
    }

    /// The keys of the `origin` objects whose property `index` links to `target`, ascending.
    func backlinkKeys(origin: any TextQueryType, property index: Int, target: [UInt8]) -> [[UInt8]] {
        let table = origin.table
        let indexTable = StoreLayout.indexTable(origin.schema.tableNumber, property: index)
        var candidates = (try? SecondaryIndex.lookup(table: indexTable, value: .link(target)) { table, key in
            try snapshot.get(table: table, key: key)
        }) ?? []
        // The index is written at commit: the open write's rows are candidates too.
        if let write = writeState {
            let known = Set(candidates.map(ObjectKey.init))
            candidates += write.rows.keys(inTable: table).filter { !known.contains(ObjectKey($0)) }
        }
        return Backlinks.confirmed(candidates, origin: origin, property: index, target: target, source: self)
    }
}

/// Reading a row accessor at `ownKey` gives `.link(the row's own key)`: how string queries
/// reach a row's linking objects (rows hold no key of their own). Far past any property
/// position, so an accessor that does not know it reads null.
enum RowAccess {
    static let ownKey = 1 << 20
}

enum Backlinks {
    /// The candidates (from an inverse index, and a write's rows) whose current row links to
    /// `target`, ascending: a stale entry (a damaged row's, one a write changed) never counts.
    static func confirmed(_ candidates: [[UInt8]], origin: any TextQueryType, property: Int, target: [UInt8],
                          source: any TextQuerySource) -> [[UInt8]] {
        let link = FieldValue.link(target)
        return candidates.filter { key in
            guard let row = source.queryRow(table: origin.table, key: key) else { return false }
            return SecondaryIndex.entries(row(property), backlink: true).contains(link)
        }.sorted { $0.lexicographicallyPrecedes($1) }
    }
}
