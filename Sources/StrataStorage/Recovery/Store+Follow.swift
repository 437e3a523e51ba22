// Following a writer in another process: a read-only store opened beside a writer (see
// Beacon.swift) moves forward by reading the log the writer has made durable since.
//
// Why tail the log rather than reopen: a reopen rebuilds the index (milliseconds with an
// index image, more without), and it cannot say what changed. Tailing reads only the new
// records, applies them to a copy of the index (copy-on-write, as a commit does), and hands
// each transaction's changes to the commit observer, so the object layer derives exact
// change sets for notifications.
//
// What may be read: never past the beacon's durable end (a commit not yet synced can vanish
// in a crash), and a sealed segment exactly to its sealed length (the manifest's, or, for
// the segment being followed when a compaction unlinked it first, its size through the
// descriptor the follower keeps open). Each new segment must continue the sequence where the
// last one ended. When the log cannot be walked that way — a compaction consumed a segment
// not yet read, a writer that crashed and came back with a different log — the follower
// opens the store again beside the writer (bounded recovery from the beacon), and what
// changed in between is reported as unknown. A compaction of segments already read changes
// nothing a follower sees (the same data, elsewhere); the follower then reopens at the state
// it has read, so that it lets go of the retired files (the writer, seeing readers, unlinks
// them whole, so the mappings stay valid until then).

import Foundation

/// What one commit read from a writer in another process changed, in record order: the
/// note a following store hands its commit observer (``Store/refresh()``).
package struct TailedCommit: Sendable {
    /// One record of the commit: a put or a delete of `key` in `table`.
    package struct Change: Sendable {
        package let table: UInt32
        package let key: [UInt8]
        /// The value before the commit; nil if the key had none. A value that could not be
        /// read (damaged) is nil with `existed` true.
        package let old: StoredValue?
        package let existed: Bool
        /// The value the commit wrote; nil for a delete (or a value that could not be read).
        package let new: StoredValue?
        package let isDelete: Bool
    }

    package var changes: [Change] = []
}

extension Store {
    /// Moves a store that follows other processes' writers (see ``isFollowingAWriter``) to
    /// the newest commit they have made durable, reading only the log written since.
    /// Snapshots taken before keep what they saw.
    ///
    /// Cheap when nothing is new (one read of the writer's 36-byte `HEAD`). A store that
    /// follows no writer (a writer itself, or read-only of a store a crashed writer left)
    /// has nothing to follow: it returns false.
    ///
    /// - Returns: whether newer commits were read.
    /// - Throws: ``StoreError/closed`` after ``close()``;
    ///   ``StoreError/corrupted(segment:offset:reason:)`` when the log the writer published
    ///   as durable does not read back; ``StoreError/io(op:path:errno:)``.
    @discardableResult
    public func refresh() throws -> Bool {
        guard isFollowingAWriter else { return false }
        try acquireGate()
        defer { releaseGate() }
        return try followHoldingGate()
    }

    /// ``refresh()`` with the gate held, to `explicit` if given (the state a turn of this
    /// process closed at: read from `HEAD` or `CLEAN` it could already be another process's,
    /// or momentarily absent as that one opens). Commits this process wrote in turns
    /// (``reportedThrough``) are read without being reported again.
    func followHoldingGate(to explicit: Beacon.State? = nil) throws -> Bool {
        guard !syncMonitor.withLock({ closed }) else { throw StoreError.closed }
        let quietThrough = reportedThrough
        guard let from = followed, let target = explicit ?? Beacon.read(path: path, fileSystem: fileSystem) ?? closedWriterState(),
              target != from else { return false }
        let state = publishedLock.withLock { $0 }
        var tail = LogTail(store: self, directory: state.directory, space: state.space)
        do {
            try tail.read(from: from, to: target)
        } catch let error as LogTail.Unwalkable {
            tail.closeNewFile()
            options.logger?.info("following the writer by reopening: \(error.reason)", metadata: ["store": "\(path)"])
            return try reopenFollowing(at: target, quietThrough: quietThrough)
        } catch {
            tail.closeNewFile()
            throw error
        }
        for (sequence, commit) in tail.commits where sequence > quietThrough { commitObserver?(sequence, commit) }
        adopt(target, directory: tail.directory, space: tail.space, activeID: tail.activeID, activeRegion: tail.activeRegion,
              activeSize: target.end, activeCipher: tail.activeCipher, file: tail.file)
        // (A roll moves the beacon to the next segment without a commit.)
        let advanced = tail.directory.sequence != state.directory.sequence
        if tail.mapsRetiredSegments {
            // A compaction replaced segments this store still maps: they stay on disk while
            // mapped, so read the store again, at the state just read, from its new segments.
            return try reopenFollowing(at: target, quietThrough: quietThrough) || advanced
        }
        return advanced
    }

    /// No `HEAD`: the writer closed (it removes `HEAD` last, after the clean-shutdown marker
    /// that names where its log ends, all of it synced), or a writer is opening (it removes
    /// the marker before it writes `HEAD`: then nothing, and the next refresh reads its
    /// `HEAD`). A writer that crashed leaves its `HEAD`.
    private func closedWriterState() -> Beacon.State? {
        Store.closedWriterState(path: path, cipher: storeCipher, fileSystem: fileSystem)
    }

    static func closedWriterState(path: String, cipher: StoreCipher?, fileSystem: any FileSystem) -> Beacon.State? {
        let marker = try? Store.readMarker(path: path, names: [CleanShutdown.fileName], cipher: cipher, fileSystem: fileSystem)
        guard let marker = marker ?? nil else { return nil }
        return Beacon.State(segment: marker.segmentID, end: marker.segmentLength, sequence: marker.lastSequence)
    }

    /// The open of a store written in turns (``StoreOptions/multiProcessWriting``): at the
    /// state the writer of the moment publishes, or, between turns, the one the last
    /// writer's clean close recorded. Neither is there only while a writer opens (it removes
    /// the marker before it writes `HEAD`) or after a writer died before publishing: then
    /// it waits, as a writer's open would, up to ``StoreOptions/lockWaitTimeout``.
    static func recoverFollowingInTurns(path: String, options: StoreOptions) throws -> Recovered {
        let deadline = monotonicSeconds() + max(0, options.lockWaitTimeout) + 2
        while true {
            if let state = Beacon.read(path: path, fileSystem: options.fileSystem)
                ?? closedWriterState(path: path, cipher: options.cipher, fileSystem: options.fileSystem) {
                do {
                    return try recoverFollowing(path: path, options: options, at: state)
                } catch WriterLeft.writerLeft {
                    // Between two turns: read the state the last one recorded.
                }
            } else if let probe = try? options.fileSystem.lock(path + "/LOCK", shared: true) {
                // No writer, no clean state: one died without publishing. Repair as a
                // writer's open does, then read what it recorded.
                probe.unlock()
                try Store(directory: URL(fileURLWithPath: path), options: turnOptions(options, atOpen: false)).close()
                continue
            }
            guard monotonicSeconds() < deadline else { throw StoreError.locked(path + "/LOCK") }
            usleep(2_000)
        }
    }

    /// Opens the store again beside the writer (bounded recovery, as the first open), at
    /// `state` if it still reads, else at whatever the writer publishes; what changed past
    /// the state last read is unknown to the commit observer.
    private func reopenFollowing(at state: Beacon.State?, quietThrough: UInt64) throws -> Bool {
        let recovered: Recovered
        do {
            recovered = try Store.recoverFollowing(path: path, options: options, at: state)
        } catch Store.WriterLeft.writerLeft {
            return false
        }
        let before = lastAppendedSequence
        if recovered.directory.sequence != before && recovered.directory.sequence > quietThrough {
            commitObserver?(recovered.directory.sequence, nil)
        }
        adopt(recovered.followed, directory: recovered.directory, space: recovered.space, activeID: recovered.activeID,
              activeRegion: recovered.activeRegion, activeSize: recovered.activeSize, activeCipher: recovered.activeCipher,
              file: recovered.followedFile)
        return recovered.directory.sequence != before
    }

    /// Makes `directory` what this follower reads, at the writer's `state`: published to
    /// readers, and the writer-side fields set to match (left behind, they would keep the
    /// segments of an older state mapped, and so on disk). Gate held.
    private func adopt(_ state: Beacon.State?, directory: KeyDirectory, space: [UInt32: SegmentSpace], activeID: UInt32,
                       activeRegion: MappedRegion, activeSize: Int, activeCipher: FileCipher?, file: (any StorageFile)?) {
        self.activeID = activeID
        self.activeRegion = activeRegion
        self.activeSize = activeSize
        activeWriter = RecordWriter(cipher: activeCipher)
        lastAppendedSequence = directory.sequence
        followed = state
        if file !== followedFile {
            followedFile?.close()
            followedFile = file
        }
        writerDirectory = directory
        writerSpace = space
        let published = PublishedState(directory: directory, space: space)
        publishedLock.withLock { $0 = published }
    }
}

/// The log a writer appended between two of its published states, read into a copy of the
/// index. Each complete transaction becomes one ``TailedCommit``.
private struct LogTail {
    /// The log cannot be walked from the state read to the new one (the follower reopens).
    struct Unwalkable: Error { let reason: String }

    let store: Store
    var directory: KeyDirectory
    var space: [UInt32: SegmentSpace]
    var commits: [(UInt64, TailedCommit)] = []
    /// The segment read last: its id, mapping, cipher and open file.
    var activeID: UInt32
    var activeRegion: MappedRegion
    var activeCipher: FileCipher?
    var file: (any StorageFile)?
    /// Whether a sealed segment the directory maps is one the manifest no longer lists
    /// (compacted away since the follower read it).
    var mapsRetiredSegments = false

    init(store: Store, directory: KeyDirectory, space: [UInt32: SegmentSpace]) {
        self.store = store
        self.directory = directory
        self.space = space
        activeID = store.activeID
        activeRegion = store.activeRegion
        activeCipher = store.activeWriter.cipher
        file = store.followedFile
    }

    /// Closes the file of a new segment opened by a read that is not kept.
    func closeNewFile() {
        if let file, file !== store.followedFile { file.close() }
    }

    mutating func read(from: Beacon.State, to target: Beacon.State) throws {
        // (A store a writer publishes for has a MANIFEST: no directory listing per refresh.)
        let read: Manifest?
        do {
            read = try Store.readManifest(path: store.path, names: [Manifest.fileName], cipher: store.storeCipher, fileSystem: store.fileSystem)
        } catch StoreError.io(_, _, ENOENT) {
            read = nil
        }
        guard let manifest = read else { throw Unwalkable(reason: "no MANIFEST") }
        mapsRetiredSegments = space.contains { $0.value.sealed && manifest.entries[$0.key] == nil }
        if target.segment == from.segment {
            guard target.end >= from.end else {
                throw Unwalkable(reason: "the writer's log now ends at \(target.end) in segment \(segmentName(target.segment)), before the \(from.end) bytes read")
            }
            try readSegment(from.segment, from: from.end, to: target.end, isNew: false, stillActive: true)
            return
        }
        // The segment followed so far, to its sealed end: as the manifest lists it, or, if a
        // compaction took it first, as long as the file still is (sealed files do not change).
        let sealedEnd: Int
        if let listed = manifest.entries[from.segment] {
            guard listed.kind == .log, let length = listed.sealedLength else {
                throw Unwalkable(reason: "segment \(segmentName(from.segment)) is not listed as a sealed log segment")
            }
            sealedEnd = length
        } else if let file {
            sealedEnd = try file.size()
            mapsRetiredSegments = true
        } else {
            throw Unwalkable(reason: "segment \(segmentName(from.segment)) is gone")
        }
        try readSegment(from.segment, from: from.end, to: sealedEnd, isNew: false, stillActive: false)
        // Then every later log segment, in the order they were rolled (each must continue the
        // sequence: one compacted away in between breaks it).
        let later = manifest.entries.filter { $0.value.kind == .log && $0.key > from.segment && $0.key <= target.segment }.keys.sorted()
        guard later.last == target.segment else {
            throw Unwalkable(reason: "the writer's segment \(segmentName(target.segment)) is not listed as a log segment")
        }
        for id in later {
            let isTarget = id == target.segment
            guard isTarget || manifest.entries[id]?.sealedLength != nil else {
                throw Unwalkable(reason: "segment \(segmentName(id)) is listed as active beside the writer's \(segmentName(target.segment))")
            }
            try readSegment(id, from: store.dataStart, to: isTarget ? target.end : manifest.entries[id]!.sealedLength!,
                            isNew: true, stillActive: isTarget)
        }
    }

    /// Reads log segment `id` from `start` to `end` (both transaction boundaries the writer
    /// published or sealed), mapping it first if it is new or grew past its mapping.
    private mutating func readSegment(_ id: UInt32, from start: Int, to end: Int, isNew: Bool, stillActive: Bool) throws {
        let fs = store.fileSystem, name = segmentName(id)
        if isNew {
            let opened: any StorageFile
            do {
                opened = try fs.openFile(store.path + "/" + name, create: false, readOnly: true)
            } catch StoreError.io(_, _, ENOENT) {
                throw Unwalkable(reason: "segment \(name) is gone")
            }
            closeNewFile()
            file = opened
        }
        // Every time, not only when mapping: a published end past the file's (a damaged
        // `HEAD` or marker) must be an error, never a read past the end of a mapping (SIGBUS).
        guard let file else { throw Unwalkable(reason: "segment \(name) is not open") }
        let size = try file.size()
        guard size >= end else {
            throw StoreError.corrupted(segment: name, offset: size,
                                       reason: "segment is shorter than the \(end) bytes its writer published as durable")
        }
        if isNew || activeRegion.length < end {
            do {
                activeRegion = try file.mapHoldingReaderLock(length: Store.activeMappingLength(forSize: end, segmentSize: store.options.segmentSize))
            } catch StoreError.io(_, _, ENOENT) {
                throw Unwalkable(reason: "segment \(name) is being deleted")
            }
        }
        if isNew {
            let header = activeRegion.bytes(at: 0, count: min(end, store.dataStart), limit: end) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            switch SegmentHeader.read(file: header, number: id, cipher: store.storeCipher) {
            case .success(let (info, fileCipher)):
                guard info.kind == .log else { throw Unwalkable(reason: "segment \(name) is not a log segment") }
                activeCipher = fileCipher
            case .failure(let problem):
                throw StoreError.corrupted(segment: name, offset: 0, reason: problem.reason)
            }
        }
        activeID = id
        guard let bytes = activeRegion.bytes(at: 0, count: end, limit: end), start >= store.dataStart, start <= end else {
            throw StoreError.corrupted(segment: name, offset: start, reason: "the writer's published end \(end) lies outside the segment")
        }
        let view = SegmentView(id: id, region: activeRegion, length: end, cipher: activeCipher)
        if stillActive {
            directory.active = view
        } else {
            directory.setSealed(view)
            if directory.active?.id == id { directory.active = nil }
        }
        var segmentSpace = space[id] ?? SegmentSpace(diskBytes: end, sealed: !stillActive)
        segmentSpace.diskBytes = end
        segmentSpace.sealed = !stillActive
        let reader = SegmentReader(bytes, cipher: activeCipher)
        var directory = self.directory, commits = self.commits, firstOfSegment = isNew
        defer { self.directory = directory; self.commits = commits }
        let outcome = try SegmentScanner.scan(reader, segmentID: id, from: start, previousSequence: directory.sequence) { entries, sequence in
            if firstOfSegment {
                firstOfSegment = false
                guard sequence == directory.sequence + 1 else {
                    throw Unwalkable(reason: "segment \(name) starts at commit \(sequence), not \(directory.sequence + 1): a segment in between is gone")
                }
            }
            var commit = TailedCommit()
            commit.changes.reserveCapacity(entries.count)
            for entry in entries {
                let key = IndexKey(entry.key)
                let before = directory.lookup(table: entry.table, key: key)
                let old = before.flatMap { try? directory.readStoredValue(table: entry.table, key: key, at: $0) }
                var new: StoredValue?
                if entry.kind == .put {
                    directory.put(table: entry.table, key: key, location: entry.location)
                    new = try? directory.readStoredValue(table: entry.table, key: key, at: entry.location)
                } else {
                    directory.remove(table: entry.table, key: key)
                }
                commit.changes.append(TailedCommit.Change(table: entry.table, key: Array(entry.key), old: old, existed: before != nil,
                                                          new: new, isDelete: entry.kind != .put))
            }
            directory.sequence = sequence
            commits.append((sequence, commit))
        }
        if let damage = outcome.damage {
            throw StoreError.corrupted(segment: name, offset: damage.offset, reason: damage.reason + " (in the log its writer published as durable)")
        }
        guard outcome.committedEnd == end else {
            throw StoreError.corrupted(segment: name, offset: outcome.committedEnd,
                                       reason: "the log read ends at \(outcome.committedEnd), not at the \(end) bytes its writer published")
        }
        segmentSpace.rawValueBytes += outcome.rawValueBytes
        segmentSpace.storedValueBytes += outcome.storedValueBytes
        space[id] = segmentSpace
    }
}
