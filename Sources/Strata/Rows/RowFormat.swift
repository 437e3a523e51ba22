// RowFormat: how one object is stored as an engine value. Any property can be read
// without decoding the others:
//
//   offset  size  field
//   0       1     format version (1)
//   1       1     reserved (0)
//   2       2     field count n, little-endian
//   4       4·n   end offset of each field, relative to the start of the data
//   4+4n    …     fields in schema order, each a tagged value (below)
//
// A tagged value is a tag byte and its payload. Fixed-size payloads follow the tag
// directly (little-endian); variable-size ones (string, data, decimal, link, list) start
// with a 4-byte little-endian length. A list's payload is its element count (4 bytes)
// followed by the elements, each a tagged value. docs/FORMAT.md has the tag table.

import Foundation

/// Encoding and decoding of object rows.
enum RowFormat {
    static let version: UInt8 = 1

    enum Tag: UInt8 {
        case null = 0, falseValue = 1, trueValue = 2, int = 3, double = 4, float = 5
        case string = 6, data = 7, date = 8, uuid = 9, decimal = 10, link = 11, list = 12
        case objectId = 13, embedded = 14, map = 15
    }

    /// How deep lists, maps and embedded objects may nest in a row. Decoding recurses once
    /// per level, so a crafted row must not nest deeper than the stack allows; the object
    /// model never nests past embedded objects' own depth (see `Schema.validate()`).
    static let maxNesting = 100

    /// A row that cannot be decoded: a bug or damage the engine's checksums did not see.
    struct DecodingError: Error, CustomStringConvertible {
        let reason: String
        var description: String { "damaged object row: \(reason)" }
    }

    // MARK: Encoding

    /// The row holding `fields`, built in one buffer: the offset table is reserved first and
    /// filled in as the fields are appended.
    // Offsets and lengths are 32 bits, so a row's data is under 4 GiB. The plain encoders
    // never trap on a larger row: they saturate what does not fit, giving a row that cannot
    // be decoded but is also far beyond the engine's value limit (256 MiB), so the commit's
    // `put` refuses it with an error and it never reaches the disk. The checked encoders
    // throw instead, naming the row.

    /// `count` (an offset or length within a row) as 32 bits, or an error naming `what`.
    static func checkedLength(_ count: Int, of what: @autoclosure () -> String) throws -> UInt32 {
        guard let length = UInt32(exactly: count) else {
            throw RealmError.invalidValue("\(what()) needs \(count) bytes; a row's offsets and lengths are 32 bits (at most \(UInt32.max))")
        }
        return length
    }

    /// `row` (of `count` fields), checked to fit its 32-bit offsets.
    static func checked(_ row: [UInt8], count: Int, of what: @autoclosure () -> String) throws -> [UInt8] {
        _ = try checkedLength(row.count - (4 + 4 * count), of: what())
        return row
    }

    /// The row holding `fields`; throws when it does not fit 32-bit offsets.
    static func encodeChecked(_ fields: [FieldValue], of what: @autoclosure () -> String = "the row") throws -> [UInt8] {
        try checked(encode(fields), count: fields.count, of: what())
    }

    static func encode(_ fields: [FieldValue]) -> [UInt8] {
        encode(count: fields.count) { index, row in append(fields[index], to: &row) }
    }

    /// A row of `count` fields, each appended by `appendField(index, &row)` (a tagged value).
    @inline(__always)
    static func encode(count: Int, sizeHint: Int = 0, _ appendField: (Int, inout [UInt8]) -> Void) -> [UInt8] {
        let base = 4 + 4 * count
        var row: [UInt8] = []
        row.reserveCapacity(base + max(sizeHint, count * 12 + 16))
        row.append(version)
        row.append(0)
        appendLE(UInt16(count), to: &row)
        row.append(contentsOf: repeatElement(0, count: 4 * count))
        for index in 0 ..< count {
            appendField(index, &row)
            let end = UInt32(clamping: row.count - base).littleEndian
            withUnsafeBytes(of: end) { bytes in
                for byte in 0 ..< 4 { row[4 + 4 * index + byte] = bytes[byte] }
            }
        }
        return row
    }

    /// `row` with the fields that `replacements` gives (non-nil) replaced, the others copied
    /// as bytes (never decoded), widened to `count` fields with nulls.
    static func splice(_ row: some ContiguousBytes, count: Int, replacements: (Int) -> FieldValue?) throws -> [UInt8] {
        let oldCount = try fieldCount(row)
        return try row.withUnsafeBytes { raw in
            let oldBase = 4 + 4 * oldCount
            func end(_ index: Int) -> Int {
                index < 0 ? 0 : Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
            }
            // Check the offset table once, so copying below cannot go out of bounds.
            for index in 0 ..< oldCount where end(index - 1) >= end(index) || oldBase + end(index) > raw.count {
                throw DecodingError(reason: "field \(index) out of bounds")
            }
            // And every field copied as it is: a pending row holds only bytes that decode,
            // so reading it later in the write cannot meet damage copied from disk.
            for index in 0 ..< min(oldCount, count) where replacements(index) == nil {
                var cursor = oldBase + end(index - 1)
                _ = try decodeValue(raw, &cursor, limit: oldBase + end(index))
            }
            let spliced = encode(count: count, sizeHint: raw.count) { index, out in
                if let replacement = replacements(index) {
                    append(replacement, to: &out)
                } else if index < oldCount {
                    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[oldBase + end(index - 1) ..< oldBase + end(index)]))
                } else {
                    out.append(Tag.null.rawValue)
                }
            }
            return try checked(spliced, count: count, of: "the row")
        }
    }

    static func append(_ value: FieldValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(Tag.null.rawValue)
        case .bool(let b): out.append(b ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case .int(let i):
            out.append(Tag.int.rawValue)
            appendLE(UInt64(bitPattern: i), to: &out)
        case .double(let d):
            out.append(Tag.double.rawValue)
            appendLE(d.bitPattern, to: &out)
        case .float(let f):
            out.append(Tag.float.rawValue)
            appendLE(f.bitPattern, to: &out)
        case .string(let s):
            out.append(Tag.string.rawValue)
            var s = s
            s.withUTF8 { appendBytes(UnsafeRawBufferPointer($0), to: &out) }
        case .data(let d):
            out.append(Tag.data.rawValue)
            d.withUnsafeBytes { appendBytes($0, to: &out) }
        case .date(let d):
            out.append(Tag.date.rawValue)
            appendLE(d.timeIntervalSinceReferenceDate.bitPattern, to: &out)
        case .uuid(let u):
            out.append(Tag.uuid.rawValue)
            withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
        case .decimal(let d):
            out.append(Tag.decimal.rawValue)
            var text = d.description
            text.withUTF8 { appendBytes(UnsafeRawBufferPointer($0), to: &out) }
        case .link(let key):
            out.append(Tag.link.rawValue)
            key.withUnsafeBytes { appendBytes($0, to: &out) }
        case .list(let elements): appendList(elements, to: &out)
        case .objectId(let id):
            out.append(Tag.objectId.rawValue)
            out.append(contentsOf: id.bytes)
        case .embedded(let fields): appendEmbedded(fields, to: &out)
        case .map(let entries): appendMap(entries, to: &out)
        }
    }

    /// A list: its length, its element count, and each element as a tagged value.
    private static func appendList(_ elements: [FieldValue], to out: inout [UInt8]) {
        out.append(Tag.list.rawValue)
        let lengthAt = out.count
        appendLE(UInt32(0), to: &out)
        appendLE(UInt32(clamping: elements.count), to: &out)
        for element in elements { append(element, to: &out) }
        patchLength(at: lengthAt, in: &out)
    }

    /// An embedded object: its length, and its fields as a row of their own.
    private static func appendEmbedded(_ fields: [FieldValue], to out: inout [UInt8]) {
        out.append(Tag.embedded.rawValue)
        let lengthAt = out.count
        appendLE(UInt32(0), to: &out)
        out.append(contentsOf: encode(fields))
        patchLength(at: lengthAt, in: &out)
    }

    /// A map: its length, its entry count, and each entry as a key (length and UTF-8) and a
    /// tagged value.
    private static func appendMap(_ entries: [String: FieldValue], to out: inout [UInt8]) {
        out.append(Tag.map.rawValue)
        let lengthAt = out.count
        appendLE(UInt32(0), to: &out)
        appendLE(UInt32(clamping: entries.count), to: &out)
        // Keys in UTF-8 byte order: one map has one encoding.
        for (key, value) in entries.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            var key = key
            key.withUTF8 { appendBytes(UnsafeRawBufferPointer($0), to: &out) }
            append(value, to: &out)
        }
        patchLength(at: lengthAt, in: &out)
    }

    /// Writes the length of what follows the 4 bytes at `lengthAt` into them.
    private static func patchLength(at lengthAt: Int, in out: inout [UInt8]) {
        let length = UInt32(clamping: out.count - lengthAt - 4)
        withUnsafeBytes(of: length.littleEndian) { raw in
            for i in 0 ..< 4 { out[lengthAt + i] = raw[i] }
        }
    }

    private static func appendBytes(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendLE(UInt32(clamping: bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    private static func appendLE<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    // MARK: Decoding

    /// The number of fields in `row`.
    static func fieldCount(_ row: some ContiguousBytes) throws -> Int {
        try row.withUnsafeBytes { raw in
            guard raw.count >= 4, raw[0] == version else {
                throw DecodingError(reason: raw.count < 4 ? "row of \(raw.count) bytes" : "unknown row format \(raw[0])")
            }
            let count = Int(raw[2]) | Int(raw[3]) << 8
            guard 4 + 4 * count <= raw.count else { throw DecodingError(reason: "offset table exceeds the row") }
            return count
        }
    }

    /// Field `index` of `row`, decoded alone. A field beyond the row's count reads as null
    /// (rows written before a property was appended).
    static func field(_ index: Int, of row: some ContiguousBytes) throws -> FieldValue {
        try row.withUnsafeBytes { raw in
            guard raw.count >= 4, raw[0] == version else {
                throw DecodingError(reason: raw.count < 4 ? "row of \(raw.count) bytes" : "unknown row format \(raw[0])")
            }
            let count = Int(raw[2]) | Int(raw[3]) << 8
            guard index < count else { return .null }
            guard 4 + 4 * count <= raw.count else { throw DecodingError(reason: "offset table exceeds the row") }
            let base = 4 + 4 * count
            let start = index == 0 ? 0 : Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * (index - 1), as: UInt32.self).littleEndian)
            let end = Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
            guard start <= end, base + end <= raw.count else { throw DecodingError(reason: "field \(index) out of bounds") }
            var cursor = base + start
            let value = try decodeValue(raw, &cursor, limit: base + end)
            return value
        }
    }

    /// What every writer of objects (the realm's commit, `strata import`) counts as a
    /// change, so that they agree: a property changed when its encoded bytes differ.
    /// -0.0 over 0.0 is a change (the sign is kept), the same NaN over itself is not (a
    /// row holding NaN is not rewritten each time). Every property, when the stored row
    /// does not decode: the write repairs it.
    static func modifiedFields(from stored: some ContiguousBytes, to new: some ContiguousBytes, propertyCount: Int) -> PropertyMask {
        (try? changedFields(from: stored, to: new)) ?? PropertyMask(all: propertyCount)
    }

    /// The fields whose stored bytes differ between two rows of one type (a field past the
    /// end of the shorter row counts as null).
    static func changedFields(from old: some ContiguousBytes, to new: some ContiguousBytes) throws -> PropertyMask {
        let oldCount = try fieldCount(old), newCount = try fieldCount(new)
        var changed = PropertyMask()
        old.withUnsafeBytes { a in
            new.withUnsafeBytes { b in
                func range(_ raw: UnsafeRawBufferPointer, _ count: Int, _ index: Int) -> Range<Int>? {
                    guard index < count else { return nil }
                    let base = 4 + 4 * count
                    let start = index == 0 ? 0 : Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * (index - 1), as: UInt32.self).littleEndian)
                    let end = Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
                    guard start <= end, base + end <= raw.count else { return nil }
                    return base + start ..< base + end
                }
                for index in 0 ..< max(oldCount, newCount) {
                    let x = range(a, oldCount, index), y = range(b, newCount, index)
                    let left = x.map { UnsafeRawBufferPointer(rebasing: a[$0]) }
                    let right = y.map { UnsafeRawBufferPointer(rebasing: b[$0]) }
                    let same: Bool
                    switch (left, right) {
                    case let (l?, r?): same = l.count == r.count && (l.isEmpty || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0)
                    case let (l?, nil): same = l.count == 1 && l[0] == Tag.null.rawValue
                    case let (nil, r?): same = r.count == 1 && r[0] == Tag.null.rawValue
                    case (nil, nil): same = true
                    }
                    if !same { changed.insert(index) }
                }
            }
        }
        return changed
    }

    /// Every field of `row`.
    static func fields(of row: some ContiguousBytes) throws -> [FieldValue] {
        let count = try fieldCount(row)
        return try row.withUnsafeBytes { raw in
            let base = 4 + 4 * count
            var result: [FieldValue] = []
            result.reserveCapacity(count)
            var cursor = base
            for index in 0 ..< count {
                let end = base + Int(raw.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
                guard end <= raw.count, cursor <= end else { throw DecodingError(reason: "field \(index) out of bounds") }
                result.append(try decodeValue(raw, &cursor, limit: end))
                cursor = end
            }
            return result
        }
    }

    static func decodeValue(_ raw: UnsafeRawBufferPointer, _ cursor: inout Int, limit: Int, depth: Int = 0) throws -> FieldValue {
        guard depth <= maxNesting else { throw DecodingError(reason: "values nested more than \(maxNesting) deep") }
        guard cursor < limit, let tag = Tag(rawValue: raw[cursor]) else {
            throw DecodingError(reason: cursor < limit ? "unknown value tag \(raw[cursor])" : "missing value")
        }
        cursor += 1
        func fixed(_ size: Int) throws -> Int {
            guard cursor + size <= limit else { throw DecodingError(reason: "truncated \(tag) value") }
            defer { cursor += size }
            return cursor
        }
        func variable() throws -> UnsafeRawBufferPointer {
            let at = try fixed(4)
            let length = Int(raw.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian)
            let start = try fixed(length)
            return UnsafeRawBufferPointer(rebasing: raw[start ..< start + length])
        }
        switch tag {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int: return .int(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: try fixed(8), as: Int64.self)))
        case .double: return .double(Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: try fixed(8), as: UInt64.self))))
        case .float: return .float(Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: try fixed(4), as: UInt32.self))))
        case .date:
            let bits = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: try fixed(8), as: UInt64.self))
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits)))
        case .uuid:
            let at = try fixed(16)
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[at ..< at + 16])) }
            return .uuid(UUID(uuid: bytes))
        case .string:
            let bytes = try variable()
            return .string(try decodeString(bytes, at: cursor - bytes.count))
        case .data: return .data(Data(try variable()))
        case .decimal:
            let text = String(decoding: try variable(), as: UTF8.self)
            guard let value = Decimal(string: text, locale: nil) else {
                // Decimal's description of NaN, which Decimal(string:) does not read back.
                if text == "NaN" { return .decimal(.nan) }
                throw DecodingError(reason: "bad decimal '\(text)'")
            }
            return .decimal(value)
        case .link: return .link(Array(try variable()))
        case .list:
            let body = try variable()
            return .list(try decodeList(raw, from: cursor - body.count, to: cursor, depth: depth))
        case .objectId:
            let at = try fixed(12)
            return .objectId(ObjectId(bytes: UnsafeRawBufferPointer(rebasing: raw[at ..< at + 12]))!)
        case .embedded:
            let body = try variable()
            return .embedded(try decodeNested(body, depth: depth + 1))
        case .map:
            let body = try variable()
            return .map(try decodeMap(raw, from: cursor - body.count, to: cursor, depth: depth))
        }
    }

    /// A string's bytes as a String. Invalid UTF-8 is damage (FORMAT.md), never silently
    /// repaired. String(decoding:) is the fast path; it replaces each invalid sequence with
    /// U+FFFD, so its bytes equal the input exactly when the input was valid.
    private static func decodeString(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws -> String {
        var string = String(decoding: bytes, as: UTF8.self)
        let valid = string.withUTF8 { utf8 in
            utf8.count == bytes.count && (bytes.isEmpty || memcmp(utf8.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        guard valid else { throw DecodingError(reason: "a string at byte \(offset) is not valid UTF-8") }
        return string
    }

    /// A list's body (`raw[start ..< end]`): a 4-byte count, then the elements.
    private static func decodeList(_ raw: UnsafeRawBufferPointer, from start: Int, to end: Int, depth: Int) throws -> [FieldValue] {
        var inner = start
        guard inner + 4 <= end else { throw DecodingError(reason: "truncated list") }
        let count = Int(raw.loadUnaligned(fromByteOffset: inner, as: UInt32.self).littleEndian)
        inner += 4
        guard count <= end - start else { throw DecodingError(reason: "list count \(count) exceeds its bytes") }
        var elements: [FieldValue] = []
        elements.reserveCapacity(count)
        for _ in 0 ..< count { elements.append(try decodeValue(raw, &inner, limit: end, depth: depth + 1)) }
        guard inner == end else { throw DecodingError(reason: "list has trailing bytes") }
        return elements
    }

    /// A map's body (`raw[start ..< end]`): a 4-byte count, then each key (4-byte length,
    /// UTF-8) and its value; a key twice is damage.
    private static func decodeMap(_ raw: UnsafeRawBufferPointer, from start: Int, to end: Int, depth: Int) throws -> [String: FieldValue] {
        var inner = start
        guard inner + 4 <= end else { throw DecodingError(reason: "truncated map") }
        let count = Int(raw.loadUnaligned(fromByteOffset: inner, as: UInt32.self).littleEndian)
        inner += 4
        guard count <= end - start else { throw DecodingError(reason: "map count \(count) exceeds its bytes") }
        var entries: [String: FieldValue] = [:]
        entries.reserveCapacity(count)
        for _ in 0 ..< count {
            guard inner + 4 <= end else { throw DecodingError(reason: "truncated map key") }
            let length = Int(raw.loadUnaligned(fromByteOffset: inner, as: UInt32.self).littleEndian)
            inner += 4
            guard length <= end - inner, let key = String(validating: UnsafeRawBufferPointer(rebasing: raw[inner ..< inner + length]), as: UTF8.self) else {
                throw DecodingError(reason: "a map key at byte \(inner) is truncated or not valid UTF-8")
            }
            inner += length
            let value = try decodeValue(raw, &inner, limit: end, depth: depth + 1)
            guard entries.updateValue(value, forKey: key) == nil else { throw DecodingError(reason: "map holds the key '\(key)' twice") }
        }
        guard inner == end else { throw DecodingError(reason: "map has trailing bytes") }
        return entries
    }

    /// The fields of an embedded object's nested row (`bytes`, within a parent row).
    private static func decodeNested(_ bytes: UnsafeRawBufferPointer, depth: Int) throws -> [FieldValue] {
        guard bytes.count >= 4, bytes[0] == version else { throw DecodingError(reason: "damaged embedded object") }
        let count = Int(bytes[2]) | Int(bytes[3]) << 8
        let base = 4 + 4 * count
        guard base <= bytes.count else { throw DecodingError(reason: "embedded object's offset table exceeds it") }
        var fields: [FieldValue] = []
        fields.reserveCapacity(count)
        var cursor = base
        for index in 0 ..< count {
            let end = base + Int(bytes.loadUnaligned(fromByteOffset: 4 + 4 * index, as: UInt32.self).littleEndian)
            guard end <= bytes.count, cursor <= end else { throw DecodingError(reason: "embedded field \(index) out of bounds") }
            fields.append(try decodeValue(bytes, &cursor, limit: end, depth: depth))
            cursor = end
        }
        return fields
    }
}
