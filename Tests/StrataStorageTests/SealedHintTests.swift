// The hint of a sealed segment is derived data: written off the commit path. A commit that
// rolls the segment hands the recorded entries to a background writer and returns; the
// hint reaches disk before close, and open uses it. (Issue 25: the commit that sealed a
// segment used to encode, and sometimes scan, the whole segment and write its hint under
// the write gate: up to 0.8 s for one one-row commit after a 1M-object load.)

import XCTest
import Foundation
import StrataTestSupport
@testable import StrataStorage

/// The POSIX file layer, except that creating a hint's temporary file waits (up to 20 s)
/// until the test releases it, and says whether that wait was released or ran out.
private final class HeldHintFileSystem: FileSystem, @unchecked Sendable {
    let real = PosixFileSystem()
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let outcome = Locked<String?>(nil)

    func createDirectory(_ path: String) throws -> [String] { try real.createDirectory(path) }
    func listDirectory(_ path: String) throws -> [String] { try real.listDirectory(path) }
    func fileExists(_ path: String) -> Bool { real.fileExists(path) }
    func openFile(_ path: String, create: Bool, readOnly: Bool) throws -> any StorageFile {
        if create, path.hasSuffix(".hint.tmp"), outcome.withLock({ $0 == nil }) {
            entered.signal()
            let released = release.wait(timeout: .now() + 20) == .success
            outcome.withLock { $0 = released ? "released" : "timed out" }
        }
        return try real.openFile(path, create: create, readOnly: readOnly)
    }
    func remove(_ path: String) throws { try real.remove(path) }
    func rename(_ from: String, to: String) throws { try real.rename(from, to: to) }
    func syncDirectory(_ path: String) throws { try real.syncDirectory(path) }
    func lock(_ path: String, shared: Bool) throws -> any FileLock { try real.lock(path, shared: shared) }
}

final class SealedHintTests: XCTestCase {
    /// A store dropped without `close()` while its hint is being written: the job must not
    /// hold the store (it did, briefly, and then ran the store's deinit on the hint queue,
    /// whose close waited for that same queue: a trap or a hang), and the store's files and
    /// lock must be let go once the hint is done.
    func testAStoreDroppedWhileItsHintIsWrittenClosesCleanly() throws {
        let dir = TemporaryDirectory("sealed-hint-drop")
        let fileSystem = HeldHintFileSystem()
        var small = options(segmentSize: 16 << 10, fileSystem: fileSystem)
        small.autoCompaction = .disabled
        var store: Store? = try Store(directory: dir.url, options: small)
        let value = [UInt8](repeating: 0x3C, count: 300)
        var committed = 0
        while fileSystem.entered.wait(timeout: .now()) != .success {
            try store!.write { try $0.put(table: 1, key: bytes("key-\(committed)"), value: value) }
            committed += 1
            if committed >= 1_000 { return XCTFail("no commit sealed a segment") }
        }
        // Released from another thread in a moment: dropping the store may wait for the hint.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { fileSystem.release.signal() }
        store = nil
        XCTAssertEqual(fileSystem.outcome.withLock { $0 }, "released", "the drop returned before the hint was written")
        let reopened = try Store(directory: dir.url)
        for i in 0 ..< committed { XCTAssertEqual(try reopened.get(table: 1, key: bytes("key-\(i)")), value) }
        XCTAssertTrue(try reopened.verify().isClean)
        try reopened.close()
    }

    func testACommitThatSealsASegmentDoesNotWaitForItsHint() throws {
        let dir = TemporaryDirectory("sealed-hint")
        let fileSystem = HeldHintFileSystem()
        var small = options(segmentSize: 16 << 10, fileSystem: fileSystem)
        small.autoCompaction = .disabled
        let store = try Store(directory: dir.url, options: small)
        let value = [UInt8](repeating: 0x3C, count: 300)
        // Commits until one rolls the segment: its hint write is then held.
        var committed = 0
        while fileSystem.entered.wait(timeout: .now()) != .success {
            try store.write { try $0.put(table: 1, key: bytes("key-\(committed)"), value: value) }
            committed += 1
            XCTAssertLessThan(committed, 1_000, "no commit sealed a segment")
            if committed >= 1_000 { return }
        }
        // The commit that sealed it has returned while its hint is still held, and the
        // store goes on taking commits and serving reads.
        XCTAssertNil(fileSystem.outcome.withLock { $0 }, "the sealing commit waited for its hint to be written")
        try store.write { try $0.put(table: 1, key: bytes("after"), value: value) }
        XCTAssertEqual(try store.get(table: 1, key: bytes("key-0")), value)
        fileSystem.release.signal()
        try store.close()
        XCTAssertEqual(fileSystem.outcome.withLock { $0 }, "released")
        // Close waited for the hint: it is on disk, and the reopened store reads everything.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertTrue(names.contains { $0.hasSuffix(".hint") }, "\(names)")
        let reopened = try Store(directory: dir.url)
        for i in 0 ..< committed { XCTAssertEqual(try reopened.get(table: 1, key: bytes("key-\(i)")), value) }
        XCTAssertEqual(try reopened.get(table: 1, key: bytes("after")), value)
        XCTAssertTrue(try reopened.verify().isClean)
        try reopened.close()
    }
}
