// JSON import benchmarks (issue 5): REST payloads into a store, Strata's RealmCoder against
// (a) JSONDecoder + GRDB Codable upsert and (b) JSONSerialization + GRDB partial updates,
// both in one transaction, on the same payloads in the same run: FastEasyMapping's
// workload (parents × 10 children, cold insert then hot update) and Twitter search
// results scaled up (statuses with their users by primary key).

import CBenchSupport
import Foundation
import GRDB
import BenchSupport
import Strata
#if canImport(Glibc)
import Glibc
#endif

final class ImportParent: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var email: String = ""
    @Persisted var score: Double = 0
    @Persisted var children: List<ImportChild>
}

final class ImportChild: Object {
    @Persisted(primaryKey: true) var id: Int = 0
    @Persisted var name: String = ""
    @Persisted var value: Int = 0
}

struct ParentRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "parent"
    var id: Int
    var name: String
    var email: String
    var score: Double
}

struct ChildRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "child"
    var id: Int
    var parentId: Int?
    var name: String
    var value: Int
}

/// The JSON shape of a parent, for JSONDecoder.
struct ParentJSON: Decodable {
    var id: Int
    var name: String
    var email: String
    var score: Double
    var children: [ChildJSON]
}

struct ChildJSON: Decodable {
    var id: Int
    var name: String
    var value: Int
}

/// Twitter rows for GRDB (the same properties as the Strata models).
struct TweetUserRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "tweet_user"
    var id: Int64
    var screenName: String
    var name: String
    var followersCount: Int
    var bio: String?
}

struct TweetRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "tweet"
    var id: Int64
    var text: String
    var createdAt: Date?
    var userId: Int64?
    var entities: String
    var retweetCount: Int
    var favoriteCount: Int
}

/// The JSON shape of Twitter search results, for JSONDecoder (snake case converted).
struct SearchResultsJSON: Decodable {
    struct User: Decodable {
        var id: Int64
        var screenName: String
        var name: String
        var followersCount: Int
        var description: String?
    }
    struct Status: Decodable {
        var id: Int64
        var text: String
        var createdAt: Date
        var user: User
        /// Kept as JSON text, as Strata keeps it: decoded as any JSON, then re-encoded.
        var entities: AnyJSON
        var retweetCount: Int
        var favoriteCount: Int
    }
    var statuses: [Status]
}

/// Resident memory in bytes, in all and anonymous (heap) only, from /proc/self/statm (one
/// short read, no lock the measured code needs, unlike malloc statistics, whose sampling
/// slowed the import by half). The difference is mostly the store's mapped segment pages
/// (file-backed page cache on its way to disk).
func residentBytes() -> (total: Int, heap: Int) {
    let fd = open("/proc/self/statm", O_RDONLY)
    guard fd >= 0 else { return (0, 0) }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return (0, 0) }
    // size resident shared text lib data dt, in pages
    let fields = buffer[..<count].split(separator: UInt8(ascii: " ")).prefix(3).map { Int(String(decoding: $0, as: UTF8.self)) ?? 0 }
    guard fields.count == 3 else { return (0, 0) }
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    return (fields[1] * page, (fields[1] - fields[2]) * page)
}

/// Peak growth of resident memory (all, and heap only) while `body` runs, sampled every 2 ms.
func peakMemory(_ body: () throws -> Void) rethrows -> (total: Int, heap: Int) {
    final class Peak: @unchecked Sendable {
        var total = 0, heap = 0
        var running = true
        let lock = NSLock()
        func sample(from base: (total: Int, heap: Int)) {
            let now = residentBytes()
            lock.withLock {
                total = max(total, now.total - base.total)
                heap = max(heap, now.heap - base.heap)
            }
        }
    }
    // Give freed heap pages back first, so growth from here is memory the body really uses
    // (not pages an earlier allocation left resident and the body merely reuses).
    bench_trim_heap()
    let base = residentBytes()
    let peak = Peak()
    let sampler = Thread {
        while peak.lock.withLock({ peak.running }) {
            peak.sample(from: base)
            usleep(2000)
        }
    }
    sampler.start()
    defer { peak.lock.withLock { peak.running = false } }
    try body()
    peak.sample(from: base)
    return peak.lock.withLock { (peak.total, peak.heap) }
}

/// "peak memory +X× the payload (heap +Y×)".
func memoryText(_ peak: (total: Int, heap: Int), payload: Int) -> String {
    String(format: "peak memory +%.1f× the payload (heap +%.1f×)", Double(peak.total) / Double(payload), Double(peak.heap) / Double(payload))
}

struct ImportBenchmarks {
    var parents: Int
    var statuses: Int
    var directory: String
    var jsonDirectory: String

    func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

    func parentsPayload(version: Int) -> Data {
        var out = "["
        for i in 0 ..< parents {
            if i > 0 { out += "," }
            out += #"{"id":\#(i),"name":"parent \#(i) v\#(version)","email":"p\#(i)@example.com","score":\#(Double(i) / 3 + Double(version)),"children":["#
            for j in 0 ..< 10 {
                if j > 0 { out += "," }
                out += #"{"id":\#(i * 10 + j),"name":"child \#(j) of \#(i)","value":\#(j + version)}"#
            }
            out += "]}"
        }
        return Data((out + "]").utf8)
    }

    /// Strata alone: the parents workload, cold then hot, `rounds` times (for perf).
    func profile(rounds: Int) throws {
        if statuses > 0 {
            guard let twitter = FileManager.default.contents(atPath: jsonDirectory + "/twitter.json"),
                  case .array(let originals)? = try JSONValue(data: twitter)["statuses"] else { throw CocoaError(.fileNoSuchFile) }
            let payload = try twitterPayload(originals)
            for round in 0 ..< rounds {
                let realmDir = URL(fileURLWithPath: directory + "/import-profile")
                try? FileManager.default.removeItem(at: realmDir)
                var config = Realm.Configuration(directory: realmDir)
                config.objectTypes = [TwitterUserModel.self, TwitterStatusModel.self]
                config.storeOptions.durability = .none
                let realm = try Realm(configuration: config)
                let coder = RealmCoder(realm: realm, dateFormatter: Self.twitterDates, keyStrategy: .convertFromSnakeCase)
                var seconds = 0.0
                let memory = try peakMemory { seconds = try time { _ = try coder.decodeArray(TwitterStatusModel.self, from: payload) } }
                log(String(format: "round %d: %.3f s, ", round, seconds) + memoryText(memory, payload: payload.count))
                realm.invalidate()
            }
            return
        }
        let payloads = [parentsPayload(version: 0), parentsPayload(version: 1)]
        for round in 0 ..< rounds {
            let realmDir = URL(fileURLWithPath: directory + "/import-profile")
            try? FileManager.default.removeItem(at: realmDir)
            var config = Realm.Configuration(directory: realmDir)
            config.objectTypes = [ImportParent.self, ImportChild.self]
            config.storeOptions.durability = .none
            let realm = try Realm(configuration: config)
            let coder = RealmCoder(realm: realm)
            for payload in payloads {
                var seconds = 0.0
                let memory = try peakMemory { seconds = try time { _ = try coder.decodeArray(ImportParent.self, from: payload) } }
                log(String(format: "round %d: %.3f s, ", round, seconds) + memoryText(memory, payload: payload.count))
            }
            realm.invalidate()
        }
    }

    func run() throws -> [ResultRow] {
        var rows: [ResultRow] = []
        let realmDir = URL(fileURLWithPath: directory + "/import-strata")
        let sqlitePath = directory + "/import.sqlite"
        try? FileManager.default.removeItem(at: realmDir)
        try? FileManager.default.removeItem(atPath: sqlitePath)
        var config = Realm.Configuration(directory: realmDir)
        config.objectTypes = [ImportParent.self, ImportChild.self, TwitterUserModel.self, TwitterStatusModel.self]
        let realm = try Realm(configuration: config)
        let coder = RealmCoder(realm: realm)
        let db = try DatabaseQueue(path: sqlitePath)
        try db.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try requireFullSynchronous(db, baseline: "JSON import (GRDB)")
            try db.create(table: "parent") { t in
                t.column("id", .integer).primaryKey()
                t.column("name", .text).notNull(); t.column("email", .text).notNull(); t.column("score", .double).notNull()
            }
            try db.create(table: "child") { t in
                t.column("id", .integer).primaryKey()
                t.column("parentId", .integer).indexed()
                t.column("name", .text).notNull(); t.column("value", .integer).notNull()
            }
        }
        for (label, version) in [("cold insert", 0), ("hot update", 1)] {
            let payload = parentsPayload(version: version)
            log("import: \(parents) parents × 10, \(label) (\(payload.count >> 10) KiB)")
            var strataSeconds = 0.0
            let memory = try peakMemory {
                strataSeconds = try time { _ = try coder.decodeArray(ImportParent.self, from: payload) }
            }
            let grdbCodable = try time {
                let decoded = try JSONDecoder().decode([ParentJSON].self, from: payload)
                try db.write { db in
                    for parent in decoded {
                        try ParentRecord(id: parent.id, name: parent.name, email: parent.email, score: parent.score).upsert(db)
                        for child in parent.children {
                            try ChildRecord(id: child.id, parentId: parent.id, name: child.name, value: child.value).upsert(db)
                        }
                    }
                }
            }
            let grdbPartial = try time {
                let array = try JSONSerialization.jsonObject(with: payload) as! [[String: Any]]
                try db.write { db in
                    for parent in array {
                        let id = parent["id"] as! Int
                        if var record = try ParentRecord.fetchOne(db, key: id) {
                            try record.updateChanges(db) {
                                $0.name = parent["name"] as! String
                                $0.email = parent["email"] as! String
                                $0.score = (parent["score"] as! NSNumber).doubleValue
                            }
                        } else {
                            try ParentRecord(id: id, name: parent["name"] as! String, email: parent["email"] as! String,
                                             score: (parent["score"] as! NSNumber).doubleValue).insert(db)
                        }
                        for child in parent["children"] as! [[String: Any]] {
                            let childID = child["id"] as! Int
                            if var record = try ChildRecord.fetchOne(db, key: childID) {
                                try record.updateChanges(db) { $0.name = child["name"] as! String; $0.value = child["value"] as! Int }
                            } else {
                                try ChildRecord(id: childID, parentId: id, name: child["name"] as! String, value: child["value"] as! Int).insert(db)
                            }
                        }
                    }
                }
            }
            let fastest = min(grdbCodable, grdbPartial)
            rows.append(ResultRow(
                benchmark: "import \(parents / 1000)k parents × 10 children, \(label) (\(payload.count >> 20) MiB JSON)",
                strata: String(format: "%.2f s; ", strataSeconds) + memoryText(memory, payload: payload.count),
                baseline: String(format: "JSONSerialization + updateChanges %.2f s", grdbPartial),
                sqlite: String(format: "JSONDecoder + upsert %.2f s", grdbCodable),
                ratios: String(format: "%.1f× the fastest GRDB path", fastest / strataSeconds),
                target: "≥ 20× fastest GRDB; ≤ 3× payload memory"))
        }
        if statuses > 0, let twitter = FileManager.default.contents(atPath: jsonDirectory + "/twitter.json"),
           case .array(let originals)? = try JSONValue(data: twitter)["statuses"] {
            rows.append(try twitterImport(originals, realm: realm, db: db))
        }
        realm.invalidate()
        return rows
    }
}

extension ImportBenchmarks {
    /// Twitter search results scaled up: copies of the payload's statuses with fresh ids, each
    /// copy's users with fresh ids too (so `statuses` statuses bring about as many users, still
    /// repeated within a copy as in the real payload), into Strata and into GRDB both ways.
    static let twitterDates: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE MMM dd HH:mm:ss Z yyyy"
        return formatter
    }()

    func twitterPayload(_ originals: [JSONValue]) throws -> Data {
        var scaled: [JSONValue] = []
        scaled.reserveCapacity(statuses)
        for index in 0 ..< statuses {
            guard case .object(var status) = originals[index % originals.count],
                  case .object(var user)? = status["user"], case .int(let userID)? = user["id"] else { continue }
            status["id"] = .int(Int64(index + 1))
            user["id"] = .int(userID &+ Int64(index / originals.count) << 40)
            status["user"] = .object(user)
            scaled.append(.object(status))
        }
        return try JSONValue.object(["statuses": .array(scaled)]).data()
    }

    func twitterImport(_ originals: [JSONValue], realm: Realm, db: DatabaseQueue) throws -> ResultRow {
        let payload = try twitterPayload(originals)
        log("import: \(statuses) Twitter statuses (\(payload.count >> 20) MiB)")
        let twitterDates = Self.twitterDates
        let twitterCoder = RealmCoder(realm: realm, dateFormatter: twitterDates, keyStrategy: .convertFromSnakeCase)
        var strataSeconds = 0.0
        let memory = try peakMemory {
            strataSeconds = try time { _ = try twitterCoder.decodeArray(TwitterStatusModel.self, from: payload) }
        }
        let objects = realm.objects(TwitterStatusModel.self).count + realm.objects(TwitterUserModel.self).count
        try db.write { db in
            try db.create(table: "tweet_user", ifNotExists: true) { t in
                t.column("id", .integer).primaryKey()
                t.column("screenName", .text).notNull(); t.column("name", .text).notNull()
                t.column("followersCount", .integer).notNull(); t.column("bio", .text)
            }
            try db.create(table: "tweet", ifNotExists: true) { t in
                t.column("id", .integer).primaryKey()
                t.column("text", .text).notNull(); t.column("createdAt", .datetime)
                t.column("userId", .integer).indexed(); t.column("entities", .text).notNull()
                t.column("retweetCount", .integer).notNull(); t.column("favoriteCount", .integer).notNull()
            }
        }
        let grdbCodable = try time {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .formatted(twitterDates)
            let results = try decoder.decode(SearchResultsJSON.self, from: payload)
            let encoder = JSONEncoder()
            try db.write { db in
                for status in results.statuses {
                    let user = status.user
                    try TweetUserRecord(id: user.id, screenName: user.screenName, name: user.name,
                                        followersCount: user.followersCount, bio: user.description).upsert(db)
                    try TweetRecord(id: status.id, text: status.text, createdAt: status.createdAt, userId: user.id,
                                    entities: String(decoding: try encoder.encode(status.entities), as: UTF8.self),
                                    retweetCount: status.retweetCount, favoriteCount: status.favoriteCount).upsert(db)
                }
            }
        }
        let grdbPartial = try time {
            let root = try JSONSerialization.jsonObject(with: payload) as! [String: Any]
            try db.write { db in
                for status in root["statuses"] as! [[String: Any]] {
                    let user = status["user"] as! [String: Any]
                    let userID = (user["id"] as! NSNumber).int64Value
                    if var record = try TweetUserRecord.fetchOne(db, key: userID) {
                        try record.updateChanges(db) {
                            $0.screenName = user["screen_name"] as! String; $0.name = user["name"] as! String
                            $0.followersCount = user["followers_count"] as! Int; $0.bio = user["description"] as? String
                        }
                    } else {
                        try TweetUserRecord(id: userID, screenName: user["screen_name"] as! String, name: user["name"] as! String,
                                            followersCount: user["followers_count"] as! Int, bio: user["description"] as? String).insert(db)
                    }
                    let id = (status["id"] as! NSNumber).int64Value
                    let entities = String(decoding: try JSONSerialization.data(withJSONObject: status["entities"]!), as: UTF8.self)
                    let createdAt = twitterDates.date(from: status["created_at"] as! String)
                    if var record = try TweetRecord.fetchOne(db, key: id) {
                        try record.updateChanges(db) {
                            $0.text = status["text"] as! String; $0.createdAt = createdAt; $0.userId = userID; $0.entities = entities
                            $0.retweetCount = status["retweet_count"] as! Int; $0.favoriteCount = status["favorite_count"] as! Int
                        }
                    } else {
                        try TweetRecord(id: id, text: status["text"] as! String, createdAt: createdAt, userId: userID, entities: entities,
                                        retweetCount: status["retweet_count"] as! Int, favoriteCount: status["favorite_count"] as! Int).insert(db)
                    }
                }
            }
        }
        let serialization = try time { _ = try JSONSerialization.jsonObject(with: payload) }
        return ResultRow(
            benchmark: "import \(statuses / 1000)k Twitter statuses with their users, \(objects / 1000)k objects (\(payload.count >> 20) MiB JSON)",
            strata: String(format: "%.2f s (%.0f MB/s); ", strataSeconds, Double(payload.count) / strataSeconds / 1e6)
                + memoryText(memory, payload: payload.count),
            baseline: String(format: "JSONSerialization + updateChanges %.2f s (its parse alone %.2f s)", grdbPartial, serialization),
            sqlite: String(format: "JSONDecoder + upsert %.2f s", grdbCodable),
            ratios: String(format: "%.1f× the fastest GRDB path", min(grdbCodable, grdbPartial) / strataSeconds),
            target: "≥ 20× fastest GRDB; ≤ 3× payload memory")
    }
}

final class TwitterUserModel: Object {
    override class var className: String { "TwitterUser" }
    @Persisted(primaryKey: true) var id: Int64 = 0
    @Persisted var screenName: String = ""
    @Persisted var name: String = ""
    @Persisted var followersCount: Int = 0
    @Persisted var bio: String? = nil
    override class var realmCodableKeys: [String: String] { ["bio": "description"] }
}

final class TwitterStatusModel: Object {
    override class var className: String { "Status" }
    @Persisted(primaryKey: true) var id: Int64 = 0
    @Persisted var text: String = ""
    @Persisted var createdAt: Date? = nil
    @Persisted var user: TwitterUserModel?
    @Persisted var entities: String = ""
    @Persisted var retweetCount: Int = 0
    @Persisted var favoriteCount: Int = 0
    override class var realmListEnvelope: String? { "statuses" }
    override class var realmCodableRawJsonSubstrings: [String] { ["entities"] }
}
