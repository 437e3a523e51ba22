// The record: the unit of every segment file. This file is the single definition of its
// layout; docs/FORMAT.md describes the same bytes for a person.
//
//   offset size  field
//   0      4     crc32c of bytes 4 ..< 32 + keyLength + storedLength
//   4      1     kind: 1 put, 2 delete (tombstone), 3 commit
//   5      1     flags: bit 0 = value is an LZ4 block; other bits 0
//   6      2     reserved, 0
//   8      4     table id
//   12     4     keyLength
//   16     4     storedLength (value bytes as stored)
//   20     4     rawLength (value bytes after decompression; == storedLength if not compressed)
//   24     8     sequence number of the transaction
//   32     ...   key bytes, then stored value bytes, then zero padding to a multiple of 8
//
// A commit record has kind 3, table 0, no key, and a 16-byte value:
//   u32 record count of the transaction, u32 reserved (0),
//   u64 durable watermark: the segment offset up to which the writer knew the file was
//       synced when it wrote this record. Recovery uses it to tell a torn tail (damage
//       past every synced byte, which a crash can cause) from damage inside synced data
//       (which a crash cannot cause, and is reported as corruption).

enum RecordKind: UInt8 {
    case put = 1
    case delete = 2
    case commit = 3
}

enum RecordFormat {
    static let headerSize = 32
    static let commitPayloadSize = 16
    static let commitRecordSize = align8(headerSize + commitPayloadSize)
    static let flagCompressed: UInt8 = 1

    /// On-disk size of a record with these lengths.
    @inline(__always)
    static func recordSize(keyLength: Int, storedLength: Int) -> Int {
        align8(headerSize + keyLength + storedLength)
    }

    /// Largest on-disk size a put of these lengths can take (compression never grows it).
    @inline(__always)
    static func maxRecordSize(keyLength: Int, valueLength: Int) -> Int {
        recordSize(keyLength: keyLength, storedLength: valueLength)
    }

    /// Encodes a put or delete record at the end of `buffer`; returns (record size, stored
    /// value length, offset of the record inside the buffer).
    static func appendRecord(
        to buffer: ByteBuffer, kind: RecordKind, table: UInt32, sequence: UInt64,
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, compressAtLeast threshold: Int?,
        compressor: LZ4Compressor
    ) -> (size: Int, stored: Int) {
        let maxSize = maxRecordSize(keyLength: key.count, valueLength: value.count)
        buffer.reserve(maxSize)
        let start = buffer.base + buffer.count
        let valueStart = start + headerSize + key.count
        if key.count > 0 { valueStart.advanced(by: -key.count).copyMemory(from: key.baseAddress!, byteCount: key.count) }
        var stored = value.count
        var flags: UInt8 = 0
        if let threshold, value.count >= threshold, let compressed = compressor.compress(value, into: valueStart) {
            stored = compressed
            flags = flagCompressed
        } else if value.count > 0 {
            valueStart.copyMemory(from: value.baseAddress!, byteCount: value.count)
        }
        writeHeader(at: start, kind: kind, flags: flags, table: table, keyLength: key.count,
                    storedLength: stored, rawLength: value.count, sequence: sequence)
        let size = recordSize(keyLength: key.count, storedLength: stored)
        let unpadded = headerSize + key.count + stored
        if size > unpadded { (start + unpadded).initializeMemory(as: UInt8.self, repeating: 0, count: size - unpadded) }
        sealChecksum(at: start, unpaddedLength: unpadded)
        buffer.count += size
        return (size, stored)
    }

    /// Encodes a commit record for a transaction of `recordCount` records.
    static func appendCommit(to buffer: ByteBuffer, sequence: UInt64, recordCount: Int, durableWatermark: UInt64) {
        buffer.reserve(commitRecordSize)
        let start = buffer.base + buffer.count
        writeHeader(at: start, kind: .commit, flags: 0, table: 0, keyLength: 0,
                    storedLength: commitPayloadSize, rawLength: commitPayloadSize, sequence: sequence)
        start.storeLE32(UInt32(recordCount), at: headerSize)
        start.storeLE32(0, at: headerSize + 4)
        start.storeLE64(durableWatermark, at: headerSize + 8)
        sealChecksum(at: start, unpaddedLength: headerSize + commitPayloadSize)
        buffer.count += commitRecordSize
    }

    @inline(__always)
    private static func writeHeader(at p: UnsafeMutableRawPointer, kind: RecordKind, flags: UInt8, table: UInt32,
                                    keyLength: Int, storedLength: Int, rawLength: Int, sequence: UInt64) {
        p.storeBytes(of: kind.rawValue, toByteOffset: 4, as: UInt8.self)
        p.storeBytes(of: flags, toByteOffset: 5, as: UInt8.self)
        p.storeLE16(0, at: 6)
        p.storeLE32(table, at: 8)
        p.storeLE32(UInt32(keyLength), at: 12)
        p.storeLE32(UInt32(storedLength), at: 16)
        p.storeLE32(UInt32(rawLength), at: 20)
        p.storeLE64(sequence, at: 24)
    }

    @inline(__always)
    private static func sealChecksum(at p: UnsafeMutableRawPointer, unpaddedLength: Int) {
        let crc = Checksum.crc32c(UnsafeRawBufferPointer(start: p + 4, count: unpaddedLength - 4))
        p.storeLE32(crc, at: 0)
    }
}

/// A record read back from a mapped segment, validated: every length is in range and the
/// checksum matches. Its buffers point into the mapping (or, for an encrypted store, into
/// the memory its frame was opened into) and live as long as that does.
struct RecordView {
    var kind: RecordKind
    var compressed: Bool
    var table: UInt32
    var sequence: UInt64
    var key: UnsafeRawBufferPointer
    var storedValue: UnsafeRawBufferPointer
    var rawLength: Int
    /// The bytes the record takes in its file: the record and its padding (in an encrypted
    /// store, the whole frame that holds it).
    var size: Int
    /// The record's own bytes, padding included, as a plain store writes them.
    var encoded: UnsafeRawBufferPointer

    /// Why a record could not be read; the scanner turns it into StoreError.corrupted.
    enum Failure: Error {
        case truncated          // the header or body runs past the end of the valid data
        case malformed(String)  // a field is out of range
        case checksum           // the CRC does not match
        case authentication     // an encrypted frame's tag does not match: damage, or another key
    }

    /// Parses and checks the record at `offset` of `bytes` (the valid part of a segment).
    static func parse(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Result<RecordView, Failure> {
        let available = bytes.count - offset
        guard offset >= 0, available >= RecordFormat.headerSize else { return .failure(.truncated) }
        let h = UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + RecordFormat.headerSize])
        guard let kind = RecordKind(rawValue: h[4]) else { return .failure(.malformed("unknown record kind \(h[4])")) }
        let flags = h[5]
        guard flags & ~RecordFormat.flagCompressed == 0, h.le16(6) == 0 else {
            return .failure(.malformed("reserved header bits are set"))
        }
        let keyLength = Int(h.le32(12)), stored = Int(h.le32(16)), raw = Int(h.le32(20))
        guard keyLength <= StoreOptions.maxKeySize else { return .failure(.malformed("key length \(keyLength) exceeds the maximum")) }
        guard stored <= StoreOptions.maxValueSize, raw <= StoreOptions.maxValueSize else {
            return .failure(.malformed("value length \(max(stored, raw)) exceeds the maximum"))
        }
        let compressed = flags & RecordFormat.flagCompressed != 0
        if !compressed && raw != stored { return .failure(.malformed("uncompressed value has two lengths")) }
        if kind == .commit && (keyLength != 0 || stored != RecordFormat.commitPayloadSize || compressed) {
            return .failure(.malformed("commit record has a bad shape"))
        }
        if kind == .delete && (stored != 0 || compressed) { return .failure(.malformed("tombstone carries a value")) }
        let unpadded = RecordFormat.headerSize + keyLength + stored
        let size = align8(unpadded)
        guard size <= available else { return .failure(.truncated) }
        let crc = Checksum.crc32c(UnsafeRawBufferPointer(rebasing: bytes[offset + 4 ..< offset + unpadded]))
        guard crc == h.le32(0) else { return .failure(.checksum) }
        let keyStart = offset + RecordFormat.headerSize
        return .success(RecordView(
            kind: kind, compressed: compressed, table: h.le32(8), sequence: h.le64(24),
            key: UnsafeRawBufferPointer(rebasing: bytes[keyStart ..< keyStart + keyLength]),
            storedValue: UnsafeRawBufferPointer(rebasing: bytes[keyStart + keyLength ..< keyStart + keyLength + stored]),
            rawLength: raw, size: size, encoded: UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + size])))
    }

    /// A view of a record that a scan has already parsed and checked (`bytes` are its
    /// ``encoded`` bytes).
    static func unchecked(_ bytes: UnsafeRawBufferPointer) -> RecordView {
        let keyLength = Int(bytes.le32(12)), stored = Int(bytes.le32(16))
        let keyStart = RecordFormat.headerSize
        return RecordView(
            kind: RecordKind(rawValue: bytes[4])!, compressed: bytes[5] & RecordFormat.flagCompressed != 0,
            table: bytes.le32(8), sequence: bytes.le64(24),
            key: UnsafeRawBufferPointer(rebasing: bytes[keyStart ..< keyStart + keyLength]),
            storedValue: UnsafeRawBufferPointer(rebasing: bytes[keyStart + keyLength ..< keyStart + keyLength + stored]),
            rawLength: Int(bytes.le32(20)), size: RecordFormat.recordSize(keyLength: keyLength, storedLength: stored),
            encoded: bytes)
    }

    /// Commit payload fields (valid only for kind == .commit).
    var commitRecordCount: Int { Int(storedValue.le32(0)) }
    var commitDurableWatermark: UInt64 { storedValue.le64(8) }

    /// The value as the user wrote it, decompressing if needed; nil if the LZ4 block is bad.
    func value() -> [UInt8]? {
        if compressed { return LZ4.decompress(storedValue, rawLength: rawLength) }
        return Array(storedValue)
    }
}

extension RecordView.Failure {
    var reason: String {
        switch self {
        case .truncated: return "record runs past the end of the file"
        case .malformed(let why): return why
        case .checksum: return "record checksum mismatch"
        case .authentication: return "encrypted record fails authentication (damaged, or written with another key)"
        }
    }
}
