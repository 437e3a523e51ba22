// strata-bench: runs the benchmark suite and prints a Markdown table of results with
// ratios against baselines measured in the same run (docs/benchmarks.md holds the last one).

import ArgumentParser
import Foundation
import Strata

@main
struct StrataBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-bench",
        abstract: "Strata's benchmarks against the raw disk and SQLite (GRDB), in one run.")

    @Option(help: "Records in the bulk load (and keys in the opened store).")
    var records = 1_000_000
    @Option(help: "Value size in bytes.")
    var valueSize = 200
    @Option(help: "Durable single-record commits.")
    var commits = 2_000
    @Option(help: "Random point reads.")
    var reads = 1_000_000
    @Option(help: "Directory for the benchmark's files (default: a new temporary directory).")
    var directory: String?
    @Option(help: "Rounds of each measurement (the median is reported).")
    var rounds = 3
    @Flag(help: "Profile Strata alone: bulk load then point reads, no baselines, no table.")
    var strataOnly = false
    @Option(help: "Directory of the real JSON payloads.")
    var jsonDirectory = "../../shared/data/json"
    @Option(help: "Which suites to run: all, engine, peers, encryption, objects, models, controller, json, concurrency, scale, queries, ranges or followers.")
    var suite = "all"
    @Option(help: "Profile one object-level phase alone: upsert, rewrite, insert, init, set, make, read, scan, sort, list or equality.")
    var profileObjects: String?
    @Flag(help: "Profile the JSON import alone (the parents workload, cold then hot).")
    var profileImport = false
    @Flag(help: "With --profile-import: the Twitter workload (--statuses) instead of the parents one.")
    var twitter = false
    @Option(help: "Twitter statuses in the import benchmark (copies of twitter.json's, with fresh ids).")
    var statuses = 10_000
    @Option(help: "Profile the JSON reader alone on one payload file (its path).")
    var profileReader: String?
    @Flag(help: "Profile opening a store of --records keys alone (built once, opened five times).")
    var profileOpen = false
    @Option(help: "Objects in the object-level benchmarks.")
    var objects = 100_000
    @Flag(help: "Time the commit that seals the full segment a --records bulk load left, against the commits after it.")
    var profileSeal = false
    @Option(help: "Profile the results controller's performFetch() alone on this many objects (for perf record).")
    var profileController: Int?
    @Option(help: "Profile the queries suite's 200k primary-key reads (step 2) alone on this many objects.")
    var profileReads: Int?
    @Flag(help: "Profile the concurrency suite's 64 tasks of one-object asyncWrites at durability .none alone (--rounds times).")
    var profileCommits = false
    @Option(help: "Profile the queries suite's indexed equality (step 3) alone on this many objects: first run, then warm runs.")
    var profileEquality: Int?
    @Option(help: "Profile the queries suite's indexed equality as the first query after a reopen, on this many objects (reopened once a round).")
    var profileFirstEquality: Int?
    @Option(help: "Profile the queries suite's range count and sorted first 20 (steps 4 and 5) as the first queries after a reopen, on this many objects.")
    var profileFirstScan: Int?
    @Option(help: "Profile the queries suite's step (8) alone: reopen a store of this many objects after 1,000 one-object commits.")
    var profileReopen: Int?
    @Option(help: "Time one page of 50 objects through StoreInspector (the studio's tables) on a store of this many objects, against converting every object.")
    var profilePage: Int?
    @Option(help: "Elements of the lists in the scale suite.")
    var listElements = 1_000_000
    @Option(help: "Keys of the engine store in the scale suite.")
    var scaleKeys = 10_000_000
    @Option(help: "Object counts of the queries suite, comma-separated (a fresh store each).")
    var queryObjects = "100000,1000000"
    @Option(help: "Internal: run as the followers suite's child process (writer or reader).")
    var followChild: String?
    @Option(help: "Internal: the store of --follow-child.")
    var followStore: String?

    func run() throws {
        if let followChild {
            guard let followStore else { throw ValidationError("--follow-child needs --follow-store") }
            try FollowerBenchmarks.child(role: followChild, store: followStore, commits: commits)
            return
        }
        let work = directory ?? (NSTemporaryDirectory() + "strata-bench-\(getpid())")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: work) } }
        let engine = EngineBenchmarks(records: records, valueSize: valueSize, commits: commits, reads: reads,
                                      workDirectory: work)
        if let profileReader {
            guard let data = FileManager.default.contents(atPath: profileReader) else { throw ValidationError("cannot read \(profileReader)") }
            var sink = 0
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0 ..< max(rounds, 1) * 50 { if case .object(let o) = try JSONValue(data: data) { sink &+= o.count } }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            print(String(format: "%.0f MB/s (%d)", Double(data.count * max(rounds, 1) * 50) / seconds / 1e6, sink % 10))
            return
        }
        if profileSeal {
            try engine.profileSeal(rounds: max(rounds, 1))
            return
        }
        if let profilePage {
            try QueryBenchmarks(sizes: [profilePage], workDirectory: work).profilePage(n: profilePage, rounds: max(rounds, 1))
            return
        }
        if let profileReopen {
            try QueryBenchmarks(sizes: [profileReopen], workDirectory: work).profileReopen(n: profileReopen, rounds: max(rounds, 1))
            return
        }
        if let profileFirstScan {
            try QueryBenchmarks(sizes: [profileFirstScan], workDirectory: work).profileFirstScan(n: profileFirstScan, rounds: max(rounds, 1))
            return
        }
        if let profileFirstEquality {
            try QueryBenchmarks(sizes: [profileFirstEquality], workDirectory: work).profileFirstEquality(n: profileFirstEquality, rounds: max(rounds, 1))
            return
        }
        if let profileEquality {
            try QueryBenchmarks(sizes: [profileEquality], workDirectory: work).profileEquality(n: profileEquality, rounds: max(rounds, 1))
            return
        }
        if let profileController {
            try ControllerBenchmarks(sizes: [profileController], workDirectory: work).profileFetch(rounds: max(rounds, 1))
            return
        }
        if let profileReads {
            try QueryBenchmarks(sizes: [profileReads], workDirectory: work).profileReads(n: profileReads, rounds: max(rounds, 1))
            return
        }
        if profileCommits {
            try ConcurrencyBenchmarks(workDirectory: work).profileCommits(rounds: max(rounds, 1))
            return
        }
        if profileOpen {
            try engine.profileOpen()
            return
        }
        if profileImport {
            try ImportBenchmarks(parents: 10_000, statuses: twitter ? statuses : 0, directory: work, jsonDirectory: jsonDirectory).profile(rounds: rounds)
            return
        }
        if let phase = profileObjects {
            try ObjectBenchmarks(objects: objects, reads: reads, workDirectory: work).profile(phase: phase, rounds: rounds)
            return
        }
        if strataOnly {
            try engine.profileStrata()
            let store = try CompactionBenchmarks(records: records, valueSize: valueSize, workDirectory: work)
                .buildFragmentedStore(at: work + "/compaction")
            let report = try store.compact()
            FileHandle.standardError.write(Data("compaction: \(report.bytesRead >> 20) MiB in \(String(format: "%.2f", report.seconds)) s\n".utf8))
            try store.close()
            return
        }
        guard ["all", "engine", "peers", "encryption", "objects", "models", "controller", "json", "concurrency", "scale", "queries", "ranges", "followers"].contains(suite) else {
            throw ValidationError("--suite takes all, engine, peers, encryption, objects, models, controller, json, concurrency, scale, queries or followers, got '\(suite)'")
        }
        let querySizes = queryObjects.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !querySizes.isEmpty, querySizes.allSatisfy({ ($0 ?? 0) > 0 }) else {
            throw ValidationError("--query-objects takes positive counts separated by commas, got '\(queryObjects)'")
        }
        print("`make bench` (release build), \(ProcessInfo.processInfo.activeProcessorCount) cores, medians of \(rounds) rounds, files in \(work)\n")
        if suite == "all" || suite == "engine" {
            let rows = try engine.run(rounds: rounds)
            let compaction = try CompactionBenchmarks(records: records, valueSize: valueSize, workDirectory: work).run()
            print("## Storage engine\n")
            print(markdownTable(rows))
            print("\n## Compaction\n")
            print(markdownTable(compaction))
        }
        if suite == "all" || suite == "peers" {
            let rows = try PeerBenchmarks(records: records, valueSize: valueSize, commits: commits, reads: min(reads, 1_000_000),
                                          workDirectory: work).run(rounds: rounds)
            print("\n## The engine beside LMDB, RocksDB and LevelDB (same keys, values and machine)\n")
            print(markdownTable(rows))
            // The realistic shape (issue 25): 200k compressible 216-byte rows under text keys.
            let text = try PeerBenchmarks(records: min(records, 200_000), valueSize: 216, commits: commits, reads: min(reads, 1_000_000),
                                          workDirectory: work, compressible: true).run(rounds: rounds)
            print("\n## The engine beside LMDB, RocksDB and LevelDB: compressible values\n")
            print(markdownTable(text))
        }
        if suite == "all" || suite == "encryption" {
            let rows = try EncryptionBenchmarks(records: records, valueSize: valueSize, commits: commits, reads: min(reads, 1_000_000),
                                                workDirectory: work).run(rounds: rounds)
            print("\n## Encryption at rest (the same store encrypted and plain, same run)\n")
            print(markdownTable(rows, columns: ("plain store (same run)", "–")))
        }
        if suite == "all" || suite == "objects" {
            let rows = try ObjectBenchmarks(objects: objects, reads: min(reads, 200_000), workDirectory: work).run(rounds: rounds)
            print("\n## Objects (Realm API against GRDB Codable records)\n")
            print(markdownTable(rows))
        }
        if suite == "all" || suite == "models" {
            let rows = try ModelTypeBenchmarks(cars: objects, workDirectory: work).run(rounds: max(rounds, 3))
            print("\n## Realm's model types: LinkingObjects' inverse index (same run, same data, with and without it)\n")
            print(markdownTable(rows, columns: ("without the index (same run)", "–")))
        }
        if suite == "all" || suite == "json" {
            let rows = try JSONBenchmarks(directory: jsonDirectory, rounds: max(rounds, 5)).run()
            print("\n## JSON reading (same run, same payloads)\n")
            print(markdownTable(rows, columns: ("Foundation (same run)", "simdjson DOM parse, the ceiling (same run)")))
            let imports = try ImportBenchmarks(parents: 10_000, statuses: statuses, directory: work, jsonDirectory: jsonDirectory).run()
            print("\n## JSON import (same run, same payloads)\n")
            print(markdownTable(imports))
        }
        if suite == "all" || suite == "concurrency" {
            let rows = try ConcurrencyBenchmarks(workDirectory: work).run(rounds: max(rounds, 3))
            print("\n## Concurrency (realm per request, asyncWrite)\n")
            print(markdownTable(rows))
        }
        if suite == "all" || suite == "scale" {
            let rows = try ScaleBenchmarks(listElements: listElements, engineKeys: scaleKeys, valueSize: valueSize,
                                           sharers: objects, workDirectory: work).run()
            print("\n## Scale (long lists, a popular indexed value, a 10M-key store, the largest value)\n")
            print(markdownTable(rows, columns: ("before / baseline", "–")))
        }
        if suite == "all" || suite == "queries" {
            let tables = try QueryBenchmarks(sizes: querySizes.compactMap { $0 }, workDirectory: work).run(rounds: rounds)
            print("\n## Queries (the columnar read path workload)\n")
            print(tables.joined(separator: "\n"))
        }
        if suite == "all" || suite == "ranges" {
            print("\n## Ranges on an indexed property (ordered indexes)")
            try RangeBenchmarks(sizes: querySizes.compactMap { $0 }, workDirectory: work, rounds: max(rounds, 1)).run()
        }
        if suite == "all" || suite == "followers" {
            let rows = try FollowerBenchmarks(commits: min(commits, 1_000), workDirectory: work).run(rounds: rounds)
            print("\n## Followers: a store read in another process while it is written\n")
            print(markdownTable(rows, columns: ("without a follower (same run)", "–")))
        }
        if suite == "all" || suite == "controller" {
            let rows = try ControllerBenchmarks(sizes: [10_000, 100_000, 1_000_000], workDirectory: work).run()
            print("\n## Results controller\n")
            print(markdownTable(rows))
        }
    }
}
