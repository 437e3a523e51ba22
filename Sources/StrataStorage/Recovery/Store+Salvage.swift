// Salvage: the way out for a store that no longer opens. Every segment file is read on its
// own, without trusting the manifest, hints or any other file: a log segment gives the
// transactions whose records and commit record are all intact (past damage, the reader
// moves forward eight bytes at a time — records are 8-byte aligned — until a record parses
// again); a compacted segment gives each intact record. For every key the record with the
// newest sequence number wins (a delete removes it), and the result is written into a new
// store. The report says what could not be read and which transaction sequence numbers are
// missing, so the caller knows what was lost.

import Foundation

extension Store {
    /// What ``salvage(from:into:options:)`` recovered and what it could not.
    public struct SalvageReport: Sendable {
        /// A stretch of a segment file that could not be read.
        public struct Damage: Sendable, CustomStringConvertible {
            /// The file's name.
            public var file: String
            /// Where the unreadable bytes start.
            public var offset: Int
            /// How many bytes could not be read.
            public var length: Int
            /// Why reading stopped there.
            public var reason: String
            /// `file at offset (length bytes): reason`.
            public var description: String { "\(file) at \(offset) (\(length) bytes): \(reason)" }
        }

        /// Segment files read.
        public var segments = 0
        /// Files that could not be read at all (unreadable, or not a segment), with why.
        public var unreadableFiles: [String] = []
        /// Damaged stretches inside segment files.
        public var damage: [Damage] = []
        /// Complete transactions recovered from log segments.
        public var transactions = 0
        /// Transactions whose records were found without their commit record (not kept).
        public var incompleteTransactions = 0
        /// Records recovered from compacted segments.
        public var compactedRecords = 0
        /// Keys in the new store.
        public var keys = 0
        /// Newest transaction sequence number seen.
        public var lastSequence: UInt64 = 0
        /// Sequence numbers of log transactions below `lastSequence` that were not found —
        /// lost with a damaged or missing file — as ranges. (Transactions a compaction
        /// replaced, at or below the newest sequence a compacted segment covers, are not
        /// counted: compaction keeps only the newest version of each key by design.)
        public var missingSequences: [ClosedRange<UInt64>] = []

        /// Whether anything was found damaged or missing.
        public var lostSomething: Bool { !unreadableFiles.isEmpty || !damage.isEmpty || incompleteTransactions > 0 }
    }

    /// Reads every intact committed record of the store in `source` — which need not open —
    /// and writes the newest version of each key into a new store in `destination`.
    ///
    /// The source is only read (it is locked shared, so a process writing it is refused).
    /// `destination` must not hold a store yet.
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` when `source` is not a directory or
    ///   `destination` already holds files; ``StoreError/locked(_:)``; I/O errors.
    public static func salvage(from source: URL, into destination: URL, options: StoreOptions = StoreOptions()) throws -> SalvageReport {
        let fileSystem = options.fileSystem
        let path = source.standardizedFileURL.path
        let names: [String]
        do {
            names = try fileSystem.listDirectory(path)
        } catch {
            throw StoreError.invalidArgument("\(path) is not a readable store directory")
        }
        if let existing = try? fileSystem.listDirectory(destination.standardizedFileURL.path), !existing.isEmpty {
            throw StoreError.invalidArgument("\(destination.path) already holds files; salvage writes into a new directory")
        }
        let lock = try fileSystem.lock(path + "/LOCK", shared: true)
        defer { lock.unlock() }

        var report = SalvageReport()
        var found = SalvagedRecords()
        for name in names.sorted() where name.hasSuffix(".seg") {
            guard let number = UInt32(name.dropLast(4)) else { continue }
            let bytes: [UInt8]
            do {
                bytes = try readWholeFile(path + "/" + name, fileSystem: fileSystem)
            } catch {
                report.unreadableFiles.append("\(name): \(error)")
                continue
            }
            report.segments += 1
            bytes.withUnsafeBytes { salvageSegment($0, name: name, number: number, cipher: options.cipher, report: &report, found: &found) }
        }
        if report.segments > 0, report.unreadableFiles.count == report.segments,
           report.unreadableFiles.allSatisfy({ $0.hasSuffix(Store.keyRefusal) }) {
            throw StoreError.wrongKey(options.cipher == nil
                ? "every segment of \(path) is encrypted and no encryption key was given"
                : "the key opens no segment of \(path)")
        }
        report.lastSequence = found.lastSequence
        // Transactions a compaction replaced are gone by design: only gaps above count.
        report.missingSequences = missingRanges(found.logSequences, through: found.lastSequence).compactMap { range in
            range.upperBound <= found.compactedThrough ? nil : max(range.lowerBound, found.compactedThrough + 1) ... range.upperBound
        }
        report.keys = try writeNewest(found.newest, into: destination, options: options)
        return report
    }

    private struct TableKey: Hashable {
        let table: UInt32
        let key: [UInt8]
    }

    /// What the segments hold, gathered across files: the newest version of each key
    /// (nil value: deleted), the log's committed sequences, and what compactions covered.
    private struct SalvagedRecords {
        var newest: [TableKey: (sequence: UInt64, value: [UInt8]?)] = [:]
        var logSequences: [UInt64] = []
        var lastSequence: UInt64 = 0
        var compactedThrough: UInt64 = 0

        mutating func add(_ kind: RecordKind, table: UInt32, key: UnsafeRawBufferPointer, value: [UInt8]?, sequence: UInt64) {
            let entry = TableKey(table: table, key: Array(key))
            if let known = newest[entry], known.sequence > sequence { return }
            newest[entry] = (sequence, kind == .put ? value : nil)
            lastSequence = max(lastSequence, sequence)
        }
    }

    /// A new store in `destination` holding the newest value of every live key; returns how
    /// many keys.
    private static func writeNewest(_ newest: [TableKey: (sequence: UInt64, value: [UInt8]?)], into destination: URL,
                                    options: StoreOptions) throws -> Int {
        let live = newest.compactMap { entry, version in version.value.map { (entry, $0) } }
            .sorted { a, b in a.0.table != b.0.table ? a.0.table < b.0.table : a.0.key.lexicographicallyPrecedes(b.0.key) }
        return try writeNewStore(into: destination, options: options) { put in
            for (entry, value) in live { try put(entry.table, entry.key, value) }
        }
    }

    /// Makes a new store in `destination` and writes into it every record `produce` hands
    /// to its `put`, in transactions of 10,000 records, then closes it; returns how many.
    /// On failure the half-written store is closed (the caller's destination, left as is).
    static func writeNewStore(into destination: URL, options: StoreOptions,
                              _ produce: (_ put: (UInt32, [UInt8], [UInt8]) throws -> Void) throws -> Void) throws -> Int {
        var writeOptions = options
        writeOptions.readOnly = false
        let store = try Store(directory: destination, options: writeOptions)
        do {
            var batch: [(UInt32, [UInt8], [UInt8])] = []
            var written = 0
            func flush() throws {
                guard !batch.isEmpty else { return }
                try store.write { transaction in
                    for (table, key, value) in batch { try transaction.put(table: table, key: key, value: value) }
                }
                written += batch.count
                batch.removeAll(keepingCapacity: true)
            }
            try produce { table, key, value in
                batch.append((table, key, value))
                if batch.count == 10_000 { try flush() }
            }
            try flush()
            try store.close()
            return written
        } catch {
            try? store.close()
            throw error
        }
    }

    private static func readWholeFile(_ path: String, fileSystem: any FileSystem) throws -> [UInt8] {
        let file = try fileSystem.openFile(path, create: false, readOnly: true)
        defer { file.close() }
        let size = try file.size()
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = try bytes.withUnsafeMutableBytes { buffer in
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: done)
            }
            if n <= 0 { break }
            done += n
        }
        return Array(bytes.prefix(done))
    }

    /// The end of an unreadable-file entry that says the key (or its absence) does not fit.
    private static let keyRefusal = "(the encryption key does not fit this file)"

    /// Hands over the intact records of one segment: whole transactions of a log segment,
    /// every record of a compacted one. Damage is skipped eight bytes at a time.
    private static func salvageSegment(_ bytes: UnsafeRawBufferPointer, name: String, number: UInt32, cipher: StoreCipher?,
                                       report: inout SalvageReport, found: inout SalvagedRecords) {
        let fileCipher: FileCipher?
        switch segmentCipher(bytes, cipher: cipher) {
        case .success(let found): fileCipher = found
        case .failure(let refusal):
            report.unreadableFiles.append("\(name): \(refusal.reason) \(keyRefusal)")
            return
        }
        var kind = SegmentKind.log
        let reader = SegmentReader(bytes, cipher: fileCipher)
        switch SegmentHeader.read(file: bytes, number: number, cipher: cipher) {
        case .success(let header):
            kind = header.info.kind
            if kind == .compacted { found.compactedThrough = max(found.compactedThrough, header.info.coversThroughSequence) }
        case .failure(let problem):
            // Without a header, guess from the records: commit records mean a log segment.
            report.damage.append(.init(file: name, offset: 0, length: min(bytes.count, reader.dataStart), reason: "segment header: \(problem.reason)"))
            if bytes.count < reader.dataStart { return }
        }
        var walk = RecordWalk(name: name, kind: kind)
        walk.run(reader, bytes: bytes, report: &report, found: &found)
    }

    /// Why a segment's records cannot be read with the store's key (or its absence).
    private struct KeyRefusal: Error { let reason: String }

    /// An encrypted segment's cipher, from its preamble alone (so records stay readable when
    /// the header's frame is damaged); nil for a plain segment of a plain store.
    private static func segmentCipher(_ bytes: UnsafeRawBufferPointer, cipher: StoreCipher?) -> Result<FileCipher?, KeyRefusal> {
        switch cipher.map({ $0.check(bytes, kind: .segment) }) {
        case nil where EncryptedFile.hasMagic(bytes): return .failure(KeyRefusal(reason: "encrypted, and no key was given"))
        case nil: return .success(nil)
        case .encrypted(let found)?: return .success(found)
        case .otherKey?: return .failure(KeyRefusal(reason: "encrypted with another key, or its preamble is damaged"))
        case .notEncrypted?: return .failure(KeyRefusal(reason: "not encrypted, but the store is"))
        }
    }

    /// One pass over a segment's records: intact ones handed to `found` (a log segment's
    /// only as whole transactions), damaged stretches and incomplete transactions reported.
    private struct RecordWalk {
        let name: String
        let kind: SegmentKind
        var pending: [(RecordKind, UInt32, UnsafeRawBufferPointer, [UInt8]?, UInt64)] = []
        var pendingSequence: UInt64 = 0
        var damageStart: Int?
        var damageReason = ""

        init(name: String, kind: SegmentKind) {
            self.name = name
            self.kind = kind
        }

        mutating func run(_ reader: SegmentReader, bytes: UnsafeRawBufferPointer, report: inout SalvageReport, found: inout SalvagedRecords) {
            var offset = reader.dataStart
            while offset + RecordFormat.headerSize <= bytes.count {
                switch reader.record(at: offset) {
                case .failure(let failure):
                    if damageStart == nil {
                        // Zeros after the last record are an unwritten tail, not damage.
                        if bytes[offset...].allSatisfy({ $0 == 0 }) { offset = bytes.count; continue }
                        damageStart = offset
                        damageReason = failure.reason
                        dropPending(&report)
                    }
                    offset += 8
                case .success(let view):
                    endDamage(at: offset, &report)
                    take(view, at: offset, report: &report, found: &found)
                    offset += view.size
                }
            }
            endDamage(at: min(offset, bytes.count), &report)
            dropPending(&report)
        }

        private mutating func take(_ view: RecordView, at offset: Int, report: inout SalvageReport, found: inout SalvagedRecords) {
            let value: [UInt8]? = view.kind == .put ? view.value() : nil
            if view.kind == .put && value == nil {
                report.damage.append(.init(file: name, offset: offset, length: view.size, reason: "compressed value does not decompress"))
                dropPending(&report)
                return
            }
            switch (kind, view.kind) {
            case (.compacted, .put), (.compacted, .delete):
                found.add(view.kind, table: view.table, key: view.key, value: value, sequence: view.sequence)
                report.compactedRecords += 1
            case (.compacted, .commit):
                break
            case (.log, .commit):
                if !pending.isEmpty, view.sequence == pendingSequence, view.commitRecordCount == pending.count {
                    for item in pending { found.add(item.0, table: item.1, key: item.2, value: item.3, sequence: item.4) }
                    report.transactions += 1
                    found.logSequences.append(view.sequence)
                    pending.removeAll()
                } else {
                    dropPending(&report)
                }
            case (.log, _):
                if !pending.isEmpty && view.sequence != pendingSequence { dropPending(&report) }
                pendingSequence = view.sequence
                pending.append((view.kind, view.table, view.key, value, view.sequence))
            }
        }

        private mutating func endDamage(at end: Int, _ report: inout SalvageReport) {
            guard let start = damageStart else { return }
            report.damage.append(.init(file: name, offset: start, length: end - start, reason: damageReason))
            damageStart = nil
        }

        private mutating func dropPending(_ report: inout SalvageReport) {
            if !pending.isEmpty { report.incompleteTransactions += 1 }
            pending.removeAll()
        }
    }

    /// The sequence numbers from 1 through `last` absent from `found`, as ranges: the gaps
    /// between the sorted numbers found (the sequences come from damaged files, so the time
    /// taken depends on how many were found, never on how large they are).
    static func missingRanges(_ found: [UInt64], through last: UInt64) -> [ClosedRange<UInt64>] {
        var ranges: [ClosedRange<UInt64>] = []
        var expected: UInt64 = 1
        for sequence in Set(found).sorted() where sequence >= expected && sequence <= last {
            if sequence > expected { ranges.append(expected ... sequence - 1) }
            if sequence == .max { return ranges }
            expected = sequence + 1
        }
        if expected <= last { ranges.append(expected ... last) }
        return ranges
    }
}
