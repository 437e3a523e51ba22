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

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// What the index image the open started from covers, if it started from one (close
    /// writes no new image while the store is still exactly that).
    var imageCoverage: IndexImage.Coverage? = nil
    /// A read-only open beside a writer: the writer's published state it read up to, and
    /// that state's segment, kept open (a compaction may unlink it before it was read to its
    /// end; its size then still says where it ends).
    var followed: Beacon.State? = nil
    var followedFile: (any StorageFile)? = nil
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

    /// Opens the store's files and rebuilds its state (the steps are `Recovery`'s methods).
    static func recover(path: String, options: StoreOptions) throws -> Recovered {
        var recovery = Recovery(path: path, options: options)
        return try recovery.run()
    }

    /// A read-only open while another process writes: the log up to where the writer's
    /// beacon says it is durable (Beacon.swift). The writer may roll, compact or publish
    /// meanwhile (a segment the manifest listed gone, a manifest newer than the beacon):
    /// an open that fails while the beacon or the manifest changed under it is tried again.
    /// Thrown by ``recoverFollowing(path:options:)`` when the writer let go of the store
    /// before it published a state: open it as it lies instead.
    enum WriterLeft: Error { case writerLeft }

    static func recoverFollowing(path: String, options: StoreOptions, at published: Beacon.State? = nil) throws -> Recovered {
        let fs = options.fileSystem
        let deadline = monotonicSeconds() + 2
        func manifestBytes() -> [UInt8]? {
            guard let file = try? fs.openFile(path + "/" + Manifest.fileName, create: false, readOnly: true) else { return nil }
            defer { file.close() }
            return try? file.readAll()
        }
        var given = published
        while true {
            // The state asked for first (a follower reopening at the state it read to), then
            // whatever the writer publishes.
            // (No HEAD: a writer that closed left the state its clean marker records.)
            guard let state = given ?? Beacon.read(path: path, fileSystem: fs)
                    ?? closedWriterState(path: path, cipher: options.cipher, fileSystem: fs) else {
                // A writer still opening, or closing (it removes HEAD before it lets go of
                // LOCK), or one from before beacons, which never publishes.
                if let probe = try? fs.lock(path + "/LOCK", shared: true) {
                    probe.unlock()
                    throw WriterLeft.writerLeft
                }
                guard monotonicSeconds() < deadline else { throw StoreError.locked(path + "/LOCK") }
                usleep(2_000)
                continue
            }
            let manifest = manifestBytes()
            do {
                var recovery = Recovery(path: path, options: options, following: state)
                var recovered = try recovery.run()
                recovered.followed = state
                return recovered
            } catch {
                let now = Beacon.read(path: path, fileSystem: fs) ?? closedWriterState(path: path, cipher: options.cipher, fileSystem: fs)
                let moved = (given != nil && given != now) || now != state || manifestBytes() != manifest
                given = nil
                guard moved, monotonicSeconds() < deadline else { throw error }
            }
        }
    }

    /// The MANIFEST, or nil if the store has none (a new store, or one written before
    /// manifests existed). A damaged one is corruption: it cannot be rebuilt from the
    /// segments, which is the point of it.
    static func readManifest(path: String, names: [String], cipher: StoreCipher?, fileSystem fs: any FileSystem) throws -> Manifest? {
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
    fileprivate static func checkAgainstManifest(_ manifest: Manifest, numbers: [UInt32], path: String, writable: Bool,
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
                let file: any StorageFile
                do {
                    file = try fs.openFile(path + "/" + segmentName(number), create: false, readOnly: true)
                } catch let StoreError.io(_, _, code) where code == ENOENT && !writable {
                    continue   // gone since the directory was listed: a writer in another process retired it
                }
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

    static func readMarker(path: String, names: [String], cipher: StoreCipher?, fileSystem fs: any FileSystem) throws -> CleanShutdown.Marker? {
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
    fileprivate static func loadActivePrefixHint(path: String, id: UInt32, size: Int, previousSequence: UInt64, cipher: StoreCipher?,
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
    static func loadHintBytes(path: String, id: UInt32, cipher: StoreCipher?, fileSystem fs: any FileSystem) -> [UInt8]? {
        let hintPath = path + "/" + hintName(id)
        guard fs.fileExists(hintPath), let file = try? fs.openFile(hintPath, create: false, readOnly: true) else { return nil }
        defer { file.close() }
        guard let bytes = try? file.readAll() else { return nil }
        return try? openSmallFile(bytes, name: hintName(id), kind: .hint, cipher: cipher)
    }

    /// Writes segment `id`'s hint file (sealed under the store's key, if any).
    ///
    /// With `durable` false (a hint written by the commit that seals a segment) nothing is
    /// synced: a hint is a cache, checked by its CRC and against its segment at every open,
    /// so one that a crash left empty, torn or missing is ignored and the segment scanned.
    /// Its syncs (a flush of a hint of megabytes, then the directory) were most of the time
    /// of the commit that seals a segment.
    static func writeHint(path: String, id: UInt32, bytes: [UInt8], cipher: StoreCipher?, fileSystem fs: any FileSystem,
                          durable: Bool = true) throws {
        try writeFileAtomically(directory: path, name: hintName(id), bytes: try sealSmallFile(bytes, kind: .hint, cipher: cipher),
                                fileSystem: fs, durable: durable)
    }

    /// Writes `bytes` to `name` through a temporary file, sync and rename, then syncs the
    /// directory: a reader sees the old file or the whole new one, never part of it. With
    /// `durable` false, the file and the directory are not synced: after a crash the name
    /// may be missing or the file empty or cut (callers check what they read).
    static func writeFileAtomically(directory path: String, name: String, bytes: [UInt8], fileSystem fs: any FileSystem,
                                    durable: Bool = true, syncingDirectory: Bool = true) throws {
        let temporary = path + "/" + name + ".tmp"
        let file = try fs.openFile(temporary, create: true, readOnly: false)
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            if durable { try file.syncData() }
            file.close()
        } catch {
            file.close()
            try? fs.remove(temporary)
            throw error
        }
        try fs.rename(temporary, to: path + "/" + name)
        if durable && syncingDirectory { try fs.syncDirectory(path) }
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

    fileprivate static func removeMarker(path: String, fileSystem fs: any FileSystem) throws {
        try fs.remove(path + "/" + CleanShutdown.fileName)
        try fs.syncDirectory(path)
    }
}

/// The active segment as recovery leaves it.
private struct RecoveredActive {
    var file: any StorageFile
    var region: MappedRegion
    /// Its length on disk now (after a torn tail was cut), and as the open found it.
    var size: Int
    var originalSize: Int
    /// The end of its last complete transaction.
    var validLength: Int
    var cipher: FileCipher?
    var hint: ActiveHint
    var space: SegmentSpace
}

/// One open's recovery: the steps of `Store.recover`, each a method, over the state they
/// build — the segments' space accounting, the entries the index is built from, the newest
/// sequence. The order is the rules' order (docs/FORMAT.md, "Recovery").
private struct Recovery {
    let path: String
    let options: StoreOptions
    let fs: any FileSystem
    let writable: Bool
    let cipher: StoreCipher?
    let dataStart: Int
    /// A read-only open beside a writer: the durable end its beacon published. Log segments
    /// after that one are not read, and that one only up to that end.
    let following: Beacon.State?

    // What `survey()` finds.
    var allNumbers: [UInt32] = []
    /// The segments to load: those the manifest lists (all, for a store without one).
    var numbers: [UInt32] = []
    var manifest: Manifest?
    var marker: CleanShutdown.Marker?

    // What the loads build.
    var directory: KeyDirectory
    var index: IndexBuilder
    /// The index image the open continues from, if one fits the segments found.
    var image: IndexImage.Loaded?
    var space: [UInt32: SegmentSpace] = [:]
    var lastSequence: UInt64 = 0
    /// A compaction drops old versions only once the newer ones are durable, and records the
    /// sequence it relied on: the log must still reach it, or the log lost synced data.
    var reliedOn: (sequence: UInt64, segment: UInt32) = (0, 0)

    init(path: String, options: StoreOptions, following: Beacon.State? = nil) {
        self.path = path
        self.options = options
        self.following = following
        fs = options.fileSystem
        writable = !options.readOnly
        cipher = options.cipher
        dataStart = SegmentReader.dataStart(encrypted: cipher != nil)
        let seed = IndexHash.randomSeed()
        directory = KeyDirectory(seed: seed)
        index = IndexBuilder(seed: seed)
    }

    mutating func run() throws -> Recovered {
        try survey()
        guard let newest = numbers.last else { return try openWithoutSegments() }
        if writable, newest == .max {
            // Every later segment file (a roll, a compaction output) needs a higher number.
            throw StoreError.invalidArgument(
                "segment \(segmentName(newest)) has the last file number, \(UInt32.max): a writable open could create no further segment file; open the store read-only and copy its data to a new store")
        }
        let found = try readHeaders(newest: newest)
        if let loaded = loadImage(found: found) {
            image = loaded
            index = IndexBuilder(loaded: loaded.tables, liveBytes: Dictionary(uniqueKeysWithValues: loaded.coverage.segments.map { ($0.id, $0.liveBytes) }),
                                 seed: loaded.seed)
            directory.seed = loaded.seed
            directory.image = loaded.image
            lastSequence = loaded.coverage.sequence
            // Before anything touches a page: replaying the log after the image does.
            let covered = Dictionary(uniqueKeysWithValues: loaded.coverage.segments.map { ($0.id, $0) })
            let parts = found.compactMap { segment in
                covered[segment.number].map {
                    CoveredLog.Part(view: SegmentView(id: segment.number, region: segment.region, length: $0.length, cipher: nil),
                                    kind: segment.info.kind, coversThroughSequence: segment.info.coversThroughSequence,
                                    wasActive: $0.wasActive)
                }
            }
            loaded.image.setCoveredLog(CoveredLog(parts: parts, path: path, fileSystem: fs, dataStart: dataStart, seed: loaded.seed),
                                       logger: options.logger)
        }
        for segment in found.dropLast() { try loadSealed(segment) }
        let active = try recoverActive(found.last!)
        return try finish(found: found, active: active)
    }

    /// Step 1: the directory's files — the key checked against them, leftovers of
    /// interrupted writes removed (writable), the manifest and the clean-shutdown marker read.
    private mutating func survey() throws {
        let names = try fs.listDirectory(path)
        allNumbers = names.compactMap(Store.parseSegmentName).sorted()
        try Store.checkKey(path: path, names: names, segments: allNumbers, cipher: cipher, fileSystem: fs)
        if writable {
            // Unfinished hint files, markers and compaction outputs.
            for name in names where name.hasSuffix(".tmp") { try fs.remove(path + "/" + name) }
        }
        manifest = try Store.readManifest(path: path, names: names, cipher: cipher, fileSystem: fs)
        numbers = allNumbers
        if let manifest {
            numbers = try Store.checkAgainstManifest(manifest, numbers: allNumbers, path: path, writable: writable,
                                                     cipher: cipher, fileSystem: fs)
        }
        if let following {
            guard let manifest, manifest.entries[following.segment]?.kind == .log else {
                throw StoreError.corrupted(segment: segmentName(following.segment), offset: 0,
                                           reason: "the writer's beacon names a segment the manifest does not list as a log segment")
            }
            numbers = numbers.filter { $0 <= following.segment || manifest.entries[$0]?.kind != .log }
        }
        if writable {
            // A hint whose segment is gone (a crash between deleting a compacted segment and
            // its hint) must not survive to meet a later segment that reuses the number.
            let present = Set(numbers.map(hintName))
            for name in names where name.hasSuffix(".hint") && !present.contains(name) {
                try fs.remove(path + "/" + name)
            }
        }
        marker = try Store.readMarker(path: path, names: names, cipher: cipher, fileSystem: fs)
    }

    /// A new store (writable: its first segment and manifest are created), or an empty one
    /// opened read-only.
    private mutating func openWithoutSegments() throws -> Recovered {
        if let marker, marker.lastSequence > 0 {
            throw StoreError.corrupted(segment: segmentName(marker.segmentID), offset: 0,
                                       reason: "segment file is missing (the store was closed with data in it)")
        }
        guard writable else {
            return Recovered(directory: directory, space: space, activeFile: nil, activeID: 0, activeSize: 0,
                             activeRegion: MappedRegion(base: nil, length: 0), activeCipher: nil,
                             activeHint: ActiveHint(limit: 0), nextFileNumber: 1, manifest: Manifest())
        }
        let (file, fileCipher) = try Store.createSegment(path: path, id: 1, cipher: cipher, fileSystem: fs)
        let region = try file.map(length: Store.activeMappingLength(forSize: dataStart, segmentSize: options.segmentSize))
        directory.active = SegmentView(id: 1, region: region, length: dataStart, cipher: fileCipher)
        space[1] = SegmentSpace(diskBytes: dataStart, sealed: false)
        var created = Manifest()
        created.entries[1] = Manifest.Entry(kind: .log, sealedLength: nil)
        try Store.writeManifest(created, path: path, cipher: cipher, fileSystem: fs)
        if marker != nil { try Store.removeMarker(path: path, fileSystem: fs) }
        return Recovered(directory: directory, space: space, activeFile: file, activeID: 1,
                         activeSize: dataStart, activeRegion: region, activeCipher: fileCipher,
                         activeHint: ActiveHint(limit: Store.activeHintLimit(segmentSize: options.segmentSize)),
                         nextFileNumber: max(2, (allNumbers.last ?? 0) &+ 1), manifest: created)
    }

    /// Step 2: every segment's header, checked against the manifest, in replay order; the
    /// newest must be a log segment.
    private func readHeaders(newest: UInt32) throws -> [FoundSegment] {
        var found: [FoundSegment] = []
        for number in numbers { found.append(try readHeader(number, isNewest: number == newest)) }
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
        return found
    }

    private func readHeader(_ number: UInt32, isNewest: Bool) throws -> FoundSegment {
        let file = try fs.openFile(path + "/" + segmentName(number), create: false, readOnly: true)
        defer { file.close() }
        var size = try file.size()
        let followed = following.map { $0.segment == number } ?? false
        if let following, followed {
            // The writer's active segment (or the one it was when it published): its durable
            // prefix only. The manifest's sealed length, if it rolled since, is not ours.
            guard size >= following.end else {
                throw StoreError.corrupted(segment: segmentName(number), offset: size,
                                           reason: "segment is shorter than the \(following.end) bytes its writer published as durable")
            }
            size = following.end
        }
        guard size <= Int(UInt32.max) else {
            throw StoreError.corrupted(segment: segmentName(number), offset: Int(UInt32.max),
                                       reason: "segment is larger than 4 GiB, which Strata never writes")
        }
        if !followed, let sealedLength = manifest?.entries[number]?.sealedLength, sealedLength != size {
            throw StoreError.corrupted(
                segment: segmentName(number), offset: min(size, sealedLength),
                reason: "segment is \(size) bytes but was sealed at \(sealedLength) bytes, as MANIFEST records (truncated, replaced by another copy, or appended to)")
        }
        // Beside a writer, each mapping holds the file's reader lock: the writer then never
        // truncates it after a compaction retires it (see PosixFile.mapHoldingReaderLock).
        let region = following != nil ? try file.mapHoldingReaderLock(length: size) : try file.map(length: size)
        let bytes = region.bytes(at: 0, count: size, limit: size) ?? UnsafeRawBufferPointer(start: nil, count: 0)
        switch SegmentHeader.read(file: bytes, number: number, cipher: cipher) {
        case .success(let (info, fileCipher)):
            if let listed = manifest?.entries[number], listed.kind != info.kind {
                throw StoreError.corrupted(segment: segmentName(number), offset: 16,
                                           reason: "segment is a \(info.kind) segment but MANIFEST lists a \(listed.kind) segment of that number (replaced file)")
            }
            return FoundSegment(number: number, size: size, region: region, info: info, cipher: fileCipher, tornCreation: false)
        case .failure(.version(let version)):
            throw StoreError.formatVersion(found: Int(version), supported: Int(SegmentHeader.formatVersion))
        case .failure(let problem):
            // A crash between creating a segment and syncing its header leaves at most the
            // header's bytes, in the newest file; anything else had a synced header.
            guard isNewest, size <= dataStart, marker == nil else {
                throw StoreError.corrupted(segment: segmentName(number), offset: 0, reason: problem.reason)
            }
            return FoundSegment(number: number, size: size, region: region,
                                info: .init(kind: .log, position: ReplayPosition(major: number, minor: 0)),
                                cipher: nil, tornCreation: true)
        }
    }

    /// Step 3: a sealed log segment or a compacted segment, into the index, from its hint
    /// file when that is valid, otherwise by scanning it (and then writing a new hint).
    private mutating func loadSealed(_ segment: FoundSegment) throws {
        let id = segment.number, size = segment.size
        let ordered = segment.info.kind == .log
        var segmentSpace = SegmentSpace(diskBytes: size, sealed: true, kind: segment.info.kind, position: segment.info.position)
        var newest = lastSequence
        var usedHint = false
        if let covered = image?.coverage.segments.first(where: { $0.id == id }) {
            // In the image: only what was appended after it (a segment active then) is read.
            segmentSpace.rawValueBytes = covered.rawValueBytes
            segmentSpace.storedValueBytes = covered.storedValueBytes
            if covered.length < size {
                let tail = try scanTail(segment, from: covered.length)
                newest = max(lastSequence, tail.lastSequence)
                segmentSpace.rawValueBytes += tail.rawValueBytes
                segmentSpace.storedValueBytes += tail.storedValueBytes
            }
            usedHint = true
        } else if let hintBytes = Store.loadHintBytes(path: path, id: id, cipher: cipher, fileSystem: fs) {
            hintBytes.withUnsafeBytes { raw in
                guard let hint = HintFile.forEachEntry(raw, segmentID: id, segmentLength: size, previousSequence: lastSequence,
                                                       ordered: ordered, dataStart: dataStart, { index.add($0) }) else { return }
                newest = max(lastSequence, hint.lastSequence)
                segmentSpace.rawValueBytes = hint.rawValueBytes
                segmentSpace.storedValueBytes = hint.storedValueBytes
                usedHint = true
            }
        }
        if !usedHint {
            let outcome = try scanSealed(segment)
            newest = max(lastSequence, outcome.lastSequence)
            segmentSpace.rawValueBytes = outcome.rawValueBytes
            segmentSpace.storedValueBytes = outcome.storedValueBytes
        }
        // A compacted segment stands for every transaction of the segments it replaced, even
        // those it dropped: the store's sequence never goes back past them.
        lastSequence = max(newest, segment.info.coversThroughSequence)
        segmentSpace.coversThrough = segment.info.coversThroughSequence
        segmentSpace.reliesOn = segment.info.reliesOnSequence
        if segment.info.reliesOnSequence > reliedOn.sequence { reliedOn = (segment.info.reliesOnSequence, id) }
        space[id] = segmentSpace
        directory.setSealed(SegmentView(id: id, region: segment.region, length: size, cipher: segment.cipher))
    }

    /// The records of sealed log segment `segment` from `offset` on (what was appended after
    /// the index image was written), into the index. Damage is corruption: it was synced.
    private mutating func scanTail(_ segment: FoundSegment, from offset: Int) throws -> ScanOutcome {
        let reader = SegmentReader(segment.region.bytes(at: 0, count: segment.size, limit: segment.size)!, cipher: segment.cipher)
        let outcome = SegmentScanner.scan(reader, segmentID: segment.number, from: offset, previousSequence: lastSequence) { entries, _ in
            for entry in entries { index.add(entry) }
        }
        if let damage = outcome.damage {
            throw StoreError.corrupted(segment: segmentName(segment.number), offset: damage.offset, reason: damage.reason)
        }
        return outcome
    }

    /// The index image, if there is one, it checks out, and it fits the segments found:
    /// each segment it covers is there, as long as it was (a segment active then may have
    /// grown), and every other one is a newer log segment. Anything else (a compaction or a
    /// crash since, damage) and the open rebuilds the index; a writable open removes an
    /// image that does not fit, as the next close writes a new one.
    private func loadImage(found: [FoundSegment]) -> IndexImage.Loaded? {
        guard cipher == nil else { return nil }
        let imagePath = path + "/" + IndexImage.fileName
        guard fs.fileExists(imagePath) else { return nil }
        do {
            let file = try fs.openFile(imagePath, create: false, readOnly: true)
            defer { file.close() }
            let loaded = try IndexImage.load(try file.mapCopyOnWrite(length: try file.size()))
            let segments = found.map { ($0.number, $0.size, $0.info.kind) }
            if let problem = IndexImage.mismatch(loaded.coverage, found: segments) { throw IndexImage.Unusable(reason: problem) }
            let replay = IndexImage.replayBytes(loaded.coverage, found: segments)
            if replay.after > replay.covered {
                throw IndexImage.Unusable(reason: "the log after it (\(replay.after) bytes) outweighs what it covers (\(replay.covered) bytes): building the index whole is faster")
            }
            return loaded
        } catch {
            let reason = (error as? IndexImage.Unusable)?.reason ?? "\(error)"
            options.logger?.info("index image not used (\(reason)): the index is rebuilt from the hint files", metadata: ["store": "\(path)"])
            if writable { try? fs.remove(imagePath) }
            return nil
        }
    }

    /// A sealed segment read record by record (its hint missing or unusable); a new hint
    /// is written for the next open. Damage is corruption: a sealed segment was synced.
    private mutating func scanSealed(_ segment: FoundSegment) throws -> ScanOutcome {
        let id = segment.number, size = segment.size
        let reader = SegmentReader(segment.region.bytes(at: 0, count: size, limit: size)!, cipher: segment.cipher)
        var hintEntries: [ScannedEntry] = []
        let outcome: ScanOutcome
        if segment.info.kind == .log {
            outcome = SegmentScanner.scan(reader, segmentID: id, previousSequence: lastSequence) { entries, _ in
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
        if writable {
            // A hint is a cache: failing to write one costs only a slower next open.
            let hint = HintFile.encode(segmentID: id, segmentLength: size, entries: hintEntries,
                                       lastSequence: outcome.lastSequence, rawValueBytes: outcome.rawValueBytes,
                                       storedValueBytes: outcome.storedValueBytes)
            try? Store.writeHint(path: path, id: id, bytes: hint, cipher: cipher, fileSystem: fs)
        }
        return outcome
    }

    /// Step 4: the newest log segment, the one a crash can have torn: a header that never
    /// reached the disk rewritten, or its records read (what its hint covers from the hint)
    /// and a torn tail cut off.
    private mutating func recoverActive(_ segment: FoundSegment) throws -> RecoveredActive {
        let file = try fs.openFile(path + "/" + segmentName(segment.number), create: false, readOnly: !writable)
        do {
            let length = Store.activeMappingLength(forSize: segment.size, segmentSize: options.segmentSize)
            var active = RecoveredActive(
                file: file, region: following != nil ? try file.mapHoldingReaderLock(length: length) : try file.map(length: length),
                size: segment.size, originalSize: segment.size, validLength: 0, cipher: segment.cipher,
                hint: ActiveHint(limit: writable ? Store.activeHintLimit(segmentSize: options.segmentSize) : 0),
                space: SegmentSpace(diskBytes: segment.size, sealed: false))
            if segment.tornCreation {
                try rewriteTornHeader(segment, into: &active)
            } else {
                try readActive(segment, into: &active)
            }
            return active
        } catch {
            file.close()
            throw error
        }
    }

    /// A crash right after the segment was created left its header unwritten: write it.
    private func rewriteTornHeader(_ segment: FoundSegment, into active: inout RecoveredActive) throws {
        guard writable else { return }
        let start = try SegmentHeader.fileStart(SegmentHeader.encode(number: segment.number), cipher: cipher)
        try active.file.truncate(to: 0)
        try active.file.write(start.bytes, at: 0)
        try active.file.syncData()
        active.cipher = start.cipher
        active.size = dataStart
        active.validLength = dataStart
        active.region = try active.file.map(length: Store.activeMappingLength(forSize: dataStart, segmentSize: options.segmentSize))
    }

    private mutating func readActive(_ segment: FoundSegment, into active: inout RecoveredActive) throws {
        let id = segment.number, name = segmentName(id)
        let reader = SegmentReader(active.region.bytes(at: 0, count: active.size, limit: active.size)!, cipher: segment.cipher)
        // Moved out (not copied: the entries are not duplicated) for the closure to add to.
        var index = self.index, hint = active.hint
        self.index = IndexBuilder(seed: index.seed)
        active.hint = ActiveHint(limit: 0)
        defer { self.index = index; active.hint = hint }
        let writable = self.writable
        func recovered(_ entry: ScannedEntry) {
            index.add(entry)
            if writable { hint.add(kind: entry.kind, table: entry.table, key: entry.key, location: entry.location, sequence: entry.sequence) }
        }
        // The hint `close()` wrote covers the segment as it was then: only what follows
        // (nothing, after a clean close) needs reading. An index image covers it too, as far
        // as it reached; the hint's entries are then not read (the seal scans instead).
        let prefix: (length: Int, lastSequence: UInt64, rawValueBytes: Int, storedValueBytes: Int)?
        if let covered = image?.coverage.segments.first(where: { $0.id == id }) {
            prefix = (covered.length, lastSequence, covered.rawValueBytes, covered.storedValueBytes)
            hint = .dropped()
        } else {
            prefix = Store.loadActivePrefixHint(path: path, id: id, size: active.size, previousSequence: lastSequence,
                                                cipher: cipher, fileSystem: fs, recovered)
        }
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
        active.space.rawValueBytes = outcome.rawValueBytes + (prefix?.rawValueBytes ?? 0)
        active.space.storedValueBytes = outcome.storedValueBytes + (prefix?.storedValueBytes ?? 0)
        active.validLength = outcome.committedEnd
        if writable && active.validLength < active.size {
            options.logger?.warning("recovery truncated a torn tail of \(active.size - active.validLength) bytes at \(name) offset \(active.validLength): the transactions after sequence \(lastSequence) were never committed", metadata: ["store": "\(path)"])
            try active.file.truncate(to: active.validLength)
            active.size = active.validLength
        }
        // Make what recovery kept durable, so later watermarks may vouch for it — unless a
        // clean close synced exactly this (its marker is checked against the segment at the
        // end of the open): a store written in turns opens once per transaction.
        let syncedAtClose = marker.map { $0.segmentID == id && $0.segmentLength == active.validLength } ?? false
        if writable && !syncedAtClose {
            try active.file.syncData()
        }
    }

    /// Step 5: the end checks (the log reaches what compactions relied on; the clean
    /// marker matches), the index built, and a store from before manifests given one.
    private mutating func finish(found: [FoundSegment], active: RecoveredActive) throws -> Recovered {
        let activeSegment = found.last!
        let id = activeSegment.number, name = segmentName(id)
        do {
            if reliedOn.sequence > lastSequence {
                throw StoreError.corrupted(
                    segment: name, offset: active.validLength,
                    reason: "the log ends at sequence \(lastSequence) but compacted segment \(segmentName(reliedOn.segment)) relies on sequence \(reliedOn.sequence) being durable: the newest segment lost data that had been synced")
            }
            if let marker {
                guard marker.segmentID == id, marker.segmentLength == active.originalSize, marker.lastSequence == lastSequence else {
                    throw StoreError.corrupted(
                        segment: name, offset: min(active.originalSize, marker.segmentLength),
                        reason: "the store was closed cleanly at segment \(marker.segmentID), \(marker.segmentLength) bytes, sequence \(marker.lastSequence), but holds segment \(id), \(active.originalSize) bytes, sequence \(lastSequence) (truncated or replaced file)")
                }
                if writable { try Store.removeMarker(path: path, fileSystem: fs) }
            }
            var activeSpace = active.space
            activeSpace.diskBytes = writable ? active.size : active.originalSize
            space[id] = activeSpace
            // Every segment read: the index is built whole, and each segment's live bytes are
            // those of the records it ends up holding.
            let built = index.build()
            if let damage = image?.image.damage {
                // A page the log after the image landed in, damaged beyond rebuilding: the
                // open would have thrown this rebuilding the index from the hints too.
                throw damage
            }
            directory.tables = built.tables
            for (number, bytes) in built.liveBytes { space[number]?.liveBytes = bytes }
            directory.active = SegmentView(id: id, region: active.region, length: active.validLength, cipher: active.cipher)
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
                try Store.writeManifest(loaded, path: path, cipher: cipher, fileSystem: fs)
                if activeSegment.info.version < SegmentHeader.formatVersion && !activeSegment.tornCreation {
                    let header = try SegmentHeader.rewritten(SegmentHeader.encode(number: id), cipher: active.cipher)
                    try active.file.write(header.bytes, at: header.offset)
                    try active.file.syncData()
                }
            }
            if !writable && following == nil { active.file.close() }
            let newestFile = allNumbers.last ?? id
            return Recovered(directory: directory, space: space, activeFile: writable ? active.file : nil, activeID: id,
                             activeSize: active.validLength, activeRegion: active.region, activeCipher: active.cipher,
                             activeHint: active.hint, nextFileNumber: newestFile == .max ? .max : newestFile + 1,
                             manifest: manifest ?? loaded, imageCoverage: image?.coverage,
                             followedFile: following != nil ? active.file : nil)
        } catch {
            active.file.close()
            throw error
        }
    }
}
