// The followers suite (issue 27): a store read in another process while it is written.
//
// - Latency: a writer process commits one object per durable write (a few milliseconds
//   apart, as a service's commits are); this process holds a read-only realm on a queue,
//   observing the objects, and timestamps each notification. The latency of a commit is the
//   time from the writer's `write` returning (durable, on CLOCK_MONOTONIC, which both
//   processes share) to the first notification whose snapshot includes it.
// - Writer cost: the peers suite's durable single-record commits (200-byte values, `.full`),
//   timed alone and with a follower process tailing the store (an engine store it refreshes
//   on every publication, reading the newest record), rounds alternated.
// - Writing in turns (`StoreOptions.multiProcessWriting`): the same commits by one process
//   writing in turns, and by two processes writing in turns at once, against the writer
//   that holds the store from open to close.

import Foundation
import Strata
import StrataStorage
#if canImport(Glibc)
import Glibc
#endif

final class FollowTick: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var note: String = ""
}

struct FollowerBenchmarks {
    let commits: Int
    let workDirectory: String

    /// The child process's side: `--follow-child writer|reader --follow-store <dir>`.
    static func child(role: String, store path: String, commits: Int) throws {
        let url = URL(fileURLWithPath: path)
        switch role {
        case "writer":
            var config = Realm.Configuration(directory: url)
            config.objectTypes = [FollowTick.self]
            config.storeOptions.durability = .full
            let realm = try Realm(configuration: config)
            emit("ready")
            for id in 1 ... commits {
                try realm.write { try realm.add(FollowTick(value: ["id": id, "note": "tick \(id)"])) }
                emit(String(format: "c %llu %.9f", realm.snapshotSequence, now()))
                usleep(3_000)
            }
            realm.invalidate()
            emit("done")
        case "reader":
            var options = StoreOptions()
            options.readOnly = true
            let store = try Store(directory: url, options: options)
            store.watchWriter(pollInterval: 0.5) { sequence in
                // A consumer: read a record of the newest commit.
                _ = try? store.snapshot().get(table: 1, key: benchKey(20_000 + Int(sequence) - 2))
            }
            emit("ready")
            // Until the parent closes our stdin.
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            try store.close()
        case "turns":
            var options = StoreOptions()
            options.multiProcessWriting = true
            options.lockWaitTimeout = 60
            let store = try Store(directory: url, options: options)
            emit("ready")
            guard readLine() == "go" else { return }
            for i in 0 ..< commits {
                try store.write { try $0.put(table: 1, key: benchKey(40_000 + i), value: benchValue(i, size: 200)) }
            }
            try store.close()
            emit("done")
        default:
            throw ValidationFailure("--follow-child takes writer, reader or turns, got '\(role)'")
        }
    }

    struct ValidationFailure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }

    private static func emit(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }

    func run(rounds: Int) throws -> [ResultRow] {
        let latencies = try measureLatency()
        let sorted = latencies.sorted()
        let median = sorted[sorted.count / 2], p90 = sorted[sorted.count * 9 / 10], worst = sorted.last!
        let cost = try measureWriterCost(rounds: rounds)
        let ratio = cost.withFollower / cost.alone
        let turns = try measureTurns(rounds: rounds)
        return [
            ResultRow(benchmark: "a follower realm in another process sees a durable commit (\(latencies.count) commits, median)",
                      strata: String(format: "%.2f ms (p90 %.2f ms, worst %.2f ms)", median * 1e3, p90 * 1e3, worst * 1e3),
                      baseline: "–", sqlite: "–", ratios: "–",
                      target: "≤ 10 ms: " + (median <= 0.010 ? "met" : "not met")),
            ResultRow(benchmark: "durable single-record commits (\(commits)) with a follower process tailing the store",
                      strata: formatRate(cost.withFollower, unit: "commits"),
                      baseline: formatRate(cost.alone, unit: "commits") + " alone",
                      sqlite: "–", ratios: String(format: "%.3f× alone", ratio),
                      target: "≥ 0.95× (a reader costs ≤ 5%): " + (ratio >= 0.95 ? "met" : "not met")),
            ResultRow(benchmark: "durable single-record commits (\(commits)) written in turns, one process (multiProcessWriting)",
                      strata: formatRate(turns.alone, unit: "commits") + String(format: " (%.2f ms each)", 1e3 / turns.alone),
                      baseline: formatRate(turns.writer, unit: "commits") + " by a writer holding the store",
                      sqlite: "–", ratios: String(format: "%.2f× the writer", turns.alone / turns.writer), target: "–"),
            ResultRow(benchmark: "the same, two processes writing in turns at once (\(commits) commits each)",
                      strata: formatRate(turns.together, unit: "commits") + " together",
                      baseline: formatRate(turns.writer, unit: "commits") + " by a writer holding the store",
                      sqlite: "–", ratios: String(format: "%.2f× the writer", turns.together / turns.writer), target: "–"),
        ]
    }

    /// Durable single-record commits per second: a writer holding the store, one process
    /// writing in turns, two processes writing in turns at once (rounds alternated).
    private func measureTurns(rounds: Int) throws -> (writer: Double, alone: Double, together: Double) {
        var writer: [Double] = [], alone: [Double] = [], together: [Double] = []
        let path = workDirectory + "/follow-turns"
        let url = URL(fileURLWithPath: path)
        for _ in 0 ..< max(rounds, 1) {
            for mode in 0 ..< 3 {
                try? FileManager.default.removeItem(atPath: path)
                var options = StoreOptions()
                options.durability = .full
                do {
                    let store = try Store(directory: url, options: options)
                    try store.write { txn in for i in 0 ..< 20_000 { try txn.put(table: 1, key: benchKey(i), value: benchValue(i, size: 200)) } }
                    try store.close()
                }
                options.multiProcessWriting = mode > 0
                let store = try Store(directory: url, options: options)
                var child: ChildBench?
                if mode == 2 {
                    child = try ChildBench(["--follow-child", "turns", "--follow-store", path, "--commits", "\(commits)"])
                    guard child?.nextLine() == "ready" else { throw ValidationFailure("the second writer process did not start") }
                }
                let seconds = try time {
                    child?.send("go")
                    for i in 0 ..< commits {
                        try store.write { try $0.put(table: 1, key: benchKey(20_000 + i), value: benchValue(i, size: 200)) }
                    }
                    if let child, child.nextLine() != "done" { throw ValidationFailure("the second writer process failed") }
                }
                child?.closeInput()
                child?.wait()
                try store.close()
                switch mode {
                case 0: writer.append(Double(commits) / seconds)
                case 1: alone.append(Double(commits) / seconds)
                default: together.append(Double(2 * commits) / seconds)
                }
            }
        }
        try? FileManager.default.removeItem(atPath: path)
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return (median(writer), median(alone), median(together))
    }

    /// Seconds from each commit's durable return in the writer to its notification here.
    private func measureLatency() throws -> [Double] {
        let path = workDirectory + "/follow-latency"
        try? FileManager.default.removeItem(atPath: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let child = try ChildBench(["--follow-child", "writer", "--follow-store", path, "--commits", "\(commits)"])
        guard child.nextLine() == "ready" else { throw ValidationFailure("the writer process did not start") }
        var config = Realm.Configuration(directory: URL(fileURLWithPath: path))
        config.objectTypes = [FollowTick.self]
        config.readOnly = true
        let queue = DispatchQueue(label: "follower")
        let seen = NoteList()
        nonisolated(unsafe) var token: NotificationToken?
        nonisolated(unsafe) var realm: Realm?
        try queue.sync {
            let opened = try Realm(configuration: config, queue: queue)
            realm = opened
            token = opened.objects(FollowTick.self).observe { change in
                guard case .update(let results, _, _, _) = change, let sequence = results.realm?.snapshotSequence else { return }
                let at = now()
                seen.append(sequence, at)
            }
        }
        var committed: [(sequence: UInt64, at: Double)] = []
        while let line = child.nextLine(), line != "done" {
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[0] == "c", let sequence = UInt64(parts[1]), let at = Double(parts[2]) { committed.append((sequence, at)) }
        }
        child.wait()
        Thread.sleep(forTimeInterval: 0.1)
        queue.sync {
            token?.invalidate()
            realm?.invalidate()
            realm = nil
        }
        let notes = seen.all
        var latencies: [Double] = []
        for commit in committed {
            // Commits made before the follower opened are in its first snapshot: no latency.
            guard let first = notes.first(where: { $0.sequence >= commit.sequence }), first.at >= commit.at - 1 else { continue }
            latencies.append(max(0, first.at - commit.at))
        }
        guard latencies.count >= commits / 2 else {
            throw ValidationFailure("the follower saw \(latencies.count) of \(committed.count) commits")
        }
        return latencies
    }

    /// Durable single-record commits per second, alone and with a follower process.
    private func measureWriterCost(rounds: Int) throws -> (alone: Double, withFollower: Double) {
        var alone: [Double] = [], with: [Double] = []
        for round in 0 ..< max(rounds, 1) * 2 {
            let following = round % 2 == 1
            let path = workDirectory + "/follow-cost"
            try? FileManager.default.removeItem(atPath: path)
            var options = StoreOptions()
            options.durability = .full
            let store = try Store(directory: URL(fileURLWithPath: path), options: options)
            try store.write { txn in for i in 0 ..< 20_000 { try txn.put(table: 1, key: benchKey(i), value: benchValue(i, size: 200)) } }
            var child: ChildBench?
            if following {
                child = try ChildBench(["--follow-child", "reader", "--follow-store", path])
                guard child?.nextLine() == "ready" else { throw ValidationFailure("the follower process did not start") }
            }
            let seconds = try time {
                for i in 0 ..< commits {
                    try store.write { try $0.put(table: 1, key: benchKey(20_000 + i), value: benchValue(i, size: 200)) }
                }
            }
            child?.closeInput()
            child?.wait()
            try store.close()
            try? FileManager.default.removeItem(atPath: path)
            if following { with.append(Double(commits) / seconds) } else { alone.append(Double(commits) / seconds) }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return (median(alone), median(with))
    }
}

/// Notifications' (sequence, time), appended on the follower's queue, read at the end.
final class NoteList: @unchecked Sendable {
    private let lock = NSLock()
    private var notes: [(sequence: UInt64, at: Double)] = []
    func append(_ sequence: UInt64, _ at: Double) { lock.withLock { notes.append((sequence, at)) } }
    var all: [(sequence: UInt64, at: Double)] { lock.withLock { notes } }
}

/// This benchmark executable run again as a child process, its output read line by line.
final class ChildBench {
    private let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private var buffer: [UInt8] = []

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        process.standardOutput = output
        process.standardInput = input
        try process.run()
    }

    /// The next line the child printed, or nil at its end.
    func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            buffer.append(contentsOf: chunk)
        }
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }
    func closeInput() { try? input.fileHandleForWriting.close() }

    func wait() { process.waitUntilExit() }
}
