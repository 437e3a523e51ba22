// KeyDirectory: the in-memory index, one persistent hash map (HashIndex) per table, plus
// the views of the segment files its locations point into. It is a value: copying it is
// O(1) and an update copies only the path to the changed entry, which is what makes a
// snapshot cheap and lets it live on, unchanged, while writers advance the store.

/// A readable view of one segment: its mapping and how many bytes of it are valid.
struct SegmentView: Sendable {
    var id: UInt32
    var region: MappedRegion
    /// Bytes known to hold committed data (the file may be longer while a writer appends).
    var length: Int
}

struct KeyDirectory: Sendable {
    var tables: [UInt32: HashIndex] = [:]
    /// The sequence number of the newest commit this directory reflects.
    var sequence: UInt64 = 0
    /// Sealed segments by id (ids are small and dense, so an array beats hashing on every read).
    private(set) var sealed: [SegmentView?] = []
    var active: SegmentView?

    mutating func setSealed(_ view: SegmentView) {
        let index = Int(view.id)
        if sealed.count <= index { sealed.append(contentsOf: repeatElement(nil, count: index + 1 - sealed.count)) }
        sealed[index] = view
    }

    @inline(__always)
    func lookup(table: UInt32, key: IndexKey) -> Location? {
        tables[table]?.lookup(key)
    }

    mutating func removeSealed(_ id: UInt32) {
        let index = Int(id)
        if index < sealed.count { sealed[index] = nil }
    }

    @inline(__always)
    func segment(_ id: UInt32) -> SegmentView? {
        if let active, active.id == id { return active }
        let index = Int(id)
        return index < sealed.count ? sealed[index] : nil
    }

    /// Sets `key` to `location`; returns the location it replaces.
    @discardableResult
    @inline(__always)
    mutating func put(table: UInt32, key: IndexKey, location: Location) -> Location? {
        tables[table, default: HashIndex()].update(key, to: location)
    }

    /// Removes `key`; returns the location it had.
    @discardableResult
    mutating func remove(table: UInt32, key: IndexKey) -> Location? {
        guard tables[table] != nil else { return nil }
        let old = tables[table]!.remove(key)
        if tables[table]!.count == 0 { tables[table] = nil }
        return old
    }

    var keyCount: Int { tables.values.reduce(0) { $0 + $1.count } }

    /// Bytes of memory held by the index (slots, nodes, boxed long keys).
    var memoryBytes: Int {
        tables.values.reduce(0) { $0 + $1.memoryBytes }
    }

    /// Reads and checks the record at `location`, which must be a put of `key` in `table`;
    /// returns its value.
    func readValue(table: UInt32, key: IndexKey, at location: Location) throws -> [UInt8] {
        let record = try readRecord(at: location)
        guard record.kind == .put, record.table == table, key.matches(record.key) else {
            throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                       reason: "index points at a record of another key")
        }
        guard let value = record.value() else {
            throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                       reason: "compressed value does not decompress")
        }
        return value
    }

    /// The value of the record at `location`, as stored: a view into the mapping when it is
    /// not compressed (no copy).
    func readStoredValue(table: UInt32, key: IndexKey, at location: Location) throws -> StoredValue {
        let record = try readRecord(at: location)
        guard record.kind == .put, record.table == table, key.matches(record.key) else {
            throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                       reason: "index points at a record of another key")
        }
        if record.compressed {
            guard let value = record.value() else {
                throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                           reason: "compressed value does not decompress")
            }
            return StoredValue(bytes: value)
        }
        let view = segment(location.segment)!
        let offset = Int(location.offset) + RecordFormat.headerSize + record.key.count
        return StoredValue(region: view.region, offset: offset, count: record.storedValue.count)
    }

    func readRecord(at location: Location) throws -> RecordView {
        func damaged(_ reason: String) -> StoreError {
            .corrupted(segment: segmentName(location.segment), offset: Int(location.offset), reason: reason)
        }
        guard let view = segment(location.segment) else { throw damaged("segment file is missing") }
        guard let bytes = view.region.bytes(at: Int(location.offset), count: Int(location.size), limit: view.length) else {
            throw damaged("record lies outside the segment")
        }
        switch RecordView.parse(bytes, at: 0) {
        case .success(let record):
            guard record.size == Int(location.size) else { throw damaged("record size differs from the index") }
            return record
        case .failure(let failure):
            throw damaged(failure.reason)
        }
    }
}

/// The file name of segment `id`.
func segmentName(_ id: UInt32) -> String {
    let digits = String(id)
    return String(repeating: "0", count: max(0, 8 - digits.count)) + digits + ".seg"
}

/// The file name of the hint file of segment `id`.
func hintName(_ id: UInt32) -> String {
    let digits = String(id)
    return String(repeating: "0", count: max(0, 8 - digits.count)) + digits + ".hint"
}
