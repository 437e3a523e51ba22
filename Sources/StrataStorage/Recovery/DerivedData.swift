// DerivedData: files the layers above keep beside the store's segments — data computed
// from the records (the object layer's table projections) that is cheaper to read back than
// to compute again. Kept like the hints: a cache, written through a temporary file and a
// rename and never synced, checksummed, and used only for the stored state it was computed
// from: the same last commit, at the same end of the same active log segment (its length
// and a checksum of its last bytes). A later commit, a roll, a crash's recovery or another
// store makes a file stale; it is refused, never trusted. A compaction does not: it moves
// sealed records into new segments without changing what any key reads, and the active
// segment, where the last commit lies, stays. Callers write one when a store closes, never
// on the commit path.
//
// Layout (little-endian; docs/FORMAT.md, "Derived data"):
//   0  8  magic "STRATADD"    8  4  version (1)    12 4  zero
//   16 8  sequence of the last commit the data reflects
//   24 4  active log segment's file number (0: none; then every segment is listed below)
//   28 4  CRC32C of the last (up to 64) committed bytes of the active segment
//   32 8  the active segment's committed length    40 4 segment count m    44 4 zero
//   48 .. m × 12 bytes: segment file number (4), committed length (8), by number
//   then 8 bytes: payload length p; p bytes of payload; 4 bytes: CRC32C of all before them.
// In an encrypted store the whole file is sealed as the hints are (file kind 5).

/// Which stored state a snapshot reads, as derived data records it: its last commit and the
/// end of the active log segment (or, with no active segment, every segment's extent).
struct StoredState: Equatable {
    var sequence: UInt64
    var activeID: UInt32
    var activeLength: UInt64
    var tailChecksum: UInt32
    /// Every segment's extent; only when there is no active segment (else empty).
    var segments: [(id: UInt32, length: UInt64)]

    static func == (a: StoredState, b: StoredState) -> Bool {
        a.sequence == b.sequence && a.activeID == b.activeID && a.activeLength == b.activeLength && a.tailChecksum == b.tailChecksum
            && a.segments.elementsEqual(b.segments) { $0.id == $1.id && $0.length == $1.length }
    }
}

enum DerivedData {
    static let magic: [UInt8] = Array("STRATADD".utf8)
    static let version: UInt32 = 1
    static let fileSuffix = ".derived"
    /// Bytes of the active segment's committed end that the tail checksum covers.
    static let tailBytes = 64

    /// Whether `name` can name derived data: 1–64 of `a-z`, `0-9`, `-`.
    static func isValidName(_ name: String) -> Bool {
        (1 ... 64).contains(name.utf8.count)
            && name.utf8.allSatisfy { (UInt8(ascii: "a") ... UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-") }
    }

    static func encode(_ payload: [UInt8], state: StoredState) -> [UInt8] {
        var out = magic
        out.reserveCapacity(64 + state.segments.count * 12 + payload.count)
        out.appendLE32(version)
        out.appendLE32(0)
        out.appendLE64(state.sequence)
        out.appendLE32(state.activeID)
        out.appendLE32(state.tailChecksum)
        out.appendLE64(state.activeLength)
        out.appendLE32(UInt32(state.segments.count))
        out.appendLE32(0)
        for segment in state.segments {
            out.appendLE32(segment.id)
            out.appendLE64(segment.length)
        }
        out.appendLE64(UInt64(payload.count))
        out.append(contentsOf: payload)
        out.appendLE32(Checksum.crc32c(out))
        return out
    }

    /// Bytes of the header before the segment list.
    static let headerSize = 48

    /// Whether the header at the start of `bytes` (at least `headerSize` of them, the segment
    /// list after it when it has one) names `state`: nil when it cannot tell (too short, or
    /// not this format), so the whole file's checks decide.
    static func names(_ state: StoredState, header bytes: [UInt8]) -> Bool? {
        bytes.withUnsafeBytes { raw -> Bool? in
            guard raw.count >= headerSize, raw.prefix(8).elementsEqual(magic), raw.le32(8) == version else { return nil }
            let count = Int(raw.le32(40))
            guard count <= (raw.count - headerSize) / 12 else { return nil }
            var found = StoredState(sequence: raw.le64(16), activeID: raw.le32(24), activeLength: raw.le64(32),
                                    tailChecksum: raw.le32(28), segments: [])
            for i in 0 ..< count {
                found.segments.append((raw.le32(48 + i * 12), raw.le64(52 + i * 12)))
            }
            return found == state
        }
    }

    /// The payload of `bytes` if they are whole and were written for `state`; otherwise why not.
    static func decode(_ bytes: [UInt8], state: StoredState) -> Result<ArraySlice<UInt8>, DecodeProblem> {
        bytes.withUnsafeBytes { raw -> Result<ArraySlice<UInt8>, DecodeProblem> in
            guard raw.count >= 60, raw.prefix(8).elementsEqual(magic) else { return .failure(.damaged("not derived data (bad magic or too short)")) }
            guard Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0 ..< raw.count - 4])) == raw.le32(raw.count - 4) else {
                return .failure(.damaged("checksum mismatch"))
            }
            guard raw.le32(8) == version else { return .failure(.damaged("version \(raw.le32(8)) (this build reads \(version))")) }
            let count = Int(raw.le32(40))
            guard count <= (raw.count - 60) / 12 else { return .failure(.damaged("segment list longer than the file")) }
            let payloadAt = 48 + count * 12 + 8
            guard names(state, header: bytes) == true else { return .failure(.stale) }
            let length = raw.le64(payloadAt - 8)
            guard length == UInt64(raw.count - 4 - payloadAt) else { return .failure(.damaged("payload length \(length) does not match the file")) }
            return .success(bytes[payloadAt ..< raw.count - 4])
        }
    }

    enum DecodeProblem: Error {
        /// Written for another state of the store: not wrong, just old.
        case stale
        case damaged(String)
    }
}

extension KeyDirectory {
    /// The stored state this directory reads (`DerivedData`): its sequence and the end of
    /// its active segment (every segment's extent when it has none).
    var storedState: StoredState {
        var state = StoredState(sequence: sequence, activeID: 0, activeLength: 0, tailChecksum: 0, segments: [])
        guard let active else {
            forEachSegment { view in state.segments.append((view.id, UInt64(view.length))) }
            state.segments.sort { $0.id < $1.id }
            return state
        }
        state.activeID = active.id
        state.activeLength = UInt64(active.length)
        let count = min(DerivedData.tailBytes, active.length)
        if let bytes = active.region.bytes(at: active.length - count, count: count, limit: active.length) {
            state.tailChecksum = Checksum.crc32c(bytes)
        }
        return state
    }
}

extension Store {
    /// Keeps `payload` beside the store as the derived data called `name`, computed from
    /// the state `snapshot` reads. ``derivedData(named:for:)`` returns it only for a
    /// snapshot of exactly that state: the same last commit at the same end of the same
    /// active log segment (a later commit, a roll — ``compact()`` seals the active segment —
    /// or a crash's recovery makes it stale; the background compaction, which changes no
    /// key's value and leaves the active segment, does not).
    ///
    /// A cache, as the hint files are: written through a temporary file and a rename, not
    /// synced (a crash may leave it missing or cut; the next read refuses it), sealed with
    /// the store's key in an encrypted store. It waits first for the commits `snapshot`
    /// reflects to be durable (a sync under `.normal` or `.none`), so that no crash can
    /// take back the state it describes. Write it when the store is quiet (before
    /// ``close()``), never inside a commit. A read-only store writes nothing.
    ///
    /// - Parameters:
    ///   - payload: the bytes to keep (their meaning is the caller's).
    ///   - name: 1–64 characters of `a-z`, `0-9` and `-`; the file is `name.derived`.
    ///   - snapshot: the snapshot `payload` was computed from.
    /// - Throws: ``StoreError/invalidArgument(_:)`` for a bad name, ``StoreError/closed``,
    ///   the error of a sync that failed, or the I/O error that stopped the write (nothing of
    ///   the store changes either way).
    public func writeDerivedData(_ payload: [UInt8], named name: String, for snapshot: Snapshot) throws {
        guard DerivedData.isValidName(name) else {
            throw StoreError.invalidArgument("derived data name \"\(name)\": use 1–64 characters of a-z, 0-9 and -")
        }
        guard !options.readOnly else { return }
        _ = try currentState()
        // The state it describes must survive a crash: were the commits it reflects lost,
        // later ones could rebuild the same sequence and the same segment end over other
        // data. (Free at a close, which syncs anyway; it throws on a store whose sync failed.)
        try waitDurable(snapshot.sequence)
        let bytes = DerivedData.encode(payload, state: snapshot.directory.storedState)
        try Store.writeFileAtomically(directory: path, name: name + DerivedData.fileSuffix,
                                      bytes: try Store.sealSmallFile(bytes, kind: .derivedData, cipher: storeCipher),
                                      fileSystem: fileSystem, durable: false)
    }

    /// The derived data called `name` (a slice of the file as read: no copy) if it was
    /// written for exactly the state `snapshot` reads (see ``writeDerivedData(_:named:for:)``);
    /// nil when there is none, the name is not a valid one, or the file is for another
    /// state, damaged, cut, of another format version or sealed with another key. A
    /// writable store removes a file it refuses, and logs why when it was not merely old.
    public func derivedData(named name: String, for snapshot: Snapshot) -> ArraySlice<UInt8>? {
        guard DerivedData.isValidName(name) else { return nil }
        let fileName = name + DerivedData.fileSuffix
        let filePath = path + "/" + fileName
        guard fileSystem.fileExists(filePath) else { return nil }
        let state = snapshot.directory.storedState
        let decoded: Result<ArraySlice<UInt8>, DerivedData.DecodeProblem>
        do {
            let file = try fileSystem.openFile(filePath, create: false, readOnly: true)
            defer { file.close() }
            // A plain file's header says whether it is for this state before the whole file
            // is read and checked (a stale one of a large table is tens of megabytes).
            if storeCipher == nil, DerivedData.names(state, header: try file.read(count: DerivedData.headerSize + 12 * 4, at: 0)) == false {
                decoded = .failure(.stale)
            } else {
                let plain = try Store.openSmallFile(try file.readAll(), name: fileName, kind: .derivedData, cipher: storeCipher)
                decoded = DerivedData.decode(plain, state: state)
            }
        } catch {
            decoded = .failure(.damaged("\(error)"))
        }
        switch decoded {
        case .success(let payload):
            return payload
        case .failure(let problem):
            // Damaged, cut, of another version, or stale. A stale file would be read and
            // refused again at every open (a store rarely returns to an older state): a
            // writable store removes it, and the next write replaces it.
            if case .damaged(let reason) = problem {
                options.logger?.info("derived data \(fileName) not used (\(reason)): it is computed again", metadata: ["store": "\(path)"])
            }
            if !options.readOnly { try? fileSystem.remove(filePath) }
            return nil
        }
    }
}
