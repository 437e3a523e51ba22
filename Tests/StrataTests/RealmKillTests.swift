// A realm write is all-or-nothing across SIGKILL: a child process performs transfers
// between accounts; the parent kills it at random moments, reopens, and checks that the
// balances still sum to the opening total, match exactly the recorded number of writes,
// include every acknowledged write, and that the secondary index agrees with a scan.

import Foundation
import XCTest
import StrataTestSupport
@testable import Strata
@testable import strata_realm_crash_helper

final class RealmKillTests: XCTestCase {
    static let helperPath = ChildProcess.executablePath(named: "strata-realm-crash-helper")

    func testRealmWriteIsAllOrNothingAcrossSIGKILL() throws {
        let directory = TemporaryDirectory("strata-realm-kill", create: false)
        let scale = TestEnvironment.fuzzScale
        var generator = SplitMix64(seed: TestEnvironment.seed(default: 99))
        var config = Realm.Configuration(directory: directory.url)
        config.objectTypes = RealmWorkload.types
        config.storeOptions.segmentSize = 32 << 10
        var last = 0
        for round in 0 ..< 12 * scale {
            let child = try ChildProcess(executable: Self.helperPath, arguments: [directory.path])
            let reader = child.output
            guard let ready = reader.nextLine(), ready.hasPrefix("ready") else {
                child.terminate()
                return XCTFail("helper did not start (round \(round)); is \(Self.helperPath) built?")
            }
            usleep(UInt32.random(in: 5_000 ... 60_000, using: &generator))
            child.killAndWait()
            var acknowledged = 0
            while let line = reader.nextLine() {
                if line.hasPrefix("ack "), let n = Int(line.dropFirst(4)) { acknowledged = max(acknowledged, n) }
            }
            let realm = try Realm(configuration: config)
            let count = realm.object(ofType: Ledger.self, forPrimaryKey: 0)?.count ?? 0
            XCTAssertGreaterThanOrEqual(count, acknowledged, "round \(round): an acknowledged write was lost")
            XCTAssertGreaterThanOrEqual(count, last, "round \(round): the store went back in time")
            last = count
            let accounts = realm.objects(Account.self)
            if count > 0 || accounts.count > 0 {
                XCTAssertEqual(accounts.map(\.balance), RealmWorkload.balances(after: count), "round \(round): balances are not exactly write \(count)")
            }
            let transfers = realm.objects(Transfer.self)
            XCTAssertEqual(transfers.count, count, "round \(round)")
            XCTAssertEqual(realm.objects(Transfer.self).filter(#Predicate { $0.parity == 1 }).count, (count + 1) / 2, "round \(round): index")
            realm.invalidate()
        }
        print("realm kill test: \(12 * scale) SIGKILL rounds, \(last) writes at the end")
    }

    /// A read-only realm opened while another process writes (a service beside the studio or
    /// a helper process): each open reads exactly one durable write's state, at least every
    /// write acknowledged before it began, and refuses to write.
    func testReadOnlyRealmsReadBesideAWriterInAnotherProcess() throws {
        let directory = TemporaryDirectory("strata-realm-follow", create: false)
        let child = try ChildProcess(executable: Self.helperPath, arguments: [directory.path])
        guard let ready = child.output.nextLine(), ready.hasPrefix("ready") else {
            child.terminate()
            return XCTFail("helper did not start; is \(Self.helperPath) built?")
        }
        let acknowledged = Locked(0)
        nonisolated(unsafe) let output = child.output   // read by the drainer alone
        let drainer = Thread {
            while let line = output.nextLine() {
                if line.hasPrefix("ack "), let n = Int(line.dropFirst(4)) { acknowledged.withLock { $0 = max($0, n) } }
            }
        }
        drainer.start()
        defer {
            child.killAndWait()
            while !drainer.isFinished { usleep(1_000) }
        }
        var config = Realm.Configuration(directory: directory.url)
        config.objectTypes = RealmWorkload.types
        config.readOnly = true
        var opens = 0
        let deadline = Date().addingTimeInterval(1.5)
        while Date() < deadline {
            let before = acknowledged.withLock { $0 }
            let realm = try Realm(configuration: config)
            let count = realm.object(ofType: Ledger.self, forPrimaryKey: 0)?.count ?? 0
            XCTAssertGreaterThanOrEqual(count, before, "open \(opens): an acknowledged write was not seen")
            XCTAssertEqual(realm.objects(Transfer.self).count, count, "open \(opens)")
            if count > 0 {
                XCTAssertEqual(realm.objects(Account.self).map(\.balance), RealmWorkload.balances(after: count), "open \(opens)")
            }
            XCTAssertThrowsError(try realm.write { try realm.delete(realm.objects(Transfer.self)) }, "open \(opens): a read-only realm wrote")
            realm.invalidate()
            opens += 1
        }
        XCTAssertGreaterThan(opens, 3)
    }
    /// A read-only realm on a queue, opened once beside the realm helper writing in another
    /// process, advances by itself as the writer's commits become durable, and its observers
    /// hear exactly what changed: one inserted transfer a write, the accounts each write
    /// moved money between as modifications, the balances of the write the ledger names. A
    /// thread's read-only realm advances on `refresh()`.
    func testAReadOnlyRealmAdvancesAndNotifiesBesideAWriterInAnotherProcess() throws {
        let directory = TemporaryDirectory("strata-realm-tail", create: false)
        let child = try ChildProcess(executable: Self.helperPath, arguments: [directory.path])
        guard let ready = child.output.nextLine(), ready.hasPrefix("ready") else {
            child.terminate()
            return XCTFail("helper did not start; is \(Self.helperPath) built?")
        }
        let acknowledged = Locked(0)
        nonisolated(unsafe) let output = child.output   // read by the drainer alone
        let drainer = Thread {
            while let line = output.nextLine() {
                if line.hasPrefix("ack "), let n = Int(line.dropFirst(4)) { acknowledged.withLock { $0 = max($0, n) } }
            }
        }
        drainer.start()
        defer {
            child.killAndWait()
            while !drainer.isFinished { usleep(1_000) }
        }
        while acknowledged.withLock({ $0 }) < 2 { usleep(1_000) }
        var config = Realm.Configuration(directory: directory.url)
        config.objectTypes = RealmWorkload.types
        config.readOnly = true

        struct Seen { var transferUpdates = 0, accountUpdates = 0, newest = 0; var problems: [String] = [] }
        let seen = Locked(Seen())
        let queue = DispatchQueue(label: "follower realm")
        nonisolated(unsafe) var tokens: [NotificationToken] = []
        nonisolated(unsafe) var follower: Realm?
        try queue.sync {
            let realm = try Realm(configuration: config, queue: queue)
            follower = realm
            XCTAssertTrue(realm.store.isFollowingAWriter)
            let start = realm.object(ofType: Ledger.self, forPrimaryKey: 0)?.count ?? 0
            var transfersAt = start, accountsAt = start
            tokens.append(realm.objects(Transfer.self).observe { change in
                guard case .update(let results, let deletions, let insertions, let modifications) = change else { return }
                let n = results.realm!.object(ofType: Ledger.self, forPrimaryKey: 0)!.count
                var problems: [String] = []
                if results.count != n { problems.append("\(results.count) transfers at write \(n)") }
                if !deletions.isEmpty || !modifications.isEmpty { problems.append("transfers deleted or modified at write \(n)") }
                if insertions.count != n - transfersAt { problems.append("\(insertions.count) transfers inserted from write \(transfersAt) to \(n)") }
                transfersAt = n
                seen.withLock { $0.transferUpdates += 1; $0.newest = n; $0.problems += problems }
            })
            tokens.append(realm.objects(Account.self).sorted(byKeyPath: "id").observe { change in
                guard case .update(let results, let deletions, let insertions, let modifications) = change else { return }
                let n = results.realm!.object(ofType: Ledger.self, forPrimaryKey: 0)!.count
                var problems: [String] = []
                let moved = Set((accountsAt + 1 ..< n + 1).flatMap { write -> [Int] in
                    let transfer = RealmWorkload.transfer(write)
                    return transfer.from == transfer.to ? [] : [transfer.from, transfer.to]
                })
                if Set(modifications) != moved { problems.append("accounts modified \(modifications.sorted()) from write \(accountsAt) to \(n), not \(moved.sorted())") }
                if !deletions.isEmpty || !insertions.isEmpty { problems.append("accounts inserted or deleted at write \(n)") }
                if Array(results.map(\.balance)) != RealmWorkload.balances(after: n) { problems.append("balances at write \(n)") }
                accountsAt = n
                seen.withLock { $0.accountUpdates += 1; $0.problems += problems }
            })
        }
        let deadline = Date().addingTimeInterval(5 * Double(TestEnvironment.fuzzScale))
        while Date() < deadline, seen.withLock({ min($0.transferUpdates, $0.accountUpdates) }) < 20 { usleep(5_000) }
        let before = acknowledged.withLock { $0 }
        let caughtUp = Date().addingTimeInterval(5)
        while Date() < caughtUp, seen.withLock({ $0.newest }) < before { usleep(1_000) }
        queue.sync {
            tokens.removeAll()
            XCTAssertNotNil(follower)
            follower = nil
        }
        let result = seen.withLock { $0 }
        XCTAssertEqual(result.problems, [])
        XCTAssertGreaterThanOrEqual(result.transferUpdates, 20, "the queue's realm did not advance by itself")
        XCTAssertGreaterThanOrEqual(result.newest, before, "the queue's realm never reached an acknowledged write")

        // A thread's realm: as of its open until `refresh()`.
        let realm = try Realm(configuration: config)
        let opened = realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count
        let target = acknowledged.withLock { $0 } + 3
        while acknowledged.withLock({ $0 }) < target { usleep(1_000) }
        XCTAssertEqual(realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count, opened)
        XCTAssertTrue(realm.refresh())
        XCTAssertGreaterThanOrEqual(realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count, target)
        realm.invalidate()
    }
    /// Issue 27, item 3: two processes write one realm in turns
    /// (`storeOptions.multiProcessWriting`): the helper and this test each perform the
    /// workload's next write, numbered from the ledger read inside the write. No write is
    /// lost or done twice (each number acknowledged by one process), the balances are always
    /// exactly some write's, and a queue's realm here is notified of both processes' writes
    /// with exact change sets. The helper is then killed mid-run; this process writes on.
    func testTwoProcessesWriteOneRealmInTurns() throws {
        let directory = TemporaryDirectory("strata-realm-turns", create: false)
        let child = try ChildProcess(executable: Self.helperPath, arguments: [directory.path, "turns"])
        guard let ready = child.output.nextLine(), ready.hasPrefix("ready") else {
            child.terminate()
            return XCTFail("helper did not start; is \(Self.helperPath) built?")
        }
        let acknowledged = Locked<[Int]>([])
        nonisolated(unsafe) let output = child.output   // read by the drainer alone
        let drainer = Thread {
            while let line = output.nextLine() {
                if line.hasPrefix("ack "), let n = Int(line.dropFirst(4)) { acknowledged.withLock { $0.append(n) } }
            }
        }
        drainer.start()
        var config = Realm.Configuration(directory: directory.url)
        config.objectTypes = RealmWorkload.types
        config.storeOptions.segmentSize = 32 << 10
        config.storeOptions.multiProcessWriting = true
        config.storeOptions.lockWaitTimeout = 30

        struct Seen { var updates = 0, newest = 0; var problems: [String] = [] }
        let seen = Locked(Seen())
        let queue = DispatchQueue(label: "observing realm")
        nonisolated(unsafe) var token: NotificationToken?
        nonisolated(unsafe) var observer: Realm?
        try queue.sync {
            let realm = try Realm(configuration: config, queue: queue)
            observer = realm
            var at = realm.object(ofType: Ledger.self, forPrimaryKey: 0)?.count ?? 0
            token = realm.objects(Account.self).sorted(byKeyPath: "id").observe { change in
                guard case .update(let results, _, _, let modifications) = change else { return }
                let n = results.realm!.object(ofType: Ledger.self, forPrimaryKey: 0)!.count
                var problems: [String] = []
                let moved = Set((at + 1 ..< n + 1).flatMap { write -> [Int] in
                    let transfer = RealmWorkload.transfer(write)
                    return transfer.from == transfer.to ? [] : [transfer.from, transfer.to]
                })
                if Set(modifications) != moved { problems.append("accounts modified \(modifications.sorted()) from write \(at) to \(n), not \(moved.sorted())") }
                if Array(results.map(\.balance)) != RealmWorkload.balances(after: n) { problems.append("balances at write \(n)") }
                at = n
                seen.withLock { $0.updates += 1; $0.newest = n; $0.problems += problems }
            }
        }
        let realm = try Realm(configuration: config)
        var mine: [Int] = []
        func writeNext() throws {
            var n = 0
            try realm.write {
                n = realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count + 1
                try RealmWorkload.apply(n, in: realm)
            }
            mine.append(n)
        }
        let deadline = Date().addingTimeInterval(1.5 * Double(TestEnvironment.fuzzScale))
        let giveUp = deadline.addingTimeInterval(30)
        while Date() < deadline || mine.count < 10 || acknowledged.withLock({ $0.count }) < 10 {
            guard Date() < giveUp else { break }   // a starved writer: the turn checks below fail
            try writeNext()
            guard child.process.isRunning else { break }
        }
        XCTAssertTrue(child.process.isRunning, "the helper exited")
        child.killAndWait()
        while !drainer.isFinished { usleep(1_000) }
        for _ in 0 ..< 5 { try writeNext() }   // the dead helper's lock and tail are no obstacle

        let theirs = acknowledged.withLock { $0 }
        let all = theirs + mine
        XCTAssertEqual(Set(all).count, all.count, "a write number acknowledged twice")
        let count = realm.object(ofType: Ledger.self, forPrimaryKey: 0)!.count
        XCTAssertEqual(count, mine.last, "this process's last write is the newest")
        XCTAssertEqual(realm.objects(Account.self).sorted(byKeyPath: "id").map(\.balance), RealmWorkload.balances(after: count))
        XCTAssertEqual(realm.objects(Transfer.self).count, count)
        XCTAssertEqual(realm.objects(Transfer.self).filter(#Predicate { $0.parity == 1 }).count, (count + 1) / 2, "index")
        XCTAssertLessThan(theirs.min() ?? .max, mine.max()!, "the processes took turns")
        XCTAssertLessThan(mine.min()!, theirs.max() ?? 0, "the processes took turns")
        let caughtUp = Date().addingTimeInterval(5)
        while Date() < caughtUp, seen.withLock({ $0.newest }) < count { usleep(1_000) }
        queue.sync {
            XCTAssertNotNil(token)
            token = nil
            XCTAssertNotNil(observer)
            observer = nil
        }
        let result = seen.withLock { $0 }
        XCTAssertEqual(result.problems, [])
        XCTAssertEqual(result.newest, count, "the queue's realm reached the last write")
        realm.invalidate()
        print("realm written in turns: helper \(theirs.count) writes, this process \(mine.count), \(result.updates) notifications, \(count) writes in all")
    }
}
