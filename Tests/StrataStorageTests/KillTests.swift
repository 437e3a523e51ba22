// The real crash test: a child process commits transactions and reports each acknowledged
// sequence; the parent kills it with SIGKILL at a random moment, reopens the store and
// checks that every acknowledged commit is there and that the state is exactly that of
// one committed sequence. Many rounds on one store, so recovery follows recovery.

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage
@testable import strata_crash_helper

final class KillTests: XCTestCase {
    static let helperPath = ChildProcess.executablePath(named: "strata-crash-helper")

    func testSIGKILLNeverLosesAnAcknowledgedCommit() throws {
        for (durability, rounds) in [("full", 20 * TestEnvironment.fuzzScale), ("none", 10 * TestEnvironment.fuzzScale)] {
            try killRounds(durability: durability, rounds: rounds, compacting: false)
        }
    }

    func testSIGKILLDuringCompactionNeverLosesAnAcknowledgedCommit() throws {
        try killRounds(durability: "full", rounds: 20 * TestEnvironment.fuzzScale, compacting: true)
    }

    func testSIGKILLOfAnEncryptedStoreNeverLosesAnAcknowledgedCommit() throws {
        try killRounds(durability: "full", rounds: 20 * TestEnvironment.fuzzScale, compacting: true, encrypted: true)
    }

    private func killRounds(durability: String, rounds: Int, compacting: Bool, encrypted: Bool = false) throws {
        let dir = TemporaryDirectory("kill")
        var rng = SplitMix64(seed: baseSeed &+ 7)
        var finalSequence: UInt64 = 0
        for round in 0 ..< rounds {
            let child = try ChildProcess(executable: KillTests.helperPath,
                                         arguments: [dir.path, durability, compacting ? "4096" : "16384"]
                                             + (compacting ? ["compact"] : []) + (encrypted ? ["encrypted"] : []))
            let reader = child.output
            guard let ready = reader.nextLine(), ready.hasPrefix("ready") else {
                child.terminate()
                return XCTFail("helper did not start (round \(round)); is \(KillTests.helperPath) built?")
            }
            // Let it commit for a random while, then kill it mid-flight.
            usleep(UInt32(2_000 + rng.next() % 40_000))
            child.killAndWait()
            var acknowledged: UInt64 = 0
            while let line = reader.nextLine() {
                if line.hasPrefix("ack "), let s = UInt64(line.dropFirst(4)) { acknowledged = max(acknowledged, s) }
            }
            var opts = StoreOptions()
            opts.encryptionKey = encrypted ? KillWorkload.encryptionKey : nil
            let store = try Store(directory: dir.url, options: opts)
            let recovered = store.lastSequence
            finalSequence = recovered
            XCTAssertGreaterThanOrEqual(recovered, acknowledged, "\(durability) round \(round): an acknowledged commit was lost")
            assertSame(try contents(of: store.snapshot()), KillWorkload.model(upTo: recovered),
                           "\(durability) round \(round): state is not exactly commit \(recovered)")
            try store.close()
        }
        let compacted = compacting ? (try FileManager.default.contentsOfDirectory(atPath: dir.path)).count : 0
        print("kill test \(durability)\(compacting ? " with auto-compaction" : "")\(encrypted ? ", encrypted" : ""): \(rounds) SIGKILL rounds, \(finalSequence) commits in the store at the end\(compacting ? ", \(compacted) files" : "")")
    }
}
