// StoreImporter: writes JSON objects into a store through the schema stored in it, without
// the app's model classes — what `strata import` uses. It reads every form `strata export`
// writes (StoreImporter+Document.swift) and its values (dates ISO 8601, data base64,
// decimals as text, links as the target's primary key, JSON columns as nested JSON),
// upserts by primary key (keys a JSON object leaves out keep their stored values) and
// writes everything in one transaction, secondary indexes included: an error anywhere
// writes nothing and names the JSON path.

import Foundation

/// Imports JSON objects into a store by its stored schema.
///
/// ```swift
/// let store = try Store(directory: url)
/// let report = try StoreImporter(store: store)?.importObjects(ofType: "User", from: data)
/// let reports = try StoreImporter(store: store)?.importObjects(from: exported)   // every type
/// ```
public struct StoreImporter {
    /// The stored schema.
    public let schema: Schema
    private let store: Store

    /// What an import did to the objects of one type.
    public struct Report: Sendable, Equatable {
        /// Objects that did not exist before.
        public var inserted: Int = 0
        /// Existing objects whose stored values changed.
        public var updated: Int = 0
        /// Existing objects the JSON left as they were.
        public var unchanged: Int = 0
        /// Keys of the JSON objects that name no property (ignored, as RealmCoder ignores
        /// them), by the class whose objects held them: this type, or an embedded type.
        public var ignoredKeys: [String: Set<String>] = [:]

        fileprivate mutating func count(_ outcome: Writer.Outcome) {
            switch outcome {
            case .inserted: inserted += 1
            case .updated: updated += 1
            case .unchanged: unchanged += 1
            }
        }
    }

    /// How an import reads the keys of JSON objects.
    public struct Options: Sendable {
        /// The JSON key of each property that is not the property's name, as RealmCoder's
        /// `keyStrategy`: `.convertFromSnakeCase` reads `created_at` into `createdAt`.
        public var keyStrategy: JSONKeyStrategy
        /// Whether a key that names no property is an error naming its path (true) or is
        /// ignored and listed in ``Report/ignoredKeys`` (false), as RealmCoder ignores it.
        public var refusesUnknownKeys: Bool

        /// Options; by default keys are property names and other keys are ignored.
        public init(keyStrategy: JSONKeyStrategy = .useDefaultKeys, refusesUnknownKeys: Bool = false) {
            self.keyStrategy = keyStrategy
            self.refusesUnknownKeys = refusesUnknownKeys
        }
    }

    /// An importer for `store` (opened for writing), or nil when it holds no object schema.
    ///
    /// - Throws: ``RealmError/invalidSchema(_:)`` when the stored schema cannot be read.
    public init?(store: Store) throws {
        guard let schema = try SharedStore.loadSchema(store) else { return nil }
        self.schema = schema
        self.store = store
    }

    /// An importer for a new store (opened for writing) that takes `schema` — another
    /// store's, for a copy the app can open as its own (same types, properties and table
    /// numbers). The schema is written at once.
    ///
    /// - Throws: ``RealmError/invalidValue(_:)`` when `store` already holds a schema;
    ///   ``RealmError/invalidSchema(_:)`` when `schema` breaks a rule of ``Schema/validate()``;
    ///   ``RealmError/storage(_:)``.
    public init(newStore store: Store, schema: Schema) throws {
        if try SharedStore.loadSchema(store) != nil {
            throw RealmError.invalidValue("the store at \(store.directory.path) already holds objects' schema; import into it without a new schema")
        }
        do {
            try schema.validate()
        } catch let error as SchemaError {
            throw RealmError.invalidSchema(error.reason)
        }
        do {
            try store.write { try SharedStore.writeSchema(schema, in: $0) }
        } catch {
            throw RealmError.wrap(error)
        }
        self.schema = schema
        self.store = store
    }

    /// Imports the objects of `className` in `data` in one transaction: an array of them (or
    /// one), or any form ``importObjects(from:type:options:)`` reads, whose objects of other
    /// types are left out.
    ///
    /// - Throws: as ``importObjects(from:type:options:)``; ``RealmError/unknownType(_:)`` when
    ///   the store has no `className`.
    public func importObjects(ofType className: String, from data: Data, options: Options = Options()) throws -> Report {
        guard let type = schema[className] else { throw RealmError.unknownType(className) }
        if type.isEmbedded { throw Realm.embeddedAlone(className) }
        return try importObjects(from: data, type: className, onlyThatType: true, options: options)[className] ?? Report()
    }

    /// Imports every object in `data`, in any form `strata export` writes, in one transaction:
    ///
    /// - an array of objects, or one object (`strata query --json`);
    /// - export's JSON, `{"Owner": [objects], "Pet": [objects]}`;
    /// - NDJSON, one object a line (`export --format ndjson`, `dump --ndjson`).
    ///
    /// Each object's type is its `"_type"`, the envelope member holding it, or `type`. Links
    /// may name objects imported later in the same data (they are checked once everything is
    /// written), so the types can come in any order. Keys are read as `options` say: property
    /// names or RealmCoder's key strategy; keys naming no property are ignored (as RealmCoder
    /// ignores them) and reported, or refused.
    ///
    /// - Returns: what happened to each type's objects, by class name.
    /// - Throws: ``JSONMappingError`` naming the JSON path (for NDJSON, the line) of the first
    ///   problem: bad JSON, an object without a type, a value of the wrong type, a link to an
    ///   object that does not exist, a missing primary key, a key naming no property when
    ///   `options` refuse them; ``RealmError/storage(_:)``.
    ///   Nothing is written when anything throws.
    public func importObjects(from data: Data, type: String? = nil, options: Options = Options()) throws -> [String: Report] {
        try importObjects(from: data, type: type, onlyThatType: false, options: options)
    }

    private func importObjects(from data: Data, type: String?, onlyThatType: Bool, options: Options) throws -> [String: Report] {
        let entries = try entries(in: data, defaultType: type, onlyDefault: onlyThatType)
        var reports: [String: Report] = [:]
        do {
            try store.write { transaction in
                var writers: [String: Writer] = [:]
                for entry in entries {
                    let name = entry.type.className
                    var writer = writers.removeValue(forKey: name)
                        ?? Writer(schema: schema, type: entry.type, transaction: transaction, options: options)
                    let outcome = try writer.write(entry.object, path: entry.path)
                    writers[name] = writer
                    reports[name, default: Report()].count(outcome)
                }
                // Every object is written: a link must now lead to one.
                for writer in writers.values { try writer.checkLinks() }
                for (name, writer) in writers {
                    try writer.finish()
                    reports[name]?.ignoredKeys = writer.ignoredKeys
                }
            }
        } catch let error as JSONMappingError {
            throw error
        } catch let error as RealmError {
            throw error
        } catch {
            throw RealmError.wrap(error)
        }
        return reports
    }

    /// The rows of one import, written through one transaction.
    fileprivate struct Writer {
        let schema: Schema
        let type: ObjectSchema
        let transaction: Transaction
        let options: Options
        let table: UInt32
        /// The properties with an index table (secondary or inverse).
        let maintainedIndexes: [(property: Int, backlink: Bool)]
        var deltas: [UInt32: SecondaryIndex.Delta] = [:]
        /// The objects `deltas` holds changes of: a delta takes one change per object and
        /// value, so an object met again goes in after the changes so far are applied.
        var pendingObjects = Set<ObjectKey>()
        var nextHiddenID: Int64?
        /// Links to objects that did not exist when they were read: the data may hold them
        /// further on, so they are checked once everything is written.
        var unresolvedLinks: [(table: UInt32, key: [UInt8], path: String, target: String, primaryKey: PrimaryKeyValue)] = []
        /// Keys naming no property, by class (see ``Report/ignoredKeys``).
        var ignoredKeys: [String: Set<String>] = [:]

        enum Outcome { case inserted, updated, unchanged }

        init(schema: Schema, type: ObjectSchema, transaction: Transaction, options: Options) {
            self.schema = schema
            self.type = type
            self.transaction = transaction
            self.options = options
            table = StoreLayout.objectTable(type.tableNumber)
            maintainedIndexes = schema.maintainedIndexes(of: type)
        }

        mutating func write(_ json: JSONValue, path: String) throws -> Outcome {
            guard case .object(let members) = json else {
                throw JSONMappingError.unexpectedShape(path: path, expected: "an object of \(type.className)")
            }
            let values = try values(of: members, type: type, path: path)
            let key: [UInt8]
            if let index = type.properties.firstIndex(where: \.isPrimaryKey) {
                let property = type.properties[index]
                guard let given = values[index], given != .null || property.isOptional else {
                    throw JSONMappingError.unexpectedShape(path: path + "." + property.name, expected: "the primary key of \(type.className)")
                }
                let keyField = given == .null ? FieldValue.null : try field(given, property: property, path: path + "." + property.name)
                guard let primaryKey = PrimaryKeyValue(keyField: keyField, optional: property.isOptional) else {
                    throw JSONMappingError.unexpectedShape(path: path + "." + property.name, expected: "a primary key (an integer, a string or a UUID)")
                }
                key = primaryKey.keyBytes
            } else if let id = members["_id"], case .int(let number) = id {
                // Hidden ids count up from 1; the counter moves past an imported one, so the
                // app's next new object never takes (and replaces) it.
                guard number >= 1, number < .max else {
                    throw JSONMappingError.typeMismatch(path: path + "._id", expected: "a hidden object id from 1 to \(Int64.max - 1)", found: String(number))
                }
                key = PrimaryKeyValue.int(number).keyBytes
                nextHiddenID = max(try nextHiddenID ?? Migration.nextHiddenID(schema: type, transaction: transaction), number + 1)
            } else {
                let id = try nextHiddenID ?? Migration.nextHiddenID(schema: type, transaction: transaction)
                guard id < .max else { throw RealmError.invalidValue("\(type.className) has used every hidden object id") }
                nextHiddenID = id + 1
                key = PrimaryKeyValue.int(id).keyBytes
            }
            if !maintainedIndexes.isEmpty, !pendingObjects.insert(ObjectKey(key)).inserted {
                // The same object again in this import: its first version's index changes are
                // written first, so this version's are recorded against them (a delta that
                // added a value and then removed it kept it: the hash postings listed the
                // object under both values).
                for (table, delta) in deltas { try delta.apply(table: table, transaction: transaction) }
                deltas = [:]
                pendingObjects = [ObjectKey(key)]
            }
            let stored = try transaction.get(table: table, key: key)
            var fields: [FieldValue]
            if let stored {
                do {
                    fields = try RowFormat.fields(of: stored)
                } catch {
                    throw RealmError.invalidValue("\(type.className) \(PrimaryKeyValue(keyBytes: key)?.description ?? "?") is damaged in the store: \(error)")
                }
                if fields.count < type.properties.count { fields += Array(repeating: .null, count: type.properties.count - fields.count) }
            } else {
                fields = type.properties.map(FieldValue.zero)
            }
            let old = fields
            for (index, property) in type.properties.enumerated() {
                guard let value = values[index] else { continue }
                fields[index] = try field(value, property: property, path: path + "." + property.name)
            }
            let row = try RowFormat.encodeChecked(fields, of: "\(type.className) at \(path)")
            // "Changed" as the realm's commit defines it (nil: a new object).
            let modified = stored.map { RowFormat.modifiedFields(from: $0, to: row, propertyCount: fields.count) }
            if let modified, modified.isEmpty { return .unchanged }
            try transaction.put(table: table, key: key, value: row)
            for (index, backlink) in maintainedIndexes where modified?.contains(index) ?? true {
                deltas[StoreLayout.indexTable(type.tableNumber, property: index), default: SecondaryIndex.Delta()]
                    .record(key, old: stored == nil ? nil : old[index], new: fields[index], backlink: backlink)
            }
            return stored == nil ? .inserted : .updated
        }

        /// The value of each property of `type` (an object's, or an embedded object's) in
        /// `members`, by position (nil: absent), each found at its key as RealmCoder finds it:
        /// the key strategy's form of its name. Other keys (but `_id` and `_type`) are
        /// ignored and noted, or refused.
        private mutating func values(of members: [String: JSONValue], type: ObjectSchema, path: String) throws -> [JSONValue?] {
            let keys = type.properties.map { options.keyStrategy.key(for: $0.name) }
            let known = Set(keys)
            for name in members.keys.sorted() where !known.contains(name) && name != "_id" && name != "_type" {
                if options.refusesUnknownKeys {
                    throw JSONMappingError.unexpectedShape(path: path + "." + name, expected: "a key naming a property of \(type.className) (\(keys.joined(separator: ", ")))")
                }
                ignoredKeys[type.className, default: []].insert(name)
            }
            return keys.map { members[$0] }
        }

        /// Throws for the first link that leads to no object, now that the import is written.
        func checkLinks() throws {
            for link in unresolvedLinks where try transaction.get(table: link.table, key: link.key) == nil {
                throw JSONMappingError.unexpectedShape(path: link.path, expected: "the primary key of an existing \(link.target); there is no \(link.target) \(link.primaryKey) (in the store or the imported data)")
            }
        }

        func finish() throws {
            for (table, delta) in deltas { try delta.apply(table: table, transaction: transaction) }
            if let nextHiddenID {
                try transaction.put(table: StoreLayout.metadataTable, key: StoreLayout.nextIDKey(type.tableNumber),
                                    value: withUnsafeBytes(of: UInt64(bitPattern: nextHiddenID).littleEndian) { Array($0) })
            }
        }

        /// A JSON value as the stored field of `property`, in `strata export`'s format.
        mutating func field(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            if property.kind == .linkingObjects {
                throw Self.mismatch(value, path, "nothing: \(property.name) is linking objects, computed from the links to this object (leave it out)")
            }
            if property.isMap { return try mapField(value, property: property, path: path) }
            if property.isList { return try listField(value, property: property, path: path) }
            if value == .null {
                guard property.isOptional || [.object, .column, .embedded, .mixed].contains(property.kind) else {
                    throw Self.mismatch(value, path, property.typeDescription + ", not null")
                }
                return .null
            }
            switch property.kind {
            case .embedded: return try embeddedField(value, property: property, path: path)
            case .object: return try linkField(value, property: property, path: path)
            case .mixed: return try mixedField(value, property: property, path: path)
            case .string where property.isRawJSON:
                // As RealmCoder stores it (its JSON text), except a string that is no JSON
                // text itself: export's form of a raw property holding no JSON (such as its
                // empty default), stored back as that text so the round trip is exact.
                if case .string(let text) = value, (try? JSONValue(string: text)) == nil { return .string(text) }
                return .string(try MappingEngine.rawJSONText(value))
            case .column:
                guard property.objectClassName != nil else { throw Self.mismatch(value, path, "a custom column value") }
                // As the JSON front ends read it: a ColumnJSONCodable's nested JSON as its
                // bytes, a text or number column as that value.
                return try MappingEngine.columnField(value)
            default:
                return try Self.scalarField(value, property: property, path: path)
            }
        }

        private static func mismatch(_ value: JSONValue, _ path: String, _ expected: String) -> JSONMappingError {
            .typeMismatch(path: path, expected: expected, found: value.shortDescription)
        }

        /// A map from a JSON object (null: empty), Realm's key rule checked.
        private mutating func mapField(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            if value == .null { return .map([:]) }
            guard case .object(let members) = value else { throw Self.mismatch(value, path, "an object (\(property.typeDescription))") }
            var element = property
            element.isMap = false
            var entries: [String: FieldValue] = [:]
            for (key, item) in members {
                try MapKeyRule.checkJSON(key, path: path)
                if item == .null, !element.isOptional && element.kind != .mixed || element.kind == .object {
                    throw JSONMappingError.typeMismatch(path: "\(path).\(key)", expected: "a value of \(property.typeDescription), not null", found: "null")
                }
                entries[key] = try field(item, property: element, path: "\(path).\(key)")
            }
            return .map(entries)
        }

        /// A list or set from a JSON array (null: empty).
        private mutating func listField(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            if value == .null { return .list([]) }
            guard case .array(let elements) = value else { throw Self.mismatch(value, path, "an array (\(property.typeDescription))") }
            var element = property
            element.isList = false
            element.isSet = false
            let items = try elements.enumerated().map { index, item in
                // A list holds nil only when its elements are optional; a list of links (or
                // of embedded objects) never does.
                if item == .null, !element.isOptional && element.kind != .mixed || element.kind == .object || element.kind == .embedded {
                    throw JSONMappingError.typeMismatch(path: "\(path)[\(index)]", expected: "an element of \(property.typeDescription), not null", found: "null")
                }
                return try field(item, property: element, path: "\(path)[\(index)]")
            }
            return .list(property.isSet ? items.distinctSetMembers() : items)
        }

        /// An embedded object: its properties by name, the others at their zero values.
        private mutating func embeddedField(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            guard case .object(let members) = value else {
                throw Self.mismatch(value, path, "an object (an embedded \(property.objectClassName ?? "?"))")
            }
            guard let embedded = property.objectClassName.flatMap({ schema[$0] }), embedded.isEmbedded else {
                throw Self.mismatch(value, path, "an embedded object of a type the stored schema has")
            }
            var fields = embedded.properties.map(FieldValue.zero)
            for (index, item) in try values(of: members, type: embedded, path: path).enumerated() {
                guard let item else { continue }
                fields[index] = try field(item, property: embedded.properties[index], path: path + "." + embedded.properties[index].name)
            }
            return .embedded(fields)
        }

        /// An `AnyRealmValue` in export's format: a JSON scalar as its own kind, or a held
        /// object as `{"$class": "Type", "$key": primary key}` (the target must exist).
        private mutating func mixedField(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            switch value {
            case .null: return .null
            case .bool(let b): return .bool(b)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            case .string(let s): return .string(s)
            case .object(let members):
                guard members.count == 2, case .string(let className)? = members["$class"], let key = members["$key"],
                      let target = schema[className] else {
                    throw Self.mismatch(value, path, "a JSON scalar, or {\"$class\": a stored type, \"$key\": its primary key} (\(property.typeDescription))")
                }
                var link = PropertySchema(name: property.name, kind: .object)
                link.objectClassName = className
                guard case .link(let targetKey) = try linkField(key, property: link, path: path + ".$key") else { return .null }
                return .link(MixedLink.encode(table: target.tableNumber, key: targetKey))
            case .array:
                throw Self.mismatch(value, path, "a JSON scalar (\(property.typeDescription) holds no list)")
            }
        }

        /// A link, given as the target's primary key; the target must exist (stored, or
        /// written by this import: checked in ``checkLinks()``).
        private mutating func linkField(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            guard let targetName = property.objectClassName, let target = schema[targetName],
                  let targetKey = target.primaryKeyProperty else {
                throw Self.mismatch(value, path, "a link (the target type has no primary key, so it cannot be named in JSON)")
            }
            let linked = try field(value, property: PropertySchema(name: targetKey.name, kind: targetKey.kind, isOptional: false), path: path)
            guard let primaryKey = PrimaryKeyValue(field: linked) else { throw Self.mismatch(value, path, "the primary key of a \(targetName)") }
            let targetTable = StoreLayout.objectTable(target.tableNumber)
            if try transaction.get(table: targetTable, key: primaryKey.keyBytes) == nil {
                unresolvedLinks.append((targetTable, primaryKey.keyBytes, path, targetName, primaryKey))
            }
            return .link(primaryKey.keyBytes)
        }

        /// A scalar in export's format: numbers as JSON numbers, decimals also as strings,
        /// data as base64, dates as ISO 8601 or epoch seconds, UUIDs and ObjectIds as text.
        private static func scalarField(_ value: JSONValue, property: PropertySchema, path: String) throws -> FieldValue {
            switch (property.kind, value) {
            case (.objectId, .string(let s)):
                guard let id = try? ObjectId(string: s) else { throw mismatch(value, path, "an ObjectId (24 hexadecimal digits)") }
                return .objectId(id)
            case (.string, .string(let s)): return .string(s)
            case (.bool, .bool(let b)): return .bool(b)
            case (.int, .int(let i)), (.int64, .int(let i)), (.int8, .int(let i)), (.int16, .int(let i)), (.int32, .int(let i)):
                guard property.kind.fits(i) else { throw mismatch(value, path, "\(property.typeDescription) (\(i) does not fit)") }
                return .int(i)
            case (.double, .int(let i)): return .double(Double(i))
            case (.double, .double(let d)): return .double(d)
            case (.float, .int(let i)): return .float(Float(i))
            case (.float, .double(let d)): return .float(Float(d))
            case (.decimal, .string(let s)):
                guard let decimal = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")), !decimal.isNaN else { throw mismatch(value, path, "a decimal number") }
                return .decimal(decimal)
            case (.decimal, .int(let i)): return .decimal(Decimal(i))
            case (.decimal, .double(let d)):
                guard let decimal = Decimal(converting: d) else { throw mismatch(value, path, "a decimal number (\(Decimal.conversionRange))") }
                return .decimal(decimal)
            case (.data, .string(let s)):
                guard let data = Data(base64Encoded: s) else { throw mismatch(value, path, "base64 data") }
                return .data(data)
            case (.date, .string(let s)):
                guard let date = ExactISO8601.date(from: s) else { throw mismatch(value, path, "an ISO 8601 date") }
                return .date(date)
            case (.date, .int(let i)): return .date(Date(timeIntervalSince1970: Double(i)))
            case (.date, .double(let d)): return .date(Date(timeIntervalSince1970: d))
            case (.uuid, .string(let s)):
                guard let uuid = UUID(uuidString: s) else { throw mismatch(value, path, "a UUID") }
                return .uuid(uuid)
            default:
                throw mismatch(value, path, property.typeDescription)
            }
        }
    }
}
