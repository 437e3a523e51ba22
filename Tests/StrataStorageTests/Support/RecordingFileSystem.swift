// A file layer for tests: it passes every call to the real POSIX layer, records each
// mutating operation (write, truncate, sync, create, rename, remove, directory sync) in
// order (directories made and synced too), and can fail the Nth write or sync, once or from then on. The record is what
// CrashSimulator replays to build the files a crash at any point could leave behind.

import Foundation
import Synchronization
@testable import StrataStorage

enum FileOperation: Sendable {
    /// A file that existed when recording began, with its content then (taken as durable).
    case existing(path: String, inode: Int, bytes: [UInt8])
    case create(path: String, inode: Int)
    case write(inode: Int, offset: Int, bytes: [UInt8])
    case truncate(inode: Int, length: Int)
    case sync(inode: Int)
    case rename(from: String, to: String)
    case remove(path: String)
    /// `mkdir`: the directory exists, but survives a crash only once its parent is synced.
    case createDirectory(path: String)
    case syncDirectory(path: String)
}

/// When to inject a failure.
struct FaultPlan: Sendable {
    enum Target: Sendable { case write, sync, truncate }
    var target: Target
    /// Fail the operation with this 0-based index among operations of `target`'s kind.
    var index: Int
    /// Keep failing every later operation of that kind.
    var persistent: Bool
    var errno: Int32
}

final class RecordingFileSystem: FileSystem, @unchecked Sendable {
    private let real = PosixFileSystem()
    private let state = Locked(State())

    struct State {
        var operations: [FileOperation] = []
        var inodes: [String: Int] = [:]
        var nextInode = 1
        var counts: [FaultPlan.Target: Int] = [:]
        var plan: FaultPlan?
        var injected = 0
        /// Seconds each file sync takes longer than it does (a slow disk).
        var syncDelay = 0.0
    }

    /// `existingDirectory`: files already there are recorded first, as durable, so a crash
    /// simulation of this recording starts from them (crashes during recovery).
    init(plan: FaultPlan? = nil, existingDirectory: String? = nil) {
        state.withLock { $0.plan = plan }
        if let existingDirectory,
           let names = try? FileManager.default.contentsOfDirectory(atPath: existingDirectory) {
            for name in names.sorted() {
                let path = existingDirectory + "/" + name
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                let id = inode(for: path)
                record(.existing(path: path, inode: id, bytes: Array(data)))
            }
        }
    }

    var operations: [FileOperation] { state.withLock { $0.operations } }
    var operationCount: Int { state.withLock { $0.operations.count } }
    var injectedFaults: Int { state.withLock { $0.injected } }

    func setPlan(_ plan: FaultPlan?) {
        state.withLock { $0.plan = plan; $0.counts = [:] }
    }

    /// Makes every later file sync take `seconds` longer (0: as the disk does).
    func setSyncDelay(_ seconds: Double) {
        state.withLock { $0.syncDelay = seconds }
    }

    fileprivate var syncDelay: Double { state.withLock { $0.syncDelay } }

    /// Throws the planned error if this operation is the one to fail.
    fileprivate func check(_ target: FaultPlan.Target, path: String) throws {
        let code: Int32? = state.withLock { s in
            let n = s.counts[target, default: 0]
            s.counts[target] = n + 1
            guard let plan = s.plan, plan.target == target else { return nil }
            if n == plan.index || (plan.persistent && n > plan.index) {
                s.injected += 1
                return plan.errno
            }
            return nil
        }
        if let code { throw StoreError.fromErrno(code, op: "\(target)", path: path) }
    }

    fileprivate func record(_ op: FileOperation) {
        state.withLock { $0.operations.append(op) }
    }

    fileprivate func inode(for path: String) -> Int {
        state.withLock { s in
            if let id = s.inodes[path] { return id }
            let id = s.nextInode
            s.nextInode += 1
            s.inodes[path] = id
            return id
        }
    }

    func createDirectory(_ path: String) throws -> [String] {
        let created = try real.createDirectory(path)
        for directory in created { record(.createDirectory(path: directory)) }
        return created
    }
    func listDirectory(_ path: String) throws -> [String] { try real.listDirectory(path) }
    func fileExists(_ path: String) -> Bool { real.fileExists(path) }

    func openFile(_ path: String, create: Bool, readOnly: Bool) throws -> any StorageFile {
        let existed = real.fileExists(path)
        let file = try real.openFile(path, create: create, readOnly: readOnly)
        if !existed {
            let id = state.withLock { s -> Int in
                let id = s.nextInode
                s.nextInode += 1
                s.inodes[path] = id
                return id
            }
            record(.create(path: path, inode: id))
            return RecordingFile(inner: file, inode: id, owner: self)
        }
        return RecordingFile(inner: file, inode: inode(for: path), owner: self)
    }

    func remove(_ path: String) throws {
        try real.remove(path)
        state.withLock { _ = $0.inodes.removeValue(forKey: path) }
        record(.remove(path: path))
    }

    func rename(_ from: String, to: String) throws {
        try real.rename(from, to: to)
        state.withLock { s in
            if let id = s.inodes.removeValue(forKey: from) { s.inodes[to] = id }
        }
        record(.rename(from: from, to: to))
    }

    func syncDirectory(_ path: String) throws {
        try real.syncDirectory(path)
        record(.syncDirectory(path: path))
    }

    func lock(_ path: String, shared: Bool) throws -> any FileLock { try real.lock(path, shared: shared) }
}

final class RecordingFile: StorageFile, @unchecked Sendable {
    let inner: any StorageFile
    let inode: Int
    let owner: RecordingFileSystem

    init(inner: any StorageFile, inode: Int, owner: RecordingFileSystem) {
        self.inner = inner
        self.inode = inode
        self.owner = owner
    }

    var path: String { inner.path }
    func size() throws -> Int { try inner.size() }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        if path.hasSuffix("/" + Beacon.fileName) {
            // The writer's beacon is not part of the store (never synced, ignored by any open
            // that finds no writer) and swallows its write errors by design: neither a fault
            // point nor a recorded operation, so the sweeps number the store's own writes.
            return try inner.write(bytes, at: offset)
        }
        do {
            try owner.check(.write, path: path)
        } catch {
            // A real full disk often takes part of a write before it refuses the rest.
            let partial = UnsafeRawBufferPointer(rebasing: bytes[0 ..< bytes.count / 2])
            if partial.count > 0, (try? inner.write(partial, at: offset)) != nil {
                owner.record(.write(inode: inode, offset: offset, bytes: Array(partial)))
            }
            throw error
        }
        try inner.write(bytes, at: offset)
        owner.record(.write(inode: inode, offset: offset, bytes: Array(bytes)))
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        try inner.read(into: buffer, at: offset)
    }

    func sync() throws {
        try owner.check(.sync, path: path)
        let delay = owner.syncDelay
        if delay > 0 { usleep(UInt32(delay * 1e6)) }
        try inner.sync()
        owner.record(.sync(inode: inode))
    }

    func startWriteback(offset: Int, length: Int) {
        inner.startWriteback(offset: offset, length: length)
    }

    func hasLiveMappings() -> Bool { inner.hasLiveMappings() }

    func truncate(to length: Int) throws {
        try owner.check(.truncate, path: path)
        try inner.truncate(to: length)
        owner.record(.truncate(inode: inode, length: length))
    }

    func map(length: Int) throws -> MappedRegion { try inner.map(length: length) }
    func mapHoldingReaderLock(length: Int) throws -> MappedRegion { try inner.mapHoldingReaderLock(length: length) }
    func isMappedByOtherProcesses() -> Bool { inner.isMappedByOtherProcesses() }
    func mapCopyOnWrite(length: Int) throws -> MappedRegion { try inner.mapCopyOnWrite(length: length) }
    func close() { inner.close() }
}
