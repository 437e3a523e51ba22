// Store: the public face of the engine. This file holds the Store's state and its read
// API; opening and recovery are in Store+Open.swift, the commit path in
// Store+Commit.swift, group commit and syncing in Store+Sync.swift.
//
// Concurrency model:
// - One writer at a time holds the write gate (`gateMonitor`) from `beginTransaction` to
//   commit or rollback; it alone touches the `writer*` fields and the active file.
// - Readers take the published KeyDirectory under `publishedLock` (a few nanoseconds)
//   and then read the mapped segments with no lock at all.
// - `syncMonitor` coordinates group commit: which sequence is appended, which is
//   synced, which states wait to be published once their sync completes.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Space accounting of one segment, kept current on every commit.
struct SegmentSpace: Sendable, Equatable {
    var diskBytes: Int
    var liveBytes: Int = 0
    var rawValueBytes: Int = 0
    var storedValueBytes: Int = 0
    var sealed: Bool
    var kind: SegmentKind = .log
    /// nil for log segments, whose position is (number, 0).
    var position: ReplayPosition? = nil
    /// Compacted segments: the newest sequence of the segments they replaced, and the
    /// durable sequence their compaction relied on (both carried into later compactions).
    var coversThrough: UInt64 = 0
    var reliesOn: UInt64 = 0
}

extension PublishedState {
    /// Checks the space accounting against the index (tests call it after writes and
    /// compactions): every entry points into a segment the accounting and the directory
    /// know, each segment's `liveBytes` is the total size of the records the index points
    /// at in it and never exceeds its `diskBytes`, and exactly one segment — the active
    /// one — is unsealed. Returns the first violation, or nil.
    func checkInvariants() -> String? {
        var live: [UInt32: Int] = [:]
        var unknown: UInt32?
        for (_, index) in directory.tables {
            do {
                try index.forEachLocation { location in
                    if space[location.segment] == nil || directory.segment(location.segment) == nil { unknown = location.segment }
                    live[location.segment, default: 0] += Int(location.size)
                }
            } catch {
                return "the index cannot be read: \(error)"
            }
        }
        if let unknown { return "the index points into segment \(unknown), which the accounting or the directory does not know" }
        for (number, segment) in space.sorted(by: { $0.key < $1.key }) {
            if segment.liveBytes != live[number, default: 0] {
                return "segment \(number): liveBytes \(segment.liveBytes), but the index points at \(live[number, default: 0]) bytes in it"
            }
            if segment.liveBytes > segment.diskBytes { return "segment \(number): \(segment.liveBytes) live bytes of \(segment.diskBytes)" }
        }
        let unsealed = space.filter { !$0.value.sealed }.map(\.key)
        if unsealed.count != 1 || unsealed.first != directory.active?.id {
            return "unsealed segments \(unsealed.sorted()), active segment \(directory.active.map { "\($0.id)" } ?? "none")"
        }
        return nil
    }
}

extension Store {
    /// The published state's invariants (``PublishedState/checkInvariants()``), for tests.
    func checkInvariants() -> String? {
        publishedLock.withLock { $0 }.checkInvariants()
    }
}

/// What readers see: the newest published index and the space accounting that goes with
/// it. Immutable, so a reader takes it with one reference under `publishedLock` and then
/// reads without any lock.
final class PublishedState: Sendable {
    let directory: KeyDirectory
    let space: [UInt32: SegmentSpace]
    let closed: Bool

    init(directory: KeyDirectory, space: [UInt32: SegmentSpace], closed: Bool = false) {
        self.directory = directory
        self.space = space
        self.closed = closed
    }
}

/// A log-structured key-value store: a directory of append-only segment files, an
/// in-memory hash index, and crash-safe multi-record transactions.
///
/// Keys and values are bytes; keys live in numbered tables (`UInt32`). Writes go through
/// ``write(_:)`` (or ``beginTransaction()``), one writer at a time, each commit atomic and
/// (with ``Durability/full``) durable when it returns. Reads (``get(table:key:)``,
/// ``snapshot()``) never wait for writers: each read sees one consistent commit.
///
/// Costs: `get` is one hash-map lookup and one checksum of the record read; `snapshot()`
/// is O(1); a commit writes its records once, sequentially, plus one `fdatasync` shared
/// with concurrent committers. Start-up reads hint files, not values.
///
/// Failure modes: every error is a ``StoreError``; nothing traps on bad input or a bad file.
/// A second process opening the same directory for writing waits up to
/// ``StoreOptions/lockWaitTimeout``, then gets ``StoreError/locked(_:)``; read-only opens
/// follow the writer instead, and with ``StoreOptions/multiProcessWriting`` processes
/// write in turns.
public final class Store: @unchecked Sendable {
    // @unchecked: mutable fields below are guarded as documented beside each group.

    /// The store's directory.
    public let directory: URL
    let path: String
    let options: StoreOptions
    /// The store's key (``StoreOptions/encryptionKey``); nil for a plain store.
    let storeCipher: StoreCipher?
    /// Where the first record of a segment lies (after the header, and the preamble when encrypted).
    let dataStart: Int
    var fileSystem: any FileSystem { options.fileSystem }
    let fileLock: any FileLock
    /// True for a store that follows the writers of other processes: a read-only open made
    /// while a writer held the store (it reads the durable prefix of the log that writer
    /// published) or after the last one closed cleanly (it reads what that one recorded),
    /// and a store written in turns (``StoreOptions/multiProcessWriting``) between its
    /// transactions. ``refresh()`` moves it forward (see ``StoreOptions/readOnly``).
    public let isFollowingAWriter: Bool
    /// The writer's published durable state (HEAD); nil read-only.
    let beacon: Beacon?
    /// Following a writer: the state of its log this store has read up to, and that
    /// state's segment, open (gate).
    var followed: Beacon.State?
    var followedFile: (any StorageFile)?
    /// Written in turns: the newest commit this process made and reported to the commit
    /// observer at commit, so that following the log never reports it again (gate).
    var reportedThrough: UInt64 = 0
    /// Following a writer: the thread refreshing this store when it publishes (WriterWatch.swift).
    let writerWatch = Locked<WriterWatch?>(nil)

    // Guarded by `publishedLock`.
    let publishedLock: Locked<PublishedState>

    // Guarded by the write gate (`gateMonitor` + `gateBusy`).
    let gateMonitor = Monitor()
    var gateBusy = false
    /// Who holds the gate: the task (valid across awaits, on whichever thread it resumes)
    /// or, outside any task, the thread. Only used to refuse a nested write by its holder.
    var gateHolder: GateOwner?
    /// Told of every commit while the gate is still held, before readers can see it
    /// (the object layer records its change sets here). Set under the gate.
    var commitObserver: (@Sendable (_ sequence: UInt64, _ note: (any Sendable)?) -> Void)?
    /// Tasks waiting for the gate (`asyncWrite`), first come first served.
    var gateWaiters: [GateWaiter] = []
    var writerDirectory: KeyDirectory
    var writerSpace: [UInt32: SegmentSpace]
    var activeFile: (any StorageFile)?
    var activeID: UInt32
    var activeSize: Int
    var activeRegion: MappedRegion
    /// Encodes (and, encrypted, seals) records for the active segment.
    var activeWriter: RecordWriter
    /// The active segment's hint entries, recorded as records are appended, so sealing the
    /// segment writes its hint without reading the segment again.
    var activeHint: ActiveHint
    /// Seals that had to scan their segment for its hint (the recorded entries had been
    /// dropped): tests check that a large transaction does not cause one. Reading it waits
    /// for the hints being written.
    var sealScans: Int {
        waitForSealedHints()
        return sealScanCount.withLock { $0 }
    }
    let sealScanCount = Locked(0)
    /// Writes the hint files of sealed segments, one at a time, off the commit path: a
    /// segment's roll only hands its recorded entries over (docs/ARCHITECTURE.md, "Derived
    /// data"). Compaction and close wait for it (`waitForSealedHints`).
    let sealedHints = DispatchQueue(label: "strata.sealed-hints")
    var lastAppendedSequence: UInt64
    /// What the index image on disk covers when the store was opened from it: close writes
    /// a new image only if the store has moved on since.
    let openedImageCoverage: IndexImage.Coverage?
    /// The key of the index's hash (IndexHash.swift), fixed from open to close.
    let indexSeed: UInt64
    /// Log bytes sealed since the last index image was handed to be written (gate).
    var logBytesSinceImage = 0
    /// What the newest index image covers: the one opened, or the last handed to the
    /// background writer (gate).
    var lastImageCoverage: IndexImage.Coverage?

    // Guarded by `fileNumbers`: the next number for a new segment file (log or compacted).
    let fileNumbers: Locked<UInt32>
    /// The segments MANIFEST lists, as last written. Taken inside the write gate by a roll,
    /// without it by a compaction; never held while taking another lock but `syncMonitor`.
    let manifestLock: Locked<Manifest>

    // Guarded by `compactionMonitor`: one compaction at a time; close cancels them.
    let compactionMonitor = Monitor()
    var compactionRunning = false
    var compactionCancelled = false
    var backgroundCompactionQueued = false
    var compactionRecheckRequested = false
    // Guarded by the write gate.
    var commitsSinceCompactionCheck = 0
    /// Deleted segments that snapshots may still map (for `stats.pinnedBytes`).
    let retiredSegments = Locked<[RetiredSegment]>([])
    /// Retired files renamed aside and not yet deleted (kept whole while a snapshot maps
    /// them: truncating a mapped file would fault its readers), and how many names were
    /// handed out.
    let doomedFiles = Locked<(files: [String], named: UInt64)>(([], 0))
    /// Live snapshots, weakly held (for `stats.oldestSnapshot…`), and the count at which
    /// the next snapshot sweeps out the released ones.
    let snapshotRegistry = Locked<(tokens: [WeakSnapshotToken], sweepAt: Int)>(([], 64))

    // Guarded by `syncMonitor`.
    let syncMonitor = Monitor()
    var syncedSequence: UInt64
    var syncedEnd: (segment: UInt32, end: Int)
    var syncInProgress = false
    var appendedSequence: UInt64
    var appendedEnd: (segment: UInt32, end: Int)
    var appendedFile: (any StorageFile)?
    var pendingPublish: [(sequence: UInt64, state: PublishedState)] = []
    var failure: StoreError?
    var closed = false
    /// Tasks waiting for their commit to be durable (`asyncWrite`), resumed by whichever
    /// sync covers them; the async syncer thread leads syncs while any wait.
    var durableWaiters: [(sequence: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    var asyncSyncerRunning = false

    /// Opens (creating if needed) the store in `directory`.
    ///
    /// - Throws: ``StoreError/locked(_:)`` if another process still has it open for writing
    ///   after ``StoreOptions/lockWaitTimeout`` (a writable open; read-only ones follow that
    ///   writer); ``StoreError/corrupted(segment:offset:reason:)`` if a file
    ///   is damaged beyond what a crash can cause; ``StoreError/invalidArgument(_:)`` for bad
    ///   options. A torn tail left by a crash is repaired silently: only the transactions
    ///   whose commit record is intact are kept.
    public init(directory: URL, options requested: StoreOptions = StoreOptions()) throws {
        try requested.validate()
        var options = requested
        options.multiProcessWriting = requested.multiProcessWriting && !requested.readOnly
        if options.multiProcessWriting {
            // Writing in turns: a writer's open (creating the store, or repairing what a
            // crash left) and close, then this store follows, holding no writer lock.
            try Store(directory: directory, options: Store.turnOptions(requested, atOpen: true)).close()
            options.readOnly = true
        }
        self.directory = directory
        self.path = directory.path
        self.options = options
        storeCipher = options.cipher
        dataStart = SegmentReader.dataStart(encrypted: storeCipher != nil)
        let fs = options.fileSystem
        if options.readOnly {
            guard fs.fileExists(path) else { throw StoreError.io(op: "open", path: path, errno: ENOENT) }
        } else {
            // A directory made here survives a crash only once its parent's entry for it is
            // synced: without this, a crash could lose the store with commits acknowledged.
            for made in try fs.createDirectory(path) { try fs.syncDirectory(parentDirectory(of: made)) }
        }
        var lock: any FileLock
        var following = false
        var followFrom: Beacon.State?
        do {
            if options.multiProcessWriting { throw StoreError.locked(path + "/LOCK") }
            lock = try Store.lock(path + "/LOCK", options: options)
            if options.readOnly, let clean = Store.closedWriterState(path: path, cipher: options.cipher, fileSystem: fs) {
                // No writer, and the last one closed cleanly: read it as a follower all the
                // same, so that a writer opening later is not kept out by this reader.
                let readers = try Store.lock(path + "/" + Beacon.readersFileName, options: options, waitSeconds: 1)
                lock.unlock()
                lock = readers
                following = true
                followFrom = clean
            }
        } catch StoreError.locked where options.readOnly {
            // A writer holds the store: read what it made durable, and say so to it (it then
            // deletes retired segments whole, never truncating them under our mappings).
            lock = try Store.lock(path + "/" + Beacon.readersFileName, options: options, waitSeconds: 1)
            following = true
        }
        let recovered: Recovered
        do {
            if options.multiProcessWriting {
                recovered = try Store.recoverFollowingInTurns(path: path, options: options)
            } else if following {
                do {
                    recovered = try Store.recoverFollowing(path: path, options: options, at: followFrom)
                } catch let error where error is Store.WriterLeft || followFrom != nil {
                    // It closed (or died) before publishing, or the clean state cannot be
                    // followed (a store from before manifests): the store as it lies on disk.
                    lock.unlock()
                    lock = try Store.lock(path + "/LOCK", options: options)
                    following = false
                    recovered = try Store.recover(path: path, options: options)
                }
            } else {
                recovered = try Store.recover(path: path, options: options)
            }
        } catch {
            lock.unlock()
            throw error
        }
        fileLock = lock
        isFollowingAWriter = following
        followed = recovered.followed
        followedFile = recovered.followedFile
        publishedLock = Locked(PublishedState(directory: recovered.directory, space: recovered.space))
        writerDirectory = recovered.directory
        writerSpace = recovered.space
        activeFile = recovered.activeFile
        activeID = recovered.activeID
        activeSize = recovered.activeSize
        activeRegion = recovered.activeRegion
        activeWriter = RecordWriter(cipher: recovered.activeCipher)
        activeHint = recovered.activeHint
        lastAppendedSequence = recovered.directory.sequence
        openedImageCoverage = recovered.imageCoverage
        lastImageCoverage = recovered.imageCoverage
        indexSeed = recovered.directory.seed
        fileNumbers = Locked(recovered.nextFileNumber)
        manifestLock = Locked(recovered.manifest)
        syncedSequence = recovered.directory.sequence
        appendedSequence = recovered.directory.sequence
        syncedEnd = (recovered.activeID, recovered.activeSize)
        appendedEnd = syncedEnd
        appendedFile = recovered.activeFile
        if options.readOnly {
            beacon = nil
        } else {
            do {
                // `READERS` exists for followers that may not create files here (another
                // user's): they lock it, and lock bytes of it for the segments they map.
                if !fs.fileExists(path + "/" + Beacon.readersFileName) {
                    try fs.openFile(path + "/" + Beacon.readersFileName, create: true, readOnly: false).close()
                }
                beacon = try Beacon(path: path, fileSystem: fs, state: Beacon.State(
                    segment: recovered.activeID, end: recovered.activeSize, sequence: recovered.directory.sequence))
            } catch {
                recovered.activeFile?.close()
                fileLock.unlock()
                throw error
            }
        }
        if options.durability == .normal && !options.readOnly {
            startBackgroundSyncer()
        }
        if let image = recovered.directory.image, options.checksImageInBackground {
            // Each page is checked when first touched; this checks the rest soon after, so
            // damage is found (and the covered log's mappings released) within milliseconds.
            DispatchQueue.global(qos: .utility).async { image.checkAll() }
        }
        if !options.readOnly, let shouldCompact = options.shouldCompactOnOpen {
            let space = recovered.space.values
            if shouldCompact(space.reduce(0) { $0 + $1.diskBytes }, space.reduce(0) { $0 + $1.liveBytes }) {
                try compact()
            }
        }
    }

    /// Opens the store at a file-system path.
    public convenience init(path: String, options: StoreOptions = StoreOptions()) throws {
        try self.init(directory: URL(fileURLWithPath: path), options: options)
    }

    deinit {
        // Without waiting for background compactions: each running one holds a strong
        // reference, so none runs now (deinit may run on a compaction thread as it lets go,
        // its work done); one queued but not yet started finds the store gone and never
        // starts — waiting for it to report would wait forever.
        try? close(waitingForCompactions: false)
    }

    // MARK: Reads

    /// The newest committed value of `key` in `table`, or nil if there is none.
    ///
    /// - Throws: ``StoreError/corrupted(segment:offset:reason:)`` if the record fails its
    ///   checksum; ``StoreError/closed`` after ``close()``.
    public func get(table: UInt32, key: some ContiguousBytes) throws -> [UInt8]? {
        let state = try currentState()
        return try key.withUnsafeBytes { raw in
            let indexKey = IndexKey(raw)
            guard let location = state.directory.lookup(table: table, key: indexKey) else { return nil }
            return try state.directory.readValue(table: table, key: indexKey, at: location)
        }
    }

    /// A consistent, read-only view of the store as of the newest commit. Cheap (O(1)),
    /// `Sendable`, and unaffected by later writes for as long as it lives.
    public func snapshot() -> Snapshot {
        let directory = publishedLock.withLock { $0.directory }
        let token = SnapshotToken(sequence: directory.sequence, created: monotonicSeconds())
        snapshotRegistry.withLock { registry in
            // Swept when the list doubles, not at every snapshot past 64: 64 tasks each
            // holding a realm kept it at 64 live tokens, and every commit swept them all.
            if registry.tokens.count >= registry.sweepAt {
                registry.tokens.removeAll { $0.token == nil }
                registry.sweepAt = max(64, registry.tokens.count * 2)
            }
            registry.tokens.append(WeakSnapshotToken(token: token))
        }
        return Snapshot(directory: directory, token: token)
    }

    /// The key the store was opened with (``StoreOptions/encryptionKey``): for stores the
    /// object layer keeps beside it, such as a migration's scratch store.
    package var encryptionKey: Data? { options.encryptionKey }

    /// The mode of the files the store creates (``StoreOptions/fileMode``).
    package var fileMode: UInt16 { options.fileMode }

    /// The sequence number of the newest commit visible to readers.
    public var lastSequence: UInt64 {
        publishedLock.withLock { $0.directory.sequence }
    }

    /// The newest published state; throws once the store is closed.
    @inline(__always)
    func currentState() throws -> PublishedState {
        let state = publishedLock.withLock { $0 }
        if state.closed { throw StoreError.closed }
        return state
    }

    // MARK: Stats

    /// Where the store's bytes are, as of the newest published commit.
    public var stats: StoreStats {
        let state = publishedLock.withLock { $0 }
        var details: [SegmentStats] = []
        var live = 0, disk = 0, raw = 0, stored = 0
        for id in state.space.keys.sorted() {
            let space = state.space[id]!
            details.append(SegmentStats(id: id, diskBytes: space.diskBytes, liveBytes: space.liveBytes, sealed: space.sealed,
                                        compacted: space.kind == .compacted))
            live += space.liveBytes
            disk += space.diskBytes
            raw += space.rawValueBytes
            stored += space.storedValueBytes
        }
        var otherFiles = 0
        if let names = try? fileSystem.listDirectory(path) {
            for name in names where !name.hasSuffix(".seg") {
                if let file = try? fileSystem.openFile(path + "/" + name, create: false, readOnly: true) {
                    otherFiles += (try? file.size()) ?? 0
                    file.close()
                }
            }
        }
        let pinned = retiredSegments.withLock { list -> (bytes: Int, segments: Int) in
            list.removeAll { $0.region == nil }
            return (list.reduce(0) { $0 + $1.bytes }, list.count)
        }
        let oldest = snapshotRegistry.withLock { registry -> SnapshotToken? in
            registry.tokens.removeAll { $0.token == nil }
            return registry.tokens.compactMap(\.token).min { $0.sequence < $1.sequence }
        }
        return StoreStats(
            segments: details.count, liveBytes: live, deadBytes: max(0, disk - live), diskBytes: disk + otherFiles,
            keys: state.directory.keyCount, indexBytes: state.directory.memoryBytes,
            compressionRatio: stored > 0 ? Double(raw) / Double(stored) : 1,
            lastSequence: state.directory.sequence, segmentDetails: details,
            pinnedBytes: pinned.bytes, pinnedSegments: pinned.segments,
            oldestSnapshotSequence: oldest?.sequence,
            oldestSnapshotAge: oldest.map { monotonicSeconds() - $0.created })
    }

    /// Takes a fresh segment file number.
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` once every number up to `UInt32.max` has
    ///   been used (a directory can hold files with numbers that high).
    func takeFileNumber() throws -> UInt32 {
        let number = fileNumbers.withLock { next -> UInt32? in
            guard next < .max else { return nil }
            defer { next += 1 }
            return next
        }
        guard let number else {
            throw StoreError.invalidArgument("no segment file number is left after \(UInt32.max - 1): copy the store's data to a new store")
        }
        return number
    }

    /// The store's lock: shared for a read-only open (at once or `locked`), exclusive for a
    /// writer, which waits up to ``StoreOptions/lockWaitTimeout`` for other processes —
    /// polling, since `flock` cannot wait with a deadline.
    private static func lock(_ path: String, options: StoreOptions, waitSeconds: Double? = nil) throws -> any FileLock {
        let deadline = monotonicSeconds() + (waitSeconds ?? (options.readOnly ? 0 : max(0, options.lockWaitTimeout)))
        var pause: UInt32 = 2_000
        while true {
            do {
                return try options.fileSystem.lock(path, shared: options.readOnly)
            } catch StoreError.locked(let path) {
                guard monotonicSeconds() < deadline else { throw StoreError.locked(path) }
                usleep(pause)
                pause = min(pause * 2, 50_000)
            }
        }
    }

    // MARK: Closing

    /// Waits for the running write transaction, syncs, records a clean shutdown and
    /// releases the lock. Later calls on the store throw ``StoreError/closed``; snapshots
    /// taken before stay readable. Calling `close()` twice is harmless.
    public func close() throws {
        try close(waitingForCompactions: true)
    }

    private func close(waitingForCompactions: Bool) throws {
        if gateHeldByCaller() {
            throw StoreError.invalidArgument("close() called inside a write transaction of the same task or thread")
        }
        writerWatch.withLock { watch in
            watch?.stop()
            watch = nil
        }
        // A compaction needs the gate to finish, so it is stopped before close takes it.
        if !options.readOnly {
            cancelCompactions(waiting: waitingForCompactions)
            if waitingForCompactions { reclaimDoomedFiles(finally: true) }
        }
        try acquireGate(forClose: true)
        defer { releaseGate() }
        // No roll can hand over another hint now (the gate is held): the last ones are on
        // disk before the clean-shutdown marker says the hints may be trusted.
        waitForSealedHints()
        let (alreadyClosed, failed) = syncMonitor.withLock { (closed, failure) }
        if alreadyClosed { return }
        var closeError: Error?
        if !options.readOnly, failed == nil, let file = activeFile {
            do {
                try file.syncData()
                // Committers still waiting for a sync may now return: their commits are on disk.
                markDurable(sequence: lastAppendedSequence, end: (activeID, activeSize))
                writeActivePrefixHint()
                writeIndexImage()
                try writeCleanShutdownMarker()
            } catch {
                closeError = error
            }
        }
        syncMonitor.withLock {
            closed = true
            resumeDurableWaitersLocked()
            syncMonitor.broadcast()
        }
        publishedLock.withLock { $0 = PublishedState(directory: $0.directory, space: $0.space, closed: true) }
        activeFile = nil   // its descriptor closes when no sync holds it any more
        followedFile?.close()
        followedFile = nil
        if let beacon {
            beacon.close()
            try? fileSystem.remove(path + "/" + Beacon.fileName)
        }
        fileLock.unlock()
        if let closeError { throw closeError }
    }

    /// The active segment's hint as it stands, so the next open reads only what is appended
    /// after this (nothing, if the store is next opened after a clean close). A cache: a
    /// failure to write it costs only a slower next open.
    private func writeActivePrefixHint() {
        guard activeSize > dataStart, let space = writerSpace[activeID],
              let hint = activeHint.hintFile(segmentID: activeID, segmentLength: activeSize, lastSequence: lastAppendedSequence,
                                             rawValueBytes: space.rawValueBytes, storedValueBytes: space.storedValueBytes) else { return }
        try? Store.writeHint(path: path, id: activeID, bytes: hint, cipher: storeCipher, fileSystem: fileSystem)
    }

    /// The index as an image (IndexImage.swift), so the next open maps it instead of
    /// rebuilding it from the hints, unless the image on disk is already this index. A cache,
    /// like a hint: not synced, checked at open, and a failure to write it costs only a
    /// slower next open. None in an encrypted store.
    ///
    /// Nor when the newest image still fits and the log after it is small (at most 4 bytes a
    /// key, 1 MiB at least): writing a new one costs more (~50 ms a million keys) than the
    /// next open's replay of that much log. Always when a page of the image this open
    /// mapped failed its check: the file is damaged, and a new one (or, if a page could not
    /// be rebuilt, none) replaces it.
    private func writeIndexImage() {
        let replaceDamaged = writerDirectory.image?.hadFailures ?? false
        guard let coverage = indexImageCoverage(), coverage != lastImageCoverage || replaceDamaged else { return }
        if let last = lastImageCoverage, !replaceDamaged {
            let segments = coverage.segments.sorted { a, b in !a.wasActive && b.wasActive || (a.wasActive == b.wasActive && a.id < b.id) }
                .map { (number: $0.id, size: $0.length, kind: writerSpace[$0.id]?.kind ?? .log) }
            if IndexImage.mismatch(last, found: segments) == nil,
               IndexImage.replayBytes(last, found: segments).after <= max(1 << 20, writerDirectory.keyCount * 4) { return }
        }
        Store.writeIndexImage(tables: writerDirectory.tables, seed: writerDirectory.seed, coverage: coverage,
                              path: path, fileSystem: fileSystem)
    }

    /// The marker's rename is not synced: the open that follows a close removed any
    /// earlier marker durably, so a crash can lose only this one, and a store without a
    /// marker is recovered as after a crash (correct, if slower). Its bytes are synced before
    /// the rename, so a marker that survives is whole.
    private func writeCleanShutdownMarker() throws {
        let marker = CleanShutdown.Marker(segmentID: activeID, segmentLength: activeSize, lastSequence: lastAppendedSequence)
        try Store.writeFileAtomically(directory: path, name: CleanShutdown.fileName,
                                      bytes: try Store.sealSmallFile(CleanShutdown.encode(marker), kind: .cleanMarker, cipher: storeCipher),
                                      fileSystem: fileSystem, syncingDirectory: false)
    }
}
