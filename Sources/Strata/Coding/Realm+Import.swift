// The write-side primitives the mapping engine uses: partial upserts of one row, and
// reading or deleting the targets of a link, all through the open write's pending rows.

import Foundation

extension Realm {
    /// The fields of a new object of `bound`: the class's initial values.
    func initialFields(_ bound: BoundType) -> [FieldValue] {
        bound.constantInitialFields ?? BoundType.initialFields(of: bound.info.type)
    }

    /// Sets the given properties of the object `key`, creating it (with the class's initial
    /// values and its primary key) if it does not exist.
    func importRow(bound: BoundType, key: [UInt8], assignments: [FieldValue?], write: WriteState) throws {
        let rowKey = RowKey(table: bound.table, key: key)
        write.willChange(rowKey)
        let pending: PendingRow
        if let existing = write.rows[rowKey] {
            pending = existing
            if pending.fields == nil { pending.fields = newFields(bound, key: key) }
        } else if let stored = storedRow(table: bound.table, key: key) {
            var fields = try RowFormat.fields(of: stored)
            if fields.count < bound.schema.properties.count {
                fields.append(contentsOf: repeatElement(FieldValue.null, count: bound.schema.properties.count - fields.count))
            }
            pending = PendingRow(fields: fields, originalRow: stored, atomicMark: write.atomicID)
            write.rows[rowKey] = pending
        } else {
            pending = PendingRow(fields: newFields(bound, key: key), originalRow: nil, atomicMark: write.atomicID)
            write.rows[rowKey] = pending
        }
        for (index, value) in assignments.enumerated() where index != bound.primaryKeyIndex {
            if let value { pending.fields![index] = value }
        }
        write.noteChange(bound: bound, key: key)
        bumpContentVersion()
    }

    private func newFields(_ bound: BoundType, key: [UInt8]) -> [FieldValue] {
        var fields = initialFields(bound)
        if let index = bound.primaryKeyIndex, let primaryKey = PrimaryKeyValue(keyBytes: key) { fields[index] = primaryKey.field }
        return fields
    }

    /// Property `index` of the object `key` as the open write sees it (nil if it does not exist).
    func currentField(bound: BoundType, key: [UInt8], index: Int) -> FieldValue? {
        if let pending = writeState?.rows[RowKey(table: bound.table, key: key)] {
            return pending.fields?[index]
        }
        guard let row = storedRow(table: bound.table, key: key) else { return nil }
        return try? RowFormat.field(index, of: row)
    }

    /// Whether the object a link property of this type points to exists.
    func rowExists(linkProperty property: PropertySchema, key: [UInt8]) -> Bool {
        guard let target = property.objectClassName.flatMap(boundType(named:)) else { return false }
        return exists(target, key: key)
    }

    /// Deletes the object `key` of the type that property `index` of `bound` links to.
    func deleteRow(boundFor bound: BoundType, index: Int, key: [UInt8]) throws {
        guard let target = bound.schema.properties[index].objectClassName.flatMap(boundType(named:)),
              let object = object(bound: target, key: key) else { return }
        try delete(object)
    }
}
