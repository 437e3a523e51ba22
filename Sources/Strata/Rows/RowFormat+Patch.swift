// RowFormat+Patch: the row writer's two byte-level operations on an encoded row.
//
// A write's pending row is the stored row's bytes, copied once and checked once
// (`validate`), then changed field by field (`replaceField`): a number set over a number
// is written over the old bytes; any other change moves only the fields after it. No
// property is decoded into a `FieldValue` to be changed, and the commit writes the bytes
// as they are (it compares them with the stored row to find what changed).

import Foundation

extension RowFormat {
    /// Checks that every field of `row` decodes, as `fields(of:)` would, without building
    /// the common values: numbers, dates, identifiers and links are bounds-checked, strings
    /// checked to be UTF-8 (ASCII word by word); lists, maps, embedded objects and decimals
    /// are decoded whole.
    static func validate(_ row: some ContiguousBytes) throws {
        let count = try fieldCount(row)
        try row.withUnsafeBytes { raw in
            let base = 4 + 4 * count
            var cursor = base
            for index in 0 ..< count {
                let end = base + Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
                guard end <= raw.count, cursor <= end else { throw DecodingError(reason: "field \(index) out of bounds") }
                try checkValue(raw, at: cursor, limit: end)
                cursor = end
            }
        }
    }

    /// Checks the tagged value at `at` (see `validate`).
    private static func checkValue(_ raw: UnsafeRawBufferPointer, at start: Int, limit: Int) throws {
        guard start < limit, let tag = Tag(rawValue: raw[start]) else {
            throw DecodingError(reason: start < limit ? "unknown value tag \(raw[start])" : "missing value")
        }
        func need(_ size: Int) throws {
            guard size <= limit - start - 1 else { throw DecodingError(reason: "truncated \(tag) value") }
        }
        func variable() throws -> UnsafeRawBufferPointer {
            try need(4)
            let length = Int(raw.loadUnaligned(fromByteOffset: start + 1, as: UInt32.self).littleEndian)
            try need(4 + length)
            return UnsafeRawBufferPointer(rebasing: raw[start + 5 ..< start + 5 + length])
        }
        switch tag {
        case .null, .falseValue, .trueValue: return
        case .int, .double, .date: try need(8)
        case .float: try need(4)
        case .uuid: try need(16)
        case .objectId: try need(12)
        case .data, .link: _ = try variable()
        case .string:
            let bytes = try variable()
            guard isValidUTF8(bytes) else { throw DecodingError(reason: "a string at byte \(start + 5) is not valid UTF-8") }
        case .list, .map, .embedded, .decimal:
            var cursor = start
            _ = try decodeValue(raw, &cursor, limit: limit)
        }
    }

    /// Whether `bytes` are UTF-8: ASCII eight bytes at a time, anything else by the
    /// standard library's validation.
    private static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset + 8 <= bytes.count {
            if bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            offset += 8
        }
        while offset < bytes.count, bytes[offset] < 0x80 { offset += 1 }
        if offset == bytes.count { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }

    /// The size of `value`'s encoding when it is fixed (numbers, dates, identifiers, null
    /// and booleans), nil for the variable kinds.
    private static func fixedSize(of value: FieldValue) -> Int? {
        switch value {
        case .null, .bool: 1
        case .int, .double, .date: 9
        case .float: 5
        case .uuid: 17
        case .objectId: 13
        default: nil
        }
    }

    /// Replaces field `index` of `row` (a row that decodes: one this process encoded or
    /// checked with `validate`) with `value`. A fixed-size value over one of the same size
    /// is written over it; otherwise the fields after it move and their ends shift. A row
    /// with fewer fields (written before a property was appended) is widened with nulls.
    static func replaceField(_ index: Int, in row: inout [UInt8], with value: FieldValue) {
        if row.withUnsafeMutableBytes({ patchFixedField(index, in: $0, with: value) }) { return }
        let count = Int(row[2]) | Int(row[3]) << 8
        guard index < count else {
            // Rare (a property appended since the row was stored): rebuilt whole.
            let old = row
            row = encode(count: index + 1, sizeHint: old.count) { field, out in
                if field == index {
                    append(value, to: &out)
                } else if field < count {
                    out.append(contentsOf: old[old.withUnsafeBytes { range(of: field, in: $0, count: count) }])
                } else {
                    out.append(Tag.null.rawValue)
                }
            }
            return
        }
        let old = row.withUnsafeBytes { range(of: index, in: $0, count: count) }
        var encoded: [UInt8] = []
        encoded.reserveCapacity(16)
        append(value, to: &encoded)
        row.replaceSubrange(old, with: encoded)
        let shift = encoded.count - old.count
        guard shift != 0 else { return }
        row.withUnsafeMutableBytes { raw in
            for field in index ..< count {
                let at = 4 + 4 * field
                let end = Int(raw.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian) + shift
                raw.storeBytes(of: UInt32(clamping: end).littleEndian, toByteOffset: at, as: UInt32.self)
            }
        }
    }

    /// Writes `value` over field `index` of `row` (a row that decodes) where it lies, if
    /// both are fixed-size values of the same size; returns false, changing nothing,
    /// otherwise (the row must be rebuilt: `replaceField`).
    static func patchFixedField(_ index: Int, in row: UnsafeMutableRawBufferPointer, with value: FieldValue) -> Bool {
        let count = Int(row[2]) | Int(row[3]) << 8
        guard index < count, let size = fixedSize(of: value) else { return false }
        let old = range(of: index, in: UnsafeRawBufferPointer(row), count: count)
        guard size == old.count else { return false }
        writeFixed(value, into: row, at: old.lowerBound)
        return true
    }

    /// The bytes of field `index` in a row of `count` fields that decodes.
    private static func range(of index: Int, in raw: UnsafeRawBufferPointer, count: Int) -> Range<Int> {
        let base = 4 + 4 * count
        let start = index == 0 ? 0 : Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * (index - 1), as: UInt32.self).littleEndian)
        let end = Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
        return base + start ..< base + end
    }

    /// Writes a fixed-size value's encoding (tag and little-endian payload) at `at`.
    private static func writeFixed(_ value: FieldValue, into raw: UnsafeMutableRawBufferPointer, at: Int) {
        func put<T: FixedWidthInteger>(_ tag: Tag, _ payload: T) {
            raw[at] = tag.rawValue
            raw.storeBytes(of: payload.littleEndian, toByteOffset: at + 1, as: T.self)
        }
        switch value {
        case .null: raw[at] = Tag.null.rawValue
        case .bool(let b): raw[at] = (b ? Tag.trueValue : Tag.falseValue).rawValue
        case .int(let i): put(.int, UInt64(bitPattern: i))
        case .double(let d): put(.double, d.bitPattern)
        case .float(let f): put(.float, f.bitPattern)
        case .date(let d): put(.date, d.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let u):
            raw[at] = Tag.uuid.rawValue
            withUnsafeBytes(of: u.uuid) { UnsafeMutableRawBufferPointer(rebasing: raw[at + 1 ..< at + 17]).copyMemory(from: $0) }
        case .objectId(let id):
            raw[at] = Tag.objectId.rawValue
            id.bytes.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: raw[at + 1 ..< at + 13]).copyMemory(from: $0) }
        default: preconditionFailure("writeFixed: \(value.kindName) has no fixed size")
        }
    }
}
