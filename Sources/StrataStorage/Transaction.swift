// Transaction: one atomic write. Records are encoded as they are added and streamed to
// the active segment; the index changes are made on the writer's private copy of the key
// directory and become visible to readers only at commit.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// A write transaction of a ``Store``, from ``Store/write(_:)`` or ``Store/beginTransaction()``.
///
/// Puts and deletes take effect together at ``commit()``, or not at all. A transaction
/// reads its own writes through ``get(table:key:)``. Only one transaction runs at a time
/// per store; it must be finished (committed or rolled back) by the code that began it.
/// Not `Sendable`: use it on the thread that began it.
public final class Transaction {
    private let store: Store
    /// The sequence number this transaction will commit as.
    public let sequence: UInt64
    private let startOffset: Int
    private let buffer = ByteBuffer(capacity: 64 << 10)
    private var recordCount = 0
    private var finished = false
    // Accounting of the records this transaction adds to the active segment, applied to
    // the store's per-segment figures once, at commit.
    private let segment: UInt32
    private let compressionThreshold: Int?
    private var addedLive = 0, addedRaw = 0, addedStored = 0
    /// Bytes appended since the last early-writeback request.
    private var unscheduledBytes = 0
    // Undo information for rollback: the writer's index and accounting as they were.
    private let savedDirectory: KeyDirectory
    private let savedSpace: [UInt32: SegmentSpace]
    private let savedHint: ActiveHint.Mark
    /// What the object layer says this commit changed, handed with its sequence to the
    /// store's commit observer while the gate is still held (nil: not known).
    package var commitNote: (any Sendable)?
    /// Writing in turns (Store+Turns.swift): closes the turn's writer once this transaction
    /// has committed or rolled back. Called once.
    var endOfTurn: (() throws -> Void)?

    init(store: Store, sequence: UInt64) {
        self.store = store
        self.sequence = sequence
        startOffset = store.activeSize
        segment = store.activeID
        compressionThreshold = store.options.compression == .lz4 ? store.options.compressionThreshold : nil
        savedDirectory = store.writerDirectory
        savedSpace = store.writerSpace
        savedHint = store.activeHint.mark
    }

    deinit {
        if !finished { rollback() }
    }

    /// The state this transaction starts from: every commit appended before it, including
    /// one whose `.full` sync is still in flight (which ``Store/snapshot()`` shows only once
    /// it is durable). A writer that reads before writing must read this state, or it could
    /// miss the commit just before its own.
    public var baseSnapshot: Snapshot { Snapshot(directory: savedDirectory) }

    /// The store's logger (``StoreOptions/logger``), for layers that write through the
    /// transaction and have something to report (a derived structure dropped as damaged).
    public var logger: Logger? { store.options.logger }

    private func checkOpen() throws {
        if finished { throw StoreError.invalidArgument("the transaction has already been committed or rolled back") }
    }

    /// Sets `key` in `table` to `value`.
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` if the key exceeds
    ///   ``StoreOptions/maxKeySize`` or the value ``StoreOptions/maxValueSize`` (the
    ///   transaction stays usable); I/O errors, after which the transaction is rolled back.
    public func put(table: UInt32, key: some ContiguousBytes, value: some ContiguousBytes) throws {
        try checkOpen()
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { valueBytes in
                try append(.put, table: table, key: keyBytes, value: valueBytes)
            }
        }
    }

    /// Removes `key` from `table`. Deleting an absent key is a no-op.
    public func delete(table: UInt32, key: some ContiguousBytes) throws {
        try checkOpen()
        try store.writerDirectory.checkImageIntact()
        try key.withUnsafeBytes { keyBytes in
            guard store.writerDirectory.lookup(table: table, key: IndexKey(keyBytes)) != nil else { return }
            try append(.delete, table: table, key: keyBytes, value: UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// The value of `key` as this transaction sees it: its own writes over the store's newest state.
    public func get(table: UInt32, key: some ContiguousBytes) throws -> [UInt8]? {
        try checkOpen()
        try store.writerDirectory.checkImageIntact()
        return try key.withUnsafeBytes { keyBytes in
            let indexKey = IndexKey(keyBytes)
            guard let location = store.writerDirectory.lookup(table: table, key: indexKey) else { return nil }
            if location.segment == store.activeID && Int(location.offset) >= store.activeSize {
                try flush()
            }
            var directory = store.writerDirectory
            directory.active = SegmentView(id: store.activeID, region: store.activeRegion, length: store.activeSize,
                                           cipher: store.activeWriter.cipher)
            return try directory.readValue(table: table, key: indexKey, at: location)
        }
    }

    private func append(_ kind: RecordKind, table: UInt32, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        guard key.count <= StoreOptions.maxKeySize else {
            throw StoreError.invalidArgument("key of \(key.count) bytes exceeds the maximum of \(StoreOptions.maxKeySize)")
        }
        guard value.count <= StoreOptions.maxValueSize else {
            throw StoreError.invalidArgument("value of \(value.count) bytes exceeds the maximum of \(StoreOptions.maxValueSize)")
        }
        let offset = store.activeSize + buffer.count
        let writer = store.activeWriter
        guard offset + RecordFormat.maxRecordSize(keyLength: key.count, valueLength: value.count)
                + RecordFormat.commitRecordSize + 2 * writer.overhead <= Int(UInt32.max) else {
            throw StoreError.invalidArgument("the transaction exceeds 4 GiB in one segment; split it")
        }
        let (size, stored): (Int, Int)
        do {
            // A write may not copy a damaged index image page (it would copy it empty).
            try store.writerDirectory.checkImageIntact()
            (size, stored) = try writer.appendRecord(
                to: buffer, fileOffset: offset, kind: kind, table: table, sequence: sequence, key: key, value: value,
                compressAtLeast: compressionThreshold)
        } catch {
            rollback()
            throw error
        }
        let location = Location(segment: segment, offset: UInt32(offset), size: UInt32(size))
        store.activeHint.add(kind: kind, table: table, key: key, location: location, sequence: sequence)
        let indexKey = IndexKey(key)
        let old: Location?
        if kind == .put {
            old = store.writerDirectory.put(table: table, key: indexKey, location: location)
            addedLive += size
            addedRaw += value.count
            addedStored += stored
        } else {
            old = store.writerDirectory.remove(table: table, key: indexKey)
        }
        if let old {
            if old.segment == segment { addedLive -= Int(old.size) } else { store.writerSpace[old.segment]?.liveBytes -= Int(old.size) }
        }
        recordCount += 1
        if buffer.count >= Store.flushThreshold { try flush() }
    }

    private func flush() throws {
        let bytes = buffer.count
        do {
            try store.appendToActive(buffer)
        } catch {
            rollback()
            throw error
        }
        // A large transaction asks the kernel to start writing its bytes now, so the disk
        // works while the transaction goes on and the final sync has little left to do.
        unscheduledBytes += bytes
        if unscheduledBytes >= Store.writebackChunk {
            store.activeFile?.startWriteback(offset: store.activeSize - unscheduledBytes, length: unscheduledBytes)
            unscheduledBytes = 0
        }
    }

    /// Makes the transaction's writes visible and (per the store's durability) durable.
    ///
    /// - Returns: the commit's sequence number; for a transaction that wrote nothing, the
    ///   newest existing sequence (nothing is written).
    /// - Throws: ``StoreError/diskFull(_:)`` or I/O errors; the transaction is then rolled
    ///   back. If the final sync fails the store stops taking writes (see ``StoreError/closed``).
    @discardableResult
    public func commit() throws -> UInt64 {
        let (sequence, mustSync) = try commitWithoutWaiting()
        if mustSync { try store.waitDurable(sequence) }
        return sequence
    }

    /// Appends the commit record and releases the write gate, without waiting for the
    /// sync: with `.full`, the caller must wait for `sequence` to be durable
    /// (`mustSync`) before telling anyone it committed. (The async commit path waits as a
    /// suspended task instead of a blocked thread.)
    package func commitWithoutWaiting() throws -> (sequence: UInt64, mustSync: Bool) {
        try checkOpen()
        guard recordCount > 0 else {
            finished = true
            let newest = store.lastAppendedSequence
            store.releaseGate()
            try finishTurn()
            return (newest, false)
        }
        do {
            try store.writerDirectory.checkImageIntact()
            try store.activeWriter.appendCommit(to: buffer, fileOffset: store.activeSize + buffer.count, sequence: sequence,
                                                recordCount: recordCount, durableWatermark: store.durableWatermark())
        } catch {
            rollback()
            throw error
        }
        try flush()
        // Before readers can see the commit, so no realm advancing to it waits for its record.
        store.commitObserver?(sequence, commitNote)
        store.writerSpace[segment]?.liveBytes += addedLive
        store.writerSpace[segment]?.rawValueBytes += addedRaw
        store.writerSpace[segment]?.storedValueBytes += addedStored
        store.publishCommit(sequence: sequence)
        finished = true
        store.releaseGate()
        if endOfTurn != nil {
            // The turn's close synced it.
            try finishTurn()
            return (sequence, false)
        }
        return (sequence, store.options.durability == .full)
    }

    private func finishTurn() throws {
        guard let end = endOfTurn else { return }
        endOfTurn = nil
        try end()
    }

    /// Discards everything the transaction wrote. Harmless after commit or rollback.
    public func rollback() {
        guard !finished else { return }
        finished = true
        buffer.count = 0
        store.truncateActive(to: startOffset)
        store.writerDirectory = savedDirectory
        store.writerSpace = savedSpace
        store.activeHint.truncate(to: savedHint)
        store.releaseGate()
        try? finishTurn()
    }
}
