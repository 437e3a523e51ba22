// Opening a store: find the segments, rebuild the index from hint files (or by scanning),
// and repair a torn tail. Exactly the transactions whose commit record is intact survive.
//
// Damage rules (docs/FORMAT.md, "Recovery"):
// - A sealed segment was synced before it was sealed, so any damage in it is corruption.
// - In the newest segment, damage followed by an intact commit record whose durable
//   watermark lies past the damage is corruption (those bytes had been synced); otherwise
//   it is a torn tail from a crash and is truncated at the last complete transaction.
// - A `CLEAN` marker (left by close) must match the newest segment exactly.

struct Recovered {
    var directory: KeyDirectory
    var space: [UInt32: SegmentSpace]
    var activeFile: (any StorageFile)?
    var activeID: UInt32
    var activeSize: Int
    var activeRegion: MappedRegion
}

extension Store {
    /// Bytes mapped for the active segment beyond its size, so appends rarely remap.
    static func activeMappingLength(forSize size: Int, segmentSize: Int) -> Int {
        let wanted = max(size, segmentSize) + (16 << 20)
        return (wanted + (1 << 20) - 1) & ~((1 << 20) - 1)
    }

    static func parseSegmentName(_ name: String) -> UInt32? {
        guard name.count == 12, name.hasSuffix(".seg") else { return nil }
        let digits = name.prefix(8)
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt32(digits)
    }

    static func recover(path: String, options: StoreOptions) throws -> Recovered {
        let fs = options.fileSystem
        let writable = !options.readOnly
        let names = try fs.listDirectory(path)
        if writable {
            for name in names where name.hasSuffix(".tmp") { try fs.remove(path + "/" + name) }
        }
        let ids = names.compactMap(parseSegmentName).sorted()
        var marker: CleanShutdown.Marker?
        if names.contains(CleanShutdown.fileName) {
            let file = try fs.openFile(path + "/" + CleanShutdown.fileName, create: false, readOnly: true)
            let bytes = try file.readAll()
            file.close()
            guard let decoded = CleanShutdown.decode(bytes) else {
                throw StoreError.corrupted(segment: CleanShutdown.fileName, offset: 0,
                                           reason: "clean-shutdown marker is damaged (delete it to open the store as after a crash)")
            }
            marker = decoded
        }

        var directory = KeyDirectory()
        var space: [UInt32: SegmentSpace] = [:]
        var lastSequence: UInt64 = 0

        if ids.isEmpty {
            if let marker, marker.lastSequence > 0 {
                throw StoreError.corrupted(segment: segmentName(marker.segmentID), offset: 0,
                                           reason: "segment file is missing (the store was closed with data in it)")
            }
            guard writable else {
                return Recovered(directory: directory, space: space, activeFile: nil, activeID: 0, activeSize: 0,
                                 activeRegion: MappedRegion(base: nil, length: 0))
            }
            let file = try createSegment(path: path, id: 1, fileSystem: fs)
            let region = try file.map(length: activeMappingLength(forSize: SegmentHeader.size, segmentSize: options.segmentSize))
            let view = SegmentView(id: 1, region: region, length: SegmentHeader.size)
            directory.active = view
            space[1] = SegmentSpace(diskBytes: SegmentHeader.size, sealed: false)
            if marker != nil { try removeMarker(path: path, fileSystem: fs) }
            return Recovered(directory: directory, space: space, activeFile: file, activeID: 1,
                             activeSize: SegmentHeader.size, activeRegion: region)
        }

        for id in ids.dropLast() {
            let segmentPath = path + "/" + segmentName(id)
            let file = try fs.openFile(segmentPath, create: false, readOnly: true)
            defer { file.close() }
            let size = try file.size()
            let region = try file.map(length: size)
            let bytes = region.bytes(at: 0, count: size, limit: size) ?? UnsafeRawBufferPointer(start: nil, count: 0)
            if let problem = SegmentHeader.validate(bytes, segmentID: id) {
                throw StoreError.corrupted(segment: segmentName(id), offset: 0, reason: problem.reason)
            }
            var segmentSpace = SegmentSpace(diskBytes: size, sealed: true)
            var usedHint = false
            if let hintBytes = loadHintBytes(path: path, id: id, fileSystem: fs) {
                hintBytes.withUnsafeBytes { raw in
                    guard let hint = HintFile.decode(raw, segmentID: id, segmentLength: size,
                                                     previousSequence: lastSequence) else { return }
                    for entry in hint.entries { apply(entry, to: &directory, space: &space, segmentSpace: &segmentSpace) }
                    lastSequence = hint.lastSequence
                    segmentSpace.rawValueBytes = hint.rawValueBytes
                    segmentSpace.storedValueBytes = hint.storedValueBytes
                    usedHint = true
                }
            }
            if !usedHint {
                var hintEntries: [ScannedEntry] = []
                let outcome = SegmentScanner.scan(bytes, segmentID: id, previousSequence: lastSequence) { entries, _ in
                    for entry in entries { apply(entry, to: &directory, space: &space, segmentSpace: &segmentSpace) }
                    hintEntries.append(contentsOf: entries)
                }
                if let damage = outcome.damage {
                    throw StoreError.corrupted(segment: segmentName(id), offset: damage.offset, reason: damage.reason)
                }
                lastSequence = outcome.lastSequence
                segmentSpace.rawValueBytes = outcome.rawValueBytes
                segmentSpace.storedValueBytes = outcome.storedValueBytes
                if writable {
                    // A hint is a cache: failing to write one costs only a slower next open.
                    let hint = HintFile.encode(segmentID: id, segmentLength: size, entries: hintEntries,
                                               lastSequence: lastSequence, rawValueBytes: outcome.rawValueBytes,
                                               storedValueBytes: outcome.storedValueBytes)
                    try? writeHint(path: path, id: id, bytes: hint, fileSystem: fs)
                }
            }
            space[id] = mergeSpace(space[id], segmentSpace)
            directory.setSealed(SegmentView(id: id, region: region, length: size))
        }

        // The newest segment: the one a crash can have torn.
        let id = ids.last!
        let name = segmentName(id)
        let segmentPath = path + "/" + name
        let file = try fs.openFile(segmentPath, create: false, readOnly: !writable)
        var keepFile = false
        defer { if !keepFile { file.close() } }
        var size = try file.size()
        let originalSize = size
        var region = try file.map(length: activeMappingLength(forSize: size, segmentSize: options.segmentSize))
        var bytes = region.bytes(at: 0, count: size, limit: size) ?? UnsafeRawBufferPointer(start: nil, count: 0)
        var segmentSpace = SegmentSpace(diskBytes: size, sealed: false)
        var validLength: Int
        if let problem = SegmentHeader.validate(bytes, segmentID: id) {
            // A crash between creating a segment and syncing its header leaves at most the
            // header's 32 bytes; anything longer had a synced header, so this is damage.
            guard size <= SegmentHeader.size, marker == nil else {
                throw StoreError.corrupted(segment: name, offset: 0, reason: problem.reason)
            }
            if writable {
                try file.truncate(to: 0)
                try file.write(SegmentHeader.encode(segmentID: id), at: 0)
                try file.sync()
                size = SegmentHeader.size
                region = try file.map(length: activeMappingLength(forSize: size, segmentSize: options.segmentSize))
                bytes = region.bytes(at: 0, count: size, limit: size)!
            }
            validLength = writable ? SegmentHeader.size : 0
        } else {
            let outcome = SegmentScanner.scan(bytes, segmentID: id, previousSequence: lastSequence) { entries, _ in
                for entry in entries { apply(entry, to: &directory, space: &space, segmentSpace: &segmentSpace) }
            }
            if let damage = outcome.damage {
                if marker != nil {
                    throw StoreError.corrupted(segment: name, offset: damage.offset,
                                               reason: damage.reason + " (the store was closed cleanly, so this is damage, not a torn write)")
                }
                if SegmentScanner.syncedDataFollows(bytes, damageOffset: damage.offset, committedEnd: outcome.committedEnd) {
                    throw StoreError.corrupted(segment: name, offset: damage.offset,
                                               reason: damage.reason + " (inside data that had been synced)")
                }
            }
            lastSequence = outcome.lastSequence
            segmentSpace.rawValueBytes = outcome.rawValueBytes
            segmentSpace.storedValueBytes = outcome.storedValueBytes
            validLength = outcome.committedEnd
            if writable && validLength < size {
                try file.truncate(to: validLength)
                size = validLength
            }
            if writable {
                // Make what recovery kept durable, so later watermarks may vouch for it.
                try file.sync()
            }
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
        space[id] = mergeSpace(space[id], segmentSpace)
        directory.active = SegmentView(id: id, region: region, length: validLength)
        directory.sequence = lastSequence
        keepFile = writable
        return Recovered(directory: directory, space: space, activeFile: writable ? file : nil, activeID: id,
                         activeSize: validLength, activeRegion: region)
    }

    /// Applies one recovered put or delete to the index and the space accounting.
    /// `segmentSpace` is the accounting of the segment being read (not yet in `space`).
    private static func apply(_ entry: ScannedEntry, to directory: inout KeyDirectory,
                              space: inout [UInt32: SegmentSpace], segmentSpace: inout SegmentSpace) {
        let key = IndexKey(entry.key)
        let old: Location?
        if entry.kind == .put {
            old = directory.put(table: entry.table, key: key, location: entry.location)
            segmentSpace.liveBytes += Int(entry.location.size)
        } else {
            old = directory.remove(table: entry.table, key: key)
        }
        if let old {
            if old.segment == entry.location.segment {
                segmentSpace.liveBytes -= Int(old.size)
            } else {
                space[old.segment, default: SegmentSpace(diskBytes: 0, sealed: true)].liveBytes -= Int(old.size)
            }
        }
    }

    /// Combines accounting recorded for a segment before it was read (live bytes removed by
    /// later segments cannot happen before) with what reading it found.
    private static func mergeSpace(_ earlier: SegmentSpace?, _ found: SegmentSpace) -> SegmentSpace {
        guard let earlier else { return found }
        var merged = found
        merged.liveBytes += earlier.liveBytes
        return merged
    }

    /// The bytes of segment `id`'s hint file, or nil if there is none readable.
    private static func loadHintBytes(path: String, id: UInt32, fileSystem fs: any FileSystem) -> [UInt8]? {
        let hintPath = path + "/" + hintName(id)
        guard fs.fileExists(hintPath), let file = try? fs.openFile(hintPath, create: false, readOnly: true) else { return nil }
        defer { file.close() }
        return try? file.readAll()
    }

    static func writeHint(path: String, id: UInt32, bytes: [UInt8], fileSystem fs: any FileSystem) throws {
        let temporary = path + "/" + hintName(id) + ".tmp"
        let file = try fs.openFile(temporary, create: true, readOnly: false)
        do {
            try file.truncate(to: 0)
            try file.write(bytes, at: 0)
            try file.sync()
            file.close()
        } catch {
            file.close()
            try? fs.remove(temporary)
            throw error
        }
        try fs.rename(temporary, to: path + "/" + hintName(id))
        try fs.syncDirectory(path)
    }

    /// Creates segment `id` with its header, synced, and makes its name durable.
    static func createSegment(path: String, id: UInt32, fileSystem fs: any FileSystem) throws -> any StorageFile {
        let file = try fs.openFile(path + "/" + segmentName(id), create: true, readOnly: false)
        do {
            try file.truncate(to: 0)
            try file.write(SegmentHeader.encode(segmentID: id), at: 0)
            try file.sync()
            try fs.syncDirectory(path)
        } catch {
            file.close()
            throw error
        }
        return file
    }

    private static func removeMarker(path: String, fileSystem fs: any FileSystem) throws {
        try fs.remove(path + "/" + CleanShutdown.fileName)
        try fs.syncDirectory(path)
    }
}
