// The commit path: the write gate, appending a transaction's records to the active
// segment, publishing it to readers, and sealing a full segment.
//
// A transaction streams its records into the active segment as it goes (in chunks of
// `flushThreshold` bytes), so a large bulk load needs little memory. Nothing it writes is
// visible until its commit record is written and (for `.full`) synced; a rollback or an
// I/O error truncates the file back to where the transaction began.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who holds the write gate: the transaction's task, or the thread of code that runs in
/// no task. A task that suspends inside a transaction and resumes on another thread still
/// holds it; another task that runs on the first thread meanwhile is not its holder.
enum GateOwner: Equatable {
    // `UnsafeCurrentTask` holds a strong reference to the task, so its address cannot be
    // reused by another task while it is recorded here; it is only compared.
    case task(UnsafeCurrentTask)
    case thread(pthread_t)

    /// The caller: its task if it runs in one, else its thread.
    static var current: GateOwner {
        if let task = withUnsafeCurrentTask(body: { $0 }) { return .task(task) }
        return .thread(pthread_self())
    }

    static func == (a: GateOwner, b: GateOwner) -> Bool {
        switch (a, b) {
        case (.task(let x), .task(let y)): return x == y
        case (.thread(let x), .thread(let y)): return pthread_equal(x, y) != 0
        default: return false
        }
    }
}

/// A task waiting for the write gate. Guarded by the store's `gateMonitor`.
final class GateWaiter: @unchecked Sendable {
    var continuation: CheckedContinuation<Bool, any Error>?
    var cancelled = false

    /// The continuation, at most once (whoever takes it resumes it).
    func take() -> CheckedContinuation<Bool, any Error>? {
        defer { continuation = nil }
        return continuation
    }
}

extension Store {
    static let flushThreshold = 1 << 20
    /// A transaction asks for early writeback of each this many bytes it appends.
    static let writebackChunk = 8 << 20

    // MARK: The write gate

    /// Waits until no other transaction is running, then takes the gate.
    func acquireGate(forClose: Bool = false) throws {
        let me = GateOwner.current
        gateMonitor.lock()
        defer { gateMonitor.unlock() }
        if gateBusy, let holder = gateHolder, holder == me {
            throw StoreError.invalidArgument(forClose
                ? "close() called inside a write transaction of the same task or thread"
                : "a write transaction is already open in this task or thread (nested writes are not supported)")
        }
        while gateBusy { gateMonitor.wait() }
        gateBusy = true
        gateHolder = me
    }

    /// Whether the caller (its task, or its thread outside a task) holds the write gate.
    func gateHeldByCaller() -> Bool {
        let me = GateOwner.current
        return gateMonitor.withLock {
            guard gateBusy, let holder = gateHolder else { return false }
            return holder == me
        }
    }

    /// Sets the function told of every commit (see `commitObserver`), between transactions
    /// so that no commit is half-observed.
    package func observeCommits(_ observer: @escaping @Sendable (_ sequence: UInt64, _ note: (any Sendable)?) -> Void) {
        gateMonitor.withLock {
            while gateBusy { gateMonitor.wait() }
            commitObserver = observer
        }
    }

    func releaseGate() {
        let next = gateMonitor.withLock { () -> CheckedContinuation<Bool, any Error>? in
            gateBusy = false
            gateHolder = nil
            gateMonitor.broadcast()
            return takeFirstWaiterIfGateFree()
        }
        next?.resume(returning: false)
    }

    /// The first waiting task's continuation, to be woken, when the gate is free (under
    /// `gateMonitor`; resume it after unlocking).
    private func takeFirstWaiterIfGateFree() -> CheckedContinuation<Bool, any Error>? {
        guard !gateBusy, !gateWaiters.isEmpty else { return nil }
        return gateWaiters.removeFirst().take()
    }

    /// Takes the gate without blocking a thread: waits as a suspended task.
    ///
    /// A waiting task is never handed the gate while it is not running — it is woken to
    /// try again. Handing it over would deadlock as soon as every cooperative thread
    /// blocks in a synchronous `write` behind a task that cannot be scheduled.
    ///
    /// The holder recorded (to catch a nested synchronous write) is the calling task.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it has the gate.
    func acquireGateAsync(isolation: isolated (any Actor)? = #isolation) async throws {
        var woken = false
        while true {
            if Task.isCancelled {
                // A woken waiter was sent the free gate's one wake-up: pass it on, or the
                // tasks queued behind this one would wait for a release that never comes.
                if woken { gateMonitor.withLock { takeFirstWaiterIfGateFree() }?.resume(returning: false) }
                throw CancellationError()
            }
            let taken = gateMonitor.withLock { () -> Bool in
                // A newcomer queues behind earlier waiters; a woken waiter takes a free gate.
                guard !gateBusy, woken || gateWaiters.isEmpty else { return false }
                gateBusy = true
                gateHolder = .current
                return true
            }
            if taken { return }
            let waiter = GateWaiter()
            let front = woken
            let tookGate = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                    gateMonitor.lock()
                    if !gateBusy, front || gateWaiters.isEmpty {
                        gateBusy = true
                        gateMonitor.unlock()
                        continuation.resume(returning: true)
                    } else if waiter.cancelled {
                        gateMonitor.unlock()
                        continuation.resume(throwing: CancellationError())
                    } else {
                        waiter.continuation = continuation
                        if front { gateWaiters.insert(waiter, at: 0) } else { gateWaiters.append(waiter) }
                        gateMonitor.unlock()
                    }
                }
            } onCancel: {
                let continuation = gateMonitor.withLock { () -> CheckedContinuation<Bool, any Error>? in
                    waiter.cancelled = true
                    guard let index = gateWaiters.firstIndex(where: { $0 === waiter }) else { return nil }
                    gateWaiters.remove(at: index)
                    return waiter.take()
                }
                continuation?.resume(throwing: CancellationError())
            }
            if tookGate {
                let me = GateOwner.current
                gateMonitor.withLock { gateHolder = me }
                if Task.isCancelled {
                    releaseGate()
                    throw CancellationError()
                }
                return
            }
            woken = true
        }
    }

    /// Starts a write transaction; the caller must commit or roll it back. Blocks while
    /// another transaction runs.
    ///
    /// - Throws: ``StoreError/closed``, ``StoreError/invalidArgument(_:)`` for a read-only
    ///   store or a nested transaction in the same task (or thread, outside tasks), I/O errors from sealing a full segment.
    public func beginTransaction() throws -> Transaction {
        guard !options.readOnly || options.multiProcessWriting else { throw StoreError.invalidArgument("the store was opened read-only") }
        try acquireGate()
        if options.multiProcessWriting { return try transactionInTurn() }
        return try transactionHoldingGate()
    }

    /// Starts a write transaction without blocking a thread while another one runs (see
    /// ``asyncWrite(_:isolation:)``); the caller must commit or roll it back before its
    /// next suspension point.
    ///
    /// - Throws: `CancellationError` if the task is cancelled while waiting; as
    ///   ``beginTransaction()``.
    package func beginTransactionAsync(isolation: isolated (any Actor)? = #isolation) async throws -> Transaction {
        guard !options.readOnly || options.multiProcessWriting else { throw StoreError.invalidArgument("the store was opened read-only") }
        try await acquireGateAsync()
        if options.multiProcessWriting { return try await transactionInTurnAsync() }
        return try transactionHoldingGate()
    }

    /// The transaction for a writer that has just taken the gate (released on failure).
    private func transactionHoldingGate() throws -> Transaction {
        do {
            if let failure = syncMonitor.withLock({ closed ? StoreError.closed : failure }) { throw failure }
            if activeSize >= options.segmentSize { try rollSegment() }
            return Transaction(store: self, sequence: lastAppendedSequence + 1)
        } catch {
            releaseGate()
            throw error
        }
    }

    /// Runs `body` in one atomic transaction and commits it, like ``write(_:)``, without
    /// ever blocking a thread of the cooperative pool: the task waits for the write gate
    /// and (with `.full`) for the `fdatasync` that covers its commit as a suspended task,
    /// while other committers' syncs are shared with it (group commit). `body` runs on the
    /// caller's actor, synchronously.
    ///
    /// - Returns: the commit's sequence number, once durable per the store's durability.
    /// - Throws: `CancellationError` if the task is cancelled before its commit starts
    ///   (nothing is written); what `body` throws (nothing is written); as ``write(_:)``.
    @discardableResult
    public func asyncWrite(_ body: (Transaction) throws -> Void,
                           isolation: isolated (any Actor)? = #isolation) async throws -> UInt64 {
        let transaction = try await beginTransactionAsync()
        do {
            try body(transaction)
            try Task.checkCancellation()
        } catch {
            transaction.rollback()
            throw error
        }
        let (sequence, mustSync) = try transaction.commitWithoutWaiting()
        if mustSync { try await waitDurableAsync(sequence) }
        return sequence
    }

    /// Runs `body` in one atomic transaction and commits it; if `body` throws, nothing it
    /// wrote is kept and the error is rethrown.
    ///
    /// - Returns: the commit's sequence number (for a transaction that wrote nothing, the
    ///   sequence of the newest commit).
    /// - Throws: what `body` throws; ``StoreError/diskFull(_:)`` (nothing of this transaction
    ///   is kept); I/O errors. With `.full` durability, a commit that returned is on disk.
    @discardableResult
    public func write(_ body: (Transaction) throws -> Void) throws -> UInt64 {
        let transaction = try beginTransaction()
        do {
            try body(transaction)
        } catch {
            transaction.rollback()
            throw error
        }
        return try transaction.commit()
    }

    /// Forces every commit so far to stable storage (useful with `.normal` or `.none`).
    public func sync() throws {
        let target = syncMonitor.withLock { appendedSequence }
        try waitDurable(target)
    }

    // MARK: Appending (gate held)

    /// Appends `buffer` at the end of the active segment, remapping if needed.
    func appendToActive(_ buffer: ByteBuffer) throws {
        guard buffer.count > 0, let file = activeFile else { return }
        let end = activeSize + buffer.count
        guard end <= Int(UInt32.max) else {
            throw StoreError.invalidArgument("a transaction may not exceed 4 GiB in one segment")
        }
        if end > activeRegion.length {
            activeRegion = try file.map(length: Store.activeMappingLength(forSize: end * 2, segmentSize: options.segmentSize))
        }
        try file.write(buffer.bytes, at: activeSize)
        activeSize = end
        buffer.count = 0
    }

    /// Undoes an unfinished transaction's appends — always, since a write that failed
    /// part-way (a full disk) may have left bytes past `activeSize`. If even that fails the
    /// store stops taking writes: recovery will drop the uncommitted bytes on the next open.
    func truncateActive(to offset: Int) {
        guard let file = activeFile else { return }
        do {
            try file.truncate(to: offset)
            activeSize = offset
        } catch let error as StoreError {
            poison(error)
        } catch {
            poison(.io(op: "ftruncate", path: file.path, errno: EIO))
        }
    }

    /// Called after the commit record is appended (gate held): hands the new state to
    /// readers now (`.normal`, `.none`) or after its sync (`.full`).
    func publishCommit(sequence: UInt64) {
        lastAppendedSequence = sequence
        writerDirectory.sequence = sequence
        writerDirectory.active = SegmentView(id: activeID, region: activeRegion, length: activeSize, cipher: activeWriter.cipher)
        writerSpace[activeID]?.diskBytes = activeSize
        let state = PublishedState(directory: writerDirectory, space: writerSpace)
        syncMonitor.withLock {
            appendedSequence = sequence
            appendedEnd = (activeID, activeSize)
            appendedFile = activeFile
            // `.none` promises nothing durable: readers in other processes follow the log.
            if options.durability == .none { beacon?.publish(Beacon.State(segment: activeID, end: activeSize, sequence: sequence)) }
            if options.durability == .full {
                pendingPublish.append((sequence, state))
            }
        }
        if options.durability != .full {
            publishedLock.withLock { $0 = state }
        }
        considerAutomaticCompaction()
    }

    /// The offset up to which the active segment is known to be synced.
    func durableWatermark() -> UInt64 {
        syncMonitor.withLock { syncedEnd.segment == activeID ? UInt64(syncedEnd.end) : UInt64(dataStart) }
    }

    // MARK: Sealing

    /// Seals the full active segment (sync, hint file unless `writeHint` is false) and
    /// starts the next one.
    func rollSegment(writeHint: Bool = true) throws {
        guard let oldFile = activeFile else { return }
        let oldID = activeID, oldSize = activeSize
        do {
            try oldFile.syncData()
        } catch let error as StoreError {
            // As in leadSync: after a failed fdatasync the data's fate is unknown; stop writing.
            poison(error)
            throw error
        }
        markDurable(sequence: lastAppendedSequence, end: (oldID, oldSize))
        let next = try createNextSegment(sealing: oldID, at: oldSize)
        let sealed = SegmentView(id: oldID, region: activeRegion, length: oldSize, cipher: activeWriter.cipher)
        if writeHint { writeHintInBackground(for: sealed) }
        writerDirectory.setSealed(sealed)
        writerSpace[oldID]?.sealed = true
        writerSpace[oldID]?.diskBytes = oldSize
        writerSpace[next.id] = SegmentSpace(diskBytes: dataStart, sealed: false)
        // The old descriptor closes when the last holder lets go: a group-commit leader may
        // still be syncing it.
        activeFile = next.file
        activeID = next.id
        activeSize = dataStart
        activeRegion = next.region
        activeWriter = RecordWriter(cipher: next.cipher)
        activeHint = ActiveHint(limit: Store.activeHintLimit(segmentSize: options.segmentSize))
        writerDirectory.active = SegmentView(id: next.id, region: next.region, length: dataStart, cipher: next.cipher)
        logBytesSinceImage += oldSize
        // (Not for a compaction's roll: its switch would make the image stale at once.)
        if writeHint, logBytesSinceImage >= Store.imageInterval(keys: writerDirectory.keyCount, segmentSize: options.segmentSize) { writeIndexImageInBackground() }
        syncMonitor.withLock {
            appendedEnd = (next.id, dataStart)
            appendedFile = next.file
            syncedEnd = (next.id, dataStart)
            // The sealed segment was synced whole: followers may read all of it.
            beacon?.publish(Beacon.State(segment: next.id, end: dataStart,
                                         sequence: options.durability == .none ? lastAppendedSequence : syncedSequence))
        }
    }

    /// The next active segment: created (header synced), mapped, and named by the manifest
    /// beside the sealed one's exact length, before anything is committed to it. On failure
    /// the old manifest stands and the new file is removed (unless the store was taken out
    /// of service: the new manifest may be on disk).
    private func createNextSegment(sealing oldID: UInt32, at oldSize: Int)
        throws -> (id: UInt32, file: any StorageFile, cipher: FileCipher?, region: MappedRegion) {
        let newID = try takeFileNumber()
        let newFile: any StorageFile, newCipher: FileCipher?
        do {
            (newFile, newCipher) = try Store.createSegment(path: path, id: newID, cipher: storeCipher, fileSystem: fileSystem)
        } catch let error as StoreError {
            // A full disk is worth retrying at the next transaction; a failed sync is not.
            if error.isSyncFailure { poison(error) }
            throw error
        }
        let newRegion: MappedRegion
        do {
            newRegion = try newFile.map(length: Store.activeMappingLength(forSize: dataStart, segmentSize: options.segmentSize))
        } catch {
            newFile.close()
            throw error
        }
        do {
            try updateManifest { manifest in
                manifest.entries[oldID] = Manifest.Entry(kind: .log, sealedLength: oldSize)
                manifest.entries[newID] = Manifest.Entry(kind: .log, sealedLength: nil)
            }
        } catch {
            newFile.close()
            if syncMonitor.withLock({ failure }) == nil { try? fileSystem.remove(path + "/" + segmentName(newID)) }
            throw error
        }
        return (newID, newFile, newCipher, newRegion)
    }

    /// The most memory the active segment's recorded hint entries may take: a quarter of a
    /// segment, at most 16 MiB (a 64 MiB segment of records of ~150 bytes or more fits).
    static func activeHintLimit(segmentSize: Int) -> Int { min(16 << 20, segmentSize / 4) }

    /// Hands a just-sealed segment's hint to the background writer (gate held): the
    /// entries its appends recorded move over with it, so the roll costs no scan, encoding
    /// or file write. Encoding a hint of a large segment, or scanning one whose entries were
    /// dropped, took up to 0.8 s inside the commit that sealed it.
    private func writeHintInBackground(for segment: SegmentView) {
        let job = SealedHintJob(segment: segment, entries: activeHint, space: writerSpace[segment.id],
                                lastSequence: lastAppendedSequence)
        // The job holds what it writes with, not the store: holding the store, it could run
        // the store's deinit (a store dropped without `close()`) on this queue, whose close
        // then waits for this queue; and it would keep the store's lock held meanwhile.
        sealedHints.async { [path, storeCipher, fileSystem, sealScanCount] in
            Store.writeHint(job, path: path, cipher: storeCipher, fileSystem: fileSystem, scans: sealScanCount)
        }
    }

    // MARK: Index image

    /// How much log a roll lets accumulate before it writes a new index image: twice the
    /// image's size (about 48 bytes a key), at least two segments. An open after a crash
    /// replays at most about that much onto the last image; images add at most half as many
    /// bytes again as the log.
    static func imageInterval(keys: Int, segmentSize: Int) -> Int { max(2 * segmentSize, keys * 96) }

    /// What an image of the writer's index would cover now (gate held): every segment the
    /// space accounting knows, the active one as far as it is written. Nil in an encrypted
    /// store, and while a compaction is between publishing its outputs and switching the
    /// index to them (the index points into inputs MANIFEST no longer lists).
    func indexImageCoverage() -> IndexImage.Coverage? {
        guard storeCipher == nil, Set(manifestLock.withLock { $0.entries.keys }) == Set(writerSpace.keys) else { return nil }
        return IndexImage.Coverage(
            segments: writerSpace.keys.sorted().map { id in
                let space = writerSpace[id]!
                return IndexImage.CoveredSegment(id: id, wasActive: !space.sealed, length: space.sealed ? space.diskBytes : activeSize,
                                                 rawValueBytes: space.rawValueBytes, storedValueBytes: space.storedValueBytes,
                                                 liveBytes: space.liveBytes)
            },
            sequence: lastAppendedSequence)
    }

    /// Hands the writer's index, as it stands, to the background writer to be written as
    /// the index image (gate held; by a roll, and at the end of a compaction). Copying the
    /// directory is O(1): the writer copies the pages it changes from now on, as for any
    /// snapshot. The caller makes sure everything the image covers is durable (a roll has
    /// just synced the sealed segment, and the new one holds only its header).
    func writeIndexImageInBackground() {
        guard let coverage = indexImageCoverage() else { return }
        logBytesSinceImage = 0
        lastImageCoverage = coverage
        let tables = writerDirectory.tables, seed = writerDirectory.seed
        sealedHints.async { [path, fileSystem] in
            Store.writeIndexImage(tables: tables, seed: seed, coverage: coverage, path: path, fileSystem: fileSystem)
        }
    }

    /// Writes `tables` as the index image covering `coverage`; on failure, removes any
    /// image of before (it may no longer fit) and carries on: the image is a cache.
    static func writeIndexImage(tables: [UInt32: HashIndex], seed: UInt64, coverage: IndexImage.Coverage,
                                path: String, fileSystem: any FileSystem) {
        do {
            let bytes = try IndexImage.encode(tables: tables, seed: seed, coverage: coverage)
            try Store.writeFileAtomically(directory: path, name: IndexImage.fileName, bytes: bytes, fileSystem: fileSystem, durable: false)
        } catch {
            try? fileSystem.remove(path + "/" + IndexImage.fileName)
        }
    }

    /// Waits until every hint handed to the background writer is written (or given up).
    func waitForSealedHints() {
        sealedHints.sync {}
    }

    /// Writes the hint file of a sealed segment, from the entries its appends recorded
    /// when they fit (no second read of the segment), else from a scan of it. A hint is a
    /// cache: on failure the next open scans the segment instead, so errors are not reported.
    private static func writeHint(_ job: SealedHintJob, path: String, cipher storeCipher: StoreCipher?,
                                  fileSystem: any FileSystem, scans sealScanCount: Locked<Int>) {
        let segment = job.segment, id = segment.id, length = segment.length
        let space = job.space ?? SegmentSpace(diskBytes: length, sealed: true)
        var hint = job.entries.hintFile(segmentID: id, segmentLength: length, lastSequence: job.lastSequence,
                                        rawValueBytes: space.rawValueBytes, storedValueBytes: space.storedValueBytes)
        if hint == nil, let reader = segment.reader() {
            sealScanCount.withLock { $0 += 1 }
            var entries: [ScannedEntry] = []
            let outcome = SegmentScanner.scan(reader, segmentID: id, previousSequence: 0) { found, _ in
                entries.append(contentsOf: found)
            }
            guard outcome.damage == nil, outcome.committedEnd == length else { return }
            hint = HintFile.encode(segmentID: id, segmentLength: length, entries: entries,
                                   lastSequence: outcome.lastSequence, rawValueBytes: outcome.rawValueBytes,
                                   storedValueBytes: outcome.storedValueBytes)
        }
        guard let hint else { return }
        try? Store.writeHint(path: path, id: id, bytes: hint, cipher: storeCipher, fileSystem: fileSystem, durable: false)
    }
}

/// What the background writer needs to write one sealed segment's hint, taken at the roll.
/// @unchecked: the segment is sealed (its bytes never change again) and its mapping lives
/// as long as this value; the recorded entries and figures are copies owned by the job.
struct SealedHintJob: @unchecked Sendable {
    let segment: SegmentView
    let entries: ActiveHint
    let space: SegmentSpace?
    let lastSequence: UInt64
}
