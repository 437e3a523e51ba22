// Ordered indexes: beside the hash postings of an indexed property whose values have an
// order (integers, doubles, floats, dates, strings), a counted B+tree of its (value,
// primary key) entries, so a range (`age > 40`, `"m" <= name < "n"`) is found in
// O(log n + matches) and counted in O(log n), without a projection and without reading
// a row per object (docs/ARCHITECTURE.md, "Ordered indexes"; FORMAT.md, "Ordered index").
//
// The tree lives in the property's index table, under keys no hash-index key can take
// (those begin with a u16 length and a value key whose kind byte is never 0x4F):
//
//   FF FF 4F 00              → the root record: u8 format (1) ‖ u64 root node id ‖
//                              u8 height (0: empty) ‖ u64 next node id ‖ u64 entries (LE)
//   FF FF 4F 01 ‖ u64 BE id  → a node: u8 level (0: leaf) ‖ u32 n ‖ n items, each
//                              leaf:   u32 length ‖ entry
//                              branch: u64 child id ‖ u64 entries below it ‖
//                                      u32 length ‖ the child's first entry
//
// An entry is the value's order-preserving encoding (`OrderedValueKey`) followed by the
// primary key's bytes: encodings are prefix-free, so byte order of entries is (value,
// key) order. Each commit applies its index delta as one sorted batch: every node on a
// changed path is read once and written once, leaves split into pieces and merge with a
// neighbour when they fall under a quarter of a node, and the entry counts of branches
// are kept on the way back up. The tree exists exactly when its root record does; a
// writable open builds a missing one from the rows (`OrderedIndex.buildMissing`), so a
// store written before ordered indexes, or by a writer that removed the tree (a
// migration), is brought up to date. Every answer it gives is a candidate list the query
// re-judges against the rows, except a count of a numeric range, whose encoding is exact.

import Foundation
import StrataStorage

/// The order-preserving encoding of one indexed value (`OrderedIndex`'s entries).
enum OrderedValueKey {
    static let nullTag: UInt8 = 0x00
    static let numberTag: UInt8 = 0x10
    static let notANumberTag: UInt8 = 0x20
    static let stringTag: UInt8 = 0x30
    /// Strings are indexed by their first bytes only (normalized UTF-8): longer ones share
    /// an entry prefix, so string answers are candidates (re-judged), never exact.
    static let maxStringBytes = 1024

    /// Whether a property of this shape has an ordered index when it is indexed.
    static func isOrderable(_ property: PropertySchema) -> Bool {
        guard property.isIndexed, !property.isPrimaryKey, !property.isList, !property.isMap else { return false }
        switch property.kind {
        case .int, .int8, .int16, .int32, .int64, .double, .float, .date, .string: return true
        default: return false
        }
    }

    /// Appends `value`'s encoding to `out`; false (nothing appended) for a kind without one.
    @discardableResult
    static func append(_ value: FieldValue, to out: inout [UInt8]) -> Bool {
        switch value {
        case .null: out.append(nullTag)
        case .int(let v): appendNumber(UInt64(bitPattern: v) ^ (1 << 63), to: &out)
        case .double(let d): appendDouble(d, to: &out)
        case .float(let f): appendDouble(Double(f), to: &out)
        case .date(let d): appendDouble(d.timeIntervalSinceReferenceDate, to: &out)
        case .string(let s): appendString(s, to: &out)
        default: return false
        }
        return true
    }

    /// The encoding of `value` alone (a range's bound), or nil for a kind without one.
    static func bytes(for value: FieldValue) -> [UInt8]? {
        var out: [UInt8] = []
        return append(value, to: &out) ? out : nil
    }

    private static func appendNumber(_ bits: UInt64, to out: inout [UInt8]) {
        out.append(numberTag)
        withUnsafeBytes(of: bits.bigEndian) { out.append(contentsOf: $0) }
    }

    /// Doubles in their order: negative ones with every bit flipped, others with the sign
    /// bit set; -0.0 as 0.0 (they are equal); NaN, which no ordering holds for, on its own
    /// tag past every number so no range reaches it.
    private static func appendDouble(_ d: Double, to out: inout [UInt8]) {
        if d.isNaN { out.append(notANumberTag); return }
        let bits = (d == 0 ? 0.0 : d).bitPattern
        appendNumber(bits >> 63 == 1 ? ~bits : bits | 1 << 63, to: &out)
    }

    /// Swift orders strings by their NFC-normalized scalars, and UTF-8 bytes order as
    /// scalars do: the normalized bytes, 0x00 escaped as 00 01, ended by 00 00.
    private static func appendString(_ s: String, to out: inout [UInt8], terminated: Bool = true) {
        out.append(stringTag)
        var written = 0
        for byte in PrimaryKeyValue.canonical(s).utf8 {
            guard written < maxStringBytes else { break }
            out.append(byte)
            if byte == 0 { out.append(1) }
            written += 1
        }
        if terminated {
            out.append(0)
            out.append(0)
        }
    }

    /// What the encoding of every string starting with `prefix` starts with: the entries of
    /// a `BEGINSWITH` are those whose bytes begin with it (a superset: a string that starts
    /// with the prefix's bytes but splits one of its characters still has to be judged).
    static func prefixBytes(_ prefix: String) -> [UInt8] {
        var out: [UInt8] = []
        appendString(prefix, to: &out, terminated: false)
        return out
    }

    /// The length of the value part at the start of `entry`, or nil when it is malformed.
    static func valueLength(_ entry: ArraySlice<UInt8>) -> Int? {
        guard let tag = entry.first else { return nil }
        switch tag {
        case nullTag, notANumberTag: return 1
        case numberTag: return entry.count >= 9 ? 9 : nil
        case stringTag:
            var i = entry.startIndex + 1
            while i + 1 < entry.endIndex {
                if entry[i] == 0 {
                    if entry[i + 1] == 0 { return i + 2 - entry.startIndex }
                    i += 2
                } else {
                    i += 1
                }
            }
            return nil
        default: return nil
        }
    }
}

/// A counted B+tree of one property's entries (see the file's header).
enum OrderedIndex {
    static let prefix: [UInt8] = [0xFF, 0xFF, 0x4F]
    static let rootKey: [UInt8] = prefix + [0x00]
    static let format: UInt8 = 1
    /// A node is split when its encoding passes this many bytes, and merged with a
    /// neighbour below a quarter of it.
    static let maxNodeBytes = 4 << 10

    static func nodeKey(_ id: UInt64) -> [UInt8] {
        var key = prefix + [0x01]
        withUnsafeBytes(of: id.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    /// Whether `key` of an index table is one of the tree's (not the hash postings').
    static func isTreeKey(_ key: [UInt8]) -> Bool { key.starts(with: prefix) }

    /// A stored tree's root record.
    struct Root: Equatable {
        var rootID: UInt64 = 0
        var height: Int = 0
        var nextID: UInt64 = 1
        var count: Int = 0

        init() {}

        init?(_ bytes: [UInt8]) {
            guard bytes.count == 26, bytes[0] == OrderedIndex.format else { return nil }
            var reader = OrderedIndex.Reader(bytes[...])
            reader.offset = 1
            guard let root = reader.u64(), let height = reader.u8(), let next = reader.u64(), let count = reader.u64(),
                  height <= 64, count <= UInt64(Int.max), next >= 1 else { return nil }
            rootID = root
            self.height = Int(height)
            nextID = next
            self.count = Int(count)
            if (self.height == 0) != (rootID == 0) { return nil }
        }

        var bytes: [UInt8] {
            var out: [UInt8] = [OrderedIndex.format]
            OrderedIndex.appendU64(rootID, to: &out)
            out.append(UInt8(height))
            OrderedIndex.appendU64(nextID, to: &out)
            OrderedIndex.appendU64(UInt64(count), to: &out)
            return out
        }
    }

    /// A damaged tree record: the tree cannot answer, and the next writable open rebuilds it.
    struct Damage: Error, CustomStringConvertible {
        let what: String
        var description: String { "ordered index: \(what)" }
    }

    /// One node, decoded. A leaf's `items` are its entries; a branch's are its children's
    /// first entries, with `children` and `counts` beside them. Items are slices of the
    /// record's bytes: a query reads a few nodes, and an array per entry was most of it.
    struct Node {
        var level: Int
        var items: [ArraySlice<UInt8>] = []
        var children: [UInt64] = []
        var counts: [Int] = []

        var encodedSize: Int {
            5 + items.reduce(0) { $0 + $1.count + 4 } + (level == 0 ? 0 : items.count * 16)
        }

        var entryCount: Int { level == 0 ? items.count : counts.reduce(0, +) }

        func encoded() -> [UInt8] {
            var out: [UInt8] = [UInt8(level)]
            out.reserveCapacity(encodedSize)
            OrderedIndex.appendU32(UInt32(items.count), to: &out)
            for (i, item) in items.enumerated() {
                if level > 0 {
                    OrderedIndex.appendU64(children[i], to: &out)
                    OrderedIndex.appendU64(UInt64(counts[i]), to: &out)
                }
                OrderedIndex.appendU32(UInt32(item.count), to: &out)
                out.append(contentsOf: item)
            }
            return out
        }

        /// Decodes a node, checking its shape (lengths within the record, a level that
        /// fits the tree's height, counts that add up).
        static func decode(_ bytes: [UInt8], expectedLevel: Int) throws -> Node {
            var reader = Reader(bytes[...])
            guard let level = reader.u8(), Int(level) == expectedLevel, let n = reader.u32(), n > 0,
                  Int(n) <= (bytes.count - 5) / (level == 0 ? 5 : 21) else {
                throw Damage(what: "a node is not at the level its parent implies, or holds more items than bytes")
            }
            var node = Node(level: Int(level))
            node.items.reserveCapacity(Int(n))
            var total = 0
            for _ in 0 ..< n {
                if level > 0 {
                    guard let child = reader.u64(), let count = reader.u64(), child != 0, count > 0, count <= UInt64(Int.max) else {
                        throw Damage(what: "a branch's child is malformed")
                    }
                    let (sum, overflow) = total.addingReportingOverflow(Int(count))
                    guard !overflow else { throw Damage(what: "a branch's counts overflow") }
                    total = sum
                    node.children.append(child)
                    node.counts.append(Int(count))
                }
                guard let length = reader.u32(), let item = reader.bytes(Int(length)), !item.isEmpty else {
                    throw Damage(what: "an entry runs past its node")
                }
                node.items.append(item)
            }
            guard reader.offset == bytes.count else { throw Damage(what: "a node has bytes past its last entry") }
            for i in node.items.indices.dropFirst() where OrderedIndex.order(node.items[i - 1], node.items[i]) >= 0 {
                throw Damage(what: "a node's entries are out of order")
            }
            return node
        }
    }

    struct Reader {
        let bytes: ArraySlice<UInt8>
        var offset = 0
        init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

        mutating func u8() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[bytes.startIndex + offset]
        }

        mutating func u32() -> UInt32? {
            guard let b = self.bytes(4) else { return nil }
            return b.reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }

        mutating func u64() -> UInt64? {
            guard let b = self.bytes(8) else { return nil }
            return b.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }

        mutating func bytes(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, offset + count <= bytes.count else { return nil }
            defer { offset += count }
            let start = bytes.startIndex + offset
            return bytes[start ..< start + count]
        }
    }

    static func appendU32(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    static func appendU64(_ value: UInt64, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    /// The entry of `primaryKey` holding `value`, or nil for a value without an order.
    static func entry(_ value: FieldValue, primaryKey: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(primaryKey.count + 10)
        guard OrderedValueKey.append(value, to: &out) else { return nil }
        out.append(contentsOf: primaryKey)
        return out
    }

    /// The primary key held by `entry`, or nil when it is malformed.
    static func primaryKey(of entry: ArraySlice<UInt8>) -> [UInt8]? {
        guard let length = OrderedValueKey.valueLength(entry), length < entry.count else { return nil }
        return Array(entry[(entry.startIndex + length)...])
    }
}

// MARK: - Reading

extension OrderedIndex {
    /// One end of a range of values, as their encoding: entries whose value part compares
    /// against `bytes` as `inclusive` allows.
    struct Bound {
        var bytes: [UInt8]
        var inclusive: Bool
    }

    /// A range of one property's values: the planner's `orderedIndex` access path.
    struct Range {
        var lower: Bound
        var upper: Bound
        /// Whether the encoding decides the comparison exactly (numbers and dates), so the
        /// tree's count is the answer; strings are candidates only.
        var isExact: Bool

        /// Entry `entry` against the lower bound: whether it is at or above it.
        func aboveLower(_ entry: ArraySlice<UInt8>) -> Bool {
            let order = OrderedIndex.compare(entry, prefix: lower.bytes)
            return order > 0 || (order == 0 && lower.inclusive)
        }

        func belowUpper(_ entry: ArraySlice<UInt8>) -> Bool {
            let order = OrderedIndex.compare(entry, prefix: upper.bytes)
            return order < 0 || (order == 0 && upper.inclusive)
        }
    }

}

extension OrderedIndex {
    /// -1, 0 or 1 as `entry` sorts before, within (starts with) or after the values of
    /// encoding `prefix`.
    static func compare(_ entry: ArraySlice<UInt8>, prefix: [UInt8]) -> Int {
        entry.withUnsafeBufferPointer { e in
            prefix.withUnsafeBufferPointer { p in
                let common = min(e.count, p.count)
                if common > 0 {
                    let order = memcmp(e.baseAddress!, p.baseAddress!, common)
                    if order != 0 { return order < 0 ? -1 : 1 }
                }
                return e.count >= p.count ? 0 : -1
            }
        }
    }

    typealias Read = ([UInt8]) throws -> [UInt8]?

    /// The tree's root, or nil when the property has no tree (or its root is damaged).
    static func root(_ read: Read) throws -> Root? {
        guard let bytes = try read(rootKey) else { return nil }
        guard let root = Root(bytes) else { throw Damage(what: "the root record is malformed") }
        return root
    }

    private static func node(_ id: UInt64, level: Int, _ read: Read) throws -> Node {
        guard let bytes = try read(nodeKey(id)) else { throw Damage(what: "node \(id) is missing") }
        return try Node.decode(bytes, expectedLevel: level)
    }

    /// The number of entries in `range`: the counts of the branches' children wholly
    /// inside it, and the entries of the (at most two) leaves at its ends.
    static func count(_ range: Range, root: Root, _ read: Read) throws -> Int {
        guard root.height > 0 else { return 0 }
        func visit(_ id: UInt64, level: Int, lowerKnown: Bool, upperKnown: Bool) throws -> Int {
            let node = try node(id, level: level, read)
            if level == 0 {
                return node.items.reduce(0) { total, entry in
                    total + ((lowerKnown || range.aboveLower(entry)) && (upperKnown || range.belowUpper(entry)) ? 1 : 0)
                }
            }
            var total = 0
            for i in node.items.indices {
                // Child i holds entries from items[i] up to (not including) items[i + 1].
                let next = i + 1 < node.items.count ? node.items[i + 1] : nil
                if !upperKnown, i > 0, !range.belowUpper(node.items[i]) { break }
                if !lowerKnown, let next, !range.aboveLower(next) { continue }
                // Entries are sorted and both tests are monotone: the first entry above the
                // lower end puts the whole child above it; the next child's first below the
                // upper end puts the whole child below it.
                let childLower = lowerKnown || range.aboveLower(node.items[i])
                let childUpper = upperKnown || (next.map(range.belowUpper) ?? false)
                total += childLower && childUpper ? node.counts[i]
                    : try visit(node.children[i], level: level - 1, lowerKnown: childLower, upperKnown: childUpper)
            }
            return total
        }
        return try visit(root.rootID, level: root.height - 1, lowerKnown: false, upperKnown: false)
    }

    /// Hands `body` each entry in `range`, in order (descending with `reverse`), until it
    /// returns false.
    static func forEach(in range: Range, root: Root, reverse: Bool = false, _ read: Read,
                        _ body: (ArraySlice<UInt8>) throws -> Bool) throws {
        guard root.height > 0 else { return }
        func visit(_ id: UInt64, level: Int) throws -> Bool {
            let node = try node(id, level: level, read)
            let order = reverse ? Array(node.items.indices.reversed()) : Array(node.items.indices)
            for i in order {
                if level == 0 {
                    let entry = node.items[i]
                    if !range.aboveLower(entry) { if reverse { return false } else { continue } }
                    if !range.belowUpper(entry) { if reverse { continue } else { return false } }
                    if try !body(entry) { return false }
                    continue
                }
                let next = i + 1 < node.items.count ? node.items[i + 1] : nil
                // Wholly above the range (its first entry is), or wholly below (the next child's first is).
                if i > 0, !range.belowUpper(node.items[i]) { if reverse { continue } else { return false } }
                if let next, !range.aboveLower(next) {
                    if reverse { return false } else { continue }
                }
                if try !visit(node.children[i], level: level - 1) { return false }
            }
            return true
        }
        _ = try visit(root.rootID, level: root.height - 1)
    }
}

// MARK: - Writing

extension OrderedIndex {
    /// Entries end to end in one buffer, with their ends: a commit's changes and a leaf's
    /// new contents hold no array per entry (a million-object load makes a million entries).
    struct EntryArena {
        private(set) var bytes: [UInt8] = []
        private(set) var ends: [Int] = []

        var count: Int { ends.count }
        var isEmpty: Bool { ends.isEmpty }

        subscript(i: Int) -> ArraySlice<UInt8> { bytes[(i == 0 ? 0 : ends[i - 1]) ..< ends[i]] }

        mutating func append(_ entry: some Collection<UInt8>) {
            bytes.append(contentsOf: entry)
            ends.append(bytes.count)
        }

        /// Calls `body` with a function from an entry's position to its bytes (valid during
        /// the call): comparisons in a sort touch no array.
        func withSpans<R>(_ body: ((Int) -> UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try bytes.withUnsafeBytes { raw in
                try ends.withUnsafeBufferPointer { ends in
                    try body { i in UnsafeRawBufferPointer(rebasing: raw[(i == 0 ? 0 : ends[i - 1]) ..< ends[i]]) }
                }
            }
        }

        /// Appends the entry of `primaryKey` holding `value`; false (nothing appended) for a
        /// value without an order.
        @discardableResult
        mutating func append(value: FieldValue, primaryKey: some Collection<UInt8>) -> Bool {
            guard OrderedValueKey.append(value, to: &bytes) else { return false }
            bytes.append(contentsOf: primaryKey)
            ends.append(bytes.count)
            return true
        }
    }

    /// One commit's changes to a tree, in the order they were made, applied as one batch:
    /// of several changes to one entry the last decides (an import that meets one key twice
    /// adds, removes and adds again).
    struct Edits {
        private(set) var entries = EntryArena()
        private(set) var adds: [Bool] = []
        /// Set when an object's old value could not be read (its stored row is damaged): its
        /// entry cannot be removed, so the commit drops the tree rather than keep a stale one.
        var dropsTree = false
        var isEmpty: Bool { adds.isEmpty && !dropsTree }
        var count: Int { adds.count }

        mutating func add(_ value: FieldValue, primaryKey: some Collection<UInt8>) {
            if entries.append(value: value, primaryKey: primaryKey) { adds.append(true) }
        }

        mutating func remove(_ value: FieldValue, primaryKey: some Collection<UInt8>) {
            if entries.append(value: value, primaryKey: primaryKey) { adds.append(false) }
        }
    }

    /// -1, 0 or 1 as `a` sorts before, equal to or after `b`, bytewise.
    static func order(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Int {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in order(x, y) } }
    }

    static func order(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Int {
        let common = min(x.count, y.count)
        if common > 0 {
            let order = memcmp(x.baseAddress!, y.baseAddress!, common)
            if order != 0 { return order < 0 ? -1 : 1 }
        }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    /// A commit's changes sorted, one per entry, with whether each entry is in the tree
    /// afterwards. Sorted as positions into the edits' buffer: nothing is copied per entry
    /// until the sorted list is written.
    private struct Changes {
        var entries = EntryArena()
        var present: [Bool] = []
        var count: Int { present.count }

        init(_ edits: Edits) {
            // Positions sorted by entry, then by when they were made; the last of each entry
            // decides. Each position carries its entry's first eight bytes as one integer, so
            // most comparisons are one (a million-object load sorts a million entries).
            let all = edits.entries
            var keyed: [(head: UInt64, position: Int)] = []
            keyed.reserveCapacity(edits.count)
            all.withSpans { span in
                for position in 0 ..< edits.count {
                    let bytes = span(position)
                    var head: UInt64 = 0
                    for i in 0 ..< 8 { head = head << 8 | UInt64(i < bytes.count ? bytes[i] : 0) }
                    keyed.append((head, position))
                }
                keyed.sort { a, b in
                    if a.head != b.head { return a.head < b.head }
                    let order = OrderedIndex.order(span(a.position), span(b.position))
                    return order < 0 || (order == 0 && a.position < b.position)
                }
            }
            let codes = keyed.map(\.position)
            keyed = []
            present.reserveCapacity(codes.count)
            var previous: ArraySlice<UInt8>?
            for code in codes {
                let current = all[code]
                if let previous, OrderedIndex.order(previous, current) == 0 {
                    present[present.count - 1] = edits.adds[code]
                } else {
                    entries.append(current)
                    present.append(edits.adds[code])
                }
                previous = current
            }
        }
    }

    /// A node as its parent refers to it.
    private struct ChildRef {
        var id: UInt64
        var count: Int
        var first: [UInt8]
        /// The node's encoded size, when it was just written (nil: untouched).
        var size: Int?
    }

    /// Applies `edits` to the tree in `table` through `transaction`; does nothing when the
    /// property has no tree. Of several changes to one entry, the last decides.
    static func apply(_ edits: Edits, table: UInt32, transaction: Transaction) throws {
        guard !edits.isEmpty, let rootBytes = try transaction.get(table: table, key: rootKey) else { return }
        guard !edits.dropsTree else { throw Damage(what: "an object's old value could not be read, so its entry cannot be removed") }
        guard var root = Root(rootBytes) else { throw Damage(what: "the root record is malformed") }
        let changes = Changes(edits)
        var writer = TreeWriter(table: table, transaction: transaction, root: root)
        var refs: [ChildRef]
        var level: Int
        if root.height == 0 {
            var entries = EntryArena()
            for i in 0 ..< changes.count where changes.present[i] { entries.append(changes.entries[i]) }
            refs = try writer.writeLeaves(entries, reusing: nil)
            level = 0
        } else {
            level = root.height - 1
            refs = try writer.edit(root.rootID, level: level, changes, 0 ..< changes.count)
        }
        // Grow: a root that split becomes the children of a new level.
        while refs.count > 1 {
            level += 1
            refs = try writer.writeBranches(level: level, children: refs, reusing: nil)
        }
        root = writer.root
        if let top = refs.first {
            // Shrink: a branch root with one child hands the root to it.
            var id = top.id
            while level > 0 {
                let node = try writer.read(id, level: level)
                guard node.children.count == 1 else { break }
                try transaction.delete(table: table, key: nodeKey(id))
                id = node.children[0]
                level -= 1
            }
            root.rootID = id
            root.height = level + 1
            root.count = top.count
        } else {
            root.rootID = 0
            root.height = 0
            root.count = 0
        }
        try transaction.put(table: table, key: rootKey, value: root.bytes)
    }

    /// Writes nodes of one tree in one transaction, handing out node ids from its root.
    private struct TreeWriter {
        let table: UInt32
        let transaction: Transaction
        var root: Root

        func read(_ id: UInt64, level: Int) throws -> Node {
            try OrderedIndex.node(id, level: level) { try transaction.get(table: table, key: $0) }
        }

        mutating func newID() -> UInt64 {
            defer { root.nextID += 1 }
            return root.nextID
        }

        /// Items of `sizes` cut into runs of at most `maxNodeBytes` (at least one item
        /// each), filled evenly to about three quarters so the next insertions do not split
        /// them at once.
        /// Each run holds at least `minimumItems` items when there are that many: a branch
        /// takes two children at least, whatever their size (an entry ends with its object's
        /// key, up to 64 KiB, so one can be larger than a node), or a level of one-child
        /// branches would never narrow to a root.
        static func pieces(count: Int, overhead: Int, minimumItems: Int = 1, size: (Int) -> Int) -> [Swift.Range<Int>] {
            var total = overhead
            for i in 0 ..< count { total += size(i) }
            guard total > maxNodeBytes, count >= 2 * minimumItems else { return count == 0 ? [] : [0 ..< count] }
            let fill = maxNodeBytes * 3 / 4, pieces = (total + fill - 1) / fill
            let target = (total + pieces - 1) / pieces
            var ranges: [Swift.Range<Int>] = []
            var start = 0, bytes = overhead
            for i in 0 ..< count {
                let itemSize = size(i)
                if i - start >= minimumItems, bytes + itemSize > target {
                    ranges.append(start ..< i)
                    start = i
                    bytes = overhead
                }
                bytes += itemSize
            }
            if count - start < minimumItems, let last = ranges.popLast() {
                start = last.lowerBound
            }
            ranges.append(start ..< count)
            return ranges
        }

        /// Writes `entries` (sorted) as leaves, the first reusing `id`; deletes `id`'s
        /// record when there is nothing to write.
        mutating func writeLeaves(_ entries: EntryArena, reusing id: UInt64?) throws -> [ChildRef] {
            var refs: [ChildRef] = []
            for (n, range) in Self.pieces(count: entries.count, overhead: 5, size: { entries[$0].count + 4 }).enumerated() {
                var bytes: [UInt8] = [0]
                OrderedIndex.appendU32(UInt32(range.count), to: &bytes)
                for i in range {
                    let entry = entries[i]
                    OrderedIndex.appendU32(UInt32(entry.count), to: &bytes)
                    bytes.append(contentsOf: entry)
                }
                let nodeID = n == 0 ? (id ?? newID()) : newID()
                try transaction.put(table: table, key: OrderedIndex.nodeKey(nodeID), value: bytes)
                refs.append(ChildRef(id: nodeID, count: range.count, first: Array(entries[range.lowerBound]), size: bytes.count))
            }
            if refs.isEmpty, let id { try transaction.delete(table: table, key: OrderedIndex.nodeKey(id)) }
            return refs
        }

        mutating func writeBranches(level: Int, children: [ChildRef], reusing id: UInt64?) throws -> [ChildRef] {
            var refs: [ChildRef] = []
            for (n, range) in Self.pieces(count: children.count, overhead: 5, minimumItems: 2, size: { children[$0].first.count + 20 }).enumerated() {
                let slice = children[range]
                let node = Node(level: level, items: slice.map { $0.first[...] }, children: slice.map(\.id), counts: slice.map(\.count))
                let nodeID = n == 0 ? (id ?? newID()) : newID()
                let bytes = node.encoded()
                try transaction.put(table: table, key: OrderedIndex.nodeKey(nodeID), value: bytes)
                refs.append(ChildRef(id: nodeID, count: node.entryCount, first: Array(node.items[0]), size: bytes.count))
            }
            if refs.isEmpty, let id { try transaction.delete(table: table, key: OrderedIndex.nodeKey(id)) }
            return refs
        }

        /// Applies the sorted `changes` under node `id`; returns what replaces it (nothing
        /// when it emptied, several nodes when it split).
        mutating func edit(_ id: UInt64, level: Int, _ changes: Changes, _ range: Swift.Range<Int>) throws -> [ChildRef] {
            let node = try read(id, level: level)
            if level == 0 {
                var entries = EntryArena()
                var i = node.items.startIndex
                for c in range {
                    let change = changes.entries[c]
                    while i < node.items.endIndex, OrderedIndex.order(node.items[i], change) < 0 {
                        entries.append(node.items[i])
                        i += 1
                    }
                    if i < node.items.endIndex, OrderedIndex.order(node.items[i], change) == 0 { i += 1 }
                    if changes.present[c] { entries.append(change) }
                }
                for item in node.items[i...] { entries.append(item) }
                return try writeLeaves(entries, reusing: id)
            }
            var children: [ChildRef] = []
            var start = range.lowerBound
            for c in node.items.indices {
                // Changes below the next child's first entry belong to this one.
                var end = range.upperBound
                if c + 1 < node.items.count {
                    let bound = node.items[c + 1]
                    end = (start ..< range.upperBound).first { OrderedIndex.order(changes.entries[$0], bound) >= 0 } ?? range.upperBound
                }
                if start == end {
                    children.append(ChildRef(id: node.children[c], count: node.counts[c], first: Array(node.items[c]), size: nil))
                } else {
                    children.append(contentsOf: try edit(node.children[c], level: level - 1, changes, start ..< end))
                }
                start = end
            }
            try mergeSmall(&children, level: level - 1)
            return try writeBranches(level: level, children: children, reusing: id)
        }

        /// Merges each child just written below a quarter of a node with its neighbour
        /// (then cut again if the two are too big for one).
        mutating func mergeSmall(_ children: inout [ChildRef], level: Int) throws {
            var i = 0
            while i < children.count {
                guard children.count > 1, let size = children[i].size, size < OrderedIndex.maxNodeBytes / 4 else {
                    i += 1
                    continue
                }
                let left = i + 1 < children.count ? i : i - 1
                let a = try read(children[left].id, level: level), b = try read(children[left + 1].id, level: level)
                try transaction.delete(table: table, key: OrderedIndex.nodeKey(children[left + 1].id))
                let merged: [ChildRef]
                if level == 0 {
                    var entries = EntryArena()
                    for item in a.items + b.items { entries.append(item) }
                    merged = try writeLeaves(entries, reusing: children[left].id)
                } else {
                    let refs = (0 ..< a.items.count).map { ChildRef(id: a.children[$0], count: a.counts[$0], first: Array(a.items[$0]), size: nil) }
                        + (0 ..< b.items.count).map { ChildRef(id: b.children[$0], count: b.counts[$0], first: Array(b.items[$0]), size: nil) }
                    merged = try writeBranches(level: level, children: refs, reusing: children[left].id)
                }
                // The merged node(s) are at least as big as the small one was: not revisited.
                children.replaceSubrange(left ... left + 1, with: merged.map { ref in
                    var ref = ref
                    ref.size = nil
                    return ref
                })
                i = left + merged.count
            }
        }
    }

    /// Builds the trees of `schema`'s indexed ordered properties that have none (a store
    /// written before ordered indexes, or whose tree a migration removed): one transaction
    /// for all, reading each type's rows once. Returns the number of trees built.
    @discardableResult
    static func buildMissing(store: Store, schema: Schema) throws -> Int {
        func missing(in snapshot: Snapshot) -> [(type: ObjectSchema, properties: [Int])] {
            schema.objectSchemas.compactMap { type in
                let properties = type.properties.indices.filter { index in
                    guard OrderedValueKey.isOrderable(type.properties[index]) else { return false }
                    let table = StoreLayout.indexTable(type.tableNumber, property: index)
                    let bytes = try? snapshot.get(table: table, key: rootKey)
                    return bytes.flatMap(Root.init) == nil
                }
                return properties.isEmpty ? nil : (type, properties)
            }
        }
        // A cheap look first (most opens find every tree); then, inside the write, the state
        // the write starts from: another process may have written or built since.
        guard !missing(in: store.snapshot()).isEmpty else { return 0 }
        var built = 0
        _ = try store.write { transaction in
            let snapshot = transaction.baseSnapshot
            for (type, properties) in missing(in: snapshot) {
                var edits = Array(repeating: Edits(), count: properties.count)
                // A row that does not read is left out: lookups judge each candidate's row, so
                // the tree need only hold the values that can be read.
                snapshot.scanRecords(table: StoreLayout.objectTable(type.tableNumber), damaged: { _, _ in }) { key, row in
                    for (position, property) in properties.enumerated() {
                        guard let value = try? RowFormat.field(property, of: row) else { continue }
                        edits[position].add(value, primaryKey: key)
                    }
                }
                for (property, propertyEdits) in zip(properties, edits) {
                    let table = StoreLayout.indexTable(type.tableNumber, property: property)
                    // A damaged tree's leftovers go first: the new one starts from node 1.
                    for key in try snapshot.keys(table: table) where isTreeKey(key) { try transaction.delete(table: table, key: key) }
                    try transaction.put(table: table, key: rootKey, value: Root().bytes)
                    try apply(propertyEdits, table: table, transaction: transaction)
                    built += 1
                }
            }
        }
        return built
    }
}

// MARK: - Checking

extension OrderedIndex {
    /// What is wrong with a tree, or nil: its entries must be exactly `expected`, each
    /// node well formed at its level, sorted within and across nodes, no node past the
    /// size limit (unless it holds one item), each branch's first entries and counts those
    /// of its children, the root's count the total, and every tree record of the table
    /// (`treeKeys`) reachable from the root. Tests run it after commits.
    static func verify(expected: [[UInt8]], treeKeys: Set<[UInt8]>, _ read: Read) -> String? {
        let root: Root
        do {
            guard let found = try OrderedIndex.root(read) else { return "no root record" }
            root = found
        } catch {
            return "\(error)"
        }
        var reached: Set<[UInt8]> = [rootKey]
        var entries: [[UInt8]] = []
        func visit(_ id: UInt64, level: Int) throws -> (count: Int, first: [UInt8]) {
            guard reached.insert(nodeKey(id)).inserted else { throw Damage(what: "node \(id) is reached twice") }
            let node = try node(id, level: level, read)
            // A leaf of one entry, or a branch of two or three children, may pass the limit.
            if node.items.count > (level == 0 ? 1 : 3), node.encodedSize > maxNodeBytes {
                throw Damage(what: "node \(id) holds \(node.encodedSize) bytes")
            }
            if level == 0 {
                entries.append(contentsOf: node.items.map(Array.init))
                return (node.items.count, Array(node.items[0]))
            }
            var total = 0
            for i in node.items.indices {
                let (count, first) = try visit(node.children[i], level: level - 1)
                if count != node.counts[i] { throw Damage(what: "node \(id) counts \(node.counts[i]) below child \(i), which holds \(count)") }
                if !first.elementsEqual(node.items[i]) { throw Damage(what: "node \(id) names another first entry for child \(i)") }
                total += count
            }
            return (total, Array(node.items[0]))
        }
        do {
            if root.height > 0 {
                let (count, _) = try visit(root.rootID, level: root.height - 1)
                if count != root.count { return "the root counts \(root.count) entries, the tree holds \(count)" }
            } else if root.count != 0 {
                return "an empty tree counts \(root.count) entries"
            }
        } catch {
            return "\(error)"
        }
        for i in entries.indices.dropFirst() where !entries[i - 1].lexicographicallyPrecedes(entries[i]) {
            return "entries \(i - 1) and \(i) are out of order across leaves"
        }
        if entries != expected { return "the tree holds \(entries.count) entries, the rows \(expected.count) (or others)" }
        if let orphan = treeKeys.first(where: { !reached.contains($0) }) { return "tree record \(orphan) is reachable from no node" }
        return nil
    }
}
