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

    func testAFollowerRefreshesAlongAWriterInAnotherProcess() throws {
        try refreshAlong(flags: [])
    }

    func testAFollowerRefreshesAlongAWriterThatCompacts() throws {
        try refreshAlong(flags: ["compact"])
    }

    func testAFollowerRefreshesAlongAWriterOfAnEncryptedStore() throws {
        try refreshAlong(flags: ["encrypted"])
    }

    /// Refreshing only now and then, the follower finds segments it had not read compacted
    /// away: it reads the store again beside the writer (changes unknown) and goes on.
    func testAFollowerThatLagsBehindACompactingWriterCatchesUp() throws {
        try refreshAlong(flags: ["compact"], pause: 0.05)
    }

    /// The watch thread wakes on each new writer's `HEAD` (a new file each time), not only
    /// the first one's: with polling pushed out to a minute, each writer's commit is still
    /// seen at once — three writers in turn, each opening, committing and closing.
    func testTheWatchFollowsEachNewWritersHead() throws {
        let dir = TemporaryDirectory("follow-watch-heads")
        try Store(directory: dir.url).close()
        var options = StoreOptions()
        options.readOnly = true
        let follower = try Store(directory: dir.url, options: options)
        defer { try? follower.close() }
        XCTAssertTrue(follower.isFollowingAWriter)
        let seen = Locked<UInt64>(0)
        follower.watchWriter(pollInterval: 60) { sequence in seen.withLock { $0 = max($0, sequence) } }
        for round in 1 ... 3 {
            let writer = try Store(directory: dir.url)
            let sequence = try writer.write { try $0.put(table: 1, key: bytes("k\(round)"), value: bytes("v")) }
            let deadline = Date().addingTimeInterval(5)
            while seen.withLock({ $0 }) < sequence, Date() < deadline { usleep(1_000) }
            XCTAssertGreaterThanOrEqual(seen.withLock { $0 }, sequence, "writer \(round)'s commit was not seen by the watch")
            try writer.close()
        }
    }

    /// A writer closes (removing HEAD) before its follower refreshed: the follower still reads
    /// its last commits, up to where the clean-shutdown marker says the log ends.
    func testAFollowerReadsTheLastCommitsOfAWriterThatClosed() throws {
        let dir = TemporaryDirectory("follow-closed")
        let writer = try Store(directory: dir.url)
        try writer.write { try $0.put(table: 1, key: bytes("k0"), value: bytes("v0")) }
        var options = StoreOptions()
        options.readOnly = true
        let follower = try Store(directory: dir.url, options: options)
        defer { try? follower.close() }
        XCTAssertTrue(follower.isFollowingAWriter)
        for n in 1 ... 5 { try writer.write { try $0.put(table: 1, key: bytes("k\(n)"), value: bytes("v\(n)")) } }
        let last = writer.lastSequence
        try writer.close()
        XCTAssertTrue(try follower.refresh(), "the closed writer's last commits were read")
        XCTAssertEqual(follower.lastSequence, last)
        XCTAssertEqual(try follower.snapshot().get(table: 1, key: bytes("k5")), bytes("v5"))
        XCTAssertFalse(try follower.refresh())
    }

    /// A `HEAD` that publishes an end past the segment file's (damage with a valid checksum,
    /// or a file cut short) is an error that names the segment and where it ends — never a
    /// read past the end of the follower's mapping, which would be SIGBUS — and the
    /// follower keeps the state it had.
    func testAPublishedEndPastTheFileIsCorruptedNotARead() throws {
        let dir = TemporaryDirectory("follow-past-end")
        let writer = try Store(directory: dir.url)
        defer { try? writer.close() }
        try writer.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
        var options = StoreOptions()
        options.readOnly = true
        let follower = try Store(directory: dir.url, options: options)
        defer { try? follower.close() }
        let published = try XCTUnwrap(Beacon.read(path: dir.path, fileSystem: PosixFileSystem()))
        let forged = Beacon.State(segment: published.segment, end: published.end + (4 << 20), sequence: published.sequence + 1)
        try Data(Beacon.encode(forged)).write(to: dir.url.appendingPathComponent(Beacon.fileName))
        XCTAssertThrowsError(try follower.refresh()) { error in
            guard case StoreError.corrupted(let segment, _, let reason) = error, segment == segmentName(published.segment),
                  reason.contains("shorter than") else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(follower.lastSequence, published.sequence)
        XCTAssertEqual(try follower.snapshot().get(table: 1, key: bytes("k")), bytes("v"))
    }

    /// A follower outlives its writer: the writer is SIGKILLed mid-write and a new writer
    /// process opens the store (recovering the torn tail after the last durable commit) and
    /// goes on. The follower, refreshed all along, holds exactly the state of one commit
    /// after each refresh, never goes back, and reads on past the new writer's commits.
    func testAFollowerOutlivesAWriterKilledAndRestarted() throws {
        let dir = TemporaryDirectory("follow-restart")
        var writer = try WriterProcess(dir, ["full", "4096"])
        while writer.acknowledged.withLock({ $0 }) < 3 { usleep(1_000) }
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directory: dir.url, options: options)
        defer { try? store.close() }
        XCTAssertTrue(store.isFollowingAWriter)
        var seen = store.lastSequence, refreshes = 0
        func follow(for seconds: Double, writer acknowledged: Locked<UInt64>?) throws {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                let before = acknowledged?.withLock { $0 } ?? 0
                try store.refresh()
                refreshes += 1
                let sequence = store.lastSequence
                XCTAssertGreaterThanOrEqual(sequence, seen, "refresh \(refreshes) went back")
                XCTAssertGreaterThanOrEqual(sequence, before, "refresh \(refreshes): an acknowledged commit was not read")
                if sequence != seen {
                    assertSame(try contents(of: store.snapshot()), KillWorkload.model(upTo: sequence), "refresh \(refreshes): not exactly commit \(sequence)")
                    seen = sequence
                }
                usleep(2_000)
            }
        }
        try follow(for: 0.5, writer: writer.acknowledged)
        writer.stop()
        let beforeRestart = seen
        try follow(for: 0.1, writer: nil)   // the writer is gone: its last published state stays
        writer = try WriterProcess(dir, ["full", "4096"])
        defer { writer.stop() }
        try follow(for: 0.5 * Double(TestEnvironment.fuzzScale), writer: writer.acknowledged)
        XCTAssertGreaterThan(seen, beforeRestart, "the follower read the new writer's commits")
        print("follower across a writer's SIGKILL and restart: \(refreshes) refreshes, commit \(beforeRestart) at the kill, \(seen) at the end")
    }

    /// The segments a compaction retires while a follower in another process maps them are
    /// kept whole (a truncation would fault its reads: SIGBUS), and deleted a few megabytes at
    /// a time once it let go of them (its refresh reopens at the state it read). The
    /// follower holds a reader lock on every file it maps (`mapHoldingReaderLock`); the
    /// writer looks for those locks before it truncates.
    func testSegmentsAFollowerMapsAreKeptWholeThenDeletedStepwise() throws {
        try retiredSegmentsKeptWhole(killingTheFollower: false)
    }

    /// As above, the follower killed (SIGKILL) while it holds its bytes of the reader table:
    /// its slots go with its process, so it never pins a retired segment.
    func testAFollowerKilledHoldingItsSlotsPinsNothing() throws {
        try retiredSegmentsKeptWhole(killingTheFollower: true)
    }

    private func retiredSegmentsKeptWhole(killingTheFollower: Bool) throws {
        let dir = TemporaryDirectory("follow-retire")
        let fs = RecordingFileSystem()
        var options = StoreOptions()
        options.segmentSize = 3 * Store.deletionStep
        options.durability = .none
        options.autoCompaction = .disabled
        options.fileSystem = fs
        let writer = try Store(directory: dir.url, options: options)
        func value(_ n: Int) -> [UInt8] { [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: 256 << 10) }
        for round in 0 ..< 2 {
            for n in 0 ..< 60 { try writer.write { try $0.put(table: 1, key: bytes("k\(n)"), value: value(round * 100 + n)) } }
        }
        let child = try ChildProcess(executable: KillTests.helperPath, arguments: [dir.path, "follow"])
        defer { child.killAndWait() }
        XCTAssertEqual(child.output.nextLine(), "at \(writer.lastSequence) following")
        try writer.compact()
        writer.reclaimDoomedFiles()
        let retired = try fs.listDirectory(dir.path).filter { $0.contains(".seg.retired-") }
        XCTAssertFalse(retired.isEmpty, "the segments the follower maps wait to be deleted")
        XCTAssertFalse(retiredTruncations(fs.operations), "nothing the follower maps is truncated")
        if killingTheFollower {
            child.killAndWait()
        } else {
            child.send("refresh")
            XCTAssertEqual(child.output.nextLine(), "at \(writer.lastSequence)")
        }
        // Let go of (the reopen's own checks of its index image release the rest within ms).
        var left = retired
        for _ in 0 ..< 200 where !left.isEmpty {
            writer.reclaimDoomedFiles()
            left = try fs.listDirectory(dir.path).filter { $0.contains(".seg.retired-") }
            if !left.isEmpty { usleep(10_000) }
        }
        XCTAssertEqual(left, [], "the retired segments are deleted once the follower let go")
        var inodes: [String: Int] = [:], truncations: [Int: [Int]] = [:], removed = 0
        for operation in fs.operations {
            switch operation {
            case .create(let path, let inode): inodes[path] = inode
            case .rename(let from, let to):
                inodes[to] = inodes.removeValue(forKey: from)
                if to.contains(".seg.retired-"), let inode = inodes[to] { truncations[inode] = [] }
            case .truncate(let inode, let length): truncations[inode]?.append(length)
            case .remove(let path) where path.contains(".seg.retired-"):
                let lengths = try XCTUnwrap(inodes[path].flatMap { truncations[$0] }, path)
                XCTAssertEqual(lengths.last, 0, "\(path) was truncated step by step before it went: \(lengths)")
                XCTAssertTrue(zip(lengths, lengths.dropFirst()).allSatisfy { $0 - $1 <= Store.deletionStep }, "\(path): \(lengths)")
                removed += 1
            default: break
            }
        }
        XCTAssertEqual(removed, retired.count)
        if !killingTheFollower { child.send("quit") }
        try writer.close()
    }

    /// Whether `operations` truncate a file after it was renamed aside to be deleted.
    private func retiredTruncations(_ operations: [FileOperation]) -> Bool {
        var retired: Set<Int> = [], inodes: [String: Int] = [:]
        for operation in operations {
            switch operation {
            case .create(let path, let inode): inodes[path] = inode
            case .rename(let from, let to):
                inodes[to] = inodes.removeValue(forKey: from)
                if to.contains(".seg.retired-"), let inode = inodes[to] { retired.insert(inode) }
            case .truncate(let inode, _) where retired.contains(inode): return true
            default: break
            }
        }
        return false
    }

    /// A writer that lets go of the store without having published its state or left a
    /// clean marker (one from before beacons, or one that died opening): a read-only open
    /// waiting for the beacon opens the store as it lies instead of failing. (With a clean
    /// marker it follows from the state the marker records, at once.)
    func testAReadOnlyOpenWaitingForAWriterThatLeavesOpensTheStoreAsItLies() throws {
        let dir = TemporaryDirectory("follow-left")
        do {
            let store = try Store(directory: dir.url)
            try store.write { try $0.put(table: 1, key: bytes("k"), value: bytes("v")) }
            try store.close()
        }
        try FileManager.default.removeItem(atPath: dir.path + "/CLEAN")
        let writerLock = try PosixFileSystem().lock(dir.path + "/LOCK", shared: false)   // holds, publishes nothing
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { writerLock.unlock() }
        var options = StoreOptions()
        options.readOnly = true
        let store = try Store(directory: dir.url, options: options)
        XCTAssertFalse(store.isFollowingAWriter)
        XCTAssertEqual(try store.snapshot().get(table: 1, key: bytes("k")), bytes("v"))
        try store.close()
    }

    /// One read-only store opened beside the writer, refreshed again and again: after each
    /// refresh it holds exactly the state of one durable commit, at least every commit
    /// acknowledged before the refresh began; each commit read is handed to the commit
    /// observer with its changes, which, applied in turn, give the same state; a snapshot
    /// taken before keeps its view. The writer rolls small segments (and compacts, or
    /// encrypts) meanwhile.
    private func refreshAlong(flags: [String], pause: TimeInterval = 0) throws {
        let dir = TemporaryDirectory("follow-refresh")
        let writer = try WriterProcess(dir, ["full", "4096"] + flags)
        defer { writer.stop() }
        let acknowledged = writer.acknowledged
        while acknowledged.withLock({ $0 }) < 3 { usleep(1_000) }
        var options = StoreOptions()
        options.readOnly = true
        if flags.contains("encrypted") { options.encryptionKey = KillWorkload.encryptionKey }
        let store = try Store(directory: dir.url, options: options)
        defer { try? store.close() }
        XCTAssertTrue(store.isFollowingAWriter)
        let notes = Locked<[(sequence: UInt64, commit: TailedCommit?)]>([])
        store.observeCommits { sequence, note in notes.withLock { $0.append((sequence, note as? TailedCommit)) } }
        let first = store.snapshot()
        let firstContents = try contents(of: first)
        var seen = store.lastSequence
        var model = KillWorkload.model(upTo: seen)
        var noted = model
        assertSame(firstContents, model, "the first open")
        var refreshes = 0, advances = 0, unknown = 0
        let deadline = Date().addingTimeInterval(2 * Double(TestEnvironment.fuzzScale))
        while Date() < deadline {
            if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            let before = acknowledged.withLock { $0 }
            let moved = try store.refresh()
            refreshes += 1
            let sequence = store.lastSequence
            XCTAssertGreaterThanOrEqual(sequence, before, "refresh \(refreshes): an acknowledged (durable) commit was not read")
            XCTAssertEqual(moved, sequence > seen, "refresh \(refreshes) said \(moved) going from \(seen) to \(sequence)")
            guard sequence > seen else { continue }
            advances += 1
            for s in seen + 1 ... sequence {
                for (table, key, value) in KillWorkload.operations(of: s) {
                    if let value { model[table, default: [:]][key] = value } else { model[table]?[key] = nil }
                }
            }
            model = model.filter { !$0.value.isEmpty }
            assertSame(try contents(of: store.snapshot()), model, "refresh \(refreshes): the state is not exactly commit \(sequence)")
            let taken: [(sequence: UInt64, commit: TailedCommit?)] = notes.withLock { notes in
                defer { notes.removeAll() }
                return notes
            }
            for (noteSequence, commit) in taken {
                guard let commit else {
                    unknown += 1
                    noted = KillWorkload.model(upTo: noteSequence)
                    continue
                }
                for change in commit.changes {
                    let had: [UInt8]? = noted[change.table]?[change.key]
                    XCTAssertEqual(change.existed, had != nil, "commit \(noteSequence): existed")
                    let old: [UInt8]? = change.old.map { $0.withUnsafeBytes { Array($0) } }
                    XCTAssertEqual(old, had, "commit \(noteSequence): the old value")
                    if change.isDelete {
                        noted[change.table]?[change.key] = nil
                    } else {
                        let new: [UInt8]? = change.new.map { $0.withUnsafeBytes { Array($0) } }
                        noted[change.table, default: [:]][change.key] = new
                    }
                }
                noted = noted.filter { !$0.value.isEmpty }
            }
            assertSame(noted, model, "refresh \(refreshes): the commits handed to the observer do not add up to commit \(sequence)")
            seen = sequence
        }
        assertSame(try contents(of: first), firstContents, "a snapshot taken before the refreshes")
        XCTAssertGreaterThan(advances, 5)
        if pause > 0 { XCTAssertGreaterThan(unknown, 0, "the follower never had to read the store again") }
        print("follower refreshes\(flags.isEmpty ? "" : " (" + flags.joined(separator: ", ") + ")"): \(refreshes) refreshes, \(advances) advanced, up to commit \(seen), \(unknown) reopened")
    }

    private func follow(compacting: Bool) throws {
        let dir = TemporaryDirectory("follow")
        let writer = try WriterProcess(dir, ["full", compacting ? "4096" : "16384"] + (compacting ? ["compact"] : []))
        let acknowledged = writer.acknowledged
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
        writer.stop()
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
