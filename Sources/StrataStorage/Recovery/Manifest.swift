// Manifest: the file `MANIFEST`, the list of every segment that makes up the store and,
// for each sealed one, its exact length. Without it a deleted, truncated (at a commit
// boundary) or replaced segment is indistinguishable from a store that never had it: the
// segment files alone are self-consistent. Rewritten (temporary file, sync, rename,
// directory sync) whenever the set changes: when a segment is sealed and the next one
// starts, and when a compaction publishes its outputs in place of its inputs.
//
// Layout (little-endian; docs/FORMAT.md, "Manifest"):
//   0  8  magic "STRATAMF"     8  4  version (1)     12 4  entry count n
//   16 .. n entries of 16 bytes:
//     0 4 file number   4 1 kind (0 log, 1 compacted)   5 1 state (0 sealed, 1 active)
//     6 2 reserved, 0   8 8 length (sealed: the file's exact length; active: 0)
//   then 4 bytes: crc32c of everything before them.

/// The segments of a store as its last manifest write recorded them.
struct Manifest: Equatable, Sendable {
    static let fileName = "MANIFEST"
    static let magic: [UInt8] = Array("STRATAMF".utf8)
    static let version: UInt32 = 1
    static let headerSize = 16
    static let entrySize = 16

    struct Entry: Equatable, Sendable {
        var kind: SegmentKind
        /// The exact file length of a sealed segment; nil for the active segment.
        var sealedLength: Int?
    }

    var entries: [UInt32: Entry] = [:]

    /// Why a manifest cannot be used.
    struct Problem: Error, ExpressibleByStringInterpolation {
        var reason: String
        /// Where in the file the problem is.
        var offset = 0
        init(stringLiteral value: String) { reason = value }
        init(_ reason: String, at offset: Int) {
            self.reason = reason
            self.offset = offset
        }
    }

    /// The active (growing) log segment, if one is listed.
    var activeNumber: UInt32? { entries.first { $0.value.sealedLength == nil }?.key }

    func encode() -> [UInt8] {
        var out = Manifest.magic
        out.appendLE32(Manifest.version)
        out.appendLE32(UInt32(entries.count))
        for number in entries.keys.sorted() {
            let entry = entries[number]!
            out.appendLE32(number)
            out.append(contentsOf: [entry.kind.rawValue, entry.sealedLength == nil ? 1 : 0, 0, 0])
            out.appendLE64(UInt64(entry.sealedLength ?? 0))
        }
        out.appendLE32(Checksum.crc32c(out))
        return out
    }

    /// Parses a manifest; the reason it is unusable otherwise.
    static func decode(_ bytes: [UInt8]) -> Result<Manifest, Problem> {
        bytes.withUnsafeBytes { raw -> Result<Manifest, Problem> in
            guard raw.count >= headerSize + 4, Array(raw[0 ..< 8]) == magic else { return .failure("not a Strata manifest (bad magic or too short)") }
            guard Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0 ..< raw.count - 4])) == raw.le32(raw.count - 4) else {
                return .failure(Problem("manifest checksum mismatch", at: raw.count - 4))
            }
            let version = raw.le32(8)
            guard version == Manifest.version else { return .failure("manifest version \(version) (this build reads \(Manifest.version))") }
            let count = Int(raw.le32(12))
            guard raw.count == headerSize + count * entrySize + 4 else { return .failure("manifest length does not match its \(count) entries") }
            var manifest = Manifest()
            var actives = 0
            for i in 0 ..< count {
                let at = headerSize + i * entrySize
                let number = raw.le32(at), length = raw.le64(at + 8)
                func malformed(_ what: String) -> Result<Manifest, Problem> {
                    .failure(Problem("manifest entry \(i) (file number \(number)): \(what)", at: at))
                }
                guard number > 0 else { return malformed("file number 0") }
                guard let kind = SegmentKind(rawValue: raw[at + 4]) else { return malformed("unknown segment kind \(raw[at + 4])") }
                guard raw[at + 5] <= 1 else { return malformed("state byte \(raw[at + 5]) (0 sealed, 1 active)") }
                guard raw[at + 6] == 0, raw[at + 7] == 0 else { return malformed("reserved bytes are not zero") }
                guard manifest.entries[number] == nil else { return malformed("the number is listed twice") }
                if raw[at + 5] == 1 {
                    guard kind == .log, length == 0 else { return malformed("an active segment must be a log segment") }
                    actives += 1
                    manifest.entries[number] = Entry(kind: kind, sealedLength: nil)
                } else {
                    guard length >= UInt64(SegmentHeader.size), length <= UInt64(UInt32.max) else {
                        return malformed("impossible length \(length)")
                    }
                    manifest.entries[number] = Entry(kind: kind, sealedLength: Int(length))
                }
            }
            guard actives == 1, let active = manifest.activeNumber,
                  manifest.entries.allSatisfy({ $0.value.kind != .log || $0.key <= active }) else {
                return .failure("manifest must list exactly one active segment, the newest log segment")
            }
            return .success(manifest)
        }
    }
}

extension Store {
    /// Changes the manifest and writes it durably. Serialized by `manifestLock`, which a
    /// roll takes inside the write gate and a compaction without it.
    ///
    /// If the write fails before the new file replaced the old one, the old manifest still
    /// stands (and the in-memory copy is left unchanged): the caller may undo its change and
    /// go on. If it fails after (the rename or the directory sync), nobody knows which file a
    /// crash would leave, so the store stops taking writes.
    func updateManifest(_ change: (inout Manifest) -> Void) throws {
        try manifestLock.withLock { current in
            var next = current
            change(&next)
            try Store.writeManifest(next, path: path, cipher: storeCipher, fileSystem: fileSystem, poison: { self.poison($0) })
            current = next
        }
    }

    /// Writes `manifest` through a temporary file, sync, rename and directory sync.
    /// `poison` is called when the failure came after the rename.
    static func writeManifest(_ manifest: Manifest, path: String, cipher: StoreCipher?, fileSystem fs: any FileSystem,
                              poison: (StoreError) -> Void = { _ in }) throws {
        let bytes = try sealSmallFile(manifest.encode(), kind: .manifest, cipher: cipher)
        let temporary = path + "/" + Manifest.fileName + ".tmp"
        let file = try fs.openFile(temporary, create: true, readOnly: false)
        do {
            try file.write(bytes, at: 0)
            try file.syncData()
            file.close()
        } catch {
            file.close()
            try? fs.remove(temporary)
            // A failed sync takes the store out of service whatever file it was on (Store+Sync).
            if let failure = error as? StoreError, failure.isSyncFailure { poison(failure) }
            throw error
        }
        do {
            try fs.rename(temporary, to: path + "/" + Manifest.fileName)
            try fs.syncDirectory(path)
        } catch {
            let failure = error as? StoreError ?? .io(op: "rename", path: temporary, errno: 5)
            poison(failure)
            throw failure
        }
    }
}
