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
        var reason: String {
            switch self {
            case .short: return "segment header is incomplete"
            case .badMagic: return "not a Strata segment (bad magic)"
            case .badChecksum: return "segment header checksum mismatch"
            case .wrongNumber(let n): return "segment header names segment \(n), not this file"
            case .version(let v): return "segment format version \(v)"
            case .malformed(let why): return why
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
