// CRC32C over byte ranges, through the C helper (hardware instruction where available).

import CStrataSupport

enum Checksum {
    @inline(__always)
    static func crc32c(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        strata_crc32c(seed, bytes.baseAddress, bytes.count)
    }

    static func crc32c(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { crc32c($0) }
    }

    /// CRC32C in three lanes at once (`strata_crc32c_lanes`): for large blocks checked as
    /// a whole, where a plain CRC32C's one dependency chain is the bottleneck.
    @inline(__always)
    static func lanes(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        strata_crc32c_lanes(bytes.baseAddress, bytes.count)
    }

    static func lanes(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { lanes($0) }
    }
}
