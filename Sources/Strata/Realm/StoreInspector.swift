// StoreInspector: reads a store's objects by the schema stored in it, without the app's
// model classes — what the `strata` tool's `dump` and `stats` use.

import Foundation

/// Reads the objects of a store through its stored schema.
///
/// ```swift
/// let store = try Store(directory: url, options: readOnlyOptions)
/// if let inspector = try StoreInspector(store: store) {
///     for object in try inspector.objects(ofType: "User") { print(object) }
/// }
/// ```
public struct StoreInspector {
    /// The stored schema.
    public let schema: Schema
    private let snapshot: Snapshot

    /// An inspector for `store`, or nil when the store holds no object-layer schema.
    ///
    /// - Throws: ``RealmError/invalidSchema(_:)`` when the stored schema cannot be read.
    public init?(store: Store) throws {
        guard let schema = try SharedStore.loadSchema(store) else { return nil }
        self.schema = schema
        snapshot = store.snapshot()
    }

    /// The number of stored objects of `className`.
    public func count(ofType className: String) -> Int {
        guard let type = schema[className] else { return 0 }
        return snapshot.count(table: StoreLayout.objectTable(type.tableNumber))
    }

    /// The objects of `className` in primary-key order, as JSON-ready dictionaries (for
    /// `JSONSerialization`): numbers, strings, booleans, `NSNull`, arrays and dictionaries.
    /// Data is base64, dates ISO 8601, decimals strings, links the target's primary key,
    /// and JSON-encoded custom columns nested JSON.
    ///
    /// - Throws: ``RealmError/unknownType(_:)``; ``RealmError/storage(_:)`` for damaged records.
    public func objects(ofType className: String) throws -> [[String: Any]] {
        guard let type = schema[className] else { throw RealmError.unknownType(className) }
        var rows: [([UInt8], [UInt8])] = []
        do {
            try snapshot.scan(table: StoreLayout.objectTable(type.tableNumber)) { rows.append(($0, $1)) }
        } catch {
            throw RealmError.wrap(error)
        }
        rows.sort { $0.0.lexicographicallyPrecedes($1.0) }
        return try rows.map { key, row in
            let fields: [FieldValue]
            do {
                fields = try RowFormat.fields(of: row)
            } catch {
                throw RealmError.invalidValue("\(className) \(PrimaryKeyValue(keyBytes: key)?.description ?? "?"): \(error)")
            }
            var object: [String: Any] = [:]
            if type.primaryKeyProperty == nil, let id = PrimaryKeyValue(keyBytes: key) {
                object["_id"] = Self.json(id.field)
            }
            for (index, property) in type.properties.enumerated() {
                object[property.name] = index < fields.count ? Self.json(fields[index], property: property) : NSNull()
            }
            return object
        }
    }

    private static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func json(_ field: FieldValue, property: PropertySchema? = nil) -> Any {
        switch field {
        case .null: return NSNull()
        case .bool(let v): return v
        case .int(let v): return v
        case .double(let v): return v.isFinite ? v : String(v) as Any
        case .float(let v): return v.isFinite ? Double(v) : String(v) as Any
        case .string(let v): return v
        case .data(let v):
            if property?.kind == .column, let nested = try? JSONSerialization.jsonObject(with: v, options: [.fragmentsAllowed]) { return nested }
            return v.base64EncodedString()
        case .date(let v): return dateStyle.format(v)
        case .uuid(let v): return v.uuidString
        case .decimal(let v): return v.description
        case .link(let key): return PrimaryKeyValue(keyBytes: key).map { json($0.field) } ?? key.map { String(format: "%02x", $0) }.joined()
        case .list(let items): return items.map { json($0, property: property) }
        }
    }
}
