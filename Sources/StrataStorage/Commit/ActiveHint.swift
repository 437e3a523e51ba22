// ActiveHint: the hint entries of the active segment, recorded as its records are appended,
// so that sealing the segment writes its hint file without reading the segment again (a
// full scan inside the commit that seals it: ~0.1 µs a record, several times that when
// every frame must be opened again in an encrypted store).
//
// Memory is bounded: entries are kept in 1 MiB chunks (no doubling copies) up to `limit`
// bytes, or a quarter of the segment's bytes so far when that is more (a transaction larger
// than a segment grows the active segment past its size: its entries are kept too, or the
// commit after it would scan hundreds of MiB to seal it). A segment whose entries would take
// more (a huge transaction of tiny records) drops them and is scanned at its seal, as before.

struct ActiveHint {
    private static let chunkSize = 1 << 20
    /// Entries as hint files lay them out (HintFile.swift), never split across chunks.
    private var chunks: [[UInt8]] = []
    private(set) var count = 0
    private var bytes = 0
    let limit: Int
    /// True once the entries outgrew `limit` and were dropped: the seal scans instead.
    private(set) var overflowed = false

    init(limit: Int) {
        self.limit = limit
    }

    /// A log whose entries so far were never recorded (an open that took them from the index
    /// image): no hint can be made of it, so the seal scans the segment and close writes
    /// no prefix hint — an empty one would claim the segment's records were none.
    static func dropped() -> ActiveHint {
        var hint = ActiveHint(limit: 0)
        hint.overflowed = true
        return hint
    }

    /// Where the log stands: ``truncate(to:)`` goes back to it.
    struct Mark {
        fileprivate var count: Int
        fileprivate var bytes: Int
        fileprivate var chunks: Int
        fileprivate var lastChunkBytes: Int
        fileprivate var overflowed: Bool
    }

    var mark: Mark {
        Mark(count: count, bytes: bytes, chunks: chunks.count, lastChunkBytes: chunks.last?.count ?? 0, overflowed: overflowed)
    }

    mutating func add(kind: RecordKind, table: UInt32, key: UnsafeRawBufferPointer, location: Location, sequence: UInt64) {
        guard !overflowed else { return }
        let size = HintFile.entryFixedSize + key.count
        guard limit > 0, bytes + size <= max(limit, Int(location.offset) / 4) else {   // 0: never records
            overflowed = true
            chunks = []
            return
        }
        if chunks.isEmpty || chunks[chunks.count - 1].count + size > ActiveHint.chunkSize {
            var chunk: [UInt8] = []
            chunk.reserveCapacity(max(ActiveHint.chunkSize, size))
            chunks.append(chunk)
        }
        HintFile.appendEntry(to: &chunks[chunks.count - 1], kind: kind, table: table, key: key, location: location, sequence: sequence)
        count += 1
        bytes += size
    }

    /// Drops every entry added since `mark` (a rolled-back transaction's). Entries dropped
    /// by an overflow since then stay dropped.
    mutating func truncate(to mark: Mark) {
        guard !overflowed else { return }
        chunks.removeLast(chunks.count - mark.chunks)
        if !chunks.isEmpty { chunks[chunks.count - 1].removeSubrange(mark.lastChunkBytes...) }
        count = mark.count
        bytes = mark.bytes
    }

    /// The hint file of segment `segmentID`, or nil if the entries overflowed.
    func hintFile(segmentID: UInt32, segmentLength: Int, lastSequence: UInt64,
                  rawValueBytes: Int, storedValueBytes: Int) -> [UInt8]? {
        guard !overflowed else { return nil }
        var builder = HintFile.Builder(segmentID: segmentID, segmentLength: segmentLength, count: count,
                                       lastSequence: lastSequence, rawValueBytes: rawValueBytes,
                                       storedValueBytes: storedValueBytes, entryBytes: bytes)
        for chunk in chunks { builder.appendEncodedEntries(chunk) }
        return builder.finish()
    }
}
