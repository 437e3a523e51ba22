// Verification: read every record of every segment and check it, and check that every
// index entry points at an intact record of its key. Used by `strata verify`.

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
    /// structure, sequence order) and every index entry, as of the newest commit. Readers
    /// and writers may go on meanwhile. Never throws for damage: it reports it.
    ///
    /// - Parameter progress: called with (bytes checked, bytes to check) as work proceeds.
    /// - Throws: ``StoreError/closed``.
    public func verify(progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws -> VerificationReport {
        let state = try currentState()
        let directory = state.directory
        var report = VerificationReport()
        var segments: [(number: UInt32, space: SegmentSpace)] = state.space.map { ($0.key, $0.value) }
        segments.sort { ($0.space.position ?? ReplayPosition(major: $0.number, minor: 0)) < ($1.space.position ?? ReplayPosition(major: $1.number, minor: 0)) }
        let total = segments.reduce(0) { $0 + $1.space.diskBytes } + directory.keyCount
        var done = 0
        var previousSequence: UInt64 = 0
        for (number, space) in segments {
            let name = segmentName(number)
            guard let view = directory.segment(number),
                  let bytes = view.region.bytes(at: 0, count: view.length, limit: view.length) else {
                report.problems.append(VerificationProblem(segment: name, offset: 0, reason: "segment is not readable"))
                continue
            }
            report.segmentsChecked += 1
            switch SegmentHeader.read(bytes, number: number) {
            case .failure(let problem):
                report.problems.append(VerificationProblem(segment: name, offset: 0, reason: problem.reason))
                continue
            case .success:
                break
            }
            var records = 0
            let outcome: ScanOutcome
            if space.kind == .compacted {
                outcome = SegmentScanner.scanCompacted(bytes, segmentID: number) { entries in records += entries.count }
            } else {
                outcome = SegmentScanner.scan(bytes, segmentID: number, previousSequence: previousSequence) { entries, _ in
                    records += entries.count + 1
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
        // Every index entry must lead to an intact put of its own key.
        for (table, index) in directory.tables {
            index.forEach { key, location in
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
            }
        }
        progress?(total, total)
        return report
    }

    /// Live keys per table, as of the newest commit (for `strata stats`).
    public var keysPerTable: [UInt32: Int] {
        let directory = publishedLock.withLock { $0 }.directory
        return directory.tables.mapValues(\.count)
    }
}
