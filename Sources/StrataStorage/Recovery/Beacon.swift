// Beacon: the writer's published state (`HEAD`), for read-only opens in other processes
// while it writes.
//
// Why: a read-only open that finds the store's lock held by a writer must not read what
// that writer has only appended — a commit not yet synced can vanish in a crash, and the
// reader would have seen a state that never was durable; nor bytes a rollback is about to
// cut. The writer therefore writes, after every sync (every commit with `.none`, which
// promises nothing), where its durable log ends: the active segment, the end of the last
// durable commit in it, and that commit's sequence. A reader opens exactly that prefix of
// the log: the active segment up to that end, no newer log segment.
//
// It is a hint for other processes, not a part of the store: 36 bytes rewritten in place
// (one `pwrite`, never synced: after a crash no writer holds the lock, and readers then
// open the store as it lies), checked by its CRC (a read torn by a concurrent write is
// read again), removed at close.
//
// Layout (little-endian): 0 8 magic "STRATAHD" · 8 4 version (1) · 12 4 active segment ·
// 16 8 durable end in it · 24 8 sequence of the last durable commit · 32 4 CRC32C of 0..<32.

/// The writer's published durable state, and the file it is kept in.
final class Beacon: @unchecked Sendable {
    // @unchecked: `publish` is called with the store's sync monitor held (one writer).

    static let fileName = "HEAD"
    /// Read-only opens that follow a writer hold a shared lock on this file: the writer
    /// sees them (an exclusive attempt fails) and then unlinks retired segments whole
    /// instead of truncating them step by step under their mappings.
    static let readersFileName = "READERS"
    static let magic: [UInt8] = Array("STRATAHD".utf8)
    static let size = 36

    /// Where a writer's durable log ends.
    struct State: Equatable, Sendable {
        var segment: UInt32
        var end: Int
        var sequence: UInt64
    }

    private let file: any StorageFile
    private var last: State?

    /// Opens (creating) `HEAD` in the store at `path` and publishes `state`.
    init(path: String, fileSystem: any FileSystem, state: State) throws {
        file = try fileSystem.openFile(path + "/" + Beacon.fileName, create: true, readOnly: false)
        publish(state)
    }

    /// Publishes `state` (a failed write only leaves followers behind: logged by nobody,
    /// retried at the next sync).
    func publish(_ state: State) {
        guard state != last else { return }
        try? file.write(Beacon.encode(state), at: 0)
        last = state
    }

    func close() {
        file.close()
    }

    static func encode(_ state: State) -> [UInt8] {
        var bytes = magic
        bytes.appendLE32(1)
        bytes.appendLE32(state.segment)
        bytes.appendLE64(UInt64(state.end))
        bytes.appendLE64(state.sequence)
        bytes.appendLE32(Checksum.crc32c(bytes))
        return bytes
    }

    /// The state in `bytes`, or nil if they are not a whole, checked beacon.
    static func decode(_ bytes: [UInt8]) -> State? {
        guard bytes.count >= size, Array(bytes[0 ..< 8]) == magic else { return nil }
        return bytes.withUnsafeBytes { raw -> State? in
            guard raw.le32(8) == 1, raw.le32(32) == Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0 ..< 32])),
                  raw.le64(16) <= UInt64(UInt32.max) else { return nil }
            return State(segment: raw.le32(12), end: Int(raw.le64(16)), sequence: raw.le64(24))
        }
    }

    /// The state a writer of the store at `path` published, or nil (none yet, or a torn read).
    static func read(path: String, fileSystem: any FileSystem) -> State? {
        guard let file = try? fileSystem.openFile(path + "/" + fileName, create: false, readOnly: true) else { return nil }
        defer { file.close() }
        return (try? file.readAll()).flatMap(decode)
    }
}
