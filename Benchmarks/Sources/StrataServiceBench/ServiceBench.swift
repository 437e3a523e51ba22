// strata-service-bench: the same Hummingbird service over a Strata cache and over a GRDB
// cache, each loaded from 127.0.0.1 at 1, 16 and 64 connections with 90% reads and 10%
// partial writes; every acknowledged write is checked in the store afterwards. Prints a
// Markdown table with the ratios Strata/GRDB. `make bench-service` runs it.

import ArgumentParser
import BenchSupport
import Foundation
import NIOPosix
import Strata

@main
struct ServiceBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-service-bench",
        abstract: "A Hummingbird service with a Strata or a GRDB cache, under loopback load, side by side.")

    @Option(help: "Users loaded before the runs.")
    var users = 10_000
    @Option(help: "Requests per run (all connections together); a run also stops at --seconds.")
    var requests = 30_000
    @Option(help: "Longest run, in seconds.")
    var seconds = 20.0
    @Option(help: "Rounds: each runs every connection count on every back end in turn; medians are reported.")
    var rounds = 3
    @Option(help: "Connection counts, one run each per round.")
    var connections = "1,16,64"
    @Option(help: "Back ends, in order: strata, grdb, strata-sync, floor (no store: what the HTTP side alone costs).")
    var backends = "strata,grdb"
    @Option(help: "Percent of requests that are partial PUTs.")
    var writePercent = 10
    @Option(help: "Percent of requests that GET a city's list (the rest GET one user).")
    var listPercent = 15
    @Option(help: "How long the /events reader listens during each run, in seconds.")
    var eventsSeconds = 3.0
    @Option(help: "Directory for the stores (default: a new temporary directory, removed after).")
    var directory: String?
    @Option(help: "Only serve on 127.0.0.1:<port> with this back end (strata or grdb) for --seconds, after loading --users.")
    var serve: String?
    @Option(help: "The port for --serve.")
    var port = 8080

    func run() async throws {
        let work = URL(fileURLWithPath: directory ?? NSTemporaryDirectory() + "strata-service-bench-\(getpid())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if directory == nil { try? FileManager.default.removeItem(at: work) } }

        if let serve {
            switch serve {
            case "strata": try await serveOnly(StrataCache.self, in: work)
            case "grdb": try await serveOnly(GRDBCache.self, in: work)
            default: throw ValidationError("--serve: strata or grdb")
            }
            return
        }

        let counts = try connections.split(separator: ",").map { part -> Int in
            guard let n = Int(part.trimmingCharacters(in: .whitespaces)), n > 0 else { throw ValidationError("--connections: e.g. 1,16,64") }
            return n
        }
        let order = backends.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        report("""
            # strata-service-bench
            Hummingbird 2 on 127.0.0.1, driver in the same process (swift-nio, keep-alive HTTP/1.1), \
            \(ProcessInfo.processInfo.activeProcessorCount) cores shared by both.
            \(users) users in \(Dataset.cities) cities; per run \(requests) requests or \(seconds) s, whichever comes first; \(rounds) interleaved rounds.
            Mix: \(100 - writePercent - listPercent)% GET /users/:id, \(listPercent)% GET /users?city=…&sort=rank|name&limit=20, \(writePercent)% PUT /users/:id (partial JSON);
            one GET /events reader streams a city's changes for the first \(eventsSeconds) s of each run.
            Durability: a PUT is answered only once its commit is durable.
              Strata: \(StrataCache.durability); realm opened per request, writes through asyncWrite.
              GRDB:   \(GRDBCache.durability); one pool per process.
            Load average before: \(loadAverage()) (other processes on the machine skew the figures).

            """)
        guard writePercent >= 0, listPercent >= 0, writePercent + listPercent <= 100 else {
            throw ValidationError("--write-percent + --list-percent: at most 100")
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var backendsToRun: [any UserCache.Type] = []
        for backend in order {
            switch backend {
            case "strata": backendsToRun.append(StrataCache.self)
            case "grdb": backendsToRun.append(GRDBCache.self)
            case "strata-sync": backendsToRun.append(StrataSyncWriteCache.self)
            case "floor": backendsToRun.append(FloorCache.self)
            default: throw ValidationError("--backends: strata, grdb, strata-sync, floor")
            }
        }
        for backend in backendsToRun {
            try await prepare(backend, in: work)
        }
        if order.contains("strata") {
            try await printOpenCost(in: work.appendingPathComponent(StrataCache.name))
        }
        // Interleaved: each round runs every connection count on every back end in turn, so a
        // slow minute of the machine falls on all of them alike.
        var rows: [Row] = []
        let roundCount = max(rounds, 1)
        for round in 1 ... roundCount {
            for (countIndex, count) in counts.enumerated() {
                for (backendIndex, backend) in backendsToRun.enumerated() {
                    let run = round * 100 + countIndex * 10 + backendIndex
                    rows.append(try await measure(backend, connections: count, run: run, round: round, in: work, group: group))
                }
            }
        }
        try await group.shutdownGracefully()
        report("\nLoad average after: \(loadAverage())")

        report("\nMedians of \(roundCount) round\(roundCount == 1 ? "" : "s") (req/s: median, and min–max across rounds):\n")
        report("| back end | connections | req/s | req/s range | p50 ms | p99 ms | errors | writes checked | lost writes | events streamed |")
        report("|---|---|---|---|---|---|---|---|---|---|")
        var summaries: [Summary] = []
        for backend in backendsToRun {
            for count in counts {
                let runs = rows.filter { $0.backend == backend.name && $0.connections == count }
                let summary = Summary(runs)
                summaries.append(summary)
                report(String(format: "| %@ | %d | %.0f | %.0f–%.0f | %.2f | %.2f | %d | %d | %d | %d |", backend.name, count,
                             summary.perSecond, summary.minPerSecond, summary.maxPerSecond, summary.p50, summary.p99,
                             summary.errors, summary.checked, summary.lost, summary.events))
            }
        }
        // Strata against each other back end; the throughput ratio is the median of each
        // round's ratio (the two ran a few seconds apart, on the same machine state).
        for other in backendsToRun where other.name != StrataCache.name && order.contains("strata") {
            report("\n| connections | Strata req/s | \(other.name) req/s | Strata/\(other.name) throughput (range) | Strata p50 / p99 ms | \(other.name) p50 / p99 ms | p99 \(other.name)/Strata | lost writes Strata, \(other.name) |")
            report("|---|---|---|---|---|---|---|---|")
            for count in counts {
                guard let s = summaries.first(where: { $0.backend == StrataCache.name && $0.connections == count }),
                      let o = summaries.first(where: { $0.backend == other.name && $0.connections == count }) else { continue }
                var ratios: [Double] = []
                for round in 1 ... roundCount {
                    if let a = rows.first(where: { $0.backend == StrataCache.name && $0.connections == count && $0.round == round }),
                       let b = rows.first(where: { $0.backend == other.name && $0.connections == count && $0.round == round }) {
                        ratios.append(a.load.perSecond / max(b.load.perSecond, 1))
                    }
                }
                report(String(format: "| %d | %.0f | %.0f | %.2f× (%.2f–%.2f) | %.2f / %.2f | %.2f / %.2f | %.2f× | %d, %d |", count,
                             s.perSecond, o.perSecond, median(ratios), ratios.min() ?? 0, ratios.max() ?? 0,
                             s.p50, s.p99, o.p50, o.p99, o.p99 / max(s.p99, 1e-9), s.lost, o.lost))
            }
        }
        // A failing run is an error for `make service-check`: a lost write, a lost key, a failed request.
        if rows.contains(where: { $0.lost > 0 || $0.partialViolations > 0 || $0.load.errors > 0 }) { throw ExitCode(1) }
    }

    /// A new store for the back end, loaded with the data set.
    func prepare(_ backend: any UserCache.Type, in work: URL) async throws {
        let directory = work.appendingPathComponent(backend.name)
        try? FileManager.default.removeItem(at: directory)
        let seed = (0 ..< users).map(Dataset.user)
        let loader = try backend.init(directory: directory)
        let loadSeconds = try await loader.withOpenStore {
            let start = DispatchTime.now().uptimeNanoseconds
            try await loader.preload(seed)
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        report(String(format: "%@: %d users loaded in one write in %.3f s", backend.name, users, loadSeconds))
    }

    /// One run: the service over the back end's store, the load, then every acknowledged
    /// write read back from the reopened store.
    func measure(_ backend: any UserCache.Type, connections count: Int, run: Int, round: Int, in work: URL,
                 group: MultiThreadedEventLoopGroup) async throws -> Row {
        let directory = work.appendingPathComponent(backend.name)
        let cache = try backend.init(directory: directory)
        let users = users, requests = requests, seconds = seconds
        let writePercent = writePercent, listPercent = listPercent
        let eventsSeconds = min(eventsSeconds, seconds)
        let (load, events) = try await serve(cache) { port in
            let driver = LoadDriver(port: port, users: users, connections: count, requests: requests,
                                    seconds: seconds, run: run, group: group,
                                    writePercent: writePercent, listPercent: listPercent)
            // Warm-up, not measured: reads only, one connection.
            _ = try await LoadDriver(port: port, users: users, connections: 1, requests: 300, seconds: 5,
                                     run: 0, group: group, writePercent: 0, listPercent: listPercent).runLoad()
            async let events = driver.streamEvents(seconds: eventsSeconds)
            let load = try await driver.runLoad()
            return (load, try await events)
        }
        // The service is stopped and its store closed: reopen it and read every
        // acknowledged write back.
        let checking = try backend.init(directory: directory)
        let ids = load.acknowledged.keys.filter { !load.inDoubt.contains($0) }
        let stored = try await readBack(checking, ids: ids)
        var lost = 0, partial = 0
        for id in ids {
            let sent = load.acknowledged[id]!
            guard let user = stored[id], user.rank == sent.rank, user.score == sent.score, user.updatedAt == sent.updatedAt else {
                lost += 1
                continue
            }
            let original = Dataset.user(id)
            if user.city != original.city || user.name != original.name || user.email != original.email { partial += 1 }
        }
        let row = Row(backend: backend.name, connections: count, round: round, load: load, checked: ids.count, lost: lost,
                      partialViolations: partial, events: events)
        report(String(format: "round %d, %@, %d connection%@: %d requests (%d reads, %d writes) in %.2f s = %.0f req/s, p50 %.2f ms, p99 %.2f ms, errors: %d%@",
                     round, backend.name, count, count == 1 ? "" : "s", load.requests, load.reads, load.writes, load.seconds,
                     load.perSecond, load.percentile(0.5), load.percentile(0.99), load.errors,
                     load.firstError.map { " (first: \($0))" } ?? ""))
        report("  lost writes: \(lost) (of \(ids.count) users' last acknowledged writes, read back after reopening the store)"
              + (load.inDoubt.isEmpty ? "" : "; \(load.inDoubt.count) unanswered writes not checked")
              + (partial > 0 ? "; \(partial) users lost keys a partial PUT left out" : ""))
        report("  events streamed: \(events) lines (snapshot + changes of \(Dataset.city(0)) in \(eventsSeconds) s)")
        return row
    }

    /// The service over `cache`, with its store open, while `body` runs.
    func serve<Cache: UserCache, R: Sendable>(_ cache: Cache, port: Int = 0,
                                              _ body: @Sendable (Int) async throws -> R) async throws -> R {
        try await cache.withOpenStore { try await Service.run(cache, port: port, body) }
    }

    func readBack<Cache: UserCache>(_ cache: Cache, ids: [Int]) async throws -> [Int: UserValue] {
        try await cache.withOpenStore { try await cache.readBack(ids: ids) }
    }

    /// The cost of opening a realm per request: with the store open (the service's case),
    /// and with no other realm alive (each open opens the store's files).
    func printOpenCost(in directory: URL) async throws {
        let cache = StrataCache(directory: directory)
        let opens = 20_000
        let open = try await cache.withOpenStore {
            let start = DispatchTime.now().uptimeNanoseconds
            var found = 0
            for i in 0 ..< opens {
                let realm = try Realm(configuration: cache.configuration)
                if realm.object(ofType: User.self, forPrimaryKey: i % users) != nil { found += 1 }
            }
            precondition(found == opens)
            return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(opens) / 1e3
        }
        let cold = 20
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0 ..< cold {
            let realm = try Realm(configuration: cache.configuration)
            precondition(realm.object(ofType: User.self, forPrimaryKey: i) != nil)
        }
        let coldMs = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(cold) / 1e6
        report(String(format: "Strata: open a realm + read one user: %.1f µs with the store open; %.2f ms when it is the only realm (opens the %d-user store)",
                     open, coldMs, users))
    }

    func serveOnly<Cache: UserCache>(_ type: Cache.Type, in work: URL) async throws {
        let directory = work.appendingPathComponent(Cache.name)
        let cache = try Cache(directory: directory)
        let users = users, seconds = seconds, port = port
        try await cache.withOpenStore {
            try await cache.preload((0 ..< users).map(Dataset.user))
            try await Service.run(cache, port: port) { bound in
                report("\(Cache.name) service on http://127.0.0.1:\(bound) for \(seconds) s")
                try await Task.sleep(for: .seconds(seconds))
            }
        }
    }
}

struct Row {
    var backend: String
    var connections: Int
    var round: Int
    var load: LoadResult
    var checked: Int
    var lost: Int
    var partialViolations: Int
    var events: Int
}

/// The 1-, 5- and 15-minute load averages.
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))
        .map { $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "unknown"
}

/// The runs of one back end at one connection count, across rounds.
struct Summary {
    var backend: String
    var connections: Int
    var perSecond: Double
    var minPerSecond: Double
    var maxPerSecond: Double
    var p50: Double
    var p99: Double
    var errors: Int
    var checked: Int
    var lost: Int
    var events: Int

    init(_ runs: [Row]) {
        backend = runs.first?.backend ?? ""
        connections = runs.first?.connections ?? 0
        let rates = runs.map(\.load.perSecond)
        perSecond = median(rates)
        minPerSecond = rates.min() ?? 0
        maxPerSecond = rates.max() ?? 0
        p50 = median(runs.map { $0.load.percentile(0.5) })
        p99 = median(runs.map { $0.load.percentile(0.99) })
        errors = runs.reduce(0) { $0 + $1.load.errors }
        checked = runs.reduce(0) { $0 + $1.checked }
        lost = runs.reduce(0) { $0 + $1.lost }
        events = runs.reduce(0) { $0 + $1.events }
    }
}


/// Prints a line at once, even into a pipe (progress of a run that takes minutes).
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
