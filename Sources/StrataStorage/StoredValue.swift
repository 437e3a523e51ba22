// StoredValue: a value read without copying. An uncompressed value stays where it lies in
// the segment's memory mapping, which the StoredValue keeps alive; a compressed one is
// decompressed into bytes it owns. Either way its bytes never change.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A value as stored, read without copying when possible (``Snapshot/storedValue(table:key:)``).
///
/// It keeps the segment mapping it points into alive, so it stays valid after the
/// snapshot, a compaction, or the store's close.
public struct StoredValue: ContiguousBytes, Sendable {
    @usableFromInline
    enum Storage: Sendable {
        case mapped(MappedRegion, offset: Int)
        case owned([UInt8])
    }

    @usableFromInline let storage: Storage
    /// The number of bytes.
    public let count: Int

    init(region: MappedRegion, offset: Int, count: Int) {
        storage = .mapped(region, offset: offset)
        self.count = count
    }

    init(bytes: [UInt8]) {
        storage = .owned(bytes)
        count = bytes.count
    }

    /// Calls `body` with the bytes (valid only during the call).
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .owned(let bytes):
            return try bytes.withUnsafeBytes(body)
        case .mapped(let region, let offset):
            // The range was checked against the mapping when the record was read.
            guard let base = region.base else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return try withExtendedLifetime(region) { try body(UnsafeRawBufferPointer(start: base + offset, count: count)) }
        }
    }

    /// The bytes, copied.
    public var bytes: [UInt8] {
        switch storage {
        case .owned(let bytes): return bytes
        case .mapped: return withUnsafeBytes { Array($0) }
        }
    }
}

extension StoredValue: Equatable {
    /// Whether the bytes are equal.
    public static func == (a: StoredValue, b: StoredValue) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }
}

/// One live record met by ``Snapshot/scanEntries(table:_:)``: its value uncopied, and its
/// key copied only if asked for (most scans keep few of the records they read).
public struct StoredEntry {
    let indexKey: IndexKey
    /// The value, as stored.
    public let value: StoredValue

    /// The key's bytes (a copy).
    public var key: [UInt8] { indexKey.bytes }

    /// Calls `body` with the key's bytes, without copying them.
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try indexKey.withBytes(body)
    }
}
