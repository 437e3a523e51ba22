// strata-service-bench: the same Hummingbird service over a Strata cache and over a GRDB
// cache, each loaded from 127.0.0.1 at 1, 16 and 64 connections with 90% reads and 10%
// partial writes; every acknowledged write is checked in the store afterwards. Prints a
// Markdown table with the ratios Strata/GRDB. `make bench-service` runs it.

import ArgumentParser
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
    @Option(help: "Connection counts, one run each.")
    var connections = "1,16,64"
    @Option(help: "Back ends, in order: strata, grdb.")
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
        print("""
            # strata-service-bench
            Hummingbird 2 on 127.0.0.1, driver in the same process (swift-nio, keep-alive HTTP/1.1), \
            \(ProcessInfo.processInfo.activeProcessorCount) cores shared by both.
            \(users) users in \(Dataset.cities) cities; per run \(requests) requests or \(seconds) s, whichever comes first.
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
        var rows: [Row] = []
        for backend in order {
            switch backend {
            case "strata":
                rows += try await measure(StrataCache.self, counts: counts, in: work, group: group)
                try await printOpenCost(in: work.appendingPathComponent(StrataCache.name))
            case "grdb":
                rows += try await measure(GRDBCache.self, counts: counts, in: work, group: group)
            case "strata-sync":
                rows += try await measure(StrataSyncWriteCache.self, counts: counts, in: work, group: group)
            default:
                throw ValidationError("--backends: strata, grdb, strata-sync")
            }
        }
        try await group.shutdownGracefully()
        print("\nLoad average after: \(loadAverage())")
        let failed = rows.contains { $0.lost > 0 || $0.partialViolations > 0 }

        print("\n| back end | connections | requests | req/s | p50 ms | p99 ms | errors | writes acknowledged | lost writes | events streamed |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for row in rows {
            print(String(format: "| %@ | %d | %d | %.0f | %.2f | %.2f | %d | %d | %d | %d |", row.backend, row.connections,
                         row.load.requests, row.load.perSecond, row.load.percentile(0.5), row.load.percentile(0.99),
                         row.load.errors, row.checked, row.lost, row.events))
        }
        let strata = rows.filter { $0.backend == StrataCache.name }
        let grdb = rows.filter { $0.backend == GRDBCache.name }
        if !strata.isEmpty, !grdb.isEmpty {
            print("\n| connections | Strata req/s | GRDB req/s | Strata/GRDB throughput | Strata p50 / p99 ms | GRDB p50 / p99 ms | p99 GRDB/Strata |")
            print("|---|---|---|---|---|---|---|")
            for s in strata {
                guard let g = grdb.first(where: { $0.connections == s.connections }) else { continue }
                print(String(format: "| %d | %.0f | %.0f | %.2f× | %.2f / %.2f | %.2f / %.2f | %.2f× |", s.connections,
                             s.load.perSecond, g.load.perSecond, s.load.perSecond / max(g.load.perSecond, 1),
                             s.load.percentile(0.5), s.load.percentile(0.99), g.load.percentile(0.5), g.load.percentile(0.99),
                             g.load.percentile(0.99) / max(s.load.percentile(0.99), 1e-9)))
            }
        }
        if failed { throw ExitCode(1) }
    }

    func measure<Cache: UserCache>(_ type: Cache.Type, counts: [Int], in work: URL,
                                   group: MultiThreadedEventLoopGroup) async throws -> [Row] {
        let directory = work.appendingPathComponent(Cache.name)
        try? FileManager.default.removeItem(at: directory)
        let seed = (0 ..< users).map(Dataset.user)
        let loader = try Cache(directory: directory)
        let loadSeconds = try await loader.withOpenStore {
            let start = DispatchTime.now().uptimeNanoseconds
            try await loader.preload(seed)
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        print(String(format: "%@: %d users loaded in one write in %.3f s", Cache.name, users, loadSeconds))
        var rows: [Row] = []
        for (index, count) in counts.enumerated() {
            let run = index + 1 + 10 * (["strata", "grdb", "strata-sync"].firstIndex(of: Cache.name.lowercased()) ?? 3)
            let cache = try Cache(directory: directory)
            let users = users, requests = requests, seconds = seconds
            let writePercent = writePercent, listPercent = listPercent
            let eventsSeconds = min(eventsSeconds, seconds)
            let (load, events) = try await cache.withOpenStore {
                try await Service.run(cache) { port in
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
            }
            // The service is stopped and its store closed: reopen it and read every
            // acknowledged write back.
            let checking = try Cache(directory: directory)
            let ids = load.acknowledged.keys.filter { !load.inDoubt.contains($0) }
            let stored = try await checking.withOpenStore { try await checking.readBack(ids: ids) }
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
            let row = Row(backend: Cache.name, connections: count, load: load, checked: ids.count, lost: lost,
                          partialViolations: partial, events: events)
            print(String(format: "%@, %d connection%@: %d requests (%d reads, %d writes) in %.2f s = %.0f req/s, p50 %.2f ms, p99 %.2f ms, errors: %d%@",
                         Cache.name, count, count == 1 ? "" : "s", load.requests, load.reads, load.writes, load.seconds,
                         load.perSecond, load.percentile(0.5), load.percentile(0.99), load.errors,
                         load.firstError.map { " (first: \($0))" } ?? ""))
            print("  lost writes: \(lost) (of \(ids.count) users' last acknowledged writes, read back after reopening the store)"
                  + (load.inDoubt.isEmpty ? "" : "; \(load.inDoubt.count) unanswered writes not checked")
                  + (partial > 0 ? "; \(partial) users lost keys a partial PUT left out" : ""))
            print("  events streamed: \(events) lines (snapshot + changes of \(Dataset.city(0)) in \(eventsSeconds) s)")
            rows.append(row)
        }
        return rows
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
        print(String(format: "Strata: open a realm + read one user: %.1f µs with the store open; %.2f ms when it is the only realm (opens the %d-user store)",
                     open, coldMs, users))
    }

    func serveOnly<Cache: UserCache>(_ type: Cache.Type, in work: URL) async throws {
        let directory = work.appendingPathComponent(Cache.name)
        let cache = try Cache(directory: directory)
        let users = users, seconds = seconds, port = port
        try await cache.withOpenStore {
            try await cache.preload((0 ..< users).map(Dataset.user))
            try await Service.run(cache, port: port) { bound in
                print("\(Cache.name) service on http://127.0.0.1:\(bound) for \(seconds) s")
                try await Task.sleep(for: .seconds(seconds))
            }
        }
    }
}

struct Row {
    var backend: String
    var connections: Int
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
