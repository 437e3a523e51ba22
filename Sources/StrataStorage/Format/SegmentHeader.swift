// The 48-byte header that opens every segment file:
//   0  8  magic "STRATASG"
//   8  4  format version (2; version 1, written before the MANIFEST existed, is still read)
//   12 4  file number (matches the file name)
//   16 1  kind: 0 log (transactions with commit records), 1 compacted (standalone records)
//   17 3  reserved, 0
//   20 4  replay position, major
//   24 4  replay position, minor
//   28 8  compacted: the durable sequence when the compaction took its snapshot (the log
//         must reach it: records older than it were dropped because newer ones were
//         durable); log: 0
//   36 8  compacted: the newest sequence of the segments it replaced (what it covers,
//         dropped transactions included: recovery's sequence never goes back); log: 0
//   44 4  crc32c of bytes 0 ..< 44
//
// Recovery replays segments in replay-position order. A log segment's position is
// (its number, 0). A compaction output takes (the major of its newest input, a minor above
// every existing one), so it replays after the records it replaces and before anything
// committed later (docs/ARCHITECTURE.md, "Compaction").

/// Where a segment replays, relative to the others.
struct ReplayPosition: Comparable, Hashable, Sendable {
    var major: UInt32
    var minor: UInt32

    static func < (a: ReplayPosition, b: ReplayPosition) -> Bool {
        (a.major, a.minor) < (b.major, b.minor)
    }
}

enum SegmentKind: UInt8, Sendable {
    case log = 0
    case compacted = 1
}

enum SegmentHeader {
    static let size = 48
    static let magic: [UInt8] = Array("STRATASG".utf8)
    /// The version written. Version 2 stores have a MANIFEST (Manifest.swift); a version 1
    /// segment (a store written before it existed) is read the same way.
    static let formatVersion: UInt32 = 2
    static let oldestReadableVersion: UInt32 = 1

    struct Info: Equatable {
        var kind: SegmentKind
        var position: ReplayPosition
        /// Compacted segments: the durable sequence their compaction relied on.
        var reliesOnSequence: UInt64 = 0
        /// Compacted segments: the newest sequence of the segments they replaced.
        var coversThroughSequence: UInt64 = 0
        /// The header's format version (1 or 2).
        var version: UInt32 = SegmentHeader.formatVersion
    }

    static func encode(number: UInt32, kind: SegmentKind = .log, position: ReplayPosition? = nil,
                       reliesOnSequence: UInt64 = 0, coversThroughSequence: UInt64 = 0) -> [UInt8] {
        let position = position ?? ReplayPosition(major: number, minor: 0)
        var bytes = magic
        bytes.appendLE32(formatVersion)
        bytes.appendLE32(number)
        bytes.append(contentsOf: [kind.rawValue, 0, 0, 0])
        bytes.appendLE32(position.major)
        bytes.appendLE32(position.minor)
        bytes.appendLE64(reliesOnSequence)
        bytes.appendLE64(coversThroughSequence)
        bytes.appendLE32(Checksum.crc32c(bytes))
        return bytes
    }

    enum Problem: Error {
        case short, badMagic, badChecksum, wrongNumber(UInt32), version(UInt32), malformed(String)
        /// Encrypted store: the file is not encrypted; written with another key; its header's
        /// frame fails authentication. Plain store: the file is encrypted.
        case notEncrypted, otherKey, authentication, encryptedWithoutKey
        var reason: String {
            switch self {
            case .short: return "segment header is incomplete"
            case .badMagic: return "not a Strata segment (bad magic)"
            case .badChecksum: return "segment header checksum mismatch"
            case .wrongNumber(let n): return "segment header names segment \(n), not this file"
            case .version(let v): return "segment format version \(v)"
            case .malformed(let why): return why
            case .notEncrypted: return "segment is not encrypted, but the store is (replaced by another store's file, or damaged)"
            case .otherKey: return "segment was encrypted with another key, or its preamble is damaged"
            case .authentication: return "encrypted segment header fails authentication"
            case .encryptedWithoutKey: return "segment is encrypted, and no encryption key was given"
            }
        }
    }

    static func read(_ bytes: UnsafeRawBufferPointer, number: UInt32) -> Result<Info, Problem> {
        guard bytes.count >= size else { return .failure(.short) }
        guard Array(bytes[0 ..< 8]) == magic else { return .failure(.badMagic) }
        guard Checksum.crc32c(UnsafeRawBufferPointer(rebasing: bytes[0 ..< 44])) == bytes.le32(44) else {
            return .failure(.badChecksum)
        }
        let version = bytes.le32(8)
        guard (oldestReadableVersion ... formatVersion).contains(version) else { return .failure(.version(version)) }
        guard bytes.le32(12) == number else { return .failure(.wrongNumber(bytes.le32(12))) }
        guard let kind = SegmentKind(rawValue: bytes[16]), bytes[17] == 0, bytes[18] == 0, bytes[19] == 0 else {
            return .failure(.malformed("segment header has an unknown kind or reserved bits set"))
        }
        let position = ReplayPosition(major: bytes.le32(20), minor: bytes.le32(24))
        let relies = bytes.le64(28), covers = bytes.le64(36)
        if kind == .log && (position != ReplayPosition(major: number, minor: 0) || relies != 0 || covers != 0) {
            return .failure(.malformed("log segment with a foreign replay position"))
        }
        if kind == .compacted && position.minor == 0 {
            return .failure(.malformed("compacted segment without a minor replay position"))
        }
        if covers > relies { return .failure(.malformed("compacted segment covers more than it relied on")) }
        return .success(Info(kind: kind, position: position, reliesOnSequence: relies, coversThroughSequence: covers, version: version))
    }
}

// A segment file's first bytes in either layout: the header in the clear (plain store), or
// the preamble and the header sealed in a frame (encrypted store; Crypto/FileCipher.swift).
extension SegmentHeader {
    /// A new segment file's first bytes for `header` (from ``encode(number:kind:position:reliesOnSequence:coversThroughSequence:)``),
    /// and the new file's cipher in an encrypted store.
    static func fileStart(_ header: [UInt8], cipher: StoreCipher?) throws -> (bytes: [UInt8], cipher: FileCipher?) {
        guard let cipher else { return (header, nil) }
        let (preamble, fileCipher) = try cipher.newFile(.segment)
        return (preamble + (try fileCipher.sealFrame(header, fileOffset: EncryptedFile.preambleSize)), fileCipher)
    }

    /// The bytes that replace a segment's header in place, and where they go.
    static func rewritten(_ header: [UInt8], cipher: FileCipher?) throws -> (bytes: [UInt8], offset: Int) {
        guard let cipher else { return (header, 0) }
        return (try cipher.sealFrame(header, fileOffset: EncryptedFile.preambleSize), EncryptedFile.preambleSize)
    }

    /// Reads the start of a segment file (`bytes` from its first byte): its header and, in
    /// an encrypted store, its cipher.
    static func read(file bytes: UnsafeRawBufferPointer, number: UInt32, cipher: StoreCipher?) -> Result<(info: Info, cipher: FileCipher?), Problem> {
        guard let cipher else {
            if EncryptedFile.hasMagic(bytes) { return .failure(.encryptedWithoutKey) }
            return read(bytes, number: number).map { ($0, nil) }
        }
        let fileCipher: FileCipher
        switch cipher.check(bytes, kind: .segment) {
        case .notEncrypted: return .failure(bytes.count < EncryptedFile.preambleSize ? .short : .notEncrypted)
        case .otherKey: return .failure(.otherKey)
        case .encrypted(let found): fileCipher = found
        }
        guard bytes.count >= EncryptedFile.segmentDataStart else { return .failure(.short) }
        let frame = UnsafeRawBufferPointer(rebasing: bytes[EncryptedFile.preambleSize ..< EncryptedFile.segmentDataStart])
        guard Frame.plainLength(frame, at: 0) == size else { return .failure(.malformed("encrypted segment header frame has a bad length")) }
        var header = [UInt8](repeating: 0, count: size)
        guard header.withUnsafeMutableBytes({ fileCipher.openFrame(frame, fileOffset: EncryptedFile.preambleSize, into: $0.baseAddress!) }) else {
            return .failure(.authentication)
        }
        return header.withUnsafeBytes { read($0, number: number) }.map { ($0, fileCipher) }
    }
}
