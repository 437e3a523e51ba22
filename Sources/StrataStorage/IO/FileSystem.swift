// The file layer under the engine. The engine touches the disk only through these two
// protocols, so tests can slide a recording, fault-injecting layer underneath it
// (crash-point sweeps, disk-full and sync-failure tests) without touching engine code.

/// One open file of the store.
protocol StorageFile: AnyObject, Sendable {
    var path: String { get }
    /// The current length in bytes.
    func size() throws -> Int
    /// Writes every byte of `bytes` at `offset` (looping over short writes).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws
    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int
    /// The file's bytes written so far reach stable storage: `fdatasync` on Linux,
    /// `fcntl(F_FULLFSYNC)` on Darwin (see `dataSyncPrimitive`).
    func sync() throws
    /// Asks the kernel to start writing the range to disk without waiting (Linux
    /// `sync_file_range`); a performance hint that promises no durability.
    func startWriteback(offset: Int, length: Int)
    /// Whether a mapping this process made of the file (by any path, through any open)
    /// is still alive: truncating the file then would fault its readers.
    func hasLiveMappings() -> Bool
    /// Sets the length to `length` bytes.
    func truncate(to length: Int) throws
    /// Maps `length` bytes from the start of the file, shared and read-only. The mapping
    /// may extend past the end of the file; only bytes inside the file may be read.
    func map(length: Int) throws -> MappedRegion
    /// Maps a segment file like ``map(length:)`` for a reader in another process than the
    /// store's writer (a follower), holding the segment's slot in the reader table (a byte
    /// of `READERS`, `ReaderTable`) for as long as the mapping lives, so that the writer,
    /// deleting the file after a compaction, never truncates it under the mapping
    /// (``isMappedByOtherProcesses()``). Throws `io` with `ENOENT` when the file is no
    /// longer the one its name names (renamed aside to be deleted).
    func mapHoldingReaderLock(length: Int) throws -> MappedRegion
    /// Whether another process holds this segment file's slot in the reader table (maps it
    /// through ``mapHoldingReaderLock(length:)``): the file may then be unlinked, never
    /// truncated.
    func isMappedByOtherProcesses() -> Bool
    /// Maps `length` bytes from the start of the file privately and writable: a write
    /// changes this process's copy of the page only, never the file (an index image page
    /// rebuilt from the log is written over its damaged bytes this way).
    func mapCopyOnWrite(length: Int) throws -> MappedRegion
    /// Closes the descriptor; the file must not be used afterwards.
    func close()
}

/// An advisory lock held on the store's lock file; released by `unlock()` or deinit.
protocol FileLock: AnyObject, Sendable {
    func unlock()
}

/// The directory-level operations the engine needs.
protocol FileSystem: Sendable {
    /// Creates `path` and any missing parents, with the store's directory mode. Returns the
    /// directories it made, outermost first; each survives a crash only once its parent is
    /// synced (``syncDirectory(_:)``), which the caller does.
    @discardableResult
    func createDirectory(_ path: String) throws -> [String]
    /// Names (not paths) of the entries of `path`.
    func listDirectory(_ path: String) throws -> [String]
    func fileExists(_ path: String) -> Bool
    /// Opens `path` for reading and (unless `readOnly`) writing. With `create`, the file is
    /// always a new, empty one with the store's file mode: anything already at `path` (a
    /// stale temporary or a planted symlink) is removed, never followed or truncated.
    func openFile(_ path: String, create: Bool, readOnly: Bool) throws -> any StorageFile
    func remove(_ path: String) throws
    func rename(_ from: String, to: String) throws
    /// `fsync` on the directory, so that creations, renames and removals in it are durable.
    func syncDirectory(_ path: String) throws
    /// Takes an `flock` on `path` (created if missing): exclusive, or shared when `shared`.
    /// Throws `StoreError.locked` at once if another process holds a conflicting lock.
    func lock(_ path: String, shared: Bool) throws -> any FileLock
}

extension StorageFile {
    func write(_ bytes: [UInt8], at offset: Int) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    /// Reads exactly `count` bytes at `offset`, or fewer if the file ends first.
    func read(count: Int, at offset: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        let got = try result.withUnsafeMutableBytes { try read(into: $0, at: offset) }
        if got < count { result.removeLast(count - got) }
        return result
    }

    /// The whole file.
    func readAll() throws -> [UInt8] {
        try read(count: try size(), at: 0)
    }
}

extension StorageFile {
    /// ``sync()``, with any failure reported as what it is: a failed sync
    /// (``StoreError/io(op:path:errno:)`` with op `fdatasync`), whatever its errno — ENOSPC
    /// included, which must not read as a `diskFull` that freeing space would cure. After
    /// it the kernel may have dropped the written pages, so the engine takes the store out
    /// of service and leaves it to the next open's recovery to see what reached the disk.
    func syncData() throws {
        do {
            try sync()
        } catch {
            throw StoreError.syncFailure(error, path: path)
        }
    }
}
