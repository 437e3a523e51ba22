// The write-side primitives the mapping engine uses: partial upserts of one row, and
// reading or deleting the targets of a link, all through the open write's pending rows.

import Foundation

extension Realm {
    /// The fields of a new object of `bound`: the class's initial values.
    func initialFields(_ bound: BoundType) -> [FieldValue] {
        bound.constantInitialFields ?? BoundType.initialFields(of: bound.info.type)
    }

    /// Sets the given properties of the object `key`, creating it (with the class's initial
    /// values and its primary key) if it does not exist. A row first touched here is built
    /// as bytes straight away — an existing one by copying the bytes of the properties the
    /// JSON leaves alone — so an import never decodes stored rows.
    func importRow(bound: BoundType, key: [UInt8], assignments: [FieldValue?], write: WriteState) throws {
        let rowKey = RowKey(table: bound.table, key: key)
        write.willChange(rowKey)
        let count = bound.schema.properties.count
        let primaryKeyIndex = bound.primaryKeyIndex ?? -1
        if let pending = write.rows[rowKey] {
            // Touched before in this write (a payload's duplicate, an object set by hand).
            if pending.isDeleted { pending.fields = newFields(bound, key: key) }
            for (index, value) in assignments.enumerated() where index != primaryKeyIndex {
                if let value { pending.fields![index] = value }
            }
        } else if let stored = storedRow(table: bound.table, key: key) {
            let row: [UInt8]
            do {
                row = try RowFormat.splice(stored, count: count) { index in
                    index == primaryKeyIndex || index >= assignments.count ? nil : assignments[index]
                }
            } catch let error as RowFormat.DecodingError {
                noteDamage(table: bound.table, key: key, error)
                let name = PrimaryKeyValue(keyBytes: key)?.description ?? "(hidden id)"
                throw RealmError.damagedObject(type: bound.className, key: name, reason: "\(error)")
            }
            write.rows.put(rowKey, row: row, original: stored, atomicMark: write.atomicID)
        } else {
            let initial = initialFields(bound)
            let primaryKey = primaryKeyIndex >= 0 ? PrimaryKeyValue(keyBytes: key)?.field : nil
            let row = try RowFormat.checked(RowFormat.encode(count: count) { index, out in
                if index == primaryKeyIndex, let primaryKey {
                    RowFormat.append(primaryKey, to: &out)
                } else {
                    RowFormat.append((index < assignments.count ? assignments[index] : nil) ?? initial[index], to: &out)
                }
            }, count: count, of: "the \(bound.className) row")
            write.rows.put(rowKey, row: row, original: nil, atomicMark: write.atomicID)
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
            return pending.field(index)
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
