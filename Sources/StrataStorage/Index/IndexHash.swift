// IndexHash: the hash the key index files keys by — a keyed 64-bit multiply-mix in the
// style of wyhash, over a key's two inline words or its bytes.
//
// Why not Swift's Hasher: Hasher is seeded per process, so an index could never be read by
// the next process or another one (the index image, IndexImage.swift, is searched in place
// by whoever maps it). The hash is keyed instead by a 64-bit seed chosen at random when an
// index is built and kept in its image: keys a remote server chooses cannot be aimed at one
// page without knowing the seed. It is not a cryptographic MAC; it is also ~5× cheaper than
// SipHash on an inline key (two 128-bit multiplies). Both operands of every multiply are
// keyed: were one of them only a public constant xor key bytes, a key holding that constant
// would zero the product and with it the seed, and such keys would collide under any seed.

enum IndexHash {
    private static let p0: UInt64 = 0xA076_1D64_78BD_642F
    private static let p1: UInt64 = 0xE703_7ED1_A0B4_28DB
    private static let p2: UInt64 = 0x8EBC_6AF0_9C88_C6E3

    @inline(__always)
    private static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// The hash of `key` under `seed`. Keys of up to 15 bytes are always inline
    /// (IndexKey.swift), so one set of bytes has one hash.
    @inline(__always)
    static func hash(_ key: IndexKey, seed: UInt64) -> UInt64 {
        if !key.isHeap {
            let (lo, hi) = key.inlineWords
            return mix(mix(lo ^ p0 ^ seed, hi ^ p1 ^ seed) ^ seed, p2)
        }
        return key.withBytes { hash(bytes: $0, seed: seed) }
    }

    /// A long key's hash: 16 bytes a round, the tail zero-padded, the length mixed in last.
    private static func hash(bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var state = seed ^ p0
        var offset = 0
        while offset + 16 <= bytes.count {
            let a = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let b = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            state = mix(a ^ p1 ^ seed, b ^ state)
            offset += 16
        }
        var tail: (UInt64, UInt64) = (0, 0)
        let rest = bytes.count - offset
        if rest > 0 {
            withUnsafeMutableBytes(of: &tail) { $0.baseAddress!.copyMemory(from: bytes.baseAddress! + offset, byteCount: rest) }
        }
        state = mix(UInt64(littleEndian: tail.0) ^ p1 ^ seed, UInt64(littleEndian: tail.1) ^ state)
        return mix(state ^ UInt64(bytes.count), p2)
    }

    /// A seed for a new index.
    static func randomSeed() -> UInt64 { UInt64.random(in: 0 ... .max) }
}
