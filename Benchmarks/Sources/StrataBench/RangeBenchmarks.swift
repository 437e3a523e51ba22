// `--suite ranges`: ranges on an indexed property (issue 24, item 4: ordered indexes) —
// Strata's counted B+tree beside SQLite's B-tree index through GRDB, same data, same run.
// One `Reading` type: `id` primary key, `value` Double indexed (the queries suite's
// SplitMix64 score), `label` String. Per engine and round, a fresh store at `.full` /
// `synchronous = FULL` (read back): (1) insert N in one write; close and reopen, then as the
// reopen's first queries (2) the count of the 10% range 0.25 <= value < 0.35 and (3) the ids
// of a narrow range (about N / 10,000 objects); (4) that narrow range warm (median of 5);
// (5) a one-object commit that moves one value, then (3)'s range again (the tree after a
// commit); (6) the ids of the 20 largest values; (7) the ids of a label prefix (`label` is
// indexed too). Answers are checked against the generator and between engines.

import BenchSupport
import Foundation
import GRDB
import Strata

/// The ranges suite's model.
final class Reading: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var value: Double = 0
    @Persisted(indexed: true) var label: String = ""
}

struct RangeBenchmarks {
    var sizes: [Int]
    var workDirectory: String
    var rounds: Int

    static let wide = (low: 0.25, high: 0.35)
    /// Step (7)'s prefix: labels are "r" and the id, so it matches 11 ids at 100k and 1M.
    static let labelPrefix = "r1234"
    static let repeats = 5

    static func narrow(_ n: Int) -> (low: Double, high: Double) { (0.5, 0.5 + 1.0 / 10_000) }
    static func value(_ i: Int) -> Double { QueryBenchmarks.score(i) }

    struct Times {
        var insert = 0.0, wideCount = 0.0, narrowFirst = 0.0, narrowWarm = 0.0, afterCommit = 0.0, reopen = 0.0, top20 = 0.0, prefix = 0.0
    }

    struct Answers: Equatable {
        var wideCount = 0, narrowIDs: [Int] = [], afterCommitIDs: [Int] = [], top20: [Int] = [], prefixIDs: [Int] = []
    }

    func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

    private func strata(n: Int) throws -> (Times, Answers, plan: String) {
        var times = Times(), answers = Answers()
        let directory = URL(fileURLWithPath: workDirectory + "/ranges-strata-\(n)")
        try? FileManager.default.removeItem(at: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = [Reading.self]
        config.storeOptions.durability = .full
        do {
            let realm = try Realm(configuration: config)
            times.insert = try time {
                try realm.write {
                    try realm.add((0 ..< n).map { i in
                        let reading = Reading()
                        reading.id = i
                        reading.value = Self.value(i)
                        reading.label = "r\(i)"
                        return reading
                    })
                }
            }
            realm.invalidate()
        }
        var opened: Realm?
        times.reopen = try time { opened = try Realm(configuration: config) }
        let realm = opened!
        let (wideLow, wideHigh) = Self.wide, (low, high) = Self.narrow(n)
        times.wideCount = time { answers.wideCount = realm.objects(Reading.self).filter(#Predicate { $0.value >= wideLow && $0.value < wideHigh }).count }
        // A new `Results` each time, as a request handler makes one (a kept one caches its answer).
        func narrow() -> Results<Reading> { realm.objects(Reading.self).filter(#Predicate { $0.value >= low && $0.value < high }) }
        times.narrowFirst = time { answers.narrowIDs = narrow().map(\.id).sorted() }
        times.narrowWarm = median((0 ..< Self.repeats).map { _ in time { answers.narrowIDs = narrow().map(\.id).sorted() } })
        let plan = narrow().explain()
        try realm.write { realm.object(ofType: Reading.self, forPrimaryKey: 7)!.value = low }
        times.afterCommit = time { answers.afterCommitIDs = narrow().map(\.id).sorted() }
        times.top20 = time { answers.top20 = realm.objects(Reading.self).filter("TRUEPREDICATE SORT(value DESC) LIMIT(20)").map(\.id) }
        times.prefix = time { answers.prefixIDs = realm.objects(Reading.self).filter("label BEGINSWITH %@", Self.labelPrefix).map(\.id).sorted() }
        realm.invalidate()
        return (times, answers, plan)
    }

    private func grdb(n: Int) throws -> (Times, Answers) {
        var times = Times(), answers = Answers()
        let path = workDirectory + "/ranges-\(n).sqlite"
        func remove() { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        remove()
        defer { remove() }
        do {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.create(table: "reading") { t in
                    t.column("id", .integer).primaryKey()
                    t.column("value", .double).notNull().indexed()
                    t.column("label", .text).notNull().indexed()
                }
            }
            try requireFullSynchronous(queue, baseline: "ranges suite (GRDB)")
            times.insert = try time {
                try queue.write { db in
                    let insert = try db.cachedStatement(sql: "INSERT INTO reading (id, value, label) VALUES (?, ?, ?)")
                    for i in 0 ..< n { try insert.execute(arguments: [i, Self.value(i), "r\(i)"]) }
                }
            }
            try queue.close()
        }
        var opened: DatabaseQueue?
        times.reopen = try time { opened = try DatabaseQueue(path: path) }
        let queue = opened!
        try requireFullSynchronous(queue, baseline: "ranges suite (GRDB, reopened)")
        let (wideLow, wideHigh) = Self.wide, (low, high) = Self.narrow(n)
        times.wideCount = try time {
            answers.wideCount = try queue.read { db in
                try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM reading WHERE value >= ? AND value < ?"), arguments: [wideLow, wideHigh])!
            }
        }
        func narrowIDs() throws -> [Int] {
            try queue.read { db in
                try Int.fetchAll(db.cachedStatement(sql: "SELECT id FROM reading WHERE value >= ? AND value < ?"), arguments: [low, high])
            }.sorted()
        }
        times.narrowFirst = try time { answers.narrowIDs = try narrowIDs() }
        times.narrowWarm = median(try (0 ..< Self.repeats).map { _ in try time { answers.narrowIDs = try narrowIDs() } })
        try queue.write { db in try db.execute(sql: "UPDATE reading SET value = ? WHERE id = 7", arguments: [low]) }
        times.afterCommit = try time { answers.afterCommitIDs = try narrowIDs() }
        times.top20 = try time {
            answers.top20 = try queue.read { db in try Int.fetchAll(db.cachedStatement(sql: "SELECT id FROM reading ORDER BY value DESC, id LIMIT 20")) }
        }
        times.prefix = try time {
            // GLOB, not LIKE: SQLite's LIKE is case-insensitive and does not use a BINARY index.
            answers.prefixIDs = try queue.read { db in
                try Int.fetchAll(db.cachedStatement(sql: "SELECT id FROM reading WHERE label GLOB ?"), arguments: [Self.labelPrefix + "*"])
            }.sorted()
        }
        try queue.close()
        return (times, answers)
    }

    func run() throws {
        for n in sizes {
            var strataTimes: [Times] = [], grdbTimes: [Times] = []
            var plan = ""
            for round in 0 ..< rounds {
                var results: [(Times, Answers)] = []
                for engine in round % 2 == 0 ? [0, 1] : [1, 0] {
                    if engine == 0 {
                        let (times, answers, explained) = try strata(n: n)
                        plan = explained
                        strataTimes.append(times)
                        results.append((times, answers))
                    } else {
                        let (times, answers) = try grdb(n: n)
                        grdbTimes.append(times)
                        results.append((times, answers))
                    }
                }
                let expectedWide = (0 ..< n).filter { Self.value($0) >= Self.wide.low && Self.value($0) < Self.wide.high }.count
                let (low, high) = Self.narrow(n)
                let expectedNarrow = (0 ..< n).filter { Self.value($0) >= low && Self.value($0) < high }
                var valued: [(value: Double, id: Int)] = (0 ..< n).map { id in (id == 7 ? low : Self.value(id), id) }
                valued.sort { a, b in a.value != b.value ? a.value > b.value : a.id < b.id }
                let expectedTop: [Int] = valued.prefix(20).map { $0.id }
                let expectedPrefix = (0 ..< n).filter { "r\($0)".hasPrefix(Self.labelPrefix) }
                for (_, answers) in results {
                    guard answers.wideCount == expectedWide, answers.narrowIDs == expectedNarrow, answers.top20 == expectedTop, answers.prefixIDs == expectedPrefix,
                          answers.afterCommitIDs == Array(Set(expectedNarrow + [7])).sorted() else {
                        throw QueryMismatch(description: "ranges suite, \(n) objects: an engine's answer differs from the generator's")
                    }
                }
                if results[0].1 != results[1].1 { throw QueryMismatch(description: "ranges suite, \(n) objects: the engines disagree") }
            }
            func row(_ label: String, _ key: KeyPath<Times, Double>) {
                let s = median(strataTimes.map { $0[keyPath: key] }), g = median(grdbTimes.map { $0[keyPath: key] })
                print("| \(label) | \(QueryBenchmarks.seconds(s)) | \(QueryBenchmarks.seconds(g)) | \(String(format: "%.2f×", g / s)) |")
            }
            print("\nRanges on an indexed Double, \(n) objects (medians of \(rounds) rounds; Strata .full, GRDB synchronous = FULL read back)")
            print("| step | Strata | GRDB | GRDB/Strata |")
            print("|---|---|---|---|")
            row("(1) insert N with the index, one write", \.insert)
            row("close, reopen", \.reopen)
            row("(2) first query after the reopen: count of the 10% range", \.wideCount)
            row("(3) then the ids of a range of ~N/10,000", \.narrowFirst)
            row("(4) the same, warm", \.narrowWarm)
            row("(5) after a one-object commit into the range", \.afterCommit)
            row("(6) the 20 largest values' ids (`SORT(value DESC) LIMIT(20)`; `ORDER BY value DESC, id LIMIT 20`)", \.top20)
            row("(7) ids of `label BEGINSWITH 'r1234'` (`label GLOB 'r1234*'`)", \.prefix)
            print("Strata's plan for (3): " + plan.replacingOccurrences(of: "\n", with: " / "))
        }
    }
}
