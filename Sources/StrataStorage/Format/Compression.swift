// LZ4 block compression of values, through liblz4.
//
// `LZ4_compress_default` sets up a fresh 16 KiB compression state on every call (a memset
// of its hash table), which for a value of a few hundred bytes costs more than compressing
// it. A writer keeps one state (`LZ4Compressor`) and resets it cheaply before each value
// (`LZ4_resetStream_fast`: no dictionary, and a 64 KiB gap that puts every earlier entry
// out of reach): each value is still one independent block, decoded alone by
// `LZ4_decompress_safe`, as before (the format does not change).

import CLZ4

/// One LZ4 compression state, reused value after value by one writer (a segment's
/// `RecordWriter`: the write gate's holder, or one compaction). Not thread-safe.
final class LZ4Compressor {
    private var stream: UnsafeMutablePointer<LZ4_stream_t>?

    init() {}

    deinit {
        if let stream { LZ4_freeStream(stream) }
    }

    /// Compresses `source` into `destination` as one independent block if the result is
    /// strictly smaller than the source; returns the compressed length, or nil when
    /// compression does not pay (or the state cannot be allocated).
    func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawPointer) -> Int? {
        guard source.count > 0, source.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        if let stream {
            // Forgets the previous value: the next block refers to nothing before it.
            LZ4_resetStream_fast(stream)
        } else {
            guard let made = LZ4_createStream() else { return nil }
            stream = made
        }
        let written = LZ4_compress_fast_continue(
            stream, source.baseAddress!.assumingMemoryBound(to: CChar.self),
            destination.assumingMemoryBound(to: CChar.self), Int32(source.count), Int32(source.count - 1), 1)
        return written > 0 ? Int(written) : nil
    }
}

enum LZ4 {

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
