// StoreLayout: which engine tables the object layer uses.
//
//   table 1                 metadata: "schema" (JSON of Schema), "nextid.<n>" (hidden ids)
//   (n + 1) << 8            objects of the type with table number n, keyed by primary key
//   (n + 1) << 8 | (p + 1)  secondary index of property p of that type
//
// docs/FORMAT.md describes the keys and values of each.

enum StoreLayout {
    static let metadataTable: UInt32 = 1
    static let schemaKey = Array("schema".utf8)
    /// The largest table number a stored schema may hold. The layout has room for 2^24 - 1
    /// numbers (`(n + 1) << 8` must fit 32 bits); capping stored ones far lower leaves the
    /// numbers later classes take (the highest plus one, each) room to stay in range.
    static let maxStoredTableNumber: UInt32 = (1 << 20) - 1
    /// The most properties a type may have: an index table's low byte is `p + 1`, 1 ... 255.
    static let maxProperties = 254

    static func objectTable(_ tableNumber: UInt32) -> UInt32 { (tableNumber + 1) << 8 }
    static func indexTable(_ tableNumber: UInt32, property: Int) -> UInt32 { objectTable(tableNumber) | UInt32(property + 1) }
    static func nextIDKey(_ tableNumber: UInt32) -> [UInt8] { Array("nextid.\(tableNumber)".utf8) }

    /// The table number of an object or index table, and the property for an index table.
    static func decode(table: UInt32) -> (tableNumber: UInt32, property: Int?)? {
        guard table >= 256 else { return nil }
        let low = Int(table & 0xFF)
        return ((table >> 8) - 1, low == 0 ? nil : low - 1)
    }
}

/// One model class bound to a store: its code-side info and its stored schema.
final class BoundType: @unchecked Sendable {
    let info: ObjectType
    /// The stored schema (same properties, in the same order, as the class declares).
    let schema: ObjectSchema
    let table: UInt32
    let primaryKeyIndex: Int?
    let indexedProperties: [Int]
    /// Every property with an index table, and whether it is an inverse (backlink) index
    /// read by linking objects (see Backlinks.swift) rather than a secondary index.
    let maintainedIndexes: [(property: Int, backlink: Bool)]
    /// A row of nulls, shared (copy-on-write) as the starting point of new rows.
    let nullFields: [FieldValue]
    /// The same row encoded: where a new object's pending row starts (`Realm.add`).
    let nullRow: [UInt8]
    /// The class's initial values when they are the same for every new instance (nil when an
    /// initializer computes them, e.g. `UUID()` or `Date()`: each new object then runs it).
    let constantInitialFields: [FieldValue]?

    /// `schema` is the stored type; `storedSchema` the whole stored schema (linking
    /// objects declared elsewhere decide which properties keep an inverse index).
    init(info: ObjectType, schema: ObjectSchema, in storedSchema: Schema) {
        self.info = info
        self.schema = schema
        table = StoreLayout.objectTable(schema.tableNumber)
        primaryKeyIndex = schema.properties.firstIndex(where: \.isPrimaryKey)
        indexedProperties = schema.properties.indices.filter { schema.properties[$0].isIndexed }
        maintainedIndexes = storedSchema.maintainedIndexes(of: schema)
        nullFields = Array(repeating: .null, count: schema.properties.count)
        nullRow = RowFormat.encode(nullFields)
        // Two instances that agree are taken as constant, unless a date is set: two `Date()`s
        // can be equal on a coarse clock, and every object must get its own.
        let first = Self.initialFields(of: info.type), second = Self.initialFields(of: info.type)
        let hasDate = first.contains { if case .date = $0 { return true } else { return false } }
        constantInitialFields = first == second && !hasDate ? first : nil
    }

    /// The initial values of a new instance of `type`, as fields.
    static func initialFields(of type: Object.Type) -> [FieldValue] {
        type.init()._slots.map(\.unlinkedField)
    }

    var className: String { schema.className }

    func indexTable(_ property: Int) -> UInt32 { StoreLayout.indexTable(schema.tableNumber, property: property) }
}
