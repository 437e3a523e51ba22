// Engine keys built from field values: the primary key of an object row, and the value
// key of an indexed property. One byte names the kind, then the value, in an order where
// byte order is value order for integers and ObjectIds (docs/FORMAT.md, "Object keys" and "Index value keys").

import Foundation

extension PrimaryKeyValue {
    /// The kind byte of an integer key (`i`), followed by the integer's eight order bytes.
    static let integerKind: UInt8 = 0x69

    /// Swift compares strings by canonical equivalence ("é" == "e\u{301}"), so keys use one
    /// form of each string (NFC): equal strings are one key, as in a Swift dictionary.
    static func canonical(_ string: String) -> String {
        if string.utf8.allSatisfy({ $0 < 0x80 }) { return string }
        return string.precomposedStringWithCanonicalMapping
    }

    /// The engine key: a kind byte, then the value (integers big-endian with the sign bit
    /// flipped, so byte order is numeric order; ObjectIds' 12 bytes, so byte order is
    /// creation order).
    var keyBytes: [UInt8] {
        switch self {
        case .int(let v):
            let raw = UInt64(bitPattern: v) ^ (1 << 63)
            return [Self.integerKind, UInt8(truncatingIfNeeded: raw >> 56), UInt8(truncatingIfNeeded: raw >> 48),
                    UInt8(truncatingIfNeeded: raw >> 40), UInt8(truncatingIfNeeded: raw >> 32),
                    UInt8(truncatingIfNeeded: raw >> 24), UInt8(truncatingIfNeeded: raw >> 16),
                    UInt8(truncatingIfNeeded: raw >> 8), UInt8(truncatingIfNeeded: raw)]
        case .string(let s):
            var bytes: [UInt8] = [0x73]
            bytes.append(contentsOf: Self.canonical(s).utf8)
            return bytes
        case .uuid(let u):
            var bytes: [UInt8] = [0x75]
            withUnsafeBytes(of: u.uuid) { bytes.append(contentsOf: $0) }
            return bytes
        case .objectId(let id):
            return [0x6F] + id.bytes
        case .null:
            return [0x00]
        }
    }

    /// Calls `body` with the engine key, without allocating for integer keys.
    func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard case .int(let v) = self else { return try keyBytes.withUnsafeBytes(body) }
        let raw = (UInt64(bitPattern: v) ^ (1 << 63)).bigEndian
        var storage: (UInt64, UInt64) = (0, 0)
        return try withUnsafeMutableBytes(of: &storage) { out in
            out[0] = Self.integerKind
            withUnsafeBytes(of: raw) { for i in 0 ..< 8 { out[1 + i] = $0[i] } }
            return try body(UnsafeRawBufferPointer(rebasing: out[0 ..< 9]))
        }
    }

    /// The integer of an integer key's eight payload bytes (big-endian, sign bit flipped so
    /// that byte order is numeric order).
    @inline(__always)
    static func integer(_ payload: some Collection<UInt8>) -> Int64 {
        integer(orderValue: KeyOrder.orderValue(payload))
    }

    /// The integer of an integer key's payload read as one big-endian `UInt64`.
    @inline(__always)
    static func integer(orderValue: UInt64) -> Int64 {
        Int64(bitPattern: orderValue ^ (1 << 63))
    }

    /// The key whose engine key is `bytes`, or nil if they are not one.
    init?(keyBytes bytes: some RandomAccessCollection<UInt8>) {
        guard let kind = bytes.first else { return nil }
        let payload = bytes.dropFirst()
        switch kind {
        case Self.integerKind where bytes.count == 9:
            self = .int(Self.integer(payload))
        case 0x73:
            guard let text = String(validating: payload, as: UTF8.self) else { return nil }
            self = .string(text)
        case 0x75 where bytes.count == 17:
            var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: payload) }
            self = .uuid(UUID(uuid: raw))
        case 0x6F where bytes.count == 13:
            self = .objectId(ObjectId(bytes: payload)!)
        case 0x00 where bytes.count == 1:
            self = .null
        default: return nil
        }
    }
}

/// Engine keys for the values of an indexed property: same idea as primary keys, any field.
enum IndexValueKey {
    static func bytes(for value: FieldValue) -> [UInt8] {
        var out: [UInt8]
        switch value {
        case .null: return [0x00]
        case .bool(let b): return [0x62, b ? 1 : 0]
        case .int(let v): return PrimaryKeyValue.int(v).keyBytes
        case .string(let s): return PrimaryKeyValue.string(s).keyBytes
        case .uuid(let u): return PrimaryKeyValue.uuid(u).keyBytes
        // -0.0 == 0.0 (and two dates that differ only so are equal), so both index under the bits of 0.0.
        case .double(let d): out = [0x64]; withUnsafeBytes(of: (d == 0 ? 0.0 : d).bitPattern.bigEndian) { out.append(contentsOf: $0) }
        case .float(let f): out = [0x66]; withUnsafeBytes(of: Double(f == 0 ? 0 : f).bitPattern.bigEndian) { out.append(contentsOf: $0) }
        case .date(let d):
            let seconds = d.timeIntervalSinceReferenceDate
            out = [0x74]; withUnsafeBytes(of: (seconds == 0 ? 0.0 : seconds).bitPattern.bigEndian) { out.append(contentsOf: $0) }
        case .decimal(let d): out = [0x6E]; out.append(contentsOf: d.description.utf8)
        case .data(let d): out = [0x78]; out.append(contentsOf: d)
        case .link(let k): out = [0x6C]; out.append(contentsOf: k)
        case .objectId(let id): return PrimaryKeyValue.objectId(id).keyBytes
        case .list, .embedded, .map: out = [0x4C]; out.append(contentsOf: RowFormat.encode([value]))
        }
        return out
    }
}
