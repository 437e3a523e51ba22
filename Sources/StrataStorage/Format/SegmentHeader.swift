// The 32-byte header that opens every segment file:
//   0  8  magic "STRATASG"
//   8  4  format version (1)
//   12 4  segment id (matches the file name)
//   16 12 reserved, 0
//   28 4  crc32c of bytes 0 ..< 28

enum SegmentHeader {
    static let size = 32
    static let magic: [UInt8] = Array("STRATASG".utf8)
    static let formatVersion: UInt32 = 1

    static func encode(segmentID: UInt32) -> [UInt8] {
        var bytes = magic
        bytes.appendLE32(formatVersion)
        bytes.appendLE32(segmentID)
        bytes.append(contentsOf: [UInt8](repeating: 0, count: 12))
        bytes.appendLE32(Checksum.crc32c(bytes))
        return bytes
    }

    enum Problem: Error {
        case short, badMagic, badChecksum, wrongID(UInt32), version(UInt32)
        var reason: String {
            switch self {
            case .short: return "segment header is incomplete"
            case .badMagic: return "not a Strata segment (bad magic)"
            case .badChecksum: return "segment header checksum mismatch"
            case .wrongID(let id): return "segment header names segment \(id), not this file"
            case .version(let v): return "segment format version \(v)"
            }
        }
    }

    static func validate(_ bytes: UnsafeRawBufferPointer, segmentID: UInt32) -> Problem? {
        guard bytes.count >= size else { return .short }
        guard Array(bytes[0 ..< 8]) == magic else { return .badMagic }
        guard Checksum.crc32c(UnsafeRawBufferPointer(rebasing: bytes[0 ..< 28])) == bytes.le32(28) else { return .badChecksum }
        let version = bytes.le32(8)
        guard version == formatVersion else { return .version(version) }
        guard bytes.le32(12) == segmentID else { return .wrongID(bytes.le32(12)) }
        return nil
    }
}
