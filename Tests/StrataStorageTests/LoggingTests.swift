// The engine's warnings through swift-log: silent by default; with a Logger, a torn tail
// truncated by recovery is a warning and a background compaction is reported.

import XCTest
import Logging
import StrataTestSupport
@testable import StrataStorage

/// Keeps every message it is given.
struct CapturingLogHandler: LogHandler {
    let messages: Locked<[(Logger.Level, String)]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        messages.withLock { $0.append((event.level, event.message.description)) }
    }
}

final class LoggingTests: XCTestCase {
    func testRecoveryTruncationIsAWarningAndCompactionIsReported() throws {
        let dir = TemporaryDirectory()
        let messages = Locked<[(Logger.Level, String)]>([])
        var opts = options()
        opts.logger = Logger(label: "strata.test") { _ in CapturingLogHandler(messages: messages) }
        opts.autoCompaction = .disabled
        do {
            let store = try Store(directory: dir.url, options: opts)
            for round in 0 ..< 60 {
                try store.write { try $0.put(table: 1, key: key(round % 5), value: value(UInt64(round), length: 200)) }
            }
            try store.close()
        }
        // A crash's torn tail: no clean marker, junk after the last commit of the one segment.
        try? FileManager.default.removeItem(atPath: dir.path + "/CLEAN")
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }
        XCTAssertEqual(segments.count, 1)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: dir.path + "/" + segments[0]))
        handle.seekToEndOfFile()
        handle.write(Data(repeating: 0xAB, count: 100))
        try handle.close()
        let reopened = try Store(directory: dir.url, options: opts)
        try reopened.compact()
        try reopened.close()
        let logged = messages.withLock { $0 }
        XCTAssertTrue(logged.contains { $0.0 == .warning && $0.1.contains("truncated a torn tail of 100 bytes") }, "\(logged)")
        XCTAssertTrue(logged.contains { $0.0 == .info && $0.1.contains("compaction") && $0.1.contains("reclaimed") }, "\(logged)")
    }

    func testSilentByDefault() throws {
        XCTAssertNil(StoreOptions().logger)
    }
}
