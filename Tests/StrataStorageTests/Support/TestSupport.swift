// Helpers shared by the engine's tests: the base seed, byte helpers, store contents as a
// model. (Temporary directories, the fuzz scale and the generator are StrataTestSupport's.)

import Foundation
import XCTest
import StrataTestSupport
@testable import StrataStorage

/// The engine tests' base seed: fixed unless STRATA_SEED is set, and printed on failure.
let baseSeed = TestEnvironment.seed(default: 0x5757_A7A0)

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

func key(_ n: Int) -> [UInt8] { Array("key-\(n)".utf8) }

/// A value of `length` bytes derived from `seed`: compressible when `compressible`.
func value(_ seed: UInt64, length: Int, compressible: Bool = false) -> [UInt8] {
    var rng = SplitMix64(seed: seed)
    if compressible {
        let word = Array("value-\(seed)-".utf8)
        return (0 ..< length).map { word[$0 % word.count] }
    }
    return (0 ..< length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
}

func options(segmentSize: Int = 64 << 20, durability: Durability = .full,
             fileSystem: (any FileSystem)? = nil) -> StoreOptions {
    var o = StoreOptions()
    o.segmentSize = segmentSize
    o.durability = durability
    if let fileSystem { o.fileSystem = fileSystem }
    return o
}

/// The whole content of a store as a model: table → key → value.
typealias Model = [UInt32: [[UInt8]: [UInt8]]]

func contents(of snapshot: Snapshot) throws -> Model {
    var model: Model = [:]
    for table in snapshot.tables {
        var rows: [[UInt8]: [UInt8]] = [:]
        try snapshot.scan(table: table) { k, v in rows[k] = v }
        model[table] = rows
    }
    return model
}

func normalized(_ model: Model) -> Model {
    model.filter { !$0.value.isEmpty }
}

/// Compares two store contents and, on a difference, reports a short summary instead of
/// every byte: which tables and keys differ.
func assertSame(_ actual: Model, _ expected: Model, _ context: @autoclosure () -> String,
                file: StaticString = #filePath, line: UInt = #line) {
    let a = normalized(actual), e = normalized(expected)
    guard a != e else { return }
    var differences: [String] = []
    for table in Set(a.keys).union(e.keys).sorted() {
        let ra = a[table] ?? [:], re = e[table] ?? [:]
        for k in Set(ra.keys).union(re.keys) where ra[k] != re[k] {
            differences.append("table \(table) key \(String(decoding: k, as: UTF8.self)): \(ra[k].map { "\($0.count) bytes" } ?? "absent") vs expected \(re[k].map { "\($0.count) bytes" } ?? "absent")")
        }
    }
    XCTFail("contents differ (\(differences.count) keys): \(differences.prefix(5).joined(separator: "; ")), \(context())", file: file, line: line)
}

/// The 64-byte key of the encrypted-store tests.
let testEncryptionKey = Data((0 ..< 64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })

/// The crash helper writing `dir` in a child process, and the commits it has acknowledged
/// (read from its output by a drainer thread): the highest, and all of them in order.
struct WriterProcess {
    struct DidNotStart: Error, CustomStringConvertible {
        var description: String { "the crash helper did not start; is \(KillTests.helperPath) built?" }
    }

    let child: ChildProcess
    let acknowledged = Locked<UInt64>(0)
    let acks = Locked<[UInt64]>([])
    let drainer: Thread

    /// Starts the helper with `arguments` after the directory; throws (a test failure)
    /// when it does not report ready.
    init(_ dir: TemporaryDirectory, _ arguments: [String]) throws {
        child = try ChildProcess(executable: KillTests.helperPath, arguments: [dir.path] + arguments)
        guard let ready = child.output.nextLine(), ready.hasPrefix("ready") else {
            child.terminate()
            throw DidNotStart()
        }
        let acknowledged = self.acknowledged, acks = self.acks
        nonisolated(unsafe) let output = child.output   // read by the drainer alone
        drainer = Thread {
            while let line = output.nextLine() {
                if line.hasPrefix("ack "), let sequence = UInt64(line.dropFirst(4)) {
                    acknowledged.withLock { $0 = max($0, sequence) }
                    acks.withLock { $0.append(sequence) }
                }
            }
        }
        drainer.start()
    }

    var isRunning: Bool { child.process.isRunning }

    /// Kills the writer (SIGKILL) and waits until its output is read to the end.
    func stop() {
        child.killAndWait()
        while !drainer.isFinished { usleep(1_000) }
    }
}
