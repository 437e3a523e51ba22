// SegmentScanner: reads a segment's records in file order and hands back whole committed
// transactions. It never trusts a length it has not checked, and reports where the valid
// data ends and why, so recovery can decide between "torn tail" and "corruption".

/// One put or delete found in a segment (or a hint file).
struct ScannedEntry {
    var kind: RecordKind
    var table: UInt32
    /// Points into the mapping (or hint bytes) the entry was read from.
    var key: UnsafeRawBufferPointer
    var location: Location
    var sequence: UInt64
    /// The record's encoded bytes (a scan's entries only; empty for a hint's).
    var encoded = UnsafeRawBufferPointer(start: nil, count: 0)
}

struct ScanOutcome {
    /// End offset of the last complete transaction: everything before it is good.
    var committedEnd: Int
    /// Sequence of the last complete transaction (or the one passed in if none).
    var lastSequence: UInt64
    /// Where and why the scan stopped before the end of the data, if it did.
    var damage: (offset: Int, reason: String)?
    var rawValueBytes = 0
    var storedValueBytes = 0
    var transactions = 0
}

enum SegmentScanner {
    /// Scans the segment `reader` reads (a whole segment, header included) from `start` (a
    /// transaction boundary; the first record by default) and calls `apply` once per complete
    /// transaction, in order. `previousSequence` is the newest sequence seen before `start`.
    /// Entries point into the reader's bytes or arena.
    static func scan(_ reader: SegmentReader, segmentID: UInt32, from start: Int? = nil, previousSequence: UInt64,
                     apply: ([ScannedEntry], UInt64) throws -> Void) rethrows -> ScanOutcome {
        let bytes = reader.bytes
        var outcome = ScanOutcome(committedEnd: start ?? reader.dataStart, lastSequence: previousSequence)
        var offset = start ?? reader.dataStart
        var pending: [ScannedEntry] = []
        var pendingSequence: UInt64 = 0
        var pendingRaw = 0, pendingStored = 0
        while offset < bytes.count {
            let record: RecordView
            switch reader.record(at: offset) {
            case .failure(let failure):
                outcome.damage = (offset, failure.reason)
                return outcome
            case .success(let parsed):
                record = parsed
            }
            if record.kind == .commit {
                guard !pending.isEmpty, record.sequence == pendingSequence,
                      record.commitRecordCount == pending.count else {
                    outcome.damage = (offset, "commit record does not match the records before it")
                    return outcome
                }
                try apply(pending, record.sequence)
                pending.removeAll(keepingCapacity: true)
                offset += record.size
                outcome.committedEnd = offset
                outcome.lastSequence = record.sequence
                outcome.rawValueBytes += pendingRaw
                outcome.storedValueBytes += pendingStored
                outcome.transactions += 1
                pendingRaw = 0
                pendingStored = 0
                continue
            }
            if pending.isEmpty {
                guard record.sequence > outcome.lastSequence else {
                    outcome.damage = (offset, "sequence number \(record.sequence) does not follow \(outcome.lastSequence)")
                    return outcome
                }
                pendingSequence = record.sequence
            } else if record.sequence != pendingSequence {
                outcome.damage = (offset, "record of transaction \(record.sequence) inside transaction \(pendingSequence)")
                return outcome
            }
            pending.append(ScannedEntry(
                kind: record.kind, table: record.table, key: record.key,
                location: Location(segment: segmentID, offset: UInt32(offset), size: UInt32(record.size)),
                sequence: record.sequence, encoded: record.encoded))
            if record.kind == .put {
                pendingRaw += record.rawLength
                pendingStored += record.storedValue.count
            }
            offset += record.size
        }
        if !pending.isEmpty {
            outcome.damage = (outcome.committedEnd, "transaction \(pendingSequence) has no commit record")
        }
        return outcome
    }

    /// Scans a compacted segment: standalone puts and tombstones carrying their original
    /// sequence numbers, no commit records (the whole file was published at once, by a
    /// rename after it was synced). Calls `apply` once with every entry, in file order.
    static func scanCompacted(_ reader: SegmentReader, segmentID: UInt32,
                              apply: ([ScannedEntry]) throws -> Void) rethrows -> ScanOutcome {
        var outcome = ScanOutcome(committedEnd: reader.dataStart, lastSequence: 0)
        var offset = reader.dataStart
        var entries: [ScannedEntry] = []
        while offset < reader.bytes.count {
            switch reader.record(at: offset) {
            case .failure(let failure):
                outcome.damage = (offset, failure.reason)
                return outcome
            case .success(let record):
                guard record.kind != .commit else {
                    outcome.damage = (offset, "commit record inside a compacted segment")
                    return outcome
                }
                entries.append(ScannedEntry(
                    kind: record.kind, table: record.table, key: record.key,
                    location: Location(segment: segmentID, offset: UInt32(offset), size: UInt32(record.size)),
                    sequence: record.sequence, encoded: record.encoded))
                if record.kind == .put {
                    outcome.rawValueBytes += record.rawLength
                    outcome.storedValueBytes += record.storedValue.count
                }
                outcome.lastSequence = max(outcome.lastSequence, record.sequence)
                offset += record.size
            }
        }
        try apply(entries)
        outcome.committedEnd = offset
        return outcome
    }

    /// After damage at `damageOffset` in the newest segment: is there an intact commit
    /// record further on whose durable watermark lies beyond `committedEnd`? If so the
    /// damaged bytes had been synced, so a crash cannot explain them: it is corruption.
    static func syncedDataFollows(_ reader: SegmentReader, damageOffset: Int, committedEnd: Int) -> Bool {
        let bytes = reader.bytes
        // A commit record's size in the file, and (plain) its kind byte, rule out most offsets
        // before anything is checked or opened.
        let commitSize = RecordFormat.commitRecordSize + (reader.cipher == nil ? 0 : Frame.overhead)
        var offset = align8(damageOffset + 1)
        while offset + commitSize <= bytes.count {
            let candidate = reader.cipher == nil
                ? bytes[offset + 4] == RecordKind.commit.rawValue
                : Frame.plainLength(bytes, at: offset) == RecordFormat.commitRecordSize
            if candidate, case .success(let record) = reader.record(at: offset), record.kind == .commit,
               record.commitDurableWatermark > UInt64(committedEnd) {
                return true
            }
            offset += 8
        }
        return false
    }
}
