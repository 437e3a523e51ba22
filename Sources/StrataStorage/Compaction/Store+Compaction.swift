// Online compaction: rewrite the live records of wasteful sealed segments into new,
// compacted segments, switch the index to them, and delete the old files.
//
// The steps, and why each is safe (docs/ARCHITECTURE.md, "Compaction"):
// 1. Plan, under the write gate: sync what is appended, take the writer's index as the
//    compaction snapshot S, pick the inputs. (Syncing first matters: an input record may
//    be dropped only if the newer version that replaces it is durable.)
// 2. Copy, with no lock: every input put that S still points at, and every tombstone still
//    needed to hide an older record outside the inputs, into `.tmp` output files placed at
//    replay position (newest input's major, a fresh minor). Sync them and their hints.
// 3. Publish the outputs: rename, sync the directory. From here a crash leaves inputs and
//    outputs side by side, which replay to the same state (same records, same sequences).
// 4. Switch, in batches of `switchBatch` keys under the gate: a key still at its S location
//    moves to its copy; a key a commit changed meanwhile is left alone. Readers see old or
//    new locations, both valid, so batches need not be atomic together.
// 5. Retire the inputs: drop them from the index's segment table, unlink, sync the
//    directory. Snapshots that still map them keep reading; the space returns when the
//    last such snapshot goes (stats report it as pinned).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a compaction stopped early (the store is closing); not an error for callers of close.
struct CompactionCancelled: Error {}

/// One input segment of a compaction.
private struct CompactionInput {
    var number: UInt32
    var kind: SegmentKind
    var position: ReplayPosition
    var view: SegmentView
    /// For a compacted input, the newest sequence it already covers.
    var coversThrough: UInt64
}

/// An output file being written.
private final class CompactionOutput {
    let number: UInt32
    let position: ReplayPosition
    let reliedOn: UInt64
    /// The newest sequence of all the inputs (set when copying is done).
    var coversThrough: UInt64 = 0
    let file: any StorageFile
    let temporaryPath: String
    var size: Int
    let buffer = ByteBuffer(capacity: 1 << 20)
    /// Encodes (and, encrypted, seals with this file's own key) the records copied in.
    let writer: RecordWriter
    var hint: HintFile.Builder
    var maxSequence: UInt64 = 0
    var rawValueBytes = 0, storedValueBytes = 0

    init(number: UInt32, position: ReplayPosition, reliedOn: UInt64, file: any StorageFile, temporaryPath: String,
         size: Int, cipher: FileCipher?) {
        self.number = number
        self.position = position
        self.reliedOn = reliedOn
        self.file = file
        self.temporaryPath = temporaryPath
        self.size = size
        writer = RecordWriter(cipher: cipher)
        hint = HintFile.Builder(segmentID: number, segmentLength: 0, count: 0, lastSequence: 0,
                                rawValueBytes: 0, storedValueBytes: 0)
    }
}

/// What a compaction will do, decided under the write gate (step 1).
private struct CompactionPlan {
    /// The writer's index when the inputs were chosen: a record is live if it points there.
    var snapshot: KeyDirectory
    /// In replay order.
    var inputs: [CompactionInput]
    /// The outputs' replay positions: the newest input's major, minors from `firstMinor`.
    var outputMajor: UInt32
    var firstMinor: UInt32
    /// The inputs and outputs come first in replay order, so no older record outside them
    /// is left for a tombstone to hide: tombstones are dropped.
    var dropTombstones: Bool
    /// The sequence durable when the inputs were chosen (the outputs rely on it).
    var reliedOn: UInt64
}

/// A key to move from its input location to its copy, if nothing changed it meanwhile.
private struct PendingSwitch {
    var table: UInt32
    var key: IndexKey
    var old: Location
    var new: Location
    var tag: UInt32
}

extension Store {
    /// Keys moved to their copies per hold of the write gate: bounds a writer's wait to
    /// about a millisecond.
    static let switchBatch = 4096

    /// Compacts the store now: seals the active segment if it holds data, then rewrites
    /// every sealed segment that has dead bytes. Blocks until done; readers and writers keep
    /// working meanwhile (a writer waits at most one switch batch).
    ///
    /// - Returns: what was done (``CompactionReport``).
    /// - Throws: ``StoreError/diskFull(_:)`` (nothing changed; partial output removed),
    ///   I/O errors, ``StoreError/closed``, ``StoreError/invalidArgument(_:)`` on a read-only store.
    @discardableResult
    public func compact() throws -> CompactionReport {
        if options.multiProcessWriting { return try compactInTurn() }
        do {
            let report = try runCompaction(manual: true)
            reclaimDoomedFiles()
            options.logger?.info("compaction: \(report.segmentsCompacted) segments into \(report.segmentsWritten), \(report.reclaimedBytes) bytes reclaimed", metadata: ["store": "\(path)"])
            return report
        } catch is CompactionCancelled {
            throw StoreError.closed
        }
    }

    /// What ``compact()`` would do now, without doing it.
    public func compactionEstimate() -> CompactionEstimate {
        let state = publishedLock.withLock { $0 }
        var estimate = CompactionEstimate(segments: 0, bytes: 0, liveBytes: 0)
        for (_, space) in state.space where space.diskBytes - space.liveBytes > dataStart {
            estimate.segments += 1
            estimate.bytes += space.diskBytes
            estimate.liveBytes += space.liveBytes
        }
        return estimate
    }

    // MARK: Running one compaction

    func runCompaction(manual: Bool) throws -> CompactionReport {
        guard !options.readOnly else { throw StoreError.invalidArgument("the store was opened read-only") }
        try beginCompaction()
        defer { endCompaction() }
        // Hints being written belong to segments this compaction may retire.
        waitForSealedHints()
        let started = monotonicSeconds()
        var report = CompactionReport()
        var longestPause = 0.0
        report.diskBytesBefore = segmentDiskBytes()
        report.diskBytesAfter = report.diskBytesBefore
        if let plan = try planCompaction(manual: manual, longestPause: &longestPause) {
            var switches: [PendingSwitch] = []
            let outputs = try writeOutputs(plan, switches: &switches, report: &report)
            let views = try publish(outputs, replacing: plan.inputs, report: &report)
            try switchIndex(to: outputs, views: views, switches: switches, longestPause: &longestPause, report: &report)
            try retire(plan.inputs, longestPause: &longestPause)
            report.segmentsCompacted = plan.inputs.count
            report.diskBytesAfter = segmentDiskBytes()
        }
        report.seconds = monotonicSeconds() - started
        report.longestWriterPause = longestPause
        return report
    }

    /// Waits for a running compaction to finish and claims the right to run; throws
    /// `CompactionCancelled` once the store is closing.
    private func beginCompaction() throws {
        compactionMonitor.lock()
        defer { compactionMonitor.unlock() }
        while compactionRunning { compactionMonitor.wait() }
        if compactionCancelled { throw CompactionCancelled() }
        compactionRunning = true
    }

    private func endCompaction() {
        compactionMonitor.withLock {
            compactionRunning = false
            compactionMonitor.broadcast()
        }
    }

    /// Step 1: the snapshot, the inputs and where the outputs go in replay order; nil when
    /// there is nothing to compact. Syncing first, outside the gate, leaves little for the
    /// gate-held sync to do.
    private func planCompaction(manual: Bool, longestPause: inout Double) throws -> CompactionPlan? {
        try sync()
        return try withWriterPaused(&longestPause) { () -> CompactionPlan? in
            try waitDurable(lastAppendedSequence)   // older versions are dropped only behind durable newer ones
            let reliedOn = lastAppendedSequence
            // The segment sealed here is compacted at once: no hint file for it.
            if manual && activeSize > dataStart { try rollSegment(writeHint: false) }
            let inputs = chooseInputs(manual: manual)
            guard let newest = inputs.map(\.position).max() else { return nil }
            let minorsAtMajor = writerSpace.values.compactMap { $0.position?.major == newest.major ? $0.position?.minor : nil }
            let firstMinor = (minorsAtMajor.max() ?? 0) + 1
            let outputPosition = ReplayPosition(major: newest.major, minor: firstMinor)
            let inputNumbers = Set(inputs.map(\.number))
            let isPrefix = writerSpace.allSatisfy { number, space in
                !space.sealed || inputNumbers.contains(number)
                    || (space.position ?? ReplayPosition(major: number, minor: 0)) > outputPosition
            }
            return CompactionPlan(snapshot: writerDirectory, inputs: inputs, outputMajor: newest.major,
                                  firstMinor: firstMinor, dropTombstones: isPrefix, reliedOn: reliedOn)
        }
    }

    /// Step 2: the live records copied into `.tmp` outputs, each finished (header, sync,
    /// hint); on failure every partial output is removed.
    private func writeOutputs(_ plan: CompactionPlan, switches: inout [PendingSwitch],
                              report: inout CompactionReport) throws -> [CompactionOutput] {
        var outputs: [CompactionOutput] = []
        do {
            let covered = try copyLiveRecords(plan, outputs: &outputs, switches: &switches, report: &report)
            // Even when nothing survives, one (empty) output records what the inputs covered,
            // so the store's sequence never goes back.
            if outputs.isEmpty {
                outputs.append(try startOutput(position: ReplayPosition(major: plan.outputMajor, minor: plan.firstMinor),
                                               reliedOn: plan.reliedOn))
            }
            for output in outputs {
                output.coversThrough = covered
                try finish(output)
            }
            return outputs
        } catch {
            for output in outputs {
                output.file.close()
                try? fileSystem.remove(output.temporaryPath)
                try? fileSystem.remove(path + "/" + hintName(output.number) + ".tmp")
            }
            throw error
        }
    }

    /// Step 3: the outputs renamed into place and listed in the manifest instead of the
    /// inputs, durably; returns their mappings. If renaming fails half-way, files exist that
    /// the writer's view does not know of; later compactions could misjudge tombstones
    /// against them, so the store stops taking writes and the next open rebuilds its view.
    private func publish(_ outputs: [CompactionOutput], replacing inputs: [CompactionInput],
                         report: inout CompactionReport) throws -> [SegmentView] {
        do {
            for output in outputs {
                try fileSystem.rename(output.temporaryPath, to: path + "/" + segmentName(output.number))
                if fileSystem.fileExists(path + "/" + hintName(output.number) + ".tmp") {
                    try fileSystem.rename(path + "/" + hintName(output.number) + ".tmp", to: path + "/" + hintName(output.number))
                }
            }
            try fileSystem.syncDirectory(path)
        } catch let error as StoreError {
            poison(error)
            throw error
        }
        // The outputs replace the inputs in the manifest: from here a crash leaves the
        // outputs, and the inputs are leftovers the next open removes.
        do {
            try updateManifest { manifest in
                for input in inputs { manifest.entries[input.number] = nil }
                for output in outputs { manifest.entries[output.number] = Manifest.Entry(kind: .compacted, sealedLength: output.size) }
            }
        } catch {
            removeUnlisted(outputs)
            throw error
        }
        var views: [SegmentView] = []
        for output in outputs {
            let region = try output.file.map(length: output.size)
            output.file.close()
            views.append(SegmentView(id: output.number, region: region, length: output.size, cipher: output.writer.cipher))
            report.bytesWritten += output.size
        }
        report.segmentsWritten = outputs.count
        return views
    }

    /// The manifest update failed, so the old manifest stands (unless the store was taken
    /// out of service): the published outputs are unlisted leftovers; remove them.
    private func removeUnlisted(_ outputs: [CompactionOutput]) {
        for output in outputs { output.file.close() }
        guard syncMonitor.withLock({ failure }) == nil else { return }
        do {
            for output in outputs {
                try fileSystem.remove(path + "/" + segmentName(output.number))
                try fileSystem.remove(path + "/" + hintName(output.number))
            }
            try fileSystem.syncDirectory(path)
        } catch let removal as StoreError {
            poison(removal)
        } catch {}
    }

    /// Step 4: the outputs join the index's segment table, then keys move to their copies
    /// in batches. Grouped by the tag's top 12 bits (the bits the index routes by), a batch
    /// touches a contiguous run of index pages, so each page is copied (after the previous
    /// batch's publication) once at most. A counting pass, not a sort: O(n).
    private func switchIndex(to outputs: [CompactionOutput], views: [SegmentView], switches: [PendingSwitch],
                             longestPause: inout Double, report: inout CompactionReport) throws {
        let order = Store.routeOrder(switches)
        try withWriterPaused(&longestPause) {
            for (output, view) in zip(outputs, views) {
                writerDirectory.setSealed(view)
                writerSpace[output.number] = SegmentSpace(
                    diskBytes: output.size, liveBytes: 0, rawValueBytes: output.rawValueBytes,
                    storedValueBytes: output.storedValueBytes, sealed: true, kind: .compacted, position: output.position,
                    coversThrough: output.coversThrough, reliesOn: output.reliedOn)
            }
            publishWriterState()
        }
        var index = 0
        while index < switches.count {
            if compactionMonitor.withLock({ compactionCancelled }) { throw CompactionCancelled() }
            let end = min(switches.count, index + Store.switchBatch)
            try withWriterPaused(&longestPause) {
                var moved: [UInt32: Int] = [:]
                for position in order[index ..< end] {
                    let change = switches[Int(position)]
                    guard writerDirectory.tables[change.table]?.replace(change.key, tag: change.tag, expected: change.old,
                                                                        with: change.new) == true else {
                        report.recordsSupersededDuringCompaction += 1
                        continue
                    }
                    moved[change.old.segment, default: 0] -= Int(change.old.size)
                    moved[change.new.segment, default: 0] += Int(change.new.size)
                }
                for (segment, delta) in moved { writerSpace[segment]?.liveBytes += delta }
                publishWriterState()
            }
            index = end
        }
    }

    /// Step 5: the inputs leave the index's segment table, then their files go, oldest
    /// first, each removal made durable before the next: whatever a crash keeps is a suffix
    /// of the inputs, which replays correctly beside the outputs. A file "goes" by a rename
    /// to a `.tmp` name (which the next writable open deletes); its bytes are freed later,
    /// a few megabytes at a time, once no snapshot maps it (`reclaimDoomedFiles`).
    private func retire(_ inputs: [CompactionInput], longestPause: inout Double) throws {
        try withWriterPaused(&longestPause) {
            for input in inputs {
                writerDirectory.removeSealed(input.number)
                writerSpace[input.number] = nil
            }
            publishWriterState()
            // The index image of before names the inputs: a new one, so that an open after a
            // crash need not rebuild the index. Only if every commit it would hold is durable
            // (with `.normal` or `.none` the active segment's tail may not be): an image must
            // never point into bytes a crash can take back.
            if syncMonitor.withLock({ syncedSequence >= lastAppendedSequence }) { writeIndexImageInBackground() }
        }
        do {
            for input in inputs {
                let segment = doomedName(segmentName(input.number)), hint = doomedName(hintName(input.number))
                try fileSystem.rename(path + "/" + segmentName(input.number), to: segment)
                let hasHint = fileSystem.fileExists(path + "/" + hintName(input.number))
                if hasHint { try fileSystem.rename(path + "/" + hintName(input.number), to: hint) }
                try fileSystem.syncDirectory(path)
                retireRegion(input.view.region, number: input.number, bytes: input.view.length)
                doomedFiles.withLock { list in
                    list.files.append(segment)
                    if hasHint { list.files.append(hint) }
                }
            }
        } catch let error as StoreError {
            poison(error)
            throw error
        }
    }

    /// A name, unique in this process, under which a retired file waits to be deleted.
    private func doomedName(_ name: String) -> String {
        let number = doomedFiles.withLock { list -> UInt64 in
            list.named += 1
            return list.named
        }
        return path + "/" + name + ".retired-\(number).tmp"
    }

    /// Deletes the retired files that nothing maps any more (no snapshot reads them), each
    /// truncated from its end a few megabytes at a time before it is unlinked; returns
    /// whether some still wait. Why not one unlink: on a file system mounted with
    /// `discard` (usual for cloud disks), freeing a 64 MB segment discards all its blocks
    /// at once, and the commits syncing meanwhile wait behind it (10-150 ms stalls after a
    /// large rewrite, measured). Called by compaction threads, `compact()` and `close`,
    /// never by a committer: whoever truncates waits for the discards. Failures leave the
    /// file to the next open, which deletes it. Mappings of this process are counted; a
    /// follower in another process holds each mapped file's slot in the reader table
    /// (`mapHoldingReaderLock`), and such a file waits too — until the follower lets go of
    /// it (its next refresh), or, at `close` (`finally`), is unlinked whole: its mappings
    /// stay valid, only a truncation would fault them.
    @discardableResult
    func reclaimDoomedFiles(finally: Bool = false) -> Bool {
        // Taken from the list while looked at, so two threads never work on one file.
        let candidates: [String] = doomedFiles.withLock { list in
            defer { list.files = [] }
            return list.files
        }
        var waiting: [String] = []
        let othersMayMap = !candidates.isEmpty && otherProcessesRead()
        for doomed in candidates {
            if let file = try? fileSystem.openFile(doomed, create: false, readOnly: false) {
                if file.hasLiveMappings() {
                    file.close()
                    waiting.append(doomed)
                    continue
                }
                let mappedElsewhere = othersMayMap && file.isMappedByOtherProcesses()
                if mappedElsewhere && !finally {
                    file.close()
                    waiting.append(doomed)
                    continue
                }
                var size = mappedElsewhere ? 0 : (try? file.size()) ?? 0
                while size > 0 {
                    size = max(0, size - Store.deletionStep)
                    do { try file.truncate(to: size) } catch { break }
                }
                file.close()
            }
            try? fileSystem.remove(doomed)
        }
        return doomedFiles.withLock { list in
            list.files += waiting
            return !list.files.isEmpty
        }
    }

    /// Whether a read-only open in another process follows this store (it holds a shared
    /// lock on `READERS` for as long as it is open).
    func otherProcessesRead() -> Bool {
        // No file: no reader ever followed this store (a follower creates it with its lock).
        guard fileSystem.fileExists(path + "/" + Beacon.readersFileName) else { return false }
        do {
            try fileSystem.lock(path + "/" + Beacon.readersFileName, shared: false).unlock()
            return false
        } catch {
            return true
        }
    }

    /// Bytes freed per truncation of a retired file (one discard's worth: ~1 ms of the disk).
    static let deletionStep = 4 << 20

    /// Runs `body` holding the write gate, with everything appended so far published (and,
    /// with `.full`, durable), and records how long writers were kept waiting.
    private func withWriterPaused<R>(_ longestPause: inout Double, _ body: () throws -> R) throws -> R {
        try acquireGate()
        let paused = monotonicSeconds()
        defer {
            longestPause = max(longestPause, monotonicSeconds() - paused)
            releaseGate()
        }
        if let failure = syncMonitor.withLock({ closed ? StoreError.closed : failure }) { throw failure }
        // With `.full`, readers must only see synced commits, and the writer's state may hold
        // one whose sync is in flight. Other modes publish commits as they are appended.
        if options.durability == .full { try waitDurable(lastAppendedSequence) }
        return try body()
    }

    /// Publishes the writer's state as is (gate held, everything appended durable).
    private func publishWriterState() {
        let state = PublishedState(directory: writerDirectory, space: writerSpace)
        publishedLock.withLock { $0 = state }
    }

    /// The sealed segments to compact: all with dead bytes (manual), or those the policy
    /// picks (automatic). Gate held.
    private func chooseInputs(manual: Bool) -> [CompactionInput] {
        let sealed = writerSpace.filter { $0.value.sealed }
        let policy = options.autoCompaction.policy ?? .default
        let disk = writerSpace.values.reduce(0) { $0 + $1.diskBytes }
        let dead = writerSpace.values.reduce(0) { $0 + max(0, $1.diskBytes - $1.liveBytes) }
        let storeDeadFraction = disk > 0 ? Double(dead) / Double(disk) : 0
        var inputs: [CompactionInput] = []
        for (number, space) in sealed {
            let wanted = manual
                ? space.diskBytes - space.liveBytes > dataStart
                : policy.includes(space, storeDeadFraction: storeDeadFraction, segmentSize: options.segmentSize)
            guard wanted, let view = writerDirectory.segment(number) else { continue }
            inputs.append(CompactionInput(number: number, kind: space.kind,
                                          position: space.position ?? ReplayPosition(major: number, minor: 0), view: view,
                                          coversThrough: space.coversThrough))
        }
        // A lone small segment with nothing dead is not worth rewriting.
        if !manual, inputs.count == 1, let only = inputs.first, let space = writerSpace[only.number],
           space.diskBytes == space.liveBytes {
            return []
        }
        return inputs.sorted { $0.position < $1.position }
    }

    /// Step 2: reads every input in replay order and appends what must survive to outputs.
    /// Returns the newest sequence the inputs held (or covered).
    private func copyLiveRecords(_ plan: CompactionPlan, outputs: inout [CompactionOutput],
                                 switches: inout [PendingSwitch], report: inout CompactionReport) throws -> UInt64 {
        let inputs = plan.inputs, snapshot = plan.snapshot
        var covered: UInt64 = 0
        let liveBits = try Store.liveRecordBits(of: inputs, in: snapshot)
        var keptTombstones: [UInt32: Set<IndexKey>] = [:]
        var nextMinor = plan.firstMinor
        var current: CompactionOutput?
        var copied = 0
        for input in inputs {
            guard let reader = input.view.reader() else {
                throw StoreError.corrupted(segment: segmentName(input.number), offset: 0, reason: "segment is shorter than its view")
            }
            report.bytesRead += input.view.length
            var entries: [ScannedEntry] = []
            let outcome = input.kind == .log
                ? SegmentScanner.scan(reader, segmentID: input.number, previousSequence: 0) { found, _ in entries.append(contentsOf: found) }
                : SegmentScanner.scanCompacted(reader, segmentID: input.number) { found in entries = found }
            if let damage = outcome.damage {
                throw StoreError.corrupted(segment: segmentName(input.number), offset: damage.offset, reason: damage.reason)
            }
            covered = max(covered, outcome.lastSequence, input.coversThrough)
            let bits = liveBits[input.number]!
            for entry in entries {
                if entry.kind == .put {
                    let bit = Int(entry.location.offset) / 8
                    guard bits[bit >> 6] & (1 << UInt64(bit & 63)) != 0 else { continue }
                }
                let key = IndexKey(entry.key)
                if entry.kind == .delete {
                    guard !plan.dropTombstones, snapshot.lookup(table: entry.table, key: key) == nil,
                          keptTombstones[entry.table, default: []].insert(key).inserted else { continue }
                    report.tombstonesKept += 1
                }
                if current == nil || current!.size >= options.segmentSize {
                    if let full = current { try flushOutput(full) }
                    current = try startOutput(position: ReplayPosition(major: plan.outputMajor, minor: nextMinor), reliedOn: plan.reliedOn)
                    nextMinor += 1
                    outputs.append(current!)
                }
                let location = try append(entry, to: current!)
                if entry.kind == .put {
                    switches.append(PendingSwitch(table: entry.table, key: key, old: entry.location, new: location,
                                                  tag: HashIndex.tag(key, seed: indexSeed)))
                    report.recordsCopied += 1
                }
                copied += 1
                if copied % 4096 == 0, compactionMonitor.withLock({ compactionCancelled }) { throw CompactionCancelled() }
            }
        }
        if let last = current { try flushOutput(last) }
        return covered
    }

    /// Which input records are live: one pass over the index marks them in a bitmap per
    /// input (a bit per 8-byte offset), instead of a random index lookup per record.
    private static func liveRecordBits(of inputs: [CompactionInput], in snapshot: KeyDirectory) throws -> [UInt32: [UInt64]] {
        var liveBits: [UInt32: [UInt64]] = [:]
        for input in inputs { liveBits[input.number] = [UInt64](repeating: 0, count: input.view.length / 512 + 1) }
        for (_, index) in snapshot.tables {
            try index.forEachLocation { location in
                guard liveBits[location.segment] != nil else { return }
                let bit = Int(location.offset) / 8
                liveBits[location.segment]![bit >> 6] |= 1 << UInt64(bit & 63)
            }
        }
        return liveBits
    }

    /// The switches' indices ordered by the top 12 bits of their tag (a counting pass).
    private static func routeOrder(_ switches: [PendingSwitch]) -> [Int32] {
        var starts = [Int](repeating: 0, count: 4097)
        for change in switches { starts[Int(change.tag >> 20) + 1] += 1 }
        for i in 1 ..< starts.count { starts[i] += starts[i - 1] }
        var order = [Int32](repeating: 0, count: switches.count)
        for (i, change) in switches.enumerated() {
            let group = Int(change.tag >> 20)
            order[starts[group]] = Int32(i)
            starts[group] += 1
        }
        return order
    }

    private func startOutput(position: ReplayPosition, reliedOn: UInt64) throws -> CompactionOutput {
        let number = try takeFileNumber()
        let temporary = path + "/" + segmentName(number) + ".tmp"
        let file = try fileSystem.openFile(temporary, create: true, readOnly: false)
        do {
            let start = try SegmentHeader.fileStart(SegmentHeader.encode(number: number, kind: .compacted, position: position,
                                                                         reliesOnSequence: reliedOn), cipher: storeCipher)
            try file.truncate(to: 0)
            try file.write(start.bytes, at: 0)
            return CompactionOutput(number: number, position: position, reliedOn: reliedOn, file: file, temporaryPath: temporary,
                                    size: start.bytes.count, cipher: start.cipher)
        } catch {
            file.close()
            try? fileSystem.remove(temporary)
            throw error
        }
    }

    /// Appends one record to an output, re-encoding it with compression when that now pays;
    /// returns its new location.
    private func append(_ entry: ScannedEntry, to output: CompactionOutput) throws -> Location {
        let offset = output.size + output.buffer.count
        // The scan that produced `entry` already checked this record (and opened its frame).
        let record = RecordView.unchecked(entry.encoded)
        let size: Int
        if record.kind == .put, !record.compressed, options.compression == .lz4,
           record.rawLength >= options.compressionThreshold {
            let encoded = try output.writer.appendRecord(
                to: output.buffer, fileOffset: offset, kind: .put, table: record.table, sequence: record.sequence,
                key: record.key, value: record.storedValue, compressAtLeast: options.compressionThreshold)
            size = encoded.size
            output.storedValueBytes += encoded.stored
        } else {
            size = try output.writer.appendEncoded(entry.encoded, to: output.buffer, fileOffset: offset)
            if record.kind == .put { output.storedValueBytes += record.storedValue.count }
        }
        if record.kind == .put { output.rawValueBytes += record.rawLength }
        let location = Location(segment: output.number, offset: UInt32(offset), size: UInt32(size))
        output.hint.add(kind: record.kind, table: record.table, key: record.key, location: location, sequence: record.sequence)
        output.maxSequence = max(output.maxSequence, record.sequence)
        if output.buffer.count >= Store.flushThreshold { try flushOutput(output) }
        return location
    }

    private func flushOutput(_ output: CompactionOutput) throws {
        guard output.buffer.count > 0 else { return }
        guard output.size + output.buffer.count <= Int(UInt32.max) else {
            throw StoreError.invalidArgument("a compacted segment may not exceed 4 GiB")
        }
        try output.file.write(output.buffer.bytes, at: output.size)
        output.file.startWriteback(offset: output.size, length: output.buffer.count)
        output.size += output.buffer.count
        output.buffer.count = 0
    }

    /// Writes the final header (with what the output covers), syncs the output and writes
    /// its hint file (still under `.tmp` names).
    private func finish(_ output: CompactionOutput) throws {
        try flushOutput(output)
        let header = try SegmentHeader.rewritten(SegmentHeader.encode(number: output.number, kind: .compacted, position: output.position,
                                                                      reliesOnSequence: output.reliedOn,
                                                                      coversThroughSequence: output.coversThrough),
                                                 cipher: output.writer.cipher)
        try output.file.write(header.bytes, at: header.offset)
        try output.file.syncData()
        let hint = try Store.sealSmallFile(output.hint.finish(segmentLength: output.size, lastSequence: output.maxSequence,
                                                              rawValueBytes: output.rawValueBytes, storedValueBytes: output.storedValueBytes),
                                           kind: .hint, cipher: storeCipher)
        let temporary = path + "/" + hintName(output.number) + ".tmp"
        let file = try fileSystem.openFile(temporary, create: true, readOnly: false)
        defer { file.close() }
        try file.truncate(to: 0)
        try file.write(hint, at: 0)
        try file.syncData()
    }

    /// Bytes of all segment files the writer knows of.
    private func segmentDiskBytes() -> Int {
        publishedLock.withLock { $0 }.space.values.reduce(0) { $0 + $1.diskBytes }
    }

    // MARK: Automatic compaction

    /// Called after each commit (gate held): asks the policy whether to start a compaction
    /// in the background. The check walks the segment table, so a store with very many
    /// segments checks every (segments / 64) commits instead of every commit.
    func considerAutomaticCompaction() {
        guard let policy = options.autoCompaction.policy else { return }
        commitsSinceCompactionCheck += 1
        guard commitsSinceCompactionCheck >= max(1, writerSpace.count / 64) else { return }
        commitsSinceCompactionCheck = 0
        let sealed = writerSpace.values.filter(\.sealed)
        guard policy.shouldStart(sealed: Array(sealed), all: Array(writerSpace.values), segmentSize: options.segmentSize) else { return }
        let start: Bool = compactionMonitor.withLock {
            guard !compactionCancelled else { return false }
            if compactionRunning || backgroundCompactionQueued {
                // The running compaction decides whether to go again; make it look once more.
                compactionRecheckRequested = true
                return false
            }
            backgroundCompactionQueued = true
            return true
        }
        guard start else { return }
        let deadBytes = writerSpace.values.reduce(0) { $0 + $1.diskBytes - $1.liveBytes }
        options.logger?.info("background compaction started: \(sealed.count) sealed segments, \(deadBytes) dead bytes", metadata: ["store": "\(path)"])
        let started = startThread { [weak self] in
            self?.runBackgroundCompactions(policy)
            // The inputs' files go once the snapshots mapping them are released (the
            // realms' next advance, usually): looked at for a while, then left to `close`
            // or the next open. Holds the store only while it looks.
            for _ in 0 ..< 600 {
                guard let waiting = self?.reclaimDoomedFiles(), waiting, self?.isClosing == false else { break }
                usleep(50_000)
            }
        }
        if !started { compactionMonitor.withLock { backgroundCompactionQueued = false } }
    }

    /// The rounds of one background compaction.
    private func runBackgroundCompactions(_ policy: CompactionPolicy) {
        // Go on while the policy still asks for it and rounds make progress (judged by
        // each round's own input and output: concurrent writes grow the store meanwhile),
        // or while commits asked for another look during the last round.
        while true {
            let report: CompactionReport?
            do {
                report = try runCompaction(manual: false)
                if let report {
                    options.logger?.info("background compaction: \(report.segmentsCompacted) segments into \(report.segmentsWritten), \(report.reclaimedBytes) bytes reclaimed", metadata: ["store": "\(path)"])
                }
            } catch {
                report = nil
                options.logger?.warning("background compaction stopped: \(error)", metadata: ["store": "\(path)"])
            }
            let progressed = (report?.bytesRead ?? 0) > (report?.bytesWritten ?? 0)
            let space = publishedLock.withLock { $0 }.space.values
            let wanted = policy.shouldStart(sealed: space.filter(\.sealed), all: Array(space), segmentSize: options.segmentSize)
            let finished: Bool = compactionMonitor.withLock {
                let again = (wanted && progressed) || compactionRecheckRequested
                compactionRecheckRequested = false
                if !again { backgroundCompactionQueued = false }
                return !again
            }
            reclaimDoomedFiles()
            if finished { return }
        }
    }

    /// Whether `close` has begun (compactions refuse to start).
    private var isClosing: Bool { compactionMonitor.withLock { compactionCancelled } }

    /// Stops a running compaction (at its next checkpoint) and, if `waiting`, waits for it;
    /// later ones refuse to start. `deinit` does not wait (see there).
    func cancelCompactions(waiting: Bool = true) {
        compactionMonitor.lock()
        compactionCancelled = true
        while waiting && (compactionRunning || backgroundCompactionQueued) { compactionMonitor.wait(seconds: 0.05) }
        compactionMonitor.unlock()
    }

    // MARK: Pinned space

    /// Remembers a deleted segment's mapping: its disk space stays allocated until the last
    /// snapshot that maps it is gone.
    private func retireRegion(_ region: MappedRegion, number: UInt32, bytes: Int) {
        retiredSegments.withLock { list in
            list.removeAll { $0.region == nil }
            list.append(RetiredSegment(number: number, bytes: bytes, region: region))
        }
    }
}

/// A deleted segment that snapshots may still map.
struct RetiredSegment {
    var number: UInt32
    var bytes: Int
    weak var region: MappedRegion?
}

extension AutoCompaction {
    /// The thresholds in force, or nil when automatic compaction is off.
    var policy: CompactionPolicy? {
        switch self {
        case .default: return .default
        case .disabled: return nil
        case .custom(let policy): return policy
        }
    }
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
