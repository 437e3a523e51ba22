// Concurrency benchmarks (issue 12): what opening a realm per request costs when the
// store is already open, and asyncWrite's durable commit rate with 64 concurrent tasks
// against the raw group-fsync rate (one fdatasync per batch of 64 appended records) in the
// same run, on the same disk.

import Foundation
import Strata
import StrataStorage

struct ConcurrencyBenchmarks {
    var workDirectory: String

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    /// Runs an async body from the synchronous command, waiting for it.
    private func blocking<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) throws -> R {
        let result = BlockingResult<R>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { result.set(.success(try await body())) } catch { result.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        return try result.get()
    }

    func run(rounds: Int) throws -> [ResultRow] {
        var rows: [ResultRow] = []
        let directory = workDirectory + "/concurrency-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = {
            var config = Realm.Configuration(directory: URL(fileURLWithPath: directory))
            config.objectTypes = [BenchPost.self]
            config.storeOptions.durability = .full
            return config
        }()
        let keeper = try Realm(configuration: config)     // keeps the store open, as a service does
        try keeper.write { for i in 0..<1000 { try keeper.add({ let p = BenchPost(); p.id = i; return p }()) } }

        // 1. Opening a realm per request, in a task (task-confined), store already open.
        let opens = 200_000
        var openTimes: [Double] = []
        for _ in 0..<rounds {
            openTimes.append(try blocking {
                let start = DispatchTime.now().uptimeNanoseconds
                var sink = 0
                for _ in 0..<opens {
                    let realm = try Realm(configuration: config)
                    sink &+= Int(realm.snapshotSequence & 1)
                }
                precondition(sink >= 0)
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            })
        }
        let open = openTimes.sorted()[openTimes.count / 2] / Double(opens)
        log(String(format: "realm open per request: %.2f µs", open * 1e6))
        // The same with one point read, which is what a GET handler does.
        var readTimes: [Double] = []
        for _ in 0..<rounds {
            readTimes.append(try blocking {
                let start = DispatchTime.now().uptimeNanoseconds
                var sink = 0
                for i in 0..<opens {
                    let realm = try Realm(configuration: config)
                    sink &+= realm.object(ofType: BenchPost.self, forPrimaryKey: i % 1000)?.id ?? 0
                }
                precondition(sink >= 0)
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            })
        }
        let openRead = readTimes.sorted()[readTimes.count / 2] / Double(opens)
        rows.append(ResultRow(
            benchmark: "open a realm per request (store open), in a task",
            strata: String(format: "%.2f µs; with a point read %.2f µs", open * 1e6, openRead * 1e6),
            baseline: "", sqlite: "", ratios: "",
            target: "≤ 5 µs"))

        // 2. asyncWrite from 64 tasks at `.full`, against two raw baselines in the same run:
        // group fsync (64 records appended, then one fdatasync: the ideal 64 committers could
        // share) and single fsync (one record, one fdatasync).
        let tasks = 64, perTask = 40
        let record = 48 + 100
        var rawGroup: [Double] = [], rawSingle: [Double] = [], realmTimes: [Double] = [], engineTimes: [Double] = []
        let engineDirectory = directory + "-engine"
        defer { try? FileManager.default.removeItem(atPath: engineDirectory) }
        var engineOptions = StoreOptions()
        engineOptions.durability = .full
        let engine = try Store(directory: URL(fileURLWithPath: engineDirectory), options: engineOptions)
        for round in 0..<rounds {
            log("asyncWrite round \(round + 1)/\(rounds): raw group fsync, raw single fsync, Strata realm, Strata engine")
            rawGroup.append(try RawDisk.groupSyncLoop(batches: perTask, batchSize: tasks, recordBytes: record, in: workDirectory))
            rawSingle.append(try RawDisk.syncLoop(count: 500, recordBytes: record, in: workDirectory) / 500 * Double(tasks * perTask))
            realmTimes.append(try blocking {
                try await Self.concurrently(tasks: tasks) { t in
                    let realm = try Realm(configuration: config)
                    for n in 0..<perTask {
                        try await realm.asyncWrite {
                            let post = BenchPost()
                            post.id = 10_000 + round * tasks * perTask + t * perTask + n
                            post.author = "author\((t * perTask + n) % 1000)"
                            post.text = String(repeating: "x", count: 60)
                            try realm.add(post)
                        }
                    }
                }
            })
            engineTimes.append(try blocking {
                try await Self.concurrently(tasks: tasks) { t in
                    let payload = [UInt8](repeating: 0x61, count: 100)
                    for n in 0..<perTask {
                        let key = Array("k\(round)-\(t)-\(n)".utf8)
                        try await engine.asyncWrite { try $0.put(table: 1, key: key, value: payload) }
                    }
                }
            })
        }
        try engine.close()
        let commits = Double(tasks * perTask)
        let group = rawGroup.sorted()[rounds / 2], single = rawSingle.sorted()[rounds / 2]
        let realmTime = realmTimes.sorted()[rounds / 2], engineTime = engineTimes.sorted()[rounds / 2]
        let baseline = formatRate(commits / group, unit: "records") + " group; " + formatRate(commits / single, unit: "records") + " single"
        rows.append(ResultRow(
            benchmark: "asyncWrite (realm), 64 tasks, `.full`, one object per commit",
            strata: formatRate(commits / realmTime, unit: "commits"),
            baseline: baseline, sqlite: "",
            ratios: String(format: "%.2f× raw group fsync; %.1f× raw single fsync", group / realmTime, single / realmTime),
            target: "≥ 0.8× raw group fsync"))
        rows.append(ResultRow(
            benchmark: "asyncWrite (engine), 64 tasks, `.full`, one 100-byte put per commit",
            strata: formatRate(commits / engineTime, unit: "commits"),
            baseline: baseline, sqlite: "",
            ratios: String(format: "%.2f× raw group fsync; %.1f× raw single fsync", group / engineTime, single / engineTime),
            target: "≥ 0.8× raw group fsync"))

        // 3. The CPU cost of one realm commit (no sync), for the profile.
        let cpuTime = try blocking { try await Self.commitsWithoutSync(config, directory: directory, tasks: tasks, perTask: perTask) }
        rows.append(ResultRow(
            benchmark: "asyncWrite (realm), 64 tasks, `.none`: CPU per commit",
            strata: String(format: "%.1f µs", cpuTime / commits * 1e6),
            baseline: "", sqlite: "", ratios: "", target: ""))
        try keeper.store.sync()
        return rows
    }
}

/// A result handed from a task to the waiting thread.
private final class BlockingResult<R: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<R, any Error>?
    func set(_ value: Result<R, any Error>) { lock.withLock { result = value } }
    func get() throws -> R { try lock.withLock { result! }.get() }
}

extension ConcurrencyBenchmarks {
    /// `tasks` tasks each committing `perTask` one-object asyncWrites to a store at
    /// durability `.none` (a fresh directory beside `directory`): the commits' CPU alone.
    /// Returns the seconds they took.
    static func commitsWithoutSync(_ config: Realm.Configuration, directory: String, tasks: Int, perTask: Int) async throws -> Double {
        var noSync = config
        noSync.directory = URL(fileURLWithPath: directory + "-nosync-\(UUID().uuidString.prefix(8))")
        noSync.storeOptions.durability = .none
        defer { try? FileManager.default.removeItem(at: noSync.directory!) }
        let config = noSync
        return try await concurrently(tasks: tasks) { t in
            let realm = try Realm(configuration: config)
            for n in 0..<perTask {
                try await realm.asyncWrite {
                    let post = BenchPost()
                    post.id = t * perTask + n
                    post.author = "author\((t * perTask + n) % 1000)"
                    post.text = String(repeating: "x", count: 60)
                    try realm.add(post)
                }
            }
        }
    }

    /// `--profile-commits`: the `.none` asyncWrite loop of step 3 alone, `rounds` times,
    /// for `perf record`.
    func profileCommits(rounds: Int) throws {
        let directory = workDirectory + "/commits-\(UUID().uuidString.prefix(8))"
        let config = Realm.Configuration(directory: URL(fileURLWithPath: directory), objectTypes: [BenchPost.self])
        for round in 0..<rounds {
            let tasks = 64, perTask = 200
            let seconds = try blocking { try await Self.commitsWithoutSync(config, directory: directory, tasks: tasks, perTask: perTask) }
            log(String(format: "round %d: %.1f µs per commit (%d tasks × %d)", round + 1, seconds / Double(tasks * perTask) * 1e6, tasks, perTask))
        }
    }

    /// Runs `body` in `tasks` child tasks at once; returns the seconds until all are done.
    static func concurrently(tasks: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<tasks { group.addTask { try await body(t) } }
            try await group.waitForAll()
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}

extension RawDisk {
    /// The raw group-commit rate: `batches` times, append `batchSize` records then one
    /// `fdatasync` — what 64 committers sharing each sync would ideally cost.
    static func groupSyncLoop(batches: Int, batchSize: Int, recordBytes: Int, in directory: String) throws -> Double {
        let path = directory + "/raw-group-sync"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd); unlink(path) }
        let record = [UInt8](repeating: 0x5A, count: recordBytes)
        var offset = 0
        return try time {
            for _ in 0 ..< batches {
                for _ in 0 ..< batchSize {
                    let w = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, recordBytes, off_t(offset)) }
                    guard w == recordBytes else { throw POSIXError(.EIO) }
                    offset += recordBytes
                }
                guard fdatasync(fd) == 0 else { throw POSIXError(.EIO) }
            }
        }
    }
}
