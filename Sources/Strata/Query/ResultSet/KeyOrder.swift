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
            for (index, key) in keys.enumerated() {
                var value: UInt64 = 0
                for i in 1 ..< 9 { value = value << 8 | UInt64(key[i]) }
                pairs.append((value, Int32(index)))
            }
            pairs.sort { $0.value < $1.value }
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
}
