// The `strata-studio` executable as a user runs it: bad usage exits 2, a store a writer holds
// (or no store) exits 1 at startup with one clear line, and `--seconds` stops it by itself.

import Foundation
import Strata
import XCTest

final class StudioProcessTests: XCTestCase {
    static let binary: String = {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [here, here.deletingLastPathComponent(), here.deletingLastPathComponent().deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("strata-studio").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return "strata-studio"
    }()

    struct Run { var status: Int32; var stdout: String; var stderr: String; var seconds: Double }

    func studio(_ arguments: String...) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let start = Date()
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                   stderr: String(decoding: stderr, as: UTF8.self), seconds: Date().timeIntervalSince(start))
    }

    func testUsageStartupErrorsAndSeconds() throws {
        let directory = NSTemporaryDirectory() + "strata-studio-process-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try StudioHTTPTests.writeObjects(directory)

        XCTAssertEqual(try studio().status, 2)
        XCTAssertEqual(try studio(directory, "--port", "70000").status, 2)
        XCTAssertEqual(try studio(directory, "--bogus").status, 2)
        let absent = try studio(directory + "-absent", "--port", "0", "--seconds", "1")
        XCTAssertEqual(absent.status, 1)
        XCTAssertTrue(absent.stderr.contains("no store at"), absent.stderr)

        do {
            // A writer holds the store: the studio (another process) serves it read-only.
            let realm = try Realm(configuration: StudioHTTPTests.configuration(directory))
            let live = try studio(directory, "--port", "0", "--seconds", "1")
            XCTAssertEqual(live.status, 0, live.stderr)
            XCTAssertTrue(live.stdout.contains("(read-only)"), live.stdout)
            _ = realm
        }

        let run = try studio(directory, "--port", "0", "--seconds", "1")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.hasPrefix("Strata Studio on http://127.0.0.1:"), run.stdout)
        XCTAssertTrue(run.stdout.contains("(read-only)"))
        XCTAssertLessThan(run.seconds, 5, "--seconds stops it")
    }
}
