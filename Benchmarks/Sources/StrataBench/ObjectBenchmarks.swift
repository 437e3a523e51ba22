// Object-level benchmarks (issue 4): Strata's Realm API against GRDB with Codable records
// on the same data in the same run — insert, upsert, point reads by primary key, indexed
// and scanning queries, a sorted query, and the latency of a notification for one changed
// object in a large observed result.

import BenchSupport
import Foundation
import GRDB
import Strata
import ArgumentParser

/// The benchmark model: a tweet-like record with an indexed author.
final class BenchPost: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted(indexed: true) var author: String = ""
    @Persisted var text: String = ""
    @Persisted var likes: Int = 0
    @Persisted var score: Double = 0
    @Persisted var created: Date = Date(timeIntervalSince1970: 0)
}

/// The same record for GRDB.
struct PostRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "post"
    var id: Int
    var author: String
    var text: String
    var likes: Int
    var score: Double
    var created: Date
}

struct ObjectBenchmarks {
    var objects: Int
    var reads: Int
    var workDirectory: String

    func log(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    static let authors = 1000

    func post(_ i: Int, version: Int) -> PostRecord {
        PostRecord(id: i, author: "author\(i % Self.authors)",
                   text: "post \(i) v\(version): " + String(repeating: "lorem ipsum ", count: 6),
                   likes: (i * 7 + version) % 5000, score: Double((i * 7919 + version * 31) % 100_000) / 7,
                   created: Date(timeIntervalSince1970: 1_600_000_000 + Double(i)))
    }

    func object(_ record: PostRecord) -> BenchPost {
        let post = BenchPost()
        post.id = record.id
        post.author = record.author
        post.text = record.text
        post.likes = record.likes
        post.score = record.score
        post.created = record.created
        return post
    }

    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// Strata alone, one phase repeated, for `perf record`.
    func profile(phase: String, rounds: Int = 5) throws {
        let realmDir = URL(fileURLWithPath: workDirectory + "/objects-profile")
        try? FileManager.default.removeItem(at: realmDir)
        var config = Realm.Configuration(directory: realmDir)
        config.objectTypes = [BenchPost.self]
        config.storeOptions.durability = .none
        let realm = try Realm(configuration: config)
        let versions = (0 ..< 2).map { v in (0 ..< objects).map { post($0, version: v) } }
        let load = phase == "init" || phase == "set" ? 0 : try time { try realm.write { try realm.add(versions[0].map(object)) } }
        log(String(format: "load %.3f s", load))
        var checksum = 0
        for round in 0 ..< rounds {
            let elapsed: Double
            switch phase {
            case "upsert":
                let posts = versions[(round + 1) % 2].map(object)
                elapsed = try time { try realm.write { try realm.add(posts, update: .modified) } }
            case "rewrite":
                // The queries suite's step (6): a loop over every object, two properties set.
                elapsed = try time {
                    try realm.write {
                        for post in realm.objects(BenchPost.self) {
                            post.likes = (post.id &* 7 &+ round) % 5000
                            post.score = Double(round)
                        }
                    }
                }
            case "insert":
                let posts = versions[round % 2].map(object)
                let fresh = URL(fileURLWithPath: workDirectory + "/objects-profile-insert-\(round)")
                var freshConfig = config
                freshConfig.directory = fresh
                let other = try Realm(configuration: freshConfig)
                elapsed = try time { try other.write { try other.add(posts) } }
                other.invalidate()
                try? FileManager.default.removeItem(at: fresh)
            case "init":
                elapsed = time { for _ in 0 ..< objects { checksum &+= BenchPost().likes } }
            case "set":
                let posts = (0 ..< objects).map { _ in BenchPost() }
                elapsed = time { for (i, post) in posts.enumerated() { post.likes = i; post.score = 1; post.author = "a" } }
            case "make":
                elapsed = time { checksum &+= versions[round % 2].map(object).count }
            case "read":
                elapsed = time {
                    for i in 0 ..< objects {
                        let object = realm.object(ofType: BenchPost.self, forPrimaryKey: i)!
                        checksum &+= object.likes &+ object.author.utf8.count
                    }
                }
            case "scan":
                elapsed = time {
                    for post in realm.objects(BenchPost.self).filter(#Predicate { $0.likes > 4900 }) { checksum &+= post.likes }
                }
            case "sort":
                elapsed = time {
                    let results = realm.objects(BenchPost.self).filter(#Predicate { $0.likes < 500 })
                        .sorted(by: [SortDescriptor(\BenchPost.score, order: .reverse)])
                    for post in results { checksum &+= post.likes }
                }
            case "equality":
                // The queries suite's step (3): an indexed equality, its count and the ids.
                elapsed = time {
                    for n in 0 ..< 20_000 {
                        let author = "author\(n % Self.authors)"
                        let posts = realm.objects(BenchPost.self).filter(#Predicate { $0.author == author })
                        checksum &+= posts.count &+ posts.map(\.id).count
                    }
                }
            case "list":
                // A REST list endpoint: an indexed equality, sorted, the first 20 (100 objects an author).
                elapsed = time {
                    for n in 0..<20_000 {
                        let author = "author\(n % Self.authors)"
                        let page = realm.objects(BenchPost.self).filter(#Predicate { $0.author == author })
                            .sorted(by: [SortDescriptor(\BenchPost.likes, order: .reverse)]).prefix(20)
                        for post in page { checksum &+= post.likes }
                    }
                }
            default:
                throw ValidationError("phases: upsert, rewrite, insert, init, set, make, read, scan, sort, list, equality")
            }
            if round < rounds - 1 { continue }
            log(String(format: "%@ round %d: %.3f s (%.2f µs per object)", phase, round, elapsed, elapsed / Double(objects) * 1e6))
        }
        log("checksum \(checksum)")
        realm.invalidate()
    }

    func run(rounds: Int) throws -> [ResultRow] {
        var rows: [ResultRow] = []
        let realmDir = URL(fileURLWithPath: workDirectory + "/objects-strata")
        let sqlitePath = workDirectory + "/objects.sqlite"
        try? FileManager.default.removeItem(at: realmDir)
        try? FileManager.default.removeItem(atPath: sqlitePath)
        var config = Realm.Configuration(directory: realmDir)
        config.objectTypes = [BenchPost.self]
        config.storeOptions.durability = .full
        let realm = try Realm(configuration: config)
        let db = try DatabaseQueue(path: sqlitePath)
        try db.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try requireFullSynchronous(db, baseline: "object benchmarks (GRDB)")
            try db.create(table: "post") { t in
                t.column("id", .integer).primaryKey()
                t.column("author", .text).notNull().indexed()
                t.column("text", .text).notNull()
                t.column("likes", .integer).notNull()
                t.column("score", .double).notNull()
                t.column("created", .datetime).notNull()
            }
        }
        let first = (0 ..< objects).map { post($0, version: 0) }
        let second = (0 ..< objects).map { post($0, version: 1) }

        // 1. Insert, one write.
        log("objects: insert \(objects)")
        let strataInsert = try time {
            let posts = first.map(object)
            try realm.write { try realm.add(posts) }
        }
        let grdbInsert = try time {
            try db.write { db in for record in first { try record.insert(db) } }
        }
        rows.append(ResultRow(benchmark: "insert \(objects / 1000)k objects, one write", strata: String(format: "%.3f s", strataInsert),
                              baseline: "–", sqlite: String(format: "%.3f s", grdbInsert),
                              ratios: String(format: "%.1f× GRDB", grdbInsert / strataInsert), target: "–"))

        // 2. Upsert every object with changed fields, one write.
        log("objects: upsert \(objects)")
        var strataUpserts: [Double] = [], grdbUpserts: [Double] = []
        for round in 0 ..< rounds {
            let records = round % 2 == 0 ? second : first
            strataUpserts.append(try time {
                let posts = records.map(object)
                try realm.write { try realm.add(posts, update: .modified) }
            })
            grdbUpserts.append(try time {
                try db.write { db in for record in records { try record.upsert(db) } }
            })
        }
        let strataUpsert = median(strataUpserts), grdbUpsert = median(grdbUpserts)
        rows.append(ResultRow(benchmark: "upsert \(objects / 1000)k objects, one write", strata: String(format: "%.3f s", strataUpsert),
                              baseline: "–", sqlite: String(format: "%.3f s", grdbUpsert),
                              ratios: String(format: "%.1f× GRDB", grdbUpsert / strataUpsert), target: "≥ 10× GRDB upsert"))

        // 3. Point reads by primary key, reading two properties of each object.
        log("objects: point reads")
        var rng = SplitMix64(seed: 7)
        let order = (0 ..< reads).map { _ in Int(rng.next() % UInt64(objects)) }
        realm.refresh()
        var strataReads: [Double] = [], grdbOneRead: [Double] = []
        var checksum = 0
        for _ in 0 ..< rounds {
            strataReads.append(time {
                for i in order {
                    let object = realm.object(ofType: BenchPost.self, forPrimaryKey: i)!
                    checksum &+= object.likes &+ object.author.utf8.count
                }
            } / Double(reads))
            grdbOneRead.append(try time {
                try db.read { db in
                    for i in order {
                        let record = try PostRecord.fetchOne(db, key: i)!
                        checksum &+= record.likes &+ record.author.utf8.count
                    }
                }
            } / Double(reads))
        }
        let grdbSample = min(reads, 20_000)
        let grdbPerCall = try time {
            for i in order.prefix(grdbSample) {
                let record = try db.read { db in try PostRecord.fetchOne(db, key: i)! }
                checksum &+= record.likes
            }
        } / Double(grdbSample)
        let strataRead = median(strataReads), grdbRead = median(grdbOneRead)
        rows.append(ResultRow(
            benchmark: "point reads by primary key (\(reads / 1000)k random, 2 properties read)",
            strata: formatRate(1 / strataRead, unit: "objects"),
            baseline: "–",
            sqlite: formatRate(1 / grdbRead, unit: "fetchOne") + " in one read; " + formatRate(1 / grdbPerCall, unit: "fetchOne") + " one read each",
            ratios: String(format: "%.1f× / %.0f× GRDB", grdbRead / strataRead, grdbPerCall / strataRead),
            target: "≥ 1M/s; ≥ 50× GRDB fetchOne"))

        // 4. Queries: an indexed equality, and a range that scans.
        log("objects: queries")
        var strataIndexed: [Double] = [], grdbIndexed: [Double] = [], strataScan: [Double] = [], grdbScan: [Double] = []
        let queries = 200
        for _ in 0 ..< rounds {
            strataIndexed.append(time {
                for q in 0 ..< queries {
                    let name = "author\(q * 7 % Self.authors)"
                    for post in realm.objects(BenchPost.self).filter(#Predicate { $0.author == name }) { checksum &+= post.likes }
                }
            } / Double(queries))
            grdbIndexed.append(try time {
                try db.read { db in
                    for q in 0 ..< queries {
                        let name = "author\(q * 7 % Self.authors)"
                        for record in try PostRecord.filter(Column("author") == name).fetchAll(db) { checksum &+= record.likes }
                    }
                }
            } / Double(queries))
            strataScan.append(time {
                let results = realm.objects(BenchPost.self).filter(#Predicate { $0.likes > 4900 })
                for post in results { checksum &+= post.likes }
            })
            grdbScan.append(try time {
                try db.read { db in
                    for record in try PostRecord.filter(Column("likes") > 4900).fetchAll(db) { checksum &+= record.likes }
                }
            })
        }
        rows.append(ResultRow(benchmark: "indexed equality query (\(objects / Self.authors) objects each)",
                              strata: String(format: "%.0f µs", median(strataIndexed) * 1e6), baseline: "–",
                              sqlite: String(format: "%.0f µs", median(grdbIndexed) * 1e6),
                              ratios: String(format: "%.1f× GRDB", median(grdbIndexed) / median(strataIndexed)), target: "–"))
        rows.append(ResultRow(benchmark: "range query, no index (scans \(objects / 1000)k)",
                              strata: String(format: "%.1f ms", median(strataScan) * 1e3), baseline: "–",
                              sqlite: String(format: "%.1f ms", median(grdbScan) * 1e3),
                              ratios: String(format: "%.2f× GRDB", median(grdbScan) / median(strataScan)), target: "–"))

        // 5. Sorted query: 10% of the objects, sorted by score, every object read.
        log("objects: sorted query")
        var strataSorted: [Double] = [], grdbSorted: [Double] = []
        for _ in 0 ..< rounds {
            strataSorted.append(time {
                let results = realm.objects(BenchPost.self).filter(#Predicate { $0.likes < 500 })
                    .sorted(by: [SortDescriptor(\BenchPost.score, order: .reverse)])
                for post in results { checksum &+= post.likes }
            })
            grdbSorted.append(try time {
                try db.read { db in
                    for record in try PostRecord.filter(Column("likes") < 500).order(Column("score").desc).fetchAll(db) {
                        checksum &+= record.likes
                    }
                }
            })
        }
        rows.append(ResultRow(benchmark: "sorted query (10% of \(objects / 1000)k, by score)",
                              strata: String(format: "%.1f ms", median(strataSorted) * 1e3), baseline: "–",
                              sqlite: String(format: "%.1f ms", median(grdbSorted) * 1e3),
                              ratios: String(format: "%.2f× GRDB", median(grdbSorted) / median(strataSorted)), target: "–"))

        // 6. Notification latency: one object changes in an observed result of every object,
        // sorted by score; from the start of the commit to the callback.
        log("objects: notification latency")
        var latencies: [Double] = []
        var callbackAt = 0.0
        var lastUpdate: (Int, Int, Int) = (0, 0, 0)
        let observed = realm.objects(BenchPost.self).sorted(by: [SortDescriptor(\BenchPost.score)])
        let token = observed.observe { change in
            if case .update(_, let deletions, let insertions, let modifications) = change {
                callbackAt = now()
                lastUpdate = (deletions.count, insertions.count, modifications.count)
            }
        }
        let changes = 50
        var plainCommits: [Double] = []
        for i in 0 ..< changes {
            let target = realm.object(ofType: BenchPost.self, forPrimaryKey: (i * 7919) % objects)!
            try realm.beginWrite()
            target.likes += 1
            let start = now()
            try realm.commitWrite()
            latencies.append(callbackAt - start)
            plainCommits.append(now() - start)
        }
        token.invalidate()
        var unobserved: [Double] = []
        for i in 0 ..< changes {
            let target = realm.object(ofType: BenchPost.self, forPrimaryKey: (i * 7919) % objects)!
            try realm.beginWrite()
            target.likes += 1
            let start = now()
            try realm.commitWrite()
            unobserved.append(now() - start)
        }
        let refetch = try time {
            try db.read { db in checksum &+= try PostRecord.order(Column("score")).fetchAll(db).count }
        }
        rows.append(ResultRow(
            benchmark: "notification for 1 changed object in a \(objects / 1000)k sorted result",
            strata: String(format: "%.2f ms (commit + callback; commit alone %.2f ms)", median(latencies) * 1e3, median(unobserved) * 1e3),
            baseline: "–",
            sqlite: String(format: "%.1f ms (re-fetch of the query, what ValueObservation does)", refetch * 1e3),
            ratios: String(format: "%.0f× faster than the re-fetch; last change %d/%d/%d", refetch / median(latencies), lastUpdate.0, lastUpdate.1, lastUpdate.2),
            target: "≤ 1 ms"))
        log("checksum \(checksum)")
        realm.invalidate()
        return rows
    }
}
