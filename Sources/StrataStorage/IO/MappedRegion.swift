// MappedRegion: a read-only memory map of a segment file, shared by every snapshot that
// reads the segment. It unmaps when the last holder lets go, so a snapshot keeps its view
// valid however the store moves on (remaps, compaction, close).

import CStrataSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only mapping of the first `length` bytes of a file. All access is bounds-checked
/// against `readableLength`, the number of bytes known to be inside the file.
@usableFromInline
final class MappedRegion: @unchecked Sendable {
    // Immutable after init; the pointer is only read.
    @usableFromInline let base: UnsafeRawPointer?
    let length: Int

    /// Called once the mapping is gone (the IO layer's count of a file's live mappings).
    private let unmapped: (@Sendable () -> Void)?

    init(base: UnsafeRawPointer?, length: Int, unmapped: (@Sendable () -> Void)? = nil) {
        self.base = base
        self.length = length
        self.unmapped = unmapped
    }

    deinit {
        if let base, length > 0 {
            munmap(UnsafeMutableRawPointer(mutating: base), length)
        }
        unmapped?()
    }

    /// The bytes `offset ..< offset + count`, or nil if any of them lies outside
    /// `0 ..< limit` (the caller's knowledge of the file's valid length) or the mapping.
    @inline(__always)
    func bytes(at offset: Int, count: Int, limit: Int) -> UnsafeRawBufferPointer? {
        guard let base, offset >= 0, count >= 0, offset <= limit &- count,
              offset <= length &- count else { return nil }
        return UnsafeRawBufferPointer(start: base + offset, count: count)
    }

    /// Hints that the bytes at `offset` will be read soon (`strata_prefetch`); nothing when
    /// `offset` is outside the readable bytes.
    func prefetch(at offset: Int, limit: Int) {
        guard let base, offset >= 0, offset < limit, offset < length else { return }
        strata_prefetch(base + offset)
    }
}
