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
    /// Data is base64, dates ISO 8601 with the fractional digits that give the Date back
    /// exactly (to the last bit of the `Double`), decimals strings, links the target's primary key,
    /// and JSON-encoded custom columns and raw JSON properties nested JSON.
    ///
    /// - Throws: ``RealmError/unknownType(_:)``; ``RealmError/storage(_:)`` for damaged records.
    public func objects(ofType className: String) throws -> [[String: Any]] {
        try objects(ofType: className, matching: nil)
    }

    /// The objects of `className` that match a string query (the language of
    /// `Results.filter(_:_:)`, with its `SORT(…)` and `LIMIT(n)`), as JSON-ready
    /// dictionaries; in primary-key order unless the query sorts. Links in the query are
    /// followed through the stored schema.
    ///
    /// - Throws: ``RealmError/unknownType(_:)``; ``RealmError/invalidQuery(query:offset:reason:)``;
    ///   ``RealmError/storage(_:)`` or ``RealmError/invalidValue(_:)`` for damaged records.
    public func objects(ofType className: String, matching query: String?, arguments: [Any?] = []) throws -> [[String: Any]] {
        guard let type = schema[className] else { throw RealmError.unknownType(className) }
        return try matchingRows(type, query: query, arguments: arguments).map { object($0.key, $0.fields, of: type) }
    }

    /// One page of what ``objects(ofType:matching:arguments:)`` gives: how many objects
    /// match, and the JSON-ready dictionaries of those at positions `offset ..< offset + limit`
    /// only (a page of a large store converts its page, not the store). Without a query, the
    /// rows off the page are not even read: the keys are put in order and the page's rows
    /// read by key.
    ///
    /// - Throws: as ``objects(ofType:matching:arguments:)``; ``RealmError/invalidValue(_:)``
    ///   for a negative `offset` or `limit`.
    public func page(ofType className: String, matching query: String?, arguments: [Any?] = [],
                     offset: Int, limit: Int) throws -> (matching: Int, objects: [[String: Any]]) {
        guard let type = schema[className] else { throw RealmError.unknownType(className) }
        guard offset >= 0, limit >= 0 else { throw RealmError.invalidValue("a page needs a non-negative offset and limit, not \(offset) and \(limit)") }
        let table = StoreLayout.objectTable(type.tableNumber)
        do {
            let keys: OrderedKeys = try query.map { try matchingOrderedKeys(type, query: $0, arguments: arguments) }
                ?? orderedKeys(table: table)
            let objects = try keys.slice(offset, limit).compactMap { key -> [String: Any]? in
                guard let row = try snapshot.get(table: table, key: key) else { return nil }
                return object(key, try fields(of: row, key: key, className: className), of: type)
            }
            return (keys.count, objects)
        } catch let error as RealmError {
            throw error
        } catch {
            throw RealmError.wrap(error)
        }
    }

    /// A table's keys in key order: integer keys (a primary key's or the hidden ids) read as
    /// integers and radix-sorted, others as byte arrays.
    private enum OrderedKeys {
        case integers([Int64])
        case bytes([[UInt8]])
        /// Ordinals of a table projection, in key order (their keys copied only for a page).
        case ordinals(TableProjection, [Int32])

        var count: Int {
            switch self {
            case .integers(let keys): return keys.count
            case .bytes(let keys): return keys.count
            case .ordinals(_, let ordinals): return ordinals.count
            }
        }

        /// The keys at `offset ..< offset + limit` (fewer at the end).
        func slice(_ offset: Int, _ limit: Int) -> [[UInt8]] {
            switch self {
            case .integers(let keys): return keys.dropFirst(offset).prefix(limit).map { PrimaryKeyValue.int($0).keyBytes }
            case .bytes(let keys): return Array(keys.dropFirst(offset).prefix(limit))
            case .ordinals(let projection, let ordinals): return ordinals.dropFirst(offset).prefix(limit).map { projection.key(Int($0)) }
            }
        }
    }

    /// The keys of the objects of `type` that match `query`, in its order: from the table's
    /// columns when it would read every row (no primary-key or index equality narrows it),
    /// its condition is in the query IR and it does not sort; else as `plan` says.
    private func matchingOrderedKeys(_ type: ObjectSchema, query: String, arguments: [Any?]) throws -> OrderedKeys {
        let root = StoredQueryType(type)
        let compiled = try CompiledTextQuery.compile(query, arguments: arguments, root: root, source: self)
        if case .rowScan = plan(root, compiled), let expression = compiled.expression, compiled.sortKeys.isEmpty,
           let (projection, ordinals) = columnMatches(type, expression, limit: compiled.limit) {
            return .ordinals(projection, ordinals)
        }
        return .bytes(try matchingKeys(type, compiled: compiled))
    }

    /// The ordinals matching `expression` of `type`'s projection, in key order, cut at
    /// `limit`, from one scan of the columns the query reads. Nil when a record or field
    /// does not read, or a column holds values of several kinds, so the rows are judged one
    /// by one by the language's rules and the damage named, as without columns. (Not the
    /// projection a writer's close kept: its values were read before, and a store being
    /// inspected may since have been damaged — only a scan of the records checks them.)
    private func columnMatches(_ type: ObjectSchema, _ expression: QueryExpression, limit: Int?) -> (TableProjection, [Int32])? {
        let table = StoreLayout.objectTable(type.tableNumber)
        var damaged = false
        let projection = TableProjection.build(table: table, snapshot: snapshot, properties: expression.properties, damaged: { _, _ in damaged = true })
        guard !damaged, expression.properties.allSatisfy({ projection.projectedColumn($0)?.isTyped ?? false }),
              let selected = projection.select(expression, damaged: { _, _ in damaged = true }), !damaged else { return nil }
        var ordinals = projection.sortedByKey(selected.ordinals)
        if let limit, ordinals.count > limit { ordinals.removeLast(ordinals.count - limit) }
        return (projection, ordinals)
    }

    private func orderedKeys(table: UInt32) throws -> OrderedKeys {
        var integers: [Int64] = [], allIntegers = true
        integers.reserveCapacity(snapshot.count(table: table))
        try snapshot.forEachKeyBytes(table: table) { key in
            guard allIntegers else { return }
            guard key.count == 9, key[0] == PrimaryKeyValue.integerKind else {
                allIntegers = false
                return
            }
            integers.append(PrimaryKeyValue.integer(orderValue: UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 1, as: UInt64.self))))
        }
        if allIntegers { return .integers(KeyOrder.sortedIntegers(integers)) }
        return .bytes(KeyOrder.sorted(try snapshot.keys(table: table)))
    }

    /// The keys of the objects of `type` that match `query`, in its order (the primary key's
    /// unless it sorts), cut at its limit: each row judged reading only the fields the query
    /// names, and only the sort's fields kept (a page's rows are decoded whole, the others
    /// not at all).
    private func matchingKeys(_ type: ObjectSchema, compiled: CompiledTextQuery) throws -> [[UInt8]] {
        let root = StoredQueryType(type)
        var matches: [(key: [UInt8], sortValues: [FieldValue])] = []
        func consider(_ key: [UInt8], _ row: [UInt8]) throws {
            var failure: (any Error)?
            func field(_ index: Int) -> FieldValue {
                if index == RowAccess.ownKey { return .link(key) }
                do {
                    return try RowFormat.field(index, of: row)
                } catch {
                    failure = failure ?? error
                    return .null
                }
            }
            let matched = compiled.evaluate(self, field)
            let sortValues = matched ? compiled.sortKeys.map { field($0.index) } : []
            if let failure {
                throw RealmError.invalidValue("\(type.className) \(PrimaryKeyValue(keyBytes: key)?.description ?? "?"): \(failure)")
            }
            if matched { matches.append((key, sortValues)) }
        }
        try forEachCandidate(root, compiled, consider)
        Self.order(&matches, as: compiled, key: \.key) { match, position in match.sortValues[position] }
        return matches.map(\.key)
    }

    /// Hands `body` each candidate row of `compiled` over `root` with its key: the primary
    /// key's one object, the index's objects, or every row (storage errors as `RealmError`).
    private func forEachCandidate(_ root: StoredQueryType, _ compiled: CompiledTextQuery?,
                                  _ body: (_ key: [UInt8], _ row: [UInt8]) throws -> Void) throws {
        do {
            if let keys = try candidateKeys(plan(root, compiled), of: root) {
                // The index names the candidates; the whole query still judges each.
                for key in keys {
                    if let row = try snapshot.get(table: root.table, key: key) { try body(key, row) }
                }
            } else {
                try snapshot.scan(table: root.table, body)
            }
        } catch let error as RealmError {
            throw error
        } catch {
            throw RealmError.wrap(error)
        }
    }

    /// Puts `matches` in the query's order — its SORT keys (`value(match, i)` is the value of
    /// the i-th), then the primary key — and cuts them at its LIMIT.
    private static func order<T>(_ matches: inout [T], as compiled: CompiledTextQuery?, key: (T) -> [UInt8],
                                 value: (T, Int) -> FieldValue) {
        let sortKeys = compiled?.sortKeys ?? []
        matches.sort { a, b in
            for (position, sortKey) in sortKeys.enumerated() {
                switch QueryCompiler.order(value(a, position), value(b, position)) {
                case .orderedAscending: return !sortKey.reverse
                case .orderedDescending: return sortKey.reverse
                case .orderedSame: continue
                }
            }
            return key(a).lexicographicallyPrecedes(key(b))
        }
        if let limit = compiled?.limit, matches.count > limit { matches.removeLast(matches.count - limit) }
    }

    /// The key and fields of each object of `type` that matches `query`, in its order (the
    /// primary key's unless it sorts), cut at its limit.
    private func matchingRows(_ type: ObjectSchema, query: String?, arguments: [Any?]) throws -> [(key: [UInt8], fields: [FieldValue])] {
        let root = StoredQueryType(type)
        let compiled = try query.map { try CompiledTextQuery.compile($0, arguments: arguments, root: root, source: self) }
        var rows: [(key: [UInt8], fields: [FieldValue])] = []
        func consider(_ key: [UInt8], _ row: [UInt8]) throws {
            let fields = try self.fields(of: row, key: key, className: type.className)
            if let compiled {
                let field: (Int) -> FieldValue = { $0 == RowAccess.ownKey ? .link(key) : $0 < fields.count ? fields[$0] : .null }
                guard compiled.evaluate(self, field) else { return }
            }
            rows.append((key, fields))
        }
        try forEachCandidate(root, compiled, consider)
        let sortKeys = compiled?.sortKeys ?? []
        Self.order(&rows, as: compiled, key: \.key) { row, position in
            let index = sortKeys[position].index
            return index < row.fields.count ? row.fields[index] : .null
        }
        return rows
    }

    /// A stored row's fields; a row that does not decode is an error naming its object.
    private func fields(of row: [UInt8], key: [UInt8], className: String) throws -> [FieldValue] {
        do {
            return try RowFormat.fields(of: row)
        } catch {
            throw RealmError.invalidValue("\(className) \(PrimaryKeyValue(keyBytes: key)?.description ?? "?"): \(error)")
        }
    }

    /// An object as a JSON-ready dictionary: its stored properties (and `_id`, the hidden
    /// key, for a type without a primary key).
    private func object(_ key: [UInt8], _ fields: [FieldValue], of type: ObjectSchema) -> [String: Any] {
        var object: [String: Any] = [:]
        if type.primaryKeyProperty == nil, let id = PrimaryKeyValue(keyBytes: key) {
            object["_id"] = Self.json(id.field)
        }
        for (index, property) in type.properties.enumerated() where property.kind != .linkingObjects {
            object[property.name] = index < fields.count ? Self.json(fields[index], property: property, schema: schema) : NSNull()
        }
        return object
    }

    /// How ``objects(ofType:matching:arguments:)`` finds the objects of `className` that
    /// match `query` (`strata query --explain`): one look-up of an equality on the primary
    /// key, the keys of an equality on an indexed property from its index, or a scan of
    /// every row; then the query judges each candidate, and the sort and limit apply.
    ///
    /// - Throws: ``RealmError/unknownType(_:)``; ``RealmError/invalidQuery(query:offset:reason:)``.
    public func explain(ofType className: String, matching query: String?, arguments: [Any?] = []) throws -> String {
        guard let type = schema[className] else { throw RealmError.unknownType(className) }
        let root = StoredQueryType(type)
        let compiled = try query.map { try CompiledTextQuery.compile($0, arguments: arguments, root: root, source: self) }
        func name(_ index: Int) -> String { index < type.properties.count ? type.properties[index].name : "#\(index)" }
        var lines: [String] = []
        switch plan(root, compiled) {
        case .primaryKey(let term):
            lines.append("\(className): primary key \(name(term.propertyIndex)) == \(term.value.queryLiteral) (one look-up)")
        case .hashIndex(let term):
            lines.append("\(className): hash index on \(name(term.propertyIndex)) == \(term.value.queryLiteral)")
        case .rowScan:
            lines.append("\(className): row scan of \(snapshot.count(table: root.table)) objects"
                         + (compiled?.expression != nil && compiled?.sortKeys.isEmpty == true ? " (a page of it: a column scan)" : ""))
        case .columnScan, .collection, .orderedIndex:
            break   // (not chosen for a listing: a page of such a query reads the columns, `matchingOrderedKeys`)
        }
        if let compiled { lines.append("  string query: \(compiled.text)") }
        if let sortKeys = compiled?.sortKeys, !sortKeys.isEmpty {
            lines.append("  sort: " + sortKeys.map { "\(name($0.index)) \($0.reverse ? "descending" : "ascending")" }.joined(separator: ", "))
        } else {
            lines.append("  order: primary key")
        }
        if let limit = compiled?.limit { lines.append("  limit: \(limit)") }
        return lines.joined(separator: "\n")
    }

    /// The access path for `compiled` over `root`: an equality the query requires on the
    /// primary key or an indexed property, else every row.
    private func plan(_ root: StoredQueryType, _ compiled: CompiledTextQuery?) -> QueryPlan {
        guard let term = compiled?.indexTerms.first else { return .rowScan }
        return term.propertyIndex == root.primaryKeyIndex ? .primaryKey(term) : .hashIndex(term)
    }

    /// The candidates of `plan`, or nil for a scan.
    private func candidateKeys(_ plan: QueryPlan, of root: StoredQueryType) throws -> [[UInt8]]? {
        switch plan {
        case .primaryKey(let term):
            let optional = root.schema.properties[term.propertyIndex].isOptional
            return PrimaryKeyValue(keyField: term.value, optional: optional).map { [$0.keyBytes] } ?? []
        case .hashIndex(let term):
            return try SecondaryIndex.lookup(table: StoreLayout.indexTable(root.schema.tableNumber, property: term.propertyIndex),
                                             value: term.value) { table, key in try snapshot.get(table: table, key: key) }
        case .rowScan, .columnScan, .collection, .orderedIndex:
            return nil
        }
    }

    /// What an engine table of the store holds, by the stored schema (see StoreLayout):
    /// `metadata` (the schema, hidden-id counters), a class name for its objects,
    /// `Class.property index` for a secondary index, `Class.property inverse index` for the
    /// index linking objects read. Nil for a table the schema does not explain (a type
    /// removed from the schema, or a store's own tables).
    public func tableName(_ table: UInt32) -> String? {
        if table == StoreLayout.metadataTable { return "metadata" }
        guard let (number, property) = StoreLayout.decode(table: table),
              let type = schema.objectSchemas.first(where: { $0.tableNumber == number }) else { return nil }
        guard let property else { return type.className }
        guard let index = schema.maintainedIndexes(of: type).first(where: { $0.property == property }) else { return nil }
        return "\(type.className).\(type.properties[property].name) \(index.backlink ? "inverse index" : "index")"
    }

    /// The column names of `className`'s objects as ``objects(ofType:matching:arguments:)``
    /// gives them, in schema order (`_id` first for a type without a primary key; linking
    /// objects, which are computed, left out).
    public func columns(ofType className: String) throws -> [String] {
        guard let type = schema[className] else { throw RealmError.unknownType(className) }
        return (type.primaryKeyProperty == nil ? ["_id"] : []) + type.properties.filter { $0.kind != .linkingObjects }.map(\.name)
    }

    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A stored field as a JSON-ready value; `schema` names an embedded object's properties.
    static func json(_ field: FieldValue, property: PropertySchema? = nil, schema: Schema? = nil) -> Any {
        switch field {
        case .null: return NSNull()
        case .bool(let v): return v
        case .int(let v): return v
        case .double(let v): return v.isFinite ? v : String(v) as Any
        case .float(let v): return v.isFinite ? Double(v) : String(v) as Any
        case .string(let v):
            if property?.isRawJSON == true, let nested = MappingEngine.rawJSONValue(field) { return nested.anyValue }
            return v
        case .data(let v):
            if property?.kind == .column, let nested = try? JSONSerialization.jsonObject(with: v, options: [.fragmentsAllowed]) { return nested }
            return v.base64EncodedString()
        case .date(let v): return ExactISO8601.string(from: v)
        case .uuid(let v): return v.uuidString
        case .decimal(let v): return v.description
        case .link(let bytes):
            // A link held in an AnyRealmValue names its table: `{"$class": …, "$key": …}`.
            if property?.kind == .mixed, let (table, key) = MixedLink.decode(bytes),
               let type = schema?.objectSchemas.first(where: { $0.tableNumber == table }) {
                return ["$class": type.className, "$key": PrimaryKeyValue(keyBytes: key).map { json($0.field) } ?? hex(key)]
            }
            return PrimaryKeyValue(keyBytes: bytes).map { json($0.field) } ?? hex(bytes)
        case .list(let items): return items.map { json($0, property: property, schema: schema) }
        case .objectId(let v): return v.stringValue
        case .map(let entries): return entries.mapValues { json($0, property: property, schema: schema) }
        case .embedded(let fields):
            // By the embedded type's property names (positions if the schema lacks it).
            guard let type = property?.objectClassName.flatMap({ schema?[$0] }) else { return fields.map { json($0, schema: schema) } }
            var object: [String: Any] = [:]
            for (index, nested) in type.properties.enumerated() where nested.kind != .linkingObjects {
                object[nested.name] = index < fields.count ? json(fields[index], property: nested, schema: schema) : NSNull()
            }
            return object
        }
    }
}

/// A type of the stored schema, as a string query reads it (no model class needed).
struct StoredQueryType: TextQueryType {
    let schema: ObjectSchema
    let table: UInt32
    let primaryKeyIndex: Int?
    let indexedProperties: [Int]
    var className: String { schema.className }

    init(_ schema: ObjectSchema) {
        self.schema = schema
        table = StoreLayout.objectTable(schema.tableNumber)
        primaryKeyIndex = schema.properties.firstIndex(where: \.isPrimaryKey)
        indexedProperties = schema.properties.indices.filter { schema.properties[$0].isIndexed }
    }
}

extension StoreInspector: TextQuerySource {
    func queryType(named name: String) -> (any TextQueryType)? { schema[name].map(StoredQueryType.init) }

    func queryRow(table: UInt32, key: [UInt8]) -> ((Int) -> FieldValue)? {
        guard let row = try? snapshot.storedValue(table: table, key: key) else { return nil }
        return { $0 == RowAccess.ownKey ? .link(key) : (try? RowFormat.field($0, of: row)) ?? .null }
    }

    func queryBacklinks(origin: any TextQueryType, property: Int, target: [UInt8]) -> [[UInt8]] {
        let candidates = (try? SecondaryIndex.lookup(table: StoreLayout.indexTable(origin.schema.tableNumber, property: property),
                                                     value: .link(target)) { table, key in try snapshot.get(table: table, key: key) }) ?? []
        return Backlinks.confirmed(candidates, origin: origin, property: property, target: target, source: self)
    }
}
