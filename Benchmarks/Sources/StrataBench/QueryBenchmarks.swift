// The queries suite (the columnar read path workload): one `Item` type with an indexed
// `city`, loaded, read by primary key, queried (indexed equality, a range count, a range
// sorted for its first 20), rewritten whole, changed one object a commit, and reopened —
// Strata's Realm API against GRDB with prepared statements, `.full` against
// `synchronous = FULL`, on a fresh store per engine and round. Rounds alternate which engine
// goes first; medians. The answers of both engines are checked against each other and
// against the values computed from the generator, and the suite stops if any differ.

import BenchSupport
import Foundation
import GRDB
import Strata

/// The queries suite's model.
final class Item: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var city: String = ""
    @Persisted var name: String = ""
    @Persisted var score: Double = 0
    @Persisted var age: Int = 0
}

/// An answer on which the engines (or an engine and the generator) disagree.
struct QueryMismatch: Error, CustomStringConvertible {
    let description: String
}

struct QueryBenchmarks {
    /// Object counts, one table each.
    var sizes: [Int]
    var workDirectory: String

    static let pointReads = 200_000
    static let commits = 1_000
    /// Warm runs of steps 3–5 in each round (the round's figure is their median).
    static let repeats = 5
    static let queriedCity = "city42"
    static let low = 0.25, high = 0.35

    func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

    // MARK: The data

    /// `splitmix64(i)`: the SplitMix64 finalizer of `i &+ 0x9E3779B97F4A7C15`, as 53 bits in [0, 1).
    static func score(_ i: Int) -> Double {
        var generator = SplitMix64(seed: UInt64(bitPattern: Int64(i)))
        return Double(generator.next() >> 11) * 0x1p-53
    }
    static func city(_ i: Int) -> String { "city\(i % 100)" }
    static func name(_ i: Int) -> String { "name\(i)" }
    static func age(_ i: Int) -> Int { i % 80 }
    /// The values step 6 writes to every object.
    static func updatedAge(_ i: Int) -> Int { (i &* 7 &+ 3) % 80 }
    static func updatedScore(_ i: Int) -> Double { score(i &+ 1_000_000_007) }
    /// The object step 7's commit `j` changes, and the age it sets (always a change: ages are below 80).
    static func committed(_ j: Int, of n: Int) -> (id: Int, age: Int) { ((j &* 7919) % n, 100 + j % 50) }

    // MARK: One engine's round

    /// One engine's timings (seconds) in one round.
    struct Times {
        var insert = 0.0, reads = 0.0, cityFirst = 0.0, cityWarm = 0.0, rangeCount = 0.0, top20 = 0.0
        var update = 0.0, commitMean = 0.0, commitWorst = 0.0, reopen = 0.0, cityAfterReopen = 0.0, rangeAfterReopen = 0.0, rangeNextReopen = 0.0, rangeText = 0.0
        /// Strata: the projection after every property was queried. (Its arrays counted: the
        /// process's resident memory says little here, as the load's freed memory is reused.)
        var memory: ProjectionStatistics?
    }

    /// What one engine answered in one round; both engines must agree.
    struct Answers: Equatable {
        var ageSum = 0, scoreSum = 0.0
        var cityCount = 0, cityIDs: [Int] = []
        var rangeCount = 0, top20: [String] = []
        var finalAgeSum = 0, finalScoreSum = 0.0
        var reopened: [String] = []
        var rangeAfterReopen = 0
    }

    /// Strata: a fresh realm, `.full` durability, steps 1–8.
    private func strata(n: Int, ids: [Int]) throws -> (Times, Answers) {
        var times = Times(), answers = Answers()
        let directory = URL(fileURLWithPath: workDirectory + "/queries-strata-\(n)")
        try? FileManager.default.removeItem(at: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = [Item.self]
        config.storeOptions.durability = .full
        var realm = try Realm(configuration: config)
        let city = Self.queriedCity, low = Self.low, high = Self.high

        times.insert = try time {
            try realm.write {
                try realm.add((0 ..< n).map { i in
                    let item = Item()
                    item.id = i
                    item.city = Self.city(i)
                    item.name = Self.name(i)
                    item.score = Self.score(i)
                    item.age = Self.age(i)
                    return item
                })
            }
        }
        times.reads = time {
            for id in ids {
                let item = realm.object(ofType: Item.self, forPrimaryKey: id)!
                answers.ageSum &+= item.age
                answers.scoreSum += item.score
            }
        }
        func cityQuery() -> (count: Int, ids: [Int]) {
            let results = realm.objects(Item.self).filter(#Predicate { $0.city == city })
            return (results.count, results.map(\.id))
        }
        var found = (count: 0, ids: [Int]())
        times.cityFirst = time { found = cityQuery() }
        (answers.cityCount, answers.cityIDs) = found
        times.cityWarm = median((0 ..< Self.repeats).map { _ in time { found = cityQuery() } })
        times.rangeCount = median((0 ..< Self.repeats).map { _ in
            time { answers.rangeCount = realm.objects(Item.self).filter(#Predicate { $0.score >= low && $0.score < high }).count }
        })
        // The same count written as Realm users write it: a string query.
        var textCount = 0
        times.rangeText = median((0 ..< Self.repeats).map { _ in
            time { textCount = realm.objects(Item.self).filter("score >= %@ AND score < %@", low, high).count }
        })
        guard textCount == answers.rangeCount else {
            throw QueryMismatch(description: "Strata: the string query counts \(textCount), the predicate \(answers.rangeCount)")
        }
        times.top20 = median((0 ..< Self.repeats).map { _ in
            time {
                answers.top20 = realm.objects(Item.self).filter(#Predicate { $0.score >= low && $0.score < high })
                    .sorted(by: [SortDescriptor(\Item.score, order: .reverse)]).prefix(20).map(\.name)
            }
        })
        // Every property projected (a column scan on each), for the memory table.
        let everyone = realm.objects(Item.self).filter(#Predicate { $0.id >= 0 && $0.age >= 0 && $0.city >= "" && $0.name >= "" })
        guard everyone.count == n else { throw QueryMismatch(description: "Strata: \(everyone.count) objects matched a filter every object passes") }
        times.memory = realm.projectionStatistics(for: Item.self)
        // What a Realm user writes to change every object: a loop over them in one write.
        times.update = try time {
            try realm.write {
                for item in realm.objects(Item.self) {
                    item.age = Self.updatedAge(item.id)
                    item.score = Self.updatedScore(item.id)
                }
            }
        }
        let commits = try (0 ..< Self.commits).map { j in
            let change = Self.committed(j, of: n)
            return try time { try realm.write { realm.object(ofType: Item.self, forPrimaryKey: change.id)!.age = change.age } }
        }
        (times.commitMean, times.commitWorst) = (commits.reduce(0, +) / Double(commits.count), commits.max()!)
        let all = realm.objects(Item.self)
        (answers.finalAgeSum, answers.finalScoreSum) = (all.sum(of: \.age), all.sum(of: \.score))

        realm.invalidate()
        times.reopen = try time {
            realm = try Realm(configuration: config)
            let item = realm.object(ofType: Item.self, forPrimaryKey: n / 2)!
            answers.reopened = [item.city, item.name, "\(item.age)", "\(item.score)"]
        }
        times.cityAfterReopen = time { found = cityQuery() }
        guard found.count == answers.cityCount else { throw QueryMismatch(description: "Strata: the city query after the reopen found \(found.count) objects, before it \(answers.cityCount)") }
        // A reopen again, so that the range count is this open's first scan of the table: no
        // query has projected the table since step 6 changed every object, so it is scanned;
        // then once more, after this session's close kept the projection it made.
        var counts: [Int] = []
        for step in 0 ..< 2 {
            realm.invalidate()
            realm = try Realm(configuration: config)
            let elapsed = time { counts.append(realm.objects(Item.self).filter(#Predicate { $0.score >= low && $0.score < high }).count) }
            if step == 0 { times.rangeAfterReopen = elapsed } else { times.rangeNextReopen = elapsed }
        }
        guard counts[0] == counts[1] else { throw QueryMismatch(description: "Strata: the range counts after the reopens differ: \(counts)") }
        answers.rangeAfterReopen = counts[0]
        realm.invalidate()
        return (times, answers)
    }

    /// A realm of `n` items in a fresh directory, for the profiles (removed on return).
    private func withProfileRealm(n: Int, _ body: (Realm) throws -> Void) throws {
        try withProfileRealm(n: n) { realm, _ in try body(realm) }
    }

    /// The same, with the configuration that opens it again.
    private func withProfileRealm(n: Int, _ body: (Realm, Realm.Configuration) throws -> Void) throws {
        let directory = URL(fileURLWithPath: workDirectory + "/queries-profile-\(n)")
        try? FileManager.default.removeItem(at: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = Realm.Configuration(directory: directory)
        config.objectTypes = [Item.self]
        let realm = try Realm(configuration: config)
        try realm.write {
            try realm.add((0 ..< n).map { i in
                let item = Item()
                (item.id, item.city, item.name, item.score, item.age) = (i, Self.city(i), Self.name(i), Self.score(i), Self.age(i))
                return item
            })
        }
        try body(realm, config)
        realm.invalidate()
    }

    /// `--profile-first-equality N`: step 3 as the first query after a reopen (no
    /// projection yet), `rounds` times, each round closing and reopening the store.
    func profileFirstEquality(n: Int, rounds: Int) throws {
        try withProfileRealm(n: n) { loaded, config in
            loaded.invalidate()
            let city = Self.queriedCity
            var checksum = 0, runs: [Double] = [], opens: [Double] = []
            for _ in 0 ..< rounds {
                var opened: Realm?
                opens.append(try time { opened = try Realm(configuration: config) })
                let realm = opened!
                runs.append(time {
                    let results = realm.objects(Item.self).filter(#Predicate { $0.city == city })
                    checksum &+= results.count &+ results.map(\.id).count
                })
                realm.invalidate()
            }
            log(String(format: "first query after a reopen: median %.1f µs, min %.1f µs (%d rounds); the reopen: median %.2f ms",
                       median(runs) * 1e6, runs.min()! * 1e6, rounds, median(opens) * 1e3))
            log("checksum \(checksum)")
        }
    }

    /// `--profile-first-scan N`: steps 4 and 5 (a range count, then the range sorted, first
    /// 20 names) as the first queries after a reopen, `rounds` times: what they cost when the
    /// table's projection must first be read (from its persisted file, or by a scan).
    func profileFirstScan(n: Int, rounds: Int) throws {
        try withProfileRealm(n: n) { loaded, config in
            let (low, high) = (Self.low, Self.high)
            // A warm run first, so the figures below are comparable with the suite's.
            var checksum = loaded.objects(Item.self).filter(#Predicate { $0.score >= low && $0.score < high }).count
            // The count as a string query: on the columns, and with a term the IR does not
            // take (`BEGINSWITH ''`, true of every name) on the rows, as every string query was.
            let text = median((0 ..< 3).map { _ in time { checksum &+= loaded.objects(Item.self).filter("score >= %@ AND score < %@", low, high).count } })
            let rows = median((0 ..< 3).map { _ in
                time { checksum &+= loaded.objects(Item.self).filter("score >= %@ AND score < %@ AND name BEGINSWITH ''", low, high).count }
            })
            log(String(format: "the range count as a string query: %.2f ms on the columns; %.1f ms on the rows", text * 1e3, rows * 1e3))
            let close = time { loaded.invalidate() }
            var counts: [Double] = [], tops: [Double] = [], opens: [Double] = []
            for _ in 0 ..< rounds {
                var opened: Realm?
                opens.append(try time { opened = try Realm(configuration: config) })
                let realm = opened!
                counts.append(time { checksum &+= realm.objects(Item.self).filter(#Predicate { $0.score >= low && $0.score < high }).count })
                tops.append(time {
                    checksum &+= realm.objects(Item.self).filter(#Predicate { $0.score >= low && $0.score < high })
                        .sorted(by: [SortDescriptor(\Item.score, order: .reverse)]).prefix(20).map(\.name).count
                })
                realm.invalidate()
            }
            log(String(format: "first range count after a reopen: median %.2f ms, min %.2f ms; then the sorted first 20: median %.2f ms (%d rounds); the reopen: median %.2f ms; the close after the load: %.1f ms",
                       median(counts) * 1e3, counts.min()! * 1e3, median(tops) * 1e3, rounds, median(opens) * 1e3, close * 1e3))
            log("checksum \(checksum)")
        }
    }

    /// `--profile-reopen N`: the queries suite's step (8) alone — a store of `n` items closed
    /// after 1,000 one-object commits, then reopened and one object read, `rounds` times
    /// (the open replays those commits' log onto the index image the load's close wrote).
    func profileReopen(n: Int, rounds: Int) throws {
        try withProfileRealm(n: n) { loaded, config in
            loaded.invalidate()
            var checksum = 0, opens: [Double] = []
            for round in 0 ..< rounds {
                let writer = try Realm(configuration: config)
                for j in 0 ..< Self.commits {
                    let change = Self.committed(j &+ round &* Self.commits, of: n)
                    try writer.write { writer.object(ofType: Item.self, forPrimaryKey: change.id)!.age = change.age }
                }
                writer.invalidate()
                opens.append(try time {
                    let realm = try Realm(configuration: config)
                    checksum &+= realm.object(ofType: Item.self, forPrimaryKey: n / 2)!.age
                    realm.invalidate()
                })
            }
            log(String(format: "reopen after %d one-object commits, and one read: median %.2f ms, min %.2f ms (%d rounds)",
                       Self.commits, median(opens) * 1e3, opens.min()! * 1e3, rounds))
            log("checksum \(checksum)")
        }
    }

    /// `--profile-page N`: the studio's table page — page 100 of 50 objects through
    /// `StoreInspector.page`, without and with a query, against converting every object
    /// (`objects(ofType:matching:)`, what the page cost before) — on a store of `n` items.
    func profilePage(n: Int, rounds: Int) throws {
        try withProfileRealm(n: n) { loaded, config in
            loaded.invalidate()
            let store = try Store(directory: config.directory!, options: StoreOptions())
            defer { try? store.close() }
            guard let inspector = try StoreInspector(store: store) else { return }
            // The pages first, then the conversions of every object: freeing a million
            // converted objects makes the allocator slow for whatever comes next, which
            // interleaving would charge to the page.
            let queries: [String?] = [nil, "age > 40"]
            var checksum = 0
            let pages = try queries.map { query in
                median(try (0 ..< rounds).map { _ in
                    try time { checksum &+= try inspector.page(ofType: "Item", matching: query, offset: 99 * 50, limit: 50).objects.count }
                })
            }
            let wholes = try queries.map { query in
                median(try (0 ..< rounds).map { _ in
                    try time { checksum &+= Array(try inspector.objects(ofType: "Item", matching: query).dropFirst(99 * 50).prefix(50)).count }
                })
            }
            for (i, query) in queries.enumerated() {
                log(String(format: "%@: a page %.1f ms, every object converted %.1f ms (medians of %d)",
                           query ?? "no query", pages[i] * 1e3, wholes[i] * 1e3, rounds))
            }
            log("checksum \(checksum)")
        }
    }

    /// Step 3 alone, for perf: load `n` items, run the city query once, then `rounds` × 20
    /// warm runs, printing the first run and the warm median.
    func profileEquality(n: Int, rounds: Int) throws {
        try withProfileRealm(n: n) { realm in
            let city = Self.queriedCity
            var checksum = 0
            func query() { let r = realm.objects(Item.self).filter(#Predicate { $0.city == city }); checksum &+= r.count &+ r.map(\.id).count }
            log(String(format: "first run %.3f ms", time { query() } * 1e3))
            for round in 0 ..< rounds {
                let runs = (0 ..< 20).map { _ in time { query() } }
                log(String(format: "round %d: warm median %.1f µs, min %.1f µs", round, median(runs) * 1e6, runs.min()! * 1e6))
            }
            log("\(realm.objects(Item.self).filter(#Predicate { $0.city == city }).explain())\nchecksum \(checksum)")
        }
    }

    /// `--profile-reads N`: the queries suite's step (2) alone — 200k random primary-key
    /// reads of two properties — `rounds` times over a realm of `n` items.
    func profileReads(n: Int, rounds: Int) throws {
        try withProfileRealm(n: n) { realm in
            var rng = SplitMix64(seed: 7)
            let ids = (0 ..< Self.pointReads).map { _ in Int(rng.next() % UInt64(n)) }
            var checksum = 0
            for round in 0 ..< rounds {
                let elapsed = time {
                    for id in ids {
                        let item = realm.object(ofType: Item.self, forPrimaryKey: id)!
                        checksum &+= item.age &+ Int(item.score)
                    }
                }
                log(String(format: "round %d: %.1f ms, %.0f ns a read", round, elapsed * 1e3, elapsed / Double(ids.count) * 1e9))
            }
            log("checksum \(checksum)")
        }
    }

    /// GRDB: a fresh database (one table, an index on `city`, WAL, `synchronous = FULL` on the
    /// writer, read back), cached prepared statements, steps 1–8.
    private func grdb(n: Int, ids: [Int]) throws -> (Times, Answers) {
        var times = Times(), answers = Answers()
        let path = workDirectory + "/queries-\(n).sqlite"
        func remove() { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        remove()
        defer { remove() }
        var queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.create(table: "item") { t in
                t.column("id", .integer).primaryKey()
                t.column("city", .text).notNull().indexed()
                t.column("name", .text).notNull()
                t.column("score", .double).notNull()
                t.column("age", .integer).notNull()
            }
        }
        try requireFullSynchronous(queue, baseline: "queries suite (GRDB)")
        let range: StatementArguments = [Self.low, Self.high]

        times.insert = try time {
            try queue.write { db in
                let insert = try db.cachedStatement(sql: "INSERT INTO item (id, city, name, score, age) VALUES (?, ?, ?, ?, ?)")
                for i in 0 ..< n { try insert.execute(arguments: [i, Self.city(i), Self.name(i), Self.score(i), Self.age(i)]) }
            }
        }
        times.reads = try time {
            try queue.read { db in
                let select = try db.cachedStatement(sql: "SELECT age, score FROM item WHERE id = ?")
                for id in ids {
                    let row = try Row.fetchOne(select, arguments: [id])!
                    answers.ageSum &+= row[0] as Int
                    answers.scoreSum += row[1] as Double
                }
            }
        }
        func cityQuery(_ queue: DatabaseQueue) throws -> [Int] {
            try queue.read { db in try Int.fetchAll(db.cachedStatement(sql: "SELECT id FROM item WHERE city = ?"), arguments: [Self.queriedCity]) }
        }
        var found: [Int] = []
        times.cityFirst = try time { found = try cityQuery(queue) }
        (answers.cityCount, answers.cityIDs) = (found.count, found)
        times.cityWarm = median(try (0 ..< Self.repeats).map { _ in try time { found = try cityQuery(queue) } })
        times.rangeCount = median(try (0 ..< Self.repeats).map { _ in
            try time {
                answers.rangeCount = try queue.read { db in
                    try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM item WHERE score >= ? AND score < ?"), arguments: range)!
                }
            }
        })
        times.rangeText = times.rangeCount   // SQL is GRDB's string query
        times.top20 = median(try (0 ..< Self.repeats).map { _ in
            try time {
                answers.top20 = try queue.read { db in
                    try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM item WHERE score >= ? AND score < ? ORDER BY score DESC LIMIT 20"),
                                        arguments: range)
                }
            }
        })
        times.update = try time {
            try queue.write { db in
                let update = try db.cachedStatement(sql: "UPDATE item SET age = ?, score = ? WHERE id = ?")
                for i in 0 ..< n { try update.execute(arguments: [Self.updatedAge(i), Self.updatedScore(i), i]) }
            }
        }
        let commits = try (0 ..< Self.commits).map { j in
            let change = Self.committed(j, of: n)
            return try time {
                try queue.write { db in try db.cachedStatement(sql: "UPDATE item SET age = ? WHERE id = ?").execute(arguments: [change.age, change.id]) }
            }
        }
        (times.commitMean, times.commitWorst) = (commits.reduce(0, +) / Double(commits.count), commits.max()!)
        let sums = try queue.read { db in try Row.fetchOne(db, sql: "SELECT SUM(age), SUM(score) FROM item")! }
        (answers.finalAgeSum, answers.finalScoreSum) = (sums[0], sums[1])

        try queue.close()
        times.reopen = try time {
            queue = try DatabaseQueue(path: path)
            let row = try queue.read { db in try Row.fetchOne(db, sql: "SELECT city, name, age, score FROM item WHERE id = ?", arguments: [n / 2])! }
            answers.reopened = [row[0], row[1], "\(row[2] as Int)", "\(row[3] as Double)"]
        }
        times.cityAfterReopen = try time { found = try cityQuery(queue) }
        guard found.count == answers.cityCount else { throw QueryMismatch(description: "GRDB: the city query after the reopen found \(found.count) rows, before it \(answers.cityCount)") }
        var counts: [Int] = []
        for step in 0 ..< 2 {
            try queue.close()
            queue = try DatabaseQueue(path: path)
            let elapsed = try time {
                counts.append(try queue.read { db in
                    try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM item WHERE score >= ? AND score < ?"), arguments: range)!
                })
            }
            if step == 0 { times.rangeAfterReopen = elapsed } else { times.rangeNextReopen = elapsed }
        }
        guard counts[0] == counts[1] else { throw QueryMismatch(description: "GRDB: the range counts after the reopens differ: \(counts)") }
        answers.rangeAfterReopen = counts[0]
        try queue.close()
        return (times, answers)
    }

    // MARK: Checks

    /// What steps 2–5 must answer, from the generator alone.
    private static func expected(n: Int, ids: [Int]) -> Answers {
        var answers = Answers()
        for id in ids {
            answers.ageSum &+= age(id)
            answers.scoreSum += score(id)
        }
        answers.cityIDs = Array(stride(from: 42, to: n, by: 100))
        answers.cityCount = answers.cityIDs.count
        let inRange = (0 ..< n).filter { (low ..< high).contains(score($0)) }
        answers.rangeCount = inRange.count
        answers.top20 = inRange.sorted { score($0) > score($1) }.prefix(20).map(name)
        return answers
    }

    /// Throws unless `a` and `b` agree (sums of doubles within a relative 1e-9; the
    /// steps `partial` leaves out are not compared).
    private static func check(_ a: Answers, _ aName: String, _ b: Answers, _ bName: String, partial: Bool = false) throws {
        func close(_ x: Double, _ y: Double) -> Bool { abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1) }
        var problems: [String] = []
        if a.ageSum != b.ageSum || !close(a.scoreSum, b.scoreSum) {
            problems.append("step 2 sums: \(aName) age \(a.ageSum), score \(a.scoreSum); \(bName) age \(b.ageSum), score \(b.scoreSum)")
        }
        if a.cityCount != b.cityCount || a.cityIDs.sorted() != b.cityIDs.sorted() {
            problems.append("step 3: \(aName) \(a.cityCount) objects, \(bName) \(b.cityCount)\(a.cityCount == b.cityCount ? ", other ids" : "")")
        }
        if a.rangeCount != b.rangeCount { problems.append("step 4: \(aName) counts \(a.rangeCount), \(bName) \(b.rangeCount)") }
        if a.top20 != b.top20 { problems.append("step 5: \(aName) \(a.top20), \(bName) \(b.top20)") }
        if !partial {
            if a.finalAgeSum != b.finalAgeSum || !close(a.finalScoreSum, b.finalScoreSum) {
                problems.append("after steps 6–7: \(aName) age sum \(a.finalAgeSum), score sum \(a.finalScoreSum); \(bName) \(b.finalAgeSum), \(b.finalScoreSum)")
            }
            if a.reopened != b.reopened { problems.append("step 8: \(aName) read \(a.reopened), \(bName) \(b.reopened)") }
            if a.rangeAfterReopen != b.rangeAfterReopen {
                problems.append("step 4 after the reopen: \(aName) counts \(a.rangeAfterReopen), \(bName) \(b.rangeAfterReopen)")
            }
        }
        guard problems.isEmpty else {
            throw QueryMismatch(description: "queries suite: \(aName) and \(bName) disagree: " + problems.joined(separator: "; "))
        }
    }

    // MARK: The tables

    /// One Markdown table (with its heading line) per size.
    func run(rounds: Int) throws -> [String] {
        try sizes.map { n in try table(n: n, rounds: max(rounds, 1)) }
    }

    private func table(n: Int, rounds: Int) throws -> String {
        var rng = SplitMix64(seed: 0x5EED)
        let ids = (0 ..< Self.pointReads).map { _ in Int(rng.next() % UInt64(n)) }
        let expected = Self.expected(n: n, ids: ids)
        var strataRounds: [Times] = [], grdbRounds: [Times] = [], rawRounds: [(mean: Double, worst: Double)] = []
        for round in 0 ..< rounds {
            let strataFirst = round % 2 == 0
            log("queries \(label(n)): round \(round + 1)/\(rounds), \(strataFirst ? "Strata" : "GRDB") first")
            var strataAnswers = Answers(), grdbAnswers = Answers()
            for engine in strataFirst ? ["Strata", "GRDB"] : ["GRDB", "Strata"] {
                if engine == "Strata" {
                    let (times, answers) = try strata(n: n, ids: ids)
                    strataRounds.append(times)
                    strataAnswers = answers
                } else {
                    let (times, answers) = try grdb(n: n, ids: ids)
                    grdbRounds.append(times)
                    grdbAnswers = answers
                }
            }
            // The disk alone, same run: 1,000 appends of a commit-sized record, each synced.
            let raw = try RawDisk.syncLatencies(count: Self.commits, recordBytes: 120, in: workDirectory)
            rawRounds.append((raw.reduce(0, +) / Double(raw.count), raw.max()!))
            try Self.check(strataAnswers, "Strata", expected, "the generator", partial: true)
            try Self.check(grdbAnswers, "GRDB", expected, "the generator", partial: true)
            try Self.check(strataAnswers, "Strata", grdbAnswers, "GRDB")
        }

        func cells(_ value: (Times) -> Double) -> (strata: Double, grdb: Double) {
            (median(strataRounds.map(value)), median(grdbRounds.map(value)))
        }
        /// A row comparing the two engines; `goal` is the least GRDB/Strata ratio the issue asks for.
        func row(_ step: String, _ value: (Times) -> Double, goal: Double?) -> String {
            let (s, g) = cells(value)
            let verdict = goal.map { String(format: "≥ %.0f×: %@", $0, g / s >= $0 ? "met" : "not met") } ?? "–"
            return "| \(step) | \(Self.seconds(s)) | \(Self.seconds(g)) | \(String(format: "%.2f×", g / s)) | \(verdict) |"
        }
        let worst = cells(\.commitWorst)
        let worstOverRounds = strataRounds.map(\.commitWorst).max()!
        let rawMean = median(rawRounds.map(\.mean)), rawWorst = median(rawRounds.map(\.worst))
        let strataMean = median(strataRounds.map(\.commitMean))
        let worstRow = "| (7) worst single commit (max over rounds: Strata \(Self.seconds(worstOverRounds)); the disk alone: \(Self.seconds(rawWorst))) | \(Self.seconds(worst.strata)) | \(Self.seconds(worst.grdb)) | "
            + String(format: "%.2f×", worst.grdb / worst.strata) + " | ≤ 5 ms: \(worst.strata <= 0.005 ? "met" : "not met") |"
        let rawRow = "| (7) the disk alone: 1,000 × (`pwrite` 120 B + `fdatasync`), mean; Strata's mean against it | \(Self.seconds(strataMean)) | raw \(Self.seconds(rawMean)) | "
            + String(format: "%.2f× raw", rawMean / strataMean) + " | ≥ 0.8× raw: \(rawMean / strataMean >= 0.8 ? "met" : "not met") |"
        let cityIDs = label(expected.cityCount) + (expected.cityCount == 1 ? " id" : " ids")
        let lines = [
            "### Queries, \(label(n)) objects (Strata `.full` durability; GRDB `DatabaseQueue`, WAL, `synchronous = FULL`), medians of \(rounds) round\(rounds == 1 ? "" : "s")",
            "",
            "| step | Strata | GRDB | GRDB/Strata | goal |",
            "|---|---|---|---|---|",
            row("(1) insert \(label(n)), one write", \.insert, goal: 2),
            row("(2) \(label(Self.pointReads)) random primary-key reads, summing `age` and `score`", \.reads, goal: 6),
            row("(3) `city == \"city42\"`: count and \(cityIDs), first run", \.cityFirst, goal: 30),
            row("(3) the same, warm re-run", \.cityWarm, goal: 30),
            row("(4) `0.25 <= score < 0.35`: count", \.rangeCount, goal: 10),
            row("(4) the same as a string query (Strata: `filter(\"score >= %@ AND score < %@\", …)`; GRDB: the same SQL)", \.rangeText, goal: nil),
            row("(5) the same range by `score` descending, first 20 `name`s", \.top20, goal: 5),
            row("(6) set `age` and `score` of all \(label(n)), one write (Strata: a loop over `realm.objects(Item.self)`; GRDB: a prepared UPDATE a row)", \.update, goal: 5),
            row("(7) 1,000 durable commits of one object's `age`: mean", \.commitMean, goal: nil),
            worstRow,
            rawRow,
            row("(8) close, reopen, read one object", \.reopen, goal: nil),
            row("(3) the city query again, first after the reopen", \.cityAfterReopen, goal: nil),
            row("(4) the range count as the first query of another reopen (no query since step 6 changed every object: Strata scans the table)", \.rangeAfterReopen, goal: nil),
            row("(4) the same in the next reopen (Strata: the projection the last close kept, read from its file)", \.rangeNextReopen, goal: nil),
        ]
        return lines.joined(separator: "\n") + "\n" + memoryTable(n: n, strataRounds.last!)
    }

    /// Bytes per object of each projected column against the raw value bytes (the issue's
    /// budget: raw value bytes + 8 B an object a column).
    private func memoryTable(n: Int, _ times: Times) -> String {
        guard let memory = times.memory else { return "" }
        let raw: [String: Double] = [
            "id": 8, "age": 8, "score": 8,
            "city": Double((0 ..< n).reduce(0) { $0 + Self.city($1).utf8.count }) / Double(n),
            "name": Double((0 ..< n).reduce(0) { $0 + Self.name($1).utf8.count }) / Double(n),
        ]
        var lines = [
            "",
            "Projection memory, \(label(n)) objects (`Realm.projectionStatistics`; every property queried once):",
            "",
            "| column | bytes an object | raw value bytes an object | budget (raw + 8) | within |",
            "|---|---|---|---|---|",
        ]
        for name in ["id", "city", "name", "score", "age"] {
            guard let bytes = memory.bytesPerObject[name], let value = raw[name] else { continue }
            lines.append(String(format: "| `%@` | %.1f | %.1f | %.1f | %@ |", name, bytes, value, value + 8, bytes <= value + 8 ? "yes" : "no"))
        }
        lines.append(String(format: "| ordinal → key arena | %.1f | – | – | – |", Double(memory.keyBytes) / Double(max(memory.ordinals, 1))))
        let total = memory.columnBytes.values.reduce(memory.keyBytes, +)
        lines.append("")
        lines.append(String(format: "In all %.1f MB, %.1f B an object.", Double(total) / 1e6, Double(total) / Double(max(n, 1))))
        return lines.joined(separator: "\n") + "\n"
    }

    /// 100k, 1M, 10k, or the number itself.
    private func label(_ n: Int) -> String {
        if n >= 1_000_000, n % 1_000_000 == 0 { return "\(n / 1_000_000)M" }
        if n >= 1_000, n % 1_000 == 0 { return "\(n / 1_000)k" }
        return "\(n)"
    }

    /// A duration in the unit that suits it.
    static func seconds(_ s: Double) -> String {
        if s >= 1 { return String(format: "%.2f s", s) }
        if s >= 0.01 { return String(format: "%.1f ms", s * 1e3) }
        if s >= 0.001 { return String(format: "%.2f ms", s * 1e3) }
        return String(format: "%.0f µs", s * 1e6)
    }
}
