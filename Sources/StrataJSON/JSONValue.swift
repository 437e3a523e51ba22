// JSONValue: a parsed JSON document, as the coding layer reads and writes it. Integers
// keep all 64 bits (Twitter ids do not survive a trip through Double); other numbers are
// Doubles parsed with correct rounding.

import Foundation

/// A JSON value.
///
/// ```swift
/// let v = try JSONValue(data: bytes)          // throws JSONError with the byte offset
/// let out: Data = try v.data()                // v.data(prettyPrinted: true)
/// let any: Any = v.anyValue; let w = try JSONValue(any: any)
/// ```
public enum JSONValue: Sendable, Equatable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// A number written without a fraction or exponent that fits in 64 bits.
    case int(Int64)
    /// Any other number.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses `data` (UTF-8 JSON, any value at the top level).
    ///
    /// - Throws: ``JSONError`` naming what is wrong and the byte offset where.
    public init(data: Data) throws {
        self = try data.withUnsafeBytes { try JSONReader.parse($0) }
    }

    /// Parses UTF-8 bytes.
    public init(bytes: some ContiguousBytes) throws {
        self = try bytes.withUnsafeBytes { try JSONReader.parse($0) }
    }

    /// Parses a JSON text.
    public init(string: String) throws {
        var string = string
        self = try string.withUTF8 { try JSONReader.parse(UnsafeRawBufferPointer($0)) }
    }

    /// The value as JSON text (UTF-8): compact, or indented with two spaces. Object keys are
    /// written in sorted order, so equal values give equal bytes.
    ///
    /// - Throws: ``JSONError/unsupportedValue(_:)`` for a NaN or infinite double.
    public func data(prettyPrinted: Bool = false) throws -> Data {
        var writer = JSONWriter(pretty: prettyPrinted)
        try writer.write(self, depth: 0)
        return Data(writer.bytes)
    }

    /// The compact JSON text.
    public var description: String {
        (try? data()).map { String(decoding: $0, as: UTF8.self) } ?? "<not representable>"
    }

    // MARK: Access

    /// The member `key` of an object (nil otherwise).
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` of an array (nil otherwise or out of range).
    public subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// The value at a dotted key path (`"user.screen_name"`); numeric components index arrays.
    public subscript(keyPath path: String) -> JSONValue? {
        var current: JSONValue? = self
        for component in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard let value = current else { return nil }
            if case .array = value, let index = Int(component) {
                current = value[index]
            } else {
                current = value[String(component)]
            }
        }
        return current
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    // MARK: Bridging

    /// The value as Foundation's JSONSerialization represents it: `NSNull`, `Bool`, `Int64`
    /// (as `Int`), `Double`, `String`, `[Any]`, `[String: Any]`.
    public var anyValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .double(let d): return d
        case .string(let s): return s
        case .array(let elements): return elements.map(\.anyValue)
        case .object(let members): return members.mapValues(\.anyValue)
        }
    }

    /// A value from what JSONSerialization produces (or plain Swift values of those kinds).
    ///
    /// - Throws: ``JSONError/unsupportedValue(_:)`` for anything else.
    public init(any value: Any) throws {
        switch value {
        case is NSNull: self = .null
        case let v as JSONValue: self = v
        case let v as Bool where Self.isBoolean(value): self = .bool(v)
        case let v as Int: self = .int(Int64(v))
        case let v as Int64: self = .int(v)
        case let v as Int32: self = .int(Int64(v))
        case let v as UInt64:
            if let exact = Int64(exactly: v) { self = .int(exact) } else { self = .double(Double(v)) }
        case let v as Double: self = .double(v)
        case let v as Float: self = .double(Double(v))
        case let v as String: self = .string(v)
        case let v as [Any]: self = .array(try v.map(JSONValue.init(any:)))
        case let v as [String: Any]: self = .object(try v.mapValues(JSONValue.init(any:)))
        case let v as NSNumber:
            if let exact = Int64(exactly: v.doubleValue), v.stringValue == String(exact) { self = .int(exact) } else { self = .double(v.doubleValue) }
        default:
            throw JSONError.unsupportedValue("\(type(of: value))")
        }
    }

    /// Whether a value that casts to `Bool` really is one (NSNumber 0/1 also cast).
    private static func isBoolean(_ value: Any) -> Bool {
        if let number = value as? NSNumber {
            #if canImport(Darwin)
            return String(cString: number.objCType) == "c"
            #else
            return type(of: value) == Bool.self || String(cString: number.objCType) == "c"
            #endif
        }
        return value is Bool
    }
}

/// What is wrong with a JSON text, and where (a byte offset from the start).
public enum JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    case unexpectedEnd(offset: Int)
    case unexpectedCharacter(UInt8, offset: Int)
    case invalidNumber(offset: Int)
    case invalidEscape(offset: Int)
    case invalidUnicode(offset: Int)
    case controlCharacterInString(offset: Int)
    case tooDeep(limit: Int, offset: Int)
    case trailingData(offset: Int)
    case unsupportedValue(String)

    /// The byte offset of the problem, when it has one.
    public var offset: Int? {
        switch self {
        case .unexpectedEnd(let o), .unexpectedCharacter(_, let o), .invalidNumber(let o), .invalidEscape(let o),
             .invalidUnicode(let o), .controlCharacterInString(let o), .tooDeep(_, let o), .trailingData(let o):
            return o
        case .unsupportedValue:
            return nil
        }
    }

    /// What is wrong and at which byte, in words ("unexpected ']' at byte 12").
    public var description: String {
        switch self {
        case .unexpectedEnd(let o): return "JSON ends unexpectedly at byte \(o)"
        case .unexpectedCharacter(let c, let o):
            let shown = c >= 0x20 && c < 0x7F ? "'\(Character(UnicodeScalar(c)))'" : String(format: "0x%02X", c)
            return "unexpected \(shown) at byte \(o)"
        case .invalidNumber(let o): return "invalid number at byte \(o)"
        case .invalidEscape(let o): return "invalid escape sequence at byte \(o)"
        case .invalidUnicode(let o): return "invalid UTF-8 or unpaired surrogate at byte \(o)"
        case .controlCharacterInString(let o): return "unescaped control character in a string at byte \(o)"
        case .tooDeep(let limit, let o): return "nesting deeper than \(limit) levels at byte \(o)"
        case .trailingData(let o): return "unexpected data after the JSON value at byte \(o)"
        case .unsupportedValue(let kind): return "\(kind) cannot be represented in JSON"
        }
    }
}
