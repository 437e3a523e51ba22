// Verification: read every record of every segment and check it, replay the segments as
// recovery would and compare the result with the index (a hint file that disagrees with its
// segment shows here), and check that every index entry points at an intact record of its
// key. Used by `strata verify`.

/// One problem found by ``Store/verify(progress:)``.
public struct VerificationProblem: Sendable, Equatable, CustomStringConvertible {
    /// The file (`NNNNNNNN.seg`) of the problem.
    public var segment: String
    /// The byte offset of the problem in that file.
    public var offset: Int
    /// What is wrong there.
    public var reason: String
    /// "<segment> at offset <n>: <reason>".
    public var description: String { "\(segment) at offset \(offset): \(reason)" }
}

/// What ``Store/verify(progress:)`` checked and found.
public struct VerificationReport: Sendable, Equatable {
    /// Segment files read.
    public var segmentsChecked = 0
    /// Records read and checked (puts, tombstones, commit records).
    public var recordsChecked = 0
    /// Bytes of segment files read.
    public var bytesChecked = 0
    /// Index entries followed to their records.
    public var keysChecked = 0
    /// Everything found wrong, each with its file and offset.
    public var problems: [VerificationProblem] = []
    /// True when nothing is wrong.
    public var isClean: Bool { problems.isEmpty }
}

extension Store {
    /// Reads and checks every record of every segment (checksums, lengths, transaction
    /// structure, sequence order) and every index entry, as of the newest commit, and
    /// compares the index (built at open from hint files) with a replay of the segments: a
    /// key the replay leaves live but the index lacks, or holds at another version, is a
    /// problem naming the segment of the replay's record. Readers and writers may go on
    /// meanwhile. Never throws for damage: it reports it. Memory: a map of every live key.
    ///
    /// - Parameter progress: called with (bytes checked, bytes to check) as work proceeds.
    /// - Throws: ``StoreError/closed``.
    public func verify(progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws -> VerificationReport {
        var verification = Verification(store: self, state: try currentState(), progress: progress)
        verification.checkSegments()
        verification.checkIndex()
        verification.reportUnindexedKeys()
        return verification.finish()
    }

    /// Checks segment `number`'s file against the `mapped` bytes the store reads through its
    /// mapping: missing or shorter (another process truncated or replaced it: reading past
    /// its end would be SIGBUS) — the problem's offset is then the file's size, below
    /// `mapped` — or, for a sealed segment, longer (appended to).
    func fileSizeProblem(number: UInt32, mapped: Int, sealed: Bool) -> VerificationProblem? {
        let name = segmentName(number)
        let size: Int
        do {
            let file = try fileSystem.openFile(path + "/" + name, create: false, readOnly: true)
            defer { file.close() }
            size = try file.size()
        } catch {
            return VerificationProblem(segment: name, offset: 0, reason: "segment file cannot be opened (\(error)): deleted or replaced while the store is open")
        }
        if size < mapped {
            return VerificationProblem(
                segment: name, offset: size,
                reason: "segment file is \(size) bytes, shorter than the \(mapped) bytes the store holds in it: truncated by another process while the store is open (its records past \(size) are not read: through the mapping that would be a crash, SIGBUS)")
        }
        if sealed && size > mapped {
            return VerificationProblem(segment: name, offset: mapped,
                                       reason: "sealed segment file is \(size) bytes, longer than its \(mapped): written to by another process")
        }
        return nil
    }

    /// Index/replay disagreements listed one by one; the rest are counted.
    static let verifyMismatchLimit = 100

    /// Live keys per table, as of the newest commit (for `strata stats`).
    public var keysPerTable: [UInt32: Int] {
        let directory = publishedLock.withLock { $0 }.directory
        return directory.tables.mapValues(\.count)
    }
}

/// A key for a message: its text if it is short printable ASCII, else its first bytes in hex.
private func describe(_ key: IndexKey) -> String {
    let bytes = key.bytes
    if bytes.count <= 64, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return "\"" + String(decoding: bytes, as: UTF8.self) + "\"" }
    return "0x" + bytes.prefix(32).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        + (bytes.count > 32 ? "… (\(bytes.count) bytes)" : "")
}

/// One run of ``Store/verify(progress:)``: the steps are its methods, over what they find.
private struct Verification {
    let store: Store
    let directory: KeyDirectory
    let progress: ((_ done: Int, _ total: Int) -> Void)?
    /// The segments in replay order.
    let segments: [(number: UInt32, space: SegmentSpace)]
    let total: Int
    var done = 0
    var report = VerificationReport()
    /// What a replay of the segments, in replay order, leaves live: table → key → newest record.
    var replayed: [UInt32: [IndexKey: (sequence: UInt64, segment: UInt32)]] = [:]
    /// Segments whose file is shorter than the mapping: reading a page past its end is
    /// SIGBUS, so they are reported and never read.
    var unreadable: Set<UInt32> = []
    /// Index/replay disagreements found (only the first `verifyMismatchLimit` are listed).
    var mismatches = 0

    init(store: Store, state: PublishedState, progress: ((_ done: Int, _ total: Int) -> Void)?) {
        self.store = store
        directory = state.directory
        self.progress = progress
        segments = state.space.map { ($0.key, $0.value) }.sorted {
            ($0.space.position ?? ReplayPosition(major: $0.number, minor: 0)) < ($1.space.position ?? ReplayPosition(major: $1.number, minor: 0))
        }
        total = segments.reduce(0) { $0 + $1.space.diskBytes } + directory.keyCount
    }

    /// Step 1: every record of every readable segment checked, in replay order, and replayed.
    mutating func checkSegments() {
        var previousSequence: UInt64 = 0
        for (number, space) in segments {
            let name = segmentName(number)
            if let view = directory.segment(number),
               let problem = store.fileSizeProblem(number: number, mapped: view.length, sealed: space.sealed) {
                report.problems.append(problem)
                if problem.offset < view.length {
                    unreadable.insert(number)
                    continue
                }
            }
            guard let view = directory.segment(number), let reader = view.reader() else {
                report.problems.append(VerificationProblem(segment: name, offset: 0, reason: "segment is not readable"))
                continue
            }
            report.segmentsChecked += 1
            if case .failure(let problem) = SegmentHeader.read(file: reader.bytes, number: number, cipher: store.storeCipher) {
                report.problems.append(VerificationProblem(segment: name, offset: 0, reason: problem.reason))
                continue
            }
            var records = 0
            let outcome: ScanOutcome
            if space.kind == .compacted {
                outcome = SegmentScanner.scanCompacted(reader, segmentID: number) { found in
                    records += found.count
                    replay(found)
                }
            } else {
                outcome = SegmentScanner.scan(reader, segmentID: number, previousSequence: previousSequence) { found, _ in
                    records += found.count + 1
                    replay(found)
                }
                previousSequence = max(previousSequence, outcome.lastSequence)
            }
            if let damage = outcome.damage {
                report.problems.append(VerificationProblem(segment: name, offset: damage.offset, reason: damage.reason))
            } else if outcome.committedEnd != view.length {
                report.problems.append(VerificationProblem(segment: name, offset: outcome.committedEnd,
                                                           reason: "data ends before the segment does"))
            }
            report.recordsChecked += records
            report.bytesChecked += view.length
            done += space.diskBytes
            progress?(done, total)
        }
    }

    private mutating func replay(_ entries: [ScannedEntry]) {
        for entry in entries {
            let key = IndexKey(entry.key)
            if entry.kind == .put {
                replayed[entry.table, default: [:]][key] = (entry.sequence, entry.location.segment)
            } else {
                replayed[entry.table]?[key] = nil
            }
        }
    }

    /// Step 2: every index entry leads to an intact put of its own key, at the version the
    /// replay gives (a compaction's copy carries its original's sequence).
    mutating func checkIndex() {
        for (table, index) in directory.tables {
            index.forEach(damaged: { error in
                if case let .corrupted(segment, offset, reason) = error {
                    report.problems.append(VerificationProblem(segment: segment, offset: offset, reason: reason))
                }
            }) { key, location in
                guard !unreadable.contains(location.segment) else { return }
                report.keysChecked += 1
                do {
                    _ = try directory.readValue(table: table, key: key, at: location)
                } catch let StoreError.corrupted(segment, offset, reason) {
                    let problem = VerificationProblem(segment: segment, offset: offset, reason: reason)
                    if !report.problems.contains(problem) { report.problems.append(problem) }
                } catch {
                    report.problems.append(VerificationProblem(segment: segmentName(location.segment), offset: Int(location.offset),
                                                               reason: "\(error)"))
                }
                done += 1
                if done % 65536 == 0 { progress?(done, total) }
                guard unreadable.isEmpty else { return }
                compareWithReplay(table: table, key: key, location: location)
            }
        }
    }

    private mutating func compareWithReplay(table: UInt32, key: IndexKey, location: Location) {
        let expected = replayed[table]?.removeValue(forKey: key)
        guard let sequence = try? directory.withRecord(at: location, { $0.sequence }) else { return }
        if let expected, expected.sequence != sequence {
            mismatch(VerificationProblem(
                segment: segmentName(expected.segment), offset: 0,
                reason: "the index holds key \(describe(key)) of table \(table) at sequence \(sequence) (\(segmentName(location.segment))), but the segments replay it to sequence \(expected.sequence) here: the index disagrees with the segment (a hint file that does not match it)"))
        } else if expected == nil {
            mismatch(VerificationProblem(
                segment: segmentName(location.segment), offset: Int(location.offset),
                reason: "the index holds key \(describe(key)) of table \(table), which a replay of the segments leaves deleted or absent (a hint file that does not match its segment)"))
        }
    }

    /// Step 3: keys the replay leaves live that the index lacks. Without the unreadable
    /// segments the replay is incomplete: nothing to compare.
    mutating func reportUnindexedKeys() {
        if !unreadable.isEmpty { replayed = [:] }
        for (table, keys) in replayed.sorted(by: { $0.key < $1.key }) {
            for (key, expected) in keys {
                mismatch(VerificationProblem(
                    segment: segmentName(expected.segment), offset: 0,
                    reason: "key \(describe(key)) of table \(table), sequence \(expected.sequence), is live in this segment but missing from the index (its hint file left it out)"))
            }
        }
    }

    private mutating func mismatch(_ problem: VerificationProblem) {
        mismatches += 1
        if mismatches <= Store.verifyMismatchLimit { report.problems.append(problem) }
    }

    mutating func finish() -> VerificationReport {
        if mismatches > Store.verifyMismatchLimit {
            report.problems.append(VerificationProblem(
                segment: "index", offset: 0,
                reason: "\(mismatches - Store.verifyMismatchLimit) more keys where the index and the segments disagree"))
        }
        progress?(total, total)
        return report
    }
}
