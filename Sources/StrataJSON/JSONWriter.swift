// JSONWriter: JSONValue to UTF-8 JSON text. Strings are escaped as RFC 8259 requires
// (quote, backslash, control characters); doubles print in the shortest form that reads
// back to the same bits; object keys are sorted so equal values give equal bytes.

package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    package let pretty: Bool

    package init(pretty: Bool) {
        self.pretty = pretty
        bytes.reserveCapacity(1024)
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func newline(_ depth: Int) {
        guard pretty else { return }
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(0x20, count: depth * 2))
    }

    /// The elements or members of an array or object being written.
    private enum Items {
        case elements([JSONValue])
        case members([String: JSONValue], keys: [String])
    }

    /// Writes `value`, whose container (if any) is `depth` levels in. The first levels
    /// recurse; deeper ones go to ``writeDeep(_:depth:)``, which keeps its own stack, so no
    /// document needs more than a few dozen frames.
    package mutating func write(_ value: JSONValue, depth: Int) throws {
        if depth >= JSONReader.recursionDepth {
            try writeDeep(value, depth: depth)
            return
        }
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): append(String(i))
        case .double(let d):
            guard d.isFinite else { throw JSONError.unsupportedValue("the non-finite number \(d)") }
            // Swift's description is the shortest text that reads back to the same bits,
            // and always valid JSON ("1.0", "1e+16", "5e-324").
            append("\(d)")
        case .string(let s): writeString(s)
        case .array(let elements):
            try writeArray(elements, depth: depth) { writer, element in try writer.write(element, depth: depth + 1) }
        case .object(let members):
            try writeObject(orderedMembers: members.keys.sorted().map { ($0, members[$0]!) }, depth: depth)
        }
    }

    /// Writes an array of `items`, each written by `element` (at `depth + 1`), as
    /// ``write(_:depth:)`` writes an array: for writers that stream their elements instead
    /// of building a `JSONValue` array first.
    package mutating func writeArray<S: Sequence>(_ items: S, depth: Int, _ element: (inout JSONWriter, S.Element) throws -> Void) rethrows {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            newline(depth + 1)
            try element(&self, item)
        }
        if !first { newline(depth) }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes an object whose members come in ascending key order, with distinct keys:
    /// what ``write(_:depth:)`` writes for the dictionary of them, without one.
    /// Writes an object whose members `body` writes one by one with `member` (keys in the
    /// order given, each written at most once), as ``writeObject(orderedMembers:depth:)``
    /// writes them: for writers that stream members instead of collecting them first.
    package mutating func writeObject(depth: Int, _ body: (inout ObjectMembers) throws -> Void) rethrows {
        bytes.append(UInt8(ascii: "{"))
        var members = ObjectMembers(writer: self, depth: depth)
        self = JSONWriter(pretty: pretty, empty: ())
        defer {
            if members.count > 0 { members.writer.newline(depth) }
            members.writer.bytes.append(UInt8(ascii: "}"))
            self = members.writer
        }
        try body(&members)
    }

    /// An empty writer without reserved capacity (a placeholder while `writeObject` lends the
    /// bytes to its members).
    private init(pretty: Bool, empty: Void) {
        self.pretty = pretty
    }

    /// The members of an object being written (``writeObject(depth:_:)``).
    package struct ObjectMembers {
        fileprivate var writer: JSONWriter
        fileprivate let depth: Int
        package private(set) var count = 0

        /// Writes the member `key: value`.
        package mutating func member(_ key: String, _ value: JSONValue) throws {
            if count > 0 { writer.bytes.append(UInt8(ascii: ",")) }
            count += 1
            writer.newline(depth + 1)
            writer.writeString(key)
            writer.bytes.append(UInt8(ascii: ":"))
            if writer.pretty { writer.bytes.append(0x20) }
            try writer.write(value, depth: depth + 1)
        }
    }

    package mutating func writeObject(orderedMembers members: [(key: String, value: JSONValue)], depth: Int) throws {
        bytes.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            newline(depth + 1)
            writeString(member.key)
            bytes.append(UInt8(ascii: ":"))
            if pretty { bytes.append(0x20) }
            try write(member.value, depth: depth + 1)
        }
        if !members.isEmpty { newline(depth) }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Writes `value` as ``write(_:depth:)`` does, following nesting with an explicit stack
    /// rather than recursion, so deep documents need no deep machine stack.
    package mutating func writeDeep(_ value: JSONValue, depth: Int) throws {
        var open: [(items: Items, next: Int)] = []
        var current = value
        while true {
            // Write `current`: a scalar or an empty container at once; otherwise open it.
            switch current {
            case .array(let elements) where !elements.isEmpty:
                bytes.append(UInt8(ascii: "["))
                open.append((.elements(elements), 0))
            case .object(let members) where !members.isEmpty:
                bytes.append(UInt8(ascii: "{"))
                open.append((.members(members, keys: members.keys.sorted()), 0))
            default:
                try writeScalar(current)
            }
            // Move to the next value of the innermost open container, closing those that end.
            var found = false
            while !found, let top = open.last {
                let inner = depth + open.count
                let next = top.next
                switch top.items {
                case .elements(let elements):
                    if next < elements.count {
                        if next > 0 { bytes.append(UInt8(ascii: ",")) }
                        newline(inner)
                        current = elements[next]
                        found = true
                    } else {
                        newline(inner - 1)
                        bytes.append(UInt8(ascii: "]"))
                    }
                case .members(let members, let keys):
                    if next < keys.count {
                        if next > 0 { bytes.append(UInt8(ascii: ",")) }
                        newline(inner)
                        writeString(keys[next])
                        bytes.append(UInt8(ascii: ":"))
                        if pretty { bytes.append(0x20) }
                        current = members[keys[next]]!
                        found = true
                    } else {
                        newline(inner - 1)
                        bytes.append(UInt8(ascii: "}"))
                    }
                }
                if found { open[open.count - 1].next += 1 } else { open.removeLast() }
            }
            if !found { return }
        }
    }

    /// A value that opens no container (empty arrays and objects included).
    private mutating func writeScalar(_ value: JSONValue) throws {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): append(String(i))
        case .double(let d):
            guard d.isFinite else { throw JSONError.unsupportedValue("the non-finite number \(d)") }
            // Swift's description is the shortest text that reads back to the same bits,
            // and always valid JSON ("1.0", "1e+16", "5e-324").
            append("\(d)")
        case .string(let s): writeString(s)
        case .array: append("[]")
        case .object: append("{}")
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    package mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0 ..< 0x20:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, Self.hexDigits[Int(byte >> 4)], Self.hexDigits[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
