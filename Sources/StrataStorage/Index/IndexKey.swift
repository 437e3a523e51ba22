// IndexKey: a key as the index is asked about it. Keys of up to 15 bytes (integer ids,
// short strings, most primary keys) live inline in two words with no allocation, which
// is also how the index stores them (HashIndex.swift); longer keys live in an array.

struct IndexKey: Hashable, Sendable {
    /// Inline bytes 0..<8 (little-endian), when `heap` is nil.
    private var lo: UInt64
    /// Inline bytes 8..<15 in the low 56 bits; the top byte is the inline length.
    private var hi: UInt64
    /// The bytes of keys longer than 15 bytes.
    private var heap: [UInt8]?

    static let inlineCapacity = 15

    init(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count <= IndexKey.inlineCapacity {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                if bytes.count > 0 { raw.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
            }
            lo = UInt64(littleEndian: words.0)
            hi = UInt64(littleEndian: words.1) | (UInt64(bytes.count) << 56)
            heap = nil
        } else {
            lo = 0
            hi = 0
            heap = Array(bytes)
        }
    }

    init(_ bytes: [UInt8]) {
        if bytes.count > IndexKey.inlineCapacity {
            lo = 0
            hi = 0
            heap = bytes
        } else {
            self = bytes.withUnsafeBytes { IndexKey($0) }
        }
    }

    init(inlineWords: (UInt64, UInt64)) {
        lo = inlineWords.0
        hi = inlineWords.1
        heap = nil
    }

    var isHeap: Bool { heap != nil }
    var inlineWords: (UInt64, UInt64) { (lo, hi) }

    var count: Int { heap?.count ?? Int(hi >> 56) }

    static func == (a: IndexKey, b: IndexKey) -> Bool {
        a.lo == b.lo && a.hi == b.hi && a.heap == b.heap
    }

    @inline(__always)
    func hash(into hasher: inout Hasher) {
        if let heap {
            heap.withUnsafeBytes { hasher.combine(bytes: $0) }
        } else {
            hasher.combine(lo)
            hasher.combine(hi)
        }
    }

    /// Calls `body` with the key's bytes.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let heap { return try heap.withUnsafeBytes(body) }
        var words = (lo.littleEndian, (hi & 0x00FF_FFFF_FFFF_FFFF).littleEndian)
        let length = Int(hi >> 56)
        return try withUnsafeBytes(of: &words) { try body(UnsafeRawBufferPointer(rebasing: $0[0 ..< length])) }
    }

    var bytes: [UInt8] { withBytes { Array($0) } }

    /// Whether `other` holds exactly these bytes.
    func matches(_ other: UnsafeRawBufferPointer) -> Bool {
        withBytes { mine in
            mine.count == other.count && (mine.count == 0 || memcmp(mine.baseAddress!, other.baseAddress!, mine.count) == 0)
        }
    }

}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a live record is: segment, byte offset, on-disk size.
struct Location: Hashable, Sendable {
    var segment: UInt32
    var offset: UInt32
    var size: UInt32

    /// What a lookup answers for a key whose page of an index image is damaged and could
    /// not be rebuilt: no record is 0 bytes, so reading it fails (KeyDirectory.withRecord)
    /// with the image's error instead of answering "absent".
    static func unreadable(imagePage: Int) -> Location {
        Location(segment: 0, offset: UInt32(truncatingIfNeeded: imagePage), size: 0)
    }

    var isUnreadable: Bool { size == 0 }
}
