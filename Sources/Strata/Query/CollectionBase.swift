// CollectionBase: the collection a `Results` narrows instead of a whole table — Realm's
// `list.filter(…)`, `linkingObjects.sorted(…)`. The candidates are the collection's
// objects as it is at each evaluation (live, like any `Results`), in its order, duplicates
// kept; filters and sorts then apply as to a table's objects.
//
// The owner is named by table and key, not held: the base is plain data, so a query built
// on it can be evaluated by another realm of the same store (a queue's, a frozen one's).
// Only an embedded owner, which has no key of its own, is held as its state.

/// The list, set or linking objects of one object that a ``Results`` is built on.
final class CollectionBase: @unchecked Sendable {
    enum Owner {
        /// A top-level object, found again by key in whichever realm evaluates.
        case stored(table: UInt32, key: [UInt8])
        /// An embedded object (it has no key of its own): usable by its own realm only.
        case embedded(ObjectState)
    }

    let owner: Owner
    /// The property of the owner's type: a list or set of links, or linking objects.
    let property: Int
    /// The owner's type and the property's name, for `explain()`.
    let name: String

    init(owner state: ObjectState, property: Int) {
        owner = state.embedding == nil ? .stored(table: state.bound.table, key: state.key) : .embedded(state)
        self.property = property
        name = "\(state.bound.className).\(state.bound.schema.properties[property].name)"
    }

    /// The owner as `realm` reads it now; nil when it is gone (the results are then empty,
    /// as Realm's are once the owner is deleted).
    func ownerState(in realm: Realm) -> ObjectState? {
        switch owner {
        case .stored(let table, let key):
            guard let bound = realm.boundType(table: table) else { return nil }
            return realm.object(bound: bound, key: key)?._state
        case .embedded(let state):
            return state.realm === realm && !state.isInvalidated ? state : nil
        }
    }

    /// Whether another realm can evaluate a query on this base (an embedded owner cannot
    /// be found again there).
    var isPortable: Bool {
        if case .stored = owner { return true }
        return false
    }

    /// The keys of the collection's objects now, in its order, duplicates kept (links to
    /// deleted objects are skipped by the caller, which reads each object).
    func keys(in realm: Realm) -> [[UInt8]] {
        guard let state = ownerState(in: realm) else { return [] }
        let schema = state.bound.schema.properties[property]
        if schema.kind == .linkingObjects {
            return realm.linkingKeys(to: state, property: schema)?.keys ?? []
        }
        guard case .list(let items) = state.field(property) else { return [] }
        return items.compactMap { item in
            if case .link(let key) = item { return key }
            return nil
        }
    }
}
