// ResultSet: the evaluated answer of one query for one snapshot, the last of the four
// rooms (IR → planner → evaluators → result set; realm-core calls it a TableView). A
// column scan's answer stays as ordinals of its table projection: `count` is the
// selection's population, a key is copied only for a position that is read, and a sort
// orders only as far as positions have been read (the first 20 of 100k matches cost a
// pass that keeps the best 64, not a sort of 100k). A property's postings answer with
// integer primary keys (engine keys made for a position read). Other plans answer with
// engine keys.

import Foundation

/// The matching objects of one evaluation, by position.
///
/// A class: `Results` caches one per read version and hands it to iterators, which keep
/// reading it when the cache moves on. Positions never change once evaluated; only how
/// much of the order has been worked out does (not thread-safe, as `Results` is confined).
final class ResultSet {
    private enum Storage {
        case keys([[UInt8]])
        case ordinals(TableProjection, LazyOrder)
        /// Integer primary keys, in order (a property's postings); engine keys made on read.
        case integers([Int64])
    }

    private var storage: Storage
    /// The number of matching objects (after any LIMIT).
    let count: Int
    private var materialized: [[UInt8]]?

    /// An answer given as engine keys, in order.
    init(keys: [[UInt8]]) {
        storage = .keys(keys)
        count = keys.count
        materialized = keys
    }

    /// A column scan's answer: `selected` ordinals of `projection`, ordered by `order`,
    /// at most `limit` of them.
    init(projection: TableProjection, selected: OrdinalSet, order: TableProjection.OrdinalOrder, limit: Int?) {
        let population = selected.population
        count = limit.map { Swift.min($0, population) } ?? population
        storage = .ordinals(projection, LazyOrder(selected: selected, order: order))
    }

    /// Ordinals of `projection` already in order (a property's postings), at most `limit`.
    init(projection: TableProjection, ordered ordinals: [Int32], limit: Int?) {
        count = limit.map { Swift.min($0, ordinals.count) } ?? ordinals.count
        storage = .ordinals(projection, LazyOrder(ordered: ordinals))
    }

    /// Integer primary keys already in order (a property's postings), at most `limit`.
    init(integerKeys: [Int64], limit: Int?) {
        count = limit.map { Swift.min($0, integerKeys.count) } ?? integerKeys.count
        storage = .integers(integerKeys)
    }

    /// The integer primary keys of positions `0 ..< count`, when the answer is kept as them.
    var integerKeys: ArraySlice<Int64>? {
        if case .integers(let keys) = storage { return keys.prefix(count) }
        return nil
    }

    /// The engine key at `position` (`0 ..< count`).
    func key(at position: Int) -> [UInt8] {
        if case .keys(let keys) = storage { return keys[position] }
        if case .integers(let keys) = storage { return PrimaryKeyValue.int(keys[position]).keyBytes }
        let (projection, ordinal) = ordinal(at: position)!
        return projection.key(ordinal)
    }

    /// The projection and ordinal at `position`, for a column scan's answer (nil for keys).
    func ordinal(at position: Int) -> (projection: TableProjection, ordinal: Int)? {
        guard case .ordinals(let projection, var order) = storage else { return nil }
        storage = .keys([])  // (leaves `order` uniquely referenced while it sorts)
        let ordinal = order.ordinal(at: position)
        storage = .ordinals(projection, order)
        return (projection, Int(ordinal))
    }

    /// The projection and the ordinals of positions `0 ..< through`, in order, for a
    /// column scan's answer (nil for keys): one call for a loop over many positions.
    func ordinals(through end: Int) -> (projection: TableProjection, ordinals: ArraySlice<Int32>)? {
        guard case .ordinals(let projection, var order) = storage else { return nil }
        storage = .keys([])  // (leaves `order` uniquely referenced while it sorts)
        let ordinals = order.ordinals(through: end)
        storage = .ordinals(projection, order)
        return (projection, ordinals)
    }

    /// Every key, in order (the whole order worked out; copied once, then kept).
    var keys: [[UInt8]] {
        if let materialized { return materialized }
        var keys: [[UInt8]] = []
        keys.reserveCapacity(count)
        for position in 0 ..< count { keys.append(key(at: position)) }
        materialized = keys
        return keys
    }
}

/// Ordinals whose order is worked out on demand: `items[..<sorted]` are the first ones in
/// order, the rest all come after them, in no order. Reading position p sorts up to at
/// least p (a bounded heap keeps the best k in one pass; past a quarter of the items, the
/// remainder is sorted whole).
struct LazyOrder {
    private var selected: OrdinalSet?
    private var items: [Int32] = []
    private var sorted = 0
    private let order: TableProjection.OrdinalOrder

    init(selected: OrdinalSet, order: TableProjection.OrdinalOrder) {
        self.selected = selected
        self.order = order
    }

    /// Items already in order.
    init(ordered items: [Int32]) {
        self.items = items
        sorted = items.count
        order = TableProjection.ordinalOrder
    }

    mutating func ordinal(at position: Int) -> Int32 {
        if let selected {
            items = selected.ordinals
            self.selected = nil
            if order.isIdentity { sorted = items.count }
            if sorted < items.count, order.needsWholeSort(items) {
                items = order.sorted(items)
                sorted = items.count
            }
        }
        if position >= sorted { sort(through: position) }
        return items[position]
    }

    /// The ordinals of positions `0 ..< end`, in order.
    mutating func ordinals(through end: Int) -> ArraySlice<Int32> {
        guard end > 0 else { return [] }
        _ = ordinal(at: end - 1)
        return items[..<end]
    }

    /// Orders the items up to `position`: at least 64 more, doubling as reading goes on.
    private mutating func sort(through position: Int) {
        let remaining = items.count - sorted
        let wanted = Swift.max(position + 1 - sorted, Swift.max(64, sorted))
        if wanted * 4 >= remaining {
            let rest = order.sorted(Array(items[sorted...]))
            items.replaceSubrange(sorted..., with: rest)
            sorted = items.count
            return
        }
        let precedes = order.precedes
        items.withUnsafeMutableBufferPointer { buffer in
            let base = sorted
            let k = wanted
            // A max-heap of the best k so far in buffer[base ..< base + k]: its root is the
            // worst of them, replaced by any later item that precedes it.
            func siftDown(_ start: Int) {
                var parent = start
                while true {
                    let left = 2 * parent + 1
                    if left >= k { return }
                    var largest = left
                    if left + 1 < k, precedes(buffer[base + left], buffer[base + left + 1]) { largest = left + 1 }
                    guard precedes(buffer[base + parent], buffer[base + largest]) else { return }
                    buffer.swapAt(base + parent, base + largest)
                    parent = largest
                }
            }
            for start in stride(from: k / 2 - 1, through: 0, by: -1) { siftDown(start) }
            for i in (base + k) ..< buffer.count where precedes(buffer[i], buffer[base]) {
                buffer.swapAt(i, base)
                siftDown(0)
            }
            var best = UnsafeMutableBufferPointer(rebasing: buffer[base ..< base + k])
            best.sort(by: precedes)
        }
        sorted += wanted
    }
}
