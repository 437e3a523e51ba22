// KeyDirectory: the in-memory index, one persistent hash map (HashIndex) per table, plus
// the views of the segment files its locations point into. It is a value: copying it is
// O(1) and an update copies only the path to the changed entry, which is what makes a
// snapshot cheap and lets it live on, unchanged, while writers advance the store.

/// A readable view of one segment: its mapping, how many bytes of it are valid, and (in an
/// encrypted store) the file's cipher.
struct SegmentView: Sendable {
    var id: UInt32
    var region: MappedRegion
    /// Bytes known to hold committed data (the file may be longer while a writer appends).
    var length: Int
    /// The file's cipher in an encrypted store; nil in a plain one.
    var cipher: FileCipher?

    /// A reader of the valid bytes, or nil if the mapping does not hold them.
    func reader() -> SegmentReader? {
        region.bytes(at: 0, count: length, limit: length).map { SegmentReader($0, cipher: cipher) }
    }
}

struct KeyDirectory: Sendable {
    var tables: [UInt32: HashIndex] = [:]
    /// The key of the hash every table's index is filed by (IndexHash.swift): random for an
    /// index built at open, the image's when one was loaded.
    var seed: UInt64
    /// The sequence number of the newest commit this directory reflects.
    var sequence: UInt64 = 0
    /// The index image the open mapped pages from, if any: a read of a key whose page is
    /// damaged (and could not be rebuilt) fails with its error.
    var image: IndexImage?
    /// Sealed segments by id, as an array from `sealedBase` (live ids are mostly a narrow
    /// window of recent numbers, so an array beats hashing on every read). The window starts
    /// at the oldest sealed id, not at 0, and may not grow much wider than the number of
    /// sealed segments: an id that would stretch it (an old segment beside ones near 2^32, or
    /// a hostile directory) goes to `outliers` instead, so no id costs an array that long.
    private var sealed: [SegmentView?] = []
    private var sealedBase: UInt32 = 0
    private var outliers: [UInt32: SegmentView] = [:]
    private var sealedCount = 0
    var active: SegmentView?

    /// An empty directory whose indexes will be keyed by `seed`.
    init(seed: UInt64 = IndexHash.randomSeed()) {
        self.seed = seed
    }

    mutating func setSealed(_ view: SegmentView) {
        let id = view.id
        if let index = windowIndex(id) {
            if sealed[index] == nil { sealedCount += 1 }
            sealed[index] = view
            return
        }
        if outliers.updateValue(view, forKey: id) == nil { sealedCount += 1 } else { return }
        // Widen the window to take it, if that keeps the window proportionate.
        let low = sealed.isEmpty ? Int(id) : min(Int(sealedBase), Int(id))
        let high = sealed.isEmpty ? Int(id) : max(Int(sealedBase) + sealed.count - 1, Int(id))
        guard high - low + 1 <= max(1024, 4 * sealedCount) else { return }
        outliers[id] = nil
        if sealed.isEmpty {
            sealedBase = id
        } else if id < sealedBase {
            sealed.insert(contentsOf: repeatElement(nil, count: Int(sealedBase - id)), at: 0)
            sealedBase = id
        }
        let index = Int(id - sealedBase)
        if sealed.count <= index { sealed.append(contentsOf: repeatElement(nil, count: index + 1 - sealed.count)) }
        sealed[index] = view
        // Outliers the wider window now covers move into it (an id lives in one place).
        for (other, otherView) in outliers {
            guard let otherIndex = windowIndex(other) else { continue }
            sealed[otherIndex] = otherView
            outliers[other] = nil
        }
    }

    @inline(__always)
    private func windowIndex(_ id: UInt32) -> Int? {
        guard id >= sealedBase else { return nil }
        let index = Int(id - sealedBase)
        return index < sealed.count ? index : nil
    }

    /// Throws the index image's error if one of its pages is damaged beyond rebuilding: the
    /// store then refuses writes (a write would copy such a page empty).
    @inline(__always)
    func checkImageIntact() throws {
        if let image, image.isDamaged { throw image.damage! }
    }

    @inline(__always)
    func lookup(table: UInt32, key: IndexKey) -> Location? {
        tables[table]?.lookup(key)
    }

    mutating func removeSealed(_ id: UInt32) {
        if outliers.removeValue(forKey: id) != nil {
            sealedCount -= 1
            return
        }
        guard let index = windowIndex(id), sealed[index] != nil else { return }
        sealed[index] = nil
        sealedCount -= 1
        // Narrow the window to the sealed segments that remain.
        while let last = sealed.last, last == nil { sealed.removeLast() }
        if let first = sealed.firstIndex(where: { $0 != nil }), first > 0 {
            sealed.removeFirst(first)
            sealedBase += UInt32(first)
        }
    }

    /// Calls `body` with every segment view: the sealed ones, then the active one.
    func forEachSegment(_ body: (SegmentView) -> Void) {
        for case let view? in sealed { body(view) }
        for view in outliers.values { body(view) }
        if let active { body(active) }
    }

    /// Slots of the sealed-segment window (for tests: bounded by the live ids' spread).
    var sealedSlots: Int { sealed.count }

    /// Hints that the record at `location` will be read soon (a scan, a few records ahead).
    func prefetch(_ location: Location) {
        guard let view = segment(location.segment) else { return }
        view.region.prefetch(at: Int(location.offset), limit: view.length)
    }

    @inline(__always)
    func segment(_ id: UInt32) -> SegmentView? {
        if let active, active.id == id { return active }
        if let index = windowIndex(id) { return sealed[index] }
        return outliers.isEmpty ? nil : outliers[id]
    }

    /// Sets `key` to `location`; returns the location it replaces.
    @discardableResult
    @inline(__always)
    mutating func put(table: UInt32, key: IndexKey, location: Location) -> Location? {
        tables[table, default: HashIndex(seed: seed)].update(key, to: location)
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
        try withPut(table: table, key: key, at: location) { record in
            guard let value = record.value() else {
                throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                           reason: "compressed value does not decompress")
            }
            return value
        }
    }

    /// The value of the record at `location`, as stored: a view into the mapping when it is
    /// neither compressed nor encrypted (no copy).
    func readStoredValue(table: UInt32, key: IndexKey, at location: Location) throws -> StoredValue {
        try withPut(table: table, key: key, at: location) { record in
            if record.compressed { return StoredValue(bytes: try decompressed(record, at: location)) }
            let view = segment(location.segment)!
            if view.cipher != nil { return StoredValue(bytes: Array(record.storedValue)) }
            let offset = Int(location.offset) + RecordFormat.headerSize + record.key.count
            return StoredValue(region: view.region, offset: offset, count: record.storedValue.count)
        }
    }

    /// Calls `body` with the value bytes of the put of `key` in `table` at `location`, valid
    /// only during the call: where they lie in the mapping, or decompressed (decrypted)
    /// into a scratch buffer. A scan's way to read values without a ``StoredValue`` each.
    func withStoredBytes<R>(table: UInt32, key: IndexKey, at location: Location, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try withPut(table: table, key: key, at: location) { record in
            guard record.compressed else { return try body(record.storedValue) }
            return try decompressed(record, at: location).withUnsafeBytes(body)
        }
    }

    /// The value of the compressed `record` at `location`, decompressed.
    private func decompressed(_ record: RecordView, at location: Location) throws -> [UInt8] {
        guard let value = record.value() else {
            throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                       reason: "compressed value does not decompress")
        }
        return value
    }

    /// Calls `body` with the record at `location`, which must be a put of `key` in `table`.
    private func withPut<R>(table: UInt32, key: IndexKey, at location: Location, _ body: (RecordView) throws -> R) throws -> R {
        try withRecord(at: location) { record in
            guard record.kind == .put, record.table == table, key.matches(record.key) else {
                throw StoreError.corrupted(segment: segmentName(location.segment), offset: Int(location.offset),
                                           reason: "index points at a record of another key")
            }
            return try body(record)
        }
    }

    /// Calls `body` with the checked record at `location` (its buffers valid during the call).
    func withRecord<R>(at location: Location, _ body: (RecordView) throws -> R) throws -> R {
        func damaged(_ reason: String) -> StoreError {
            .corrupted(segment: segmentName(location.segment), offset: Int(location.offset), reason: reason)
        }
        func checked(_ result: Result<RecordView, RecordView.Failure>) throws -> RecordView {
            switch result {
            case .success(let record):
                guard record.size == Int(location.size) else { throw damaged("record size differs from the index") }
                return record
            case .failure(let failure):
                throw damaged(failure.reason)
            }
        }
        if location.isUnreadable {
            throw image?.damageError(page: Int(location.offset))
                ?? .corrupted(segment: IndexImage.fileName, offset: 0, reason: "the index image page is damaged")
        }
        guard let view = segment(location.segment) else { throw damaged("segment file is missing") }
        guard let bytes = view.region.bytes(at: Int(location.offset), count: Int(location.size), limit: view.length) else {
            throw damaged("record lies outside the segment")
        }
        guard let cipher = view.cipher else { return try body(try checked(RecordView.parse(bytes, at: 0))) }
        let frame: UnsafeRawBufferPointer
        switch SegmentReader.frame(in: bytes, at: 0) {
        case .failure(let failure): throw damaged(failure.reason)
        case .success(let found): frame = found
        }
        guard frame.count == bytes.count else { throw damaged("record size differs from the index") }
        return try withUnsafeTemporaryAllocation(byteCount: frame.count - Frame.overhead, alignment: 8) { plain in
            try body(try checked(SegmentReader.open(frame, fileOffset: Int(location.offset), cipher: cipher, into: plain.baseAddress!)))
        }
    }
}

/// The file name of segment `id`: its decimal number, zero-padded to 8 digits (numbers
/// from 100,000,000 take their 9 or 10 digits, unpadded). `Store.parseSegmentNumber`
/// reads exactly these names back, for every UInt32.
func segmentName(_ id: UInt32) -> String { fileNumberText(id) + ".seg" }

/// The file name of the hint file of segment `id` (the digits as in ``segmentName(_:)``).
func hintName(_ id: UInt32) -> String { fileNumberText(id) + ".hint" }

/// `id` in decimal, zero-padded to at least 8 digits.
func fileNumberText(_ id: UInt32) -> String {
    let digits = String(id)
    return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
}
