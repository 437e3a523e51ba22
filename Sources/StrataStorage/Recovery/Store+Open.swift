// Opening a store: find the segments, order them by replay position, rebuild the index
// from hint files (or by scanning), and repair a torn tail. Exactly the transactions whose
// commit record is intact survive.
//
// Damage rules (docs/FORMAT.md, "Recovery"):
// - A sealed log segment was synced before it was sealed, and a compacted segment before
//   it was renamed into place, so any damage in them is corruption.
// - In the newest log segment, damage followed by an intact commit record whose durable
//   watermark lies past the damage is corruption (those bytes had been synced); otherwise
//   it is a torn tail from a crash and is truncated at the last complete transaction.
// - A `CLEAN` marker (left by close) must match the newest log segment exactly.

struct Recovered {
    var directory: KeyDirectory
    var space: [UInt32: SegmentSpace]
    var activeFile: (any StorageFile)?
    var activeID: UInt32
    var activeSize: Int
    var activeRegion: MappedRegion
    /// The active segment's cipher (encrypted store).
    var activeCipher: FileCipher?
    /// The active segment's hint entries so far (empty for a read-only open).
    var activeHint: ActiveHint
    /// The number the next new segment file takes.
    var nextFileNumber: UInt32
    /// The segments as MANIFEST lists them (written already, unless the open was read-only).
    var manifest: Manifest
}

/// A segment file found at open, with its header read.
private struct FoundSegment {
    var number: UInt32
    var size: Int
    var region: MappedRegion
    var info: SegmentHeader.Info
    /// The file's cipher (encrypted store).
    var cipher: FileCipher?
    /// A newest segment whose header never reached the disk (crash right after creation).
    var tornCreation: Bool
}

extension Store {
    /// Bytes mapped for the active segment beyond its size, so appends rarely remap.
    static func activeMappingLength(forSize size: Int, segmentSize: Int) -> Int {
        let wanted = max(size, segmentSize) + (16 << 20)
        return (wanted + (1 << 20) - 1) & ~((1 << 20) - 1)
    }

    /// The number of a segment file name (`00000007.seg`, `100000000.seg`), or nil.
    static func parseSegmentName(_ name: String) -> UInt32? { parseSegmentNumber(name, suffix: ".seg") }

    /// The file number of `name` as ``segmentName(_:)`` and ``hintName(_:)`` write it: 8 to
    /// 10 ASCII digits then `suffix`, a UInt32, in exactly the padding those functions use.
    static func parseSegmentNumber(_ name: String, suffix: String) -> UInt32? {
        let utf8 = name.utf8
        guard name.hasSuffix(suffix), (8 ... 10).contains(utf8.count - suffix.utf8.count) else { return nil }
        let digits = utf8.prefix(utf8.count - suffix.utf8.count)
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let number = UInt32(String(decoding: digits, as: UTF8.self)),
              fileNumberText(number).utf8.elementsEqual(digits) else { return nil }
        return number
    }

    static func recover(path: String, options: StoreOptions) throws -> Recovered {
        let fs = options.fileSystem
        let writable = !options.readOnly
        let cipher = options.cipher
        let dataStart = SegmentReader.dataStart(encrypted: cipher != nil)
        let names = try fs.listDirectory(path)
        let allNumbers = names.compactMap(parseSegmentName).sorted()
        try checkKey(path: path, names: names, segments: allNumbers, cipher: cipher, fileSystem: fs)
        if writable {
            // Unfinished hint files, markers and compaction outputs.
            for name in names where name.hasSuffix(".tmp") { try fs.remove(path + "/" + name) }
        }
        let manifest = try readManifest(path: path, names: names, cipher: cipher, fileSystem: fs)
        var numbers = allNumbers
        if let manifest {
            numbers = try checkAgainstManifest(manifest, numbers: allNumbers, path: path, writable: writable,
                                               cipher: cipher, fileSystem: fs)
        }
        if writable {
            // A hint whose segment is gone (a crash between deleting a compacted segment and
            // its hint) must not survive to meet a later segment that reuses the number.
            let present = Set(numbers.map(hintName))
            for name in names where name.hasSuffix(".hint") && !present.contains(name) {
                try fs.remove(path + "/" + name)
            }
        }
        let marker = try readMarker(path: path, names: names, cipher: cipher, fileSystem: fs)

        var directory = KeyDirectory()
        var index = IndexBuilder()
        var space: [UInt32: SegmentSpace] = [:]

        guard let newestNumber = numbers.last else {
            if let marker, marker.lastSequence > 0 {
                throw StoreError.corrupted(segment: segmentName(marker.segmentID), offset: 0,
                                           reason: "segment file is missing (the store was closed with data in it)")
            }
            guard writable else {
                return Recovered(directory: directory, space: space, activeFile: nil, activeID: 0, activeSize: 0,
                                 activeRegion: MappedRegion(base: nil, length: 0), activeCipher: nil,
                                 activeHint: ActiveHint(limit: 0),
                                 nextFileNumber: 1, manifest: Manifest())
            }
            let (file, fileCipher) = try createSegment(path: path, id: 1, cipher: cipher, fileSystem: fs)
            let region = try file.map(length: activeMappingLength(forSize: dataStart, segmentSize: options.segmentSize))
            directory.active = SegmentView(id: 1, region: region, length: dataStart, cipher: fileCipher)
            space[1] = SegmentSpace(diskBytes: dataStart, sealed: false)
            var created = Manifest()
            created.entries[1] = Manifest.Entry(kind: .log, sealedLength: nil)
            try writeManifest(created, path: path, cipher: cipher, fileSystem: fs)
            if marker != nil { try removeMarker(path: path, fileSystem: fs) }
            return Recovered(directory: directory, space: space, activeFile: file, activeID: 1,
                             activeSize: dataStart, activeRegion: region, activeCipher: fileCipher,
                             activeHint: ActiveHint(limit: Store.activeHintLimit(segmentSize: options.segmentSize)),
                             nextFileNumber: max(2, (allNumbers.last ?? 0) &+ 1), manifest: created)
        }
        if writable, newestNumber == .max {
            // Every later segment file (a roll, a compaction output) needs a higher number.
            throw StoreError.invalidArgument(
                "segment \(segmentName(newestNumber)) has the last file number, \(UInt32.max): a writable open could create no further segment file; open the store read-only and copy its data to a new store")
        }

        // Read every header, then order by replay position.
        var found: [FoundSegment] = []
        for number in numbers {
            let file = try fs.openFile(path + "/" + segmentName(number), create: false, readOnly: true)
            defer { file.close() }
            let size = try file.size()
            guard size <= Int(UInt32.max) else {
                throw StoreError.corrupted(segment: segmentName(number), offset: Int(UInt32.max),
                                           reason: "segment is larger than 4 GiB, which Strata never writes")
            }
            if let sealedLength = manifest?.entries[number]?.sealedLength, sealedLength != size {
                throw StoreError.corrupted(
                    segment: segmentName(number), offset: min(size, sealedLength),
                    reason: "segment is \(size) bytes but was sealed at \(sealedLength) bytes, as MANIFEST records (truncated, replaced by another copy, or appended to)")
            }
            let region = try file.map(length: size)
            let bytes = region.bytes(at: 0, count: size, limit: size) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            switch SegmentHeader.read(file: bytes, number: number, cipher: cipher) {
            case .success(let (info, fileCipher)):
                if let listed = manifest?.entries[number], listed.kind != info.kind {
                    throw StoreError.corrupted(segment: segmentName(number), offset: 16,
                                               reason: "segment is a \(info.kind) segment but MANIFEST lists a \(listed.kind) segment of that number (replaced file)")
                }
                found.append(FoundSegment(number: number, size: size, region: region, info: info, cipher: fileCipher, tornCreation: false))
            case .failure(.version(let version)):
                throw StoreError.formatVersion(found: Int(version), supported: Int(SegmentHeader.formatVersion))
            case .failure(let problem):
                // A crash between creating a segment and syncing its header leaves at most the
                // header's 32 bytes, in the newest file; anything else had a synced header.
                guard number == newestNumber, size <= dataStart, marker == nil else {
                    throw StoreError.corrupted(segment: segmentName(number), offset: 0, reason: problem.reason)
                }
                found.append(FoundSegment(number: number, size: size, region: region,
                                          info: .init(kind: .log, position: ReplayPosition(major: number, minor: 0)),
                                          cipher: nil, tornCreation: true))
            }
        }
        found.sort { $0.info.position < $1.info.position }
        guard let active = found.last, active.info.kind == .log else {
            throw StoreError.corrupted(segment: segmentName(found.last!.number), offset: 0,
                                       reason: "the newest segment in replay order is not a log segment")
        }
        if manifest == nil, let listed = found.first(where: { $0.info.version >= 2 && !($0.number == active.number && $0.size <= dataStart) }) {
            // Every segment of format version 2 is named by a MANIFEST, written before anything
            // is committed to it; only a new segment still empty can predate its manifest.
            throw StoreError.corrupted(
                segment: Manifest.fileName, offset: 0,
                reason: "the manifest is missing, but segment \(segmentName(listed.number)) (format version 2) was written under one: it was deleted")
        }

        var lastSequence: UInt64 = 0
        // A compaction drops old versions only once the newer ones are durable, and records
        // the sequence it relied on: the log must still reach it, or the log lost synced data.
        var reliedOn: (sequence: UInt64, segment: UInt32) = (0, 0)
        for segment in found.dropLast() {
            var segmentSpace = SegmentSpace(diskBytes: segment.size, sealed: true, kind: segment.info.kind,
                                            position: segment.info.position)
            lastSequence = try loadSealed(segment, path: path, writable: writable, previousSequence: lastSequence, cipher: cipher,
                                          index: &index, segmentSpace: &segmentSpace, fileSystem: fs)
            // A compacted segment stands for every transaction of the segments it replaced,
            // even those it dropped: the store's sequence never goes back past them.
            lastSequence = max(lastSequence, segment.info.coversThroughSequence)
            segmentSpace.coversThrough = segment.info.coversThroughSequence
            segmentSpace.reliesOn = segment.info.reliesOnSequence
            if segment.info.reliesOnSequence > reliedOn.sequence {
                reliedOn = (segment.info.reliesOnSequence, segment.number)
            }
            space[segment.number] = segmentSpace
            directory.setSealed(SegmentView(id: segment.number, region: segment.region, length: segment.size, cipher: segment.cipher))
        }

        // The newest log segment: the one a crash can have torn.
        let id = active.number
        let name = segmentName(id)
        let file = try fs.openFile(path + "/" + name, create: false, readOnly: !writable)
        var keepFile = false
        defer { if !keepFile { file.close() } }
        var size = active.size
        let originalSize = size
        var region = try file.map(length: activeMappingLength(forSize: size, segmentSize: options.segmentSize))
        var segmentSpace = SegmentSpace(diskBytes: size, sealed: false)
        var validLength: Int
        var activeCipher = active.cipher
        var activeHint = ActiveHint(limit: writable ? Store.activeHintLimit(segmentSize: options.segmentSize) : 0)
        if active.tornCreation {
            if writable {
                let start = try SegmentHeader.fileStart(SegmentHeader.encode(number: id), cipher: cipher)
                try file.truncate(to: 0)
                try file.write(start.bytes, at: 0)
                try file.syncData()
                activeCipher = start.cipher
                size = dataStart
                region = try file.map(length: activeMappingLength(forSize: size, segmentSize: options.segmentSize))
            }
            validLength = writable ? dataStart : 0
        } else {
            let reader = SegmentReader(region.bytes(at: 0, count: size, limit: size)!, cipher: active.cipher)
            func recovered(_ entry: ScannedEntry) {
                index.add(entry)
                if writable {
                    activeHint.add(kind: entry.kind, table: entry.table, key: entry.key, location: entry.location, sequence: entry.sequence)
                }
            }
            // The hint `close()` wrote covers the segment as it was then: only what follows
            // (nothing, after a clean close) needs reading.
            let prefix = loadActivePrefixHint(path: path, id: id, size: size, previousSequence: lastSequence,
                                              cipher: cipher, fileSystem: fs, recovered)
            let outcome = SegmentScanner.scan(reader, segmentID: id, from: prefix?.length,
                                              previousSequence: prefix?.lastSequence ?? lastSequence) { entries, _ in
                for entry in entries { recovered(entry) }
            }
            if let damage = outcome.damage {
                if marker != nil {
                    throw StoreError.corrupted(segment: name, offset: damage.offset,
                                               reason: damage.reason + " (the store was closed cleanly, so this is damage, not a torn write)")
                }
                if SegmentScanner.syncedDataFollows(reader, damageOffset: damage.offset, committedEnd: outcome.committedEnd) {
                    throw StoreError.corrupted(segment: name, offset: damage.offset,
                                               reason: damage.reason + " (inside data that had been synced)")
                }
            }
            lastSequence = max(lastSequence, outcome.lastSequence)
            segmentSpace.rawValueBytes = outcome.rawValueBytes + (prefix?.rawValueBytes ?? 0)
            segmentSpace.storedValueBytes = outcome.storedValueBytes + (prefix?.storedValueBytes ?? 0)
            validLength = outcome.committedEnd
            if writable && validLength < size {
                options.logger?.warning("recovery truncated a torn tail of \(size - validLength) bytes at \(name) offset \(validLength): the transactions after sequence \(lastSequence) were never committed", metadata: ["store": "\(path)"])
                try file.truncate(to: validLength)
                size = validLength
            }
            if writable {
                // Make what recovery kept durable, so later watermarks may vouch for it.
                try file.syncData()
            }
        }
        if reliedOn.sequence > lastSequence {
            throw StoreError.corrupted(
                segment: name, offset: validLength,
                reason: "the log ends at sequence \(lastSequence) but compacted segment \(segmentName(reliedOn.segment)) relies on sequence \(reliedOn.sequence) being durable: the newest segment lost data that had been synced")
        }
        if let marker {
            guard marker.segmentID == id, marker.segmentLength == originalSize, marker.lastSequence == lastSequence else {
                throw StoreError.corrupted(
                    segment: name, offset: min(originalSize, marker.segmentLength),
                    reason: "the store was closed cleanly at segment \(marker.segmentID), \(marker.segmentLength) bytes, sequence \(marker.lastSequence), but holds segment \(id), \(originalSize) bytes, sequence \(lastSequence) (truncated or replaced file)")
            }
            if writable { try removeMarker(path: path, fileSystem: fs) }
        }
        segmentSpace.diskBytes = writable ? size : originalSize
        space[id] = segmentSpace
        // Every segment read: the index is built whole, and each segment's live bytes are
        // those of the records it ends up holding.
        let built = index.build()
        directory.tables = built.tables
        for (number, bytes) in built.liveBytes { space[number]?.liveBytes = bytes }
        directory.active = SegmentView(id: id, region: region, length: validLength, cipher: activeCipher)
        directory.sequence = lastSequence
        var loaded = Manifest()
        for segment in found.dropLast() {
            loaded.entries[segment.number] = Manifest.Entry(kind: segment.info.kind, sealedLength: segment.size)
        }
        loaded.entries[id] = Manifest.Entry(kind: .log, sealedLength: nil)
        if writable, manifest == nil {
            // A store written before manifests existed (or a new one whose first manifest
            // write a crash interrupted): list its segments now, then mark the active segment
            // version 2, so that older builds, which would not keep the manifest current,
            // refuse the store instead of writing to it.
            try writeManifest(loaded, path: path, cipher: cipher, fileSystem: fs)
            if active.info.version < SegmentHeader.formatVersion && !active.tornCreation {
                let header = try SegmentHeader.rewritten(SegmentHeader.encode(number: id), cipher: activeCipher)
                try file.write(header.bytes, at: header.offset)
                try file.syncData()
            }
        }
        keepFile = writable
        let newestFile = allNumbers.last ?? newestNumber
        return Recovered(directory: directory, space: space, activeFile: writable ? file : nil, activeID: id,
                         activeSize: validLength, activeRegion: region, activeCipher: activeCipher, activeHint: activeHint,
                         nextFileNumber: newestFile == .max ? .max : newestFile + 1, manifest: manifest ?? loaded)
    }

    /// Loads a sealed log segment or a compacted segment into the index, from its hint file
    /// when that is valid, otherwise by scanning it (and then writing a new hint). Returns
    /// the newest sequence seen so far.
    private static func loadSealed(_ segment: FoundSegment, path: String, writable: Bool, previousSequence: UInt64,
                                   cipher: StoreCipher?, index: inout IndexBuilder,
                                   segmentSpace: inout SegmentSpace, fileSystem fs: any FileSystem) throws -> UInt64 {
        let id = segment.number, size = segment.size
        let ordered = segment.info.kind == .log
        var lastSequence = previousSequence
        var usedHint = false
        if let hintBytes = loadHintBytes(path: path, id: id, cipher: cipher, fileSystem: fs) {
            hintBytes.withUnsafeBytes { raw in
                guard let hint = HintFile.forEachEntry(raw, segmentID: id, segmentLength: size, previousSequence: previousSequence,
                                                       ordered: ordered, dataStart: SegmentReader.dataStart(encrypted: cipher != nil),
                                                       { index.add($0) }) else { return }
                lastSequence = max(previousSequence, hint.lastSequence)
                segmentSpace.rawValueBytes = hint.rawValueBytes
                segmentSpace.storedValueBytes = hint.storedValueBytes
                usedHint = true
            }
        }
        if usedHint { return lastSequence }

        let reader = SegmentReader(segment.region.bytes(at: 0, count: size, limit: size)!, cipher: segment.cipher)
        var hintEntries: [ScannedEntry] = []
        let outcome: ScanOutcome
        if ordered {
            outcome = SegmentScanner.scan(reader, segmentID: id, previousSequence: previousSequence) { entries, _ in
                for entry in entries { index.add(entry) }
                hintEntries.append(contentsOf: entries)
            }
        } else {
            outcome = SegmentScanner.scanCompacted(reader, segmentID: id) { entries in
                for entry in entries { index.add(entry) }
                hintEntries = entries
            }
        }
        if let damage = outcome.damage {
            throw StoreError.corrupted(segment: segmentName(id), offset: damage.offset, reason: damage.reason)
        }
        segmentSpace.rawValueBytes = outcome.rawValueBytes
        segmentSpace.storedValueBytes = outcome.storedValueBytes
        if writable {
            // A hint is a cache: failing to write one costs only a slower next open.
            let hint = HintFile.encode(segmentID: id, segmentLength: size, entries: hintEntries,
                                       lastSequence: outcome.lastSequence, rawValueBytes: outcome.rawValueBytes,
                                       storedValueBytes: outcome.storedValueBytes)
            try? writeHint(path: path, id: id, bytes: hint, cipher: cipher, fileSystem: fs)
        }
        return max(previousSequence, outcome.lastSequence)
    }

    /// The MANIFEST, or nil if the store has none (a new store, or one written before
    /// manifests existed). A damaged one is corruption: it cannot be rebuilt from the
    /// segments, which is the point of it.
    private static func readManifest(path: String, names: [String], cipher: StoreCipher?, fileSystem fs: any FileSystem) throws -> Manifest? {
        guard names.contains(Manifest.fileName) else { return nil }
        let file = try fs.openFile(path + "/" + Manifest.fileName, create: false, readOnly: true)
        defer { file.close() }
        let size = try file.size()
        guard size <= Manifest.headerSize + Manifest.entrySize * Int(UInt32.max) + 4 + EncryptedFile.preambleSize + Frame.overhead else {
            throw StoreError.corrupted(segment: Manifest.fileName, offset: 0, reason: "manifest is implausibly large")
        }
        switch Manifest.decode(try openSmallFile(try file.readAll(), name: Manifest.fileName, kind: .manifest, cipher: cipher)) {
        case .success(let manifest): return manifest
        case .failure(let problem):
            throw StoreError.corrupted(segment: Manifest.fileName, offset: problem.offset,
                                       reason: problem.reason + " (restore the store from a backup; the segments alone cannot prove nothing is missing)")
        }
    }

    /// Checks the segment files against the manifest: every listed file must exist. A file
    /// it does not list is left over from an interrupted switch — a compaction's output
    /// published before the manifest named it, an input the manifest no longer names, or a
    /// new log segment (header only) a roll created before the manifest named it — and is
    /// removed (writable) or ignored. Returns the numbers of the segments to load.
    private static func checkAgainstManifest(_ manifest: Manifest, numbers: [UInt32], path: String, writable: Bool,
                                             cipher: StoreCipher?, fileSystem fs: any FileSystem) throws -> [UInt32] {
        let present = Set(numbers)
        for number in manifest.entries.keys.sorted() where !present.contains(number) {
            let what = manifest.entries[number]!.sealedLength.map { "a sealed \(manifest.entries[number]!.kind) segment of \($0) bytes" } ?? "the active segment"
            throw StoreError.corrupted(segment: segmentName(number), offset: 0,
                                       reason: "segment file is missing: MANIFEST lists it as \(what) (deleted or lost; restore it from a backup)")
        }
        let active = manifest.activeNumber ?? 0
        var leftovers: [UInt32] = []
        for number in numbers where manifest.entries[number] == nil {
            if number > active {
                let file = try fs.openFile(path + "/" + segmentName(number), create: false, readOnly: true)
                defer { file.close() }
                let size = try file.size()
                let dataStart = SegmentReader.dataStart(encrypted: cipher != nil)
                let header = try file.read(count: dataStart, at: 0)
                let compacted = header.withUnsafeBytes { raw -> Bool in
                    if case .success(let found) = SegmentHeader.read(file: raw, number: number, cipher: cipher) { return found.info.kind == .compacted }
                    return false
                }
                guard compacted || size <= dataStart else {
                    throw StoreError.corrupted(segment: segmentName(number), offset: dataStart,
                                               reason: "log segment holds data but MANIFEST, whose active segment is \(segmentName(active)), does not list it")
                }
            }
            leftovers.append(number)
        }
        if writable && !leftovers.isEmpty {
            for number in leftovers {
                try fs.remove(path + "/" + segmentName(number))
                try fs.remove(path + "/" + hintName(number))
            }
            try fs.syncDirectory(path)
        }
        return numbers.filter { manifest.entries[$0] != nil }
    }

    private static func readMarker(path: String, names: [String], cipher: StoreCipher?, fileSystem fs: any FileSystem) throws -> CleanShutdown.Marker? {
        guard names.contains(CleanShutdown.fileName) else { return nil }
        let file = try fs.openFile(path + "/" + CleanShutdown.fileName, create: false, readOnly: true)
        let bytes = try file.readAll()
        file.close()
        guard let decoded = CleanShutdown.decode(try openSmallFile(bytes, name: CleanShutdown.fileName, kind: .cleanMarker, cipher: cipher)) else {
            throw StoreError.corrupted(segment: CleanShutdown.fileName, offset: 0,
                                       reason: "clean-shutdown marker is damaged (delete it to open the store as after a crash)")
        }
        return decoded
    }

    /// What the active segment's hint (written by `close()`) covers: its first `length` bytes,
    /// whose entries were handed to `body`. Nil (and nothing handed over) if there is no such
    /// hint, or it does not check out, or the segment is now shorter than it says.
    private static func loadActivePrefixHint(path: String, id: UInt32, size: Int, previousSequence: UInt64, cipher: StoreCipher?,
                                             fileSystem fs: any FileSystem, _ body: (ScannedEntry) -> Void)
        -> (length: Int, lastSequence: UInt64, rawValueBytes: Int, storedValueBytes: Int)? {
        guard let bytes = loadHintBytes(path: path, id: id, cipher: cipher, fileSystem: fs) else { return nil }
        let dataStart = SegmentReader.dataStart(encrypted: cipher != nil)
        return bytes.withUnsafeBytes { raw in
            guard let length = HintFile.describedLength(raw), length > dataStart, length <= size,
                  let hint = HintFile.forEachEntry(raw, segmentID: id, segmentLength: length, previousSequence: previousSequence,
                                                   ordered: true, dataStart: dataStart, body) else { return nil }
            return (length, max(previousSequence, hint.lastSequence), hint.rawValueBytes, hint.storedValueBytes)
        }
    }

    /// The bytes of segment `id`'s hint file, or nil if there is none readable (or, in an
    /// encrypted store, none that opens: a hint is a cache, the segment is scanned instead).
    private static func loadHintBytes(path: String, id: UInt32, cipher: StoreCipher?, fileSystem fs: any FileSystem) -> [UInt8]? {
        let hintPath = path + "/" + hintName(id)
        guard fs.fileExists(hintPath), let file = try? fs.openFile(hintPath, create: false, readOnly: true) else { return nil }
        defer { file.close() }
        guard let bytes = try? file.readAll() else { return nil }
        return try? openSmallFile(bytes, name: hintName(id), kind: .hint, cipher: cipher)
    }

    static func writeHint(path: String, id: UInt32, bytes: [UInt8], cipher: StoreCipher?, fileSystem fs: any FileSystem) throws {
        try writeFileAtomically(directory: path, name: hintName(id), bytes: try sealSmallFile(bytes, kind: .hint, cipher: cipher), fileSystem: fs)
    }

    /// Writes `bytes` to `name` through a temporary file, sync and rename, then syncs the
    /// directory: a reader sees the old file or the whole new one, never part of it.
    static func writeFileAtomically(directory path: String, name: String, bytes: [UInt8], fileSystem fs: any FileSystem) throws {
        let temporary = path + "/" + name + ".tmp"
        let file = try fs.openFile(temporary, create: true, readOnly: false)
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.syncData()
            file.close()
        } catch {
            file.close()
            try? fs.remove(temporary)
            throw error
        }
        try fs.rename(temporary, to: path + "/" + name)
        try fs.syncDirectory(path)
    }

    /// Creates log segment `id`: header written and synced under a `.tmp` name, then
    /// renamed and the directory synced, so a segment file never exists without its header
    /// (even beside a compaction publishing higher-numbered files at the same moment).
    static func createSegment(path: String, id: UInt32, cipher: StoreCipher?, fileSystem fs: any FileSystem) throws -> (file: any StorageFile, cipher: FileCipher?) {
        let final = path + "/" + segmentName(id), temporary = final + ".tmp"
        let start = try SegmentHeader.fileStart(SegmentHeader.encode(number: id), cipher: cipher)
        do {
            let file = try fs.openFile(temporary, create: true, readOnly: false)
            defer { file.close() }
            try file.truncate(to: 0)
            try file.write(start.bytes, at: 0)
            try file.syncData()
            try fs.rename(temporary, to: final)
            try fs.syncDirectory(path)
        } catch {
            try? fs.remove(temporary)
            try? fs.remove(final)
            throw error
        }
        return (try fs.openFile(final, create: false, readOnly: false), start.cipher)
    }

    private static func removeMarker(path: String, fileSystem fs: any FileSystem) throws {
        try fs.remove(path + "/" + CleanShutdown.fileName)
        try fs.syncDirectory(path)
    }
}
