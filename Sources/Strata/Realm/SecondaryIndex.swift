// Secondary indexes: for each value of an indexed property, the primary keys of the
// objects holding it, in the engine's tables so they survive crashes and compaction with
// the objects they index (both change in the same transaction).
//
// A value held by few objects keeps their keys in one list. Past `smallLimit` keys the
// list is split into 64 buckets by a hash of the primary key, so adding or removing one
// object rewrites one bucket, not the whole list; the head record then holds a 64-bit
// mask of the non-empty buckets, so a lookup reads only those.
//
//   key = u16 length of the value key ‖ value key ‖ 0x01            → head: mode byte
//                                          (0 = one list, 1 = buckets) ‖ u64 mask (LE)
//   key = u16 length of the value key ‖ value key ‖ 0x00 ‖ 0xFF     → the one list
//   key = u16 length of the value key ‖ value key ‖ 0x00 ‖ bucket   → a bucket (0 ..< 64)
//   list and buckets = (u32 LE length ‖ primary key bytes)*

enum SecondaryIndex {
    static let bucketCount = 64
    /// Keys a single list holds before it is split into buckets.
    static let smallLimit = 256
    static let listSlot = 0xFF

    static func bucket(of primaryKey: [UInt8]) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in primaryKey { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(bucketCount))
    }

    static func prefix(_ valueKey: [UInt8]) -> [UInt8] {
        var key: [UInt8] = [UInt8(valueKey.count & 0xFF), UInt8(valueKey.count >> 8 & 0xFF)]
        key.append(contentsOf: valueKey)
        return key
    }

    static func bucketKey(_ valueKey: [UInt8], _ bucket: Int) -> [UInt8] { prefix(valueKey) + [0, UInt8(bucket)] }
    static func headKey(_ valueKey: [UInt8]) -> [UInt8] { prefix(valueKey) + [1] }

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
        let valueKey = IndexValueKey.bytes(for: value)
        switch Head(try read(table, headKey(valueKey))) {
        case nil:
            return []
        case .list:
            return try read(table, bucketKey(valueKey, listSlot)).map(decodePostings) ?? []
        case .buckets(let mask):
            var keys: [[UInt8]] = []
            for bucket in 0 ..< bucketCount where mask & (1 << UInt64(bucket)) != 0 {
                if let postings = try read(table, bucketKey(valueKey, bucket)) { keys.append(contentsOf: decodePostings(postings)) }
            }
            return keys
        }
    }

    /// Changes to one index made by one transaction, applied at commit. A commit adds or
    /// removes each (object, value) pair at most once (it compares each row's final value
    /// with its stored one), so additions and removals are kept apart, as plain lists.
    struct Delta {
        var added: [ValueKey: [[UInt8]]] = [:]
        var removed: [ValueKey: [[UInt8]]] = [:]

        struct ValueKey: Hashable {
            let bytes: [UInt8]
            func hash(into hasher: inout Hasher) {
                bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }

        mutating func add(_ primaryKey: [UInt8], value: FieldValue) {
            added[ValueKey(bytes: IndexValueKey.bytes(for: value)), default: []].append(primaryKey)
        }

        mutating func remove(_ primaryKey: [UInt8], value: FieldValue) {
            removed[ValueKey(bytes: IndexValueKey.bytes(for: value)), default: []].append(primaryKey)
        }

        /// Writes the changed lists, buckets and heads through `transaction`.
        func apply(table: UInt32, transaction: Transaction) throws {
            for value in Set(added.keys).union(removed.keys) {
                try apply(value.bytes, added: added[value] ?? [], removed: removed[value] ?? [], table: table, transaction: transaction)
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
                let key = SecondaryIndex.bucketKey(valueKey, bucket)
                var postings = wasBuckets ? try transaction.get(table: table, key: key).map(SecondaryIndex.decodePostings) ?? [] : []
                Self.edit(&postings, added: edit.added, removed: edit.removed)
                try put(key, postings)
                let bit: UInt64 = 1 << UInt64(bucket)
                mask = postings.isEmpty ? mask & ~bit : mask | bit
            }
            if mask == 0 {
                try transaction.delete(table: table, key: headKey)
            } else if head != .buckets(mask) {
                try transaction.put(table: table, key: headKey, value: Head.buckets(mask).bytes)
            }
        }
    }
}
