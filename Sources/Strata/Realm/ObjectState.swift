// ObjectState: what makes an Object managed — its realm, type and key, and a cache of its
// row for the realm's current snapshot. Inside a write, the object's pending row (the
// transaction's copy) takes precedence.

import Foundation

/// The managed state of an object. Public only so `@Persisted` can reach it.
public final class ObjectState {
    @usableFromInline let realm: Realm
    let bound: BoundType
    /// The engine key, built on first use when the object was found by primary key value
    /// (a point read needs no key array).
    var key: [UInt8] {
        if let keyBytes { return keyBytes }
        let bytes = knownPrimaryKey!.keyBytes
        keyBytes = bytes
        return bytes
    }
    private var keyBytes: [UInt8]?
    private let knownPrimaryKey: PrimaryKeyValue?
    /// Reads this fixed snapshot instead of the realm's (old values for notifications).
    /// (Boxed: a `Snapshot` is several references; the common unpinned case stays small.)
    let pinned: Realm.SnapshotBox?
    private var row: StoredValue?
    private var rowGeneration: UInt64 = .max
    // Where this object's pending row was found last (its entry in the write's
    // `PendingRows`, stable for the write), used only while that write (the id) is open.
    private var pendingIndex = -1
    private var pendingWrite: UInt64 = 0
    /// For an embedded object: where in its parent it lives (nil: a top-level object).
    let embedding: Embedding?
    /// An embedded object's fields and the realm read version they were read at (reading
    /// them decodes the parent's whole field: a list of embedded objects is one field).
    private var embeddedCache: (version: UInt64, fields: [FieldValue]?)?

    /// An embedded object's place: its parent's property `index`, and its position when
    /// that property is a list. (A list's element is found by position: after the list is
    /// reordered, an object read before names whatever is at its position.)
    struct Embedding {
        let parent: ObjectState
        let index: Int
        let position: Int?
    }

    init(realm: Realm, bound: BoundType, primaryKey: PrimaryKeyValue, row: StoredValue) {
        embedding = nil
        self.realm = realm
        self.bound = bound
        knownPrimaryKey = primaryKey
        pinned = nil
        self.row = row
        rowGeneration = realm.generation
    }

    init(realm: Realm, bound: BoundType, key: [UInt8], row: StoredValue?, pinned: Realm.SnapshotBox? = nil) {
        embedding = nil
        knownPrimaryKey = nil
        self.realm = realm
        self.bound = bound
        keyBytes = key
        self.pinned = pinned
        if let row {
            self.row = row
            rowGeneration = realm.generation
        }
    }

    /// The state of an embedded object of type `bound` in `parent`'s property `index`
    /// (at `position` in a list).
    init(embeddedIn parent: ObjectState, bound: BoundType, index: Int, position: Int?) {
        embedding = Embedding(parent: parent, index: index, position: position)
        realm = parent.realm
        self.bound = bound
        knownPrimaryKey = nil
        keyBytes = parent.key
        pinned = parent.pinned
    }

    /// The key of the object (an embedded object: its top-level ancestor's).
    var primaryKey: PrimaryKeyValue {
        if let embedding { return embedding.parent.primaryKey }
        return knownPrimaryKey ?? PrimaryKeyValue(keyBytes: key) ?? .string(String(decoding: key, as: UTF8.self))
    }

    private var objectName: String { "\(bound.className)(\(primaryKey))" }

    /// The pending row of this object in the realm's current write, if it has one.
    private func currentPending() -> PendingRow? {
        guard pinned == nil, let write = realm.writeState else { return nil }
        if pendingWrite == write.id, pendingIndex >= 0 { return write.rows.row(at: pendingIndex) }
        guard let found = write.rows[RowKey(table: bound.table, key: key)] else { return nil }
        pendingIndex = found.index
        pendingWrite = write.id
        return found
    }

    /// The stored row as of the realm's snapshot (or the pinned one); nil if the object is gone.
    private func storedRow() -> StoredValue? {
        if let pinned {
            if rowGeneration == 0 { return row }
            row = try? pinned.snapshot.storedValue(table: bound.table, key: key)
            rowGeneration = 0
            return row
        }
        if rowGeneration != realm.generation {
            row = realm.storedRow(table: bound.table, key: key)
            rowGeneration = realm.generation
        }
        return row
    }

    var isInvalidated: Bool {
        if realm.isClosed { return true }
        if let embedding { return embedding.parent.isInvalidated || embeddedFields() == nil }
        if let pending = currentPending() { return pending.isDeleted }
        return storedRow() == nil
    }

    /// Property `index` as stored. Traps on the wrong thread or a deleted object (as Realm does).
    @usableFromInline
    func field(_ index: Int) -> FieldValue {
        if embedding != nil {
            guard let fields = embeddedFields() else { invalidatedAccess() }
            return index < fields.count ? fields[index] : .null
        }
        if pinned == nil {
            realm.verifyThread()
            // The common case: outside a write, the cached row is current.
            if realm.writeState == nil, rowGeneration == realm.generation, let row {
                do {
                    return try RowFormat.field(index, of: row)
                } catch {
                    return damaged(index, error)
                }
            }
        }
        if let pending = currentPending() {
            guard let field = pending.field(index) else { invalidatedAccess() }
            return field
        }
        guard let row = storedRow() else {
            // Present but unreadable (a record that fails its checksum): damage, not deletion.
            do {
                _ = try (pinned?.snapshot ?? realm.snapshot).storedValue(table: bound.table, key: key)
            } catch {
                return damaged(index, error)
            }
            invalidatedAccess()
        }
        do {
            return try RowFormat.field(index, of: row)
        } catch {
            return damaged(index, error)
        }
    }

    /// A property of a row that does not decode: recorded in the realm's `readErrors`, and
    /// read as the property's zero value (never a trap from data on disk).
    private func damaged(_ index: Int, _ error: any Error) -> FieldValue {
        realm.noteDamage(table: bound.table, key: key, error)
        // The primary key is known from the record's key, whatever the row holds.
        if index == bound.primaryKeyIndex, let value = PrimaryKeyValue(keyBytes: key) { return value.field }
        let property = bound.schema.properties[index]
        if property.kind == .object { return .null }
        // A column type may have no value for null: its declared initial value always reads.
        if property.kind == .column { return property.isOptional ? .null : initialField(index) }
        return FieldValue.zero(property)
    }

    // MARK: Embedded objects

    /// An embedded object's fields as its parent holds them now (nil: no longer there).
    func embeddedFields() -> [FieldValue]? {
        // Frozen (pinned) objects never change; live ones are re-read when the realm moves
        // or the open write changes anything.
        let version = pinned == nil ? realm.readVersion : 0
        if let embeddedCache, embeddedCache.version == version, !realm.isClosed { return embeddedCache.fields }
        let fields = readEmbeddedFields()
        embeddedCache = (version, fields)
        return fields
    }

    private func readEmbeddedFields() -> [FieldValue]? {
        guard let embedding, !embedding.parent.isInvalidated else { return nil }
        var container = embedding.parent.field(embedding.index)
        if let position = embedding.position {
            guard case .list(let items) = container, position < items.count else { return nil }
            container = items[position]
        }
        guard case .embedded(let fields) = container else { return nil }
        return fields
    }

    /// Changes an embedded object's fields inside its parent (inside a write).
    private func modifyEmbedded(_ body: (inout [FieldValue]) -> Void) {
        guard let embedding else { return }
        let count = bound.schema.properties.count
        func change(_ container: FieldValue) -> FieldValue {
            guard case .embedded(var fields) = container else { invalidatedAccess() }
            if fields.count < count { fields += Array(repeating: .null, count: count - fields.count) }
            body(&fields)
            return .embedded(fields)
        }
        if let position = embedding.position {
            embedding.parent.modifyList(embedding.index) { items in
                guard position < items.count else { invalidatedAccess() }
                items[position] = change(items[position])
            }
        } else {
            embedding.parent.setField(embedding.index, change(embedding.parent.field(embedding.index)))
        }
    }

    /// The embedded object in property `index` (at `position` of a list), or nil when the
    /// property holds none there.
    @usableFromInline
    func embeddedObject(_ index: Int, position: Int?) -> Object? {
        let property = bound.schema.properties[index]
        guard let target = property.objectClassName.flatMap(realm.boundTypeOrDynamic(named:)) else { return nil }
        var container = field(index)
        if let position {
            guard case .list(let items) = container, position < items.count else { return nil }
            container = items[position]
        }
        guard case .embedded = container else { return nil }
        let object = ObjectConstruction.makeManaged(target.info.type)
        object._state = ObjectState(embeddedIn: self, bound: target, index: index, position: position)
        return object
    }

    /// The embedded objects of a list property `index`, by position (the list is read once).
    func embeddedObjects(_ index: Int) -> [Object] {
        embeddedPositions(index).compactMap { embeddedObject(index, at: $0) }
    }

    /// The positions in list property `index` that hold an embedded object.
    func embeddedPositions(_ index: Int) -> [Int] {
        guard case .list(let items) = field(index) else { return [] }
        return items.indices.filter { position in
            if case .embedded = items[position] { return true }
            return false
        }
    }

    /// The embedded object at `position` of list property `index` (made on each call: it
    /// reads its fields from this object's row, by position).
    func embeddedObject(_ index: Int, at position: Int) -> Object? {
        guard let target = bound.schema.properties[index].objectClassName.flatMap(realm.boundTypeOrDynamic(named:)) else { return nil }
        let object = ObjectConstruction.makeManaged(target.info.type)
        object._state = ObjectState(embeddedIn: self, bound: target, index: index, position: position)
        return object
    }

    /// Whether this is the embedded object that `parent`'s property `index` (at `position`)
    /// holds: assigning an object to where it already is changes nothing.
    func isEmbedded(in parent: ObjectState, index: Int, position: Int?) -> Bool {
        guard let embedding else { return false }
        return embedding.index == index && embedding.position == position && embedding.parent.isSameObject(as: parent)
    }

    /// Whether two states are the same stored object (an embedded one: the same place).
    func isSameObject(as other: ObjectState) -> Bool {
        if self === other { return true }
        switch (embedding, other.embedding) {
        case (nil, nil): return key == other.key && bound.table == other.bound.table && realm.shared === other.realm.shared
        case let (a?, b?): return a.index == b.index && a.position == b.position && a.parent.isSameObject(as: b.parent)
        default: return false
        }
    }

    /// Sets the embedded property `index` to `object` (nil clears it, deleting the embedded
    /// object it held): an unmanaged object's values are stored and it becomes this one's
    /// managed embedded object; a managed embedded object held elsewhere is refused.
    @usableFromInline
    func setEmbedded(_ object: Object?, index: Int) {
        guard let object else {
            setField(index, .null)
            return
        }
        if let state = object._state {
            if state.isEmbedded(in: self, index: index, position: nil) { return }
            preconditionFailure("\(bound.className).\(bound.schema.properties[index].name): Cannot set a link to an existing managed embedded object (assign a copy, such as its deepCopy())")
        }
        setField(index, fieldForAssignment { try object._field(in: realm) })
        realm.adoptEmbedded(object, parent: self, index: index, position: nil)
    }

    /// Removes an embedded object from its parent (`realm.delete` of an embedded object).
    func removeFromParent() {
        guard let embedding else { return }
        if let position = embedding.position {
            embedding.parent.modifyList(embedding.index) { items in
                if position < items.count { items.remove(at: position) }
            }
        } else {
            embedding.parent.setField(embedding.index, .null)
        }
    }

    /// Property `index` as stored, or the damage as an error (for throwing reads).
    func checkedField(_ index: Int) throws -> FieldValue {
        if embedding != nil {
            guard let fields = embeddedFields() else { throw RealmError.invalidObject("\(bound.className) was deleted") }
            return index < fields.count ? fields[index] : .null
        }
        if let pending = currentPending() {
            guard let field = pending.field(index) else { throw RealmError.invalidObject("\(bound.className) was deleted") }
            return field
        }
        let row: StoredValue?
        do {
            row = try (pinned?.snapshot ?? realm.snapshot).storedValue(table: bound.table, key: key)
        } catch {
            throw RealmError.damagedObject(type: bound.className, key: primaryKey.description, reason: "\(error)")
        }
        guard let row else { throw RealmError.invalidObject("\(bound.className) was deleted") }
        do {
            return try RowFormat.field(index, of: row)
        } catch {
            throw RealmError.damagedObject(type: bound.className, key: primaryKey.description, reason: "\(bound.schema.properties[index].name): \(error)")
        }
    }

    /// Every property as stored, or nil if the object is gone.
    func allFields() -> [FieldValue]? {
        if embedding != nil {
            guard var fields = embeddedFields() else { return nil }
            let count = bound.schema.properties.count
            if fields.count < count { fields += Array(repeating: .null, count: count - fields.count) }
            return fields
        }
        if let pending = currentPending() { return pending.fields }
        guard let row = storedRow() else { return nil }
        do {
            return try RowFormat.fields(of: row)
        } catch {
            realm.noteDamage(table: bound.table, key: key, error)
            return nil
        }
    }

    private func invalidatedAccess() -> Never {
        preconditionFailure("Object has been deleted or invalidated: \(bound.className)")
    }

    /// The field for a value being assigned; traps with the reason if it cannot be stored.
    @usableFromInline
    func fieldForAssignment(_ make: () throws -> FieldValue) -> FieldValue {
        do {
            return try make()
        } catch {
            preconditionFailure("\(objectName): \(error)")
        }
    }

    /// Sets property `index` inside a write (traps outside one, as Realm does).
    @usableFromInline
    func setField(_ index: Int, _ value: FieldValue) {
        if embedding != nil {
            modifyEmbedded { $0[index] = value }
            return
        }
        let (write, pending) = pendingForChange()
        guard let current = pending.field(index) else { invalidatedAccess() }
        if index == bound.primaryKeyIndex, current != value {
            preconditionFailure("Primary key can't be changed after an object is inserted: \(objectName).\(bound.schema.properties[index].name)")
        }
        let property = bound.schema.properties[index]
        pending.setField(index, value, isCollection: property.isList || property.isSet || property.isMap)
        write.noteChange(bound: bound, key: key)
    }

    // MARK: List elements

    // MARK: Collection contents

    /// What a collection property's converted contents (a list's elements, a set's
    /// elements and membership, a map's entries) depend on.
    enum CollectionDependence {
        /// This object's row only (a collection of values).
        case ownRow
        /// This object's row, and whether the objects it links to still exist (links that
        /// were all found: creating objects cannot change them).
        case ownRowAndDeletions
        /// Anything in the realm (links that were not found, embedded objects by position).
        case everything
    }

    /// What converted contents were read from: the snapshot and, inside a write, this
    /// object's pending row and its revision, and the write's deletions.
    private struct CollectionSource: Equatable {
        let version: UInt64
        /// The write and the entry of the pending row (0 and -1: none).
        let pendingWrite: UInt64
        let pendingIndex: Int
        let rowRevision: UInt64
        let fieldRevision: UInt64
        let deletions: UInt64
    }

    /// Collection properties' contents, by property index. Each `object.list` access makes a
    /// new `List`, so the conversion is kept here, where all of them share it: a loop over a
    /// list's indices converts the list once per change, not once per index. Contents hold
    /// no objects (links are kept as stored, embedded objects as positions): an object holds
    /// its realm, and an embedded one its parent, so a cached object would keep this state
    /// alive in a cycle.
    private var collectionContents: [Int: AnyObject] = [:]

    /// One collection's kept contents: a class, so a read finds them with a cheap class cast
    /// and a change updates them in place.
    private final class KeptContents<Contents> {
        let dependence: CollectionDependence
        var source: CollectionSource
        var contents: Contents
        init(_ dependence: CollectionDependence, _ source: CollectionSource, _ contents: Contents) {
            self.dependence = dependence
            self.source = source
            self.contents = contents
        }
    }

    /// Where the contents of collection `index` with `dependence` are read from now.
    private func collectionSource(_ index: Int, _ dependence: CollectionDependence) -> CollectionSource {
        // A pinned object reads a fixed snapshot; an embedded one its parent's row, which
        // has no pending row of its own to compare.
        if pinned != nil { return CollectionSource(version: 0, pendingWrite: 0, pendingIndex: -1, rowRevision: 0, fieldRevision: 0, deletions: 0) }
        if dependence == .everything || embedding != nil {
            return CollectionSource(version: realm.readVersion, pendingWrite: 0, pendingIndex: -1, rowRevision: 0, fieldRevision: 0, deletions: 0)
        }
        let pending = currentPending()
        let revision = pending?.revision(of: index) ?? (row: 0, field: 0)
        return CollectionSource(version: realm.generation, pendingWrite: pending == nil ? 0 : realm.writeState!.id, pendingIndex: pending?.index ?? -1,
                                rowRevision: revision.row, fieldRevision: revision.field,
                                deletions: dependence == .ownRowAndDeletions ? realm.writeState?.deletions ?? 0 : 0)
    }

    /// The kept contents of collection `index`, if still current.
    private func currentContents<Contents>(_ index: Int) -> KeptContents<Contents>? {
        guard let kept = collectionContents[index] as? KeptContents<Contents>,
              collectionSource(index, kept.dependence) == kept.source else { return nil }
        return kept
    }

    /// The contents of collection `index` made by `make` (which also says what they depend
    /// on), or the ones it made before if nothing they depend on changed since.
    func cachedContents<Contents>(_ index: Int, make: () -> (contents: Contents, dependence: CollectionDependence)) -> Contents {
        if let kept: KeptContents<Contents> = currentContents(index) { return kept.contents }
        let made = make()
        realm.collectionConversions += 1
        collectionContents[index] = KeptContents(made.dependence, collectionSource(index, made.dependence), made.contents)
        return made.contents
    }

    /// Runs `change` (which changes the stored collection `index`) and brings its kept
    /// contents along through `carry` when they were current, so that an append followed by
    /// a read, in a loop, stays O(1) per step instead of converting the collection each time.
    func changeCollection<Contents>(_ index: Int, as type: Contents.Type, _ change: () -> Void, carry: (inout Contents) -> Void) {
        guard let kept: KeptContents<Contents> = currentContents(index) else {
            collectionContents[index] = nil
            return change()
        }
        change()
        carry(&kept.contents)
        kept.source = collectionSource(index, kept.dependence)
    }

    /// Changes the list of property `index` in place inside a write (appends and removals
    /// at the end cost O(1), not a copy of the list).
    func modifyList(_ index: Int, _ body: (inout [FieldValue]) -> Void) {
        modifyField(index) { field in
            var list: [FieldValue] = []
            if case .list(let items) = field { list = items }
            field = .null                // so `list` is the only reference: changed in place
            body(&list)
            field = .list(list)
        }
    }

    /// Changes the map of property `index` in place inside a write (setting one key costs
    /// O(1), not a copy of the map).
    func modifyMap(_ index: Int, _ body: (inout [String: FieldValue]) -> Void) {
        modifyField(index) { field in
            var map: [String: FieldValue] = [:]
            if case .map(let entries) = field { map = entries }
            field = .null
            body(&map)
            field = .map(map)
        }
    }

    /// Changes property `index` in place inside a write (traps outside one, as Realm does).
    private func modifyField(_ index: Int, _ body: (inout FieldValue) -> Void) {
        if embedding != nil {
            modifyEmbedded { fields in body(&fields[index]) }
            return
        }
        let (write, pending) = pendingForChange()
        guard !pending.isDeleted else { invalidatedAccess() }
        pending.modifyField(index, body)
        write.noteChange(bound: bound, key: key)
    }

    /// The write and this object's pending row in it, made from the stored row on the
    /// first change (traps outside a write, as Realm does).
    private func pendingForChange() -> (WriteState, PendingRow) {
        realm.verifyThread()
        guard let write = realm.writeState else {
            preconditionFailure("Attempting to modify object outside of a write transaction - call beginWrite on a Realm instance first.")
        }
        // An object pinned to an older snapshot (a deleted object as last committed, an old
        // value in a notification) is read-only, as a deleted object is.
        if pinned != nil { preconditionFailure("Cannot modify \(objectName): it is the object as it was before a change (deleted, or an old value), and is read-only") }
        write.willChange(RowKey(table: bound.table, key: key))
        if let existing = currentPending() { return (write, existing) }
        guard let row = storedRow() else { invalidatedAccess() }
        let rowKey = RowKey(table: bound.table, key: key)
        let pending: PendingRow
        do {
            pending = try write.rows.put(rowKey, stored: row, atomicMark: write.atomicID)
        } catch {
            // A stored row that does not decode is damage (recorded in `readErrors`): the
            // change starts from what its fields read, each damaged one as its zero value.
            realm.noteDamage(table: bound.table, key: key, error)
            pending = write.rows.put(rowKey, fields: (0 ..< bound.schema.properties.count).map { index in
                (try? RowFormat.field(index, of: row)) ?? damaged(index, error)
            }, original: row, atomicMark: write.atomicID)
        }
        pendingIndex = pending.index
        pendingWrite = write.id
        return (write, pending)
    }

    /// A property as a plain value (`Object[key]`).
    func dynamicValue(_ index: Int) -> Any? {
        let property = bound.schema.properties[index]
        if property.kind == .linkingObjects {
            guard let (origin, keys) = realm.linkingKeys(to: self, property: property) else { return [Object]() }
            return keys.compactMap { realm.object(bound: origin, key: $0) }
        }
        if property.kind == .embedded {
            return property.isList ? embeddedObjects(index) : embeddedObject(index, position: nil)
        }
        let field = field(index)
        if property.kind == .object, let target = realm.boundTypeOrDynamic(named: property.objectClassName ?? "") {
            switch field {
            case .link(let key): return realm.object(bound: target, key: key)
            case .list(let items):
                return items.compactMap { item -> Object? in
                    if case .link(let key) = item { return realm.object(bound: target, key: key) }
                    return nil
                }
            default: return nil
            }
        }
        return field.anyValue
    }

    /// Sets a property from a plain value (`Object[key] = value`, `create(value:)`).
    func setDynamicValue(_ value: Any?, index: Int) throws {
        let property = bound.schema.properties[index]
        setField(index, try realm.field(for: value, property: property, context: "\(bound.className).\(property.name)"))
    }

    /// A stored value the property's type cannot hold. A custom column type whose
    /// `init?(with:)` refuses it traps (the app's own decoding rule; `value(forProperty:)`
    /// throws instead). Any other mismatch — a well-formed field of another kind, which only
    /// a damaged or hostile store holds — is damage: recorded in `readErrors`, and the
    /// property reads its declared initial value (returned here) as a damaged row does.
    @usableFromInline
    func unreadableValue(_ field: FieldValue, index: Int, type: Any.Type) -> FieldValue {
        let property = bound.schema.properties[index]
        if property.kind == .column {
            preconditionFailure(RealmError.columnDecodingFailed(type: "\(type)", object: objectName, property: property.name).description)
        }
        realm.noteDamage(table: bound.table, key: key, UnreadableField(description: "\(property.name) holds \(field.kindName), which is not a \(type)"))
        return initialField(index)
    }

    /// The property's value in a new object of the class (its declared initial value).
    @usableFromInline
    func initialField(_ index: Int) -> FieldValue {
        let initial = bound.constantInitialFields ?? BoundType.initialFields(of: bound.info.type)
        return index < initial.count ? initial[index] : .null
    }
}

/// Why a stored field could not be read as its property's type (a `damagedObject` reason).
struct UnreadableField: Error, CustomStringConvertible {
    let description: String
}

/// A row of one table, as the key of a write's pending rows.
struct RowKey: Hashable {
    let table: UInt32
    let key: [UInt8]

    func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        key.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
