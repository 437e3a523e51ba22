// Realm Swift's `SortDescriptor(keyPath:ascending:)`, on Foundation's `SortDescriptor` (the
// type Strata's `sorted(by:)` takes), so both spellings compile in one file: the property
// named by the string is read through `Object[_sortKey:]`, a key path the planner
// recognizes as that property (so the sort runs on the columns like any other).

import Foundation

/// The types `SortDescriptor(keyPath:ascending:)` sorts: objects. (A protocol rather than
/// `Compared: Object`: a superclass constraint let Swift infer `SortDescriptor<Object>` in
/// `results.sorted(by: [SortDescriptor(keyPath: "age")])`.)
public protocol _SortableByName: AnyObject {
    /// The stored property `name` as a sortable value.
    subscript(_sortKey name: String) -> _SortKey { get }
}

extension Object: _SortableByName {}

/// The key path of `type`'s property `name` (made here alone, so the planner's equals the
/// descriptor's: key paths are equal when made the same way).
func sortKeyPath<C: _SortableByName>(_ type: C.Type, _ name: String) -> KeyPath<C, _SortKey> & Sendable {
    \C[_sortKey: name]
}

extension SortDescriptor where Compared: _SortableByName {
    /// A sort by the stored property named `keyPath`, ascending or not (Realm Swift's form):
    ///
    /// ```swift
    /// results.sorted(by: [SortDescriptor(keyPath: "lastName"), SortDescriptor(keyPath: "age", ascending: false)])
    /// ```
    ///
    /// A name that is not a stored property sorts as nil for every object.
    public init(keyPath: String, ascending: Bool = true) {
        self.init(sortKeyPath(Compared.self, keyPath), order: ascending ? .forward : .reverse)
    }

    /// Whether the sort is ascending (Realm Swift's `ascending`).
    public var ascending: Bool { order == .forward }

    /// The same sort in the other direction (Realm Swift's `reversed()`).
    public func reversed() -> SortDescriptor<Compared> {
        var flipped = self
        flipped.order = order == .forward ? .reverse : .forward
        return flipped
    }
}

extension Object {
    /// The stored property `name` as a value `SortDescriptor(keyPath:ascending:)` compares
    /// (nil for an unmanaged object or a name the type lacks).
    public subscript(_sortKey name: String) -> _SortKey {
        guard let state = _state, let index = state.bound.schema.index(of: name) else { return _SortKey(field: .null) }
        return _SortKey(field: state.field(index))
    }
}

/// A stored value ordered as a sort orders it: nil first, then the values' own order.
public struct _SortKey: Comparable, Sendable {
    let field: FieldValue

    public static func < (lhs: _SortKey, rhs: _SortKey) -> Bool { QueryCompiler.order(lhs.field, rhs.field) == .orderedAscending }
    public static func == (lhs: _SortKey, rhs: _SortKey) -> Bool { QueryCompiler.order(lhs.field, rhs.field) == .orderedSame }
}
