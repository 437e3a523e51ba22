// JSONReader: RFC 8259 JSON from UTF-8 bytes into JSONValue, in one pass. It validates
// UTF-8, keeps integers exact in 64 bits, parses other numbers with correct rounding
// (strtod), limits nesting, and reports every error with its byte offset.

import Foundation

package struct JSONReader {
    /// Arrays and objects nested deeper than this are refused (no stack overflow on hostile input).
    package static let maxDepth = 512
    /// Containers up to this depth are read by recursion, deeper ones with an explicit
    /// stack: a few dozen frames at most, safe on small thread stacks even in debug builds.
    package static let recursionDepth = 32
    /// Number literals longer than this many bytes are refused before `strtod` sees them.
    /// Every double's exact decimal expansion (at most 767 significant digits, plus the
    /// zeros of a subnormal) fits, so no literal a writer produces is refused.
    package static let maxNumberLength = 4096

    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    /// Scratch space for strings with escapes.
    private var scratch: [UInt8] = []
    /// Elements and members of the containers being read, innermost last: each container
    /// is built once, at its exact size, when it closes (no growth, no rehashing).
    private var elementStack: [JSONValue] = []
    private var memberStack: [(key: String, value: JSONValue)] = []
    /// The arrays and objects open around the value being read, innermost last.
    private var containers: [Container] = []

    /// An open array or object around the innermost one: its elements or members start at
    /// `base` of their stack; `key` names the member whose value is being read.
    private struct Container {
        var isObject: Bool
        var base: Int
        var key: String
    }
    /// Object keys too long to be stored inline in a String, by a hash of their bytes:
    /// a payload repeats its keys, so each distinct long key is allocated once. Made on the
    /// first long key (small documents, such as a raw JSON column, never need it).
    private var longKeys: [String?] = []
    /// ``recursionDepth``, or less in tests (0: every container through the explicit stack).
    private let recursionLimit: Int

    private init(_ bytes: UnsafeRawBufferPointer, recursionLimit: Int = JSONReader.recursionDepth) {
        self.bytes = bytes
        self.recursionLimit = recursionLimit
    }

    package static func parse(_ bytes: UnsafeRawBufferPointer, recursionLimit: Int = recursionDepth) throws -> JSONValue {
        var reader = JSONReader(bytes, recursionLimit: recursionLimit)
        reader.skipWhitespace()
        let value = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        if reader.position < bytes.count { throw JSONError.trailingData(offset: reader.position) }
        return value
    }

    /// Reads a payload whose useful part is an array — the top-level value, or the member
    /// `envelope` of a top-level object — handing each element to `element` as soon as it
    /// is read (with its position and size in bytes), so the whole document never exists in
    /// memory at once. Everything else is read and checked, then dropped. If the envelope
    /// member appears twice, `restart` is called and the last one wins, as in a parse.
    ///
    /// - Returns: false when there is no such array (the caller reports the shape).
    /// - Throws: ``JSONError`` for malformed JSON anywhere, or what `element` throws.
    package static func streamArray(_ bytes: UnsafeRawBufferPointer, envelope: String?, restart: () -> Void,
                            element: (_ index: Int, _ value: JSONValue, _ size: Int) throws -> Void) throws -> Bool {
        var reader = JSONReader(bytes)
        reader.skipWhitespace()
        var streamed = false
        switch try reader.peek() {
        case UInt8(ascii: "["):
            try reader.streamElements(depth: 1, element)
            streamed = true
        case UInt8(ascii: "{") where envelope != nil:
            reader.position += 1
            reader.skipWhitespace()
            if try reader.peek() == UInt8(ascii: "}") {
                reader.position += 1
                break
            }
            while true {
                let byte = try reader.peek()
                guard byte == UInt8(ascii: "\"") else { throw JSONError.unexpectedCharacter(byte, offset: reader.position) }
                let key = try reader.parseKey()
                reader.skipWhitespace()
                let colon = try reader.peek()
                guard colon == UInt8(ascii: ":") else { throw JSONError.unexpectedCharacter(colon, offset: reader.position) }
                reader.position += 1
                reader.skipWhitespace()
                if key == envelope {
                    if streamed { restart() }
                    streamed = try reader.peek() == UInt8(ascii: "[")
                    if streamed { try reader.streamElements(depth: 2, element) } else { _ = try reader.parseValue(depth: 1) }
                } else {
                    _ = try reader.parseValue(depth: 1)
                }
                reader.skipWhitespace()
                let next = try reader.peek()
                reader.position += 1
                if next == UInt8(ascii: "}") { break }
                guard next == UInt8(ascii: ",") else { throw JSONError.unexpectedCharacter(next, offset: reader.position - 1) }
                reader.skipWhitespace()
            }
        default:
            _ = try reader.parseValue(depth: 0)
        }
        reader.skipWhitespace()
        if reader.position < bytes.count { throw JSONError.trailingData(offset: reader.position) }
        return streamed
    }

    /// The elements of the array at `position`, one at a time (`depth`: the array's own).
    private mutating func streamElements(depth: Int, _ element: (Int, JSONValue, Int) throws -> Void) throws {
        guard depth <= Self.maxDepth else { throw JSONError.tooDeep(limit: Self.maxDepth, offset: position) }
        position += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            position += 1
            return
        }
        var index = 0
        while true {
            let start = position
            let value = try parseValue(depth: depth)
            try element(index, value, position - start)
            index += 1
            skipWhitespace()
            let byte = try peek()
            position += 1
            if byte == UInt8(ascii: "]") { return }
            guard byte == UInt8(ascii: ",") else { throw JSONError.unexpectedCharacter(byte, offset: position - 1) }
            skipWhitespace()
        }
    }

    // MARK: Structure

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    @inline(__always)
    private func peek() throws -> UInt8 {
        guard position < bytes.count else { throw JSONError.unexpectedEnd(offset: position) }
        return bytes[position]
    }

    /// The value at `position`, inside `depth` open containers. The first levels recurse
    /// (the fastest code for ordinary documents); deeper ones go to ``parseDeep(depth:)``,
    /// which keeps its own stack, so no document needs more than a few dozen frames.
    private mutating func parseValue(depth: Int) throws -> JSONValue {
        switch try peek() {
        case UInt8(ascii: "{"): return depth < recursionLimit ? try parseObject(depth: depth + 1) : try parseDeep(depth: depth)
        case UInt8(ascii: "["): return depth < recursionLimit ? try parseArray(depth: depth + 1) : try parseDeep(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"): return try parseNumber()
        case let other: throw JSONError.unexpectedCharacter(other, offset: position)
        }
    }

    private mutating func expect(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        for index in 0 ..< count {
            guard position + index < bytes.count else { throw JSONError.unexpectedEnd(offset: position + index) }
            let byte = bytes[position + index]
            guard byte == literal.utf8Start[index] else { throw JSONError.unexpectedCharacter(byte, offset: position + index) }
        }
        position += count
    }

    private mutating func parseArray(depth: Int) throws -> JSONValue {
        guard depth <= Self.maxDepth else { throw JSONError.tooDeep(limit: Self.maxDepth, offset: position) }
        position += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            position += 1
            return .array([])
        }
        let base = elementStack.count
        while true {
            elementStack.append(try parseValue(depth: depth))
            skipWhitespace()
            let byte = try peek()
            position += 1
            if byte == UInt8(ascii: "]") {
                let elements = Array(elementStack[base...])
                elementStack.removeSubrange(base...)
                return .array(elements)
            }
            guard byte == UInt8(ascii: ",") else { throw JSONError.unexpectedCharacter(byte, offset: position - 1) }
            skipWhitespace()
        }
    }

    private mutating func parseObject(depth: Int) throws -> JSONValue {
        guard depth <= Self.maxDepth else { throw JSONError.tooDeep(limit: Self.maxDepth, offset: position) }
        position += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            position += 1
            return .object([:])
        }
        let base = memberStack.count
        while true {
            let byte = try peek()
            guard byte == UInt8(ascii: "\"") else { throw JSONError.unexpectedCharacter(byte, offset: position) }
            let key = try parseKey()
            skipWhitespace()
            let colon = try peek()
            guard colon == UInt8(ascii: ":") else { throw JSONError.unexpectedCharacter(colon, offset: position) }
            position += 1
            skipWhitespace()
            memberStack.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            let next = try peek()
            position += 1
            if next == UInt8(ascii: "}") {
                // Duplicate keys: the last one wins, as in JSONSerialization.
                var members = [String: JSONValue](minimumCapacity: memberStack.count - base)
                for (key, value) in memberStack[base...] { members[key] = value }
                memberStack.removeSubrange(base...)
                return .object(members)
            }
            guard next == UInt8(ascii: ",") else { throw JSONError.unexpectedCharacter(next, offset: position - 1) }
            skipWhitespace()
        }
    }

    /// The array or object at `position`, inside `depth` open containers, and everything in
    /// it. Nesting is followed with an explicit stack (`containers`), not recursion, so a
    /// document 512 levels deep needs little more machine stack than a flat one.
    private mutating func parseDeep(depth: Int) throws -> JSONValue {
        let first = try peek()
        guard first == UInt8(ascii: "[") || first == UInt8(ascii: "{") else { return try parseScalar(first) }
        var open = OpenContainers(bottom: containers.count, depth: depth)
        var value: JSONValue
        while true {
            // 1. A value starts at `position`: a scalar, or a container that is opened (its
            //    first element is then read by the next turn of this loop).
            let byte = try peek()
            if byte == UInt8(ascii: "[") || byte == UInt8(ascii: "{") {
                guard let empty = try openDeep(byte, &open) else { continue }
                value = empty
            } else {
                value = try parseScalar(byte)
            }
            // 2. Hand the value to the innermost open container; close each container that
            //    ends, which completes a value for the one around it.
            while true {
                guard open.isOpen else { return value }
                if open.isObject { memberStack.append((open.key, value)) } else { elementStack.append(value) }
                skipWhitespace()
                let next = try peek()
                position += 1
                if next == UInt8(ascii: ",") {
                    skipWhitespace()
                    if open.isObject { open.key = try parseMemberKey() }
                    break
                }
                value = try closeDeep(next, &open)
            }
        }
    }

    /// The state of ``parseDeep(depth:)``: the innermost open container (those around it
    /// are in `containers`, above `bottom`), and the nesting depth.
    private struct OpenContainers {
        let bottom: Int
        var depth: Int
        var isOpen = false, isObject = false, base = 0, key = ""

        init(bottom: Int, depth: Int) {
            self.bottom = bottom
            self.depth = depth
        }
    }

    /// Opens the array or object at `position` (`byte`, its first byte): the empty container
    /// when it closes at once, else nil, with its first member's key read for an object.
    private mutating func openDeep(_ byte: UInt8, _ open: inout OpenContainers) throws -> JSONValue? {
        guard open.depth < Self.maxDepth else { throw JSONError.tooDeep(limit: Self.maxDepth, offset: position) }
        let opensObject = byte == UInt8(ascii: "{")
        position += 1
        skipWhitespace()
        if try peek() == (opensObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
            position += 1
            return opensObject ? .object([:]) : .array([])
        }
        if open.isOpen { containers.append(Container(isObject: open.isObject, base: open.base, key: open.key)) }
        open.isOpen = true
        open.isObject = opensObject
        open.depth += 1
        if opensObject {
            open.base = memberStack.count
            open.key = try parseMemberKey()
        } else {
            open.base = elementStack.count
        }
        return nil
    }

    /// Closes the innermost open container at `next` (the byte just read after its last
    /// value): the array or object of its elements or members, which leave their stack. The
    /// container around it, if any, becomes the innermost.
    private mutating func closeDeep(_ next: UInt8, _ open: inout OpenContainers) throws -> JSONValue {
        let value: JSONValue
        if open.isObject {
            guard next == UInt8(ascii: "}") else { throw JSONError.unexpectedCharacter(next, offset: position - 1) }
            // Duplicate keys: the last one wins, as in JSONSerialization.
            var members = [String: JSONValue](minimumCapacity: memberStack.count - open.base)
            for (key, member) in memberStack[open.base...] { members[key] = member }
            memberStack.removeSubrange(open.base...)
            value = .object(members)
        } else {
            guard next == UInt8(ascii: "]") else { throw JSONError.unexpectedCharacter(next, offset: position - 1) }
            let elements = Array(elementStack[open.base...])
            elementStack.removeSubrange(open.base...)
            value = .array(elements)
        }
        open.depth -= 1
        if containers.count > open.bottom {
            let outer = containers.removeLast()
            open.isObject = outer.isObject
            open.base = outer.base
            open.key = outer.key
        } else {
            open.isOpen = false
        }
        return value
    }

    /// A value that is not an array or an object, starting with `byte`.
    private mutating func parseScalar(_ byte: UInt8) throws -> JSONValue {
        switch byte {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"): return try parseNumber()
        default: throw JSONError.unexpectedCharacter(byte, offset: position)
        }
    }

    /// Reads an object member's key and the colon after it.
    private mutating func parseMemberKey() throws -> String {
        let byte = try peek()
        guard byte == UInt8(ascii: "\"") else { throw JSONError.unexpectedCharacter(byte, offset: position) }
        let key = try parseKey()
        skipWhitespace()
        let colon = try peek()
        guard colon == UInt8(ascii: ":") else { throw JSONError.unexpectedCharacter(colon, offset: position) }
        position += 1
        skipWhitespace()
        return key
    }

    /// An object key: a string, shared with earlier occurrences when it is long.
    private mutating func parseKey() throws -> String {
        let start = position + 1
        let end = plainRunEnd(from: start)
        guard end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return try parseString() }
        let length = end - start
        let keyBytes = UnsafeRawBufferPointer(rebasing: bytes[start ..< end])
        position = end + 1
        // Short keys are stored inline in the String: nothing to share.
        if length <= 15 { return String(decoding: keyBytes, as: UTF8.self) }
        // A cheap hash of the length and the first and last eight bytes (a collision only
        // costs a comparison and a fresh string).
        let head = keyBytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
        let tail = keyBytes.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
        var hash = (head &* 0x9E37_79B9_7F4A_7C15) ^ (tail &+ UInt64(length))
        hash = (hash ^ (hash >> 29)) &* 0xBF58_476D_1CE4_E5B9
        let slot = Int(truncatingIfNeeded: hash >> 56)
        if longKeys.isEmpty { longKeys = Array(repeating: nil, count: 256) }
        if var cached = longKeys[slot], cached.utf8.count == length,
           cached.withUTF8({ memcmp($0.baseAddress!, keyBytes.baseAddress!, length) == 0 }) {
            return cached
        }
        let key = String(decoding: keyBytes, as: UTF8.self)
        longKeys[slot] = key
        return key
    }

    /// The end of the run of printable ASCII from `start` that needs no decoding (no quote,
    /// backslash, control character or non-ASCII byte), read eight bytes at a time.
    @inline(__always)
    private func plainRunEnd(from start: Int) -> Int {
        var index = start
        let high: UInt64 = 0x8080_8080_8080_8080, ones: UInt64 = 0x0101_0101_0101_0101
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
            // Bit-twiddling tests for "some byte is zero" and "some byte is below n" (exact as
            // existence tests): a quote, a backslash, a control character, or a high bit set.
            let hasQuote = (quote &- ones) & ~quote
            let hasBackslash = (backslash &- ones) & ~backslash
            let hasControl = (word &- ones &* 0x20) & ~word
            if (hasQuote | hasBackslash | hasControl | word) & high != 0 { break }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            index += 1
        }
        return index
    }

    // MARK: Strings

    /// A string starting at the opening quote; leaves `position` after the closing quote.
    private mutating func parseString() throws -> String {
        position += 1
        let start = position
        // Fast path: no escapes — validate and decode the bytes in place.
        position = plainRunEnd(from: position)
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start ..< position]), as: UTF8.self)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw JSONError.controlCharacterInString(offset: position) }
            if byte < 0x80 { position += 1 } else { try skipUTF8Sequence() }
        }
        guard position < bytes.count else { throw JSONError.unexpectedEnd(offset: position) }
        // Slow path: copy what was scanned, then decode escapes as they come.
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start ..< position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape()
            case 0 ..< 0x20:
                throw JSONError.controlCharacterInString(offset: position)
            case 0x20 ..< 0x80:
                scratch.append(byte)
                position += 1
            default:
                let sequenceStart = position
                try skipUTF8Sequence()
                scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[sequenceStart ..< position]))
            }
        }
        throw JSONError.unexpectedEnd(offset: position)
    }

    /// Checks one multi-byte UTF-8 sequence at `position` and moves past it.
    @inline(__always)
    private mutating func skipUTF8Sequence() throws {
        let lead = bytes[position]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2 ... 0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1 ... 0xEC, 0xEE ... 0xEF: length = 3
        case 0xED: length = 3; high = 0x9F          // no UTF-16 surrogates
        case 0xF0: length = 4; low = 0x90
        case 0xF1 ... 0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F          // nothing above U+10FFFF
        default: throw JSONError.invalidUnicode(offset: position)
        }
        guard position + length <= bytes.count else { throw JSONError.unexpectedEnd(offset: bytes.count) }
        let second = bytes[position + 1]
        guard second >= low, second <= high else { throw JSONError.invalidUnicode(offset: position + 1) }
        for index in 2 ..< length where bytes[position + index] & 0xC0 != 0x80 {
            throw JSONError.invalidUnicode(offset: position + index)
        }
        position += length
    }

    /// Decodes the escape at `position` (a backslash) into `scratch`.
    private mutating func parseEscape() throws {
        let escapeStart = position
        position += 1
        guard position < bytes.count else { throw JSONError.unexpectedEnd(offset: position) }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""): scratch.append(0x22)
        case UInt8(ascii: "\\"): scratch.append(0x5C)
        case UInt8(ascii: "/"): scratch.append(0x2F)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800 ... 0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw JSONError.invalidUnicode(offset: escapeStart)
                }
                position += 2
                let low = try hex4()
                guard (0xDC00 ... 0xDFFF).contains(low) else { throw JSONError.invalidUnicode(offset: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00 ... 0xDFFF).contains(scalar) {
                throw JSONError.invalidUnicode(offset: escapeStart)
            }
            UTF8.encode(UnicodeScalar(scalar)!) { scratch.append($0) }
        default:
            throw JSONError.invalidEscape(offset: escapeStart)
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count else { throw JSONError.unexpectedEnd(offset: bytes.count) }
        var value: UInt32 = 0
        for _ in 0 ..< 4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0") ... UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a") ... UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A") ... UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONError.invalidEscape(offset: position)
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    // MARK: Numbers

    private mutating func parseNumber() throws -> JSONValue {
        let start = position
        var negative = false
        if bytes[position] == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        func isDigit(_ at: Int) -> Bool { at < bytes.count && bytes[at] >= 0x30 && bytes[at] <= 0x39 }
        guard isDigit(position) else { throw JSONError.invalidNumber(offset: start) }
        // Integer part: 0, or a digit 1-9 then digits; accumulate while it fits.
        var magnitude: UInt64 = 0
        var fits = true
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if isDigit(position) { throw JSONError.invalidNumber(offset: start) }
        } else {
            while isDigit(position) {
                let digit = UInt64(bytes[position] - 0x30)
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(digit)
                if overflow1 || overflow2 { fits = false } else { magnitude = sum }
                position += 1
            }
        }
        var integral = true
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            integral = false
            position += 1
            guard isDigit(position) else { throw JSONError.invalidNumber(offset: start) }
            while isDigit(position) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            integral = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard isDigit(position) else { throw JSONError.invalidNumber(offset: start) }
            while isDigit(position) { position += 1 }
        }
        if integral, fits {
            if negative {
                if magnitude <= UInt64(Int64.max) { return .int(-Int64(magnitude)) }
                if magnitude == UInt64(Int64.max) + 1 { return .int(.min) }
            } else if magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        // strtod on a NUL-terminated copy: correctly rounded. An absurdly long literal is
        // refused rather than copied and converted.
        let length = position - start
        guard length <= Self.maxNumberLength else { throw JSONError.invalidNumber(offset: start) }
        let value: Double = withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer in
            for index in 0 ..< length { buffer[index] = CChar(bitPattern: bytes[start + index]) }
            buffer[length] = 0
            return strtod(buffer.baseAddress!, nil)
        }
        guard value.isFinite else { throw JSONError.invalidNumber(offset: start) }
        return .double(value)
    }
}
