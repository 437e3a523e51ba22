// Issue 13, finding 15: files the store creates are private by default (0600, directories
// 0700, in-memory realms included), `StoreOptions.fileMode` sets another mode, and `.tmp`
// files are always created anew (O_EXCL | O_NOFOLLOW after removing whatever was there), so
// a symlink planted at a temporary name never truncates or overwrites its target.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage
#if canImport(Glibc)
import Glibc
#endif

final class ReliabilityFileModeTests: XCTestCase {
    private func mode(_ path: String) -> UInt32 {
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0, path)
        return UInt32(info.st_mode) & 0o7777
    }

    /// Runs `body` with the usual umask (022), so modes are the store's choice, not the test runner's.
    private func withUmask022(_ body: () throws -> Void) rethrows {
        let saved = umask(0o022)
        defer { umask(saved) }
        try body()
    }

    /// A store with sealed segments, hints and a CLEAN marker in `path`.
    private func populate(_ path: String, options: StoreOptions) throws {
        var options = options
        options.segmentSize = 4096
        options.durability = .none
        let store = try Store(directory: URL(fileURLWithPath: path), options: options)
        for i in 0 ..< 6 {
            try store.write { try $0.put(table: 1, key: key(i), value: value(UInt64(i), length: 1500)) }
        }
        try store.close()
    }

    func testCreatedFilesAndDirectoriesArePrivateByDefault() throws {
        let dir = TemporaryDirectory()
        try withUmask022 {
            let path = dir.path + "/parent/store"
            try populate(path, options: StoreOptions())
            XCTAssertEqual(mode(dir.path + "/parent"), 0o700)
            XCTAssertEqual(mode(path), 0o700)
            let names = try FileManager.default.contentsOfDirectory(atPath: path)
            XCTAssertTrue(names.contains("LOCK") && names.contains("CLEAN") && names.contains { $0.hasSuffix(".hint") }, "\(names)")
            for name in names { XCTAssertEqual(mode(path + "/" + name), 0o600, name) }
        }
    }

    func testFileModeOptionSetsFilesAndDirectories() throws {
        let dir = TemporaryDirectory()
        try withUmask022 {
            var options = StoreOptions()
            options.fileMode = 0o640
            let path = dir.path + "/shared-store"
            try populate(path, options: options)
            XCTAssertEqual(mode(path), 0o750)
            for name in try FileManager.default.contentsOfDirectory(atPath: path) { XCTAssertEqual(mode(path + "/" + name), 0o640, name) }
        }
        for bad: UInt16 in [0o200, 0o400, 0o1600, 0o4644, 0] {
            var options = StoreOptions()
            options.fileMode = bad
            XCTAssertThrowsError(try Store(directory: URL(fileURLWithPath: dir.path + "/bad"), options: options)) { error in
                guard case .invalidArgument(let message) = error as? StoreError else { return XCTFail("\(error)") }
                XCTAssertTrue(message.hasPrefix("fileMode must give the owner read and write"), message)
            }
        }
    }

    /// A symlink planted at a temporary name (by another local user, between two of the
    /// store's steps) must not redirect the write: the target keeps its bytes and mode.
    func testTemporaryFilesNeverFollowAPlantedSymlink() throws {
        let dir = TemporaryDirectory()
        let store = dir.sub("store")
        let victim = dir.path + "/victim"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        XCTAssertEqual(chmod(victim, 0o644), 0)
        // Through the atomic-write path the hint files and the CLEAN marker use.
        XCTAssertEqual(symlink(victim, store + "/00000001.hint.tmp"), 0)
        try Store.writeFileAtomically(directory: store, name: "00000001.hint", bytes: Array("hint".utf8), fileSystem: PosixFileSystem())
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "precious")
        XCTAssertEqual(try String(contentsOfFile: store + "/00000001.hint", encoding: .utf8), "hint")
        XCTAssertEqual(mode(store + "/00000001.hint") & 0o777, 0o600)
        // Through a plain create, as compaction opens its output segment.
        XCTAssertEqual(symlink(victim, store + "/00000009.seg.tmp"), 0)
        let file = try PosixFileSystem().openFile(store + "/00000009.seg.tmp", create: true, readOnly: false)
        try file.truncate(to: 0)
        try file.write(Array("segment".utf8), at: 0)
        file.close()
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "precious")
        XCTAssertEqual(mode(victim), 0o644)
        var info = stat()
        XCTAssertEqual(lstat(store + "/00000009.seg.tmp", &info), 0)
        XCTAssertEqual(UInt32(info.st_mode) & UInt32(S_IFMT), UInt32(S_IFREG), "a regular file replaced the symlink")
    }

    /// A symlink planted as LOCK: the open is refused (it created the symlink's target, or
    /// locked another file, before), for writers and read-only opens alike.
    func testAPlantedLockSymlinkIsRefused() throws {
        let dir = TemporaryDirectory()
        let store = dir.sub("store")
        let victim = dir.path + "/victim"
        XCTAssertEqual(symlink(victim, store + "/LOCK"), 0)
        for readOnly in [false, true] {
            var options = StoreOptions()
            options.readOnly = readOnly
            XCTAssertThrowsError(try Store(directory: URL(fileURLWithPath: store), options: options)) { error in
                XCTAssertTrue("\(error)".contains("LOCK"), "\(error)")
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: victim), "the symlink's target was created")
        }
    }
}
