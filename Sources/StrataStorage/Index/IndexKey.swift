// IndexKey: a key as the in-memory index holds it. Keys of up to 15 bytes (integer ids,
// short strings) live inline in two words, with no allocation; longer keys live in an
// array. The index is the engine's largest memory cost, so this layout matters: an entry
// of the key directory is 24 bytes of key plus 12 of location.

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
        self = bytes.withUnsafeBytes { IndexKey($0) }
    }

    var count: Int { heap?.count ?? Int(hi >> 56) }

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

    /// Heap bytes this key owns beyond the entry itself (for the index-memory estimate).
    var heapBytes: Int {
        guard let heap else { return 0 }
        return 32 + ((heap.count + 15) & ~15)
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
}
