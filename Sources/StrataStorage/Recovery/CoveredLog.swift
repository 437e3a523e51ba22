// CoveredLog: the log an index image covers, kept readable until every page of the image
// has been checked, so that a page that fails its check is rebuilt from it
// (IndexImage.swift).
//
// Why the log the image covers and not the store's current log: a page of the image is
// shared by every snapshot that has not changed it, and the oldest of them may predate
// commits made since the open. A page rebuilt from the current log would show those
// snapshots keys they must not see; rebuilt from the covered log it is exactly the page the
// image held. So a rebuild replays the covered segments as recovery would have (hint files
// where they check out, records otherwise) but stops the segment that was active then at
// the length the image covered.
//
// The segments' mappings are held, not their files reopened: a compaction may retire a
// covered segment, and its file is deleted only once nothing maps it. They are released
// when the last page has been checked (a background pass checks every page right after the
// open, so that is milliseconds, not the store's lifetime).

/// The segments an index image covers, to rebuild one of its pages from.
struct CoveredLog: Sendable {
    /// One covered segment, in recovery's replay order.
    struct Part: Sendable {
        /// Its mapping; `length` is the bytes the image covers.
        var view: SegmentView
        var kind: SegmentKind
        /// A compacted segment's "every transaction up to here" (recovery's sequence floor).
        var coversThroughSequence: UInt64
        /// The segment that was active when the image was written: read record by record up
        /// to the covered length (any hint it has now describes more).
        var wasActive: Bool
    }

    let parts: [Part]
    let path: String
    let fileSystem: any FileSystem
    let dataStart: Int
    /// The key of the hash the image's pages are filed by.
    let seed: UInt64

    /// The index of every table as the covered log leaves it (built once, at the first page
    /// that fails its check: the pages that fail next are taken from it). Throws
    /// `corrupted` where a covered segment cannot be read.
    func index() throws -> [UInt32: HashIndex] {
        var builder = IndexBuilder(seed: seed)
        var previous: UInt64 = 0
        for part in parts {
            let id = part.view.id
            var newest: UInt64?
            if !part.wasActive, let hint = Store.loadHintBytes(path: path, id: id, cipher: nil, fileSystem: fileSystem) {
                newest = hint.withUnsafeBytes { raw in
                    HintFile.forEachEntry(raw, segmentID: id, segmentLength: part.view.length, previousSequence: previous,
                                          ordered: part.kind == .log, dataStart: dataStart, { builder.add($0) })?.lastSequence
                }
            }
            if newest == nil {
                guard let reader = part.view.reader() else {
                    throw StoreError.corrupted(segment: segmentName(id), offset: 0, reason: "the covered bytes are not mapped")
                }
                let outcome = part.kind == .log
                    ? SegmentScanner.scan(reader, segmentID: id, previousSequence: previous) { entries, _ in
                        for entry in entries { builder.add(entry) }
                    }
                    : SegmentScanner.scanCompacted(reader, segmentID: id) { entries in for entry in entries { builder.add(entry) } }
                if let damage = outcome.damage {
                    throw StoreError.corrupted(segment: segmentName(id), offset: damage.offset, reason: damage.reason)
                }
                if outcome.committedEnd != part.view.length {
                    throw StoreError.corrupted(segment: segmentName(id), offset: outcome.committedEnd,
                                               reason: "the log ends before the \(part.view.length) bytes the index image covers")
                }
                newest = outcome.lastSequence
            }
            previous = max(previous, newest!, part.coversThroughSequence)
        }
        return builder.build().tables
    }
}
