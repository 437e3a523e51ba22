// MappingEngine: JSON into objects and objects into JSON, for every front end. Decoding
// first reads the whole payload into drafts (checking every value, merging duplicates
// of one primary key), then writes all of them in one transaction: an error anywhere
// writes nothing. Existing objects are found through the in-memory primary-key index.

import Foundation

/// What to do with JSON null for a property that cannot be nil.
public enum NullPolicy: Sendable {
    /// Throw ``JSONMappingError/nullValue(path:property:)``.
    case error
    /// Leave the property as it is.
    case skip
}

/// What to do with a JSON value of the wrong type.
public enum TypeMismatchPolicy: Sendable {
    /// Throw ``JSONMappingError/typeMismatch(path:expected:found:)``.
    case error
    /// Convert where it is unambiguous (numeric strings, 0/1 booleans, ISO-8601 and epoch dates),
    /// otherwise throw.
    case coerce
    /// Leave the property as it is.
    case skip
}

/// Options every front end passes to the engine.
struct MappingOptions {
    var dateFormatter: DateFormatter?
    var nullPolicy: NullPolicy = .error
    var typeMismatchPolicy: TypeMismatchPolicy = .error
}

/// Where a draft's JSON sits in the payload: a root (with an optional array position) or a
/// member of another draft. Turned into text ("statuses[3].user") only for an error, so
/// reading a payload formats no paths. Locations live in the engine's table and name their
/// parent by position there (drafts never point back up to their parents).
struct DraftLocation {
    /// The parent's location in the engine's table (-1: a root).
    var parent: Int
    /// The member's key path under the parent, or the root's prefix (an envelope key).
    var member: String
    /// The position in an array (-1: not an array element).
    var position: Int

    /// A root location: `prefix[position]`, `[position]`, or the whole payload.
    static func root(_ prefix: String = "", position: Int? = nil) -> DraftLocation {
        DraftLocation(parent: -1, member: prefix, position: position ?? -1)
    }
}

/// Every draft's location, by position. A class, so the error-path closures of `collect`
/// hold this table rather than a copy of the whole engine.
final class DraftLocations {
    private(set) var entries: [DraftLocation] = []

    func removeAll() { entries = [] }

    /// Adds a location; returns its position.
    func append(_ location: DraftLocation) -> Int {
        entries.append(location)
        return entries.count - 1
    }

    /// The location as errors name it ("" for the whole payload).
    func path(of location: DraftLocation) -> String {
        var text = location.member
        if location.parent >= 0 {
            let parentText = path(of: entries[location.parent])
            if !parentText.isEmpty { text = parentText + "." + text }
        }
        if location.position >= 0 { text += "[\(location.position)]" }
        return text
    }
}

/// One object of a payload, read but not yet written.
final class Draft {
    let mapping: ObjectMapping
    /// Where the object's JSON was: a position in the engine's location table.
    let location: Int
    /// Property values by schema position; nil: not in the JSON (left as it is).
    var fields: [FieldValue?]
    var links: [Int: Link] = [:]
    /// The identity value (primary key, or the mapping's identity property).
    var identity: FieldValue?
    /// The engine key once written.
    var key: [UInt8]?
    /// Reached only through weak relationships: bound if it exists, never written.
    var onlyWeak = false

    enum Link {
        case one(Draft?)
        case many([Draft])
    }

    init(mapping: ObjectMapping, location: Int) {
        self.mapping = mapping
        self.location = location
        fields = Array(repeating: nil, count: mapping.info.schema.properties.count)
    }
}

/// One of FastEasyMapping's delegate events, recorded while reading a payload and handed to
/// the delegate once the drafts are written (so `didMapObject` has an object).
enum MappingEvent {
    /// Before an object's properties; its draft is filled in once read (nil: it failed).
    case willObject(JSONValue, ObjectMapping, Draft?)
    case didObject(JSONValue, ObjectMapping, Draft)
    case willCollection(JSONValue, ObjectMapping)
    case didCollection(JSONValue, ObjectMapping, [Draft])
}

struct MappingEngine {
    /// The realm decoding writes into (encoding unmanaged objects needs none).
    let realm: Realm?
    var options: MappingOptions
    /// FastEasyMapping's delegate events in its order — each object's `willObject`, its
    /// relationships' objects and collections, then its `didObject` — when the caller
    /// records them (nil: not recorded, and nothing is spent on them).
    var events: [MappingEvent]?

    /// Drafts by type and identity, so a payload's duplicates become one object.
    private var known: [ObjectIdentifier: [FieldValue: Draft]] = [:]
    /// How many root objects the payload holds (sizes the identity tables up front: a type
    /// first met as n elements of a list is expected about n times per root).
    var expectedCount = 0
    /// Every draft's location (see ``DraftLocation``).
    private let locations = DraftLocations()
    /// Every draft, children before parents (the order they are written in).
    private(set) var drafts: [Draft] = []

    /// The date formatter's pattern, when a fixed-width one this engine parses itself.
    private let datePattern: FixedDatePattern?

    init(realm: Realm?, options: MappingOptions) {
        self.realm = realm
        self.options = options
        datePattern = options.dateFormatter.flatMap { FixedDatePattern($0) }
    }

    // MARK: Reading JSON into drafts

    /// Reads one object's representation.
    mutating func collect(_ json: JSONValue, mapping: ObjectMapping, at location: DraftLocation, weak: Bool = false,
                          perRoot: Int = 1) throws -> Draft {
        let representation = json
        let willAt = events?.count
        events?.append(.willObject(representation, mapping, nil))
        /// Records the object's `didObject` (and fills in its `willObject`).
        func mapped(_ result: Draft) -> Draft {
            if let willAt {
                events![willAt] = .willObject(representation, mapping, result)
                events!.append(.didObject(representation, mapping, result))
            }
            return result
        }
        if location.parent < 0, realm != nil, mapping.info.schema.isEmbedded {
            // An embedded object exists only inside its parent.
            throw Realm.embeddedAlone(mapping.className)
        }
        let json = mapping.preprocess?(json) ?? json
        let draft = Draft(mapping: mapping, location: locations.append(location))
        // Error paths below capture this table, not `self` (which would copy the engine).
        let locations = self.locations
        draft.onlyWeak = weak
        let schema = mapping.info.schema
        for rule in mapping.rules {
            let value: JSONValue
            if let keyPath = rule.keyPath {
                guard let found = Self.value(in: json, at: keyPath) else { continue }   // absent: left as it is
                value = found
            } else {
                value = json
            }
            let property = schema.properties[rule.index]
            // Built only when needed (an error, a child's path): most fields never need it.
            func location() -> String {
                locations.path(of: DraftLocation(parent: draft.location, member: rule.pathText, position: -1))
            }
            switch rule.kind {
            case .attribute(let transformer):
                if let field = try field(from: value, property: property, transformer: transformer, path: location()) {
                    draft.fields[rule.index] = field
                }
            case .rawJSON:
                if value == .null {
                    if property.isOptional { draft.fields[rule.index] = .null }
                    else if options.nullPolicy == .error { throw JSONMappingError.nullValue(path: location(), property: property.name) }
                } else {
                    draft.fields[rule.index] = .string(try Self.rawJSONText(value))
                }
            case .relationship(let child, _, let weak):
                try collectLinks(value, rule: rule, child: child, weak: weak, into: draft, perRoot: perRoot, path: location())
            }
        }
        if let earlier = try identify(draft, weak: weak, perRoot: perRoot) { return mapped(earlier) }
        drafts.append(draft)
        return mapped(draft)
    }

    /// A relationship's drafts: each element of a JSON array (to-many), or the one object
    /// (to-one); null clears the link.
    private mutating func collectLinks(_ value: JSONValue, rule: ObjectMapping.Rule, child: ObjectMapping, weak: Bool, into draft: Draft,
                                       perRoot: Int, path: @autoclosure () -> String) throws {
        let property = draft.mapping.info.schema.properties[rule.index]
        guard property.isList else {
            draft.links[rule.index] = value == .null ? .one(nil)
                : .one(try collect(value, mapping: child, at: DraftLocation(parent: draft.location, member: rule.pathText, position: -1),
                                   weak: weak, perRoot: perRoot))
            return
        }
        switch value {
        case .null: draft.links[rule.index] = .many([])
        case .array(let elements):
            events?.append(.willCollection(value, child))
            var children: [Draft] = []
            for (position, element) in elements.enumerated() {
                children.append(try collect(element, mapping: child,
                                           at: DraftLocation(parent: draft.location, member: rule.pathText, position: position),
                                           weak: weak, perRoot: min(perRoot * elements.count, 1 << 20)))
            }
            events?.append(.didCollection(value, child, children))
            draft.links[rule.index] = .many(children)
        default:
            _ = try mismatch(path: path(), expected: "an array of \(child.className)", found: value)
        }
    }

    /// Gives a draft its identity (its mapping's primary key or identity property, which it
    /// must have) and returns the draft already read for that identity in this payload, if
    /// any, with this one's values merged into it: the same object twice is one object,
    /// later values winning.
    private mutating func identify(_ draft: Draft, weak: Bool, perRoot: Int) throws -> Draft? {
        let mapping = draft.mapping
        guard let identityIndex = mapping.identityIndex else { return nil }
        // nil identifies an object only through an optional primary key.
        let identityProperty = mapping.info.schema.properties[identityIndex]
        guard let identity = draft.fields[identityIndex], identity != .null || identityProperty.isPrimaryKey && identityProperty.isOptional else {
            let path = path(of: draft)
            throw JSONMappingError.missingPrimaryKey(path: path.isEmpty ? "$" : path, type: mapping.className,
                                                     property: mapping.info.schema.properties[identityIndex].name)
        }
        draft.identity = identity
        let type = ObjectIdentifier(mapping.type)
        if let earlier = known[type]?[identity] {
            if !weak {
                for (index, field) in draft.fields.enumerated() where field != nil { earlier.fields[index] = field }
                earlier.links.merge(draft.links) { $1 }
            }
            earlier.onlyWeak = earlier.onlyWeak && weak
            return earlier
        }
        // At most 2^18 slots up front: a guess must not cost more than the payload.
        known[type, default: Self.table(capacity: min(expectedCount * perRoot, 1 << 18))][identity] = draft
        return nil
    }

    /// Reads the list in `data` — the top-level array, or the array under the member
    /// `envelope` of a top-level object — into root drafts, one element at a time as the
    /// reader hands it over, so the whole document never exists in memory. Nothing is
    /// written. Error paths name elements `prefix[i]`.
    ///
    /// - Returns: the root drafts in order, or nil when there is no such array.
    /// - Throws: ``JSONMappingError/invalidJSON(_:)`` for malformed JSON anywhere in `data`;
    ///   mapping errors; with `objectsOnly`, ``JSONMappingError/unexpectedShape(path:expected:)``
    ///   for an element that is not an object.
    mutating func collectList(from data: Data, envelope: String?, mapping: ObjectMapping, prefix: String,
                              objectsOnly: Bool) throws -> [Draft]? {
        var roots: [Draft] = []
        let (realm, options) = (self.realm, self.options)
        let streamed: Bool
        do {
            streamed = try data.withUnsafeBytes { bytes in
                try JSONReader.streamArray(bytes, envelope: envelope, restart: {
                    // The envelope appeared again: the last one wins, as in a parsed document.
                    self = MappingEngine(realm: realm, options: options)
                    roots = []
                }) { index, element, size in
                    if index == 0 {
                        // Sizes the identity tables: about as many roots as the first one's size fits.
                        expectedCount = max(1, bytes.count / max(size, 1))
                        // Capped: a tiny first element must not reserve room for millions.
                        roots.reserveCapacity(min(expectedCount, 1 << 16))
                    }
                    if objectsOnly {
                        guard case .object = element else {
                            throw JSONMappingError.unexpectedShape(path: "\(prefix)[\(index)]", expected: "an object")
                        }
                    }
                    roots.append(try collect(element, mapping: mapping, at: .root(prefix, position: index)))
                }
            }
        } catch let error as JSONError {
            throw JSONMappingError.invalidJSON(error)
        }
        return streamed ? roots : nil
    }

    /// Where `draft`'s JSON was, as errors name it ("" for the whole payload).
    func path(of draft: Draft) -> String { locations.path(of: locations.entries[draft.location]) }

    private static func table(capacity: Int) -> [FieldValue: Draft] {
        var table: [FieldValue: Draft] = [:]
        table.reserveCapacity(capacity)
        return table
    }

    static func value(in json: JSONValue, at path: [String]) -> JSONValue? {
        var current = json
        for component in path {
            switch current {
            case .object(let members):
                guard let next = members[component] else { return nil }
                current = next
            case .array(let elements):
                guard let index = Int(component), elements.indices.contains(index) else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    /// Reports a mismatch per the policy: throws, or returns true to skip.
    private func mismatch(path: @autoclosure () -> String, expected: @autoclosure () -> String, found: JSONValue) throws -> Bool {
        if options.typeMismatchPolicy == .skip { return true }
        throw JSONMappingError.typeMismatch(path: path(), expected: expected(), found: found.shortDescription)
    }

    /// The field for a JSON value, or nil to leave the property alone.
    private func field(from value: JSONValue, property: PropertySchema, transformer: JSONValueTransformer?,
                       path: @autoclosure () -> String) throws -> FieldValue? {
        if let transformer { return try transformedField(value, property: property, transformer: transformer, path: path()) }
        if property.isMap { return try mapField(value, property: property, path: path()) }
        if value == .null {
            // An AnyRealmValue's null is its `.none`, in a list as anywhere.
            if property.isOptional || property.isList || property.kind == .mixed { return property.isList ? .list([]) : .null }
            if options.nullPolicy == .skip { return nil }
            throw JSONMappingError.nullValue(path: path(), property: property.name)
        }
        if property.isList { return try listField(value, property: property, path: path()) }
        return try scalarField(value, property: property, path: path())
    }

    /// A value through a Realm+JSON transformer, then as a plain value of the property.
    private func transformedField(_ value: JSONValue, property: PropertySchema, transformer: JSONValueTransformer,
                                  path: @autoclosure () -> String) throws -> FieldValue? {
        let converted: Any?
        do {
            converted = try transformer.forward(value)
        } catch JSONMappingError.typeMismatch(let at, let expected, let found) where at.isEmpty {
            // Ready-made transformers do not know where they are: name the path here.
            if options.typeMismatchPolicy == .skip { return nil }
            throw JSONMappingError.typeMismatch(path: path(), expected: expected, found: found)
        }
        if let json = converted as? JSONValue { return try field(from: json, property: property, transformer: nil, path: path()) }
        do {
            guard let realm else { return try FieldValue.converting(converted, to: property, context: path()) }
            return try realm.field(for: converted, property: property, context: path())
        } catch {
            if options.typeMismatchPolicy == .skip { return nil }
            throw error
        }
    }

    /// A map property from a JSON object (null: empty), Realm's key rule checked.
    private func mapField(_ value: JSONValue, property: PropertySchema, path: @autoclosure () -> String) throws -> FieldValue? {
        if value == .null { return .map([:]) }
        guard case .object(let members) = value else {
            return try mismatch(path: path(), expected: "an object (\(property.typeDescription))", found: value) ? nil : nil
        }
        var element = property
        element.isMap = false
        var entries: [String: FieldValue] = [:]
        for (key, item) in members {
            try MapKeyRule.checkJSON(key, path: path())
            guard let field = try field(from: item, property: element, transformer: nil, path: "\(path()).\(key)") else { continue }
            entries[key] = field
        }
        return .map(entries)
    }

    /// A list or set property from a JSON array (a set keeps distinct elements).
    private func listField(_ value: JSONValue, property: PropertySchema, path: @autoclosure () -> String) throws -> FieldValue? {
        guard case .array(let elements) = value else {
            return try mismatch(path: path(), expected: "an array", found: value) ? nil : nil
        }
        var element = property
        element.isList = false
        element.isSet = false
        var items: [FieldValue] = []
        for (position, item) in elements.enumerated() {
            guard let field = try field(from: item, property: element, transformer: nil, path: "\(path())[\(position)]") else { continue }
            items.append(field)
        }
        return .list(property.isSet ? items.distinctSetMembers() : items)
    }

    /// One value of a property's scalar kind (not null), converted as the type-mismatch
    /// policy allows.
    private func scalarField(_ value: JSONValue, property: PropertySchema, path: @autoclosure () -> String) throws -> FieldValue? {
        let coerce = options.typeMismatchPolicy == .coerce
        func fail() throws -> FieldValue? {
            try mismatch(path: path(), expected: Self.expectedName(property), found: value) ? nil : nil
        }
        switch property.kind {
        case .mixed:
            // Any JSON scalar, as its own kind: integral numbers as integers.
            switch value {
            case .bool(let b): return .bool(b)
            case .string(let s): return .string(s)
            case .int(let i): return .int(i)
            case .double(let d): return .double(d)
            default: return try fail()
            }
        case .bool:
            return try Self.boolField(value, coerce: coerce) ?? fail()
        case .int, .int8, .int16, .int32, .int64:
            return try integerField(value, property: property, coerce: coerce, path: path()) ?? fail()
        case .double, .float:
            return try Self.floatingField(value, property: property, coerce: coerce) ?? fail()
        case .string:
            return try Self.stringField(value, coerce: coerce) ?? fail()
        case .decimal:
            return try decimalField(value, property: property, path: path()) ?? fail()
        case .uuid:
            if case .string(let s) = value, let uuid = UUID(uuidString: s) { return .uuid(uuid) }
            return try fail()
        case .data:
            if case .string(let s) = value, let data = Data(base64Encoded: s) { return .data(data) }
            return try fail()
        case .date:
            return try dateField(value, coerce: coerce) ?? fail()
        case .column:
            return try Self.columnField(value)
        case .objectId:
            if case .string(let s) = value, let id = try? ObjectId(string: s) { return .objectId(id) }
            return try fail()
        case .object, .embedded, .linkingObjects:
            return try fail()
        }
    }

    /// A Bool property's value: a JSON boolean, or under `.coerce` 0/1 or "true"/"false" (any
    /// case); nil otherwise.
    private static func boolField(_ value: JSONValue, coerce: Bool) -> FieldValue? {
        switch value {
        case .bool(let b): return .bool(b)
        case .int(let i) where coerce && (i == 0 || i == 1): return .bool(i == 1)
        case .string(let s) where coerce && ["true", "false"].contains(s.lowercased()): return .bool(s.lowercased() == "true")
        default: return nil
        }
    }

    /// A Double or Float property's value from a JSON number, or under `.coerce` a numeric
    /// string; nil otherwise.
    private static func floatingField(_ value: JSONValue, property: PropertySchema, coerce: Bool) -> FieldValue? {
        var number: Double?
        switch value {
        case .int(let i): number = Double(i)
        case .double(let d): number = d
        case .string(let s) where coerce: number = Double(s.trimmingCharacters(in: .whitespaces))
        default: number = nil
        }
        guard let number else { return nil }
        return property.kind == .float ? .float(Float(number)) : .double(number)
    }

    /// A String property's value from a JSON string or integer, or under `.coerce` a double;
    /// nil otherwise.
    private static func stringField(_ value: JSONValue, coerce: Bool) -> FieldValue? {
        switch value {
        case .string(let s): return .string(s)
        // Lossless, so not only under `.coerce`: RealmCoder's own example maps `"id": 3`
        // to `objId: String` with default options.
        case .int(let i): return .string(String(i))
        case .double(let d) where coerce: return .string(String(d))
        default: return nil
        }
    }

    /// A column property's value: a ColumnJSONCodable property reads the nested JSON (an
    /// object or array, as data); other column types a scalar.
    static func columnField(_ value: JSONValue) throws -> FieldValue {
        switch value {
        case .object, .array: return .data(try value.data())
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .bool(let b): return .int(b ? 1 : 0)
        case .null: return .null
        }
    }

    /// An integer property's value, nil if the JSON is no integer (under the policy); out of
    /// the property's width is an error whatever the policy.
    private func integerField(_ value: JSONValue, property: PropertySchema, coerce: Bool,
                              path: @autoclosure () -> String) throws -> FieldValue? {
        let number: Int64?
        switch value {
        case .int(let i): number = i
        case .double(let d) where coerce: number = Int64(exactly: d)
        case .string(let s) where coerce: number = Int64(s.trimmingCharacters(in: .whitespaces))
        case .bool(let b) where coerce: number = b ? 1 : 0
        default: number = nil
        }
        guard let number else { return nil }
        guard property.kind.fits(number) else {
            throw JSONMappingError.typeMismatch(path: path(), expected: Self.expectedName(property), found: "\(number), out of range")
        }
        return .int(number)
    }

    /// A decimal property's value from a number or a numeric string; nil for anything else.
    private func decimalField(_ value: JSONValue, property: PropertySchema, path: @autoclosure () -> String) throws -> FieldValue? {
        switch value {
        case .int(let i): return .decimal(Decimal(i))
        case .double(let d):
            if let decimal = Decimal(string: String(d), locale: nil) ?? Decimal(converting: d), !decimal.isNaN { return .decimal(decimal) }
            throw JSONMappingError.typeMismatch(path: path(), expected: Self.expectedName(property), found: "\(d), out of range")
        case .string(let s):
            if let d = Decimal(string: s, locale: nil), !d.isNaN { return .decimal(d) }
            return nil
        default: return nil
        }
    }

    /// A date from a string in the coder's format (ISO 8601 without one), or under
    /// `.coerce` from ISO 8601 text or epoch seconds; nil otherwise.
    private func dateField(_ value: JSONValue, coerce: Bool) -> FieldValue? {
        if case .string(let s) = value {
            if let formatter = options.dateFormatter {
                if let date = datePattern?.date(from: s) ?? formatter.date(from: s) { return .date(date) }
            } else if let date = Self.iso8601(s) {
                return .date(date)
            }
            if coerce, let date = Self.iso8601(s) { return .date(date) }
        }
        if coerce {
            if case .int(let i) = value { return .date(Date(timeIntervalSince1970: Double(i))) }
            if case .double(let d) = value { return .date(Date(timeIntervalSince1970: d)) }
        }
        return nil
    }

    /// What a raw JSON property (`realmCodableRawJsonSubstrings`) stores for a JSON value:
    /// its JSON text, quotes included for a string, so it goes back out as the same JSON
    /// type (`"42"` stays a string).
    static func rawJSONText(_ value: JSONValue) throws -> String {
        String(decoding: try value.data(), as: UTF8.self)
    }

    /// The JSON a raw JSON property's stored text holds; nil when it holds none (the app
    /// set text that is not JSON), which is then written as a string.
    static func rawJSONValue(_ field: FieldValue) -> JSONValue? {
        guard case .string(let text) = field else { return nil }
        return try? JSONValue(string: text)
    }

    static func expectedName(_ property: PropertySchema) -> String {
        switch property.kind {
        case .bool: return "Bool"
        case .int, .int8, .int16, .int32, .int64: return property.kind == .int ? "Int" : property.kind.rawValue.capitalized
        case .double: return "Double"
        case .float: return "Float"
        case .string: return "String"
        case .data: return "base64 Data"
        case .date: return "a date"
        case .uuid: return "a UUID string"
        case .decimal: return "a decimal"
        case .column: return property.objectClassName ?? "a column value"
        case .objectId: return "an ObjectId (24 hexadecimal digits)"
        case .object, .embedded: return property.objectClassName ?? "an object"
        case .linkingObjects: return "nothing (linking objects are read-only)"
        case .mixed: return "a JSON scalar (an AnyRealmValue)"
        }
    }

    private static let isoFull = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let isoPlain = Date.ISO8601FormatStyle()

    static func iso8601(_ text: String) -> Date? {
        (try? isoPlain.parse(text)) ?? (try? isoFull.parse(text))
    }

    // MARK: Writing drafts

    /// Writes every draft (inside the realm's open write); ``object(for:)`` then gives the
    /// objects the caller returns (only those are built).
    mutating func apply() throws {
        guard let realm, let write = realm.writeState else { throw RealmError.notInWriteTransaction }
        // A payload that fails while being written leaves nothing of itself in the write,
        // even when the caller's write goes on and commits.
        try realm.atomically(write) { try applyDrafts(realm: realm, write: write) }
        // Everything is written: only the drafts the caller holds (for their objects) are still
        // needed, so the rest goes before the commit builds its change sets.
        known = [:]
        drafts = []
        locations.removeAll()
    }

    private mutating func applyDrafts(realm: Realm, write: WriteState) throws {
        write.rows.reserveCapacity(write.rows.count + drafts.count)
        let merged = try mergeTargets(realm: realm)
        // 1. Every draft's key first, so links can be written in any order (a payload's
        //    duplicates may link children read after the draft they merge into).
        var byIdentity: [String: [FieldValue: [UInt8]]] = [:]
        for draft in drafts {
            // Embedded objects have no key: they are written inside their parent's row.
            if draft.mapping.info.schema.isEmbedded { continue }
            draft.key = try merged[ObjectIdentifier(draft)] ?? key(of: draft, byIdentity: &byIdentity, realm: realm, write: write)
        }
        for draft in drafts {
            // Named only by weak relationships: bound to if it exists, never created.
            guard !draft.onlyWeak, let key = draft.key else { continue }
            try writeDraft(draft, key: key, realm: realm, write: write)
        }
    }

    /// objectMerge: a linked object without identity merges into the object the parent
    /// already links to, so it takes that object's key. By draft.
    private func mergeTargets(realm: Realm) throws -> [ObjectIdentifier: [UInt8]] {
        var targets: [ObjectIdentifier: [UInt8]] = [:]
        for draft in drafts {
            let bound = try realm.boundType(for: draft.mapping.type)
            guard let identity = draft.identity, draft.mapping.identityIndex == bound.primaryKeyIndex,
                  let parentKey = PrimaryKeyValue(keyField: identity, optional: bound.primaryKeyIndex.map { bound.schema.properties[$0].isOptional } ?? false)?.keyBytes
            else { continue }
            for (index, link) in draft.links {
                guard case .one(let child?) = link, child.identity == nil,
                      case .relationship(_, .objectMerge, _)? = draft.mapping.rules.first(where: { $0.index == index })?.kind,
                      case .link(let current)? = realm.currentField(bound: bound, key: parentKey, index: index) else { continue }
                targets[ObjectIdentifier(child)] = current
            }
        }
        return targets
    }

    /// A draft's engine key: its primary key, the key of the stored object with the same
    /// identity value (a mapping whose identity is not the primary key: one scan per type
    /// per payload, in `byIdentity`), or a new hidden id.
    private func key(of draft: Draft, byIdentity: inout [String: [FieldValue: [UInt8]]], realm: Realm,
                     write: WriteState) throws -> [UInt8] {
        let mapping = draft.mapping
        let bound = try realm.boundType(for: mapping.type)
        if let identity = draft.identity, mapping.identityIndex == bound.primaryKeyIndex {
            guard let primaryKey = PrimaryKeyValue(keyField: identity, optional: bound.primaryKeyIndex.map { bound.schema.properties[$0].isOptional } ?? false) else {
                throw JSONMappingError.typeMismatch(path: path(of: draft), expected: "a primary key", found: "\(identity)")
            }
            return primaryKey.keyBytes
        }
        if let identity = draft.identity, let index = mapping.identityIndex {
            if byIdentity[mapping.className] == nil {
                var table: [FieldValue: [UInt8]] = [:]
                for object in Results<Object>(realm: realm, bound: bound) {
                    if let state = object._state { table[state.field(index)] = state.key }
                }
                byIdentity[mapping.className] = table
            }
            if let existing = byIdentity[mapping.className]![identity] { return existing }
            let key = PrimaryKeyValue.int(try write.nextHiddenID(bound)).keyBytes
            byIdentity[mapping.className]![identity] = key
            return key
        }
        if let primaryKeyIndex = bound.primaryKeyIndex {
            throw JSONMappingError.missingPrimaryKey(path: path(of: draft), type: mapping.className,
                                                     property: bound.schema.properties[primaryKeyIndex].name)
        }
        return PrimaryKeyValue.int(try write.nextHiddenID(bound)).keyBytes
    }

    /// Steps 2 and 3 for one draft: its links per relationship policy (custom policies once
    /// the row is written), then the upsert of the properties present; everything else
    /// keeps its value.
    private func writeDraft(_ draft: Draft, key: [UInt8], realm: Realm, write: WriteState) throws {
        let mapping = draft.mapping
        let bound = try realm.boundType(for: mapping.type)
        var assignments = draft.fields
        var customLinks: [(index: Int, link: Draft.Link, weak: Bool, rule: CustomAssignment)] = []
        for (index, link) in draft.links {
            guard case .relationship(_, let policy, let weak) = mapping.rules.first(where: { $0.index == index })?.kind else { continue }
            if bound.schema.properties[index].kind == .embedded {
                assignments[index] = try embeddedField(link, realm: realm)
            } else if case .customized(let rule) = policy {
                customLinks.append((index, link, weak, rule))
            } else if let field = try linkField(link, policy: policy, weak: weak, index: index, bound: bound, key: key, realm: realm) {
                assignments[index] = field
            }
        }
        try realm.importRow(bound: bound, key: key, assignments: assignments, write: write)
        for custom in customLinks {
            try assignCustom(custom.rule, link: custom.link, weak: custom.weak, index: custom.index, bound: bound, key: key, realm: realm, write: write)
        }
        // Written: its values now live in the pending row, so the draft lets go of them.
        draft.fields = []
        draft.links = [:]
    }

    /// The field a to-one or to-many link property gets under `policy` (nil: leave it),
    /// deleting the objects a replace policy drops.
    private func linkField(_ link: Draft.Link, policy: AssignmentPolicy, weak: Bool, index: Int, bound: BoundType,
                           key: [UInt8], realm: Realm) throws -> FieldValue? {
        let property = bound.schema.properties[index]
        let current = realm.currentField(bound: bound, key: key, index: index)
        switch link {
        case .one(let child):
            guard let child else {
                if policy == .objectReplace, case .link(let old)? = current { try realm.deleteRow(boundFor: bound, index: index, key: old) }
                return .null
            }
            guard let childKey = child.key else { return nil }
            if weak, !realm.rowExists(linkProperty: property, key: childKey) { return nil }
            if policy == .objectReplace, case .link(let old)? = current, old != childKey {
                try realm.deleteRow(boundFor: bound, index: index, key: old)
            }
            return .link(childKey)
        case .many(let children):
            var keys: [[UInt8]] = children.compactMap(\.key)
            if weak { keys = keys.filter { realm.rowExists(linkProperty: property, key: $0) } }
            var existing: [[UInt8]] = []
            if case .list(let items)? = current {
                existing = items.compactMap { if case .link(let k) = $0 { return k } else { return nil } }
            }
            switch policy {
            case .collectionMerge:
                let present = Set(existing.map(ObjectKey.init))
                keys = existing + keys.filter { !present.contains(ObjectKey($0)) }
            case .collectionReplace:
                let kept = Set(keys.map(ObjectKey.init))
                for old in existing where !kept.contains(ObjectKey(old)) {
                    try realm.deleteRow(boundFor: bound, index: index, key: old)
                }
            default:
                break
            }
            return .list(keys.map(FieldValue.link))
        }
    }

    /// The field of an embedded property from its drafts: each embedded object's JSON
    /// values over its class's initial values (it is replaced whole, having no identity to
    /// merge into), its links as links, its embedded objects nested.
    private func embeddedField(_ link: Draft.Link, realm: Realm) throws -> FieldValue {
        func fields(_ draft: Draft) throws -> FieldValue {
            let bound = try realm.boundType(for: draft.mapping.type)
            var fields = bound.constantInitialFields ?? BoundType.initialFields(of: bound.info.type)
            for (index, field) in draft.fields.enumerated() where field != nil { fields[index] = field! }
            for (index, nested) in draft.links {
                if bound.schema.properties[index].kind == .embedded {
                    fields[index] = try embeddedField(nested, realm: realm)
                    continue
                }
                switch nested {
                case .one(let child): fields[index] = child?.key.map(FieldValue.link) ?? .null
                case .many(let children): fields[index] = .list(children.compactMap { $0.key.map(FieldValue.link) })
                }
            }
            return .embedded(fields)
        }
        switch link {
        case .one(let child): return try child.map(fields) ?? .null
        case .many(let children): return .list(try children.map(fields))
        }
    }

    /// A custom assignment policy: the block is given the objects related now and the JSON's
    /// ones (the row and its children are written), and its answer becomes the link or list.
    private func assignCustom(_ rule: CustomAssignment, link: Draft.Link, weak: Bool, index: Int, bound: BoundType,
                              key: [UInt8], realm: Realm, write: WriteState) throws {
        let property = bound.schema.properties[index]
        let name = "\(bound.schema.className).\(property.name)"
        guard let target = property.objectClassName.flatMap(realm.boundType(named:)),
              let destination = realm.object(bound: bound, key: key) else { return }
        var oldKeys: [[UInt8]] = []
        switch realm.currentField(bound: bound, key: key, index: index) {
        case .link(let old)?: oldKeys = [old]
        case .list(let items)?: oldKeys = items.compactMap { if case .link(let k) = $0 { return k } else { return nil } }
        default: break
        }
        var newKeys: [[UInt8]]
        switch link {
        case .one(let child): newKeys = child?.key.map { [$0] } ?? []
        case .many(let children): newKeys = children.compactMap(\.key)
        }
        if weak { newKeys = newKeys.filter { realm.rowExists(linkProperty: property, key: $0) } }
        let old = oldKeys.compactMap { realm.object(bound: target, key: $0) }
        let new = newKeys.compactMap { realm.object(bound: target, key: $0) }
        let chosen = try rule.block(old, new, RelationshipAssignmentContext(realm: realm, destinationObject: destination, property: property.name))
        var keys: [[UInt8]] = []
        for object in chosen {
            guard let state = object._state, state.realm === realm, !state.isInvalidated else {
                throw RealmError.invalidValue("\(name): the custom assignment policy returned \(type(of: object).className) that this realm does not manage (unmanaged, deleted, or another realm's)")
            }
            guard state.bound.table == target.table else {
                throw RealmError.invalidValue("\(name): the custom assignment policy returned a \(state.bound.className); the property links to \(target.className)")
            }
            keys.append(state.key)
        }
        var only = [FieldValue?](repeating: nil, count: bound.schema.properties.count)
        if property.isList {
            only[index] = .list(keys.map(FieldValue.link))
        } else {
            guard keys.count <= 1 else {
                throw RealmError.invalidValue("\(name): the custom assignment policy returned \(keys.count) objects for a to-one relationship")
            }
            only[index] = keys.first.map(FieldValue.link) ?? .null
        }
        try realm.importRow(bound: bound, key: key, assignments: only, write: write)
    }

    /// The object a written draft became (nil for a weak one that names no existing object).
    func object(for draft: Draft) -> Object? {
        guard let realm, let key = draft.key, let bound = try? realm.boundType(for: draft.mapping.type) else { return nil }
        return realm.object(bound: bound, key: key)
    }

    // MARK: Objects into JSON

    /// An object on the path from the root being encoded. A managed object is its row
    /// (reading a link gives a new instance each time, so instances cannot find a cycle);
    /// an unmanaged one is its instance.
    enum Visit: Hashable {
        case row(table: UInt32, key: [UInt8])
        case instance(ObjectIdentifier)

        init(_ object: Object) {
            if let state = object._state {
                self = .row(table: state.bound.table, key: state.key)
            } else {
                self = .instance(ObjectIdentifier(object))
            }
        }
    }

    /// The JSON of `object` under `mapping`. `visiting` holds the objects being encoded
    /// further up: a link back to one of them (a cycle) is written as that object's primary
    /// key, or null when its type has none, instead of recursing forever.
    func encode(_ object: Object, mapping: ObjectMapping, visiting: inout Set<Visit>, includeNulls: Bool = true) throws -> JSONValue {
        // The members are built in place and wrapped once: setting each into a `JSONValue`
        // copied the dictionary for every property.
        var members: [String: JSONValue] = [:]
        let identity = Visit(object)
        visiting.insert(identity)
        defer { visiting.remove(identity) }
        for rule in (mapping.encodeRules.isEmpty ? mapping.rules : mapping.encodeRules) where rule.encoded {
            let value = try encodedValue(rule, of: object, mapping: mapping, visiting: &visiting, includeNulls: includeNulls)
            if value == .null, !includeNulls { continue }
            guard let keyPath = rule.keyPath else {
                // An attribute that is the whole representation.
                return value
            }
            Self.set(value, at: keyPath[...], in: &members)
        }
        return .object(members)
    }

    /// The encoded rules of `mapping` in their keys' order, when each writes one top-level
    /// key and no two the same one: its objects can then be written member by member
    /// (``write(_:order:to:depth:visiting:)``), without a dictionary. Nil otherwise.
    static func flatEncodeOrder(_ mapping: ObjectMapping) -> [(key: String, rule: ObjectMapping.Rule)]? {
        var order: [(key: String, rule: ObjectMapping.Rule)] = []
        for rule in (mapping.encodeRules.isEmpty ? mapping.rules : mapping.encodeRules) where rule.encoded {
            guard let path = rule.keyPath, path.count == 1 else { return nil }
            order.append((path[0], rule))
        }
        order.sort { $0.key < $1.key }
        for index in order.indices.dropFirst() where order[index].key == order[index - 1].key { return nil }
        return order
    }

    /// Writes `object` as `encode` encodes it, member by member in `order`
    /// (``flatEncodeOrder(_:)``), at `depth` of `writer`.
    func write(_ object: Object, order: [(key: String, rule: ObjectMapping.Rule)], mapping: ObjectMapping, to writer: inout JSONWriter,
               depth: Int, visiting: inout Set<Visit>, includeNulls: Bool = true) throws {
        // Only a relationship can lead back to this object: without one it is not tracked.
        let followsLinks = order.contains { member in
            if case .relationship = member.rule.kind { return true }
            return false
        }
        let identity = followsLinks ? Visit(object) : nil
        if let identity { visiting.insert(identity) }
        defer { if let identity { visiting.remove(identity) } }
        try writer.writeObject(depth: depth) { members in
            for (key, rule) in order {
                let value = try encodedValue(rule, of: object, mapping: mapping, visiting: &visiting, includeNulls: includeNulls)
                if value == .null, !includeNulls { continue }
                try members.member(key, value)
            }
        }
    }

    /// The JSON of `rule`'s property of `object`.
    private func encodedValue(_ rule: ObjectMapping.Rule, of object: Object, mapping: ObjectMapping, visiting: inout Set<Visit>,
                              includeNulls: Bool) throws -> JSONValue {
        let property = mapping.info.schema.properties[rule.index]
        switch rule.kind {
        case .attribute(let transformer):
            if let transformer { return try transformer.reverse(object[property.name]) }
            return try jsonValue(Self.field(of: object, index: rule.index), property: property)
        case .rawJSON:
            let field = Self.field(of: object, index: rule.index)
            return try Self.rawJSONValue(field) ?? jsonValue(field, property: property)
        case .relationship(let child, _, _):
            let linked = object[property.name]
            if let target = linked as? Object {
                return try encodeLink(target, mapping: child, visiting: &visiting, includeNulls: includeNulls)
            } else if let targets = linked as? [Object] {
                return .array(try targets.map { try encodeLink($0, mapping: child, visiting: &visiting, includeNulls: includeNulls) })
            }
            return .null
        }
    }

    /// The JSON of a linked object: the whole object, or its primary key (null without one)
    /// when it is already being encoded further up.
    private func encodeLink(_ target: Object, mapping: ObjectMapping, visiting: inout Set<Visit>, includeNulls: Bool) throws -> JSONValue {
        guard visiting.contains(Visit(target)) else {
            return try encode(target, mapping: mapping, visiting: &visiting, includeNulls: includeNulls)
        }
        let schema = mapping.info.schema
        guard let index = schema.properties.firstIndex(where: \.isPrimaryKey) else { return .null }
        return try jsonValue(Self.field(of: target, index: index), property: schema.properties[index])
    }

    static func field(of object: Object, index: Int) -> FieldValue {
        if let state = object._state { return state.field(index) }
        return object._slots[index].unlinkedField
    }

    func jsonValue(_ field: FieldValue, property: PropertySchema) throws -> JSONValue {
        switch field {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return property.kind == .bool ? .bool(i != 0) : .int(i)
        case .double(let d): return .double(d)
        case .float(let f): return .double(Double(f))
        case .string(let s): return .string(s)
        case .data(let d):
            if property.kind == .column, let nested = try? JSONValue(data: d) { return nested }
            return .string(d.base64EncodedString())
        case .date(let d):
            if let formatter = options.dateFormatter { return .string(datePattern?.string(from: d) ?? formatter.string(from: d)) }
            // Whole seconds print without a fraction, so "2013-01-10T07:58:30Z" round-trips.
            let wholeSeconds = d.timeIntervalSince1970.rounded() == d.timeIntervalSince1970
            return .string(wholeSeconds ? Self.isoPlain.format(d) : Self.isoFull.format(d))
        case .uuid(let u): return .string(u.uuidString)
        case .decimal(let d): return .string(d.description)
        case .link(var key):
            // An object held in an AnyRealmValue: its key follows its table's number.
            if property.kind == .mixed, let (_, target) = MixedLink.decode(key) { key = target }
            return PrimaryKeyValue(keyBytes: key).map { try? jsonValue($0.field, property: property) }.flatMap { $0 } ?? .null
        case .list(let items):
            var element = property
            element.isList = false
            element.isSet = false
            return .array(try items.map { try jsonValue($0, property: element) })
        case .objectId(let id): return .string(id.stringValue)
        case .map(let entries):
            var element = property
            element.isMap = false
            return .object(try entries.mapValues { try jsonValue($0, property: element) })
        case .embedded(let fields):
            return try embeddedJSON(fields, property: property)
        }
    }

    /// An embedded object's stored fields as a JSON object, by its stored schema (front ends
    /// map embedded properties as relationships, so this serves values read as fields).
    private func embeddedJSON(_ fields: [FieldValue], property: PropertySchema) throws -> JSONValue {
        guard let schema = property.objectClassName.flatMap({ realm?.schema[$0] }) else {
            throw RealmError.invalidValue("the embedded \(property.objectClassName ?? "?") of \(property.name) cannot be encoded without its realm's schema")
        }
        var members: [String: JSONValue] = [:]
        for (index, nested) in schema.properties.enumerated() where nested.kind != .linkingObjects {
            members[nested.name] = try jsonValue(index < fields.count ? fields[index] : .null, property: nested)
        }
        return .object(members)
    }

    /// `json` with `value` placed at `path`, creating objects along the way.
    static func setting(_ value: JSONValue, at path: ArraySlice<String>, in json: JSONValue) -> JSONValue {
        guard !path.isEmpty else { return value }
        var members: [String: JSONValue] = [:]
        if case .object(let existing) = json { members = existing }
        set(value, at: path, in: &members)
        return .object(members)
    }

    /// Sets `value` at the non-empty key `path` in `members`, making the objects on the way
    /// (an object already there is taken out and put back, so it is changed in place).
    static func set(_ value: JSONValue, at path: ArraySlice<String>, in members: inout [String: JSONValue]) {
        let first = path.first!
        guard path.count > 1 else {
            members[first] = value
            return
        }
        var inner: [String: JSONValue] = [:]
        if case .object(let existing)? = members.removeValue(forKey: first) { inner = existing }
        set(value, at: path.dropFirst(), in: &inner)
        members[first] = .object(inner)
    }
}
