// PendingRows: the rows a write transaction has changed, held in a few arrays.
//
// Why arrays: a write that changes a million objects used to hold a million `PendingRow`
// objects, each with its own byte array, in a dictionary walked in hash order at commit
// and freed one by one after it (a third of a 1M rewrite went to allocating, reference
// counting, and missing the cache on those objects). Here an entry is a struct in one
// array, in the order rows were first touched; encoded rows live in one byte arena; the
// commit walks both front to back, and the write frees them as a handful of arrays.
//
// An entry is never removed, so its index names it for the whole write (objects cache it):
// a row an undone `add` had created becomes *absent*, which reads as "no pending row", and
// is reused if the key is touched again. A row whose encoded size changes is written again
// at the arena's end, its old bytes left behind; once those make up half the arena (and at
// least a megabyte) the live rows are packed into a new one, so a loop growing strings on
// many objects costs at most twice their rows, not the sum of every version. A number set
// over a number is patched where it lies.

/// The pending rows of one write transaction (`WriteState.rows`).
final class PendingRows {
    /// What an entry holds now.
    enum State: UInt8 {
        /// No pending row (an undone insert): looks up as nil.
        case absent
        /// Deleted in this transaction.
        case deleted
        /// An encoded row, in the arena.
        case row
        /// Decoded values (once a collection property was changed in place).
        case fields
    }

    /// What a row held, saved before an atomic `add` or `create` changed it (`WriteState.willChange`).
    enum Content {
        case deleted
        case fields([FieldValue])
        case row([UInt8])
    }

    struct Entry {
        let table: UInt32
        var state: State
        var rowLength: UInt32
        var rowStart: Int
        let key: [UInt8]
        /// The stored row before the transaction (compared as bytes at commit); nil when
        /// the object did not exist.
        let original: StoredValue?
        /// The add or create that last saved or created this row (`WriteState.willChange`).
        var atomicMark: UInt64
        /// Counts replacements of the whole row (caches of what was read from it compare it).
        var revision: UInt64
    }

    fileprivate(set) var entries: [Entry] = []
    // Open addressing over the entries: each slot holds a key's 32-bit hash tag and its
    // entry's index + 1 (0: empty), so growing rehashes from the slots alone, without
    // reading a key (a dictionary of a million keys re-read and re-hashed every key
    // each time it grew).
    private var slots = [UInt64](repeating: 0, count: 64)
    private var arena: [UInt8] = []
    /// Bytes of the arena no entry refers to any more.
    private var abandoned = 0
    // Rare, so kept beside the entries rather than in each: decoded values, changes of
    // single collection properties, and properties forced to count as modified.
    private var decoded: [Int: [FieldValue]] = [:]
    private var fieldRevisions: [Int: [Int: UInt64]] = [:]
    private var forcedFields: [Int: PropertyMask] = [:]
    /// Rows per table (absent ones not counted; a write touches a handful of tables):
    /// queries ask whether a table has any.
    private var tableCounts: [(table: UInt32, count: Int)] = []

    init() {}

    /// Pending rows that are not absent.
    private(set) var count = 0

    func reserveCapacity(_ capacity: Int) {
        entries.reserveCapacity(capacity)
        while capacity * 2 > slots.count { grow() }
    }

    // MARK: Finding entries

    /// 32 bits of a hash of the table and key (never 0).
    private static func tag(_ key: RowKey) -> UInt32 {
        var hash = UInt64(key.table) &* 0x9E37_79B9_7F4A_7C15
        key.key.withUnsafeBytes { raw in
            var at = 0
            while at + 8 <= raw.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
                hash ^= hash >> 29
                at += 8
            }
            var tail: UInt64 = UInt64(raw.count - at) << 56
            for i in at ..< raw.count { tail |= UInt64(raw[i]) << (8 * UInt64(i - at)) }
            hash = (hash ^ tail) &* 0x94D0_49BB_1331_11EB
        }
        hash ^= hash >> 31
        return UInt32(truncatingIfNeeded: hash >> 32) | 1
    }

    /// The slot a tag starts its probe at.
    @inline(__always)
    private func home(_ tag: UInt32) -> Int { Int(truncatingIfNeeded: (UInt64(tag) &* 0x9E37_79B9) >> 7) & (slots.count - 1) }

    /// The index of `key`'s entry (absent ones included), or nil.
    private func position(of key: RowKey) -> Int? {
        let tag = Self.tag(key)
        var i = home(tag)
        while true {
            let slot = slots[i]
            if slot == 0 { return nil }
            if UInt32(truncatingIfNeeded: slot >> 32) == tag {
                let index = Int(truncatingIfNeeded: slot & 0xFFFF_FFFF) - 1
                if entries[index].table == key.table && entries[index].key == key.key { return index }
            }
            i = (i + 1) & (slots.count - 1)
        }
    }

    /// Records that `key` is at entry `index` (the key must not be there yet).
    private func place(_ key: RowKey, at index: Int) {
        if (entries.count + 1) * 2 > slots.count { grow() }
        place(tag: Self.tag(key), index: index)
    }

    private func place(tag: UInt32, index: Int) {
        var i = home(tag)
        while slots[i] != 0 { i = (i + 1) & (slots.count - 1) }
        slots[i] = UInt64(tag) << 32 | UInt64(index + 1)
    }

    private func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        for slot in old where slot != 0 {
            place(tag: UInt32(truncatingIfNeeded: slot >> 32), index: Int(truncatingIfNeeded: slot & 0xFFFF_FFFF) - 1)
        }
    }

    /// The pending row of `key`, if there is one.
    subscript(key: RowKey) -> PendingRow? {
        guard let index = position(of: key), entries[index].state != .absent else { return nil }
        return PendingRow(rows: self, index: index)
    }

    /// The pending row at `index` (an index a `PendingRow` gave), nil when absent.
    func row(at index: Int) -> PendingRow? {
        index < entries.count && entries[index].state != .absent ? PendingRow(rows: self, index: index) : nil
    }

    /// Whether any row of `table` is pending.
    func hasRows(inTable table: UInt32) -> Bool { tableCounts.contains { $0.table == table && $0.count > 0 } }

    /// The pending rows of `table`, by key.
    func rows(inTable table: UInt32) -> [RowKey: PendingRow] {
        guard hasRows(inTable: table) else { return [:] }
        var result: [RowKey: PendingRow] = [:]
        for (index, entry) in entries.enumerated() where entry.table == table && entry.state != .absent {
            result[RowKey(table: table, key: entry.key)] = PendingRow(rows: self, index: index)
        }
        return result
    }

    /// The keys of `table`'s pending rows.
    func keys(inTable table: UInt32) -> [[UInt8]] {
        guard hasRows(inTable: table) else { return [] }
        return entries.lazy.filter { $0.table == table && $0.state != .absent }.map(\.key)
    }

    /// Every pending row, in the order they were first touched.
    func forEach(_ body: (RowKey, PendingRow) throws -> Void) rethrows {
        for index in entries.indices where entries[index].state != .absent {
            try body(RowKey(table: entries[index].table, key: entries[index].key), PendingRow(rows: self, index: index))
        }
    }

    // MARK: Making rows pending

    /// Makes `key` pending with decoded `fields` (nil: deleted).
    @discardableResult
    func put(_ key: RowKey, fields: [FieldValue]?, original: StoredValue?, atomicMark: UInt64 = 0) -> PendingRow {
        let index = entry(for: key, original: original, atomicMark: atomicMark)
        let row = PendingRow(rows: self, index: index)
        row.fields = fields
        return row
    }

    /// Makes `key` pending with the encoded `row` (which decodes).
    @discardableResult
    func put(_ key: RowKey, row bytes: some ContiguousBytes, original: StoredValue?, atomicMark: UInt64) -> PendingRow {
        let index = entry(for: key, original: original, atomicMark: atomicMark)
        setRow(index, bytes)
        return PendingRow(rows: self, index: index)
    }

    /// Makes a stored object pending, about to change: its bytes copied and checked once
    /// (so reading them later in the write cannot meet damage), never decoded.
    @discardableResult
    func put(_ key: RowKey, stored: StoredValue, atomicMark: UInt64) throws(RowFormat.DecodingError) -> PendingRow {
        do {
            try RowFormat.validate(stored)
        } catch let error as RowFormat.DecodingError {
            throw error
        } catch {
            throw RowFormat.DecodingError(reason: "\(error)")
        }
        return put(key, row: stored, original: stored, atomicMark: atomicMark)
    }

    /// Makes `key` absent again (an undone insert).
    func remove(_ key: RowKey) {
        guard let index = position(of: key) else { return }
        setState(index, .absent)
        if !decoded.isEmpty { decoded[index] = nil }
    }

    /// The entry for `key`: a new one, or the absent one it had (reused with `original`).
    private func entry(for key: RowKey, original: StoredValue?, atomicMark: UInt64) -> Int {
        if let index = position(of: key) {
            precondition(entries[index].state == .absent, "a pending row was made twice")
            let revision = entries[index].revision &+ 1
            entries[index] = Entry(table: key.table, state: .absent, rowLength: 0, rowStart: 0, key: key.key,
                                   original: original, atomicMark: atomicMark, revision: revision)
            if !fieldRevisions.isEmpty { fieldRevisions[index] = nil }
            if !forcedFields.isEmpty { forcedFields[index] = nil }
            return index
        }
        let index = entries.count
        precondition(index < Int(UInt32.max), "a write changes at most 2^32 - 1 objects")
        place(key, at: index)
        entries.append(Entry(table: key.table, state: .absent, rowLength: 0, rowStart: 0, key: key.key,
                             original: original, atomicMark: atomicMark, revision: 0))
        return index
    }

    // MARK: Entry state (through PendingRow)

    fileprivate func setState(_ index: Int, _ state: State) {
        let old = entries[index].state
        guard old != state else { return }
        if old == .row { abandoned += Int(entries[index].rowLength) }
        if old == .absent || state == .absent {
            let change = old == .absent ? 1 : -1
            count += change
            let table = entries[index].table
            if let at = tableCounts.firstIndex(where: { $0.table == table }) {
                tableCounts[at].count += change
            } else {
                tableCounts.append((table, change))
            }
        }
        entries[index].state = state
    }

    fileprivate func withRow<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let entry = entries[index]
        return try arena.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[entry.rowStart ..< entry.rowStart + Int(entry.rowLength)])) }
    }

    fileprivate func setRow(_ index: Int, _ bytes: some ContiguousBytes) {
        // The entry's bytes at the arena's end (a new row's placeholder, a row just
        // rewritten) are written over rather than left behind.
        let old = entries[index]
        if old.state == .row {
            if old.rowStart + Int(old.rowLength) == arena.count {
                arena.removeLast(Int(old.rowLength))
            } else {
                abandoned += Int(old.rowLength)
            }
        }
        bytes.withUnsafeBytes { raw in
            entries[index].rowStart = arena.count
            entries[index].rowLength = UInt32(raw.count)
            arena.append(contentsOf: raw)
        }
        if !decoded.isEmpty { decoded[index] = nil }
        setState(index, .row)
        entries[index].revision &+= 1
        if abandoned >= 1 << 20, abandoned * 2 >= arena.count { packArena() }
    }

    /// Copies the rows entries refer to into a new arena, in entry order.
    private func packArena() {
        var packed: [UInt8] = []
        packed.reserveCapacity(arena.count - abandoned)
        for index in entries.indices where entries[index].state == .row {
            let start = entries[index].rowStart, length = Int(entries[index].rowLength)
            entries[index].rowStart = packed.count
            packed.append(contentsOf: arena[start ..< start + length])
        }
        arena = packed
        abandoned = 0
    }

    /// The arena's size in bytes, rows left behind included (tests bound it).
    var arenaBytes: Int { arena.count }

    fileprivate func setFields(_ index: Int, _ fields: [FieldValue]?) {
        if let fields {
            decoded[index] = fields
            setState(index, .fields)
        } else {
            if !decoded.isEmpty { decoded[index] = nil }
            setState(index, .deleted)
        }
        entries[index].revision &+= 1
    }

    fileprivate func fields(_ index: Int) -> [FieldValue]? {
        switch entries[index].state {
        case .absent, .deleted: return nil
        case .fields: return decoded[index]
        case .row: return withRow(index) { Self.decode($0) }
        }
    }

    fileprivate func field(_ index: Int, _ field: Int) -> FieldValue? {
        switch entries[index].state {
        case .absent, .deleted: return nil
        case .fields:
            let values = decoded[index]!
            return field < values.count ? values[field] : .null
        case .row:
            return withRow(index) { row in
                do { return try RowFormat.field(field, of: row) } catch { preconditionFailure("pending row: \(error)") }
            }
        }
    }

    fileprivate func setField(_ index: Int, _ field: Int, _ value: FieldValue, isCollection: Bool) {
        switch entries[index].state {
        case .absent, .deleted:
            return
        case .fields:
            var values = decoded.removeValue(forKey: index)!   // the only reference: changed in place
            // A row stored before properties were appended has fewer values.
            if field >= values.count { values += repeatElement(FieldValue.null, count: field + 1 - values.count) }
            values[field] = value
            decoded[index] = values
        case .row:
            let entry = entries[index]
            let patched = arena.withUnsafeMutableBytes { raw in
                RowFormat.patchFixedField(field, in: UnsafeMutableRawBufferPointer(rebasing: raw[entry.rowStart ..< entry.rowStart + Int(entry.rowLength)]), with: value)
            }
            if !patched {
                var row = withRow(index) { Array($0) }
                RowFormat.replaceField(field, in: &row, with: value)
                let revision = entries[index].revision
                setRow(index, row)
                entries[index].revision = revision    // a property set, not a new row
            }
        }
        if isCollection { fieldRevisions[index, default: [:]][field, default: 0] &+= 1 }
    }

    fileprivate func modifyField(_ index: Int, _ field: Int, _ body: (inout FieldValue) -> Void) {
        guard var values = fields(index) else { return }
        decoded[index] = nil
        if field >= values.count { values += repeatElement(FieldValue.null, count: field + 1 - values.count) }
        body(&values[field])
        decoded[index] = values
        setState(index, .fields)
        fieldRevisions[index, default: [:]][field, default: 0] &+= 1
    }

    fileprivate func fieldRevision(_ index: Int, _ field: Int) -> UInt64 {
        fieldRevisions.isEmpty ? 0 : fieldRevisions[index]?[field] ?? 0
    }

    fileprivate func forced(_ index: Int) -> PropertyMask { forcedFields.isEmpty ? PropertyMask() : forcedFields[index] ?? PropertyMask() }

    fileprivate func setForced(_ index: Int, _ mask: PropertyMask) {
        if mask.isEmpty {
            if !forcedFields.isEmpty { forcedFields[index] = nil }
        } else {
            forcedFields[index] = mask
        }
    }

    private static func decode(_ row: UnsafeRawBufferPointer) -> [FieldValue] {
        // Rows here were encoded by this process, or copied from stored rows checked when
        // they became pending (RowFormat.validate): failing to decode is a bug.
        do { return try RowFormat.fields(of: row) } catch { preconditionFailure("pending row: \(error)") }
    }
}

/// One pending row of a write: a handle on its entry in `PendingRows`, meaningful while
/// the write is open.
struct PendingRow {
    let rows: PendingRows
    /// The entry's position, stable for the whole write.
    let index: Int

    var isDeleted: Bool { rows.entries[index].state == .deleted }

    /// The stored row before the transaction; nil when the object did not exist.
    var originalRow: StoredValue? { rows.entries[index].original }

    /// Changes of the whole row and of property `field` alone (collections' kept contents
    /// compare them).
    func revision(of field: Int) -> (row: UInt64, field: UInt64) {
        (rows.entries[index].revision, rows.fieldRevision(index, field))
    }

    var atomicMark: UInt64 {
        get { rows.entries[index].atomicMark }
        nonmutating set { rows.entries[index].atomicMark = newValue }
    }

    /// Properties to report as modified even if unchanged (`update: .all`).
    var forced: PropertyMask {
        get { rows.forced(index) }
        nonmutating set { rows.setForced(index, newValue) }
    }

    /// The values now (nil: deleted). Reading an encoded row decodes it; setting replaces
    /// the row with values.
    var fields: [FieldValue]? {
        get { rows.fields(index) }
        nonmutating set { rows.setFields(index, newValue) }
    }

    /// Property `field` now, without decoding the others (nil: deleted).
    func field(_ field: Int) -> FieldValue? { rows.field(index, field) }

    /// Calls `body` with the row to write at commit; nil (without calling it) when deleted.
    func withEncodedRow<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        switch rows.entries[index].state {
        case .absent, .deleted: return nil
        case .row: return try rows.withRow(index, body)
        case .fields: return try RowFormat.encode(rows.fields(index)!).withUnsafeBytes(body)
        }
    }

    /// Sets property `field` to `value`: written over the old bytes when they are the same
    /// size, else the row is written again; into the decoded values once a collection was
    /// changed in place. `isCollection`: the property is a list, set or map, whose kept
    /// contents compare its revision.
    func setField(_ field: Int, _ value: FieldValue, isCollection: Bool) {
        rows.setField(index, field, value, isCollection: isCollection)
    }

    /// Replaces the whole row with `row` (an encoded row that decodes).
    func setRow(_ row: [UInt8]) { rows.setRow(index, row) }

    /// Changes property `field` in place: amortized O(1) for an append to a list or a key
    /// set in a map, however large (the values are held once while `body` runs, so they
    /// are not copied).
    func modifyField(_ field: Int, _ body: (inout FieldValue) -> Void) { rows.modifyField(index, field, body) }

    /// What the row holds now, as saved before an atomic change.
    var content: PendingRows.Content {
        switch rows.entries[index].state {
        case .absent, .deleted: return .deleted
        case .fields: return .fields(rows.fields(index)!)
        case .row: return .row(rows.withRow(index) { Array($0) })
        }
    }

    /// Puts back a state saved by `WriteState.willChange`.
    func restore(_ saved: PendingRows.Content) {
        switch saved {
        case .deleted: rows.setFields(index, nil)
        case .fields(let values): rows.setFields(index, values)
        case .row(let bytes): rows.setRow(index, bytes)
        }
    }
}
