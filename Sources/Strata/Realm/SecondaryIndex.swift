// Secondary indexes: for each value of an indexed property, the primary keys of the
// objects holding it, in the engine's tables so they survive crashes and compaction with
// the objects they index (both change in the same transaction).
//
// A value's postings are split into 64 buckets by a hash of the primary key, so adding or
// removing one object rewrites one bucket, not the whole list. A head record holds a
// 64-bit mask of the non-empty buckets, so a lookup reads only those.
//
//   key  = u16 length of the value key ‖ value key ‖ 0x00 ‖ bucket   → postings
//   key  = u16 length of the value key ‖ value key ‖ 0x01           → u64 mask (LE)
//   postings = (u32 LE length ‖ primary key bytes)*

enum SecondaryIndex {
    static let bucketCount = 64

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

    static func decodeMask(_ bytes: [UInt8]?) -> UInt64 {
        guard let bytes, bytes.count == 8 else { return 0 }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func encodeMask(_ mask: UInt64) -> [UInt8] { (0 ..< 8).map { UInt8(mask >> (8 * $0) & 0xFF) } }

    /// The primary keys of the objects whose property holds `value`, as of `read`.
    static func lookup(table: UInt32, value: FieldValue, read: (UInt32, [UInt8]) throws -> [UInt8]?) throws -> [[UInt8]] {
        let valueKey = IndexValueKey.bytes(for: value)
        let mask = decodeMask(try read(table, headKey(valueKey)))
        var keys: [[UInt8]] = []
        for bucket in 0 ..< bucketCount where mask & (1 << UInt64(bucket)) != 0 {
            if let postings = try read(table, bucketKey(valueKey, bucket)) { keys.append(contentsOf: decodePostings(postings)) }
        }
        return keys
    }

    /// Changes to one index made by one transaction, applied at commit.
    struct Delta {
        /// (value key, bucket) → primary keys added and removed.
        var buckets: [BucketID: (added: Set<[UInt8]>, removed: Set<[UInt8]>)] = [:]

        struct BucketID: Hashable {
            let valueKey: [UInt8]
            let bucket: Int
            func hash(into hasher: inout Hasher) {
                hasher.combine(bucket)
                valueKey.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }

        mutating func add(_ primaryKey: [UInt8], value: FieldValue) {
            let id = BucketID(valueKey: IndexValueKey.bytes(for: value), bucket: SecondaryIndex.bucket(of: primaryKey))
            buckets[id, default: ([], [])].removed.remove(primaryKey)
            buckets[id, default: ([], [])].added.insert(primaryKey)
        }

        mutating func remove(_ primaryKey: [UInt8], value: FieldValue) {
            let id = BucketID(valueKey: IndexValueKey.bytes(for: value), bucket: SecondaryIndex.bucket(of: primaryKey))
            buckets[id, default: ([], [])].added.remove(primaryKey)
            buckets[id, default: ([], [])].removed.insert(primaryKey)
        }

        /// Writes the changed buckets and heads through `transaction`.
        func apply(table: UInt32, transaction: Transaction) throws {
            var heads: [[UInt8]: (set: UInt64, cleared: UInt64)] = [:]
            for (id, change) in buckets where !(change.added.isEmpty && change.removed.isEmpty) {
                let key = SecondaryIndex.bucketKey(id.valueKey, id.bucket)
                var postings = try transaction.get(table: table, key: key).map(SecondaryIndex.decodePostings) ?? []
                if !change.removed.isEmpty { postings.removeAll { change.removed.contains($0) } }
                let present = Set(postings)
                postings.append(contentsOf: change.added.filter { !present.contains($0) }.sorted { $0.lexicographicallyPrecedes($1) })
                let bit: UInt64 = 1 << UInt64(id.bucket)
                if postings.isEmpty {
                    try transaction.delete(table: table, key: key)
                    heads[id.valueKey, default: (0, 0)].cleared |= bit
                } else {
                    try transaction.put(table: table, key: key, value: SecondaryIndex.encodePostings(postings))
                    heads[id.valueKey, default: (0, 0)].set |= bit
                }
            }
            for (valueKey, change) in heads {
                let key = SecondaryIndex.headKey(valueKey)
                let old = SecondaryIndex.decodeMask(try transaction.get(table: table, key: key))
                let mask = (old | change.set) & ~change.cleared
                if mask == old { continue }
                if mask == 0 {
                    try transaction.delete(table: table, key: key)
                } else {
                    try transaction.put(table: table, key: key, value: SecondaryIndex.encodeMask(mask))
                }
            }
        }
    }
}
