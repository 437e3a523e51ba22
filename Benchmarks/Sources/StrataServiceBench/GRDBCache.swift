// The GRDB back end, as a GRDB user writes it: one DatabasePool (WAL) for the process,
// `synchronous = FULL`, Codable records, JSONDecoder + merge + upsert in one write, and
// ValueObservation for the event stream.

import Foundation
import GRDB
import BenchSupport
import Hummingbird
import NIOFoundationCompat

struct GRDBCache: UserCache {
    static let name = "GRDB"
    static let durability = "DatabasePool (WAL), PRAGMA synchronous = FULL (fsync per commit)"

    let pool: DatabasePool

    init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Not in `prepareDatabase`: DatabasePool sets its writer to NORMAL after that runs.
        pool = try DatabasePool(path: directory.appendingPathComponent("users.sqlite").path)
        try requireFullSynchronous(pool, baseline: "service (GRDB)")
        try pool.write { db in
            try db.create(table: UserValue.databaseTableName, options: .ifNotExists) { t in
                t.primaryKey("id", .integer)
                t.column("city", .text).notNull().indexed()
                t.column("name", .text).notNull()
                t.column("email", .text).notNull()
                t.column("rank", .integer).notNull()
                t.column("score", .double).notNull()
                t.column("updatedAt", .datetime)
            }
        }
    }

    func withOpenStore<R>(_ body: () async throws -> R) async throws -> R {
        do {
            let result = try await body()
            try pool.close()
            return result
        } catch {
            try? pool.close()
            throw error
        }
    }

    func preload(_ users: [UserValue]) async throws {
        try await pool.write { db in
            for user in users { try user.upsert(db) }
        }
    }

    func put(id: Int, body: ByteBuffer) async throws -> ByteBuffer {
        let patch = try decodePatch(body, id: id)
        let stored = try await pool.write { db in
            let user = patch.merged(into: try UserValue.fetchOne(db, key: id), id: id)
            try user.upsert(db)
            return user
        }
        return ByteBuffer(data: try JSONCoding.encoder().encode(stored))
    }

    func user(id: Int) async throws -> ByteBuffer? {
        guard let user = try await pool.read({ db in try UserValue.fetchOne(db, key: id) }) else { return nil }
        return ByteBuffer(data: try JSONCoding.encoder().encode(user))
    }

    static func users(city: String, sort: UserSort) -> QueryInterfaceRequest<UserValue> {
        let inCity = UserValue.filter(UserValue.Columns.city == city)
        switch sort {
        case .rank: return inCity.order(UserValue.Columns.rank.desc)
        case .name: return inCity.order(UserValue.Columns.name)
        }
    }

    func users(city: String, sort: UserSort, limit: Int) async throws -> ByteBuffer {
        let users = try await pool.read { db in try Self.users(city: city, sort: sort).limit(limit).fetchAll(db) }
        return ByteBuffer(data: try JSONCoding.encoder().encode(users))
    }

    func events(city: String, limit: Int, maxEvents: Int, seconds: Double) async throws -> ResponseBody {
        let observation = ValueObservation
            .tracking { db in try Self.users(city: city, sort: .rank).fetchAll(db) }
            .removeDuplicates()
        let values = observation.values(in: pool)
        return ResponseBody { writer in
            // The first value is the users as they are; each later one, the users after a change.
            var isFirst = true
            for await users in bounded(values, maxEvents: maxEvents + 1, seconds: seconds) {
                if isFirst {
                    try await writer.write(ndjsonLine(SnapshotEvent(count: users.count, top: Array(users.prefix(limit)))))
                    isFirst = false
                } else {
                    try await writer.write(ndjsonLine(["count": users.count]))
                }
            }
            try await writer.finish(nil)
        }
    }

    func readBack(ids: [Int]) async throws -> [Int: UserValue] {
        try await pool.read { db in
            var found: [Int: UserValue] = [:]
            for id in ids {
                if let user = try UserValue.fetchOne(db, key: id) { found[id] = user }
            }
            return found
        }
    }
}
