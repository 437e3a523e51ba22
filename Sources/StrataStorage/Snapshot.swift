// Snapshot: a read view frozen at one commit. It holds an O(1) copy of the key directory
// (a persistent map) and the mappings of the segments it reads, so it answers the same
// way for as long as it lives, whatever writers and compaction do meanwhile.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A consistent read-only view of a ``Store`` as of one commit, from ``Store/snapshot()``.
///
/// Taking a snapshot costs O(1); it can be sent to any thread and read concurrently.
/// Reads check each record's checksum and throw ``StoreError/corrupted(segment:offset:reason:)``
/// rather than return damaged bytes. A snapshot stays readable after the store is closed.
public struct Snapshot: Sendable {
    let directory: KeyDirectory
    /// Lets the store see which snapshots are alive (stats); nil for internal views.
    let token: SnapshotToken?

    init(directory: KeyDirectory, token: SnapshotToken? = nil) {
        self.directory = directory
        self.token = token
    }

    /// The sequence number of the newest commit this snapshot sees.
    public var sequence: UInt64 { directory.sequence }

    /// The value of `key` in `table` as of this snapshot, or nil.
    public func get(table: UInt32, key: some ContiguousBytes) throws -> [UInt8]? {
        try key.withUnsafeBytes { raw in
            let indexKey = IndexKey(raw)
            guard let location = directory.lookup(table: table, key: indexKey) else { return nil }
            return try directory.readValue(table: table, key: indexKey, at: location)
        }
    }

    /// The value of `key` in `table` without copying it (see ``StoredValue``), or nil.
    public func storedValue(table: UInt32, key: some ContiguousBytes) throws -> StoredValue? {
        try key.withUnsafeBytes { raw in
            let indexKey = IndexKey(raw)
            guard let location = directory.lookup(table: table, key: indexKey) else { return nil }
            return try directory.readStoredValue(table: table, key: indexKey, at: location)
        }
    }

    /// Calls `body` with every live key and value of `table`, values uncopied.
    public func scanStored(table: UInt32, _ body: (_ key: [UInt8], _ value: StoredValue) throws -> Void) throws {
        guard let index = directory.tables[table] else { return }
        try index.forEach { key, location in
            try body(key.bytes, try directory.readStoredValue(table: table, key: key, at: location))
        }
    }

    /// Calls `body` with every live record of `table`, keys copied only on demand.
    public func scanEntries(table: UInt32, _ body: (StoredEntry) throws -> Void) throws {
        guard let index = directory.tables[table] else { return }
        try index.forEach { key, location in
            try body(StoredEntry(indexKey: key, value: try directory.readStoredValue(table: table, key: key, at: location)))
        }
    }

    /// Like ``scanEntries(table:_:)``, but a record that cannot be read (damaged) is handed
    /// to `damaged` with its error and skipped, so one bad record does not end the scan. (A
    /// damaged page of the index image, whose keys cannot be listed, is handed over with an
    /// empty key.)
    public func scanEntries(table: UInt32, damaged: (_ key: [UInt8], _ error: any Error) -> Void,
                            _ body: (StoredEntry) throws -> Void) rethrows {
        try visitAhead(table: table, damaged: damaged) { key, location in
            let value: StoredValue
            do {
                value = try directory.readStoredValue(table: table, key: key, at: location)
            } catch {
                damaged(key.bytes, error)
                return
            }
            try body(StoredEntry(indexKey: key, value: value))
        }
    }

    /// Like ``scanEntries(table:damaged:_:)``, in the same order, with each record's key
    /// and value bytes valid only during the call to `body`: nothing is copied and no
    /// ``StoredValue`` is made per record (a scan that decodes a few fields of each value
    /// spent a fifth of its time making and freeing them).
    public func scanRecords(table: UInt32, damaged: (_ key: [UInt8], _ error: any Error) -> Void,
                            _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void) {
        visitAhead(table: table, damaged: damaged) { key, location in
            do {
                try directory.withStoredBytes(table: table, key: key, at: location) { value in key.withBytes { body($0, value) } }
            } catch {
                damaged(key.bytes, error)
            }
        }
    }

    /// Calls `visit` with every live entry of `table`, in the index's (hash) order. The
    /// records lie scattered through the segments, so each read would wait for its own
    /// cache miss: the entries are handed on in groups of `scanLookahead`, each group's
    /// records asked for (prefetched) before any of them is read, so the misses overlap.
    /// A damaged index image page (HashIndex.forEach) goes to `damaged`, with no key.
    private func visitAhead(table: UInt32, damaged: (_ key: [UInt8], _ error: any Error) -> Void,
                            _ visit: (IndexKey, Location) throws -> Void) rethrows {
        guard let index = directory.tables[table] else { return }
        var group: [(key: IndexKey, location: Location)] = []
        group.reserveCapacity(Self.scanLookahead)
        try index.forEach(damaged: { damaged([], $0) }) { key, location in
            directory.prefetch(location)
            group.append((key, location))
            if group.count == Self.scanLookahead {
                for (key, location) in group { try visit(key, location) }
                group.removeAll(keepingCapacity: true)
            }
        }
        for (key, location) in group { try visit(key, location) }
    }

    /// Records a scan asks for ahead of reading them.
    static let scanLookahead = 16

    /// Whether `table` holds `key` (no value is read).
    ///
    /// - Throws: ``StoreError/corrupted(segment:offset:reason:)`` when the part of the index
    ///   that would hold `key` is damaged and could not be rebuilt (docs/FORMAT.md, "Index
    ///   image"): the answer is unknown, neither yes nor no.
    public func contains(table: UInt32, key: some ContiguousBytes) throws -> Bool {
        let location = key.withUnsafeBytes { directory.lookup(table: table, key: IndexKey($0)) }
        guard let location else { return false }
        if location.isUnreadable { try directory.withRecord(at: location) { _ in } }
        return true
    }

    /// Calls `body` with every live key and value of `table`, in no particular order.
    public func scan(table: UInt32, _ body: (_ key: [UInt8], _ value: [UInt8]) throws -> Void) throws {
        guard let index = directory.tables[table] else { return }
        try index.forEach { key, location in
            try body(key.bytes, try directory.readValue(table: table, key: key, at: location))
        }
    }

    /// Calls `body` with every live key of `table` (no value is read), in the order of
    /// ``keys(table:)``, without collecting them.
    ///
    /// - Throws: what `body` throws, or ``StoreError/corrupted(segment:offset:reason:)`` when
    ///   a part of the index is damaged and could not be rebuilt (after every other key).
    public func forEachKey(table: UInt32, _ body: (_ key: [UInt8]) throws -> Void) throws {
        try directory.tables[table]?.forEach { key, _ in try body(key.bytes) }
    }

    /// The same, each key lent as bytes valid only during the call (nothing is allocated per
    /// key: a caller that decodes the keys, say into integers, reads a million in a few
    /// milliseconds instead of allocating a million arrays).
    ///
    /// - Throws: as ``forEachKey(table:_:)``.
    public func forEachKeyBytes(table: UInt32, _ body: (_ key: UnsafeRawBufferPointer) throws -> Void) throws {
        try directory.tables[table]?.forEach { key, _ in try key.withBytes(body) }
    }

    /// Every live key of `table` (no value is read), in no particular order.
    ///
    /// - Throws: ``StoreError/corrupted(segment:offset:reason:)`` when a part of the index is
    ///   damaged and could not be rebuilt.
    public func keys(table: UInt32) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try directory.tables[table]?.forEach { key, _ in keys.append(key.bytes) }
        return keys
    }

    /// The number of live keys in `table`.
    public func count(table: UInt32) -> Int {
        directory.tables[table]?.count ?? 0
    }

    /// The ids of the tables that hold at least one key.
    public var tables: [UInt32] {
        directory.tables.keys.sorted()
    }

    /// Writes every record of this snapshot into a new store in `destination` (compacted:
    /// one version of each key, nothing deleted), with `options` — another encryption key,
    /// or none — and returns how many records. The snapshot's own store is only read, and
    /// may go on committing meanwhile.
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` when `destination` already holds files;
    ///   the errors of reading a damaged record (the copy stops: a copy is never silently
    ///   short) and of writing the new store. A copy that stops leaves no files behind.
    public func writeCopy(into destination: URL, options: StoreOptions = StoreOptions()) throws -> Int {
        let path = destination.standardizedFileURL.path
        let existing = try? options.fileSystem.listDirectory(path)
        if let existing, !existing.isEmpty {
            throw StoreError.invalidArgument("\(destination.path) already holds files; a copy is written into a new directory")
        }
        do {
            return try Store.writeNewStore(into: destination, options: options) { put in
                for table in tables {
                    try scan(table: table) { key, value in try put(table, key, value) }
                }
            }
        } catch {
            // A copy that stopped is no copy: remove what it wrote (the directory was new or empty).
            for name in (try? options.fileSystem.listDirectory(path)) ?? [] { try? options.fileSystem.remove(path + "/" + name) }
            if existing == nil { try? FileManager.default.removeItem(atPath: path) }
            throw error
        }
    }
}

/// Identifies a live snapshot to its store (for `StoreStats.oldestSnapshotSequence`).
final class SnapshotToken: Sendable {
    let sequence: UInt64
    let created: Double
    init(sequence: UInt64, created: Double) {
        self.sequence = sequence
        self.created = created
    }
}

struct WeakSnapshotToken: @unchecked Sendable {
    weak var token: SnapshotToken?
}
