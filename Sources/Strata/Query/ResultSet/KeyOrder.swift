// KeyOrder: engine keys put in byte order (primary-key order, what unsorted results show)
// without comparing arrays pairwise: comparing two `[UInt8]` retains and releases both,
// which made ordering the 10k keys of an index look-up cost more than the look-up.

/// Sorting engine keys into byte order.
enum KeyOrder {
    /// `keys` in byte order. Integer keys (one kind byte, then eight bytes big-endian: all
    /// nine bytes long with the same first byte) sort as `UInt64`s; other keys compare
    /// bytes through one flat copy.
    static func sorted(_ keys: [[UInt8]]) -> [[UInt8]] {
        guard keys.count > 1 else { return keys }
        let kind = keys[0].first
        if keys.allSatisfy({ $0.count == 9 && $0[0] == kind }) {
            var pairs: [(value: UInt64, index: Int32)] = []
            pairs.reserveCapacity(keys.count)
            for (index, key) in keys.enumerated() { pairs.append((orderValue(key.dropFirst()), Int32(index))) }
            sortByValue(&pairs)
            return pairs.map { keys[Int($0.index)] }
        }
        var bytes: [UInt8] = [], ends: [Int] = []
        ends.reserveCapacity(keys.count)
        for key in keys {
            bytes.append(contentsOf: key)
            ends.append(bytes.count)
        }
        var order = Array(0 ..< keys.count)
        bytes.withUnsafeBufferPointer { bytes in
            ends.withUnsafeBufferPointer { ends in
                order.sort { a, b in
                    let x = UnsafeBufferPointer(rebasing: bytes[(a == 0 ? 0 : ends[a - 1]) ..< ends[a]])
                    let y = UnsafeBufferPointer(rebasing: bytes[(b == 0 ? 0 : ends[b - 1]) ..< ends[b]])
                    return x.lexicographicallyPrecedes(y)
                }
            }
        }
        return order.map { keys[$0] }
    }

    /// Integer keys' integers in key (numeric) order, by the same radix sort.
    static func sortedIntegers(_ integers: [Int64]) -> [Int64] {
        var pairs = integers.map { (value: UInt64(bitPattern: $0) ^ (1 << 63), index: Int32(0)) }
        sortByValue(&pairs)
        return pairs.map { PrimaryKeyValue.integer(orderValue: $0.value) }
    }

    /// An integer key's eight payload bytes (big-endian) as one `UInt64`: integer keys
    /// order as these values.
    @inline(__always)
    static func orderValue(_ payload: some Collection<UInt8>) -> UInt64 {
        var value: UInt64 = 0
        for byte in payload { value = value << 8 | UInt64(byte) }
        return value
    }

    /// Sorts `pairs` by `value` (stable): a least-significant-digit radix sort over the
    /// bytes in which the values differ (ids below 2^24 differ in three), 8 bits a pass;
    /// for a few pairs a comparison sort. Already ordered pairs (ids inserted in order)
    /// are left as they are after one check.
    static func sortByValue(_ pairs: inout [(value: UInt64, index: Int32)]) {
        guard pairs.count > 1 else { return }
        var ordered = true, differing: UInt64 = 0
        let first = pairs[0].value
        for i in 1 ..< pairs.count {
            if pairs[i].value < pairs[i - 1].value { ordered = false }
            differing |= pairs[i].value ^ first
        }
        if ordered { return }
        guard pairs.count >= 256 else {
            pairs.sort { $0.value < $1.value }
            return
        }
        var scratch = pairs
        var counts = [Int](repeating: 0, count: 256)
        for byte in 0 ..< 8 where (differing >> UInt64(byte * 8)) & 0xFF != 0 {
            let shift = UInt64(byte * 8)
            for i in 0 ..< 256 { counts[i] = 0 }
            for pair in pairs { counts[Int((pair.value >> shift) & 0xFF)] += 1 }
            var total = 0
            for i in 0 ..< 256 {
                let count = counts[i]
                counts[i] = total
                total += count
            }
            for pair in pairs {
                let digit = Int((pair.value >> shift) & 0xFF)
                scratch[counts[digit]] = pair
                counts[digit] += 1
            }
            swap(&pairs, &scratch)
        }
    }
}
