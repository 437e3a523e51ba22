// Secondary indexes: for each value of an indexed property, the primary keys of the
// objects holding it, in the engine's tables so they survive crashes and compaction with
// the objects they index (both change in the same transaction).
//
// A value held by few objects keeps their keys in one list. Past `smallLimit` keys the
// list is split into 64 buckets by a hash of the primary key, so adding or removing one
// object rewrites one bucket, not the whole list; the head record then holds a 64-bit
// mask of the non-empty buckets, so a lookup reads only those. A bucket that grows past
// `splitLimit` keys splits in turn into 64 buckets by the next six bits of the hash, and
// so on: a tree of buckets whose leaves never hold more than about `splitLimit` keys, so a
// one-object change rewrites O(splitLimit) bytes whatever the number of objects sharing
// the value (a value shared by a million objects: two levels, ~250 keys a leaf).
//
//   key = u16 length of the value key ‖ value key ‖ 0x01            → head: mode byte
//                                          (0 = one list, 1 = buckets) ‖ u64 mask (LE)
//   key = u16 length of the value key ‖ value key ‖ 0x00 ‖ 0xFF     → the one list
//   key = u16 length of the value key ‖ value key ‖ 0x00 ‖ path     → a leaf bucket; the
//         path is the bucket numbers (0 ..< 64) from the top, one byte a level
//   key = u16 length of the value key ‖ value key ‖ 0x02 ‖ path     → a split bucket: u64
//         mask (LE) of its non-empty children; its keys are in the children's buckets
//   list and buckets = (u32 LE length ‖ primary key bytes)*
//
// Level d of the tree uses bits 6d ..< 6d + 6 of the primary key's FNV-1a hash (level 0:
// the hash modulo 64, as before the tree existed, so stores written then read the same).

enum SecondaryIndex {
    static let bucketCount = 64
    /// Keys a single list holds before it is split into buckets.
    static let smallLimit = 256
    static let listSlot = 0xFF
    /// Keys a bucket holds before it splits into 64 (at most `maxDepth` levels).
    static let splitLimit = 512
    static let maxDepth = 10

    static func hash(of primaryKey: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in primaryKey { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// The bucket of `primaryKey` at tree level `depth`.
    static func bucket(of primaryKey: [UInt8], depth: Int = 0) -> Int {
        Int(hash(of: primaryKey) >> UInt64(6 * depth) & UInt64(bucketCount - 1))
    }

    static func prefix(_ valueKey: [UInt8]) -> [UInt8] {
        var key: [UInt8] = [UInt8(valueKey.count & 0xFF), UInt8(valueKey.count >> 8 & 0xFF)]
        key.append(contentsOf: valueKey)
        return key
    }

    static func bucketKey(_ valueKey: [UInt8], _ bucket: Int) -> [UInt8] { prefix(valueKey) + [0, UInt8(bucket)] }
    static func leafKey(_ valueKey: [UInt8], _ path: [UInt8]) -> [UInt8] { prefix(valueKey) + [0] + path }
    static func splitKey(_ valueKey: [UInt8], _ path: [UInt8]) -> [UInt8] { prefix(valueKey) + [2] + path }
    static func headKey(_ valueKey: [UInt8]) -> [UInt8] { prefix(valueKey) + [1] }

    static func decodeMask(_ bytes: [UInt8]?) -> UInt64? {
        guard let bytes, bytes.count == 8 else { return nil }
        return bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    static func maskBytes(_ mask: UInt64) -> [UInt8] { (0 ..< 8).map { UInt8(mask >> (8 * $0) & 0xFF) } }

    static func decodePostings(_ bytes: [UInt8]) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        var offset = 0
        while offset + 4 <= bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            offset += 4
            guard offset + length <= bytes.count else { break }
            keys.append(Array(bytes[offset ..< offset + length]))
            offset += length
        }
        return keys
    }

    static func encodePostings(_ keys: some Sequence<[UInt8]>) -> [UInt8] {
        var bytes: [UInt8] = []
        for key in keys {
            let length = UInt32(key.count)
            bytes.append(contentsOf: [UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)])
            bytes.append(contentsOf: key)
        }
        return bytes
    }

    /// A value's head: one list, or buckets with the mask of the non-empty ones.
    enum Head: Equatable {
        case list
        case buckets(UInt64)

        init?(_ bytes: [UInt8]?) {
            guard let bytes, bytes.count == 9 else { return nil }
            let mask = bytes[1...].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = bytes[0] == 0 ? .list : .buckets(mask)
        }

        var bytes: [UInt8] {
            switch self {
            case .list: return [0] + [UInt8](repeating: 0, count: 8)
            case .buckets(let mask): return [1] + (0 ..< 8).map { UInt8(mask >> (8 * $0) & 0xFF) }
            }
        }
    }

    /// The primary keys of the objects whose property holds `value`, as of `read`.
    static func lookup(table: UInt32, value: FieldValue, read: (UInt32, [UInt8]) throws -> [UInt8]?) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try forEachPostings(table: table, value: value, read: read) { keys.append(contentsOf: decodePostings($0)) }
        return keys
    }

    /// The same when every key is an integer primary key (a kind byte, then the eight bytes
    /// of its order value), as the integers, in no order; nil when one is not. No array is
    /// made per key: the first equality on an indexed property, before any projection
    /// exists, reads 10k keys for a 1M-object table.
    static func lookupIntegers(table: UInt32, value: FieldValue, read: (UInt32, [UInt8]) throws -> [UInt8]?) throws -> [Int64]? {
        var integers: [Int64] = [], allIntegers = true
        try forEachPostings(table: table, value: value, read: read) { bytes in
            guard allIntegers else { return }
            bytes.withUnsafeBytes { bytes in
                var offset = 0
                while offset + 4 <= bytes.count {
                    let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian)
                    offset += 4
                    guard offset + length <= bytes.count else { break }
                    guard length == 9, bytes[offset] == PrimaryKeyValue.integerKind else {
                        allIntegers = false
                        return
                    }
                    let raw = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self))
                    integers.append(PrimaryKeyValue.integer(orderValue: raw))
                    offset += length
                }
            }
        }
        return allIntegers ? integers : nil
    }

    /// Hands `body` each postings record (a list or a leaf bucket) of `value`, as of `read`.
    private static func forEachPostings(table: UInt32, value: FieldValue, read: (UInt32, [UInt8]) throws -> [UInt8]?,
                                        _ body: ([UInt8]) -> Void) throws {
        let valueKey = IndexValueKey.bytes(for: value)
        switch Head(try read(table, headKey(valueKey))) {
        case nil:
            return
        case .list:
            if let postings = try read(table, bucketKey(valueKey, listSlot)) { body(postings) }
        case .buckets(let mask):
            func visit(_ path: [UInt8]) throws {
                if let children = decodeMask(try read(table, splitKey(valueKey, path))) {
                    for child in 0 ..< bucketCount where children & (1 << UInt64(child)) != 0 { try visit(path + [UInt8(child)]) }
                } else if let postings = try read(table, leafKey(valueKey, path)) {
                    body(postings)
                }
            }
            for bucket in 0 ..< bucketCount where mask & (1 << UInt64(bucket)) != 0 { try visit([UInt8(bucket)]) }
        }
    }

    /// Changes to one index made by one transaction, applied at commit. A commit adds or
    /// removes each (object, value) pair at most once (it compares each row's final value
    /// with its stored one), so additions and removals are kept apart, as plain lists.
    struct Delta {
        var added: [ValueKey: [[UInt8]]] = [:]
        var removed: [ValueKey: [[UInt8]]] = [:]
        /// The same changes as entries of the property's ordered index (values with an
        /// order only), applied when the property has one (`OrderedIndex`).
        var ordered = OrderedIndex.Edits()

        struct ValueKey: Hashable {
            let bytes: [UInt8]
            func hash(into hasher: inout Hasher) {
                bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }

        mutating func add(_ primaryKey: [UInt8], value: FieldValue) {
            added[ValueKey(bytes: IndexValueKey.bytes(for: value)), default: []].append(primaryKey)
            ordered.add(value, primaryKey: primaryKey)
        }

        mutating func remove(_ primaryKey: [UInt8], value: FieldValue) {
            removed[ValueKey(bytes: IndexValueKey.bytes(for: value)), default: []].append(primaryKey)
            ordered.remove(value, primaryKey: primaryKey)
        }

        /// Writes the changed lists, buckets and heads through `transaction`, then the
        /// ordered index's nodes. A tree that cannot be read is dropped (its root removed),
        /// not allowed to fail the commit: queries then scan, and the next writable open
        /// rebuilds it from the rows.
        func apply(table: UInt32, transaction: Transaction) throws {
            for value in Set(added.keys).union(removed.keys) {
                try apply(value.bytes, added: added[value] ?? [], removed: removed[value] ?? [], table: table, transaction: transaction)
            }
            do {
                try OrderedIndex.apply(ordered, table: table, transaction: transaction)
            } catch let treeError {
                // A malformed node, or a record the engine refuses to read back: drop the
                // tree if the transaction still takes writes (after an I/O error it does
                // not, and that error is the commit's).
                do { try transaction.delete(table: table, key: OrderedIndex.rootKey) } catch { throw treeError }
                transaction.logger?.warning("\(treeError) in index table \(table): the ordered index is dropped and rebuilt at the next writable open")
            }
        }

        private static func edit(_ postings: inout [[UInt8]], added: [[UInt8]], removed: [[UInt8]]) {
            if !removed.isEmpty {
                let gone = Set(removed.map(ObjectKey.init))
                postings.removeAll { gone.contains(ObjectKey($0)) }
            }
            if !added.isEmpty {
                let present = Set(postings.map(ObjectKey.init))
                postings.append(contentsOf: added.filter { !present.contains(ObjectKey($0)) })
            }
        }

        /// Applies edits to the bucket at `path` (a leaf, or a split bucket whose children
        /// take them); splits a leaf that grows past `splitLimit`. Returns whether the
        /// bucket still holds any key.
        private static func editBucket(_ valueKey: [UInt8], path: [UInt8], added: [[UInt8]], removed: [[UInt8]],
                                       existing: Bool, table: UInt32, transaction: Transaction) throws -> Bool {
            let depth = path.count
            let splitKey = SecondaryIndex.splitKey(valueKey, path)
            if existing, let children = SecondaryIndex.decodeMask(try transaction.get(table: table, key: splitKey)) {
                var edits: [Int: (added: [[UInt8]], removed: [[UInt8]])] = [:]
                for key in added { edits[SecondaryIndex.bucket(of: key, depth: depth), default: ([], [])].added.append(key) }
                for key in removed { edits[SecondaryIndex.bucket(of: key, depth: depth), default: ([], [])].removed.append(key) }
                var mask = children
                for (child, edit) in edits {
                    let bit: UInt64 = 1 << UInt64(child)
                    let nonEmpty = try editBucket(valueKey, path: path + [UInt8(child)], added: edit.added, removed: edit.removed,
                                                  existing: children & bit != 0, table: table, transaction: transaction)
                    mask = nonEmpty ? mask | bit : mask & ~bit
                }
                if mask == 0 {
                    try transaction.delete(table: table, key: splitKey)
                } else if mask != children {
                    try transaction.put(table: table, key: splitKey, value: SecondaryIndex.maskBytes(mask))
                }
                return mask != 0
            }
            let leafKey = SecondaryIndex.leafKey(valueKey, path)
            var postings = existing ? try transaction.get(table: table, key: leafKey).map(SecondaryIndex.decodePostings) ?? [] : []
            edit(&postings, added: added, removed: removed)
            if postings.count > SecondaryIndex.splitLimit, depth < SecondaryIndex.maxDepth {
                // Too many keys for one leaf: it becomes a split bucket of 64 leaves.
                try transaction.delete(table: table, key: leafKey)
                var children: [Int: [[UInt8]]] = [:]
                for key in postings { children[SecondaryIndex.bucket(of: key, depth: depth), default: []].append(key) }
                var mask: UInt64 = 0
                for (child, keys) in children {
                    // A child that is still too big splits on its next change.
                    try transaction.put(table: table, key: SecondaryIndex.leafKey(valueKey, path + [UInt8(child)]), value: SecondaryIndex.encodePostings(keys))
                    mask |= 1 << UInt64(child)
                }
                try transaction.put(table: table, key: splitKey, value: SecondaryIndex.maskBytes(mask))
                return true
            }
            if postings.isEmpty {
                if existing { try transaction.delete(table: table, key: leafKey) }
            } else {
                try transaction.put(table: table, key: leafKey, value: SecondaryIndex.encodePostings(postings))
            }
            return !postings.isEmpty
        }

        private func apply(_ valueKey: [UInt8], added: [[UInt8]], removed: [[UInt8]], table: UInt32, transaction: Transaction) throws {
            let headKey = SecondaryIndex.headKey(valueKey)
            let head = Head(try transaction.get(table: table, key: headKey))
            func put(_ key: [UInt8], _ postings: [[UInt8]]) throws {
                if postings.isEmpty {
                    try transaction.delete(table: table, key: key)
                } else {
                    try transaction.put(table: table, key: key, value: SecondaryIndex.encodePostings(postings))
                }
            }
            var mask: UInt64
            var bucketEdits: [Int: (added: [[UInt8]], removed: [[UInt8]])] = [:]
            switch head {
            case nil, .list:
                let listKey = SecondaryIndex.bucketKey(valueKey, SecondaryIndex.listSlot)
                var postings = head == nil ? [] : try transaction.get(table: table, key: listKey).map(SecondaryIndex.decodePostings) ?? []
                Self.edit(&postings, added: added, removed: removed)
                if postings.count <= SecondaryIndex.smallLimit {
                    try put(listKey, postings)
                    if postings.isEmpty {
                        if head != nil { try transaction.delete(table: table, key: headKey) }
                    } else if head == nil {
                        try transaction.put(table: table, key: headKey, value: Head.list.bytes)
                    }
                    return
                }
                // Too long for one list: split it into buckets.
                try transaction.delete(table: table, key: listKey)
                for key in postings { bucketEdits[SecondaryIndex.bucket(of: key), default: ([], [])].added.append(key) }
                mask = 0
            case .buckets(let existing):
                mask = existing
                for key in added { bucketEdits[SecondaryIndex.bucket(of: key), default: ([], [])].added.append(key) }
                for key in removed { bucketEdits[SecondaryIndex.bucket(of: key), default: ([], [])].removed.append(key) }
            }
            let wasBuckets = head != nil && head != .list
            for (bucket, edit) in bucketEdits {
                let nonEmpty = try Self.editBucket(valueKey, path: [UInt8(bucket)], added: edit.added, removed: edit.removed,
                                                   existing: wasBuckets, table: table, transaction: transaction)
                let bit: UInt64 = 1 << UInt64(bucket)
                mask = nonEmpty ? mask | bit : mask & ~bit
            }
            if mask == 0 {
                try transaction.delete(table: table, key: headKey)
            } else if head != .buckets(mask) {
                try transaction.put(table: table, key: headKey, value: Head.buckets(mask).bytes)
            }
        }
    }
}

extension Realm {
    /// Checks every secondary index of the realm's types against the rows as of the realm's
    /// snapshot (tests call it after commits): for each value some object holds, a lookup
    /// finds exactly the objects holding it, each once; every record of the index table is
    /// one such a lookup reads (no stale head, list, split or leaf); no list or leaf is
    /// empty. Returns the first violation, or nil.
    func checkIndexInvariants() -> String? {
        let snapshot = self.snapshot
        for bound in boundTypes {
            for (index, property) in bound.schema.properties.enumerated() where property.isIndexed && !property.isPrimaryKey {
                // What the rows hold: value key → (a value with that key, the objects holding it).
                var expected: [[UInt8]: (value: FieldValue, keys: Set<[UInt8]>)] = [:]
                for object in Results<Object>(realm: self, bound: bound) {
                    guard let state = object._state else { continue }
                    let value = state.field(index)
                    expected[IndexValueKey.bytes(for: value), default: (value, [])].keys.insert(state.key)
                }
                let table = bound.indexTable(index)
                var reachable = Set<[UInt8]>()
                let context = "\(bound.className).\(property.name)"
                for (_, entry) in expected {
                    let found: [[UInt8]]
                    do {
                        found = try SecondaryIndex.lookup(table: table, value: entry.value) { table, key in
                            let bytes = try snapshot.get(table: table, key: key)
                            if bytes != nil { reachable.insert(key) }
                            return bytes
                        }
                    } catch {
                        return "\(context): reading the index for \(entry.value) failed: \(error)"
                    }
                    if found.count != Set(found).count { return "\(context): the index lists an object twice for \(entry.value)" }
                    if Set(found) != entry.keys {
                        return "\(context): the index holds \(found.count) objects for \(entry.value), the rows \(entry.keys.count)"
                    }
                }
                guard let keys = try? snapshot.keys(table: table) else { return "\(context): the index's keys cannot be read" }
                if OrderedValueKey.isOrderable(property) {
                    let expectedEntries = expected.values.flatMap { entry in entry.keys.compactMap { OrderedIndex.entry(entry.value, primaryKey: $0) } }
                        .sorted { $0.lexicographicallyPrecedes($1) }
                    if let problem = OrderedIndex.verify(expected: expectedEntries, treeKeys: Set(keys.filter(OrderedIndex.isTreeKey)), { key in
                        try snapshot.get(table: table, key: key)
                    }) {
                        return "\(context): ordered index: \(problem)"
                    }
                }
                for key in keys where !OrderedIndex.isTreeKey(key) {
                    if !reachable.contains(key) { return "\(context): index record \(key) is reachable from no value an object holds" }
                    let length = key.count >= 2 ? Int(key[0]) | Int(key[1]) << 8 : key.count
                    let kind = key.count > 2 + length ? key[2 + length] : 0xFF
                    if kind == 0, let bytes = try? snapshot.get(table: table, key: key), SecondaryIndex.decodePostings(bytes).isEmpty {
                        return "\(context): index record \(key) is an empty list or leaf"
                    }
                }
            }
        }
        return nil
    }
}
