// ObjectId: the 12-byte identifier of BSON and Realm — a 4-byte big-endian timestamp in
// seconds, 5 bytes chosen at random once per process, and a 3-byte big-endian counter
// that starts at a random value. Byte order is creation order (to the second, then the
// counter within a process), so ObjectIds compare, sort and index as they were made.

import Foundation

/// A 12-byte unique identifier, as BSON and Realm Swift define it:
///
/// ```swift
/// final class Task: Object {
///     @Persisted(primaryKey: true) var _id: ObjectId   // a fresh ObjectId.generate() per object
/// }
/// let id = ObjectId.generate()
/// let same = try ObjectId(string: id.stringValue)
/// ```
///
/// Comparing two ObjectIds compares their bytes, so those made later by one process sort
/// after those made earlier. Encoded with `Codable` (and in every JSON front end) as its
/// 24-hex-digit string.
public struct ObjectId: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Bytes 0 ..< 8, big-endian.
    private let high: UInt64
    /// Bytes 8 ..< 12, big-endian.
    private let low: UInt32

    /// The all-zero ObjectId (Realm Swift's `ObjectId()`); use ``generate()`` for a new one.
    public init() {
        high = 0
        low = 0
    }

    /// The ObjectId of these 12 bytes; nil when `bytes` does not hold exactly 12.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 12 else { return nil }
        var high: UInt64 = 0, low: UInt32 = 0
        for (position, byte) in bytes.enumerated() {
            if position < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt32(byte) }
        }
        self.high = high
        self.low = low
    }

    /// Reads 24 hexadecimal digits (either case), as ``stringValue`` writes them.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` naming the string and what is wrong with it
    ///   (its length, or the first character that is not a hexadecimal digit).
    public init(string: String) throws {
        let scalars = Array(string.unicodeScalars)
        guard scalars.count == 24 else {
            throw RealmError.invalidValue("'\(string.prefix(40))' is not an ObjectId: it needs 24 hexadecimal digits, not \(scalars.count) characters")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        for pair in 0 ..< 12 {
            var byte: UInt8 = 0
            for offset in 0 ..< 2 {
                let position = 2 * pair + offset
                let scalar = scalars[position]
                guard scalar.isASCII, let digit = Self.hexValue(UInt8(scalar.value)) else {
                    throw RealmError.invalidValue("'\(string)' is not an ObjectId: the character at offset \(position) is not a hexadecimal digit")
                }
                byte = byte << 4 | digit
            }
            bytes.append(byte)
        }
        self.init(bytes: bytes)!
    }

    /// The ObjectId a literal of 24 hexadecimal digits spells, as Realm Swift's
    /// `ObjectId("…")`: `@Persisted var id = ObjectId("507f1f77bcf86cd799439011")` declares
    /// an `ObjectId` property, not an optional one.
    ///
    /// Traps when the literal is not 24 hexadecimal digits, as Realm aborts: the literal is
    /// part of the program. Read strings that come from data with ``init(string:)``, which
    /// throws.
    public init(_ literal: StaticString) {
        let text = literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        do {
            self = try ObjectId(string: text)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// An ObjectId for `timestamp` (to the second) with the given machine and process
    /// identifiers, laid out as Realm's engine does: the seconds big-endian, the machine
    /// id's low three bytes, the process id's low two bytes (both least significant byte
    /// first), then three bytes of this process's counter, big-endian.
    public init(timestamp: Date, machineId: Int, processId: Int) {
        let seconds = UInt32(truncatingIfNeeded: Int64(timestamp.timeIntervalSince1970.rounded(.down)))
        let counter = Self.generator.withLock { state -> UInt32 in
            state.counter = (state.counter &+ 1) & 0xFF_FFFF
            return state.counter
        }
        var bytes: [UInt8] = (0 ..< 4).map { UInt8(truncatingIfNeeded: seconds >> (24 - 8 * UInt32($0))) }
        bytes += (0 ..< 3).map { UInt8(truncatingIfNeeded: machineId >> (8 * $0)) }
        bytes += (0 ..< 2).map { UInt8(truncatingIfNeeded: processId >> (8 * $0)) }
        bytes += (0 ..< 3).map { UInt8(truncatingIfNeeded: counter >> (16 - 8 * UInt32($0))) }
        self.init(bytes: bytes)!
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The 12 bytes, in order.
    public var bytes: [UInt8] {
        (0 ..< 8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0 ..< 4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * UInt32($0))) }
    }

    /// The 24 lowercase hexadecimal digits of the bytes.
    public var stringValue: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// ``stringValue``.
    public var description: String { stringValue }

    /// When the ObjectId was made, to the second (its first four bytes).
    public var timestamp: Date { Date(timeIntervalSince1970: TimeInterval(UInt32(truncatingIfNeeded: high >> 32))) }

    /// Compares the bytes: creation order for ObjectIds made by one process.
    public static func < (lhs: ObjectId, rhs: ObjectId) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    // MARK: Generating

    /// What every ObjectId this process makes shares (5 random bytes) and its counter.
    private struct Generator {
        let processBytes: UInt64 = UInt64.random(in: 0 ..< 1 << 40)
        var counter: UInt32 = UInt32.random(in: 0 ..< 1 << 24)
    }
    private static let generator = Locked(Generator())

    /// A new ObjectId: the current time, this process's random bytes and the next value
    /// of its counter.
    public static func generate() -> ObjectId {
        let seconds = UInt32(clamping: Int64(Date().timeIntervalSince1970.rounded(.down)))
        return generator.withLock { state in
            state.counter = (state.counter &+ 1) & 0xFF_FFFF
            return ObjectId(seconds: seconds, processBytes: state.processBytes, counter: state.counter)
        }
    }

    /// The ObjectId of these parts (5 process bytes and a 3-byte counter, low bits used).
    init(seconds: UInt32, processBytes: UInt64, counter: UInt32) {
        high = UInt64(seconds) << 32 | (processBytes >> 8 & 0xFFFF_FFFF)
        low = UInt32(truncatingIfNeeded: processBytes & 0xFF) << 24 | counter & 0xFF_FFFF
    }

    // MARK: Codable

    /// Decodes the 24-hex-digit string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try ObjectId(string: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
        }
    }

    /// Encodes the 24-hex-digit string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stringValue)
    }
}

extension ObjectId: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .objectId }
    /// A property declared without an initial value gets a new ObjectId, as in Realm Swift.
    public static var _defaultValue: ObjectId { generate() }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> ObjectId? {
        if case .objectId(let v) = field { return v }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .objectId(self) }
}
