// Issue 13, finding 12: a read-only open must not need write access to LOCK (read-only
// media, bundled stores, another user's store). It opens LOCK read-only and takes a shared
// flock; a missing LOCK that cannot be created means no writer can be coordinating there.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage
#if canImport(Glibc)
import Glibc
#endif

final class ReliabilityReadOnlyTests: XCTestCase {
    /// The file-system layer, checkable as root (where permissions are not enforced): a
    /// shared lock holds its LOCK open read-only; an exclusive one read-write.
    func testSharedLockOpensLockFileReadOnly() throws {
        let dir = TemporaryDirectory()
        let fs = PosixFileSystem()
        let path = dir.path + "/LOCK"
        let exclusive = try XCTUnwrap(try fs.lock(path, shared: false) as? PosixLock)
        XCTAssertEqual(fcntl(exclusive.fd, F_GETFL) & O_ACCMODE, O_RDWR)
        XCTAssertThrowsError(try fs.lock(path, shared: true)) { XCTAssertEqual($0 as? StoreError, .locked(path)) }
        exclusive.unlock()
        let shared = try XCTUnwrap(try fs.lock(path, shared: true) as? PosixLock)
        XCTAssertEqual(fcntl(shared.fd, F_GETFL) & O_ACCMODE, O_RDONLY)
        // Shared locks coexist; a writer is kept out while one is held.
        let second = try fs.lock(path, shared: true)
        XCTAssertThrowsError(try fs.lock(path, shared: false)) { XCTAssertEqual($0 as? StoreError, .locked(path)) }
        shared.unlock()
        second.unlock()
        try fs.lock(path, shared: false).unlock()
    }

    /// A LOCK that can be neither opened nor created for a reason other than permissions
    /// (here ENOTDIR: its "directory" is a regular file) is still an error naming the path.
    func testSharedLockReportsErrorsOtherThanPermissions() throws {
        let dir = TemporaryDirectory()
        let fs = PosixFileSystem()
        let file = dir.path + "/plain"
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        XCTAssertThrowsError(try fs.lock(file + "/LOCK", shared: true)) { error in
            guard case .io(_, _, let code) = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(code, ENOTDIR)
        }
    }

    /// End to end: a store directory 0555 with files 0444 opens read-only and reads, and the
    /// descriptor holding its LOCK was opened read-only. As root the open runs with the
    /// effective user dropped to `nobody`, so permissions are enforced; where even root may
    /// not change its effective user, the descriptor's access mode still shows the open asked
    /// for no write access.
    func testReadOnlyOpenOfAnUnwritableStore() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: dir.path) {
            XCTAssertEqual(chmod(dir.path + "/" + name, 0o444), 0)
        }
        XCTAssertEqual(chmod(dir.path, 0o555), 0)
        defer { _ = chmod(dir.path, 0o755) }
        // Keeps the saved user id 0, so the effective id can be restored.
        let dropped = geteuid() == 0 && seteuid(65534) == 0
        var restored = false
        func restore() { if dropped && !restored { _ = seteuid(0); restored = true } }
        defer { restore() }
        if dropped || geteuid() != 0 {
            // Permissions are enforced now: opening LOCK for writing is refused.
            let probe = open(dir.path + "/LOCK", O_RDWR)
            XCTAssertLessThan(probe, 0)
            if probe >= 0 { close(probe) }
        }
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directory: dir.url, options: options)
        XCTAssertEqual(try store.get(table: 1, key: bytes("k")), bytes("v"))
        // Back to our own user (a changed effective user may not read /proc/self/fd).
        restore()
        // Closed cleanly, the store is read as a follower: it holds READERS (reader presence,
        // never the writer's LOCK), through read-only descriptors.
        XCTAssertTrue(store.isFollowingAWriter)
        XCTAssertEqual(try lockAccessModes(dir.path + "/LOCK"), [], "a reader holds no LOCK")
        let readers = try lockAccessModes(dir.path + "/READERS")
        XCTAssertFalse(readers.isEmpty, "the reader holds READERS")
        XCTAssertEqual(readers.filter { $0 != O_RDONLY }, [], "the store holds READERS through read-only descriptors")
        try store.close()
    }

    /// The access modes (O_RDONLY, O_WRONLY, O_RDWR) of this process's descriptors open on `path`.
    private func lockAccessModes(_ path: String) throws -> [Int32] {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var modes: [Int32] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
                  link == target,
                  let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + name, encoding: .utf8),
                  let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                  let flags = Int32(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8) else { continue }
            modes.append(flags & O_ACCMODE)
        }
        return modes
    }
}
