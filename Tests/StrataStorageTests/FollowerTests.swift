// Read-only opens while another process writes: the writer (the crash helper, a real child
// process) commits KillWorkload transactions and reports each acknowledged one; this
// process opens the store read-only again and again meanwhile. Each open must see exactly
// the state of one durable commit — at least every commit acknowledged before it began —
// and never fail or fault, while the writer rolls, syncs and (second run) compacts,
// deleting the segments it retires.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage
@testable import strata_crash_helper

final class FollowerTests: XCTestCase {
    func testReadOnlyOpensFollowAWriterInAnotherProcess() throws {
        try follow(compacting: false)
    }

    func testReadOnlyOpensFollowAWriterThatCompacts() throws {
        try follow(compacting: true)
    }

    /// A writer that lets go of the store without having published its state (closing: it
    /// removes HEAD before LOCK; or one from before beacons): a read-only open waiting for
    /// the beacon opens the store as it lies instead of failing.
    func testAReadOnlyOpenWaitingForAWriterThatLeavesOpensTheStoreAsItLies() throws {
        let dir = TemporaryDirectory("follow-left")
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        let writerLock = try PosixFileSystem().lock(dir.path + "/LOCK", shared: false)   // holds, publishes nothing
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { writerLock.unlock() }
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directory: dir.url, options: options)
        XCTAssertFalse(store.isFollowingAWriter)
        XCTAssertEqual(try store.snapshot().get(table: 1, key: bytes("k")), bytes("v"))
        try store.close()
    }

    private func follow(compacting: Bool) throws {
        let dir = TemporaryDirectory("follow")
        let child = try ChildProcess(executable: KillTests.helperPath,
                                     arguments: [dir.path, "full", compacting ? "4096" : "16384"] + (compacting ? ["compact"] : []))
        guard let ready = child.output.nextLine(), ready.hasPrefix("ready") else {
            child.terminate()
            return XCTFail("helper did not start; is \(KillTests.helperPath) built?")
        }
        let acknowledged = Locked<UInt64>(0)
        nonisolated(unsafe) let output = child.output   // read by the drainer alone
        let drainer = Thread {
            while let line = output.nextLine() {
                if line.hasPrefix("ack "), let sequence = UInt64(line.dropFirst(4)) { acknowledged.withLock { $0 = max($0, sequence) } }
            }
        }
        drainer.start()
        var options = StoreOptions()
        options.readOnly = true
        var opens = 0, lastSeen: UInt64 = 0
        let deadline = Date().addingTimeInterval(2 * Double(TestEnvironment.fuzzScale))
        while Date() < deadline {
            let before = acknowledged.withLock { $0 }
            let store = try Store(directory: dir.url, options: options)
            XCTAssertTrue(store.isFollowingAWriter)
            let sequence = store.lastSequence
            XCTAssertGreaterThanOrEqual(sequence, before, "an acknowledged (durable) commit was not seen")
            assertSame(try contents(of: store.snapshot()), KillWorkload.model(upTo: sequence),
                       "open \(opens): the state is not exactly commit \(sequence)")
            try store.close()
            lastSeen = max(lastSeen, sequence)
            opens += 1
        }
        child.killAndWait()
        while !drainer.isFinished { usleep(1_000) }
        XCTAssertGreaterThan(opens, 5)
        XCTAssertGreaterThan(lastSeen, 0)
        // The writer gone, a read-only open reads the store as it lies (no beacon needed).
        let store = try Store(directory: dir.url, options: options)
        XCTAssertFalse(store.isFollowingAWriter)
        XCTAssertGreaterThanOrEqual(store.lastSequence, acknowledged.withLock { $0 })
        assertSame(try contents(of: store.snapshot()), KillWorkload.model(upTo: store.lastSequence), "after the writer died")
        try store.close()
        print("follower test\(compacting ? " with compaction" : ""): \(opens) read-only opens beside the writer, up to commit \(lastSeen)")
    }
}
