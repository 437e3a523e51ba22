// The real file layer: POSIX calls with errno mapped to StoreError.

import CStrataSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Platforms. Linux is where the engine is built and tested. On Darwin (macOS) the same
// POSIX calls are used, except for the few below, each behind `#if canImport(Darwin)`:
// `fsync` there only hands the data to the drive, whose cache may lose it on power loss,
// so a data sync is `fcntl(F_FULLFSYNC)` (falling back to `fsync` where the file system
// does not support it), and `fdatasync`/`sync_file_range` (Linux-only) are not used.

/// The system call that makes a file's data durable in ``PosixFile/sync()``.
enum DataSyncPrimitive: Equatable {
    /// Linux `fdatasync(2)`: data and the metadata needed to read it back.
    case fdatasync
    /// Darwin `fcntl(F_FULLFSYNC)`: flushes the drive's write cache too; `fsync` if the
    /// file system answers ENOTSUP or EINVAL.
    case fullFsync
}

/// The data-sync primitive this build uses (tested: it is `fdatasync` on Linux).
let dataSyncPrimitive: DataSyncPrimitive = {
    #if canImport(Darwin)
    return .fullFsync
    #else
    return .fdatasync
    #endif
}()

/// The name a failed data sync is reported under (``StoreError/io(op:path:errno:)``'s op;
/// it must contain "sync", which marks a sync failure).
let dataSyncOperationName: String = dataSyncPrimitive == .fdatasync ? "fdatasync" : "fcntl F_FULLFSYNC"

/// Makes the data written to `fd` durable with ``dataSyncPrimitive``, retrying on EINTR.
/// Returns 0, or -1 with `errno` set.
func syncFileData(_ fd: Int32) -> Int32 {
    while true {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return 0 }
        if errno == EINTR { continue }
        // Some file systems (network, FAT, some external drives) do not support F_FULLFSYNC.
        if errno == ENOTSUP || errno == EINVAL {
            if fsync(fd) == 0 { return 0 }
            if errno == EINTR { continue }
        }
        return -1
        #else
        if fdatasync(fd) == 0 { return 0 }
        if errno == EINTR { continue }
        return -1
        #endif
    }
}

/// `close(2)`, named apart from the members called `close` below.
@inline(__always)
func closeDescriptor(_ fd: Int32) {
    #if canImport(Darwin)
    _ = Darwin.close(fd)
    #else
    _ = Glibc.close(fd)
    #endif
}

/// `rename(2)`, named apart from ``PosixFileSystem/rename(_:to:)``.
@inline(__always)
func renamePath(_ from: String, _ to: String) -> Int32 {
    #if canImport(Darwin)
    return Darwin.rename(from, to)
    #else
    return Glibc.rename(from, to)
    #endif
}

struct PosixFileSystem: FileSystem {
    /// The permission bits of the files this layer creates (``StoreOptions/fileMode``).
    var fileMode: mode_t = 0o600

    /// The mode of the directories it creates: ``fileMode`` with execute added wherever read
    /// is set (0o600 → 0o700, 0o640 → 0o750).
    var directoryMode: mode_t { fileMode | ((fileMode & 0o444) >> 2) }

    @discardableResult
    func createDirectory(_ path: String) throws -> [String] {
        var components: [String] = []
        var current = path
        while !current.isEmpty, current != "/", !fileExists(current) {
            components.append(current)
            current = parentDirectory(of: current)
        }
        var created: [String] = []
        for dir in components.reversed() {
            if mkdir(dir, directoryMode) == 0 {
                created.append(dir)
            } else if errno != EEXIST {
                throw StoreError.fromErrno(errno, op: "mkdir", path: dir)
            }
        }
        return created
    }

    func listDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw StoreError.fromErrno(errno, op: "opendir", path: path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    func fileExists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    func openFile(_ path: String, create: Bool, readOnly: Bool) throws -> any StorageFile {
        var flags = readOnly ? O_RDONLY : O_RDWR
        if create {
            // Always a new file of our own: whatever is at `path` (a stale temporary, or a
            // symlink planted there) is removed, never followed, opened or truncated; and if
            // something reappears before the open, O_EXCL | O_NOFOLLOW make the open fail.
            if unlink(path) != 0 && errno != ENOENT { throw StoreError.fromErrno(errno, op: "unlink", path: path) }
            flags |= O_CREAT | O_EXCL | O_NOFOLLOW
        }
        flags |= O_CLOEXEC
        let fd = open(path, flags, fileMode)
        guard fd >= 0 else { throw StoreError.fromErrno(errno, op: "open", path: path) }
        return PosixFile(fd: fd, path: path)
    }

    func remove(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT { throw StoreError.fromErrno(errno, op: "unlink", path: path) }
    }

    func rename(_ from: String, to: String) throws {
        if renamePath(from, to) != 0 { throw StoreError.fromErrno(errno, op: "rename", path: from) }
    }

    func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.fromErrno(errno, op: "open directory", path: path) }
        defer { closeDescriptor(fd) }
        // A failed sync is a sync failure whatever its errno (ENOSPC included), never `diskFull`.
        // `fsync` on both platforms. On Darwin it hands the directory's entries to the drive
        // without flushing the drive's cache; the next data sync's F_FULLFSYNC flushes it.
        while fsync(fd) != 0 {
            if errno == EINTR { continue }
            throw StoreError.io(op: "fsync directory", path: path, errno: errno)
        }
    }

    func lock(_ path: String, shared: Bool) throws -> any FileLock {
        // A shared lock (a read-only open) needs no write access: flock works on a descriptor
        // opened read-only, so read-only media and other users' stores can be read. Only
        // when LOCK is missing is it created; if that is not allowed either (EACCES, EROFS,
        // EPERM), no writer can be using this directory through LOCK, so there is nothing
        // to exclude and the lock is a no-op.
        // O_NOFOLLOW: a symlink planted as LOCK (by another local user) must not make the
        // store create or lock a file elsewhere; it is refused (ELOOP).
        var fd = shared ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1
        if fd < 0 && (!shared || errno == ENOENT) {
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, fileMode)
            if fd < 0 && shared && (errno == EACCES || errno == EROFS || errno == EPERM) {
                return PosixLock(fd: -1)
            }
        }
        guard fd >= 0 else { throw StoreError.fromErrno(errno, op: "open lock file", path: path) }
        if flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0 {
            let code = errno
            closeDescriptor(fd)
            if code == EWOULDBLOCK { throw StoreError.locked(path) }
            throw StoreError.fromErrno(code, op: "flock", path: path)
        }
        return PosixLock(fd: fd)
    }
}

func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    if slash == path.startIndex { return "/" }
    return String(path[..<slash])
}

final class PosixLock: FileLock, @unchecked Sendable {
    /// The open LOCK file (-1: a read-only open where LOCK could be neither opened nor
    /// created, so there was nothing to lock).
    let fd: Int32
    private let released = Atomic01()

    init(fd: Int32) { self.fd = fd }

    func unlock() {
        if released.setOnce(), fd >= 0 {
            flock(fd, LOCK_UN)
            closeDescriptor(fd)
        }
    }

    deinit { unlock() }
}

/// A one-shot flag: `setOnce()` returns true for exactly one caller.
final class Atomic01: @unchecked Sendable {
    private var value = false
    private var lock = pthread_mutex_t()
    init() { pthread_mutex_init(&lock, nil) }
    deinit { pthread_mutex_destroy(&lock) }
    func setOnce() -> Bool {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        if value { return false }
        value = true
        return true
    }
}

final class PosixFile: StorageFile, @unchecked Sendable {
    // The descriptor never changes after init; every call below is thread-safe in the kernel.
    private let fd: Int32
    let path: String
    private let closed = Atomic01()

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close() }

    func size() throws -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.fromErrno(errno, op: "fstat", path: path) }
        return Int(info.st_size)
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.fromErrno(errno, op: "write", path: path)
            }
            if n == 0 { throw StoreError.diskFull(path) }
            done += n
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.fromErrno(errno, op: "read", path: path)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func sync() throws {
        if syncFileData(fd) != 0 {
            throw StoreError.io(op: dataSyncOperationName, path: path, errno: errno)
        }
    }

    func startWriteback(offset: Int, length: Int) {
        _ = strata_start_writeback(fd, Int64(offset), Int64(length))
    }

    func truncate(to length: Int) throws {
        while ftruncate(fd, off_t(length)) != 0 {
            if errno == EINTR { continue }
            throw StoreError.fromErrno(errno, op: "ftruncate", path: path)
        }
    }

    func map(length: Int) throws -> MappedRegion {
        try map(length: length, protection: PROT_READ, flags: MAP_SHARED)
    }

    func mapCopyOnWrite(length: Int) throws -> MappedRegion {
        try map(length: length, protection: PROT_READ | PROT_WRITE, flags: MAP_PRIVATE)
    }

    func mapHoldingReaderLock(length: Int) throws -> MappedRegion {
        guard let slot = ReaderTable.slot(of: path) else { return try map(length: length) }
        try ReaderTable.take(slot)
        var held = true
        defer { if held { ReaderTable.release(slot) } }
        // The slot held, and still the file of that name: the writer renames a file aside
        // before it looks at the slots, so from here on it sees ours.
        var mine = stat(), named = stat()
        guard fstat(fd, &mine) == 0, stat(path, &named) == 0, mine.st_dev == named.st_dev, mine.st_ino == named.st_ino else {
            throw StoreError.io(op: "open", path: path, errno: ENOENT)
        }
        held = false
        return try map(length: length, protection: PROT_READ, flags: MAP_SHARED) { ReaderTable.release(slot) }
    }

    func isMappedByOtherProcesses() -> Bool {
        guard let slot = ReaderTable.slot(of: path) else { return false }
        return ReaderTable.isHeldElsewhere(slot)
    }

    private func map(length: Int, protection: Int32, flags: Int32, unmapped: (@Sendable () -> Void)? = nil) throws -> MappedRegion {
        guard length > 0 else {
            unmapped?()
            return MappedRegion(base: nil, length: 0)
        }
        let pointer = mmap(nil, length, protection, flags, fd, 0)
        guard let pointer, pointer != MAP_FAILED else {
            let error = StoreError.fromErrno(errno, op: "mmap", path: path)
            unmapped?()
            throw error
        }
        guard let identity = identity() else { return MappedRegion(base: UnsafeRawPointer(pointer), length: length, unmapped: unmapped) }
        // Counted, not held weakly: a weak reference would move every region's reference
        // count to a side table, slowing each read's retain and release of its mapping.
        PosixFile.mappings.withLock { $0[identity, default: 0] += 1 }
        return MappedRegion(base: UnsafeRawPointer(pointer), length: length) {
            PosixFile.mappings.withLock { table in
                table[identity, default: 1] -= 1
                if table[identity] == 0 { table[identity] = nil }
            }
            unmapped?()
        }
    }

    func hasLiveMappings() -> Bool {
        guard let identity = identity() else { return true }   // unknown: assume mapped
        return PosixFile.mappings.withLock { $0[identity] != nil }
    }

    /// How many mappings of each file (device and inode) this process holds now: whether a
    /// file may be truncated without faulting a reader (`hasLiveMappings`).
    private static let mappings = Locked<[FileIdentity: Int]>([:])

    private struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    private func identity() -> FileIdentity? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Closes the descriptor (once; also done at deinit).
    func close() {
        if closed.setOnce() { closeDescriptor(fd) }
    }
}

/// The readers of a store's segment files in other processes than its writer's (followers),
/// as LMDB keeps a reader table, with the kernel's lock table as the table: a follower holds
/// a shared open-file-description lock on byte *n* of the store's `READERS` file for as long
/// as it maps segment *n* (one descriptor per store and process, however many segments),
/// and the writer, before it truncates a retired segment, asks whether anyone holds that
/// byte. A process that dies lets go of its bytes with it. Segment numbers are never reused,
/// so a byte names one file for the store's life. Linux only (OFD locks); elsewhere no
/// slot is taken and nothing is reported held.
enum ReaderTable {
    struct Slot: Hashable {
        let readers: String
        let number: UInt32
    }

    /// The slot of the segment file at `path` (its own name, or the name it had before it
    /// was renamed aside to be deleted), or nil for a file that is no segment.
    static func slot(of path: String) -> Slot? {
        #if os(Linux)
        let name = path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]
        let segment = name.range(of: ".seg").map { String(name[..<$0.upperBound]) } ?? ""
        guard let number = Store.parseSegmentName(segment) else { return nil }
        return Slot(readers: parentDirectory(of: path) + "/" + Beacon.readersFileName, number: number)
        #else
        return nil
        #endif
    }

    /// Per `READERS` file: this process's descriptor and how many mappings hold each byte.
    private static let held = Locked<[String: (descriptor: Int32, counts: [UInt32: Int])]>([:])

    // Linux's F_OFD_GETLK / F_OFD_SETLK (not exported by the C module).
    private static let getLock: Int32 = 36
    private static let setLock: Int32 = 37

    private static func range(_ number: UInt32, _ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(number)
        lock.l_len = 1
        return lock
    }

    /// Holds `slot` for one more mapping. Throws `io` if `READERS` cannot be opened.
    static func take(_ slot: Slot) throws {
        try held.withLock { table in
            var entry: (descriptor: Int32, counts: [UInt32: Int])
            if let existing = table[slot.readers] {
                entry = existing
            } else {
                let descriptor = open(slot.readers, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                guard descriptor >= 0 else { throw StoreError.fromErrno(errno, op: "open", path: slot.readers) }
                entry = (descriptor, [:])
            }
            if entry.counts[slot.number, default: 0] == 0 {
                var lock = range(slot.number, Int32(F_RDLCK))
                guard fcntl(entry.descriptor, setLock, &lock) == 0 else {
                    let code = errno
                    if entry.counts.isEmpty { closeDescriptor(entry.descriptor) }   // (not in the table yet)
                    throw StoreError.fromErrno(code, op: "fcntl(F_OFD_SETLK)", path: slot.readers)
                }
            }
            entry.counts[slot.number, default: 0] += 1
            table[slot.readers] = entry
        }
    }

    /// Lets go of `slot` for one mapping (the byte is unlocked with the last).
    static func release(_ slot: Slot) {
        held.withLock { table in
            guard var entry = table[slot.readers], let count = entry.counts[slot.number] else { return }
            if count > 1 {
                entry.counts[slot.number] = count - 1
                table[slot.readers] = entry
                return
            }
            entry.counts[slot.number] = nil
            var lock = range(slot.number, Int32(F_UNLCK))
            _ = fcntl(entry.descriptor, setLock, &lock)
            if entry.counts.isEmpty {
                closeDescriptor(entry.descriptor)
                table[slot.readers] = nil
            } else {
                table[slot.readers] = entry
            }
        }
    }

    /// Whether another open file description (another process) holds `slot`.
    static func isHeldElsewhere(_ slot: Slot) -> Bool {
        let probe = open(slot.readers, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard probe >= 0 else { return false }   // no READERS: no follower ever came
        defer { closeDescriptor(probe) }
        var lock = range(slot.number, Int32(F_WRLCK))
        guard fcntl(probe, getLock, &lock) == 0 else { return true }   // unknown: keep the file whole
        return lock.l_type != Int16(F_UNLCK)
    }
}
