// HintFile: written beside each sealed segment so that start-up reads keys and locations
// without touching values. It is a cache: a hint file that is missing, damaged, or does
// not match its segment is ignored and the segment is scanned instead.
//
// Layout (little-endian):
//   header, 64 bytes:
//     0  8  magic "STRATAHT"      8  4  version (1)        12 4  segment id
//     16 8  segment length the hint describes                24 8  entry count
//     32 8  last sequence in the segment                      40 8  raw value bytes of puts
//     48 8  stored value bytes of puts                        56 8  reserved, 0
//   entries, in file order, each 28 bytes + key:
//     0 1 kind (1 put, 2 delete)   1 3 reserved   4 4 table   8 4 record offset
//     12 4 record size   16 8 sequence   24 4 key length   28 .. key bytes
//   trailer: 4 bytes, crc32c of everything before it.

enum HintFile {
    static let magic: [UInt8] = Array("STRATAHT".utf8)
    static let version: UInt32 = 1
    static let headerSize = 64
    static let entryFixedSize = 28

    struct Contents {
        var entries: [ScannedEntry]
        var lastSequence: UInt64
        var rawValueBytes: Int
        var storedValueBytes: Int
    }

    /// Builds a hint file entry by entry. Header fields not known until the end (entry
    /// count, segment length, sequence and value byte totals) can be set by `finish`.
    struct Builder {
        private var out: [UInt8]
        private(set) var count = 0

        /// `count` goes into the header (``finish(segmentLength:lastSequence:rawValueBytes:storedValueBytes:)``
        /// replaces it by the number of entries added); `entryBytes`, if known, sizes the buffer.
        init(segmentID: UInt32, segmentLength: Int, count: Int, lastSequence: UInt64,
             rawValueBytes: Int, storedValueBytes: Int, entryBytes: Int? = nil) {
            out = HintFile.magic
            out.reserveCapacity(HintFile.headerSize + (entryBytes ?? count * 40) + 4)
            out.appendLE32(HintFile.version)
            out.appendLE32(segmentID)
            out.appendLE64(UInt64(segmentLength))
            out.appendLE64(UInt64(count))
            out.appendLE64(lastSequence)
            out.appendLE64(UInt64(rawValueBytes))
            out.appendLE64(UInt64(storedValueBytes))
            out.appendLE64(0)
        }

        mutating func add(kind: RecordKind, table: UInt32, key: UnsafeRawBufferPointer, location: Location, sequence: UInt64) {
            count += 1
            HintFile.appendEntry(to: &out, kind: kind, table: table, key: key, location: location, sequence: sequence)
        }

        /// Adds entries already laid out by ``HintFile/appendEntry(to:kind:table:key:location:sequence:)``
        /// (the header's count is the one given at init).
        mutating func appendEncodedEntries(_ entries: [UInt8]) {
            out.append(contentsOf: entries)
        }

        mutating func finish() -> [UInt8] {
            out.appendLE32(Checksum.crc32c(out))
            return out
        }

        /// Finishes with the header's totals replaced by their final values.
        mutating func finish(segmentLength: Int, lastSequence: UInt64, rawValueBytes: Int, storedValueBytes: Int) -> [UInt8] {
            out.withUnsafeMutableBytes { raw in
                let p = raw.baseAddress!
                p.storeLE64(UInt64(segmentLength), at: 16)
                p.storeLE64(UInt64(count), at: 24)
                p.storeLE64(lastSequence, at: 32)
                p.storeLE64(UInt64(rawValueBytes), at: 40)
                p.storeLE64(UInt64(storedValueBytes), at: 48)
            }
            return finish()
        }
    }

    /// Lays out one entry at the end of `out`.
    static func appendEntry(to out: inout [UInt8], kind: RecordKind, table: UInt32, key: UnsafeRawBufferPointer,
                            location: Location, sequence: UInt64) {
        out.append(kind.rawValue)
        out.append(contentsOf: [0, 0, 0])
        out.appendLE32(table)
        out.appendLE32(location.offset)
        out.appendLE32(location.size)
        out.appendLE64(sequence)
        out.appendLE32(UInt32(key.count))
        out.append(contentsOf: key)
    }

    static func encode(segmentID: UInt32, segmentLength: Int, entries: [ScannedEntry], lastSequence: UInt64,
                       rawValueBytes: Int, storedValueBytes: Int) -> [UInt8] {
        var builder = Builder(segmentID: segmentID, segmentLength: segmentLength, count: entries.count,
                              lastSequence: lastSequence, rawValueBytes: rawValueBytes, storedValueBytes: storedValueBytes)
        for entry in entries {
            builder.add(kind: entry.kind, table: entry.table, key: entry.key, location: entry.location, sequence: entry.sequence)
        }
        return builder.finish()
    }

    /// Parses and checks a hint file against the segment it claims to describe. Returns nil
    /// (use the segment instead) on any mismatch; entry keys point into `bytes`.
    /// `ordered`: a log segment's entries must follow `previousSequence` in increasing order;
    /// a compacted segment's carry their original, unordered sequence numbers.
    /// `dataStart`: where the segment's first record lies (after the header, and the
    /// preamble in an encrypted store).
    static func decode(_ bytes: UnsafeRawBufferPointer, segmentID: UInt32, segmentLength: Int,
                       previousSequence: UInt64, ordered: Bool = true, dataStart: Int = SegmentHeader.size) -> Contents? {
        var entries: [ScannedEntry] = []
        guard let summary = walk(bytes, segmentID: segmentID, segmentLength: segmentLength, previousSequence: previousSequence,
                                 ordered: ordered, dataStart: dataStart, body: { entries.append($0) }) else { return nil }
        return Contents(entries: entries, lastSequence: summary.lastSequence,
                        rawValueBytes: summary.rawValueBytes, storedValueBytes: summary.storedValueBytes)
    }

    /// As ``decode(_:segmentID:segmentLength:previousSequence:ordered:dataStart:)``, handing
    /// each entry to `body` without collecting them — only once the whole file has checked
    /// out, so `body` never sees part of a hint that is then refused. Returns the totals
    /// (with no entries) or nil.
    static func forEachEntry(_ bytes: UnsafeRawBufferPointer, segmentID: UInt32, segmentLength: Int, previousSequence: UInt64,
                             ordered: Bool, dataStart: Int, _ body: (ScannedEntry) -> Void) -> Contents? {
        guard walk(bytes, segmentID: segmentID, segmentLength: segmentLength, previousSequence: previousSequence,
                   ordered: ordered, dataStart: dataStart, body: { _ in }) != nil else { return nil }
        return walk(bytes, segmentID: segmentID, segmentLength: segmentLength, previousSequence: previousSequence,
                    ordered: ordered, dataStart: dataStart, body: body)
    }

    /// The segment length a hint file says it describes, if its checksum and magic hold (the
    /// active segment's hint, written at close, describes a prefix of a segment that grew).
    static func describedLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= headerSize + 4, Array(bytes[0 ..< 8]) == magic,
              Checksum.crc32c(UnsafeRawBufferPointer(rebasing: bytes[0 ..< bytes.count - 4])) == bytes.le32(bytes.count - 4),
              bytes.le64(16) <= UInt64(UInt32.max) else { return nil }
        return Int(bytes.le64(16))
    }

    /// The one parser of hint files: checks everything and calls `body` per entry as it goes.
    private static func walk(_ bytes: UnsafeRawBufferPointer, segmentID: UInt32, segmentLength: Int, previousSequence: UInt64,
                             ordered: Bool, dataStart: Int, body: (ScannedEntry) -> Void) -> Contents? {
        guard bytes.count >= headerSize + 4 else { return nil }
        let content = UnsafeRawBufferPointer(rebasing: bytes[0 ..< bytes.count - 4])
        guard Checksum.crc32c(content) == bytes.le32(bytes.count - 4) else { return nil }
        guard Array(bytes[0 ..< 8]) == magic, bytes.le32(8) == version, bytes.le32(12) == segmentID,
              bytes.le64(16) == UInt64(segmentLength) else { return nil }
        let count = bytes.le64(24)
        guard count <= UInt64(content.count / entryFixedSize) else { return nil }
        var offset = headerSize
        var lastSeen = previousSequence
        for _ in 0 ..< Int(count) {
            guard offset + entryFixedSize <= content.count,
                  let kind = RecordKind(rawValue: content[offset]), kind != .commit else { return nil }
            let recordOffset = Int(content.le32(offset + 8)), recordSize = Int(content.le32(offset + 12))
            let sequence = content.le64(offset + 16), keyLength = Int(content.le32(offset + 24))
            guard keyLength <= StoreOptions.maxKeySize, offset + entryFixedSize + keyLength <= content.count,
                  recordOffset >= dataStart, recordOffset % 8 == 0,
                  recordSize >= RecordFormat.headerSize, recordOffset + recordSize <= segmentLength,
                  !ordered || (sequence >= lastSeen && sequence > previousSequence) else { return nil }
            lastSeen = max(lastSeen, sequence)
            let keyStart = offset + entryFixedSize
            body(ScannedEntry(
                kind: kind, table: content.le32(offset + 4),
                key: UnsafeRawBufferPointer(rebasing: content[keyStart ..< keyStart + keyLength]),
                location: Location(segment: segmentID, offset: UInt32(recordOffset), size: UInt32(recordSize)),
                sequence: sequence))
            offset = keyStart + keyLength
        }
        guard offset == content.count else { return nil }
        let lastSequence = bytes.le64(32)
        guard bytes.le64(40) < 1 << 62, bytes.le64(48) < 1 << 62, lastSequence >= lastSeen,
              !ordered || lastSequence > previousSequence || count == 0 else { return nil }
        return Contents(entries: [], lastSequence: lastSequence,
                        rawValueBytes: Int(bytes.le64(40)), storedValueBytes: Int(bytes.le64(48)))
    }
}

// CleanShutdown: a 36-byte file, `CLEAN`, written by `Store.close()` after the final sync
// and removed by the next writable open. While it exists it says exactly where the data
// ended, so that a later open can tell a truncated or damaged newest segment (corruption)
// from a torn tail after a crash (normal, and repaired).
//   0 8 magic "STRATACL"   8 4 version (1)   12 4 newest segment id
//   16 8 newest segment length   24 8 last sequence   32 4 crc32c of bytes 0 ..< 32
enum CleanShutdown {
    static let fileName = "CLEAN"
    static let magic: [UInt8] = Array("STRATACL".utf8)

    struct Marker: Equatable {
        var segmentID: UInt32
        var segmentLength: Int
        var lastSequence: UInt64
    }

    static func encode(_ marker: Marker) -> [UInt8] {
        var out = magic
        out.appendLE32(1)
        out.appendLE32(marker.segmentID)
        out.appendLE64(UInt64(marker.segmentLength))
        out.appendLE64(marker.lastSequence)
        out.appendLE32(Checksum.crc32c(out))
        return out
    }

    static func decode(_ bytes: [UInt8]) -> Marker? {
        guard bytes.count == 36 else { return nil }
        return bytes.withUnsafeBytes { raw -> Marker? in
            guard Array(raw[0 ..< 8]) == magic, raw.le32(8) == 1,
                  Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0 ..< 32])) == raw.le32(32),
                  raw.le64(16) <= UInt64(UInt32.max) else { return nil }
            return Marker(segmentID: raw.le32(12), segmentLength: Int(raw.le64(16)), lastSequence: raw.le64(24))
        }
    }
}
