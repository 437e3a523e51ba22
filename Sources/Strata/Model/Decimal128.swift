// Decimal128: Realm Swift's decimal type, for code that declares `@Persisted var price:
// Decimal128`. Strata stores decimals as Foundation's `Decimal` (FORMAT.md, tag 10): this
// type is that value under Realm's name and API, stored, queried and sorted exactly as a
// `Decimal` property is. Foundation's Decimal holds 38 significant digits with exponents
// -128...127, where IEEE 754 decimal128 holds 34 digits with exponents -6143...6144: a
// value beyond Decimal's exponents (or an infinity) is refused with an error, never rounded
// silently.

import Foundation

/// A decimal number (Realm Swift's `Decimal128`), stored as a `Decimal`:
///
/// ```swift
/// final class Invoice: Object {
///     @Persisted var total: Decimal128 = 0
/// }
/// invoice.total += Decimal128(string: "19.99")      // exact: no binary rounding
/// let big = realm.objects(Invoice.self).filter("total > 100")
/// ```
public struct Decimal128: Sendable, Hashable, Comparable, CustomStringConvertible,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral, SignedNumeric {
    /// The value as Foundation's `Decimal`.
    public var decimalValue: Decimal

    /// Zero.
    public init() { decimalValue = 0 }

    /// The decimal `value`.
    public init(_ value: Decimal) { decimalValue = value }

    /// The value of `number` (Realm's `init(number:)`).
    public init(number: NSNumber) { decimalValue = number.decimalValue }

    /// Reads a decimal number: an optional sign, digits with an optional fraction, an
    /// optional exponent (`"-12.5e3"`), or `"NaN"`.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` naming the string, for text that is not a
    ///   number or a value outside what a `Decimal` holds.
    public init(string: String) throws {
        let text = string.trimmingCharacters(in: .whitespaces)
        if text.caseInsensitiveCompare("nan") == .orderedSame {
            decimalValue = .nan
            return
        }
        guard Self.isNumber(text), let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !value.isNaN else {
            throw RealmError.invalidValue("'\(string.prefix(60))' is not a Decimal128: expected digits with an optional sign, fraction and exponent, within a Decimal's range (exponents -128...127)")
        }
        decimalValue = value
    }

    /// The value of `value`, converted as Realm's `init(value:)` does: a number, a
    /// `Decimal`, or a numeric string; NaN for anything else.
    public init(value: Any) {
        switch value {
        case let v as Decimal128: self = v
        case let v as Decimal: decimalValue = v
        case let v as Double: decimalValue = Decimal(converting: v) ?? .nan
        case let v as Float: decimalValue = Decimal(converting: Double(v)) ?? .nan
        case let v as any BinaryInteger: decimalValue = Int64(exactly: v).map { Decimal($0) } ?? Decimal(string: "\(v)") ?? .nan
        case let v as NSNumber: decimalValue = v.decimalValue
        case let v as String: decimalValue = (try? Decimal128(string: v))?.decimalValue ?? .nan
        default: decimalValue = .nan
        }
    }

    /// An integer literal.
    public init(integerLiteral value: Int64) { decimalValue = Decimal(value) }

    /// A floating-point literal, through its shortest decimal text (`0.1` is exactly 0.1).
    public init(floatLiteral value: Double) {
        decimalValue = Decimal(string: "\(value)", locale: Locale(identifier: "en_US_POSIX")) ?? Decimal(converting: value) ?? .nan
    }

    /// A string literal; traps when it is not a number, as Realm does (the literal is part
    /// of the program: use ``init(string:)`` for text from data).
    public init(stringLiteral value: String) {
        do {
            try self.init(string: value)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The value of an integer, when a `Decimal` holds it exactly.
    public init?<T: BinaryInteger>(exactly source: T) {
        guard let value = Int64(exactly: source) else { return nil }
        decimalValue = Decimal(value)
    }

    /// Whether the value is not a number.
    public var isNaN: Bool { decimalValue.isNaN }
    /// The value as text (`"12.5"`, `"NaN"`).
    public var stringValue: String { decimalValue.isNaN ? "NaN" : decimalValue.description }
    /// ``stringValue``.
    public var description: String { stringValue }
    /// The value as the nearest `Double`.
    public var doubleValue: Double { NSDecimalNumber(decimal: decimalValue).doubleValue }
    /// The absolute value.
    public var magnitude: Decimal128 { Decimal128(decimalValue.magnitude) }
    /// The smallest value a `Decimal` holds (Realm's name; Decimal's range, not decimal128's).
    public static var minimumDecimalNumber: Decimal128 { Decimal128(-Decimal.greatestFiniteMagnitude) }
    /// The largest value a `Decimal` holds.
    public static var maximumDecimalNumber: Decimal128 { Decimal128(Decimal.greatestFiniteMagnitude) }

    /// Negates the value.
    public mutating func negate() { decimalValue.negate() }

    /// Orders by value, NaN before every number (a total order, so NaN values sort and
    /// hash consistently).
    public static func < (lhs: Decimal128, rhs: Decimal128) -> Bool {
        if lhs.isNaN || rhs.isNaN { return lhs.isNaN && !rhs.isNaN }
        return lhs.decimalValue < rhs.decimalValue
    }

    /// Equal values (`1.0 == 1`); NaN equals NaN.
    public static func == (lhs: Decimal128, rhs: Decimal128) -> Bool {
        if lhs.isNaN || rhs.isNaN { return lhs.isNaN && rhs.isNaN }
        return lhs.decimalValue == rhs.decimalValue
    }

    /// Hashes the value (equal values hash alike).
    public func hash(into hasher: inout Hasher) {
        if isNaN { hasher.combine(0 as UInt8) } else { hasher.combine(decimalValue) }
    }

    /// The sum.
    public static func + (lhs: Decimal128, rhs: Decimal128) -> Decimal128 { Decimal128(lhs.decimalValue + rhs.decimalValue) }
    /// The difference.
    public static func - (lhs: Decimal128, rhs: Decimal128) -> Decimal128 { Decimal128(lhs.decimalValue - rhs.decimalValue) }
    /// The product.
    public static func * (lhs: Decimal128, rhs: Decimal128) -> Decimal128 { Decimal128(lhs.decimalValue * rhs.decimalValue) }
    /// The quotient (NaN when dividing by zero).
    public static func / (lhs: Decimal128, rhs: Decimal128) -> Decimal128 { Decimal128(lhs.decimalValue / rhs.decimalValue) }
    /// Adds in place.
    public static func += (lhs: inout Decimal128, rhs: Decimal128) { lhs = lhs + rhs }
    /// Subtracts in place.
    public static func -= (lhs: inout Decimal128, rhs: Decimal128) { lhs = lhs - rhs }
    /// Multiplies in place.
    public static func *= (lhs: inout Decimal128, rhs: Decimal128) { lhs = lhs * rhs }
    /// Divides in place.
    public static func /= (lhs: inout Decimal128, rhs: Decimal128) { lhs = lhs / rhs }

    /// Whether `text` has the shape of a number (`Decimal(string:)` alone reads a prefix).
    private static func isNumber(_ text: String) -> Bool {
        var bytes = Substring(text).utf8[...]
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let digit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let whole = bytes.prefix(while: digit)
        bytes = bytes.dropFirst(whole.count)
        var fraction = 0
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            fraction = bytes.prefix(while: digit).count
            bytes = bytes.dropFirst(fraction)
        }
        guard whole.count + fraction > 0 else { return false }
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            let exponent = bytes.prefix(while: digit).count
            guard exponent > 0 else { return false }
            bytes = bytes.dropFirst(exponent)
        }
        return bytes.isEmpty
    }
}

extension Decimal128: Codable {
    /// Decodes a numeric string or a number.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            do {
                self = try Decimal128(string: text)
            } catch {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(error)")
            }
        } else {
            self.init(try container.decode(Decimal.self))
        }
    }

    /// Encodes ``stringValue`` (exact, as Realm does).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stringValue)
    }
}

extension Decimal128: _PersistableValue, _PersistedProperty {
    public static var _propertyKind: PropertyKind { .decimal }
    public static var _defaultValue: Decimal128 { Decimal128() }
    @inlinable
    public static func _fromField(_ field: FieldValue, in _: Realm?) -> Decimal128? {
        if case .decimal(let v) = field { return Decimal128(v) }
        return nil
    }
    @inlinable
    public func _field(in _: Realm?) -> FieldValue { .decimal(decimalValue) }
}
