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
}
