// A table projection as bytes, persisted beside the store (`Store.writeDerivedData`) when
// the store closes and read back by the first query of the next open instead of a scan of
// every row (172 ms for 1M objects on this machine class; reading the file back is a copy).
// The engine's wrapper checks the file is whole and was written for exactly the state
// the snapshot reads; this layer checks its own structure, so a file that passes the
// checksum yet does not fit (a bug, or a hand-made file) is refused, never trusted into a
// trap. Only typed columns are kept; others are projected again on demand.
//
// Payload layout (little-endian; docs/FORMAT.md, "Table projections"):
//   0  4  magic "PROJ"    4  4  version (1)    8  4  table    12 4  flags (1: scan-ordered, 2: has live set)
//   16 8  ordinals n      24 8  key bytes k    then k bytes of keys, n × 8 key ends,
//   [(n + 63) / 64 × 8 live words], 4 bytes column count c, then c columns:
//     4 property index, 1 kind (1 int, 2 double, 3 date, 4 string), 1 has nulls, 2 zero,
//     int/double/date: n × 8 values, [n bytes nulls (1: nil)];
//     string: n × 4 codes (-1: nil), 8 entries d, d × 4 entry ends, 8 bytes b, b bytes.

import Foundation
import StrataStorage

extension TableProjection {
    static let fileMagic: [UInt8] = Array("PROJ".utf8)
    static let fileVersion: UInt32 = 1
    /// Tables smaller than this are not persisted: a scan of them is quicker than a file.
    static let persistedMinimumCount = 4096

    /// The derived-data name of `table`'s projection.
    static func fileName(table: UInt32) -> String { "projection-\(table)" }

    /// This projection as the payload of its file; nil when it must not be persisted
    /// (something in it did not read) or there is nothing worth keeping.
    func fileBytes() -> [UInt8]? {
        #if _endian(big)
        return nil
        #else
        guard let columns = persistableColumns, count >= Self.persistedMinimumCount else { return nil }
        var out = Self.fileMagic
        out.appendLE32(Self.fileVersion)
        out.appendLE32(table)
        out.appendLE32((scanOrdered ? 1 : 0) | (live != nil ? 2 : 0))
        out.appendLE64(UInt64(count))
        out.appendLE64(UInt64(keyBytes.count))
        out.append(contentsOf: keyBytes)
        out.appendRaw(keyEnds)
        if let live { out.appendRaw(live.words) }
        out.appendLE32(UInt32(columns.count))
        for (property, column) in columns.sorted(by: { $0.key < $1.key }) {
            out.appendLE32(UInt32(property))
            func numbers<T>(_ kind: UInt8, _ values: [T], _ nulls: [Bool]?) {
                out.append(contentsOf: [kind, nulls == nil ? 0 : 1, 0, 0])
                out.appendRaw(values)
                if let nulls { out.append(contentsOf: nulls.lazy.map { $0 ? 1 : 0 }) }
            }
            switch column {
            case .int(let values, let nulls): numbers(1, values, nulls)
            case .double(let values, let nulls): numbers(2, values, nulls)
            case .date(let values, let nulls): numbers(3, values, nulls)
            case .string(let codes, let dictionary):
                out.append(contentsOf: [4, 0, 0, 0])
                out.appendRaw(codes)
                out.appendLE64(UInt64(dictionary.count))
                out.appendRaw(dictionary.ends)
                out.appendLE64(UInt64(dictionary.bytes.count))
                out.append(contentsOf: dictionary.bytes)
            case .values:
                preconditionFailure("persistableColumns keeps typed columns only")
            }
        }
        return out
        #endif
    }

    /// The projection of `table` at `snapshot` that `bytes` hold; nil when they are not a
    /// projection file of this version, of this table, whole and consistent.
    static func read(_ bytes: ArraySlice<UInt8>, table: UInt32, snapshot: Snapshot) -> TableProjection? {
        #if _endian(big)
        return nil
        #else
        var reader = ProjectionFileReader(bytes)
        guard reader.bytes(4) == fileMagic, reader.le32() == fileVersion, reader.le32() == table,
              let flags = reader.le32(), let n64 = reader.le64(), let k64 = reader.le64(),
              n64 <= UInt64(Int32.max), k64 <= UInt64(bytes.count) else { return nil }
        let n = Int(n64)
        guard let keyBytes = reader.bytes(Int(k64)), let keyEnds: [Int] = reader.raw(n),
              Self.endsRise(keyEnds, total: keyBytes.count) else { return nil }
        var live: OrdinalSet?
        if flags & 2 != 0 {
            guard let words: [UInt64] = reader.raw((n + 63) / 64), let set = OrdinalSet(words: words, count: n) else { return nil }
            live = set
        }
        // As many live objects as the snapshot holds in the table: a cheap check that the
        // file and the state it is for agree (a hand-made file, or a wrong advance).
        guard (live?.population ?? n) == snapshot.count(table: table) else { return nil }
        guard let columnCount = reader.le32(), columnCount <= 1 << 16 else { return nil }
        var columns: [Int: ProjectedColumn] = [:]
        for _ in 0 ..< columnCount {
            guard let property = reader.le32(), property < 1 << 16, let head = reader.bytes(4) else { return nil }
            let hasNulls = head[1] == 1
            func nulls() -> [Bool]?? {
                guard hasNulls else { return .some(nil) }
                return reader.bytes(n).map { $0.map { $0 != 0 } }
            }
            let column: ProjectedColumn
            switch head[0] {
            case 1:
                guard let values: [Int64] = reader.raw(n), let marks = nulls() else { return nil }
                column = .int(values, nulls: marks)
            case 2, 3:
                guard let values: [Double] = reader.raw(n), let marks = nulls() else { return nil }
                column = head[0] == 2 ? .double(values, nulls: marks) : .date(values, nulls: marks)
            case 4:
                guard let codes: [Int32] = reader.raw(n), let entries = reader.le64(), entries < UInt64(Int32.max),
                      let ends: [Int32] = reader.raw(Int(entries)), let length = reader.le64(), length <= UInt64(bytes.count),
                      let text = reader.bytes(Int(length)), let dictionary = StringDictionary(bytes: text, ends: ends),
                      codes.allSatisfy({ $0 >= -1 && Int($0) < dictionary.count }) else { return nil }
                column = .string(codes: codes, dictionary: dictionary)
            default:
                return nil
            }
            columns[Int(property)] = column
        }
        guard reader.isAtEnd else { return nil }
        let projection = TableProjection(table: table, snapshot: snapshot, keyBytes: keyBytes, keyEnds: keyEnds, live: live,
                                         scanOrdered: flags & 1 != 0, persistedColumns: Set(columns.keys))
        projection.restore(columns)
        return projection
        #endif
    }

    /// Whether `ends` rise from 0 and the last is `total` (an empty list: `total` is 0).
    private static func endsRise(_ ends: [Int], total: Int) -> Bool {
        var previous = 0
        for end in ends {
            guard end >= previous else { return false }
            previous = end
        }
        return previous == total
    }
}

/// Reads a projection file's fields in order; every read is checked against the end.
private struct ProjectionFileReader {
    private let bytes: ArraySlice<UInt8>
    /// Offset of the next field from the slice's start.
    private var at = 0

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { at == bytes.count }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= bytes.count - at else { return nil }
        defer { at += count }
        let start = bytes.startIndex + at
        return Array(bytes[start ..< start + count])
    }

    mutating func le32() -> UInt32? { raw(1).map { (values: [UInt32]) in values[0] } }
    mutating func le64() -> UInt64? { raw(1).map { (values: [UInt64]) in values[0] } }

    /// `count` values of a fixed-size type, as stored (little-endian, as this machine).
    mutating func raw<T: FixedWidthInteger>(_ count: Int) -> [T]? { rawValues(count) }
    mutating func raw(_ count: Int) -> [Double]? { rawValues(count) }

    private mutating func rawValues<T>(_ count: Int) -> [T]? {
        let size = MemoryLayout<T>.stride
        guard count >= 0, count <= (bytes.count - at) / size else { return nil }
        let values = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            bytes.withUnsafeBytes { source in   // the slice's own bytes: offsets from its start
                UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: source[at ..< at + count * size]))
            }
            initialized = count
        }
        at += count * size
        return values
    }
}

private extension Array where Element == UInt8 {
    /// Appends `values`' bytes as this machine holds them (little-endian: checked by the callers).
    mutating func appendRaw<T>(_ values: [T]) {
        values.withUnsafeBytes { append(contentsOf: $0) }
    }

    mutating func appendLE32(_ value: UInt32) { Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) } }
    mutating func appendLE64(_ value: UInt64) { Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) } }
}
