// Reliability #5: a write starts from every commit appended before it, including one whose
// `.full` sync is still running (or it could lose that update). If that sync then fails, the
// store stops taking writes, and a realm that saw the commit must not go on showing it: it
// falls back to the last durable commit, the one recovery keeps.

import XCTest
import Foundation
@testable import Strata
@testable import StrataStorage

/// The POSIX file layer, except that once armed, the next `fdatasync` signals `entered`,
/// waits for `release`, and fails with EIO.
private final class BlockingSyncFileSystem: FileSystem, @unchecked Sendable {
    let real = PosixFileSystem()
    let armed = Strata.Locked(false)
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    func createDirectory(_ path: String) throws -> [String] { try real.createDirectory(path) }
    func listDirectory(_ path: String) throws -> [String] { try real.listDirectory(path) }
    func fileExists(_ path: String) -> Bool { real.fileExists(path) }
    func openFile(_ path: String, create: Bool, readOnly: Bool) throws -> any StorageFile {
        File(inner: try real.openFile(path, create: create, readOnly: readOnly), owner: self)
    }
    func remove(_ path: String) throws { try real.remove(path) }
    func rename(_ from: String, to: String) throws { try real.rename(from, to: to) }
    func syncDirectory(_ path: String) throws { try real.syncDirectory(path) }
    func lock(_ path: String, shared: Bool) throws -> any FileLock { try real.lock(path, shared: shared) }

    final class File: StorageFile, @unchecked Sendable {
        let inner: any StorageFile
        let owner: BlockingSyncFileSystem
        init(inner: any StorageFile, owner: BlockingSyncFileSystem) { self.inner = inner; self.owner = owner }
        var path: String { inner.path }
        func size() throws -> Int { try inner.size() }
        func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws { try inner.write(bytes, at: offset) }
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int { try inner.read(into: buffer, at: offset) }
        func sync() throws {
            let fire = owner.armed.withLock { armed -> Bool in
                defer { armed = false }
                return armed
            }
            guard fire else { return try inner.sync() }
            owner.entered.signal()
            owner.release.wait()
            throw StoreError.fromErrno(EIO, op: "fdatasync", path: path)
        }
        func startWriteback(offset: Int, length: Int) { inner.startWriteback(offset: offset, length: length) }
        func hasLiveMappings() -> Bool { inner.hasLiveMappings() }
        func truncate(to length: Int) throws { try inner.truncate(to: length) }
        func map(length: Int) throws -> MappedRegion { try inner.map(length: length) }
    func mapHoldingReaderLock(length: Int) throws -> MappedRegion { try inner.mapHoldingReaderLock(length: length) }
    func isMappedByOtherProcesses() -> Bool { inner.isMappedByOtherProcesses() }
        func mapCopyOnWrite(length: Int) throws -> MappedRegion { try inner.mapCopyOnWrite(length: length) }
        func close() { inner.close() }
    }
}

final class FailedSyncTests: RealmTestCase {
    func testARealmDoesNotKeepShowingACommitWhoseSyncFailed() throws {
        let fileSystem = BlockingSyncFileSystem()
        let config = {
            var config = configuration()
            config.storeOptions.durability = .full
            config.storeOptions.fileSystem = fileSystem
            return config
        }()
        let realm = try Realm(configuration: config)
        try realm.write { try realm.add(makeUser("durable")) }

        // Another thread commits; its sync blocks, then fails.
        fileSystem.armed.withLock { $0 = true }
        let firstDone = DispatchSemaphore(value: 0)
        let firstError = Strata.Locked<String?>(nil)
        Thread.detachNewThread {
            do {
                let other = try Realm(configuration: config)
                try other.write { try other.add(newUser("lost")) }
            } catch {
                firstError.withLock { $0 = "\(error)" }
            }
            firstDone.signal()
        }
        XCTAssertEqual(fileSystem.entered.wait(timeout: .now() + 10), .success, "the first commit reached its sync")

        // This realm's write starts from the commit still syncing, and sees it.
        try realm.beginWrite()
        XCTAssertNotNil(realm.object(ofType: User.self, forPrimaryKey: "lost"), "a write starts from every appended commit")
        realm.object(ofType: User.self, forPrimaryKey: "durable")!.rank = 7
        let secondError = Strata.Locked<(any Error)?>(nil)
        let second = UncheckedSendable(value: realm)
        // commitWrite waits for the (blocked) sync: let it go after the commit is waiting.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { fileSystem.release.signal() }
        do {
            try second.value.commitWrite()
        } catch {
            secondError.withLock { $0 = error }
        }
        XCTAssertEqual(firstDone.wait(timeout: .now() + 10), .success)
        XCTAssertNotNil(firstError.withLock { $0 }, "the first commit's sync failed")
        XCTAssertNotNil(secondError.withLock { $0 }, "the store stopped taking writes")

        // The realm is back on the last durable commit: neither write shows.
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "lost"))
        XCTAssertEqual(realm.object(ofType: User.self, forPrimaryKey: "durable")?.rank, 0)
        XCTAssertFalse(realm.refresh())
        XCTAssertNil(realm.object(ofType: User.self, forPrimaryKey: "lost"))
        XCTAssertThrowsError(try realm.write {})
    }
}
