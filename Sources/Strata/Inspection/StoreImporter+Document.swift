// The forms of a file `strata import` reads — every form `strata export`, `strata query
// --json` and `strata dump` write — turned into a list of (type, object, JSON path):
//
//   [{…}, …] or {…}          objects of the type given, or of each object's "_type"
//   {"Owner": […], "Pet": […]}   export's JSON: each member a type of the store and its objects
//   {…}\n{…}\n…              NDJSON (export --format ndjson, dump --ndjson): one object a line

import Foundation

extension StoreImporter {
    /// One object of an import file: its type, its JSON, and where it is (for errors).
    struct Entry {
        var type: ObjectSchema
        var object: JSONValue
        var path: String
    }

    /// The objects of `data`, in file order, with the type of each: its `_type`, the member
    /// of export's envelope holding it, or `defaultType`. With `onlyDefault`, objects of
    /// other types are left out.
    ///
    /// - Throws: ``JSONMappingError`` naming the path (or NDJSON line) of bad JSON, of an
    ///   object without a type, of a type the store does not have, of an embedded object
    ///   given on its own.
    func entries(in data: Data, defaultType: String?, onlyDefault: Bool) throws -> [Entry] {
        var entries: [Entry] = []
        func add(_ object: JSONValue, path: String, type givenType: String?) throws {
            var typeName = givenType
            if case .object(let members) = object, case .string(let declared)? = members["_type"] { typeName = declared }
            guard let typeName = typeName ?? defaultType else {
                throw JSONMappingError.unexpectedShape(path: path, expected: "an object with its \"_type\" (or give the type: --type)")
            }
            if onlyDefault && typeName != defaultType { return }
            guard let type = schema[typeName] else {
                throw JSONMappingError.unexpectedShape(path: path, expected: "an object of a type the store has (\(typeList)); it has no type '\(typeName)'")
            }
            if type.isEmbedded { throw Realm.embeddedAlone(typeName) }
            entries.append(Entry(type: type, object: object, path: path))
        }

        let json: JSONValue
        do {
            json = try JSONValue(data: data)
        } catch let error as JSONError {
            // Not one JSON value: NDJSON, if its first line is one.
            guard let lines = try ndjsonLines(data) else { throw JSONMappingError.invalidJSON(error) }
            for (number, object) in lines { try add(object, path: "line \(number): $", type: nil) }
            return entries
        }
        switch json {
        case .array(let elements):
            for (index, element) in elements.enumerated() { try add(element, path: "$[\(index)]", type: nil) }
        case .object(let members) where isEnvelope(members):
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                guard let type = schema[name] else {
                    throw JSONMappingError.unexpectedShape(path: "$.\(name)", expected: "the objects of a type the store has (\(typeList)); it has no type '\(name)'")
                }
                guard case .array(let elements) = value, !(onlyDefault && name != defaultType) else { continue }
                // Export lists embedded types too, always empty: they live inside their parents.
                if type.isEmbedded && elements.isEmpty { continue }
                for (index, element) in elements.enumerated() { try add(element, path: "$.\(name)[\(index)]", type: name) }
            }
        case .object:
            try add(json, path: "$", type: nil)
        default:
            throw JSONMappingError.unexpectedShape(path: "$", expected: "an array of objects, an object, export's {\"Type\": [objects]} or NDJSON")
        }
        return entries
    }

    /// Whether a top-level object is export's `{"Type": [objects], …}`: every member an
    /// array, at least one named for a type of the store (an object of a type rarely has
    /// only list properties, one of them named like a type).
    private func isEnvelope(_ members: [String: JSONValue]) -> Bool {
        !members.isEmpty && members.values.allSatisfy { if case .array = $0 { return true } else { return false } }
            && members.keys.contains { schema[$0] != nil }
    }

    /// The store's types that can be imported, for error messages.
    private var typeList: String {
        schema.objectSchemas.filter { !$0.isEmbedded }.map(\.className).sorted().joined(separator: ", ")
    }

    /// The objects of NDJSON text with their line numbers (blank lines skipped), or nil when
    /// the first line is not a JSON object on its own (then the text is no NDJSON).
    ///
    /// - Throws: ``JSONMappingError/unexpectedShape(path:expected:)`` naming the first line,
    ///   after the first, that is not one JSON object.
    private func ndjsonLines(_ data: Data) throws -> [(Int, JSONValue)]? {
        var lines: [(Int, JSONValue)] = []
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            guard line.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { continue }
            let object: JSONValue
            do {
                object = try JSONValue(data: Data(line))
            } catch let error as JSONError {
                guard !lines.isEmpty else { return nil }
                throw JSONMappingError.unexpectedShape(path: "line \(index + 1)", expected: "one JSON object a line (NDJSON): \(error)")
            }
            guard case .object = object else {
                guard !lines.isEmpty else { return nil }
                throw JSONMappingError.unexpectedShape(path: "line \(index + 1)", expected: "one JSON object a line (NDJSON)")
            }
            lines.append((index + 1, object))
        }
        return lines.isEmpty ? nil : lines
    }
}
