// LZ4 block compression of values, through liblz4.

import CLZ4

enum LZ4 {
    /// Compresses `source` into `destination` if the result is strictly smaller than the
    /// source; returns the compressed length, or nil when compression does not pay.
    static func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawPointer) -> Int? {
        guard source.count > 0, source.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        let written = LZ4_compress_default(
            source.baseAddress!.assumingMemoryBound(to: CChar.self),
            destination.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(source.count - 1))
        return written > 0 ? Int(written) : nil
    }

    /// Decompresses exactly `rawLength` bytes; nil if the input is not a valid LZ4 block of that size.
    static func decompress(_ source: UnsafeRawBufferPointer, rawLength: Int) -> [UInt8]? {
        guard rawLength > 0, source.count > 0 else { return rawLength == 0 ? [] : nil }
        var failed = false
        let result = [UInt8](unsafeUninitializedCapacity: rawLength) { buffer, initialized in
            let n = LZ4_decompress_safe(
                source.baseAddress!.assumingMemoryBound(to: CChar.self),
                UnsafeMutableRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self),
                Int32(source.count), Int32(rawLength))
            if n == Int32(rawLength) {
                initialized = rawLength
            } else {
                failed = true
                initialized = 0
            }
        }
        return failed ? nil : result
    }
}
