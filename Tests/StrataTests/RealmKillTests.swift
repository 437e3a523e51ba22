// A realm write is all-or-nothing across SIGKILL: a child process performs transfers
// between accounts; the parent kills it at random moments, reopens, and checks that the
// balances still sum to the opening total, match exactly the recorded number of writes,
// include every acknowledged write, and that the secondary index agrees with a scan.

import XCTest
@testable import Strata
@testable import strata_realm_crash_helper

final class RealmKillTests: XCTestCase {
    static var helperPath: String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("strata-realm-crash-helper").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent().appendingPathComponent("strata-realm-crash-helper").path }
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "strata-realm-crash-helper"
    }

    func testRealmWriteIsAllOrNothingAcrossSIGKILL() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-realm-kill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let scale = Int(ProcessInfo.processInfo.environment["STRATA_FUZZ_SCALE"] ?? "") ?? 1
        var generator = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["STRATA_SEED"] ?? "") ?? 99)
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = RealmWorkload.types
        config.storeOptions.segmentSize = 32 << 10
        var last = 0
        for round in 0 ..< 12 * scale {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.helperPath)
            process.arguments = [directory.path]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.standardError
            try process.run()
            let reader = PipeLineReader(handle: output.fileHandleForReading)
            guard let ready = reader.nextLine(), ready.hasPrefix("ready") else {
                process.terminate()
                return XCTFail("helper did not start (round \(round)); is \(Self.helperPath) built?")
            }
            usleep(UInt32.random(in: 5_000 ... 60_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
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
}

/// Reads lines from a pipe until end of file.
final class PipeLineReader {
    private let handle: FileHandle
    private var buffer = Data()
    private var eof = false

    init(handle: FileHandle) { self.handle = handle }

    func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex ..< newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex ... newline)
                return line
            }
            if eof { return nil }
            let chunk = handle.availableData
            if chunk.isEmpty { eof = true } else { buffer.append(chunk) }
        }
    }
}
