// TEMPORARY: stand-ins for API.md §7 (asyncWrite, Frozen, FrozenResults) until they land in
// Sources/Strata. Delete this file as soon as `grep -rn "func asyncWrite" Sources` finds the
// real ones: the service code is written against the real API and needs no change.
// (The stand-ins block on the writer lock and fdatasync, and copy instead of freezing.)

import Strata

extension Realm {
    func asyncWrite<R>(_ block: () throws -> R) async throws -> R {
        try write(block)
    }
}

@dynamicMemberLookup
struct Frozen<T: Object>: @unchecked Sendable {
    private let copy: T
    init(_ object: T) { copy = object.deepCopy() }
    subscript<V>(dynamicMember keyPath: KeyPath<T, V>) -> V { copy[keyPath: keyPath] }
}

struct FrozenResults<T: Object>: RandomAccessCollection, @unchecked Sendable {
    private let items: [Frozen<T>]
    init(_ items: [Frozen<T>]) { self.items = items }
    var startIndex: Int { 0 }
    var endIndex: Int { items.count }
    subscript(position: Int) -> Frozen<T> { items[position] }
}

extension Results {
    func frozen() -> FrozenResults<Element> { FrozenResults(map { Frozen($0) }) }
}
