// ProjectionStatistics: what the column read path holds in memory for one type, so the
// cost of projections is stated, not guessed (docs/benchmarks.md, "Projection memory").

/// The memory a type's query projection holds: the ordinal → key arena and one figure per
/// projected property. A property is projected only once a query filters or sorts on it.
///
/// ```swift
/// if let stats = realm.projectionStatistics(for: Item.self) {
///     print(stats.bytesPerObject)   // ["score": 8.0, "city": 4.0…]
/// }
/// ```
public struct ProjectionStatistics: Sendable, Equatable {
    /// The commit the projection describes.
    public let sequence: UInt64
    /// Ordinals, deleted objects' included (they keep their place until a rebuild).
    public let ordinals: Int
    /// Bytes of the ordinal → key arena: every key's bytes and where each ends.
    public let keyBytes: Int
    /// Bytes per projected property, by name: 8 a value for integers, doubles and dates
    /// (plus 1 an object when some are nil); 4 a value for strings plus each distinct
    /// string's UTF-8 bytes and 4 for where it ends; other kinds a decoded value each.
    public let columnBytes: [String: Int]

    /// `columnBytes` divided by the ordinals.
    public var bytesPerObject: [String: Double] {
        columnBytes.mapValues { ordinals == 0 ? 0 : Double($0) / Double(ordinals) }
    }
}

extension Realm {
    /// The projection the column read path keeps for `type`, or nil when no query has
    /// made one yet (or the type is not in the schema). It may describe an older commit
    /// than the realm's: projections are shared by every realm of the store.
    public func projectionStatistics<T: Object>(for type: T.Type) -> ProjectionStatistics? {
        verifyThread()
        guard let bound = try? boundType(for: type), let projection = shared.keptProjection(table: bound.table) else { return nil }
        var columns: [String: Int] = [:]
        for (property, bytes) in projection.columnByteCounts where property < bound.schema.properties.count {
            columns[bound.schema.properties[property].name] = bytes
        }
        return ProjectionStatistics(sequence: projection.sequence, ordinals: projection.count,
                                    keyBytes: projection.keyByteCount, columnBytes: columns)
    }
}
